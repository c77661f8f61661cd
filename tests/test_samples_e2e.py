"""Several first-round samples of one target (real Codex CLI, scripted server): their
findings merged, any sample's blocker blocking and named, a sample that cannot run an
error, and a later round that must answer what only another sample reported."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conftest import ReviewRepo, git
from pytest_advreview.testing import FindingSpec, approved_review, revise_review

PLAN = "# Plan\n\n1. Migrate the table.\n\n## Rollback\nRestore the backup.\n"
NO_CODE = "--advreview-diff=none"
HIGH = FindingSpec("high", "Backup is never verified", section="## Rollback")


def _sample(number: int, count: int = 3) -> str:
    """Text only sample ``number``'s first prompt holds (loop.sample_note)."""
    return f"independent review {number} of {count} of"


def _script(repo: ReviewRepo, *answers: dict[str, Any]) -> None:
    for number, answer in enumerate(answers, start=1):
        repo.answer(_sample(number, len(answers)), answer)


@pytest.mark.real_codex
def test_one_sample_of_three_blocks_and_the_report_names_it(review_repo: ReviewRepo) -> None:
    review_repo.plan("a.md", PLAN)
    _script(
        review_repo,
        {"message": approved_review()},
        {"message": revise_review(HIGH)},
        {"message": approved_review()},
    )
    result = review_repo.run(NO_CODE, "--advreview-samples=3", "--advreview-json=out.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*[[]severity: high[]]*Backup is never verified*reported by sample 2 (codex)*"]
    )
    data = json.loads((review_repo.path / "out.json").read_text())
    record = data["items"][0]["record"]
    (finding,) = record["findings"]
    assert [(m["sample"], m["reviewer"]) for m in finding["samples"]] == [(2, "codex")]
    (first,) = record["rounds"]
    samples = first["samples"]
    assert [(s["sample"], s["verdict"]) for s in samples] == [
        (1, "APPROVED"),
        (2, "REVISE"),
        (3, "APPROVED"),
    ]
    # Every sample's tokens, and the round's are their sum.
    assert all(s["usage"]["input_tokens"] > 0 for s in samples)
    assert first["usage"]["input_tokens"] == sum(s["usage"]["input_tokens"] for s in samples)
    assert len(review_repo.server.response_requests) == 3
    # The budget and the item's tokens count every sample.
    assert record["tokens"]["input_tokens"] == first["usage"]["input_tokens"]
    # A rerun of the unchanged plan asks nobody: the merged verdict is stored.
    again = review_repo.run(NO_CODE, "--advreview-samples=3")
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(["*Backup is never verified*reported by sample 2 (codex)*"])
    assert len(review_repo.server.response_requests) == 3
    # Another count is another reviewer identity: it reviews again.
    _script(review_repo, {"message": approved_review()}, {"message": approved_review()})
    review_repo.run(NO_CODE, "--advreview-samples=2").assert_outcomes(passed=1)
    assert len(review_repo.server.response_requests) == 5


@pytest.mark.real_codex
def test_a_sample_that_cannot_run_is_an_error_not_outvoted(review_repo: ReviewRepo) -> None:
    review_repo.plan("a.md", PLAN)
    _script(
        review_repo,
        {"message": approved_review()},
        {"message": approved_review()},
        {"http_status": 400, "body": {"error": {"message": "bad request", "type": "invalid"}}},
    )
    result = review_repo.run(NO_CODE, "--advreview-samples=3")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*sample 3 of 3 (codex) could not review*"])


#: Sample 1 and sample 2 each report one finding of their own.
OWN = FindingSpec("high", "Migration locks the table", section="## Plan")


def _two_samples_disagree(repo: ReviewRepo, round_two: dict[str, Any]) -> pytest.RunResult:
    plan = repo.plan("a.md", PLAN)
    _script(repo, {"message": revise_review(OWN)}, {"message": revise_review(HIGH)})
    repo.answer("Findings of the other samples", round_two)
    repo.run(NO_CODE, "--advreview-samples=2").assert_outcomes(failed=1)
    (first,) = [r for r in repo.server.response_requests if _sample(1, 2) in r.last_user_text]
    plan.write_text(PLAN.replace("1. Migrate the table.", "1. Migrate the table online."))
    result = repo.run(NO_CODE, "--advreview-samples=2", "--advreview-json=out.json")
    second = repo.server.response_requests[-1]
    # Sample 1's thread is resumed, and told what only sample 2 reported.
    assert second.thread_id == first.thread_id
    assert "Findings of the other samples" in second.last_user_text
    assert "Backup is never verified" in second.last_user_text
    assert "Migration locks the table" not in second.last_user_text.split("other samples")[1]
    return result


@pytest.mark.real_codex
def test_round_two_approval_that_ignores_another_samples_finding_still_blocks(
    review_repo: ReviewRepo,
) -> None:
    result = _two_samples_disagree(review_repo, {"message": approved_review()})
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*Backup is never verified*reported by sample 2 (codex)*"])
    assert "did not answer" in result.stdout.str()


@pytest.mark.real_codex
def test_round_two_that_resolves_another_samples_finding_passes(review_repo: ReviewRepo) -> None:
    from pytest_advreview.models import Location, finding_id

    debt = finding_id(HIGH.title, Location(section=HIGH.section))
    answer = approved_review().replace(
        "## Verdict", f"RESOLVED {debt}: the Rollback section now verifies it.\n\n## Verdict"
    )
    result = _two_samples_disagree(review_repo, {"message": answer})
    result.assert_outcomes(passed=1)


@pytest.mark.real_codex
def test_sample_reviewers_mix_backends(review_repo: ReviewRepo, tmp_path: Any) -> None:
    import sys

    script = tmp_path / "reviewer.py"
    text = revise_review(HIGH)
    script.write_text(f"import sys\nsys.stdin.read()\nprint({text!r})\n")
    review_repo.plan("a.md", PLAN)
    review_repo.answer(_sample(1, 2), {"message": approved_review()})
    result = review_repo.run(
        NO_CODE,
        "--advreview-samples=2",
        "--advreview-sample-reviewers=codex,command",
        f"--advreview-command={sys.executable} {script}",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*Backup is never verified*reported by sample 2 (command)*"])


@pytest.mark.real_codex
@pytest.mark.parametrize(
    "line",
    [
        "advreview_samples = 3",
        "addopts = --advreview-samples=3",
        "advreview_verify = true",
        "addopts = --advreview-verify",
    ],
    ids=["samples-ini", "samples-addopts", "verify-ini", "verify-addopts"],
)
def test_under_a_gate_the_branchs_samples_are_ignored(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch, line: str
) -> None:
    """A pull request cannot choose how many samples judge it or turn verification on
    (a verifier it might talk into refuting): the base's settings (one sample, no
    verification) hold, and the branch's line is named as not used."""
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    review_repo.write("pytest.ini", "[pytest]\n")
    review_repo.plan("a.md", PLAN)
    review_repo.commit("base")
    git(review_repo.path, "checkout", "-q", "-b", "feature")
    review_repo.write("pytest.ini", f"[pytest]\n{line}\n")
    review_repo.plan("a.md", PLAN + "\n## Notes\nMore.\n")
    review_repo.commit("the branch asks for three samples")
    review_repo.answer("a.md", {"message": revise_review(HIGH)}, where="body")
    review_repo.answer("You verify ONE finding", {"message": "VERIFICATION: REFUTED"})
    result = review_repo.run("--advreview-github=off", "--advreview-diff=none")
    result.assert_outcomes(failed=1)
    prompts = [r.last_user_text for r in review_repo.server.response_requests]
    assert len(prompts) == 1  # one sample, no verifier turn
    assert "independent review" not in prompts[0]
    name = "samples" if "samples" in line else "verify"
    assert name in result.stdout.str().split("not used under a gate", 1)[1]


@pytest.mark.real_codex
@pytest.mark.parametrize(
    "option",
    ["--advreview-sample-reviewers=codex,nosuch", "--advreview-verifier=nosuch"],
    ids=["sample", "verifier"],
)
def test_a_reviewer_name_no_plugin_provides_is_a_usage_error(
    review_repo: ReviewRepo, option: str
) -> None:
    review_repo.plan("a.md", PLAN)
    result = review_repo.run(NO_CODE, "--advreview-samples=2", "--advreview-verify", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no reviewer backend is called 'nosuch'*"])
    assert review_repo.server.response_requests == []
