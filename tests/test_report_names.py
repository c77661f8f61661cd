"""What other tools read of a run: JUnit XML, the progress line, the summary, the header and
the ``--tb`` styles, on the in-process scripted reviewer.

A branch changes code and two plans: ``ok.md`` is approved, ``down.md``'s reviewer cannot
run (HTTP 500), and the code change fails on a high finding.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from conftest import ReviewRepo, git
from pytest_advreview.testing import FindingSpec, approved_review, revise_review

#: The code item's node id (a file part of its own: no "." in the progress line).
CODE_ITEM_NODEID = "code-change::code-review"
PLAN = "# Plan\n\n1. Migrate.\n\n## Rollback\n\nRestore the backup.\n"
CODE = FindingSpec("high", "Division by zero on empty input", file="app.py", lines=(2, 2))
#: Seven provider settings, as codex_provider_args gives them: about 400 characters.
PROVIDER = [f"model_providers.local.setting_{n}=http://127.0.0.1:9/v1/{n}" for n in range(7)]


@pytest.fixture
def branch(scripted_repo: ReviewRepo) -> ReviewRepo:
    git(scripted_repo.path, "checkout", "-q", "-b", "feature")
    scripted_repo.plan("ok.md", PLAN)
    scripted_repo.plan("down.md", PLAN)
    scripted_repo.write("app.py", "def mean(xs):\n    return sum(xs) / len(xs)\n")
    scripted_repo.commit("plans and code")
    scripted_repo.answer("Review the code changes", {"message": revise_review(CODE)})
    scripted_repo.answer("docs/plans/ok.md", {"message": approved_review()})
    scripted_repo.answer("docs/plans/down.md", {"http_status": 500})
    return scripted_repo


def test_junit_has_a_classname_for_every_item_and_no_none_values(branch: ReviewRepo) -> None:
    result = branch.run("--advreview-diff=branch", "--junitxml=out/junit.xml")
    result.assert_outcomes(passed=1, failed=1, errors=1)
    tree = ET.parse(branch.path / "out" / "junit.xml")
    cases = {c.get("name", "") + "@" + c.get("classname", ""): c for c in tree.iter("testcase")}
    assert sorted(cases) == [
        "adversarial-review@docs.plans.down.md",
        "adversarial-review@docs.plans.ok.md",
        "code-review@code-change",
    ]
    values = [p.get("value") for p in tree.iter("property")]
    assert values and "None" not in values
    # The review that could not run has no verdict: no property, rather than "None".
    down = cases["adversarial-review@docs.plans.down.md"]
    assert {p.get("name") for p in down.iter("property")} >= {"max_severity", "status"}
    assert "verdict" not in {p.get("name") for p in down.iter("property")}
    # The approved plan has no finding: "none", not a missing value printed as "None".
    ok = cases["adversarial-review@docs.plans.ok.md"]
    props = {p.get("name"): p.get("value") for p in ok.iter("property")}
    assert props["max_severity"] == "none"
    assert props["verdict"] == "APPROVED"


def test_the_code_item_has_a_readable_name_in_the_progress_line_and_the_summary(
    branch: ReviewRepo,
) -> None:
    result = branch.run("--advreview-diff=branch")
    out = result.outlines
    assert "code-change F" in [line.split("  ")[0].rstrip() for line in out]
    assert not [line for line in out if line.startswith(". ")], "\n".join(out)
    assert any(line.startswith(f"FAILED {CODE_ITEM_NODEID} - REVISE") for line in out)
    summary = [line for line in out if line.startswith(f"{CODE_ITEM_NODEID}: ")]
    assert summary and summary[0].startswith("code-change::code-review: revise (failed)")
    assert not [line for line in out if line.startswith("\\")], "\n".join(out)
    assert "total: 3 reviews, " in "\n".join(out)


def test_one_review_is_counted_in_the_singular(scripted_repo: ReviewRepo) -> None:
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer("docs/plans/x.md", {"message": approved_review()})
    result = scripted_repo.run("--advreview-diff=none", "docs/plans/x.md")
    result.assert_outcomes(passed=1)
    totals = [line for line in result.outlines if line.startswith("total: ")]
    assert len(totals) == 1 and re.fullmatch(r"total: 1 review, \d+ tokens", totals[0]), totals


def test_the_header_counts_a_long_provider_configuration_and_v_lists_it(
    scripted_repo: ReviewRepo,
) -> None:
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer("docs/plans/x.md", {"message": approved_review()})
    provider = [f"--advreview-codex-config={value}" for value in PROVIDER]

    run = scripted_repo.run("--advreview-diff=none", *provider)
    header = [line for line in run.outlines if line.startswith("advreview:")]
    assert "codex-config=<7 values, -v lists them>" in "\n".join(header)
    assert max(len(line) for line in header) < 200, header
    assert "setting_0" not in "\n".join(header)

    verbose = scripted_repo.run("--advreview-diff=none", *provider, "-v").outlines
    listed = [line for line in verbose if "codex-config=" in line]
    assert len(listed) == 1 and all(value in listed[0] for value in PROVIDER)


def test_tb_short_shows_the_findings_without_the_review_text(branch: ReviewRepo) -> None:
    failed = branch.run("--advreview-diff=branch", "--tb=short")
    failed.assert_outcomes(passed=1, failed=1, errors=1)
    text = "\n".join(failed.outlines)
    assert "Adversarial review — code-review — REVISE after 1 round" in text
    assert CODE.title in text
    assert "## Findings" not in text and "What can go wrong" not in text


# -- a finding's place is never a file the item did not review ---------------------------


@pytest.mark.parametrize("named", [".env", "docs/plans/link.md"])
def test_a_warning_never_points_at_a_file_the_item_did_not_review(
    scripted_repo: ReviewRepo, named: str
) -> None:
    """pytest prints the source line a warning names, unredacted: a reviewer that names an
    ignored ``.env`` or a symlink (to a credentials file, to ``/dev/zero``) must not get
    that line printed, or the run stuck reading an endless file.  The warning falls back
    to the plan."""
    scripted_repo.write(".gitignore", ".env\n.pytest_cache/\n__pycache__/\n")
    scripted_repo.write(".env", "DEPLOY_TOKEN=ignored-file-secret-42\n")
    scripted_repo.plan("x.md", PLAN)
    (scripted_repo.path / "docs" / "plans" / "link.md").symlink_to("/dev/zero")
    scripted_repo.commit("a plan, an ignored secret and a link")
    finding = FindingSpec("medium", "Secrets are read at start", file=named, lines=(1, 1))
    scripted_repo.answer("docs/plans/x.md", {"message": revise_review(finding)})
    result = scripted_repo.run(
        "--advreview-diff=none",
        "--advreview-fail-on=high",
        "-W",
        "default::pytest_advreview.outcome.ReviewWarning",
        "docs/plans/x.md",
    )
    result.assert_outcomes(passed=1, warnings=1)
    out = "\n".join(result.outlines)
    assert "ignored-file-secret-42" not in out
    assert re.search(r"/docs/plans/x\.md:1: ReviewWarning: .*passed with a warning", out), out


def test_a_warning_made_an_error_by_filterwarnings_is_text_with_the_fix(
    scripted_repo: ReviewRepo,
) -> None:
    scripted_repo.pytester.makeini("[pytest]\nfilterwarnings = error\n")
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.commit("plan")
    below = FindingSpec("medium", "Backups are never tested", section="Rollback")
    scripted_repo.answer("docs/plans/x.md", {"message": revise_review(below)})
    result = scripted_repo.run(
        "--advreview-diff=none", "--advreview-fail-on=high", "docs/plans/x.md"
    )
    result.assert_outcomes(failed=1)
    out = "\n".join(result.outlines)
    assert "Traceback" not in out and "items.py" not in out and "warn_explicit" not in out
    assert below.title in out
    assert "add default::pytest_advreview.outcome.ReviewWarning to filterwarnings" in out
    result.stdout.fnmatch_lines(
        ["FAILED docs/plans/x.md::adversarial-review - ReviewWarning made an error by a*"]
    )
