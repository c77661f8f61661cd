"""The aggregate metrics of an eval run, as the one model every eval report is built from.

* **recall**: caught defects / seeded defects, over every scored run of a defect case;
  also per category and per severity;
* **blocking precision**: blocking findings that caught a defect / blocking findings,
  over every scored run; ``None`` when nothing blocked (never 1.0 at 0/0: a reviewer
  that says nothing must not pass a precision threshold);
* **false-block rate**: scored runs of clean cases that blocked / scored clean runs;
* **flip rate**: cases whose blocked/not-blocked verdict differs between their scored
  epochs / cases with two or more scored epochs (``None`` with one epoch);
* tokens and seconds per scored run.

Every rate carries its Wilson 95 % interval.  A run that errored is never scored: it
counts in ``errors`` only, and an eval with an error fails.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Literal

from ..models import WireModel
from .match import CaseScore

__all__ = ["CaseResult", "DefectLabel", "EvalReport", "Rate", "aggregate", "wilson"]

#: z for a two-sided 95 % interval.
_Z = 1.959963984540054


def wilson(successes: int, trials: int) -> tuple[float, float] | None:
    """The Wilson score 95 % interval of ``successes`` in ``trials`` (``None`` at 0)."""
    if trials <= 0:
        return None
    p = successes / trials
    z2 = _Z * _Z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = _Z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


class Rate(WireModel):
    """``successes`` of ``trials``; ``value`` and the interval are ``None`` at 0 trials."""

    successes: int
    trials: int
    value: float | None
    low: float | None
    high: float | None

    @classmethod
    def of(cls, successes: int, trials: int) -> Rate:
        """The rate with its Wilson interval."""
        interval = wilson(successes, trials)
        return cls(
            successes=successes,
            trials=trials,
            value=successes / trials if trials else None,
            low=interval[0] if interval else None,
            high=interval[1] if interval else None,
        )


class DefectLabel(WireModel):
    """What the report needs of a seeded defect (the controller never reads the corpus)."""

    id: str
    category: str
    severity: str


class CaseResult(WireModel):
    """One eval item: one case, one epoch."""

    case: str
    epoch: int
    kind: str
    clean: bool
    defects: tuple[DefectLabel, ...] = ()
    outcome: Literal["passed", "failed", "error"]
    #: Why the reviewer could not run (``outcome`` error); never scored then.
    error: str | None = None
    score: CaseScore | None = None
    tokens: int = 0
    seconds: float = 0.0
    #: Scored from a kept transcript (no model call in this run).
    rescored: bool = False


class EvalReport(WireModel):
    """The aggregate of an eval run (``--advreview-eval-report``'s JSON)."""

    #: The corpus as given (``builtin`` or its path) and its version.
    corpus: str
    corpus_version: str
    #: The reviewer configuration measured: model, reasoning, fail-on, prompt version.
    reviewer: dict[str, str]
    epochs: int
    runs: int
    errors: int
    passed: int
    failed: int
    recall: Rate
    recall_by_category: dict[str, Rate]
    recall_by_severity: dict[str, Rate]
    precision: Rate
    false_block: Rate
    flip: Rate
    tokens_per_run: float | None
    seconds_per_run: float | None
    results: tuple[CaseResult, ...]


def aggregate(
    results: Iterable[CaseResult],
    *,
    corpus: str,
    corpus_version: str,
    reviewer: dict[str, str],
    epochs: int,
) -> EvalReport:
    """The metrics of ``results`` (see the module docstring)."""
    ordered = sorted(results, key=lambda r: (r.case, r.epoch))
    scored = [r for r in ordered if r.score is not None]
    caught = total = blocking = matched = clean_runs = clean_blocked = 0
    by_category: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_severity: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    verdicts: dict[str, set[bool]] = defaultdict(set)
    runs_per_case: dict[str, int] = defaultdict(int)
    for result in scored:
        score = result.score
        assert score is not None
        blocking += score.blocking
        matched += score.blocking_matched
        verdicts[result.case].add(score.blocked)
        runs_per_case[result.case] += 1
        if result.clean:
            clean_runs += 1
            clean_blocked += int(score.blocked)
        for defect in result.defects:
            hit = int(defect.id in score.caught)
            caught += hit
            total += 1
            for table, key in ((by_category, defect.category), (by_severity, defect.severity)):
                table[key][0] += hit
                table[key][1] += 1
    repeated = [case for case, n in runs_per_case.items() if n >= 2]
    flipped = sum(1 for case in repeated if len(verdicts[case]) > 1)
    return EvalReport(
        corpus=corpus,
        corpus_version=corpus_version,
        reviewer=reviewer,
        epochs=epochs,
        runs=len(ordered),
        errors=sum(1 for r in ordered if r.outcome == "error"),
        passed=sum(1 for r in ordered if r.outcome == "passed"),
        failed=sum(1 for r in ordered if r.outcome == "failed"),
        recall=Rate.of(caught, total),
        recall_by_category={k: Rate.of(*v) for k, v in sorted(by_category.items())},
        recall_by_severity={k: Rate.of(*v) for k, v in _by_rank(by_severity)},
        precision=Rate.of(matched, blocking),
        false_block=Rate.of(clean_blocked, clean_runs),
        flip=Rate.of(flipped, len(repeated)),
        tokens_per_run=_mean([r.tokens for r in scored]),
        seconds_per_run=_mean([r.seconds for r in scored]),
        results=tuple(ordered),
    )


_ORDER = ("critical", "high", "medium", "low")


def _by_rank(table: dict[str, list[int]]) -> list[tuple[str, list[int]]]:
    return sorted(table.items(), key=lambda kv: _ORDER.index(kv[0]) if kv[0] in _ORDER else 9)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
