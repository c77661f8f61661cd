"""``--advreview-rdjson`` over hand-built results, and the count of findings with a line.

(The places reviewers cite are read in ``test_locations.py``.)  The rdjson writer is checked against
reviewdog's published schema with the pinned ``@umbrelladocs/rdformat-validator``.  The
run with the real Codex CLI is in ``test_rdjson_e2e.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import test_reports
from pytest_advreview import outbound
from pytest_advreview.models import ReviewStatus
from pytest_advreview.report.collect import ItemResult, with_line
from pytest_advreview.report.files import Anchors
from pytest_advreview.report.rdjson import build_rdjson, render_rdjson
from test_reports import Run, _finding, _record

Validate = Callable[[Path], None]
#: The report tests' run: approved, failed (located / unlocated), below-threshold, errored.
run = test_reports.run


def test_with_line_counts_the_findings_whose_reviewer_cited_a_usable_line() -> None:
    findings = (
        _finding("high", "a", file="src/pay.py", line_start=1),
        _finding("high", "b", file="src/pay.py", line_start=9, line_end=10),
        _finding("high", "c", file="src/pay.py"),
        _finding("medium", "d", section="Rollout"),
        _finding("high", "e"),
        _finding("high", "f", file="src/pay.py", line_start=10, line_end=9),
    )
    record = _record("", ReviewStatus.REVISE, "failed", findings, kind="code")
    assert with_line([ItemResult(record, "failed")]) == (2, 6)
    assert with_line([]) == (0, 0)


# -- the rdjson file -----------------------------------------------------------------------


def _diagnostics(run: Run, fallback: str | None = "pytest.ini") -> list[dict[str, Any]]:
    data = json.loads(render_rdjson(run.results, run.anchors(), fallback_path=fallback))
    assert data["source"] == {"name": "pytest-advreview"}
    diagnostics: list[dict[str, Any]] = data["diagnostics"]
    return diagnostics


def test_rdjson_validates_against_reviewdogs_schema(
    run: Run, tmp_path: Path, rdformat_validator: Validate
) -> None:
    path = tmp_path / "advreview.rdjson"
    path.write_text(render_rdjson(run.results, run.anchors(), fallback_path="pytest.ini"))
    rdformat_validator(path)


def test_the_validator_rejects_what_reviewdog_would_reject(
    tmp_path: Path, rdformat_validator: Validate
) -> None:
    # The check above can fail: a diagnostic without a path and with an unknown severity.
    path = tmp_path / "bad.rdjson"
    path.write_text(json.dumps({"diagnostics": [{"message": "m", "severity": "FATAL"}]}))
    with pytest.raises(AssertionError, match="is not valid rdjson"):
        rdformat_validator(path)


def test_rdjson_has_one_diagnostic_per_open_finding_with_its_place(run: Run) -> None:
    by_title = {d["message"].splitlines()[0]: d for d in _diagnostics(run)}
    located = by_title["[high] Lock order is unspecified"]
    assert located["location"] == {
        "path": "src/app.py",
        "range": {"start": {"line": 3}, "end": {"line": 7}},
    }
    assert located["code"]["value"].startswith("AR-")
    assert located["source"] == {"name": "pytest-advreview"}
    # ./src/retry.py: repo-relative; one line is a range that ends where it starts.
    assert by_title["[high] Retry loop never ends"]["location"] == {
        "path": "src/retry.py",
        "range": {"start": {"line": 12}, "end": {"line": 12}},
    }
    # A plan section: the line of its heading; no place: the plan itself, no range.
    assert by_title["[critical] Rollback drops data"]["location"]["range"]["start"] == {"line": 12}
    assert by_title["[high] No owner for the cut-over"]["location"] == {
        "path": "docs/plans/failed.md"
    }
    message = located["message"]
    assert "What can go wrong: A crash halfway leaves both schemas live." in message
    assert "Recommendation: Add a rollback checkpoint." in message
    findings = [f for r in run.results for f in r.record.findings]
    assert len([d for d in _diagnostics(run) if d["code"]["value"] != "review-error"]) == len(
        findings
    )


def test_rdjson_severity_is_the_gates_judgement(run: Run) -> None:
    severities = {d["message"].splitlines()[0]: d["severity"] for d in _diagnostics(run)}
    assert severities["[critical] Rollback drops data"] == "ERROR"
    assert severities["[high] Lock order is unspecified"] == "ERROR"
    # Below fail-on (high): the item passed with a warning.
    assert severities["[medium] Wording of step 2 is vague"] == "WARNING"


def test_a_finding_that_does_not_fail_its_item_is_a_warning_whatever_its_severity() -> None:
    critical = _finding("critical", "Decided away", file="src/pay.py", line_start=3)
    record = _record("", ReviewStatus.APPROVED, "passed", (critical,), kind="code")
    record = record.model_copy(update={"failing_ids": ()})
    result = build_rdjson([ItemResult(record, "passed")], Anchors(Path.cwd()))
    assert [d.severity for d in result.diagnostics] == ["WARNING"]


def test_an_errored_review_is_an_error_diagnostic_at_its_plan(run: Run) -> None:
    [error] = [d for d in _diagnostics(run) if d["code"]["value"] == "review-error"]
    assert error["severity"] == "ERROR"
    assert error["location"] == {"path": "docs/plans/errored.md"}
    assert "high demand" in error["message"]


def test_a_code_finding_without_a_place_is_pinned_to_the_configuration_file(
    tmp_path: Path,
) -> None:
    loose = _finding("high", "Somewhere")
    record = _record("", ReviewStatus.REVISE, "failed", (loose,), kind="code")
    results = [ItemResult(record, "failed")]
    [diagnostic] = build_rdjson(results, Anchors(tmp_path), fallback_path="pytest.ini").diagnostics
    assert diagnostic.location.path == "pytest.ini"
    assert "No file was named; anchored at pytest.ini." in diagnostic.message
    # Without a configuration file there is no path: reviewdog cannot take it.
    assert build_rdjson(results, Anchors(tmp_path)).diagnostics == ()


def test_rdjson_texts_pass_the_one_redaction_and_neutralisation_pass(tmp_path: Path) -> None:
    secret = "Zx9PlantedSecretValue4Qw"
    outbound.install(outbound.Redactor.from_environ({"DEPLOY_TOKEN": secret}))
    try:
        hostile = _finding("high", f"Leaks {secret}\u202e here", file="src/pay.py", line_start=2)
        record = _record("", ReviewStatus.REVISE, "failed", (hostile,), kind="code")
        text = render_rdjson([ItemResult(record, "failed")], Anchors(tmp_path))
    finally:
        outbound.install(None)
    assert secret not in text
    assert "\u202e" not in json.loads(text)["diagnostics"][0]["message"]


def test_no_line_of_a_message_is_a_gitlab_quick_action(tmp_path: Path) -> None:
    # GitLab runs a note's line that starts with "/" as a quick action with the poster's
    # rights; the reviewer's text (which the merge request can steer) must not merge it.
    hostile = _finding("high", "/merge", file="src/pay.py", line_start=2).model_copy(
        update={
            "recommendation": "Fix it.\n/approve\n  /close\r/label ~ok\u2028/unassign\x0b/merge",
            "impact": "/lock",
        }
    )
    record = _record("", ReviewStatus.REVISE, "failed", (hostile,), kind="code")
    errored = _record("errored.md", ReviewStatus.ABORTED, "error", error="boom\n/merge\n/approve")
    results = [ItemResult(record, "failed"), ItemResult(errored, "error")]
    data = json.loads(render_rdjson(results, Anchors(tmp_path), fallback_path="pytest.ini"))
    messages = [d["message"] for d in data["diagnostics"]]
    assert len(messages) == 2
    for message in messages:
        for line in message.split("\n"):
            assert not line.lstrip().startswith("/"), line
    assert "\\/approve" in messages[0] and "\\/merge" in messages[1]


def test_a_message_mentions_nobody(tmp_path: Path) -> None:
    # reviewdog posts the message as a comment: a mention there would notify.
    hostile = _finding("high", "Ask @octo-org/admins", file="src/pay.py", line_start=2)
    hostile = hostile.model_copy(update={"recommendation": "@alice merge it; `@bob` is code"})
    record = _record("", ReviewStatus.REVISE, "failed", (hostile,), kind="code")
    data = json.loads(render_rdjson([ItemResult(record, "failed")], Anchors(tmp_path)))
    (message,) = [d["message"] for d in data["diagnostics"]]
    assert "<code>@octo-org/admins</code>" in message
    assert "<code>@alice</code> merge it; `@bob` is code" in message
