"""The item's record: one review's results in the one model every report is built from
(:class:`~.models.ItemRecord`), beside the outcome it records (:mod:`.outcome`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from . import interdiff
from .models import ItemRecord, ReviewStatus, RoundRecord, Severity
from .outcome import Outcome, OutcomeKind

if TYPE_CHECKING:
    from .lead.session import LeadTurns
    from .loop import LoopResult
    from .material import TargetSpec

__all__ = ["item_record"]


def item_record(
    nodeid: str,
    spec: TargetSpec,
    path: str | None,
    fail_on: Severity,
    result: LoopResult | None,
    outcome: Outcome | None,
    *,
    mutations: Sequence[str],
    lead: LeadTurns,
    repo_root: Path,
    history: Sequence[RoundRecord] = (),
    error: str | None = None,
    pre_existing_policy: Literal["block", "warn"] | None = None,
) -> ItemRecord:
    """The item's results in the one model every report is built from.

    :param path: the reviewed file as the record names it (repository-relative).
    :param result: the review's result and ``outcome`` its outcome (``None``: the
        review stopped before it had them; the record says ``error``).
    :param mutations: every mutation the workspace guard found.
    :param lead: the built-in lead's turns (their records and the patch of its edits).
    :param history: the counted rounds of earlier runs the review continued.
    :param pre_existing_policy: ``advreview_pre_existing`` for a code item (``None``: a
        plan, where it does not apply).
    """
    base = ItemRecord(
        nodeid=nodeid,
        key=spec.key,
        kind=spec.kind,
        path=path,
        status=ReviewStatus.ABORTED,
        outcome="error",
        fail_on=fail_on,
        error=error,
        mutations=tuple(mutations),
        pre_existing_policy=pre_existing_policy if spec.kind == "code" else None,
    )
    if result is None or outcome is None:
        return base
    findings = (*outcome.failing, *outcome.waived, *outcome.pre_existing, *outcome.below)
    rounds = (*history, *result.rounds)
    return base.model_copy(
        update=dict(
            status=outcome.status,
            outcome=outcome.kind.value,
            verdict=outcome.verdict,
            max_severity=outcome.max_severity,
            findings=findings,
            failing_ids=tuple(f.id for f in outcome.failing),
            rounds=rounds,
            pre_existing=outcome.pre_existing_ids,
            late=tuple(f for f in interdiff.late_findings(rounds) if f in {g.id for g in findings}),
            decisions=rounds[-1].decisions if rounds else (),
            tokens=result.usage,
            duration_s=sum(r.duration_s for r in result.rounds),
            error=error
            or result.error
            or (outcome.summary if outcome.kind is OutcomeKind.ERROR else None),
            warnings=result.warnings,
            review_text=result.review.raw if result.review is not None else None,
            lead=tuple(lead.records),
            # This run's and those still open from earlier runs (the coordinator's).
            needs_operator=result.needs_operator,
            lead_patch=lead.patch(repo_root),
        )
    )
