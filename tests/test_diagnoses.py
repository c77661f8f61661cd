"""Messages that name the cause and the fix, not a neighbouring one.

Each test is one message that named a neighbouring cause before: a broken
``CODEX_HOME`` was reported as a broken sandbox (and the advice weakened the sandbox), a
signal as ``codex exited -25``, a file in the state folder's place as "make the
cache_dir writable", an item that ran no round as "round 0", and a warning other than
``ReviewWarning`` under ``filterwarnings = error`` as a pytest source dump.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conftest import ReviewRepo
from pytest_advreview.models import Operation, RunnerStatus
from pytest_advreview.runner import DispatchRequest
from pytest_advreview.runner.codex import CodexOptions, CodexReviewer
from pytest_advreview.state import StateWarning
from pytest_advreview.testing import FindingSpec, approved_review, revise_review

PLAN = "# Plan\n\n1. Migrate.\n\n## Rollback\nRestore the backup.\n"
NO_CODE = "--advreview-diff=none"


# -- CODEX_HOME, checked before any launch ---------------------------------------------


@pytest.mark.real_codex
@pytest.mark.parametrize("make", ["missing", "file"])
def test_a_broken_codex_home_is_named_before_launch_not_blamed_on_the_sandbox(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, make: str
) -> None:
    review_repo.plan("x.md", PLAN)
    home = tmp_path / "no-such-codex-home"
    if make == "file":
        home.write_text("not a folder\n")
    monkeypatch.setenv("CODEX_HOME", str(home))
    result = review_repo.run(NO_CODE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    said = {"missing": "does not exist", "file": "is not a folder"}[make]
    result.stderr.fnmatch_lines([f"*CODEX_HOME={home} {said}*writable folder*"])
    text = result.stdout.str() + result.stderr.str()
    # The run's settings header (``advreview: ... sandbox=workspace-write ...``) is printed
    # before the check now: Codex is checked only once a target needs a reviewer, which is
    # known after the session starts. What the run says about the failure must not blame
    # the sandbox, and nothing may have run.
    # (This test's own folder is named after it, "sandbox" included.)
    for folder in (tmp_path, review_repo.path):
        text = text.replace(str(folder), "<tmp>")
    lines = text.splitlines()
    said = [line for line in lines if not line.startswith("advreview: ")]
    assert [line for line in said if "sandbox" in line] == []
    assert "backtrace" not in text.lower()
    assert "::adversarial-review" not in text, "no item may run"
    assert review_repo.server.response_requests == []


def test_an_unwritable_codex_home_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "codex-home"
    home.mkdir()
    monkeypatch.setattr("os.access", lambda path, mode: False)
    reviewer = CodexReviewer(CodexOptions(env={"CODEX_HOME": str(home)}))
    assert reviewer.home_problem() == (
        f"CODEX_HOME={home} is not writable by this user; point CODEX_HOME at a writable "
        "folder (or unset it to use ~/.codex)"
    )


# -- a signal is named for what it is ----------------------------------------------------


def test_a_signal_is_named_with_its_cause(tmp_path: Path, git_repo: Path) -> None:
    codex = tmp_path / "codex"
    # What `ulimit -f` does to a process that writes past the limit.
    codex.write_text(
        textwrap.dedent(
            """\
            #!/bin/sh
            cat > /dev/null
            kill -s XFSZ $$
            """
        )
    )
    codex.chmod(0o755)
    home = tmp_path / "codex-home"
    home.mkdir()
    options = CodexOptions(
        executable=str(codex), sandbox="read-only", timeout=30, env={"CODEX_HOME": str(home)}
    )
    result = CodexReviewer(options).dispatch(
        DispatchRequest(
            review_id="1700000000-00000001",
            repo_root=git_repo,
            operation=Operation.INITIAL,
            prompt_body="review docs/plans/x.md",
            work_dir=tmp_path / "work",
        )
    )
    assert result.runner.result is RunnerStatus.LAUNCH_FAILURE
    assert result.runner.errors is not None
    assert result.runner.errors.startswith(
        "codex was killed by SIGXFSZ: the file-size limit (`ulimit -f`)"
    ), result.runner.errors
    assert "exited -25" not in result.runner.errors


# -- a file where the state folder should be ---------------------------------------------


def test_a_file_in_the_state_folders_place_is_named(scripted_repo: ReviewRepo) -> None:
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer("x.md", {"message": approved_review()})
    in_the_way = scripted_repo.path / ".pytest_cache" / "d" / "advreview"
    in_the_way.parent.mkdir(parents=True)
    in_the_way.write_text("a file\n")
    expected = f"a file stands where a folder should be ({in_the_way}); remove or rename it"
    # In-process, the run's StateWarning reaches this test too.
    with pytest.warns(StateWarning) as caught:
        result = scripted_repo.run(NO_CODE, "-W", "always::pytest.PytestWarning")
    result.stdout.fnmatch_lines([f"*{expected}*"])
    assert any(expected in str(w.message) for w in caught)
    assert "make the cache_dir writable" not in result.stdout.str()


# -- the summary names the round that ran -------------------------------------------------


@pytest.mark.real_codex
def test_an_item_that_ran_no_round_says_so(review_repo: ReviewRepo) -> None:
    review_repo.plan("x.md", PLAN)
    review_repo.answer("x.md", {"http_status": 400, "body": {"error": {"message": "bad"}}})
    result = review_repo.run(NO_CODE)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*x.md::adversarial-review: aborted (error) — round 1 did not finish, 0 tokens*"]
    )
    assert "round 0" not in result.stdout.str()


# -- every warning class under filterwarnings = error --------------------------------------


MEDIUM = FindingSpec("medium", "A log line could be clearer", section="Rollback")


def _state_entries(repo: ReviewRepo) -> list[Path]:
    return sorted((repo.path / ".pytest_cache" / "d" / "advreview" / "state").glob("*.json"))


def test_each_warning_class_under_filterwarnings_error_names_its_filter(
    scripted_repo: ReviewRepo,
) -> None:
    scripted_repo.write("pytest.ini", "[pytest]\nfilterwarnings =\n    error\n")
    scripted_repo.plan("state.md", PLAN)
    scripted_repo.plan("review.md", PLAN.replace("Migrate", "Rename"))
    scripted_repo.answer("state.md", {"message": approved_review()})
    scripted_repo.answer("review.md", {"message": revise_review(MEDIUM)})
    # Below fail-on: the review passes with a ReviewWarning.
    below = ("--advreview-fail-on=high", "-p", "no:randomly")
    scripted_repo.run(NO_CODE, *below, "-W", "default")
    # A stored verdict that cannot be read: a StateWarning in the next run.
    for entry in _state_entries(scripted_repo):
        if "state.md" in entry.read_text():
            entry.write_text("{ not json")
    result = scripted_repo.run(NO_CODE, *below)
    out = result.stdout.str()
    for kind, module in (("StateWarning", "state"), ("ReviewWarning", "outcome")):
        assert f"made this {kind} an error" in out, out
        assert f"add default::pytest_advreview.{module}.{kind} to filterwarnings" in out, out
    # The text of the warning, not pytest's dump of the plugin's source around it.
    assert "warnings.warn(" not in out
    assert "    def " not in out


def test_a_cached_approval_is_shown_as_passed_without_a_warning(
    scripted_repo: ReviewRepo,
) -> None:
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer("x.md", {"message": approved_review()})
    scripted_repo.run(NO_CODE).assert_outcomes(passed=1)
    second = scripted_repo.run(NO_CODE)
    second.assert_outcomes(passed=1, warnings=0)
    second.stdout.fnmatch_lines(["*x.md::adversarial-review: cached (passed) — round 1*"])
    assert "warning:" not in second.stdout.str()
