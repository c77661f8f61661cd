"""The changed hunks of a diff, and which findings lie outside all of them (pre-existing).

The one parser of a unified diff's hunks (:func:`parse`): the interdiff of a later round
(:mod:`.interdiff`), the pull-request review (:mod:`.report.pr_review`) and the
pre-existing findings of the code item (:func:`pre_existing`) read hunks with it.

A finding of the code item is *pre-existing* when the place it cites lies outside every
changed hunk of the change under review, decided from the diff alone (no model is
asked).  It fails closed: a finding is pre-existing only when that is certain, so each
doubt leaves it an ordinary finding:

* no file, or no usable line (none, below 1, a range that ends before it starts);
* a path that is not exactly one of the change's files once ``./`` and doubled ``/``
  are dropped: an absolute path, a ``..`` segment (``a/../a.py`` is ``a.py`` only when
  ``a`` is no symlink), a backslash, another spelling, or a file the diff does not
  touch (nothing says the reviewer's path names that file of this tree);
* a file whose new text has no known length (binary, a symlink, a submodule, unreadable,
  an unborn branch, a name git quotes, a branch file edited in the work tree since
  ``HEAD``) or that the change adds, deletes or renames
  (renames are off: a renamed file is deleted and added whole);
* a file with no parsed hunk at all (a mode change: the diff says nothing of its lines);
* a cited line past the end of the file's new text;
* a cited range that touches a hunk on either side of the diff: the new side's lines,
  and the old side's too, since a reviewer may cite a deleted line by its old number; a
  hunk that only adds or only deletes marks the lines on both sides of where it did.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .git import (
    SHOWN_DIFF_OPTIONS,
    GitError,
    literal_pathspec,
    plain_diff_globals,
    run_git,
    split_z,
)
from .models import ChangeSet, Finding, Location

__all__ = ["FileHunks", "Hunk", "Hunks", "of_change", "parse", "pre_existing"]

_HEADER = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
#: A line range, first and last (1-based, both included).
Range = tuple[int, int]


@dataclass(frozen=True)
class Hunk:
    """One hunk of a ``-U0`` diff, as its header says: where it starts on each side and
    how many lines it has there (0: it only adds, or only deletes, there)."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int

    @property
    def sides(self) -> tuple[Range, Range]:
        """The lines it touches in the old and in the new text.  A side without lines
        marks the line before and the line after where the change happened, so a place
        right next to an insertion or a deletion is never "outside" it."""
        return _side(self.old_start, self.old_count), _side(self.new_start, self.new_count)

    @property
    def changed(self) -> Range:
        """The new text's changed lines as a later round's interdiff records them (a pure
        deletion marks the line where it happened)."""
        return (max(self.new_start, 1), self.new_start + max(self.new_count, 1) - 1)


def _side(start: int, count: int) -> Range:
    if count == 0:
        # ``-5,0``: inserted after line 5 (``-0,0``: before the first).
        return (max(start, 1), start + 1)
    return (start, start + count - 1)


def parse(patch: bytes, *, file: str | None = None) -> dict[str, tuple[Hunk, ...]]:
    """The hunks of each file of a unified diff (``git diff -U0``), by new path.

    A file named on a ``+++ b/PATH`` line only (``/dev/null`` and a quoted name are no
    path here, so their hunks are nobody's).  The lines of a hunk are counted off its
    header, so a changed line that reads like a header (``+++ b/x``, ``@@ …``) is
    content, never a new file or hunk.

    :param file: the path of a patch of one file without file headers (the pull-request
        files API's ``patch``).
    """
    found: dict[str, list[Hunk]] = {} if file is None else {file: []}
    current: str | None = file
    old_left = new_left = 0
    for line in patch.split(b"\n"):
        # A line of a hunk starts with " ", "+", "-" or "\\": one that starts a file or a
        # hunk is never content, whatever a short hunk before it claimed.
        if line.startswith(b"diff --git "):
            current, old_left, new_left = None, 0, 0
        elif (match := _HEADER.match(line)) is not None:
            old_start, old_count = int(match.group(1)), int(match.group(2) or 1)
            new_start, new_count = int(match.group(3)), int(match.group(4) or 1)
            old_left, new_left = old_count, new_count
            if current is not None:
                found[current].append(Hunk(old_start, old_count, new_start, new_count))
        elif old_left > 0 or new_left > 0:
            marker = line[:1]
            if marker == b"-":
                old_left -= 1
            elif marker == b"+":
                new_left -= 1
            elif marker == b" ":
                old_left -= 1
                new_left -= 1
            # ``\ No newline at end of file`` counts for neither side.
        elif line.startswith(b"+++ "):
            name = line[4:].decode("utf-8", "surrogateescape")
            current = name[2:] if name.startswith("b/") else None
            if current is not None:
                found.setdefault(current, [])
    return {path: tuple(h) for path, h in found.items()}


@dataclass(frozen=True)
class FileHunks:
    """One file of the change under review.

    :param hunks: its hunks, ``()`` when the diff showed none (a mode change, a file git
        does not diff here).
    :param lines: the number of lines of its new text; ``None``: not known for certain
        (new, deleted, untracked, binary, a symlink or submodule, unreadable).
    """

    hunks: tuple[Hunk, ...] = ()
    lines: int | None = None


#: The change's files by their path relative to the top level.
Hunks = Mapping[str, FileHunks]


def _line_count(data: bytes) -> int | None:
    if b"\0" in data:
        return None  # binary: no line a reviewer cites means anything certain
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _blob_lines(top: Path, paths: Sequence[str]) -> dict[str, int]:
    """The line count of each of ``paths`` in ``HEAD``, in one ``git grep -c``: a text
    file's lines (git skips binary files, symlinks and submodules, and finds no line in
    an empty file, so none of them has a count)."""
    specs = [literal_pathspec(p) for p in paths]
    grep = ("grep", "--no-color", "-z", "-c", "-I", "-e", "", "HEAD", "--", *specs)
    out = run_git(top, *grep, check=False).stdout
    # ``HEAD:NAME\0COUNT\n`` per file: a name may hold a newline, a count never does.
    parts = out.split(b"\0")
    counts: dict[str, int] = {}
    name = parts[0]
    for part in parts[1:]:
        count, _, following = part.partition(b"\n")
        if name.startswith(b"HEAD:") and count.isdigit():
            counts[os.fsdecode(name[5:])] = int(count)
        name = following
    return counts


def _file_lines(top: Path, paths: Sequence[str]) -> dict[str, int]:
    """The line count of each of ``paths`` in the work tree (a regular file only)."""
    counts: dict[str, int] = {}
    for path in paths:
        where = top / path
        try:
            if where.is_symlink() or not where.is_file():
                continue
            count = _line_count(where.read_bytes())
        except OSError:
            continue
        if count is not None:
            counts[path] = count
    return counts


def of_change(root: Path, change: ChangeSet) -> dict[str, FileHunks]:
    """The hunks and new line count of each file of ``change``, from one ``-U0`` diff.

    Branch mode diffs ``BASE...HEAD`` and counts ``HEAD``'s blobs; uncommitted mode
    diffs the work tree against ``HEAD`` and counts the work tree's files (an untracked
    file is not in that diff: no hunk, no count, so nothing in it is pre-existing).  Any
    git failure leaves every file unknown, which marks nothing pre-existing.

    :param root: a directory of the work tree reviewed.
    """
    files = list(change.files)
    unknown = {p: FileHunks() for p in files}
    if not files:
        return unknown
    try:
        top = Path(os.fsdecode(run_git(root, "rev-parse", "--show-toplevel").stdout.rstrip(b"\n")))
        specs = ["--", *(literal_pathspec(p) for p in files)]
        if change.base is not None:
            against = f"{change.base}...HEAD"
        elif run_git(top, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode:
            return unknown  # an unborn branch: every file is new
        else:
            against = "HEAD"
        globals_ = plain_diff_globals(top)
        patch = run_git(top, *globals_, "diff", "-U0", *SHOWN_DIFF_OPTIONS, against, *specs)
        parsed = parse(patch.stdout)
        if change.base is not None:
            counts = _blob_lines(top, files)
            # The reviewer reads the work tree: a file edited there since HEAD (a lead's
            # edit, the author's) has lines that neither the diff nor HEAD's blob know.
            edited = run_git(top, "diff", "--name-only", "-z", "--no-renames", "HEAD", *specs)
            for path in split_z(edited.stdout):
                counts.pop(path, None)
        else:
            counts = _file_lines(top, files)
    except GitError:
        return unknown
    return {p: FileHunks(hunks=parsed.get(p, ()), lines=counts.get(p)) for p in files}


def _path(file: str) -> str | None:
    """``file`` as the diff names it, or ``None`` when it cannot be said for certain."""
    if "\\" in file or file.startswith("/"):
        return None
    parts = [part for part in file.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def _placed(location: Location | None, hunks: Hunks) -> bool:
    """Whether ``location`` lies outside every hunk of its file, for certain."""
    if location is None or not location.file or not location.has_line:
        return False
    path = _path(location.file)
    entry = hunks.get(path) if path is not None else None
    if entry is None or entry.lines is None or not entry.hunks:
        return False
    start = location.line_start or 0
    end = location.line_end if location.line_end is not None else start
    if end > entry.lines:
        return False
    return not any(
        start <= last and end >= first for hunk in entry.hunks for first, last in hunk.sides
    )


def pre_existing(findings: Iterable[Finding], hunks: Hunks) -> tuple[str, ...]:
    """Ids of ``findings`` placed outside every changed hunk of ``hunks`` for certain
    (the module's docstring lists what leaves a finding an ordinary one)."""
    return tuple(dict.fromkeys(f.id for f in findings if _placed(f.location, hunks)))
