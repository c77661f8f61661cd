"""The pull-request review with line comments (the Action's ``comment: review``), planned.

:func:`plan_review` is pure: from the run's item records, the pull request's diff hunks,
the head commit and what the poster already wrote, it returns what to post; the Action
(``action.py``, ``review-comments``) does the HTTP.  The rules:

* one review per head commit, event ``COMMENT`` (never ``APPROVE`` or
  ``REQUEST_CHANGES``: the check is the gate, a review cannot approve anything);
* a finding whose file and lines lie inside one diff hunk (new side) is a line comment on
  those lines (``start_line`` for a range, ``side: RIGHT``) with its severity, title, what
  can go wrong, the recommendation, and a ```` ```suggestion ```` block when the reviewer
  proposed replacement text (it replaces exactly the lines commented on);
* a plan finding sits on its section's heading when that line is in the diff; every other
  finding goes into the review body;
* idempotent across pushes: each comment starts with hidden markers
  (``<!-- advreview:finding AR-xxxxxx -->``); a finding already posted is not posted
  again, one posted on a line before and gone now gets the reply "Resolved in <sha>", a
  waived one says who waived it and why;
* only what the poster (``comment-author``) wrote counts, and only the markers that
  *lead* a body: the templates put every untrusted text after a visible title line, and
  every ``<!--`` in it is escaped, so a finding's text cannot forge a marker and make the
  gate skip, resolve or answer anything;
* no HTML and no image of the reviewer's is rendered: ``<`` is ``&lt;`` and ``![`` is
  ``!\\[`` outside code spans (:func:`~pytest_advreview.outbound.inert_html`), and each
  body is then parsed as GitHub parses it (:func:`~pytest_advreview.rendered.html_and_images`):
  should any HTML but the markers and the mentions' ``<code>`` remain (a code span read
  differently in its place), the body is built again with code spans escaped too.  A
  ``<details>`` cannot hide a finding behind a summary of its own, a remote image never
  loads.  Every text goes through the one redaction and
  neutralisation pass (:func:`~pytest_advreview.outbound.document_text`), and a mention
  outside code is made code (:func:`~pytest_advreview.outbound.quiet_mentions`): the
  reviewer's text notifies nobody.

A finding that was resolved is not answered twice; a finding that comes back after it was
resolved is not posted again (its marker is there).  No "resolved" is said while any item
of the run errored, or by a run without items: a finding missing from a review that did not
run is not resolved.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal

from .. import outbound, rendered
from ..hunks import parse as parse_hunks
from ..models import Finding, ItemRecord, Location, Waiver, WireModel
from .collect import confidence_text
from .files import Anchor

__all__ = [
    "LineComment",
    "Posted",
    "Reply",
    "ReviewPlan",
    "hunks_from_patch",
    "leading_markers",
    "plan_review",
]

#: GitHub rejects review comments and bodies over 65,536 characters.
BODY_LIMIT = 65_000
_MARKER = re.compile(r"<!-- advreview:(finding|resolved|waived|review) ([0-9A-Za-z-]{1,64}) -->")

#: path → new-side line ranges (first, last) of its diff hunks.
Hunks = Mapping[str, Sequence[tuple[int, int]]]


class Posted(WireModel):
    """Something already on the pull request: a review comment or a review."""

    id: int
    kind: Literal["comment", "review"]
    author: str
    body: str = ""
    #: For a comment: the comment it answers (``None``: it starts a thread).
    in_reply_to: int | None = None


class LineComment(WireModel):
    """One comment of the review, on lines of the new side of the diff."""

    path: str
    line: int
    start_line: int | None = None
    side: Literal["RIGHT"] = "RIGHT"
    body: str


class Reply(WireModel):
    """An answer in the thread of the poster's earlier comment ``comment_id``."""

    comment_id: int
    body: str


class ReviewPlan(WireModel):
    """What to post for one head commit."""

    commit_id: str
    #: The review's body; empty: no review to post (nothing new).
    body: str = ""
    comments: tuple[LineComment, ...] = ()
    replies: tuple[Reply, ...] = ()
    #: Finding ids posted now: on lines, and in the body.
    on_lines: tuple[str, ...] = ()
    in_body: tuple[str, ...] = ()

    def review_request(self) -> dict[str, object] | None:
        """The body of "create a review for a pull request", or ``None`` (nothing new)."""
        if not self.body:
            return None
        comments = [c.model_dump(exclude_none=True) for c in self.comments]
        return {
            "commit_id": self.commit_id,
            "event": "COMMENT",
            "body": self.body,
            "comments": comments,
        }


# -- diff hunks --------------------------------------------------------------------------------


def hunks_from_patch(patch: str) -> list[tuple[int, int]]:
    """New-side line ranges of a file's ``patch`` (the pull-request files API's field),
    read with the one hunk parser (:func:`.hunks.parse`)."""
    found = parse_hunks(patch.encode("utf-8", "surrogateescape"), file="").get("", ())
    return [(h.new_start, h.new_start + h.new_count - 1) for h in found if h.new_count > 0]


def _inside(hunks: Hunks, anchor: Anchor) -> bool:
    if anchor.path is None or anchor.line_start is None:
        return False
    end = anchor.line_end if anchor.line_end is not None else anchor.line_start
    return any(
        first <= anchor.line_start and end <= last for first, last in hunks.get(anchor.path, ())
    )


# -- markers -----------------------------------------------------------------------------------


def marker(kind: str, ident: str) -> str:
    """The hidden line by which a later run recognises what this text is about."""
    return f"<!-- advreview:{kind} {ident} -->"


def leading_markers(body: str) -> set[tuple[str, str]]:
    """``(kind, id)`` of the markers on the lines that start ``body``, up to the first
    other line: the only place the templates put them, and no untrusted text reaches."""
    found = set()
    for line in body.split("\n"):
        match = _MARKER.fullmatch(line.strip())
        if match is None:
            break
        found.add((match.group(1), match.group(2)))
    return found


# -- texts -------------------------------------------------------------------------------------


def _text(value: str, strict: bool) -> str:
    """Untrusted text for a comment: redacted, controls shown, no HTML (an HTML comment
    would hide what follows, or imitate a marker) and no image rendered (``strict``: in
    code spans too), no mention that notifies."""
    clean = outbound.inert_html(outbound.document_text(value), strict=strict)
    return outbound.quiet_mentions(clean)


def _name(value: str) -> str:
    """A name the gate itself knows (who waived: a login GitHub's API gave, or the base
    commit): redacted and controls shown, no HTML, its mention kept."""
    return outbound.inert_html(outbound.document_text(value), strict=True)


#: The HTML the templates themselves write: the leading markers, and the ``<code>``
#: elements :func:`~pytest_advreview.outbound.quiet_mentions` makes of a mention.
_OWN_HTML = rf"(?:{_MARKER.pattern}\n?)+|{rendered.MENTION_CODE}"


def _checked(build: Callable[[bool], str]) -> str:
    return rendered.checked(build, _OWN_HTML)


def _fence(content: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", content)), default=0)
    return "`" * max(3, longest + 1)


def _heading(finding: Finding, strict: bool, pre_existing: bool = False) -> str:
    confidence = confidence_text(finding.confidence)
    return (
        f"**[{finding.severity.value}] {_text(finding.title, strict)}** · `{finding.id}`"
        + (f" · confidence {confidence}" if confidence is not None else "")
        + (" · pre-existing (outside every changed hunk)" if pre_existing else "")
    )


def _waiver_line(waiver: Waiver, strict: bool) -> str:
    at = f" ({_text(waiver.at, strict)})" if waiver.at else ""
    return f"**Waived** by {_name(waiver.by)}{at}: {_text(waiver.reason, strict)}"


def _comment_body(
    finding: Finding,
    waiver: Waiver | None,
    with_suggestion: bool,
    strict: bool,
    *,
    pre_existing: bool = False,
) -> str:
    lead = [marker("finding", finding.id)]
    if waiver is not None:
        lead.append(marker("waived", finding.id))
    parts = [_heading(finding, strict, pre_existing)]
    if finding.what_can_go_wrong:
        parts.append(f"**What can go wrong:** {_text(finding.what_can_go_wrong, strict)}")
    if finding.recommendation:
        parts.append(f"**Recommendation:** {_text(finding.recommendation, strict)}")
    if finding.samples:
        parts.append(f"**Samples:** {_text(finding.reported_by(), strict)}")
    if finding.refuted:
        parts.append(f"**Refuted by verification:** {_text(finding.refuted, strict)}")
    if with_suggestion and finding.suggestion is not None:
        # Redacted and controls shown, but otherwise verbatim: it is the replacement.
        text = outbound.document_text(finding.suggestion)
        fence = _fence(text)
        parts.append(
            f"{fence}suggestion\n{text}\n{fence}" if text else f"{fence}suggestion\n{fence}"
        )
    if waiver is not None:
        parts.append(_waiver_line(waiver, strict))
    return _cut("\n".join(lead) + "\n" + "\n\n".join(parts))


def _reply_body(lead: str, waiver: Waiver, strict: bool) -> str:
    return f"{lead}\n{_waiver_line(waiver, strict)}"


def _cut(body: str) -> str:
    if len(body) <= BODY_LIMIT:
        return body
    return body[: BODY_LIMIT - 40] + "\n\n… (cut to GitHub's limit)"


def _body_entry(
    finding: Finding, anchor: Anchor, waiver: Waiver | None, strict: bool, *, pre_existing: bool
) -> str:
    place = Location(file=anchor.path, line_start=anchor.line_start, line_end=anchor.line_end)
    where = str(place) if anchor.path else ""
    named = str(finding.location) if finding.location is not None else ""
    if named and named not in where:  # the section of a plan, or a place not in the repo
        where = f"{where} ({named})" if where else named
    heading = _heading(finding, strict, pre_existing)
    lines = [f"- {heading}" + (f" — {_text(where, strict)}" if where else "")]
    if finding.what_can_go_wrong:
        lines.append(f"  - What can go wrong: {_text(finding.what_can_go_wrong, strict)}")
    if finding.recommendation:
        lines.append(f"  - Recommendation: {_text(finding.recommendation, strict)}")
    if waiver is not None:
        lines.append(f"  - {_waiver_line(waiver, strict)}")
    return "\n".join(lines)


# -- the plan ----------------------------------------------------------------------------------


def plan_review(
    records: Iterable[ItemRecord],
    hunks: Hunks,
    head: str,
    posted: Iterable[Posted],
    *,
    poster: str,
    anchor_of: Callable[[ItemRecord, Finding], Anchor],
) -> ReviewPlan:
    """What to post for ``head`` (see the module docstring).

    :param hunks: path → new-side line ranges of the pull request's diff.
    :param posted: the pull request's review comments and reviews (anybody's: only
        ``poster``'s count).
    :param anchor_of: a finding's repo-relative file and lines (a plan finding: its
        section's heading line), as :meth:`~.files.Anchors.of` gives them.
    """
    records = list(records)
    mine = [p for p in posted if p.author == poster]
    seen: set[tuple[str, str]] = set()
    threads: dict[str, int] = {}  # finding id → the poster's top-level line comment
    reviewed_heads = set()
    for item in mine:
        markers = leading_markers(item.body)
        seen |= markers
        if item.kind == "review":
            reviewed_heads |= {ident for kind, ident in markers if kind == "review"}
        elif item.in_reply_to is None:
            for kind, ident in markers:
                if kind == "finding":
                    threads.setdefault(ident, item.id)
    posted_ids = {ident for kind, ident in seen if kind == "finding"}

    current: dict[str, tuple[ItemRecord, Finding]] = {}
    for record in records:
        for finding in record.findings:
            current.setdefault(finding.id, (record, finding))
    waivers = {w.finding: w for record in records for w in record.waived}
    placed = {ident for record in records for ident in record.pre_existing}

    comments: list[LineComment] = []
    on_lines: list[str] = []
    body_entries: list[Callable[[bool], str]] = []
    pre_entries: list[Callable[[bool], str]] = []
    in_body: list[str] = []
    replies: list[Reply] = []
    for ident, (record, finding) in current.items():
        waiver = waivers.get(ident)
        if ident in posted_ids:
            thread = threads.get(ident)
            if waiver is not None and thread is not None and ("waived", ident) not in seen:
                body = _checked(functools.partial(_reply_body, marker("waived", ident), waiver))
                replies.append(Reply(comment_id=thread, body=body))
            continue
        anchor = anchor_of(record, finding)
        if _inside(hunks, anchor):
            assert anchor.path is not None and anchor.line_start is not None
            end = anchor.line_end if anchor.line_end is not None else anchor.line_start
            # The suggestion replaces the lines the reviewer cited: only when the comment
            # sits on exactly those (not on a plan heading found for a section).
            loc = finding.location
            cited = loc is not None and loc.file is not None and loc.line_start is not None
            comments.append(
                LineComment(
                    path=anchor.path,
                    line=end,
                    start_line=anchor.line_start if end != anchor.line_start else None,
                    body=_checked(
                        functools.partial(
                            _comment_body, finding, waiver, cited, pre_existing=ident in placed
                        )
                    ),
                )
            )
            on_lines.append(ident)
        else:
            # Pre-existing findings are listed apart, after those on the change.
            entries = pre_entries if ident in placed else body_entries
            entries.append(
                functools.partial(
                    _body_entry, finding, anchor, waiver, pre_existing=ident in placed
                )
            )
            in_body.append(ident)

    # A finding is resolved only by a run that reviewed everything: no errored item, and
    # at least one item (a run that reviewed nothing has no say about earlier findings).
    if records and not any(record.outcome == "error" for record in records):
        for ident, thread in threads.items():
            if ident in current or ("resolved", ident) in seen:
                continue
            body = f"{marker('resolved', ident)}\nResolved in {head}."
            replies.append(Reply(comment_id=thread, body=body))

    body = ""
    if (comments or body_entries or pre_entries) and head not in reviewed_heads:
        lead = [marker("review", head), *(marker("finding", i) for i in in_body)]
        older = f", {len(pre_entries)} pre-existing" if pre_entries else ""
        text = [
            f"**pytest-advreview** reviewed {head[:12]}: {len(comments)} new finding(s) on "
            f"the changed lines, {len(body_entries)} elsewhere{older}."
        ]

        def review_body(strict: bool) -> str:
            entries = [entry(strict) for entry in body_entries]
            found = ["", "Findings outside the diff:", "", *entries] if entries else []
            before = [entry(strict) for entry in pre_entries]
            if before:
                found += [
                    "",
                    "Pre-existing findings (outside every changed hunk of the diff under review):",
                    "",
                    *before,
                ]
            return _cut("\n".join(lead) + "\n" + "\n".join(text + found))

        body = _checked(review_body)
    elif head in reviewed_heads:
        comments, on_lines, in_body = [], [], []
    return ReviewPlan(
        commit_id=head,
        body=body,
        comments=tuple(comments),
        replies=tuple(replies),
        on_lines=tuple(on_lines),
        in_body=tuple(in_body),
    )
