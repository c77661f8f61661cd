"""``--advreview-rdjson``: the open findings in reviewdog's Diagnostic Format (rdjson).

reviewdog (``reviewdog -f=rdjson``) turns the file into inline comments on GitLab, Gerrit,
Bitbucket and Gitea.  Mapping (documented in ``docs/ci.md``):

* one diagnostic per open finding of every item; ``code.value`` is the finding id
  (``AR-xxxxxx``), ``source.name`` is ``pytest-advreview``;
* ``severity``: ``ERROR`` for a finding that fails its item (at or above
  ``--advreview-fail-on`` and not decided away: the gate's own judgement, from the
  record), ``WARNING`` for the others.  ``reviewdog -fail-level=error`` then fails on
  what the gate fails on;
* location: the same as SARIF's (:meth:`~.files.Anchors.placed`): the repo-relative file
  the reviewer named with its lines, else the plan (at the named section's heading),
  else the pytest configuration file; a finding with no place at all is left out
  (reviewdog requires a path);
* an item whose reviewer could not run is one ``ERROR`` diagnostic with the code
  ``review-error`` at its plan or the configuration file: a job that reads only this
  file still sees that the gate did not pass;
* ``suggestions``: where the reviewer proposed replacement text (a ```` ```suggestion ````
  block, :attr:`~pytest_advreview.models.Finding.suggestion`) **and** cited the lines it
  replaces, one suggestion over those whole lines (a range without columns); a
  suggestion without cited lines is left out (it would replace nothing known).

Positions are 1-based lines without columns.  Every text goes through the redaction and
neutralisation pass (:func:`~pytest_advreview.outbound.redact_model`), and no line of a
message starts with ``/`` (:func:`_inert`): GitLab runs such a line of a note as a quick
action (``/merge``, ``/approve``, ``/close``) with the rights of the token that posts it,
and the text is the reviewer's, whom the merge request can steer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from .. import rendered
from ..models import WireModel
from ..outbound import inert_html, quiet_mentions, redact_model
from .collect import ItemResult
from .files import Anchor, Anchors
from .sarif import finding_text

__all__ = ["TOOL_NAME", "DiagnosticResult", "build_rdjson", "render_rdjson"]

TOOL_NAME = "pytest-advreview"
#: The code of the diagnostic of an item whose reviewer could not run.
ERROR_CODE = "review-error"

RdSeverity = Literal["ERROR", "WARNING", "INFO"]


class Position(WireModel):
    """A 1-based line (no column: reviewers cite lines)."""

    line: int


class Range(WireModel):
    start: Position
    end: Position | None = None


class RdLocation(WireModel):
    """``location``: a path relative to the repository root, where reviewdog runs."""

    path: str
    range: Range | None = None


class Source(WireModel):
    name: str = TOOL_NAME


class Code(WireModel):
    value: str


class Suggestion(WireModel):
    """Replacement ``text`` for ``range`` (here: whole lines)."""

    range: Range
    text: str


class Diagnostic(WireModel):
    message: str
    location: RdLocation
    severity: RdSeverity
    source: Source = Source()
    code: Code
    suggestions: tuple[Suggestion, ...] | None = None


class DiagnosticResult(WireModel):
    """The rdjson file: reviewdog's ``DiagnosticResult``."""

    source: Source = Source()
    diagnostics: tuple[Diagnostic, ...] = ()


_COMMAND = re.compile(r"^(\s*)/")


def _inert(text: str) -> str:
    """``text`` with every line break a ``\\n``, a line that would start with ``/`` (a
    GitLab quick action) escaped as ``\\/`` (markdown shows it as ``/``), every mention
    outside code made code, and no HTML or image rendered (reviewdog posts it as a
    comment: one would notify, a ``<details>`` hide the finding, an image load)."""

    def build(strict: bool) -> str:
        clean = inert_html("\n".join(text.splitlines()), strict=strict)
        lines = quiet_mentions(clean).split("\n")
        return "\n".join(_COMMAND.sub(r"\1\\/", line) for line in lines)

    return rendered.checked(build)


def _location(anchor: Anchor) -> RdLocation | None:
    if anchor.path is None:
        return None
    if anchor.line_start is None:
        return RdLocation(path=anchor.path)
    end = Position(line=anchor.line_end) if anchor.line_end is not None else None
    return RdLocation(
        path=anchor.path, range=Range(start=Position(line=anchor.line_start), end=end)
    )


def _suggestions(text: str | None, location: RdLocation) -> tuple[Suggestion, ...] | None:
    if text is None or location.range is None:
        return None
    return (Suggestion(range=location.range, text=text),)


def build_rdjson(
    results: Sequence[ItemResult], anchors: Anchors, *, fallback_path: str | None = None
) -> DiagnosticResult:
    """The rdjson of one run (``results`` in node-id order, as collected).

    :param anchors: resolves finding locations against the repository.
    :param fallback_path: repo-relative file for a finding or an errored item that names
        no place (the pytest configuration file).
    """
    diagnostics: list[Diagnostic] = []
    for item in results:
        record = item.record
        for finding in record.findings:
            anchor, note = anchors.placed(record, finding, fallback_path)
            location = _location(anchor)
            if location is None:
                continue
            diagnostics.append(
                Diagnostic(
                    message=_inert(finding_text(record, finding, note)),
                    location=location,
                    severity="ERROR" if finding.id in record.failing_ids else "WARNING",
                    code=Code(value=finding.id),
                    suggestions=_suggestions(finding.suggestion, location),
                )
            )
        if item.errored:
            plan = anchors.relative(record.path) if record.path else None
            location = _location(Anchor(plan or fallback_path))
            if location is not None:
                diagnostics.append(
                    Diagnostic(
                        message=_inert(
                            f"{record.nodeid}: {record.status.value}: {item.error_text}"
                        ),
                        location=location,
                        severity="ERROR",
                        code=Code(value=ERROR_CODE),
                    )
                )
    return DiagnosticResult(diagnostics=tuple(diagnostics))


def render_rdjson(
    results: Sequence[ItemResult], anchors: Anchors, *, fallback_path: str | None = None
) -> str:
    """The text of the ``--advreview-rdjson`` file (indented, one trailing newline)."""
    result = redact_model(build_rdjson(results, anchors, fallback_path=fallback_path))
    return result.model_dump_json(indent=2, exclude_none=True) + "\n"
