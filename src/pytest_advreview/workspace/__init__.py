"""The workspace a reviewer gets: where it runs, what it may write, what changed.

One owner for all three, asked by the review (:class:`~.review.ReviewRun`), the
containment check and the jobs pool:

* :class:`Layout` (once per process): whether each review runs in a private worktree
  (:mod:`.workspace.isolation` builds it) or in the repository itself, and so which folder of the
  user's a reviewer may write, if any.
* :class:`Workspace` (once per review): the folder the reviewer runs in, its baseline
  snapshot and what changed since (:mod:`.workspace.mutation` takes and compares the snapshots),
  the one way anything of a worktree flows back into the checkout (the lead's edits),
  and the worktree's return to the process's pool (:class:`.isolation.WorktreePool`,
  which keeps it only when unchanged) or removal -- after the last comparison, never
  before it.

``--advreview-isolation=auto`` (the default) gives each review that may write a
worktree of its own, outside the checkout, with the change applied: the committed branch
plus the staged, unstaged and untracked-but-not-ignored files.  Ignored folders (a
``.venv``, ``node_modules``, build output, ``CODEX_HOME``) are not in it, so a reviewer
can read them but not write them, and reviews side by side never see each other's
writes.  A review that cannot write (the Codex sandbox ``read-only`` and no lead) runs in
the repository: it changes nothing, so it needs no copy.  Outside git, in a repository
without a commit, and under ``--advreview-head`` (whose checkout is already a private
copy outside the checkout) the reviewer runs in place as with ``none``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..cachekey import plan_hash
from ..git import commit, redirected
from . import mutation
from .isolation import IsolationError, Worktree, WorktreePool

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = [
    "Adoptions",
    "Layout",
    "Workspace",
    "WorkspaceError",
    "reviewer_writes",
]


class WorkspaceError(Exception):
    """The workspace could not be built or watched; the message says what and the fix."""


def reviewer_writes(settings: Settings) -> bool:
    """Whether a sandboxed writer of this run (the Codex reviewer, the lead) may write
    its workspace: ``inherit`` may be anything, so it counts as writing."""
    codex_writes = settings.reviewer == "codex" and settings.sandbox != "read-only"
    return codex_writes or settings.lead != "none"


def _unsandboxed_writer(settings: Settings) -> bool:
    """Whether a writer of this run is held by no sandbox of ours, so it can write the
    user's checkout from its worktree too: a ``command`` reviewer or one a plugin
    provides, a ``command`` or ``claude`` lead."""
    return settings.reviewer not in ("codex",) or settings.lead in ("command", "claude")


def _may_write(settings: Settings) -> bool:
    """Whether a review of this run may change files: a sandboxed writer, or a reviewer
    backend no sandbox of ours holds (``command``, one a plugin provides)."""
    return reviewer_writes(settings) or settings.reviewer != "codex"


@dataclass(frozen=True)
class Layout:
    """Where the reviews of one process run, decided once (:meth:`decide`).

    :param repo_root: the repository the reviews are about (the head's checkout under
        ``--advreview-head``).
    :param isolated: each review runs in a private worktree of ``repo_root``.
    :param in_git: ``repo_root`` is a git work tree (else only review inputs are watched).
    :param writable: the folder of the user's a sandboxed reviewer or lead of this run may
        write, ``None`` when there is none (a worktree per review, or nothing writes).
    :param shared_writable: reviews would write one folder together (in place, and a
        reviewer that may write; or a writer no sandbox holds, whose checkout every review
        watches): side by side they would see each other's writes.
    :param watch_checkout: isolated, and a writer no sandbox of ours holds could write the
        checkout itself: the checkout is watched besides the worktree.
    :param pool: the process's worktrees, reset between reviews (isolated runs of a
        session); ``None``: each review builds and removes its own.
    """

    repo_root: Path
    isolated: bool
    in_git: bool = True
    writable: Path | None = None
    shared_writable: bool = False
    watch_checkout: bool = False
    pool: WorktreePool | None = field(default=None, compare=False)

    @classmethod
    def decide(
        cls, settings: Settings, repo_root: Path, *, in_git: bool, head: bool = False
    ) -> Layout:
        """The layout ``settings`` ask for in ``repo_root``.

        :param head: ``repo_root`` is ``--advreview-head``'s private checkout.
        """
        mode = settings.isolation
        if mode == "auto":
            isolated = (
                _may_write(settings)
                and in_git
                and not head
                # git redirected (inside a git hook) would build the worktree in the
                # user's repository; an unborn branch has nothing to check out.  The
                # review runs in place then, and the containment check judges that folder.
                and redirected() is None
                and commit(repo_root, "HEAD") is not None
            )
        else:
            isolated = mode == "worktree"
        writes = not isolated and _may_write(settings)
        watch_checkout = isolated and _unsandboxed_writer(settings)
        return cls(
            repo_root=repo_root,
            isolated=isolated,
            in_git=in_git,
            writable=repo_root if writes and reviewer_writes(settings) else None,
            shared_writable=writes or watch_checkout,
            watch_checkout=watch_checkout,
        )


class Adoptions:
    """The lead's edits the run copied into the user's checkout, known to all its processes.

    Where the checkout is watched besides each review's worktree (a writer no sandbox
    holds), one review's lead edit lands in the checkout while other reviews watch it:
    under xdist, or side by side with ``--advreview-jobs``.  For them it is no change
    of theirs.  Each copy is recorded here (the path and the content it wrote), and a
    watch does not count a change of the checkout whose content the run adopted for that
    path.  A record is named by an HMAC under the run's secret, which only the run's
    processes hold: a writer without it cannot vouch for a change of its own.  One lock,
    taken by every copy and every snapshot of the checkout, keeps a snapshot from seeing
    a copy half written or written before its record.

    :param folder: in the run's directory (shared with the xdist workers).
    :param secret: the run's secret.
    """

    def __init__(self, folder: Path, secret: bytes) -> None:
        self.folder = folder
        self._secret = secret

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """The run's processes and threads one at a time (``flock``: per open file)."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        with (self.folder / "lock").open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _record(self, path: Path, digest: str) -> Path:
        text = f"{os.path.realpath(path)}\0{digest}".encode("utf-8", "surrogateescape")
        return self.folder / hmac.new(self._secret, text, hashlib.sha256).hexdigest()

    def copy(self, source: Path, target: Path) -> None:
        """Write ``source``'s bytes to ``target`` and record it (under the lock)."""
        with self.locked():
            target.write_bytes(source.read_bytes())
            self._record(target, plan_hash(target)).touch()

    def vouch(self, path: Path, digest: str | None) -> bool:
        """Whether the run copied a lead's edit with content ``digest`` to ``path``."""
        return digest is not None and self._record(path, digest).exists()


class Workspace:
    """One review's workspace: its folder, its watch, its worktree's life.

    :param layout: the process's :class:`Layout`.
    :param inputs: files of the user's the reviewer must not change (the plan, the plan
        a change is reviewed against); watched in the reviewer's copy once it has one.
    :param fixed_inputs: files watched where they are, whatever the layout (the
        decisions file the plugin reads: never a worktree's copy of it).
    :param toplevels: review root -> its git top level, shared by the run's reviews so
        later snapshots skip ``git rev-parse --show-toplevel``.
    :param allow_untracked: globs of untracked files that may come and go.
    :param adoptions: the run's record of the lead's edits copied into the checkout
        (``None``: this review is alone in watching it).
    """

    def __init__(
        self,
        layout: Layout,
        *,
        inputs: Sequence[Path] = (),
        fixed_inputs: Sequence[Path] = (),
        toplevels: dict[Path, Path] | None = None,
        allow_untracked: Sequence[str] = (),
        adoptions: Adoptions | None = None,
    ) -> None:
        self.layout = layout
        self._adoptions = adoptions
        #: Where the reviewer runs: the repository, or the private worktree once opened.
        self.root = layout.repo_root
        self._inputs = tuple(inputs)
        self._fixed = tuple(fixed_inputs)
        self._toplevels = toplevels if toplevels is not None else {}
        self._allow_untracked = tuple(allow_untracked)
        self._tree: Worktree | None = None
        self._closed = False
        #: What the watch compares against (the user's checkout too, when it is watched
        #: besides the worktree), and the paths it reported already.
        self._before: mutation.Snapshot | None = None
        self._checkout_before: mutation.Snapshot | None = None
        self._seen: set[str] = set()

    @property
    def repo_root(self) -> Path:
        """The user's repository (never the private worktree)."""
        return self.layout.repo_root

    @property
    def isolated(self) -> bool:
        """The reviewer runs (or will run) in a private worktree."""
        return self.layout.isolated

    def open(self, parent: Path) -> Path:
        """Make the reviewer's folder ready; return it.  Idempotent.

        :param parent: where a worktree's temporary folder is made (the review's own).
        :raises WorkspaceError: the worktree could not be built (nothing is left behind).
        """
        if self.isolated and self._tree is None:
            pool = self.layout.pool
            try:
                if pool is None:
                    self._tree = Worktree.create(self.repo_root, parent)
                else:
                    self._tree = pool.acquire(self.repo_root)
            except IsolationError as exc:
                raise WorkspaceError(str(exc)) from None
            self.root = self._tree.path
        return self.root

    # -- what changed ---------------------------------------------------------------------

    def snapshot(self) -> mutation.Snapshot:
        """The reviewer's folder as it is now (git status and hashes of the inputs).

        :raises WorkspaceError: git failed, or the workspace was removed already.
        """
        if self._closed:
            raise WorkspaceError(
                f"pytest-advreview: the review workspace {self.root} was removed before its "
                "last comparison; this is a bug of pytest-advreview, please report it"
            )
        return self._take(self.root, [self._translate(path) for path in self._inputs])

    def _checkout(self) -> mutation.Snapshot | None:
        """The user's checkout as it is now, when it is watched besides the worktree."""
        if not (self.layout.watch_checkout and self._tree is not None):
            return None
        # Under the run's lock (when there is one): never a lead's edit half copied.
        with self._adoptions.locked() if self._adoptions else contextlib.nullcontext():
            return self._take(self.repo_root, self._inputs)

    def _take(self, where: Path, inputs: Sequence[Path]) -> mutation.Snapshot:
        root = where if self.layout.in_git else None
        top = self._toplevels.get(root) if root is not None else None
        try:
            snap = mutation.take_snapshot(root, [*inputs, *self._fixed], toplevel=top)
        except mutation.MutationError as exc:
            raise WorkspaceError(str(exc)) from None
        if root is not None and snap.root is not None:
            self._toplevels[root] = Path(snap.root)
        return snap

    def compare(
        self, before: mutation.Snapshot, after: mutation.Snapshot
    ) -> list[mutation.Mutation]:
        """Everything that changed from ``before`` to ``after`` (allowed untracked files
        aside)."""
        return mutation.compare(before, after, allow_untracked=self._allow_untracked)

    def rebaseline(self) -> None:
        """Take a new baseline: the folder as it is now is what the reviewer found."""
        self._before = self.snapshot()
        self._checkout_before = self._checkout()

    def changes(self, *, checkout_only: bool = False) -> list[mutation.Mutation]:
        """The changes since the baseline not reported before (each path once).

        :param checkout_only: only those in the user's checkout (a writer no sandbox holds
            wrote there from its worktree), not the reviewer's own folder.
        """
        found: list[mutation.Mutation] = []
        if self._before is not None and not checkout_only:
            found += self.compare(self._before, self.snapshot())
        if self._checkout_before is not None:
            after = self._checkout()
            assert after is not None
            found += [
                mutation.Mutation(c.path, c.kind, f"in the checkout, not the worktree: {c.detail}")
                for c in self.compare(self._checkout_before, after)
                if not self._adopted(c, after)
            ]
        return [change for change in found if not self.seen(change.path)]

    def _adopted(self, change: mutation.Mutation, after: mutation.Snapshot) -> bool:
        """Whether ``change`` of the checkout is a lead's edit the run copied there (this
        review's or another's, in any process of the run): its content is one the run
        adopted for that path."""
        if self._adoptions is None or change.kind != "modified" or after.root is None:
            return False
        digest = after.status_hashes.get(change.path)
        return self._adoptions.vouch(Path(after.root) / change.path, digest)

    def seen(self, path: str) -> bool:
        """Whether ``path`` was reported already; marks it reported."""
        known = path in self._seen
        self._seen.add(path)
        return known

    # -- the user's files and the reviewer's copy ------------------------------------------

    def _translate(self, path: Path) -> Path:
        if self._tree is None:
            return path
        try:
            return self._tree.translate(path)
        except ValueError:
            return path  # outside the repository: watched where it is

    def refresh(self) -> None:
        """After a fixer changed the user's files: the worktree gets them too."""
        if self._tree is not None:
            try:
                self._tree.resync()
            except IsolationError as exc:
                raise WorkspaceError(str(exc)) from None

    def adopt(self, paths: Sequence[str]) -> None:
        """Copy the lead's edits (repository-relative ``paths``) from the worktree into
        the user's files: the one thing that flows back from a reviewer's copy."""
        if self._tree is None:
            return
        for path in paths:
            source, target = self.root / path, self.repo_root / path
            if self._adoptions is None:
                target.write_bytes(source.read_bytes())
            else:
                self._adoptions.copy(source, target)

    # -- removal ---------------------------------------------------------------------------

    def close(self) -> None:
        """Remove the worktree, or give it back to the pool, which keeps it only when the
        review left it unchanged (idempotent); the watch cannot be asked afterwards.

        :raises WorkspaceError: the worktree could not be removed completely (the message
            names the commands that do it).
        """
        if self._closed:
            return
        self._closed = self._tree is not None
        if self._tree is not None:
            pool = self.layout.pool
            try:
                if pool is None:
                    self._tree.remove()
                else:
                    pool.release(self._tree, self.repo_root)
            except IsolationError as exc:
                raise WorkspaceError(str(exc)) from None
