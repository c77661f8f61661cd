"""One target's rounds: material → prompt → loop, inside the workspace guard.

:class:`ReviewRun` is what the engine (:mod:`.engine`) drives for one target: it reads
the material once, runs the loop (and the built-in lead), watches the workspace and
builds the item's record.  It decides no outcome: the engine judges the result once.
"""

from __future__ import annotations

import contextlib
import difflib
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from . import interdiff, targets
from .constants import BUILTIN_REVIEWERS
from .lead import LeadError
from .lead.factory import make_lead
from .lead.turn import run_turn
from .loop import FixFailed, LoopHooks, LoopResult, ReviewTarget, run_loop
from .material import (
    ReviewInputError,
    ReviewMaterial,
    TargetSpec,
    build_material,
    read_plan,
    repo_relative,
)
from .models import (
    Decision,
    ItemRecord,
    LeadRecord,
    Operation,
    Review,
    ReviewStatus,
    RoundRecord,
    TokenUsage,
)
from .outcome import Outcome, OutcomeKind, ReviewerUnavailable, WorkspaceMutated
from .runner import STREAM_FILE, DispatchRequest, DispatchResult, Reviewer
from .trust import run as trust
from .workspace import Layout, Workspace, WorkspaceError, containment

if TYPE_CHECKING:
    from .progress import Progress
    from .settings import Settings
    from .state import StateStore
    from .workspace import mutation

__all__ = [
    "LeadTurns",
    "ReviewContext",
    "ReviewRun",
    "SharedLookups",
    "has_fixer_hook",
    "make_reviewer",
]


def make_reviewer(
    config: pytest.Config,
    settings: Settings,
    builtin: Callable[[pytest.Config, str], Reviewer | None] | None = None,
) -> Reviewer:
    """The backend ``settings`` name, built through ``pytest_advreview_make_reviewer``.

    :param builtin: builds a built-in backend (codex, command) from ``settings``
        instead: the registered ones carry the run's settings, not a fixture call's
        overrides, and a run without ``--adversarial-review`` registers none.
    """
    # Before any review: what runs after one is then in memory, whatever a reviewer
    # writes to the plugin's files meanwhile.
    containment.preload()
    made: Reviewer | None = config.hook.pytest_advreview_make_reviewer(
        config=config, name=settings.reviewer
    )
    if builtin is not None and (made is None or made.name in BUILTIN_REVIEWERS):
        made = builtin(config, settings.reviewer) or made
    if made is None:
        raise pytest.UsageError(
            f"pytest-advreview: no reviewer backend is called {settings.reviewer!r}; use "
            "codex, command, or install the plugin that provides it"
        )
    return made


def _read_text(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        return None


@dataclass
class SharedLookups:
    """Answers that the reviews of one run can share instead of asking again.

    :param toplevels: review root -> its git top level (``git rev-parse --show-toplevel``),
        learnt from the first snapshot of that root.
    :param resolve: resolves paths (``Path.resolve`` with the answers remembered).
    """

    toplevels: dict[Path, Path] = field(default_factory=dict)
    resolve: targets.PathResolver = field(default_factory=targets.PathResolver)


class _WatchedReviewer:
    """Wraps the backend to remember what the reviewer itself reported writing."""

    def __init__(self, inner: Reviewer, on_dispatch: Callable[[DispatchRequest], None]) -> None:
        self.inner = inner
        self.name = inner.name
        self.supports_resume = inner.supports_resume
        self.last: DispatchResult | None = None
        #: Dispatches started so far (a round may take several: a retry, a fallback).
        self.dispatches = 0
        self._on_dispatch = on_dispatch

    def can_resume(self, session_id: str) -> bool:
        return self.inner.can_resume(session_id)

    def dispatch(self, request: DispatchRequest) -> DispatchResult:
        self.last = None
        self.dispatches += 1
        self._on_dispatch(request)
        self.last = self.inner.dispatch(request)
        return self.last


@dataclass(frozen=True)
class ReviewContext:
    """What the reviews of one run share: settings, reviewer, repository, stored state.

    Built once per process of a run (when collection has finished: every plugin and
    conftest has registered), and once per call of the fixture (whose overrides may
    change the settings).

    :param in_git: the repository is a git checkout (outside git only the review inputs
        can be watched: no ``git status``).
    :param shared: top levels and resolved paths, shared by all the reviews so later
        snapshots skip ``git rev-parse --show-toplevel``.
    :param store: the stored review state: the plugin's own verdicts are part of the
        workspace a reviewer must not change (git does not see them: ignored).
    :param progress: the run's progress display, told of each launch (items only).
    :param fixer_hook: a plugin implements ``pytest_advreview_fix`` (see
        :func:`has_fixer_hook`): it fixes, and the built-in lead never runs.
    :param layout: where the reviews run (:class:`~.workspace.Layout`); decided from the
        settings and the repository when not given.
    """

    config: pytest.Config
    settings: Settings
    reviewer: Reviewer
    repo_root: Path
    in_git: bool = True
    shared: SharedLookups = field(default_factory=SharedLookups)
    store: StateStore | None = None
    progress: Progress | None = None
    fixer_hook: bool = False
    layout: Layout | None = None

    def __post_init__(self) -> None:
        if self.layout is None:
            decided = Layout.decide(self.settings, self.repo_root, in_git=self.in_git)
            object.__setattr__(self, "layout", decided)

    @property
    def where(self) -> Layout:
        """The layout of the reviews (decided in ``__post_init__``)."""
        assert self.layout is not None
        return self.layout


@contextlib.contextmanager
def _unwatchable() -> Iterator[None]:
    """A workspace that cannot be watched stops the review with its message: a review
    whose writes nobody can see is not judged."""
    try:
        yield
    except WorkspaceError as exc:
        raise ReviewInputError(str(exc)) from None


def has_fixer_hook(config: pytest.Config) -> bool:
    """Whether a plugin implements ``pytest_advreview_fix``; asked once the run's plugins
    and conftests have registered (collection finished, or a fixture call)."""
    return bool(config.hook.pytest_advreview_fix.get_hookimpls())


@dataclass
class _Watch:
    """The mutation watch's bookkeeping for one review (the workspace's own changes are
    the :class:`~.workspace.Workspace`'s; the stored state is the review's).

    :param state_before: the stored state at the baseline.
    :param mutations: every mutation found, as messages naming path and round.
    :param counted: the last round counted, and how many dispatches had started then.
    """

    state_before: dict[str, str] | None = None
    mutations: list[str] = field(default_factory=list)
    counted: tuple[int, int] | None = None


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


class ReviewRun(LoopHooks):
    """One target's rounds, the workspace guard around them and the item's record.

    Its input is fixed when it is made (the context, the target, the item); the loop's
    result and the outcome go back to the caller, which passes them to :meth:`finish`
    and :meth:`record`.  It is the loop's hooks too: they forward to the pluggy hooks,
    the built-in lead and the mutation watch.
    """

    def __init__(
        self, context: ReviewContext, spec: TargetSpec, *, item: pytest.Item | None = None
    ) -> None:
        self.context = context
        self.spec = spec
        self.item = item
        self.reviewer = _WatchedReviewer(context.reviewer, self._dispatching)
        #: ``{unix_ts}-{8 digits}``: sorts by start time, and the random digits keep two
        #: reviews started in the same second apart.
        self.review_id = f"{int(time.time())}-{secrets.randbelow(100_000_000):08d}"
        self._work_dir: Path | None = None
        #: Where the reviewer runs, what it may write and what it changed.
        self.workspace = Workspace(
            context.where,
            inputs=[p for p in (spec.path, spec.against_plan) if p is not None],
            # The decisions file the plugin reads (never a worktree's copy of it): what a
            # reviewer writes there would be sent as the user's decisions next run.
            fixed_inputs=[Path(context.settings.decisions)],
            toplevels=context.shared.toplevels,
            allow_untracked=context.settings.allow_untracked,
        )
        #: The target the loop reviews (in the private worktree, with isolation).
        self._loop_target: ReviewTarget | None = None
        self._material: ReviewMaterial | None = None
        #: Counted rounds of earlier runs the rounds continue (given to :meth:`run`).
        self._history: tuple[RoundRecord, ...] = ()
        self.watch = _Watch()
        self.lead = LeadTurns()

    @property
    def settings(self) -> Settings:
        """The review's settings."""
        return self.context.settings

    @property
    def repo_root(self) -> Path:
        """The repository the review is about (the user's, never a private worktree)."""
        return self.context.repo_root

    @property
    def review_root(self) -> Path:
        """Where the reviewer runs: the repository, or its private worktree."""
        return self.workspace.root

    @property
    def mutations(self) -> list[str]:
        """Every mutation found so far, as messages naming path and round."""
        return self.watch.mutations

    # -- the loop's hooks --------------------------------------------------------------

    def applied_summary(self) -> str | None:
        return self.lead.applied

    def current_content(self) -> str | None:
        # A fixer edits the plan between rounds: a fresh exec must see the edited text.
        if self.spec.kind == "plan" and self.spec.path is not None:
            try:
                return read_plan(self.spec.path)
            except ReviewInputError:
                return None
        return None

    def modify_prompt(self, operation: Operation, prompt: str) -> str:
        replaced = self.context.config.hook.pytest_advreview_modify_prompt(
            target=self._loop_target, operation=operation, prompt=prompt
        )
        return prompt if replaced is None else str(replaced)

    def fix(self, review: Review, record: RoundRecord) -> Sequence[Decision] | None:
        if self.item is None:
            return None
        if not self.context.fixer_hook:
            # No plugin fixes: the built-in lead does, when one was asked for.
            return self.lead_turn(review, record.number)
        hook = self.context.config.hook.pytest_advreview_fix
        decisions: Sequence[Decision] | None = hook(item=self.item, review=review)
        if decisions is not None:
            # The fixer changed the user's files on purpose: the reviewer's copy gets
            # them, and that is the new baseline.
            with _unwatchable():
                self.workspace.refresh()
            self.rebaseline()
        return decisions

    def current_hash(self) -> str | None:
        # After the lead edited the plan, the rounds that follow review the new text.
        return self.material().content_hash if self.lead.records else None

    def round_done(self, record: RoundRecord) -> None:
        self.watch.counted = (record.number, self.reviewer.dispatches)
        if self.item is not None:
            self.context.config.hook.pytest_advreview_round_done(item=self.item, record=record)

    # -- the built-in lead -------------------------------------------------------------

    def lead_files(self) -> tuple[str, ...] | None:
        """What the lead may edit (repository-relative), ``None`` when it may not run.

        A plan item: only that plan.  The code item: the change set's files, and only in a
        private worktree or with ini ``advreview_lead_code = true`` (the lead would
        otherwise edit the user's working tree while other reviews run in it).
        """
        if self.spec.kind == "plan" and self.spec.path is not None:
            return (self._relative(self.spec.path),)
        if (
            self.spec.change is not None
            # Only an uncommitted change set contains the lead's working-tree edits; a
            # branch diff (BASE...HEAD) would be re-reviewed without them.
            and self.spec.change.base is None
            and (self.workspace.isolated or self.settings.lead_code)
        ):
            return self.spec.change.files
        return None

    def lead_turn(self, review: Review, round_no: int) -> tuple[Decision, ...] | None:
        """Run the built-in lead on ``review``; its decisions, ``None``: no lead here.

        Sets :attr:`applied` to the lead's diff (the next re-review's "Applied").  The
        lead's own edits are the new baseline of the mutation watch; anything else it
        changed is a mutation of this item.

        :raises FixFailed: the lead could not run, timed out, answered invalid decisions
            or changed a file it must not touch.
        """
        lead = make_lead(self.settings)
        allowed = self.lead_files()
        if lead is None or allowed is None:
            return None
        for path in allowed:
            if path not in self.lead.originals:
                self.lead.originals[path] = _read_text(self.repo_root / path)
        try:
            turn = run_turn(
                lead,
                review,
                round_no=round_no,
                key=self.spec.key,
                kind=self.spec.kind,
                cwd=self.review_root,
                allowed=allowed,
                work_dir=self.work_dir,
                workspace=self.workspace,
            )
        except LeadError as exc:
            self.mutations.extend(exc.mutations)
            self.rebaseline()
            raise FixFailed(str(exc), mutations=exc.mutations) from None
        # A lead no sandbox holds may have written the user's checkout itself: only the
        # edits it made in its own folder are the user's to get.
        with _unwatchable():
            strays = self.workspace.changes(checkout_only=True)
        if strays:
            found = [
                f"{m.path} ({m.kind}, changed by the {self.settings.lead} lead after round "
                f"{round_no} in the checkout; it may edit only its own copy)"
                for m in strays
            ]
            self.mutations.extend(found)
            self.rebaseline()
            raise FixFailed("the lead changed files it must not touch", mutations=found)
        # The lead edited the private copy: the user's files get the same edits.
        self.workspace.adopt([edit.path for edit in turn.record.edits])
        self.rebaseline()
        self._material = None  # the next fresh exec and the stored state see the new text
        self.lead.records.append(turn.record)
        self.lead.applied = turn.applied
        left = self.lead.needs_operator
        left.extend(f for f in turn.needs_operator if f not in left)
        return turn.decisions

    def _dispatching(self, request: DispatchRequest) -> None:
        """Tell the progress display which round is launched and where its events go."""
        progress = self.context.progress
        if progress is None or self.item is None:
            return
        counted, history = self.watch.counted, self._history
        last = counted[0] if counted else (history[-1].number if history else 0)
        progress.dispatch(self.item.nodeid, last + 1, request.work_dir / STREAM_FILE)

    # -- inputs ------------------------------------------------------------------------

    def _relative(self, path: Path) -> str:
        return repo_relative(path, self.repo_root, self.context.shared.resolve)

    @property
    def work_dir(self) -> Path:
        """The review's private temporary folder, created on first use.

        A verdict taken from stored state launches nothing and needs no folder, so a
        cached run of hundreds of plans creates (and removes) none.
        """
        if self._work_dir is None:
            self._work_dir = Path(tempfile.mkdtemp(prefix=f"advreview-{self.review_id}-"))
        return self._work_dir

    def material(self) -> ReviewMaterial:
        """What is reviewed (read once): prompt body, current text and content hash.

        :raises ReviewInputError: the plan is missing, not UTF-8 or empty.
        """
        if self._material is None:
            self._material = build_material(
                self.spec, self.settings, self.repo_root, self.context.shared.resolve
            )
        return self._material

    # -- mutation watch ----------------------------------------------------------------

    def snapshot(self) -> mutation.Snapshot:
        """The workspace as it is now (git status + hashes of the review inputs).

        :raises ReviewInputError: git could not tell (the message says why).
        """
        with _unwatchable():
            return self.workspace.snapshot()

    def rebaseline(self) -> None:
        """Take a new "before" snapshot (after a fixer changed files on purpose)."""
        with _unwatchable():
            self.workspace.rebaseline()
        if self.context.store is not None:
            self.watch.state_before = self.context.store.snapshot()

    def check_mutation(self, round_no: int) -> list[str]:
        """New mutations since the baseline, as messages naming path and round."""
        with _unwatchable():
            changes = self.workspace.changes()
        found = [f"{change.path} ({change.kind}, round {round_no})" for change in changes]
        found.extend(self._state_mutations(round_no))
        last = self.reviewer.last
        if last is not None:
            for path in last.reported_writes:
                if not self.workspace.seen(path):
                    found.append(f"{path} (reported by the reviewer, round {round_no})")
        self.mutations.extend(found)
        return found

    def _state_mutations(self, round_no: int) -> list[str]:
        """Stored state that someone other than this run's plugin changed; discarded."""
        store, before = self.context.store, self.watch.state_before
        if store is None or before is None:
            return []
        after = store.snapshot()
        foreign = store.foreign_changes(before, after)
        targets_of = {path: store.target_of(path) for path in foreign}
        if foreign:
            store.discard(foreign)
            after = store.snapshot()
        # Entries other workers wrote meanwhile are the new baseline.
        self.watch.state_before = after
        found: list[str] = []
        for path in foreign:
            shown = self._relative(Path(path))
            if not self.workspace.seen(shown):
                target = targets_of[path]
                whose = f" of {target}" if target is not None else ""
                # The folder or the key file itself is reported, never deleted.
                tail = "; the entry is discarded" if path.endswith(".json") else ""
                found.append(
                    f"{shown} (review state{whose} changed outside pytest-advreview, round "
                    f"{round_no}{tail})"
                )
        return found

    # -- run ---------------------------------------------------------------------------

    def run(
        self,
        *,
        history: Sequence[RoundRecord] = (),
        decisions: Sequence[Decision] = (),
        applied: str | None = None,
        max_rounds: int | None = None,
    ) -> LoopResult:
        """Run the rounds due, inside the workspace guard: a snapshot before the first
        dispatch, a comparison after each round.  The caller judges the result.

        :param history: counted rounds of earlier runs (rounds across CI runs).
        :param decisions: decisions to send with the re-review.
        :param applied: the "Applied" text of the first re-review (what changed in the
            stored text); a lead's turn before the rounds has set its own.
        :param max_rounds: the round limit (default ``max-rounds``; more with a person's
            grant of rounds).
        :raises ReviewInputError: unusable material, or no review worktree could be built.
        """
        self._history = tuple(history)
        if applied is not None:
            self.lead.applied = applied
        material = self.material()
        try:
            self.workspace.open(self.work_dir)
        except WorkspaceError as exc:
            raise ReviewInputError(str(exc)) from None
        self._loop_target = target = ReviewTarget(
            key=self.spec.key,
            kind=self.spec.kind,
            review_id=self.review_id,
            repo_root=self.review_root,
            work_dir=self.work_dir,
            initial_prompt=material.prompt_body,
            content=material.content,
            content_hash=material.content_hash,
            language=self.settings.language,
            output_format=self.settings.output_format,
            in_git=self.context.in_git,
            fail_on=self.settings.fail_on,
        )
        self.rebaseline()
        result = run_loop(
            target,
            self.reviewer,
            max_rounds=max_rounds or self.settings.max_rounds,
            hooks=self,
            history=history,
            decisions=decisions,
        )
        lead = self.lead
        if lead.needs_operator:
            result = replace(result, needs_operator=tuple(lead.needs_operator))
        edited = sorted({e.path for t in lead.records for e in t.edits})
        if edited and trust.of_run(self.context.config, self.settings).in_ci:
            # Under CI the gate judges the commit; the lead's edits live only in this
            # checkout, so an approval of the edited text is not an approval of the commit.
            result = replace(result, uncommitted_edits=tuple(edited))
        if lead.records:
            # The lead's tokens count like the reviewer's: in the summary and the budget.
            lead_usage = sum((t.tokens for t in lead.records), TokenUsage())
            result = replace(result, usage=result.usage + lead_usage)
        return result

    def final_mutations(self, result: LoopResult | None) -> list[str]:
        """All mutations, including any that appeared after the last dispatch.

        One that appears only now may have been made during the last dispatch, so the
        verdict stored for this target after it is not trusted either: it is removed.

        :param result: the review's result (``None``: it stopped before it had one).
        """
        if result is None:
            return list(self.mutations)
        # Named by the round the reviewer last ran in (history included): the last
        # *counted* round, unless a dispatch started after it (a round that ended in an
        # error or a mutation is not counted, yet it is where the reviewer was).
        number, at = self.watch.counted or (result.last_round, 0)
        late = self.check_mutation(number + 1 if self.reviewer.dispatches > at else number or 1)
        store = self.context.store
        if late and store is not None:
            store.clear(self.spec.key)
        return list(self.mutations)

    def finish(self, result: LoopResult | None, outcome: Outcome | None) -> str | None:
        """The last workspace comparison, then the cleanup (items' teardown, the fixture).

        The folder is kept only when a message names it: after an error, or here.

        :param result: the review's result, ``outcome`` its outcome (``None``: the review
            stopped before it had them).
        :returns: the kept folder (the caller's error message names it).
        :raises WorkspaceMutated: the reviewer changed files, with the fix.
        :raises ReviewerUnavailable: the workspace could not be compared or removed (one
            message, never a traceback: the review is not trusted then).
        """
        failed: str | None = None
        try:
            changed = self.final_mutations(result)
        except ReviewInputError as exc:
            changed, failed = [], str(exc)
        finally:
            announced = outcome is not None and outcome.kind is OutcomeKind.ERROR
            try:
                kept = self.cleanup(keep=announced or bool(self.mutations) or failed is not None)
            except WorkspaceError as exc:
                kept, failed = None, failed or str(exc)
        if failed is not None:
            raise ReviewerUnavailable(
                f"Adversarial review — {self.spec.key} — the workspace could not be checked "
                f"after the review, so its verdict is not trusted: {failed}\n"
                + (f"reviewer files kept in {kept}\n" if kept else "")
            )
        if not changed:
            return kept
        if self.workspace.isolated:
            # The reviewer wrote in its private worktree (which is gone now): isolation is
            # on already, so only a sandbox that refuses writes keeps it from writing.
            hint = "pass --advreview-sandbox=read-only to keep the reviewer from writing"
        else:
            hint = (
                "pass --advreview-sandbox=read-only, or --advreview-isolation=worktree to "
                "review in a private copy of the working tree"
            )
        hint += f"; reviewer files kept in {kept}" if kept else ""
        raise WorkspaceMutated([*changed, f"(fix: {hint})"])

    def record(
        self,
        nodeid: str,
        result: LoopResult | None,
        outcome: Outcome | None,
        *,
        history: Sequence[RoundRecord] = (),
        error: str | None = None,
    ) -> ItemRecord:
        """The item's results in the one model every report is built from.

        :param result: the review's result and ``outcome`` its outcome (``None``: the
            review stopped before it had them; the record says ``error``).
        :param history: the counted rounds of earlier runs the review continued.
        """
        path = self.spec.path or self.spec.against_plan
        base = ItemRecord(
            nodeid=nodeid,
            key=self.spec.key,
            kind=self.spec.kind,
            path=self._relative(path) if path else None,
            status=ReviewStatus.ABORTED,
            outcome="error",
            fail_on=self.settings.fail_on,
            error=error,
            mutations=tuple(self.mutations),
        )
        if result is None or outcome is None:
            return base
        findings = (*outcome.failing, *outcome.waived, *outcome.below)
        rounds = (*history, *result.rounds)
        return base.model_copy(
            update=dict(
                status=outcome.status,
                outcome=outcome.kind.value,
                verdict=outcome.verdict,
                max_severity=outcome.max_severity,
                findings=findings,
                failing_ids=tuple(f.id for f in outcome.failing),
                rounds=rounds,
                late=tuple(
                    f for f in interdiff.late_findings(rounds) if f in {g.id for g in findings}
                ),
                decisions=rounds[-1].decisions if rounds else (),
                tokens=result.usage,
                duration_s=sum(r.duration_s for r in result.rounds),
                error=error
                or result.error
                or (outcome.summary if outcome.kind is OutcomeKind.ERROR else None),
                warnings=result.warnings,
                review_text=result.review.raw if result.review is not None else None,
                lead=tuple(self.lead.records),
                # This run's and those still open from earlier runs (the coordinator's).
                needs_operator=result.needs_operator,
                lead_patch=self.lead_patch(),
            )
        )

    def lead_patch(self) -> str:
        """The combined diff of the lead's edits in this run (``""`` when it made none)."""
        if not self.lead.records:
            return ""
        parts = []
        for path, old in sorted(self.lead.originals.items()):
            new = _read_text(self.repo_root / path)
            if new == old:
                continue
            lines = difflib.unified_diff(
                (old or "").splitlines(keepends=True),
                (new or "").splitlines(keepends=True),
                fromfile=f"a/{path}",
                tofile=f"b/{path}",
            )
            parts.append(
                "".join(
                    x if x.endswith("\n") else x + "\n\\ No newline at end of file\n" for x in lines
                )
            )
        return "".join(parts)

    def cleanup(self, *, keep: bool) -> str | None:
        """Remove the temp files after success; keep them after an error (diagnostics).

        A review worktree is always removed: it is a copy, and a leftover one would show
        in the user's ``git worktree list``.  Nothing compares the workspace afterwards:
        the last comparison (:meth:`finish`) comes first.  A kept folder is moved under
        pytest's temporary folder (:func:`kept_root`), which pytest prunes as it prunes
        ``tmp_path``: an error per review once left a ``/tmp/advreview-*`` folder each.

        :param keep: keep the review's folder; the caller must print the returned path
            (a kept folder nobody is told about is litter).
        :returns: the kept folder, ``None`` when nothing was kept (or none was made).
        :raises WorkspaceError: the review worktree could not be removed completely.
        """
        try:
            self.workspace.close()
        finally:
            # Never create the folder here: a review that stopped before it needed one
            # (an unreadable plan, a cached verdict) has nothing to keep.
            if self._work_dir is not None and not keep:
                shutil.rmtree(self._work_dir, ignore_errors=True)
        if not keep or self._work_dir is None:
            return None
        kept = self.kept_folder()
        if kept is not None and Path(kept) != self._work_dir:
            # The workspace is closed: the folder (a worktree may have lived in it) moves.
            # On failure it stays where it was, and the message names that place.
            with contextlib.suppress(OSError):
                self._work_dir = Path(shutil.move(self._work_dir, kept))
        return str(self._work_dir)

    def kept_folder(self) -> str | None:
        """Where the review's folder is kept by the cleanup of :meth:`finish` after an
        error (``None``: none was made): under :func:`kept_root` where there is one."""
        if self._work_dir is None:
            return None
        root = kept_root(self.context.config, (self.context.repo_root, self.review_root))
        if root is None or self._work_dir.parent == root:
            return str(self._work_dir)
        return str(root / self._work_dir.name)


#: The folder under pytest's base temporary folder that kept review folders move to.
KEPT_FOLDER = "advreview-kept"
#: pytest's ``getbasetemp`` creates the folder on first use; reviews run in threads.
_BASETEMP_LOCK = threading.Lock()


def kept_root(config: pytest.Config, workspace: Sequence[Path]) -> Path | None:
    """Where a review's kept folder goes: ``advreview-kept`` in pytest's base temporary
    folder (``--basetemp``, else ``pytest-of-USER/pytest-N``, of which pytest keeps the
    last ``tmp_path_retention_count`` runs').

    ``None`` (the folder stays in the process's temporary folder) without pytest's
    ``tmpdir`` plugin, or when the base folder lies in the ``workspace`` folders, where
    the reviewers of other reviews would see it appear as a change of theirs.
    """
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is None:
        return None
    try:
        with _BASETEMP_LOCK:
            base = Path(factory.getbasetemp()).resolve()
        if any(base == w or w in base.parents for w in (p.resolve() for p in workspace)):
            return None
        root = base / KEPT_FOLDER
        root.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    return root
