"""``--advreview-sarif``: the open findings as a SARIF 2.1.0 log.

Mapping (documented in ``docs/ci.md``):

* one ``result`` per open finding of every item; ``ruleId`` is the finding id
  (``AR-xxxxxx``), and ``tool.driver.rules`` has one rule per distinct id;
* ``level``: critical and high → ``error``, medium → ``warning``;
* location: the file the reviewer named with its lines; else the plan (with the line of
  the named section when the plan has that heading); else, for a code finding that names
  no file, the pytest configuration file, so that GitHub code scanning (which rejects a
  whole log when one result has no location) still takes the log;
* ``partialFingerprints["advreviewFinding/v1"]``: sha256 of the item key and the finding
  id, so the same finding keeps its alert across runs however its lines move;
* an item whose reviewer could not run is no result (it is not a finding): it is a
  ``toolExecutionNotifications`` entry of the invocation, and ``executionSuccessful`` is
  false.

The log carries no timestamps, durations or run ids: two runs over the same reviews write
the same bytes, with or without xdist.  The models below cover the part of SARIF that is
written; they serialise with SARIF's camelCase names.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Literal
from urllib.parse import quote

from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

from .. import __version__
from ..models import Finding, ItemRecord, Severity, WireModel
from ..outbound import redact_model
from .collect import ItemResult
from .files import Anchor, Anchors

__all__ = [
    "SARIF_SCHEMA_URI",
    "SarifLog",
    "build_sarif",
    "finding_text",
    "level_of",
    "render_sarif",
]

SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
#: The one ``uriBaseId`` used: GitHub code scanning resolves it to the checkout.
SRCROOT = "%SRCROOT%"
_INFO_URI = "https://pypi.org/project/pytest-advreview/"

Level = Literal["error", "warning", "note", "none"]


def level_of(severity: Severity) -> Literal["error", "warning"]:
    """SARIF level of a finding severity: critical/high → error, medium → warning."""
    return "warning" if severity is Severity.MEDIUM else "error"


class _Sarif(WireModel):
    """A SARIF object: camelCase on the wire, unknown fields refused."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True
    )


class Message(_Sarif):
    """``message`` and ``multiformatMessageString``: plain text (and markdown for viewers
    that render it)."""

    text: str
    markdown: str | None = None


class ArtifactLocation(_Sarif):
    """``artifactLocation``: a repo-relative URI against ``%SRCROOT%``."""

    uri: str
    uri_base_id: str | None = SRCROOT


class Region(_Sarif):
    """``region``: 1-based start and end lines."""

    start_line: int
    end_line: int | None = None


class PhysicalLocation(_Sarif):
    artifact_location: ArtifactLocation
    region: Region | None = None


class LogicalLocation(_Sarif):
    """``logicalLocation``: the plan section a finding names."""

    name: str
    kind: str = "section"


class Location(_Sarif):
    physical_location: PhysicalLocation | None = None
    logical_locations: tuple[LogicalLocation, ...] | None = None


class Suppression(_Sarif):
    """``suppression``: a waiver by a person with authority (code scanning shows the
    result as dismissed, with the justification)."""

    kind: Literal["external"] = "external"
    status: Literal["accepted"] = "accepted"
    justification: str


class Result(_Sarif):
    """``result``: one open finding."""

    rule_id: str
    rule_index: int
    level: Level
    message: Message
    #: SARIF 2.1.0 result.rank: priority 0.0-100.0 (absent: -1, unknown): the reviewer's
    #: confidence times 100.  Reported only; ``level`` and ``failsItem`` do not follow it.
    rank: float | None = Field(default=None, ge=0, le=100)
    locations: tuple[Location, ...] | None = None
    partial_fingerprints: dict[str, str] = Field(default_factory=dict)
    properties: dict[str, Any] = Field(default_factory=dict)
    suppressions: tuple[Suppression, ...] | None = None


class ReportingConfiguration(_Sarif):
    """``reportingConfiguration``: the rule's level."""

    level: Level


class Rule(_Sarif):
    """``reportingDescriptor``: one finding id."""

    id: str
    short_description: Message
    full_description: Message | None = None
    help: Message | None = None
    default_configuration: ReportingConfiguration
    properties: dict[str, Any] = Field(default_factory=dict)


class Driver(_Sarif):
    """``toolComponent`` of the driver."""

    name: str = "pytest-advreview"
    version: str = __version__
    information_uri: str = _INFO_URI
    rules: tuple[Rule, ...] = ()


class Tool(_Sarif):
    driver: Driver


class Notification(_Sarif):
    """``notification``: a review that could not run."""

    level: Level = "error"
    message: Message
    locations: tuple[Location, ...] | None = None
    properties: dict[str, Any] = Field(default_factory=dict)


class Invocation(_Sarif):
    """``invocation``: did every review run?"""

    execution_successful: bool
    tool_execution_notifications: tuple[Notification, ...] | None = None


class Run(_Sarif):
    tool: Tool
    invocations: tuple[Invocation, ...]
    results: tuple[Result, ...]
    column_kind: Literal["unicodeCodePoints"] = "unicodeCodePoints"


class SarifLog(_Sarif):
    """The SARIF log: ``$schema``, ``version`` and one run."""

    schema_uri: str = Field(default=SARIF_SCHEMA_URI, alias="$schema")
    version: Literal["2.1.0"] = "2.1.0"
    runs: tuple[Run, ...]


def _fingerprint(record: ItemRecord, finding: Finding) -> str:
    return hashlib.sha256(f"{record.key}\x00{finding.id}".encode()).hexdigest()


def _uri(path: str) -> str:
    """A relative URI reference for a repo-relative posix path (spaces and the like quoted)."""
    return quote(path, safe="/-._~!$&'()*+,;=@")


def _physical(anchor: Anchor) -> PhysicalLocation | None:
    if anchor.path is None:
        return None
    region = (
        Region(start_line=anchor.line_start, end_line=anchor.line_end)
        if anchor.line_start is not None
        else None
    )
    return PhysicalLocation(
        artifact_location=ArtifactLocation(uri=_uri(anchor.path)), region=region
    )


def finding_text(record: ItemRecord, finding: Finding, note: str | None = None) -> str:
    """A finding as plain text for a report that places it in a file (SARIF, rdjson):
    severity and title, the four answers, the place named, ``note``, the review item."""
    parts = [f"[{finding.severity.value}] {finding.title}"]
    for label, value in finding.answers().items():
        if value:
            parts.append(f"{label}: {value.strip()}")
    if finding.location is not None and str(finding.location):
        parts.append(f"Location named by the reviewer: {finding.location}")
    if finding.samples:
        parts.append(f"Samples: {finding.reported_by()}")
    if finding.refuted:
        parts.append(f"Refuted by verification: {finding.refuted}")
    if note:
        parts.append(note)
    parts.append(f"Review item: {record.nodeid} ({record.status.value})")
    return "\n".join(parts)


def _rule(finding: Finding) -> Rule:
    full = finding.what_can_go_wrong or finding.impact
    return Rule(
        id=finding.id,
        short_description=Message(text=finding.title),
        full_description=Message(text=full.strip()) if full else None,
        help=Message(text=finding.recommendation.strip()) if finding.recommendation else None,
        default_configuration=ReportingConfiguration(level=level_of(finding.severity)),
        properties={"tags": ["adversarial-review"], "severity": finding.severity.value},
    )


def build_sarif(
    results: Sequence[ItemResult], anchors: Anchors, *, fallback_path: str | None = None
) -> SarifLog:
    """The SARIF log of one run.

    :param results: the collected items, in node-id order.
    :param anchors: resolves finding locations against the repository.
    :param fallback_path: repo-relative file to anchor a finding at when neither the
        reviewer nor the item names one (the pytest configuration file).
    """
    pending = [(item.record, finding) for item in results for finding in item.record.findings]
    # Each id's rule from its first finding (the last one written wins).
    rules = {finding.id: _rule(finding) for _, finding in reversed(pending)}
    notifications: list[Notification] = []
    for item in results:
        record = item.record
        if item.errored:
            physical = _physical(Anchor(anchors.relative(record.path) if record.path else None))
            notifications.append(
                Notification(
                    message=Message(
                        text=f"{record.nodeid}: {record.status.value}: {item.error_text}"
                    ),
                    locations=(Location(physical_location=physical),) if physical else None,
                    properties={"item": record.nodeid, "status": record.status.value},
                )
            )
    order = sorted(rules)
    index = {rule_id: n for n, rule_id in enumerate(order)}
    sarif_results = []
    for record, finding in pending:
        anchor, note = anchors.placed(record, finding, fallback_path)
        physical = _physical(anchor)
        logical = (
            (LogicalLocation(name=finding.location.section),)
            if finding.location is not None and finding.location.section
            else None
        )
        location = (
            Location(physical_location=physical, logical_locations=logical)
            if physical is not None or logical is not None
            else None
        )
        waiver = next((w for w in record.waived if w.finding == finding.id), None)
        suppressions = (
            (Suppression(justification=f"waived by {waiver.by}: {waiver.reason}"),)
            if waiver is not None
            else None
        )
        sarif_results.append(
            Result(
                rule_id=finding.id,
                rule_index=index[finding.id],
                level=level_of(finding.severity),
                message=Message(text=finding_text(record, finding, note)),
                rank=round(finding.confidence * 100, 1) if finding.confidence is not None else None,
                locations=(location,) if location is not None else None,
                partial_fingerprints={"advreviewFinding/v1": _fingerprint(record, finding)},
                properties={
                    "severity": finding.severity.value,
                    "item": record.nodeid,
                    "target": record.key,
                    "status": record.status.value,
                    "failsItem": finding.id in record.failing_ids,
                    # First raised in a later round on code unchanged since the round
                    # before (docs/rounds.md): it could have been raised earlier.
                    "late": finding.id in record.late,
                    # Outside every changed hunk of the diff under review (code item).
                    "preExisting": finding.id in record.pre_existing,
                    **(
                        {"confidence": finding.confidence} if finding.confidence is not None else {}
                    ),
                },
                suppressions=suppressions,
            )
        )
    invocation = Invocation(
        execution_successful=not notifications,
        tool_execution_notifications=tuple(notifications) or None,
    )
    driver = Driver(rules=tuple(rules[r] for r in order))
    run = Run(tool=Tool(driver=driver), invocations=(invocation,), results=tuple(sarif_results))
    return SarifLog(runs=(run,))


def render_sarif(
    results: Sequence[ItemResult], anchors: Anchors, *, fallback_path: str | None = None
) -> str:
    """The text of the ``--advreview-sarif`` file (indented, one trailing newline)."""
    log = redact_model(build_sarif(results, anchors, fallback_path=fallback_path))
    return log.model_dump_json(indent=2, by_alias=True, exclude_none=True) + "\n"
