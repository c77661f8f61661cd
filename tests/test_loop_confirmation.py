"""The loop's sampled first round and verifier turns, with reviewers that return queued
results (fault injection: a warning of one sample, a verifier that writes, the fresh-exec
fallback that must still carry what other samples reported)."""

from __future__ import annotations

from pathlib import Path

from pytest_advreview.loop import ReviewTarget, run_loop
from pytest_advreview.models import (
    Location,
    Operation,
    Review,
    ReviewStatus,
    Severity,
    Verdict,
)
from pytest_advreview.samples import Sampled, merge
from test_loop import RecordingHooks, ScriptedReviewer, finding, ok, record, review
from test_loop import target as target  # the fixture

VERIFIED = "VERIFICATION: CONFIRMED\nEVIDENCE: read x.py line 1\nREASON: real\nVERDICT: APPROVED"


def test_a_samples_warning_is_reported_with_its_number(
    target: ReviewTarget, tmp_path: Path
) -> None:
    first = ScriptedReviewer([ok(Operation.INITIAL, review(Verdict.APPROVED))])
    second = ScriptedReviewer(
        [ok(Operation.INITIAL, review(Verdict.APPROVED), warning="slow model")]
    )
    result = run_loop(target, first, max_rounds=1, samples=[("other", second)])
    assert result.status is ReviewStatus.APPROVED
    assert "sample 2: slow model" in result.warnings
    assert second.requests[0].work_dir == tmp_path / "work" / "sample-2"
    assert result.usage.input_tokens == 200  # both samples counted


def test_a_verifier_that_changes_the_workspace_aborts_the_round(target: ReviewTarget) -> None:
    reviewer = ScriptedReviewer([ok(Operation.INITIAL, review(Verdict.REVISE, Severity.HIGH))])
    verdict = Review(verdict=Verdict.APPROVED, raw=VERIFIED)
    verifier = ScriptedReviewer([ok(Operation.INITIAL, verdict)])
    hooks = RecordingHooks(mutations={2: ["x.py (modified, round 1)"]})
    result = run_loop(target, reviewer, max_rounds=1, hooks=hooks, verifier=verifier)
    assert result.status is ReviewStatus.ABORTED
    assert result.error == "a verifier changed the workspace during round 1"
    assert result.mutations == ("x.py (modified, round 1)",)
    assert hooks.mutation_checks == [1, 1]


def test_the_fresh_exec_fallback_carries_what_other_samples_reported(
    target: ReviewTarget,
) -> None:
    theirs = finding(Severity.HIGH, "Theirs", "AR-t").model_copy(
        update={"location": Location(section="## B")}
    )
    mine = review(Verdict.REVISE, Severity.HIGH, tag="m")
    merged = merge(
        [
            Sampled(1, "scripted", mine),
            Sampled(2, "scripted", Review(findings=(theirs,), verdict=Verdict.REVISE, raw="t")),
        ]
    )
    history = [record(1, merged)]
    reviewer = ScriptedReviewer(
        [ok(Operation.FRESH_EXEC, review(Verdict.APPROVED))], resumable=False
    )
    hooks = RecordingHooks()
    result = run_loop(target, reviewer, max_rounds=3, hooks=hooks, history=history)
    (operation, prompt), *_ = hooks.prompts
    assert operation is Operation.FRESH_EXEC
    assert "Findings of the other samples" in prompt and "AR-t" in prompt
    # It approved without answering AR-t: the finding stays, and blocks.
    assert result.status is ReviewStatus.REVISE
    assert result.review is not None and "AR-t" in {f.id for f in result.review.findings}
