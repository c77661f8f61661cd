"""The lead's contract without a CLI: the decisions schema, parsing and the checks."""

from __future__ import annotations

import json

import pytest

from pytest_advreview.lead.contract import (
    LeadError,
    answer_schema,
    check_answer,
    lead_prompt,
    parse_answer,
)
from pytest_advreview.parse import analyse
from pytest_advreview.testing import FindingSpec, revise_review

REVIEW = analyse(revise_review(FindingSpec("high", "Rollback is missing", section="Rollback")))
FID = REVIEW.review.findings[0].id


def answer(action: str = "reject", reason: str = "Covered by step 3.") -> str:
    return json.dumps({"decisions": [{"finding": FID, "action": action, "reason": reason}]})


def test_schema_is_strict_for_codex_and_claude() -> None:
    schema = answer_schema()
    item = schema["properties"]["decisions"]["items"]
    assert schema["additionalProperties"] is False and item["additionalProperties"] is False
    assert sorted(item["required"]) == ["action", "changed", "finding", "reason"]
    assert item["properties"]["action"]["enum"] == [
        "accept",
        "re-scope",
        "reject",
        "needs-operator",
    ]
    assert "$ref" not in json.dumps(schema)


def test_answer_in_a_json_fence_is_read_and_prose_alone_is_not() -> None:
    parsed = parse_answer(f"Done.\n```json\n{answer()}\n```\n", who="lead")
    assert parsed.decisions[0].finding == FID
    with pytest.raises(LeadError, match="returned invalid decisions: not JSON"):
        parse_answer("I rejected it.", who="lead")
    with pytest.raises(LeadError, match=r"decisions\.0\.action"):
        parse_answer(answer(action="ignore"), who="lead")


def test_checks_hold_the_answer_against_the_review_and_the_edit() -> None:
    check_answer(parse_answer(answer(), who="l"), REVIEW.review, edited=False, who="l")
    with pytest.raises(LeadError, match="changed the file although it accepted"):
        check_answer(parse_answer(answer(), who="l"), REVIEW.review, edited=True, who="l")
    accepted = parse_answer(answer("accept", "Added it."), who="l")
    with pytest.raises(LeadError, match="but changed nothing"):
        check_answer(accepted, REVIEW.review, edited=False, who="l")
    twice = json.dumps({"decisions": [json.loads(answer())["decisions"][0]] * 2})
    with pytest.raises(LeadError, match=f"decided twice on {FID}"):
        check_answer(parse_answer(twice, who="l"), REVIEW.review, edited=False, who="l")


def test_prompt_carries_the_review_the_findings_and_the_only_file() -> None:
    text = lead_prompt(
        key="docs/plans/x.md",
        round_no=2,
        kind="plan",
        review=REVIEW.review,
        allowed=["docs/plans/x.md"],
    )
    assert text.startswith("<!-- ADVREVIEW-LEAD: docs/plans/x.md round 2 -->")
    assert f"- [severity: high] {FID} Rollback is missing (Rollback)" in text
    assert "You may edit only: docs/plans/x.md" in text
    assert "declared level of abstraction" in text
    assert REVIEW.review.raw.strip() in text
