"""The gate check's decisions (``gate.py``), without a pytest run: which review items did
not count as the plugin recorded them, and which exit status that calls for."""

from __future__ import annotations

import pytest

from pytest_advreview import exitstatus as gate
from pytest_advreview.constants import EXIT_REVIEW_ERRORS
from pytest_advreview.exitstatus import FAILED, NOT_RUN, OTHER, PASSED, SHARD, Logged
from pytest_advreview.trust import run as trust_run

NODE = "docs/plans/x.md::adversarial-review"
OK, FAIL, SKIP = "passed", "failed", "skipped"


def _run(
    setup: tuple[str, str | None] | None = (OK, PASSED),
    call: tuple[str, str | None] | None = (OK, PASSED),
    teardown: tuple[str, str | None] | None = (OK, PASSED),
    *,
    xfail: bool = False,
) -> dict[str, Logged]:
    """Logged phases: (pytest's outcome, the plugin's record on the report)."""
    phases = {"setup": setup, "call": call, "teardown": teardown}
    return {
        when: Logged(outcome, xfail and when == "call", record)
        for when, value in phases.items()
        if value is not None
        for outcome, record in [value]
    }


def _check(logged: dict[str, Logged] | None, how: str | None = None) -> list[gate.Problem]:
    return gate.check({NODE: how}, {NODE: logged} if logged is not None else {})


def test_a_review_that_ran_as_recorded_is_no_problem() -> None:
    assert _check(_run()) == []
    assert _check(_run(call=(FAIL, FAILED))) == []  # a failed review, logged failed
    # A setup error: pytest runs no call.
    assert _check(_run(setup=(FAIL, FAILED), call=None)) == []


def test_a_failure_logged_as_passed_hides_a_failure() -> None:
    (problem,) = _check(_run(call=(OK, FAILED)))
    assert problem.hides_failure
    assert problem.expected == "the verdict (call) failed"
    assert problem.seen == "passed"
    assert "changed this review item's report" in problem.fix


def test_a_failure_logged_as_xfailed_names_the_xfail() -> None:
    (problem,) = _check(_run(call=(SKIP, FAILED), xfail=True))
    assert problem.seen == "xfailed"
    assert "xfail mark" in problem.fix
    assert problem.hides_failure


def test_a_skip_before_the_review_ran_is_a_problem() -> None:
    logged = {"setup": Logged(SKIP, False, NOT_RUN, "Skipped: slow")}
    (problem,) = _check(logged)
    assert problem.seen == "skipped (Skipped: slow) before it ran"
    assert "skip or skipif mark" in problem.fix
    assert not problem.hides_failure


def test_a_phase_that_never_ran_but_passed_is_a_problem() -> None:
    (problem,) = _check(_run(call=(OK, NOT_RUN)))
    assert problem.seen == "passed, but the plugin's call never ran"


def test_a_report_without_the_plugins_record_is_a_problem() -> None:
    (problem,) = _check(_run(setup=(OK, None)))
    assert problem.seen == "a passed setup report without it"


def test_a_more_severe_report_is_no_problem() -> None:
    """A passing review logged as failed fails the run anyway."""
    assert _check(_run(call=(FAIL, PASSED))) == []


def test_missing_phases_are_problems() -> None:
    (no_call,) = _check(_run(call=None))
    assert no_call.seen == "no call report"
    assert "--setup-only" in no_call.fix
    (no_teardown,) = _check(_run(teardown=None))
    assert no_teardown.seen == "no teardown report"


def test_one_line_per_item_that_keeps_a_hidden_failure() -> None:
    """Setup replaced, call rewritten: the first is shown, the hidden failure still counts."""
    (problem,) = _check(_run(setup=(OK, None), call=(OK, FAILED)))
    assert problem.expected == "the review (setup) with the plugin's record"
    assert problem.hides_failure


def test_deselection_is_a_problem_unless_the_shard_did_it() -> None:
    assert _check(None, SHARD) == []
    (problem,) = _check(None, OTHER)
    assert problem.seen == "deselected"
    assert "--advreview-shard" in problem.fix
    # Deselected and yet run (the hook was called, the item kept): judged by its reports.
    assert _check(_run(), OTHER) == []


def test_an_item_without_reports_was_dropped_or_stopped() -> None:
    (dropped,) = _check(None)
    assert dropped.seen == "no report"
    assert "removed it from the run" in dropped.fix
    (stopped,) = gate.check({NODE: None}, {}, stopped="pytest stopped early (-x)")
    assert stopped.fix == "it never ran: pytest stopped early (-x)"


@pytest.mark.parametrize("strict", [False, True])
def test_the_status_the_records_call_for(strict: bool) -> None:
    errors = EXIT_REVIEW_ERRORS if strict else 1
    assert gate.gate_status([], {NODE: _run()}, strict_exit=strict) is None
    assert gate.gate_status([], {NODE: _run(call=(FAIL, FAILED))}, strict_exit=strict) == 1
    assert gate.gate_status([], {NODE: _run(setup=(FAIL, FAILED))}, strict_exit=strict) == errors
    hidden = _check(_run(call=(OK, FAILED)))
    assert gate.gate_status(hidden, {}, strict_exit=strict) == 1
    skipped = _check(None, OTHER)
    assert gate.gate_status(skipped, {}, strict_exit=strict) == errors


def test_the_final_status_is_only_ever_raised() -> None:
    assert gate.final_status(0, None) == 0
    assert gate.final_status(0, 1) == 1
    assert gate.final_status(5, EXIT_REVIEW_ERRORS) == EXIT_REVIEW_ERRORS
    assert gate.final_status(EXIT_REVIEW_ERRORS, 1) == 1
    assert gate.final_status(1, EXIT_REVIEW_ERRORS) == 1  # another test failed too
    assert gate.final_status(2, 1) == 2  # interrupted stays interrupted
    assert gate.final_status(3, 1) == 3


@pytest.mark.parametrize(
    ("environ", "strict", "expected"),
    [
        ({"CI": "true"}, False, "CI=true"),
        ({"CI": "0", "GITHUB_ACTIONS": "true"}, False, "GITHUB_ACTIONS=true"),
        ({"CI": "false"}, True, "--advreview-strict-exit"),
        ({}, False, None),
    ],
)
def test_what_enforces_the_check(
    environ: dict[str, str], strict: bool, expected: str | None
) -> None:
    assert trust_run.enforced_by(environ, strict_exit=strict) == expected


# -- one verdict per target per run ------------------------------------------------------------


def _report(when: str, outcome: str, record: str | None) -> pytest.TestReport:
    report = pytest.TestReport(NODE, ("x.md", 0, "x"), {}, outcome, None, when)
    if record is not None:
        setattr(report, gate.GATE_ATTR, record)
    return report


def test_every_logged_report_of_a_phase_counts() -> None:
    """A rerun logs the phase again: the worst record and any failure count, not the last."""
    rerun = gate.Logged.of_all(
        [_report("call", "rerun", FAILED), _report("call", "passed", PASSED)]
    )
    assert (rerun.record, rerun.outcome, rerun.count) == (FAILED, "passed", 2)
    (problem,) = _check(_run(call=(OK, FAILED)) | {"call": rerun})
    assert problem.hides_failure
    assert "logged this phase 2 times (a rerun or retry plugin" in problem.fix
    # The first pass passed, a later one failed: pytest logged the failure, no problem.
    worse = gate.Logged.of_all(
        [_report("call", "passed", PASSED), _report("call", "failed", FAILED)]
    )
    assert (worse.record, worse.outcome) == (FAILED, "failed")
    assert gate.gate_status([], {NODE: _run() | {"call": worse}}, strict_exit=False) == 1
    # A report without the record anywhere among them is a replaced report.
    replaced = gate.Logged.of_all(
        [_report("setup", "passed", PASSED), _report("setup", "passed", None)]
    )
    assert replaced.record is None


class _Item:
    def __init__(self) -> None:
        self.gate_phases: dict[str, str] = {}
        self.fail = True

    @gate.recorded("call")
    def runtest(self) -> None:
        if self.fail:
            raise AssertionError("REVISE")


def test_a_later_pass_never_turns_a_failed_phase_record_into_a_pass() -> None:
    """pytest-retry edits the first call report after its retry instead of logging one:
    the record the report gets is the item's, which keeps the first failure."""
    item = _Item()
    with pytest.raises(AssertionError):
        item.runtest()
    item.fail = False
    item.runtest()
    assert item.gate_phases["call"] == FAILED


def test_a_target_without_a_review_item_is_a_problem() -> None:
    required = ["docs/plans/a.md", "docs/plans/b.md", "code-review", "docs/plans/a.md"]
    (missing,) = gate.unreviewed(required, ["docs/plans/a.md", "code-review"], why="--lf")
    assert missing.nodeid == "docs/plans/b.md"
    assert missing.seen == "no review item of it"
    assert missing.fix == "--lf; under a gate every selected target is reviewed"
    assert gate.gate_status([missing], {}, strict_exit=True) == EXIT_REVIEW_ERRORS
    assert gate.unreviewed(required, set(required), why="-") == []
