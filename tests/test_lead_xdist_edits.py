"""A lead's edit copied into the checkout while another review watches it is no change
of that other review's (xdist workers; the in-process scripted reviewer).

With a lead no sandbox holds (``command``, ``claude``) each review watches the user's
checkout besides its own worktree.  Under xdist one worker's lead copies its accepted
edit into the checkout while another worker's review is running: that review once saw
the plan it never touched changed under it and failed with "the reviewer changed the
workspace" (``test_lead_e2e.py::test_lead_under_xdist_reports_its_edits_on_the_controller``
did so under load, whenever the two reviews overlapped).  Here they overlap for sure:
the reviewer of y waits, inside its first round, for x's edit to land in the checkout,
and x's reviewer answers only once y's review is running.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from conftest import ReviewRepo
from pytest_advreview.cachekey import plan_hash
from pytest_advreview.testing import approved_review, revise_review, run_step
from pytest_advreview.workspace import Adoptions
from test_lead_e2e import CRITICAL, FIXED_LINE, NO_CODE, PLAN, REREVIEW, accept, lead_script
from test_lead_e2e import lead_dir as lead_dir  # the fixture

#: Most seconds a reviewer waits for the other review's event (then the test fails on
#: what it did not see, instead of hanging).
AT_MOST_S = 60


def _wait_for(condition: str, then: str) -> str:
    """A shell command: poll ``condition`` until it holds (at most :data:`AT_MOST_S`),
    then print ``then`` if it does."""
    tries = AT_MOST_S * 20
    return (
        f"i=0; until {condition}; do [ $i -ge {tries} ] && exit 0; i=$((i+1)); sleep 0.05; "
        f"done; echo {then}"
    )


def test_a_lead_edit_copied_into_the_checkout_is_no_change_of_another_workers_review(
    scripted_repo: ReviewRepo, lead_dir: Path, tmp_path: Path
) -> None:
    plan = scripted_repo.plan("x.md", PLAN)
    scripted_repo.plan("y.md", "# Plan Y\n\n1. Ship.\n")
    started = shlex.quote(str(tmp_path / "y-started"))
    checkout_x = shlex.quote(str(plan))
    scripted_repo.answer(REREVIEW, {"message": approved_review()})
    # x's REVISE (and so its lead's edit) comes once y's review has begun its round.
    scripted_repo.answer(
        "x.md",
        run_step(_wait_for(f"[ -e {started} ]", "Y-RUNNING")),
        {"message": revise_review(CRITICAL)},
    )
    # y's round lasts until x's edit is in the checkout.
    fixed = shlex.quote(FIXED_LINE)
    scripted_repo.answer(
        "y.md",
        run_step(f"touch {started}; " + _wait_for(f"grep -qF {fixed} {checkout_x}", "X-EDIT-SEEN")),
        {"message": approved_review()},
    )
    command = lead_script(
        lead_dir, decisions=[accept(CRITICAL)], edit={"docs/plans/x.md": FIXED_LINE}
    )
    result = scripted_repo.run(
        NO_CODE,
        "-n",
        "2",  # two items, two workers: one each
        "--advreview-isolation=worktree",
        "--advreview-lead=command",
        f"--advreview-lead-command={command}",
    )
    outputs = scripted_repo.tool_outputs()
    # The two reviews overlapped as planned: x answered while y ran, y saw x's edit land.
    assert any("Y-RUNNING" in out for out in outputs), outputs
    assert any("X-EDIT-SEEN" in out for out in outputs), outputs
    result.assert_outcomes(passed=2)
    assert plan.read_text() == PLAN + FIXED_LINE
    result.stdout.fnmatch_lines(["*lead (command) after round 1: edited docs/plans/x.md*"])
    assert "changed the workspace" not in result.stdout.str()


def test_the_run_vouches_only_for_the_content_it_adopted_at_that_path(tmp_path: Path) -> None:
    adopted = Adoptions(tmp_path / "adopted", b"s" * 32)
    source, target = tmp_path / "copy.md", tmp_path / "plan.md"
    source.write_text("fixed\n")
    adopted.copy(source, target)
    assert target.read_text() == "fixed\n"
    digest = plan_hash(target)
    assert adopted.vouch(target, digest)
    assert not adopted.vouch(target, None)  # a path the snapshot found no content for
    assert not adopted.vouch(source, digest)  # the same content at another path
    # Without the run's secret nobody vouches (a record is named by an HMAC under it).
    assert not Adoptions(tmp_path / "adopted", b"t" * 32).vouch(target, digest)
    target.write_text("fixed\nand more\n")  # changed again after the copy
    assert not adopted.vouch(target, plan_hash(target))
