"""A maintainer decides on the pull request: commands through the GitHub API, real Codex.

Before: nobody could turn a blocking finding into a pass, and a target at ``max-rounds``
stayed failed "until ``--advreview-fresh``", an edit of the CI configuration.  Now the
Action's ``commands`` step lists the pull request's comments through the REST API (here a
loopback stand-in, ``action_kit.GitHubAPI``), keeps the ``/advreview`` commands of users
with write permission, and the gate's next run (a re-run of the same commit: the check
turns green without a push) counts them.  The action's steps run as the runner would.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from action_kit import ActionResult, GitHubAPI
from pytest_advreview.models import Location, finding_id
from pytest_advreview.testing import FindingSpec, approved_review, revise_review
from pytest_advreview.trust.commands import EDITED
from test_action import (  # noqa: F401  (the fixtures)
    PLAN,
    PLAN_PROMPT,
    REPO,
    Scratch,
    github_api,
    scratch,
)
from test_operator_e2e import LEAD_REASON, operator_lead

pytestmark = pytest.mark.real_codex

KEY = "docs/plans/x.md"
CRITICAL = FindingSpec("critical", "Rollback restores a stale backup", section="Rollback")
FID = finding_id(CRITICAL.title, Location(section=CRITICAL.section))
OTHER = FindingSpec("high", "The backup is never verified", section="Rollback")
REASON = "The backup is taken inside the migration's transaction."
COMMENTS = f"/repos/{REPO}/issues/7/comments?per_page=100&page=1"


def comment(
    n: int, body: str, login: str, kind: str = "User", edited: bool = False
) -> dict[str, Any]:
    posted = f"2026-12-01T10:{n:02d}:00Z"
    return {
        "id": n,
        "body": body,
        "user": {"login": login, "type": kind},
        "html_url": f"https://github.test/{REPO}/pull/7#issuecomment-{n}",
        "created_at": posted,
        "updated_at": "2026-12-01T11:00:00Z" if edited else posted,
    }


def record(result: ActionResult) -> dict[str, Any]:
    data = json.loads(Path(result.outputs["json"]).read_text(encoding="utf-8"))
    (item,) = [i["record"] for i in data["items"] if i["record"]["key"] == KEY]
    return dict(item)


def bound(result: ActionResult) -> str:
    """The content id the failure prints for ``FID``: what a waiver of it names."""
    found = re.search(rf"/advreview waive {FID}@([0-9a-f]{{16}}): reason", result.log)
    assert found, result.log
    return found[1]


def reviewed(repo: Scratch, *steps: str) -> None:
    repo.write(KEY, PLAN)
    repo.commit("the plan")
    repo.answer(
        [
            {
                "match": f"{PLAN_PROMPT} {KEY}",
                "in": "body",
                "steps": [{"message": step} for step in steps],
            }
        ]
    )


def test_a_maintainers_waive_command_passes_a_critical_finding_without_a_push(
    scratch: Scratch,  # noqa: F811
    github_api: GitHubAPI,  # noqa: F811
) -> None:
    reviewed(scratch, revise_review(CRITICAL))
    api = {"GITHUB_API_URL": github_api.url}
    first = scratch.run(env=api)
    assert not first.ok
    assert first.outputs["outcome"] == "failed", first.log
    # The failure names the code a waiver is for: the finding's content id.
    content = bound(first)

    # A user with read permission, a bot, and a quote try first; then a maintainer.
    github_api.comments[7] = [
        comment(1, f"/advreview waive {FID}: looks fine to me", "triager"),
        comment(2, f"/advreview waive {FID}: automated", "helper[bot]", kind="Bot"),
        comment(3, f"> /advreview waive {FID}: quoted\n\nI agree", "maintainer"),
        comment(
            4, f"Checked with the DBA.\n/advreview waive {FID}@{content}: {REASON}", "maintainer"
        ),
        # GitHub does not say who edited a comment: its commands never count.
        comment(5, "/advreview rounds +3: added in an edit", "maintainer", edited=True),
    ]
    calls = len(github_api.calls)
    second = scratch.run(env=api)  # a re-run of the same commit
    assert second.ok, second.log
    assert second.outputs["outcome"] == "passed"
    assert "pytest-advreview: counts: waive by @maintainer (write)" in second.log
    assert f"waived {FID} by @maintainer (command), reason: {REASON}" in second.log
    # The comments were listed and each commenter with a command asked for, once.
    asked = [(method, path) for method, path, _, _ in github_api.calls[calls:]]
    assert ("GET", COMMENTS) in asked
    assert [p for m, p in asked if p.endswith("/permission")] == [
        f"/repos/{REPO}/collaborators/triager/permission",
        f"/repos/{REPO}/collaborators/maintainer/permission",
    ]
    item = record(second)
    assert item["outcome"] == "passed" and item["failing_ids"] == []
    (waiver,) = item["waived"]
    assert (waiver["by"], waiver["source"], waiver["reason"]) == ("@maintainer", "command", REASON)
    assert waiver["at"] == f"https://github.test/{REPO}/pull/7#issuecomment-4"
    why = [(i["by"], i["why"]) for i in item["ignored"]]
    assert any(by == "@triager" and w.startswith("@triager has read permission") for by, w in why)
    assert any(by == "@maintainer" and w.startswith("not a command: it is quoted") for by, w in why)
    assert any(by == "@helper[bot]" for by, _ in why)
    (edit,) = [i for i in item["ignored"] if "rounds +3" in i["text"]]
    assert edit["why"] == EDITED
    assert not item["rounds_granted"]
    sarif = json.loads(Path(second.outputs["sarif"]).read_text(encoding="utf-8"))
    (suppressed,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == FID]
    assert suppressed["suppressions"][0]["kind"] == "external"


def test_a_maintainers_decide_command_closes_a_finding_left_to_the_operator(
    scratch: Scratch,  # noqa: F811
    github_api: GitHubAPI,  # noqa: F811
) -> None:
    reviewed(scratch, revise_review(CRITICAL), approved_review())
    args = (
        scratch.inputs()["pytest-args"]
        + " "
        + " ".join(f"'{a}'" for a in operator_lead(scratch.root / "lead"))
    )
    api = {"GITHUB_API_URL": github_api.url}
    first = scratch.run(env=api, **{"pytest-args": args})
    assert not first.ok
    assert f"needs the operator: {FID}" in first.log and LEAD_REASON in first.log

    github_api.comments[7] = [
        comment(5, f"/advreview decide {FID} reject: {REASON}", "triager"),
    ]
    still = scratch.run(env=api, **{"pytest-args": args})
    assert not still.ok
    assert f"needs the operator: {FID}" in still.log

    github_api.comments[7].append(
        comment(6, f"/advreview decide {FID} reject: {REASON}", "maintainer")
    )
    second = scratch.run(env=api, **{"pytest-args": args})
    assert second.ok, second.log
    # The decision reached the reviewer, with who made it.
    assert f"{REASON} (decided by @maintainer)" in scratch.plan_requests(KEY)[-1].last_user_text


def test_at_the_round_limit_a_command_grants_two_more_rounds(
    scratch: Scratch,  # noqa: F811
    github_api: GitHubAPI,  # noqa: F811
) -> None:
    reviewed(
        scratch,
        revise_review(CRITICAL),
        revise_review(OTHER),
        approved_review(),
    )
    api = {"GITHUB_API_URL": github_api.url}
    args = scratch.inputs()["pytest-args"] + " --advreview-max-rounds=1"
    first = scratch.run(env=api, **{"pytest-args": args})
    assert not first.ok
    assert record(first)["status"] == "max rounds"
    assert "the round limit (1) is reached with blocking findings open" in first.log
    assert f"/advreview waive {FID}@{bound(first)}: reason" in first.log
    assert "/advreview rounds +2: reason" in first.log

    # The author fixes it, but the limit is spent: the push is not reviewed.
    scratch.write(KEY, PLAN + "\nThe backup is taken first.\n")
    scratch.commit("take the backup first")
    stuck = scratch.run(env=api, **{"pytest-args": args})
    assert not stuck.ok
    assert record(stuck)["status"] == "max rounds"
    assert len(scratch.plan_requests(KEY)) == 1

    github_api.comments[7] = [comment(7, "/advreview rounds +2: nearly there", "maintainer")]
    granted = scratch.run(env=api, **{"pytest-args": args})  # a re-run: round 2
    assert not granted.ok
    item = record(granted)
    assert item["rounds_granted"] == 2
    assert [r["number"] for r in item["rounds"]] == [1, 2]
    assert "rounds granted: +2 beyond max-rounds" in granted.log

    scratch.write(KEY, PLAN + "\nThe backup is taken first and verified.\n")
    scratch.commit("verify the backup")
    third = scratch.run(env=api, **{"pytest-args": args})  # round 3 of 1 + 2
    assert third.ok, third.log
    assert [r["number"] for r in record(third)["rounds"]] == [1, 2, 3]
