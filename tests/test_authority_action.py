"""The Action's ``pull_request`` mode: the pull request cannot answer for the operator.

Before: the gate's isolated pytest run read the decisions file from the pull request's
checkout, so a branch that committed a ``reject`` for a finding the lead had left to a
person passed its next run ("approved, round 3").  Now the branch's entry reaches the
reviewer as the author's answer and the finding stays open until the decisions file of
the **base** commit (``pull_request.base.sha``, read with git) decides it.  Real Codex
CLI, the action's steps run as the runner would (``action_kit``).
"""

from __future__ import annotations

import shlex

import pytest

from conftest import git
from pytest_advreview.testing import FindingSpec, approved_review, revise_review
from test_action import PLAN, PLAN_PROMPT, Scratch, scratch  # noqa: F401  (the fixture)
from test_operator_e2e import LEAD_REASON, fid, operator_lead

pytestmark = pytest.mark.real_codex

HIGH = FindingSpec("high", "Rollback restores a stale backup", section="Rollback")
KEY = "docs/plans/x.md"
REASON = "The backup is taken inside the migration's transaction."


def _decision() -> str:
    return (
        f'[[decision]]\ntarget = "{KEY}"\nfinding = "{fid(HIGH)}"\n'
        f'action = "reject"\nreason = "{REASON}"\n'
    )


def test_a_reject_committed_by_the_pull_request_does_not_decide_for_the_operator(
    scratch: Scratch,  # noqa: F811
) -> None:
    scratch.write(KEY, PLAN)
    scratch.commit("the plan")
    scratch.answer(
        [
            {
                "match": f"{PLAN_PROMPT} {KEY}",
                "in": "body",
                "steps": [{"message": revise_review(HIGH)}, {"message": approved_review()}],
            }
        ]
    )
    lead = operator_lead(scratch.root / "lead")
    args = scratch.inputs()["pytest-args"] + " " + shlex.join(lead)

    # Run 1: round 1 REVISE, the lead leaves the finding to a person, round 2 APPROVED.
    first = scratch.run(**{"pytest-args": args})
    assert not first.ok
    assert first.outputs["outcome"] == "failed", first.log
    assert f"needs the operator: {fid(HIGH)}" in first.log
    assert LEAD_REASON in first.log

    # Run 2: the pull request commits a reject for it.  The reviewer is told (round 3,
    # it approves), and the finding stays open: the branch is not the operator.
    scratch.write(".advreview/decisions.toml", _decision())
    scratch.commit("answer the finding ourselves")
    second = scratch.run(**{"pytest-args": args})
    assert not second.ok, second.log
    assert second.outputs["outcome"] == "failed"
    assert f"needs the operator: {fid(HIGH)}" in second.log
    assert f".advreview/decisions.toml on the base branch ({scratch.base}:" in second.log
    assert REASON in scratch.plan_requests(KEY)[-1].last_user_text  # the author's answer

    # Run 3: the operator records the decision on the base branch; the next pull request
    # event names that commit as its base, and the gate reads the entry from it.
    git(scratch.work, "checkout", "-q", "main")
    scratch.write(".advreview/decisions.toml", _decision())
    scratch.base = scratch.commit("the operator decides")
    git(scratch.work, "checkout", "-q", "feature")
    third = scratch.run(**{"pytest-args": args})
    assert third.ok, third.log
    assert third.outputs["outcome"] == "passed"
