"""The gate under the plugins and options users run beside it.

**One verdict per target per run.** A rerun (pytest-rerunfailures from the command line,
``addopts`` or a ``flaky`` mark), a retry (pytest-retry), a repeat (pytest-repeat) or a
copy of a review item (pytest-flakefinder) replays the first review of its target in the
run: the reviewer, which would answer APPROVED the second time, is asked once, and the
failing first verdict stands.  Before, a rerun with the stored verdict bypassed
(``--advreview-fresh``, ``ADVREVIEW_FRESH=1``, ``-p no:cacheprovider``) turned a critical
REVISE into "1 passed, 1 rerun" and exit 0, and pytest-retry and pytest-flakefinder
crashed with INTERNALERROR.

**The gate knows what it must see.** Under a gate the targets the repository selects must
each be reviewed, whatever pytest collected: ``--lf`` (the branch commits ``addopts = --lf``
and a ``lastfailed`` naming an ordinary test), ``--sw``, ``-k``, a run stopped by ``-x`` or
``--maxfail``; ``--ff`` and ``--nf`` only reorder.

The plugins live in ``.venv-ecosystem`` (:func:`ecosystem_python`); the options of
pytest itself run in the development venv.  Behaviour tests use the in-process scripted
reviewer; one test per class goes through the real Codex CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ReviewRepo, git, ran_prompts
from pytest_advreview.constants import EXIT_REVIEW_ERRORS
from pytest_advreview.testing import FindingSpec, approved_review, revise_review

pytestmark = pytest.mark.ecosystem

CRITICAL = FindingSpec("critical", "Backdoor in the login handler", section="Step 1")
NODE = "docs/plans/bad.md::adversarial-review"
PLAN = "docs/plans/bad.md"
PASSING_TEST = "def test_ok():\n    assert True\n"
GATE = "pytest-advreview: GATE FAILED (*: the exit status follows the plugin's records): "


def _ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture
def ci(scripted_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    """``CI=true`` (after ``scripted_repo``, which clears the CI variables)."""
    _ci(monkeypatch)


def _revise_then_approve(repo: ReviewRepo, conftest: str | None = None) -> None:
    """A branch with a plan and a passing test; the reviewer says REVISE (critical) the
    first time and APPROVED to any later request: asking again would pass the plan."""
    git(repo.path, "checkout", "-q", "-b", "feature")
    repo.plan("bad.md")
    repo.write("test_ok.py", PASSING_TEST)
    if conftest is not None:
        repo.write("conftest.py", conftest)
    repo.commit("plan and test")
    # One counter for every thread: each new review (a new Codex thread) gets the next step.
    repo.rules.append(
        {
            "match": "bad.md",
            "in": "last_user",
            "threads": "all",
            "steps": [{"message": revise_review(CRITICAL)}, {"message": approved_review()}],
        }
    )
    repo.server.set_script({"rules": repo.rules, "default": {"http_status": 404}})


def _asked(repo: ReviewRepo) -> int:
    """How many times the reviewer was asked about the plan."""
    return sum(1 for request in repo.server.response_requests if "bad.md" in str(request.body))


def _no_internal_error(result: pytest.RunResult) -> None:
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output, output


# -- class 1: one verdict per target per run --------------------------------------------------

FLAKY_CONFTEST = """\
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.flaky(reruns=3))
"""


@pytest.mark.usefixtures("ci")
@pytest.mark.parametrize(
    ("ini", "conftest", "args", "env"),
    [
        (None, None, ["--reruns=3", "--advreview-fresh"], {}),
        ("[pytest]\naddopts = --reruns=3\n", None, [], {"ADVREVIEW_FRESH": "1"}),
        (None, FLAKY_CONFTEST, ["-p", "no:cacheprovider"], {}),
        (None, None, ["--reruns=2", "--advreview-fresh", "-n", "2"], {}),
    ],
    ids=["cli-fresh", "ini-env-fresh", "flaky-mark-no-cache", "xdist"],
)
def test_a_rerun_replays_the_first_verdict(
    scripted_repo: ReviewRepo,
    ecosystem_python: Path,
    monkeypatch: pytest.MonkeyPatch,
    ini: str | None,
    conftest: str | None,
    args: list[str],
    env: dict[str, str],
) -> None:
    """pytest-rerunfailures reruns the failed review; the rerun replays it (on an xdist
    worker too: the worker reruns, the controller's gate reads every report)."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if ini is not None:
        scripted_repo.pytester.makeini(ini)
    _revise_then_approve(scripted_repo, conftest)
    result = scripted_repo.run_ecosystem(
        ecosystem_python, "--advreview-diff=none", "--advreview-strict-exit", *args
    )
    _no_internal_error(result)
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 1, outcomes
    assert outcomes.get("rerun", 0) >= 1, outcomes
    assert "passed" in outcomes and outcomes["passed"] == 1, outcomes  # test_ok only
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert _asked(scripted_repo) == 1


@pytest.mark.usefixtures("ci")
@pytest.mark.parametrize(
    ("args", "failed"),
    [
        (["--retries=2"], 1),
        (["--flake-finder", "--flake-runs=3"], 3),
        (["--flake-finder", "--flake-runs=3", "--advreview-jobs=2"], 3),
        (["--count=3"], 1),
    ],
    ids=["retry", "flakefinder", "flakefinder-jobs", "repeat"],
)
def test_retry_repeat_and_copies_replay_the_first_verdict(
    scripted_repo: ReviewRepo, ecosystem_python: Path, args: list[str], failed: int
) -> None:
    """pytest-retry retries the call phase (it called ``_initrequest``, which a review item
    lacked: INTERNALERROR); pytest-flakefinder copies every item (it read
    ``item.function``: INTERNALERROR), also with the jobs pool starting reviews ahead;
    pytest-repeat parametrises test functions only.  Every pass fails as the first."""
    _revise_then_approve(scripted_repo)
    result = scripted_repo.run_ecosystem(
        ecosystem_python, "--advreview-diff=none", "--advreview-fresh", *args
    )
    _no_internal_error(result)
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == failed, outcomes
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert _asked(scripted_repo) == 1
    result.stdout.fnmatch_lines([f"FAILED {NODE}*"])


FIXTURE_TEST = """\
def test_the_plan(adversarial_review):
    adversarial_review.plan("docs/plans/bad.md").assert_approved()
"""


@pytest.mark.usefixtures("ci")
def test_a_rerun_of_a_test_that_asks_the_fixture_gets_the_same_verdict(
    scripted_repo: ReviewRepo, ecosystem_python: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ordinary test that asks ``adversarial_review`` is rerun: the same content by the
    same reviewer in the same run has the run's first verdict (the coordinator's)."""
    monkeypatch.setenv("ADVREVIEW_FRESH", "1")
    _revise_then_approve(scripted_repo)
    scripted_repo.write("test_fixture.py", FIXTURE_TEST)
    scripted_repo.commit("a test that asks for a review")
    # No --adversarial-review: the fixture works in any run.
    result = scripted_repo.pytester.run(
        str(ecosystem_python), "-m", "pytest", "--reruns=2", "test_fixture.py", timeout=300
    )
    _no_internal_error(result)
    outcomes = result.parseoutcomes()
    assert (outcomes.get("failed"), outcomes.get("rerun")) == (1, 2), outcomes
    assert _asked(scripted_repo) == 1


@pytest.mark.usefixtures("ci")
def test_a_timed_out_review_is_not_asked_again_on_a_rerun(
    scripted_repo: ReviewRepo, ecosystem_python: Path
) -> None:
    """pytest-timeout (signal method) ends the review in its setup, which records it as
    an error; the rerun replays that error instead of asking again: nothing approved it."""
    git(scripted_repo.path, "checkout", "-q", "-b", "feature")
    scripted_repo.plan("bad.md")
    scripted_repo.commit("plan")
    scripted_repo.answer("bad.md", {"hang": 50}, {"message": approved_review()})
    result = scripted_repo.run_ecosystem(
        ecosystem_python,
        "--advreview-diff=none",
        "--timeout=3",
        "--timeout-method=signal",
        "--reruns=1",
        "--advreview-strict-exit",
    )
    _no_internal_error(result)
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors") == 1, outcomes
    assert outcomes.get("rerun") == 1, outcomes
    assert result.ret != pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["*Adversarial review — docs/plans/bad.md — stopped: Timeout (>3.0s) from pytest-timeout."]
    )
    assert _asked(scripted_repo) == 1


def test_with_the_real_codex_a_rerun_does_not_re_roll_the_verdict(
    review_repo: ReviewRepo, ecosystem_python: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's route through the real Codex CLI: ``--reruns=3 --advreview-fresh``
    under CI.  On b1b99cb the rerun asked again, got APPROVED: "1 passed, 1 rerun", exit 0."""
    _ci(monkeypatch)
    _revise_then_approve(review_repo)
    result = review_repo.run_ecosystem(
        ecosystem_python,
        "--advreview-diff=none",
        "--advreview-strict-exit",
        "--reruns=3",
        "--advreview-fresh",
    )
    _no_internal_error(result)
    outcomes = result.parseoutcomes()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    assert outcomes.get("failed") == 1, outcomes
    assert outcomes.get("rerun") == 3, outcomes
    assert len(review_repo.server.response_requests) == 1


# -- class 2: the gate knows what it must see -------------------------------------------------


def _lastfailed(repo: ReviewRepo, *nodeids: str) -> None:
    """A committed ``.pytest_cache/v/cache/lastfailed`` naming ``nodeids`` (``git add -f``:
    the repository ignores the cache)."""
    repo.write(".pytest_cache/v/cache/lastfailed", json.dumps(dict.fromkeys(nodeids, True)))
    git(repo.path, "add", "-f", ".pytest_cache/v/cache/lastfailed")


def test_with_the_real_codex_addopts_lf_does_not_drop_the_review(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The branch commits ``addopts = --lf`` and a ``lastfailed`` that names its ordinary
    test and one plan's review: pytest's last-failed plugin skips the other plan's file,
    so no review item of it exists.  On b1b99cb the named plan was reviewed (APPROVED, by
    the real CLI) and ``CI=true --advreview-strict-exit`` exited 0; the critical plan was
    never reviewed."""
    _ci(monkeypatch)
    git(review_repo.path, "checkout", "-q", "-b", "feature")
    review_repo.plan("bad.md")
    review_repo.plan("good.md")
    review_repo.write("test_ok.py", PASSING_TEST)
    review_repo.write("pytest.ini", "[pytest]\naddopts = --lf\n")
    _lastfailed(review_repo, "test_ok.py::test_ok", "docs/plans/good.md::adversarial-review")
    review_repo.commit("plans, test, --lf and its cache")
    review_repo.answer("bad.md", {"message": revise_review(CRITICAL)})
    review_repo.answer("good.md", {"message": approved_review()})
    result = review_repo.run("--advreview-diff=none", "--advreview-strict-exit")
    assert result.ret == EXIT_REVIEW_ERRORS, result.stdout.str()
    result.assert_outcomes(passed=2, deselected=1)
    result.stdout.fnmatch_lines(
        [
            "*= adversarial review gate =*",
            GATE + "1 of 2 review items did not count as the plugin recorded them",
            f"pytest-advreview: {NODE}: expected the review to run (it was collected); pytest "
            "logged deselected by --lf (last failed: it did not fail last time): under CI "
            "every review item runs*",
        ]
    )
    # The real CLI reviewed the plan --lf kept, and never saw the one it dropped.
    assert len(review_repo.server.response_requests) == 1
    assert ran_prompts(review_repo.server, "bad.md") == []


def _plan_and_tests(repo: ReviewRepo, *tests: tuple[str, str]) -> None:
    git(repo.path, "checkout", "-q", "-b", "feature")
    repo.plan("bad.md")
    for path, text in tests:
        repo.write(path, text)
    repo.commit("plan and tests")
    repo.answer("bad.md", {"message": revise_review(CRITICAL)})


FAILING_TEST = "def test_fail():\n    assert False\n"


@pytest.mark.usefixtures("ci")
def test_stepwise_that_deselects_the_review_fails_the_run(scripted_repo: ReviewRepo) -> None:
    """``--sw`` deselects what comes before the test that failed last time: the first run
    approves the plan and stops at the failing test; the second skips the review of the
    changed plan, and its tests pass."""
    git(scripted_repo.path, "checkout", "-q", "-b", "feature")
    scripted_repo.plan("bad.md")
    scripted_repo.write("test_z.py", FAILING_TEST)
    scripted_repo.commit("plan and a failing test")
    scripted_repo.answer("bad.md", {"message": approved_review()})
    first = scripted_repo.run("--advreview-diff=none", "--sw")
    first.assert_outcomes(passed=1, failed=1)
    # The branch changes the plan (unreviewed now) and fixes the test.
    scripted_repo.plan("bad.md", "# Plan\n\n1. Do another thing.\n")
    scripted_repo.write("test_z.py", "def test_fail():\n    assert True\n")
    scripted_repo.commit("the plan changes, the test passes")
    result = scripted_repo.run("--advreview-diff=none", "--sw")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            f"pytest-advreview: {NODE}: expected the review to run (it was collected); pytest "
            "logged deselected by --sw (stepwise: it comes before the test that failed last "
            "time): under CI every review item runs*"
        ]
    )
    assert _asked(scripted_repo) == 1  # the first run's


@pytest.mark.usefixtures("ci")
def test_k_names_what_deselected_the_review(scripted_repo: ReviewRepo) -> None:
    _plan_and_tests(scripted_repo, ("test_ok.py", PASSING_TEST))
    result = scripted_repo.run("--advreview-diff=none", "-k", "test_ok")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"pytest-advreview: {NODE}: *pytest logged deselected by -k: *"])


@pytest.mark.usefixtures("ci")
@pytest.mark.parametrize("option", ["-x", "--maxfail=1"])
def test_a_run_stopped_early_fails_with_the_targets_it_never_reviewed(
    scripted_repo: ReviewRepo, option: str
) -> None:
    """An ordinary test fails first; the review after it never runs, and the gate says so
    (the status is pytest's 1 already: nothing approved the plan either way)."""
    _plan_and_tests(scripted_repo, ("a_first/test_fail.py", FAILING_TEST))
    result = scripted_repo.run("--advreview-diff=none", option)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            GATE + "0 review items ran, but --adversarial-review collected 1: the gate did not run",
            f"pytest-advreview: {NODE}: expected the review to run; pytest logged no report: "
            "it never ran: pytest stopped early*",
        ]
    )
    assert _asked(scripted_repo) == 0


@pytest.mark.usefixtures("ci")
@pytest.mark.parametrize("option", ["--ff", "--nf", "--lf"])
def test_options_that_only_reorder_keep_the_review(scripted_repo: ReviewRepo, option: str) -> None:
    """``--ff`` and ``--nf`` reorder; ``--lf`` without a cache runs everything."""
    _plan_and_tests(scripted_repo, ("test_ok.py", PASSING_TEST))
    result = scripted_repo.run("--advreview-diff=none", option)
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "adversarial review gate" not in result.stdout.str()


@pytest.mark.usefixtures("ci")
def test_lf_that_deselects_the_code_review_names_it(scripted_repo: ReviewRepo) -> None:
    """The code item is added after collection, and ``--lf`` deselects it."""
    git(scripted_repo.path, "checkout", "-q", "-b", "feature")
    scripted_repo.write("app.py", "X = 1\n")
    scripted_repo.write("test_ok.py", PASSING_TEST)
    _lastfailed(scripted_repo, "test_ok.py::test_ok")
    scripted_repo.commit("code, test and the cache")
    result = scripted_repo.run("--lf")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["pytest-advreview: *code-review: *pytest logged deselected by --lf (last failed*"]
    )


SWALLOW_CONFTEST = """\
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_make_collect_report(collector):
    if str(collector.path).endswith(".md") and isinstance(collector, pytest.File):
        return pytest.CollectReport(collector.nodeid, "passed", None, [])
"""


@pytest.mark.parametrize("gated", [True, False], ids=["ci", "laptop"])
def test_a_plugin_that_swallows_the_plans_collector_does_not_drop_the_review(
    scripted_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch, gated: bool
) -> None:
    """The selected plans come from the repository, not from the collectors pytest kept:
    a plan whose file collector yields nothing still gets its review item."""
    if gated:
        _ci(monkeypatch)
    _plan_and_tests(scripted_repo, ("test_ok.py", PASSING_TEST), ("conftest.py", SWALLOW_CONFTEST))
    result = scripted_repo.run("--advreview-diff=none")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert _asked(scripted_repo) == 1


def _bad_and_good_plans(repo: ReviewRepo) -> None:
    """``bad.md`` (REVISE, critical), ``good.md`` (APPROVED) and a passing test."""
    _plan_and_tests(repo, ("test_ok.py", PASSING_TEST))
    repo.plan("good.md")
    repo.commit("a second plan")
    repo.answer("good.md", {"message": approved_review()})


@pytest.mark.usefixtures("ci")
def test_plans_named_on_the_command_line_do_not_narrow_a_gate(scripted_repo: ReviewRepo) -> None:
    """Under a gate a named plan is reviewed besides the selection, never instead of it."""
    _bad_and_good_plans(scripted_repo)
    result = scripted_repo.run("--advreview-diff=none", "docs/plans/good.md")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert _asked(scripted_repo) == 1


def test_outside_a_gate_lf_and_named_plans_stay_the_users_choice(
    scripted_repo: ReviewRepo,
) -> None:
    """A laptop run without CI or strict exit: ``--lf`` and a named plan narrow the run."""
    _bad_and_good_plans(scripted_repo)
    named = scripted_repo.run("--advreview-diff=none", "docs/plans/good.md")
    named.assert_outcomes(passed=1)
    assert named.ret == pytest.ExitCode.OK
    _lastfailed(scripted_repo, "test_ok.py::test_ok")
    result = scripted_repo.run("--advreview-diff=none", "--lf")
    assert result.ret == pytest.ExitCode.OK
    assert "adversarial review gate" not in result.stdout.str()
