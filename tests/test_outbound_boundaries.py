"""Boundaries of the redaction rules (outbound.py): the minimum lengths of a secret, of a
part and of a line, every name that is not secret, and the state key file's text.

Each length is tested at its limit and one on each side; each list member on its own (a
mutation test: ``<`` mutated to ``<=`` on the minimum secret length passed the whole
suite).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_advreview import outbound
from pytest_advreview.options import SPECS
from pytest_advreview.outbound import MIN_SECRET_CHARS, NOT_SECRET_NAMES, Redactor, Secret
from pytest_advreview.statekey import STATE_KEY_ENV, user_key_path


@pytest.fixture(autouse=True)
def _no_active_redactor() -> Iterator[None]:
    yield
    outbound.install(None)


def redacted(environ: dict[str, str], text: str, allow: tuple[str, ...] = ()) -> str:
    return Redactor.from_environ(environ, allow).redact(text)


def test_the_documented_minimum_is_8_characters() -> None:
    assert MIN_SECRET_CHARS == 8


@pytest.mark.parametrize("length", [MIN_SECRET_CHARS, MIN_SECRET_CHARS + 1])
def test_a_value_of_the_minimum_length_or_longer_is_redacted(length: int) -> None:
    value = "Zq8vX2kP3wR7"[:length] if length <= 12 else "Zq8vX2kP3wR7" + "z" * length
    assert len(value) == length
    assert redacted({"DEPLOY_PIN": value}, f"pin={value}.") == "pin=[redacted:DEPLOY_PIN]."


def test_a_value_one_below_the_minimum_is_left_alone() -> None:
    value = "Zq8vX2k"
    assert len(value) == MIN_SECRET_CHARS - 1
    assert outbound.environment_secrets({"DEPLOY_PIN": value}) == []
    assert redacted({"DEPLOY_PIN": value}, f"pin={value}.") == f"pin={value}."


def test_surrounding_whitespace_does_not_count_towards_the_minimum() -> None:
    assert outbound.environment_secrets({"DEPLOY_PIN": "  Zq8vX2k \n"}) == []
    assert outbound.environment_secrets({"DEPLOY_PIN": " Zq8vX2kP\n"}) == [
        Secret("DEPLOY_PIN", "Zq8vX2kP")
    ]


@pytest.mark.parametrize("length", [3, 4, 5])
def test_a_url_password_is_a_secret_of_its_own_from_4_characters(length: int) -> None:
    password = "pQ7zW"[:length]
    url = f"https://deploy:{password}@git.example.com/acme.git"
    found = outbound.environment_secrets({"REMOTE": url})
    parts = [s.value for s in found if s.value != url]
    assert parts == ([password] if length >= 4 else [])


@pytest.mark.parametrize("length", [3, 4, 5])
def test_a_credential_pair_is_a_secret_of_its_own_from_4_characters(length: int) -> None:
    token = "pQ7zW"[:length]
    value = f"--user=acme --token={token} --verbose"
    parts = [s.value for s in outbound.environment_secrets({"OPTS": value}) if s.value != value]
    assert parts == ([token] if length >= 4 else [])


@pytest.mark.parametrize("length", [15, 16, 17])
def test_a_line_of_a_multi_line_value_is_a_secret_of_its_own_from_16_characters(
    length: int,
) -> None:
    line = ("MIIEvQIBADANBgkqhkiG9w0"[:length]).ljust(length, "x")
    value = f"-----BEGIN KEY-----\n{line}\n-----END KEY-----"
    parts = {s.value for s in outbound.environment_secrets({"PEM": value})} - {value}
    assert (line in parts) is (length >= 16)
    # The two armour lines are 19 and 17 characters: always parts.
    assert {"-----BEGIN KEY-----", "-----END KEY-----"} <= parts


def test_a_single_line_value_is_not_split_into_lines() -> None:
    value = "abcdefghijklmnopqrstuvwxyz0123456789"
    assert outbound.environment_secrets({"ONE": value}) == [Secret("ONE", value)]


@pytest.mark.parametrize("name", sorted(NOT_SECRET_NAMES))
def test_every_name_that_is_not_secret_is_shown_in_any_case(name: str) -> None:
    value = "shown-value-9Zq8vX2kP"
    for spelled in (name, name.lower()):
        assert outbound.environment_secrets({spelled: value}) == []
    assert outbound.environment_secrets({name + "_X": value}) == [Secret(name + "_X", value)]


SETTINGS = sorted(spec.env_var for spec in SPECS if spec.env and spec.metavar != "CMD")
COMMANDS = sorted(spec.env_var for spec in SPECS if spec.env and spec.metavar == "CMD")


@pytest.mark.parametrize("name", SETTINGS)
def test_every_setting_variable_is_shown(name: str) -> None:
    assert outbound.environment_secrets({name: "shown-setting-9Zq8vX2kP"}) == []


@pytest.mark.parametrize("name", COMMANDS)
def test_a_command_line_setting_is_a_secret(name: str) -> None:
    value = "review --token abcdefgh"
    assert Secret(name, value) in outbound.environment_secrets({name: value})


def test_locale_variables_are_shown_by_their_glob_and_the_users_globs_add_to_it() -> None:
    value = "shown-value-9Zq8vX2kP"
    assert outbound.environment_secrets({"LC_ALL": value, "lc_time": value}) == []
    assert outbound.environment_secrets({"XLC_ALL": value}) == [Secret("XLC_ALL", value)]
    allow = ("build_*", "EXACT")
    assert outbound.environment_secrets({"BUILD_ID": value, "exact": value}, allow) == []
    assert outbound.environment_secrets({"EXACTLY": value}, allow) == [Secret("EXACTLY", value)]


@pytest.mark.parametrize("value", ["12345678", "-12345678", "+1234567.89", " 123456789 "])
def test_a_number_is_shown(value: str) -> None:
    assert outbound.environment_secrets({"BUILD_NUMBER": value}) == []


@pytest.mark.parametrize("value", ["12345678a", "1234.5678.9", "0x1234567"])
def test_a_value_that_is_only_almost_a_number_is_a_secret(value: str) -> None:
    assert outbound.environment_secrets({"BUILD_NUMBER": value}) == [Secret("BUILD_NUMBER", value)]


def test_existing_absolute_paths_are_shown_and_any_other_path_is_a_secret(tmp_path: Path) -> None:
    here = str(tmp_path)
    assert outbound.environment_secrets({"WORK": here, "BOTH": f"{here}:{here}:"}) == []
    for value in (f"{here}:/no/such/folder", "relative/folder/x", f"{here}/missing"):
        assert outbound.environment_secrets({"WORK": value}) == [Secret("WORK", value)]


def test_the_state_key_variable_is_named_by_its_own_rule_in_any_case() -> None:
    key = "k" * 40
    assert outbound.environment_secrets({STATE_KEY_ENV: key}) == []
    assert outbound.environment_secrets({STATE_KEY_ENV.lower(): key}) == []
    assert redacted({STATE_KEY_ENV: key}, f"key {key}") == f"key [redacted:{STATE_KEY_ENV}]"


@pytest.mark.parametrize("length", [MIN_SECRET_CHARS - 1, MIN_SECRET_CHARS, MIN_SECRET_CHARS + 1])
def test_the_key_file_text_is_a_secret_from_the_minimum_length(tmp_path: Path, length: int) -> None:
    environ = {"XDG_STATE_HOME": str(tmp_path)}
    path = user_key_path(environ)
    path.parent.mkdir(parents=True)
    text = "0a1b2c3d4e"[:length]
    path.write_text(f" {text}\n", encoding="ascii")
    out = redacted(environ, f"key {text.upper()}!")
    kept = f"key {text.upper()}!"
    assert out == (kept if length < MIN_SECRET_CHARS else "key [redacted:state key]!")


def test_a_text_shorter_than_every_secret_is_returned_as_it_is() -> None:
    redactor = Redactor([Secret("A", "abcdefgh"), Secret("B", "abcdefghijk")])
    assert redactor.redact("abcdefg") == "abcdefg"
    assert redactor.redact("abcdefgh") == "[redacted:A]"
    assert redactor.redact("abcdefghijk") == "[redacted:B]"
    assert not redactor.may_hold_secrets(["abcdefg"])
    assert redactor.may_hold_secrets(["xx", "abcdefgh"])
    assert not Redactor([]).may_hold_secrets(["abcdefgh"])


def test_overlapping_secrets_are_one_redaction_named_by_the_first() -> None:
    redactor = Redactor([Secret("LEFT", "abcdefgh"), Secret("RIGHT", "efghijkl")])
    assert redactor.redact("xx abcdefghijkl yy") == "xx [redacted:LEFT] yy"
    assert redactor.redact("abcdefgh efghijkl") == "[redacted:LEFT] [redacted:RIGHT]"


# -- neutralisation ------------------------------------------------------------------------

C0_C1 = [chr(c) for c in range(0xA0) if c < 0x20 or 0x7F <= c < 0xA0]
BIDI = list("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


@pytest.mark.parametrize("char", [c for c in C0_C1 if c not in "\n\t\r"])
def test_every_c0_and_c1_control_is_escaped_everywhere(char: str) -> None:
    assert outbound.escape_controls(f"a{char}b") == f"a{escaped(char)}b"
    assert outbound.terminal_text(f"a{char}b") == f"a{escaped(char)}b"
    assert outbound.one_line(f"a{char}b") == f"a{escaped(char)}b"
    assert outbound.unsafe_name(f"a{char}b")
    assert outbound.shown(f"a{char}b") == f"'a{escaped(char)}b'"


@pytest.mark.parametrize("char", [*BIDI, "\u2028", "\u2029"])
def test_every_bidi_and_line_separator_character_is_escaped(char: str) -> None:
    assert outbound.escape_controls(f"a{char}b") == f"a\\u{ord(char):04x}b"
    assert outbound.unsafe_name(f"x{char}")


@pytest.mark.parametrize("char", ["\u00ff", "\u0100", "é", "中"])
def test_printable_and_other_characters_are_left_alone(char: str) -> None:
    assert outbound.escape_controls(f"a{char}b") == f"a{char}b"
    assert not outbound.unsafe_name(f"a{char}b")


def test_escapes_use_two_hex_digits_up_to_ff_and_four_above() -> None:
    assert outbound.escape_controls("\x00\x1b\x7f\x85\x9f") == "\\x00\\x1b\\x7f\\x85\\x9f"
    assert outbound.escape_controls("\u200e") == "\\u200e"


def test_newlines_tabs_and_carriage_returns_by_what_is_kept() -> None:
    text = "a\tb\r\nc\rd\n"
    assert outbound.escape_controls(text) == "a\tb\r\nc\\x0dd\n"
    assert outbound.escape_controls(text, keep="") == "a\\x09b\\x0d\\x0ac\\x0dd\\x0a"
    assert outbound.escape_controls(text, keep="\t") == "a\tb\\x0d\\x0ac\\x0dd\\x0a"
    assert outbound.escape_controls(text, keep="\n\r\t") == text
    assert outbound.escape_controls(text, keep="\r") == "a\\x09b\r\\x0ac\rd\\x0a"
    assert outbound.one_line(text) == "a\\x09b\\x0d\\x0ac\\x0dd\\x0a"


@pytest.mark.parametrize(
    ("line", "defused"),
    [
        ("::error::x", "\\::error::x"),
        ("  ::warning file=a::x", "  \\::warning file=a::x"),
        ("\t::group::x", "\t\\::group::x"),
        ("a ::error::x", "a ::error::x"),
        (":error:", ":error:"),
        ("x ##[error]y ##[group]", "x ##\\[error]y ##\\[group]"),
        ("##", "##"),
    ],
)
def test_workflow_commands_are_defused_on_every_line(line: str, defused: str) -> None:
    assert outbound.terminal_text(f"ok\n{line}\nok") == f"ok\n{defused}\nok"
    # On one line a tab is escaped first: the line then starts with a backslash anyway.
    assert outbound.one_line(line) == defused.replace("\t", "\\x09").replace("\\x09\\::", "\\x09::")


def test_annotation_texts_escape_what_would_end_them() -> None:
    text = "50% a:b,c\r\nd\x1b"
    assert outbound.annotation_data(text) == "50%25 a:b,c%0D%0Ad\\x1b"
    assert outbound.annotation_property(text) == "50%25 a%3Ab%2Cc%0D%0Ad\\x1b"
    assert outbound.annotation_data("a\tb") == "a\tb"


def test_a_name_is_shown_quoted_with_workflow_brackets_defused() -> None:
    assert outbound.shown("a ##[b\nc") == "'a ##\\[b\\x0ac'"
    assert outbound.unsafe_name("a ##[b")
    assert not outbound.unsafe_name("a #[b ## [c")


def test_data_and_models_without_a_secret_are_returned_as_they_are() -> None:
    from pytest_advreview.models import Location

    outbound.install(Redactor([Secret("TOKEN", "s3cr3t-value")]))
    tree = {"a": ["x", ("y", {"b": "z"})], "n": 1, "none": None}
    assert outbound.redact_data(tree) is tree
    secret_tree = {"a": ["x", ("s3cr3t-value", {"b": "s3cr3t-value!"})], "n": 1, "k": None}
    assert outbound.redact_data(secret_tree) == {
        "a": ["x", ["[redacted:TOKEN]", {"b": "[redacted:TOKEN]!"}]],
        "n": 1,
        "k": None,
    }
    clean = Location(file="a.py", section="s")
    assert outbound.redact_model(clean) is clean
    dirty = Location(file="s3cr3t-value.py", section="s")
    assert outbound.redact_model(dirty) == Location(file="[redacted:TOKEN].py", section="s")
    assert outbound.redact("x s3cr3t-value") == "x [redacted:TOKEN]"


def test_without_an_installed_redactor_the_process_environment_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SOME_DEPLOY_KEY", "Qz8vX2kP3wR7")
    outbound.install(None)
    assert outbound.redact("k=Qz8vX2kP3wR7") == "k=[redacted:SOME_DEPLOY_KEY]"


@pytest.mark.parametrize(
    ("value", "active"), [("true", True), (" TRUE ", True), ("1", False), ("", False)]
)
def test_the_log_guard_pauses_workflow_commands_only_under_github_actions(
    value: str, active: bool
) -> None:
    guard = outbound.LogGuard(Redactor([]), {"GITHUB_ACTIONS": value})
    assert guard.active is active
    assert len(guard.token) == 32
    assert guard.token != outbound.LogGuard(Redactor([]), {}).token


def test_the_log_guard_gives_each_worker_the_controllers_secrets() -> None:
    from types import SimpleNamespace

    redactor = Redactor([Secret("A", "abcdefgh"), Secret("state key", "0a1b2c3d", True)])
    node = SimpleNamespace(workerinput={})
    outbound.LogGuard(redactor, {}).pytest_configure_node(node)
    assert json.loads(node.workerinput[outbound.WORKERINPUT_KEY]) == [
        ["A", "abcdefgh", False],
        ["state key", "0a1b2c3d", True],
    ]


# -- the redactor's matching ---------------------------------------------------------------


def test_a_percent_encoded_secret_is_redacted_in_either_hex_case() -> None:
    redactor = Redactor([Secret("PASSWORD", "pässwörd-42")])
    assert redactor.redact("p%C3%A4ssw%C3%B6rd-42") == "[redacted:PASSWORD]"
    assert redactor.redact("p%c3%a4ssw%c3%b6rd-42") == "[redacted:PASSWORD]"


def test_an_environment_secret_matches_in_its_own_case_only() -> None:
    redactor = Redactor([Secret("TOKEN", "AbCdEfGh12")])
    assert redactor.redact("AbCdEfGh12") == "[redacted:TOKEN]"
    assert redactor.redact("abcdefgh12") == "abcdefgh12"


def test_the_state_key_matches_in_either_case(tmp_path: Path) -> None:
    environ = {"XDG_STATE_HOME": str(tmp_path)}
    path = user_key_path(environ)
    path.parent.mkdir(parents=True)
    path.write_text("0A1B2C3D4E5F", encoding="ascii")
    redactor = Redactor.from_environ(environ)
    assert redactor.redact("k=0a1b2c3d4e5f") == "k=[redacted:state key]"
    assert redactor.redact("k=0A1B2C3D4E5F") == "k=[redacted:state key]"


def test_a_key_file_that_is_not_ascii_is_still_read(tmp_path: Path) -> None:
    environ = {"XDG_STATE_HOME": str(tmp_path)}
    path = user_key_path(environ)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xff\xfe0a1b2c3d4e")
    # Read with replacement characters (no UnicodeDecodeError), and redacted as read.
    text = "\ufffd\ufffd0a1b2c3d4e"
    assert Redactor.from_environ(environ).redact(text) == "[redacted:state key]"


def test_a_secret_with_a_plus_sign_is_redacted() -> None:
    redactor = Redactor([Secret("KEY", "abc+defgh/ij")])
    assert redactor.redact("key: abc+defgh/ij.") == "key: [redacted:KEY]."


def test_a_secret_with_spaces_is_redacted_in_its_quote_plus_form() -> None:
    redactor = Redactor([Secret("PHRASE", "correct horse battery")])
    assert redactor.redact("q=correct+horse+battery&x") == "q=[redacted:PHRASE]&x"


def test_every_secret_after_an_overlap_is_still_redacted() -> None:
    redactor = Redactor([Secret("LEFT", "abcdefgh"), Secret("RIGHT", "efghijkl")])
    assert (
        redactor.redact("abcdefghijkl, then efghijkl") == "[redacted:LEFT], then [redacted:RIGHT]"
    )


def test_parts_are_named_by_their_variable() -> None:
    url = "https://deploy:pQ7zWx@git.example.com/acme.git"
    assert redacted({"REMOTE": url}, "pw pQ7zWx") == "pw [redacted:REMOTE]"


def test_a_credential_in_a_url_query_is_a_part() -> None:
    value = "https://api.example.com/v1?user=ci&token=pQ7zWx9"
    parts = {s.value for s in outbound.environment_secrets({"API": value})} - {value}
    assert "pQ7zWx9" in parts
    assert "ci" not in parts


def test_an_unparsable_url_does_not_stop_the_next_one() -> None:
    value = "http://[bad-ipv6 https://u:pQ7zWx@b.example/x"
    parts = {s.value for s in outbound.environment_secrets({"MIRRORS": value})}
    assert "pQ7zWx" in parts


def test_a_single_line_value_with_a_line_end_is_one_secret() -> None:
    value = "abcdefghijklmnopqrstuvwxyz0123456789\n"
    assert outbound.environment_secrets({"ONE": value}) == [Secret("ONE", value.strip())]


def test_each_line_of_a_two_line_value_is_a_part() -> None:
    first, second = "abcdefghijklmnop", "qrstuvwxyz012345"
    parts = {s.value for s in outbound.environment_secrets({"TWO": f"{first}\n{second}"})}
    assert {first, second} <= parts


def test_a_lone_carriage_return_in_an_annotation_is_escaped_for_github() -> None:
    assert outbound.annotation_data("a\rb") == "a%0Db"


def test_the_state_key_file_is_looked_for_again_once_a_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [1000.0]
    monkeypatch.setattr(outbound.time, "monotonic", lambda: now[0])
    environ = {"XDG_STATE_HOME": str(tmp_path)}
    redactor = Redactor.from_environ(environ)
    assert redactor.redact("0a1b2c3d4e") == "0a1b2c3d4e"  # no key file yet: looked at 1000
    path = user_key_path(environ)
    path.parent.mkdir(parents=True)
    path.write_text("0a1b2c3d4e", encoding="ascii")
    now[0] = 1000.5
    assert redactor.redact("0a1b2c3d4e") == "0a1b2c3d4e"  # not looked for again yet
    now[0] = 1001.0
    assert redactor.redact("0a1b2c3d4e") == "[redacted:state key]"


def _config(workerinput: object = None) -> object:
    from types import SimpleNamespace

    return SimpleNamespace() if workerinput is None else SimpleNamespace(workerinput=workerinput)


def test_a_worker_redacts_the_controllers_secrets_and_finds_the_key_file_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    wire = json.dumps([["A", "abcdefgh", False], ["state key", "0A1B2C3D4E", True]])
    redactor = Redactor.for_run(_config({outbound.WORKERINPUT_KEY: wire}), ())  # type: ignore[arg-type]
    # The wire's secrets, longest first; each also matches base64-encoded (derived forms,
    # rebuilt on the worker, never sent).
    given = tuple(s for s in redactor.secrets if not s.derived)
    assert given == (Secret("state key", "0A1B2C3D4E", True), Secret("A", "abcdefgh"))
    assert {s.name for s in redactor.secrets if s.derived} == {"state key (base64)", "A (base64)"}
    path = user_key_path({"XDG_STATE_HOME": str(tmp_path)})
    path.parent.mkdir(parents=True)
    path.write_text("9f8e7d6c5b4a", encoding="ascii")  # this worker's own key file
    assert redactor.redact("0a1b2c3d4e") == "[redacted:state key]"
    assert redactor.redact("9f8e7d6c5b4a") == "[redacted:state key]"


def test_a_controller_redacts_its_environment_less_the_allowed_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BUILD_LABEL_X", "Qz8vX2kP3wR7")
    monkeypatch.setenv("DEPLOY_SECRET_X", "Zq8vX2kP3wR8")
    for config in (_config(), _config({"other": 1})):
        redactor = Redactor.for_run(config, ("build_*",))  # type: ignore[arg-type]
        assert redactor.redact("Qz8vX2kP3wR7 Zq8vX2kP3wR8") == (
            "Qz8vX2kP3wR7 [redacted:DEPLOY_SECRET_X]"
        )
    assert Redactor.from_environ({"BUILD_X": "Qz8vX2kP3wR7"}, ("BUILD_*",)).secrets == ()


def test_a_secret_is_matched_in_its_own_case_beside_its_other_cases() -> None:
    redactor = Redactor([Secret("TOKEN", "AbCdEfGh12")])
    assert (
        redactor.redact("AbCdEfGh12 abcdefgh12 ABCDEFGH12 aBcDeFgH12")
        == "[redacted:TOKEN] abcdefgh12 ABCDEFGH12 aBcDeFgH12"
    )


def test_an_empty_or_blank_secret_is_ignored() -> None:
    redactor = Redactor([Secret("EMPTY", ""), Secret("BLANK", "   "), Secret("T", "abcdefgh")])
    assert {s.name for s in redactor.secrets} == {"T", "T (base64)"}
    assert redactor.redact("a b  c, + %20") == "a b  c, + %20"
    assert redactor.redact("x abcdefgh") == "x [redacted:T]"


def test_a_secret_with_a_plus_sign_and_a_space_is_redacted_in_every_form() -> None:
    redactor = Redactor([Secret("KEY", "ab+cd efgh")])
    assert redactor.redact("k: ab+cd efgh.") == "k: [redacted:KEY]."
    assert redactor.redact("k=ab%2Bcd+efgh&") == "k=[redacted:KEY]&"
    # quote() writes the space as %20: percent-encoding hid a filler character, which the
    # cheap first test strips after decoding too (it once let this form through).
    assert redactor.redact("k=ab%2Bcd%20efgh&") == "k=[redacted:KEY]&"
    spaced = Redactor([Secret("P", "correct horse battery")])
    assert spaced.redact("correct%20horse%20battery") == "[redacted:P]"


def test_a_percent_encoded_credential_in_a_url_query_is_a_part_decoded() -> None:
    value = "https://api.example.com/v1?user=ci&token=pQ%2F7zWx9"
    assert redacted({"API": value}, "pw pQ/7zWx9") == "pw [redacted:API]"


# -- mentions (outbound.quiet_mentions) ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "quiet"),
    [
        ("@alice", "<code>@alice</code>"),
        ("ping @alice, now", "ping <code>@alice</code>, now"),
        ("(@a-b)", "(<code>@a-b</code>)"),
        ("@octo-org/sec_team.x please", "<code>@octo-org/sec_team.x</code> please"),
        ("a ` @bob", "a ` <code>@bob</code>"),  # a stray backtick pairs with nothing of ours
        ("@" + "a" * 39 + "!", "<code>@" + "a" * 39 + "</code>!"),
        ("two @x and @y", "two <code>@x</code> and <code>@y</code>"),
    ],
)
def test_a_mention_outside_code_becomes_code(text: str, quiet: str) -> None:
    assert outbound.quiet_mentions(text) == quiet
    assert outbound.quiet_mentions(quiet) == quiet  # idempotent


@pytest.mark.parametrize(
    "text",
    [
        "mail me at a@b.example",
        "a path x/@scope/pkg",
        "@-dash @_under @@twice",
        "`@in_a_span` and ``@in `two` ``",
        "already <code>@done</code>",
        "```python\n@pytest.fixture\n```",
        "~~~~\n@decorator\n~~~\n@still_code\n~~~~",
        "```\nunclosed @fence",
    ],
)
def test_what_github_would_not_notify_is_left_as_it_is(text: str) -> None:
    assert outbound.quiet_mentions(text) == text


def test_text_after_a_closed_fence_is_quieted_again() -> None:
    text = "  ```\n@code\n  ```\nthen @person"
    assert outbound.quiet_mentions(text) == "  ```\n@code\n  ```\nthen <code>@person</code>"
