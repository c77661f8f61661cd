"""``--advreview-json``: every item's result as one versioned pydantic model.

The published JSON schema (``docs/advreview-results.schema.json``) is generated from
:class:`ResultsReport` by :func:`schema_text`; a test keeps the committed file equal to it.
Bump :data:`SCHEMA_VERSION` whenever a field is removed or changes meaning (adding an
optional field does not need a bump).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Final, Literal

from pydantic import Field

from .. import __version__
from ..models import ChangeSetInfo, ItemRecord, OutputFormat, Severity, TokenUsage, WireModel
from ..outbound import redact_model
from ..pricing import run_cost
from .collect import ItemResult, with_line

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = [
    "SCHEMA_ID",
    "SCHEMA_VERSION",
    "ItemReport",
    "ReportSettings",
    "ResultsReport",
    "Totals",
    "build_report",
    "gate_result",
    "render_json",
    "schema_text",
]

#: Version of the report's shape; readers should check it before reading anything else.
SCHEMA_VERSION: Final = 1
#: ``$id`` of the published schema (its path in the repository).
SCHEMA_ID = "docs/advreview-results.schema.json"

GateResult = Literal["passed", "failed", "error", "empty"]


class ReportSettings(WireModel):
    """The settings that shaped the reviews (no paths, no ``-c`` values: they may hold secrets
    or machine-specific URLs)."""

    reviewer: str
    model: str
    reasoning: str
    sandbox: str
    approvals: str
    language: str
    max_rounds: int
    fail_on: Severity
    #: ``advreview_pre_existing``: ``block`` or ``warn``.
    pre_existing: Literal["block", "warn"] = "block"
    output_format: OutputFormat
    isolation: str
    diff: str
    base: str | None = None
    #: ``--advreview-head`` as given: the pull request's head reviewed as data.
    head: str | None = None
    plan_scope: str
    timeout: float
    budget_tokens: int | None = None
    budget_money: float | None = None
    #: What the budgets count: ``run`` or ``pull-request``.
    budget_scope: str = "run"
    #: ``advreview_prices`` lines (money per million tokens, by model).
    prices: tuple[str, ...] = ()
    max_change_files: int | None = None
    max_change_lines: int | None = None
    fresh: bool = False
    #: ``K/N`` under ``--advreview-shard``: this report covers share K of N only.
    shard: str | None = None
    #: The built-in lead (``none``, ``codex``, ``claude``, ``command``).
    lead: str = "none"


class ItemReport(WireModel):
    """One review item: what pytest made of it, and its full :class:`ItemRecord`."""

    nodeid: str
    #: pytest's view of the item, teardown errors included: passed | failed | error.
    pytest_outcome: str
    #: Seconds pytest spent on the item's phases (setup + call + teardown).
    seconds: float = 0.0
    #: Problems pytest reported besides the review (e.g. a workspace mutation).
    problems: tuple[str, ...] = ()
    record: ItemRecord


class Totals(WireModel):
    """Counts over all items, for a dashboard that reads nothing else."""

    #: passed = every item passed; failed = some review found problems at or above
    #: fail-on; error = some review could not run and none failed; empty = no review ran.
    gate: GateResult
    items: int = 0
    #: Items per outcome of the review: passed, warned, failed, error.
    outcomes: dict[str, int] = Field(default_factory=dict)
    #: Items per final status (approved, revise, max rounds, ...).
    statuses: dict[str, int] = Field(default_factory=dict)
    #: Open findings per severity, over all items.
    findings: dict[str, int] = Field(default_factory=dict)
    #: Open findings whose reviewer cited a usable line (``path:12``, ``path lines 9-10``,
    #: ``path#L9``, the JSON contract's line fields): what inline comments can use.
    findings_with_line: int = 0
    #: Open findings placed outside every changed hunk of the code change (pre-existing).
    pre_existing: int = 0
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    #: What the run's reviews cost under ``advreview_prices`` (``None``: no prices set).
    cost: float | None = None
    #: Items whose money is unknown (a model without a price): ``cost`` leaves them out.
    unpriced: int = 0
    duration_s: float = 0.0


class ResultsReport(WireModel):
    """The ``--advreview-json`` file."""

    schema_version: Literal[1] = SCHEMA_VERSION
    plugin: Literal["pytest-advreview"] = "pytest-advreview"
    plugin_version: str
    settings: ReportSettings
    #: The change set the code item reviewed (mode, base and head commits, file count);
    #: ``None`` outside git.
    change_set: ChangeSetInfo | None = None
    totals: Totals
    #: Sorted by node id, whatever order xdist ran them in.
    items: tuple[ItemReport, ...] = ()


def gate_result(results: list[ItemResult]) -> GateResult:
    """One word for the whole run: failed wins over error, error over passed."""
    if not results:
        return "empty"
    if any(r.failed for r in results):
        return "failed"
    if any(r.errored for r in results):
        return "error"
    return "passed"


def _report_settings(settings: Settings) -> ReportSettings:
    # Copies only the fields ReportSettings names: the class is the list of what may be shown.
    values = settings.model_dump(include=set(ReportSettings.model_fields) - {"shard"})
    shard = f"{settings.shard[0]}/{settings.shard[1]}" if settings.shard else None
    return ReportSettings(**values, shard=shard)


def build_report(
    settings: Settings, results: list[ItemResult], *, change: ChangeSetInfo | None = None
) -> ResultsReport:
    """The report model of one run (``results`` in node-id order, as collected)."""
    tokens = sum((r.record.tokens for r in results), TokenUsage())
    findings = Counter(f.severity.value for r in results for f in r.record.findings)
    cost, unpriced = run_cost(r.record.cost for r in results)
    totals = Totals(
        gate=gate_result(results),
        items=len(results),
        outcomes=dict(sorted(Counter(r.record.outcome for r in results).items())),
        statuses=dict(sorted(Counter(r.record.status.value for r in results).items())),
        findings={s.value: findings[s.value] for s in Severity if findings[s.value]},
        findings_with_line=with_line(results)[0],
        pre_existing=sum(len(r.record.pre_existing) for r in results),
        tokens=tokens,
        cost=cost,
        unpriced=unpriced,
        duration_s=round(sum(r.seconds for r in results), 3),
    )
    items = tuple(
        ItemReport(
            nodeid=r.record.nodeid,
            pytest_outcome=r.pytest_outcome,
            seconds=round(r.seconds, 3),
            problems=tuple(r.problems),
            record=r.record,
        )
        for r in results
    )
    return ResultsReport(
        plugin_version=__version__,
        settings=_report_settings(settings),
        change_set=change,
        totals=totals,
        items=items,
    )


def render_json(
    settings: Settings, results: list[ItemResult], *, change: ChangeSetInfo | None = None
) -> str:
    """The text of the ``--advreview-json`` file (indented, one trailing newline)."""
    report = redact_model(build_report(settings, results, change=change))
    return report.model_dump_json(indent=2) + "\n"


def schema_text() -> str:
    """The published schema file's exact text: the JSON schema of :class:`ResultsReport`,
    with ``$schema`` and ``$id``."""
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **ResultsReport.model_json_schema(mode="serialization"),
    }
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":  # regenerate: python -m pytest_advreview.report.json_report > FILE
    import sys

    sys.stdout.write(schema_text())
