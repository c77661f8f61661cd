"""Boundaries of the gate check (gate.py): every phase with every record against every
logged outcome, every CI variable and truthy value, every exit status the final status
may meet, the merge of the xdist workers' reports, and each problem's text word for word."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_advreview import exitstatus as gate
from pytest_advreview.constants import EXIT_REVIEW_ERRORS
from pytest_advreview.exitstatus import FAILED, NOT_RUN, OTHER, PASSED, SHARD, Logged, Problem
from pytest_advreview.trust import run as trust_run

NODE = "plan.md::adversarial-review"
CHANGED = (
    "a conftest or plugin changed this review item's report (a pytest_runtest_makereport "
    "hookwrapper, or a pytest_runtest_logreport that edits the report); remove that code "
    "or keep it away from review items"
)
WHAT = {
    "setup": "the review (setup)",
    "call": "the verdict (call)",
    "teardown": "the workspace check (teardown)",
}


def ok() -> Logged:
    return Logged("passed", False, PASSED)


def phases(**changed: Logged | None) -> dict[str, Logged]:
    found: dict[str, Logged | None] = {"setup": ok(), "call": ok(), "teardown": ok(), **changed}
    return {when: logged for when, logged in found.items() if logged is not None}


def problems(logged: dict[str, Logged] | None, how: str | None = None, **kw: Any) -> list[Problem]:
    return gate.check({NODE: how}, {} if logged is None else {NODE: logged}, **kw)


@pytest.mark.parametrize("when", ["setup", "call", "teardown"])
def test_a_failed_record_logged_as_passed_or_skipped_is_a_problem_in_every_phase(
    when: str,
) -> None:
    for outcome in ("passed", "skipped"):
        (problem,) = problems(phases(**{when: Logged(outcome, False, FAILED)}))
        assert problem == Problem(
            NODE, f"{WHAT[when]} failed", outcome, CHANGED, hides_failure=when == "call"
        )
    # Logged as failed: as bad as the record, no problem.
    assert problems(phases(**{when: Logged("failed", False, FAILED)})) == []


@pytest.mark.parametrize("when", ["setup", "call", "teardown"])
def test_an_xfailed_failure_names_the_xfail(when: str) -> None:
    (problem,) = problems(phases(**{when: Logged("skipped", True, FAILED, "flaky")}))
    assert problem.seen == "xfailed (flaky)"
    assert problem.fix == (
        "an xfail mark (or pytest.xfail) from a conftest or plugin turned the failure into "
        "an xfail; remove it from review items"
    )


@pytest.mark.parametrize("when", ["setup", "call", "teardown"])
def test_a_phase_that_never_ran_is_a_problem_whether_skipped_or_passed(when: str) -> None:
    (skipped,) = problems(phases(**{when: Logged("skipped", False, NOT_RUN, "no")}))
    assert skipped == Problem(
        NODE,
        f"{WHAT[when]} to run",
        "skipped (no) before it ran",
        "a skip or skipif mark, an xfail(run=False), or pytest.skip from a conftest or "
        "plugin kept the review from running; remove it from review items",
    )
    (passed,) = problems(phases(**{when: Logged("passed", False, NOT_RUN)}))
    assert passed == Problem(
        NODE,
        f"{WHAT[when]} to run",
        f"passed, but the plugin's {when} never ran",
        f"a conftest or plugin replaced this review item's {when} or its report; remove that code",
    )


@pytest.mark.parametrize("when", ["setup", "call", "teardown"])
def test_a_report_without_the_record_is_a_problem_whatever_its_outcome(when: str) -> None:
    for outcome in ("passed", "failed", "skipped"):
        (problem,) = problems(phases(**{when: Logged(outcome, False, None)}))
        assert problem == Problem(
            NODE,
            f"{WHAT[when]} with the plugin's record",
            f"a {outcome} {when} report without it",
            "a conftest or plugin replaced this review item's report or logged one of its "
            "own; remove that code or keep it away from review items",
        )


def test_a_passed_record_logged_as_skipped_is_a_problem() -> None:
    (problem,) = problems(phases(teardown=Logged("skipped", False, PASSED, "why")))
    assert problem == Problem(NODE, f"{WHAT['teardown']} passed", "skipped (why)", CHANGED)


@pytest.mark.parametrize("when", ["setup", "teardown"])
def test_a_missing_setup_or_teardown_report_is_a_problem(when: str) -> None:
    found = problems(phases(**{when: None}))
    assert found[0] == Problem(
        NODE,
        f"{WHAT[when]} to run",
        f"no {when} report",
        "a conftest or plugin kept the phase from running or its report from being logged; "
        "remove that code",
    )


def test_a_missing_call_is_a_problem_only_after_a_passed_setup() -> None:
    (problem,) = problems(phases(call=None))
    assert problem == Problem(
        NODE,
        f"{WHAT['call']} to run",
        "no call report",
        "pytest --setup-only/--setup-plan, or a conftest or plugin, kept the phase from "
        "running or its report from being logged; run without it",
    )
    assert problems(phases(setup=Logged("failed", False, FAILED), call=None)) == []
    assert problems(phases(setup=None, call=None))[0].seen == "no setup report"
    assert len(problems(phases(setup=None, call=None))) == 1


def test_one_problem_per_item_the_first_in_phase_order_keeping_a_hidden_failure() -> None:
    found = problems(
        phases(
            setup=Logged("passed", False, None),
            call=Logged("passed", False, FAILED),
            teardown=Logged("passed", False, None),
        )
    )
    assert [(p.expected, p.hides_failure) for p in found] == [
        (f"{WHAT['setup']} with the plugin's record", True)
    ]


def test_items_are_checked_in_node_id_order_and_shards_are_left_out() -> None:
    collected = {"b": None, "a": OTHER, "c": SHARD, "d": SHARD}
    found = gate.check(collected, {"d": phases(call=Logged("passed", False, FAILED))})
    assert [p.nodeid for p in found] == ["a", "b", "d"]
    assert found[0] == Problem(
        "a",
        "the review to run (it was collected)",
        "deselected",
        "under CI every review item runs: drop the -m/-k/--deselect (or the addopts = -m "
        '"not adversarial_review" in the ini file, or the conftest or plugin) that '
        "deselects it; to split reviews between jobs use --advreview-shard=K/N",
    )
    assert found[1] == Problem(
        "b",
        "the review to run",
        "no report",
        "a conftest or plugin removed it from the run (pytest_collection_modifyitems, "
        "pytest_runtest_protocol); remove that code or keep it away from review items",
    )
    # A deselected item that ran anyway is judged by what it logged.
    assert gate.check({NODE: OTHER}, {NODE: phases()}) == []


@pytest.mark.parametrize("strict", [False, True])
def test_the_exit_status_each_record_calls_for(strict: bool) -> None:
    errors = EXIT_REVIEW_ERRORS if strict else 1
    status = gate.gate_status
    assert status([], {}, strict_exit=strict) is None
    assert status([], {NODE: phases()}, strict_exit=strict) is None
    for when in ("setup", "teardown"):
        failed = {NODE: phases(**{when: Logged("failed", False, FAILED)})}
        assert status([], failed, strict_exit=strict) == errors
    assert status([], {NODE: phases(call=Logged("failed", False, FAILED))}, strict_exit=strict) == 1
    plain = Problem(NODE, "e", "s", "f")
    assert status([plain], {}, strict_exit=strict) == errors
    hides = Problem(NODE, "e", "s", "f", hides_failure=True)
    assert status([plain, hides], {}, strict_exit=strict) == 1


@pytest.mark.parametrize(
    ("current", "required", "final"),
    [
        (0, None, 0),
        (1, None, 1),
        (0, 1, 1),
        (5, 1, 1),  # no tests collected
        (0, EXIT_REVIEW_ERRORS, EXIT_REVIEW_ERRORS),
        (5, EXIT_REVIEW_ERRORS, EXIT_REVIEW_ERRORS),
        (EXIT_REVIEW_ERRORS, 1, 1),
        (EXIT_REVIEW_ERRORS, EXIT_REVIEW_ERRORS, EXIT_REVIEW_ERRORS),
        (1, EXIT_REVIEW_ERRORS, 1),
        (2, 1, 2),
        (3, 1, 3),
        (4, 1, 4),
    ],
)
def test_the_final_status_is_only_ever_raised(
    current: int, required: int | None, final: int
) -> None:
    assert gate.final_status(current, required) == final


@pytest.mark.parametrize(
    ("required", "least"),
    [
        (None, 3),  # the records call for nothing: pytest's own internal error
        (0, 3),  # "passed" is never the status of a run with an internal error
        (5, 3),  # nor is "no tests collected"
        (1, 1),  # a failure the records call for says more, and is kept
        (EXIT_REVIEW_ERRORS, EXIT_REVIEW_ERRORS),
        (2, 2),
        (4, 4),
    ],
)
def test_an_internal_error_raises_a_calm_status_to_3_and_keeps_any_other(
    required: int | None, least: int
) -> None:
    assert gate.internal_error_status(required) == least


@pytest.mark.parametrize("name", ["CI", "GITHUB_ACTIONS"])
@pytest.mark.parametrize("value", ["1", "true", "True", " yes ", "ON"])
def test_every_ci_variable_and_truthy_value_enforces_the_check(name: str, value: str) -> None:
    assert trust_run.enforced_by({name: value}, strict_exit=False) == f"{name}={value}"


@pytest.mark.parametrize("value", ["", "0", "false", "no", "off", "truthy"])
def test_other_values_do_not_enforce_it_unless_strict(value: str) -> None:
    environ = {"CI": value, "GITHUB_ACTIONS": value}
    assert trust_run.enforced_by(environ, strict_exit=False) is None
    assert trust_run.enforced_by(environ, strict_exit=True) == "--advreview-strict-exit"


def test_ci_is_named_before_github_actions() -> None:
    both = {"CI": "true", "GITHUB_ACTIONS": "true"}
    assert trust_run.enforced_by(both, strict_exit=True) == "CI=true"


def test_what_pytest_logged_reads_the_reason_of_a_skip_and_of_an_xfail() -> None:
    skip = pytest.TestReport("n", ("f", 1, "n"), {}, "skipped", ("f", 1, "Skipped: why"), "setup")
    assert Logged.of(skip) == Logged("skipped", False, None, "Skipped: why")
    xfail = pytest.TestReport("n", ("f", 1, "n"), {}, "skipped", None, "call")
    xfail.wasxfail = "flaky"  # type: ignore[attr-defined]
    setattr(xfail, gate.GATE_ATTR, FAILED)
    assert Logged.of(xfail) == Logged("skipped", True, FAILED, "flaky")
    assert Logged.of(xfail).seen() == "xfailed (flaky)"
    xpass = pytest.TestReport("n", ("f", 1, "n"), {}, "passed", None, "call")
    xpass.wasxfail = "ok"  # type: ignore[attr-defined]
    assert Logged.of(xpass).seen() == "passed"
    odd = pytest.TestReport("n", ("f", 1, "n"), {}, "skipped", ("f", 1), "setup")
    assert Logged.of(odd).reason == ""
    assert Logged("skipped", False, None).seen() == "skipped"
    assert Logged("failed", True, None, "r").seen() == "xfailed (r)"


def test_a_problem_line_names_item_expectation_what_was_logged_and_the_fix() -> None:
    assert Problem("n", "e", "s", "f").line() == "n: expected e; pytest logged s: f"


def _node(sent: object, targets: object = None) -> SimpleNamespace:
    output = {gate.WORKEROUTPUT_KEY: sent}
    if targets is not None:
        output[gate.WORKEROUTPUT_TARGETS] = targets
    return SimpleNamespace(workeroutput=output)


def _nothing_required() -> list[str]:
    return []


def test_the_workers_reports_merge_and_one_other_deselection_is_enough() -> None:
    check = gate.GateCheck(
        SimpleNamespace(),  # type: ignore[arg-type]
        gate.GateRecorder(),
        enforced="CI=true",
        strict=False,
        required=_nothing_required,
    )
    assert check._remote is None
    check.pytest_testnodedown(SimpleNamespace(), None)  # no workeroutput: ignored
    check.pytest_testnodedown(SimpleNamespace(workeroutput="not a dict"), None)
    check.pytest_testnodedown(_node("not a dict"), None)
    assert check._remote is None
    check.pytest_testnodedown(_node({"a": None, "b": SHARD, "c": OTHER}), None)
    check.pytest_testnodedown(_node({"a": OTHER, "b": None, "c": None, "d": SHARD}), None)
    check.pytest_testnodedown(_node({"a": None, "b": SHARD}), None)
    assert check._remote == {"a": OTHER, "b": SHARD, "c": OTHER, "d": SHARD}


def test_the_workers_targets_merge_as_text_and_a_worker_without_them_adds_none() -> None:
    check = gate.GateCheck(
        SimpleNamespace(),  # type: ignore[arg-type]
        gate.GateRecorder(),
        enforced="CI=true",
        strict=False,
        required=_nothing_required,
    )
    check.pytest_testnodedown(_node({"a": None}, {"a": "t/a"}), None)
    check.pytest_testnodedown(_node({"b": None}, "not a dict"), None)
    check.pytest_testnodedown(_node({"b": None}), None)
    assert check._remote_targets == {"a": "t/a"}
    check.pytest_testnodedown(_node({"b": None}, {"b": "t/b", 7: 8}), None)
    assert check._remote_targets == {"a": "t/a", "b": "t/b", "7": "8"}
    # Not a worker's output at all: its targets are not read either.
    check.pytest_testnodedown(SimpleNamespace(workeroutput="x"), None)
    assert check._remote_targets == {"a": "t/a", "b": "t/b", "7": "8"}


# -- the recorder and the check in a process, with stand-ins for pytest's objects ------------


class _Stash(dict):  # type: ignore[type-arg]
    pass


_NOTSET = object()


def _config(
    recorder: gate.GateRecorder | None, options: dict[str, object] | None = None, **plugins: object
) -> SimpleNamespace:
    stash = _Stash()
    if recorder is not None:
        stash[gate.GATE_KEY] = recorder
    given = dict(options or {})

    def getoption(name: str, default: object = _NOTSET) -> object:
        # As pytest's: an option nobody added (-p no:stepwise, -p no:cacheprovider) is a
        # ValueError unless a default is given.
        if name in given:
            return given[name]
        if default is _NOTSET:
            raise ValueError(f"no option named {name!r}")
        return default

    return SimpleNamespace(
        stash=stash,
        pluginmanager=SimpleNamespace(get_plugin=lambda name: plugins.get(name)),
        option=SimpleNamespace(collectonly=False),
        getoption=getoption,
    )


def _item(config: SimpleNamespace, nodeid: str) -> SimpleNamespace:
    return SimpleNamespace(config=config, nodeid=nodeid, gate_phases={})


def test_the_recorder_notes_items_and_tells_its_own_deselection_apart() -> None:
    recorder = gate.GateRecorder()
    config = _config(recorder)
    a, b, c = (_item(config, n) for n in ("a", "b", "c"))
    stranger = _item(config, "not a review item")
    for item in (a, b, c):
        gate.note_collected(item, f"t/{item.nodeid}")  # type: ignore[arg-type]
    gate.note_own_deselection(config, [b])  # type: ignore[arg-type]
    recorder.pytest_deselected([b, c, stranger])  # type: ignore[list-item]
    a.nodeid = "a-renamed"  # read when asked, not when made
    assert recorder.collected() == {"a-renamed": None, "b": SHARD, "c": OTHER}
    assert recorder.targets() == {"a-renamed": "t/a", "b": "t/b", "c": "t/c"}
    # Without a recorder (the plugin off) nothing is noted and nothing fails.
    bare = _config(None)
    gate.note_collected(_item(bare, "x"), "t/x")  # type: ignore[arg-type]
    gate.note_own_deselection(bare, [_item(bare, "x")])  # type: ignore[arg-type,list-item]
    assert (recorder.collected(), recorder.own_deselection) == (
        {"a-renamed": None, "b": SHARD, "c": OTHER},
        {id(b)},
    )


def test_two_items_of_one_target_are_each_noted_with_it() -> None:
    """A copy of an item (items.py) is a second item of the same target."""
    recorder = gate.GateRecorder()
    config = _config(recorder)
    for nodeid in ("a", "a-copy"):
        gate.note_collected(_item(config, nodeid), "t/a")  # type: ignore[arg-type]
    assert recorder.targets() == {"a": "t/a", "a-copy": "t/a"}


def test_the_record_rides_on_the_report_of_review_items_only() -> None:
    recorder = gate.GateRecorder()
    config = _config(recorder)
    item, other = _item(config, "a"), _item(config, "b")
    gate.note_collected(item, "t/a")  # type: ignore[arg-type]
    item.gate_phases["call"] = FAILED

    def made(target: SimpleNamespace, when: str) -> SimpleNamespace:
        report = SimpleNamespace()
        hook = recorder.pytest_runtest_makereport(target, SimpleNamespace(when=when))  # type: ignore[arg-type]
        next(hook)
        with pytest.raises(StopIteration) as done:
            hook.send(report)
        assert done.value.value is report
        return report

    assert getattr(made(item, "call"), gate.GATE_ATTR) == FAILED
    assert getattr(made(item, "teardown"), gate.GATE_ATTR) == NOT_RUN
    assert not hasattr(made(other, "call"), gate.GATE_ATTR)
    del item.gate_phases  # an item whose constructor never got that far
    assert getattr(made(item, "call"), gate.GATE_ATTR) == NOT_RUN


def test_a_worker_sends_what_it_collected_and_a_controller_does_not() -> None:
    recorder = gate.GateRecorder()
    config = _config(recorder)
    gate.note_collected(_item(config, "a"), "t/a")  # type: ignore[arg-type]
    worker = SimpleNamespace(config=SimpleNamespace(workeroutput={}))
    recorder.pytest_sessionfinish(worker)  # type: ignore[arg-type]
    assert worker.config.workeroutput == {
        gate.WORKEROUTPUT_KEY: {"a": None},
        gate.WORKEROUTPUT_TARGETS: {"a": "t/a"},
    }
    controller = SimpleNamespace(config=SimpleNamespace())
    recorder.pytest_sessionfinish(controller)  # type: ignore[arg-type]
    assert vars(controller.config) == {}


def test_a_phase_records_that_it_ran_and_whether_it_raised() -> None:
    class Item:
        def __init__(self) -> None:
            self.gate_phases: dict[str, str] = {}

        @gate.recorded("setup")
        def setup(self) -> None:
            assert self.gate_phases["setup"] == "running"

        @gate.recorded("call")
        def runtest(self) -> None:
            raise KeyboardInterrupt

    item = Item()
    item.setup()
    with pytest.raises(KeyboardInterrupt):
        item.runtest()
    assert item.gate_phases == {"setup": PASSED, "call": FAILED}
    assert Item.setup.__name__ == "setup"
    # Run again: a pass stays a pass, and a failure before a pass stays a failure.
    item.setup()
    assert item.gate_phases["setup"] == PASSED


def _report(nodeid: str, when: str, outcome: str, record: str | None) -> pytest.TestReport:
    report = pytest.TestReport(nodeid, ("f", 1, nodeid), {}, outcome, None, when)
    if record is not None:
        setattr(report, gate.GATE_ATTR, record)
    return report


# -- every logged report of a phase counts (one verdict per target per run) -------------------


@pytest.mark.parametrize(
    ("records", "worst"),
    [
        ([PASSED], PASSED),
        ([None], None),
        ([PASSED, PASSED], PASSED),
        ([PASSED, None], None),
        ([None, FAILED], None),
        ([FAILED, None], None),
        ([PASSED, FAILED], FAILED),
        ([FAILED, PASSED], FAILED),
        ([NOT_RUN, FAILED], FAILED),
        ([FAILED, NOT_RUN], FAILED),
        ([PASSED, NOT_RUN], NOT_RUN),
        ([NOT_RUN, PASSED], NOT_RUN),
        # None of them worse than another: the first report's.
        ([PASSED, "odd"], PASSED),
        (["odd", PASSED], "odd"),
    ],
)
def test_the_record_of_a_phase_logged_again_is_the_worst_any_report_carried(
    records: list[str | None], worst: str | None
) -> None:
    reports = [_report(NODE, "call", "passed", record) for record in records]
    assert Logged.of_all(reports).record == worst


@pytest.mark.parametrize(
    ("outcomes", "folded"),
    [
        (["passed"], "passed"),
        (["skipped"], "skipped"),
        (["failed"], "failed"),
        (["failed", "passed"], "failed"),
        (["passed", "failed"], "failed"),
        (["passed", "failed", "passed"], "failed"),
        (["passed", "skipped"], "skipped"),
        (["skipped", "passed"], "passed"),
        (["rerun", "passed"], "passed"),
    ],
)
def test_the_outcome_of_a_phase_logged_again_is_failed_if_any_failed_else_the_last(
    outcomes: list[str], folded: str
) -> None:
    logged = Logged.of_all([_report(NODE, "call", outcome, PASSED) for outcome in outcomes])
    assert (logged.outcome, logged.count) == (folded, len(outcomes))


def test_the_xfail_and_reason_of_a_phase_logged_again_are_the_last_reports() -> None:
    first = pytest.TestReport(NODE, ("f", 1, NODE), {}, "skipped", ("f", 1, "first"), "setup")
    last = pytest.TestReport(NODE, ("f", 1, NODE), {}, "skipped", None, "setup")
    last.wasxfail = "last"  # type: ignore[attr-defined]
    assert Logged.of_all([first, last]) == Logged("skipped", True, None, "last", 2)
    assert Logged.of_all([last, first]) == Logged("skipped", False, None, "first", 2)


RERUN_FIX = (
    "pytest logged this phase {} times (a rerun or retry plugin, or a copy of the item, ran "
    "it again) and the last report hides the failure; the gate keeps the first verdict: "
    "keep reruns away from review items"
)


@pytest.mark.parametrize("when", ["setup", "call", "teardown"])
def test_a_later_passing_report_never_hides_a_failing_first_one(when: str) -> None:
    for count in (2, 3):
        reports = [_report(NODE, when, "rerun", FAILED)] + [
            _report(NODE, when, "passed", PASSED) for _ in range(count - 1)
        ]
        (problem,) = problems(phases(**{when: Logged.of_all(reports)}))
        assert problem == Problem(
            NODE, f"{WHAT[when]} failed", "passed", RERUN_FIX.format(count), when == "call"
        )
    # Logged once: the report itself was changed, not logged again.
    (once,) = problems(phases(**{when: Logged("passed", False, FAILED, count=1)}))
    assert once.fix == CHANGED
    # An xfail among several reports is named as the xfail.
    (xfailed,) = problems(phases(**{when: Logged("skipped", True, FAILED, count=2)}))
    assert xfailed.fix.startswith("an xfail mark")


def _session(**kw: object) -> SimpleNamespace:
    return SimpleNamespace(
        shouldfail=kw.get("shouldfail", False),
        shouldstop=kw.get("shouldstop", False),
        exitstatus=kw.get("exitstatus", 0),
    )


def _finish(check: gate.GateCheck, ended: SimpleNamespace) -> None:
    hook = check.pytest_sessionfinish(ended)  # type: ignore[arg-type]
    next(hook)
    with pytest.raises(StopIteration):
        hook.send(None)


def _decided(
    recorder: gate.GateRecorder,
    reports: list[pytest.TestReport],
    *,
    enforced: str | None = "CI=true",
    strict: bool = False,
    collectonly: bool = False,
    required: tuple[str, ...] = (),
    options: dict[str, object] | None = None,
    **session: object,
) -> tuple[gate.GateCheck, SimpleNamespace]:
    config = _config(recorder, options, terminalreporter=object())
    config.option.collectonly = collectonly
    check = gate.GateCheck(
        config,  # type: ignore[arg-type]
        recorder,
        enforced=enforced,
        strict=strict,
        required=lambda: required,
    )
    for report in reports:
        check.pytest_runtest_logreport(report)
    ended = _session(**session)
    _finish(check, ended)
    return check, ended


def _recorder(*nodeids: str) -> gate.GateRecorder:
    """Review items of the given node ids, each of the target ``t/<node id>``."""
    recorder = gate.GateRecorder()
    config = _config(recorder)
    for nodeid in nodeids:
        gate.note_collected(_item(config, nodeid), f"t/{nodeid}")  # type: ignore[arg-type]
    return recorder


def _ran(nodeid: str, call: str = "passed", record: str = PASSED) -> list[pytest.TestReport]:
    return [
        _report(nodeid, "setup", "passed", PASSED),
        _report(nodeid, "call", call, record),
        _report(nodeid, "teardown", "passed", PASSED),
    ]


def test_a_run_whose_reviews_counted_as_recorded_keeps_its_status() -> None:
    check, session = _decided(
        _recorder("a"), _ran("a") + _ran("not-a-review-item"), required=("t/a",)
    )
    assert (check.problems, check.headline, check.required, session.exitstatus) == (
        [],
        None,
        None,
        0,
    )
    assert check.lines() == []


def test_every_logged_report_is_kept_in_order() -> None:
    first, again = _report("a", "call", "rerun", FAILED), _report("a", "call", "passed", PASSED)
    recorder = _recorder("a")
    check = gate.GateCheck(
        _config(recorder),  # type: ignore[arg-type]
        recorder,
        enforced="CI=true",
        strict=False,
        required=_nothing_required,
    )
    for report in (first, again):
        check.pytest_runtest_logreport(report)
    assert check._reports == {"a": {"call": [first, again]}}


def test_a_rerun_that_passed_after_a_failed_verdict_fails_the_run() -> None:
    reports = [*_ran("a", "rerun", FAILED), _report("a", "call", "passed", PASSED)]
    check, session = _decided(_recorder("a"), reports, strict=True)
    (problem,) = check.problems
    assert (problem.fix, problem.hides_failure) == (RERUN_FIX.format(2), True)
    assert (check.required, session.exitstatus) == (1, 1)
    # The same reports the other way round: pytest logged the failure, nothing hidden.
    reports = [*_ran("a"), _report("a", "call", "failed", FAILED)]
    check, session = _decided(_recorder("a"), reports, strict=True)
    assert (check.problems, check.required, session.exitstatus) == ([], 1, 1)


def test_a_run_where_no_review_ran_says_the_gate_did_not_run() -> None:
    check, session = _decided(_recorder("a", "b"), [])
    assert check.headline == (
        "0 review items ran, but --adversarial-review collected 2: the gate did not run"
    )
    assert session.exitstatus == 1
    assert check.lines()[0] == (
        "pytest-advreview: GATE FAILED (CI=true: the exit status follows the plugin's "
        "records): 0 review items ran, but --adversarial-review collected 2: the gate did "
        "not run"
    )
    assert check.lines()[1] == f"pytest-advreview: {check.problems[0].line()}"
    assert len(check.lines()) == 3


def test_one_review_that_ran_is_enough_to_not_say_the_gate_did_not_run() -> None:
    check, _ = _decided(_recorder("a", "b"), _ran("a"))
    assert check.headline == "1 of 2 review items did not count as the plugin recorded them"


def test_some_items_not_counted_as_recorded_are_named_with_the_total() -> None:
    reports = _ran("a") + _ran("b", call="passed", record=FAILED)
    check, session = _decided(_recorder("a", "b", "c"), reports, strict=True)
    assert check.headline == "2 of 3 review items did not count as the plugin recorded them"
    assert session.exitstatus == 1  # a hidden failure is a failure, strict or not


def test_review_errors_under_the_strict_option_exit_with_their_own_status() -> None:
    reports = [_report("a", "setup", "failed", FAILED), _report("a", "teardown", "passed", PASSED)]
    check, session = _decided(_recorder("a"), reports, strict=True)
    assert (check.problems, check.required, session.exitstatus) == (
        [],
        EXIT_REVIEW_ERRORS,
        EXIT_REVIEW_ERRORS,
    )


def test_a_stopped_run_and_a_collect_only_run_say_why_nothing_ran() -> None:
    check, _ = _decided(_recorder("a", "b"), _ran("a"), shouldstop="stopping after 1 failures")
    assert check.problems[0].fix == "it never ran: pytest stopped early (stopping after 1 failures)"
    check, _ = _decided(_recorder("a"), [], shouldfail="maxfail")
    assert check.problems[0].fix == "it never ran: pytest stopped early (maxfail)"
    check, session = _decided(_recorder("a"), [], collectonly=True, shouldstop="x")
    assert check.problems[0].fix == (
        "it never ran: --collect-only runs nothing; drop it (from addopts too): a gate runs reviews"
    )
    assert session.exitstatus == 1


INTERRUPTED = "pytest was interrupted (Ctrl-C, SIGTERM or SIGHUP)"
REMOVED = (
    "a conftest or plugin removed it from the run (pytest_collection_modifyitems, "
    "pytest_runtest_protocol); remove that code or keep it away from review items"
)


@pytest.mark.parametrize(
    ("exitstatus", "fix"),
    [
        (pytest.ExitCode.TESTS_FAILED, REMOVED),
        (pytest.ExitCode.INTERRUPTED, f"it never ran: {INTERRUPTED}"),
        (pytest.ExitCode.INTERNAL_ERROR, REMOVED),
    ],
)
def test_an_interrupted_run_names_the_interrupt_for_the_items_it_left(
    exitstatus: int, fix: str
) -> None:
    check, session = _decided(_recorder("a", "b"), _ran("a"), exitstatus=int(exitstatus))
    assert [p.fix for p in check.problems] == [fix]
    assert session.exitstatus == exitstatus  # already a failure: kept


def test_a_run_stopped_early_is_named_stopped_even_when_interrupted_too() -> None:
    check, _ = _decided(
        _recorder("a"), [], exitstatus=int(pytest.ExitCode.INTERRUPTED), shouldstop="-x"
    )
    assert check.problems[0].fix == "it never ran: pytest stopped early (-x)"


def test_without_enforcement_nothing_is_kept_or_changed() -> None:
    check, session = _decided(
        _recorder("a"), _ran("a", "passed", FAILED), enforced=None, required=("t/x",)
    )
    assert (check._reports, check.problems, check.required, session.exitstatus) == ({}, [], None, 0)


def test_shard_items_of_another_job_are_not_owed() -> None:
    recorder = _recorder("a", "b")
    recorder.own_deselection.add(next(k for k, i in recorder.items.items() if i.nodeid == "b"))
    recorder.pytest_deselected([i for i in recorder.items.values() if i.nodeid == "b"])  # type: ignore[arg-type]
    check, _ = _decided(recorder, [])
    assert check.headline == (
        "0 review items ran, but --adversarial-review collected 1: the gate did not run"
    )
    # A shard item that ran anyway is owed like any other.
    check, _ = _decided(recorder, [_report("b", "setup", "passed", None)])
    assert check.headline == (
        "0 review items ran, but --adversarial-review collected 2: the gate did not run"
    )


def test_under_xdist_the_workers_reports_are_what_was_collected() -> None:
    recorder = _recorder("local-only")
    config = _config(recorder, dsession=object(), terminalreporter=object())
    check = gate.GateCheck(
        config,  # type: ignore[arg-type]
        recorder,
        enforced="CI=true",
        strict=False,
        required=_nothing_required,
    )
    assert check._collected() == (
        {},
        [
            Problem(
                "(xdist)",
                "each worker to report the review items it collected",
                "none did",
                "a worker ended before its session finish (see the errors above); run again",
            )
        ],
    )
    assert check._targets() == {}
    check.pytest_testnodedown(_node({"w": None}, {"w": "t/w"}), None)
    assert check._collected() == ({"w": None}, [])
    assert check._targets() == {"w": "t/w"}
    # Without xdist: this process's own items and targets.
    local = gate.GateCheck(
        _config(recorder),  # type: ignore[arg-type]
        recorder,
        enforced="CI=true",
        strict=False,
        required=_nothing_required,
    )
    assert local._targets() == {"local-only": "t/local-only"}


# -- the targets the gate must see -------------------------------------------------------------

UNCOLLECTED = (
    "a conftest or plugin kept pytest from making its review item (a "
    "pytest_make_collect_report or pytest_collect_file of its own): remove that code or "
    "keep it away from the plans"
)
LAST_FAILED = (
    "pytest's --lf (last failed) collected only the files of the tests "
    ".pytest_cache/v/cache/lastfailed names and skipped this plan's file: drop --lf "
    "(from addopts too) and the committed .pytest_cache"
)


def _unreviewed(key: str, why: str) -> Problem:
    return Problem(
        key,
        "its review (a target the gate must see)",
        "no review item of it",
        f"{why}; under a gate every selected target is reviewed",
    )


def test_each_required_target_without_an_item_is_named_once_in_order() -> None:
    assert gate.unreviewed([], ["a"], why="w") == []
    assert gate.unreviewed(["a"], ["a"], why="w") == []
    assert gate.unreviewed(["a"], ["a", "extra"], why="w") == []
    assert gate.unreviewed(["a"], [], why="w") == [_unreviewed("a", "w")]
    assert gate.unreviewed(["c", "a", "b", "a"], iter(["b"]), why="w") == [
        _unreviewed("c", "w"),
        _unreviewed("a", "w"),
    ]


def test_a_required_target_missing_fails_the_run_and_one_present_does_not() -> None:
    check, session = _decided(_recorder("a"), _ran("a"), required=("t/a",))
    assert (check.problems, session.exitstatus) == ([], 0)
    check, session = _decided(
        _recorder("a"), _ran("a"), required=("t/a", "t/b", "t/b"), strict=True
    )
    assert check.problems == [_unreviewed("t/b", UNCOLLECTED)]
    assert check.headline == (
        "1 of 2 targets the gate must see had no review item: nothing reviewed them"
    )
    assert (check.required, session.exitstatus) == (EXIT_REVIEW_ERRORS, EXIT_REVIEW_ERRORS)


def test_a_required_target_reviewed_by_a_worker_is_present_under_xdist() -> None:
    recorder = _recorder()
    config = _config(recorder, dsession=object(), terminalreporter=object())
    check = gate.GateCheck(
        config,  # type: ignore[arg-type]
        recorder,
        enforced="CI=true",
        strict=False,
        required=lambda: ["t/w", "t/v"],
    )
    check.pytest_testnodedown(_node({"w": None}, {"w": "t/w"}), None)
    for report in _ran("w"):
        check.pytest_runtest_logreport(report)
    ended = _session()
    _finish(check, ended)
    assert check.problems == [_unreviewed("t/v", UNCOLLECTED)]
    assert ended.exitstatus == 1


def test_missing_targets_with_other_problems_count_toward_the_total() -> None:
    reports = _ran("a") + _ran("b", call="passed", record=FAILED)
    check, _ = _decided(_recorder("a", "b", "c"), reports, required=("t/a", "t/x"))
    assert [p.nodeid for p in check.problems] == ["b", "c", "t/x"]
    assert check.headline == "3 of 4 review items did not count as the plugin recorded them"


def test_the_total_is_never_below_the_problems_named() -> None:
    """Under xdist with no worker report nothing was collected, and yet one problem."""
    recorder = _recorder()
    config = _config(recorder, dsession=object(), terminalreporter=object())
    check = gate.GateCheck(
        config,  # type: ignore[arg-type]
        recorder,
        enforced="CI=true",
        strict=False,
        required=_nothing_required,
    )
    _finish(check, _session())
    assert check.headline == "1 of 1 review items did not count as the plugin recorded them"


@pytest.mark.parametrize(
    ("options", "exitstatus", "why"),
    [
        ({}, 0, UNCOLLECTED),
        ({"lf": True}, 0, LAST_FAILED),
        ({"lf": False}, 0, UNCOLLECTED),
        ({}, int(pytest.ExitCode.INTERRUPTED), f"{INTERRUPTED} before it reported"),
        ({"lf": True}, int(pytest.ExitCode.INTERRUPTED), f"{INTERRUPTED} before it reported"),
        ({}, int(pytest.ExitCode.TESTS_FAILED), UNCOLLECTED),
    ],
)
def test_a_missing_target_names_what_kept_its_item_from_being_made(
    options: dict[str, object], exitstatus: int, why: str
) -> None:
    check, _ = _decided(
        _recorder("a"), _ran("a"), required=("t/x",), options=options, exitstatus=exitstatus
    )
    assert check.problems == [_unreviewed("t/x", why)]


@pytest.mark.parametrize(
    ("dest", "named"),
    [
        ("lf", "--lf (last failed: it did not fail last time)"),
        ("stepwise", "--sw (stepwise: it comes before the test that failed last time)"),
        ("stepwise_skip", "--sw-skip (stepwise)"),
        ("keyword", "-k"),
        ("markexpr", "-m"),
        ("deselect", "--deselect"),
    ],
)
def test_each_deselecting_option_is_named_for_a_deselected_item(dest: str, named: str) -> None:
    assert gate.deselected_by(_config(None, {dest: "x"})) == named  # type: ignore[arg-type]
    assert gate.deselected_by(_config(None, {dest: ""})) is None  # type: ignore[arg-type]
    recorder = _recorder("a")
    recorder.pytest_deselected(list(recorder.items.values()))  # type: ignore[arg-type]
    check, _ = _decided(recorder, [], options={dest: ["x"]})
    assert check.problems[0].seen == f"deselected by {named}"


def test_several_deselecting_options_are_named_in_order() -> None:
    config = _config(None, {"markexpr": "m", "keyword": "k", "lf": True})
    assert gate.deselected_by(config) == (  # type: ignore[arg-type]
        "--lf (last failed: it did not fail last time), -k, -m"
    )
    # Options that do not exist (their plugin is off: -p no:stepwise) deselect nothing.
    assert gate.deselected_by(_config(None)) is None  # type: ignore[arg-type]


def test_the_summary_is_written_only_when_something_did_not_count() -> None:
    lines: list[tuple[str, dict[str, object]]] = []
    terminal = SimpleNamespace(
        write_sep=lambda sep, title, **kw: lines.append((f"{sep} {title}", kw)),
        write_line=lambda line, **kw: lines.append((line, kw)),
    )
    check, _ = _decided(_recorder("a"), _ran("a"))
    check.pytest_terminal_summary(terminal)  # type: ignore[arg-type]
    assert lines == []
    check, _ = _decided(_recorder("a"), [])
    check.pytest_terminal_summary(terminal)  # type: ignore[arg-type]
    assert lines[0] == ("= adversarial review gate", {"red": True, "bold": True})
    assert [line for line, _ in lines[1:]] == check.lines()
    assert all(kw == {"red": True} for _, kw in lines[1:])


def test_without_a_terminal_the_summary_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    recorder = _recorder("a")
    check = gate.GateCheck(
        _config(recorder),  # type: ignore[arg-type]
        recorder,
        enforced="CI=true",
        strict=False,
        required=_nothing_required,
    )
    _finish(check, _session())
    assert check.lines()
    assert capsys.readouterr().err == "".join(line + "\n" for line in check.lines())


def test_problem_lines_are_printed_on_one_line_neutralised() -> None:
    recorder = _recorder("a\n::error::x")
    check, _ = _decided(recorder, [])
    assert check.lines()[1].startswith("pytest-advreview: a\\x0a::error::x: expected")


def test_a_dropped_item_that_nothing_stopped_names_the_removal() -> None:
    check, _ = _decided(_recorder("a"), [])
    assert check.problems[0].fix == REMOVED


@pytest.mark.parametrize("record", [NOT_RUN, None])
def test_items_whose_review_never_ran_did_not_run(record: str | None) -> None:
    skipped = [
        _report("a", "setup", "skipped", record),
        _report("a", "teardown", "passed", PASSED),
    ]
    check, _ = _decided(_recorder("a"), skipped)
    assert check.headline == (
        "0 review items ran, but --adversarial-review collected 1: the gate did not run"
    )


def test_a_review_that_ran_and_failed_ran() -> None:
    reports = [_report("a", "setup", "passed", FAILED), _report("a", "teardown", "passed", PASSED)]
    check, _ = _decided(_recorder("a"), reports)
    assert check.headline == "1 of 1 review items did not count as the plugin recorded them"


def test_after_a_failed_setup_a_missing_teardown_is_still_a_problem() -> None:
    found = problems(phases(setup=Logged("failed", False, FAILED), call=None, teardown=None))
    assert [p.seen for p in found] == ["no teardown report"]


def test_under_xdist_no_worker_report_fails_the_run() -> None:
    recorder = _recorder("a")
    config = _config(recorder, dsession=object(), terminalreporter=object())
    check = gate.GateCheck(
        config,  # type: ignore[arg-type]
        recorder,
        enforced="CI=true",
        strict=False,
        required=_nothing_required,
    )
    ended = _session()
    _finish(check, ended)
    assert [p.nodeid for p in check.problems] == ["(xdist)"]
    assert ended.exitstatus == 1


def test_with_a_terminal_nothing_is_written_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    check, _ = _decided(_recorder("a"), [])
    assert check.problems
    assert capsys.readouterr().err == ""
