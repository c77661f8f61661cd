"""A waiver binds to what was decided: the finding's code, and the pull request.

Before: a finding's id is a hash of its title and place, and a waiver named only the id.
A maintainer's ``/advreview waive`` from round 1 still passed round 2 after the author
pushed different, worse code on the cited lines; a base-branch ``waive`` written for one
pull request passed a later pull request's different problem reported with the same title
at the same line; ``more-rounds`` raised the limit of every later pull request.  Now a
waiver names the content id of the code it was decided on (printed with each failing
finding) and holds only while the cited lines still have it; a base-file waiver or grant
names its pull request (``--advreview-pull-request``, which the Action passes) or says
``scope = "repository"``.  Through the real Codex CLI.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import ReviewRepo, git
from pytest_advreview.models import CommandsFile, Location, PullRequestCommand, finding_id
from pytest_advreview.testing import FindingSpec, revise_review
from test_authority_e2e import on_main

PROMPT = "Review the code changes"
HIGH = FindingSpec(
    "high",
    "The handler evaluates its input",
    file="src/app.py",
    lines=(1, 2),
    what="Any caller runs code in the service.",
)
FID = finding_id(HIGH.title, Location(file=HIGH.file, line_start=1, line_end=2))
REASON = "Only the admin console calls it, behind SSO."
FIRST = "def handle(data):\n    return eval(data, {})\n"
WORSE = "def handle(data):\n    return eval(data)\n"


@pytest.fixture
def pull_request(review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch) -> ReviewRepo:
    """A pull request under CI: ``feature`` adds code the reviewer finds a high problem in,
    every round, at the same lines with the same title."""
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    git(review_repo.path, "checkout", "-q", "-b", "feature")
    review_repo.write("src/app.py", FIRST)
    review_repo.commit("the feature")
    review_repo.answer(PROMPT, {"message": revise_review(HIGH)})
    review_repo.answer("Previous review rounds", {"message": revise_review(HIGH)})
    review_repo.answer("re-review", {"message": revise_review(HIGH)}, where="body")
    return review_repo


def content_id(result: pytest.RunResult) -> str:
    """The content id the failure prints for the finding (what a waiver must name)."""
    found = re.findall(rf"`/advreview waive {FID}@([0-9a-f]{{16}}): reason`", result.stdout.str())
    assert found, result.stdout.str()
    return str(found[0])


def commands(tmp_path: Path, text: str, content: str | None) -> str:
    """The Action's file of vetted commands: one waiver by a maintainer."""
    path = tmp_path / "commands.json"
    waiver = PullRequestCommand(
        verb="waive",
        finding=FID,
        content=content,
        reason=REASON,
        login="maintainer",
        permission="write",
        url="https://github.test/o/r/pull/7#issuecomment-1",
    )
    path.write_text(CommandsFile(commands=(waiver,)).model_dump_json())
    assert text  # the comment as written: the file carries its fields
    return f"--advreview-commands={path}"


def worse_code(repo: ReviewRepo) -> None:
    repo.write("src/app.py", WORSE)
    repo.commit("the author pushes other code on the cited lines")


def test_a_waive_command_holds_only_for_the_code_it_was_decided_on(
    pull_request: ReviewRepo, tmp_path: Path
) -> None:
    first = pull_request.run("--advreview-github=off")
    first.assert_outcomes(failed=1)
    decided = content_id(first)

    # The maintainer waives it for this code: the next run passes.
    given = commands(tmp_path, f"/advreview waive {FID}@{decided}: {REASON}", decided)
    waived = pull_request.run("--advreview-github=off", given)
    waived.assert_outcomes(passed=1)
    assert f"waived {FID} by @maintainer (command), reason: {REASON}" in waived.stdout.str()

    # The author pushes different, worse code on the cited lines; the reviewer reports
    # the same title at the same place, so the same id.  The waiver was for earlier code.
    worse_code(pull_request)
    again = pull_request.run("--advreview-github=off", given, "--advreview-json=out.json")
    again.assert_outcomes(failed=1)
    out = again.stdout.str()
    assert f"waived {FID}" not in out
    assert "the waiver was for earlier code: it was decided on content " + decided in out
    now = content_id(again)
    assert now != decided
    record = json.loads((pull_request.path / "out.json").read_text())["items"][0]["record"]
    assert record["failing_ids"] == [FID]
    assert record["waived"] == []
    (stale,) = record["ignored"]
    assert stale["by"] == "@maintainer" and stale["finding"] == FID


def test_a_waive_command_without_the_content_id_counts_for_nothing(
    pull_request: ReviewRepo, tmp_path: Path
) -> None:
    first = pull_request.run("--advreview-github=off")
    decided = content_id(first)
    given = commands(tmp_path, f"/advreview waive {FID}: {REASON}", None)
    result = pull_request.run("--advreview-github=off", given)
    result.assert_outcomes(failed=1)
    assert "this one names none" in result.stdout.str()
    assert f"/advreview waive {FID}@{decided}: reason" in result.stdout.str()


def base_waiver(content: str, scope: str) -> str:
    return (
        f'[[decision]]\ntarget = "code-review"\nfinding = "{FID}"\naction = "waive"\n'
        f'content = "{content}"\n{scope}\nreason = "{REASON}"\n'
    )


def test_a_base_waiver_holds_for_its_pull_request_and_its_code_only(
    pull_request: ReviewRepo,
) -> None:
    decided = content_id(pull_request.run("--advreview-github=off"))
    on_main(pull_request, ".advreview/decisions.toml", base_waiver(decided, "pull = 7"))

    # Its own pull request: it passes.
    mine = pull_request.run("--advreview-github=off", "--advreview-pull-request=7")
    mine.assert_outcomes(passed=1)
    assert f"waived {FID} by the base branch (main (" in mine.stdout.str()

    # Another pull request, or a plain CI run that names none: it does not hold.
    other = pull_request.run("--advreview-github=off", "--advreview-pull-request=9")
    other.assert_outcomes(failed=1)
    assert "the entry is for pull request #7, and this run is for pull request #9" in (
        other.stdout.str()
    )
    plain = pull_request.run("--advreview-github=off")
    plain.assert_outcomes(failed=1)
    assert "this run names no pull request" in plain.stdout.str()

    # Repository-wide, it holds for every run, but only on the code it was decided on.
    on_main(pull_request, ".advreview/decisions.toml", base_waiver(decided, 'scope = "repository"'))
    pull_request.run("--advreview-github=off").assert_outcomes(passed=1)
    worse_code(pull_request)
    later = pull_request.run("--advreview-github=off")
    later.assert_outcomes(failed=1)
    assert "the waiver was for earlier code" in later.stdout.str()


def test_an_old_format_base_entry_is_a_usage_error_naming_the_fix(
    pull_request: ReviewRepo,
) -> None:
    on_main(
        pull_request,
        ".advreview/decisions.toml",
        f'[[decision]]\ntarget = "code-review"\nfinding = "{FID}"\naction = "waive"\n'
        f'reason = "{REASON}"\n',
    )
    result = pull_request.run("--advreview-github=off")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "decisions file main (" in err and ":.advreview/decisions.toml: decision entry 1:" in err
    assert f"action 'waive' on {FID} must name what it is for: add pull = 123" in err
    assert "an entry of the old format has neither" in err
