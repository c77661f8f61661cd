"""The gate's own account of its review items, and the exit status that follows it.

pytest's exit status counts the reports it logged, and anything in the process can
change those: a conftest that skips review items, deselects or drops them, rewrites
their reports to passed (a ``pytest_runtest_makereport`` hookwrapper, a
``pytest_runtest_logreport`` that edits ``report.outcome``), an ``addopts = -m "not
adversarial_review"``, or a ``pytest_sessionfinish`` that sets ``session.exitstatus =
0``.  Under CI (``CI`` or ``GITHUB_ACTIONS`` true) and with ``--advreview-strict-exit``
the run's exit status follows the plugin's own records instead:

* **What was collected**: every review item notes itself here when it is made
  (:func:`note_collected`), before any other plugin's ``pytest_collection_modifyitems``
  sees it; the plugin's own deselection (``--advreview-shard``) is noted by the plugin
  itself (:func:`note_own_deselection`), so any other deselection is told apart.
* **What each phase did**: the item's setup (the review), call (the verdict) and
  teardown (the workspace check) record whether they ran and whether they raised,
  where the outcome is decided (:func:`recorded`), not in a hook another plugin can wrap.
* **What pytest logged**: the phase record rides on the phase's report (an attribute,
  so it reaches the xdist controller with it); the controller keeps every logged report
  and reads their outcomes at session finish, after every other hook had its turn.

A review item that did not run (skipped, xfailed, deselected, dropped, stopped), or
whose logged report is milder than the plugin's record (a failure logged as passed or
skipped), is a problem: the terminal summary names the item, what the plugin recorded,
what pytest logged and the fix, and the exit status becomes a failure.  It is set at
session finish (after every ordinary ``pytest_sessionfinish``) and again when pytest's
``pytest_cmdline_main`` returns (``plugin.py``), so a conftest's session finish or
unconfigure cannot lower it.

What this cannot stop: a conftest is arbitrary code in the same process; it can
monkeypatch this module, the items or ``sys.exit(0)``.  The GitHub Action imports
nothing of the checkout (``--noconftest``, no plugin autoload, the gate's own
configuration), which is the only place a gate's verdict does not depend on the
reviewed repository's code.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import pytest

from .constants import EXIT_REVIEW_ERRORS
from .outbound import one_line

__all__ = [
    "GATE_ATTR",
    "GATE_KEY",
    "GateCheck",
    "GateRecorder",
    "Logged",
    "Problem",
    "check",
    "final_status",
    "gate_status",
    "internal_error_status",
    "note_collected",
    "note_own_deselection",
    "recorded",
    "unreviewed",
]

#: Report attribute: the plugin's record of the phase the report is of.
GATE_ATTR = "advreview_gate"
#: ``config.workeroutput`` keys: an xdist worker's review items and their deselection,
#: and each one's target.
WORKEROUTPUT_KEY = "advreview_gate"
WORKEROUTPUT_TARGETS = "advreview_gate_targets"
#: Phase records: the plugin's phase returned, raised, or never ran.
PASSED = "passed"
FAILED = "failed"
NOT_RUN = "not run"
_RUNNING = "running"
#: How a collected review item left the run before it ran: the plugin's own shard, or
#: anything else (``-m``/``-k``, ``--deselect``, ``--lf``, a conftest).
SHARD = "shard"
OTHER = "other"

_PHASES = ("setup", "call", "teardown")
_WHAT = {
    "setup": "the review (setup)",
    "call": "the verdict (call)",
    "teardown": "the workspace check (teardown)",
}
_CHANGED = (
    "a conftest or plugin changed this review item's report (a pytest_runtest_makereport "
    "hookwrapper, or a pytest_runtest_logreport that edits the report); remove that code "
    "or keep it away from review items"
)

_Phase = TypeVar("_Phase", bound=Callable[[Any], None])


# -- the records, made where the outcome is decided ----------------------------------------


def recorded(when: str) -> Callable[[_Phase], _Phase]:
    """Decorate a review item's phase method: note that it ran and whether it raised.

    The record lives on the item (``item.gate_phases``); pytest's hooks never see it,
    so wrapping them cannot change it.  A phase that failed stays failed when the item
    runs again (a rerun or retry plugin): a later pass never turns the record into a
    pass, also where the plugin edits the first report instead of logging a new one.
    """

    def wrap(method: _Phase) -> _Phase:
        @functools.wraps(method)
        def run(item: Any) -> None:
            phases: dict[str, str] = item.gate_phases
            failed_before = phases.get(when) == FAILED
            phases[when] = _RUNNING
            try:
                method(item)
            except BaseException:
                phases[when] = FAILED
                raise
            phases[when] = FAILED if failed_before else PASSED

        return cast(_Phase, run)

    return wrap


GATE_KEY = pytest.StashKey["GateRecorder"]()


def note_collected(item: pytest.Item, target: str) -> None:
    """A review item of ``target`` (its key) was made: it must run, unless the plugin
    deselects it itself."""
    recorder = item.config.stash.get(GATE_KEY, None)
    if recorder is not None:
        recorder.items[id(item)] = item
        recorder.target_of[id(item)] = target


def note_own_deselection(config: pytest.Config, items: Iterable[pytest.Item]) -> None:
    """The plugin itself deselects ``items`` (``--advreview-shard``): not a problem."""
    recorder = config.stash.get(GATE_KEY, None)
    if recorder is not None:
        recorder.own_deselection.update(id(item) for item in items)


class GateRecorder:
    """Every process: the review items made here, their deselection, their phase records."""

    def __init__(self) -> None:
        #: Review items made in this process, by ``id``, and the target each reviews.
        self.items: dict[int, pytest.Item] = {}
        self.target_of: dict[int, str] = {}
        self.own_deselection: set[int] = set()
        #: Deselected review items (by ``id``): ``SHARD`` or ``OTHER``.
        self.deselected: dict[int, str] = {}

    def collected(self) -> dict[str, str | None]:
        """Node id of each review item made here -> how it was deselected (``None``: not).

        Node ids are read now, not when the item was made: ``--dist=loadgroup`` renames
        items during collection.
        """
        return {item.nodeid: self.deselected.get(key) for key, item in self.items.items()}

    def targets(self) -> dict[str, str]:
        """Node id of each review item made here -> the key of the target it reviews."""
        return {item.nodeid: self.target_of[key] for key, item in self.items.items()}

    @pytest.hookimpl
    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        """Note every deselected review item, and whether the plugin's shard did it."""
        for item in items:
            key = id(item)
            if key in self.items:
                self.deselected[key] = SHARD if key in self.own_deselection else OTHER

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Put the plugin's record of the phase on its report.

        ``tryfirst`` makes this the outermost wrapper registered so far: a report that an
        inner wrapper replaced gets the record too (and is then compared with it); a
        later, outer one that replaces the report drops the record, which is a problem.
        """
        report = yield
        if id(item) in self.items:
            phases: dict[str, str] = getattr(item, "gate_phases", {})
            setattr(report, GATE_ATTR, phases.get(call.when, NOT_RUN))
        return report

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """On an xdist worker: send what was collected to the controller."""
        output = getattr(session.config, "workeroutput", None)
        if isinstance(output, dict):
            output[WORKEROUTPUT_KEY] = self.collected()
            output[WORKEROUTPUT_TARGETS] = self.targets()


# -- the check -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Logged:
    """What pytest logged for one phase of a review item, read at session finish."""

    outcome: str
    xfail: bool
    #: The plugin's record carried by the report (``None``: the report has none).
    record: str | None
    #: The skip or xfail reason, if any.
    reason: str = ""
    #: How many reports of the phase pytest logged (more than one: it ran again).
    count: int = 1

    @classmethod
    def of(cls, report: pytest.TestReport) -> Logged:
        """From a logged report, as it is now (after every hook had its turn)."""
        reason = ""
        longrepr = report.longrepr
        if report.skipped and isinstance(longrepr, tuple) and len(longrepr) == 3:
            reason = str(longrepr[2])
        xfail = hasattr(report, "wasxfail")
        if xfail and not reason:
            reason = str(getattr(report, "wasxfail", ""))
        record = getattr(report, GATE_ATTR, None)
        return cls(report.outcome, xfail, None if record is None else str(record), reason)

    @classmethod
    def of_all(cls, reports: Sequence[pytest.TestReport]) -> Logged:
        """Every report pytest logged for one phase, folded the way the gate counts them.

        A rerun or retry plugin, or a copy of the item, logs a phase again.  The record is
        the worst any report carried (a later pass never replaces a failing first
        verdict), and the outcome ``failed`` when any report failed (pytest counts each
        in its exit status), else the last report's.
        """
        each = [cls.of(report) for report in reports]
        last = each[-1]
        records = [logged.record for logged in each]
        record = next((r for r in (None, FAILED, NOT_RUN) if r in records), records[0])
        failed = any(logged.outcome == "failed" for logged in each)
        return cls("failed" if failed else last.outcome, last.xfail, record, last.reason, len(each))

    def seen(self) -> str:
        """``passed``, ``xfailed (reason)``, ``skipped (reason)``."""
        word = "xfailed" if self.xfail and self.outcome != "passed" else self.outcome
        return f"{word} ({self.reason})" if self.reason and word != "passed" else word


@dataclass(frozen=True)
class Problem:
    """A review item that did not count as the plugin recorded it."""

    nodeid: str
    expected: str
    seen: str
    fix: str
    #: The plugin recorded a failed verdict that pytest did not log as failed.
    hides_failure: bool = False

    def line(self) -> str:
        """One line for the terminal summary."""
        return f"{self.nodeid}: expected {self.expected}; pytest logged {self.seen}: {self.fix}"


def _compare(nodeid: str, when: str, logged: Logged) -> Problem | None:
    record = logged.record
    what = _WHAT[when]
    if record is None:
        return Problem(
            nodeid,
            f"{what} with the plugin's record",
            f"a {logged.outcome} {when} report without it",
            "a conftest or plugin replaced this review item's report or logged one of its "
            "own; remove that code or keep it away from review items",
        )
    if logged.outcome == "failed":
        return None  # as bad as anything the plugin recorded: the run fails anyway
    if record == FAILED:
        if logged.xfail:
            fix = (
                "an xfail mark (or pytest.xfail) from a conftest or plugin turned the failure "
                "into an xfail; remove it from review items"
            )
        elif logged.count > 1:
            fix = (
                f"pytest logged this phase {logged.count} times (a rerun or retry plugin, or "
                "a copy of the item, ran it again) and the last report hides the failure; "
                "the gate keeps the first verdict: keep reruns away from review items"
            )
        else:
            fix = _CHANGED
        return Problem(nodeid, f"{what} failed", logged.seen(), fix, hides_failure=when == "call")
    if record == NOT_RUN:
        if logged.outcome == "skipped":
            return Problem(
                nodeid,
                f"{what} to run",
                f"{logged.seen()} before it ran",
                "a skip or skipif mark, an xfail(run=False), or pytest.skip from a conftest "
                "or plugin kept the review from running; remove it from review items",
            )
        return Problem(
            nodeid,
            f"{what} to run",
            f"{logged.outcome}, but the plugin's {when} never ran",
            f"a conftest or plugin replaced this review item's {when} or its report; remove "
            "that code",
        )
    if logged.outcome != "passed":  # a phase that returned, logged as skipped
        return Problem(nodeid, f"{what} {record}", logged.seen(), _CHANGED)
    return None


def check(
    collected: Mapping[str, str | None],
    logged: Mapping[str, Mapping[str, Logged]],
    *,
    stopped: str | None = None,
    deselected_by: str | None = None,
) -> list[Problem]:
    """The review items that did not count as the plugin recorded them, one per item.

    :param collected: every review item made -> how it was deselected (``SHARD``,
        ``OTHER``, ``None``: it was not).
    :param logged: node id -> phase -> what pytest logged for it (:meth:`Logged.of_all`).
    :param stopped: why pytest ran nothing more, if it knows (``-x``, ``--maxfail``, a
        conftest's ``session.shouldstop``, ``--collect-only``); named for the items that
        never ran.
    :param deselected_by: the options of this run that deselect (``--sw``, ``-k``, ...),
        named for the deselected items.
    """
    problems: list[Problem] = []
    for nodeid in sorted(collected):
        how = collected[nodeid]
        phases = logged.get(nodeid, {})
        if how == SHARD and not phases:
            continue  # another shard's item (--advreview-shard)
        if how == OTHER and not phases:
            problems.append(
                Problem(
                    nodeid,
                    "the review to run (it was collected)",
                    f"deselected by {deselected_by}" if deselected_by else "deselected",
                    "under CI every review item runs: drop the -m/-k/--deselect (or "
                    'the addopts = -m "not adversarial_review" in the ini file, or the '
                    "conftest or plugin) that deselects it; to split reviews between jobs "
                    "use --advreview-shard=K/N",
                )
            )
            continue
        if not phases:
            fix = (
                f"it never ran: {stopped}"
                if stopped
                else "a conftest or plugin removed it from the run (pytest_collection_"
                "modifyitems, pytest_runtest_protocol); remove that code or keep it away "
                "from review items"
            )
            problems.append(Problem(nodeid, "the review to run", "no report", fix))
            continue
        found = _phase_problems(nodeid, phases)
        if found:
            # One line per item: its first problem, in phase order; whether any phase hid
            # a failed verdict still decides the exit status.
            first = found[0]
            hides = any(problem.hides_failure for problem in found)
            problems.append(dataclasses.replace(first, hides_failure=hides))
    return problems


def unreviewed(required: Iterable[str], made: Iterable[str], *, why: str) -> list[Problem]:
    """The targets the gate must see (``required``, their keys) that no review item of
    the run reviews (``made``: the targets of the items made), in order.

    :param why: what kept pytest from making their items, as far as the run can tell.
    """
    have = set(made)
    return [
        Problem(
            key,
            "its review (a target the gate must see)",
            "no review item of it",
            f"{why}; under a gate every selected target is reviewed",
        )
        for key in dict.fromkeys(required)
        if key not in have
    ]


def _option(config: pytest.Config, name: str) -> object:
    return config.getoption(name, default=None)


def deselected_by(config: pytest.Config) -> str | None:
    """The options of this run that deselect items, named for a deselected review item."""
    named = [
        flag
        for dest, flag in (
            ("lf", "--lf (last failed: it did not fail last time)"),
            ("stepwise", "--sw (stepwise: it comes before the test that failed last time)"),
            ("stepwise_skip", "--sw-skip (stepwise)"),
            ("keyword", "-k"),
            ("markexpr", "-m"),
            ("deselect", "--deselect"),
        )
        if _option(config, dest)
    ]
    return ", ".join(named) or None


#: Why a review of an interrupted run has no verdict (SIGTERM and SIGHUP take Ctrl-C's path).
_INTERRUPTED = "pytest was interrupted (Ctrl-C, SIGTERM or SIGHUP)"


def uncollected_by(config: pytest.Config) -> str:
    """What kept pytest from making a target's review item, as far as the run can tell."""
    if _option(config, "lf"):
        return (
            "pytest's --lf (last failed) collected only the files of the tests "
            ".pytest_cache/v/cache/lastfailed names and skipped this plan's file: drop --lf "
            "(from addopts too) and the committed .pytest_cache"
        )
    return (
        "a conftest or plugin kept pytest from making its review item (a "
        "pytest_make_collect_report or pytest_collect_file of its own): remove that code or "
        "keep it away from the plans"
    )


def _phase_problems(nodeid: str, phases: Mapping[str, Logged]) -> list[Problem]:
    found: list[Problem] = []
    setup = phases.get("setup")
    for when in _PHASES:
        logged = phases.get(when)
        if logged is not None:
            problem = _compare(nodeid, when, logged)
            if problem is not None:
                found.append(problem)
            continue
        # pytest runs call only after a passed setup, and always tears down.
        if when == "call" and (setup is None or setup.outcome != "passed"):
            continue
        found.append(
            Problem(
                nodeid,
                f"{_WHAT[when]} to run",
                f"no {when} report",
                "pytest --setup-only/--setup-plan, or a conftest or plugin, kept the phase "
                "from running or its report from being logged; run without it"
                if when == "call"
                else "a conftest or plugin kept the phase from running or its report from "
                "being logged; remove that code",
            )
        )
    return found


def gate_status(
    problems: Iterable[Problem],
    logged: Mapping[str, Mapping[str, Logged]],
    *,
    strict_exit: bool,
) -> int | None:
    """The least exit status the plugin's records call for (``None``: no opinion).

    A failed verdict (logged as failed or not) is 1; review errors, or review items that
    did not count as recorded, are "the gate could not run" (``EXIT_REVIEW_ERRORS`` with
    ``--advreview-strict-exit``, else 1).
    """
    problems = list(problems)
    records = [(when, p.record) for phases in logged.values() for when, p in phases.items()]
    if any(when == "call" and record == FAILED for when, record in records) or any(
        p.hides_failure for p in problems
    ):
        return int(pytest.ExitCode.TESTS_FAILED)
    if problems or any(record == FAILED for _, record in records):
        return EXIT_REVIEW_ERRORS if strict_exit else int(pytest.ExitCode.TESTS_FAILED)
    return None


def final_status(current: int, required: int | None) -> int:
    """``current``, raised to ``required`` when it says success or only review errors.

    Never lowered, and a status that already says "failed", "interrupted" or "internal
    error" is kept.
    """
    if required is None:
        return current
    if current in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        return required
    if current == EXIT_REVIEW_ERRORS and required == pytest.ExitCode.TESTS_FAILED:
        return required
    return current


def internal_error_status(required: int | None) -> int:
    """The least exit status of a review run in which pytest had an internal error.

    pytest's own status for it (3) unless the records already call for a failure: a
    review that did not run to its report is never a pass, whatever counted the rest.
    """
    if required is None or required in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        return int(pytest.ExitCode.INTERNAL_ERROR)
    return required


class GateCheck:
    """The controller (or the only process): the check, its exit status and summary.

    :param enforced: why the check applies (``CI=true``, ``--advreview-strict-exit``);
        ``None``: it does not, and nothing here changes the run.
    """

    def __init__(
        self,
        config: pytest.Config,
        recorder: GateRecorder,
        *,
        enforced: str | None,
        strict: bool,
        required: Callable[[], Iterable[str]],
    ) -> None:
        """:param required: the keys of the targets the gate must see reviewed, decided
        from the repository (``ReviewSession.required_targets``), read at session finish.
        """
        self.config = config
        self.recorder = recorder
        self.required_targets = required
        self.enforced = enforced
        self.strict = strict
        #: node id -> phase -> every report pytest logged, in order (read at session
        #: finish): a rerun's or a copy's report never replaces an earlier one.
        self._reports: dict[str, dict[str, list[pytest.TestReport]]] = {}
        #: What xdist workers collected (``None``: no worker has reported yet), and the
        #: target of each item.
        self._remote: dict[str, str | None] | None = None
        self._remote_targets: dict[str, str] = {}
        self.problems: list[Problem] = []
        self.headline: str | None = None
        #: The least exit status the records call for (decided at session finish).
        self.required: int | None = None
        #: Whether pytest reported an internal error (here, or an xdist worker's).
        self.internal_error = False

    @pytest.hookimpl
    def pytest_internalerror(self) -> None:
        """Note an internal error, wherever it happened.

        An xdist worker's internal error (a report it could not send, a hook that raised)
        reaches the controller only as this hook: xdist prints it and goes on, and the
        run, whose items never reported, would end "no tests ran" (exit 0) outside CI.
        """
        self.internal_error = True
        self.required = internal_error_status(self.required)

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep the report object itself: its outcome is read at session finish."""
        if self.enforced is not None:
            phases = self._reports.setdefault(report.nodeid, {})
            phases.setdefault(report.when, []).append(report)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        """An xdist worker's review items (each worker collects them all)."""
        output = getattr(node, "workeroutput", None)
        sent = output.get(WORKEROUTPUT_KEY) if isinstance(output, dict) else None
        if not isinstance(sent, dict):
            return
        merged = self._remote if self._remote is not None else {}
        for nodeid, how in sent.items():
            # One worker's "deselected by something else" is enough.
            if merged.get(nodeid) != OTHER:
                merged[str(nodeid)] = None if how is None else str(how)
        self._remote = merged
        targets = output.get(WORKEROUTPUT_TARGETS) if isinstance(output, dict) else None
        if isinstance(targets, dict):
            self._remote_targets.update({str(k): str(v) for k, v in targets.items()})

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, None, None]:
        """Decide after every other ``pytest_sessionfinish`` but before the terminal summary.

        ``trylast`` makes this the innermost wrapper: its code after ``yield`` runs once
        every plain implementation (the report writers, a conftest's) has run, and before
        the terminal reporter's wrapper writes the summary.
        """
        try:
            return (yield)
        finally:
            if self.enforced is not None:
                self._decide(session)
            if self.internal_error:
                self.required = internal_error_status(self.required)
                session.exitstatus = final_status(int(session.exitstatus), self.required)

    def _collected(self) -> tuple[dict[str, str | None], list[Problem]]:
        if self.config.pluginmanager.get_plugin("dsession") is None:
            return self.recorder.collected(), []
        if self._remote is None:
            missing = Problem(
                "(xdist)",
                "each worker to report the review items it collected",
                "none did",
                "a worker ended before its session finish (see the errors above); run again",
            )
            return {}, [missing]
        return self._remote, []

    def _targets(self) -> dict[str, str]:
        """Node id of every review item made (by the workers under xdist) -> its target."""
        if self.config.pluginmanager.get_plugin("dsession") is None:
            return self.recorder.targets()
        return self._remote_targets

    def _decide(self, session: pytest.Session) -> None:
        collected, problems = self._collected()
        logged = {
            nodeid: {when: Logged.of_all(reports) for when, reports in phases.items()}
            for nodeid, phases in self._reports.items()
            if nodeid in collected
        }
        stopped = session.shouldfail or session.shouldstop
        interrupted = session.exitstatus == pytest.ExitCode.INTERRUPTED
        if self.config.option.collectonly:
            # Listing the review items is not running them: a gate run that only collects
            # (an addopts = --collect-only) must not pass.
            stopped = "--collect-only runs nothing; drop it (from addopts too): a gate runs reviews"
        elif stopped:
            stopped = f"pytest stopped early ({stopped})"
        elif interrupted:
            # Not "a conftest or plugin removed it": the reviews in flight were ended.
            stopped = _INTERRUPTED
        problems += check(
            collected,
            logged,
            stopped=str(stopped) if stopped else None,
            deselected_by=deselected_by(self.config),
        )
        # What the repository says must be reviewed, whatever pytest collected.
        required = list(dict.fromkeys(self.required_targets()))
        made = self._targets().values()
        why = f"{_INTERRUPTED} before it reported" if interrupted else uncollected_by(self.config)
        missing = unreviewed(required, made, why=why)
        problems += missing
        ran = sum(1 for phases in logged.values() if _ran(phases))
        owed = sum(1 for nodeid, how in collected.items() if how != SHARD or nodeid in logged)
        if owed and not ran:
            self.headline = (
                f"0 review items ran, but --adversarial-review collected {owed}: the gate "
                "did not run"
            )
        elif missing and len(missing) == len(problems):
            self.headline = (
                f"{len(missing)} of {len(required)} targets the gate must see had no review "
                "item: nothing reviewed them"
            )
        elif problems:
            total = max(owed + len(missing), len(problems))
            self.headline = (
                f"{len(problems)} of {total} review items did not count as the plugin recorded them"
            )
        self.problems = problems
        self.required = gate_status(problems, logged, strict_exit=self.strict)
        session.exitstatus = final_status(int(session.exitstatus), self.required)
        if self.problems and self.config.pluginmanager.get_plugin("terminalreporter") is None:
            for line in self.lines():
                sys.stderr.write(line + "\n")

    def lines(self) -> list[str]:
        """The summary: why it applies, what happened, per item what and the fix."""
        if self.headline is None:
            return []
        return [
            f"pytest-advreview: GATE FAILED ({self.enforced}: the exit status follows the "
            f"plugin's records): {self.headline}",
            # Node ids and skip reasons come from conftests and plugins: printed neutralised.
            *(f"pytest-advreview: {one_line(problem.line())}" for problem in self.problems),
        ]

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """After the review summary: what did not count, and how to fix it."""
        lines = self.lines()
        if not lines:
            return
        terminalreporter.write_sep("=", "adversarial review gate", red=True, bold=True)
        for line in lines:
            terminalreporter.write_line(line, red=True)


def _ran(phases: Mapping[str, Logged]) -> bool:
    setup = phases.get("setup")
    return setup is not None and setup.record not in (None, NOT_RUN)
