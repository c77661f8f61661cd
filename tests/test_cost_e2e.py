"""What a review costs (real Codex CLI, scripted server): money per round, item and run
in every output with ``advreview_prices``, tokens only without, a bad table refused, a
budget per pull request across CI runs, and an oversized change failed explicitly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ReviewRepo, git
from pytest_advreview.action import comment_body
from pytest_advreview.testing import approved_review
from pytest_advreview.trust.commands import parse

PLAN = "# Plan\n\n1. Migrate.\n\n## Rollback\nRestore the backup.\n"
NO_CODE = "--advreview-diff=none"
#: One answer's usage, as the scripted server reports it to Codex.
USAGE = {
    "input_tokens": 800_000,
    "input_tokens_details": {"cached_tokens": 200_000},
    "output_tokens": 100_000,
}
#: fake-model at input 2, cached input 0.5, output 10 per million tokens:
#: 600,000 x 2 + 200,000 x 0.5 + 100,000 x 10 = 1.2 + 0.1 + 1.0.
PRICES = "fake-model: input=2 cached_input=0.5 output=10"
COST = "$2.3000"


def _ini(repo: ReviewRepo, *lines: str) -> None:
    repo.write("pytest.ini", "[pytest]\n" + "\n".join(lines) + "\n")


def _approved(repo: ReviewRepo, name: str) -> None:
    repo.answer(name, {"message": approved_review(), "usage": USAGE})


@pytest.mark.real_codex
def test_money_per_round_item_and_run_in_every_output(review_repo: ReviewRepo) -> None:
    _ini(review_repo, "advreview_prices =", f"    {PRICES}")
    review_repo.plan("a.md", PLAN)
    review_repo.plan("b.md", PLAN)
    _approved(review_repo, "a.md")
    _approved(review_repo, "b.md")
    result = review_repo.run(NO_CODE, "--advreview-json=out.json", "--advreview-report=out.md")
    result.assert_outcomes(passed=2)

    # The terminal summary: per item, per round and for the run.
    result.stdout.fnmatch_lines(
        [
            f"*a.md::adversarial-review: approved*900000 tokens ({COST})*",
            f"    money per round: round 1 {COST}",
            f"*b.md::adversarial-review: approved*900000 tokens ({COST})*",
            "total: 2 reviews, 1800000 tokens ($4.6000)",
        ]
    )
    # The JSON report: every round, every item and the totals.
    data = json.loads((review_repo.path / "out.json").read_text())
    assert data["totals"]["cost"] == pytest.approx(4.6)
    assert data["totals"]["unpriced"] == 0
    for item in data["items"]:
        assert item["record"]["cost"] == pytest.approx(2.3)
        assert [r["cost"] for r in item["record"]["rounds"]] == [pytest.approx(2.3)]
    assert data["settings"]["prices"] == ["fake-model: input=2.0 cached_input=0.5 output=10.0"]
    # The markdown report, and the pull-request comment made from it.
    markdown = (review_repo.path / "out.md").read_text()
    assert "1800000 tokens ($4.6000)" in markdown
    assert f"900000 tokens ({COST})" in markdown
    assert f"Money per round: round 1 {COST}" in markdown
    assert f"| 900000 ({COST}) |" in markdown
    assert "1800000 tokens ($4.6000)" in comment_body(markdown, "https://ci.example/run/1")


@pytest.mark.real_codex
def test_without_prices_the_outputs_show_tokens_only(review_repo: ReviewRepo) -> None:
    review_repo.plan("a.md", PLAN)
    _approved(review_repo, "a.md")
    result = review_repo.run(NO_CODE, "--advreview-json=out.json", "--advreview-report=out.md")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["total: 1 review, 900000 tokens"])
    assert "$" not in result.stdout.str()
    assert "money" not in result.stdout.str()
    data = json.loads((review_repo.path / "out.json").read_text())
    assert data["totals"]["cost"] is None
    assert data["items"][0]["record"]["cost"] is None
    assert "$" not in (review_repo.path / "out.md").read_text()


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (
            ["fake-model: input=2 output=10"],
            "*advreview_prices line*fake-model: input=2 output=10*fake-model has no "
            "cached_input price; write MODEL: input=X cached_input=Y output=Z*",
        ),
        (
            ["fake-model: input=2 cached_input=0.5 output=ten"],
            "*output='ten' for fake-model is not a price per million tokens*",
        ),
        (
            ["fake-model: input=-1 cached_input=0.5 output=10"],
            "*input='-1' for fake-model is not a price per million tokens from 0*",
        ),
        (
            ["fake-model: input=2 cached_input=0.5 output=10 extra=1"],
            "*'extra=1' is not a price of input, cached_input, output*",
        ),
        (
            ["other-model: input=2 cached_input=0.5 output=10"],
            "*advreview_prices has no line for fake-model, the model of the reviewer*add one*",
        ),
        (
            [PRICES, PRICES],
            "*advreview_prices prices fake-model on two lines; keep one line per model*",
        ),
    ],
    ids=["missing-key", "not-a-number", "negative", "unknown-key", "model-missing", "twice"],
)
def test_a_bad_price_table_is_a_usage_error_naming_the_entry(
    scripted_repo: ReviewRepo, lines: list[str], expected: str
) -> None:
    _ini(scripted_repo, "advreview_prices =", *(f"    {line}" for line in lines))
    scripted_repo.plan("a.md", PLAN)
    result = scripted_repo.run(NO_CODE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([expected])
    assert "Traceback" not in result.stderr.str()
    assert scripted_repo.server.response_requests == []


def test_a_money_budget_without_prices_is_a_usage_error(scripted_repo: ReviewRepo) -> None:
    scripted_repo.plan("a.md", PLAN)
    result = scripted_repo.run(NO_CODE, "--advreview-budget-money=5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--advreview-budget-money*advreview_prices is not set*"])


def _ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.mark.real_codex
def test_a_pull_request_budget_spent_by_the_first_run_stops_the_second(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The base (main) sets the budget: 1,000,000 tokens over every run of the pull request.
    _ini(
        review_repo,
        "advreview_budget_tokens = 1000000",
        "advreview_budget_scope = pull-request",
    )
    review_repo.commit("the gate's budget")
    git(review_repo.path, "checkout", "-q", "-b", "feature")
    review_repo.plan("a.md", PLAN)
    _approved(review_repo, "a.md")
    review_repo.commit("plan a")
    _ci(monkeypatch)
    args = (NO_CODE, "--advreview-base=main", "--advreview-github=off", "--advreview-jobs=1")
    first = review_repo.run(*args)
    first.assert_outcomes(passed=1)  # 900,000 of 1,000,000 tokens spent
    assert len(review_repo.server.response_requests) == 1

    # The next push adds two plans and raises the budget in the branch's own ini, which
    # does not count under a gate: the first run's spend is kept with the stored state.
    _ini(
        review_repo,
        "advreview_budget_tokens = 100000000",
        "advreview_budget_scope = pull-request",
    )
    for name in ("b.md", "c.md"):
        review_repo.plan(name, PLAN)
        _approved(review_repo, name)
    review_repo.commit("plans b and c")
    second = review_repo.run(*args, "-p", "no:randomly")
    # a.md is unchanged (cached, no tokens); b.md starts at 900,000 of 1,000,000 and
    # spends 900,000 more; c.md then finds the budget spent and is never sent.
    second.assert_outcomes(passed=2, errors=1)
    second.stdout.fnmatch_lines(
        [
            "*c.md::adversarial-review: budget exhausted*",
            "*the pull request's reviews (this run and the earlier runs stored) spent 1800000 "
            "tokens, which reaches the budget advreview_budget_tokens = 1000000*",
        ]
    )
    text = second.stdout.str()
    assert "comments `/advreview budget +TOKENS: reason` on the pull request" in text
    assert "base branch's pytest configuration" in text
    assert "--advreview-budget-tokens" in text
    assert len(review_repo.server.response_requests) == 2  # c.md was never sent

    # A maintainer raises the budget with a command (the Action vets it and passes it).
    commands = review_repo.path.parent / f"{review_repo.path.name}-commands.json"
    command = {
        "verb": "budget",
        "tokens": 1_000_000,
        "reason": "the last plan is worth it",
        "login": "maintainer",
        "permission": "write",
    }
    commands.write_text(json.dumps({"version": 1, "commands": [command]}))
    third = review_repo.run(*args, f"--advreview-commands={commands}", "-p", "no:randomly")
    third.assert_outcomes(passed=3)  # c.md: 1,800,000 of 1,000,000 + 1,000,000
    assert len(review_repo.server.response_requests) == 3


def _state_files(repo: ReviewRepo) -> list[Path]:
    return sorted((repo.path / ".pytest_cache" / "d" / "advreview" / "state").glob("*.json"))


@pytest.mark.real_codex
@pytest.mark.parametrize(
    ("option", "size"),
    [("--advreview-max-change-files=2", "3 files"), ("--advreview-max-change-lines=8", "9 ")],
    ids=["files", "lines"],
)
def test_an_oversized_change_fails_the_code_item_without_a_review(
    review_repo: ReviewRepo, option: str, size: str
) -> None:
    for name in ("one", "two", "three"):
        review_repo.write(f"src/{name}.py", "a = 1\nb = 2\nc = 3\n")  # 9 lines in all
    review_repo.answer("Review the code changes", {"message": approved_review()})
    # Outside the repository: the report file must not become part of the change.
    out = review_repo.path.parent / f"{review_repo.path.name}-out.json"
    result = review_repo.run("--advreview-diff=uncommitted", option, f"--advreview-json={out}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"Adversarial review — code-review — the change (untracked files) has {size}*more "
            "than advreview_max_change_*: too large to review, so it was not reviewed and this "
            "item fails. Split the change*",
            "code-change::code-review: too large (failed)*",
            "    the change is above the repository's size limit; it was not reviewed",
        ]
    )
    assert review_repo.server.response_requests == []  # nothing was sent to the model
    (item,) = json.loads(out.read_text())["items"]
    assert item["record"]["status"] == "too large"
    assert item["record"]["outcome"] == "failed"

    # At the limit the change is reviewed as usual.
    at_limit = option.replace("=2", "=3").replace("=8", "=9")
    review_repo.run("--advreview-diff=uncommitted", at_limit).assert_outcomes(passed=1)
    assert len(review_repo.server.response_requests) == 1


@pytest.mark.real_codex
def test_a_retried_attempt_counts_in_the_tokens_and_the_money(review_repo: ReviewRepo) -> None:
    _ini(review_repo, "advreview_prices =", f"    {PRICES}")
    review_repo.plan("a.md", PLAN)
    # The first answer has no verdict line (format drift): the runner retries it once, and
    # the model was paid for both.
    steps = [
        {"message": "I read the plan and it looks fine to me.", "usage": USAGE},
        {"message": approved_review(), "usage": USAGE},
    ]
    # One counter over every thread: the retry is a new thread.
    rules = [{"match": "a.md", "threads": "all", "steps": steps}]
    review_repo.server.set_script({"rules": rules, "default": {"http_status": 404}})
    result = review_repo.run(NO_CODE, "--advreview-json=out.json")
    result.assert_outcomes(passed=1)
    assert len(review_repo.server.response_requests) == 2
    result.stdout.fnmatch_lines(["*a.md::adversarial-review: approved*1800000 tokens ($4.6000)*"])
    (item,) = json.loads((review_repo.path / "out.json").read_text())["items"]
    assert item["record"]["tokens"]["input_tokens"] == 1_600_000
    assert item["record"]["cost"] == pytest.approx(4.6)


@pytest.mark.real_codex
def test_a_money_budget_stops_starting_reviews_once_spent(review_repo: ReviewRepo) -> None:
    _ini(review_repo, "advreview_prices =", f"    {PRICES}", "advreview_budget_money = 3")
    for name in ("a.md", "b.md", "c.md"):
        review_repo.plan(name, PLAN)
        _approved(review_repo, name)
    result = review_repo.run(NO_CODE, "--advreview-jobs=1", "-p", "no:randomly")
    # a.md spends $2.30 (under $3), b.md starts and spends $2.30 more, c.md never starts.
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*c.md::adversarial-review: budget exhausted*",
            "*this run's reviews spent $4.6000, which reaches the budget "
            "advreview_budget_money = 3, before this review started*",
        ]
    )
    assert len(review_repo.server.response_requests) == 2


def test_under_a_gate_an_invalid_budget_in_the_base_is_a_usage_error(
    scripted_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ini(scripted_repo, "advreview_budget_tokens = plenty")
    scripted_repo.commit("the base's budget")
    git(scripted_repo.path, "checkout", "-q", "-b", "feature")
    # The branch's own value is valid, and does not count under a gate.
    _ini(scripted_repo, "advreview_budget_tokens = 5")
    scripted_repo.plan("a.md", PLAN)
    scripted_repo.commit("plan a")
    _ci(monkeypatch)
    result = scripted_repo.run(NO_CODE, "--advreview-base=main", "--advreview-github=off")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*ini advreview_budget_tokens in pytest.ini at main (*) is not valid; expected a "
            "whole number of tokens*"
        ]
    )
    assert scripted_repo.server.response_requests == []


def test_under_a_gate_the_change_limit_is_the_bases_and_the_workflow_may_raise_it(
    scripted_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ini(scripted_repo, "advreview_max_change_lines = 4")
    scripted_repo.commit("the base's limit")
    git(scripted_repo.path, "checkout", "-q", "-b", "feature")
    # The branch lifts the limit in its own ini: under a gate that does not count.
    _ini(scripted_repo, "advreview_max_change_lines = off")
    scripted_repo.write("src/big.py", "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\n")
    scripted_repo.commit("a change of 7 lines: 5 added, the ini line replaced")
    scripted_repo.answer("Review the code changes", {"message": approved_review()})
    _ci(monkeypatch)
    args = ("--advreview-base=main", "--advreview-github=off", "--advreview-diff=branch")
    result = scripted_repo.run(*args)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the change (branch changes vs main) has 7 changed lines, more than "
            "advreview_max_change_lines = 4: too large to review*"
        ]
    )
    assert scripted_repo.server.response_requests == []
    # The workflow's own option is the operator's: it stands.
    scripted_repo.run(*args, "--advreview-max-change-lines=100").assert_outcomes(passed=1)
    assert len(scripted_repo.server.response_requests) == 1


@pytest.mark.parametrize(
    ("line", "tokens"),
    [("/advreview budget +500000: the last plan", 500_000), ("/advreview Budget +7 tokens: x", 7)],
)
def test_the_budget_command_grants_tokens(line: str, tokens: int) -> None:
    (parsed,) = parse(line)
    assert parsed.command is not None
    assert (parsed.command["verb"], parsed.command["tokens"]) == ("budget", tokens)


def test_a_budget_command_of_nothing_is_refused() -> None:
    (parsed,) = parse("/advreview budget +0: none")
    assert parsed.command is None
    assert parsed.why == "grants no tokens; write budget +1 or more"
