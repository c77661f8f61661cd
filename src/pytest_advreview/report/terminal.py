"""The final operator summary, built from test reports only.

Reports are the one channel that reaches the controller from xdist workers, so the
summary is fed by ``pytest_runtest_logreport`` and written once, on the controller.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

import pytest

__all__ = ["ItemSummary", "SummaryCollector"]

_MEANING = {
    "approved": "the reviewer approved the artifact",
    "revise": "open findings remain; fix them or record decisions, then run again",
    "max rounds": "the round limit was reached with findings open; use --advreview-fresh "
    "to start over",
    "not verified": "a re-review could not run and the open findings are medium only; "
    "they were not verified",
    "aborted": "the reviewer could not run; nothing was verified",
    "cached": "unchanged since the last review; no reviewer call was made",
    "budget exhausted": "the run's token budget was spent before this review started",
}


@dataclass
class ItemSummary:
    """What the summary shows for one review item."""

    nodeid: str
    status: str = "aborted"
    outcome: str = "passed"
    rounds: int = 0
    tokens: int = 0
    seconds: float = 0.0
    severities: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)


class SummaryCollector:
    """Collects review-item reports and writes the operator summary."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.items: dict[str, ItemSummary] = {}

    def add(self, report: pytest.TestReport) -> None:
        """Fold one phase report of a review item into its summary."""
        entry = self.items.setdefault(report.nodeid, ItemSummary(report.nodeid))
        entry.seconds += report.duration
        props = dict(report.user_properties)
        if "status" in props:
            entry.status = str(props["status"])
            entry.rounds = int(str(props.get("rounds") or 0))
            entry.tokens = int(str(props.get("tokens") or 0))
            findings = json.loads(str(props.get("findings") or "[]"))
            entry.severities = Counter(f["severity"] for f in findings)
        if report.failed:
            if report.when == "call":
                entry.outcome = "failed"
            else:
                entry.outcome = "error"
                first = str(report.longrepr).strip().splitlines()
                if report.when == "teardown":
                    entry.problems.append("the reviewer changed the workspace")
                elif first:
                    entry.problems.append(first[-1] if len(first) < 3 else first[2])

    def write(self, terminal: pytest.TerminalReporter) -> None:
        """Write one concise block per item (no diffs), then the totals."""
        if hasattr(self.config, "workerinput") or not self.items:
            return
        terminal.write_sep("=", "adversarial review summary")
        total_tokens = 0
        for entry in sorted(self.items.values(), key=lambda e: e.nodeid):
            total_tokens += entry.tokens
            counts = (
                ", ".join(
                    f"{entry.severities[s]} {s}"
                    for s in ("critical", "high", "medium")
                    if entry.severities[s]
                )
                or "no findings"
            )
            terminal.write_line(
                f"{entry.nodeid}: {entry.status} ({entry.outcome}) — rounds {entry.rounds}, "
                f"{counts}, {entry.tokens} tokens, {entry.seconds:.1f}s"
            )
            meaning = _MEANING.get(entry.status)
            if meaning and entry.status != "approved":
                terminal.write_line(f"    {meaning}")
            for problem in entry.problems:
                terminal.write_line(f"    {problem}")
        terminal.write_line(f"total: {len(self.items)} reviews, {total_tokens} tokens")
