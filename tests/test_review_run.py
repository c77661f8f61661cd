"""``ReviewRun``'s mutation bookkeeping, with a backend that fails on purpose (fault injection).

The end-to-end behaviour is in ``test_rough_edges_e2e.py``; what is tested here cannot be
provoked through the real CLI without timing: a change that appears after the loop's
last check, after a round that was not counted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git
from pytest_advreview.material import TargetSpec
from pytest_advreview.models import (
    Operation,
    ReviewStatus,
    RoundRecord,
    RunnerResult,
    RunnerStatus,
    Verdict,
)
from pytest_advreview.parse import parse_markdown
from pytest_advreview.review import ReviewContext, ReviewRun
from pytest_advreview.runner import DispatchRequest, DispatchResult
from pytest_advreview.settings import Settings
from pytest_advreview.testing import revise_review

pytestmark = pytest.mark.usefixtures("hermetic_git")


class _FailingReviewer:
    """A backend whose every dispatch is an infrastructure error (no round is counted)."""

    name = "failing"
    supports_resume = False

    def can_resume(self, session_id: str) -> bool:
        return False

    def dispatch(self, request: DispatchRequest) -> DispatchResult:
        runner = RunnerResult(result=RunnerStatus.INFRA_ERROR, attempt_id="1", errors="down")
        return DispatchResult(runner=runner, operation=request.operation)


def test_a_change_after_an_uncounted_round_is_reported_in_that_round(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    plan = repo / "p.md"
    plan.write_text("# Plan\n\n1. Step.\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=T", "-c", "user.email=t@example.invalid", "commit", "-qm", "p")
    # Round 1 was an earlier run's (REVISE, high): this run re-reviews in round 2.
    first = RoundRecord(
        number=1,
        operation=Operation.INITIAL,
        runner=RunnerResult(result=RunnerStatus.SUCCESS, attempt_id="0", verdict=Verdict.REVISE),
        review=parse_markdown(revise_review()),
    )
    run = ReviewRun(
        ReviewContext(pytestconfig, Settings(), _FailingReviewer(), repo),
        TargetSpec(kind="plan", key="p.md", path=plan),
    )
    try:
        result = run.run(history=(first,))
        assert result.status is ReviewStatus.ABORTED
        assert result.last_round == 1  # round 2 failed, so it was not counted
        # Something the reviewer started lands after the loop's last check.
        (run.review_root / "late.txt").write_text("written after the dispatch returned\n")
        assert run.guard.final_mutations(result) == ["late.txt (untracked, round 2)"]
    finally:
        run.guard.cleanup(keep=False)
