"""The rough edges users met, end to end.

Each test names the edge it closes: symlinked plans, a run from a subdirectory, an
unusable base, a verdict refused for a reason, a review in another language, decisions
on things that do not exist, temporary folders left behind, and the mutation report.
The plugin's own logic runs on the in-process scripted reviewer; a run from a
subdirectory (where pytest finds no conftest of the repository), Ctrl-C during a review
(the reviewer's process is killed) and the mutation report (a real tool call under
Codex's sandbox) run the real Codex CLI.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import (
    INTERRUPTED_HANG_S,
    ReviewRepo,
    git,
    interrupt_when,
    ran_prompts,
    start_interruptible,
)
from pytest_advreview.testing import FindingSpec, approved_review, revise_review, shell_step
from pytest_advreview.workspace.guard import KEPT_FOLDER

NO_CODE = "--advreview-diff=none"
PLAN = "# Plan\n\n1. Migrate.\n\n## Rollback\nRestore the backup.\n"
HIGH = FindingSpec("high", "Rollback restores a stale backup", section="Rollback")


@pytest.fixture
def temp_root(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    """A private temp root for the runs of one test, in process and in subprocesses.

    Set after the test's repository fixture, which may point ``TMPDIR`` elsewhere.
    """
    for name in ("review_repo", "scripted_repo"):
        if name in request.fixturenames:
            request.getfixturevalue(name)
    root = tmp_path_factory.mktemp("temp-root")
    monkeypatch.setenv("TMPDIR", str(root))
    monkeypatch.setattr(tempfile, "tempdir", str(root))  # in-process runs cache it
    return root


def _plugin_temp_dirs(root: Path) -> list[str]:
    """The plugin's folders under ``root``."""
    return sorted(p.name for p in root.iterdir() if p.name.startswith("advreview-"))


# -- symlinked plans -----------------------------------------------------------------------


def test_a_symlinked_folder_loop_reviews_each_real_file_once(
    scripted_repo: ReviewRepo, tmp_path_factory: pytest.TempPathFactory
) -> None:
    scripted_repo.pytester.makeini("[pytest]\nadvreview_plan_scope = all\n")
    scripted_repo.plan("x.md", PLAN)
    plans = scripted_repo.path / "docs" / "plans"
    (plans / "loop").symlink_to("..")  # docs/plans/loop/plans/loop/... for 40 levels
    (plans / "alias.md").symlink_to("x.md")
    outside = tmp_path_factory.mktemp("outside") / "secret.md"
    outside.write_text("# Not this project's plan\n")
    (plans / "stolen.md").symlink_to(outside)
    scripted_repo.commit("plans and links")
    scripted_repo.answer("Review the implementation plan", {"message": approved_review()})
    result = scripted_repo.run(NO_CODE)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "advreview: 1 plan (advreview_plan_scope = all); not reviewed: 1 plan symlink(s) "
            "pointing outside the repository's files (docs/plans/stolen.md)*",
            "*docs/plans/x.md::adversarial-review*: approved*",
        ]
    )
    assert len(scripted_repo.server.response_requests) == 1

    # Named on the command line, the link is refused, not reviewed as the project's plan.
    named = scripted_repo.run(NO_CODE, "docs/plans/stolen.md")
    assert named.ret == pytest.ExitCode.USAGE_ERROR
    named.stderr.fnmatch_lines(
        ["*docs/plans/stolen.md is a symlink to *secret.md, outside the repository*"]
    )
    # The fix the messages name: commit the plan itself in place of the link.
    (plans / "stolen.md").unlink()
    (plans / "stolen.md").write_text(outside.read_text())
    scripted_repo.commit("the plan itself")
    scripted_repo.run(NO_CODE, "docs/plans/stolen.md").assert_outcomes(passed=1)
    assert len(scripted_repo.server.response_requests) == 2


# -- a run from a subdirectory ---------------------------------------------------------------


def _plan_ids(result: pytest.RunResult) -> list[str]:
    ids = [line for line in result.outlines if line.endswith("::adversarial-review")]
    return sorted(line.removesuffix("::adversarial-review").split("docs/", 1)[1] for line in ids)


def test_a_run_from_a_subdirectory_finds_the_same_plans_and_decisions(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    review_repo.plan("x.md", PLAN)
    review_repo.write("docs/specs/y.md", PLAN)
    review_repo.write("src/pkg/mod.py", "x = 1\n")
    # No ini file: pytest's rootdir is wherever it is started.  Subprocesses, because
    # the working directory is what differs.
    top = review_repo.run_subprocess("--collect-only", "-q", NO_CODE)
    monkeypatch.chdir(review_repo.path / "src" / "pkg")
    below = review_repo.run_subprocess("--collect-only", "-q", NO_CODE)
    assert _plan_ids(top) == _plan_ids(below) == ["plans/x.md", "specs/y.md"]

    # The ids from below are paths from where pytest runs: they select the plan.
    below.stdout.fnmatch_lines(["../../docs/plans/x.md::adversarial-review"])
    review_repo.answer("docs/plans/x.md", {"message": approved_review()})
    picked = review_repo.run_subprocess(NO_CODE, "../../docs/plans/x.md::adversarial-review")
    picked.assert_outcomes(passed=1)

    # The repository's decisions file is read from below as well.
    review_repo.write(
        ".advreview/decisions.toml",
        '[[decision]]\ntarget = "docs/plans/gone.md"\nfinding = "AR-123456"\naction = "accept"\n',
    )
    refused = review_repo.run_subprocess(NO_CODE)
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(
        ["*decisions.toml: decision entry 1: target 'docs/plans/gone.md'*"]
    )


# -- an unusable base ------------------------------------------------------------------------


def test_a_plan_named_on_the_command_line_is_reviewed_without_a_usable_base(
    scripted_repo: ReviewRepo,
) -> None:
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.write("src/app.py", "print(1)\n")
    scripted_repo.answer("x.md", {"message": approved_review()})
    named = scripted_repo.run("--advreview-base=origin/gone", "docs/plans/x.md")
    named.assert_outcomes(passed=1)
    assert named.ret == pytest.ExitCode.OK
    named.stdout.fnmatch_lines(["advreview: the base cannot be used: *'origin/gone'*"])

    # The whole gate: the plan is still reviewed, the code item alone errors, with the
    # reason, and the run does not pass.
    whole = scripted_repo.run("--advreview-base=origin/gone")
    whole.assert_outcomes(passed=1, errors=1)
    whole.stdout.fnmatch_lines(
        ["*code-review*cannot review: pytest-advreview: the base 'origin/gone'*"]
    )
    # The plan's verdict is cached from the first run, and no code review was paid for.
    assert len(scripted_repo.server.response_requests) == 1


def test_unrelated_histories_error_the_code_item_and_the_suggested_fix_works(
    scripted_repo: ReviewRepo,
) -> None:
    git(scripted_repo.path, "checkout", "-q", "--orphan", "imported")
    scripted_repo.write("src/app.py", "print(1)\n")
    scripted_repo.commit("an unrelated history")
    first = scripted_repo.run()
    first.assert_outcomes(errors=1)
    out = first.stdout.str()
    assert "main and HEAD have unrelated histories" in out
    assert "shallow" not in out
    # The suggested --advreview-diff=uncommitted: nothing uncommitted, nothing to review.
    fixed = scripted_repo.run("--advreview-diff=uncommitted")
    assert fixed.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert scripted_repo.server.response_requests == []


# -- a refused verdict, a review in another language ----------------------------------------


def test_an_unclosed_code_fence_error_says_why_the_verdict_did_not_count(
    scripted_repo: ReviewRepo,
) -> None:
    scripted_repo.plan("x.md", PLAN)
    unclosed = "## Summary\n\nThe plan quotes:\n\n```sql\nDROP TABLE users;\n\nVERDICT: REVISE"
    scripted_repo.answer("x.md", {"message": unclosed}, where="body")
    result = scripted_repo.run(NO_CODE)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*no verdict on the last line (got 'VERDICT: REVISE'): it is inside a code block "
            "opened with ``` at line 5 and never closed*"
        ]
    )


def test_a_review_in_the_chosen_language_keeps_its_locations(scripted_repo: ReviewRepo) -> None:
    scripted_repo.plan("x.md", PLAN)
    german = (
        "## Summary\n\nDer Plan migriert die Daten.\n\n## Findings\n\n"
        "### [severity: high] Das Backup ist veraltet\n"
        "- **Section:** Rollback\n"
        "- **What can go wrong:** Die Wiederherstellung verliert eine Stunde Daten.\n"
        "- **Why vulnerable:** Das Backup entsteht vor dem Stopp der Schreibzugriffe.\n"
        "- **Impact:** Datenverlust.\n"
        "- **Recommendation:** Backup nach dem Stopp der Schreibzugriffe.\n\n"
        "## Verdict\n\nVERDICT: REVISE"
    )
    scripted_repo.answer("x.md", {"message": german})
    result = scripted_repo.run(NO_CODE, "--advreview-language=Deutsch")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*[[]severity: high[]] AR-* Das Backup ist veraltet (Rollback)*"])
    assert "degraded content" not in result.stdout.str()
    (prompt,) = ran_prompts(scripted_repo.server, "x.md")
    language = prompt.split("<language>", 1)[1].split("</language>", 1)[0]
    assert "Deutsch" in language
    for label in ("Section", "What can go wrong", "Why vulnerable", "Impact", "Recommendation"):
        assert f"**{label}:**" in language


# -- decisions on things that do not exist ---------------------------------------------------


def test_a_decision_on_a_target_that_does_not_exist_is_a_usage_error(
    scripted_repo: ReviewRepo,
) -> None:
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.write(
        ".advreview/decisions.toml",
        '[[decision]]\ntarget = "docs/plans/x.md"\nfinding = "AR-123456"\naction = "accept"\n\n'
        '[[decision]]\ntarget = "docs/plan/x.md"\nfinding = "AR-123456"\naction = "accept"\n',
    )
    result = scripted_repo.run(NO_CODE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*decisions.toml: decision entry 2: target 'docs/plan/x.md' is not a file of the "
            "repository*delete the entry*"
        ]
    )
    assert scripted_repo.server.response_requests == []
    # The fix the message names: the plan's path relative to the repository top.
    decisions = scripted_repo.path / ".advreview" / "decisions.toml"
    decisions.write_text(decisions.read_text().replace("docs/plan/x.md", "docs/plans/x.md"))
    decisions.write_text(decisions.read_text().replace('"AR-123456"', '"AR-654321"', 1))
    scripted_repo.answer("x.md", {"message": approved_review()})
    scripted_repo.run(NO_CODE).assert_outcomes(passed=1)


def test_a_decision_on_an_unknown_finding_id_is_a_usage_error(scripted_repo: ReviewRepo) -> None:
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer(
        "x.md", {"message": revise_review(HIGH)}, {"message": approved_review()}, where="body"
    )
    scripted_repo.run(NO_CODE).assert_outcomes(failed=1)
    scripted_repo.write(
        ".advreview/decisions.toml",
        '[[decision]]\ntarget = "docs/plans/x.md"\nfinding = "AR-000000"\n'
        'action = "reject"\nreason = "Not an issue."\n',
    )
    result = scripted_repo.run(NO_CODE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*decisions.toml: decision entry 1: unknown finding id AR-000000 for docs/plans/x.md*"]
    )
    assert len(scripted_repo.server.response_requests) == 1
    # The fix the message names: the id from the failure output.
    (known,) = re.findall(r"known: (AR-[0-9a-f]{6})", result.stderr.str())
    decisions = scripted_repo.path / ".advreview" / "decisions.toml"
    decisions.write_text(decisions.read_text().replace("AR-000000", known))
    scripted_repo.run(NO_CODE).assert_outcomes(passed=1)


# -- temporary folders -----------------------------------------------------------------------


@pytest.mark.parametrize("isolation", ["none", "worktree"])
def test_ctrl_c_during_a_review_leaves_no_temporary_folder(
    review_repo: ReviewRepo, temp_root: Path, isolation: str
) -> None:
    review_repo.plan("x.md", PLAN)
    review_repo.answer("x.md", {"hang": INTERRUPTED_HANG_S})
    args = review_repo.args(
        NO_CODE,
        f"--advreview-isolation={isolation}",
        f"--advreview-timeout={INTERRUPTED_HANG_S}",
        "-p",
        "no:xdist",
    )
    proc = start_interruptible(
        [sys.executable, "-m", "pytest", *args],
        cwd=review_repo.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    seen: list[str] = []

    def reviewing() -> bool:
        if not review_repo.server.response_requests:
            return False
        seen.extend(_plugin_temp_dirs(temp_root))  # the review's folder exists now
        return True

    out = interrupt_when(proc, reviewing, "the review's request to the model")
    assert seen
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out.decode()
    assert "KeyboardInterrupt" in out.decode()
    assert _plugin_temp_dirs(temp_root) == []
    assert git(review_repo.path, "worktree", "list", "--porcelain").count("worktree ") == 1


@pytest.mark.parametrize("content", [b"\xff\xfe not UTF-8\n", b"   \n"], ids=["not-utf8", "empty"])
def test_an_unusable_plan_leaves_no_temporary_folder(
    scripted_repo: ReviewRepo, temp_root: Path, content: bytes
) -> None:
    scripted_repo.write("docs/plans/x.md", content)
    result = scripted_repo.run(NO_CODE)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*docs/plans/x.md*cannot review: plan file*"])
    assert "kept in" not in result.stdout.str()
    assert _plugin_temp_dirs(temp_root) == []


def test_a_failed_review_keeps_its_folder_and_prints_where(
    scripted_repo: ReviewRepo, temp_root: Path
) -> None:
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer("x.md", {"http_status": 400})
    result = scripted_repo.run(NO_CODE)
    result.assert_outcomes(errors=1)
    (kept,) = set(re.findall(r"reviewer files kept in (/\S+)", result.stdout.str()))
    _assert_kept_under_basetemp(scripted_repo, Path(kept), temp_root)


def _assert_kept_under_basetemp(repo: ReviewRepo, kept: Path, temp_root: Path) -> None:
    """The kept folder lies under the run's pytest temporary folder (which pytest prunes
    after three runs), with the reviewer's files; nothing is left in ``TMPDIR``."""
    basetemp = repo.pytester.path.parent / "basetemp"  # pytester's --basetemp of the run
    assert kept.parent == basetemp.resolve() / KEPT_FOLDER
    assert (kept / "prompt.md").is_file()
    assert _plugin_temp_dirs(temp_root) == []


# -- the mutation report ---------------------------------------------------------------------


def test_a_mutation_under_worktree_isolation_names_its_round_and_no_isolation_hint(
    review_repo: ReviewRepo,
) -> None:
    plan = review_repo.plan("x.md", PLAN)
    review_repo.answer(
        "x.md",
        {"message": revise_review(HIGH)},
        shell_step("echo 1 > pwned.txt"),
        {"message": approved_review()},
        where="body",
    )
    isolated = "--advreview-isolation=worktree"
    review_repo.run(NO_CODE, isolated).assert_outcomes(failed=1)
    plan.write_text(PLAN + "\nThe backup is taken after writes stop.\n")
    result = review_repo.run(NO_CODE, isolated)
    result.assert_outcomes(passed=1, errors=1)  # nothing judged; the teardown errors
    out = result.stdout.str()
    assert "pwned.txt (untracked, round 2)" in out
    assert "--advreview-sandbox=read-only" in out
    assert "--advreview-isolation=worktree" not in out.split("ERROR at teardown", 1)[1]
    assert not (review_repo.path / "pwned.txt").exists()
    # The fix the message names: the same write is refused under a read-only sandbox (a
    # new sandbox is a new review, round 1).
    review_repo.rules.clear()
    review_repo.answer(
        "x.md", shell_step("echo 1 > pwned.txt"), {"message": approved_review()}, where="body"
    )
    fixed = review_repo.run(NO_CODE, isolated, "--advreview-sandbox=read-only")
    fixed.assert_outcomes(passed=1)


def test_the_fixture_prints_the_folder_it_keeps_after_an_error(
    scripted_repo: ReviewRepo, temp_root: Path
) -> None:
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.write(
        "test_fixture.py",
        'def test_review(adversarial_review):\n    adversarial_review.plan("docs/plans/x.md")\n',
    )
    scripted_repo.answer("x.md", {"http_status": 400})
    result = scripted_repo.pytester.runpytest(
        "test_fixture.py",
        f"--advreview-codex={scripted_repo.codex}",
        "--advreview-model=fake-model",
        *[a for a in scripted_repo.args() if a.startswith("--advreview-codex-config=")],
    )
    result.assert_outcomes(failed=1)
    (kept,) = set(re.findall(r"reviewer files kept in (/\S+)", result.stdout.str()))
    _assert_kept_under_basetemp(scripted_repo, Path(kept), temp_root)
