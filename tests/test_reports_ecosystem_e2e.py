"""The gate in other plugins' reports, through the real Codex CLI and the plugins users run
beside it (``.venv-ecosystem``): pytest-html, pytest-github-actions-annotate-failures,
pytest-timeout, and pytest's own ``--tb=line``.

One repository on a branch holds two plans: ``warned.md``, whose medium finding is below
``fail-on = high`` (passed with a warning), and ``failed.md``, whose high finding fails
it.  Each finding names a section, whose heading line is where it must be shown.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import ReviewRepo, git
from pytest_advreview.testing import FindingSpec, revise_review

pytestmark = pytest.mark.ecosystem

PLAN = (
    "# Plan\n\n1. Migrate.\n\n## Rollout\n\nDeploy in waves.\n\n"
    "## Rollback\n\nRestore the backup.\n"
)
ROLLOUT_LINE = 5
ROLLBACK_LINE = 9
WARNED = FindingSpec("medium", "Wave size is unstated", section="Rollout")
FAILED = FindingSpec("high", "Rollback restores a stale backup", section="Rollback")
ARGS = ("--advreview-fail-on=high", "--advreview-diff=none")


def _plans(repo: ReviewRepo) -> None:
    """Both plans, changed on a branch against main, and their scripted reviews."""
    git(repo.path, "checkout", "-q", "-b", "feature")
    repo.plan("warned.md", PLAN)
    repo.plan("failed.md", PLAN)
    repo.commit("plans")
    repo.answer("docs/plans/warned.md", {"message": revise_review(WARNED)})
    repo.answer("docs/plans/failed.md", {"message": revise_review(FAILED)})


def _section(lines: list[str], title: str) -> list[str]:
    """The lines of pytest's ``=== title ===`` section, up to the next one."""
    start = next(n for n, line in enumerate(lines) if re.match(rf"^=+ {title} =+$", line))
    end = next(n for n in range(start + 1, len(lines)) if re.match(r"^=+ .* =+$", lines[n]))
    return lines[start + 1 : end]


def test_pytest_html_shows_the_finding_of_a_review_that_passed_with_a_warning(
    review_repo: ReviewRepo, ecosystem_python: Path
) -> None:
    _plans(review_repo)
    result = review_repo.run_ecosystem(ecosystem_python, *ARGS, "--html=out/report.html")
    result.assert_outcomes(passed=1, failed=1, warnings=1)
    html = (review_repo.path / "out" / "report.html").read_text()
    # pytest-html shows a passing report's sections; the warned finding is one of them.
    assert WARNED.title in html
    assert "REVISE after 1 round: 1 finding below high (passed with a warning)" in html


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_annotate_failures_puts_the_warning_on_the_finding_and_one_error_per_failed_item(
    review_repo: ReviewRepo,
    ecosystem_python: Path,
    monkeypatch: pytest.MonkeyPatch,
    workers: tuple[str, ...],
) -> None:
    """Under xdist the failure's place and the warnings reach the controller, where both
    plugins annotate."""
    _plans(review_repo)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    result = review_repo.run_ecosystem(ecosystem_python, *ARGS, *workers)
    result.assert_outcomes(passed=1, failed=1, warnings=1)
    commands = [line for line in (*result.outlines, *result.errlines) if line.startswith("::")]
    warnings = [c for c in commands if c.startswith("::warning")]
    errors = [c for c in commands if c.startswith("::error")]
    # The warning at the finding's section heading, not at the plan's first line or at
    # the repository root ("file=.").
    assert [w.split("::")[1] for w in warnings] == [
        f"warning file=docs/plans/warned.md,line={ROLLOUT_LINE}"
    ], commands
    assert WARNED.title in warnings[0]
    # One ::error for the one failed item, at its failing finding, naming it.
    assert len(errors) == 1, commands
    assert errors[0].startswith(f"::error file=docs/plans/failed.md,line={ROLLBACK_LINE}::")
    assert FAILED.title in errors[0]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_review_stopped_by_pytest_timeout_is_one_line_and_the_summary(
    review_repo: ReviewRepo, ecosystem_python: Path, jobs: str
) -> None:
    """In the item's own setup (jobs=1) or while it waits for the pool's thread (jobs=2)."""
    git(review_repo.path, "checkout", "-q", "-b", "feature")
    review_repo.plan("slow.md", PLAN)
    review_repo.commit("plan")
    review_repo.answer("docs/plans/slow.md", {"hang": 600})
    result = review_repo.run_ecosystem(
        ecosystem_python,
        *ARGS,
        f"--advreview-jobs={jobs}",
        "--timeout=5",
        "--timeout-method=signal",
    )
    result.assert_outcomes(errors=1)
    errors = _section(result.outlines, "ERRORS")
    assert errors == [
        errors[0],  # pytest's "___ ERROR at setup of [advreview] docs/plans/slow.md ___"
        "Adversarial review — docs/plans/slow.md — stopped: Timeout (>5.0s) from pytest-timeout.",
    ], "\n".join(result.outlines)
    out = "\n".join(result.outlines)
    assert "Traceback" not in out and "Stack of" not in out and "def " not in out
    summary = _section(result.outlines, "adversarial review summary")
    assert summary[0].startswith("docs/plans/slow.md::adversarial-review: aborted (error)")
    assert "    stopped during setup: Timeout (>5.0s) from pytest-timeout." in summary


def test_tb_line_gives_one_line_per_review(review_repo: ReviewRepo, ecosystem_python: Path) -> None:
    _plans(review_repo)
    review_repo.plan("errored.md", PLAN)
    review_repo.commit("a plan whose reviewer cannot run")
    review_repo.answer("docs/plans/errored.md", {"http_status": 500})
    result = review_repo.run_ecosystem(ecosystem_python, *ARGS, "--tb=line")
    result.assert_outcomes(passed=1, failed=1, errors=1)
    failures = _section(result.outlines, "FAILURES")
    assert len(failures) == 1, "\n".join(result.outlines)
    assert re.fullmatch(
        rf"/.*/docs/plans/failed\.md:{ROLLBACK_LINE}: REVISE after 1 round: .*"
        + re.escape(FAILED.title)
        + r".*",
        failures[0],
    ), failures
    errors = _section(result.outlines, "ERRORS")
    assert len(errors) == 2, "\n".join(result.outlines)  # pytest's header line, then ours
    assert re.fullmatch(r"/.*/docs/plans/errored\.md:1: .*could not run.*", errors[1]), errors
    assert "## Findings" not in "\n".join(result.outlines)
