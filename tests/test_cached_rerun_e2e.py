"""A cached rerun needs no Codex; a run with a review to do still refuses a missing one.

Before its items run, the run decides whether any of its targets lacks a stored verdict
that stands (session.py): only then does it check the Codex CLI (``--version``), start
the sandbox probe and load the plugin's modules. A fully cached run therefore starts
no Codex process at all, and a run with one target to review and no usable Codex stops
with one usage error before any item, as before. The controller decides from the run's
selection (under xdist it collects nothing), each xdist worker from its own collection.
End to end: the real Codex CLI against the scripted server, real xdist workers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ReviewRepo
from pytest_advreview.testing import approved_review

pytestmark = pytest.mark.real_codex

XDIST = pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["one-process", "xdist"])


def _counting_codex(review_repo: ReviewRepo, tmp_path: Path) -> tuple[Path, Path]:
    """A ``codex`` that writes one line per start (its arguments) to a log, then runs the
    real CLI: what a run starts, whichever of its processes starts it."""
    log = tmp_path / "codex-starts.log"
    wrapper = tmp_path / "counting-codex"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{review_repo.codex}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, log


def _starts(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def _approve_all(review_repo: ReviewRepo, *names: str) -> None:
    """The plans ``names`` written (uncommitted: selected) and approved by a first run."""
    for name in names:
        review_repo.plan(name)
    review_repo.answer("Review", {"message": approved_review()})
    first = review_repo.run_subprocess("--advreview-diff=none")
    first.assert_outcomes(passed=len(names))


@XDIST
def test_a_cached_rerun_starts_no_codex_process(
    review_repo: ReviewRepo, tmp_path: Path, xdist: tuple[str, ...]
) -> None:
    _approve_all(review_repo, "a.md", "b.md", "c.md")
    requests = len(review_repo.server.response_requests)
    codex, log = _counting_codex(review_repo, tmp_path)

    result = review_repo.run_subprocess(
        "--advreview-diff=none", f"--advreview-codex={codex}", *xdist
    )

    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.OK
    # Neither the version check, nor the sandbox probe, nor a review started it.
    assert _starts(log) == []
    assert len(review_repo.server.response_requests) == requests


@XDIST
def test_a_cached_rerun_passes_from_the_stored_verdicts_with_codex_missing(
    review_repo: ReviewRepo, tmp_path: Path, xdist: tuple[str, ...]
) -> None:
    _approve_all(review_repo, "a.md", "b.md")
    missing = tmp_path / "no-such-codex"

    result = review_repo.run_subprocess(
        "--advreview-diff=none",
        f"--advreview-codex={missing}",
        *xdist,
    )

    out = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK, out
    assert "cached" in result.stdout.str()
    assert "does not exist" not in out


@XDIST
def test_one_target_to_review_and_codex_missing_is_one_usage_error_before_any_item(
    review_repo: ReviewRepo, tmp_path: Path, xdist: tuple[str, ...]
) -> None:
    _approve_all(review_repo, "a.md", "b.md")
    review_repo.plan("c.md", "# Plan\n\n1. A plan never reviewed.\n")
    missing = tmp_path / "no-such-codex"
    requests = len(review_repo.server.response_requests)

    result = review_repo.run_subprocess(
        "--advreview-diff=none",
        f"--advreview-codex={missing}",
        *xdist,
    )

    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert out.count(f"the Codex CLI {str(missing)!r} does not exist") == 1, out
    assert "::adversarial-review" not in result.stdout.str()  # no item ran
    assert len(review_repo.server.response_requests) == requests


#: A conftest that edits the plan ``a.md`` as its item is set up: after the run decided
#: that every verdict stands, so that the review is due only when the item runs (as when
#: something else rewrites a plan during the run).
EDIT_AT_SETUP = """
import pathlib
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if "a.md" in item.nodeid:
        plan = pathlib.Path(str(item.config.rootpath), "docs", "plans", "a.md")
        plan.write_text(plan.read_text() + "2. Edited while the run was going.\\n")
"""


@XDIST
def test_a_review_due_only_after_collection_with_codex_missing_errors_never_passes(
    review_repo: ReviewRepo, tmp_path: Path, xdist: tuple[str, ...]
) -> None:
    """The guess before the items said no reviewer is needed, and was wrong: the item's
    own review still runs, and a missing Codex is its launch error."""
    _approve_all(review_repo, "a.md", "b.md")
    review_repo.write("conftest.py", EDIT_AT_SETUP)
    missing = tmp_path / "no-such-codex"

    result = review_repo.run_subprocess(
        "--advreview-diff=none",
        f"--advreview-codex={missing}",
        "--advreview-isolation=none",
        *xdist,
    )

    out = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1, errors=1)
    assert result.ret != pytest.ExitCode.OK, out
    assert "docs/plans/a.md" in " ".join(
        line for line in result.stdout.lines if line.startswith("ERROR")
    ), out


@XDIST
def test_a_cached_code_item_and_plan_pass_with_codex_missing(
    review_repo: ReviewRepo, tmp_path: Path, xdist: tuple[str, ...]
) -> None:
    """The code change's stored verdict is looked up as the item will (its content hash
    over the changed files), not taken for a review to do."""
    review_repo.plan("a.md")
    review_repo.write("src/feature.py", "def feature():\n    return 1\n")
    review_repo.answer("", {"message": approved_review()})
    first = review_repo.run_subprocess()
    first.assert_outcomes(passed=2)
    assert "code-review" in first.stdout.str()
    missing = tmp_path / "no-such-codex"

    result = review_repo.run_subprocess(f"--advreview-codex={missing}", *xdist)

    out = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK, out
    # The change edited again: its review is due, and Codex is missing.
    review_repo.write("src/feature.py", "def feature():\n    return 2\n")
    again = review_repo.run_subprocess(f"--advreview-codex={missing}", *xdist)
    assert again.ret == pytest.ExitCode.USAGE_ERROR, again.stdout.str() + again.stderr.str()


def test_an_unreadable_plan_is_its_own_error_and_needs_no_codex(
    review_repo: ReviewRepo, tmp_path: Path
) -> None:
    """A plan emptied since its approval errors without a reviewer (its input error), so
    it does not make the run need Codex: the cached plan beside it still passes."""
    _approve_all(review_repo, "a.md", "b.md")
    (review_repo.path / "docs" / "plans" / "b.md").write_text("")
    missing = tmp_path / "no-such-codex"

    result = review_repo.run_subprocess("--advreview-diff=none", f"--advreview-codex={missing}")

    out = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1, errors=1)
    assert "plan file" in out and "is empty" in out, out
    assert "does not exist" not in out
