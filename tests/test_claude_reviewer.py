"""The claude reviewer's small parts: its identity in the cache key, its doctor row, and
how it reads Claude Code's event stream (the end-to-end cases are in
test_claude_reviewer_e2e.py)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from pytest_advreview.cachekey import reviewer_identity
from pytest_advreview.doctor import ModelCheck
from pytest_advreview.models import Operation, OutputFormat, RunnerStatus, Verdict
from pytest_advreview.runner import DispatchRequest
from pytest_advreview.runner.claude import ClaudeOptions, ClaudeReviewer, _read_stream
from pytest_advreview.runner.factory import claude_options
from pytest_advreview.settings import Settings
from pytest_advreview.testing import ScriptedMessagesServer, claude_offline_env


def test_the_reviewer_backend_and_claudes_model_are_the_reviewer_identity(
    tmp_path: Path,
) -> None:
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path), "CODEX_HOME": str(tmp_path)}
    codex = reviewer_identity(Settings(), env)
    claude = reviewer_identity(Settings(reviewer="claude"), env)
    other_model = reviewer_identity(Settings(reviewer="claude", claude_model="m2"), env)
    assert len({json.dumps(i, sort_keys=True) for i in (codex, claude, other_model)}) == 3
    # Where Claude Code takes its model from when --advreview-claude-model is not given.
    moved = reviewer_identity(Settings(reviewer="claude"), {**env, "ANTHROPIC_MODEL": "m3"})
    assert moved != claude
    # The executable's path is not (what it reviews with is).
    assert reviewer_identity(Settings(reviewer="claude", claude="/opt/claude"), env) == claude
    (tmp_path / "settings.json").write_text('{"model": "m4"}')
    assert reviewer_identity(Settings(reviewer="claude"), env) != claude


def test_the_claude_options_follow_the_settings() -> None:
    settings = Settings(
        reviewer="claude", claude="/opt/claude", claude_model="m", timeout=7, connect_timeout=3
    )
    assert claude_options(settings) == ClaudeOptions(
        executable="/opt/claude", model="m", timeout=7, connect_timeout=3
    )
    assert settings.reviewer_model == "m"
    assert Settings(reviewer="claude").reviewer_model is None
    assert Settings().reviewer_model == Settings().model


def test_the_doctor_reports_claudes_version_when_it_is_the_reviewer(
    claude_executable: Path, tmp_path: Path
) -> None:
    (row,) = [
        r for r in ModelCheck(claude=str(claude_executable)).rows("codex") if r.name == "claude"
    ]
    assert row.status == "PASS"
    assert "is Claude Code 2.1.332 (the reviewer)" in row.observed
    (row,) = [
        r for r in ModelCheck(claude=str(tmp_path / "nope")).rows("codex") if r.name == "claude"
    ]
    assert row.status == "FAIL"
    assert row.failed
    assert "install Claude Code" in (row.remedy or "")
    assert not [r for r in ModelCheck().rows("codex") if r.name == "claude"]


def test_a_program_that_is_not_claude_code_is_refused_before_any_review(tmp_path: Path) -> None:
    fake = tmp_path / "claude"
    fake.write_text("#!/bin/sh\necho 'codex-cli 0.171.0'\n")
    fake.chmod(0o755)
    problem = ClaudeReviewer(ClaudeOptions(executable=str(fake))).check_ready()
    assert problem is not None
    assert "is not Claude Code" in problem


def _stream(tmp_path: Path, *events: dict[str, object]) -> Path:
    path = tmp_path / "stdout.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events) + "not json\n")
    return path


def _assistant(*blocks: dict[str, object], model: str = "claude-x") -> dict[str, object]:
    return {"type": "assistant", "message": {"model": model, "content": list(blocks)}}


def test_the_stream_names_every_tool_call_a_reviewer_may_not_make(tmp_path: Path) -> None:
    stream = _read_stream(
        _stream(
            tmp_path,
            _assistant({"type": "tool_use", "name": "Read", "input": {"file_path": "a"}}),
            _assistant({"type": "tool_use", "name": "Write", "input": {"file_path": "b"}}),
            _assistant({"type": "tool_use", "name": "Bash", "input": {"command": "rm -rf x"}}),
            _assistant({"type": "tool_use", "name": "WebFetch", "input": {"url": "u"}}),
            {"type": "result", "result": "VERDICT: APPROVED"},
        )
    )
    assert stream.forbidden == ("Write (b)", "Bash (`rm -rf x`)", "WebFetch")
    assert stream.answered
    assert stream.result == {"type": "result", "result": "VERDICT: APPROVED"}


@pytest.mark.parametrize(
    ("retry", "no_connection"),
    [({"error_status": None, "error": "unknown"}, True), ({"error_status": 529}, False)],
)
def test_a_retry_without_an_http_status_never_reached_the_model(
    tmp_path: Path, retry: dict[str, object], no_connection: bool
) -> None:
    event = {"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 2, **retry}
    synthetic = _assistant({"type": "text", "text": "API Error"}, model="<synthetic>")
    stream = _read_stream(_stream(tmp_path, event, synthetic))
    assert stream.unreached == (1 if no_connection else 0)
    # Claude Code's own error message is no answer of the model.
    assert not stream.answered


# -- one dispatch of the real Claude Code against the scripted Messages-API server -------


def _reviewer(
    claude: Path, server: ScriptedMessagesServer, home: Path, **options: Any
) -> ClaudeReviewer:
    env = claude_offline_env(server.url, home)
    return ClaudeReviewer(ClaudeOptions(executable=str(claude), env=env, **options))


def _request(repo: Path, **fields: Any) -> DispatchRequest:
    values: dict[str, Any] = {
        "review_id": "r1",
        "repo_root": repo,
        "operation": Operation.INITIAL,
        "prompt_body": "Review the plan MARK.",
        "work_dir": repo.parent / "work",
        **fields,
    }
    return DispatchRequest(**values)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    return folder


def test_a_json_review_follows_the_json_contract(
    claude_executable: Path, messages_server: ScriptedMessagesServer, repo: Path, tmp_path: Path
) -> None:
    finding = {
        "severity": "high",
        "title": "Token leak",
        "file": "app/auth.py",
        "section": None,
        "line_start": 3,
        "line_end": 7,
        "what_can_go_wrong": "A token is logged.",
        "why_vulnerable": "auth.py logs the header.",
        "impact": "Account takeover.",
        "recommendation": "Redact the header.",
        "suggestion": None,
    }
    review = {"summary": "Adds login.", "findings": [finding], "verdict": "REVISE"}
    messages_server.set_script({"rules": [], "default": {"text": json.dumps(review)}})
    reviewer = _reviewer(claude_executable, messages_server, tmp_path / "home")
    result = reviewer.dispatch(_request(repo, output_format=OutputFormat.JSON))
    assert result.runner.result is RunnerStatus.SUCCESS
    assert result.review is not None
    assert result.review.verdict is Verdict.REVISE
    assert [f.title for f in result.review.findings] == ["Token leak"]
    session = result.runner.codex_session_id
    assert session is not None
    assert reviewer.can_resume(session)
    assert reviewer.session_digest(session) is not None
    assert not reviewer.can_resume("not-a-uuid")
    assert reviewer.session_digest(str(uuid.uuid4())) is None


def test_an_http_error_of_the_model_is_retried_once_then_an_error(
    claude_executable: Path, messages_server: ScriptedMessagesServer, repo: Path, tmp_path: Path
) -> None:
    messages_server.set_script({"rules": [], "default": {"http_status": 400}})
    reviewer = _reviewer(claude_executable, messages_server, tmp_path / "home")
    result = reviewer.dispatch(_request(repo))
    assert result.runner.result is RunnerStatus.LAUNCH_FAILURE
    assert "claude failed (api_error)" in (result.runner.errors or "")
    assert result.attempts == 2


def test_a_hanging_model_is_a_timeout_and_a_spent_review_limit_launches_nothing(
    claude_executable: Path, messages_server: ScriptedMessagesServer, repo: Path, tmp_path: Path
) -> None:
    messages_server.set_script({"rules": [], "default": {"hang": 60}})
    reviewer = _reviewer(claude_executable, messages_server, tmp_path / "home", timeout=2)
    result = reviewer.dispatch(_request(repo))
    assert result.runner.result is RunnerStatus.TIMEOUT
    assert "did not finish within 2s" in (result.runner.errors or "")
    # The review's whole limit, once spent, ends the dispatch without a launch.
    spent = reviewer.dispatch(_request(repo, time_left_s=0.0, review_timeout_s=9.0))
    assert spent.runner.result is RunnerStatus.TIMEOUT
    assert "limit of 9s" in (spent.runner.errors or "")
    assert spent.attempts == 1


def test_bad_input_and_a_cancelled_reviewer_launch_nothing(
    claude_executable: Path, messages_server: ScriptedMessagesServer, repo: Path, tmp_path: Path
) -> None:
    reviewer = _reviewer(claude_executable, messages_server, tmp_path / "home")
    empty = reviewer.dispatch(_request(repo, prompt_body=" "))
    assert empty.runner.result is RunnerStatus.INPUT_ERROR
    no_thread = reviewer.dispatch(_request(repo, operation=Operation.RESUME))
    assert "resume needs the session id" in (no_thread.runner.errors or "")
    gone = reviewer.dispatch(_request(tmp_path / "gone"))
    assert "is not a directory" in (gone.runner.errors or "")
    reviewer.cancel()
    cancelled = reviewer.dispatch(_request(repo))
    assert cancelled.runner.result is RunnerStatus.INFRA_ERROR
    assert cancelled.attempts == 1
    assert messages_server.requests == []


def test_resuming_a_session_that_is_not_there_is_an_error(
    claude_executable: Path, messages_server: ScriptedMessagesServer, repo: Path, tmp_path: Path
) -> None:
    reviewer = _reviewer(claude_executable, messages_server, tmp_path / "home")
    request = _request(repo, operation=Operation.RESUME, session_id=str(uuid.uuid4()))
    result = reviewer.dispatch(request)
    assert result.runner.result is RunnerStatus.LAUNCH_FAILURE
    assert "No conversation found" in (result.runner.errors or "")
    assert messages_server.requests == []


def test_diff_commands_run_as_git_argv_lists_and_a_failure_is_an_error(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    from pytest_advreview.runner import claude as backend

    env = {"PATH": "/usr/bin:/bin", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    (repo / "a.txt").write_text("one\n" * 50)
    subprocess.run(["git", "-C", str(repo), "add", "a.txt"], check=True, env=env)
    text, problem = backend._diff_outputs(_request(repo, diff_commands=("git diff --cached",)), env)
    assert problem is None
    assert "$ git diff --cached" in text
    assert "+one" in text
    # Only git, never a shell: a command that is anything else is refused, unrun.
    marker = tmp_path / "ran"
    _, problem = backend._diff_outputs(_request(repo, diff_commands=(f"touch {marker}",)), env)
    assert problem is not None
    assert "not a git command" in problem
    assert not marker.exists()
    # A diff that cannot be produced: the reviewer would review blind, so an error.
    _, problem = backend._diff_outputs(_request(repo, diff_commands=("git diff nope...HEAD",)), env)
    assert problem is not None
    assert "failed for the claude reviewer" in problem
    # A huge diff is cut, and the reviewer is told to read the files for the rest.
    monkeypatch.setattr(backend, "MAX_DIFF_CHARS", 40)
    text, _ = backend._diff_outputs(_request(repo, diff_commands=("git diff --cached",)), env)
    assert "[cut after 40 characters: read the changed files for the rest]" in text
    assert text.count("+one") < 50


def test_a_diff_that_cannot_be_produced_launches_no_review(
    claude_executable: Path, messages_server: ScriptedMessagesServer, repo: Path, tmp_path: Path
) -> None:
    reviewer = _reviewer(claude_executable, messages_server, tmp_path / "home")
    result = reviewer.dispatch(_request(repo, diff_commands=("git diff nope...HEAD",)))
    assert result.runner.result is RunnerStatus.INFRA_ERROR
    assert messages_server.requests == []


def test_the_progress_line_says_what_the_claude_reviewer_does() -> None:
    from pytest_advreview.progress import activity_of

    def said(*blocks: dict[str, object], model: str = "claude-x") -> str | None:
        return activity_of(_assistant(*blocks, model=model))

    read = {"type": "tool_use", "name": "Read", "input": {"file_path": "docs/x.md"}}
    assert said(read) == "reading: docs/x.md"
    grep = {"type": "tool_use", "name": "Grep", "input": {"pattern": "drop\ntable"}}
    assert said(grep) == "searching: drop\\x0atable"  # control characters shown escaped
    assert said({"type": "tool_use", "name": "Write", "input": {}}) == "asking for Write"
    assert said({"type": "text", "text": "## Summary"}) == "writing the review"
    assert said({"type": "text", "text": "API Error"}, model="<synthetic>") is None
    retry = {"type": "system", "subtype": "api_retry", "attempt": 2, "max_retries": 3}
    assert activity_of({**retry, "error_status": None, "error": "unknown"}) == (
        "reconnecting to the model, try 2 of 3: no connection"
    )


def test_a_rewritten_or_foreign_session_file_changes_its_digest(tmp_path: Path) -> None:
    # The signed state keeps this digest with each round: a session file rewritten between
    # runs (a forged review history) must not hash as the one the plugin saw.
    config = tmp_path / "claude-config"
    reviewer = ClaudeReviewer(
        ClaudeOptions(executable="claude", env={"CLAUDE_CONFIG_DIR": str(config)})
    )
    session = str(uuid.uuid4())
    assert reviewer.session_digest(session) is None and not reviewer.can_resume(session)
    transcript = config / "projects" / "-work-repo" / f"{session}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text('{"type":"user"}\n')
    seen = reviewer.session_digest(session)
    assert seen is not None and reviewer.can_resume(session)
    transcript.write_text('{"type":"tool"}\n')  # the same length
    assert reviewer.session_digest(session) not in (None, seen)
    transcript.write_text('{"type":"user"}\n')
    assert reviewer.session_digest(session) == seen
    # The same bytes under another project folder are another session's file.
    moved = config / "projects" / "-other" / f"{session}.jsonl"
    moved.parent.mkdir()
    transcript.rename(moved)
    assert reviewer.session_digest(session) not in (None, seen)
    assert reviewer.session_digest("../not-a-uuid") is None
