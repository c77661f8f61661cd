"""The change set is the change: what a run writes never becomes what the reviewer judges.

Before: on a laptop (``--advreview-diff=auto``) a branch with two changed files failed
its review, and the failure said "record decisions, then run again". The new, untracked
``.advreview/decisions.toml`` (or the ``.coverage`` file pytest-cov left) switched the
default change set from the branch (``main...HEAD``) to "uncommitted: untracked files",
and round 2 reviewed the decisions file instead of the code, and approved it.  Now the
decisions file, the run's own outputs and known tool artefacts are no part of the change
and never switch its mode; when a change set does differ from the one the stored rounds
reviewed, the header and the re-review prompt say so.
"""

from __future__ import annotations

import re

import pytest

from conftest import ReviewRepo, git, ran_prompts
from pytest_advreview.testing import FindingSpec, approved_review, revise_review

PROMPT = "Review the code changes"
REREVIEW = "I've evaluated the findings."
HIGH = FindingSpec("high", "Deletes rows without a transaction", section="app.py")


def _branch_with_two_files(repo: ReviewRepo) -> None:
    git(repo.path, "checkout", "-q", "-b", "feature")
    repo.write("app.py", "def run(db):\n    db.delete_all()\n")
    repo.write("lib.py", "def helper():\n    return 1\n")
    repo.commit("the feature")


def _first_round_fails(repo: ReviewRepo) -> str:
    """Run 1 reviews ``main...HEAD`` (2 files) and fails; returns the finding's id."""
    repo.answer(REREVIEW, {"message": approved_review()})
    repo.answer(PROMPT, {"message": revise_review(HIGH)})
    first = repo.run()
    first.assert_outcomes(failed=1)
    first.stdout.fnmatch_lines(["*code change: branch main...HEAD:*, 2 files*"])
    match = re.search(r"AR-[0-9a-f]{6}", first.stdout.str())
    assert match is not None, first.stdout.str()
    return match.group(0)


@pytest.mark.real_codex
def test_recording_a_decision_does_not_change_what_is_reviewed(review_repo: ReviewRepo) -> None:
    _branch_with_two_files(review_repo)
    finding = _first_round_fails(review_repo)

    # What a laptop has after "record decisions, then run again", with pytest-cov run
    # in between: the decisions file and coverage data, both untracked.
    review_repo.write(
        ".advreview/decisions.toml",
        f'[[decision]]\ntarget = "code-review"\nfinding = "{finding}"\n'
        'action = "reject"\nreason = "The caller wraps run() in a transaction."\n',
    )
    review_repo.write(".coverage", b"SQLite format 3\x00coverage data")
    review_repo.write(".coverage.host.1234.XyZ", b"SQLite format 3\x00parallel data")
    status = git(review_repo.path, "status", "--porcelain", "--untracked-files=all")
    assert "?? .advreview/decisions.toml" in status and "?? .coverage" in status, status

    second = review_repo.run("--junitxml=junit.xml")
    second.assert_outcomes(passed=1)
    out = second.stdout.str()
    # Round 2 judges the same branch: two files against main, not the untracked files.
    second.stdout.fnmatch_lines(["*code change: branch main...HEAD:*, 2 files*"])
    assert "uncommitted" not in out
    assert "the change set is not the one its stored rounds reviewed" not in out
    rereview = ran_prompts(review_repo.server, REREVIEW)[-1]
    assert "The caller wraps run() in a transaction." in rereview  # the decision, as data
    assert "decisions.toml" not in rereview and ".coverage" not in rereview
    assert "untracked files" not in rereview
    # The stored verdict is of that change set: the next run passes from it.
    review_repo.run("--junitxml=junit.xml").stdout.fnmatch_lines(["*cached (passed)*"])
