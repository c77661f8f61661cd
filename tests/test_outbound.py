"""The one redaction pass and the neutralisation of text leaving the process (outbound.py)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast
from urllib.parse import quote, quote_plus

import pytest

from pytest_advreview import action, outbound
from pytest_advreview.models import Finding, ItemRecord, ReviewStatus, Severity
from pytest_advreview.outbound import Redactor, Secret
from pytest_advreview.statekey import user_key_path

PAT = "ghp_Q7xv0PlantedPat9Zk2LmN4"
KEY = "0123456789abcdef" * 4


@pytest.fixture
def active() -> Iterator[None]:
    """Leave the process's redactor as it was."""
    yield
    outbound.install(None)


def names(environ: dict[str, str], allow: tuple[str, ...] = ()) -> set[str]:
    return {s.name for s in outbound.environment_secrets(environ, allow)}


# -- which values are secrets ------------------------------------------------------------------


def test_every_long_value_is_a_secret_whatever_its_name(tmp_path: Path) -> None:
    environ = {
        "DEPLOY_PAT": PAT,  # no TOKEN/SECRET in the name
        "SLACK_HOOK": "https://hooks.example.com/services/T0/B0/abcdefgh",
        "SHORT": "main",  # shorter than MIN_SECRET_CHARS
        "NUMBER": "123456789012",
        "WORKDIR": str(tmp_path),  # an existing path
        "MISSING": "/no/such/path/anywhere",  # not a path the machine has: may be anything
        "PYTHONPATH": f"{tmp_path}{os.pathsep}{tmp_path}",
        "GITHUB_REPOSITORY": "acme/widgets-and-more",
        "GITHUB_SHA": "a" * 40,
        "LC_ALL": "en_US.UTF-8",
        "ADVREVIEW_MODEL": "gpt-5.1-codex",  # a setting the reports show
        "ADVREVIEW_COMMAND": "review --token abcdefgh",  # a command line: may hold one
        "ADVREVIEW_STATE_KEY": KEY,  # the state key has its own rule
        "NPM_CONFIG_REGISTRY": "https://registry.example.com/",
    }
    assert names(environ) == {
        "DEPLOY_PAT",
        "SLACK_HOOK",
        "MISSING",
        "ADVREVIEW_COMMAND",
        "NPM_CONFIG_REGISTRY",
    }
    # The user's advreview_env_allow globs are not secret (case-insensitive).
    assert names(environ, ("npm_config_*", "missing")) == {
        "DEPLOY_PAT",
        "SLACK_HOOK",
        "ADVREVIEW_COMMAND",
    }


def test_parts_of_a_value_that_could_leak_alone_are_secrets_too() -> None:
    environ = {
        "DATABASE_URL": "postgres://svc:s3cr3t-pw@db:5432/app?sslmode=require&password=qp-value",
        "HOOKS": "https://a.example/one-hook-0001 https://b.example/two-hook-0002",
        "MAVEN_OPTS": "-Xmx1g -Dhttp.proxyPassword=proxy-pw-77",
        "DEPLOY_KEY": "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END KEY-----",
    }
    values = {s.value for s in outbound.environment_secrets(environ)}
    assert {
        "s3cr3t-pw",
        "qp-value",
        "https://a.example/one-hook-0001",
        "https://b.example/two-hook-0002",
        "proxy-pw-77",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    } <= values
    # A harmless query value is not a secret of its own ("require" is a word).
    assert "require" not in values


# -- redaction ---------------------------------------------------------------------------------


def test_a_secret_is_found_plain_split_over_lines_and_url_encoded() -> None:
    redactor = Redactor([Secret("DEPLOY_PAT", PAT)])
    forms = [
        PAT,
        PAT[:10] + "\n    " + PAT[10:],  # wrapped over a line
        " ".join(PAT),  # a space between every character
        PAT[:5] + "\x1b[31m" + PAT[5:],  # a colour code inside
        PAT.replace("_", "\\_"),  # a markdown escape
        quote(PAT, safe=""),
        quote(PAT, safe="").replace("%5F", "%5f"),  # lower-case percent escapes
        "".join(f"%{b:02X}" for b in PAT.encode()),  # every character encoded
    ]
    for form in forms:
        assert redactor.redact(f"see {form} here") == "see [redacted:DEPLOY_PAT] here", form


def test_quote_plus_spaces_and_overlapping_secrets_are_replaced_whole() -> None:
    redactor = Redactor(
        [Secret("PHRASE", "correct horse battery staple"), Secret("PART", "battery staple!")]
    )
    assert redactor.redact(quote_plus("correct horse battery staple")) == "[redacted:PHRASE]"
    # Two secrets that overlap leave no piece of either behind.
    assert redactor.redact("correct horse battery staple!") == "[redacted:PHRASE]"


def test_the_state_key_is_redacted_in_any_case_from_the_variable_or_the_key_file(
    tmp_path: Path,
) -> None:
    from_env = Redactor.from_environ({"ADVREVIEW_STATE_KEY": KEY})
    assert from_env.redact(f"k={KEY}") == "k=[redacted:ADVREVIEW_STATE_KEY]"
    environ = {"XDG_STATE_HOME": str(tmp_path)}
    path = user_key_path(environ)
    path.parent.mkdir(parents=True)
    path.write_text(KEY + "\n")
    from_file = Redactor.from_environ(environ)
    assert from_file.redact(f"k={KEY.upper()}") == "k=[redacted:state key]"


def test_workers_redact_with_the_controllers_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    controller = Redactor([Secret("DEPLOY_PAT", PAT)])
    monkeypatch.delenv("DEPLOY_PAT", raising=False)  # the worker's environment lacks it
    config = SimpleNamespace(workerinput={outbound.WORKERINPUT_KEY: controller.to_wire()})
    worker = Redactor.for_run(cast(pytest.Config, config), allow=())
    assert worker.redact(PAT) == "[redacted:DEPLOY_PAT]"
    # ... and the controller hands them over in pytest_configure_node.
    node = SimpleNamespace(workerinput={})
    outbound.LogGuard(controller, {}).pytest_configure_node(node)
    assert json.loads(node.workerinput[outbound.WORKERINPUT_KEY]) == [["DEPLOY_PAT", PAT, False]]


def test_data_and_models_are_redacted_field_by_field(active: None) -> None:
    outbound.install(Redactor([Secret("DEPLOY_PAT", PAT)]))
    data: dict[str, Any] = {"a": [f"x {PAT}", 3, None], "b": {"c": PAT[:8] + "\n" + PAT[8:]}}
    assert outbound.redact_data(data) == {
        "a": ["x [redacted:DEPLOY_PAT]", 3, None],
        "b": {"c": "[redacted:DEPLOY_PAT]"},
    }
    clean = {"a": ["nothing here"]}
    assert outbound.redact_data(clean) is clean  # no copy without a secret
    finding = Finding(
        id="AR-000001",
        severity=Severity.HIGH,
        title=f"token {PAT}",
        what_can_go_wrong="the token " + "\u200b".join(PAT),  # zero-width spaces
        impact="evil\u202etxt.exe",
    )
    record = ItemRecord(
        nodeid="x.md::adversarial-review",
        key="x.md",
        kind="plan",
        status=ReviewStatus.REVISE,
        outcome="failed",
        findings=(finding,),
    )
    redacted = outbound.redact_model(record)
    assert redacted.findings[0].title == "token [redacted:DEPLOY_PAT]"
    assert redacted.findings[0].what_can_go_wrong == "the token [redacted:DEPLOY_PAT]"
    assert redacted.findings[0].impact == "evil\\u202etxt.exe"  # shown, never raw
    assert outbound.redact_model(redacted) is redacted


# -- neutralisation ----------------------------------------------------------------------------


def test_control_characters_are_shown_escaped_and_crlf_line_ends_kept() -> None:
    text = "a\r\nb\rc\x1b[2K\x07\x9b\u202e\u2028\td\n"
    assert outbound.escape_controls(text) == "a\r\nb\\x0dc\\x1b[2K\\x07\\x9b\\u202e\\u2028\td\n"
    assert outbound.one_line("a\nb\tc") == "a\\x0ab\\x09c"


def test_no_line_of_terminal_text_is_a_workflow_command(active: None) -> None:
    outbound.install(Redactor([]))
    text = "::stop-commands::x\n  \u00a0::notice ::forged\nok ##[error]v1\n\x1b[1A::error::y"
    shown = outbound.terminal_text(text)
    assert shown.split("\n") == [
        "\\::stop-commands::x",
        "  \u00a0\\::notice ::forged",
        "ok ##\\[error]v1",
        "\\x1b[1A::error::y",  # the escape is text now: the line starts with "\"
    ]
    assert outbound.terminal_text(shown) == shown  # a second pass changes nothing


def test_annotation_fields_follow_githubs_escaping(active: None) -> None:
    outbound.install(Redactor([Secret("DEPLOY_PAT", PAT)]))
    assert outbound.annotation_data(f"100% a\r\nb::c,d\x1b {PAT}") == (
        "100%25 a%0D%0Ab::c,d\\x1b [redacted:DEPLOY_PAT]"
    )
    assert outbound.annotation_property("a:b,c\n%") == "a%3Ab%2Cc%0A%25"


def test_a_file_name_that_would_forge_lines_is_unsafe_and_shown_escaped() -> None:
    assert outbound.unsafe_name("docs/a\n::notice ::x.md")
    assert outbound.unsafe_name("docs/\x1b[2Ka.md")
    assert outbound.unsafe_name("docs/tab\there.md")
    assert outbound.unsafe_name("docs/##[error]x.md")
    assert not outbound.unsafe_name("docs/plans/ünïcode plan.md")
    assert outbound.shown("a\n\x1b[2K##[x].md") == "'a\\x0a\\x1b[2K##\\[x].md'"


def test_the_guard_pauses_workflow_commands_around_the_summary_only_under_actions() -> None:
    lines: list[str] = []
    tw = SimpleNamespace(width_of_current_line=0, line=lambda: lines.append(""))
    reporter = SimpleNamespace(_tw=tw, write_line=lines.append)
    guard = outbound.LogGuard(Redactor([]), {"GITHUB_ACTIONS": "true"})
    wrapper = guard.pytest_terminal_summary(cast("pytest.TerminalReporter", reporter))
    next(wrapper)
    lines.append("::stop-commands::x")  # what a review printed inside
    with pytest.raises(StopIteration):
        wrapper.send(None)
    assert lines == [f"::stop-commands::{guard.token}", "::stop-commands::x", f"::{guard.token}::"]
    plain = outbound.LogGuard(Redactor([]), {})
    wrapper = plain.pytest_terminal_summary(cast("pytest.TerminalReporter", reporter))
    next(wrapper)
    with pytest.raises(StopIteration):
        wrapper.send(None)
    assert len(lines) == 3


# -- the action's outputs ----------------------------------------------------------------------


def test_the_actions_step_outputs_and_lines_are_redacted(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    active: None,
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    outputs = tmp_path / "github-output"
    env = {"DEPLOY_PAT": PAT, "GITHUB_OUTPUT": str(outputs), "GITHUB_ACTIONS": "true"}
    outbound.install(Redactor.from_environ(env))
    action._write_outputs({"reason": f"saw {PAT}\nline two"}, env)
    written = outputs.read_text()
    assert PAT not in written and "saw [redacted:DEPLOY_PAT]\\x0aline two" in written
    action._notice(f"::stop-commands::x {PAT}", {})
    # The reviewer's words are the notice's data: the runner shows them, never runs them.
    assert capsys.readouterr().out == "::notice::::stop-commands::x [redacted:DEPLOY_PAT]\n"


def test_the_pull_request_comment_is_redacted_before_it_is_posted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = tmp_path / "report.md"
    hidden = "\u2060".join(PAT)  # word joiners: it looks like the token
    report.write_text(f"# Adversarial review\n\ntoken {PAT}\n{hidden} evil\u202etxt.exe\n")
    posted: list[Any] = []

    def api(env: object, method: str, path: str, body: object = None) -> Any:
        posted.append(body)
        return [] if method == "GET" else {}

    monkeypatch.setattr(action, "_api", api)
    env = {"DEPLOY_PAT": PAT, "ADVREVIEW_ACTION_PR": "3", "ADVREVIEW_ACTION_REPORT": str(report)}
    assert action.main(["comment"], env) == 0
    [body] = [b for b in posted if b is not None]
    assert PAT not in body["body"] and "token [redacted:DEPLOY_PAT]" in body["body"]
    # Invisible characters are shown (the file is read back from disk).
    assert "\n[redacted:DEPLOY_PAT] evil\\u202etxt.exe\n" in body["body"]
