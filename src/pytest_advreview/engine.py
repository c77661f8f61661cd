"""One review, top to bottom: the one path an item, the fixture and the jobs pool take.

:func:`review_target` reads in the order a review happens:

1. the material: the plan's text or the change set, read once;
2. the stored verdict: whether it stands, or which rounds are due (the coordinator);
3. the rounds due, inside the workspace guard (a snapshot before the first dispatch, the
   comparison after the last);
4. the outcome, judged against fail-on;
5. the save: the verdict and the findings left to the operator are stored;
6. the record every report is built from.

Its inputs are plain: the review (:class:`~.review.ReviewRun`: its context of settings,
reviewer and progress display, its target) and the coordinator (stored state, decisions,
budget).  It is the one place a review's result becomes an outcome
(:func:`~.outcome.decide` maps severities to it).  It touches no pytest hook and no run
stash; where the callers differ, a parameter says how (:data:`CompareWorkspace`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from . import outbound
from .hunks import pre_existing
from .outcome import decide
from .record import item_record

if TYPE_CHECKING:
    from .coordinator import Coordinator
    from .loop import LoopResult
    from .models import ItemRecord, RoundRecord
    from .outcome import Outcome
    from .progress import Progress
    from .review import ReviewRun

__all__ = ["CompareWorkspace", "Reviewed", "review_target"]

#: When the workspace guard's last comparison runs. ``"now"``: right after the rounds,
#: before the record (the fixture: a changed workspace fails the test that asked).
#: ``"later"``: the caller calls :meth:`~.workspace.guard.ReviewGuard.finish` itself (an item's
#: teardown, so a reviewer that changed files is that phase's error even after a pass).
CompareWorkspace = Literal["now", "later"]


@dataclass(frozen=True)
class Reviewed:
    """What one review gave: the loop's result, its outcome and the item record.

    :param history: the counted rounds of earlier runs the review continued.
    :param kept: the reviewer's folder kept for diagnosis (``"now"`` only; the caller's
        message must name it).
    """

    run: ReviewRun
    result: LoopResult
    outcome: Outcome
    record: ItemRecord
    history: tuple[RoundRecord, ...] = ()
    kept: str | None = None


def review_target(
    run: ReviewRun,
    coordinator: Coordinator,
    *,
    nodeid: str,
    compare_workspace: CompareWorkspace,
) -> Reviewed:
    """Review ``run``'s target once, from its material to its record.

    :param nodeid: the name the record (and the progress display) gives the review.
    :raises ReviewInputError: unusable material, or a decisions-file entry that names a
        finding this target never had.
    :raises WorkspaceMutated: with ``compare_workspace="now"``, the reviewer changed files.
    """
    try:
        with _shown(run.context.progress, nodeid):
            # 1. The material, read once (ReviewInputError: the plan cannot be read).
            material = run.material()
            # 2. The stored verdict: it stands, or says which rounds are due.
            due = coordinator.stored_verdict(
                run.spec, material, fixer_hook=run.context.fixer_hook, root=run.context.repo_root
            )
            # 3. The rounds due, inside the workspace guard: ReviewRun.run snapshots the
            # workspace before the first dispatch and checks it after each round.
            rounds = coordinator.rounds(run, due) if due.rounds_due else None
            result = rounds.result if rounds is not None else due.stands
            if result is None:  # not an assert: python -O must not turn this into a pass
                raise RuntimeError("no rounds were due and no stored verdict stands")
            # 4. The outcome, against fail-on: judged here and nowhere else.  A waiver holds
            # only on the code it was decided on: what each finding cites now.
            findings = result.review.findings if result.review is not None else ()
            coordinator.bind(run.spec, material, findings, run.context.repo_root)
            # Pre-existing: outside every changed hunk of the diff (code only; model-free),
            # of the text the last round reviewed: the material again after a lead's edit.
            # A plugin's fixer edits files nobody re-reads: then nothing is pre-existing.
            changed = run.material().hunks if not run.context.fixer_hook else None
            placed = pre_existing(findings, changed) if changed is not None else ()
            outcome = decide(
                result,
                run.settings.fail_on,
                coordinator.waived(run.spec.key),
                content=coordinator.content(run.spec.key),
                pre_existing=placed,
                pre_existing_policy=run.settings.pre_existing,
                demotes=run.settings.verify_demotes,
            )
            # 5. The save: what the rounds reviewed, and the findings left open.
            if rounds is not None:
                coordinator.save(run.spec.key, rounds)
    except BaseException:
        if compare_workspace == "now":
            run.guard.cleanup(keep=False)  # an unreadable plan, Ctrl-C: nothing worth keeping
        raise
    kept: str | None = None
    if compare_workspace == "now":
        # The guard's last comparison (raises WorkspaceMutated), then the cleanup.
        kept = run.guard.finish(result, outcome)
    # 6. The record, redacted at the source: every report is built from it, and report
    # plugins (a report log) write it out as it is.
    record = item_record(run, nodeid, result, outcome, history=due.history)
    record = outbound.redact_model(coordinator.decided_record(record, outcome))
    return Reviewed(
        run=run, result=result, outcome=outcome, record=record, history=due.history, kept=kept
    )


@contextlib.contextmanager
def _shown(progress: Progress | None, nodeid: str) -> Iterator[None]:
    """The review on the progress display while it runs (nothing without one)."""
    if progress is None:
        yield
        return
    progress.begin(nodeid)
    try:
        yield
    finally:
        progress.end(nodeid)
