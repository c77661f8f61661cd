"""The item's record: one review's results in the one model every report is built from
(:class:`~.models.ItemRecord`), beside the outcome it records (:mod:`.outcome`), and what
the review's tokens cost, the lead's turns included (:func:`priced`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import interdiff
from .git import quote_path
from .models import ItemRecord, LeadRecord, ReviewStatus, RoundRecord, TokenUsage
from .outcome import Outcome, OutcomeKind
from .pricing import PriceTable

if TYPE_CHECKING:
    from .loop import LoopResult
    from .review import ReviewRun

__all__ = ["item_record", "priced"]


def item_record(
    run: ReviewRun,
    nodeid: str,
    result: LoopResult | None,
    outcome: Outcome | None,
    *,
    history: Sequence[RoundRecord] = (),
    error: str | None = None,
) -> ItemRecord:
    """The results of ``run`` in the one model every report is built from.

    :param result: the review's result and ``outcome`` its outcome (``None``: the
        review stopped before it had them; the record says ``error``).
    :param history: the counted rounds of earlier runs the review continued.
    """
    spec, settings, lead = run.spec, run.settings, run.lead
    path = spec.path or spec.against_plan
    base = ItemRecord(
        nodeid=nodeid,
        key=spec.key,
        kind=spec.kind,
        path=quote_path(run.relative(path)) if path else None,  # reports are text
        status=ReviewStatus.ABORTED,
        outcome="error",
        fail_on=settings.fail_on,
        error=error,
        mutations=tuple(run.guard.mutations),
        # advreview_pre_existing applies to a code item only, never to a plan.
        pre_existing_policy=("warn" if settings.pre_existing == "warn" else "block")
        if spec.kind == "code"
        else None,
    )
    if result is None or outcome is None:
        return base
    findings = (*outcome.failing, *outcome.waived, *outcome.pre_existing, *outcome.below)
    rounds = (*history, *result.rounds)
    turns, cost, unknown = priced(run, result.usage)
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
            warnings=(*result.warnings, *([unknown] if unknown else [])),
            review_text=result.review.raw if result.review is not None else None,
            lead=turns,
            # This run's and those still open from earlier runs (the coordinator's).
            needs_operator=result.needs_operator,
            lead_patch=lead.patch(run.context.repo_root),
            cost=cost,
        )
    )


def priced(
    run: ReviewRun, usage: TokenUsage
) -> tuple[tuple[LeadRecord, ...], float | None, str | None]:
    """The lead's turns of ``run`` with their money, what ``usage`` (this run's tokens,
    the lead's included) cost, and why that is unknown (``None`` without prices)."""
    settings = run.settings
    prices = PriceTable.of(settings.prices)
    turns = tuple(run.lead.records)
    if not prices:
        return turns, None, None
    turns = tuple(t.model_copy(update={"cost": prices.cost(t.tokens, t.model)}) for t in turns)
    lead_usage = sum((t.tokens for t in turns), TokenUsage())
    parts = [prices.cost(usage.minus(lead_usage), settings.reviewer_model)]
    parts += [t.cost for t in turns]
    if all(part is not None for part in parts):
        return turns, sum(part for part in parts if part is not None), None
    unpriced = [
        (settings.reviewer_model or f"the {settings.reviewer} reviewer's model")
        if parts[0] is None
        else None,
        *(t.model or f"the {t.backend} lead" for t in turns if t.cost is None),
    ]
    names = ", ".join(sorted({name for name in unpriced if name is not None}))
    return (
        turns,
        None,
        f"money unknown: ini advreview_prices has no line for {names}; add one to see "
        "what this review cost",
    )
