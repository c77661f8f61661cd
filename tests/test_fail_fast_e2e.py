"""A reviewer that cannot reach its model fails fast, and a review has a total bound.

Real Codex 0.171.0 against a closed port on 127.0.0.1 retries for ever ("Reconnecting...
waiting for network"); with no provider configured it falls back to the built-in OpenAI
provider and does the same.  Before, an item waited out its attempt timeout, then its
retry's, then the fresh-review fallback's: about four attempt timeouts of silence.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from conftest import ReviewRepo
from pytest_advreview.testing import FindingSpec, codex_provider_args, revise_review

PLAN = "# Plan\n\n1. Migrate.\n\n## Rollback\nRestore the backup.\n"
NO_CODE = "--advreview-diff=none"
HIGH = FindingSpec("high", "Rollback restores a stale backup", section="Rollback")


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _rollouts(home: Path) -> list[Path]:
    return sorted((home / "sessions").rglob("rollout-*.jsonl"))


@pytest.mark.real_codex
def test_closed_port_is_an_error_within_the_connect_budget_never_retried(
    review_repo: ReviewRepo, codex_home: Path
) -> None:
    review_repo.plan("x.md", PLAN)
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    attempt_timeout = 300
    # Codex's own retries as a user has them (retries=True): its stream shows the failed
    # connections at about 4 and 12 s.
    args = [a for a in review_repo.args() if not a.startswith("--advreview-codex-config=")] + [
        f"--advreview-codex-config={v}" for v in codex_provider_args(url, retries=True)
    ]
    started = time.monotonic()
    result = review_repo.pytester.runpytest(
        *args,
        NO_CODE,
        f"--advreview-timeout={attempt_timeout}",
        "--advreview-connect-timeout=10",
    )
    elapsed = time.monotonic() - started
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            f"*cannot reach the model at {url} (connection refused) after * tr* in * s; "
            "is the server running?*"
        ]
    )
    # Not the attempt timeout: a coarse bound, it tells "stopped by the connect budget"
    # from "waited out the attempt" (300 s).
    assert elapsed < attempt_timeout / 2, elapsed
    # One launch: neither the runner's retry nor a fallback started Codex again.
    assert len(_rollouts(codex_home)) == 1


@pytest.mark.real_codex
def test_no_provider_configured_is_an_error_before_any_launch(
    review_repo: ReviewRepo, codex_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    review_repo.plan("x.md", PLAN)
    for name in ("OPENAI_API_KEY", "CODEX_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    args = [a for a in review_repo.args() if not a.startswith("--advreview-codex-config=")]
    result = review_repo.pytester.runpytest(*args, NO_CODE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no model provider is configured for Codex*codex login*"])
    assert _rollouts(codex_home) == []  # Codex never ran a thread


@pytest.mark.real_codex
def test_a_hanging_server_is_bounded_by_the_review_limit_retries_and_fallback_included(
    review_repo: ReviewRepo,
) -> None:
    plan = review_repo.plan("x.md", PLAN)
    # The fresh review of the fallback (its prompt carries the earlier rounds) hangs too.
    review_repo.answer("Previous review rounds", {"hang": 600})
    review_repo.answer("x.md", {"message": revise_review(HIGH)}, {"hang": 600}, where="body")
    review_repo.run(NO_CODE).assert_outcomes(failed=1)
    plan.write_text(PLAN.replace("Restore the backup.", "Dual-write, then switch readers."))
    before = len(review_repo.server.response_requests)
    # Round 2 resumes the thread; the server accepts and never answers.  Per attempt 6 s:
    # the resume, its retry, then the fresh review and its retry would take 24 s.
    result = review_repo.run(NO_CODE, "--advreview-timeout=6", "--advreview-review-timeout=9")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*the review reached its limit of 9s (advreview_review_timeout), retries and "
            "fallback included; each attempt may take 6s (advreview_timeout)*"
        ]
    )
    requests = review_repo.server.response_requests[before:]
    # The resume and its retry (cut to what was left); no fresh review was started.
    assert len(requests) == 2, [r.last_user_text[:80] for r in requests]
    assert not any("Previous review rounds" in r.last_user_text for r in requests)
