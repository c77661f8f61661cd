"""The workspace guard around one review, its one owner: the review's private folder, the
baseline, the comparison after each round and at the end, the stored state no one else
may change, the cleanup and where a kept folder goes.

The review (:class:`~.review.ReviewRun`) opens one per target and hands the loop's
mutation check to it; the engine ends it with :meth:`ReviewGuard.finish`.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pytest

from ..material import ReviewInputError
from ..outcome import Outcome, OutcomeKind, ReviewerUnavailable, WorkspaceMutated
from . import Adoptions, Layout, Workspace, WorkspaceError

if TYPE_CHECKING:
    from ..loop import LoopResult
    from ..runner import DispatchResult
    from ..state import StateStore
    from . import mutation

__all__ = ["KEPT_FOLDER", "ReviewGuard", "kept_root", "unwatchable"]


class Dispatches(Protocol):
    """The reviewer as the guard sees it: how many dispatches started, the last result."""

    @property
    def dispatches(self) -> int: ...
    @property
    def last(self) -> DispatchResult | None: ...


@contextlib.contextmanager
def unwatchable() -> Iterator[None]:
    """A workspace that cannot be watched stops the review with its message: a review
    whose writes nobody can see is not judged."""
    try:
        yield
    except WorkspaceError as exc:
        raise ReviewInputError(str(exc)) from None


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


class ReviewGuard:
    """One review's workspace, from its private folder to its cleanup.

    :param key: the target; a verdict stored for it is removed after a late mutation.
    :param inputs: the review's input files (the plan, the plan a change is reviewed
        against), watched by hash.
    :param relative: names a path as the messages do (repository-relative).
    :param reviewer: the review's reviewer (dispatch count, the writes it reported).
    :param adoptions: the run's record of the lead's edits copied into the checkout
        (:class:`~.workspace.Adoptions`); ``None``: none.
    """

    def __init__(
        self,
        config: pytest.Config,
        layout: Layout,
        *,
        key: str,
        inputs: Sequence[Path],
        decisions: Path,
        toplevels: dict[Path, Path],
        allow_untracked: Sequence[str],
        store: StateStore | None,
        repo_root: Path,
        relative: Callable[[Path], str],
        reviewer: Dispatches,
        adoptions: Adoptions | None = None,
    ) -> None:
        self.config = config
        self.key = key
        self.store = store
        self.repo_root = repo_root
        self.relative = relative
        self.reviewer = reviewer
        #: ``{unix_ts}-{8 digits}``: sorts by start time, and the random digits keep two
        #: reviews started in the same second apart.
        self.review_id = f"{int(time.time())}-{secrets.randbelow(100_000_000):08d}"
        self._work_dir: Path | None = None
        #: Where the reviewer runs, what it may write and what it changed.
        self.workspace = Workspace(
            layout,
            inputs=inputs,
            # The decisions file the plugin reads (never a worktree's copy of it): what a
            # reviewer writes there would be sent as the user's decisions next run.
            fixed_inputs=[decisions],
            toplevels=toplevels,
            allow_untracked=allow_untracked,
            adoptions=adoptions,
        )
        self.watch = _Watch()

    @property
    def mutations(self) -> list[str]:
        """Every mutation found so far, as messages naming path and round."""
        return self.watch.mutations

    @property
    def work_dir(self) -> Path:
        """The review's private temporary folder, created on first use.

        A verdict taken from stored state launches nothing and needs no folder, so a
        cached run of hundreds of plans creates (and removes) none.
        """
        if self._work_dir is None:
            self._work_dir = Path(tempfile.mkdtemp(prefix=f"advreview-{self.review_id}-"))
        return self._work_dir

    def open(self) -> None:
        """Build the review's workspace (its private worktree, with isolation).

        :raises ReviewInputError: no review worktree could be built.
        """
        try:
            self.workspace.open(self.work_dir)
        except WorkspaceError as exc:
            raise ReviewInputError(str(exc)) from None

    def snapshot(self) -> mutation.Snapshot:
        """The workspace as it is now (git status + hashes of the review inputs).

        :raises ReviewInputError: git could not tell (the message says why).
        """
        with unwatchable():
            return self.workspace.snapshot()

    def rebaseline(self) -> None:
        """Take a new "before" snapshot (after a fixer changed files on purpose)."""
        with unwatchable():
            self.workspace.rebaseline()
        if self.store is not None:
            self.watch.state_before = self.store.snapshot()

    def check_mutation(self, round_no: int) -> list[str]:
        """New mutations since the baseline, as messages naming path and round."""
        with unwatchable():
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
        store, before = self.store, self.watch.state_before
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
            shown = self.relative(Path(path))
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
        store = self.store
        if late and store is not None:
            store.clear(self.key)
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
                f"Adversarial review — {self.key} — the workspace could not be checked "
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

    def cleanup(self, *, keep: bool) -> str | None:
        """Remove the temp files after success; keep them after an error (diagnostics).

        A review worktree is always given back: to the run's pool, which keeps it for
        the next review only when the reviewer changed nothing in it, else removed (a
        leftover one would show in the user's ``git worktree list``).  Nothing compares
        the workspace afterwards: the last comparison (:meth:`finish`) comes first.  A
        kept folder is moved under pytest's temporary folder (:func:`kept_root`), which
        pytest prunes as it prunes ``tmp_path``: an error per review once left a
        ``/tmp/advreview-*`` folder each.

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
        root = kept_root(self.config, (self.repo_root, self.workspace.root))
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
