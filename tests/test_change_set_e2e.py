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

import os
import re
from pathlib import Path

import pytest

from conftest import ReviewRepo, commit, feature_branch, git, ran_prompts, write
from pytest_advreview import targets
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


# -- the mechanism: what is left out, in which mode (targets.NotTheChange) --------------


@pytest.fixture
def feature(tmp_path: Path, hermetic_git: None) -> Path:
    """``main`` with one file; ``feature`` changes ``app.py``."""
    return feature_branch(tmp_path / "repo", {"app.py": "x = 1\n"})


def _outside(root: Path, *written: str) -> targets.NotTheChange:
    return targets.NotTheChange.of(
        root,
        root / ".advreview/decisions.toml",
        [os.path.join(root, w) for w in written],
        rootdir=root,
    )


def test_what_the_run_writes_never_switches_auto_to_uncommitted(feature: Path) -> None:
    write(feature, ".advreview/decisions.toml", "")
    write(feature, ".coverage", "data")
    write(feature, "sub/.coverage.host.42.abc", "data")
    write(feature, "reports/junit.xml", "<testsuites/>")
    write(feature, "reports/report.html", "<html/>")
    write(feature, "reports/assets/style.css", "body {}")
    write(feature, ".cache/v/x", "1")
    outside = _outside(
        feature, "reports/junit.xml", "reports/report.html", "reports/assets/", ".cache/"
    )
    change = targets.change_set(feature, "auto", "main", outside=outside)
    assert change is not None
    assert (change.description, change.files) == ("branch changes vs main", ("app.py",))
    # Without the list the same tree is "uncommitted" (the defect this guards against).
    before = targets.change_set(feature, "auto", "main")
    assert before is not None and before.description == "untracked files"


def test_an_edit_of_code_still_is_the_change_and_artefacts_stay_out_of_it(feature: Path) -> None:
    write(feature, "app.py", "x = 2\n")
    write(feature, ".coverage", "data")
    write(feature, ".advreview/decisions.toml", "")
    change = targets.change_set(feature, "auto", "main", outside=_outside(feature))
    assert change is not None
    assert (change.description, change.files) == ("unstaged changes", ("app.py",))
    # A command the reviewer runs shows what the change set holds, no more.
    (command,) = change.diff_commands
    assert "decisions.toml" not in command  # an unstaged diff never showed it


def test_committed_or_staged_artefacts_are_the_authors_but_the_decisions_file_never_is(
    feature: Path,
) -> None:
    # A branch that commits a file named like coverage data, and the decisions file.
    write(feature, ".coverage.py", "import os\n")
    write(feature, ".advreview/decisions.toml", "")
    commit(feature, "commit both")
    change = targets.change_set(feature, "branch", "main", outside=_outside(feature))
    assert change is not None
    assert change.files == (".coverage.py", "app.py")
    assert ":(exclude,literal,top).advreview/decisions.toml" in change.diff_commands[0]
    # Staged: the same.
    write(feature, ".coverage", "data")
    write(feature, ".advreview/decisions.toml", "# edited\n")
    git(feature, "add", ".coverage", ".advreview/decisions.toml")
    staged = targets.change_set(feature, "uncommitted", "main", outside=_outside(feature))
    assert staged is not None and staged.files == (".coverage",)


def test_a_decisions_file_that_is_a_link_is_left_out_itself_not_what_it_points_at(
    feature: Path,
) -> None:
    os.makedirs(feature / ".advreview")
    os.symlink("../app.py", feature / ".advreview/decisions.toml")
    write(feature, "app.py", "x = 3\n")
    change = targets.change_set(feature, "uncommitted", "main", outside=_outside(feature))
    assert change is not None and change.files == ("app.py",)


# -- the header and the prompt name a change set other than the stored rounds' ---------


def test_a_change_set_other_than_the_stored_rounds_is_named_in_header_and_prompt(
    scripted_repo: ReviewRepo,
) -> None:
    _branch_with_two_files(scripted_repo)
    _first_round_fails(scripted_repo)
    # The author edits one file and runs again: auto now means the uncommitted edit.
    scripted_repo.write("lib.py", "def helper():\n    return 2\n")
    second = scripted_repo.run()
    note = (
        "the change set is not the one its stored rounds reviewed: they reviewed branch "
        "changes vs main (2 files), this run reviews unstaged changes (1 file); no longer "
        "in it: app.py"
    )
    second.stdout.fnmatch_lines([f"advreview: code-review: {note}"])
    rereview = ran_prompts(scripted_repo.server, REREVIEW)[-1]
    assert f"Note: {note}." in rereview
    # Committed, the branch is the change set again; the last stored round reviewed the
    # unstaged edit, and the header says so.
    scripted_repo.commit("the edit")
    scripted_repo.run().stdout.fnmatch_lines(
        [
            "advreview: code-review: the change set is not the one its stored rounds "
            "reviewed: they reviewed unstaged changes (1 file), this run reviews branch "
            "changes vs main (2 files); new in it: app.py"
        ]
    )
