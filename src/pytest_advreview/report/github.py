"""GitHub Actions: workflow-command annotations and the step summary.

Annotations are ``::error`` / ``::warning`` workflow commands, one per open finding
(critical/high → error, medium → warning, as in SARIF) and one ``::error`` per review that
could not run.  GitHub shows at most 10 annotations of each level per step and drops the
rest silently, so at most :data:`MAX_PER_LEVEL` of each level are printed, the worst
first (reviews that could not run, then critical, high, medium; items in node-id order),
and one ``::notice`` counts the ones left out.

Escaping follows the runner's rules (``actions/toolkit`` ``command.ts``): in the message,
``%`` → ``%25``, CR → ``%0D``, LF → ``%0A``; in property values additionally ``:`` →
``%3A`` and ``,`` → ``%2C``.  So a hostile title cannot end a property early or start a
second command.  Every field is redacted and its control characters are shown escaped
first (:mod:`..outbound`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..models import Finding, ItemRecord
from ..outbound import annotation_data, annotation_property
from .collect import ItemResult
from .files import Anchors
from .sarif import level_of
from .terminal import MEANING

__all__ = [
    "MAX_PER_LEVEL",
    "AnnotatedElsewhere",
    "Annotation",
    "collect_annotations",
    "enabled",
    "escape_data",
    "escape_property",
    "workflow_commands",
]

#: GitHub keeps this many annotations per level and step.
MAX_PER_LEVEL = 10

AnnotationLevel = Literal["error", "warning"]


def enabled(mode: str, environ: Mapping[str, str]) -> bool:
    """``on``; or ``auto`` inside GitHub Actions (``GITHUB_ACTIONS=true``)."""
    in_actions = environ.get("GITHUB_ACTIONS", "").strip().lower() == "true"
    return mode == "on" or (mode == "auto" and in_actions)


def escape_data(text: str) -> str:
    """Escape a command's message (everything after the second ``::``), redacted and
    with control characters shown (:func:`~..outbound.annotation_data`)."""
    return annotation_data(text)


def escape_property(text: str) -> str:
    """Escape a property value (``file=…,title=…``): data escaping plus ``:`` and ``,``."""
    return annotation_property(text)


@dataclass(frozen=True)
class Annotation:
    """One workflow command to print."""

    level: AnnotationLevel
    title: str
    message: str
    file: str | None = None
    line: int | None = None
    end_line: int | None = None
    #: Sort key within a level: lower is shown first.
    rank: int = 0

    def command(self) -> str:
        """The ``::level file=…,line=…,endLine=…,title=…::message`` line."""
        props: list[str] = []
        if self.file is not None:
            props.append(f"file={escape_property(self.file)}")
            if self.line is not None:
                props.append(f"line={self.line}")
                if self.end_line is not None:
                    props.append(f"endLine={self.end_line}")
        props.append(f"title={escape_property(self.title)}")
        return f"::{self.level} {','.join(props)}::{escape_data(self.message)}"


def _finding_message(record: ItemRecord, finding: Finding) -> str:
    lines = [finding.line()]
    for label, value in (
        ("What can go wrong", finding.what_can_go_wrong),
        ("Impact", finding.impact),
        ("Recommendation", finding.recommendation),
    ):
        if value:
            lines.append(f"{label}: {value.strip()}")
    lines.append(f"{record.nodeid}: {record.status.value}")
    lines.extend(
        f"waived by {w.by}, reason: {w.reason}" for w in record.waived if w.finding == finding.id
    )
    if finding.id in record.pre_existing:
        lines.append("pre-existing: outside every changed hunk of the diff under review")
    return "\n".join(lines)


@dataclass(frozen=True)
class AnnotatedElsewhere:
    """What another plugin of the run annotates from pytest's own reports
    (pytest-github-actions-annotate-failures), so that each finding is annotated once.

    :param failures: one ``::error`` per item that failed, at its failure's place: the
        item's worst failing finding (``ReviewRepr`` points there).
    :param warnings: one ``::warning`` per recorded warning, at its place: the finding
        below fail-on it names.
    """

    failures: bool = False
    warnings: bool = False

    def covers(self, item: ItemResult, finding: Finding) -> bool:
        """Whether the other plugin annotates ``finding`` of ``item`` already."""
        if self.failures and item.pytest_outcome == "failed":
            worst = item.record.worst_failing()
            if worst is not None and worst.id == finding.id:
                return True
        if self.warnings and finding.id not in item.record.failing_ids:
            return any(finding.id in text for text in item.recorded_warnings)
        return False


def collect_annotations(
    results: Sequence[ItemResult],
    anchors: Anchors,
    elsewhere: AnnotatedElsewhere = AnnotatedElsewhere(),
) -> list[Annotation]:
    """Every annotation of the run, worst first within each level (before the cap);
    none for a finding another plugin annotates (``elsewhere``)."""
    found: list[Annotation] = []
    for item in results:
        record = item.record
        if item.errored:
            meaning = MEANING.get(record.status.value, "")
            path = anchors.relative(record.path) if record.path else None
            found.append(
                Annotation(
                    level="error",
                    title=f"pytest-advreview: review could not run ({record.key})",
                    message=f"{record.nodeid}: {record.status.value}: {item.error_text}"
                    + (f"\n{meaning}" if meaning else ""),
                    file=path,
                    rank=0,
                )
            )
        for finding in record.findings:
            if elsewhere.covers(item, finding):
                continue
            anchor = anchors.of(record, finding)
            waived = any(w.finding == finding.id for w in record.waived)
            placed = finding.id in record.pre_existing
            # A waived finding passes, and so does a pre-existing one under ``warn``:
            # shown, but not as an error of the check.
            passes = waived or (placed and finding.id not in record.failing_ids)
            found.append(
                Annotation(
                    level="warning" if passes else level_of(finding.severity),
                    title=f"[{finding.severity.value}] {finding.id} {finding.title}"
                    + (" (pre-existing)" if placed else ""),
                    message=_finding_message(record, finding),
                    file=anchor.path,
                    line=anchor.line_start,
                    end_line=anchor.line_end,
                    rank=4 - finding.severity.rank,
                )
            )
    # sorted() is stable: items stay in node-id order, findings in review order.
    return sorted(found, key=lambda a: a.rank)


def workflow_commands(
    results: Sequence[ItemResult],
    anchors: Anchors,
    elsewhere: AnnotatedElsewhere = AnnotatedElsewhere(),
) -> list[str]:
    """The lines to print: at most :data:`MAX_PER_LEVEL` per level, then one notice."""
    found = collect_annotations(results, anchors, elsewhere)
    lines: list[str] = []
    left: dict[str, int] = {}
    # Errors rank before warnings, so showing one level after the other keeps the order.
    for level in ("error", "warning"):
        of_level = [a.command() for a in found if a.level == level]
        lines += of_level[:MAX_PER_LEVEL]
        left[level] = max(0, len(of_level) - MAX_PER_LEVEL)
    if any(left.values()):
        parts = [f"{n} {level}{'s' if n != 1 else ''}" for level, n in left.items() if n]
        message = (
            f"{' and '.join(parts)} not annotated: GitHub shows at most {MAX_PER_LEVEL} "
            "annotations per level and step; the step summary and the SARIF report have all "
            "findings"
        )
        lines.append(
            f"::notice title={escape_property('pytest-advreview')}::{escape_data(message)}"
        )
    return lines
