"""``--advreview-jobs``: reviews side by side in one pytest process (real Codex CLI, but
for the pool's choice of items, which the in-process scripted reviewer shows).

The scripted server holds its answers until the reviews expected side by side are all in
flight (a ``hold``), so reviews that run side by side are seen there as requests that
arrive while another is still being answered (``LoggedRequest.answering``), not as timings.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import (
    INTERRUPTED_HANG_S,
    ReviewRepo,
    interrupt_when,
    live_processes,
    settled,
    start_interruptible,
)
from pytest_advreview.testing import approved_review, revise_review

pytestmark = pytest.mark.real_codex

NO_CODE = "--advreview-diff=none"


def _codex_of(repo: Path) -> list[str]:
    """Processes still running whose argv names the repository or a file in it."""
    return [f"{pid}: {b' '.join(argv)[:200]!r}" for pid, argv, _exe in live_processes(str(repo))]


def _outcome_lines(text: str) -> list[str]:
    """``nodeid STATUS`` lines of a ``-v`` run and the summary lines, without timings."""
    keep = []
    for line in text.splitlines():
        if "::adversarial-review" not in line:
            continue
        line = re.sub(r"\d+(\.\d+)?s\b", "<t>", line)
        line = re.sub(r"\d+ tokens", "<n> tokens", line)
        keep.append(re.sub(r"\s+\[\s*\d+%\]$", "", line).rstrip())
    return keep


def _four_plans(review_repo: ReviewRepo, at_most: float) -> None:
    """Four plans whose answers each wait until all four reviews are in flight, but no
    longer than ``at_most`` seconds."""
    review_repo.rules.clear()
    hold = {"answering": 4, "at_most": at_most}
    for name in ("a", "b", "c", "d"):
        review_repo.plan(f"{name}.md")
    review_repo.answer("a.md", {"message": approved_review(), "hold": hold})
    review_repo.answer("b.md", {"message": revise_review(), "hold": hold})
    review_repo.answer("c.md", {"message": approved_review(), "hold": hold})
    review_repo.answer("d.md", {"message": revise_review(("medium", "Vague")), "hold": hold})


def test_reviews_overlap_and_report_as_a_sequential_run(review_repo: ReviewRepo) -> None:
    # One at a time, each answer waits its half second for others that never come.
    _four_plans(review_repo, at_most=0.5)
    base = (NO_CODE, "-v", "-p", "no:randomly", "--advreview-fresh", "--advreview-progress=0")
    alone = review_repo.run(*base, "--advreview-jobs=1")
    sent = len(review_repo.server.response_requests)
    assert max(r.answering for r in review_repo.server.response_requests) == 0
    # Side by side, the answers go once the fourth review has asked.
    _four_plans(review_repo, at_most=30)
    together = review_repo.run(*base, "--advreview-jobs=4")
    requests = review_repo.server.response_requests[sent:]
    assert len(requests) == 4
    # All four were being answered at once at some point.
    assert max(r.answering for r in requests) == 3, [r.answering for r in requests]
    assert together.ret == alone.ret == 1
    together.assert_outcomes(passed=2, failed=2)
    assert _outcome_lines(together.stdout.str()) == _outcome_lines(alone.stdout.str())
    together.stdout.fnmatch_lines(["*advreview: * jobs=4*"])


def test_x_stops_the_reviews_in_flight_and_kills_their_processes(
    review_repo: ReviewRepo,
) -> None:
    for name in ("a", "b", "c"):
        review_repo.plan(f"{name}.md")
    # a fails (and -x stops the run) once b and c are in flight too.
    review_repo.answer("a.md", {"message": revise_review(), "hold": {"answering": 3}})
    review_repo.answer("b.md", {"hang": 600})
    review_repo.answer("c.md", {"hang": 600})
    # Without the kill the run would wait out the 600 s hangs (pytester's timeout fails it).
    result = review_repo.pytester.runpytest_subprocess(
        *review_repo.args(
            NO_CODE, "-x", "-p", "no:randomly", "--advreview-jobs=3", "--advreview-timeout=600"
        ),
        timeout=180,
    )
    assert result.ret == 1
    result.assert_outcomes(failed=1)
    prompts = [r.last_user_text for r in review_repo.server.response_requests]
    assert any("b.md" in p for p in prompts) and any("c.md" in p for p in prompts)
    assert settled(lambda: _codex_of(review_repo.path)) == []


def test_ctrl_c_leaves_no_process_behind(review_repo: ReviewRepo) -> None:
    for name in ("a", "b", "c"):
        review_repo.plan(f"{name}.md")
        review_repo.answer(f"{name}.md", {"hang": INTERRUPTED_HANG_S})
    timeout = f"--advreview-timeout={INTERRUPTED_HANG_S}"
    argv = [sys.executable, "-m", "pytest"]
    argv += review_repo.args(NO_CODE, "--advreview-jobs=3", timeout)
    proc = start_interruptible(
        argv, cwd=review_repo.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    out = interrupt_when(
        proc,
        lambda: len(review_repo.server.response_requests) >= 3,
        "the three reviews' requests to the model",
    )
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out.decode(errors="replace")
    assert b"KeyboardInterrupt" in out
    assert settled(lambda: _codex_of(review_repo.path)) == []


def test_deselected_item_is_never_sent(scripted_repo: ReviewRepo) -> None:
    # Which items the pool starts is the plugin's: the in-process reviewer shows it.
    for name in ("a", "b", "c"):
        scripted_repo.plan(f"{name}.md")
        scripted_repo.answer(f"{name}.md", {"message": approved_review()})
    result = scripted_repo.run(NO_CODE, "--advreview-jobs=3", "-k", "not b")
    result.assert_outcomes(passed=2, deselected=1)
    prompts = [r.last_user_text for r in scripted_repo.server.response_requests]
    assert not any("docs/plans/b.md" in p for p in prompts)
    assert sum("docs/plans/a.md" in p for p in prompts) == 1


def test_budget_exhaustion_stops_new_starts(review_repo: ReviewRepo) -> None:
    for name in ("a", "b", "c", "d"):
        review_repo.plan(f"{name}.md")
        review_repo.answer(f"{name}.md", {"message": approved_review()})
    result = review_repo.run(
        NO_CODE, "--advreview-jobs=2", "--advreview-budget-tokens=1", "-p", "no:randomly"
    )
    # a and b start together, before any token is counted; c and d start later and
    # find the budget spent: at most the reviews in flight overshoot it.
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines(
        ["*c.md::adversarial-review: budget exhausted*", "*d.md::adversarial-review: budget*"]
    )
    assert len(review_repo.server.response_requests) == 2


def test_x_also_stops_a_command_reviewer(review_repo: ReviewRepo) -> None:
    """The ``command`` backend's launches are cancelled the same way."""
    script = review_repo.write(
        "reviewer.py",
        "import sys, time\n"
        "prompt = sys.stdin.read()\n"
        "if 'docs/plans/a.md' not in prompt:\n"
        "    time.sleep(600)\n"
        f"print({revise_review()!r})\n",
    )
    for name in ("a", "b", "c"):
        review_repo.plan(f"{name}.md")
    result = review_repo.pytester.runpytest_subprocess(
        "--adversarial-review",
        "--advreview-reviewer=command",
        f"--advreview-command={sys.executable} {script}",
        NO_CODE,
        "-x",
        "-p",
        "no:randomly",
        "--advreview-jobs=3",
        "--advreview-timeout=600",
        timeout=180,
    )
    assert result.ret == 1, result.stdout.str()
    result.assert_outcomes(failed=1)
    assert settled(lambda: _codex_of(review_repo.path)) == []
