"""The one place that turns a loop result and the fail-on threshold into a pytest outcome.

The table (docs/outcomes.md, "Outcomes", says the same for users):

==============================================  ===========================================
what happened                                   outcome
==============================================  ===========================================
APPROVED (also from cache)                      passed
APPROVED, every finding below fail-on           warned: passes, plus a :class:`ReviewWarning`
APPROVED with a finding >= fail-on              error: a contradictory review is never judged
REVISE, some finding >= fail-on                 failed
REVISE, every finding below fail-on             warned: passes, plus a :class:`ReviewWarning`
maximum rounds reached, still REVISE            failed if some finding >= fail-on, else warned
REVISE without a parsable finding               failed (defensive: the runner retries drift)
aborted / not verified / budget exhausted       error: never passed, never a finding
too large (the change is above a size limit)    failed: not reviewed, never passed
==============================================  ===========================================

A finding a person with authority waived (docs/deciding.md) never fails the item: it is
taken out of the failing findings (and out of those left to the operator) before the
table is read, and the summary names it, so a waived blocking finding leaves a pass, or a
warning when findings below fail-on remain.

A pre-existing finding of the code item (placed outside every changed hunk, decided from
the diff by :func:`.hunks.pre_existing`) fails like any other under
``advreview_pre_existing = block``.  Under ``warn`` a blocking one is taken out of the
failing findings and reads as a finding below fail-on: it passes with a warning, never
silently.  A reviewer's confidence in a finding changes nothing here.

Maximum rounds with only below-threshold findings warns instead of failing: the fail-on
threshold is the user's one statement of what blocks a merge, and running out of rounds
does not make a medium finding more severe.  The summary still says the limit was hit.

Workspace mutation is not decided here: the caller raises :class:`WorkspaceMutated` in
teardown from ``LoopResult.mutations``.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

import pytest

from .loop import LoopResult
from .models import Finding, Review, ReviewStatus, Severity, Verdict
from .outbound import redact_data, terminal_text

__all__ = [
    "PRE_EXISTING_MARK",
    "Outcome",
    "OutcomeKind",
    "ReviewFailed",
    "ReviewWarning",
    "ReviewerUnavailable",
    "WorkspaceMutated",
    "counted",
    "decide",
    "demoted",
    "error_report",
    "failure_report",
    "failure_summary",
    "user_properties",
    "warning_message",
    "ways_forward",
]


class OutcomeKind(str, Enum):
    """The pytest outcome of a review item."""

    PASSED = "passed"
    WARNED = "warned"
    FAILED = "failed"
    ERROR = "error"


@dataclass(frozen=True)
class Outcome:
    """A decided outcome, with the findings split at the fail-on threshold."""

    kind: OutcomeKind
    status: ReviewStatus
    #: One line for the terminal summary.
    summary: str
    #: Findings at or above fail-on, highest first (ties ordered by id).
    failing: tuple[Finding, ...] = ()
    #: Findings below fail-on, highest first (ties ordered by id).
    below: tuple[Finding, ...] = ()
    max_severity: Severity | None = None
    #: Number of the last counted round, history included.
    rounds: int = 0
    verdict: Verdict | None = None
    #: Findings at or above fail-on that a person with authority waived: they pass.
    waived: tuple[Finding, ...] = ()
    #: Findings at or above fail-on placed outside every changed hunk that pass with a
    #: warning (``advreview_pre_existing = warn``).
    pre_existing: tuple[Finding, ...] = ()
    #: Ids of every finding placed outside every changed hunk (code item), highest
    #: first, whatever the policy did with them: the reports list them apart.
    pre_existing_ids: tuple[str, ...] = ()
    #: Finding id -> the content id a waiver of it must name (docs/deciding.md): the
    #: failure prints it with the command that waives the finding.
    content: Mapping[str, str] = field(default_factory=dict)


class ReviewWarning(pytest.PytestWarning):
    """Findings below the fail-on threshold."""


class ReviewFailed(Exception):
    """The review found problems at or above fail-on; raised in the call phase."""

    def __init__(self, outcome: Outcome, report: str) -> None:
        super().__init__(report)
        self.outcome = outcome


class ReviewerUnavailable(Exception):
    """The reviewer could not run; raised in setup so pytest reports an ERROR."""


class WorkspaceMutated(Exception):
    """The reviewer changed the workspace; raised in teardown, naming the paths."""

    def __init__(self, paths: Sequence[str]) -> None:
        listing = "\n".join(f"  {p}" for p in paths)
        super().__init__(f"the reviewer changed the workspace:\n{listing}")


_ERROR_STATUSES = frozenset(
    {ReviewStatus.ABORTED, ReviewStatus.NOT_VERIFIED, ReviewStatus.BUDGET_EXHAUSTED}
)


def _sorted(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    return tuple(sorted(findings, key=lambda f: (-f.severity.rank, f.id)))


def _rounds(result: LoopResult) -> int:
    last = result.rounds[-1].number if result.rounds else 0
    return max(result.last_round, last)


def counted(n: int, word: str) -> str:
    """``1 finding``, ``2 findings``: ``n`` and ``word``, plural unless ``n`` is one."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def demoted(finding: Finding, demotes: Collection[str]) -> bool:
    """Whether a verifier's refutation takes ``finding`` below fail-on: it was refuted and
    its severity is one ``advreview_verify_demotes`` lists (never critical by default)."""
    return finding.refuted is not None and finding.severity.value in demotes


def decide(
    result: LoopResult,
    fail_on: Severity,
    waived: Collection[str] = (),
    *,
    content: Mapping[str, str] | None = None,
    pre_existing: Collection[str] = (),
    pre_existing_policy: str = "block",
    demotes: Collection[str] = (),
) -> Outcome:
    """Map ``result`` and the ``fail_on`` threshold to an :class:`Outcome` (see the table).

    :param waived: ids of findings a person with authority waived: they never fail it.
    :param demotes: severities (``advreview_verify_demotes``) whose findings a verifier
        refuted count below ``fail_on``: shown, as refuted, never blocking.  A refuted
        finding of any other severity (critical, by default) still blocks.
    :param content: finding id -> its content id (what a waiver of it must name).
    :param pre_existing: ids of the code item's findings outside every changed hunk.
    :param pre_existing_policy: ``block`` (they fail like any other) or ``warn`` (a
        blocking one passes with a warning).
    """
    rounds = _rounds(result)
    if result.status in _ERROR_STATUSES:
        lines = (result.error or "").strip().splitlines() or ["no error text"]
        return Outcome(
            kind=OutcomeKind.ERROR,
            status=result.status,
            summary=f"{result.failed_by} could not run ({result.status.value}): {lines[0]}",
            rounds=rounds,
        )

    if result.status is ReviewStatus.TOO_LARGE:
        # The repository's own limit says no review can judge this change: an explicit
        # failure (not "could not run"), and never a pass.
        return Outcome(
            kind=OutcomeKind.FAILED,
            status=result.status,
            summary=(result.error or "the change is too large to review").strip(),
            rounds=rounds,
        )
    review: Review | None = result.review
    findings = _sorted(review.findings) if review is not None else ()
    below_ids = {f.id for f in findings if demoted(f, demotes)}
    blocking = tuple(f for f in findings if f.severity.at_least(fail_on) and f.id not in below_ids)
    open_ = tuple(f for f in blocking if f.id not in waived)
    placed = set(pre_existing)
    held_ids = placed if pre_existing_policy == "warn" else set()
    failing = tuple(f for f in open_ if f.id not in held_ids)
    held = tuple(f for f in open_ if f.id in held_ids)
    passed = tuple(f for f in blocking if f.id in waived)
    below = tuple(f for f in findings if not f.severity.at_least(fail_on) or f.id in below_ids)
    verdict = review.verdict if review is not None else None
    needs_operator = tuple(f for f in result.needs_operator if f not in waived)
    waived_ids = {f.id for f in passed} | (set(result.needs_operator) - set(needs_operator))
    note = f"; waived: {', '.join(sorted(waived_ids))}" if waived_ids else ""
    if held:
        note += (
            f"; {counted(len(held), 'pre-existing finding')} at or above {fail_on.value} "
            f"passed with a warning (advreview_pre_existing = warn): "
            f"{', '.join(f.id for f in held)}"
        )

    def make(kind: OutcomeKind, summary: str) -> Outcome:
        return Outcome(
            kind=kind,
            status=result.status,
            summary=summary,
            failing=failing,
            below=below,
            max_severity=review.max_severity if review is not None else None,
            rounds=rounds,
            verdict=verdict,
            waived=passed,
            content=dict(content or {}),
            pre_existing=held,
            pre_existing_ids=tuple(f.id for f in findings if f.id in placed),
        )

    after = f"after {counted(rounds, 'round')}"
    verdict_text = verdict.value if verdict is not None else result.status.value
    if needs_operator:
        # The lead left structural fixes for a person: whatever the reviewer said after
        # hearing that, nobody approved leaving them out, so the item never passes.
        ids = ", ".join(needs_operator)
        return make(
            OutcomeKind.FAILED,
            f"{verdict_text} {after}, but {counted(len(needs_operator), 'finding')} "
            f"needs the operator (structural, not applied by the lead): {ids}",
        )
    if result.uncommitted_edits:
        return make(
            OutcomeKind.FAILED,
            f"{verdict_text} {after} only with the lead's edits to "
            f"{', '.join(result.uncommitted_edits)}, which the commit under review (CI) does "
            "not contain; apply the --advreview-lead-patch file and push",
        )
    approved = result.status is ReviewStatus.APPROVED or (
        result.status is ReviewStatus.CACHED and verdict is Verdict.APPROVED
    )
    contradiction = review.contradiction(fail_on) if review is not None else None
    if approved and contradiction is not None:
        # "Passed" and "failing" at once: the runner retries such a review as drift, so
        # this is a stored verdict judged at a lower fail-on, or a backend that does not
        # check.  Neither half is trusted; nothing is reported as a finding or a pass.
        where = "the stored review" if result.status is ReviewStatus.CACHED else "the review"
        return Outcome(
            kind=OutcomeKind.ERROR,
            status=ReviewStatus.ABORTED,
            summary=(
                f"{where} is {contradiction}; it is neither passed nor failed - review it "
                "again with --advreview-fresh"
            ),
            rounds=rounds,
        )
    if approved and below:
        return make(
            OutcomeKind.WARNED,
            f"APPROVED {after} with {counted(len(below), 'finding')} below {fail_on.value} "
            f"(passed with a warning){note}",
        )
    if approved:
        return make(OutcomeKind.PASSED, f"APPROVED {after}{note}")
    if result.status is ReviewStatus.CACHED and verdict is None:
        # A cache entry without a verdict is corrupt; it must not pass or invent findings.
        return make(OutcomeKind.ERROR, "cached state has no verdict")

    prefix = (
        f"maximum rounds reached ({rounds}), still REVISE"
        if result.status is ReviewStatus.MAX_ROUNDS
        else f"REVISE {after}"
    )
    if failing:
        summary = (
            f"{prefix}: {counted(len(failing), 'finding')} at or above {fail_on.value} "
            f"(max {failing[0].severity.value})"
        )
        if below:
            summary += f", {len(below)} below"
        return make(OutcomeKind.FAILED, summary + note)
    if below:
        return make(
            OutcomeKind.WARNED,
            f"{prefix}: {counted(len(below), 'finding')} below {fail_on.value} "
            f"(passed with a warning){note}",
        )
    if held:
        return make(OutcomeKind.WARNED, f"{prefix}: passed with a warning{note}")
    if waived_ids:
        # Every blocking finding was waived by a person with authority: a pass, recorded.
        return make(
            OutcomeKind.PASSED,
            f"{prefix}: every finding at or above {fail_on.value} was waived "
            f"({', '.join(sorted(waived_ids))})",
        )
    # REVISE without a parsable finding: the runner retries format drift, so this should
    # not happen -- but it must never pass.
    return make(OutcomeKind.FAILED, f"{prefix}: no parsable findings")


def warning_message(item_name: str, outcome: Outcome, findings: Sequence[Finding] = ()) -> str:
    """The text of a :class:`ReviewWarning` of a warned outcome: the summary, then one
    line per finding of ``findings`` (default: every pre-existing finding that passed and
    every finding below fail-on); redacted and
    neutralised, as pytest prints it in the warnings summary."""
    held = {f.id for f in outcome.pre_existing}
    shown = findings or (*outcome.pre_existing, *outcome.below)
    marked = (f.line() + (PRE_EXISTING_MARK if f.id in held else "") for f in shown)
    lines = [_header(item_name, outcome.summary), *marked]
    return terminal_text("\n".join(lines))


#: How a failure or warning line marks a blocking pre-existing finding that passed.
PRE_EXISTING_MARK = " — pre-existing (outside every changed hunk): passes with a warning"


def _header(item_name: str, tail: str) -> str:
    return f"Adversarial review — {item_name} — {tail}"


def _with_warnings(parts: list[str], result: LoopResult) -> str:
    if result.warnings:
        parts += ["", *(f"warning: {w}" for w in result.warnings)]
    # The failure and error texts reach the terminal, JUnit and any report plugin: no
    # secret, no control character, no line the CI would read as a command.
    return terminal_text("\n".join(parts) + "\n")


def _finding_lines(outcome: Outcome) -> list[str]:
    """One line per finding: failing ones first, then those below fail-on marked so; then
    how a person with authority waives each failing one (its content id: the code the
    waiver is bound to)."""
    waivable = [f.id for f in outcome.failing if f.id in outcome.content]
    how = [
        f"to waive {fid} (a person with authority, for this code only): comment "
        f"`/advreview waive {fid}@{outcome.content[fid]}: reason`, or add "
        f'content = "{outcome.content[fid]}" to its waive entry in the base branch\'s '
        "decisions file"
        for fid in waivable
    ]
    return [
        *(f.line() for f in outcome.failing),
        *(f"{f.line()} — waived by a person with authority" for f in outcome.waived),
        *(f"{f.line()}{PRE_EXISTING_MARK}" for f in outcome.pre_existing),
        *(
            f"{f.line()} — "
            + (
                "refuted, so below the fail-on threshold"
                if f.refuted
                else "below the fail-on threshold"
            )
            for f in outcome.below
        ),
        *how,
    ]


def ways_forward(item_name: str, outcome: Outcome) -> list[str]:
    """At the round limit with blocking findings open: the ways forward that need no edit
    of the CI configuration (docs/deciding.md), else nothing."""
    if outcome.status is not ReviewStatus.MAX_ROUNDS or not outcome.failing:
        return []
    first = outcome.failing[0].id
    bound = outcome.content.get(first, "<content id>")
    return [
        "",
        f"the round limit ({outcome.rounds}) is reached with blocking findings open; "
        "ways forward without editing the CI configuration:",
        f"  - a person with authority waives a finding: comment `/advreview waive "
        f"{first}@{bound}: reason` on the pull request (write permission), or add to the "
        f'base branch\'s decisions file [[decision]] target = "{item_name}", finding = '
        f'"{first}", action = "waive", content = "{bound}", pull = <its number> (or '
        'scope = "repository"), reason = "..."',
        "  - a person grants more rounds: comment `/advreview rounds +2: reason`, or add "
        f'[[decision]] target = "{item_name}", action = "more-rounds", rounds = 2, '
        'pull = <its number>, reason = "..." on the base branch',
        "  - locally: run with --advreview-fresh to start the rounds over",
    ]


def failure_summary(item_name: str, outcome: Outcome) -> str:
    """The failure text without the review's own text (``--tb=short``): the header with
    the outcome's summary, then one line per finding."""
    parts = [
        _header(item_name, outcome.summary),
        *_finding_lines(outcome),
        *ways_forward(item_name, outcome),
    ]
    return terminal_text("\n".join(parts) + "\n")


def failure_report(item_name: str, result: LoopResult, outcome: Outcome) -> str:
    """The failure text: header, the review verbatim, then one line per finding.

    The review text is inserted as the reviewer wrote it, only redacted and neutralised
    (:func:`~.outbound.terminal_text`), so the report never disagrees with the review; the
    finding lines after it are the parsed form, failing ones first, then those below
    fail-on marked as such.
    """
    if result.status is ReviewStatus.TOO_LARGE:
        # No review ran: the reason is the whole text.
        return _with_warnings([_header(item_name, outcome.summary)], result)
    parts = [_header(item_name, f"round {outcome.rounds}"), ""]
    raw = result.review.raw if result.review is not None else ""
    parts += [(raw[:-1] if raw.endswith("\n") else raw) if raw else "(no review text)", ""]
    parts.extend(_finding_lines(outcome))
    parts.extend(ways_forward(item_name, outcome))
    if result.uncommitted_edits:
        parts += [
            "",
            "not in the commit under review: the lead edited "
            f"{', '.join(result.uncommitted_edits)} in this CI checkout only; the approval is "
            "of the edited text. Apply the --advreview-lead-patch file and push it.",
        ]
    if result.needs_operator:
        parts.append("")
        stored = {o.finding.id: o for o in result.operator_open}
        where = result.decisions_file or "the decisions file"
        for fid in result.needs_operator:
            item = stored.get(fid)
            if item is None:
                parts.append(
                    f"needs the operator: {fid} — a structural fix the lead did not apply; "
                    "decide it yourself: apply it to the plan, or reject it with a reason in "
                    "the decisions file"
                )
                continue
            why = f": {item.reason}" if item.reason else ""
            parts.append(
                f"needs the operator: {fid} — a structural fix the lead did not apply "
                f"(after round {item.round}{why})"
            )
            parts.append(f"  {item.finding.line()}")
            parts.extend(
                f"  {label}: {text}" for label, text in item.finding.answers().items() if text
            )
            parts.append(
                f"  open until a person decides it: record the operator's decision for {fid} "
                f'in {where} ([[decision]] target = "{item_name}", finding = "{fid}", '
                'action = "accept", "re-scope" or "reject" with a reason), or change the '
                "artifact so that the reviewer re-reviews it"
            )
    return _with_warnings(parts, result)


def error_report(item_name: str, result: LoopResult, outcome: Outcome | None = None) -> str:
    """The error text when the reviewer could not run: header, error, warnings.

    :param outcome: the decided outcome; its status and summary speak for an error that
        :func:`decide` found in a review that did run (a contradictory verdict).
    """
    status = outcome.status if outcome is not None else result.status
    error = result.error
    if error is None and outcome is not None and outcome.kind is OutcomeKind.ERROR:
        error = outcome.summary
    parts = [
        _header(item_name, f"{result.failed_by} could not run ({status.value})"),
        "",
        (error or "no error text").rstrip("\n"),
    ]
    return _with_warnings(parts, result)


def user_properties(result: LoopResult, outcome: Outcome) -> list[tuple[str, object]]:
    """Structured results for ``item.user_properties`` (JUnit ``<property>``, xdist-safe).

    ``findings`` is a JSON string so that every consumer sees the same value: JUnit XML
    stringifies property values anyway, and so writes ``None`` as ``"None"``: a review
    without a verdict (it could not run) has no ``verdict`` property, and one without a
    finding has ``max_severity`` ``none``.  Its strings are redacted and their invisible
    characters shown before they are encoded, so a consumer that decodes the JSON gets
    the shown form back, not the raw characters.
    """
    shown = (*outcome.failing, *outcome.waived, *outcome.pre_existing, *outcome.below)
    findings = redact_data([f.model_dump(mode="json") for f in shown])
    verdict = [("verdict", outcome.verdict.value)] if outcome.verdict is not None else []
    return [
        *verdict,
        ("max_severity", outcome.max_severity.value if outcome.max_severity else "none"),
        ("findings", json.dumps(findings, ensure_ascii=False, sort_keys=True)),
        ("rounds", outcome.rounds),
        ("tokens", result.usage.total),
        ("status", outcome.status.value),
    ]
