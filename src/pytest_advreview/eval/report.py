"""The eval report: the table at the end of the run, the markdown table, the JSON file,
the side-by-side comparison with a baseline, and the thresholds that set the exit status.

Every output is built from one :class:`~.metrics.EvalReport`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from ..validation import first_error
from .metrics import EvalReport, Rate

__all__ = [
    "Thresholds",
    "check_thresholds",
    "load_baseline",
    "markdown",
    "rows",
    "table_lines",
]


class BaselineError(Exception):
    """The baseline report cannot be read; the message names the file and the fix."""


def load_baseline(path: Path) -> EvalReport:
    """An earlier ``--advreview-eval-report`` file."""
    try:
        return EvalReport.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise BaselineError(
            f"pytest-advreview: --advreview-eval-baseline={path}: cannot be read "
            f"({exc.strerror}); pass a report an earlier --advreview-eval-report wrote"
        ) from None
    except ValidationError as exc:
        raise BaselineError(
            f"pytest-advreview: --advreview-eval-baseline={path}: not an eval report "
            f"({first_error(exc, 'document')}); pass a report an earlier "
            "--advreview-eval-report wrote"
        ) from None


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


def _rate(rate: Rate) -> str:
    if rate.value is None:
        return f"None (0/{rate.trials})"
    return (
        f"{_pct(rate.value)} ({rate.successes}/{rate.trials}; 95 % CI "
        f"{_pct(rate.low)}-{_pct(rate.high)})"
    )


def _number(value: float | None, unit: str) -> str:
    return "n/a" if value is None else f"{value:,.1f}{unit}"


def _rates(report: EvalReport) -> list[tuple[str, Rate]]:
    """The report's rates by name, in the order every output shows."""
    return [
        ("recall", report.recall),
        *((f"recall {name}", rate) for name, rate in report.recall_by_severity.items()),
        *((f"recall [{name}]", rate) for name, rate in report.recall_by_category.items()),
        ("blocking precision", report.precision),
        ("false-block rate (clean cases)", report.false_block),
        ("flip rate (across epochs)", report.flip),
    ]


def rows(report: EvalReport) -> list[tuple[str, str]]:
    """The report's lines as (metric, value) pairs, in the order every output shows."""
    return [
        *((name, _rate(rate)) for name, rate in _rates(report)),
        ("tokens per run", _number(report.tokens_per_run, "")),
        ("seconds per run", _number(report.seconds_per_run, " s")),
    ]


def _delta(now: Rate, then: Rate) -> str:
    if now.value is None or then.value is None:
        return "n/a"
    return f"{100 * (now.value - then.value):+.1f} pts"


def _compared(report: EvalReport, baseline: EvalReport) -> list[tuple[str, str, str, str]]:
    before = dict(_rates(baseline))
    return [
        (name, _rate(now), _rate(then), _delta(now, then))
        if (then := before.get(name))
        else (name, _rate(now), "n/a", "n/a")
        for name, now in _rates(report)
    ]


def _who(report: EvalReport) -> str:
    shown = ", ".join(f"{k} {v}" for k, v in report.reviewer.items() if k != "identity")
    return f"{shown}; corpus {report.corpus} version {report.corpus_version}"


def table_lines(report: EvalReport, baseline: EvalReport | None = None) -> list[str]:
    """The terminal table (and the side-by-side comparison when a baseline is given)."""
    rescored = sum(1 for r in report.results if r.rescored)
    lines = [
        f"reviewer: {_who(report)}",
        f"runs: {report.runs} ({report.epochs} epoch(s)); passed {report.passed}, failed "
        f"{report.failed}, errors {report.errors}; re-scored from kept transcripts: {rescored}",
    ]
    width = max(len(name) for name, _ in rows(report))
    lines += [f"  {name:<{width}}  {value}" for name, value in rows(report)]
    if baseline is not None:
        lines.append(f"baseline: {_who(baseline)}")
        compared = _compared(report, baseline)
        lines += [
            f"  {name:<{width}}  now {now}  |  baseline {then}  |  delta {delta}"
            for name, now, then, delta in compared
        ]
    return lines


def markdown(report: EvalReport, baseline: EvalReport | None = None) -> str:
    """The report as markdown: one table, two value columns and a delta with a baseline."""
    out = ["# Reviewer eval", "", f"Reviewer: {_who(report)}", ""]
    if baseline is None:
        out += ["| Metric | Value |", "| --- | --- |"]
        out += [f"| {name} | {value} |" for name, value in rows(report)]
    else:
        out += [f"Baseline: {_who(baseline)}", ""]
        out += ["| Metric | Now | Baseline | Delta |", "| --- | --- | --- | --- |"]
        out += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in _compared(report, baseline)]
    out += [
        "",
        "| Case | Epoch | Outcome | Missed | False blocks |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in report.results:
        missed = ", ".join(r.score.missed) if r.score else ""
        false = ", ".join(r.score.false_blocks) if r.score else ""
        out.append(f"| {r.case} | {r.epoch} | {r.outcome} | {missed} | {false} |")
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class Thresholds:
    """The ini thresholds that set the exit status (``None``: not set)."""

    min_recall: float | None = None
    max_false_block: float | None = None
    max_flip: float | None = None


def check_thresholds(report: EvalReport, thresholds: Thresholds) -> list[str]:
    """Why the run fails its thresholds (empty: it meets them).

    A threshold whose rate has no trials fails: a run that measured nothing has not shown
    it meets anything.
    """
    failed = []
    checks: Iterable[tuple[str, float | None, Rate, bool, str]] = (
        (
            "advreview_eval_min_recall",
            thresholds.min_recall,
            report.recall,
            True,
            "no defect case was scored",
        ),
        (
            "advreview_eval_max_false_block",
            thresholds.max_false_block,
            report.false_block,
            False,
            "no clean case was scored",
        ),
        (
            "advreview_eval_max_flip",
            thresholds.max_flip,
            report.flip,
            False,
            "no case was scored in two epochs; pass --advreview-eval-epochs=2 or more",
        ),
    )
    for key, limit, rate, at_least, empty in checks:
        if limit is None:
            continue
        if rate.value is None:
            failed.append(f"{key} = {limit}: not measured ({empty})")
        elif (rate.value < limit) if at_least else (rate.value > limit):
            word = "below" if at_least else "above"
            failed.append(f"{key} = {limit}: measured {_rate(rate)}, {word} the threshold")
    return failed
