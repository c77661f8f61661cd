"""The eval's controls with the real Codex CLI against the scripted model server.

Reviewers whose score is known in advance: the oracle (exactly the seeded defects), an
always-APPROVED reviewer, one that adds a wrong blocker to each case, one that
alternates between two answers across epochs, and one that errors on one case.  If the
matcher or a metric broke, these scores would move (a matcher that matched everything
would give the wrong-blocker control a precision of 1.0, the approving one a recall
above 0 never, but a precision other than None...).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import ReviewRepo
from eval_kit import (
    CORPUS,
    alternating,
    approve,
    cases,
    decoys,
    oracle,
    oracle_plus_wrong,
    script,
)
from pytest_advreview.eval import BUILTIN_CORPUS

pytestmark = pytest.mark.real_codex


def _run(repo: ReviewRepo, corpus: str, *extra: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    result = repo.run(f"--advreview-eval={corpus}", "--advreview-eval-report=eval.json", *extra)
    report = json.loads((repo.path / "eval.json").read_text())
    return result, report


def test_oracle_scores_full_marks_on_the_bundled_corpus(review_repo: ReviewRepo) -> None:
    review_repo.server.set_script(script(BUILTIN_CORPUS, oracle, real=True))
    bundled = cases(BUILTIN_CORPUS)
    result, report = _run(review_repo, "builtin", "--advreview-jobs=4")
    result.assert_outcomes(passed=len(bundled))
    defects = sum(len(c.spec.defect) for c in bundled)
    blocking_cases = sum(1 for c in bundled if not c.spec.clean)
    clean = sum(1 for c in bundled if c.spec.clean)
    assert report["recall"] == {**report["recall"], "value": 1.0, "successes": defects}
    assert report["recall"]["trials"] == defects
    assert report["precision"]["value"] == 1.0
    assert report["precision"]["trials"] == defects
    assert report["false_block"] == {**report["false_block"], "value": 0.0, "trials": clean}
    assert report["errors"] == 0
    assert blocking_cases + clean == report["runs"] == len(bundled)
    assert all(rate["value"] == 1.0 for rate in report["recall_by_category"].values())
    result.stdout.fnmatch_lines(["*advreview eval*", "  recall * 100.0 % *"])


def test_an_approving_reviewer_scores_recall_zero_and_no_precision(review_repo: ReviewRepo) -> None:
    review_repo.server.set_script(script(CORPUS, approve, real=True))
    result, report = _run(review_repo, str(CORPUS))
    result.assert_outcomes(passed=2, failed=2)  # the clean cases pass, the others miss
    assert report["recall"]["value"] == 0.0
    assert report["recall"]["trials"] == 2
    # Nothing blocked: no precision at all, never 1.0 at 0/0.
    assert report["precision"] == {
        "successes": 0,
        "trials": 0,
        "value": None,
        "low": None,
        "high": None,
    }
    assert report["false_block"]["value"] == 0.0
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_one_wrong_blocker_per_case_gives_the_implied_precision(review_repo: ReviewRepo) -> None:
    review_repo.server.set_script(script(CORPUS, oracle_plus_wrong, real=True))
    result, report = _run(review_repo, str(CORPUS))
    # Two defect cases with one defect each, four cases with one wrong blocker each:
    # 2 matched of 6 blocking findings; both clean cases are falsely blocked.
    assert report["precision"]["successes"] == 2
    assert report["precision"]["trials"] == 6
    assert report["precision"]["value"] == pytest.approx(2 / 6)
    assert report["recall"]["value"] == 1.0
    assert report["false_block"]["value"] == 1.0
    result.assert_outcomes(passed=2, failed=2)


def test_alternating_answers_give_the_implied_flip_rate(review_repo: ReviewRepo) -> None:
    review_repo.server.set_script(script(CORPUS, alternating, real=True, threads_all=True))
    result, report = _run(review_repo, str(CORPUS), "--advreview-eval-epochs=2")
    # Each case blocks in one epoch and not in the other: every case flips.
    assert report["flip"]["successes"] == 4
    assert report["flip"]["trials"] == 4
    assert report["flip"]["value"] == 1.0
    assert report["recall"]["value"] == 0.5  # each defect caught in one epoch of two
    assert report["runs"] == 8
    result.assert_outcomes(passed=4, failed=4)


def test_a_reviewer_that_errors_on_one_case_makes_it_an_error_and_fails(
    review_repo: ReviewRepo,
) -> None:
    broken = next(c for c in cases(CORPUS) if c.id == "plan-rollout")

    def answer(case: Any) -> list[dict[str, Any]]:
        if case.id == broken.id:
            return [{"http_status": 400, "body": {"error": {"message": "bad request"}}}]
        return oracle(case)

    review_repo.server.set_script(script(CORPUS, answer, real=True))
    result, report = _run(review_repo, str(CORPUS))
    result.assert_outcomes(passed=3, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (errored,) = [r for r in report["results"] if r["outcome"] == "error"]
    assert errored["case"] == "plan-rollout"
    assert errored["score"] is None
    # Never scored as a miss: the one defect left is caught, recall is 1 of 1.
    assert report["recall"]["trials"] == 1
    assert report["errors"] == 1
    # An error is never kept: no transcript of that case.
    kept = Path(review_repo.path, ".pytest_cache", "d", "advreview-eval")
    assert not (kept / "plan-rollout").exists()
    assert (kept / "code-counter").is_dir()


def test_findings_that_each_miss_one_rule_catch_nothing(review_repo: ReviewRepo) -> None:
    # The control a matcher that matched everything fails: it would score recall 1.0.
    review_repo.server.set_script(script(CORPUS, decoys, real=True))
    result, report = _run(review_repo, str(CORPUS))
    assert report["recall"]["value"] == 0.0
    assert report["recall"]["trials"] == 2
    # Both defects are high: three findings each, every one a blocking false block.
    assert report["precision"] == {**report["precision"], "successes": 0, "trials": 6}
    assert report["precision"]["value"] == 0.0
    result.assert_outcomes(passed=2, failed=2)


def test_oracle_on_a_code_vs_plan_case(review_repo: ReviewRepo) -> None:
    # The bundled corpus has no code-vs-plan case yet: this one is the suite's own.
    corpus = CORPUS.parent / "eval-corpus-vs-plan"
    review_repo.server.set_script(script(corpus, oracle, real=True))
    result, report = _run(review_repo, str(corpus))
    result.assert_outcomes(passed=1)
    assert report["recall"] == {**report["recall"], "value": 1.0, "trials": 2}
    assert report["precision"]["value"] == 1.0
