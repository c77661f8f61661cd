"""The outcome table: verdict + severity + fail-on -> passed / warned / failed / error."""

from __future__ import annotations

import json

import pytest

from pytest_advreview.loop import LoopResult
from pytest_advreview.models import (
    Finding,
    Location,
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
    decide,
    error_report,
    failure_report,
    user_properties,
    warning_message,
)

CRIT = Finding(
    id="AR-ccc111",
    severity=Severity.CRITICAL,
    title="Data loss on retry",
    location=Location(file="src/db.py", line_start=10, line_end=12),
)
HIGH_B = Finding(id="AR-bbb222", severity=Severity.HIGH, title="No rollback")
HIGH_A = Finding(id="AR-aaa333", severity=Severity.HIGH, title="Race on the lock")
MED = Finding(
    id="AR-ddd444", severity=Severity.MEDIUM, title="Vague metric", location=Location(section="3")
)

RAW = "## Summary\r\nTwo   problems.\n\n[severity: high] No rollback\n\tindented\nVERDICT: REVISE\n"


def make_review(verdict: Verdict | None, *findings: Finding, raw: str = RAW) -> Review:
    return Review(summary="s", findings=findings, verdict=verdict, raw=raw)


def make_result(
    status: ReviewStatus,
    review: Review | None = None,
    *,
    rounds: int = 1,
    error: str | None = None,
    warns: tuple[str, ...] = (),
    tokens: int = 0,
) -> LoopResult:
    records = tuple(
        RoundRecord(
            number=n,
            operation=Operation.INITIAL if n == 1 else Operation.RESUME,
            runner=RunnerResult(result=RunnerStatus.SUCCESS, attempt_id="a"),
            review=review,
        )
        for n in range(1, rounds + 1)
    )
    return LoopResult(
        status=status,
        rounds=records,
        review=review,
        error=error,
        warnings=warns,
        usage=TokenUsage(input_tokens=tokens, output_tokens=tokens // 2),
        last_round=rounds,
    )


# -- the table --------------------------------------------------------------------------


def test_approved_passes() -> None:
    outcome = decide(
        make_result(ReviewStatus.APPROVED, make_review(Verdict.APPROVED)), Severity.HIGH
    )

    assert outcome.kind is OutcomeKind.PASSED
    assert outcome.verdict is Verdict.APPROVED
    assert outcome.summary == "APPROVED after 1 round"


@pytest.mark.parametrize("status", [ReviewStatus.APPROVED, ReviewStatus.CACHED])
@pytest.mark.parametrize(
    ("finding", "fail_on"),
    [(CRIT, Severity.MEDIUM), (HIGH_A, Severity.HIGH), (MED, Severity.MEDIUM)],
    ids=["critical@medium", "high@high", "medium@medium"],
)
def test_approved_with_a_finding_at_or_above_fail_on_is_an_error_never_a_pass(
    status: ReviewStatus, finding: Finding, fail_on: Severity
) -> None:
    # "Passed" next to a failing finding: the JSON report listed it as failing while the
    # item passed.  A contradictory review is judged neither way.
    result = make_result(status, make_review(Verdict.APPROVED, finding))

    outcome = decide(result, fail_on)

    assert outcome.kind is OutcomeKind.ERROR
    assert outcome.status is ReviewStatus.ABORTED
    assert outcome.failing == () and outcome.below == () and outcome.verdict is None
    assert "contradictory: VERDICT: APPROVED with 1 finding at or above fail-on" in (
        outcome.summary
    )
    assert finding.id in outcome.summary
    assert "--advreview-fresh" in outcome.summary
    text = error_report("docs/plans/x.md", result, outcome)
    assert "reviewer could not run (aborted)" in text
    assert outcome.summary in text


@pytest.mark.parametrize("status", [ReviewStatus.APPROVED, ReviewStatus.CACHED])
def test_approved_with_findings_only_below_fail_on_passes_with_a_warning(
    status: ReviewStatus,
) -> None:
    result = make_result(status, make_review(Verdict.APPROVED, MED, HIGH_B))

    outcome = decide(result, Severity.CRITICAL)

    assert outcome.kind is OutcomeKind.WARNED
    assert outcome.failing == ()
    assert outcome.below == (HIGH_B, MED)
    assert outcome.verdict is Verdict.APPROVED
    assert outcome.summary == (
        "APPROVED after 1 round with 2 findings below critical (passed with a warning)"
    )
    assert warning_message("x", outcome).splitlines()[1:] == [HIGH_B.line(), MED.line()]


def test_revise_at_or_above_fail_on_fails() -> None:
    result = make_result(ReviewStatus.REVISE, make_review(Verdict.REVISE, MED, HIGH_B), rounds=2)

    outcome = decide(result, Severity.HIGH)

    assert outcome.kind is OutcomeKind.FAILED
    assert outcome.failing == (HIGH_B,)
    assert outcome.below == (MED,)
    assert outcome.max_severity is Severity.HIGH
    assert outcome.rounds == 2
    assert (
        outcome.summary == "REVISE after 2 rounds: 1 finding at or above high (max high), 1 below"
    )


def test_revise_all_below_fail_on_warns() -> None:
    result = make_result(ReviewStatus.REVISE, make_review(Verdict.REVISE, MED))

    outcome = decide(result, Severity.HIGH)

    assert outcome.kind is OutcomeKind.WARNED
    assert outcome.failing == ()
    assert outcome.below == (MED,)
    assert "below high" in outcome.summary


def test_max_rounds_with_a_finding_at_fail_on_fails() -> None:
    result = make_result(ReviewStatus.MAX_ROUNDS, make_review(Verdict.REVISE, CRIT, MED), rounds=5)

    outcome = decide(result, Severity.HIGH)

    assert outcome.kind is OutcomeKind.FAILED
    assert outcome.summary.startswith("maximum rounds reached (5), still REVISE")


def test_max_rounds_with_only_findings_below_fail_on_warns() -> None:
    result = make_result(ReviewStatus.MAX_ROUNDS, make_review(Verdict.REVISE, MED), rounds=5)

    outcome = decide(result, Severity.HIGH)

    assert outcome.kind is OutcomeKind.WARNED
    assert outcome.summary.startswith("maximum rounds reached (5), still REVISE")


@pytest.mark.parametrize("status", [ReviewStatus.REVISE, ReviewStatus.MAX_ROUNDS])
def test_revise_without_parsable_findings_fails(status: ReviewStatus) -> None:
    outcome = decide(make_result(status, make_review(Verdict.REVISE)), Severity.MEDIUM)

    assert outcome.kind is OutcomeKind.FAILED
    assert "no parsable findings" in outcome.summary


def test_revise_status_without_any_review_fails() -> None:
    outcome = decide(make_result(ReviewStatus.REVISE, None), Severity.HIGH)

    assert outcome.kind is OutcomeKind.FAILED


@pytest.mark.parametrize(
    "status", [ReviewStatus.ABORTED, ReviewStatus.NOT_VERIFIED, ReviewStatus.BUDGET_EXHAUSTED]
)
def test_reviewer_could_not_run_is_an_error_never_a_finding(status: ReviewStatus) -> None:
    # Even with a severe earlier review around, the outcome is an error without findings.
    result = make_result(
        status, make_review(Verdict.REVISE, CRIT), error="codex: timeout\nsecond line"
    )

    outcome = decide(result, Severity.MEDIUM)

    assert outcome.kind is OutcomeKind.ERROR
    assert outcome.failing == ()
    assert outcome.below == ()
    assert outcome.summary == f"reviewer could not run ({status.value}): codex: timeout"


def test_error_without_error_text_says_so() -> None:
    outcome = decide(make_result(ReviewStatus.ABORTED, error=""), Severity.HIGH)

    assert outcome.summary == "reviewer could not run (aborted): no error text"


@pytest.mark.parametrize(
    ("verdict", "findings", "kind"),
    [
        (Verdict.APPROVED, (), OutcomeKind.PASSED),
        (Verdict.REVISE, (CRIT,), OutcomeKind.FAILED),
        (Verdict.REVISE, (MED,), OutcomeKind.WARNED),
        (None, (), OutcomeKind.ERROR),
    ],
)
def test_cached_maps_like_its_verdict(
    verdict: Verdict | None, findings: tuple[Finding, ...], kind: OutcomeKind
) -> None:
    result = make_result(ReviewStatus.CACHED, make_review(verdict, *findings), rounds=0)

    assert decide(result, Severity.HIGH).kind is kind


def test_findings_are_sorted_highest_first_then_by_id() -> None:
    result = make_result(
        ReviewStatus.REVISE, make_review(Verdict.REVISE, MED, HIGH_B, CRIT, HIGH_A)
    )

    outcome = decide(result, Severity.HIGH)

    assert outcome.failing == (CRIT, HIGH_A, HIGH_B)
    assert outcome.below == (MED,)
    assert outcome.max_severity is Severity.CRITICAL


def test_rounds_prefer_last_round_including_history() -> None:
    result = LoopResult(
        status=ReviewStatus.MAX_ROUNDS, review=make_review(Verdict.REVISE, CRIT), last_round=4
    )

    assert decide(result, Severity.HIGH).rounds == 4


# -- texts ------------------------------------------------------------------------------


def test_warning_message_names_every_below_threshold_finding() -> None:
    result = make_result(ReviewStatus.REVISE, make_review(Verdict.REVISE, MED))
    outcome = decide(result, Severity.HIGH)

    text = warning_message("docs/plans/x.md::adversarial-review", outcome)

    assert text.splitlines()[0].startswith("Adversarial review — docs/plans/x.md::")
    assert "[severity: medium] AR-ddd444 Vague metric (3)" in text.splitlines()


def test_failure_report_has_header_verbatim_review_and_finding_lines() -> None:
    result = make_result(
        ReviewStatus.REVISE, make_review(Verdict.REVISE, MED, HIGH_B, CRIT), rounds=3
    )
    outcome = decide(result, Severity.HIGH)

    report = failure_report("test_plan", result, outcome)

    header, blank, rest = report.split("\n", 2)
    assert header == "Adversarial review — test_plan — round 3"
    assert blank == ""
    assert rest.startswith(RAW)  # byte for byte, CR, tabs and runs of spaces kept
    tail = rest[len(RAW) :].splitlines()
    assert tail == [
        "",
        "[severity: critical] AR-ccc111 Data loss on retry (src/db.py lines 10-12)",
        "[severity: high] AR-bbb222 No rollback",
        "[severity: medium] AR-ddd444 Vague metric (3) — below the fail-on threshold",
    ]
    assert "Traceback" not in report


def test_failure_report_keeps_a_review_without_final_newline_verbatim() -> None:
    raw = "one line review VERDICT: REVISE"
    result = make_result(ReviewStatus.REVISE, make_review(Verdict.REVISE, CRIT, raw=raw))
    outcome = decide(result, Severity.HIGH)

    report = failure_report("t", result, outcome)

    assert f"\n\n{raw}\n\n[severity: critical]" in report


def test_failure_report_lists_warnings_after_the_findings() -> None:
    result = make_result(
        ReviewStatus.REVISE, make_review(Verdict.REVISE, CRIT), warns=("quality unknown",)
    )

    report = failure_report("t", result, decide(result, Severity.HIGH))

    assert report.rstrip("\n").endswith("warning: quality unknown")


def test_error_report_has_header_error_and_warnings() -> None:
    result = make_result(
        ReviewStatus.NOT_VERIFIED,
        error="resume failed; medium only",
        warns=("rate limited",),
    )

    report = error_report("test_plan", result)

    assert report.splitlines() == [
        "Adversarial review — test_plan — reviewer could not run (not verified)",
        "",
        "resume failed; medium only",
        "",
        "warning: rate limited",
    ]


# -- exceptions and properties ----------------------------------------------------------


def test_user_properties_carry_findings_as_json() -> None:
    result = make_result(
        ReviewStatus.REVISE, make_review(Verdict.REVISE, MED, CRIT), rounds=2, tokens=1000
    )
    outcome = decide(result, Severity.HIGH)

    props = dict(user_properties(result, outcome))

    assert list(props) == ["verdict", "max_severity", "findings", "rounds", "tokens", "status"]
    assert props["verdict"] == "REVISE"
    assert props["max_severity"] == "critical"
    assert props["rounds"] == 2
    assert props["tokens"] == 1500
    assert props["status"] == "revise"
    findings = props["findings"]
    assert isinstance(findings, str)
    decoded = json.loads(findings)
    assert [f["id"] for f in decoded] == ["AR-ccc111", "AR-ddd444"]
    assert decoded[0]["severity"] == "critical"
    assert decoded[0]["location"]["file"] == "src/db.py"


def test_user_properties_of_an_error_have_no_findings() -> None:
    result = make_result(ReviewStatus.ABORTED, error="boom", rounds=0)

    props = dict(user_properties(result, decide(result, Severity.HIGH)))

    # JUnit XML would write None as "None": no verdict is no property, no finding "none".
    assert "verdict" not in props
    assert props["max_severity"] == "none"
    assert None not in props.values()
    assert props["findings"] == "[]"
    assert props["status"] == "aborted"
