"""``--advreview-report``: a markdown report for a pull-request comment or a step summary.

One overview table, then one section per item: status and what it means (the terminal
summary's :data:`~.terminal.MEANING`), a findings table (severity, id, title, location),
the final summary for the operator (status, rounds, decisions, verification performed
and not performed, remaining findings, warnings), and every round's review verbatim inside
a collapsed ``<details>`` block.

Text from the reviewer is escaped wherever markdown would interpret it (tables,
headings), ``@`` never becomes a mention, and verbatim reviews sit in a code fence longer
than any backtick run inside them.  The report has no timings, so two runs over the same
reviews give the same text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..models import (
    ChangeSetInfo,
    DecisionAction,
    Finding,
    ItemRecord,
    RoundRecord,
    RunnerStatus,
)
from ..outbound import document_text
from ..pricing import money, per_round, per_turn, run_cost, tokens_text
from .collect import ItemResult, confidence_text, pre_existing_text
from .json_report import gate_result
from .terminal import MEANING

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["STEP_SUMMARY_LIMIT", "escape", "render_markdown"]

#: GitHub refuses a step summary above 1 MiB; the reviews are left out to stay below it.
STEP_SUMMARY_LIMIT = 1024 * 1024

#: No variation selector (U+FE0F): the report shows every invisible character escaped.
_ICON = {"passed": "✅", "warned": "⚠", "failed": "❌", "error": "⛔"}
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~#!])")
_OP_NAMES = {"initial": "initial review", "resume": "re-review", "fresh-exec": "fresh review"}


def escape(text: str) -> str:
    """``text`` as inert inline markdown: one line, no markup, no mentions."""
    flat = " ".join(text.split())
    return _SPECIAL.sub(r"\\\1", flat).replace("@", "&#64;")


def _code(text: str) -> str:
    """``text`` as an inline code span (a longer fence when it contains backticks)."""
    flat = " ".join(text.split()).replace("|", "\\|")
    longest = max((len(m) for m in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def _fenced(text: str) -> list[str]:
    """``text`` verbatim in a fenced block that nothing inside it can close."""
    longest = max((len(m) for m in re.findall(r"^[ \t]*(`{3,}|~{3,})", text, re.M)), default=0)
    fence = "`" * max(4, longest + 1)
    return [f"{fence}markdown", text.rstrip("\n"), fence]


def _overview(
    settings: Settings, results: Sequence[ItemResult], change: ChangeSetInfo | None = None
) -> list[str]:
    gate = gate_result(list(results))
    counts = Counter(r.outcome for r in results)
    parts = [
        f"{counts[o]} {label}"
        for o, label in (
            ("failed", "failed"),
            ("error", "could not run"),
            ("warned", "passed with warnings"),
            ("passed", "passed"),
        )
        if counts[o]
    ]
    tokens = sum(r.record.tokens.total for r in results)
    cost, unpriced = run_cost(r.record.cost for r in results)
    spent = tokens_text(tokens, cost)
    if unpriced:
        spent += f" ({unpriced} without a price)"
    lines = [
        "# Adversarial review",
        "",
        f"**Gate: {gate}** — {len(results)} review{'s' if len(results) != 1 else ''}"
        + (f": {', '.join(parts)}" if parts else "")
        + f" · fail-on: {settings.fail_on.value} · reviewer: {escape(settings.reviewer)}"
        + (
            f" (model {escape(settings.model)}, reasoning {settings.reasoning})"
            if settings.reviewer == "codex"
            else ""
        )
        + f" · {spent}"
        # One job's share is not the whole gate: say so where the verdict is.
        + (
            f" · share {settings.shard[0]} of {settings.shard[1]} (--advreview-shard)"
            if settings.shard
            else ""
        )
        # Which head a fork's review was for: a later push is a different commit.
        + (f" · head (as data): {_code(settings.head)}" if settings.head is not None else ""),
        "",
    ]
    if change is not None:
        # Which change the code item reviewed: a reader must see it was the branch.
        lines += [f"**Change set:** {escape(change.summary())}", ""]
    if not results:
        lines += ["No review item ran in this session.", ""]
        return lines
    lines += [
        "| Item | Status | Outcome | Findings | Rounds | Tokens |",
        "| --- | --- | --- | --- | ---: | ---: |",
    ]
    for result in results:
        record = result.record
        outcome = result.outcome
        lines.append(
            f"| {_code(record.key)} | {record.status.value} | {_ICON[outcome]} {outcome} | "
            f"{result.severity_counts()} | {result.rounds} | "
            f"{record.tokens.total}"
            + (f" ({money(record.cost)})" if record.cost is not None else "")
            + " |"
        )
    lines.append("")
    return lines


def _findings_table(record: ItemRecord) -> list[str]:
    if not record.findings:
        return ["No open findings.", ""]
    lines = [
        "| Severity | ID | Title | Location | Confidence |",
        "| --- | --- | --- | --- | ---: |",
    ]
    for finding in record.findings:
        where = str(finding.location) if finding.location is not None else ""
        fails = " (fails)" if finding.id in record.failing_ids else ""
        if any(w.finding == finding.id for w in record.waived):
            fails = " (waived)"
        fails += " (late)" if finding.id in record.late else ""
        fails += " (pre-existing)" if finding.id in record.pre_existing else ""
        fails += " (refuted)" if finding.refuted else ""
        title = escape(finding.title)
        if finding.samples:
            title += f" ({escape(finding.reported_by())})"
        if finding.refuted:
            title += f" — refuted by verification: {escape(finding.refuted)}"
        lines.append(
            f"| {finding.severity.value}{fails} | {_code(finding.id)} | {title} | "
            f"{escape(where) if where else '—'} | {confidence_text(finding.confidence) or '—'} |"
        )
    lines.append("")
    return lines


def _round_line(record: RoundRecord, previous: RoundRecord | None) -> str:
    runner = record.runner
    op = _OP_NAMES.get(record.operation.value, record.operation.value)
    if runner.result is RunnerStatus.SUCCESS:
        verdict = runner.verdict.value if runner.verdict is not None else "no verdict"
        what = f"{verdict}, review {runner.review_quality.value.replace('_', ' ')}"
    else:
        what = f"{runner.result.value.replace('_', ' ')}; not verified"
    changed = ""
    if (
        previous is not None
        and record.content_hash is not None
        and previous.content_hash is not None
    ):
        changed = (
            "; the artifact changed since the round before"
            if record.content_hash != previous.content_hash
            else "; the artifact was unchanged"
        )
    if record.changed is not None:
        changed += f"; shown {record.changed.summary()}"
    return f"round {record.number} ({op}): {what}{changed}"


def _decisions(record: ItemRecord, findings: dict[str, Finding]) -> list[str]:
    if not record.decisions:
        return ["- **Findings applied, re-scoped, rejected:** no decisions were recorded"]
    lines = ["- **Findings applied, re-scoped, rejected:**"]
    names = {
        DecisionAction.ACCEPT: "applied",
        DecisionAction.RESCOPE: "re-scoped",
        DecisionAction.REJECT: "rejected",
    }
    for decision in record.decisions:
        title = findings.get(decision.finding)
        about = f" {escape(title.title)}" if title is not None else ""
        reason = f" — {escape(decision.reason)}" if decision.reason else ""
        lines.append(f"  - {names[decision.action]}: {_code(decision.finding)}{about}{reason}")
    return lines


def _operator_summary(result: ItemResult, settings: Settings) -> list[str]:
    record = result.record
    status = record.status.value
    lines = ["**Operator summary**", ""]
    meaning = MEANING.get(status, "")
    lines.append(f"- **Final status:** {status}" + (f" — {meaning}" if meaning else ""))
    reviews = [r.review for r in record.rounds if r.review is not None]
    earlier = {f.id: f for review in reviews for f in review.findings}
    earlier.update((f.id, f) for f in record.findings)
    if record.rounds:
        lines.append(f"- **Rounds:** {len(record.rounds)}")
        performed: list[str] = []
        missing: list[str] = []
        for previous, round_ in zip((None, *record.rounds), record.rounds, strict=False):
            line = _round_line(round_, previous)
            (performed if round_.runner.result is RunnerStatus.SUCCESS else missing).append(line)
        if performed:
            lines.append("- **Verification performed:** " + "; ".join(performed))
        if missing:
            lines.append("- **Verification not performed:** " + "; ".join(missing))
    else:
        lines.append("- **Rounds:** none ran in this session")
    if status == "not verified":
        lines.append(
            "- **Verification not performed:** the open findings were not re-verified by a reviewer"
        )
    lines += _decisions(record, earlier)
    if record.findings:
        failing = [_code(i) for i in record.failing_ids]
        lines.append(
            f"- **Remaining findings:** {result.severity_counts()}"
            + (
                f"; at or above fail-on ({record.fail_on.value}): {', '.join(failing)}"
                if failing
                else f"; none at or above fail-on ({record.fail_on.value})"
            )
        )
    else:
        lines.append("- **Remaining findings:** none")
    lines.extend(
        f"- **Waived:** {_code(w.finding)} by {escape(w.by)} ({w.source}), reason: "
        f"{escape(w.reason)}"
        for w in record.waived
    )
    if (placed := pre_existing_text(record)) is not None:
        lines.append(f"- **Pre-existing:** {escape(placed)}")
    if record.rounds_granted:
        lines.append(f"- **Rounds granted:** +{record.rounds_granted} beyond max-rounds")
    lines.extend(
        f"- **Ignored:** {_code(i.text)} by {escape(i.by)}: {escape(i.why)}" for i in record.ignored
    )
    if record.error:
        lines.append(f"- **Why the reviewer could not run:** {escape(record.error)}")
    lines.extend(f"- **Problem:** {escape(p)}" for p in result.problems)
    lines.extend(f"- **Warning:** {escape(w)}" for w in record.warnings)
    lines.extend(f"- **Changed by the reviewer:** {_code(m)}" for m in record.mutations)
    lines.append("")
    return lines


def _lead(record: ItemRecord) -> list[str]:
    """The lead's turns: per round its evaluation matrix and the files it edited."""
    lines: list[str] = []
    for turn in record.lead:
        edits = ", ".join(f"{_code(e.path)} (+{e.added} −{e.removed})" for e in turn.edits)
        lines += [
            f"**Lead ({escape(turn.backend)}) after round {turn.round}** — edited "
            f"{edits or 'nothing'}"
            + (f" · {tokens_text(turn.tokens.total, turn.cost)}" if turn.tokens.total else ""),
            "",
            "| Finding | Severity | Action | Reason |",
            "| --- | --- | --- | --- |",
        ]
        for row in turn.evaluations:
            severity = row.severity.value if row.severity is not None else "—"
            lines.append(
                f"| {_code(row.finding)} {escape(row.title)} | {severity} | "
                f"{row.action.value} | {escape(row.reason)} |"
            )
        lines.append("")
    if record.needs_operator:
        ids = ", ".join(_code(f) for f in record.needs_operator)
        lines += [
            f"**Needs the operator:** {ids} — structural fixes the lead did not apply "
            "(no structural change was applied without sign-off)",
            "",
        ]
    return lines


def _reviews(record: ItemRecord) -> list[str]:
    texts: list[tuple[str, str]] = []
    for round_ in record.rounds:
        if round_.review is not None and round_.review.raw.strip():
            op = _OP_NAMES.get(round_.operation.value, round_.operation.value)
            texts.append((f"Review, round {round_.number} ({op}), verbatim", round_.review.raw))
    if not texts and record.review_text:
        texts.append(("Review, verbatim", record.review_text))
    lines: list[str] = []
    for summary, text in texts:
        lines += [
            "<details>",
            f"<summary>{escape(summary)}</summary>",
            "",
            *_fenced(text),
            "",
            "</details>",
            "",
        ]
    return lines


def _item_section(result: ItemResult, settings: Settings, *, verbatim: bool) -> list[str]:
    record = result.record
    outcome = result.outcome
    lines = [
        f"## {_ICON[outcome]} {escape(record.key)} — {record.status.value} ({outcome})",
        "",
        f"{_code(record.nodeid)} · {record.kind} review · {result.ran} · "
        f"{tokens_text(record.tokens.total, record.cost)} · fail-on {record.fail_on.value}",
        "",
    ]
    rounds_money = per_round(record.rounds)
    if rounds_money:
        lines += [f"Money per round: {rounds_money}", ""]
    turns = per_turn(record.rounds)
    if turns:
        lines += ["Samples and verifications:", "", *(f"- {escape(t)}" for t in turns), ""]
    lines += _findings_table(record)
    lines += _operator_summary(result, settings)
    lines += _lead(record)
    if verbatim:
        lines += _reviews(record)
    return lines


def render_markdown(
    settings: Settings,
    results: Sequence[ItemResult],
    *,
    verbatim: bool = True,
    change: ChangeSetInfo | None = None,
) -> str:
    """The markdown report of one run.

    :param settings: the run's settings (threshold and reviewer in the header).
    :param results: the collected items, in node-id order.
    :param verbatim: include every round's review in ``<details>`` blocks.
    :param change: the change set the code item reviewed (``None`` outside git).
    """
    lines = _overview(settings, results, change)
    for result in results:
        lines += _item_section(result, settings, verbatim=verbatim)
    if not verbatim and any(r.record.rounds or r.record.review_text for r in results):
        lines += [
            "_The verbatim reviews are left out here to stay within GitHub's size limit; "
            "the --advreview-report file has them._",
            "",
        ]
    # The records are redacted at their source; this pass covers the settings and what
    # else the page names, and shows control characters (a PR comment, a step summary).
    return document_text("\n".join(lines).rstrip("\n") + "\n")


def step_summary(
    settings: Settings, results: Sequence[ItemResult], *, change: ChangeSetInfo | None = None
) -> str:
    """The markdown for ``$GITHUB_STEP_SUMMARY``: the report, without reviews if too big."""
    text = render_markdown(settings, results, change=change)
    if len(text.encode("utf-8")) > STEP_SUMMARY_LIMIT - 1024:
        text = render_markdown(settings, results, verbatim=False, change=change)
    return text
