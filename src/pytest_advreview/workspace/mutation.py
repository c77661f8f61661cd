"""Workspace snapshots before and after a review, and what changed between them (a part
of :mod:`.workspace`, which decides which folder is snapshotted and when).

A review must leave the workspace as it found it, so mutation detection watches two
layers:

* the repository: ``git status --porcelain`` (tracked changes and new untracked files),
  plus a sha256 of every path that status lists, because a file that was already dirty
  before the review and is changed again keeps its status code;
* the review inputs outside the repository (prompt bodies, the materialised plan), by
  sha256.

Files ignored by git are not watched (too costly, and they churn on every test run);
``--advreview-sandbox=read-only`` and the default worktree per review (which holds no
ignored file) are the remedies for sensitive ignored state.  Outside a git work tree only
the inputs are watched.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..cachekey import plan_hash
from ..git import STATUS_V2_ARGS, GitError, parse_status_v2_z, run_git
from ..targets import compile_glob, match_any

__all__ = [
    "Mutation",
    "MutationError",
    "MutationKind",
    "Snapshot",
    "compare",
    "take_snapshot",
]

_PREFIX = "pytest-advreview"
#: Hash value of a path that does not exist (an input deleted, a status entry gone).
MISSING = "missing"

MutationKind = Literal["modified", "added", "deleted", "untracked", "input-changed"]


class MutationError(Exception):
    """The workspace could not be snapshotted (git failed); the message says where."""


@dataclass(frozen=True)
class Snapshot:
    """The watched state of the workspace at one moment.

    :param root: the work tree's top level, ``None`` outside git.
    :param head: the commit ``HEAD`` points at (``None`` outside git or on an unborn
        branch); a reviewer that commits, resets or checks out moves it.
    :param status: top-level-relative path -> porcelain ``XY`` code.
    :param status_hashes: the same paths -> content hash (see :func:`_hash_path`).
    :param inputs: absolute path of each review input -> content hash.
    """

    root: str | None = None
    head: str | None = None
    status: dict[str, str] = field(default_factory=dict)
    status_hashes: dict[str, str] = field(default_factory=dict)
    inputs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Mutation:
    """One change the reviewer made: which path, what kind, and a human detail."""

    path: str
    kind: MutationKind
    detail: str = ""


def _hash_path(path: Path) -> str:
    """sha256 of a file's bytes; ``link:`` + target for a symlink; ``dir`` for a folder.

    Folders appear in status for submodules and nested repositories; their content is
    not hashed (their own status is not ours to watch).
    """
    try:
        info = path.lstat()
    except FileNotFoundError:
        return MISSING
    except OSError as exc:
        return f"unreadable:{exc.errno}"
    if stat.S_ISLNK(info.st_mode):
        target = os.fsencode(os.readlink(path))
        return "link:" + hashlib.sha256(target).hexdigest()
    if stat.S_ISDIR(info.st_mode):
        return "dir"
    try:
        return plan_hash(path)
    except OSError as exc:
        return f"unreadable:{exc.errno}"


def take_snapshot(
    root: Path | None, inputs: Sequence[Path], *, toplevel: Path | None = None
) -> Snapshot:
    """Snapshot the work tree containing ``root`` (if any) and hash the review inputs.

    One ``git status --porcelain=v2 --branch`` (the status entries and ``HEAD``'s commit
    in one call), plus a ``git rev-parse --show-toplevel`` unless ``toplevel`` is given;
    only the files that status lists are read.

    :param root: a directory of the git work tree, or ``None`` to watch inputs only.
    :param inputs: files the reviewer must not change (prompt bodies, plan copies, the
        plan under review); a missing input is recorded as missing.
    :param toplevel: the work tree's top level when the caller knows it already (the
        ``root`` of an earlier snapshot of the same ``root``): saves one git call.
    :raises MutationError: git failed.
    """
    hashed = {str(Path(p).absolute()): _hash_path(Path(p)) for p in inputs}
    if root is None:
        return Snapshot(inputs=hashed)
    try:
        if toplevel is None:
            top_out = run_git(root, "rev-parse", "--show-toplevel").stdout
            toplevel = Path(os.fsdecode(top_out.rstrip(b"\n")))
        out = run_git(root, *STATUS_V2_ARGS).stdout
    except GitError as exc:
        raise MutationError(f"{_PREFIX}: cannot snapshot the workspace: {exc}") from None
    head, entries = parse_status_v2_z(out)
    status = {e.path: e.xy for e in entries}
    hashes = {path: _hash_path(toplevel / path) for path in status}
    return Snapshot(
        root=str(toplevel), head=head, status=status, status_hashes=hashes, inputs=hashed
    )


def _display(path: str, root: str | None) -> str:
    """An input's path relative to the repository when it lives inside it."""
    if root is not None:
        try:
            return Path(path).relative_to(root).as_posix()
        except ValueError:
            pass
    return path


def _commit(head: str | None) -> str:
    """A commit as a message names it: 12 characters (the words of an unborn branch whole)."""
    return head[:12] if head else "an unborn branch"


def _untracked_or_absent(code: str | None) -> bool:
    return code is None or code == "??"


def _status_change(
    path: str, before: str | None, after: str | None, changed_hash: bool
) -> Mutation | None:
    if after is None:
        if before == "??":
            return Mutation(path=path, kind="deleted", detail="untracked file removed")
        return Mutation(
            path=path,
            kind="modified",
            detail=(
                f"was {before!r} before the review and now matches HEAD "
                "(the change was reverted, committed or deleted)"
            ),
        )
    if before is None:
        if after == "??":
            return Mutation(path=path, kind="untracked", detail="new untracked file")
        if "D" in after:
            return Mutation(path=path, kind="deleted", detail=f"tracked file deleted ({after!r})")
        if after[0] == "A":
            return Mutation(
                path=path, kind="added", detail=f"new file added to the index ({after!r})"
            )
        return Mutation(path=path, kind="modified", detail=f"tracked file changed ({after!r})")
    if "D" in after and "D" not in before:
        return Mutation(path=path, kind="deleted", detail=f"status {before!r} -> {after!r}")
    if before != after:
        return Mutation(path=path, kind="modified", detail=f"status {before!r} -> {after!r}")
    if changed_hash:
        what = "untracked file" if after == "??" else "file already changed before the review"
        return Mutation(path=path, kind="modified", detail=f"{what}, changed again")
    return None


def compare(before: Snapshot, after: Snapshot, *, allow_untracked: Sequence[str]) -> list[Mutation]:
    """Everything that changed from ``before`` to ``after``, sorted by path.

    :param allow_untracked: globs (relative to the repository top level, ``**`` for any
        number of folders) of untracked files that may appear, change or vanish without
        counting, such as ``.pytest_cache/**`` and ``**/__pycache__/**``.
    :returns: an empty list when nothing the reviewer must not touch changed.  A review
        input inside the repository is reported once, as ``input-changed``.
    """
    allowed = [compile_glob(g) for g in allow_untracked]
    found: list[Mutation] = []
    reported_inputs: set[str] = set()
    for key in sorted(before.inputs.keys() & after.inputs.keys()):
        old, new = before.inputs[key], after.inputs[key]
        if old == new:
            continue
        shown = _display(key, after.root or before.root)
        reported_inputs.add(shown)
        detail = (
            "review input deleted"
            if new == MISSING
            else "review input created"
            if old == MISSING
            else "review input changed"
        )
        found.append(Mutation(path=shown, kind="input-changed", detail=detail))
    for path in sorted(before.status.keys() | after.status.keys()):
        if path in reported_inputs:
            continue
        old_code, new_code = before.status.get(path), after.status.get(path)
        changed_hash = before.status_hashes.get(path) != after.status_hashes.get(path)
        if old_code == new_code and not changed_hash:
            continue
        untracked = _untracked_or_absent(old_code) and _untracked_or_absent(new_code)
        if untracked and match_any(path, allowed):
            continue
        mutation = _status_change(path, old_code, new_code, changed_hash)
        if mutation is not None:
            found.append(mutation)
    if before.root is not None and before.head != after.head:
        found.append(
            Mutation(
                path="HEAD",
                kind="modified",
                detail=(
                    f"HEAD moved from {_commit(before.head)} to {_commit(after.head)} "
                    "(a commit, reset or checkout)"
                ),
            )
        )
    return sorted(found, key=lambda m: (m.path, m.kind))
