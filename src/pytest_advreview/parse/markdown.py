"""The markdown contract: verdict line, finding blocks, fields and locations.

Parsing never raises: anything the reviewer writes becomes a best-effort
:class:`~pytest_advreview.models.Review` whose ``raw`` is the text verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from ..constants import VERDICT_APPROVED, VERDICT_REVISE
from ..models import Finding, Location, Review, Severity, Verdict, finding_id

_T = TypeVar("_T")


def _fenced_blocks(stripped_lines: Sequence[str]) -> list[tuple[int, int | None, str]]:
    """``(first, last, fence)`` of each fenced code block; ``last`` is ``None`` if unclosed.

    Indexes are 0-based and include the fence lines.
    """
    # Fences are recognised at any indentation: reviewers indent them inside list items,
    # and treating a little too much as code only hides tokens, it never invents them.
    blocks: list[tuple[int, int | None, str]] = []
    fence = ""
    start = 0
    for index, stripped in enumerate(stripped_lines):
        if fence:
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                blocks.append((start, index, fence))
                fence = ""
            continue
        head = stripped[:3]
        if head in ("```", "~~~"):
            run = len(stripped) - len(stripped.lstrip(head[0]))
            # A backtick fence's info string has no backticks: "```x```" is inline code.
            if head[0] == "~" or "`" not in stripped[run:]:
                fence = stripped[:run]
                start = index
    if fence:
        blocks.append((start, None, fence))
    return blocks


def code_mask(stripped_lines: Sequence[str]) -> list[bool]:
    """Which lines (already stripped) are fenced code, fence lines included."""
    mask = [False] * len(stripped_lines)
    for first, last, _fence in _fenced_blocks(stripped_lines):
        end = len(stripped_lines) - 1 if last is None else last
        mask[first : end + 1] = [True] * (end + 1 - first)
    return mask


def _dedent(line: str, count: int) -> str:
    """``line`` without up to ``count`` leading spaces (CommonMark's fenced-code rule)."""
    return line[min(count, len(line) - len(line.lstrip(" "))) :]


def split_suggestion(text: str | None) -> tuple[str | None, str | None]:
    """``text`` without its first ```` ```suggestion ```` block, and that block's content.

    The block is GitHub's own form for replacement text ("suggested change"), so reviewers
    already write it; its content replaces exactly the lines the finding cites.  Only a
    closed block counts (an unclosed one is ordinary text), and only the first; the
    content keeps its indentation beyond the fence's own.  ``(text, None)`` when there is none.
    """
    if not text:
        return text, None
    lines = text.split("\n")
    stripped = [line.strip() for line in lines]
    for first, last, fence in _fenced_blocks(stripped):
        info = stripped[first][len(fence) :].strip().lower()
        if last is None or info != "suggestion":
            continue
        # Inside a list item the block is indented; its content is relative to the fence.
        indent = len(lines[first]) - len(lines[first].lstrip(" "))
        body = "\n".join(_dedent(line, indent) for line in lines[first + 1 : last])
        rest = "\n".join([*lines[:first], *lines[last + 1 :]]).strip()
        return rest or None, body
    return text, None


_VERDICTS = {VERDICT_APPROVED: Verdict.APPROVED, VERDICT_REVISE: Verdict.REVISE}


def _verdict(doc: _Doc) -> Verdict | None:
    last = next((i for i in reversed(range(len(doc))) if doc.stripped[i]), None)
    return None if last is None or doc.code[last] else _VERDICTS.get(doc.stripped[last])


# --------------------------------------------------------------------------------------
# The markdown contract: severity tokens, fields, locations

_SEV_BRACKET = re.compile(
    r"\[[ \t]*severity[ \t]*:[ \t]*(critical|high|medium|low)[ \t]*\]", re.IGNORECASE
)
# ``**Severity:** High``, ``**Severity**: high``, ``Severity: HIGH``.  The optional
# emphasis group must start with a marker, so the two whitespace runs never compete.
_SEV_LABEL = re.compile(
    r"\bseverity(?:[*_]{1,2})?[ \t]*:(?:[ \t]*[*_`]{1,2})?[ \t]*(critical|high|medium|low)\b",
    re.IGNORECASE,
)
_SEV_VALUE = re.compile(r"[ \t*_`\[(]*(critical|high|medium|low)\b", re.IGNORECASE)
_LIST_MARKER = re.compile(r"(?:[-*+]|\d{1,3}[.)])[ \t]+")
_HEADING = re.compile(r"(#{1,6})(?:[ \t]+(.*))?$")
# A list marker, if any, must be followed by a blank, so "**Impact" never reads as "* ".
_FIELD = re.compile(
    r"(?:(?:[-*+]|\d{1,3}[.)])[ \t]+)?[*_]{0,2}[ \t]*"
    r"(?P<label>section|files?|location|lines?|what can go wrong"
    r"|why (?:is (?:this|the) (?:plan|code|change) )?vulnerable|impact|recommendation"
    r"|suggested fix|fix|severity|confidence)"
    r"(?:[*_]{1,2}[ \t]*[:?—–]|[ \t]*[:?—–])[*_]{0,2}",
    re.IGNORECASE,
)
_NUMBERING = re.compile(
    r"(?:finding[ \t]*#?\d{1,3}|#\d{1,3}|\d{1,3}[.)])(?:[ \t]*[:.)—–-])?(?:[ \t]+|$)",
    re.IGNORECASE,
)
_EMPTY_BRACKETS = re.compile(r"\([ \t]*\)|\[[ \t]*\]")
_LINES_WORD = re.compile(
    r"\blines?[ \t]*(\d{1,9})(?:[ \t]*(?:-|–|—|to|through)[ \t]*(\d{1,9}))?", re.IGNORECASE
)
_COLON_LINES = re.compile(r":(\d{1,9})(?:[-–—](\d{1,9}))?")
_HASH_LINES = re.compile(r"#L(\d{1,9})(?:[-–—]L?(\d{1,9}))?")
_PATHISH = re.compile(r"[/\\]|\.[A-Za-z][A-Za-z0-9]{0,7}$")
_SECTION_NAMES = {
    "summary": "summary",
    "overall assessment": "summary",
    "findings": "findings",
    "finding": "findings",
    "key findings": "findings",
    "detailed findings": "findings",
    "verdict": "verdict",
    "final verdict": "verdict",
}
_FIELD_KEYS = {
    "section": "section",
    "file": "file",
    "files": "file",
    "location": "location",
    "line": "lines",
    "lines": "lines",
    "what can go wrong": "what",
    "impact": "impact",
    "recommendation": "recommendation",
    "suggested fix": "recommendation",
    "fix": "recommendation",
    "severity": "severity",
    "confidence": "confidence",
}
#: The one form of a confidence (``0.8``, ``1``, ``0``, ``.75``): a number from 0 to 1.
_CONFIDENCE = re.compile(r"(?:0(?:\.\d{1,6})?|1(?:\.0{1,6})?|\.\d{1,6})")
_UNTITLED = "untitled finding"
_SEPARATORS = " \t-–—:|"


def _strip_list(stripped: str) -> str:
    m = _LIST_MARKER.match(stripped)
    return stripped[m.end() :] if m else stripped


def _heading(stripped: str) -> tuple[int, str] | None:
    if not stripped.startswith("#"):
        return None
    m = _HEADING.match(stripped)
    if not m:
        return None
    title = (m.group(2) or "").strip()
    # A closing ``###`` sequence needs a space before it ("C#" keeps its hash).
    if title.endswith("#"):
        bare = title.rstrip("#")
        if not bare or bare[-1] in " \t":
            title = bare.strip()
    return len(m.group(1)), title


def _field(stripped: str) -> tuple[str, str] | None:
    m = _FIELD.match(stripped)
    if not m:
        return None
    label = m.group("label").lower()
    key = "why" if label.startswith("why") else _FIELD_KEYS[label]
    return key, stripped[m.end() :].strip()


def _severity_token(text: str) -> str | None:
    m = _SEV_BRACKET.search(text) or _SEV_LABEL.search(text)
    return m.group(1).lower() if m else None


def _section_name(stripped: str) -> tuple[str, int] | None:
    """``(name, heading level)`` of a Summary/Findings/Verdict line; level 0 if not a heading."""
    heading = _heading(stripped)
    level, text = heading if heading else (0, stripped)
    if not heading and not (
        (text.startswith("**") and text.endswith("**")) or text.endswith(":") or len(text) < 24
    ):
        return None
    norm = text.replace("*", "").replace("_", "").strip().rstrip(":").strip()
    m = _NUMBERING.match(norm)
    if m:
        norm = norm[m.end() :]
    name = _SECTION_NAMES.get(norm.strip().lower())
    return (name, level) if name else None


def _clean_title(text: str) -> str:
    for pattern in (_SEV_BRACKET, _SEV_LABEL):
        text = pattern.sub(" ", text)
    text = text.replace("**", "").replace("__", "")
    text = _EMPTY_BRACKETS.sub(" ", text)
    text = text.strip().strip("*").lstrip(_SEPARATORS)
    m = _NUMBERING.match(text)
    if m:
        text = text[m.end() :]
    text = text.strip().strip("*").strip(_SEPARATORS).strip()
    return " ".join(text.split()) or _UNTITLED


def _split_path_token(token: str) -> tuple[str, int | None, int | None]:
    token = token.strip(",;()[]\"'")
    for pattern in (_HASH_LINES, _COLON_LINES):
        m = pattern.search(token)
        if m and m.start() > 0:
            end = int(m.group(2)) if m.group(2) else None
            return token[: m.start()], int(m.group(1)), end
    return token, None, None


_QUOTED_PATH = re.compile(r"^`([^`]+)`")


def split_place(value: str, *, spaced: bool = False) -> tuple[str | None, int | None, int | None]:
    """``(path, first line, last line)`` of a place as reviewers write it.

    The one parser of a cited place, for both contracts: ``path:12``, ``path:12-14``,
    ``path#L9``, ``path#L9-L10``, ``path lines 9-10``, ``path line 9``, ``lines 9-10``,
    and a path in backticks, which may hold spaces (```my dir/a.py` line 3``).  With
    ``spaced`` (the JSON contract's ``file`` field) the whole text before a ``line(s)``
    word is the path, spaces included.  Lines are returned as written; :func:`_location`
    drops the ones that are no line.
    """
    value = value.replace("**", "").strip()
    quoted = _QUOTED_PATH.match(value)
    plain = value.replace("`", "")
    if quoted:
        token, rest = quoted.group(1).strip(), value[quoted.end() :]
    elif spaced:
        words = _LINES_WORD.search(plain)
        token = (plain[: words.start()] if words else plain).strip().rstrip(",;(").strip()
        rest = plain
    else:
        tokens = plain.split(maxsplit=1)
        token, rest = (tokens[0] if tokens else ""), plain
    path: str | None = None
    start = end = None
    if token and token.lower().strip(",;()") not in {"line", "lines", "l"}:
        path, start, end = _split_path_token(token)
        path = path.strip() or None
    if start is None:
        m = _LINES_WORD.search(rest)
        if m:
            start = int(m.group(1))
            end = int(m.group(2)) if m.group(2) else None
    return path, start, end


def _location(
    file: str | None, section: str | None, start: int | None, end: int | None
) -> Location | None:
    # A line below 1 or a range that ends before it starts (``10-9``) is no line: the
    # finding points at its file.  Guessing which end was meant would put a comment on
    # lines the reviewer may not have meant.
    if start is not None and (start < 1 or (end is not None and end < start)):
        start = end = None
    if file is None and section is None and start is None:
        return None
    if start is None:
        end = None
    return Location(file=file, section=section, line_start=start, line_end=end)


# --------------------------------------------------------------------------------------
# The markdown contract: sections, finding blocks


@dataclass
class _Block:
    """One candidate finding: its title line and the lines below it."""

    title: str
    severity: str | None
    #: Heading level of the title line; 0 for a bold, numbered or bracketed line.
    level: int
    body: list[int] = field(default_factory=list)


class _Doc:
    """A review split into lines, with the per-line facts each computed once."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.stripped = [line.strip() for line in self.lines]
        self.code = code_mask(self.stripped)
        # Block quotes are where a reviewer quotes the plan: treated like code.
        self.quoted = [
            c or s.startswith(">") for c, s in zip(self.code, self.stripped, strict=True)
        ]
        self.fields = self._unquoted(_field)
        self.headings = self._unquoted(_heading)
        #: ``(name, level)`` of each Summary/Findings/Verdict header line.
        self.sections = self._unquoted(_section_name)
        #: Whether each line is a non-heading finding title (see :func:`_is_title_line`).
        self.titles = [
            not quoted and got is None and _is_title_line(stripped)
            for quoted, got, stripped in zip(self.quoted, self.fields, self.stripped, strict=True)
        ]

    def _unquoted(self, read: Callable[[str], _T | None]) -> list[_T | None]:
        """``read`` of each stripped line; ``None`` for a quoted or code line."""
        return [None if q else read(s) for q, s in zip(self.quoted, self.stripped, strict=True)]

    def __len__(self) -> int:
        return len(self.lines)

    def first_section(self, name: str) -> tuple[int, int] | None:
        """``(index, heading level)`` of the first ``name`` section header."""
        return next(((i, s[1]) for i, s in enumerate(self.sections) if s and s[0] == name), None)


def _findings_area(doc: _Doc) -> tuple[int, int, int]:
    """``(start, end, level)`` of the Findings section, or the whole text when absent."""
    found = doc.first_section("findings")
    if found is None:
        return 0, len(doc), 0
    index, level = found
    for end in range(index + 1, len(doc)):
        other = doc.sections[end]
        if other and other[0] != "findings":
            return index + 1, end, level
        heading = doc.headings[end]
        if level and heading and heading[0] <= level and not _severity_token(heading[1]):
            return index + 1, end, level
    return index + 1, len(doc), level


def _summary_range(doc: _Doc) -> tuple[int, int] | None:
    found = doc.first_section("summary")
    if found is None:
        return None
    index = found[0]
    for end in range(index + 1, len(doc)):
        if doc.headings[end] or doc.sections[end] or doc.titles[end]:
            return index + 1, end
    return index + 1, len(doc)


def _is_title_line(stripped: str) -> bool:
    """A non-heading line that opens a finding: ``1. [severity: high] Title``.

    The bracketed token must lead the line (after list, numbering and emphasis markers) or
    end it, so a token quoted in the middle of a sentence does not split a finding.
    """
    if "[" not in stripped:
        return False
    rest = _strip_list(stripped).lstrip("*_ \t")
    m = _NUMBERING.match(rest)
    if m:
        rest = rest[m.end() :].lstrip("*_ \t")
    rest = rest.rstrip("*_ \t")
    token = _SEV_BRACKET.match(rest)
    if token is None:
        token = _SEV_BRACKET.search(rest)
        if token is None or token.end() != len(rest):
            return False
    return _clean_title(rest) != _UNTITLED


def _is_soft_start(raw: str, stripped: str) -> bool:
    """A bold-only or top-level numbered line that may title a finding below it."""
    if len(raw) - len(raw.lstrip()) > 3:
        return False
    bold = len(stripped) > 4 and stripped[:2] in ("**", "__") and stripped[-2:] == stripped[:2]
    return bold or bool(_NUMBERING.match(stripped))


def _soft_has_severity(doc: _Doc, index: int, end: int) -> bool:
    # A soft title only opens a finding when a severity field follows within a few lines.
    seen = 0
    for j in range(index + 1, end):
        if not doc.stripped[j] or doc.quoted[j]:
            continue
        got = doc.fields[j]
        if got and got[0] == "severity":
            return _SEV_VALUE.match(got[1]) is not None
        if doc.headings[j] or doc.titles[j]:
            return False
        seen += 1
        if seen >= 4:
            return False
    return False


def _segment(doc: _Doc, start: int, end: int, skip: tuple[int, int] | None) -> list[_Block]:
    blocks: list[_Block] = []
    cur: _Block | None = None
    for index in range(start, end):
        if skip and skip[0] - 1 <= index < skip[1]:
            continue
        stripped = doc.stripped[index]
        if stripped in (VERDICT_APPROVED, VERDICT_REVISE) and not doc.code[index]:
            continue  # the verdict line is never part of a finding's text
        if not stripped or doc.quoted[index]:
            if cur:
                cur.body.append(index)
            continue
        heading = doc.headings[index]
        if heading:
            token = _severity_token(heading[1])
            if token is None and cur and cur.severity and 0 < cur.level < heading[0]:
                # "#### Evidence" under "### [severity: high] X" belongs to X.
                cur.body.append(index)
                continue
            cur = _Block(_clean_title(heading[1]), token, heading[0])
            blocks.append(cur)
            continue
        got = doc.fields[index]
        if got:
            if cur:
                cur.body.append(index)
                if got[0] == "severity" and cur.severity is None:
                    m = _SEV_VALUE.match(got[1])
                    cur.severity = m.group(1).lower() if m else None
            continue
        if doc.titles[index]:
            cur = _Block(_clean_title(_strip_list(stripped)), _severity_token(stripped), 0)
            blocks.append(cur)
            continue
        lone = _SEV_BRACKET.fullmatch(stripped.strip("*_` "))
        if lone and cur and cur.severity is None:
            cur.severity = lone.group(1).lower()
            cur.body.append(index)
            continue
        if (
            _is_soft_start(doc.lines[index], stripped)
            and not (cur and cur.level and cur.severity is None)
            and _soft_has_severity(doc, index, end)
        ):
            cur = _Block(_clean_title(stripped), None, 0)
            blocks.append(cur)
            continue
        if cur:
            cur.body.append(index)
    return blocks


def _finding(doc: _Doc, block: _Block) -> Finding | None:
    if block.severity not in ("critical", "high", "medium"):
        return None
    fields: dict[str, list[str]] = {}
    prose: list[str] = []
    current: list[str] | None = None
    for index in block.body:
        got = doc.fields[index]
        if got:
            current = fields.setdefault(got[0], [])
            if current:
                current = None  # a repeated label: keep the first, ignore the rest
            else:
                current.append(got[1])
            continue
        if current is not None:
            current.append(doc.lines[index].rstrip() if doc.code[index] else doc.stripped[index])
        elif not doc.quoted[index]:
            prose.append(doc.stripped[index])
    values = {key: "\n".join(parts).strip() for key, parts in fields.items()}
    location = _block_location(values, [block.title, *prose])
    recommendation, suggestion = split_suggestion(values.get("recommendation") or None)

    def text(key: str) -> str | None:
        return values.get(key) or None

    return Finding(
        id=finding_id(block.title, location),
        severity=Severity(block.severity),
        title=block.title,
        location=location,
        what_can_go_wrong=text("what"),
        why_vulnerable=text("why"),
        impact=text("impact"),
        recommendation=recommendation,
        suggestion=suggestion,
        confidence=_confidence(values.get("confidence")),
    )


def _confidence(value: str | None) -> float | None:
    """A finding's ``Confidence:`` field, or ``None`` when it has none or it is not a
    number from 0 to 1 as the prompt asks (``0.8``): like a line that is no line, a
    malformed value is dropped and the finding kept, so a reviewer's typo can neither
    make a finding vanish nor be read as another number (``80%``, ``0,8``, ``high``)."""
    if not value:
        return None
    text = value.splitlines()[0].strip().strip("*_`").strip()
    return float(text) if _CONFIDENCE.fullmatch(text) else None


def _block_location(values: dict[str, str], prose: Sequence[str]) -> Location | None:
    file: str | None = None
    section: str | None = None
    start = end = None
    if values.get("file"):
        file, start, end = split_place(values["file"].splitlines()[0])
    where = values.get("location")
    if where:
        first = where.splitlines()[0]
        token = first.replace("`", "").split(maxsplit=1)
        path = _split_path_token(token[0])[0] if token else ""
        if file is None and (_PATHISH.search(path) or _COLON_LINES.search(first)):
            file, start, end = split_place(first)
        else:
            section = first.strip()
    if values.get("section"):
        section = values["section"].splitlines()[0].strip()
    if start is None and values.get("lines"):
        m = _LINES_WORD.search("lines " + values["lines"])
        if m:
            start = int(m.group(1))
            end = int(m.group(2)) if m.group(2) else None
    if file is None and section is None and start is None:
        # Best effort: a ``path:N-M`` reference in the title or the finding's prose.
        for line in prose:
            for word in line.replace("`", " ").split():
                if ":" not in word and "#L" not in word:
                    continue
                path, first_line, last_line = _split_path_token(word)
                if first_line is not None and _PATHISH.search(path):
                    return _location(path, None, first_line, last_line)
    return _location(file, section, start, end)


def _summary(doc: _Doc, area: tuple[int, int, int], found: tuple[int, int] | None) -> str:
    if found:
        start, end = found
    elif area[0] > 0:
        # Without a Summary header: the text before the Findings header ...
        start, end = 0, area[0] - 1
    else:
        # ... or before the first finding.
        start, end = 0, next((i for i in range(len(doc)) if _starts_block(doc, i)), len(doc))
    parts = [
        doc.stripped[i]
        for i in range(start, end)
        if not doc.code[i]
        and not doc.headings[i]
        and doc.stripped[i] not in (VERDICT_APPROVED, VERDICT_REVISE)
    ]
    return "\n".join(parts).strip()


def _starts_block(doc: _Doc, index: int) -> bool:
    # A quoted line has neither a heading nor a title (see _Doc).
    heading = doc.headings[index]
    return _severity_token(heading[1]) is not None if heading else doc.titles[index]


def parse_markdown(text: str) -> Review:
    """Parse a review written under the markdown contract, best effort; never raises.

    Findings are the sub-headers (``###``/``####``, or bold/numbered lines) under the
    Findings section (the whole text when there is none) that carry a severity, in any of
    the forms reviewers were seen to drift into: ``[severity: high]``, ``[Severity: HIGH]``,
    ``**Severity:** High`` or ``Severity: high`` (on the title line or as a field below
    it).  ``[severity: low]`` findings are dropped (see :mod:`pytest_advreview.parse`).
    """
    doc = _Doc(text)
    area = _findings_area(doc)
    summary = _summary_range(doc)
    # Without a Findings header the whole text is searched, except the Summary.
    blocks = _segment(doc, area[0], area[1], summary if area[0] == 0 else None)
    return Review(
        summary=_summary(doc, area, summary),
        findings=tuple(f for b in blocks if (f := _finding(doc, b)) is not None),
        verdict=_verdict(doc),
        raw=text,
    )


_VERDICT_DECORATION = " \t*_`>#\"'.:!"


def _why_no_verdict(text: str) -> str:
    """Why the last non-empty line of ``text`` is not a verdict, and what counts instead.

    Each way a verdict line is refused (:func:`_verdict`) has its own sentence, so the
    reader of a drift error sees which rule the reviewer broke.
    """
    lines = [line.strip() for line in text.splitlines()]
    index = max(i for i, line in enumerate(lines) if line)
    exact = f"the verdict must be exactly {VERDICT_APPROVED} or {VERDICT_REVISE}"
    for first, last, fence in _fenced_blocks(lines):
        if last is None and first <= index:
            return (
                f"it is inside a code block opened with {fence} at line {first + 1} and "
                "never closed, and text in a code block never counts; close the block "
                "before the verdict line"
            )
        if first <= index <= (last or index):
            return (
                f"it is part of a code block (lines {first + 1}-{(last or index) + 1}), and "
                f"text in a code block never counts; {exact} on the last line, after the block"
            )
    bare = lines[index].strip(_VERDICT_DECORATION).upper()
    if bare in (VERDICT_APPROVED, VERDICT_REVISE) or re.fullmatch(
        r"VERDICT[ \t*_]*:[ \t*_]*(?:APPROVED|REVISE)\b.{0,80}", bare
    ):
        return (
            f"{exact} on a line of its own, in capitals, without emphasis, quoting, "
            "backticks or other text"
        )
    code = code_mask(lines)
    elsewhere = [
        i + 1
        for i, line in enumerate(lines[:index])
        if line in (VERDICT_APPROVED, VERDICT_REVISE) and not code[i]
    ]
    if elsewhere:
        return (
            f"the verdict on line {elsewhere[-1]} does not count: only the last non-empty "
            f"line is read, and {exact}"
        )
    return f"the review has no verdict line; {exact}, on the last non-empty line"
