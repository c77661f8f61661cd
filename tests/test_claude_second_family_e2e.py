"""Claude Code as the second model family beside Codex, end to end: real Codex CLI
against the scripted Responses-API server, real Claude Code against the scripted
Messages-API server, both on 127.0.0.1.  Claude as a second sample, and as the verifier."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import ReviewRepo
from pytest_advreview.testing import (
    FindingSpec,
    ScriptedMessagesServer,
    approved_review,
    claude_offline_env,
    revise_review,
)

PLAN = "# Plan\n\n1. Migrate the table.\n\n## Rollback\nRestore the backup.\n"
NO_CODE = "--advreview-diff=none"
HIGH = FindingSpec("high", "Backup is never verified", section="## Rollback")
VERIFY = "You verify ONE finding"
REASON = "The Rollback section restores a checksummed backup"


@pytest.fixture
def both(
    review_repo: ReviewRepo,
    claude_executable: Path,
    messages_server: ScriptedMessagesServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> ReviewRepo:
    home = tmp_path_factory.mktemp("claude-home")
    for name, value in claude_offline_env(messages_server.url, home).items():
        monkeypatch.setenv(name, value)
    return review_repo


def _claude(messages_server: ScriptedMessagesServer, match: str, *steps: dict[str, Any]) -> None:
    messages_server.set_script(
        {"rules": [{"match": match, "steps": list(steps)}], "default": {"http_status": 404}}
    )


def _run(repo: ReviewRepo, claude: Path, *extra: str) -> pytest.RunResult:
    return repo.run(NO_CODE, f"--advreview-claude={claude}", *extra)


@pytest.mark.real_codex
def test_claude_as_the_second_sample_blocks_what_codex_approved(
    both: ReviewRepo, claude_executable: Path, messages_server: ScriptedMessagesServer
) -> None:
    both.plan("a.md", PLAN)
    both.answer("independent review 1 of 2", {"message": approved_review()})
    _claude(messages_server, "independent review 2 of 2", {"text": revise_review(HIGH)})
    both.write(
        "pytest.ini",
        "[pytest]\nadvreview_prices =\n    fake-model: input=2 cached_input=0.5 output=10\n"
        "    claude-m: input=1000 cached_input=1000 output=0\n",
    )
    result = _run(
        both,
        claude_executable,
        "--advreview-samples=2",
        "--advreview-sample-reviewers=codex,claude",
        "--advreview-claude-model=claude-m",
        "--advreview-json=out.json",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*[[]severity: high[]]*Backup is never verified*reported by sample 2 (claude)*",
            "    round 1 sample 1 (codex) * tokens*",
            "    round 1 sample 2 (claude) * tokens ($*)",
        ]
    )
    assert len(both.server.response_requests) == 1
    assert len(messages_server.requests) == 1
    record = json.loads((both.path / "out.json").read_text())["items"][0]["record"]
    samples = record["rounds"][0]["samples"]
    assert [(s["sample"], s["reviewer"], s["verdict"]) for s in samples] == [
        (1, "codex", "APPROVED"),
        (2, "claude", "REVISE"),
    ]
    # Each family's tokens, priced with its own model's line.
    claude_tokens = samples[1]["usage"]["input_tokens"]
    assert claude_tokens > 0
    assert samples[1]["cost"] == pytest.approx(claude_tokens * 1000 / 1_000_000)
    assert messages_server.requests[0].body["model"] == "claude-m"


@pytest.mark.real_codex
def test_a_claude_sample_that_tries_to_write_is_an_error_not_outvoted(
    both: ReviewRepo, claude_executable: Path, messages_server: ScriptedMessagesServer
) -> None:
    both.plan("a.md", PLAN)
    readme = both.path / "README.md"
    before = readme.read_text()
    both.answer("independent review 1 of 2", {"message": approved_review()})
    write = {"tool_use": {"name": "Write", "input": {"file_path": str(readme), "content": "x"}}}
    _claude(messages_server, "independent review 2 of 2", write, {"text": approved_review()})
    result = _run(
        both,
        claude_executable,
        "--advreview-samples=2",
        "--advreview-sample-reviewers=codex,claude",
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the claude reviewer asked for tools a reviewer may not use*"])
    assert readme.read_text() == before


def _verdict(result: str) -> dict[str, str]:
    return {
        "text": f"VERIFICATION: {result}\nEVIDENCE: read docs/plans/a.md lines 4-5\n"
        f"REASON: {REASON}\nVERDICT: APPROVED"
    }


@pytest.mark.real_codex
def test_claude_as_the_verifier_refutes_a_codex_finding(
    both: ReviewRepo, claude_executable: Path, messages_server: ScriptedMessagesServer
) -> None:
    both.plan("a.md", PLAN)
    both.answer("a.md", {"message": revise_review(HIGH)})
    _claude(messages_server, VERIFY, _verdict("REFUTED"))
    result = _run(
        both,
        claude_executable,
        "--advreview-verify",
        "--advreview-verifier=claude",
        "-W",
        "default",
    )
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["    round 1 verification of AR-* (claude, refuted) * tokens*"])
    assert f"refuted by verification: {REASON}" in result.stdout.str()
    (asked,) = messages_server.requests
    assert "Backup is never verified" in asked.text
    # Codex reviewed; Claude only verified.
    assert len(both.server.response_requests) == 1


@pytest.mark.real_codex
def test_claude_as_the_verifier_confirms_and_the_finding_blocks(
    both: ReviewRepo, claude_executable: Path, messages_server: ScriptedMessagesServer
) -> None:
    both.plan("a.md", PLAN)
    both.answer("a.md", {"message": revise_review(HIGH)})
    _claude(messages_server, VERIFY, _verdict("CONFIRMED"))
    result = _run(both, claude_executable, "--advreview-verify", "--advreview-verifier=claude")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["    round 1 verification of AR-* (claude, confirmed) * tokens*"])


@pytest.mark.real_codex
def test_a_claude_verifier_that_tries_to_write_is_an_error(
    both: ReviewRepo, claude_executable: Path, messages_server: ScriptedMessagesServer
) -> None:
    both.plan("a.md", PLAN)
    both.answer("a.md", {"message": revise_review(HIGH)})
    bash = {"tool_use": {"name": "Bash", "input": {"command": "git commit -am ok"}}}
    _claude(messages_server, VERIFY, bash, _verdict("REFUTED"))
    result = _run(both, claude_executable, "--advreview-verify", "--advreview-verifier=claude")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the verifier (claude) of AR-* could not run*"])
