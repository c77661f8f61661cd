"""The Action's ``review-comments`` step through the loopback GitHub API.

Each request body is validated against GitHub's published REST description
(``tests/data/github-rest``); the plans themselves are in ``test_pr_review.py``.  The fork's
pull request in ``pull_request_target`` mode runs the whole action with the real Codex CLI
(``test_pull_request_target_fork_gets_its_review_from_the_base_code``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import test_action
from action_kit import GitHubAPI
from conftest import git
from pytest_advreview.action import main
from pytest_advreview.models import Finding, ItemRecord, ReviewStatus, Waiver
from pytest_advreview.report.collect import ItemResult
from pytest_advreview.report.json_report import render_json
from pytest_advreview.settings import Settings
from pytest_advreview.testing import FindingSpec, revise_review
from test_action import PLAN, PLAN_PROMPT, REPO, Scratch
from test_reports import _finding, _record

HEAD, HEAD2 = "1" * 40, "2" * 40
#: The pull request changed src/pay.py lines 1-20 and the plan's lines 1-7.
FILES = [
    {"filename": "src/pay.py", "patch": "@@ -0,0 +1,20 @@\n+x"},
    {"filename": "docs/plans/p.md", "patch": "@@ -1,3 +1,7 @@\n # Plan"},
    {"filename": "logo.png"},  # binary: no patch
]


@pytest.fixture
def github_api() -> Iterator[GitHubAPI]:
    with GitHubAPI(REPO) as api:
        api.files[7] = FILES
        yield api


class Step:
    """Runs ``review-comments`` the way action.yml does, against one workspace."""

    def __init__(self, tmp_path: Path, api: GitHubAPI) -> None:
        self.tmp = tmp_path
        self.api = api
        self.workspace = tmp_path / "work"
        (self.workspace / "docs/plans").mkdir(parents=True)
        (self.workspace / "docs/plans/p.md").write_text("# Plan\n\n## Rollout\n\nx\n")

    def run(self, records: list[ItemRecord], head: str = HEAD, **env: str) -> int:
        results = self.tmp / "results.json"
        items = [ItemResult(r, "failed" if r.outcome == "failed" else "passed") for r in records]
        results.write_text(render_json(Settings(), items))
        event = self.tmp / "event.json"
        event.write_text(json.dumps({"pull_request": {"number": 7, "head": {"sha": head}}}))
        return main(
            ["review-comments"],
            {
                "GITHUB_REPOSITORY": REPO,
                "GITHUB_API_URL": self.api.url,
                "GH_TOKEN": "local-token",
                "GITHUB_EVENT_PATH": str(event),
                "GITHUB_WORKSPACE": str(self.workspace),
                "ADVREVIEW_ACTION_PR": "7",
                "ADVREVIEW_ACTION_JSON": str(results),
                **env,
            },
        )

    def posts(self) -> list[tuple[str, Any]]:
        return [
            (path.partition("?")[0], body)
            for method, path, body, _ in self.api.calls
            if method == "POST"
        ]


@pytest.fixture
def step(tmp_path: Path, github_api: GitHubAPI) -> Step:
    return Step(tmp_path, github_api)


def _code(title: str, start: int, end: int | None = None, **extra: object) -> Finding:
    finding = _finding("high", title, file="src/pay.py", line_start=start, line_end=end)
    return finding.model_copy(update=extra)


def _codes(*findings: Finding, waived: tuple[Waiver, ...] = ()) -> ItemRecord:
    record = _record("", ReviewStatus.REVISE, "failed", findings, kind="code")
    return record.model_copy(update={"waived": waived})


def _plan(*findings: Finding) -> ItemRecord:
    return _record("p.md", ReviewStatus.REVISE, "failed", findings)


REVIEWS = f"/repos/{REPO}/pulls/7/reviews"


def test_first_push_posts_one_review_with_lines_a_suggestion_and_a_body(
    step: Step, github_api: GitHubAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    on_lines = _code("Retry pays twice", 9, 10, suggestion="charge(order, key=order.id)")
    outside = _code("Old helper", 40)
    heading = _finding("medium", "Rollout has no owner", section="Rollout")

    assert step.run([_codes(on_lines, outside), _plan(heading)]) == 0

    assert github_api.invalid == []
    ((path, review),) = step.posts()
    assert path == REVIEWS
    assert review["event"] == "COMMENT" and review["commit_id"] == HEAD
    code, plan = review["comments"]
    assert (code["path"], code["start_line"], code["line"], code["side"]) == (
        "src/pay.py",
        9,
        10,
        "RIGHT",
    )
    assert "```suggestion\ncharge(order, key=order.id)\n```" in code["body"]
    assert (plan["path"], plan["line"]) == ("docs/plans/p.md", 3)
    assert "Old helper" in review["body"] and "src/pay.py line 40" in review["body"]
    # Every call carried the job's token.
    assert {auth for *_, auth in github_api.calls} == {"Bearer local-token"}
    assert "2 finding(s) commented on lines, 1 in the review body" in capsys.readouterr().out


def test_second_push_posts_the_new_finding_and_answers_the_fixed_one(
    step: Step, github_api: GitHubAPI
) -> None:
    kept, fixed, new = _code("Kept", 5), _code("Fixed", 6), _code("New", 7)
    assert step.run([_codes(kept, fixed)]) == 0
    thread = next(c["id"] for c in github_api.review_comments[7] if fixed.id in c["body"])
    github_api.calls.clear()

    assert step.run([_codes(kept, new)], head=HEAD2) == 0

    assert github_api.invalid == []
    (review_post, reply_post) = step.posts()
    assert [c["body"].splitlines()[0] for c in review_post[1]["comments"]] == [
        f"<!-- advreview:finding {new.id} -->"
    ]
    assert reply_post == (
        f"/repos/{REPO}/pulls/7/comments/{thread}/replies",
        {"body": f"<!-- advreview:resolved {fixed.id} -->\nResolved in {HEAD2}."},
    )


def test_force_push_with_the_same_findings_posts_nothing(
    step: Step, github_api: GitHubAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    findings = (_code("Kept", 5), _code("Also kept", 8, 9))
    assert step.run([_codes(*findings)]) == 0
    github_api.calls.clear()

    assert step.run([_codes(*findings)], head=HEAD2) == 0  # the rewritten head
    assert step.posts() == []
    assert "no new review (nothing new to say)" in capsys.readouterr().out


def test_a_waived_finding_is_answered_with_who_waived_it(step: Step, github_api: GitHubAPI) -> None:
    finding = _code("Waived", 5)
    assert step.run([_codes(finding)]) == 0
    waiver = Waiver(finding=finding.id, by="@maintainer", reason="accepted risk", source="command")
    github_api.calls.clear()

    assert step.run([_codes(finding, waived=(waiver,))], head=HEAD2) == 0

    assert github_api.invalid == []
    ((path, body),) = step.posts()
    assert path.endswith("/replies")
    assert "**Waived** by @maintainer: accepted risk" in body["body"]


def test_someone_elses_marked_comments_are_neither_trusted_nor_answered(
    step: Step, github_api: GitHubAPI
) -> None:
    finding, gone = _code("Open", 5), _code("Gone", 6)
    github_api.review_comments[7] = [
        {"id": 1, "user": {"login": "mallory"}, "body": f"<!-- advreview:finding {finding.id} -->"},
        {"id": 2, "user": {"login": "mallory"}, "body": f"<!-- advreview:finding {gone.id} -->"},
        {"id": "3", "user": {"login": "github-actions[bot]"}, "body": "no numeric id: ignored"},
    ]

    assert step.run([_codes(finding)]) == 0

    ((path, review),) = step.posts()
    assert path == REVIEWS and len(review["comments"]) == 1  # posted, not skipped


def test_the_plan_heading_is_the_heads_not_the_work_trees(
    step: Step, github_api: GitHubAPI
) -> None:
    # pull_request_target: the work tree is the base; the plan is read from the head.
    work = step.workspace
    git(work, "init", "-q")
    git(work, "-c", "user.name=T", "-c", "user.email=t@e.invalid", "add", "-A")
    git(work, "-c", "user.name=T", "-c", "user.email=t@e.invalid", "commit", "-qm", "head")
    head = git(work, "rev-parse", "HEAD").strip()
    (work / "docs/plans/p.md").write_text("# Base\n\nx\n\nx\n\n## Rollout\n")  # line 7
    gone = (_finding("high", "g", section="S"),)
    missing = _record("gone.md", ReviewStatus.REVISE, "failed", gone)
    rollout = _finding("medium", "Rollout has no owner", section="Rollout")

    assert step.run([_plan(rollout), missing], head=head) == 0

    ((_, review),) = step.posts()
    (comment,) = review["comments"]
    assert (comment["path"], comment["line"]) == ("docs/plans/p.md", 3)
    assert "docs/plans/gone.md (S)" in review["body"]  # no such plan: in the body


def test_a_poster_that_is_not_the_default_login(step: Step, github_api: GitHubAPI) -> None:
    github_api.login = "advreview-app[bot]"
    finding = _code("Open", 5)
    assert step.run([_codes(finding)], ADVREVIEW_ACTION_COMMENT_AUTHOR="advreview-app[bot]") == 0
    github_api.calls.clear()
    assert (
        step.run([_codes(finding)], HEAD2, ADVREVIEW_ACTION_COMMENT_AUTHOR="advreview-app[bot]")
        == 0
    )
    assert step.posts() == []


def test_no_pull_request_or_no_results_is_a_notice_not_a_failure(
    step: Step, github_api: GitHubAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    assert step.run([], ADVREVIEW_ACTION_PR="") == 0
    assert "no pull request to review" in capsys.readouterr().out
    assert step.run([], ADVREVIEW_ACTION_JSON=str(step.tmp / "missing.json")) == 0
    assert "no results to comment on" in capsys.readouterr().out
    (step.tmp / "bad.json").write_text("{}")
    assert step.run([], ADVREVIEW_ACTION_JSON=str(step.tmp / "bad.json")) == 0
    assert "not a results file of this version" in capsys.readouterr().out
    assert github_api.calls == []


def test_an_api_failure_is_one_clear_error(
    step: Step, github_api: GitHubAPI, capsys: pytest.CaptureFixture[str]
) -> None:
    assert step.run([_codes(_code("x", 5))], GITHUB_REPOSITORY="acme/gone") == 1
    out = capsys.readouterr().out
    assert "GitHub API GET /repos/acme/gone/pulls/7/files?per_page=100&page=1 answered 404" in out
    assert "pull-requests: write" in out


def test_the_fake_api_refuses_what_github_would_refuse(github_api: GitHubAPI) -> None:
    # The schema check is real: an event GitHub does not know, a comment without a path.
    bad = {"event": "MERGE", "comments": [{"body": "x", "line": 3}]}
    status, _ = github_api.route("POST", f"{REVIEWS}", bad)
    assert status == 422 and github_api.invalid[0].startswith("pulls/create-review: ")
    status, _ = github_api.route("POST", f"/repos/{REPO}/pulls/7/merge", {})
    assert status == 422 and "no published request schema" in github_api.invalid[1]


def test_the_comment_input_must_be_one_of_its_values(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prepare"], {"ADVREVIEW_ACTION_COMMENT": "yes"}) == 1
    assert "input comment is 'yes'; use false, true or review" in capsys.readouterr().out


# -- the whole action, a fork's pull request (real Codex CLI) ------------------------------------

scratch = test_action.scratch


@pytest.mark.real_codex
def test_pull_request_target_fork_gets_its_review_from_the_base_code(
    scratch: Scratch, github_api: GitHubAPI
) -> None:
    scratch.write("docs/plans/x.md", PLAN)
    scratch.add_traps("conftest.py", "tests/conftest.py")
    head = scratch.commit("fork: plan and a conftest")
    scratch.fork_checkout(head)
    finding = FindingSpec("high", "Rollback restores a stale backup", section="Rollback")
    scratch.answer(
        [
            {
                "match": f"{PLAN_PROMPT} docs/plans/x.md",
                "in": "body",
                "steps": [{"message": revise_review(finding)}],
            }
        ]
    )
    github_api.files[7] = [
        {"filename": "docs/plans/x.md", "patch": "@@ -0,0 +1,6 @@\n+# Plan"},
        {"filename": "conftest.py", "patch": "@@ -0,0 +1,3 @@\n+from pathlib import Path"},
    ]
    event = scratch.pr_event(
        author_association="NONE",
        head={"sha": head, "ref": "feature", "repo": {"full_name": "mallory/widgets"}},
    )
    event.update(action="labeled", label={"name": "advreview"}, sender={"login": "maintainer"})
    github_api.permissions["maintainer"] = "write"

    result = scratch.run(
        event=event,
        event_name="pull_request_target",
        env={"GITHUB_API_URL": github_api.url},
        comment="review",
    )

    assert result.outputs["outcome"] == "failed", result.log
    assert ("Review comments on the changed lines", 0) in result.ran
    assert scratch.imported() == []  # the head's conftest files never ran
    assert github_api.invalid == []
    (review,) = github_api.reviews[7]
    assert review["commit_id"] == head
    (comment,) = github_api.review_comments[7]
    # The heading of the plan's section, read from the head as data (the base has no plan).
    assert (comment["path"], comment["line"]) == ("docs/plans/x.md", 5)
    assert "Rollback restores a stale backup" in comment["body"]
    (summary,) = github_api.comments[7]
    assert summary["body"].startswith("<!-- pytest-advreview:report -->")


def test_earlier_comments_are_read_past_the_first_page(step: Step, github_api: GitHubAPI) -> None:
    finding = _code("Posted long ago", 5)
    others = [{"id": i, "user": {"login": "bob"}, "body": f"note {i}"} for i in range(1, 131)]
    mine = {
        "id": 500,
        "user": {"login": github_api.login},
        "in_reply_to_id": None,
        "body": f"<!-- advreview:finding {finding.id} -->\n**[high] Posted long ago**",
    }
    github_api.review_comments[7] = [*others, mine]

    assert step.run([_codes(finding)]) == 0

    assert step.posts() == []
    pages = [p for m, p, *_ in github_api.calls if m == "GET" and "/pulls/7/comments" in p]
    assert [p.rpartition("page=")[2] for p in pages] == ["1", "2"]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b'{"message": "not a list"}', "GET /repos/acme/widgets/pulls/7/files answered dict"),
        (b"<html>rate limited</html>", "answered something that is not JSON"),
    ],
)
def test_an_unexpected_answer_is_one_clear_error(
    step: Step, payload: bytes, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        assert step.run([_codes(_code("x", 5))], GITHUB_API_URL=url) == 1
    finally:
        server.shutdown()
        server.server_close()
    assert message in capsys.readouterr().out
