"""The built-in lead's turns in one review: which files it may edit, each turn inside the
workspace guard (its edits adopted, anything else a mutation), and the patch of its edits.

The review (:class:`~.review.ReviewRun`) asks it from the loop's ``fix`` hook when no
plugin fixes; :mod:`.turn` runs one turn and checks what the lead changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..loop import FixFailed, LoopResult
from ..models import TokenUsage
from ..prompts import diff_lines
from ..runner._process import read_text
from ..workspace.guard import unwatchable
from . import LeadError
from .turn import run_turn

if TYPE_CHECKING:
    from ..material import TargetSpec
    from ..models import Decision, LeadRecord, Review
    from ..settings import Settings
    from ..workspace.guard import ReviewGuard
    from ._attempt import CliLead

__all__ = ["LeadTurns", "make_lead"]


def make_lead(settings: Settings) -> CliLead | None:
    """The lead backend the settings ask for; ``None`` for ``--advreview-lead=none``.

    Imported here, not at the top: the backends import the package.
    """
    if settings.lead == "codex":
        from .codex import CodexLead

        return CodexLead(settings)
    if settings.lead == "claude":
        from .claude import ClaudeLead

        return ClaudeLead(settings)
    if settings.lead == "command":
        from .command import CommandLead

        return CommandLead(settings)
    return None


@dataclass
class LeadTurns:
    """What the built-in lead did in one review.

    :param records: every turn of the lead.
    :param originals: each file the lead may edit, as it was before its first turn.
    :param needs_operator: the findings it left for the operator (structural fixes).
    :param applied: the "Applied" text of the next re-review (what changed since the last
        round): the diff of the stored text, or the lead's last turn.
    """

    records: list[LeadRecord] = field(default_factory=list)
    originals: dict[str, str | None] = field(default_factory=dict)
    needs_operator: list[str] = field(default_factory=list)
    applied: str | None = None

    @staticmethod
    def files(
        spec: TargetSpec, relative: Callable[[Path], str], *, isolated: bool, lead_code: bool
    ) -> tuple[str, ...] | None:
        """What the lead may edit (repository-relative), ``None`` when it may not run.

        A plan item: only that plan.  The code item: the change set's files, and only in a
        private worktree or with ini ``advreview_lead_code = true`` (the lead would
        otherwise edit the user's working tree while other reviews run in it).
        """
        if spec.kind == "plan" and spec.path is not None:
            return (relative(spec.path),)
        if (
            spec.change is not None
            # Only an uncommitted change set contains the lead's working-tree edits; a
            # branch diff (BASE...HEAD) would be re-reviewed without them.
            and spec.change.base is None
            and (isolated or lead_code)
        ):
            return spec.change.files
        return None

    def turn(
        self,
        review: Review,
        round_no: int,
        *,
        settings: Settings,
        spec: TargetSpec,
        guard: ReviewGuard,
        relative: Callable[[Path], str],
    ) -> tuple[Decision, ...] | None:
        """Run the built-in lead on ``review``; its decisions, ``None``: no lead here.

        Sets :attr:`applied` to the lead's diff (the next re-review's "Applied").  The
        lead's own edits are the new baseline of the mutation watch; anything else it
        changed is a mutation of this item.

        :raises FixFailed: the lead could not run, timed out, answered invalid decisions
            or changed a file it must not touch.
        """
        lead = make_lead(settings)
        workspace = guard.workspace
        allowed = self.files(
            spec, relative, isolated=workspace.isolated, lead_code=settings.lead_code
        )
        if lead is None or allowed is None:
            return None
        for path in allowed:
            if path not in self.originals:
                self.originals[path] = read_text(guard.repo_root / path)
        failed: LeadError | None = None
        try:
            turn = run_turn(
                lead,
                review,
                round_no=round_no,
                key=spec.key,
                kind=spec.kind,
                allowed=allowed,
                work_dir=guard.work_dir,
                workspace=workspace,
            )
        except LeadError as exc:
            failed = exc
        # A lead no sandbox holds may have written the user's checkout itself (by an
        # absolute path): only the edits it made in its own folder are the user's to get.
        # Looked at after a failed turn too: a fix written to the checkout's plan instead
        # of the worktree's fails the turn as "changed nothing", which would hide it.
        with unwatchable():
            strays = workspace.changes(checkout_only=True)
        found = [
            f"{m.path} ({m.kind}, changed by the {settings.lead} lead after round "
            f"{round_no} in the checkout; it may edit only its own copy)"
            for m in strays
        ]
        if failed is not None or found:
            mutations = [*(failed.mutations if failed is not None else ()), *found]
            guard.mutations.extend(mutations)
            guard.rebaseline()
            why = "the lead changed files it must not touch" if found else str(failed)
            raise FixFailed(why, mutations=mutations) from None
        # The lead edited the private copy: the user's files get the same edits.
        workspace.adopt([edit.path for edit in turn.record.edits])
        guard.rebaseline()
        self.records.append(turn.record)
        self.applied = turn.applied
        left = self.needs_operator
        left.extend(f for f in turn.needs_operator if f not in left)
        return turn.decisions

    def into(self, result: LoopResult, *, in_ci: bool) -> LoopResult:
        """``result`` with what the lead did: the findings it left for the operator, its
        edits (under CI: not the commit the gate judges) and its tokens."""
        if self.needs_operator:
            result = replace(result, needs_operator=tuple(self.needs_operator))
        edited = sorted({e.path for t in self.records for e in t.edits})
        if edited and in_ci:
            # Under CI the gate judges the commit; the lead's edits live only in this
            # checkout, so an approval of the edited text is not an approval of the commit.
            result = replace(result, uncommitted_edits=tuple(edited))
        if self.records:
            # The lead's tokens count like the reviewer's: in the summary and the budget.
            usage = sum((t.tokens for t in self.records), TokenUsage())
            result = replace(result, usage=result.usage + usage)
        return result

    def patch(self, repo_root: Path) -> str:
        """The combined diff of the lead's edits in this run (``""`` when it made none)."""
        if not self.records:
            return ""
        # A file the lead left as it was diffs to nothing.
        return "".join(
            f"{line}\n"
            for path, old in sorted(self.originals.items())
            for line in diff_lines(old or "", read_text(repo_root / path) or "", path)
        )
