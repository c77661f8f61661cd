"""Gathering :class:`~pytest_advreview.models.ItemRecord` objects from test reports.

Test reports are the one channel that reaches the xdist controller from every worker, so
each review item's record rides on its phase reports (``report.advreview_record``) and
is collected here, on the controller, for every report writer.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest

from ..constants import RECORD_ATTR
from ..models import ItemRecord

__all__ = ["ItemResult", "ResultsCollector", "confidence_text", "pre_existing_text", "with_line"]


@dataclass
class ItemResult:
    """A review item's record plus what pytest made of it (per phase)."""

    record: ItemRecord
    #: ``passed`` / ``failed`` / ``error``: pytest's view, teardown errors included.
    pytest_outcome: str = "passed"
    seconds: float = 0.0
    #: Text of a failed phase (the failure or error report), first lines only.
    problems: list[str] = field(default_factory=list)
    #: The texts of the item's :class:`~..outcome.ReviewWarning` warnings pytest recorded
    #: (none when a filter ignored them).
    recorded_warnings: list[str] = field(default_factory=list)

    # The facts every report derives from a record and pytest's view, decided here once.

    @property
    def failed(self) -> bool:
        return self.record.outcome == "failed" or self.pytest_outcome == "failed"

    @property
    def errored(self) -> bool:
        return self.record.outcome == "error" or self.pytest_outcome == "error"

    @property
    def outcome(self) -> str:
        """The item's outcome as the reports show it: error wins (a teardown error too)."""
        return "error" if self.errored else self.record.outcome

    @property
    def error_text(self) -> str:
        """Why the item errored, for the reports that name it."""
        return (self.record.error or "; ".join(self.problems) or "the review item errored").strip()

    @property
    def rounds(self) -> int:
        """Number of the last counted round (0 when none ran)."""
        return self.record.rounds[-1].number if self.record.rounds else 0

    @property
    def aborted(self) -> bool:
        """Whether the review ended before a round of this run finished."""
        return self.record.status.value == "aborted"

    @property
    def ran(self) -> str:
        """Which round ran, as every report names it: ``round 2``.  For a review that did
        not finish, the round that was running (the one after the last counted) and what
        the last counted round decided: "round 0", or "round 1" alone after a round 2
        that timed out, read as if no round, or round 1, had been the one that failed."""
        if not self.aborted:
            return f"round {self.rounds}"
        running = f"round {self.rounds + 1} did not finish"
        last = self.record.rounds[-1] if self.record.rounds else None
        if last is None or last.review is None:
            return running
        verdict = last.review.verdict.value if last.review.verdict else "no verdict"
        counts = Counter(f.severity.value for f in last.review.findings)
        found = ", ".join(f"{n} {s}" for s, n in counts.items()) or "no findings"
        return f"{running}; round {last.number} was {verdict} with {found}"

    def severity_counts(self) -> str:
        """``1 critical, 2 medium`` or ``no findings``."""
        counts = Counter(f.severity.value for f in self.record.findings)
        return (
            ", ".join(f"{counts[s]} {s}" for s in ("critical", "high", "medium") if counts[s])
            or "no findings"
        )


def pre_existing_text(record: ItemRecord) -> str | None:
    """What every report says of the item's pre-existing findings (``None``: it has none):
    their ids, where they are, and what ``advreview_pre_existing`` made of them."""
    if not record.pre_existing:
        return None
    what = (
        "those at or above fail-on pass with a warning (advreview_pre_existing = warn)"
        if record.pre_existing_policy == "warn"
        else "they fail like any other (advreview_pre_existing = block)"
    )
    return (
        f"{', '.join(record.pre_existing)} (outside every changed hunk of the diff under "
        f"review; {what})"
    )


def confidence_text(confidence: float | None) -> str | None:
    """A finding's confidence as every report writes it (``0.8``), ``None`` when the
    reviewer gave none."""
    return None if confidence is None else f"{confidence:g}"


def with_line(results: list[ItemResult]) -> tuple[int, int]:
    """``(findings whose reviewer cited a usable line, all findings)`` over ``results``:
    how many findings a report can put on lines, to judge a prompt change by."""
    findings = [f for r in results for f in r.record.findings]
    located = sum(1 for f in findings if f.location is not None and f.location.has_line)
    return located, len(findings)


class ResultsCollector:
    """Collects one :class:`ItemResult` per review item, in the order they finish."""

    def __init__(self) -> None:
        self.results: dict[str, ItemResult] = {}
        self._raw: dict[str, str] = {}
        self._warnings: dict[str, list[str]] = {}

    def add_warning(self, nodeid: str, text: str) -> None:
        """A review warning pytest recorded for ``nodeid`` (any process's)."""
        self._warnings.setdefault(nodeid, []).append(text)

    def add(self, report: pytest.TestReport) -> None:
        """Fold one phase report of a review item in (reports without a record are ignored)."""
        raw = getattr(report, RECORD_ATTR, None)
        entry = self.results.get(report.nodeid)
        # Every phase report carries the record; parse it only when it changed.
        if raw is not None and (entry is None or self._raw.get(report.nodeid) != raw):
            self._raw[report.nodeid] = str(raw)
            record = ItemRecord.model_validate_json(str(raw))
            if entry is None:
                entry = self.results[report.nodeid] = ItemResult(record)
            else:
                entry.record = record
        if entry is None:
            return
        entry.seconds += report.duration
        if report.failed:
            if report.when == "call":
                entry.pytest_outcome = "failed"
            else:
                entry.pytest_outcome = "error"
                if report.when == "teardown":
                    entry.problems.append("the reviewer changed the workspace")

    def ordered(self) -> list[ItemResult]:
        """Results sorted by node id: the same order whatever xdist did."""
        for nodeid, texts in self._warnings.items():
            if nodeid in self.results:
                self.results[nodeid].recorded_warnings = list(texts)
        return [self.results[key] for key in sorted(self.results)]
