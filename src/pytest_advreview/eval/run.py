"""One eval review: a case's scratch repository, round 1 of the run's reviewer, its score.

The review goes through :class:`~..review.ReviewRun` as a gate's does: the same prompt,
reviewer, sandbox, workspace (a private worktree when the review may write) and the same
guard after it (a reviewer that changed files is an error).  It differs where a
measurement must: one round (``max_rounds`` 1), no lead and no fixer (no item is handed
to the run), no stored state (no coordinator: nothing is kept as a gate verdict).
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .. import outbound
from ..git import GitError
from ..loop import LoopResult
from ..material import ReviewInputError
from ..models import Finding
from ..outcome import Outcome, OutcomeKind, ReviewerUnavailable, WorkspaceMutated, decide
from ..review import ReviewContext, ReviewRun
from ..workspace import containment
from .case import Case, CaseError
from .match import score
from .metrics import CaseResult, DefectLabel
from .scratch import build
from .transcripts import Transcript, TranscriptStore, transcript_key

if TYPE_CHECKING:
    from ..runner import Reviewer
    from ..settings import Settings

__all__ = ["EvalContext", "run_case"]


@dataclass(frozen=True)
class EvalContext:
    """What every eval review of one process shares.

    :param settings: the run's settings, with one round and no lead.
    :param identity: the reviewer identity transcripts are kept under.
    :param transcripts: where transcripts are kept (``None``: nowhere).
    :param scratch: the folder the scratch repositories are built in.
    """

    config: pytest.Config
    settings: Settings
    reviewer: Reviewer
    identity: dict[str, str]
    transcripts: TranscriptStore | None
    scratch: Path
    #: The reviewers of samples 2 to K (:func:`~..review.make_samples`).
    samples: tuple[tuple[str, Reviewer], ...] = ()
    #: The verifier (:func:`~..review.make_verifier`; ``None``: no verification).
    verifier: Reviewer | None = None


def _result(
    case: Case,
    epoch: int,
    *,
    findings: tuple[Finding, ...] = (),
    settings: Settings,
    error: str | None = None,
    tokens: int = 0,
    seconds: float = 0.0,
    rescored: bool = False,
) -> CaseResult:
    labels = tuple(
        DefectLabel(id=d.id, category=d.category, severity=d.severity.value)
        for d in case.spec.defect
    )
    base = CaseResult(
        case=case.id,
        epoch=epoch,
        kind=case.spec.kind,
        clean=case.spec.clean,
        defects=labels,
        outcome="error",
        error=error,
        tokens=tokens,
        seconds=seconds,
        rescored=rescored,
    )
    if error is not None:
        return base
    scored = score(case, findings, settings.fail_on, settings.verify_demotes)
    passed = not scored.blocked if case.spec.clean else not scored.missed
    return base.model_copy(update={"score": scored, "outcome": "passed" if passed else "failed"})


def run_case(ctx: EvalContext, case: Case, epoch: int) -> CaseResult:
    """Review ``case`` once (epoch ``epoch``), or take its kept transcript, and score it.

    A reviewer that could not run, a workspace it changed and a case that cannot be
    built are an error result, never a score.  The result is redacted at the source, as
    a review's record is: every eval output is built from it.
    """
    return outbound.redact_model(_run_case(ctx, case, epoch))


def _run_case(ctx: EvalContext, case: Case, epoch: int) -> CaseResult:
    settings = ctx.settings
    key = transcript_key(ctx.identity, settings.fail_on.value, case.reviewed, epoch)
    result_of = functools.partial(_result, case, epoch, settings=settings)
    kept = None
    if ctx.transcripts is not None and not settings.fresh:  # --advreview-fresh asks again
        kept = ctx.transcripts.get(case.id, epoch, key)
    if kept is not None:
        return result_of(
            findings=kept.review.findings,
            tokens=kept.tokens.total,
            seconds=kept.seconds,
            rescored=True,
        )
    if settings.eval_rescore:  # asks no reviewer: a case without a transcript errors
        return result_of(
            error=(
                f"no kept transcript of case {case.id} epoch {epoch} for this reviewer "
                "configuration, and --advreview-eval-rescore asks no reviewer; run once "
                "without --advreview-eval-rescore (the same model, reasoning, prompt and "
                "fail-on) to keep one"
            ),
        )
    folder = Path(tempfile.mkdtemp(prefix="case-", dir=ctx.scratch))
    try:
        try:
            scratch = build(case, folder / "repo")
        except (CaseError, GitError, OSError) as exc:
            return result_of(error=str(exc))
        context = ReviewContext(
            ctx.config,
            settings,
            ctx.reviewer,
            scratch.root,
            in_git=True,
            fixer_hook=False,
            samples=ctx.samples,
            verifier=ctx.verifier,
        )
        # The gate's containment check, stricter: a measurement whose reviewer could change
        # the plugin's own code is no measurement, under CI or not.
        try:
            warned = containment.check(settings, context.where, os.environ)
        except pytest.UsageError as exc:
            warned = [str(exc)]
        if warned:
            return result_of(error="; ".join(warned))
        run = ReviewRun(context, scratch.spec)
        started = time.monotonic()
        result: LoopResult | None = None
        outcome: Outcome | None = None
        try:
            try:
                result = run.run(max_rounds=1)
                outcome = decide(result, settings.fail_on, demotes=settings.verify_demotes)
            finally:
                kept_folder = run.guard.finish(result, outcome)
        except (ReviewInputError, ReviewerUnavailable) as exc:
            return result_of(error=str(exc))
        except WorkspaceMutated as exc:
            return result_of(error=f"the reviewer changed files: {exc}")
        seconds = time.monotonic() - started
        assert result is not None and outcome is not None
        usage = result.usage
        if outcome.kind is OutcomeKind.ERROR or result.review is None:
            where = f" (reviewer files kept in {kept_folder})" if kept_folder else ""
            return result_of(error=f"{outcome.summary}{where}", tokens=usage.total, seconds=seconds)
        review = result.review
        if ctx.transcripts is not None:
            # Redacted before it is written: a kept transcript may be committed.
            ctx.transcripts.put(
                outbound.redact_model(
                    Transcript(
                        case=case.id,
                        epoch=epoch,
                        case_digest=case.reviewed,
                        key=key,
                        review=review,
                        tokens=usage,
                        seconds=seconds,
                    )
                )
            )
        return result_of(findings=review.findings, tokens=usage.total, seconds=seconds)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
