"""The summary line's rounds part (``report.terminal.rounds_text``) for each kind of record:
a finished review names its last round and findings; an aborted one names the round that
was running and what the last counted round decided, never "round 0".  The markdown
report names it the same way (``ItemResult.ran``)."""

from __future__ import annotations

import pytest

from pytest_advreview.models import (
    ItemRecord,
    Operation,
    Review,
    ReviewStatus,
    RoundRecord,
    RunnerResult,
    RunnerStatus,
    Severity,
    Verdict,
)
from pytest_advreview.report.collect import ItemResult
from pytest_advreview.report.markdown import render_markdown
from pytest_advreview.report.terminal import rounds_text
from pytest_advreview.settings import Settings


def _round(number: int, review: Review | None) -> RoundRecord:
    status = RunnerStatus.SUCCESS if review else RunnerStatus.INFRA_ERROR
    return RoundRecord(
        number=number,
        operation=Operation.INITIAL,
        runner=RunnerResult(result=status, attempt_id="a1b2c3d4"),
        review=review,
    )


def _result(status: ReviewStatus, *rounds: RoundRecord) -> ItemResult:
    record = ItemRecord(
        nodeid="docs/plans/x.md::adversarial-review",
        key="docs/plans/x.md",
        kind="plan",
        path="docs/plans/x.md",
        status=status,
        outcome="error" if status is ReviewStatus.ABORTED else "passed",
        fail_on=Severity.MEDIUM,
        rounds=rounds,
    )
    return ItemResult(record, "error" if status is ReviewStatus.ABORTED else "passed")


APPROVED = Review(summary="s", verdict=Verdict.APPROVED, raw="VERDICT: APPROVED")
REVISE = Review(summary="s", verdict=Verdict.REVISE, raw="VERDICT: REVISE")
NO_VERDICT = Review(summary="s", raw="no verdict line")


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (_result(ReviewStatus.APPROVED, _round(1, APPROVED)), "round 1, no findings"),
        (_result(ReviewStatus.ABORTED), "round 1 did not finish"),
        (_result(ReviewStatus.ABORTED, _round(1, None)), "round 2 did not finish"),
        (
            _result(ReviewStatus.ABORTED, _round(1, APPROVED), _round(2, NO_VERDICT)),
            "round 3 did not finish; round 2 was no verdict with no findings",
        ),
    ],
    ids=["finished", "no-round", "round-without-review", "round-without-verdict"],
)
def test_the_rounds_part_names_the_round_that_ran(result: ItemResult, expected: str) -> None:
    assert rounds_text(result) == expected


def test_the_markdown_report_names_the_round_that_did_not_finish() -> None:
    aborted = _result(ReviewStatus.ABORTED, _round(1, REVISE))
    text = render_markdown(Settings(), [aborted])
    assert "· round 2 did not finish; round 1 was REVISE with no findings ·" in text, text
