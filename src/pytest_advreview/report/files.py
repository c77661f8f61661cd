"""Writing report files: atomically, creating parent folders, and locating findings in them.

A report is replaced whole (:func:`write_atomic`: a temporary file in the same folder,
then :func:`os.replace`), so a reader such as an upload step never sees half a file.

:class:`Anchors` turns a finding's location into a repo-relative path and line range:
the file the reviewer named, else the plan, with the line of the named section when the
plan has a heading of that name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .. import atomic
from ..models import Finding, ItemRecord
from ..parse.markdown import code_mask

__all__ = ["Anchor", "Anchors", "find_repo_root", "write_atomic"]

#: Mode of a new report file; a temporary file is created 0600, a report is for everyone.
_REPORT_MODE = 0o644


def write_atomic(path: Path, text: str) -> None:
    """Replace the report ``path`` with ``text`` in one rename, creating missing folders.

    :raises OSError: the folder cannot be created or written, or ``path`` is a folder.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_atomic(path, text, mode=_REPORT_MODE)


def find_repo_root(start: Path) -> Path:
    """The nearest folder at or above ``start`` that holds ``.git``; ``start`` without one.

    Record paths are relative to the repository root (the reviewer's working folder), and
    so are the URIs of SARIF and the ``file`` of GitHub annotations.
    """
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


@dataclass(frozen=True)
class Anchor:
    """Where a finding points: a repo-relative posix path and 1-based lines, when known."""

    path: str | None = None
    line_start: int | None = None
    line_end: int | None = None


_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_NUMBERING = re.compile(r"^(?:§\s*)?(?:\d+(?:\.\d+)*\.?|[A-Z]\.)\s+")
_WS = re.compile(r"\s+")


def _norm_heading(text: str) -> str:
    """Lower-case heading text without markup, numbering or extra spaces."""
    text = text.replace("`", "").replace("*", "").strip()
    text = _NUMBERING.sub("", text)
    return _WS.sub(" ", text).strip().lower()


def section_line(text: str, section: str) -> int | None:
    """The 1-based line of the heading named ``section`` in markdown ``text``, if any.

    An exact heading (ignoring case, markup and numbering such as ``3.``) wins; else the
    first heading that contains the name.  A path such as ``Rollout > Step 2`` is looked
    up by its last part.  Headings inside fenced code blocks do not count.
    """
    wanted = _norm_heading(re.split(r"\s*(?:>|/|»|→)\s*", section.strip())[-1])
    if not wanted:
        return None
    lines = text.splitlines()
    code = code_mask([line.strip() for line in lines])
    headings = [
        (number, _norm_heading(match.group(1)))
        for number, (line, fenced) in enumerate(zip(lines, code, strict=True), start=1)
        if not fenced and (match := _HEADING.match(line))
    ]
    exact = next((number for number, heading in headings if heading == wanted), None)
    return exact or next((number for number, heading in headings if wanted in heading), None)


class Anchors:
    """Resolves finding locations against one repository, reading each plan once."""

    def __init__(self, repo_root: Path, read: Callable[[str], str | None] | None = None) -> None:
        """:param read: reads a repo-relative file first (the Action reads the reviewed
        head's with ``git show``); what it cannot read is the file under ``repo_root``."""
        self.repo_root = repo_root
        self._read = read
        self._texts: dict[str, str | None] = {}

    def _from_disk(self, relpath: str) -> str | None:
        try:
            return (self.repo_root / relpath).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def _text(self, relpath: str) -> str | None:
        if relpath not in self._texts:
            found = self._read(relpath) if self._read is not None else None
            self._texts[relpath] = found if found is not None else self._from_disk(relpath)
        return self._texts[relpath]

    def relative(self, name: str) -> str | None:
        """``name`` as a clean repo-relative posix path; ``None`` when it leaves the repo.

        Reviewers write ``./app.py``, ``src\\app.py`` or an absolute path; all become
        ``app.py``-style paths.  A path outside the repository cannot be annotated.
        """
        name = name.strip().strip("`").replace("\\", "/")
        if not name:
            return None
        if name.startswith("/"):
            try:
                name = Path(name).resolve().relative_to(self.repo_root.resolve()).as_posix()
            except (ValueError, OSError):
                return None
        parts = [p for p in PurePosixPath(name).parts if p not in (".", "")]
        if not parts or ".." in parts:
            return None
        return "/".join(parts)

    def of(self, record: ItemRecord, finding: Finding) -> Anchor:
        """The anchor of ``finding`` of ``record``.

        The file the finding names (with its lines) wins; otherwise the item's plan, at
        the finding's lines, or at the heading of its section when that can be found.
        """
        loc = finding.location
        if loc is not None and loc.file:
            path = self.relative(loc.file)
            if path is not None:
                return _anchor(path, loc.line_start, loc.line_end)
        plan = self.relative(record.path) if record.path is not None else None
        if plan is None:
            return Anchor()
        if loc is not None and loc.line_start is not None:
            return _anchor(plan, loc.line_start, loc.line_end)
        if loc is not None and loc.section:
            text = self._text(plan)
            line = section_line(text, loc.section) if text is not None else None
            if line is not None:
                return Anchor(plan, line, line)
        return Anchor(plan)

    def placed(
        self, record: ItemRecord, finding: Finding, fallback_path: str | None
    ) -> tuple[Anchor, str | None]:
        """:meth:`of`, else ``fallback_path`` (the pytest configuration file) for a finding
        that names no place, with the note saying so: a report that needs a file for every
        entry (SARIF, rdjson) still shows it."""
        anchor = self.of(record, finding)
        if anchor.path is None and fallback_path is not None:
            return Anchor(fallback_path), f"No file was named; anchored at {fallback_path}."
        return anchor, None


def _anchor(path: str, start: int | None, end: int | None) -> Anchor:
    # Neither SARIF, GitHub nor reviewdog takes a line below 1, and a range that ends
    # before it starts is no range (the parsers drop both; a stored record may hold one):
    # such a finding points at the file.
    if start is None or start < 1 or (end is not None and end < start):
        return Anchor(path)
    return Anchor(path, start, end if end is not None else start)
