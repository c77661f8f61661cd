"""The final operator summary in the terminal, built from the collected records."""

from __future__ import annotations

from collections import Counter

import pytest

from ..models import ItemRecord
from ..outbound import terminal_text
from ..outcome import counted
from ..pricing import money, per_round, per_turn, run_cost, tokens_text
from .collect import ItemResult, pre_existing_text, with_line

__all__ = ["MEANING", "decided_lines", "lead_lines", "write_summary"]

#: What a non-approved final status means, in one line (also used by the markdown report).
MEANING = {
    "approved": "the reviewer approved it",
    "revise": "open findings remain; fix them or record decisions, then run again",
    "max rounds": "the round limit was reached with findings open; a person with authority "
    "may waive them or grant more rounds (docs/deciding.md), or use --advreview-fresh to "
    "start over",
    "not verified": "a re-review could not run (the line below says why), so the findings "
    "of the last round were not verified as fixed",
    "aborted": "the reviewer could not run; nothing was verified",
    "cached": "unchanged since the last review; no reviewer call was made",
    "budget exhausted": "a budget (tokens or money) was spent before this review started",
    "too large": "the change is above the repository's size limit; it was not reviewed",
}


def lead_lines(record: ItemRecord) -> list[str]:
    """The lead's turns: per round the evaluation matrix (finding | severity | action |
    reason) and the files it edited; then what it left for the operator."""
    lines: list[str] = []
    for turn in record.lead:
        edits = ", ".join(f"{e.path} (+{e.added} -{e.removed})" for e in turn.edits)
        tokens = f", {tokens_text(turn.tokens.total, turn.cost)}" if turn.tokens.total else ""
        lines.append(
            f"lead ({turn.backend}) after round {turn.round}: edited {edits or 'nothing'}{tokens}"
        )
        for row in turn.evaluations:
            severity = row.severity.value if row.severity is not None else "?"
            lines.append(f"  {row.finding} | {severity} | {row.action.value} | {row.reason}")
    for finding in record.needs_operator:
        lines.append(f"needs the operator: {finding} (structural; the lead did not apply it)")
    return lines


def decided_lines(record: ItemRecord) -> list[str]:
    """What people decided on the item: waivers, rounds granted, and what did not count."""
    lines = [
        f"waived {w.finding} by {w.by} ({w.source}), reason: {w.reason}" for w in record.waived
    ]
    if record.rounds_granted:
        lines.append(f"rounds granted: +{record.rounds_granted} beyond max-rounds")
    lines += [f"ignored: {i.text!r} by {i.by}: {i.why}" for i in record.ignored]
    return lines


def rounds_text(result: ItemResult) -> str:
    """The summary line's rounds part: the round that ran and its findings; for a review
    that did not finish, :attr:`ItemResult.ran` alone (it says what the last counted round
    found: "no findings" after it would contradict a round-1 REVISE)."""
    if result.aborted:
        return result.ran
    return f"{result.ran}, {result.severity_counts()}"


def write_summary(terminal: pytest.TerminalReporter, results: list[ItemResult]) -> None:
    """One concise block per item (no diffs), then the totals."""
    if not results:
        return
    terminal.write_sep("=", "adversarial review summary")
    lines: list[str] = []
    line = lines.append
    total = 0
    for result in results:
        record = result.record
        total += record.tokens.total
        rounds_money = per_round(record.rounds)
        decisions = Counter(d.action.value for d in record.decisions)
        decided = ", ".join(f"{n} {a}" for a, n in sorted(decisions.items()))
        line(
            f"{record.nodeid}: {record.status.value} ({result.pytest_outcome}) — "
            f"{rounds_text(result)}, {tokens_text(record.tokens.total, record.cost)}, "
            f"{result.seconds:.1f}s"
        )
        if rounds_money:
            line(f"    money per round: {rounds_money}")
        for turn in per_turn(record.rounds):
            line(f"    {turn}")
        if decided:
            line(f"    decisions: {decided}")
        if record.status.value != "approved" and not (record.waived and not record.failing_ids):
            line(f"    {MEANING.get(record.status.value, '')}")
        if record.error:
            line(f"    {record.error.strip().splitlines()[0]}")
        for warning in record.warnings:
            line(f"    warning: {warning}")
        if record.late:
            line(
                f"    late: {', '.join(record.late)} (first raised in a later round, on code "
                "unchanged since the round before)"
            )
        if (placed := pre_existing_text(record)) is not None:
            line(f"    pre-existing: {placed}")
        lines += [f"    {text}" for text in (*lead_lines(record), *decided_lines(record))]
        for mutation in record.mutations:
            line(f"    changed by the reviewer: {mutation}")
    located, findings = with_line(results)
    if findings:
        verb = "has" if findings == 1 else "have"
        line(f"locations: {located} of {counted(findings, 'finding')} {verb} a line")
    cost, unpriced = run_cost(r.record.cost for r in results)
    spent = f" ({money(cost)})" if cost is not None else ""
    if unpriced:
        spent = f" ({money(cost)}, and {counted(unpriced, 'review')} without a price)"
    line(f"total: {counted(len(results), 'review')}, {counted(total, 'token')}{spent}")
    # A record's text (a lead's reason, a warning, an error, a path) is the reviewer's or
    # the pull request's: redacted and neutralised, line by line (terminal_text splits
    # it).  Once for the whole block, and one write: a line at a time cost a redaction
    # pass and a write to the terminal (or the CI log's pipe) each, three per item of a
    # cached rerun of hundreds of plans.
    terminal.write_line(terminal_text("\n".join(lines)))
