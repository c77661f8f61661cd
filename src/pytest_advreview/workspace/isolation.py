"""A private, detached git worktree per review (``--advreview-isolation``, owned by
:mod:`.workspace`).

The worktree mirrors the user's work tree exactly -- HEAD, the staged changes (in the
worktree's index too, so ``git diff --cached`` shows the same thing), the unstaged
changes and the untracked-but-not-ignored files -- so the reviewer sees what the user
sees, while anything it writes lands in the worktree.  Mutation detection then runs
against the worktree and is exact even when xdist runs reviews side by side.

How the mirror is built, and why:

1. ``git worktree add --detach <dir> HEAD`` with hooks disabled (a ``post-checkout``
   hook must not run for a throw-away checkout).
2. The staged changes: ``git diff --cached --binary HEAD`` in the user's tree, applied
   with ``git apply --index`` in the worktree, so its index matches the user's.
3. Every path whose work-tree content differs from HEAD or the index, and every
   untracked file, is then *copied* byte for byte (or deleted) instead of patched:
   a copy is exact whatever the user's filters, eol conversion, textconv or binary
   content, where a patch could be refused.

Submodules: the user's index entry (a staged pointer change) and, where the user has the
submodule checked out, its files at the commit checked out there (a ``--shared`` clone):
the reviewer's ``git diff`` then shows the same ``Subproject commit`` lines as the
user's.  Not mirrored: ignored files (by design: ``.env``, build output, databases), a
submodule's own uncommitted edits, the content of a submodule the user has not checked
out (an empty folder, as in the user's tree), empty directories (git does not track
them).

The user's work tree and index are only read; git records the worktree under
``.git/worktrees/`` until :meth:`Worktree.remove`, which also runs on errors and Ctrl-C.

A run's reviews share a :class:`WorktreePool` per process: a worktree is built once and,
between reviews, kept only when nothing in it or its git admin folder changed (an
``lstat`` fingerprint of every entry, :meth:`Worktree.clean`), then brought up to the
user's tree (:meth:`Worktree.reset`); anything else removes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from ..git import GitError, commit, redirected, run_git, split_z

__all__ = [
    "POOL_PREFIX",
    "WORKTREE_PREFIX",
    "IsolationError",
    "Worktree",
    "WorktreePool",
    "leftover_worktrees",
]

#: Prefix of the temporary directory holding each worktree; marks worktrees as ours.
WORKTREE_PREFIX = "advreview-wt-"
#: Prefix of a process's pool folder in the run's directory (:class:`WorktreePool`).
POOL_PREFIX = "worktrees-"

#: Options of every ``git diff`` here: the plain patch format whatever the user's config.
_DIFF_OPTS = (
    "--no-ext-diff",
    "--no-textconv",
    "--no-color",
    "--no-renames",
    "--ignore-submodules=all",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)


@contextlib.contextmanager
def _repo_lock(repo_root: Path) -> Iterator[None]:
    """An exclusive lock per repository, shared by every process of this user.

    The lock is on the repository's folder itself (``flock`` on a directory), so nothing
    is created that would have to be cleaned up.
    """
    fd = os.open(repo_root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


class IsolationError(Exception):
    """A worktree could not be created, mirrored or removed; the message says why and the fix."""


class Worktree:
    """A private, detached worktree mirroring the work tree of ``repo_root``.

    Made by :meth:`create`; whoever made it calls :meth:`remove` when the review is over.

    :param repo_root: top level of the user's work tree.
    :param path: top level of the worktree.
    :param holder: the private temporary directory that contains ``path``.
    """

    def __init__(self, repo_root: Path, path: Path, holder: Path) -> None:
        self.repo_root = repo_root
        self.path = path
        self._holder = holder
        self._removed = False
        #: What the mirror was built from: the user's HEAD and staged patch.
        self._base: tuple[str | None, bytes] | None = None
        #: The paths the mirror copied or deleted (the user's changes when it was built).
        self._synced: list[str] = []
        #: The mirror has a submodule (a clone of its own): never reset, always rebuilt.
        self._submodule = False
        #: Every entry of the worktree and its git admin folder when it was last known
        #: clean (:meth:`clean`); ``None``: never, or no longer.
        self._fingerprint: tuple[tuple[object, ...], ...] | None = None
        self._admin: Path | None = None

    @classmethod
    def create(cls, repo_root: Path, parent_dir: Path) -> Worktree:
        """Make a detached worktree of ``repo_root`` in a new directory below ``parent_dir``.

        :param repo_root: any directory of the user's work tree.
        :param parent_dir: where the temporary worktree directory is made (per review,
            e.g. the item's work dir, so xdist workers never share one).
        :raises IsolationError: not a git work tree, no commit yet, git redirected by the
            environment, or git failed; nothing is left behind.
        """
        redirecting = redirected()
        if redirecting:
            raise IsolationError(
                f"pytest-advreview: --advreview-isolation=worktree cannot run while "
                f"{redirecting} (inside a git hook?): git commands in the worktree would "
                "act on the user's repository. Unset them, or run without worktree isolation"
            )
        try:
            top = Path(
                os.fsdecode(run_git(repo_root, "rev-parse", "--show-toplevel").stdout.strip())
            )
        except GitError as exc:
            raise IsolationError(
                f"pytest-advreview: --advreview-isolation=worktree needs a git work tree, "
                f"but {repo_root} is not in one ({exc}). Run inside a git repository or "
                "drop --advreview-isolation=worktree"
            ) from exc
        if commit(top, "HEAD") is None:
            raise IsolationError(
                f"pytest-advreview: --advreview-isolation=worktree needs a commit to check "
                f"out, but HEAD of {top} has none yet. Commit once or drop the option"
            )
        parent_dir.mkdir(parents=True, exist_ok=True)
        # Resolved, so the path compares equal to what `git worktree list` reports.
        holder = Path(tempfile.mkdtemp(prefix=WORKTREE_PREFIX, dir=parent_dir)).resolve()
        # A unique basename gives a unique admin dir under .git/worktrees/, so concurrent
        # reviews never race for the same name.
        tree = cls(
            top, holder / f"{top.name or 'repo'}-{holder.name[len(WORKTREE_PREFIX) :]}", holder
        )
        try:
            tree._add()
            tree._mirror()
            tree._settle()
        except BaseException as exc:
            # Ctrl-C included: a half-built worktree must not outlive this call.
            try:
                tree.remove()
            except IsolationError as cleanup:
                if sys.version_info >= (3, 11):
                    exc.add_note(str(cleanup))
            if isinstance(exc, GitError):
                raise IsolationError(
                    f"pytest-advreview: could not build the review worktree of {top}: {exc}"
                ) from exc
            raise
        return tree

    # -- building ------------------------------------------------------------------------

    def _add(self) -> None:
        # Concurrent ``git worktree add`` in one repository (xdist workers, reviews side by
        # side) can fail reading another's half-written ``.git/worktrees/<id>/commondir``:
        # one at a time per repository, across processes.
        with _repo_lock(self.repo_root):
            run_git(
                self.repo_root,
                "-c",
                f"core.hooksPath={os.devnull}",
                "worktree",
                "add",
                "--detach",
                "--quiet",
                str(self.path),
                "HEAD",
            )

    def _mirror(self) -> None:
        user = self.repo_root
        self._base = base = _user_base(user)
        staged = base[1]
        if staged:
            # --whitespace=nowarn: apply.whitespace=error in the user's config must not
            # refuse the user's own changes.
            self._git_in_tree_stdin(staged, "apply", "--index", "--whitespace=nowarn", "-")
        self._synced = _changed(user)
        for name in self._synced:
            self._sync(name)
        self._submodules()

    def _settle(self) -> None:
        """Record the worktree as it is now as its clean state (:meth:`clean`)."""
        if self._admin is None:
            admin = run_git(self.path, "rev-parse", "--absolute-git-dir").stdout
            self._admin = Path(os.fsdecode(admin.rstrip(b"\n")))
        self._fingerprint = self._walk()

    def _walk(self) -> tuple[tuple[object, ...], ...]:
        """Every entry below the worktree's folder and its git admin folder, with what
        ``lstat`` says of it: a write, a deletion, a new file (ignored ones too), a
        ``chmod``, a link, a rename or a moved ``HEAD`` each change a field, and
        ``st_ctime`` cannot be set back by the writer."""
        assert self._admin is not None
        # The top folder's times change when an entry comes and goes: Codex's sandbox
        # makes (and removes) mount points there for the folders it keeps read-only.
        # What is left is compared entry by entry; a chmod still shows in its mode.
        top_level = os.fspath(self.path)
        found: list[tuple[object, ...]] = []
        for top in (self._holder, self._admin):
            walked = os.walk(top, onerror=_raise)
            for folder, dirs, files in [(os.fspath(top), [""], []), *walked]:
                for name in (*dirs, *files):
                    path = os.path.join(folder, name) if name else folder
                    st = os.lstat(path)
                    fields: tuple[object, ...] = (path, st.st_mode, st.st_ino, st.st_uid)
                    fields += (st.st_gid, st.st_nlink)
                    if path != top_level:
                        fields += (st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                    found.append(fields)
        found.sort()
        return tuple(found)

    def clean(self) -> bool:
        """Whether nothing in the worktree or its git admin folder changed since it was
        built or last reset: no file written, deleted, added (ignored or not) or
        ``chmod``-ed, ``HEAD`` and the index as they were.  A change that cannot be
        ruled out (a folder that cannot be read) counts as one."""
        if self._fingerprint is None or self._removed:
            return False
        try:
            clean = self._walk() == self._fingerprint
        except OSError:
            clean = False
        if not clean:
            self._fingerprint = None  # never clean again: only removal is left
        return clean

    def reset(self) -> bool:
        """Make an unchanged worktree (:meth:`clean`) mirror the user's tree as it is now,
        as a new one would; ``False`` when that cannot be done exactly (the worktree
        changed, the user's ``HEAD`` or staged changes moved, a submodule, git failed):
        the caller removes it then and builds a new one.
        """
        if self._submodule or not self.clean():
            return False
        try:
            if _user_base(self.repo_root) != self._base:
                return False
            now = _changed(self.repo_root)
            for name in dict.fromkeys([*self._synced, *now]):
                self._sync(name)
                self._prune_parents(name)
            self._synced = now
            self._settle()
        except (GitError, OSError):
            self._fingerprint = None
            return False
        return True

    def _prune_parents(self, name: str) -> None:
        """Remove the folders a deleted path leaves empty that the user does not have
        (a new worktree would not have them either)."""
        rel = Path(name.rstrip("/"))
        if os.path.lexists(self.path / rel):
            return
        for parent in rel.parents:
            if parent == Path(".") or os.path.lexists(self.repo_root / parent):
                return
            try:
                (self.path / parent).rmdir()
            except OSError:
                return

    def _submodules(self) -> None:
        """Each submodule as the user has it: its index entry (a staged pointer change) and,
        where the user's checkout of it has the commit, its files at that commit.

        ``git worktree add`` checks out no submodule, so its folder is empty and the
        reviewer's ``git diff`` would compare against nothing.  The checkout is a
        ``--shared`` clone of the user's submodule (its objects are borrowed, not copied)
        at the commit checked out there; the submodule's own uncommitted edits are not
        copied.  A submodule the user has not checked out stays an empty folder (the
        prompt says its content is not present).
        """
        user = self.repo_root
        for meta, name in _gitlinks(user):
            if _gitlinks(self.path, name) != [(meta, name)]:
                mode, oid = meta.split()[:2]
                # --add: a submodule the user added (staged, not in HEAD) is new here.
                run_git(self.path, "update-index", "--add", "--cacheinfo", f"{mode},{oid},{name}")
            source = user / name
            self._submodule = True
            if not (source / ".git").exists():
                continue
            head = run_git(source, "rev-parse", "--verify", "-q", "HEAD", check=False)
            if head.returncode != 0:
                continue
            target = self.path / name
            _remove_path(target)
            hooks = f"core.hooksPath={os.devnull}"
            run_git(
                self.path,
                "-c",
                hooks,
                "clone",
                "--quiet",
                "--no-checkout",
                "--shared",
                str(source),
                str(target),
            )
            run_git(
                target,
                "-c",
                hooks,
                "checkout",
                "--quiet",
                "--detach",
                os.fsdecode(head.stdout.strip()),
            )

    def resync(self) -> None:
        """Make the worktree's files the user's again, after the user's changed (a fixer
        edited them between rounds): every path that differs from HEAD on either side is
        copied or deleted.  The worktree's index is left as it is.

        :raises IsolationError: git failed.
        """
        try:
            names = dict.fromkeys([*_changed(self.repo_root), *_changed(self.path)])
            for name in names:
                self._sync(name)
        except GitError as exc:
            raise IsolationError(
                f"pytest-advreview: could not bring the review worktree {self.path} up to "
                f"date with {self.repo_root}: {exc}"
            ) from exc

    def _git_in_tree_stdin(self, data: bytes, *args: str) -> None:
        # run_git has no stdin; the patch goes through a private file instead.
        patch = self._holder / "staged.patch"
        patch.write_bytes(data)
        try:
            run_git(self.path, *(str(patch) if a == "-" else a for a in args))
        finally:
            patch.unlink(missing_ok=True)

    def _sync(self, name: str) -> None:
        """Make ``name`` in the worktree what it is in the user's tree (copy or delete)."""
        rel = name.rstrip("/")
        src = self.repo_root / rel
        dst = self.path / rel
        _remove_path(dst)
        if not os.path.lexists(src):
            return
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
        elif src.is_dir():
            # A nested repository is listed as "dir/" by ls-files --others.
            shutil.copytree(src, dst, symlinks=True)
        else:
            shutil.copy2(src, dst)

    # -- mapping -------------------------------------------------------------------------

    def translate(self, path: Path) -> Path:
        """The worktree twin of ``path`` (a path in the user's work tree).

        :raises ValueError: ``path`` is outside the user's work tree.
        """
        return self.path / Path(path).absolute().relative_to(self.repo_root)

    # -- removal -------------------------------------------------------------------------

    def remove(self) -> None:
        """Remove the worktree: ``git worktree remove --force``, prune, then delete the files.

        Idempotent.  Each step runs even when an earlier one failed (or was interrupted).

        :raises IsolationError: the worktree is still registered or its files remain.
        """
        if self._removed:
            return
        with _repo_lock(self.repo_root):  # a prune must not meet another's half-done add
            try:
                run_git(
                    self.repo_root, "worktree", "remove", "--force", str(self.path), check=False
                )
            finally:
                try:
                    _rmtree(self._holder)
                finally:
                    # Prune drops the admin entry when "remove" failed but the files are gone.
                    run_git(self.repo_root, "worktree", "prune", check=False)
            # Still under the lock: `worktree list` fails on another process's half-done
            # add ("failed to read .git/worktrees/…/commondir"), seen under xdist.
            try:
                left = [p for p in leftover_worktrees(self.repo_root) if Path(p) == self.path]
            except GitError as exc:
                raise IsolationError(
                    f"pytest-advreview: whether the review worktree {self.path} was removed "
                    f"could not be checked ({exc}); check `git worktree list` and remove it "
                    f"with `git worktree remove --force {self.path}`"
                ) from None
        if left or self._holder.exists():
            raise IsolationError(
                f"pytest-advreview: the review worktree {self.path} could not be removed "
                f"completely; remove it with `git worktree remove --force {self.path}` "
                "and `git worktree prune`"
            )
        self._removed = True


def _raise(exc: OSError) -> None:
    raise exc


def _user_base(user: Path) -> tuple[str | None, bytes]:
    """What a mirror of ``user`` starts from: its ``HEAD`` and its staged changes."""
    staged = run_git(user, "diff", "--cached", "--binary", *_DIFF_OPTS, "HEAD").stdout
    return commit(user, "HEAD"), staged


class WorktreePool:
    """The review worktrees of one process, made once and reset between reviews.

    Building a worktree (``git worktree add``, the mirror) and removing it cost more than
    the review's own git calls; a run of many reviews pays them once per review in
    flight instead.  A worktree goes back to the pool after its review only when
    :meth:`Worktree.clean` finds nothing changed in it; it is handed out again only after
    :meth:`Worktree.reset` checked that again and made it the user's tree as it is now.
    Anything else -- the reviewer wrote, deleted, ``chmod``-ed or added a file, moved
    ``HEAD``, touched the git admin folder; the user's ``HEAD`` or staged changes moved;
    git failed -- removes it, and the next review gets a new one.

    :param folder: where the pool's worktrees are made (one per process, in the run's
        directory, so a crashed worker's leftovers go with the run's directory).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._idle: dict[Path, list[Worktree]] = {}
        self._all: list[Worktree] = []
        self._lock = threading.Lock()
        self._closed = False
        #: Worktrees built, handed out again after a reset, and removed as not clean.
        self.made = self.reused = self.discarded = 0

    def acquire(self, repo_root: Path) -> Worktree:
        """A clean worktree mirroring ``repo_root`` now: a reset one, else a new one.

        :raises IsolationError: as :meth:`Worktree.create`, or a discarded worktree could
            not be removed.
        """
        while True:
            with self._lock:
                idle = self._idle.get(repo_root)
                tree = idle.pop() if idle else None
            if tree is None:
                break
            if tree.reset():
                with self._lock:
                    self.reused += 1
                return tree
            self._discard(tree)
        tree = Worktree.create(repo_root, self.folder)
        with self._lock:
            self.made += 1
            self._all.append(tree)
        return tree

    def release(self, tree: Worktree, repo_root: Path) -> None:
        """Take ``tree`` back after its review: kept when clean, else removed.

        :raises IsolationError: a worktree that is not clean could not be removed.
        """
        if not self._closed and tree.clean():
            with self._lock:
                if not self._closed:
                    self._idle.setdefault(repo_root, []).append(tree)
                    return
        self._discard(tree)

    def _discard(self, tree: Worktree) -> None:
        with self._lock:
            self.discarded += 1
        tree.remove()

    def close(self) -> list[str]:
        """Remove every worktree of the pool (idle or never given back); idempotent.

        :returns: a message for each worktree that could not be removed.
        """
        with self._lock:
            self._closed = True
            trees, self._all, self._idle = self._all, [], {}
        problems: list[str] = []
        for tree in trees:
            try:
                tree.remove()
            except IsolationError as exc:
                problems.append(str(exc))
        _rmtree(self.folder)
        return problems

    @staticmethod
    def sweep(run_dir: Path, repo_root: Path) -> None:
        """Remove the pools' folders left in ``run_dir`` by processes that ended without
        closing theirs (a crashed xdist worker), and drop their worktrees from git's list
        (``git worktree prune``).  The controller calls it after its workers ended."""
        left = sorted(run_dir.glob(f"{POOL_PREFIX}*"))
        for folder in left:
            _rmtree(folder)
        if left:
            with _repo_lock(repo_root):
                run_git(repo_root, "worktree", "prune", check=False)


def _changed(top: Path) -> list[str]:
    """Every path of the work tree ``top`` whose content or index entry differs from HEAD,
    and every untracked file git does not ignore."""
    changed: dict[str, None] = {}
    for args in (
        ("diff", "--name-only", "-z", *_DIFF_OPTS, "HEAD"),  # work tree vs HEAD
        ("diff", "--name-only", "-z", "--cached", *_DIFF_OPTS, "HEAD"),  # index vs HEAD
        ("diff", "--name-only", "-z", *_DIFF_OPTS),  # work tree vs index
        ("ls-files", "--others", "--exclude-standard", "-z"),  # untracked, not ignored
    ):
        for name in split_z(run_git(top, *args).stdout):
            changed.setdefault(name, None)
    return list(changed)


def _gitlinks(top: Path, *names: str) -> list[tuple[str, str]]:
    """``(mode oid stage, path)`` of each submodule entry of ``top``'s index (of ``names``)."""
    specs = [f":(literal){n}" for n in names]
    out = run_git(top, "ls-files", "-s", "-z", "--", *specs).stdout
    found = []
    for record in out.split(b"\0"):
        meta, _, path = record.partition(b"\t")
        if meta.startswith(b"160000 "):
            found.append((meta.decode("ascii"), os.fsdecode(path)))
    return found


def _remove_path(path: Path) -> None:
    if path.is_symlink() or (os.path.lexists(path) and not path.is_dir()):
        path.unlink()
    elif path.is_dir():
        _rmtree(path)


def _rmtree(path: Path) -> None:
    """Delete a tree even when the reviewer left read-only files or directories in it."""

    def retry(func: Callable[..., object], target: str, _exc: object) -> None:
        # A read-only directory blocks deleting its entries: make the parent writable.
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(target), stat.S_IRWXU)
            os.chmod(target, stat.S_IRWXU)
        with contextlib.suppress(FileNotFoundError):
            func(target)

    if not os.path.lexists(path):
        return
    try:
        if sys.version_info >= (3, 12):
            shutil.rmtree(path, onexc=retry)
        else:
            shutil.rmtree(path, onerror=retry)
    except OSError:
        pass  # remove() checks what is left and says so


def leftover_worktrees(repo_root: Path, *, ours_only: bool = True) -> list[str]:
    """Paths of the linked worktrees of ``repo_root`` (``git worktree list --porcelain``).

    :param repo_root: a directory of the repository.
    :param ours_only: only worktrees made by :class:`Worktree` (inside a directory named
        ``advreview-wt-*``); ``False`` lists every linked worktree.
    """
    proc = run_git(repo_root, "worktree", "list", "--porcelain", "-z", check=False)
    if proc.returncode == 0:
        records = proc.stdout.split(b"\0")
    else:  # git before 2.36 has no -z; paths with newlines are then misread
        records = run_git(repo_root, "worktree", "list", "--porcelain").stdout.split(b"\n")
    paths = [os.fsdecode(r[len(b"worktree ") :]) for r in records if r.startswith(b"worktree ")]
    linked = paths[1:]  # the first entry is the main work tree
    if ours_only:
        linked = [p for p in linked if Path(p).parent.name.startswith(WORKTREE_PREFIX)]
    return linked
