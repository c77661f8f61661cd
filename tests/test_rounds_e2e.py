"""Rounds across runs: stored state, cache, decisions file, budget, isolation (real Codex)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import ReviewRepo, git
from pytest_advreview.testing import FindingSpec, approved_review, revise_review, shell_step

HIGH = FindingSpec("high", "Rollback restores a stale backup", section="Rollback")
MEDIUM = FindingSpec("medium", "Pagination order is unspecified", section="Steps")
CRITICAL = FindingSpec("critical", "In-place id rewrite loses foreign keys", section="Step 2")
PLAN = "# Plan\n\n1. Migrate.\n\n## Rollback\nRestore the backup.\n"
NO_CODE = "--advreview-diff=none"


def _state_files(repo: ReviewRepo) -> list[Path]:
    return sorted((repo.path / ".pytest_cache" / "d" / "advreview" / "state").glob("*.json"))


def test_unchanged_approved_plan_is_cached_with_zero_calls(scripted_repo: ReviewRepo) -> None:
    plan = scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer("x.md", {"message": approved_review()})
    scripted_repo.run(NO_CODE).assert_outcomes(passed=1)
    assert len(scripted_repo.server.response_requests) == 1

    second = scripted_repo.run(NO_CODE)
    second.assert_outcomes(passed=1)
    second.stdout.fnmatch_lines(["*x.md::adversarial-review: cached (passed)*"])
    assert len(scripted_repo.server.response_requests) == 1  # zero new requests

    plan.write_text(PLAN + " ")  # one byte
    scripted_repo.run(NO_CODE).assert_outcomes(passed=1)
    assert len(scripted_repo.server.response_requests) == 2


def test_unchanged_revise_fails_from_cache_with_the_same_findings(
    scripted_repo: ReviewRepo,
) -> None:
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer("x.md", {"message": revise_review(HIGH)})
    scripted_repo.run(NO_CODE).assert_outcomes(failed=1)
    second = scripted_repo.run(NO_CODE)
    second.assert_outcomes(failed=1)
    second.stdout.fnmatch_lines(["*[[]severity: high[]] AR-* Rollback restores a stale backup*"])
    second.stdout.fnmatch_lines(["*x.md::adversarial-review: cached (failed)*"])
    assert len(scripted_repo.server.response_requests) == 1


def test_edited_plan_resumes_the_same_thread_with_the_applied_diff(review_repo: ReviewRepo) -> None:
    plan = review_repo.plan("x.md", PLAN)
    review_repo.answer(
        "x.md", {"message": revise_review(HIGH)}, {"message": approved_review()}, where="body"
    )
    review_repo.run(NO_CODE).assert_outcomes(failed=1)
    first = review_repo.server.response_requests[0]
    plan.write_text(PLAN.replace("Restore the backup.", "Dual-write, then switch readers."))
    result = review_repo.run(NO_CODE)
    result.assert_outcomes(passed=1)
    second = review_repo.server.response_requests[-1]
    assert second.thread_id == first.thread_id  # codex exec resume on the stored thread
    text = second.last_user_text
    assert "## Applied" in text
    assert "+Dual-write, then switch readers." in text
    assert "-Restore the backup." in text
    sandbox = json.dumps(second.body["input"])
    assert sandbox.rindex("`sandbox_mode` is `workspace-write`") > 0
    result.stdout.fnmatch_lines(["*x.md::adversarial-review: approved*round 2*"])


def test_decisions_file_reason_reaches_the_reviewer(scripted_repo: ReviewRepo) -> None:
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer(
        "x.md", {"message": revise_review(HIGH)}, {"message": approved_review()}, where="body"
    )
    first = scripted_repo.run(NO_CODE)
    first.assert_outcomes(failed=1)
    (finding_id,) = set(re.findall(r"\[severity: high\] (AR-[0-9a-f]{6})", first.stdout.str()))
    scripted_repo.write(
        ".advreview/decisions.toml",
        f'[[decision]]\ntarget = "docs/plans/x.md"\nfinding = "{finding_id}"\n'
        'action = "reject"\nreason = "The backup is taken one minute before cut-over."\n',
    )
    scripted_repo.run(NO_CODE).assert_outcomes(passed=1)
    text = scripted_repo.server.response_requests[-1].last_user_text
    rejected = text.split("## Rejected with reasoning", 1)[1].split("##", 1)[0]
    assert "The backup is taken one minute before cut-over." in rejected
    assert finding_id in rejected


def _drop_rollouts(home: Path) -> None:
    for path in (home / "sessions").rglob("rollout-*.jsonl"):
        path.unlink()


def test_missing_rollout_after_critical_goes_straight_to_fresh_exec(
    review_repo: ReviewRepo, codex_home: Path
) -> None:
    plan = review_repo.plan("x.md", PLAN)
    review_repo.answer("Previous review rounds", {"message": approved_review()})
    review_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    review_repo.run(NO_CODE).assert_outcomes(failed=1)
    _drop_rollouts(codex_home)  # a fresh CI runner: the thread is not on this machine
    plan.write_text(PLAN + "\n## Safety\nAdd a new column instead.\n")
    result = review_repo.run(NO_CODE)
    result.assert_outcomes(passed=1)
    requests = review_repo.server.response_requests
    assert len(requests) == 2  # no failing resume call was made
    assert requests[1].thread_id != requests[0].thread_id
    assert "## Previous review rounds" in requests[1].last_user_text
    assert "In-place id rewrite loses foreign keys" in requests[1].last_user_text


def test_missing_rollout_after_medium_is_not_verified(
    review_repo: ReviewRepo, codex_home: Path
) -> None:
    plan = review_repo.plan("x.md", PLAN)
    review_repo.answer("x.md", {"message": revise_review(MEDIUM)})
    review_repo.run(NO_CODE).assert_outcomes(failed=1)
    _drop_rollouts(codex_home)
    plan.write_text(PLAN + "\nOrder by id.\n")
    result = review_repo.run(NO_CODE)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*not verified*"])
    assert len(review_repo.server.response_requests) == 1


def test_rounds_count_across_runs_up_to_max_then_fresh_starts_over(
    scripted_repo: ReviewRepo,
) -> None:
    plan = scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer("x.md", {"message": revise_review(HIGH)}, where="body")
    for n in range(5):
        plan.write_text(PLAN + f"\nedit {n}\n")
        scripted_repo.run(NO_CODE).assert_outcomes(failed=1)
    assert len(scripted_repo.server.response_requests) == 5
    plan.write_text(PLAN + "\nedit 6\n")
    sixth = scripted_repo.run(NO_CODE)
    sixth.assert_outcomes(failed=1)
    sixth.stdout.fnmatch_lines(["*x.md::adversarial-review: max rounds (failed)*round 5*"])
    assert len(scripted_repo.server.response_requests) == 5  # no reviewer call
    fresh = scripted_repo.run(NO_CODE, "--advreview-fresh")
    fresh.assert_outcomes(failed=1)
    fresh.stdout.fnmatch_lines(["*x.md::adversarial-review: revise (failed)*round 1*"])
    assert len(scripted_repo.server.response_requests) == 6


def test_corrupted_cache_entry_warns_and_reviews_afresh(scripted_repo: ReviewRepo) -> None:
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer("x.md", {"message": approved_review()})
    scripted_repo.run(NO_CODE).assert_outcomes(passed=1)
    (entry,) = _state_files(scripted_repo)
    entry.write_text("{ not json")
    second = scripted_repo.run(NO_CODE, "-W", "always::pytest.PytestWarning")
    second.assert_outcomes(passed=1, warnings=1)
    second.stdout.fnmatch_lines(["*StateWarning*"])
    assert len(scripted_repo.server.response_requests) == 2


def test_bad_decisions_file_is_a_usage_error(scripted_repo: ReviewRepo) -> None:
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.write(
        ".advreview/decisions.toml",
        '[[decision]]\ntarget = "docs/plans/x.md"\nfinding = "AR-123456"\naction = "reject"\n',
    )
    result = scripted_repo.run(NO_CODE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*decisions.toml*entry 1*reason*"])
    assert "Traceback" not in result.stderr.str()


def test_unreadable_decisions_file_is_a_usage_error(scripted_repo: ReviewRepo) -> None:
    scripted_repo.plan("x.md", PLAN)
    (scripted_repo.path / ".advreview" / "decisions.toml").mkdir(parents=True)
    result = scripted_repo.run(NO_CODE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*decisions.toml*"])


def test_token_budget_stops_starting_reviews(scripted_repo: ReviewRepo) -> None:
    for name in ("a.md", "b.md"):
        scripted_repo.plan(name, PLAN)
        scripted_repo.answer(name, {"message": approved_review()})
    # One at a time: with reviews side by side the budget is overshot by those in flight
    # (test_jobs_e2e.py).
    result = scripted_repo.run(
        NO_CODE, "--advreview-budget-tokens=1", "--advreview-jobs=1", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*b.md::adversarial-review: budget exhausted*"])
    assert len(scripted_repo.server.response_requests) == 1


def test_isolation_under_xdist_errors_only_the_writer_and_leaves_the_tree_alone(
    review_repo: ReviewRepo,
) -> None:
    review_repo.plan("clean.md", PLAN)
    review_repo.plan("writer.md", PLAN)
    review_repo.answer("clean.md", {"message": approved_review()})
    review_repo.answer(
        "writer.md",
        shell_step("echo 1 > pwned.txt"),
        {"message": approved_review()},
    )
    before = git(review_repo.path, "status", "--porcelain")
    result = review_repo.run_subprocess(NO_CODE, "--advreview-isolation=worktree", "-n", "2")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of*writer.md*", "*pwned.txt*"])
    assert "clean.md" not in result.stdout.str().split("short test summary info", 1)[1]
    assert not (review_repo.path / "pwned.txt").exists()
    assert git(review_repo.path, "status", "--porcelain") == before
    assert git(review_repo.path, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_stored_severity_marker_selects_items_at_collection(scripted_repo: ReviewRepo) -> None:
    scripted_repo.plan("bad.md", PLAN)
    scripted_repo.plan("good.md", PLAN + "\n")
    scripted_repo.answer("bad.md", {"message": revise_review(CRITICAL)})
    scripted_repo.answer("good.md", {"message": approved_review()})
    scripted_repo.run(NO_CODE).assert_outcomes(passed=1, failed=1)
    again = scripted_repo.run(NO_CODE, "-m", "severity_critical")
    again.assert_outcomes(failed=1, deselected=1)
    again.stdout.fnmatch_lines(["*bad.md::adversarial-review: cached (failed)*"])
    assert len(scripted_repo.server.response_requests) == 2  # no new reviewer call
