"""The ``adversarial_review`` fixture takes the items' path: stored state, decisions, budget.

A reviewer plugged in with the project's own ``pytest_advreview_make_reviewer`` hook (no
Codex needed) records every prompt it gets, so each test can count the reviewer's calls
and read what it was sent.
"""

from __future__ import annotations

import json

import pytest

from conftest import commit, init_repo, saved_prompts
from pytest_advreview.testing import FindingSpec, approved_review, review_text

HIGH = FindingSpec("high", "Rollback restores a stale backup", section="Rollback")


def _stub_conftest(pytester: pytest.Pytester, answer: str, tokens: int = 0) -> None:
    """A ``stub`` backend answering ``answer``; each prompt is saved under ``prompts/``."""
    pytester.makeconftest(
        f"""
        import pathlib
        import threading
        from pytest_advreview.models import (
            RunnerResult, RunnerStatus, ReviewQuality, TokenUsage)
        from pytest_advreview.parse import analyse
        from pytest_advreview.runner import DispatchResult

        FOLDER = pathlib.Path(__file__).parent / "prompts"
        # --advreview-jobs calls dispatch from several threads: number the files in turn.
        LOCK = threading.Lock()

        class Stub:
            name = "stub"
            supports_resume = False
            def can_resume(self, session_id):
                return False
            def dispatch(self, request):
                with LOCK:
                    FOLDER.mkdir(exist_ok=True)
                    n = len(list(FOLDER.glob("*.txt")))
                    (FOLDER / f"{{n}}.txt").write_text(request.prompt_body)
                analysis = analyse({answer!r})
                runner = RunnerResult(result=RunnerStatus.SUCCESS,
                                      verdict=analysis.review.verdict,
                                      attempt_id="000001", review_quality=ReviewQuality.VALID)
                return DispatchResult(runner=runner, operation=request.operation,
                                      review=analysis.review,
                                      usage=TokenUsage(input_tokens={tokens}))

        def pytest_advreview_make_reviewer(config, name):
            return Stub() if name == "stub" else None
        """
    )


@pytest.fixture
def repo(pytester: pytest.Pytester) -> pytest.Pytester:
    init_repo(pytester.path)
    (pytester.path / ".gitignore").write_text(
        ".pytest_cache/\n__pycache__/\n/conftest.py\n/prompts/\n/test_*.py\n/outcome*.json\n"
    )
    (pytester.path / "notes").mkdir()
    (pytester.path / "notes" / "a.md").write_text("# Plan A\n\n1. Step.\n")
    (pytester.path / "notes" / "b.md").write_text("# Plan B\n\n1. Step.\n")
    commit(pytester.path, "init")
    pytester.makepyfile(
        test_review="""
        import json, pathlib

        def test_review(adversarial_review):
            outcome = adversarial_review.plan("notes/a.md")
            pathlib.Path("outcome.json").write_text(json.dumps({
                "status": outcome.status.value,
                "ids": [f.id for f in outcome.findings],
            }))
            outcome.assert_approved()
        """
    )
    return pytester


def _outcome(pytester: pytest.Pytester) -> dict[str, object]:
    data = json.loads((pytester.path / "outcome.json").read_text())
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("flag", [(), ("--adversarial-review", "--advreview-diff=none")])
def test_fixture_passes_from_a_stored_approval_without_calling_the_reviewer(
    repo: pytest.Pytester, flag: tuple[str, ...]
) -> None:
    _stub_conftest(repo, approved_review())
    args = (*flag, "--advreview-reviewer=stub")
    repo.runpytest(*args, "-k", "test_review").assert_outcomes(passed=1)
    assert len(saved_prompts(repo.path)) == 1
    repo.runpytest(*args, "-k", "test_review").assert_outcomes(passed=1)
    assert len(saved_prompts(repo.path)) == 1, "the stored approval stands: no second reviewer call"
    assert _outcome(repo)["status"] == "cached"


def test_fixture_fails_from_a_stored_revise_and_sends_the_decisions_with_the_next_round(
    repo: pytest.Pytester,
) -> None:
    _stub_conftest(repo, review_text("REVISE", [HIGH]))
    args = ("--advreview-reviewer=stub",)
    repo.runpytest(*args).assert_outcomes(failed=1)
    (finding,) = _outcome(repo)["ids"]  # type: ignore[misc]
    # Unchanged plan, no new decision: failed from the stored verdict, no reviewer call.
    repo.runpytest(*args).assert_outcomes(failed=1)
    assert len(saved_prompts(repo.path)) == 1
    assert _outcome(repo)["status"] == "cached"
    decisions = repo.path / ".advreview" / "decisions.toml"
    decisions.parent.mkdir()
    decisions.write_text(
        "[[decision]]\n"
        'target = "notes/a.md"\n'
        f'finding = "{finding}"\n'
        'action = "reject"\n'
        'reason = "The backup is taken inside the same transaction."\n'
    )
    repo.runpytest(*args).assert_outcomes(failed=1)
    prompts = saved_prompts(repo.path)
    assert len(prompts) == 2, "a new decision is the next round"
    assert "The backup is taken inside the same transaction." in prompts[1]


def test_fixture_refuses_a_decision_on_a_finding_the_target_never_had(
    repo: pytest.Pytester,
) -> None:
    _stub_conftest(repo, review_text("REVISE", [HIGH]))
    args = ("--advreview-reviewer=stub",)
    repo.runpytest(*args).assert_outcomes(failed=1)
    decisions = repo.path / ".advreview" / "decisions.toml"
    decisions.parent.mkdir()
    decisions.write_text(
        '[[decision]]\ntarget = "notes/a.md"\nfinding = "AR-000000"\naction = "accept"\n'
    )
    result = repo.runpytest(*args)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*AR-000000*"])
    assert len(saved_prompts(repo.path)) == 1, "a wrong decision is never sent to the reviewer"


def test_fixture_reviews_stop_at_the_run_token_budget(repo: pytest.Pytester) -> None:
    _stub_conftest(repo, approved_review(), tokens=500)
    repo.makepyfile(
        test_two="""
        def test_two(adversarial_review):
            adversarial_review.plan("notes/a.md").assert_approved()
            adversarial_review.plan("notes/b.md").assert_approved()
        """
    )
    result = repo.runpytest(
        "--advreview-reviewer=stub", "--advreview-budget-tokens=100", "-k", "test_two"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*spent 500 tokens, which reaches the budget advreview_budget_tokens = 100, before "
            "this review started*"
        ]
    )
    assert len(saved_prompts(repo.path)) == 1, "the second review never reached the reviewer"


def test_fixture_does_not_pass_from_a_forged_approval_in_the_cache(
    repo: pytest.Pytester,
) -> None:
    # The fixture now reads stored verdicts, so a verdict edited in the cache (by an earlier
    # CI step, a restored cache, a reviewer's tool call) must not pass it: the entry no
    # longer verifies, is ignored with a warning, and the plan is reviewed again.
    _stub_conftest(repo, review_text("REVISE", [HIGH]))
    repo.runpytest("--advreview-reviewer=stub").assert_outcomes(failed=1)
    (entry,) = [
        path
        for path in (repo.path / ".pytest_cache").rglob("*.json")
        if '"mac"' in path.read_text()
    ]
    data = json.loads(entry.read_text())
    data["state"]["status"] = "approved"
    for record in data["state"]["rounds"]:
        record["review"]["verdict"] = "APPROVED"
        record["review"]["findings"] = []
    entry.write_text(json.dumps(data))
    # The warning is shown, not raised: the outer suite's `error` filter reaches this run.
    result = repo.runpytest(
        "--advreview-reviewer=stub", "-W", "default::pytest_advreview.state.StateWarning"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*StateWarning*a forged or copied entry*"])
    assert len(saved_prompts(repo.path)) == 2, "reviewed again, not passed from the forgery"
    assert _outcome(repo)["status"] == "revise"
