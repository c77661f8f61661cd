"""``--advreview-eval`` end to end on the in-process scripted reviewer: re-scoring from
kept transcripts, thresholds, the baseline comparison and a bad case."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import ReviewRepo
from eval_kit import CORPUS, Answer, approve, oracle, oracle_plus_wrong, script
from pytest_advreview.testing import FindingSpec, review_text


def _run(repo: ReviewRepo, *extra: str, corpus: Path = CORPUS) -> pytest.RunResult:
    return repo.run(f"--advreview-eval={corpus}", *extra)


def _report(repo: ReviewRepo, name: str = "eval.json") -> dict[str, Any]:
    return json.loads((repo.path / name).read_text())


def test_a_rerun_rescores_from_kept_transcripts_without_asking(scripted_repo: ReviewRepo) -> None:
    scripted_repo.server.set_script(script(CORPUS, oracle, real=False))
    first = _run(scripted_repo, "--advreview-eval-report=eval.json")
    first.assert_outcomes(passed=4)
    asked = len(scripted_repo.server.response_requests)
    assert asked >= 4
    # The reviewer would now approve everything: a rerun that asked would score recall 0.
    scripted_repo.server.set_script(script(CORPUS, approve, real=False))
    again = _run(scripted_repo, "--advreview-eval-report=eval.json", "--advreview-eval-rescore")
    again.assert_outcomes(passed=4)
    assert len(scripted_repo.server.response_requests) == asked  # no model call
    report = _report(scripted_repo)
    assert report["recall"]["value"] == 1.0
    assert all(r["rescored"] for r in report["results"])
    again.stdout.fnmatch_lines(["*re-scored from kept transcripts: 4*"])


def test_rescore_only_without_a_transcript_is_an_error(scripted_repo: ReviewRepo) -> None:
    result = _run(scripted_repo, "--advreview-eval-rescore")
    result.assert_outcomes(errors=4)
    result.stdout.fnmatch_lines(["*no kept transcript of case code-clean epoch 1*"])
    assert scripted_repo.server.response_requests == []


def test_another_fail_on_is_not_rescored_from_the_old_transcripts(
    scripted_repo: ReviewRepo,
) -> None:
    scripted_repo.server.set_script(script(CORPUS, oracle, real=False))
    _run(scripted_repo).assert_outcomes(passed=4)
    result = _run(scripted_repo, "--advreview-fail-on=high", "--advreview-eval-rescore")
    result.assert_outcomes(errors=4)


@pytest.mark.parametrize(
    ("ini", "answer", "says"),
    [
        ("advreview_eval_min_recall = 1", oracle, None),
        (
            "advreview_eval_min_recall = 0.5",
            approve,
            "advreview_eval_min_recall = 0.5: measured 0.0 %",
        ),
        ("advreview_eval_max_false_block = 0", oracle, None),
        (
            "advreview_eval_max_false_block = 0.2",
            oracle_plus_wrong,
            "advreview_eval_max_false_block = 0.2: measured 100.0 % (2/2;",
        ),
        ("advreview_eval_max_flip = 0.5", oracle, "advreview_eval_max_flip = 0.5: not measured"),
    ],
)
def test_thresholds_set_the_exit_status(
    scripted_repo: ReviewRepo, ini: str, answer: Answer, says: str | None
) -> None:
    scripted_repo.write("pytest.ini", f"[pytest]\n{ini}\n")
    scripted_repo.server.set_script(script(CORPUS, answer, real=False))
    result = _run(scripted_repo)
    lines = [ln for ln in result.stdout.lines if ln.startswith("FAILED: ")]
    if says is None:
        assert result.ret == pytest.ExitCode.OK
        assert lines == []
    else:
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        assert len(lines) == 1
        assert lines[0].startswith(f"FAILED: {says}")


def test_a_threshold_alone_fails_a_run_whose_items_all_pass(scripted_repo: ReviewRepo) -> None:
    clean = scripted_repo.path / "clean-corpus"
    shutil.copytree(CORPUS / "plan-clean", clean / "plan-clean")
    scripted_repo.write("pytest.ini", "[pytest]\nadvreview_eval_min_recall = 0.9\n")
    scripted_repo.server.set_script(script(clean, approve, real=False))
    result = _run(scripted_repo, corpus=clean)
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["FAILED: advreview_eval_min_recall = 0.9: not measured (no defect case was scored)"]
    )


def test_the_baseline_comparison_shows_both_and_the_deltas(scripted_repo: ReviewRepo) -> None:
    scripted_repo.server.set_script(script(CORPUS, oracle, real=False))
    _run(scripted_repo, "--advreview-eval-report=before.json").assert_outcomes(passed=4)
    scripted_repo.server.set_script(script(CORPUS, approve, real=False))
    result = _run(
        scripted_repo,
        "--advreview-model=other-model",
        "--advreview-eval-report=after.json",
        "--advreview-eval-baseline=before.json",
        "--advreview-report=eval.md",
    )
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "baseline: reviewer codex, model fake-model,*",
            "  recall * now 0.0 % (0/2; 95 % CI 0.0 %-65.8 %)  |  baseline 100.0 % (2/2; 95 % CI"
            " 34.2 %-100.0 %)  |  delta -100.0 pts",
            "  blocking precision * now None (0/0)  |  baseline 100.0 % (2/2;*  |  delta n/a",
        ]
    )
    md = (scripted_repo.path / "eval.md").read_text()
    assert "| Metric | Now | Baseline | Delta |" in md
    assert (
        "| recall | 0.0 % (0/2; 95 % CI 0.0 %-65.8 %) | 100.0 % (2/2; 95 % CI 34.2 %-100.0 %) "
        "| -100.0 pts |" in md
    )
    assert _report(scripted_repo, "after.json")["reviewer"]["model"] == "other-model"


def test_an_unreadable_baseline_fails_the_run_with_its_fix(scripted_repo: ReviewRepo) -> None:
    scripted_repo.write("before.json", "{}")
    scripted_repo.server.set_script(script(CORPUS, oracle, real=False))
    result = _run(scripted_repo, "--advreview-eval-baseline=before.json")
    result.assert_outcomes(passed=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["FAILED: --advreview-eval-baseline=*before.json: not an eval report*"]
    )


def test_a_bad_case_is_one_collection_error_naming_file_field_and_fix(
    scripted_repo: ReviewRepo,
) -> None:
    corpus = scripted_repo.path / "corpus"
    shutil.copytree(CORPUS, corpus)
    toml = corpus / "plan-rollout" / "case.toml"
    toml.write_text(toml.read_text().replace('severity = "high"', 'severity = "severe"'))
    result = _run(scripted_repo, corpus=corpus)
    result.assert_outcomes(errors=1)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert (
        f"pytest-advreview: eval case {toml}: field `defect[0].severity`: Input should be "
        "'critical', 'high', 'medium' or 'low'; fix: set severity = \"critical\", \"high\", "
        '"medium" or "low"'
    ) in result.stdout.lines
    result.stdout.fnmatch_lines(["*Interrupted: 1 error during collection*"])
    assert scripted_repo.server.response_requests == []


def test_an_eval_run_collects_nothing_of_the_checkout(scripted_repo: ReviewRepo) -> None:
    scripted_repo.write("docs/plans/p.md", "# Plan\n\n1. Do it.\n")
    scripted_repo.write("test_x.py", "def test_x():\n    assert False\n")
    scripted_repo.server.set_script(script(CORPUS, oracle, real=False))
    result = _run(scripted_repo, "--advreview-jobs=1")
    result.assert_outcomes(passed=4)
    assert not any(
        "docs/plans/p.md" in r.last_user_text for r in scripted_repo.server.response_requests
    )
    # Nothing is stored as a gate verdict.
    assert not (scripted_repo.path / ".pytest_cache" / "d" / "advreview").exists()


def test_under_xdist_the_controller_aggregates_every_worker(scripted_repo: ReviewRepo) -> None:
    scripted_repo.server.set_script(script(CORPUS, oracle, real=False))
    result = scripted_repo.run_subprocess(
        f"--advreview-eval={CORPUS}", "--advreview-eval-report=eval.json", "-n", "2"
    )
    result.assert_outcomes(passed=4)
    report = _report(scripted_repo)
    assert report["runs"] == 4
    assert report["recall"]["value"] == 1.0
    assert report["corpus_version"] != "unknown"


def test_a_case_that_cannot_be_built_is_an_error_of_its_item(scripted_repo: ReviewRepo) -> None:
    corpus = scripted_repo.path / "corpus"
    shutil.copytree(CORPUS / "code-counter", corpus / "code-counter")
    patch = corpus / "code-counter" / "change.patch"
    patch.write_text(
        patch.read_text().replace("_counts[page] = _counts.get", "_counts[x] = _counts.get")
    )
    result = _run(scripted_repo, corpus=corpus)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*field `patch`: change.patch does not apply to base/ with git apply*"]
    )
    assert scripted_repo.server.response_requests == []


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ("--advreview-eval=builtin", "--advreview-sarif=x.sarif"),
            "--advreview-sarif does nothing in an eval run",
        ),
        (
            ("--advreview-eval=builtin", "--advreview-head=main"),
            "--advreview-head does nothing in an eval run",
        ),
        (
            ("--advreview-eval-report=x.json",),
            "--advreview-eval-report belongs to an eval run; add --advreview-eval",
        ),
        (("--advreview-eval-rescore",), "--advreview-eval-rescore belongs to an eval run"),
        (
            ("--advreview-eval=builtin", "--advreview-eval-epochs=0"),
            "--advreview-eval-epochs=0 is not valid",
        ),
    ],
)
def test_options_an_eval_would_ignore_are_refused(
    scripted_repo: ReviewRepo, args: tuple[str, ...], says: str
) -> None:
    result = scripted_repo.run(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert says in result.stderr.str()


def test_fresh_asks_again_and_replaces_the_transcripts(scripted_repo: ReviewRepo) -> None:
    scripted_repo.server.set_script(script(CORPUS, oracle, real=False))
    _run(scripted_repo).assert_outcomes(passed=4)
    scripted_repo.server.set_script(script(CORPUS, approve, real=False))
    _run(scripted_repo, "--advreview-fresh").assert_outcomes(passed=2, failed=2)
    # The fresh answers are what is kept now.
    _run(scripted_repo, "--advreview-eval-rescore").assert_outcomes(passed=2, failed=2)


VS_PLAN = CORPUS.parent / "eval-corpus-vs-plan"


def test_a_code_vs_plan_case_is_reviewed_against_its_plan(scripted_repo: ReviewRepo) -> None:
    scripted_repo.server.set_script(script(VS_PLAN, oracle, real=False))
    result = _run(scripted_repo, "--advreview-eval-report=eval.json", corpus=VS_PLAN)
    result.assert_outcomes(passed=1)
    (prompt,) = [r.last_user_text for r in scripted_repo.server.response_requests][:1]
    assert "docs/plans/plan.md" in prompt
    assert "app/counter.py" in prompt
    report = _report(scripted_repo)
    assert report["recall"]["successes"] == 2
    assert set(report["recall_by_category"]) == {"observability", "race"}


def test_a_secret_in_a_review_reaches_no_report_and_no_transcript(
    scripted_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-eval-secret-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", secret)

    def leaky(case: Any) -> list[dict[str, Any]]:
        return [
            {
                "message": review_text(
                    "REVISE", [FindingSpec("high", f"Leaks {secret}", section="Nowhere")]
                )
            }
        ]

    scripted_repo.server.set_script(script(CORPUS, leaky, real=False))
    result = _run(scripted_repo, "--advreview-eval-report=eval.json", "--advreview-report=eval.md")
    assert secret not in result.stdout.str()
    assert secret not in (scripted_repo.path / "eval.json").read_text()
    assert secret not in (scripted_repo.path / "eval.md").read_text()
    kept = scripted_repo.path / ".pytest_cache" / "d" / "advreview-eval"
    texts = [p.read_text() for p in kept.rglob("*.json")]
    assert len(texts) == 4
    assert not any(secret in t for t in texts)
    assert any("Leaks" in t for t in texts)


def test_the_ini_transcripts_folder_is_the_projects_wherever_pytest_starts(
    scripted_repo: ReviewRepo,
) -> None:
    scripted_repo.write("pytest.ini", "[pytest]\nadvreview_eval_transcripts = evals/kept\n")
    (scripted_repo.path / "sub").mkdir()
    scripted_repo.server.set_script(script(CORPUS, oracle, real=False))
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(scripted_repo.path / "sub")
        result = scripted_repo.run(
            f"--advreview-eval={CORPUS}", "--rootdir", str(scripted_repo.path)
        )
    result.assert_outcomes(passed=4)
    assert len(list((scripted_repo.path / "evals" / "kept").rglob("*.json"))) == 4


def test_a_changed_label_rescores_and_a_changed_plan_asks_again(scripted_repo: ReviewRepo) -> None:
    corpus = scripted_repo.path / "corpus"
    shutil.copytree(CORPUS / "plan-rollout", corpus / "plan-rollout")
    scripted_repo.server.set_script(script(corpus, oracle, real=False))
    _run(scripted_repo, corpus=corpus).assert_outcomes(passed=1)
    # A label the kept findings do not meet: re-scored from the transcript, now a miss.
    toml = corpus / "plan-rollout" / "case.toml"
    toml.write_text(toml.read_text().replace('severity = "high"', 'severity = "critical"'))
    relabelled = _run(scripted_repo, "--advreview-eval-rescore", corpus=corpus)
    relabelled.assert_outcomes(failed=1)
    # The plan itself changed: what the reviewer saw is not what was kept.
    plan = corpus / "plan-rollout" / "plan.md"
    plan.write_text(plan.read_text() + "\n## Owner\nThe billing team.\n")
    _run(scripted_repo, "--advreview-eval-rescore", corpus=corpus).assert_outcomes(errors=1)
