"""Pre-existing findings and a reviewer's confidence, end to end (real Codex CLI).

A code change on a branch changes one line of a file; the scripted reviewer reports one
finding inside that hunk and one outside every hunk.  The one outside is marked
pre-existing in every output, from the diff alone; under ``advreview_pre_existing =
block`` (the default) it fails the item like any other, under ``warn`` it passes with a
warning while the one inside the hunk still fails.  Each finding's confidence reaches the
JSON report, the SARIF log (``rank``, 0-100) and the markdown report, and a blocker with
confidence 0.0 still fails.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import ReviewRepo, git
from pytest_advreview.testing import FindingSpec, revise_review

pytestmark = pytest.mark.real_codex

PROMPT = "Review the code changes"
APP = "".join(f"step_{n} = {n}\n" for n in range(1, 21))
#: On the line the branch changes: the change's own finding, with confidence 0.0.
INSIDE = FindingSpec(
    "high", "Step ten is off by one", file="app.py", lines=(10, 10), confidence="0.0"
)
#: On lines the branch never touched.
OUTSIDE = FindingSpec(
    "high", "Step two was always wrong", file="app.py", lines=(2, 3), confidence="0.9"
)


def _feature(repo: ReviewRepo) -> None:
    repo.write("app.py", APP)
    repo.commit("the app")
    git(repo.path, "checkout", "-q", "-b", "feature")
    repo.write("app.py", APP.replace("step_10 = 10\n", "step_10 = 11\n"))
    repo.commit("the feature")


def _outputs(out: Path) -> tuple[dict[str, Any], str, list[dict[str, Any]]]:
    record = json.loads((out / "results.json").read_text())["items"][0]["record"]
    report = (out / "report.md").read_text()
    sarif = json.loads((out / "advreview.sarif").read_text())["runs"][0]["results"]
    return record, report, sarif


def _run(repo: ReviewRepo, out: Path, *extra: str) -> Any:
    return repo.run(
        f"--advreview-json={out}/results.json",
        f"--advreview-report={out}/report.md",
        f"--advreview-sarif={out}/advreview.sarif",
        *extra,
    )


def _ids(record: dict[str, Any]) -> tuple[str, str]:
    by_title = {f["title"]: f["id"] for f in record["findings"]}
    return by_title[INSIDE.title], by_title[OUTSIDE.title]


def test_a_finding_outside_every_hunk_is_pre_existing_and_blocks_or_warns_by_the_setting(
    review_repo: ReviewRepo, tmp_path: Path
) -> None:
    _feature(review_repo)
    review_repo.answer(PROMPT, {"message": revise_review(INSIDE, OUTSIDE)})

    # block (the default): both fail; the one outside is listed apart.
    block = _run(review_repo, tmp_path / "block")
    block.assert_outcomes(failed=1)
    record, report, sarif = _outputs(tmp_path / "block")
    inside, outside = _ids(record)
    assert record["pre_existing"] == [outside]
    assert record["pre_existing_policy"] == "block"
    assert set(record["failing_ids"]) == {inside, outside}
    block.stdout.fnmatch_lines(
        [f"*pre-existing: {outside} (outside every changed hunk*advreview_pre_existing = block)*"]
    )
    assert f"| high (fails) (pre-existing) | `{outside}` |" in report
    assert f"| high (fails) | `{inside}` |" in report
    assert f"- **Pre-existing:** {outside} (outside every changed hunk" in report
    # Confidence: reported in every output, and 0.0 on a blocker still fails the item.
    confidence = {f["id"]: f["confidence"] for f in record["findings"]}
    assert confidence == {inside: 0.0, outside: 0.9}
    assert re.search(rf"\| `{outside}` \|.*\| 0\.9 \|", report)
    assert re.search(rf"\| `{inside}` \|.*\| 0 \|", report)
    by_rule = {r["ruleId"]: r for r in sarif}
    assert by_rule[outside]["rank"] == 90.0 and by_rule[inside]["rank"] == 0.0
    assert by_rule[outside]["properties"]["preExisting"] is True
    assert by_rule[inside]["properties"]["preExisting"] is False
    assert by_rule[inside]["properties"]["failsItem"] is True
    assert by_rule[outside]["level"] == by_rule[inside]["level"] == "error"
    summary = json.loads((tmp_path / "block" / "results.json").read_text())
    assert summary["totals"]["pre_existing"] == 1
    assert summary["settings"]["pre_existing"] == "block"

    # warn: the stored review is judged again; the one inside the hunk still fails.
    warn = _run(review_repo, tmp_path / "warn", "--advreview-pre-existing=warn")
    warn.assert_outcomes(failed=1)
    record, report, sarif = _outputs(tmp_path / "warn")
    assert record["failing_ids"] == [inside]
    assert record["pre_existing"] == [outside]
    assert record["pre_existing_policy"] == "warn"
    assert f"| high (pre-existing) | `{outside}` |" in report
    assert {r["ruleId"]: r["properties"]["failsItem"] for r in sarif} == {
        inside: True,
        outside: False,
    }
    warn.stdout.fnmatch_lines(
        [
            f"*{outside}*pre-existing (outside every changed hunk): passes with a warning*",
            f"*pre-existing: {outside} (outside every changed hunk*those at or above fail-on "
            "pass with a warning (advreview_pre_existing = warn)*",
        ]
    )
    assert len(review_repo.server.response_requests) == 1  # judged again, not asked again


def test_under_warn_a_review_with_only_pre_existing_blockers_passes_with_a_warning(
    review_repo: ReviewRepo, tmp_path: Path
) -> None:
    _feature(review_repo)
    review_repo.answer(PROMPT, {"message": revise_review(OUTSIDE)})
    out = tmp_path / "warn"
    result = _run(
        review_repo, out, "--advreview-pre-existing=warn", "-W", "default", "--advreview-github=on"
    )
    result.assert_outcomes(passed=1, warnings=1)
    record, report, _sarif = _outputs(out)
    (outside,) = record["pre_existing"]
    assert record["outcome"] == "warned"
    assert record["failing_ids"] == []
    assert f"| high (pre-existing) | `{outside}` |" in report
    # The GitHub annotation of a finding that passed is a warning, marked pre-existing.
    annotation = (
        f"::warning file=app.py,line=2,endLine=3,title=[high] {outside} Step two was always "
        "wrong (pre-existing)::"
    )
    assert annotation in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*ReviewWarning*pre-existing finding at or above medium passed with a warning*",
            f"*{outside}*pre-existing (outside every changed hunk): passes with a warning*",
        ]
    )

    # The same review under block fails: the setting alone decides, never the reviewer.
    blocked = _run(review_repo, tmp_path / "block")
    blocked.assert_outcomes(failed=1)


def _gated(repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch, base_ini: str) -> None:
    """``main`` with app.py and ``base_ini``; ``feature`` changes line 10 and sets
    ``advreview_pre_existing = warn`` in its own pytest.ini; a plain ``CI=true`` run."""
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    repo.write("pytest.ini", base_ini)
    repo.write("app.py", APP)
    repo.commit("the app")
    git(repo.path, "checkout", "-q", "-b", "feature")
    repo.write("app.py", APP.replace("step_10 = 10\n", "step_10 = 11\n"))
    repo.write("pytest.ini", "[pytest]\nadvreview_pre_existing = warn\n")
    repo.commit("the feature, and a softer gate")
    repo.answer(PROMPT, {"message": revise_review(OUTSIDE)})


def test_under_a_gate_the_branchs_setting_is_not_used(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    _gated(review_repo, monkeypatch, "[pytest]\n")
    result = review_repo.run("--advreview-github=off")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ini advreview_pre_existing = warn (the base: not set)*"])
    result.stdout.fnmatch_lines(["*pre-existing: AR-* (*advreview_pre_existing = block)*"])


def test_under_a_gate_the_bases_setting_and_the_workflows_count(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    _gated(review_repo, monkeypatch, "[pytest]\nadvreview_pre_existing = warn\n")
    passed = review_repo.run("--advreview-github=off", "-W", "default")
    passed.assert_outcomes(passed=1, warnings=1)
    # The workflow's command line wins over the base's file.
    blocked = review_repo.run("--advreview-github=off", "--advreview-pre-existing=block")
    blocked.assert_outcomes(failed=1)


def test_with_a_plugins_fixer_nothing_is_pre_existing(
    review_repo: ReviewRepo, tmp_path: Path
) -> None:
    # A fixer hook may edit any file between rounds, and nobody re-reads its edits: the
    # hunks of the material may no longer be what the reviewer cited.
    review_repo.write("conftest.py", "def pytest_advreview_fix(item, review):\n    return None\n")
    _feature(review_repo)  # commits it on main with the app
    review_repo.answer(PROMPT, {"message": revise_review(OUTSIDE)})
    out = tmp_path / "warn"
    result = _run(review_repo, out, "--advreview-pre-existing=warn", "-W", "default")
    result.assert_outcomes(failed=1)
    record, _report, _sarif = _outputs(out)
    assert record["pre_existing"] == []
