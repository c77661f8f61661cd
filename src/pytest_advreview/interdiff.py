"""What changed in the code change since the last round, and which findings come late.

Round 1 reviews the whole change.  A later run's round re-reviews it after the author
pushed: the reviewer is shown the *interdiff* (the diff from the commit it reviewed last
to the new head), not the whole change again; the whole change stays available by its
diff command.  After a rebase or force-push the old commit is not an ancestor of the new
head: both versions of the branch are compared with ``git range-diff`` when the old
commits are still here, else the change is reviewed whole (and says so).  A working-tree
change has no commit: the sha256 of each changed file tells which files changed.

What a round was shown is kept on its record (:class:`~.models.Changed`), so a finding
raised first in a later round on code unchanged since the round before is marked late
(:func:`late_findings`): it could have been raised earlier, and the reports say so.

Every git failure here degrades to "reviewed whole": a missing old commit (a shallow CI
clone, a pruned force-push) never fails the review and never hides a part of the change.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import hunks
from .git import SHOWN_DIFF_OPTIONS, GitError, literal_pathspec, plain_diff_globals, run_git
from .git import split_z as _split_z
from .models import Changed, ChangedLines, ChangeSet, Location, ReviewedChange, RoundRecord
from .prompts import head_lines

__all__ = ["Interdiff", "late_findings", "reviewed", "since"]

#: The interdiff shown in the prompt is cut after this many lines or characters; the
#: reviewer is told the command that shows all of it.
MAX_LINES = 400
MAX_CHARS = 40_000
#: More changed paths than this and the interdiff is not worth sending: reviewed whole.
MAX_PATHS = 200
_DELETED = "-"
_UNKNOWN = "?"


@dataclass(frozen=True)
class Interdiff:
    """What a re-review of the code change is shown, and the record of it.

    :param changed: kept on the round's record (late findings, the reports).
    :param text: the "Applied" text of the re-review prompt.
    """

    changed: Changed
    text: str


def _git(root: Path, *args: str) -> bytes | None:
    try:
        return run_git(root, *args).stdout
    except GitError:
        return None


def _commit(root: Path, ref: str) -> str | None:
    out = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    found = out.decode().strip() if out is not None else ""
    return found or None


def _digest(path: Path) -> str:
    try:
        if path.is_symlink():
            return hashlib.sha256(b"link\0" + os.fsencode(os.readlink(path))).hexdigest()
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return _DELETED
    except OSError:
        # A directory (a submodule) or an unreadable file: it always counts as changed
        # (:func:`_files`), so no finding in it is ever marked late.
        return _UNKNOWN


def _merge_base(root: Path, one: str, two: str) -> str | None:
    out = _git(root, "merge-base", one, two)
    found = out.decode().split() if out is not None else []
    return found[0] if found else None


def _blobs(root: Path, files: Sequence[str]) -> dict[str, str]:
    """The object id of each of ``files`` in ``HEAD`` (``-`` for a file it deletes).

    Ids need no history: a later round learns which files changed even when the commit
    reviewed before is gone (a force-push), or changed outside the branch's own commits
    (the base moved under a test merge, a merge's own edits).
    """
    out = _git(root, "ls-tree", "-r", "-z", "--full-tree", "HEAD")
    tree: dict[str, str] = {}
    for entry in (out or b"").split(b"\0"):
        meta, tab, path = entry.partition(b"\t")
        if tab:
            tree[os.fsdecode(path)] = meta.split()[2].decode()
    return {f: tree.get(f, _DELETED) for f in files} if out is not None else {}


def _changed_paths(before: ReviewedChange, now: ReviewedChange) -> list[str]:
    """The files whose digest differs (an unreadable one always does)."""
    return sorted(
        p
        for p in set(before.digests) | set(now.digests)
        if before.digests.get(p, _DELETED) != now.digests.get(p, _DELETED)
        or _UNKNOWN in (before.digests.get(p), now.digests.get(p))
    )


def reviewed(root: Path, change: ChangeSet) -> ReviewedChange:
    """The record of ``change`` as this round reviews it: for a branch change the head
    and merge-base commits (of the merged branch when ``HEAD`` is a test merge into the
    base) and each file's object id in ``HEAD``, for a working-tree change each file's
    digest.

    :param root: a directory of the work tree whose ``HEAD`` is the reviewed head.
    """
    record = ReviewedChange.of(change)
    if change.base is not None:
        head = _commit(root, "HEAD")
        base = _merge_base(root, change.base, "HEAD")
        parents = (_git(root, "rev-parse", "HEAD^@") or b"").decode().split()
        if len(parents) == 2 and parents[0] == base:
            # HEAD merges one branch into the base: GitHub's pull_request checkout (the
            # pull request's test merge, made anew on every push, never an ancestor of
            # the next one).  The branch is its second parent: later rounds compare that.
            head, base = parents[1], _merge_base(root, change.base, parents[1])
        digests = _blobs(root, change.files)
        return record.model_copy(update={"head": head, "base": base, "digests": digests})
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None:
        return record
    where = Path(os.fsdecode(top.rstrip(b"\n")))
    return record.model_copy(update={"digests": {f: _digest(where / f) for f in change.files}})


def _shown(root: Path, *args: str) -> str:
    """A read-only diff command for the reviewer, shell-quoted (as the change's own).

    :raises GitError: git could not be started.
    """
    return shlex.join(["git", *plain_diff_globals(root), "diff", *SHOWN_DIFF_OPTIONS, *args])


def _ranges(patch: bytes) -> dict[str, tuple[tuple[int, int], ...]]:
    """The changed line ranges of the new side of a ``-U0`` patch, per file."""
    return {path: tuple(h.changed for h in found) for path, found in hunks.parse(patch).items()}


def _cut(text: str, command: str) -> str:
    lines = text.rstrip("\n").split("\n")
    shown = head_lines(lines, max_lines=MAX_LINES, max_chars=MAX_CHARS)
    if len(shown) < len(lines):
        shown.append(
            f"[cut: {len(lines) - len(shown)} of {len(lines)} lines not shown; "
            f"run `{command}` and read the rest before you approve]"
        )
    return "\n".join(shown)


def _whole(before: ReviewedChange, round_no: int, why: str, change: ChangeSet) -> Interdiff:
    commands = " and ".join(f"`{c}`" for c in change.diff_commands) or "`git diff`"
    text = (
        f"The code change was updated since your last review (round {round_no}); {why}, "
        f"so review the change whole again: run {commands} to see it."
    )
    changed = Changed(since_round=round_no, how="whole", before=before.files, note=why)
    return Interdiff(changed=changed, text=text)


def _listing(paths: Sequence[str]) -> str:
    return "<changed_files>\n" + "\n".join(paths) + "\n</changed_files>"


def _whole_command(change: ChangeSet) -> str:
    commands = " and ".join(f"`{c}`" for c in change.diff_commands) or "`git diff`"
    return (
        f"The whole change is still under review: run {commands} (read-only) to see "
        "all of it, and judge what changed in its context."
    )


def _interdiff(
    root: Path, before: ReviewedChange, now: ReviewedChange, change: ChangeSet, round_no: int
) -> Interdiff:
    assert before.head is not None and now.head is not None
    old, new = before.head, now.head
    scope = set(before.files) | set(now.files)
    names = _git(root, "diff", "--name-only", "-z", "--no-renames", old, new, "--")
    if names is None:
        return _whole(before, round_no, f"git cannot diff {old[:12]}..{new[:12]}", change)
    # Only the change's own files: a merge of the base into the branch brings the base's
    # commits, which are no part of the change.
    paths = sorted(p for p in _split_z(names) if p in scope)
    if len(paths) > MAX_PATHS:
        return _whole(before, round_no, f"{len(paths)} files changed since then", change)
    specs = [literal_pathspec(p) for p in paths]
    ranges = (
        _ranges(_git(root, "diff", "-U0", *SHOWN_DIFF_OPTIONS, old, new, "--", *specs) or b"")
        if paths
        else {}
    )
    # Files whose content under review changed outside the branch's own commits: the
    # base moved under a test merge, or a merge brought its own edits.  Read whole.
    extra = [p for p in _changed_paths(before, now) if p not in paths] if before.digests else []
    files = tuple(ChangedLines(path=p, lines=ranges.get(p) or None) for p in paths)
    files += tuple(ChangedLines(path=p) for p in extra)
    changed = Changed(since_round=round_no, how="interdiff", before=before.files, files=files)
    head = (
        f"The code change was updated since your last review (round {round_no} reviewed "
        f"commit {old[:12]}; the head is now {new[:12]})."
    )
    outside = (
        "These files of the change changed too, but not in the branch's own commits (a "
        f"merge, or the base moved): read them whole:\n{_listing(extra)}\n"
        if extra
        else ""
    )
    if not paths:
        said = "" if extra else "No file of the change changed since then.\n"
        text = f"{head}\n{said}{outside}{_whole_command(change)}"
        return Interdiff(changed=changed, text=text)
    command = _shown(root, old, new, "--", *specs)
    patch = _git(
        root, *plain_diff_globals(root), "diff", *SHOWN_DIFF_OPTIONS, old, new, "--", *specs
    )
    body = _cut((patch or b"").decode("utf-8", "replace"), command)
    text = (
        f"{head}\nFiles changed since then:\n{_listing(paths)}\n"
        f"What changed since your last review (the interdiff, `{command}`):\n"
        f"<interdiff>\n{body}\n</interdiff>\n{outside}"
        "Review what changed first: did it resolve the findings it answers, and did it "
        f"introduce new issues? {_whole_command(change)}"
    )
    return Interdiff(changed=changed, text=text)


def _range_diff(
    root: Path, before: ReviewedChange, now: ReviewedChange, change: ChangeSet, round_no: int
) -> Interdiff:
    assert before.head is not None and now.head is not None
    old = f"{before.base}..{before.head}"
    new = f"{now.base}..{now.head}"
    why = (
        f"the commit it reviewed ({before.head[:12]}) is not an ancestor of the new head "
        f"{now.head[:12]} (a rebase or force-push)"
    )
    if before.base is None or now.base is None or _commit(root, before.head) is None:
        return _files_or_whole(
            before, now, change, round_no, why + " and the old commits are not here"
        )
    out = _git(root, "range-diff", "--no-color", old, new)
    if out is None:
        return _files_or_whole(before, now, change, round_no, why + " and git range-diff failed")
    command = f"git range-diff {old} {new}"
    body = _cut(out.decode("utf-8", "replace"), command)
    paths = _changed_paths(before, now) if before.digests else []
    changed = Changed(
        since_round=round_no,
        how="range-diff",
        before=before.files,
        files=tuple(ChangedLines(path=p) for p in paths),
        note=f"{why}; {command}",
    )
    listed = f"Files of the change whose content changed:\n{_listing(paths)}\n" if paths else ""
    text = (
        f"The code change was updated since your last review (round {round_no}): {why}.\n"
        f"{listed}Both versions of the branch compared (`{command}`):\n"
        f"<range_diff>\n{body}\n</range_diff>\n"
        f"Commits can have changed anywhere: {_whole_command(change)}"
    )
    return Interdiff(changed=changed, text=text)


def _files(
    before: ReviewedChange,
    now: ReviewedChange,
    change: ChangeSet,
    round_no: int,
    why: str | None = None,
) -> Interdiff:
    """The files whose content changed: a working-tree change (``why`` ``None``: it keeps
    no earlier version), or a branch whose earlier commit cannot be compared (``why``)."""
    paths = _changed_paths(before, now)
    changed = Changed(
        since_round=round_no,
        how="files",
        before=before.files,
        files=tuple(ChangedLines(path=p) for p in paths),
        note=why,
    )
    head = f"The code change was updated since your last review (round {round_no})" + (
        f": {why}." if why else "."
    )
    if not paths:
        text = f"{head}\nNo file of it changed since then.\n{_whole_command(change)}"
        return Interdiff(changed=changed, text=text)
    reason = "" if why else " (the working tree keeps no earlier version to diff against)"
    text = (
        f"{head}\nThese files changed since then{reason}; read them whole:\n"
        f"{_listing(paths)}\n{_whole_command(change)}"
    )
    return Interdiff(changed=changed, text=text)


def _files_or_whole(
    before: ReviewedChange, now: ReviewedChange, change: ChangeSet, round_no: int, why: str
) -> Interdiff:
    """The files whose content changed when both rounds kept their digests, else whole."""
    if before.digests and now.digests:
        return _files(before, now, change, round_no, why)
    return _whole(before, round_no, why, change)


def since(
    root: Path,
    before: ReviewedChange,
    now: ReviewedChange,
    change: ChangeSet,
    *,
    round_no: int,
) -> Interdiff:
    """What the re-review of ``change`` is shown: what changed since round ``round_no``
    reviewed ``before`` (the interdiff, a range-diff, the changed files, or "whole").

    :param root: a directory of the work tree (its objects hold both heads, or not).
    :param now: :func:`reviewed` of the change this run reviews.
    """
    try:
        if before.head is not None and now.head is not None:
            if before.head == now.head:
                return _interdiff(root, before, now, change, round_no)
            if _commit(root, before.head) is None:
                why = (
                    f"the commit it reviewed ({before.head[:12]}) is not in this clone (a "
                    "force-push, or too little history fetched), so there is no interdiff"
                )
                return _files_or_whole(before, now, change, round_no, why)
            try:
                run_git(root, "merge-base", "--is-ancestor", before.head, now.head)
            except GitError:
                return _range_diff(root, before, now, change, round_no)
            return _interdiff(root, before, now, change, round_no)
        if before.head is None and now.head is None and before.digests and now.digests:
            # Two working-tree changes (a commit's object ids and a file's sha256 differ).
            return _files(before, now, change, round_no)
        why = "the earlier round's change is not comparable with this one"
    except GitError as exc:  # git could not be started: nothing to compare with
        why = f"git failed: {exc}"
    return _whole(before, round_no, why, change)


def _path(location: Location | None) -> str | None:
    if location is None or not location.file:
        return None
    path = location.file.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def _unchanged(location: Location, changed: Changed) -> bool:
    """Whether ``location`` cites code the round before reviewed and nothing changed."""
    path = _path(location)
    if path is None or path not in changed.before:
        return False
    entry = next((f for f in changed.files if f.path == path), None)
    if entry is None:
        return True
    if entry.lines is None or not location.has_line:
        return False
    start = location.line_start or 0
    end = location.line_end or start
    return all(end < first or start > last for first, last in entry.lines)


def late_findings(rounds: Sequence[RoundRecord]) -> tuple[str, ...]:
    """Ids of findings first raised in a later round on code unchanged since the round
    before: the file was in the change then, and neither it nor (when lines are known)
    the cited lines changed since.  Rounds that reviewed the change whole mark none.
    """
    seen: set[str] = set()
    late: dict[str, None] = {}
    for record in rounds:
        review = record.review
        if review is None:
            continue
        changed = record.changed
        if changed is not None and changed.how in ("interdiff", "files"):
            for finding in review.findings:
                if finding.id in seen or finding.location is None:
                    continue
                if _unchanged(finding.location, changed):
                    late[finding.id] = None
        seen.update(f.id for f in review.findings)
    return tuple(late)
