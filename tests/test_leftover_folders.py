"""Nothing a review makes outlives pytest: no ``advreview-*`` folder is left in the
temporary directory after a run whose items are skipped, deselected or interrupted before
their setup (real Codex CLI, ``--advreview-jobs``).

The jobs pool starts the reviews of the next items before they run.  An item that then
never takes its review (skipped in its setup, or never reached because ``-x`` or Ctrl-C
stopped pytest first) never reaches the teardown that removes its review's folder and
worktree: each such review once left an ``advreview-<id>`` folder (with its worktree in
it) in the temporary directory.

Each run here has a ``TMPDIR`` of its own (the ``review_repo`` fixture's), so what other
test runs on the machine leave in ``/tmp`` cannot hide or fake a leftover.  The scripted
server holds its answers until the reviews started ahead are all in flight, so each of
them has made its folder before pytest skips, deselects or stops anything.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import INTERRUPTED_HANG_S, ReviewRepo, git, interrupt_when, start_interruptible
from pytest_advreview.testing import approved_review, revise_review
from pytest_advreview.workspace import WorkspaceError
from pytest_advreview.workspace.guard import ReviewGuard
from test_parallel_stub import _run
from test_parallel_stub import plans as plans  # the fixture

real_codex = pytest.mark.real_codex

BASE = ("--advreview-diff=none", "-p", "no:randomly", "--advreview-progress=0")


def _temp(review_repo: ReviewRepo) -> Path:
    """The run's own temporary directory (set by the ``review_repo`` fixture)."""
    temp = Path(os.environ["TMPDIR"])
    assert temp.parent == review_repo.path.parent  # never the machine's shared /tmp
    return temp


def _leftovers(review_repo: ReviewRepo) -> list[str]:
    return sorted(p.name for p in _temp(review_repo).glob("advreview-*"))


def _sent(review_repo: ReviewRepo) -> set[str]:
    """The plans whose reviews reached the model."""
    prompts = [r.last_user_text for r in review_repo.server.response_requests]
    return {name for name in "abcd" if any(f"docs/plans/{name}.md" in p for p in prompts)}


def _worktrees(review_repo: ReviewRepo) -> list[str]:
    listed = git(review_repo.path, "worktree", "list", "--porcelain")
    return [line for line in listed.splitlines() if line.startswith("worktree ")]


def _plans(review_repo: ReviewRepo, names: str, *steps: dict[str, object]) -> None:
    for name in names:
        review_repo.plan(f"{name}.md")
        review_repo.answer(f"{name}.md", *steps)


def _held(in_flight: int) -> dict[str, object]:
    """An approval that waits until ``in_flight`` reviews are being answered at once."""
    return {"message": approved_review(), "hold": {"answering": in_flight, "at_most": 30}}


@real_codex
def test_reviews_started_for_items_skipped_in_their_setup_leave_no_folder(
    review_repo: ReviewRepo,
) -> None:
    # a is skipped by a hook and b by a skipif (both decided in setup, so the pool starts
    # their reviews); c and d run.
    _plans(review_repo, "abcd", _held(4))
    review_repo.write(
        "conftest.py",
        "import pytest\n\n"
        "@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_runtest_setup(item):\n"
        "    if 'a.md' in item.nodeid:\n"
        "        pytest.skip('not this one')\n\n"
        "def pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        "        if 'b.md' in item.nodeid:\n"
        "            item.add_marker(pytest.mark.skipif(True, reason='decided in setup'))\n",
    )
    result = review_repo.run_subprocess(*BASE, "--advreview-jobs=4")
    result.assert_outcomes(passed=2, skipped=2)
    assert _sent(review_repo) == set("abcd")  # the skipped items' reviews were started
    assert _leftovers(review_repo) == []
    assert len(_worktrees(review_repo)) == 1  # the checkout's own: no review worktree


@real_codex
def test_deselected_items_leave_no_folder(review_repo: ReviewRepo) -> None:
    # b by -k, c by a hook (pytest_deselected): the pool starts neither.
    _plans(review_repo, "abcd", _held(2))
    review_repo.write(
        "conftest.py",
        "def pytest_collection_modifyitems(config, items):\n"
        "    gone = [item for item in items if 'c.md' in item.nodeid]\n"
        "    items[:] = [item for item in items if item not in gone]\n"
        "    config.hook.pytest_deselected(items=gone)\n",
    )
    result = review_repo.run_subprocess(*BASE, "--advreview-jobs=4", "-k", "not b")
    result.assert_outcomes(passed=2, deselected=2)
    assert _sent(review_repo) == {"a", "d"}
    assert _leftovers(review_repo) == []
    assert len(_worktrees(review_repo)) == 1


@real_codex
def test_reviews_of_items_x_never_reached_leave_no_folder(review_repo: ReviewRepo) -> None:
    # a fails once b and c are in flight; -x stops pytest before b's and c's setup, and
    # their launches are cancelled.
    for name in "abc":
        review_repo.plan(f"{name}.md")
    review_repo.answer("a.md", {"message": revise_review(), "hold": {"answering": 3}})
    review_repo.answer("b.md", {"hang": INTERRUPTED_HANG_S})
    review_repo.answer("c.md", {"message": approved_review(), "hold": {"answering": 3}})
    timeout = f"--advreview-timeout={INTERRUPTED_HANG_S}"
    result = review_repo.pytester.runpytest_subprocess(
        *review_repo.args(*BASE, "-x", "--advreview-jobs=3", timeout), timeout=180
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=1)
    assert _sent(review_repo) == set("abc")
    assert _leftovers(review_repo) == []
    assert len(_worktrees(review_repo)) == 1


@real_codex
def test_reviews_of_items_ctrl_c_never_reached_leave_no_folder(review_repo: ReviewRepo) -> None:
    # Ctrl-C while a's setup waits for its review, with b's and c's in flight too.
    _plans(review_repo, "abc", {"hang": INTERRUPTED_HANG_S})
    timeout = f"--advreview-timeout={INTERRUPTED_HANG_S}"
    argv = [sys.executable, "-m", "pytest", *review_repo.args(*BASE, "--advreview-jobs=3", timeout)]
    proc = start_interruptible(
        argv, cwd=review_repo.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    out = interrupt_when(
        proc,
        lambda: len(review_repo.server.response_requests) >= 3,
        "the three reviews' requests to the model",
    )
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out.decode(errors="replace")
    assert _sent(review_repo) == set("abc")
    assert _leftovers(review_repo) == []
    assert len(_worktrees(review_repo)) == 1


def test_a_dropped_review_that_cannot_be_removed_is_named_in_the_summary(
    plans: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The removal of the review started for a (skipped in its setup) fails: the summary
    # says so, with the message that names what is left, instead of leaving it unsaid.
    removed = ReviewGuard.cleanup

    def cleanup(guard: ReviewGuard, *, keep: bool) -> str | None:
        kept = removed(guard, keep=keep)  # removed all the same: nothing left in the test
        if guard.key.endswith("a.md"):
            raise WorkspaceError("the review worktree /x could not be removed completely")
        return kept

    monkeypatch.setattr(ReviewGuard, "cleanup", cleanup)
    # Outside a gate: under CI the skipped review item fails the run by itself (the gate
    # expects every review to run), which is not what this test is about.
    for name in ("CI", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
    # A run in this process: tempfile's cached choice is its temporary directory.
    temp = plans.path.parent / f"{plans.path.name}-tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    result = _run(
        plans,
        "@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_runtest_setup(item):\n"
        "    if 'a.md' in item.nodeid:\n"
        "        pytest.skip('not this one')\n",
        "--advreview-jobs=2",
    )
    result.assert_outcomes(passed=2, skipped=1)
    assert result.ret == pytest.ExitCode.OK  # every verdict that counts was given
    result.stdout.fnmatch_lines(
        [
            "WARNING: the review worktree /x could not be removed completely (the review "
            "of docs/plans/a.md, started ahead of an item that never took it)"
        ]
    )
    assert list(temp.glob("advreview-*")) == []
