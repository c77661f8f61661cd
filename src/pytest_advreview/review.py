"""One target's rounds: material → prompt → loop, inside the workspace guard.

:class:`ReviewRun` is what the engine (:mod:`.engine`) drives for one target: it reads
the material once, runs the loop (and the built-in lead) and watches the workspace.  It
decides no outcome (the engine judges the result once) and builds no record
(:func:`.record.item_record` reads it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from . import targets
from .constants import BUILTIN_REVIEWERS
from .lead.session import LeadTurns
from .loop import LoopHooks, LoopResult, ReviewLimit, ReviewTarget, run_loop
from .material import (
    ReviewMaterial,
    TargetSpec,
    build_material,
    current_text,
    repo_relative,
)
from .models import Decision, Operation, Review, RoundRecord
from .pricing import PriceTable
from .runner import STREAM_FILE, DispatchRequest, DispatchResult, Reviewer
from .trust import run as trust
from .workspace import Adoptions, Layout, containment
from .workspace.guard import ReviewGuard, unwatchable

if TYPE_CHECKING:
    from .progress import Progress
    from .settings import Settings
    from .state import StateStore

__all__ = [
    "ReviewContext",
    "ReviewRun",
    "SharedLookups",
    "has_fixer_hook",
    "make_reviewer",
    "make_samples",
    "make_verifier",
]


def make_reviewer(
    config: pytest.Config,
    settings: Settings,
    builtin: Callable[[pytest.Config, str], Reviewer | None] | None = None,
    *,
    name: str | None = None,
) -> Reviewer:
    """The backend ``settings`` name, built through ``pytest_advreview_make_reviewer``.

    :param name: another backend than ``settings.reviewer`` (a sample's, a verifier's).
    :param builtin: builds a built-in backend (codex, claude, command) from ``settings``
        instead: the registered ones carry the run's settings, not a fixture call's
        overrides, and a run without ``--adversarial-review`` registers none.
    """
    name = settings.reviewer if name is None else name
    made: Reviewer | None = config.hook.pytest_advreview_make_reviewer(config=config, name=name)
    if builtin is not None and (made is None or made.name in BUILTIN_REVIEWERS):
        made = builtin(config, name) or made
    if made is None:
        raise pytest.UsageError(
            f"pytest-advreview: no reviewer backend is called {name!r}; use "
            "codex, claude, command, or install the plugin that provides it"
        )
    # No preload here: a run that may review loads the plugin before its items
    # (session.py), and every dispatch and lead turn before it starts (below).
    return made


def make_samples(
    config: pytest.Config,
    settings: Settings,
    reviewer: Reviewer,
    builtin: Callable[[pytest.Config, str], Reviewer | None] | None = None,
) -> tuple[tuple[str, Reviewer], ...]:
    """The reviewers of samples 2 to K (``advreview_samples``, ``advreview_sample_reviewers``),
    each built once through the same hook as the reviewer (``reviewer`` itself for its
    own name); empty with one sample."""
    names = settings.sample_reviewers or (settings.reviewer,) * settings.samples
    built: dict[str, Reviewer] = {settings.reviewer: reviewer}
    for name in names[1:]:
        if name not in built:
            built[name] = make_reviewer(config, settings, builtin, name=name)
    return tuple((name, built[name]) for name in names[1:])


def make_verifier(
    config: pytest.Config, settings: Settings, run_dir: Callable[[], Path | None]
) -> Reviewer | None:
    """The verifier (``advreview_verify``; ``None`` without): ``advreview_verifier`` or the
    reviewer's backend, built through the same hook, read-only when it is a built-in one
    (a verifier reads and runs commands, it never writes).

    :param run_dir: the run's directory, as the reviewer's built-in backends get it (the
        run stash's, handed in: the review does not climb back to the run).
    """
    if not settings.verify:
        return None
    from .runner.factory import BuiltinReviewers

    read_only = settings.model_copy(update={"sandbox": "read-only"})
    builtin = BuiltinReviewers(read_only, run_dir=run_dir)
    return make_reviewer(
        config,
        read_only,
        builtin.pytest_advreview_make_reviewer,
        name=settings.verifier or settings.reviewer,
    )


@dataclass
class SharedLookups:
    """Answers that the reviews of one run can share instead of asking again.

    :param toplevels: review root -> its git top level (``git rev-parse --show-toplevel``),
        learnt from the first snapshot of that root.
    :param resolve: resolves paths (``Path.resolve`` with the answers remembered).
    """

    toplevels: dict[Path, Path] = field(default_factory=dict)
    resolve: targets.PathResolver = field(default_factory=targets.PathResolver)


class _WatchedReviewer:
    """Wraps the backend to remember what the reviewer itself reported writing."""

    def __init__(self, inner: Reviewer, on_dispatch: Callable[[DispatchRequest], None]) -> None:
        self.inner = inner
        self.name = inner.name
        self.supports_resume = inner.supports_resume
        self.last: DispatchResult | None = None
        #: Dispatches started so far (a round may take several: a retry, a fallback).
        self.dispatches = 0
        self._on_dispatch = on_dispatch
        #: Thread id -> the digest of its session files when the plugin last saw them.
        self._sessions: dict[str, str] = {}
        #: Why a stored thread was not resumed, told with the next dispatch.
        self._notice: str | None = None

    def trust(self, history: Sequence[RoundRecord]) -> None:
        """Learn the session digests of the stored rounds (the signed state's)."""
        for record in history:
            thread = record.runner.codex_session_id
            if thread:
                self._seen(thread, record.runner.codex_session_digest)

    def _seen(self, thread: str, digest: str | None) -> None:
        if digest:
            self._sessions[thread] = digest
        else:
            self._sessions.pop(thread, None)

    def can_resume(self, session_id: str) -> bool:
        """Whether the thread is on this machine and, with a backend that can tell, its
        session files are the bytes the plugin last saw (the signed state's digest, or
        this run's last round's): a session file restored from a cache the pull request
        could write, rewritten or foreign, is never resumed."""
        if not self.inner.can_resume(session_id):
            return False
        digest_of = getattr(self.inner, "session_digest", None)
        if not callable(digest_of):
            return True
        expected = self._sessions.get(session_id)
        if expected is not None and digest_of(session_id) == expected:
            return True
        self._notice = (
            f"the stored thread {session_id} was not resumed: its session files are not "
            + (
                "the ones the plugin recorded (rewritten or foreign)"
                if expected is not None
                else "recorded in the signed state (an entry of an older version)"
            )
            + "; the review starts a fresh thread from the signed state's findings"
        )
        return False

    def dispatch(self, request: DispatchRequest) -> DispatchResult:
        # Before the reviewer starts: every module of the plugin a run may use is then in
        # memory, whatever it writes to the plugin's files (once per process; a run that
        # may review has done it before its items, session.py).
        containment.preload()
        self.last = None
        self.dispatches += 1
        self._on_dispatch(request)
        result = self.inner.dispatch(request)
        runner = result.runner
        digest_of = getattr(self.inner, "session_digest", None)
        if runner.codex_session_id and callable(digest_of):
            digest = digest_of(runner.codex_session_id)
            self._seen(runner.codex_session_id, digest)
            runner = runner.model_copy(update={"codex_session_digest": digest})
        if self._notice is not None:
            # The loop reports a runner's warning with the round: the notice goes with the
            # fresh thread's first dispatch.
            said = "; ".join(w for w in (self._notice, runner.user_warning) if w)
            runner = runner.model_copy(update={"user_warning": said})
            self._notice = None
        if runner is not result.runner:
            result = result.model_copy(update={"runner": runner})
        self.last = result
        return result


@dataclass(frozen=True)
class ReviewContext:
    """What the reviews of one run share: settings, reviewer, repository, stored state.

    Built once per process of a run (when collection has finished: every plugin and
    conftest has registered), and once per call of the fixture (whose overrides may
    change the settings).

    :param in_git: the repository is a git checkout (outside git only the review inputs
        can be watched: no ``git status``).
    :param shared: top levels and resolved paths, shared by all the reviews so later
        snapshots skip ``git rev-parse --show-toplevel``.
    :param store: the stored review state: the plugin's own verdicts are part of the
        workspace a reviewer must not change (git does not see them: ignored).
    :param progress: the run's progress display, told of each launch (items only).
    :param fixer_hook: a plugin implements ``pytest_advreview_fix`` (see
        :func:`has_fixer_hook`): it fixes, and the built-in lead never runs.
    :param layout: where the reviews run (:class:`~.workspace.Layout`); decided from the
        settings and the repository when not given.
    :param adoptions: the run's record of the lead's edits copied into the checkout,
        shared by its processes (:class:`~.workspace.Adoptions`); ``None``: none.
    """

    config: pytest.Config
    settings: Settings
    reviewer: Reviewer
    repo_root: Path
    in_git: bool = True
    shared: SharedLookups = field(default_factory=SharedLookups)
    store: StateStore | None = None
    progress: Progress | None = None
    fixer_hook: bool = False
    layout: Layout | None = None
    adoptions: Adoptions | None = None
    #: The reviewers of the first round's samples 2 to K (:func:`make_samples`).
    samples: tuple[tuple[str, Reviewer], ...] = ()
    #: Checks each blocking finding (:func:`make_verifier`; ``None``: no verification).
    verifier: Reviewer | None = None

    def __post_init__(self) -> None:
        if self.layout is None:
            decided = Layout.decide(self.settings, self.repo_root, in_git=self.in_git)
            object.__setattr__(self, "layout", decided)

    @property
    def where(self) -> Layout:
        """The layout of the reviews (decided in ``__post_init__``)."""
        assert self.layout is not None
        return self.layout


def has_fixer_hook(config: pytest.Config) -> bool:
    """Whether a plugin implements ``pytest_advreview_fix``; asked once the run's plugins
    and conftests have registered (collection finished, or a fixture call)."""
    return bool(config.hook.pytest_advreview_fix.get_hookimpls())


class ReviewRun(LoopHooks):
    """One target's rounds and the workspace guard around them.

    Its input is fixed when it is made (the context, the target, the item); the loop's
    result and the outcome go back to the caller, which ends the workspace guard
    (:meth:`.ReviewGuard.finish`) and builds the record (:func:`.record.item_record`).
    It is the loop's hooks too: they forward to the pluggy hooks, the built-in lead and
    the workspace guard.
    """

    def __init__(
        self, context: ReviewContext, spec: TargetSpec, *, item: pytest.Item | None = None
    ) -> None:
        self.context = context
        self.spec = spec
        self.item = item
        self.reviewer = _WatchedReviewer(context.reviewer, self._dispatching)
        #: The workspace guard: the review's folder, baseline, comparisons and cleanup.
        self.guard = ReviewGuard(
            context.config,
            context.where,
            key=spec.key,
            inputs=[p for p in (spec.path, spec.against_plan) if p is not None],
            decisions=Path(context.settings.decisions),
            toplevels=context.shared.toplevels,
            allow_untracked=context.settings.allow_untracked,
            store=context.store,
            repo_root=context.repo_root,
            relative=self.relative,
            reviewer=self.reviewer,
            adoptions=context.adoptions,
        )
        #: The target the loop reviews (in the private worktree, with isolation).
        self._loop_target: ReviewTarget | None = None
        self._material: ReviewMaterial | None = None
        #: Counted rounds of earlier runs the rounds continue (given to :meth:`run`).
        self._history: tuple[RoundRecord, ...] = ()
        self.lead = LeadTurns()

    @property
    def settings(self) -> Settings:
        """The review's settings."""
        return self.context.settings

    @property
    def review_root(self) -> Path:
        """Where the reviewer runs: the repository, or its private worktree."""
        return self.guard.workspace.root

    def check_mutation(self, round_no: int) -> list[str]:
        return self.guard.check_mutation(round_no)

    def applied_summary(self) -> str | None:
        return self.lead.applied

    def current_content(self) -> str | None:
        return current_text(self.spec)

    def modify_prompt(self, operation: Operation, prompt: str) -> str:
        replaced = self.context.config.hook.pytest_advreview_modify_prompt(
            target=self._loop_target, operation=operation, prompt=prompt
        )
        return prompt if replaced is None else str(replaced)

    def fix(self, review: Review, record: RoundRecord) -> Sequence[Decision] | None:
        if self.item is None:
            return None
        if not self.context.fixer_hook:
            # No plugin fixes: the built-in lead does, when one was asked for.
            return self.lead_turn(review, record.number)
        hook = self.context.config.hook.pytest_advreview_fix
        decisions: Sequence[Decision] | None = hook(item=self.item, review=review)
        if decisions is not None:
            # The fixer changed the user's files on purpose: the reviewer's copy gets
            # them, and that is the new baseline.
            with unwatchable():
                self.guard.workspace.refresh()
            self.guard.rebaseline()
        return decisions

    def current_hash(self) -> str | None:
        # After the lead edited the plan, the rounds that follow review the new text.
        return self.material().content_hash if self.lead.records else None

    def round_done(self, record: RoundRecord) -> None:
        self.guard.watch.counted = (record.number, self.reviewer.dispatches)
        if self.item is not None:
            self.context.config.hook.pytest_advreview_round_done(item=self.item, record=record)

    def lead_turn(self, review: Review, round_no: int) -> tuple[Decision, ...] | None:
        """The built-in lead's turn (:meth:`.LeadTurns.turn`); ``None``: no lead here."""
        containment.preload()  # as before a dispatch: the lead may write the plugin's files
        decisions = self.lead.turn(
            review,
            round_no,
            settings=self.settings,
            spec=self.spec,
            guard=self.guard,
            relative=self.relative,
        )
        if decisions is not None:
            self._material = None  # the next fresh exec and the stored state see the new text
        return decisions

    def _dispatching(self, request: DispatchRequest) -> None:
        """Tell the progress display which round is launched and where its events go."""
        progress = self.context.progress
        if progress is None or self.item is None:
            return
        counted, history = self.guard.watch.counted, self._history
        last = counted[0] if counted else (history[-1].number if history else 0)
        progress.dispatch(self.item.nodeid, last + 1, request.work_dir / STREAM_FILE)

    def relative(self, path: Path) -> str:
        """``path`` as the record and the lead name it (repository-relative)."""
        return repo_relative(path, self.context.repo_root, self.context.shared.resolve)

    def material(self) -> ReviewMaterial:
        """What is reviewed (read once): prompt body, current text and content hash.

        :raises ReviewInputError: the plan is missing, not UTF-8 or empty.
        """
        if self._material is None:
            self._material = build_material(
                self.spec, self.settings, self.context.repo_root, self.context.shared.resolve
            )
        return self._material

    def run(
        self,
        *,
        history: Sequence[RoundRecord] = (),
        decisions: Sequence[Decision] = (),
        applied: str | None = None,
        max_rounds: int | None = None,
    ) -> LoopResult:
        """Run the rounds due, inside the workspace guard: a snapshot before the first
        dispatch, a comparison after each round.  The caller judges the result.

        :param history: counted rounds of earlier runs (rounds across CI runs).
        :param decisions: decisions to send with the re-review.
        :param applied: the "Applied" text of the first re-review (what changed in the
            stored text); a lead's turn before the rounds has set its own.
        :param max_rounds: the round limit (default ``max-rounds``; more with a person's
            grant of rounds).
        :raises ReviewInputError: unusable material, or no review worktree could be built.
        """
        self._history = tuple(history)
        self.reviewer.trust(history)
        if applied is not None:
            self.lead.applied = applied
        material = self.material()
        self.guard.open()
        self._loop_target = target = ReviewTarget(
            key=self.spec.key,
            kind=self.spec.kind,
            review_id=self.guard.review_id,
            repo_root=self.review_root,
            work_dir=self.guard.work_dir,
            initial_prompt=material.prompt_body,
            content=material.content,
            content_hash=material.content_hash,
            language=self.settings.language,
            output_format=self.settings.output_format,
            in_git=self.context.in_git,
            fail_on=self.settings.fail_on,
            diff_commands=self.spec.change.diff_commands if self.spec.change else (),
        )
        self.guard.rebaseline()
        result = run_loop(
            target,
            self.reviewer,
            max_rounds=max_rounds or self.settings.max_rounds,
            hooks=self,
            history=history,
            decisions=decisions,
            limit=ReviewLimit(self.settings.review_limit, self.settings.timeout),
            samples=self.context.samples,
            verifier=self.context.verifier,
        )
        result = self.lead.into(
            result, in_ci=trust.of_run(self.context.config, self.settings).in_ci
        )
        prices = PriceTable.of(self.settings.prices)
        if prices:
            # Each round's money is stored with it: a later run's report shows it too.
            priced = prices.rounds(result.rounds, self.settings.model_of, self.settings.reviewer)
            result = replace(result, rounds=priced)
        return result
