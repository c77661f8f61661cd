"""The merge of several samples and what a later round owes them (:mod:`.samples`), the
settings that ask for samples, and their place in the reviewer identity."""

from __future__ import annotations

import pytest

from pytest_advreview.cachekey import reviewer_identity
from pytest_advreview.models import Finding, Location, Review, Severity, Verdict, finding_id
from pytest_advreview.prompts import owed_findings
from pytest_advreview.samples import Sampled, merge, owed, settle
from pytest_advreview.settings import Settings


def _finding(title: str, severity: str = "high", section: str | None = "## A") -> Finding:
    where = Location(section=section) if section is not None else None
    return Finding(
        id=finding_id(title, where), severity=Severity(severity), title=title, location=where
    )


def _review(*findings: Finding) -> Review:
    verdict = Verdict.REVISE if findings else Verdict.APPROVED
    return Review(findings=findings, verdict=verdict, raw=f"VERDICT: {verdict.value}")


def test_same_place_and_severity_merge_and_keep_each_wording() -> None:
    merged = merge(
        [
            Sampled(1, "codex", _review(_finding("Backup unverified"))),
            Sampled(2, "claude", _review(_finding("No restore test"))),
            Sampled(3, "codex", _review()),
        ]
    )
    (finding,) = merged.findings
    assert finding.title == "Backup unverified"
    assert [(m.sample, m.reviewer, m.title) for m in finding.samples] == [
        (1, "codex", "Backup unverified"),
        (2, "claude", "No restore test"),
    ]
    assert merged.verdict is Verdict.REVISE
    assert "## Sample 3 (codex)" in merged.raw


@pytest.mark.parametrize(
    ("other", "why"),
    [
        (_finding("Same place", severity="medium"), "another severity"),
        (_finding("Elsewhere", section="## B"), "another place"),
        (_finding("Nowhere", section=None), "no place"),
    ],
)
def test_only_the_same_place_and_severity_merge(other: Finding, why: str) -> None:
    first = _finding("First", section=None if other.location is None else "## A")
    merged = merge([Sampled(1, "codex", _review(first)), Sampled(2, "codex", _review(other))])
    assert len(merged.findings) == 2, why


def test_two_findings_of_one_sample_never_merge_into_one() -> None:
    merged = merge(
        [
            Sampled(1, "codex", _review(_finding("One"), _finding("Two"))),
            Sampled(2, "codex", _review(_finding("Uno"))),
        ]
    )
    assert [len(f.samples) for f in merged.findings] == [2, 1]


def test_all_samples_approving_approve() -> None:
    merged = merge([Sampled(1, "codex", _review()), Sampled(2, "codex", _review())])
    assert merged.verdict is Verdict.APPROVED
    assert merged.findings == ()


def test_owed_is_what_no_sample_one_reported() -> None:
    merged = merge(
        [
            Sampled(1, "codex", _review(_finding("Mine"))),
            Sampled(2, "codex", _review(_finding("Shared"), _finding("Theirs", section="## B"))),
        ]
    )
    assert [f.title for f in owed(merged)] == ["Theirs"]
    assert owed(None) == ()
    assert owed(_review(_finding("Plain"))) == ()  # one review: nothing is owed
    section = owed_findings(owed(merged))
    assert "Theirs" in section and "sample 2" in section and "RESOLVED <id>" in section
    assert owed_findings(()) == ""


def _debt() -> Finding:
    merged = merge(
        [Sampled(1, "codex", _review()), Sampled(2, "codex", _review(_finding("Theirs")))]
    )
    return owed(merged)[0]


def test_an_approval_that_ignores_a_debt_keeps_it_and_revises() -> None:
    debt = _debt()
    kept, warning = settle(_review(), [debt], Severity.MEDIUM)
    assert kept.verdict is Verdict.REVISE
    assert debt in kept.findings
    assert warning is not None and debt.id in warning and "blocks" in warning


def test_a_debt_below_fail_on_is_kept_without_revising() -> None:
    kept, warning = settle(_review(), [_debt()], Severity.CRITICAL)
    assert kept.verdict is Verdict.APPROVED
    assert warning is not None and "blocks" not in warning


@pytest.mark.parametrize(
    "answer",
    [
        "RESOLVED {id}: the section now verifies the backup (read lines 3-5).",
        "- **RESOLVED** {id}: verified.",
    ],
)
def test_a_resolved_line_answers_a_debt(answer: str) -> None:
    debt = _debt()
    review = Review(verdict=Verdict.APPROVED, raw=answer.format(id=debt.id) + "\nVERDICT: APPROVED")
    assert settle(review, [debt], Severity.MEDIUM) == (review, None)


@pytest.mark.parametrize(
    "raw",
    [
        "{id} is fine.",  # a mention is no answer
        "RESOLVED {id}",  # no reason
        "RESOLVED {id}0: why",  # another id
    ],
)
def test_anything_else_is_no_answer(raw: str) -> None:
    debt = _debt()
    review = Review(verdict=Verdict.APPROVED, raw=raw.format(id=debt.id))
    kept, warning = settle(review, [debt], Severity.MEDIUM)
    assert kept.verdict is Verdict.REVISE and warning is not None


def test_reporting_the_debt_again_answers_it() -> None:
    debt = _debt()
    again = _finding("Reworded, same place")
    review = _review(again)
    assert settle(review, [debt], Severity.MEDIUM) == (review, None)


def test_samples_are_part_of_the_identity_only_when_asked_for() -> None:
    one = reviewer_identity(Settings(), environ={})
    assert "samples" not in one and "sample_reviewers" not in one
    three = reviewer_identity(Settings(samples=3), environ={})
    assert three["samples"] != ""
    assert {k: v for k, v in three.items() if k != "samples"} == one
    mixed = reviewer_identity(
        Settings(samples=2, sample_reviewers=("codex", "command"), command="x"), environ={}
    )
    assert mixed["sample_reviewers"] != ""
    assert "command" in mixed  # the command sample's own settings are keyed too
    assert mixed["samples"] == reviewer_identity(Settings(samples=2), environ={})["samples"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--advreview-samples=3", "--advreview-sample-reviewers=codex,codex"],
            "*--advreview-sample-reviewers (ini advreview_sample_reviewers) names 2 reviewers "
            "for 3 samples; name one per sample or set --advreview-samples=2*",
        ),
        (
            ["--advreview-samples=2", "--advreview-sample-reviewers=command,codex"],
            "*starts with 'command', but sample 1 is the reviewer ('codex')*list codex first*",
        ),
        (
            ["--advreview-sample-reviewers=codex,no good"],
            "*expected reviewer names separated by commas*",
        ),
        (["--advreview-samples=9"], "*--advreview-samples*"),
        (["--advreview-samples=0"], "*--advreview-samples*"),
    ],
    ids=["count", "first", "name", "too-many", "zero"],
)
def test_sample_settings_that_do_not_fit_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], expected: str
) -> None:
    result = pytester.runpytest("--adversarial-review", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([expected])
    assert "Traceback" not in result.stderr.str()


def test_verification_is_part_of_the_identity_only_when_asked_for() -> None:
    off = reviewer_identity(Settings(), environ={})
    assert "verify" not in off and "verifier" not in off and "verify_demotes" not in off
    on = reviewer_identity(Settings(verify=True), environ={})
    assert on["verify"] != "" and {k: v for k, v in on.items() if k != "verify"} == off
    demotes = reviewer_identity(Settings(verify=True, verify_demotes=("critical",)), environ={})
    assert demotes["verify_demotes"] != ""
    by = reviewer_identity(Settings(verify=True, verifier="command", command="x"), environ={})
    assert by["verifier"] != "" and "command" in by  # the verifier's backend's settings
