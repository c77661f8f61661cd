"""``comment: review`` from a real run: the real Codex CLI reviews a pull request's branch
through the whole action, and the review's comments sit on the lines the reviewer cited
(posted to the loopback GitHub API, every request body checked against GitHub's schema)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import test_action
from action_kit import GitHubAPI
from conftest import git
from pytest_advreview.testing import FindingSpec, revise_review
from test_action import REPO, Scratch

PAY = "".join(f"line {n} of pay\n" for n in range(1, 13))
CHANGED = PAY.replace("line 9 of pay\nline 10 of pay\n", "refund()\nrefund()\n")
RANGE = FindingSpec(
    "high",
    "Refund is paid twice",
    file="src/pay.py",
    lines=(9, 10),
    recommendation="Refund once.\n  ```suggestion\n  refund()\n  ```",
)
OUTSIDE = FindingSpec("medium", "Amount is a float", file="src/pay.py:3")

scratch = test_action.scratch


@pytest.fixture
def github_api() -> Iterator[GitHubAPI]:
    with GitHubAPI(REPO) as api:
        yield api


@pytest.mark.real_codex
def test_a_revise_on_a_branch_puts_the_review_comments_on_the_cited_lines(
    scratch: Scratch, github_api: GitHubAPI
) -> None:
    git(scratch.work, "checkout", "-q", "main")
    scratch.write("src/pay.py", PAY)
    scratch.base = scratch.commit("the payment")
    git(scratch.work, "checkout", "-q", "feature")
    git(scratch.work, "merge", "-q", "--ff-only", "main")
    scratch.write("src/pay.py", CHANGED)
    scratch.commit("refund")
    # GitHub's files API: the file's hunks, without the diff's header lines.
    diff = git(scratch.work, "diff", scratch.base, "HEAD", "--", "src/pay.py")
    github_api.files[7] = [{"filename": "src/pay.py", "patch": diff[diff.index("@@") :]}]
    scratch.answer(
        [
            {
                "match": "Review the code changes",
                "in": "body",
                "steps": [{"message": revise_review(RANGE, OUTSIDE)}],
            }
        ]
    )

    result = scratch.run(env={"GITHUB_API_URL": github_api.url}, comment="review")

    assert result.outputs["outcome"] == "failed", result.log
    assert ("Review comments on the changed lines", 0) in result.ran
    assert github_api.invalid == []
    (review,) = github_api.reviews[7]
    assert review["commit_id"] == git(scratch.work, "rev-parse", "HEAD").strip()
    (comment,) = github_api.review_comments[7]
    assert (comment["path"], comment["start_line"], comment["line"], comment["side"]) == (
        "src/pay.py",
        9,
        10,
        "RIGHT",
    )
    assert "**[high] Refund is paid twice**" in comment["body"]
    assert "```suggestion\nrefund()\n```" in comment["body"]
    # Line 3 is not in the diff: the finding is in the review's body.
    assert "Amount is a float" in review["body"] and "src/pay.py line 3" in review["body"]
    # Line 3 lies outside every changed hunk of the change: listed apart, as pre-existing.
    apart = review["body"].split("Pre-existing findings (outside every changed hunk", 1)[1]
    assert "Amount is a float" in apart and "· pre-existing (outside every changed hunk)" in apart
    assert "1 new finding(s) on the changed lines, 0 elsewhere, 1 pre-existing." in review["body"]
    assert "1 finding(s) commented on lines, 1 in the review body" in result.log

    # The next run on the same head posts nothing new.
    github_api.calls.clear()
    again = scratch.run(env={"GITHUB_API_URL": github_api.url}, comment="review")
    assert again.outputs["outcome"] == "failed"
    assert [c for c in github_api.calls if c[0] == "POST" and "/pulls/" in c[1]] == []
