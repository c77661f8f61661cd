"""One turn of the built-in lead, with the checks that keep it a gate.

The workspace is snapshotted before and after the lead runs.  The lead may change only
the files it was given (the plan, or the change set's files); any other change is a
mutation error naming the path.  Its answer is then held against the review and against
the edits it really made (:func:`.contract.check_answer`).  What comes back is what the
loop needs to resume the reviewer: the decisions, the "Applied" diff, and the record the
reports show.
"""

from __future__ import annotations

import difflib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..models import (
    Decision,
    DecisionAction,
    LeadAction,
    LeadEdit,
    LeadEvaluation,
    LeadRecord,
    Review,
)
from ..prompts import lead_applied_text
from ..runner._process import read_text
from . import LeadRequest
from ._attempt import CliLead
from .contract import LeadError, check_answer, lead_prompt

if TYPE_CHECKING:
    from ..workspace import Workspace

__all__ = ["TurnResult", "run_turn"]

#: How the re-review prompt shows a finding the lead left for the operator.
NEEDS_OPERATOR_TEXT = "not applied: a structural change that needs the operator's sign-off"


@dataclass(frozen=True)
class TurnResult:
    """What one lead turn produced."""

    decisions: tuple[Decision, ...]
    record: LeadRecord
    #: The "Applied" text of the next re-review: the diff of the lead's edits.
    applied: str | None
    #: Ids of the findings the lead left for the operator.
    needs_operator: tuple[str, ...]


def run_turn(
    backend: CliLead,
    review: Review,
    *,
    round_no: int,
    key: str,
    kind: str,
    allowed: Sequence[str],
    work_dir: Path,
    workspace: Workspace,
) -> TurnResult:
    """Let the lead evaluate ``review`` and fix the files in ``allowed``.

    :param workspace: the review's workspace: the lead works in its root (``allowed`` is
        relative to it), and its snapshots are the reviewer's checks'.
    :raises LeadError: the lead could not run, timed out, answered invalid decisions,
        or changed a file it must not touch (then ``mutations`` names each path).
    """
    who = f"the {backend.name} lead"
    cwd = workspace.root
    before_text = {path: read_text(cwd / path) for path in allowed}
    before_links = {
        path: os.readlink(cwd / path) if (cwd / path).is_symlink() else None for path in allowed
    }
    before = workspace.snapshot()
    started = time.monotonic()
    prompt = lead_prompt(key=key, round_no=round_no, kind=kind, review=review, allowed=allowed)
    error: LeadError | None = None
    try:
        reply = backend.run(
            LeadRequest(
                prompt=prompt,
                cwd=cwd,
                work_dir=work_dir / f"lead-round-{round_no}",
                allowed=tuple(allowed),
            )
        )
    except LeadError as exc:
        error = exc
    # The mutation check comes first, also after a failed turn: a lead that wrote
    # elsewhere broke its contract whatever else went wrong.
    after = workspace.snapshot()
    root = Path(after.root) if after.root else cwd
    permitted = {(cwd / p).resolve() for p in allowed}
    strays = [
        f"{m.path} ({m.kind}, changed by the {backend.name} lead after round {round_no}; it "
        f"may edit only {', '.join(allowed)})"
        for m in workspace.compare(before, after)
        if (root / m.path).resolve() not in permitted and (cwd / m.path).resolve() not in permitted
    ]
    if strays:
        raise LeadError(f"{who} changed files it must not touch", mutations=strays)
    if error is not None:
        raise error

    edits: list[LeadEdit] = []
    diffs: list[str] = []
    for path in allowed:
        if (cwd / path).is_symlink() and before_links[path] != os.readlink(cwd / path):
            # Reading through a new link would copy another file's text into the plan.
            raise LeadError(f"{who} replaced {path} with a symbolic link; it may only edit it")
        old, new = before_text[path], read_text(cwd / path)
        if old == new:
            continue
        if new is None or not new.strip():
            raise LeadError(f"{who} deleted or emptied {path}; the lead may only edit it")
        lines = list(
            difflib.unified_diff(
                (old or "").splitlines(keepends=True),
                new.splitlines(keepends=True),
                fromfile=f"a/{path}",
                tofile=f"b/{path}",
            )
        )
        diffs.append("".join(line if line.endswith("\n") else line + "\n" for line in lines))
        edits.append(
            LeadEdit(
                path=path,
                added=sum(1 for x in lines if x.startswith("+") and not x.startswith("+++")),
                removed=sum(1 for x in lines if x.startswith("-") and not x.startswith("---")),
            )
        )
    answer = reply.answer
    check_answer(answer, review, edited=bool(edits), who=who)

    by_id = {f.id: f for f in review.findings}
    evaluations = tuple(
        LeadEvaluation(
            **d.model_dump(), severity=by_id[d.finding].severity, title=by_id[d.finding].title
        )
        for d in answer.decisions
    )
    decisions = tuple(_decision(d.finding, d.action, d.reason, d.changed) for d in answer.decisions)
    diff = "".join(diffs)
    record = LeadRecord(
        round=round_no,
        backend=backend.name,
        evaluations=evaluations,
        edits=tuple(edits),
        diff=diff,
        duration_s=time.monotonic() - started,
        tokens=reply.usage,
        model=reply.model,
    )
    applied = lead_applied_text(diff)
    needs = tuple(d.finding for d in answer.decisions if d.action is LeadAction.NEEDS_OPERATOR)
    return TurnResult(decisions=decisions, record=record, applied=applied, needs_operator=needs)


def _decision(finding: str, action: LeadAction, reason: str, changed: str) -> Decision:
    """The decision as the re-review prompt carries it; a rejection's reason verbatim."""
    if action is LeadAction.REJECT:
        return Decision(finding=finding, action=DecisionAction.REJECT, reason=reason)
    if action is LeadAction.NEEDS_OPERATOR:
        return Decision(
            finding=finding,
            action=DecisionAction.RESCOPE,
            reason=f"{NEEDS_OPERATOR_TEXT} — {reason}",
        )
    text = f"{reason} (changed: {changed})" if changed.strip() else reason
    kind = DecisionAction.ACCEPT if action is LeadAction.ACCEPT else DecisionAction.RESCOPE
    return Decision(finding=finding, action=kind, reason=text)
