"""Waivers with authority, through the real Codex CLI (docs/deciding.md).

Before: a ``reject`` in the decisions file was only the author's answer, and nobody could
turn a blocking finding into a pass with a record.  Now a ``waive`` entry in the base
branch's decisions file (or a maintainer's pull-request command) passes it, and every
output records who waived it and why: the terminal summary, the JSON, the markdown report
(the PR comment's text), SARIF as an ``external`` suppression, and the GitHub annotation
as a warning.  Under a gate the branch's own waiver, and a command of a user without
write permission, change nothing, and the reports say so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ReviewRepo, git
from pytest_advreview.models import (
    CommandsFile,
    Finding,
    IgnoredCommand,
    Location,
    Severity,
    finding_id,
)
from pytest_advreview.testing import FindingSpec, revise_review
from pytest_advreview.trust.decisions import content_ids
from test_authority_e2e import on_main

KEY = "docs/plans/x.md"
PLAN = "# Plan\n\n1. Drop the users table.\n\n## Data\nNo backup is taken.\n"
CRITICAL = FindingSpec(
    "critical",
    "The migration destroys user data",
    section="Data",
    what="Dropping the table loses every account.",
    recommendation="Take a backup first.",
)
FID = finding_id(CRITICAL.title, Location(section=CRITICAL.section))
#: The content id of the finding's section: the code (here, plan text) a waiver is for.
CONTENT = content_ids(
    [Finding(id=FID, severity=Severity.CRITICAL, title="", location=Location(section="Data"))],
    plan=PLAN,
    root=None,
    whole=PLAN,
)[FID]
REASON = "The table was emptied in release 4; nothing is lost."
NO_CODE = "--advreview-diff=none"


def waiver(reason: str = REASON) -> str:
    return (
        f'[[decision]]\ntarget = "{KEY}"\nfinding = "{FID}"\naction = "waive"\n'
        f'content = "{CONTENT}"\nscope = "repository"\nreason = "{reason}"\n'
    )


@pytest.fixture
def branch(review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch) -> ReviewRepo:
    """A pull request under CI: the plan on ``feature``, ``main`` its base, and a reviewer
    that finds a critical problem in it."""
    monkeypatch.setenv("CI", "true")
    git(review_repo.path, "checkout", "-q", "-b", "feature")
    review_repo.plan("x.md", PLAN)
    review_repo.commit("the plan")
    review_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    return review_repo


def outputs(repo: ReviewRepo) -> tuple[str, ...]:
    out = repo.path / "out"
    return (
        f"--advreview-json={out}/results.json",
        f"--advreview-report={out}/report.md",
        f"--advreview-sarif={out}/advreview.sarif",
    )


def test_a_base_waiver_passes_a_critical_finding_with_the_record_in_every_output(
    branch: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_main(branch, ".advreview/decisions.toml", waiver())
    summary = branch.path / "out" / "step-summary.md"
    summary.parent.mkdir()
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))

    result = branch.run(NO_CODE, *outputs(branch))
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    # Terminal: who, on what authority, why.
    assert f"waived {FID} by the base branch (main (" in out
    assert f"(base), reason: {REASON}" in out
    # GitHub annotation: shown, as a warning, with the waiver.
    annotation = next(line for line in out.splitlines() if FID in line and line.startswith("::"))
    assert annotation.startswith("::warning ")
    assert "waived by the base branch" in annotation

    record = json.loads((branch.path / "out" / "results.json").read_text())["items"][0]["record"]
    assert record["outcome"] == "passed"
    assert record["failing_ids"] == []
    assert [f["id"] for f in record["findings"]] == [FID]
    (waived,) = record["waived"]
    assert waived["finding"] == FID and waived["source"] == "base"
    assert waived["reason"] == REASON and waived["by"].startswith("the base branch (main (")

    report = (branch.path / "out" / "report.md").read_text()
    assert f"| critical (waived) | `{FID}` |" in report
    assert f"**Waived:** `{FID}` by the base branch (main (" in report
    assert REASON in report
    assert REASON in summary.read_text()

    sarif = json.loads((branch.path / "out" / "advreview.sarif").read_text())
    (found,) = sarif["runs"][0]["results"]
    assert found["ruleId"] == FID
    assert found["properties"]["failsItem"] is False
    (suppression,) = found["suppressions"]
    assert suppression["kind"] == "external"
    assert REASON in suppression["justification"]


def test_the_branchs_own_waiver_and_a_read_only_users_command_change_nothing(
    branch: ReviewRepo, tmp_path: Path
) -> None:
    # The pull request commits its own waiver: under a gate that is the author's voice.
    branch.write(".advreview/decisions.toml", waiver("We say it is fine."))
    branch.commit("the branch waives its own finding")
    # The Action saw a waiver command of a user with read permission and ignored it.
    commands = tmp_path / "commands.json"
    ignored = IgnoredCommand(
        text=f"/advreview waive {FID}: trust me",
        by="@reader",
        why="@reader has read permission on the repository; only users with write, "
        "maintain or admin permission decide findings",
        finding=FID,
    )
    commands.write_text(CommandsFile(ignored=(ignored,)).model_dump_json())

    result = branch.run(NO_CODE, f"--advreview-commands={commands}", *outputs(branch))
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert f"[severity: critical] {FID} The migration destroys user data" in out
    assert f"ignored: 'waive {FID}: We say it is fine.' by the branch's decisions file" in out
    assert "the branch's own decisions file is the author's" in out
    assert f"ignored: '/advreview waive {FID}: trust me' by @reader: @reader has read" in out

    record = json.loads((branch.path / "out" / "results.json").read_text())["items"][0]["record"]
    assert record["outcome"] == "failed"
    assert record["failing_ids"] == [FID]
    assert record["waived"] == []
    assert [i["by"] for i in record["ignored"]] == ["the branch's decisions file", "@reader"]
    sarif = json.loads((branch.path / "out" / "advreview.sarif").read_text())
    assert "suppressions" not in sarif["runs"][0]["results"][0]
    assert "**Ignored:**" in (branch.path / "out" / "report.md").read_text()


def test_a_withdrawn_waiver_fails_the_next_run_from_the_stored_verdict(branch: ReviewRepo) -> None:
    # The waiver is judged on every run, never stored with the verdict: once the base
    # takes it back, the cached REVISE fails again without asking the reviewer.
    on_main(branch, ".advreview/decisions.toml", waiver())
    branch.run(NO_CODE).assert_outcomes(passed=1)
    asked = len(branch.server.response_requests)
    on_main(branch, ".advreview/decisions.toml", "")
    again = branch.run(NO_CODE)
    again.assert_outcomes(failed=1)
    assert f"waived {FID}" not in again.stdout.str()
    assert len(branch.server.response_requests) == asked
