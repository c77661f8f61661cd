"""Collection nodes: a plan file collector and the review item.

Phases follow the design: the reviewer loop runs in **setup** (so "the reviewer could not
run" is a setup error), the verdict is judged in **call**, and the workspace is compared
in **teardown** (so a reviewer that changed files errors even when the review passed).
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _pytest._code.code import (
    ExceptionInfo,
    ExceptionRepr,
    ReprEntry,
    ReprFileLocation,
    ReprTraceback,
    TerminalRepr,
)
from _pytest._io import TerminalWriter

from . import engine, exitstatus, outbound, runstash, warnfilter
from .constants import MARKER, PLAN_ITEM_NAME
from .git import escaped_text, quote_path, unpassable_path
from .material import ReviewInputError, TargetSpec
from .models import FailureText, Finding
from .outcome import (
    Outcome,
    OutcomeKind,
    ReviewerUnavailable,
    ReviewFailed,
    ReviewWarning,
    WorkspaceMutated,
    error_report,
    failure_report,
    failure_summary,
    user_properties,
    warning_message,
)
from .record import item_record
from .report.files import Anchors, find_repo_root
from .review import ReviewRun
from .runstash import RunStash

if TYPE_CHECKING:
    from .selection import TargetSelection

__all__ = ["FirstReview", "PlanFile", "ReviewItem", "claim_ahead", "plan_spec"]

_OWN_ERRORS = (ReviewFailed, ReviewerUnavailable, WorkspaceMutated)
#: Built once: looking a marker up by name per item costs more than the item at 5,000 plans.
_REVIEW_MARK = getattr(pytest.mark, MARKER)


class ReviewRepr(ExceptionRepr):
    """A review failure: the text in the report, one line in the short summary.

    ``reprcrash.message`` is what pytest's short test summary (untruncated on CI) and
    JUnit's ``message`` attribute show, so the review is not printed twice.  An
    :class:`ExceptionRepr` with one traceback entry and no source lines, so that report
    plugins that read a failure's place from there (the first entry's file and line, as
    pytest-github-actions-annotate-failures does) find the finding's place, not the plan's
    first line.  The text is already in the ``--tb`` style :meth:`ReviewItem.repr_failure`
    chose.
    """

    def __init__(self, text: str, summary: str, path: str, line: int = 1) -> None:
        # Whatever built the text (a review, an error of the reviewer, a worker's report),
        # it is redacted and neutralised here, where every failure text passes.
        self.text = outbound.terminal_text(text)
        path = quote_path(path)  # reports and xdist carry text: a non-UTF-8 name escaped
        self.reprcrash: ReprFileLocation | None = ReprFileLocation(
            path, line, outbound.one_line(summary)
        )
        # The entry names the file as pytest's traceback entries do: relative to the
        # working folder when inside it (annotations want the checkout's relative path).
        shown = os.path.relpath(path) if os.path.isabs(path) else path
        where = ReprFileLocation(path if shown.startswith("..") else shown, line, summary)
        self.reprtraceback = ReprTraceback(
            [ReprEntry([], None, None, where, "short")], None, "short"
        )
        self.sections = []

    def toterminal(self, tw: TerminalWriter) -> None:
        """Write the text as it is, line by line (no colour needed to read it)."""
        for line in self.text.rstrip("\n").splitlines():
            tw.line(line)

    def to_wire(self) -> dict[str, Any]:
        """The JSON form an xdist worker sends in place of pytest's flattened string."""
        assert self.reprcrash is not None
        crash = self.reprcrash
        wire = FailureText(
            text=self.text, summary=crash.message, path=crash.path, line=crash.lineno
        )
        return wire.model_dump(mode="json")

    @classmethod
    def from_wire(cls, data: object) -> ReviewRepr | None:
        """The repr back from :meth:`to_wire`'s output; ``None`` for anything else."""
        if not isinstance(data, dict) or data.get("kind") != "advreview-failure":
            return None
        wire = FailureText.model_validate(data)
        return cls(wire.text, wire.summary, wire.path, wire.line)


@dataclass
class FirstReview:
    """The first pass of a target's review in this process's run, which every later pass
    replays: one verdict per target per run.

    A rerun or retry of the item (pytest-rerunfailures, pytest-retry, anything that runs
    its protocol again), and another item of the same target (pytest-flakefinder's
    copies, a duplicated item) are later passes: they never ask the reviewer again, so a
    second sample of a nondeterministic reviewer cannot replace a failing first verdict.
    """

    #: The item (``id``) whose pass reviews; the jobs pool claims it before its setup.
    owner: int
    nodeid: str
    reviewed: engine.Reviewed | None = None
    #: The record the first pass's reports carried last (its teardown may add to it).
    record_json: str | None = None
    #: What each phase of the first pass raised (``None``: it returned); a phase missing
    #: here never finished.
    raised: dict[str, BaseException | None] = field(default_factory=dict)


#: The run's first passes by target key (this process's; see ``docs/safety.md``).
_FIRST_REVIEWS = pytest.StashKey[dict[str, FirstReview]]()


def claim_ahead(item: pytest.Item) -> TargetSpec | None:
    """The target the jobs pool may review ahead of ``item``; ``None`` for an item that is
    no review item, or whose target another item reviews (then ``item`` replays it)."""
    if not isinstance(item, ReviewItem):
        return None
    return item.spec if item.first_review().owner == id(item) else None


class PlanFile(pytest.File):
    """A markdown plan selected for review; collects one :class:`ReviewItem`."""

    def collect(self) -> Iterable[ReviewItem]:
        """One review item per plan, named ``adversarial-review``."""
        spec = plan_spec(_run(self.config).plans, self.path)
        yield ReviewItem.from_parent(self, name=PLAN_ITEM_NAME, spec=spec)


def plan_spec(plans: TargetSelection, path: Path) -> TargetSpec:
    """The target of the plan at ``path`` (as collected there)."""
    return TargetSpec(
        kind="plan",
        key=plans.relpath(path),
        path=plans.plan_source(path),
        error=unpassable_path(os.fspath(path), "the plan"),
    )


class ReviewItem(pytest.Item):
    """One adversarial review (a plan or the change set) as a test item."""

    def __init__(self, *, spec: TargetSpec, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.add_marker(_REVIEW_MARK)
        self.review: ReviewRun | None = None
        #: What the review gave (``None`` until setup has it).
        self.reviewed: engine.Reviewed | None = None
        #: The item's ItemRecord as JSON; copied onto each phase report as
        #: ``report.advreview_record`` (plain attributes travel through xdist).
        self.record_json: str | None = None
        #: What each phase did (``exitstatus.recorded``): the gate's record, not pytest's.
        self.gate_phases: dict[str, str] = {}
        #: A later pass's target's first pass (set in setup; ``None``: this is the first).
        self.first: FirstReview | None = None
        exitstatus.note_collected(self, spec.key)
        severity = _run(self.config).coordinator.stored_severity(spec.key)
        if severity is not None:
            # Re-run exactly the items whose last review had open findings of this level:
            # pytest --adversarial-review -m severity_critical
            self.add_marker(f"severity_{severity}")

    # -- phases ------------------------------------------------------------------------

    @exitstatus.recorded("setup")
    def setup(self) -> None:
        """Run the reviewer loop; "could not run" becomes an error of this phase.

        A later pass of a target already reviewed in this run replays the first pass
        (:class:`FirstReview`) instead.
        """
        self.first = self._first_pass()
        if self.first is not None:
            self._replay_setup(self.first)
            return
        with self._keep("setup"):
            self._setup()

    def _setup(self) -> None:
        try:
            reviewed = self._review()
        except ReviewInputError as exc:
            self._attach(error=str(exc))
            raise ReviewerUnavailable(
                f"Adversarial review — {self.spec.key} — cannot review: {exc}\n"
            ) from None
        except Exception as exc:
            # A fault of the plugin (or of a conftest that patched it): the item errors
            # with pytest's traceback, and the reports still list it as an error, from
            # the gate's own account, never as "no review item ran".
            if self.review is not None:
                self._attach(
                    error=f"pytest-advreview: the review stopped on an internal error "
                    f"({type(exc).__name__}: {exc}); the traceback is in pytest's output"
                )
            raise
        self._take(reviewed, reviewed.record.model_dump_json())
        result, outcome = reviewed.result, reviewed.outcome
        if result.mutations:
            # The reviewer broke its contract; nothing it said is judged.  The teardown
            # comparison reports the paths as this item's error.
            return
        if outcome.kind is OutcomeKind.ERROR:
            text = error_report(self.spec.key, result, outcome)
            # Kept, not removed: the teardown compares the workspace first, then cleans up
            # (removing the reviewer's worktree here left nothing to compare).
            kept = reviewed.run.guard.kept_folder()
            raise ReviewerUnavailable(text + (f"reviewer files kept in {kept}\n" if kept else ""))

    def _take(self, reviewed: engine.Reviewed, record_json: str | None) -> None:
        """Keep what the review gave for the call phase and the reports."""
        self.reviewed = reviewed
        result, outcome = reviewed.result, reviewed.outcome
        for name, value in user_properties(result, outcome):
            # JUnit XML and report plugins write these out (once, however many passes).
            prop = (name, outbound.redact_data(value))
            if prop not in self.user_properties:
                self.user_properties.append(prop)
        self.record_json = record_json
        if outcome.max_severity is not None:
            self.add_marker(f"severity_{outcome.max_severity.value}")

    # -- one verdict per target per run ---------------------------------------------------

    def first_review(self) -> FirstReview:
        """The first pass of this item's target in the run (this one, when none was)."""
        firsts = self.config.stash.setdefault(_FIRST_REVIEWS, {})
        return firsts.setdefault(self.spec.key, FirstReview(owner=id(self), nodeid=self.nodeid))

    def _first_pass(self) -> FirstReview | None:
        """The target's first pass when this is a later one; ``None`` when this pass is
        the first (it is noted as such)."""
        first = self.first_review()
        if first.owner == id(self) and "setup" not in first.raised:
            return None  # this item's own first pass (the jobs pool may have started it)
        return first

    @contextmanager
    def _keep(self, when: str) -> Iterator[None]:
        """Note what this first pass's phase did, for the later passes to replay."""
        first = self.first_review()
        try:
            yield
        except BaseException as exc:
            first.raised[when] = exc
            raise
        else:
            first.raised[when] = None
        finally:
            first.record_json = self.record_json
            if when == "setup":
                first.reviewed = self.reviewed

    def _replay(self, first: FirstReview, when: str) -> None:
        """Raise what the first pass's phase ``when`` raised (its own error as it was);
        refuse when it never finished or ended in something else."""
        if when not in first.raised:
            raise ReviewerUnavailable(self._refusal(first, f"its {when} never finished"))
        raised = first.raised[when]
        if raised is None:
            return
        if self.own_error(raised):
            raise raised
        raise ReviewerUnavailable(
            self._refusal(first, f"its {when} ended in {type(raised).__name__}: {raised}")
        )

    def _replay_setup(self, first: FirstReview) -> None:
        self.review = None  # the first pass's teardown compared and cleaned the workspace
        self.record_json = first.record_json
        self._replay(first, "setup")
        if first.reviewed is None:  # not an assert: python -O must not turn this into a pass
            raise ReviewerUnavailable(self._refusal(first, "it kept no verdict"))
        self._take(first.reviewed, first.record_json)

    def _refusal(self, first: FirstReview, why: str) -> str:
        return (
            f"Adversarial review — {self.spec.key} — not reviewed again: this is a later "
            f"pass of a target whose first review in this run ({first.nodeid}) {why}. A "
            "rerun, retry, repeat or copy of a review item never asks the reviewer again "
            "(one verdict per target per run): fix the cause and run pytest again\n"
        )

    def _review(self) -> engine.Reviewed:
        """This item's review through the engine: the one the jobs pool started ahead of
        it (waited for here), else one run now.  Its workspace is compared in teardown:
        a changed file is that phase's error, even after a pass."""
        stash = _run(self.config)
        ahead = stash.pool.take(self) if stash.pool is not None else None
        if ahead is not None:
            self.review, started = ahead
            return started.result()
        assert stash.context is not None, "the review context is made when collection finishes"
        self.review = ReviewRun(stash.context, self.spec, item=self)
        return engine.review_target(
            self.review, stash.coordinator, nodeid=self.nodeid, compare_workspace="later"
        )

    @exitstatus.recorded("call")
    def runtest(self) -> None:
        """Judge the verdict: fail at or above fail-on, warn below it."""
        assert self.reviewed is not None
        result, outcome = self.reviewed.result, self.reviewed.outcome
        if result.mutations:
            return  # judged in teardown: a reviewer that changed files is an error
        if outcome.kind is OutcomeKind.FAILED:
            raise ReviewFailed(outcome, failure_report(self.spec.key, result, outcome))
        if outcome.kind is OutcomeKind.WARNED:
            self._warn(outcome)

    @exitstatus.recorded("teardown")
    def teardown(self) -> None:
        """Compare the workspace with the snapshot taken before the first dispatch."""
        if self.first is not None:
            self._replay(self.first, "teardown")
            return
        with self._keep("teardown"):
            if self.review is None:
                return
            # Also reached after Ctrl-C in setup (pytest tears down at session finish),
            # and after an unreadable plan.
            got = self.reviewed
            try:
                self.review.guard.finish(got.result if got else None, got.outcome if got else None)
            except WorkspaceMutated:
                self._attach()
                raise

    # -- what other plugins expect of an item ------------------------------------------

    #: pytest-flakefinder reads ``item.function`` of every item (to tell a test it
    #: parametrised from one it copies); a review item has none.
    function = None

    def _initrequest(self) -> None:
        """pytest-retry and pytest-flakefinder call this (a private method of pytest's
        ``Function``) to reset an item's fixtures before another pass; a review item has
        no fixtures, and its later passes replay the first (:class:`FirstReview`)."""

    def __copy__(self) -> ReviewItem:
        """Another pass of this review (pytest-flakefinder copies items): its own phase
        records and reports, noted with the gate, and the first pass's verdict."""
        cls = type(self)
        copied = cls.__new__(cls)
        for klass in cls.__mro__:  # pytest's Node keeps its own attributes in slots
            for slot in getattr(klass, "__slots__", ()):
                if slot != "__dict__" and hasattr(self, slot):
                    setattr(copied, slot, getattr(self, slot))
        copied.__dict__.update(self.__dict__)
        copied.stash = pytest.Stash()
        copied.user_properties = list(self.user_properties)
        copied._report_sections = []
        copied.gate_phases = {}
        copied.review = None
        copied.reviewed = None
        copied.record_json = None
        copied.first = None
        exitstatus.note_collected(copied, self.spec.key)
        return copied

    # -- reporting ---------------------------------------------------------------------

    def _attach(self, *, error: str | None = None) -> None:
        """Keep the current :class:`ItemRecord` for the phase reports (see ``session``)."""
        assert self.review is not None
        got = self.reviewed
        record = item_record(
            self.review,
            self.nodeid,
            got.result if got else None,
            got.outcome if got else None,
            history=got.history if got else (),
            # An exception's text may hold a file name that is not UTF-8: the record is
            # JSON, so such a name is written as git prints it.
            error=None if error is None else escaped_text(error),
        )
        # Redacted at the source: every report is built from this record, and report
        # plugins (a report log) write the attribute out as it is.
        self.record_json = outbound.redact_model(record).model_dump_json()

    def _warn(self, outcome: Outcome) -> None:
        """Passed with a warning: one :class:`ReviewWarning` per finding below fail-on (or
        pre-existing and passed), at
        the finding's place, and the findings as a section of the passing report.

        Attributed to the finding's file and line, not to a line of the plugin: pytest's
        warnings summary and the plugins that annotate warnings show them there.  Report
        plugins (pytest-html, ``-rP``) show a passing report's sections, not pytest's
        warnings; the section comes first, as ``filterwarnings = error`` raises the first
        warning.
        """
        self.add_report_section("call", "advreview", warning_message(self.spec.key, outcome))
        for finding in (*outcome.pre_existing, *outcome.below):
            path, line = self._place(finding)
            warnings.warn_explicit(
                ReviewWarning(warning_message(self.spec.key, outcome, [finding])),
                ReviewWarning,
                filename=path,
                lineno=line,
            )

    def _place(self, finding: Finding | None) -> tuple[str, int]:
        """Where ``finding`` points: an absolute path and a 1-based line, named in rootdir's
        repository as the reports name them (under ``--advreview-head``: REF's path, never
        the private checkout).  Without a finding, or one that names no usable place: the
        plan, else the pytest configuration file, else rootdir."""
        if finding is not None and self.reviewed is not None:
            root = find_repo_root(self.config.rootpath)
            anchor = Anchors(root).of(self.reviewed.record, finding)
            if anchor.path is not None and self._reviewed_file(root, anchor.path):
                return str(root / anchor.path), anchor.line_start or 1
        if self.spec.kind == "plan":
            home: Path = self.path
        else:
            home = self.spec.against_plan or self.config.inipath or self.config.rootpath
        return str(home), 1

    def _reviewed_file(self, root: Path, relpath: str) -> bool:
        """Whether the reviewer's ``relpath`` is a file this item reviewed: its plan or a
        file of its change set, a regular file reached through no symlink.

        pytest prints the source line a warning points at (``linecache``), unredacted:
        a file the reviewer names freely could be an ignored ``.env`` of the checkout, a
        symlink to a credentials file or to ``/dev/zero``.
        """
        record = self.reviewed.record if self.reviewed is not None else None
        change = self.spec.change
        if relpath != (record.path if record else None) and (
            change is None or relpath not in change.files
        ):
            return False
        path = os.path.abspath(root / relpath)
        return os.path.realpath(path) == path and os.path.isfile(path)

    @staticmethod
    def own_error(exc: BaseException) -> bool:
        """Whether ``exc`` is shown as text (see below): a review failure or error, or a
        review stopped from outside (:meth:`stopped`)."""
        return isinstance(exc, _OWN_ERRORS) or warnfilter.is_own(exc) or ReviewItem.stopped(exc)

    @staticmethod
    def stopped(exc: BaseException) -> bool:
        """Whether something outside the plugin stopped a phase with ``pytest.fail``:
        pytest-timeout's signal method does so when the review outlives ``--timeout``."""
        return isinstance(exc, pytest.fail.Exception)

    def note_stopped(self, report: pytest.TestReport, exc: BaseException) -> None:
        """A phase stopped from outside (:meth:`stopped`): keep a record for the review
        summary, and leave out the phase's captured output.

        That output is the stopper's: pytest-timeout dumps the stack of every thread (the
        plugin's reviewer, pool and progress threads) before it fails the phase, a
        thousand lines about the plugin's internals; a review item runs no user code.
        """
        if self.review is not None and self.record_json is None:
            self._attach(error=f"stopped during {report.when}: {exc}")
        report.sections = [
            (name, text) for name, text in report.sections if not name.startswith("Captured std")
        ]

    def repr_failure(
        self, excinfo: ExceptionInfo[BaseException], style: Any = None, *, when: str = "call"
    ) -> str | TerminalRepr:
        """Review results are shown as text, never as a Python traceback, in the ``--tb``
        style: ``line`` one line, ``short`` without the review's text, the others whole.

        :param when: the phase (pytest calls this for ``call`` only; the plugin's report
            hook for the others).
        """
        exc = excinfo.value
        if not self.own_error(exc):
            return super().repr_failure(excinfo, style=style)
        summary = self.one_line(exc)
        failing = self.reviewed.record.worst_failing() if self.reviewed is not None else None
        path, line = self._place(failing if isinstance(exc, ReviewFailed) else None)
        style = style or self.config.getoption("tbstyle", "auto")
        if style == "line":
            # After a failure pytest prints the crash line itself; after an error, only this.
            text = "" if when == "call" else f"{path}:{line}: {summary}"
        elif style == "short" and isinstance(exc, ReviewFailed):
            text = failure_summary(self.spec.key, exc.outcome)
        elif self.stopped(exc):
            text = f"Adversarial review — {self.spec.key} — {summary}"
        elif warnfilter.is_own(exc):
            text = warnfilter.message(exc)
        else:
            text = str(exc)
        return ReviewRepr(text, summary, path, line)

    def one_line(self, exc: BaseException) -> str:
        """The short-summary / JUnit message: one line, not the whole review."""
        if isinstance(exc, ReviewFailed):
            worst = exc.outcome.failing[0].line() if exc.outcome.failing else ""
            return f"{exc.outcome.summary}; {worst}".rstrip("; ")
        first = str(exc).strip().splitlines()
        if warnfilter.is_own(exc):
            kind = type(exc).__name__
            return f"{kind} made an error by a warnings filter: {first[0] if first else ''}"
        if self.stopped(exc):
            return f"stopped: {first[0] if first else 'pytest.fail'}"
        return first[0] if first else type(exc).__name__

    def reportinfo(self) -> tuple[Path, int, str]:
        """Point at the plan file (or the repository root for the change set).

        The node's path: the plan file, or under ``--advreview-head`` REF's path named in
        the rootdir (never the private checkout, which is gone after the run).  Line 0, as
        pytest's own non-Python example gives: a skip mark's report needs a line number,
        and ``None`` crashes pytest there.
        """
        return self.path, 0, f"[advreview] {self.spec.key}"

    @functools.cached_property
    def location(self) -> tuple[str, int | None, str]:
        """pytest's location, with a file name that is not UTF-8 as git prints it: xdist
        sends it between processes as text, and report writers write it."""
        relpath, line, domain = super().location
        return quote_path(relpath), line, domain


def _run(config: pytest.Config) -> RunStash:
    """The run (an item exists only in a run with ``--adversarial-review``)."""
    stash = runstash.get(config)
    assert stash is not None, "review items are collected only by a review run"
    return stash
