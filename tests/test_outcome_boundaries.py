"""Boundaries of outcome.py: every severity on each side of every fail-on threshold, one
and two of everything counted (the plural), and each text of the table word for word
(the failure, error and warning texts are what a person reads to fix the change)."""

from __future__ import annotations

import json

import pytest

from pytest_advreview.loop import LoopResult
from pytest_advreview.models import (
    Finding,
    Location,
    OpenFinding,
    Operation,
    Review,
    ReviewStatus,
    RoundRecord,
    RunnerResult,
    RunnerStatus,
    Severity,
    TokenUsage,
    Verdict,
)
from pytest_advreview.outcome import (
    OutcomeKind,
    ReviewFailed,
    WorkspaceMutated,
    decide,
    error_report,
    failure_report,
    user_properties,
    warning_message,
)

ORDER = [Severity.MEDIUM, Severity.HIGH, Severity.CRITICAL]


def finding(severity: Severity, n: int = 1, **more: object) -> Finding:
    return Finding(id=f"AR-{severity.value[:3]}{n:03d}", severity=severity, title=f"t{n}", **more)  # type: ignore[arg-type]


def result(
    status: ReviewStatus,
    verdict: Verdict | None = None,
    *findings: Finding,
    rounds: int = 1,
    last_round: int | None = None,
    raw: str = "the review\n",
    **more: object,
) -> LoopResult:
    review = (
        Review(summary="s", findings=findings, verdict=verdict, raw=raw)
        if verdict is not None or findings
        else None
    )
    records = tuple(
        RoundRecord(
            number=n,
            operation=Operation.INITIAL,
            runner=RunnerResult(result=RunnerStatus.SUCCESS, attempt_id="a"),
            review=review,
        )
        for n in range(1, rounds + 1)
    )
    return LoopResult(
        status=status,
        rounds=records,
        review=review,
        last_round=rounds if last_round is None else last_round,
        **more,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("fail_on", ORDER)
@pytest.mark.parametrize("severity", ORDER)
def test_revise_fails_at_or_above_the_threshold_and_warns_below(
    fail_on: Severity, severity: Severity
) -> None:
    outcome = decide(result(ReviewStatus.REVISE, Verdict.REVISE, finding(severity)), fail_on)
    if ORDER.index(severity) >= ORDER.index(fail_on):
        assert outcome.kind is OutcomeKind.FAILED
        assert outcome.summary == (
            f"REVISE after 1 round: 1 finding at or above {fail_on.value} (max {severity.value})"
        )
        assert (len(outcome.failing), len(outcome.below)) == (1, 0)
    else:
        assert outcome.kind is OutcomeKind.WARNED
        assert outcome.summary == (
            f"REVISE after 1 round: 1 finding below {fail_on.value} (passed with a warning)"
        )
        assert (len(outcome.failing), len(outcome.below)) == (0, 1)
    assert outcome.max_severity is severity
    assert outcome.verdict is Verdict.REVISE
    assert outcome.status is ReviewStatus.REVISE


@pytest.mark.parametrize("fail_on", ORDER)
@pytest.mark.parametrize("severity", ORDER)
@pytest.mark.parametrize("status", [ReviewStatus.APPROVED, ReviewStatus.CACHED])
def test_approved_warns_below_the_threshold_and_is_an_error_at_or_above(
    status: ReviewStatus, fail_on: Severity, severity: Severity
) -> None:
    f = finding(severity)
    outcome = decide(result(status, Verdict.APPROVED, f, rounds=2), fail_on)
    if ORDER.index(severity) >= ORDER.index(fail_on):
        where = "the stored review" if status is ReviewStatus.CACHED else "the review"
        assert outcome.kind is OutcomeKind.ERROR
        assert outcome.status is ReviewStatus.ABORTED
        assert outcome.summary == (
            f"{where} is contradictory: VERDICT: APPROVED with 1 finding at or above fail-on "
            f"{fail_on.value} ({f.line()}); it is neither passed nor failed - review it again "
            "with --advreview-fresh"
        )
        assert (outcome.failing, outcome.below, outcome.rounds) == ((), (), 2)
    else:
        assert outcome.kind is OutcomeKind.WARNED
        assert outcome.summary == (
            f"APPROVED after 2 rounds with 1 finding below {fail_on.value} (passed with a warning)"
        )


def test_counts_are_singular_for_one_and_plural_otherwise() -> None:
    high = [finding(Severity.HIGH, n) for n in (1, 2)]
    low = [finding(Severity.MEDIUM, n) for n in (1, 2)]
    decide_ = decide
    assert (
        decide_(
            result(ReviewStatus.REVISE, Verdict.REVISE, *high, *low, rounds=2), Severity.HIGH
        ).summary
        == "REVISE after 2 rounds: 2 findings at or above high (max high), 2 below"
    )
    assert (
        decide_(result(ReviewStatus.REVISE, Verdict.REVISE, high[0], low[0]), Severity.HIGH).summary
        == "REVISE after 1 round: 1 finding at or above high (max high), 1 below"
    )
    assert (
        decide_(
            result(ReviewStatus.REVISE, Verdict.REVISE, *low, rounds=0, last_round=0), Severity.HIGH
        ).summary
        == "REVISE after 0 rounds: 2 findings below high (passed with a warning)"
    )
    assert (
        decide_(result(ReviewStatus.APPROVED, Verdict.APPROVED, *low), Severity.HIGH).summary
        == "APPROVED after 1 round with 2 findings below high (passed with a warning)"
    )


def test_the_round_count_is_the_larger_of_the_last_record_and_the_history() -> None:
    base = result(ReviewStatus.APPROVED, Verdict.APPROVED, rounds=2, last_round=5)
    assert decide(base, Severity.HIGH).rounds == 5
    base = result(ReviewStatus.APPROVED, Verdict.APPROVED, rounds=3, last_round=1)
    assert decide(base, Severity.HIGH).rounds == 3
    base = result(ReviewStatus.APPROVED, Verdict.APPROVED, rounds=0, last_round=0)
    assert decide(base, Severity.HIGH).summary == "APPROVED after 0 rounds"


def test_findings_are_ordered_by_severity_then_id() -> None:
    found = [
        finding(Severity.MEDIUM, 2),
        finding(Severity.CRITICAL, 9),
        finding(Severity.HIGH, 3),
        finding(Severity.HIGH, 1),
        finding(Severity.MEDIUM, 1),
    ]
    outcome = decide(result(ReviewStatus.REVISE, Verdict.REVISE, *found), Severity.HIGH)
    assert [f.id for f in outcome.failing] == ["AR-cri009", "AR-hig001", "AR-hig003"]
    assert [f.id for f in outcome.below] == ["AR-med001", "AR-med002"]


def test_max_rounds_names_the_limit_and_fails_or_warns_by_the_threshold() -> None:
    high, low = finding(Severity.HIGH), finding(Severity.MEDIUM)
    outcome = decide(result(ReviewStatus.MAX_ROUNDS, Verdict.REVISE, high, rounds=3), Severity.HIGH)
    assert (outcome.kind, outcome.summary) == (
        OutcomeKind.FAILED,
        "maximum rounds reached (3), still REVISE: 1 finding at or above high (max high)",
    )
    outcome = decide(result(ReviewStatus.MAX_ROUNDS, Verdict.REVISE, low, rounds=3), Severity.HIGH)
    assert (outcome.kind, outcome.summary) == (
        OutcomeKind.WARNED,
        "maximum rounds reached (3), still REVISE: 1 finding below high (passed with a warning)",
    )


def test_revise_without_findings_fails() -> None:
    outcome = decide(result(ReviewStatus.REVISE, Verdict.REVISE), Severity.HIGH)
    assert (outcome.kind, outcome.summary) == (
        OutcomeKind.FAILED,
        "REVISE after 1 round: no parsable findings",
    )


def test_a_cached_entry_without_a_verdict_is_an_error() -> None:
    outcome = decide(result(ReviewStatus.CACHED, None, finding(Severity.MEDIUM)), Severity.HIGH)
    assert (outcome.kind, outcome.summary) == (OutcomeKind.ERROR, "cached state has no verdict")
    outcome = decide(result(ReviewStatus.CACHED), Severity.HIGH)
    assert (outcome.kind, outcome.summary) == (OutcomeKind.ERROR, "cached state has no verdict")
    assert outcome.max_severity is None and outcome.verdict is None


def test_a_cached_revise_is_judged_like_a_revise() -> None:
    outcome = decide(
        result(ReviewStatus.CACHED, Verdict.REVISE, finding(Severity.HIGH)), Severity.HIGH
    )
    assert outcome.kind is OutcomeKind.FAILED
    assert outcome.summary.startswith("REVISE after 1 round: 1 finding at or above high")


@pytest.mark.parametrize(
    "status", [ReviewStatus.ABORTED, ReviewStatus.NOT_VERIFIED, ReviewStatus.BUDGET_EXHAUSTED]
)
@pytest.mark.parametrize("failed_by", ["reviewer", "lead"])
def test_every_error_status_is_an_error_with_the_first_line_of_its_error(
    status: ReviewStatus, failed_by: str
) -> None:
    base = result(
        status, Verdict.APPROVED, error="\n  first line\nsecond\n", failed_by=failed_by, rounds=2
    )
    outcome = decide(base, Severity.MEDIUM)
    assert outcome.kind is OutcomeKind.ERROR
    assert outcome.summary == f"{failed_by} could not run ({status.value}): first line"
    assert (outcome.status, outcome.rounds) == (status, 2)
    empty = decide(result(status, error=" \n "), Severity.MEDIUM)
    assert empty.summary == f"reviewer could not run ({status.value}): no error text"
    assert decide(result(status), Severity.MEDIUM).summary.endswith("): no error text")


@pytest.mark.parametrize("count", [1, 2])
def test_findings_for_the_operator_fail_whatever_the_verdict(count: int) -> None:
    ids = tuple(f"AR-op{n}" for n in range(count))
    for verdict, status in ((Verdict.APPROVED, ReviewStatus.APPROVED), (None, ReviewStatus.CACHED)):
        outcome = decide(result(status, verdict, needs_operator=ids), Severity.HIGH)
        shown = verdict.value if verdict is not None else status.value
        noun = "finding needs" if count == 1 else "findings needs"
        assert outcome.kind is OutcomeKind.FAILED
        assert outcome.summary == (
            f"{shown} after 1 round, but {count} {noun} the operator (structural, not applied "
            f"by the lead): {', '.join(ids)}"
        )


def test_an_approval_only_with_uncommitted_lead_edits_fails() -> None:
    outcome = decide(
        result(ReviewStatus.APPROVED, Verdict.APPROVED, uncommitted_edits=("plan.md", "src/a.py")),
        Severity.HIGH,
    )
    assert outcome.kind is OutcomeKind.FAILED
    assert outcome.summary == (
        "APPROVED after 1 round only with the lead's edits to plan.md, src/a.py, which the "
        "commit under review (CI) does not contain; apply the --advreview-lead-patch file and "
        "push"
    )


def test_the_failure_report_word_for_word() -> None:
    high = finding(Severity.HIGH, location=Location(file="a.py", line_start=3))
    low = finding(Severity.MEDIUM)
    base = result(
        ReviewStatus.REVISE,
        Verdict.REVISE,
        high,
        low,
        raw="the review\n\n",
        warnings=("w1", "w2"),
        uncommitted_edits=("plan.md", "b.md"),
    )
    outcome = decide(base, Severity.HIGH)
    assert failure_report("item", base, outcome) == (
        "Adversarial review — item — round 1\n"
        "\n"
        "the review\n"
        "\n"
        "\n"
        f"{high.line()}\n"
        f"{low.line()} — below the fail-on threshold\n"
        "\n"
        "not in the commit under review: the lead edited plan.md, b.md in this CI checkout "
        "only; the approval is of the edited text. Apply the --advreview-lead-patch file and "
        "push it.\n"
        "\n"
        "warning: w1\n"
        "warning: w2\n"
    )


def test_the_failure_report_without_a_review_text() -> None:
    base = result(ReviewStatus.REVISE, Verdict.REVISE, raw="")
    assert failure_report("i", base, decide(base, Severity.HIGH)) == (
        "Adversarial review — i — round 1\n\n(no review text)\n\n"
    )
    nothing = result(ReviewStatus.REVISE)
    assert failure_report("i", nothing, decide(nothing, Severity.HIGH)) == (
        "Adversarial review — i — round 1\n\n(no review text)\n\n"
    )
    one = result(ReviewStatus.REVISE, Verdict.REVISE, raw="x")
    assert failure_report("i", one, decide(one, Severity.HIGH)).startswith(
        "Adversarial review — i — round 1\n\nx\n\n"
    )


def test_the_failure_report_for_the_operator_word_for_word() -> None:
    stored = finding(
        Severity.HIGH, 2, recommendation="split it", impact=None, what_can_go_wrong="loss"
    )
    base = result(
        ReviewStatus.APPROVED,
        Verdict.APPROVED,
        raw="r",
        needs_operator=("AR-unknown", stored.id, "AR-noreason"),
        operator_open=(
            OpenFinding(finding=stored, round=3, reason="too big"),
            OpenFinding(
                finding=finding(Severity.MEDIUM, 7).model_copy(update={"id": "AR-noreason"}),
                round=1,
            ),
        ),
        decisions_file="docs/decisions.toml",
    )
    text = failure_report("plan.md", base, decide(base, Severity.HIGH))
    assert text == (
        "Adversarial review — plan.md — round 1\n"
        "\n"
        "r\n"
        "\n"
        "\n"
        "needs the operator: AR-unknown — a structural fix the lead did not apply; decide it "
        "yourself: apply it to the plan, or reject it with a reason in the decisions file\n"
        f"needs the operator: {stored.id} — a structural fix the lead did not apply (after "
        "round 3: too big)\n"
        f"  {stored.line()}\n"
        "  What can go wrong: loss\n"
        "  Recommendation: split it\n"
        f"  open until a person decides it: record the operator's decision for {stored.id} in "
        'docs/decisions.toml ([[decision]] target = "plan.md", finding = '
        f'"{stored.id}", action = "accept", "re-scope" or "reject" with a reason), or change '
        "the artifact so that the reviewer re-reviews it\n"
        "needs the operator: AR-noreason — a structural fix the lead did not apply (after "
        "round 1)\n"
        "  [severity: medium] AR-noreason t7\n"
        "  open until a person decides it: record the operator's decision for AR-noreason in "
        'docs/decisions.toml ([[decision]] target = "plan.md", finding = "AR-noreason", '
        'action = "accept", "re-scope" or "reject" with a reason), or change the artifact so '
        "that the reviewer re-reviews it\n"
    )
    default = result(
        ReviewStatus.APPROVED,
        Verdict.APPROVED,
        needs_operator=(stored.id,),
        operator_open=(OpenFinding(finding=stored, round=3),),
    )
    assert "decision for AR-hig002 in the decisions file ([[decision]]" in failure_report(
        "p", default, decide(default, Severity.HIGH)
    )


def test_the_error_report_word_for_word() -> None:
    base = result(ReviewStatus.ABORTED, error="it broke\n\n", warnings=("w",), failed_by="lead")
    assert error_report("item", base) == (
        "Adversarial review — item — lead could not run (aborted)\n\nit broke\n\nwarning: w\n"
    )
    # Only line ends are stripped: the error's own last characters stay.
    ending = result(ReviewStatus.ABORTED, error="exit code 0xFX \n\n")
    assert error_report("i", ending).endswith("\n\nexit code 0xFX \n")
    ending = result(ReviewStatus.ABORTED, error="exit code 0xFX\n")
    assert error_report("i", ending).endswith("\n\nexit code 0xFX\n")
    assert error_report("item", result(ReviewStatus.ABORTED)) == (
        "Adversarial review — item — reviewer could not run (aborted)\n\nno error text\n"
    )


def test_the_error_report_of_a_contradiction_uses_the_decided_outcome() -> None:
    base = result(ReviewStatus.APPROVED, Verdict.APPROVED, finding(Severity.HIGH))
    outcome = decide(base, Severity.HIGH)
    assert error_report("item", base, outcome) == (
        f"Adversarial review — item — reviewer could not run (aborted)\n\n{outcome.summary}\n"
    )
    # An error the result carries wins over the summary; a non-error outcome adds none.
    errored = result(ReviewStatus.APPROVED, Verdict.APPROVED, finding(Severity.HIGH), error="e")
    assert error_report("i", errored, outcome).endswith("\n\ne\n")
    passed = result(ReviewStatus.APPROVED, Verdict.APPROVED)
    assert error_report("i", passed, decide(passed, Severity.HIGH)).endswith("\n\nno error text\n")


def test_the_warning_message_lists_every_finding_below() -> None:
    low1, low2 = finding(Severity.MEDIUM, 1), finding(Severity.MEDIUM, 2)
    base = result(ReviewStatus.APPROVED, Verdict.APPROVED, low2, low1)
    outcome = decide(base, Severity.HIGH)
    assert warning_message("item", outcome) == (
        f"Adversarial review — item — {outcome.summary}\n{low1.line()}\n{low2.line()}"
    )


def test_user_properties_word_for_word() -> None:
    high = finding(Severity.HIGH)
    low = Finding(id="AR-med009", severity=Severity.MEDIUM, title="naïve")
    base = result(ReviewStatus.REVISE, Verdict.REVISE, low, high, rounds=2)
    base = LoopResult(**{**base.__dict__, "usage": TokenUsage(input_tokens=10, output_tokens=5)})
    outcome = decide(base, Severity.HIGH)
    props = dict(user_properties(base, outcome))
    assert props == {
        "verdict": "REVISE",
        "max_severity": "high",
        "findings": json.dumps(
            [high.model_dump(mode="json"), low.model_dump(mode="json")],
            ensure_ascii=False,
            sort_keys=True,
        ),
        "rounds": 2,
        "tokens": 15,
        "status": "revise",
    }
    assert "naïve" in str(props["findings"])  # not \u00ef
    assert str(props["findings"]).index('"id"') < str(props["findings"]).index('"severity"')
    empty = result(ReviewStatus.ABORTED)
    # No verdict: no verdict property; no finding: max_severity "none" (JUnit writes
    # property values as text, so None would read "None").
    assert dict(user_properties(empty, decide(empty, Severity.HIGH))) == {
        "max_severity": "none",
        "findings": "[]",
        "rounds": 1,
        "tokens": 0,
        "status": "aborted",
    }


def test_the_exceptions_carry_their_text() -> None:
    assert str(WorkspaceMutated(["a.py", "b/c.py"])) == (
        "the reviewer changed the workspace:\n  a.py\n  b/c.py"
    )
    outcome = decide(result(ReviewStatus.REVISE, Verdict.REVISE), Severity.HIGH)
    failed = ReviewFailed(outcome, "report")
    assert (str(failed), failed.outcome) == ("report", outcome)
