"""Every report format from real runs of the plugin, reviewed by the scripted reviewer.

One repository holds four plans whose reviews are scripted: approved, failed (findings
with a section, with a file and lines, and without a location), below the threshold
(passed with a warning) and errored (the model service answers HTTP 500).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conftest import git
from pytest_advreview.constants import EXIT_REVIEW_ERRORS
from pytest_advreview.testing import (
    FindingSpec,
    ScriptedReviews,
    approved_review,
    review_text,
    revise_review,
)

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parent.parent
SARIF_SCHEMA = json.loads((DATA / "sarif-schema-2.1.0.json").read_text())
RESULTS_SCHEMA = json.loads((ROOT / "docs" / "advreview-results.schema.json").read_text())

PLAN = "# Plan {name}\n\n## Rollout\n\nDeploy in waves.\n\n## Rollback\n\nRestore the backup.\n"
ROLLBACK_LINE = 7
HOSTILE = "Locks: taken, released %d times"

REVIEWS: dict[str, dict[str, Any]] = {
    "approved.md": {"message": approved_review()},
    "failed.md": {
        "message": revise_review(
            FindingSpec("critical", "Rollback drops data", section="Rollback"),
            FindingSpec("high", HOSTILE, file="src/app.py", lines=(3, 7)),
            FindingSpec("high", "No owner for the cut-over"),
        )
    },
    "low.md": {
        "message": revise_review(FindingSpec("medium", "Wording is vague", section="Rollout"))
    },
    "errored.md": {"http_status": 500},
    # APPROVED next to a medium finding: contradictory at fail-on=medium, a note at high.
    "contradictory.md": {
        "message": review_text(
            "APPROVED", [FindingSpec("medium", "Backups are never tested", section="Rollback")]
        )
    },
    "approved-note.md": {
        "message": review_text(
            "APPROVED", [FindingSpec("medium", "Wave size is unstated", section="Rollout")]
        )
    },
}


class Repo:
    """A git repository under ``pytester.path`` with scripted plans, and how to run it."""

    def __init__(self, pytester: pytest.Pytester, server: ScriptedReviews) -> None:
        self.pytester = pytester
        self.server = server
        self.path = pytester.path
        git(self.path, "init", "-b", "main")
        git(self.path, "config", "user.name", "Test")
        git(self.path, "config", "user.email", "test@example.com")
        # pytester's subprocess runs write ./stdout and ./stderr while the reviews run: they
        # must not count as a workspace mutation.  out*/ holds the reports and summaries.
        (self.path / ".gitignore").write_text(
            ".pytest_cache/\n__pycache__/\nout*/\n/stdout\n/stderr\n"
        )
        git(self.path, "add", ".gitignore")
        git(self.path, "commit", "-m", "initial")
        self.rules: list[dict[str, Any]] = []

    def plans(self, *names: str) -> None:
        folder = self.path / "docs" / "plans"
        folder.mkdir(parents=True, exist_ok=True)
        for name in names:
            (folder / name).write_text(PLAN.format(name=name))
            self.rules.append({"match": name, "in": "last_user", "steps": [REVIEWS[name]]})
        self.server.set_script({"rules": self.rules})

    def args(self, out: str, *extra: str) -> list[str]:
        return [
            "--advreview-fresh",  # every run reviews again (no cached verdicts)
            # In-process runs inherit this suite's filterwarnings=error; a below-threshold
            # finding must stay a warning there.
            "-W",
            "default::pytest_advreview.outcome.ReviewWarning",
            "--adversarial-review",
            "--advreview-model=fake-model",
            "--advreview-diff=none",
            "--advreview-timeout=60",
            "--advreview-fail-on=high",
            f"--advreview-json={out}/results.json",
            f"--advreview-report={out}/report.md",
            f"--advreview-sarif={out}/advreview.sarif",
            f"--advreview-rdjson={out}/advreview.rdjson",
            *extra,
        ]


@pytest.fixture
def repo(
    pytester: pytest.Pytester,
    scripted_reviewer: ScriptedReviews,
    monkeypatch: pytest.MonkeyPatch,
) -> Repo:
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "OPENAI_API_KEY", "CODEX_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("ADVREVIEW_GITHUB", "ADVREVIEW_STRICT_EXIT", "GITHUB_BASE_REF"):
        monkeypatch.delenv(name, raising=False)
    return Repo(pytester, scripted_reviewer)


def _commands(stdout: str) -> list[str]:
    """The workflow commands of a run, without the pause around the terminal summary
    (``::stop-commands::TOKEN`` ... ``::TOKEN::``, the plugin's guard of its log)."""
    lines = [line for line in stdout.splitlines() if line.startswith("::")]
    tokens = {line.split("::")[2] for line in lines if line.startswith("::stop-commands::")}
    pause = {f"::stop-commands::{t}" for t in tokens} | {f"::{t}::" for t in tokens}
    return [line for line in lines if line not in pause]


def test_a_real_run_writes_every_format_and_annotates_on_github(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.plans("approved.md", "failed.md", "low.md", "errored.md")
    summary = repo.path / "out-github" / "step-summary.md"
    summary.parent.mkdir()
    summary.write_text("## Tests\n\nall green\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))

    result = repo.pytester.runpytest(*repo.args("out"))
    result.assert_outcomes(passed=2, failed=1, errors=1, warnings=1)
    out = repo.path / "out"

    sarif = json.loads((out / "advreview.sarif").read_text())
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(sarif)
    results = sarif["runs"][0]["results"]
    # In the record's order: highest severity first.
    assert sorted((r["level"], r["message"]["text"].splitlines()[0]) for r in results) == [
        ("error", "[critical] Rollback drops data"),
        ("error", f"[high] {HOSTILE}"),
        ("error", "[high] No owner for the cut-over"),
        ("warning", "[medium] Wording is vague"),
    ]
    where = {
        r["message"]["text"].splitlines()[0]: r["locations"][0]["physicalLocation"] for r in results
    }
    section = where["[critical] Rollback drops data"]
    assert section["artifactLocation"]["uri"] == "docs/plans/failed.md"
    assert section["region"] == {"startLine": ROLLBACK_LINE, "endLine": ROLLBACK_LINE}
    located = where[f"[high] {HOSTILE}"]
    assert located["artifactLocation"]["uri"] == "src/app.py"
    assert located["region"] == {"startLine": 3, "endLine": 7}
    unlocated = where["[high] No owner for the cut-over"]  # no location named: the plan
    assert unlocated == {
        "artifactLocation": {"uri": "docs/plans/failed.md", "uriBaseId": "%SRCROOT%"}
    }
    assert sarif["runs"][0]["invocations"][0]["executionSuccessful"] is False

    data = json.loads((out / "results.json").read_text())
    jsonschema.Draft202012Validator(RESULTS_SCHEMA).validate(data)
    assert data["totals"]["gate"] == "failed"
    assert data["totals"]["outcomes"] == {"error": 1, "failed": 1, "passed": 1, "warned": 1}
    failed = next(i for i in data["items"] if i["record"]["key"] == "docs/plans/failed.md")
    assert failed["record"]["rounds"][0]["runner"]["result"] == "success"
    assert failed["record"]["tokens"]["input_tokens"] > 0

    report = (out / "report.md").read_text()
    for key, head in (
        ("approved.md", "✅ docs/plans/approved.md — approved (passed)"),
        ("failed.md", "❌ docs/plans/failed.md — revise (failed)"),
        ("low.md", "⚠ docs/plans/low.md — revise (warned)"),
        ("errored.md", "⛔ docs/plans/errored.md — aborted (error)"),
    ):
        assert f"\n## {head}\n" in report, key
    assert report.count("<details>") == 3  # the verbatim reviews; the errored item has none

    text = summary.read_text()
    assert text.startswith("## Tests\n\nall green\n# Adversarial review\n")
    assert text.endswith(report + "\n")

    commands = _commands(result.stdout.str())
    assert [c.split(" ", 1)[0] for c in commands] == ["::error"] * 4 + ["::warning"]
    assert commands[0].startswith("::error file=docs/plans/errored.md,title=pytest-advreview")
    assert commands[1].startswith(
        f"::error file=docs/plans/failed.md,line={ROLLBACK_LINE},endLine={ROLLBACK_LINE},"
        "title=[critical] AR-"
    )
    [hostile] = [c for c in commands if "src/app.py" in c]
    assert hostile.startswith("::error file=src/app.py,line=3,endLine=7,title=[high] AR-")
    title, message = hostile.split("title=", 1)[1].split("::", 1)
    assert title.endswith(" Locks%3A taken%2C released %25d times")
    assert message.startswith("[severity: high] AR-")
    assert "Locks: taken, released %25d times (src/app.py lines 3-7)%0A" in message
    assert commands[-1].startswith("::warning file=docs/plans/low.md,line=3,endLine=3,")


def _never_passed_and_failing(out: Path, stdout: str) -> None:
    """No report says an item passed while it lists a finding of that item as failing."""
    data = json.loads((out / "results.json").read_text())
    jsonschema.Draft202012Validator(RESULTS_SCHEMA).validate(data)
    for item in data["items"]:
        record = item["record"]
        if record["outcome"] in ("passed", "warned") or item["pytest_outcome"] == "passed":
            assert record["failing_ids"] == [], record["key"]
    report = (out / "report.md").read_text()
    for block in report.split("\n## ")[1:]:
        if "(passed)" in block.splitlines()[0] or "(warned)" in block.splitlines()[0]:
            assert "(fails)" not in block
    sarif = json.loads((out / "advreview.sarif").read_text())
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(sarif)
    passing = {i["nodeid"] for i in data["items"] if i["record"]["outcome"] in ("passed", "warned")}
    for result in sarif["runs"][0]["results"]:
        if result["properties"]["item"] in passing:
            assert result["properties"]["failsItem"] is False
    for command in _commands(stdout):
        for nodeid in passing:
            # An ::error annotation for a passing item would read as "this failed".
            assert not (command.startswith("::error") and nodeid in command), command


def test_an_approval_next_to_a_failing_finding_is_an_error_in_every_report(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Observed before: VERDICT: APPROVED with a medium finding at fail-on=medium passed, the
    # JSON report listed the finding as failing and the markdown said "Gate: passed" next
    # to "medium (fails)".
    repo.plans("approved.md", "contradictory.md")
    summary = repo.path / "out-github" / "step-summary.md"
    summary.parent.mkdir()
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))

    result = repo.pytester.runpytest(*repo.args("out"), "--advreview-fail-on=medium")

    result.assert_outcomes(passed=1, errors=1)
    # Format drift: exactly one retry, then the error (never a pass, never a finding).
    asked = [r for r in repo.server.response_requests if "contradictory.md" in r.last_user_text]
    assert len(asked) == 2
    result.stdout.fnmatch_lines(
        [
            "*reviewer format drift: contradictory: VERDICT: APPROVED with 1 finding at or "
            "above fail-on medium ([[]severity: medium[]] AR-* Backups are never tested*",
            "ERROR docs/plans/contradictory.md::adversarial-review*",
        ]
    )
    out = repo.path / "out"
    data = json.loads((out / "results.json").read_text())
    assert data["totals"]["gate"] == "error"
    item = next(i for i in data["items"] if i["record"]["key"] == "docs/plans/contradictory.md")
    assert item["record"]["outcome"] == "error"
    assert item["record"]["findings"] == [] and item["record"]["failing_ids"] == []
    report = (out / "report.md").read_text()
    assert "**Gate: error**" in report
    assert "\n## ⛔ docs/plans/contradictory.md — aborted (error)\n" in report
    sarif = json.loads((out / "advreview.sarif").read_text())
    assert sarif["runs"][0]["results"] == []
    assert sarif["runs"][0]["invocations"][0]["executionSuccessful"] is False
    commands = _commands(result.stdout.str())
    assert [c.split(" ", 1)[0] for c in commands] == ["::error"]
    assert "contradictory" in commands[0]
    assert summary.read_text() == report + "\n"
    _never_passed_and_failing(out, result.stdout.str())


def test_an_approval_with_findings_below_fail_on_passes_with_a_warning_everywhere(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.plans("approved-note.md")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(repo.path / "summary.md"))

    result = repo.pytester.runpytest(*repo.args("out"))  # fail-on=high

    result.assert_outcomes(passed=1, warnings=1)
    assert len(repo.server.response_requests) == 1  # valid: no retry
    result.stdout.fnmatch_lines(
        [
            "*ReviewWarning: Adversarial review — docs/plans/approved-note.md — APPROVED after "
            "1 round with 1 finding below high (passed with a warning)",
            "*[[]severity: medium[]] AR-* Wave size is unstated (Rollout)",
        ]
    )
    out = repo.path / "out"
    data = json.loads((out / "results.json").read_text())
    assert data["totals"]["gate"] == "passed"
    [item] = data["items"]
    assert item["record"]["outcome"] == "warned"
    assert [f["severity"] for f in item["record"]["findings"]] == ["medium"]
    report = (out / "report.md").read_text()
    assert "\n## ⚠ docs/plans/approved-note.md — approved (warned)\n" in report
    [finding] = json.loads((out / "advreview.sarif").read_text())["runs"][0]["results"]
    assert finding["level"] == "warning"
    assert [c.split(" ", 1)[0] for c in _commands(result.stdout.str())] == ["::warning"]
    _never_passed_and_failing(out, result.stdout.str())


def test_strict_exit_tells_a_gate_that_could_not_run_from_one_that_found_problems(
    repo: Repo,
) -> None:
    repo.plans("approved.md", "errored.md")
    plain = repo.pytester.runpytest(*repo.args("out"))
    plain.assert_outcomes(passed=1, errors=1)
    assert plain.ret == pytest.ExitCode.TESTS_FAILED
    strict = repo.pytester.runpytest(*repo.args("out"), "--advreview-strict-exit")
    strict.assert_outcomes(passed=1, errors=1)
    assert strict.ret == EXIT_REVIEW_ERRORS
    # The reports are written also when the gate could not run.
    data = json.loads((repo.path / "out" / "results.json").read_text())
    assert data["totals"]["gate"] == "error"


def test_strict_exit_keeps_1_when_a_review_failed(repo: Repo) -> None:
    repo.plans("failed.md", "errored.md")
    result = repo.pytester.runpytest(*repo.args("out"), "--advreview-strict-exit")
    result.assert_outcomes(failed=1, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_an_unwritable_report_is_named_and_the_others_are_written(repo: Repo) -> None:
    repo.plans("approved.md", "failed.md")
    (repo.path / "blocked").write_text("a file where a folder should be")
    result = repo.pytester.runpytest(
        *repo.args("out"), "--advreview-report=blocked/report.md", "--advreview-github=off"
    )
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    target = repo.path / "blocked" / "report.md"
    result.stdout.fnmatch_lines(
        [f"pytest-advreview: WARNING: cannot write --advreview-report={target}: *"]
    )
    assert "Traceback" not in result.stdout.str()
    assert (repo.path / "out" / "results.json").is_file()
    assert (repo.path / "out" / "advreview.sarif").is_file()


def test_a_passing_gate_whose_report_cannot_be_written_does_not_pass(repo: Repo) -> None:
    repo.plans("approved.md")
    (repo.path / "blocked").write_text("a file where a folder should be")
    result = repo.pytester.runpytest(
        *repo.args("out"), "--advreview-sarif=blocked/advreview.sarif", "--advreview-github=off"
    )
    result.assert_outcomes(passed=1)
    # The SARIF upload step would fail later (or show nothing): the run fails now, as a
    # usage error naming the option and the fix.
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        ["pytest-advreview: WARNING: cannot write --advreview-sarif=*; pass a path in a writable*"]
    )


# -- xdist: the same files from -n 0 and -n 2 ---------------------------------------------

#: Keys whose values are timings: they differ between any two runs.
TIMING_KEYS = {"seconds", "duration_s"}
#: Keys that identify one run's reviewer processes (random ids, temp paths).
RUN_ID_KEYS = {
    "attempt_id",
    "codex_session_id",
    "review_file",
    "archived_stdout",
    "archived_stderr",
}


def normalise(value: Any) -> Any:
    """The JSON report with timings and per-run ids blanked (docs/ci.md, "Reproducibility")."""
    if isinstance(value, dict):
        return {
            k: (None if k in TIMING_KEYS | RUN_ID_KEYS else normalise(v)) for k, v in value.items()
        }
    if isinstance(value, list):
        return [normalise(v) for v in value]
    return value


def test_reports_under_xdist_equal_a_serial_run(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.plans("approved.md", "failed.md", "low.md", "errored.md")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    runs = {}
    for out, extra in (("out0", ["-n", "0"]), ("out2", ["-n", "2"])):
        summary = repo.path / "out-github" / f"{out}-summary.md"
        summary.parent.mkdir(exist_ok=True)
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
        result = repo.pytester.runpytest_subprocess(*repo.args(out), *extra)
        result.assert_outcomes(passed=2, failed=1, errors=1)
        runs[out] = (result, summary)
    (serial, serial_summary), (parallel, parallel_summary) = runs["out0"], runs["out2"]
    parallel.stdout.fnmatch_lines(["created: 2/2 workers"])
    assert len(_commands(parallel.stdout.str())) == 5  # printed once, by the controller

    a, b = repo.path / "out0", repo.path / "out2"
    assert (a / "advreview.sarif").read_bytes() == (b / "advreview.sarif").read_bytes()
    # Written once, by the controller: the same diagnostics, in node-id order.
    rdjson = (b / "advreview.rdjson").read_bytes()
    assert rdjson == (a / "advreview.rdjson").read_bytes()
    assert len(json.loads(rdjson)["diagnostics"]) == 5  # 4 open findings, 1 errored review
    assert (a / "report.md").read_bytes() == (b / "report.md").read_bytes()
    assert serial_summary.read_bytes() == parallel_summary.read_bytes()
    assert _commands(serial.stdout.str()) == _commands(parallel.stdout.str())
    first = json.loads((a / "results.json").read_text())
    second = json.loads((b / "results.json").read_text())
    assert normalise(first) == normalise(second)
    # Only timings and run ids were blanked: the rest is text-identical, in the same order.
    assert re.sub(r"\s+", "", json.dumps(normalise(first))) == re.sub(
        r"\s+", "", json.dumps(normalise(second))
    )
