"""The report writers over hand-built results: SARIF, JSON, markdown, GitHub, exit status.

Every format is produced from one run's worth of items: approved, failed with locations,
failed without a location, below the threshold (passed with a warning) and errored.  The
end-to-end tests (``test_reports_e2e.py``) produce the same formats from real runs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from pytest_advreview.constants import EXIT_REVIEW_ERRORS
from pytest_advreview.models import (
    Decision,
    DecisionAction,
    Finding,
    ItemRecord,
    Location,
    Operation,
    Review,
    ReviewQuality,
    ReviewStatus,
    RoundRecord,
    RunnerResult,
    RunnerStatus,
    Severity,
    TokenUsage,
    Verdict,
    finding_id,
)
from pytest_advreview.report import github
from pytest_advreview.report.collect import ItemResult
from pytest_advreview.report.files import Anchors, find_repo_root, section_line, write_atomic
from pytest_advreview.report.json_report import (
    SCHEMA_VERSION,
    ResultsReport,
    render_json,
    schema_text,
)
from pytest_advreview.report.markdown import STEP_SUMMARY_LIMIT, render_markdown, step_summary
from pytest_advreview.report.publish import exit_status, publish
from pytest_advreview.report.sarif import build_sarif, render_sarif
from pytest_advreview.report.terminal import MEANING
from pytest_advreview.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
SARIF_SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())
RESULTS_SCHEMA_PATH = ROOT / "docs" / "advreview-results.schema.json"
CI_DOC = ROOT / "docs" / "ci.md"

PLAN = """# Migration plan

## 1. Rollout

Deploy in waves.

```markdown
## Rollback
(an example inside a fence: not a heading)
```

## Rollback

Restore the backup.
"""
ROLLBACK_LINE = 12  # the real "## Rollback" heading of PLAN


def _finding(severity: str, title: str, **loc: Any) -> Finding:
    location = Location(**loc) if loc else None
    return Finding(
        id=finding_id(title, location),
        severity=Severity(severity),
        title=title,
        location=location,
        what_can_go_wrong="A crash halfway leaves both schemas live.",
        why_vulnerable="Nothing orders the steps.",
        impact="Data written in between is lost.",
        recommendation="Add a rollback checkpoint.",
    )


def _round(number: int, review: Review | None, *, op: Operation = Operation.INITIAL) -> RoundRecord:
    runner = RunnerResult(
        result=RunnerStatus.SUCCESS if review else RunnerStatus.INFRA_ERROR,
        verdict=review.verdict if review else None,
        attempt_id="a1b2c3d4",
        review_quality=ReviewQuality.VALID if review else ReviewQuality.UNKNOWN,
        errors=None if review else "codex exited 1: server error",
    )
    return RoundRecord(
        number=number,
        operation=op,
        runner=runner,
        review=review,
        usage=TokenUsage(input_tokens=1000, output_tokens=200),
        duration_s=1.5,
        content_hash=f"hash{number}",
    )


def _record(
    name: str,
    status: ReviewStatus,
    outcome: str,
    findings: tuple[Finding, ...] = (),
    *,
    fail_on: Severity = Severity.HIGH,
    kind: str = "plan",
    error: str | None = None,
    raw: str | None = None,
    decisions: tuple[Decision, ...] = (),
) -> ItemRecord:
    key = f"docs/plans/{name}" if kind == "plan" else "code-review"
    review = None
    if outcome != "error":
        verdict = Verdict.APPROVED if status is ReviewStatus.APPROVED else Verdict.REVISE
        text = raw or f"## Summary\n\nReview of {key}.\n\nVERDICT: {verdict.value}"
        review = Review(summary="s", findings=findings, verdict=verdict, raw=text)
    rounds = (_round(1, review),)
    failing = tuple(f.id for f in findings if f.severity.at_least(fail_on))
    return ItemRecord(
        nodeid=f"{key}::adversarial-review" if kind == "plan" else "::code-review",
        key=key,
        kind=kind,  # type: ignore[arg-type]
        path=key if kind == "plan" else None,
        status=status,
        outcome=outcome,  # type: ignore[arg-type]
        verdict=review.verdict if review else None,
        max_severity=review.max_severity if review else None,
        fail_on=fail_on,
        findings=findings,
        failing_ids=failing,
        rounds=rounds,
        decisions=decisions,
        tokens=TokenUsage(input_tokens=1000, output_tokens=200),
        duration_s=1.5,
        error=error,
        review_text=review.raw if review else None,
    )


@dataclass
class Run:
    """A repository with plans, and the results of one run over it."""

    root: Path
    results: list[ItemResult] = field(default_factory=list)

    def anchors(self) -> Anchors:
        return Anchors(self.root)

    def by_key(self, key: str) -> ItemResult:
        return next(r for r in self.results if r.record.key == key)


HOSTILE = "Title with %, a newline\nand ::error:: plus, commas"


@pytest.fixture
def run(tmp_path: Path) -> Run:
    """Approved, failed (located / unlocated), below-threshold and errored items."""
    (tmp_path / ".git").mkdir()
    plans = tmp_path / "docs" / "plans"
    plans.mkdir(parents=True)
    for name in ("approved.md", "failed.md", "low.md", "errored.md"):
        (plans / name).write_text(PLAN)
    failed = (
        _finding("critical", "Rollback drops data", section="Rollback"),
        _finding("high", "Lock order is unspecified", file="src/app.py", line_start=3, line_end=7),
        _finding("high", "No owner for the cut-over"),
        _finding("high", HOSTILE, section="Not a heading here"),
    )
    code = (_finding("high", "Retry loop never ends", file="./src/retry.py", line_start=12),)
    low = (_finding("medium", "Wording of step 2 is vague", section="Rollout"),)
    review_with_fence = (
        "## Summary\n\n```python\nx = 1\n```\n\nText with | pipe.\n\nVERDICT: REVISE"
    )
    records = [
        _record("approved.md", ReviewStatus.APPROVED, "passed"),
        _record(
            "failed.md",
            ReviewStatus.REVISE,
            "failed",
            failed,
            raw=review_with_fence,
            decisions=(
                Decision(finding=failed[2].id, action=DecisionAction.REJECT, reason="Owned by ops"),
            ),
        ),
        _record("low.md", ReviewStatus.REVISE, "warned", low),
        _record(
            "errored.md",
            ReviewStatus.ABORTED,
            "error",
            error="codex exited 1: We're currently experiencing high demand",
        ),
        _record("", ReviewStatus.REVISE, "failed", code, kind="code"),
    ]
    pytest_outcome = {"passed": "passed", "warned": "passed", "failed": "failed", "error": "error"}
    results = [ItemResult(r, pytest_outcome[r.outcome], seconds=2.0) for r in records]
    return Run(tmp_path, sorted(results, key=lambda r: r.record.nodeid))


def _all_findings(run: Run) -> list[Finding]:
    return [f for r in run.results for f in r.record.findings]


# -- locations -----------------------------------------------------------------------------


def test_section_line_finds_the_heading_outside_code_fences() -> None:
    assert section_line(PLAN, "Rollback") == ROLLBACK_LINE
    assert section_line(PLAN, "rollout") == 3  # numbering "1." and case ignored
    assert section_line(PLAN, "Plan > Rollback") == ROLLBACK_LINE  # last part of a path
    assert section_line(PLAN, "Roll") == 3  # else the first heading containing it
    assert section_line(PLAN, "Monitoring") is None


def test_anchor_paths_are_repo_relative_and_never_leave_the_repo(tmp_path: Path) -> None:
    anchors = Anchors(tmp_path)
    assert anchors.relative("./src/app.py") == "src/app.py"
    assert anchors.relative("src\\win\\app.py") == "src/win/app.py"
    assert anchors.relative(str(tmp_path / "a" / "b.py")) == "a/b.py"
    assert anchors.relative("/etc/passwd") is None
    assert anchors.relative("../outside.py") is None
    assert anchors.relative("  ") is None


def test_find_repo_root_walks_up_to_the_git_folder(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert find_repo_root(tmp_path / "a" / "b") == tmp_path.resolve()


# -- SARIF ---------------------------------------------------------------------------------


def test_sarif_validates_against_the_official_2_1_0_schema(run: Run) -> None:
    log = json.loads(render_sarif(run.results, run.anchors(), fallback_path="pyproject.toml"))
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)
    assert log["version"] == "2.1.0"


def test_sarif_has_one_result_per_open_finding_with_rule_and_level(run: Run) -> None:
    log = json.loads(render_sarif(run.results, run.anchors()))
    results = log["runs"][0]["results"]
    findings = _all_findings(run)
    assert [r["ruleId"] for r in results] == [f.id for f in findings]
    levels = {f.id: ("warning" if f.severity is Severity.MEDIUM else "error") for f in findings}
    assert {r["ruleId"]: r["level"] for r in results} == levels
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == sorted({f.id for f in findings})
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]


def test_sarif_locations_name_files_lines_and_plan_sections(run: Run) -> None:
    log = json.loads(render_sarif(run.results, run.anchors(), fallback_path="pyproject.toml"))
    by_title = {r["message"]["text"].splitlines()[0]: r for r in log["runs"][0]["results"]}

    def where(title: str) -> dict[str, Any]:
        location: dict[str, Any] = by_title[title]["locations"][0]["physicalLocation"]
        return location

    located = where("[high] Lock order is unspecified")
    assert located["artifactLocation"] == {"uri": "src/app.py", "uriBaseId": "%SRCROOT%"}
    assert located["region"] == {"startLine": 3, "endLine": 7}
    section = where("[critical] Rollback drops data")
    assert section["artifactLocation"]["uri"] == "docs/plans/failed.md"
    assert section["region"] == {"startLine": ROLLBACK_LINE, "endLine": ROLLBACK_LINE}
    unfound = by_title["[high] " + HOSTILE.splitlines()[0]]["locations"][0]
    assert "region" not in unfound["physicalLocation"]  # the plan, but no such heading
    assert unfound["logicalLocations"] == [{"name": "Not a heading here", "kind": "section"}]
    plan_only = where("[high] No owner for the cut-over")
    assert plan_only == {
        "artifactLocation": {"uri": "docs/plans/failed.md", "uriBaseId": "%SRCROOT%"}
    }
    code = where("[high] Retry loop never ends")
    assert code["artifactLocation"]["uri"] == "src/retry.py"
    assert code["region"] == {"startLine": 12, "endLine": 12}


def test_sarif_pins_a_finding_without_any_file_to_the_fallback(run: Run) -> None:
    code_item = run.by_key("code-review")
    record = code_item.record.model_copy(update={"findings": (_finding("high", "Global risk"),)})
    items = [ItemResult(record, "failed")]
    pinned = json.loads(render_sarif(items, run.anchors(), fallback_path="pyproject.toml"))
    result = pinned["runs"][0]["results"][0]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pyproject.toml"
    assert "anchored at pyproject.toml" in result["message"]["text"]
    bare = json.loads(render_sarif(items, run.anchors()))
    assert "locations" not in bare["runs"][0]["results"][0]
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(bare)


def test_sarif_fingerprints_are_stable_and_ignore_moved_lines(run: Run) -> None:
    first = build_sarif(run.results, run.anchors())
    again = build_sarif(run.results, run.anchors())
    prints = [r.partial_fingerprints for r in first.runs[0].results]
    assert prints == [r.partial_fingerprints for r in again.runs[0].results]
    assert len({p["advreviewFinding/v1"] for p in prints}) == len(prints)
    # The plan gains lines above the section: the region moves, the fingerprint does not.
    (run.root / "docs" / "plans" / "failed.md").write_text("# Intro\n\nMore.\n\n" + PLAN)
    moved = build_sarif(run.results, Anchors(run.root))
    old = first.runs[0].results
    new = moved.runs[0].results
    assert [r.partial_fingerprints for r in new] == prints
    changed = [
        (a.locations, b.locations)
        for a, b in zip(old, new, strict=True)
        if a.locations != b.locations
    ]
    assert changed  # the section finding did move


def test_sarif_reports_an_errored_review_as_a_notification_not_a_result(run: Run) -> None:
    log = json.loads(render_sarif(run.results, run.anchors()))
    invocation = log["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    [note] = invocation["toolExecutionNotifications"]
    assert note["level"] == "error"
    assert "docs/plans/errored.md::adversarial-review: aborted" in note["message"]["text"]
    assert "high demand" in note["message"]["text"]
    items = {r["properties"]["item"] for r in log["runs"][0]["results"]}
    assert "docs/plans/errored.md::adversarial-review" not in items


def test_sarif_quotes_paths_with_spaces_into_valid_uri_references(tmp_path: Path) -> None:
    finding = _finding("medium", "Odd name", file="docs/my plan #1.md", line_start=1)
    record = _record("x.md", ReviewStatus.REVISE, "failed", (finding,), fail_on=Severity.MEDIUM)
    log = json.loads(render_sarif([ItemResult(record, "failed")], Anchors(tmp_path)))
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri["uri"] == "docs/my%20plan%20%231.md"


def test_sarif_of_a_run_without_reviews_is_valid_and_empty(tmp_path: Path) -> None:
    log = json.loads(render_sarif([], Anchors(tmp_path)))
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)
    assert log["runs"][0]["results"] == []
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is True


# -- JSON ----------------------------------------------------------------------------------


def test_committed_results_schema_equals_the_generated_one() -> None:
    assert RESULTS_SCHEMA_PATH.read_text() == schema_text(), (
        "docs/advreview-results.schema.json is stale; regenerate it with "
        "`python -m pytest_advreview.report.json_report > docs/advreview-results.schema.json`"
    )


def test_json_report_validates_against_its_published_schema(run: Run) -> None:
    data = json.loads(render_json(Settings(fail_on=Severity.HIGH), run.results))
    schema = json.loads(RESULTS_SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(data)
    assert ResultsReport.model_validate(data).schema_version == SCHEMA_VERSION == 1


def test_json_report_carries_rounds_runner_results_findings_and_totals(run: Run) -> None:
    data = json.loads(render_json(Settings(fail_on=Severity.HIGH), run.results))
    assert data["plugin"] == "pytest-advreview"
    assert data["settings"]["fail_on"] == "high"
    assert "codex_config" not in data["settings"]  # may carry secrets or local URLs
    assert [i["nodeid"] for i in data["items"]] == [r.record.nodeid for r in run.results]
    failed = next(i for i in data["items"] if i["record"]["key"] == "docs/plans/failed.md")
    runner = failed["record"]["rounds"][0]["runner"]
    assert runner["result"] == "success" and runner["review_quality"] == "valid"
    assert set(runner) >= {"result", "verdict", "attempt_id", "review_quality", "triage"}
    assert len(failed["record"]["findings"]) == 4
    assert failed["record"]["decisions"][0]["action"] == "reject"
    totals = data["totals"]
    assert totals["gate"] == "failed"
    assert totals["outcomes"] == {"error": 1, "failed": 2, "passed": 1, "warned": 1}
    assert totals["findings"] == {"critical": 1, "high": 4, "medium": 1}
    assert totals["tokens"]["input_tokens"] == 5000


@pytest.mark.parametrize(
    ("outcomes", "gate"),
    [((), "empty"), (("passed",), "passed"), (("passed", "error"), "error")],
)
def test_gate_word_orders_failed_over_error_over_passed(
    outcomes: tuple[str, ...], gate: str
) -> None:
    status = {"passed": ReviewStatus.APPROVED, "error": ReviewStatus.ABORTED}
    results = [ItemResult(_record(f"{n}.md", status[o], o), o) for n, o in enumerate(outcomes)]
    assert json.loads(render_json(Settings(), results))["totals"]["gate"] == gate


# -- markdown ------------------------------------------------------------------------------


def test_markdown_has_one_section_per_item_with_status_meaning_and_findings(run: Run) -> None:
    text = render_markdown(Settings(fail_on=Severity.HIGH), run.results)
    assert text.startswith("# Adversarial review\n")
    assert "**Gate: failed** — 5 reviews: 2 failed, 1 could not run" in text
    sections = re.findall(r"^## (?:✅|⚠|❌|⛔) .*$", text, re.M)  # not the reviews' own
    assert len(sections) == 5
    assert "## ❌ docs/plans/failed.md — revise (failed)" in sections
    assert "## ⛔ docs/plans/errored.md — aborted (error)" in sections
    for status in ("revise", "aborted"):
        assert MEANING[status] in text
    row = next(line for line in text.splitlines() if "Lock order is unspecified" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[0] == "high (fails)"
    assert cells[2] == "Lock order is unspecified"
    assert cells[3] == "src/app.py lines 3-7"
    assert "- **Why the reviewer could not run:** codex exited 1" in text


def test_markdown_escapes_hostile_titles_in_tables(run: Run) -> None:
    text = render_markdown(Settings(), run.results)
    row = next(line for line in text.splitlines() if "Title with %" in line)
    assert row.count(" | ") == 4  # five cells: the newline and pipes did not break the row
    assert "\n::error" not in text


def test_markdown_operator_summary_lists_decisions_rounds_and_remaining(run: Run) -> None:
    text = render_markdown(Settings(fail_on=Severity.HIGH), run.results)
    failed = text.split("## ❌ docs/plans/failed.md", 1)[1].split("\n## ", 1)[0]
    assert "**Operator summary**" in failed
    assert "- **Final status:** revise — " + MEANING["revise"] in failed
    assert "- **Verification performed:** round 1 (initial review): REVISE, review valid" in failed
    assert "rejected: `AR-" in failed and "Owned by ops" in failed
    assert "- **Remaining findings:** 1 critical, 3 high; at or above fail-on (high):" in failed
    low = text.split("docs/plans/low.md — revise (warned)", 1)[1].split("\n## ", 1)[0]
    assert "none at or above fail-on (high)" in low


def test_markdown_keeps_reviews_verbatim_in_collapsed_details(run: Run) -> None:
    text = render_markdown(Settings(), run.results)
    raw = run.by_key("docs/plans/failed.md").record.rounds[0].review
    assert raw is not None
    section = text.split("## ❌ docs/plans/failed.md", 1)[1]
    block = section.split("<summary>Review, round 1 (initial review), verbatim</summary>", 1)[1]
    assert block.startswith("\n\n````markdown\n" + raw.raw + "\n````\n\n</details>")
    assert text.count("<details>") == 4  # every item with a review; not the errored one
    assert "<details>" not in render_markdown(Settings(), run.results, verbatim=False)


def test_step_summary_drops_the_reviews_when_too_big_for_github(run: Run) -> None:
    huge = "x" * (STEP_SUMMARY_LIMIT + 10)
    record = _record("big.md", ReviewStatus.APPROVED, "passed", raw=huge + "\nVERDICT: APPROVED")
    text = step_summary(Settings(), [ItemResult(record, "passed")])
    assert len(text.encode()) < STEP_SUMMARY_LIMIT
    assert "left out here to stay within GitHub's size limit" in text


# -- GitHub --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "env", "on"),
    [
        ("auto", {"GITHUB_ACTIONS": "true"}, True),
        ("auto", {}, False),
        ("auto", {"GITHUB_ACTIONS": "false"}, False),
        ("on", {}, True),
        ("off", {"GITHUB_ACTIONS": "true"}, False),
    ],
)
def test_github_mode_auto_follows_github_actions(mode: str, env: dict[str, str], on: bool) -> None:
    assert github.enabled(mode, env) is on


def test_github_escaping_of_data_and_properties() -> None:
    assert github.escape_data("100% a\r\nb::c,d") == "100%25 a%0D%0Ab::c,d"
    assert github.escape_property("100% a\r\nb::c,d") == "100%25 a%0D%0Ab%3A%3Ac%2Cd"


def test_hostile_title_cannot_break_out_of_its_annotation(run: Run) -> None:
    lines = github.workflow_commands(run.results, run.anchors())
    [line] = [c for c in lines if "Title with" in c]
    assert "\n" not in line and "\r" not in line
    props, message = line.removeprefix("::error ").split("::", 1)
    assert props.startswith("file=docs/plans/failed.md,title=")
    title = props.split("title=", 1)[1]
    assert title.endswith("Title with %25%2C a newline%0Aand %3A%3Aerror%3A%3A plus%2C commas")
    assert "," not in title and ":" not in title
    # In the message only %, CR and LF are escaped: the text stays on one line.
    assert message.startswith("[severity: high] AR-")
    assert "Title with %25, a newline%0Aand ::error:: plus, commas (Not a heading here)" in message


def test_annotations_carry_file_line_end_line_and_title(run: Run) -> None:
    lines = github.workflow_commands(run.results, run.anchors())
    assert (
        next(c for c in lines if "Lock order" in c).split("::")[1]
        == "error file=src/app.py,line=3,endLine=7,title=[high] "
        + finding_id(
            "Lock order is unspecified", Location(file="src/app.py", line_start=3, line_end=7)
        )
        + " Lock order is unspecified"
    )
    section = next(c for c in lines if "Rollback drops data" in c)
    assert section.startswith(f"::error file=docs/plans/failed.md,line={ROLLBACK_LINE},")
    low = next(c for c in lines if "Wording of step 2" in c)
    assert low.startswith("::warning file=docs/plans/low.md,line=3,endLine=3,title=[medium] ")
    errored = next(c for c in lines if "could not run" in c)
    assert errored.startswith("::error file=docs/plans/errored.md,title=pytest-advreview")


def test_annotations_are_capped_at_ten_per_level_worst_first_with_one_notice() -> None:
    findings = tuple(
        _finding(sev, f"{sev} finding {n}", section="Rollout")
        for sev in ("medium", "high", "critical")
        for n in range(7)
    )
    record = _record("many.md", ReviewStatus.REVISE, "failed", findings)
    errored = _record("zz.md", ReviewStatus.ABORTED, "error", error="boom")
    results = [ItemResult(record, "failed"), ItemResult(errored, "error")]
    lines = github.workflow_commands(results, Anchors(Path("/nonexistent")))
    errors = [c for c in lines if c.startswith("::error ")]
    warnings = [c for c in lines if c.startswith("::warning ")]
    notices = [c for c in lines if c.startswith("::notice ")]
    assert (len(errors), len(warnings), len(notices)) == (10, 7, 1)
    assert "could not run" in errors[0]  # reviews that could not run come first
    assert all("[critical]" in c for c in errors[1:8])
    assert all("[high]" in c for c in errors[8:])
    assert notices[0] == (
        "::notice title=pytest-advreview::5 errors not annotated: GitHub shows at most 10 "
        "annotations per level and step; the step summary and the SARIF report have all findings"
    )
    assert lines[-1] == notices[0]


# -- publish: files, step summary, failures ------------------------------------------------


class _Plugins:
    def get_plugin(self, name: str) -> None:
        return None


@dataclass
class FakeConfig:
    """What :func:`publish` reads from a config (no terminal: output goes to stdout)."""

    rootpath: Path
    inipath: Path | None = None
    pluginmanager: _Plugins = field(default_factory=_Plugins)


def _settings(base: Path, **kw: Any) -> Settings:
    return Settings(
        report=str(base / "out" / "report.md"),
        sarif=str(base / "out" / "deep" / "advreview.sarif"),
        json_report=str(base / "out" / "results.json"),
        fail_on=Severity.HIGH,
        **kw,
    )


def test_publish_writes_every_report_creating_folders_and_leaving_no_temp_files(
    run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = _settings(run.root, github="off")
    assert publish(FakeConfig(run.root), settings, run.results, environ={})  # type: ignore[arg-type]
    out = run.root / "out"
    assert json.loads((out / "results.json").read_text())["totals"]["gate"] == "failed"
    assert (out / "report.md").read_text() == render_markdown(settings, run.results)
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(
        json.loads((out / "deep" / "advreview.sarif").read_text())
    )
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == [
        "advreview.sarif",
        "report.md",
        "results.json",
    ]
    assert capsys.readouterr().out == ""  # github off: nothing printed


def test_publish_names_an_unwritable_report_and_still_writes_the_others(
    run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = run.root / "out" / "deep"
    blocker.parent.mkdir()
    blocker.write_text("a file where the SARIF folder should be")
    settings = _settings(run.root, github="off")
    written = publish(FakeConfig(run.root), settings, run.results, environ={})  # type: ignore[arg-type]
    assert written is False
    out = capsys.readouterr().out
    assert f"pytest-advreview: WARNING: cannot write --advreview-sarif={settings.sarif}" in out
    assert "Traceback" not in out
    assert (run.root / "out" / "report.md").is_file()
    assert (run.root / "out" / "results.json").is_file()


def test_write_atomic_replaces_the_file_whole_and_cleans_up_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "a" / "r.txt"
    write_atomic(target, "one\n")
    write_atomic(target, "two\n")
    assert target.read_bytes() == b"two\n"
    assert oct(target.stat().st_mode & 0o777) == oct(0o644)
    folder = tmp_path / "a" / "dir"
    folder.mkdir()
    with pytest.raises(OSError):
        write_atomic(folder, "x")  # os.replace cannot replace a folder with a file
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["dir", "r.txt"]


def test_github_mode_prints_annotations_and_appends_the_step_summary(
    run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = run.root / "summary.md"
    summary.write_text("# Earlier step\n\nkept\n")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    settings = Settings(fail_on=Severity.HIGH)
    config = FakeConfig(run.root)
    publish(config, settings, run.results, environ=env)  # type: ignore[arg-type]
    publish(config, settings, run.results, environ=env)  # type: ignore[arg-type]
    text = summary.read_text()
    assert text.startswith("# Earlier step\n\nkept\n# Adversarial review\n")
    assert text.count("# Adversarial review\n") == 2  # appended, never overwritten
    out = capsys.readouterr().out.splitlines()
    commands = [line for line in out if line.startswith("::")]
    assert commands == github.workflow_commands(run.results, run.anchors()) * 2


def test_github_mode_without_a_step_summary_file_only_annotates(
    run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(
        FakeConfig(run.root),  # type: ignore[arg-type]
        Settings(github="on"),
        run.results,
        environ={},
    )
    assert capsys.readouterr().out.startswith("::error ")


def test_unwritable_step_summary_is_a_warning(run: Run, capsys: pytest.CaptureFixture[str]) -> None:
    env = {"GITHUB_STEP_SUMMARY": str(run.root / "no" / "such" / "dir" / "summary")}
    publish(FakeConfig(run.root), Settings(github="on"), run.results, environ=env)  # type: ignore[arg-type]
    out = capsys.readouterr().out
    where = env["GITHUB_STEP_SUMMARY"]
    assert f"WARNING: cannot append the step summary to GITHUB_STEP_SUMMARY={where}" in out


# -- exit status ---------------------------------------------------------------------------


def _one(outcome: str) -> ItemResult:
    status = {"passed": ReviewStatus.APPROVED, "failed": ReviewStatus.REVISE}
    return ItemResult(
        _record(f"{outcome}.md", status.get(outcome, ReviewStatus.ABORTED), outcome), outcome
    )


@pytest.mark.parametrize(
    ("strict", "outcomes", "pytest_status", "expected"),
    [
        (False, ("error",), 1, 1),
        (True, ("error",), 1, EXIT_REVIEW_ERRORS),
        (True, ("error", "passed"), 1, EXIT_REVIEW_ERRORS),
        (True, ("error", "failed"), 1, 1),
        (True, ("failed",), 1, 1),
        (True, ("passed",), 0, 0),
        (True, ("error",), 2, 2),  # interrupted stays interrupted
    ],
)
def test_strict_exit_tells_could_not_run_from_found_problems(
    strict: bool, outcomes: tuple[str, ...], pytest_status: int, expected: int
) -> None:
    results = [_one(o) for o in outcomes]
    assert exit_status(Settings(strict_exit=strict), results, pytest_status) == expected


def test_strict_exit_keeps_1_when_another_test_failed() -> None:
    class Report:
        nodeid = "tests/test_unit.py::test_x"

    class Terminal:
        stats: dict[str, list[object]] = {"failed": [Report()]}  # noqa: RUF012

    class Plugins:
        def get_plugin(self, name: str) -> object:
            return Terminal()

    config = FakeConfig(Path("."), pluginmanager=Plugins())  # type: ignore[arg-type]
    results = [_one("error")]
    settings = Settings(strict_exit=True)
    assert exit_status(settings, results, 1, config=config) == 1  # type: ignore[arg-type]
    Terminal.stats = {"error": [type("R", (), {"nodeid": results[0].record.nodeid})()]}
    assert exit_status(settings, results, 1, config=config) == EXIT_REVIEW_ERRORS  # type: ignore[arg-type]


def test_exit_code_constant_does_not_clash_with_pytest_codes() -> None:
    assert EXIT_REVIEW_ERRORS not in {int(code) for code in pytest.ExitCode}


# -- settings ------------------------------------------------------------------------------


def test_github_and_strict_exit_settings_resolve_from_cli_env_and_ini(
    pytester: pytest.Pytester,
) -> None:
    from pytest_advreview.settings import resolve

    def both(*args: str, env: dict[str, str] | None = None) -> tuple[str, bool]:
        settings = resolve(pytester.parseconfig(*args), env or {})
        return settings.github, settings.strict_exit

    assert both() == ("auto", False)
    pytester.makeini("[pytest]\nadvreview_github = off\nadvreview_strict_exit = true\n")
    assert both() == ("off", True)
    assert both(env={"ADVREVIEW_GITHUB": "on", "ADVREVIEW_STRICT_EXIT": "no"}) == ("on", False)
    assert both("--advreview-github=auto", env={"ADVREVIEW_GITHUB": "on"}) == ("auto", True)
    with pytest.raises(
        pytest.UsageError,
        match=r"--advreview-github=sometimes is not valid; choose one of: auto, on, off",
    ):
        both("--advreview-github=sometimes")


# -- the CI recipe -------------------------------------------------------------------------


def _workflow() -> dict[str, Any]:
    text = CI_DOC.read_text()
    blocks = re.findall(r"^```yaml\n(.*?)^```", text, re.M | re.S)
    workflows = [yaml.safe_load(b) for b in blocks]
    # The first workflow is the recipe; the sharded one at the end has a test of its own.
    workflow: dict[str, Any] = next(w for w in workflows if isinstance(w, dict) and "jobs" in w)
    return workflow


def test_ci_recipe_is_valid_yaml_with_the_key_steps() -> None:
    workflow = _workflow()
    # YAML 1.1 reads the key "on" as True.
    triggers = workflow.get("on", workflow.get(True))
    assert "pull_request" in triggers
    assert "merge_group" in triggers  # the merge queue runs the gate too
    assert workflow["permissions"] == {}
    assert "github.event.pull_request.number" in workflow["concurrency"]["group"]
    review_job, upload_job = workflow["jobs"]["review"], workflow["jobs"]["upload-sarif"]
    steps = review_job["steps"]

    def step(uses: str) -> dict[str, Any]:
        found: dict[str, Any] = next(s for s in steps if s.get("uses", "").startswith(uses))
        return found

    checkout = step("actions/checkout@")["with"]
    assert checkout["fetch-depth"] == 0  # history for the base
    assert checkout["persist-credentials"] is False
    # The action: the key only through env:, never as an input or in a script.
    gate = next(s for s in steps if "/pytest-advreview@" in s.get("uses", ""))
    assert gate["env"] == {"CODEX_API_KEY": "${{ secrets.OPENAI_API_KEY }}"}
    assert all("secrets." not in str(v) for v in gate.get("with", {}).values())
    assert steps[0]["uses"].startswith("actions/checkout@")  # nothing runs before the gate
    assert review_job["permissions"]["contents"] == "read"
    assert set(review_job["permissions"]) <= {"contents", "pull-requests"}

    # The SARIF is uploaded from a separate job, also when the gate failed.
    assert upload_job["needs"] == "review"
    assert "always()" in upload_job["if"]
    assert upload_job["permissions"]["security-events"] == "write"
    assert upload_job["permissions"]["actions"] == "read"  # private repositories
    download = next(s for s in upload_job["steps"] if "download-artifact" in s.get("uses", ""))
    upload = next(s for s in upload_job["steps"] if "upload-sarif" in s.get("uses", ""))
    assert upload["with"]["sarif_file"].startswith(download["with"]["path"] + "/")


def test_ci_doc_names_the_exit_code_and_options_that_exist() -> None:
    text = CI_DOC.read_text()
    assert f"exits with **{EXIT_REVIEW_ERRORS}**" in text
    for option in ("--advreview-sarif", "--advreview-github", "--advreview-strict-exit"):
        assert option in text
