"""Under a gate the plugin's settings are the base commit's, not the branch's.

Before: a plain ``CI=true`` run read the checkout's ``pytest.ini``, so a pull request
narrowed its own gate: ``addopts = -o advreview_exclude=*`` dropped every changed file,
``--advreview-shard=2/2`` or ``--advreview-diff=none`` in ``addopts`` deselected the code
review, and ``--advreview-approvals=auto_review`` in ``addopts`` turned escalation
approvals on.  Each run passed (or reviewed on the branch's terms).  Now every
``advreview`` setting the checkout's configuration gives must be what the base commit's
configuration holds; shards and the change under review come from the command line or
the workflow only.  Through the real Codex CLI: the same branch without the line fails on
the reviewer's finding, so the refusal is what stands between it and a pass.
"""

from __future__ import annotations

import pytest

from conftest import ReviewRepo, git, ran_prompts
from pytest_advreview.testing import FindingSpec, revise_review

PROMPT = "Review the code changes"
HIGH = FindingSpec("high", "The handler trusts its input", file="src/app.py", lines=(1, 2))


@pytest.fixture
def pull_request(review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch) -> ReviewRepo:
    """``main`` with a ``pytest.ini`` and no plugin settings; ``feature`` adds code the
    reviewer finds a high problem in; the run is a plain ``CI=true`` run."""
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    review_repo.write("pytest.ini", "[pytest]\n")
    review_repo.commit("pytest configuration")
    git(review_repo.path, "checkout", "-q", "-b", "feature")
    review_repo.write("src/app.py", "def handle(data):\n    return eval(data)\n")
    review_repo.commit("the feature")
    review_repo.answer(PROMPT, {"message": revise_review(HIGH)})
    return review_repo


def branch_ini(repo: ReviewRepo, text: str) -> None:
    repo.write("pytest.ini", text)
    repo.commit("the branch configures its own gate")


def test_without_a_branch_setting_the_finding_fails_the_gate(pull_request: ReviewRepo) -> None:
    result = pull_request.run("--advreview-github=off")
    result.assert_outcomes(failed=1)
    assert "The handler trusts its input" in result.stdout.str()


WORKFLOW = "(shards and the change under review come from the command line or the workflow only)"
NOTICE = "advreview: not used under a gate (the settings come from the command line, the "


@pytest.mark.real_codex
@pytest.mark.parametrize(
    ("addopts", "named"),
    [
        ("-o advreview_exclude=*", "addopts -o advreview_exclude=* (not in the base's addopts)"),
        ("--advreview-shard=2/2", f"addopts --advreview-shard=2/2 {WORKFLOW}"),
        ("--advreview-diff none", f"addopts --advreview-diff=none {WORKFLOW}"),
        (
            "--advreview-approvals=auto_review",
            "addopts --advreview-approvals=auto_review (not in the base's addopts)",
        ),
    ],
    ids=["exclude", "shard", "diff", "approvals"],
)
def test_the_branchs_addopts_cannot_narrow_the_gate(
    pull_request: ReviewRepo, addopts: str, named: str
) -> None:
    branch_ini(pull_request, f"[pytest]\naddopts = {addopts}\n")
    result = pull_request.run("--advreview-github=off")
    # Reviewed on the base's settings: the whole change, every shard's item, approvals
    # never; the reviewer's finding fails the gate as without the line.
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "The handler trusts its input" in out
    (line,) = [ln for ln in out.splitlines() if ln.startswith(NOTICE)]
    assert "environment and pytest.ini at main (" in line
    assert line.endswith(f"the checkout's {named}")
    assert "approvals=never (gate default)" in out
    (prompt,) = ran_prompts(pull_request.server, PROMPT)
    assert "src/app.py" in prompt


@pytest.mark.real_codex
def test_an_ini_key_the_base_lacks_and_one_it_has_differently_are_not_used(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    review_repo.write("pytest.ini", "[pytest]\nadvreview_fail_on = high\n")
    review_repo.commit("the base's threshold")
    git(review_repo.path, "checkout", "-q", "-b", "feature")
    review_repo.write("src/app.py", "def handle(data):\n    return eval(data)\n")
    review_repo.write(
        "pytest.ini",
        "[pytest]\nadvreview_fail_on = critical\nadvreview_exclude = src/**\n"
        "advreview_base = feature\n",
    )
    review_repo.commit("the branch loosens its gate")
    review_repo.answer(PROMPT, {"message": revise_review(HIGH)})
    result = review_repo.run("--advreview-github=off")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    notices = [ln for ln in out.splitlines() if ln.startswith(NOTICE)]
    assert len(notices) == 3, notices
    assert notices[0].endswith("the checkout's ini advreview_base = feature (the base: not set)")
    assert notices[1].endswith("the checkout's ini advreview_exclude = src/** (the base: not set)")
    assert notices[2].endswith("the checkout's ini advreview_fail_on = critical (the base: = high)")
    # The branch's own advreview_base did not make the branch its own base.
    assert "branch main...HEAD" in out


@pytest.mark.real_codex
def test_the_bases_own_settings_and_the_command_line_still_count(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The base's keys and addopts stand, and the workflow's command line chooses shards
    and the change."""
    monkeypatch.setenv("CI", "true")
    review_repo.write("pytest.ini", "[pytest]\naddopts = -o advreview_fail_on=critical\n")
    review_repo.commit("the base's settings")
    git(review_repo.path, "checkout", "-q", "-b", "feature")
    review_repo.write("src/app.py", "def handle(data):\n    return eval(data)\n")
    review_repo.commit("the feature")
    review_repo.answer(PROMPT, {"message": revise_review(HIGH)})
    result = review_repo.run(
        "--advreview-github=off",
        "--advreview-shard=1/1",
        "-W",
        "default::pytest_advreview.outcome.ReviewWarning",
    )
    # The base's fail-on=critical is in force: the high finding passes with a warning.
    result.assert_outcomes(passed=1)
    assert not [ln for ln in result.stdout.lines if ln.startswith(NOTICE)]
