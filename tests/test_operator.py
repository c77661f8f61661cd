"""Findings left to the operator: how they are stored, written back, settled and shown.

The end-to-end behaviour (real Codex, a ``command`` lead) is in tests/test_operator_e2e.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_advreview.coordinator import _settled
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
    Verdict,
)
from pytest_advreview.outcome import OutcomeKind, decide, failure_report
from pytest_advreview.prompts import operator_open_decision
from pytest_advreview.state import ReviewState, StateStore

PLAN = "docs/plans/x.md"
OTHER = "docs/plans/y.md"
FINDING = Finding(
    id="AR-abc123",
    severity=Severity.HIGH,
    title="The CLI flag changes meaning",
    location=Location(section="Interface"),
    what_can_go_wrong="Scripts that pass --all now delete.",
    recommendation="Add a new flag.",
)
OPEN = OpenFinding(finding=FINDING, round=1, reason="Changes the CLI grammar.", content_hash="h1")


def record(
    number: int,
    verdict: Verdict,
    *,
    operation: Operation = Operation.RESUME,
    content: str = "h2",
    findings: tuple[Finding, ...] = (),
    decisions: tuple[object, ...] = (),
) -> RoundRecord:
    return RoundRecord.model_validate(
        {
            "number": number,
            "operation": operation,
            "runner": RunnerResult(result=RunnerStatus.SUCCESS, verdict=verdict, attempt_id="a"),
            "review": Review(findings=findings, verdict=verdict, raw=f"review {number}"),
            "decisions": decisions,
            "content_hash": content,
        }
    )


def with_open(key: str = PLAN, *rounds: RoundRecord) -> ReviewState:
    return ReviewState(key=key, reviewer={"model": "m"}, rounds=rounds, operator_open=(OPEN,))


@pytest.fixture
def store(pytester: pytest.Pytester) -> StateStore:
    return StateStore(pytester.parseconfigure())


def entry(store: StateStore, key: str) -> Path:
    path = store.path_for(key)
    assert path is not None
    return path


# -- the stored record -------------------------------------------------------------------------


def test_open_findings_are_stored_signed_and_count_as_known_ids(store: StateStore) -> None:
    assert store.save(with_open(PLAN, record(1, Verdict.APPROVED, operation=Operation.INITIAL)))
    found, problem = store.read(PLAN)
    assert problem is None and found is not None
    assert found.operator_open == (OPEN,)
    # A decision may name it even when no stored round has it (a fresh start since).
    assert "AR-abc123" in with_open().known_finding_ids


def test_an_entry_whose_open_findings_were_removed_does_not_verify(store: StateStore) -> None:
    store.save(with_open())
    path = entry(store, PLAN)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["state"]["operator_open"] = []
    path.write_text(json.dumps(data), encoding="utf-8")
    found, problem = store.read(PLAN)
    assert found is None and problem is not None
    assert "not written by pytest-advreview" in problem


def test_clearing_a_verdict_keeps_the_open_findings(store: StateStore) -> None:
    store.save(with_open(PLAN, record(1, Verdict.APPROVED, operation=Operation.INITIAL)))
    store.clear(PLAN)
    found, _ = StateStore(store._config).read(PLAN)
    assert found is not None
    assert found.rounds == () and found.operator_open == (OPEN,)


def test_clearing_a_target_without_open_findings_deletes_its_entry(store: StateStore) -> None:
    store.save(ReviewState(key=PLAN, reviewer={"model": "m"}))
    store.clear(PLAN)
    assert not entry(store, PLAN).exists()


def test_an_entry_a_reviewer_deleted_is_written_back_with_its_open_findings(
    store: StateStore,
) -> None:
    store.save(with_open(PLAN, record(1, Verdict.APPROVED, operation=Operation.INITIAL)))
    store.save(ReviewState(key=OTHER, reviewer={"model": "m"}))
    # Another process of a later run: it never read PLAN's entry before the reviewer ran.
    later = StateStore(store._config)
    before = later.snapshot()
    entry(store, PLAN).unlink()
    entry(store, OTHER).unlink()
    changed = later.foreign_changes(before, later.snapshot())
    assert later.target_of(str(entry(store, PLAN))) == PLAN  # named although deleted
    later.discard(changed)
    found, _ = StateStore(store._config).read(PLAN)
    assert found is not None and found.rounds == () and found.operator_open == (OPEN,)
    assert not entry(store, OTHER).exists()


def test_a_forged_entry_with_open_findings_is_not_learnt(store: StateStore) -> None:
    # The search before a reviewer runs trusts only entries that verify.
    path = entry(store, PLAN)
    forged = {"schema_version": 2, "mac": "0" * 64, "run_tag": "0" * 64}
    path.write_text(json.dumps({**forged, "state": with_open().model_dump(mode="json")}))
    later = StateStore(store._config)
    before = later.snapshot()
    path.unlink()
    later.discard(later.foreign_changes(before, later.snapshot()))
    assert not path.exists()


# -- settled by a re-review ---------------------------------------------------------------------


def result(*rounds: RoundRecord) -> LoopResult:
    return LoopResult(status=ReviewStatus.APPROVED, rounds=rounds)


def test_a_told_re_review_of_other_content_that_drops_the_finding_settles_it() -> None:
    told = operator_open_decision(OPEN)
    assert _settled(OPEN, told, result(record(3, Verdict.APPROVED, decisions=(told,))))


@pytest.mark.parametrize(
    ("why", "told_in", "changes"),
    [
        ("not told", False, {}),
        ("same content", True, {"content": "h1"}),
        ("reported again", True, {"verdict": Verdict.REVISE, "findings": (FINDING,)}),
        ("a first round (no history)", True, {"operation": Operation.INITIAL}),
    ],
)
def test_anything_else_leaves_it_open(why: str, told_in: bool, changes: dict[str, object]) -> None:
    told = operator_open_decision(OPEN)
    args: dict[str, object] = {"verdict": Verdict.APPROVED, **changes}
    verdict = args.pop("verdict")
    assert isinstance(verdict, Verdict)
    round_ = record(3, verdict, decisions=(told,) if told_in else (), **args)  # type: ignore[arg-type]
    assert not _settled(OPEN, told, result(round_)), why


def test_nothing_counted_settles_nothing() -> None:
    assert not _settled(OPEN, operator_open_decision(OPEN), result())


# -- what the reviewer and the operator read ---------------------------------------------------


def test_the_re_review_is_told_the_finding_its_text_and_that_a_person_was_asked() -> None:
    decision = operator_open_decision(OPEN, subject="plan")
    assert decision.finding == "AR-abc123"
    reason = decision.reason or ""
    assert reason.startswith("still open, needs the operator: after round 1 the lead left")
    assert "(Changes the CLI grammar.)" in reason
    assert "[severity: high] AR-abc123 The CLI flag changes meaning (Interface)" in reason
    assert "What can go wrong: Scripts that pass --all now delete." in reason
    assert "unless the plan now resolves it, report it again" in reason


def test_an_open_finding_fails_even_a_cached_approval_and_the_text_names_the_fix() -> None:
    approved = Review(verdict=Verdict.APPROVED, raw="VERDICT: APPROVED\n")
    stored = LoopResult(
        status=ReviewStatus.CACHED,
        review=approved,
        last_round=2,
        needs_operator=("AR-abc123",),
        operator_open=(OPEN,),
        decisions_file=".advreview/decisions.toml",
    )
    outcome = decide(stored, Severity.MEDIUM)
    assert outcome.kind is OutcomeKind.FAILED
    assert "needs the operator" in outcome.summary and "AR-abc123" in outcome.summary
    text = failure_report(PLAN, stored, outcome)
    assert (
        "needs the operator: AR-abc123 — a structural fix the lead did not apply "
        "(after round 1: Changes the CLI grammar.)"
    ) in text
    assert "  [severity: high] AR-abc123 The CLI flag changes meaning (Interface)" in text
    assert "  Recommendation: Add a new flag." in text
    assert (
        "record the operator's decision for AR-abc123 in .advreview/decisions.toml "
        f'([[decision]] target = "{PLAN}", finding = "AR-abc123"'
    ) in text
