"""The summary names the round that was running when a review did not finish.

A round 2 that timed out after a round-1 REVISE was summarised as "round 0", then as
"no round finished": neither names round 2, and the second contradicts the round-1
REVISE the same summary goes on to report.
"""

from __future__ import annotations

import pytest

from conftest import ReviewRepo
from pytest_advreview.testing import FindingSpec, revise_review

PLAN = "# Plan\n\n1. Migrate.\n\n## Rollback\nRestore the backup.\n"
HIGH = FindingSpec("high", "The rollback loses writes", section="Rollback")
NO_CODE = "--advreview-diff=none"


@pytest.mark.real_codex
def test_a_round_that_timed_out_after_a_revise_is_named_in_the_summary(
    review_repo: ReviewRepo,
) -> None:
    plan = review_repo.plan("x.md", PLAN)
    # Round 1 answers REVISE; every later request (round 2, its retry, a fresh review)
    # is accepted and never answered.
    review_repo.answer("Previous review rounds", {"hang": 600})
    review_repo.answer("x.md", {"message": revise_review(HIGH)}, {"hang": 600}, where="body")
    review_repo.run(NO_CODE).assert_outcomes(failed=1)
    plan.write_text(PLAN.replace("Restore the backup.", "Dual-write, then switch readers."))
    result = review_repo.run(NO_CODE, "--advreview-timeout=4", "--advreview-review-timeout=6")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*x.md::adversarial-review: aborted (error) — round 2 did not finish; "
            "round 1 was REVISE with 1 high, 0 tokens*",
            "*the review reached its limit of 6s*",
        ]
    )
    out = result.stdout.str()
    assert "round 0" not in out
    assert "no findings" not in out
