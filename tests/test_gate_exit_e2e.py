"""Under CI the run's exit status follows the plugin's records, not pytest's counts.

Each route to a false exit 0 is a committed file of the reviewed repository (a conftest,
an ini line) that, on the plugin before the gate check, turned a critical REVISE into a
run that exits 0. Every test runs with ``CI=true`` and the in-process scripted reviewer
(the gate follows the plugin's records, whatever the backend); the reviewer answers REVISE
with a critical finding.
"""

from __future__ import annotations

import pytest

from conftest import ReviewRepo, git
from pytest_advreview.constants import EXIT_REVIEW_ERRORS
from pytest_advreview.shard import share_of
from pytest_advreview.testing import FindingSpec, approved_review, revise_review

CRITICAL = FindingSpec("critical", "Backdoor in the login handler", section="Step 1")
MEDIUM = FindingSpec("medium", "Pagination order is unspecified", section="Steps")
NODE = "docs/plans/bad.md::adversarial-review"
GATE = "pytest-advreview: GATE FAILED (CI=true: the exit status follows the plugin's records): "
ZERO_RAN = "0 review items ran, but --adversarial-review collected 1: the gate did not run"
#: A test that passes, so that a run whose reviews vanished still "passes" (exit 0, not 5).
PASSING_TEST = "def test_ok():\n    assert True\n"


def _branch(scripted_repo: ReviewRepo) -> None:
    """A feature branch: under CI the plans the branch changed are the ones reviewed."""
    git(scripted_repo.path, "checkout", "-q", "-b", "feature")


def _revise_critical(scripted_repo: ReviewRepo, conftest: str | None = None) -> None:
    _branch(scripted_repo)
    scripted_repo.plan("bad.md")
    scripted_repo.write("test_ok.py", PASSING_TEST)
    if conftest is not None:
        scripted_repo.write("conftest.py", conftest)
    scripted_repo.commit("plan, test and conftest")
    scripted_repo.answer("bad.md", {"message": revise_review(CRITICAL)})


@pytest.fixture
def ci(scripted_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    """``CI=true`` (after ``scripted_repo``, which clears the CI variables)."""
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def _gate_lines(result: pytest.RunResult, headline: str, *lines: str) -> None:
    """The gate's section: its headline, then one line per problem."""
    result.stdout.fnmatch_lines(["*= adversarial review gate =*", GATE + headline, *lines])


# -- the routes -------------------------------------------------------------------------------

SKIP_CONFTEST = """\
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("adversarial_review"):
            item.add_marker(pytest.mark.skip(reason="reviews are slow"))
"""


@pytest.mark.usefixtures("ci")
def test_a_conftest_that_skips_the_review_fails_the_run(scripted_repo: ReviewRepo) -> None:
    _revise_critical(scripted_repo, SKIP_CONFTEST)
    result = scripted_repo.run("--advreview-diff=none")
    result.assert_outcomes(passed=1, skipped=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _gate_lines(
        result,
        ZERO_RAN,
        f"pytest-advreview: {NODE}: expected the review (setup) to run; pytest logged "
        "skipped (Skipped: reviews are slow) before it ran: a skip or skipif mark*from a "
        "conftest or plugin kept the review from running; remove it from review items",
    )


XFAIL_CONFTEST = """\
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("adversarial_review"):
            item.add_marker(pytest.mark.xfail(reason="known"))
"""


@pytest.mark.usefixtures("ci")
def test_a_conftest_that_xfails_the_review_fails_the_run(scripted_repo: ReviewRepo) -> None:
    _revise_critical(scripted_repo, XFAIL_CONFTEST)
    result = scripted_repo.run("--advreview-diff=none")
    result.assert_outcomes(passed=1, xfailed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _gate_lines(
        result,
        "*",
        f"pytest-advreview: {NODE}: expected the verdict (call) failed; pytest logged "
        "xfailed (known): an xfail mark (or pytest.xfail) from a conftest or plugin turned "
        "the failure into an xfail; remove it from review items",
    )


DESELECT_CONFTEST = """\
def pytest_collection_modifyitems(config, items):
    reviews = [i for i in items if i.get_closest_marker("adversarial_review")]
    config.hook.pytest_deselected(items=reviews)
    items[:] = [i for i in items if i not in reviews]
"""
DROP_CONFTEST = """\
import pytest

@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    items[:] = [i for i in items if not i.get_closest_marker("adversarial_review")]
"""


@pytest.mark.usefixtures("ci")
def test_a_conftest_that_deselects_the_review_fails_the_run(scripted_repo: ReviewRepo) -> None:
    _revise_critical(scripted_repo, DESELECT_CONFTEST)
    result = scripted_repo.run("--advreview-diff=none")
    result.assert_outcomes(passed=1, deselected=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _gate_lines(
        result,
        ZERO_RAN,
        f"pytest-advreview: {NODE}: expected the review to run (it was collected); pytest "
        "logged deselected: under CI every review item runs: drop the -m/-k/--deselect*use "
        "--advreview-shard=K/N",
    )


@pytest.mark.usefixtures("ci")
def test_a_conftest_that_drops_the_review_fails_the_run(scripted_repo: ReviewRepo) -> None:
    _revise_critical(scripted_repo, DROP_CONFTEST)
    result = scripted_repo.run("--advreview-diff=none")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _gate_lines(
        result,
        ZERO_RAN,
        f"pytest-advreview: {NODE}: expected the review to run; pytest logged no report: a "
        "conftest or plugin removed it from the run (pytest_collection_modifyitems*",
    )


MAKEREPORT_CONFTEST = """\
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if item.get_closest_marker("adversarial_review"):
        report.outcome = "passed"
        report.longrepr = None
"""
LOGREPORT_CONFTEST = """\
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report):
    if report.nodeid.endswith("::adversarial-review"):
        report.outcome = "passed"
        report.longrepr = None
"""
REPLACED_REPORT_CONFTEST = """\
import pytest

@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if item.get_closest_marker("adversarial_review"):
        return pytest.TestReport(report.nodeid, report.location, report.keywords,
                                 "passed", None, report.when)
    return report
"""


@pytest.mark.usefixtures("ci")
@pytest.mark.parametrize(
    ("where", "conftest"),
    [("conftest.py", MAKEREPORT_CONFTEST), ("docs/plans/conftest.py", LOGREPORT_CONFTEST)],
    ids=["makereport", "logreport"],
)
def test_a_conftest_that_rewrites_the_report_to_passed_fails_the_run(
    scripted_repo: ReviewRepo, where: str, conftest: str
) -> None:
    """A makereport hookwrapper anywhere; a tryfirst logreport registered after pytest's
    session (a conftest next to the plans) edits the report before pytest counts it."""
    _revise_critical(scripted_repo)
    scripted_repo.write(where, conftest)
    scripted_repo.commit("the conftest")
    result = scripted_repo.run("--advreview-diff=none")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _gate_lines(
        result,
        "*",
        f"pytest-advreview: {NODE}: expected the verdict (call) failed; pytest logged "
        "passed: a conftest or plugin changed this review item's report*",
    )
    # The plugin's own summary said so all along.
    result.stdout.fnmatch_lines(["*docs/plans/bad.md::adversarial-review*revise*"])


def test_with_the_real_codex_a_report_rewritten_to_passed_fails_the_run(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The route above with the real Codex CLI reviewing: the REVISE (critical) it
    returns is the verdict a conftest rewrites to passed, and the run still fails."""
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    _revise_critical(review_repo, MAKEREPORT_CONFTEST)
    result = review_repo.run("--advreview-diff=none")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _gate_lines(
        result,
        "*",
        f"pytest-advreview: {NODE}: expected the verdict (call) failed; pytest logged "
        "passed: a conftest or plugin changed this review item's report*",
    )
    assert len(review_repo.server.response_requests) == 1


@pytest.mark.usefixtures("ci")
def test_a_conftest_that_replaces_the_report_fails_the_run(scripted_repo: ReviewRepo) -> None:
    """A root conftest's wrapper is inside the plugin's (registered before it): the new
    report gets the plugin's record, and the record says failed."""
    _revise_critical(scripted_repo, REPLACED_REPORT_CONFTEST)
    result = scripted_repo.run("--advreview-diff=none")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _gate_lines(
        result,
        "*",
        f"pytest-advreview: {NODE}: expected the verdict (call) failed; pytest logged "
        "passed: a conftest or plugin changed this review item's report*",
    )


@pytest.mark.usefixtures("ci")
def test_an_outer_wrapper_that_replaces_the_report_fails_the_run(
    scripted_repo: ReviewRepo,
) -> None:
    """A conftest next to the plan is registered during collection, after the plugin: its
    wrapper is outside the plugin's, and the report it makes carries no record."""
    _revise_critical(scripted_repo)
    scripted_repo.write("docs/plans/conftest.py", REPLACED_REPORT_CONFTEST)
    scripted_repo.commit("a conftest next to the plans")
    result = scripted_repo.run("--advreview-diff=none")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _gate_lines(
        result,
        "*",
        f"pytest-advreview: {NODE}: expected the review (setup) with the plugin's record; "
        "pytest logged a passed setup report without it: a conftest or plugin replaced*",
    )


@pytest.mark.usefixtures("ci")
def test_addopts_that_deselects_the_reviews_fails_the_run(scripted_repo: ReviewRepo) -> None:
    scripted_repo.pytester.makeini('[pytest]\naddopts = -m "not adversarial_review"\n')
    _revise_critical(scripted_repo)
    result = scripted_repo.run("--advreview-diff=none")
    result.assert_outcomes(passed=1, deselected=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _gate_lines(
        result,
        ZERO_RAN,
        f"pytest-advreview: {NODE}: expected the review to run (it was collected); pytest "
        'logged deselected by -m: *addopts = -m "not adversarial_review" in the ini file*',
    )


@pytest.mark.usefixtures("ci")
def test_addopts_collect_only_fails_the_run(scripted_repo: ReviewRepo) -> None:
    """Listing the review items is not running them."""
    scripted_repo.pytester.makeini("[pytest]\naddopts = --collect-only\n")
    _revise_critical(scripted_repo)
    result = scripted_repo.run("--advreview-diff=none")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _gate_lines(
        result,
        ZERO_RAN,
        f"pytest-advreview: {NODE}: expected the review to run; pytest logged no report: it "
        "never ran: --collect-only runs nothing; drop it (from addopts too)*",
    )
    assert scripted_repo.server.response_requests == []


@pytest.mark.usefixtures("ci")
def test_addopts_setup_only_fails_the_run(scripted_repo: ReviewRepo) -> None:
    """The review runs in setup, but nothing judges its verdict."""
    scripted_repo.pytester.makeini("[pytest]\naddopts = --setup-only\n")
    _revise_critical(scripted_repo)
    result = scripted_repo.run("--advreview-diff=none")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _gate_lines(
        result,
        "1 of 1 review items did not count as the plugin recorded them",
        f"pytest-advreview: {NODE}: expected the verdict (call) to run; pytest logged no call "
        "report: pytest --setup-only/--setup-plan, or a conftest or plugin*",
    )


EXIT_CONFTEST = """\
import pytest

def pytest_runtest_setup(item):
    if item.get_closest_marker("adversarial_review"):
        pytest.exit("nothing to see here", returncode=0)
"""


@pytest.mark.usefixtures("ci")
def test_zero_review_items_ran_is_an_error(scripted_repo: ReviewRepo) -> None:
    """``pytest.exit(returncode=0)`` before the first review: collected, never run."""
    _revise_critical(scripted_repo, EXIT_CONFTEST)
    result = scripted_repo.run("--advreview-diff=none")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _gate_lines(
        result,
        ZERO_RAN,
        f"pytest-advreview: {NODE}: expected the review to run; pytest logged no report*",
    )


SESSIONFINISH_CONFTEST = """\
import pytest

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    session.exitstatus = 0
"""
SESSIONFINISH_WRAPPER_CONFTEST = """\
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session):
    yield
    session.exitstatus = 0
"""
UNCONFIGURE_CONFTEST = """\
SESSIONS = []

def pytest_sessionstart(session):
    SESSIONS.append(session)

def pytest_unconfigure(config):
    for session in SESSIONS:
        session.exitstatus = 0
"""


@pytest.mark.usefixtures("ci")
@pytest.mark.parametrize(
    "conftest",
    [SESSIONFINISH_CONFTEST, SESSIONFINISH_WRAPPER_CONFTEST, UNCONFIGURE_CONFTEST],
    ids=["sessionfinish", "sessionfinish-wrapper", "unconfigure"],
)
def test_a_conftest_cannot_lower_the_exit_status_afterwards(
    scripted_repo: ReviewRepo, conftest: str
) -> None:
    """The review failed and pytest counted it; a conftest sets ``exitstatus = 0`` late.

    (A plain ``trylast`` one was already overruled by the report writers' own session
    finish; a wrapper around session finish, or an unconfigure, was not.)
    """
    _revise_critical(scripted_repo, conftest)
    result = scripted_repo.run("--advreview-diff=none")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.usefixtures("ci")
def test_a_rewritten_report_fails_the_run_under_xdist(scripted_repo: ReviewRepo) -> None:
    """The worker's record travels to the controller with the report."""
    _revise_critical(scripted_repo, MAKEREPORT_CONFTEST)
    result = scripted_repo.run("--advreview-diff=none", "-n", "2")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _gate_lines(
        result,
        "*",
        f"pytest-advreview: {NODE}: expected the verdict (call) failed; pytest logged "
        "passed: a conftest or plugin changed this review item's report*",
    )


@pytest.mark.usefixtures("ci")
def test_a_rewritten_report_fails_the_run_with_jobs(scripted_repo: ReviewRepo) -> None:
    """Reviews started ahead in threads still record in the item's own phases."""
    _revise_critical(scripted_repo, MAKEREPORT_CONFTEST)
    scripted_repo.plan("good.md")
    scripted_repo.commit("a second plan")
    scripted_repo.answer("good.md", {"message": approved_review()})
    result = scripted_repo.run("--advreview-diff=none", "--advreview-jobs=2")
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _gate_lines(
        result,
        "1 of 2 review items did not count as the plugin recorded them",
        f"pytest-advreview: {NODE}: expected the verdict (call) failed; pytest logged "
        "passed: a conftest or plugin changed this review item's report*",
    )


@pytest.mark.usefixtures("ci")
def test_a_deselected_review_fails_the_run_under_xdist(scripted_repo: ReviewRepo) -> None:
    """Workers tell the controller what they collected and what was deselected."""
    _revise_critical(scripted_repo, DESELECT_CONFTEST)
    result = scripted_repo.run("--advreview-diff=none", "-n", "2")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _gate_lines(
        result,
        ZERO_RAN,
        f"pytest-advreview: {NODE}: expected the review to run (it was collected); pytest "
        "logged deselected*",
    )


def test_strict_exit_outside_ci_also_follows_the_records(scripted_repo: ReviewRepo) -> None:
    """No CI variable: ``--advreview-strict-exit`` alone; a skipped review "could not run"."""
    _revise_critical(scripted_repo, SKIP_CONFTEST)
    result = scripted_repo.run("--advreview-diff=none", "--advreview-strict-exit")
    assert result.ret == EXIT_REVIEW_ERRORS
    result.stdout.fnmatch_lines(
        [
            "pytest-advreview: GATE FAILED (--advreview-strict-exit: *",
            f"pytest-advreview: {NODE}: expected the review (setup) to run; pytest logged skipped*",
        ]
    )


# -- the legitimate paths exit as before -----------------------------------------------------


def test_outside_ci_without_strict_exit_nothing_changes(scripted_repo: ReviewRepo) -> None:
    """A laptop run that skips or picks reviews is the user's business."""
    _revise_critical(scripted_repo, SKIP_CONFTEST)
    result = scripted_repo.run("--advreview-diff=none")
    result.assert_outcomes(passed=1, skipped=1)
    assert result.ret == pytest.ExitCode.OK
    assert "adversarial review gate" not in result.stdout.str()


@pytest.mark.usefixtures("ci")
def test_a_passing_and_a_warned_review_exit_zero(scripted_repo: ReviewRepo) -> None:
    _branch(scripted_repo)
    scripted_repo.plan("good.md")
    scripted_repo.plan("meh.md")
    scripted_repo.write("test_ok.py", PASSING_TEST)
    scripted_repo.commit("plans")
    scripted_repo.answer("good.md", {"message": approved_review()})
    scripted_repo.answer("meh.md", {"message": revise_review(MEDIUM)})
    result = scripted_repo.run(
        "--advreview-diff=none",
        "--advreview-fail-on=high",
        "-W",
        "always::pytest_advreview.outcome.ReviewWarning",
    )
    result.assert_outcomes(passed=3, warnings=1)
    assert result.ret == pytest.ExitCode.OK
    assert "adversarial review gate" not in result.stdout.str()


@pytest.mark.usefixtures("ci")
def test_a_failed_review_exits_one_without_a_gate_problem(scripted_repo: ReviewRepo) -> None:
    _revise_critical(scripted_repo)
    result = scripted_repo.run("--advreview-diff=none")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "adversarial review gate" not in result.stdout.str()


@pytest.mark.usefixtures("ci")
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_the_shards_own_deselection_is_not_a_problem(
    scripted_repo: ReviewRepo, workers: list[str]
) -> None:
    names = ["alpha.md", "bravo.md", "charlie.md", "delta.md"]
    shares = {name: share_of(f"docs/plans/{name}", 2) for name in names}
    assert set(shares.values()) == {1, 2}, shares  # both shares hold a plan
    _branch(scripted_repo)
    for name in names:
        scripted_repo.plan(name)
        scripted_repo.answer(name, {"message": approved_review()})
    scripted_repo.commit("plans")
    result = scripted_repo.run("--advreview-diff=none", "--advreview-shard=1/2", *workers)
    mine = sum(1 for share in shares.values() if share == 1)
    # An xdist controller does not count deselections (the workers deselect).
    result.assert_outcomes(passed=mine, deselected=0 if workers else len(names) - mine)
    assert result.ret == pytest.ExitCode.OK
    assert "adversarial review gate" not in result.stdout.str()


@pytest.mark.usefixtures("ci")
def test_the_shard_does_not_excuse_another_deselection(scripted_repo: ReviewRepo) -> None:
    """-k on top of a shard: the item of this share that -k deselected is a problem."""
    names = ["alpha.md", "bravo.md", "charlie.md", "delta.md"]
    mine = [n for n in names if share_of(f"docs/plans/{n}", 2) == 1]
    _branch(scripted_repo)
    for name in names:
        scripted_repo.plan(name)
        scripted_repo.answer(name, {"message": approved_review()})
    scripted_repo.commit("plans")
    result = scripted_repo.run(
        "--advreview-diff=none", "--advreview-shard=1/2", "-k", f"not {mine[0][:-3]}"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            f"pytest-advreview: docs/plans/{mine[0]}::adversarial-review: expected the review "
            "to run (it was collected); pytest logged deselected*"
        ]
    )
    # Only this share's item: the other share's are the shard's own.
    problems = [ln for ln in result.stdout.lines if ln.startswith("pytest-advreview: docs/")]
    assert len(problems) == 1, problems
