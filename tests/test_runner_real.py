"""The Codex runner against the REAL Codex CLI (pinned) and the scripted server.

Every test here launches ``codex exec`` for real; the model service is the testing kit's
scripted Responses-API server on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import settled
from pytest_advreview.models import (
    Operation,
    OutputFormat,
    ReviewQuality,
    RunnerStatus,
    Severity,
    Verdict,
)
from pytest_advreview.parse import review_schema
from pytest_advreview.runner import DispatchRequest
from pytest_advreview.runner.codex import CodexOptions, CodexReviewer
from pytest_advreview.testing import (
    FindingSpec,
    ScriptedServer,
    approved_review,
    codex_provider_args,
    revise_review,
    shell_step,
)

pytestmark = pytest.mark.real_codex

HIGH = FindingSpec("high", "Rollback drops data", section="Rollback")


def reviewer(
    codex: Path, server: ScriptedServer, env: dict[str, str], **kw: object
) -> CodexReviewer:
    opts = {
        "executable": str(codex),
        "model": "fake-model",
        "reasoning": "low",
        "sandbox": "workspace-write",
        "config": tuple(codex_provider_args(server.url)),
        "timeout": 60.0,
        "env": env,
        **kw,
    }
    return CodexReviewer(CodexOptions(**opts))


def request(
    repo: Path, work: Path, op: Operation = Operation.INITIAL, **kw: object
) -> DispatchRequest:
    data: dict[str, object] = {
        "review_id": "1700000000-12345678",
        "repo_root": repo,
        "operation": op,
        "prompt_body": "MARK-PLAN review the plan in docs/plans/x.md",
        "work_dir": work,
        **kw,
    }
    return DispatchRequest.model_validate(data)


def test_initial_exec_approved(codex_executable, advreview_server, codex_env, git_repo, tmp_path):
    advreview_server.set_script({"rules": [], "default": {"message": approved_review()}})
    result = reviewer(codex_executable, advreview_server, codex_env).dispatch(
        request(git_repo, tmp_path / "w")
    )
    assert result.runner.result is RunnerStatus.SUCCESS
    assert result.runner.verdict is Verdict.APPROVED
    assert result.runner.review_quality is ReviewQuality.VALID
    assert result.attempts == 1
    assert result.review is not None and result.review.verdict is Verdict.APPROVED
    # The prompt's first line is the attempt's session marker.
    sent = advreview_server.response_requests[-1].last_user_text
    marker = f"<!-- ADVERSARIAL-REVIEW-SESSION: 1700000000-12345678-{result.runner.attempt_id} -->"
    assert sent.startswith(marker)
    assert result.usage.input_tokens > 0


def test_revise_carries_session_id_and_findings(
    codex_executable, advreview_server, codex_env, git_repo, tmp_path
):
    advreview_server.set_script({"rules": [], "default": {"message": revise_review(HIGH)}})
    result = reviewer(codex_executable, advreview_server, codex_env).dispatch(
        request(git_repo, tmp_path / "w")
    )
    assert result.runner.result is RunnerStatus.SUCCESS
    assert result.runner.verdict is Verdict.REVISE
    sid = result.runner.codex_session_id
    assert sid is not None and len(sid) == 36
    assert advreview_server.response_requests[-1].thread_id == sid
    assert result.review is not None
    assert [f.severity for f in result.review.findings] == [Severity.HIGH]
    assert result.runner.triage.max_severity == "high"


def _sandbox_mode(body: dict[str, object]) -> str:
    text = json.dumps(body["input"])
    needle = "`sandbox_mode` is `"
    at = text.rindex(needle) + len(needle)
    return text[at : text.index("`", at)]


def test_resume_same_thread_keeps_workspace_write(
    codex_executable, advreview_server, codex_env, git_repo, tmp_path
):
    advreview_server.set_script(
        {"rules": [], "default": [{"message": revise_review(HIGH)}, {"message": approved_review()}]}
    )
    rev = reviewer(codex_executable, advreview_server, codex_env)
    first = rev.dispatch(request(git_repo, tmp_path / "w"))
    sid = first.runner.codex_session_id
    assert sid is not None and rev.can_resume(sid)
    second = rev.dispatch(
        request(
            git_repo,
            tmp_path / "w",
            Operation.RESUME,
            session_id=sid,
            prompt_body="I've evaluated the findings.",
            prior_usage=first.thread_usage,
        )
    )
    assert second.runner.result is RunnerStatus.SUCCESS
    assert second.runner.verdict is Verdict.APPROVED
    assert second.runner.codex_session_id == sid
    resume_req = advreview_server.response_requests[-1]
    assert resume_req.thread_id == sid
    # Measured on 0.171: the sandbox is not inherited; the runner passes it again.
    assert _sandbox_mode(resume_req.body) == "workspace-write"
    # Codex reports usage cumulatively per thread; the runner records the round's delta.
    assert second.thread_usage.input_tokens > first.thread_usage.input_tokens
    assert second.usage.input_tokens == (
        second.thread_usage.input_tokens - first.thread_usage.input_tokens
    )


def test_resume_bad_uuid_is_launch_failure_with_archives(
    codex_executable, advreview_server, codex_env, git_repo, tmp_path
):
    advreview_server.set_script({"rules": [], "default": {"message": approved_review()}})
    bogus = "11111111-2222-3333-4444-555555555555"
    result = reviewer(codex_executable, advreview_server, codex_env).dispatch(
        request(git_repo, tmp_path / "w", Operation.RESUME, session_id=bogus)
    )
    assert result.runner.result is RunnerStatus.LAUNCH_FAILURE
    assert result.attempts == 2
    assert "thread/resume" in (result.runner.errors or "")
    assert result.runner.archived_stdout and Path(result.runner.archived_stdout).exists()
    assert result.runner.archived_stderr and Path(result.runner.archived_stderr).exists()
    assert "no rollout found" in Path(result.runner.archived_stderr).read_text()
    assert advreview_server.response_requests == []


def test_http_500_with_retries_off_is_launch_failure(
    codex_executable, advreview_server, codex_env, git_repo, tmp_path
):
    advreview_server.set_script(
        {"rules": [], "default": {"http_status": 500, "body": {"error": {"message": "boom"}}}}
    )
    started = time.monotonic()
    result = reviewer(codex_executable, advreview_server, codex_env).dispatch(
        request(git_repo, tmp_path / "w")
    )
    assert result.runner.result is RunnerStatus.LAUNCH_FAILURE
    assert result.attempts == 2
    assert "codex exited 1" in (result.runner.errors or "")
    # Provider retries are off (-c ...request_max_retries=0): one request per attempt.
    assert len(advreview_server.response_requests) == 2
    assert time.monotonic() - started < 20


def test_http_500_once_then_ok_succeeds_on_the_runner_retry(
    codex_executable, advreview_server, codex_env, git_repo, tmp_path
):
    # The model service fails the first request only. Provider retries are off, so Codex
    # exits 1 and the runner's one retry (a fresh attempt) gets the review.
    advreview_server.set_script(
        {
            "rules": [
                {
                    "match": "MARK-PLAN",
                    "threads": "all",
                    "steps": [
                        {"http_status": 500, "body": {"error": {"message": "boom"}}},
                        {"message": approved_review()},
                    ],
                }
            ],
        }
    )
    result = reviewer(codex_executable, advreview_server, codex_env).dispatch(
        request(git_repo, tmp_path / "w")
    )
    assert result.runner.result is RunnerStatus.SUCCESS
    assert result.runner.verdict is Verdict.APPROVED
    assert result.attempts == 2
    assert len(advreview_server.response_requests) == 2


def _codex_processes(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True)
    return [line for line in out.stdout.splitlines() if marker in line and "codex" in line]


def test_hang_times_out_twice_and_leaves_no_process(
    codex_executable, advreview_server, codex_env, git_repo, tmp_path
):
    advreview_server.set_script({"rules": [], "default": {"hang": 60}})
    work = tmp_path / "hang-work"
    timeout = 2.0  # Codex asks the model within a second, then waits on the hang
    started = time.monotonic()
    result = reviewer(codex_executable, advreview_server, codex_env, timeout=timeout).dispatch(
        request(git_repo, work)
    )
    elapsed = time.monotonic() - started
    assert result.runner.result is RunnerStatus.TIMEOUT
    assert result.attempts == 2
    # Two attempts of the timeout, plus start-up and the kill grace: bounded by the setting.
    assert elapsed < 2 * (timeout + 3.0) + 5
    assert settled(lambda: _codex_processes(str(work))) == []


def test_output_schema_request_is_strict(
    codex_executable, advreview_server, codex_env, git_repo, tmp_path
):
    answer = json.dumps(
        {
            "summary": "fine",
            "findings": [],
            "verdict": "APPROVED",
        }
    )
    advreview_server.set_script({"rules": [], "default": {"message": answer}})
    result = reviewer(codex_executable, advreview_server, codex_env).dispatch(
        request(git_repo, tmp_path / "w", output_format=OutputFormat.JSON)
    )
    assert result.runner.result is RunnerStatus.SUCCESS, result.runner.errors
    fmt = advreview_server.response_requests[-1].body["text"]["format"]
    assert fmt["type"] == "json_schema" and fmt["strict"] is True
    assert fmt["schema"] == review_schema()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object":
                assert node["additionalProperties"] is False
                assert sorted(node["required"]) == sorted(node["properties"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(fmt["schema"])


def test_tool_call_really_writes_under_workspace_write(
    codex_executable, advreview_server, codex_env, git_repo, tmp_path
):
    advreview_server.set_script(
        {
            "rules": [],
            "default": [
                shell_step("echo owned > pwned.txt", call_id="call_write"),
                {"message": approved_review()},
            ],
        }
    )
    result = reviewer(codex_executable, advreview_server, codex_env).dispatch(
        request(git_repo, tmp_path / "w")
    )
    assert result.runner.result is RunnerStatus.SUCCESS
    assert (git_repo / "pwned.txt").read_text().strip() == "owned"


def test_read_only_sandbox_blocks_the_write(
    codex_executable, advreview_server, codex_env, git_repo, tmp_path
):
    advreview_server.set_script(
        {
            "rules": [],
            "default": [
                shell_step("echo owned > pwned.txt", call_id="call_write"),
                {"message": approved_review()},
            ],
        }
    )
    result = reviewer(codex_executable, advreview_server, codex_env, sandbox="read-only").dispatch(
        request(git_repo, tmp_path / "w")
    )
    assert result.runner.result is RunnerStatus.SUCCESS
    assert not (git_repo / "pwned.txt").exists()


def test_repo_path_with_space_quote_and_dollar(
    codex_executable, advreview_server, codex_env, git_repo, tmp_path
):
    odd = tmp_path / "my repo 'q' $HOME"
    odd.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(odd)], check=True)
    advreview_server.set_script({"rules": [], "default": {"message": revise_review(HIGH)}})
    work = tmp_path / "work dir $x 'y'"
    result = reviewer(codex_executable, advreview_server, codex_env).dispatch(request(odd, work))
    assert result.runner.result is RunnerStatus.SUCCESS, result.runner.errors
    assert result.runner.codex_session_id is not None
    assert Path(result.runner.review_file or "").parent == work
    assert os.path.exists(result.runner.review_file or "")


def test_sandbox_preflight_passes_on_this_host(
    codex_executable, advreview_server, codex_env, tmp_path
):
    rev = reviewer(codex_executable, advreview_server, codex_env)
    assert rev.sandbox_preflight(tmp_path) is None
