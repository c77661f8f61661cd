"""Extension points end to end: hooks and the ``command`` backend (no Codex needed)."""

from __future__ import annotations

import sys
import textwrap

import pytest

from conftest import commit, init_repo, saved_prompts
from pytest_advreview.testing import FindingSpec, approved_review, review_text, revise_review

HIGH = FindingSpec("high", "Rollback restores a stale backup", section="Rollback")
#: A fix hook (a lead) that accepts every finding, as a conftest's text.
ACCEPT_EVERY_FINDING = """
from pytest_advreview.models import Decision, DecisionAction

def pytest_advreview_fix(item, review):
    return [Decision(finding=f.id, action=DecisionAction.ACCEPT, reason="done")
            for f in review.findings]
"""


@pytest.fixture
def repo(pytester: pytest.Pytester) -> pytest.Pytester:
    init_repo(pytester.path)
    (pytester.path / ".gitignore").write_text(
        ".pytest_cache/\n__pycache__/\n/stdout\n/stderr\n/runpytest-*\n/reviewer.py\n"
        "/conftest.py\n/prompts/\n"
    )
    commit(pytester.path, "init")
    (pytester.path / "docs" / "plans").mkdir(parents=True)
    (pytester.path / "docs" / "plans" / "x.md").write_text("# Plan\n\n1. Step.\n")
    return pytester


def _command_reviewer(pytester: pytest.Pytester, *answers: str) -> str:
    """A reviewer CLI: reads the prompt on stdin, saves it, prints the next answer."""
    (pytester.path / "prompts").mkdir(exist_ok=True)
    script = pytester.path / "reviewer.py"
    script.write_text(
        textwrap.dedent(
            f"""\
            import pathlib, sys
            answers = {list(answers)!r}
            folder = pathlib.Path(__file__).parent / "prompts"
            n = len(list(folder.glob("*.txt")))
            (folder / f"{{n}}.txt").write_text(sys.stdin.read())
            sys.stdout.write(answers[min(n, len(answers) - 1)])
            """
        )
    )
    return f"{sys.executable} {script}"


def _run_command_backend(repo: pytest.Pytester, command: str) -> pytest.RunResult:
    return repo.runpytest(
        "--adversarial-review",
        "--advreview-reviewer=command",
        f"--advreview-command={command}",
        "--advreview-diff=none",
    )


def test_command_backend_reviews_through_stdin_and_stdout(repo: pytest.Pytester) -> None:
    command = _command_reviewer(repo, approved_review())
    result = _run_command_backend(repo, command)
    result.assert_outcomes(passed=1)
    (prompt,) = saved_prompts(repo.path)
    assert prompt.startswith("<!-- ADVERSARIAL-REVIEW-SESSION: ")
    assert "docs/plans/x.md" in prompt


def test_command_backend_later_rounds_are_fresh_runs_with_history(repo: pytest.Pytester) -> None:
    repo.makeconftest(ACCEPT_EVERY_FINDING)
    command = _command_reviewer(repo, revise_review(HIGH), approved_review())
    result = _run_command_backend(repo, command)
    result.assert_outcomes(passed=1)
    _, second = saved_prompts(repo.path)
    assert "## Previous review rounds" in second
    assert "Rollback restores a stale backup" in second


def test_command_backend_failure_is_an_error(repo: pytest.Pytester) -> None:
    result = repo.runpytest(
        "--adversarial-review",
        "--advreview-reviewer=command",
        f"--advreview-command={sys.executable} -c 'import sys; sys.exit(3)'",
        "--advreview-diff=none",
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*review command exited 3*"])


def test_make_reviewer_hook_provides_a_backend_and_observers_see_rounds(
    repo: pytest.Pytester,
) -> None:
    repo.makeconftest(
        f"""
        from pytest_advreview.models import (
            Operation, RunnerResult, RunnerStatus, ReviewQuality, Verdict)
        from pytest_advreview.parse import analyse
        from pytest_advreview.runner import DispatchResult

        SEEN = []

        class Stub:
            name = "stub"
            supports_resume = False
            def can_resume(self, session_id):
                return False
            def dispatch(self, request):
                SEEN.append(request.prompt_body)
                review = analyse({approved_review()!r}).review
                runner = RunnerResult(result=RunnerStatus.SUCCESS, verdict=Verdict.APPROVED,
                                      attempt_id="000001", review_quality=ReviewQuality.VALID)
                return DispatchResult(runner=runner, operation=request.operation, review=review)

        def pytest_advreview_make_reviewer(config, name):
            return Stub() if name == "stub" else None

        def pytest_advreview_modify_prompt(target, operation, prompt):
            return prompt + "\\nEXTRA-HOUSE-RULES"

        def pytest_advreview_round_done(item, record):
            print(f"ROUND-DONE {{item.nodeid}} {{record.number}} {{record.operation.value}}")

        def pytest_sessionfinish(session):
            assert SEEN and SEEN[0].endswith("EXTRA-HOUSE-RULES")
            print("PROMPT-MODIFIED")
        """
    )
    result = repo.runpytest(
        "--adversarial-review", "--advreview-reviewer=stub", "--advreview-diff=none", "-s"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*ROUND-DONE docs/plans/x.md::adversarial-review 1 initial*", "*PROMPT-MODIFIED*"]
    )


def test_unknown_backend_name_is_a_clear_error(repo: pytest.Pytester) -> None:
    result = repo.runpytest(
        "--adversarial-review", "--advreview-reviewer=nosuch", "--advreview-diff=none"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no reviewer backend is called 'nosuch'*"])
    assert "session.py" not in result.stderr.str() + result.stdout.str()


MEDIUM = FindingSpec("medium", "Backups are never tested", section="Rollback")


def test_command_backend_retries_a_contradictory_review_then_errors(
    repo: pytest.Pytester,
) -> None:
    # APPROVED next to a finding at fail-on says pass and fail at once: format drift.
    command = _command_reviewer(repo, review_text("APPROVED", [MEDIUM]))
    result = repo.runpytest(
        "--adversarial-review",
        "--advreview-reviewer=command",
        f"--advreview-command={command}",
        "--advreview-diff=none",
        "--advreview-fail-on=medium",
    )
    result.assert_outcomes(errors=1)
    assert len(saved_prompts(repo.path)) == 2  # one retry
    result.stdout.fnmatch_lines(
        ["*reviewer format drift: contradictory: VERDICT: APPROVED with 1 finding at or above*"]
    )


def test_a_plugin_backend_that_approves_next_to_a_failing_finding_never_passes(
    repo: pytest.Pytester,
) -> None:
    # A backend that does not check the verdict against fail-on: the outcome still does,
    # for this run and for the stored verdict the next run reads from the cache.
    repo.makeconftest(
        f"""
        from pytest_advreview.models import RunnerResult, RunnerStatus, ReviewQuality, Verdict
        from pytest_advreview.parse import analyse
        from pytest_advreview.runner import DispatchResult

        class Lenient:
            name = "lenient"
            supports_resume = False
            def can_resume(self, session_id):
                return False
            def dispatch(self, request):
                review = analyse({review_text("APPROVED", [MEDIUM])!r}).review
                runner = RunnerResult(result=RunnerStatus.SUCCESS, verdict=Verdict.APPROVED,
                                      attempt_id="000001", review_quality=ReviewQuality.VALID)
                return DispatchResult(runner=runner, operation=request.operation, review=review)

        def pytest_advreview_make_reviewer(config, name):
            return Lenient() if name == "lenient" else None
        """
    )
    args = ("--adversarial-review", "--advreview-reviewer=lenient", "--advreview-diff=none")
    for run in ("fresh", "cached"):
        result = repo.runpytest(*args, "--advreview-fail-on=medium")
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(
            [
                "*is contradictory: VERDICT: APPROVED with 1 finding at or above fail-on medium "
                "(*Backups are never tested*); it is neither passed nor failed - review it again "
                "with --advreview-fresh*"
            ]
        )
        assert "PASSED" not in result.stdout.str(), run
    # At a fail-on the finding is below, the same stored verdict passes with the warning.
    result = repo.runpytest(*args, "--advreview-fail-on=high", "-W", "default::Warning")
    result.assert_outcomes(passed=1, warnings=1)


def test_command_backend_never_sees_the_state_key(
    repo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADVREVIEW_STATE_KEY", "planted-state-key-" + "0123456789abcdef" * 2)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "the-command-needs-this")
    script = repo.path / "reviewer.py"
    script.write_text(
        textwrap.dedent(
            f"""\
            import os, pathlib, sys
            sys.stdin.read()
            folder = pathlib.Path(__file__).parent / "prompts"
            folder.mkdir(exist_ok=True)
            (folder / "env.txt").write_text("\\n".join(sorted(os.environ)))
            sys.stdout.write({approved_review()!r})
            """
        )
    )
    result = repo.runpytest(
        "--adversarial-review",
        "--advreview-reviewer=command",
        f"--advreview-command={sys.executable} {script}",
        "--advreview-diff=none",
    )
    result.assert_outcomes(passed=1)
    seen = (repo.path / "prompts" / "env.txt").read_text().splitlines()
    assert "ADVREVIEW_STATE_KEY" not in seen
    assert "ANTHROPIC_API_KEY" in seen  # the command authenticates itself


def test_a_fix_hook_in_a_conftest_found_during_collection_takes_up_the_review(
    repo: pytest.Pytester,
) -> None:
    # docs/conftest.py is loaded while pytest collects docs/plans/x.md, after the session
    # started: its fix hook counts as much as one in the root conftest.
    (repo.path / "docs" / "conftest.py").write_text(ACCEPT_EVERY_FINDING)
    command = _command_reviewer(repo, revise_review(HIGH), approved_review())
    result = _run_command_backend(repo, command)
    result.assert_outcomes(passed=1)
    assert len(saved_prompts(repo.path)) == 2
