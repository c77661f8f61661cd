"""Boundaries of the gate check (gate.py): every phase with every record against every
logged outcome, every CI variable and truthy value, every exit status the final status
may meet, the merge of the xdist workers' reports, and each problem's text word for word."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_advreview import gate
from pytest_advreview.constants import EXIT_REVIEW_ERRORS
from pytest_advreview.gate import FAILED, NOT_RUN, OTHER, PASSED, SHARD, Logged, Problem

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


@pytest.mark.parametrize("name", ["CI", "GITHUB_ACTIONS"])
@pytest.mark.parametrize("value", ["1", "true", "True", " yes ", "ON"])
def test_every_ci_variable_and_truthy_value_enforces_the_check(name: str, value: str) -> None:
    assert gate.enforced_by({name: value}, strict_exit=False) == f"{name}={value}"


@pytest.mark.parametrize("value", ["", "0", "false", "no", "off", "truthy"])
def test_other_values_do_not_enforce_it_unless_strict(value: str) -> None:
    environ = {"CI": value, "GITHUB_ACTIONS": value}
    assert gate.enforced_by(environ, strict_exit=False) is None
    assert gate.enforced_by(environ, strict_exit=True) == "--advreview-strict-exit"


def test_ci_is_named_before_github_actions() -> None:
    both = {"CI": "true", "GITHUB_ACTIONS": "true"}
    assert gate.enforced_by(both, strict_exit=True) == "CI=true"


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


def _node(sent: object) -> SimpleNamespace:
    return SimpleNamespace(workeroutput={gate.WORKEROUTPUT_KEY: sent})


def test_the_workers_reports_merge_and_one_other_deselection_is_enough() -> None:
    check = gate.GateCheck(
        SimpleNamespace(),
        gate.GateRecorder(),
        enforced="CI=true",
        strict=False,  # type: ignore[arg-type]
    )
    assert check._remote is None
    check.pytest_testnodedown(SimpleNamespace(), None)  # no workeroutput: ignored
    check.pytest_testnodedown(_node("not a dict"), None)
    assert check._remote is None
    check.pytest_testnodedown(_node({"a": None, "b": SHARD, "c": OTHER}), None)
    check.pytest_testnodedown(_node({"a": OTHER, "b": None, "c": None, "d": SHARD}), None)
    check.pytest_testnodedown(_node({"a": None, "b": SHARD}), None)
    assert check._remote == {"a": OTHER, "b": SHARD, "c": OTHER, "d": SHARD}


# -- the recorder and the check in a process, with stand-ins for pytest's objects ------------


class _Stash(dict):  # type: ignore[type-arg]
    pass


def _config(recorder: gate.GateRecorder | None, **plugins: object) -> SimpleNamespace:
    stash = _Stash()
    if recorder is not None:
        stash[gate.GATE_KEY] = recorder
    return SimpleNamespace(
        stash=stash,
        pluginmanager=SimpleNamespace(get_plugin=lambda name: plugins.get(name)),
        option=SimpleNamespace(collectonly=False),
    )


def _item(config: SimpleNamespace, nodeid: str) -> SimpleNamespace:
    return SimpleNamespace(config=config, nodeid=nodeid, gate_phases={})


def test_the_recorder_notes_items_and_tells_its_own_deselection_apart() -> None:
    recorder = gate.GateRecorder()
    config = _config(recorder)
    a, b, c = (_item(config, n) for n in ("a", "b", "c"))
    stranger = _item(config, "not a review item")
    for item in (a, b, c):
        gate.note_collected(item)  # type: ignore[arg-type]
    gate.note_own_deselection(config, [b])  # type: ignore[arg-type]
    recorder.pytest_deselected([b, c, stranger])  # type: ignore[list-item]
    a.nodeid = "a-renamed"  # read when asked, not when made
    assert recorder.collected() == {"a-renamed": None, "b": SHARD, "c": OTHER}
    # Without a recorder (the plugin off) nothing is noted and nothing fails.
    bare = _config(None)
    gate.note_collected(_item(bare, "x"))  # type: ignore[arg-type]
    gate.note_own_deselection(bare, [_item(bare, "x")])  # type: ignore[arg-type,list-item]


def test_the_record_rides_on_the_report_of_review_items_only() -> None:
    recorder = gate.GateRecorder()
    config = _config(recorder)
    item, other = _item(config, "a"), _item(config, "b")
    gate.note_collected(item)  # type: ignore[arg-type]
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


def test_a_worker_sends_what_it_collected_and_a_controller_does_not() -> None:
    recorder = gate.GateRecorder()
    config = _config(recorder)
    gate.note_collected(_item(config, "a"))  # type: ignore[arg-type]
    worker = SimpleNamespace(config=SimpleNamespace(workeroutput={}))
    recorder.pytest_sessionfinish(worker)  # type: ignore[arg-type]
    assert worker.config.workeroutput == {gate.WORKEROUTPUT_KEY: {"a": None}}
    controller = SimpleNamespace(config=SimpleNamespace())
    recorder.pytest_sessionfinish(controller)  # type: ignore[arg-type]


def test_a_phase_records_that_it_ran_and_whether_it_raised() -> None:
    class Item:
        def __init__(self) -> None:
            self.gate_phases: dict[str, str] = {}

        @gate.recorded("setup")
        def setup(self) -> None:
            assert self.gate_phases == {"setup": "running"}

        @gate.recorded("call")
        def runtest(self) -> None:
            raise KeyboardInterrupt

    item = Item()
    item.setup()
    with pytest.raises(KeyboardInterrupt):
        item.runtest()
    assert item.gate_phases == {"setup": PASSED, "call": FAILED}
    assert Item.setup.__name__ == "setup"


def _report(nodeid: str, when: str, outcome: str, record: str | None) -> pytest.TestReport:
    report = pytest.TestReport(nodeid, ("f", 1, nodeid), {}, outcome, None, when)
    if record is not None:
        setattr(report, gate.GATE_ATTR, record)
    return report


def _session(**kw: object) -> SimpleNamespace:
    return SimpleNamespace(
        shouldfail=kw.get("shouldfail", False),
        shouldstop=kw.get("shouldstop", False),
        exitstatus=kw.get("exitstatus", 0),
    )


def _decided(
    recorder: gate.GateRecorder,
    reports: list[pytest.TestReport],
    *,
    enforced: str | None = "CI=true",
    strict: bool = False,
    collectonly: bool = False,
    **session: object,
) -> tuple[gate.GateCheck, SimpleNamespace]:
    config = _config(recorder, terminalreporter=object())
    config.option.collectonly = collectonly
    check = gate.GateCheck(config, recorder, enforced=enforced, strict=strict)  # type: ignore[arg-type]
    for report in reports:
        check.pytest_runtest_logreport(report)
    ended = _session(**session)
    hook = check.pytest_sessionfinish(ended)  # type: ignore[arg-type]
    next(hook)
    with pytest.raises(StopIteration):
        hook.send(None)
    return check, ended


def _recorder(*nodeids: str) -> gate.GateRecorder:
    recorder = gate.GateRecorder()
    config = _config(recorder)
    for nodeid in nodeids:
        gate.note_collected(_item(config, nodeid))  # type: ignore[arg-type]
    return recorder


def _ran(nodeid: str, call: str = "passed", record: str = PASSED) -> list[pytest.TestReport]:
    return [
        _report(nodeid, "setup", "passed", PASSED),
        _report(nodeid, "call", call, record),
        _report(nodeid, "teardown", "passed", PASSED),
    ]


def test_a_run_whose_reviews_counted_as_recorded_keeps_its_status() -> None:
    check, session = _decided(_recorder("a"), _ran("a") + _ran("not-a-review-item"))
    assert (check.problems, check.headline, check.required, session.exitstatus) == (
        [],
        None,
        None,
        0,
    )
    assert check.lines() == []


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
    check, session = _decided(_recorder("a"), [], collectonly=True)
    assert check.problems[0].fix == (
        "it never ran: --collect-only runs nothing; drop it (from addopts too): a gate runs reviews"
    )
    assert session.exitstatus == 1


def test_without_enforcement_nothing_is_kept_or_changed() -> None:
    check, session = _decided(_recorder("a"), _ran("a", "passed", FAILED), enforced=None)
    assert (check._reports, check.problems, check.required, session.exitstatus) == ({}, [], None, 0)


def test_shard_items_of_another_job_are_not_owed() -> None:
    recorder = _recorder("a", "b")
    recorder.own_deselection.add(next(k for k, i in recorder.items.items() if i.nodeid == "b"))
    recorder.pytest_deselected([i for i in recorder.items.values() if i.nodeid == "b"])  # type: ignore[arg-type]
    check, _ = _decided(recorder, [])
    assert check.headline == (
        "0 review items ran, but --adversarial-review collected 1: the gate did not run"
    )


def test_under_xdist_the_workers_reports_are_what_was_collected() -> None:
    recorder = _recorder("local-only")
    config = _config(recorder, dsession=object(), terminalreporter=object())
    check = gate.GateCheck(config, recorder, enforced="CI=true", strict=False)  # type: ignore[arg-type]
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
    check.pytest_testnodedown(_node({"w": None}), None)
    assert check._collected() == ({"w": None}, [])


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
    config = _config(recorder)
    check = gate.GateCheck(config, recorder, enforced="CI=true", strict=False)  # type: ignore[arg-type]
    hook = check.pytest_sessionfinish(_session())  # type: ignore[arg-type]
    next(hook)
    with pytest.raises(StopIteration):
        hook.send(None)
    assert capsys.readouterr().err == "".join(line + "\n" for line in check.lines())


def test_problem_lines_are_printed_on_one_line_neutralised() -> None:
    recorder = _recorder("a\n::error::x")
    check, _ = _decided(recorder, [])
    assert check.lines()[1].startswith("pytest-advreview: a\\x0a::error::x: expected")


def test_a_dropped_item_that_nothing_stopped_names_the_removal() -> None:
    check, _ = _decided(_recorder("a"), [])
    assert check.problems[0].fix == (
        "a conftest or plugin removed it from the run (pytest_collection_modifyitems, "
        "pytest_runtest_protocol); remove that code or keep it away from review items"
    )


def test_items_skipped_before_their_review_did_not_run() -> None:
    skipped = [
        _report("a", "setup", "skipped", NOT_RUN),
        _report("a", "teardown", "passed", PASSED),
    ]
    check, _ = _decided(_recorder("a"), skipped)
    assert check.headline == (
        "0 review items ran, but --adversarial-review collected 1: the gate did not run"
    )


def test_after_a_failed_setup_a_missing_teardown_is_still_a_problem() -> None:
    found = problems(phases(setup=Logged("failed", False, FAILED), call=None, teardown=None))
    assert [p.seen for p in found] == ["no teardown report"]


def test_under_xdist_no_worker_report_fails_the_run() -> None:
    recorder = _recorder("a")
    config = _config(recorder, dsession=object(), terminalreporter=object())
    check = gate.GateCheck(config, recorder, enforced="CI=true", strict=False)  # type: ignore[arg-type]
    ended = _session()
    hook = check.pytest_sessionfinish(ended)  # type: ignore[arg-type]
    next(hook)
    with pytest.raises(StopIteration):
        hook.send(None)
    assert [p.nodeid for p in check.problems] == ["(xdist)"]
    assert ended.exitstatus == 1


def test_with_a_terminal_nothing_is_written_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    check, _ = _decided(_recorder("a"), [])
    assert check.problems
    assert capsys.readouterr().err == ""
