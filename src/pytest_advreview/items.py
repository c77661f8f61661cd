"""Collection nodes: a plan file collector and the review item.

Phases follow the design: the reviewer loop runs in **setup** (so "the reviewer could not
run" is a setup error), the verdict is judged in **call**, and the workspace is compared
in **teardown** (so a reviewer that changed files errors even when the review passed).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from _pytest._code.code import ExceptionInfo, ReprFileLocation, TerminalRepr
from _pytest._io import TerminalWriter

from . import engine, gate, outbound, runstash
from .constants import MARKER, PLAN_ITEM_NAME
from .models import FailureText
from .outcome import (
    OutcomeKind,
    ReviewerUnavailable,
    ReviewFailed,
    ReviewWarning,
    WorkspaceMutated,
    error_report,
    failure_report,
    user_properties,
    warning_message,
)
from .review import ReviewInputError, ReviewRun, TargetSpec
from .runstash import RunStash

__all__ = ["PlanFile", "ReviewItem"]

_OWN_ERRORS = (ReviewFailed, ReviewerUnavailable, WorkspaceMutated)
#: Built once: looking a marker up by name per item costs more than the item at 5,000 plans.
_REVIEW_MARK = getattr(pytest.mark, MARKER)


class ReviewRepr(TerminalRepr):
    """A review failure: the full text in the report, one line in the short summary.

    ``reprcrash.message`` is what pytest's short test summary (untruncated on CI) and
    JUnit's ``message`` attribute show, so the review is not printed twice.
    """

    def __init__(self, text: str, summary: str, path: Path) -> None:
        # Whatever built the text (a review, an error of the reviewer, a worker's report),
        # it is redacted and neutralised here, where every failure text passes.
        self.text = outbound.terminal_text(text)
        self.reprcrash = ReprFileLocation(str(path), 0, outbound.one_line(summary))

    def toterminal(self, tw: TerminalWriter) -> None:
        """Write the text as it is, line by line (no colour needed to read it)."""
        for line in self.text.rstrip("\n").splitlines():
            tw.line(line)

    def to_wire(self) -> dict[str, Any]:
        """The JSON form an xdist worker sends in place of pytest's flattened string."""
        wire = FailureText(text=self.text, summary=self.reprcrash.message, path=self.reprcrash.path)
        return wire.model_dump(mode="json")

    @classmethod
    def from_wire(cls, data: object) -> ReviewRepr | None:
        """The repr back from :meth:`to_wire`'s output; ``None`` for anything else."""
        if not isinstance(data, dict) or data.get("kind") != "advreview-failure":
            return None
        wire = FailureText.model_validate(data)
        return cls(wire.text, wire.summary, Path(wire.path))


class PlanFile(pytest.File):
    """A markdown plan selected for review; collects one :class:`ReviewItem`."""

    def collect(self) -> Iterable[ReviewItem]:
        """One review item per plan, named ``adversarial-review``."""
        plans = _run(self.config).plans
        key = plans.relpath(self.path)
        spec = TargetSpec(kind="plan", key=key, path=plans.plan_source(self.path))
        yield ReviewItem.from_parent(self, name=PLAN_ITEM_NAME, spec=spec)


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
        #: What each phase did (``gate.recorded``): the gate's record, not pytest's.
        self.gate_phases: dict[str, str] = {}
        gate.note_collected(self)
        severity = _run(self.config).coordinator.stored_severity(spec.key)
        if severity is not None:
            # Re-run exactly the items whose last review had open findings of this level:
            # pytest --adversarial-review -m severity_critical
            self.add_marker(f"severity_{severity}")

    # -- phases ------------------------------------------------------------------------

    @gate.recorded("setup")
    def setup(self) -> None:
        """Run the reviewer loop; "could not run" becomes an error of this phase."""
        try:
            reviewed = self._review()
        except ReviewInputError as exc:
            self._attach(error=str(exc))
            raise ReviewerUnavailable(
                f"Adversarial review — {self.spec.key} — cannot review: {exc}\n"
            ) from None
        self.reviewed = reviewed
        result, outcome = reviewed.result, reviewed.outcome
        for name, value in user_properties(result, outcome):
            # JUnit XML and report plugins write these out.
            self.user_properties.append((name, outbound.redact_data(value)))
        self.record_json = reviewed.record.model_dump_json()
        if outcome.max_severity is not None:
            self.add_marker(f"severity_{outcome.max_severity.value}")
        if result.mutations:
            # The reviewer broke its contract; nothing it said is judged.  The teardown
            # comparison reports the paths as this item's error.
            return
        if outcome.kind is OutcomeKind.ERROR:
            text = error_report(self.spec.key, result, outcome)
            # Kept, not removed: the teardown compares the workspace first, then cleans up
            # (removing the reviewer's worktree here left nothing to compare).
            kept = reviewed.run.kept_folder()
            raise ReviewerUnavailable(text + (f"reviewer files kept in {kept}\n" if kept else ""))

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

    @gate.recorded("call")
    def runtest(self) -> None:
        """Judge the verdict: fail at or above fail-on, warn below it."""
        assert self.reviewed is not None
        result, outcome = self.reviewed.result, self.reviewed.outcome
        if result.mutations:
            return  # judged in teardown: a reviewer that changed files is an error
        if outcome.kind is OutcomeKind.FAILED:
            raise ReviewFailed(outcome, failure_report(self.spec.key, result, outcome))
        if outcome.kind is OutcomeKind.WARNED:
            # Attributed to the reviewed file, not to this line of the plugin (by its node
            # path: under --advreview-head, REF's path rather than the private checkout).
            where = self.path if self.spec.path is not None else self.spec.against_plan
            where = where or self.path
            warnings.warn_explicit(
                ReviewWarning(warning_message(self.spec.key, outcome)),
                ReviewWarning,
                filename=str(where),
                lineno=1,
            )

    @gate.recorded("teardown")
    def teardown(self) -> None:
        """Compare the workspace with the snapshot taken before the first dispatch."""
        if self.review is None:
            return
        # Also reached after Ctrl-C in setup (pytest tears down at session finish), and
        # after an unreadable plan.
        got = self.reviewed
        try:
            self.review.finish(got.result if got else None, got.outcome if got else None)
        except WorkspaceMutated:
            self._attach()
            raise

    # -- reporting ---------------------------------------------------------------------

    def _attach(self, *, error: str | None = None) -> None:
        """Keep the current :class:`ItemRecord` for the phase reports (see ``session``)."""
        assert self.review is not None
        got = self.reviewed
        record = self.review.record(
            self.nodeid,
            got.result if got else None,
            got.outcome if got else None,
            history=got.history if got else (),
            error=error,
        )
        # Redacted at the source: every report is built from this record, and report
        # plugins (a report log) write the attribute out as it is.
        self.record_json = outbound.redact_model(record).model_dump_json()

    @staticmethod
    def own_error(exc: BaseException) -> bool:
        """Whether ``exc`` is a review failure or error (shown as text, see below)."""
        return isinstance(exc, _OWN_ERRORS)

    def repr_failure(
        self, excinfo: ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        """Review results are shown as text, never as a Python traceback."""
        if not self.own_error(excinfo.value):
            return super().repr_failure(excinfo, style=style)
        return ReviewRepr(str(excinfo.value), self.one_line(excinfo.value), self.reportinfo()[0])

    def one_line(self, exc: BaseException) -> str:
        """The short-summary / JUnit message: one line, not the whole review."""
        if isinstance(exc, ReviewFailed):
            worst = exc.outcome.failing[0].line() if exc.outcome.failing else ""
            return f"{exc.outcome.summary}; {worst}".rstrip("; ")
        first = str(exc).strip().splitlines()
        return first[0] if first else type(exc).__name__

    def reportinfo(self) -> tuple[Path, int, str]:
        """Point at the plan file (or the repository root for the change set).

        The node's path: the plan file, or under ``--advreview-head`` REF's path named in
        the rootdir (never the private checkout, which is gone after the run).  Line 0, as
        pytest's own non-Python example gives: a skip mark's report needs a line number,
        and ``None`` crashes pytest there.
        """
        return self.path, 0, f"[advreview] {self.spec.key}"


def _run(config: pytest.Config) -> RunStash:
    """The run (an item exists only in a run with ``--adversarial-review``)."""
    stash = runstash.get(config)
    assert stash is not None, "review items are collected only by a review run"
    return stash
