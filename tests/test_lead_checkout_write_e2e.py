"""A lead that writes the checkout from its worktree is a mutation error naming each path.

Observed on 1803125 with the real Codex CLI 0.171 as the reviewer: a ``command`` lead
(held by no sandbox of ours) that appends its fix to the plan in the user's checkout by
absolute path, not in the private worktree it runs in, got "accepted … but changed
nothing (was its edit denied?)": the answer check ran before the checkout was looked at,
and its complaint hid the write.  docs/lead.md: anything a ``command`` or ``claude`` lead
writes in the checkout itself is a mutation error naming the path.
"""

from __future__ import annotations

import pytest

from conftest import ReviewRepo
from pytest_advreview.testing import revise_review
from test_lead_e2e import CRITICAL, FIXED_LINE, NO_CODE, PLAN, accept, lead_script

pytestmark = pytest.mark.real_codex


@pytest.mark.parametrize("also", [False, True], ids=["the-plan", "the-plan-and-another-file"])
def test_a_lead_that_writes_the_checkout_by_absolute_path_is_a_mutation_error(
    review_repo: ReviewRepo, tmp_path_factory: pytest.TempPathFactory, also: bool
) -> None:
    plan = review_repo.plan("x.md", PLAN)
    review_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    stray = review_repo.path / "src" / "evil.py"
    stray.parent.mkdir()
    command = lead_script(
        tmp_path_factory.mktemp("lead"),
        decisions=[accept(CRITICAL)],
        edit={str(plan): FIXED_LINE},  # the checkout's plan, not the worktree's
        extra_write=str(stray) if also else None,
    )
    result = review_repo.run(
        NO_CODE, "--advreview-lead=command", f"--advreview-lead-command={command}"
    )
    out = result.stdout.str()
    assert plan.read_text() == PLAN + FIXED_LINE  # it did write there
    assert result.ret != pytest.ExitCode.OK, out
    assert "changed nothing" not in out, out
    result.stdout.fnmatch_lines(
        [
            "*docs/plans/x.md (*changed by the command lead after round 1 in the checkout*",
        ]
    )
    if also:
        result.stdout.fnmatch_lines(
            ["*src/evil.py (untracked, changed by the command lead after round 1 in the checkout*"]
        )
    # A broken contract gets no second round.
    reviews = [r for r in review_repo.server.response_requests if "x.md" in r.last_user_text]
    assert len(reviews) == 1, out
