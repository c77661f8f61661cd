"""Boundaries of runner/environment.py: every core name, every credential pattern and
value shape on its own, the names the allow-list refuses, and the 12-name limit of the
header line (at, below and above it)."""

from __future__ import annotations

import json

import pytest

from pytest_advreview.runner.environment import (
    CORE_NAMES,
    CREDENTIAL_PATTERNS,
    NEVER_PASSED,
    allow_warnings,
    looks_like_credential,
    reviewer_process_env,
    tool_shell_args,
    tool_shell_names,
)
from pytest_advreview.statekey import STATE_KEY_ENV

CORE = ["HOME", "LOGNAME", "PATH", "SHELL", "USER", "TMPDIR", "TEMP", "TMP"]


def test_the_core_names_are_what_codex_keeps_and_the_state_key_is_never_passed() -> None:
    assert list(CORE_NAMES) == CORE
    assert NEVER_PASSED == (STATE_KEY_ENV,)


def include_only(env: dict[str, str], allow: tuple[str, ...] = ()) -> list[str]:
    args = tool_shell_args(env, allow)
    (entry,) = [a for a in args if a.startswith("shell_environment_policy.include_only=")]
    return list(json.loads(entry.partition("=")[2]))


def test_the_tool_shell_arguments_word_for_word() -> None:
    assert tool_shell_args({"A_B": "1"}, ("a_*",)) == [
        "-c",
        'shell_environment_policy.inherit="all"',
        "-c",
        "shell_environment_policy.ignore_default_excludes=true",
        "-c",
        "shell_environment_policy.exclude=[]",
        "-c",
        "shell_environment_policy.include_only=" + json.dumps([*CORE, "A_B"]),
        "-c",
        "allow_login_shell=false",
    ]


@pytest.mark.parametrize("name", CORE)
def test_every_core_name_reaches_the_tool_shell_without_an_allow_list(name: str) -> None:
    assert include_only({}) == CORE
    assert tool_shell_names({name: "v", "OTHER": "v"}) == [name]


@pytest.mark.parametrize("name", CORE)
def test_a_case_variant_of_every_core_name_is_removed_from_the_reviewer(name: str) -> None:
    variant = name.capitalize()
    env = {name: "keep", variant: "drop", name.lower(): "drop", "OTHER": "keep"}
    assert reviewer_process_env(env) == {name: "keep", "OTHER": "keep"}
    # Nor is it an allowed name of its own (it would match the core entry in Codex).
    assert include_only({variant: "x"}, ("*",)) == CORE


@pytest.mark.parametrize("name", [STATE_KEY_ENV, STATE_KEY_ENV.lower()])
def test_the_state_key_never_reaches_the_reviewer_whatever_is_allowed(name: str) -> None:
    assert reviewer_process_env({name: "k", "A": "1"}) == {"A": "1"}
    assert include_only({name: "k"}, ("*",)) == CORE


def test_the_kelvin_sign_and_the_long_s_fold_into_core_names() -> None:
    # "PAT\u212a" is not a core name, but casefolds like "PATk"; "\u017fHELL" like "sHELL".
    assert reviewer_process_env({"\u017fhell": "x", "SHELL": "/bin/sh"}) == {"SHELL": "/bin/sh"}


@pytest.mark.parametrize("name", ["A*", "A?", "A[B]", "1A", "A-B", "A.B", "", "Ä"])
def test_a_name_that_is_not_plain_is_never_an_entry(name: str) -> None:
    assert include_only({name: "x"}, ("*",)) == CORE


@pytest.mark.parametrize("name", ["A", "_A", "a1", "A_1_B"])
def test_a_plain_name_that_the_globs_allow_is_an_entry(name: str) -> None:
    assert include_only({name: "x", "Z": "y"}, ("a*", "_*")) == [*CORE, name]


def test_the_allowed_names_come_sorted_after_the_core_names() -> None:
    env = {"B_2": "x", "B_1": "x", "A_9": "x", "C": "x"}
    assert include_only(env, ("b_*", "A_9")) == [*CORE, "A_9", "B_1", "B_2"]
    assert tool_shell_names({**env, "Home": "h", "HOME": "h"}, ("b_*",)) == [
        "B_1",
        "B_2",
        "HOME",
        "Home",
    ]


@pytest.mark.parametrize("pattern", CREDENTIAL_PATTERNS)
def test_every_credential_pattern_is_recognised_by_name_in_any_case(pattern: str) -> None:
    name = pattern.replace("*", "X")
    assert looks_like_credential(name)
    assert looks_like_credential(name.lower())


@pytest.mark.parametrize("name", ["HOME", "BUILD_ID", "LANG", "PATH", "PATTERN_DIR"])
def test_a_harmless_name_with_a_harmless_value_is_not_a_credential(name: str) -> None:
    assert not looks_like_credential(name, "/home/user")
    assert not looks_like_credential(name)


@pytest.mark.parametrize(
    "value",
    [
        "https://user:hunter2@host.example/x",
        "HTTPS://USER:HUNTER2@HOST",
        "https://api.example/v1?user=a&password=b",
        "https://api.example/v1?api_key=b",
        "https://x/?sig=abc",
        "https://x/?AUTH_TOKEN=abc",
        "-----BEGIN RSA PRIVATE KEY-----",
        "-----BEGIN PRIVATE KEY-----",
        "eyJhbGciOiJI.eyJzdWIi",
    ],
)
def test_every_credential_value_shape_is_recognised(value: str) -> None:
    assert looks_like_credential("HARMLESS", value)


@pytest.mark.parametrize(
    "value",
    [
        "https://host.example/x",
        "https://user@host.example/x",
        "https://api.example/v1?user=a&page=2",
        "-----BEGIN PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----",
        "eyJhbGciOi.eyJ",  # 7 characters after eyJ: too short for a JWT header
        "xeyJhbGciOiJI.eyJzdWIi",
    ],
)
def test_a_value_that_only_resembles_a_credential_is_not_one(value: str) -> None:
    assert not looks_like_credential("HARMLESS", value)


def test_no_allow_list_is_no_header_line() -> None:
    assert allow_warnings({"A": "x"}, ()) == []


def test_an_allow_list_that_passes_nothing_says_so_with_its_globs() -> None:
    assert allow_warnings({"A": "x", "HOME": "/h"}, ("B*", "HOME")) == [
        "advreview_env_allow passes no variable of this environment (B*, HOME)"
    ]


@pytest.mark.parametrize(
    ("count", "more"), [(11, ""), (12, ""), (13, " and 1 more"), (14, " and 2 more")]
)
def test_the_header_names_at_most_12_variables(count: int, more: str) -> None:
    env = {f"V_{n:02d}": "x" for n in range(count)}
    (line,) = allow_warnings(env, ("V_*",))
    shown = ", ".join(f"V_{n:02d}" for n in range(min(count, 12)))
    assert line == f"the reviewer's tool shell also sees (advreview_env_allow): {shown}{more}"


def test_credential_looking_variables_that_are_allowed_are_warned_about() -> None:
    env = {"DEPLOY_TOKEN": "x", "BUILD_URL": "https://u:p@h/", "BUILD_ID": "7"}
    assert allow_warnings(env, ("DEPLOY_*", "BUILD_*")) == [
        "the reviewer's tool shell also sees (advreview_env_allow): BUILD_ID, BUILD_URL, "
        "DEPLOY_TOKEN",
        "WARNING: advreview_env_allow passes credential-looking variables to the reviewer's "
        "tool shell: BUILD_URL, DEPLOY_TOKEN; a tool call can send their values to the "
        "model, so narrow the globs unless the reviewer's tests need them",
    ]
