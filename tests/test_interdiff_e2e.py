"""Later rounds of the code change see what changed since the last round (real Codex).

Before (main b1b99cb): a push after round 1 that kept the change's list of files resumed
the thread with an empty *Applied* (the list is all a code round's content held, so
"what changed" was nothing), and one that changed the list sent the list again: the
reviewer had to run the whole branch diff to learn what moved.
Now round 2 carries the interdiff (the diff from the commit round 1 reviewed to the new
head) and the changed files; the whole change stays one read-only command away.  A
rebase is compared with ``git range-diff``; findings answered in earlier rounds are
listed with their answers; a finding raised late on code unchanged since round 1 is
marked late in the reports.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import ReviewRepo, git
from pytest_advreview.testing import FindingSpec, approved_review, revise_review

pytestmark = pytest.mark.real_codex

PROMPT = "Review the code changes"
REREVIEW = "I've evaluated the findings."
APP = "".join(f"step_{n} = {n}\n" for n in range(1, 21))
LIB = "def helper():\n    return 1\n"
RACE = FindingSpec("high", "Steps race with the writer", file="app.py", lines=(10, 11))
LATE = FindingSpec("medium", "Helper ignores its input", file="lib.py", lines=(1, 2))
FRESH = FindingSpec("medium", "Step ten is off by one", file="app.py", lines=(10, 10))
REASON = "Every step runs under the table lock."


def _feature(repo: ReviewRepo) -> None:
    git(repo.path, "checkout", "-q", "-b", "feature")
    repo.write("app.py", APP)
    repo.write("lib.py", LIB)
    repo.commit("the feature")


def _ids(text: str) -> list[str]:
    return re.findall(r"\] (AR-[0-9a-f]{6}) ", text)


def test_a_push_after_round_one_is_reviewed_by_its_interdiff(
    review_repo: ReviewRepo, tmp_path: Path
) -> None:
    _feature(review_repo)
    review_repo.answer(
        REREVIEW, {"message": revise_review(LATE, FRESH)}, {"message": approved_review()}
    )
    review_repo.answer(PROMPT, {"message": revise_review(RACE)})
    first = review_repo.run()
    first.assert_outcomes(failed=1)
    (race,) = _ids(first.stdout.str())

    # The author answers the finding and pushes a one-line fix.
    review_repo.write(
        ".advreview/decisions.toml",
        f'[[decision]]\ntarget = "code-review"\nfinding = "{race}"\n'
        f'action = "reject"\nreason = "{REASON}"\n',
    )
    review_repo.write("app.py", APP.replace("step_10 = 10\n", "step_10 = 10  # locked\n"))
    review_repo.commit("lock step 10")
    out = tmp_path / "out"
    second = review_repo.run(
        f"--advreview-json={out}/results.json",
        f"--advreview-report={out}/report.md",
        f"--advreview-sarif={out}/advreview.sarif",
    )
    second.assert_outcomes(failed=1)

    requests = review_repo.server.response_requests
    assert requests[-1].thread_id == requests[0].thread_id  # the same thread, resumed
    prompt = requests[-1].last_user_text
    assert "<interdiff>" in prompt
    assert "+step_10 = 10  # locked" in prompt and "-step_10 = 10" in prompt
    assert "<changed_files>\n" in prompt and "app.py\n" in prompt
    interdiff = prompt.split("<interdiff>", 1)[1].split("</interdiff>", 1)[0]
    assert "lib.py" not in interdiff and "step_3 = 3" not in interdiff  # not the whole change
    assert "git --no-pager" in prompt and "main...HEAD" in prompt  # the whole, by command
    rejected = prompt.split("## Rejected with reasoning", 1)[1].split("##", 1)[0]
    assert race in rejected and REASON in rejected

    # lib.py did not change since round 1, yet its finding is new in round 2: late.
    late, fresh = (f for f in _ids(second.stdout.str()) if f != race)
    second.stdout.fnmatch_lines([f"*late: {late} (first raised in a later round*"])
    record = json.loads((out / "results.json").read_text())["items"][0]["record"]
    assert record["late"] == [late]
    assert fresh not in record["late"]  # it cites the lines that changed
    assert record["rounds"][1]["changed"]["how"] == "interdiff"
    assert record["rounds"][1]["changed"]["files"] == [{"path": "app.py", "lines": [[10, 10]]}]
    report = (out / "report.md").read_text()
    assert f"| medium (fails) (late) | `{late}` |" in report
    assert f"| medium (fails) | `{fresh}` |" in report
    assert "shown the interdiff since round 1 (1 file)" in report
    sarif = json.loads((out / "advreview.sarif").read_text())["runs"][0]["results"]
    assert {r["ruleId"]: r["properties"]["late"] for r in sarif} == {late: True, fresh: False}

    # Round 3, after another push: the answer of round 2 is listed, not asked again.
    app = (review_repo.path / "app.py").read_text()
    review_repo.write("app.py", app.replace("step_11 = 11\n", "step_11 = 11  # locked\n"))
    review_repo.commit("lock step 11")
    last = review_repo.run()
    last.assert_outcomes(passed=1)
    assert "late:" not in last.stdout.str()  # approved: no open finding is late
    third = review_repo.server.response_requests[-1].last_user_text
    answered = third.split("<answered>", 1)[1].split("</answered>", 1)[0]
    assert race in answered and REASON in answered and "raised in round 1" in answered
    assert "Do not raise them again unless you have new evidence" in third
    assert "+step_11 = 11  # locked" in third
    assert "+step_10" not in third.split("<interdiff>", 1)[1]  # round 2's push: not again


def test_a_force_push_is_compared_with_range_diff(review_repo: ReviewRepo) -> None:
    _feature(review_repo)
    review_repo.answer(REREVIEW, {"message": approved_review()})
    review_repo.answer(PROMPT, {"message": revise_review(RACE)})
    review_repo.run().assert_outcomes(failed=1)
    old = git(review_repo.path, "rev-parse", "HEAD").strip()

    review_repo.write("app.py", APP + "step_21 = 21\n")
    git(review_repo.path, "add", "-A")
    git(review_repo.path, "commit", "-q", "--amend", "-m", "the feature, reworked")
    second = review_repo.run()
    second.assert_outcomes(passed=1)
    prompt = review_repo.server.response_requests[-1].last_user_text
    assert f"the commit it reviewed ({old[:12]}) is not an ancestor" in prompt
    assert "<range_diff>" in prompt and "git range-diff" in prompt
    assert "+step_21 = 21" in prompt.split("<range_diff>", 1)[1]
    assert "<interdiff>" not in prompt


def test_a_fresh_runner_without_the_thread_still_gets_the_interdiff(
    review_repo: ReviewRepo, codex_home: Path
) -> None:
    _feature(review_repo)
    review_repo.answer("## Previous review rounds", {"message": approved_review()})
    review_repo.answer(PROMPT, {"message": revise_review(RACE)})
    review_repo.run().assert_outcomes(failed=1)
    for rollout in (codex_home / "sessions").rglob("rollout-*.jsonl"):
        rollout.unlink()  # a fresh CI runner: the thread cannot be resumed
    review_repo.write("app.py", APP.replace("step_10 = 10\n", "step_10 = 10  # locked\n"))
    review_repo.commit("lock step 10")
    review_repo.run().assert_outcomes(passed=1)
    requests = review_repo.server.response_requests
    assert requests[-1].thread_id != requests[0].thread_id  # a new thread
    prompt = requests[-1].last_user_text
    state = prompt.split("## Current state of the artifact", 1)[1]
    assert "<interdiff>" in state and "+step_10 = 10  # locked" in state


def test_a_working_tree_change_names_the_files_that_changed(review_repo: ReviewRepo) -> None:
    review_repo.write("app.py", APP)
    review_repo.write("lib.py", LIB)
    review_repo.answer(REREVIEW, {"message": approved_review()})
    review_repo.answer(PROMPT, {"message": revise_review(RACE)})
    review_repo.run("--advreview-diff=uncommitted").assert_outcomes(failed=1)
    review_repo.write("app.py", APP.replace("step_10 = 10\n", "step_10 = 10  # locked\n"))
    review_repo.run("--advreview-diff=uncommitted").assert_outcomes(passed=1)
    prompt = review_repo.server.response_requests[-1].last_user_text
    # The Applied section indents its items' lines.
    assert "<changed_files>\n  app.py\n  </changed_files>" in prompt
    assert "the working tree keeps no earlier version to diff against" in prompt
    assert "git ls-files --others --exclude-standard" in prompt  # the whole, by command


def _pull_request_checkout(repo: ReviewRepo) -> None:
    """HEAD as actions/checkout leaves it for a pull_request event: a test merge."""
    git(repo.path, "checkout", "-q", "--detach", "main")
    git(repo.path, "merge", "-q", "--no-ff", "--no-edit", "feature")


def test_pull_request_test_merges_are_compared_by_the_pull_requests_branch(
    review_repo: ReviewRepo,
) -> None:
    _feature(review_repo)
    _pull_request_checkout(review_repo)
    review_repo.answer(REREVIEW, {"message": approved_review()})
    review_repo.answer(PROMPT, {"message": revise_review(RACE)})
    branch = ("--advreview-diff=branch", "--advreview-base=main")
    review_repo.run(*branch).assert_outcomes(failed=1)
    # The base moves on and the author pushes: a new test merge of both.
    git(review_repo.path, "checkout", "-q", "main")
    review_repo.write("README.md", "# project\n\nmore\n")
    review_repo.commit("work on main")
    git(review_repo.path, "checkout", "-q", "feature")
    review_repo.write("app.py", APP.replace("step_10 = 10\n", "step_10 = 10  # locked\n"))
    review_repo.commit("lock step 10")
    _pull_request_checkout(review_repo)
    review_repo.run(*branch).assert_outcomes(passed=1)
    prompt = review_repo.server.response_requests[-1].last_user_text
    interdiff = prompt.split("<interdiff>", 1)[1].split("</interdiff>", 1)[0]
    assert "+step_10 = 10  # locked" in interdiff
    assert "README" not in interdiff and "not an ancestor" not in prompt
