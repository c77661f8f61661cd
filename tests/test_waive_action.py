"""The Action's ``rerun`` mode: a maintainer's command turns the required check green
without a push.

Before: a waiver counted only at the gate's next run, which a comment does not start.  Now
a workflow on ``issue_comment`` runs the Action in mode ``rerun`` (``auto`` picks it for
that event): for a comment whose ``/advreview`` command counts (write permission), it finds
the gate workflow's last run of the pull request's head commit and re-runs it through the
REST API (a loopback stand-in that validates the request body against GitHub's published
schema); the re-run's ``commands`` step then counts the command.  The action's steps run
as the runner would, with the real Codex CLI for the gate runs.
"""

from __future__ import annotations

from typing import Any

import pytest

from action_kit import ActionResult, GitHubAPI
from conftest import git
from pytest_advreview.testing import revise_review
from test_action import (  # noqa: F401  (the fixtures)
    PLAN,
    PLAN_PROMPT,
    REPO,
    Scratch,
    github_api,
    scratch,
)
from test_decide_command_e2e import CRITICAL, FID, KEY, REASON, bound

pytestmark = pytest.mark.real_codex

WORKFLOW_REF = f"{REPO}/.github/workflows/advreview.yml@refs/heads/main"


def comment_event(body: str, login: str = "maintainer", pull: bool = True) -> dict[str, Any]:
    issue: dict[str, Any] = {"number": 7}
    if pull:
        issue["pull_request"] = {"url": f"https://api.github.test/repos/{REPO}/pulls/7"}
    return {
        "action": "created",
        "issue": issue,
        "comment": {
            "id": 31,
            "body": body,
            "user": {"login": login, "type": "User"},
            "html_url": f"https://github.test/{REPO}/pull/7#issuecomment-31",
        },
    }


def on_comment(repo: Scratch, api: GitHubAPI, event: dict[str, Any], **inputs: str) -> ActionResult:
    env = {"GITHUB_API_URL": api.url, "GITHUB_WORKFLOW_REF": WORKFLOW_REF}
    # issue_comment runs on the default branch's commit, not the pull request's.
    return repo.run(event=event, event_name="issue_comment", env=env, sha=repo.base, **inputs)


def runs(head: str, status: str = "completed") -> list[dict[str, Any]]:
    return [
        {
            "id": 400,
            "workflow": "advreview.yml",
            "head_sha": head,
            "event": "pull_request",
            "status": "completed",
        },
        {
            "id": 501,
            "workflow": "advreview.yml",
            "head_sha": head,
            "event": "pull_request",
            "status": status,
        },
        {
            "id": 600,
            "workflow": "other.yml",
            "head_sha": head,
            "event": "pull_request",
            "status": "completed",
        },
        {
            "id": 700,
            "workflow": "advreview.yml",
            "head_sha": head,
            "event": "push",
            "status": "completed",
        },
        {
            "id": 800,
            "workflow": "advreview.yml",
            "head_sha": "0" * 40,
            "event": "pull_request",
            "status": "completed",
        },
    ]


def test_a_maintainers_comment_re_runs_the_gate_which_then_passes(
    scratch: Scratch,  # noqa: F811
    github_api: GitHubAPI,  # noqa: F811
) -> None:
    scratch.write(KEY, PLAN)
    head = scratch.commit("the plan")
    scratch.answer(
        [
            {
                "match": f"{PLAN_PROMPT} {KEY}",
                "in": "body",
                "steps": [{"message": revise_review(CRITICAL)}],
            }
        ]
    )
    gate = {"GITHUB_API_URL": github_api.url}
    failed = scratch.run(env=gate)
    assert not failed.ok  # the gate's run 501 fails

    github_api.pulls[7] = {"number": 7, "head": {"sha": head}}
    github_api.runs = runs(head)
    # The waiver names the code it was decided on (the content id the failure prints).
    body = f"/advreview waive {FID}@{bound(failed)}: {REASON}"
    github_api.comments[7] = [
        {"id": 31, "body": body, "user": {"login": "maintainer", "type": "User"}}
    ]
    reviews = len(scratch.server.response_requests)
    comment = on_comment(scratch, github_api, comment_event(body))
    assert comment.ok, comment.log
    assert github_api.reruns == [501]
    assert github_api.invalid == []  # the body is what GitHub's schema accepts
    assert "re-ran advreview.yml run 501 of " in comment.log
    assert "waive by @maintainer" in comment.log
    assert [name for name, _ in comment.ran] == ["install", "prepare", "rerun"]
    rerun_call = next(c for c in github_api.calls if c[0] == "POST")
    assert rerun_call[1:3] == (
        f"/repos/{REPO}/actions/runs/501/rerun",
        {"enable_debug_logging": False},
    )
    assert len(scratch.server.response_requests) == reviews  # a comment reviews nothing

    # The re-run of the gate (same commit, no push) counts the command and passes.
    rerun = scratch.run(env=gate, sha=head)
    assert rerun.ok, rerun.log
    assert f"waived {FID} by @maintainer (command)" in rerun.log


@pytest.mark.parametrize(
    ("event", "status", "inputs", "said"),
    [
        (
            comment_event(f"/advreview waive {FID}: fine", login="triager"),
            "completed",
            {},
            "nothing to re-run: @triager has read permission",
        ),
        (
            comment_event("thanks, looks good"),
            "completed",
            {},
            "nothing to re-run: the comment has no /advreview command",
        ),
        (
            comment_event(f"> /advreview waive {FID}: x"),
            "completed",
            {},
            "nothing to re-run: not a command: it is quoted text",
        ),
        (
            comment_event(f"/advreview waive {FID}: x", pull=False),
            "completed",
            {},
            "a comment on an issue, not a pull request",
        ),
        (
            comment_event(f"/advreview waive {FID}: x"),
            "in_progress",
            {},
            "run 501 of advreview.yml is in_progress",
        ),
    ],
)
def test_no_re_run_without_a_command_that_counts_or_a_finished_run(
    scratch: Scratch,  # noqa: F811
    github_api: GitHubAPI,  # noqa: F811
    event: dict[str, Any],
    status: str,
    inputs: dict[str, str],
    said: str,
) -> None:
    head = git(scratch.work, "rev-parse", "HEAD").strip()
    github_api.pulls[7] = {"number": 7, "head": {"sha": head}}
    github_api.runs = runs(head, status)
    result = on_comment(scratch, github_api, event, **inputs)
    assert result.ok, result.log
    assert said in result.log
    assert github_api.reruns == []


def test_the_workflow_input_names_the_gate_and_a_wrong_event_is_refused(
    scratch: Scratch,  # noqa: F811
    github_api: GitHubAPI,  # noqa: F811
) -> None:
    head = git(scratch.work, "rev-parse", "HEAD").strip()
    github_api.pulls[7] = {"number": 7, "head": {"sha": head}}
    github_api.runs = runs(head)
    event = comment_event("/advreview rounds +2: nearly there")
    named = on_comment(scratch, github_api, event, workflow=".github/workflows/other.yml")
    assert named.ok, named.log
    assert github_api.reruns == [600]

    github_api.runs = []
    none = on_comment(scratch, github_api, event)
    assert none.ok
    assert f"advreview.yml has no pull-request run of {head[:12]} yet" in none.log

    wrong = scratch.run(env={"GITHUB_API_URL": github_api.url}, mode="rerun")
    assert not wrong.ok
    assert "mode rerun runs on issue_comment events, not 'pull_request'" in wrong.log
    unknown = scratch.run(
        event=event, event_name="issue_comment", env={"GITHUB_API_URL": github_api.url}
    )
    assert not unknown.ok
    assert "set the input workflow to its file name" in unknown.log
