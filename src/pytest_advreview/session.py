"""The plugins of one ``--adversarial-review`` run, registered by ``plugin.py``.

:class:`ReviewSession` (every process): the pytest hooks that collect the review items
(the targets come from :class:`~.selection.TargetSelection`) and, at session start, what
the reviews share (:class:`~.review.ReviewContext`) and the jobs pool.
:class:`Controller` (the controller only, never an xdist worker): the decisions check,
what the workers get, the report files and the terminal summary.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import shutil
import sys
import tempfile
import warnings
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import outbound, runlock, runstash, warnfilter
from .constants import BUILTIN_REVIEWERS, CODE_ITEM_NAME, CODE_ITEM_NODEID, RECORD_ATTR
from .coordinator import Coordinator
from .git import escaped_text, quote_path
from .items import PlanFile, ReviewItem, ReviewRepr, claim_ahead, plan_spec
from .material import ReviewInputError, TargetSpec, build_material
from .options import DEFAULT_DECISIONS
from .outcome import ReviewWarning
from .parallel import ReviewPool, jobs_for
from .progress import Progress, progress_plugin
from .report.collect import ResultsCollector
from .report.terminal import write_summary
from .review import (
    ReviewContext,
    SharedLookups,
    has_fixer_hook,
    make_reviewer,
    make_samples,
    make_verifier,
)
from .runner import Reviewer
from .selection import TargetSelection
from .statekey import STATE_KEY_ENV
from .trust import run as trust
from .workspace import Adoptions, Layout, containment
from .workspace.isolation import POOL_PREFIX, WorktreePool

if TYPE_CHECKING:
    from .settings import Settings

__all__ = ["ReviewSession"]


class ReviewSession:
    """Collection, the reviewer and the review context of one run, in every process."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self._reviewer: Reviewer | None = None
        #: What the reviews in flight are doing, on the terminal (``None``: not shown).
        self._progress: Progress | None = None
        self._collected: set[Path] = set()
        #: Shared by the run's reviews: git top levels and resolved paths.
        self._shared = SharedLookups()
        #: ``--advreview-only``: collect the review items, import no test module.
        self.only = bool(config.getoption("advreview_only", default=False))
        # One directory per run, decided on the controller and shared with the workers
        # (the token ledger lives there); removed by the controller at the end.
        #: A worker's run directory, secret and head checkout (``None`` on the controller).
        self._from_controller = runstash.from_workerinput(config)
        #: Why this run holds no run lock of its checkout (a header line), if so.
        self.lock_warning: str | None = None
        if self._from_controller is None and not config.option.collectonly:
            # Before anything is read: a run on this checkout writes what the reviews
            # watch, so another one waits here until it has ended (runlock.py). Taken
            # first, its cleanup runs last.
            self.lock_warning = runlock.hold_for_run(config)
        if self._from_controller is not None:
            self.run_dir, self.run_secret, _ = self._from_controller
        else:
            self.run_dir = Path(tempfile.mkdtemp(prefix="advreview-run-"))
            # Removed however the run ends (a usage error after configure included).
            config.add_cleanup(lambda: shutil.rmtree(self.run_dir, ignore_errors=True))
            # Tags the state entries this run writes, so a review can tell the entries
            # other workers write meanwhile from a reviewer's (state.py).
            self.run_secret = secrets.token_bytes(32)
        #: The repository, the base, the plans and the change set (git runs once here).
        self.targets = TargetSelection(
            config,
            settings,
            checkout=self._from_controller[2] if self._from_controller else None,
            shared=self._shared,
        )
        plan_root = self.targets.plan_root
        if plan_root != self.targets.rootdir:
            # No ini file (hence no advreview_decisions key): the decisions file is the
            # repository's, found from a subdirectory as from the top.
            decisions = os.fspath(plan_root / DEFAULT_DECISIONS)
            self.settings = settings = settings.model_copy(update={"decisions": decisions})
            self.targets.settings = settings  # the change set leaves this file out
        #: Where the reviews run: a worktree each, or the repository (decided once).
        self.layout = Layout.decide(
            self.settings,
            self.targets.repo_root,
            in_git=self.targets.repo is not None,
            head=self.targets.head is not None,
        )
        if self.layout.isolated and not config.option.collectonly:
            # The process's review worktrees, made once and reset between reviews; in the
            # run's directory, so what a crashed worker leaves goes with it. Registered
            # after the run directory's removal, so it runs before it.
            pool = WorktreePool(self.run_dir / f"{POOL_PREFIX}{os.getpid()}")
            self.layout = dataclasses.replace(self.layout, pool=pool)
            # The controller sweeps what crashed workers left (it ends after them).
            sweep = self.run_dir if self._from_controller is None else None
            config.add_cleanup(lambda: _close_pool(pool, sweep, self.layout.repo_root))
        #: Warnings of the containment check for the header (the controller's).
        self.containment_warnings: list[str] = []
        if self._from_controller is None:
            self._check_containment()
        self.coordinator = Coordinator(
            config,
            settings,
            self.run_dir,
            run_secret=self.run_secret,
            # The base the targets resolved (with --advreview-head: its commit, resolved once).
            base=self.targets.gate_base(),
        )
        self.stash = runstash.RunStash(
            run_dir=self.run_dir,
            run_secret=self.run_secret,
            coordinator=self.coordinator,
            plans=self.targets,
            head=self.targets.head,
        )
        config.stash[runstash.RUN_STASH] = self.stash

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Build the reviewer now, so an unknown backend is a usage error, not N errors.

        (At session start every initial conftest and plugin has registered its
        ``pytest_advreview_make_reviewer``.)
        """
        if self.config.option.collectonly:
            if self.settings.reviewer not in BUILTIN_REVIEWERS:
                self.reviewer()
            # Nothing is reviewed, and a built-in name always finds its backend: building
            # it (importing the runner) would only slow collection down.
            return
        self.reviewer()
        # At session start: pytest's terminal reporter is configured by now.
        display = progress_plugin(self.config, self.settings.progress)
        if display is not None:
            self.config.pluginmanager.register(display, "advreview-progress")
            self._progress = display.progress

    def prepare_run(self) -> None:
        """On the controller, once the decisions file is checked and before collection:
        whether the run may review is decided from its selection (what is collected, at
        most; the xdist controller collects nothing), so that a missing Codex is one
        usage error before any item and the sandbox probe overlaps collection."""
        if self.config.option.collectonly:
            return
        if self.config.pluginmanager.has_plugin("dsession"):
            # The xdist controller writes the reports after the workers' reviewers ran:
            # its modules are loaded now, whatever those write.
            containment.preload()
        self._prepare_reviews(self.reviewer(), self._selected_specs())

    def _selected_specs(self) -> list[TargetSpec] | None:
        """The targets of the run's selection: every selected plan and the code item;
        ``None``: the selection cannot tell (plans named on the command line)."""
        if self.targets.explicit_plans():
            return None  # plans named on the command line are found by collecting
        specs = [plan_spec(self.targets, path) for path in self.targets.keys]
        code = self.targets.code_spec()
        return [*specs, code] if code is not None else specs

    def _prepare_reviews(self, reviewer: Reviewer, specs: Iterable[TargetSpec] | None) -> None:
        """What a review that starts the reviewer needs, done once before the first item
        (before collection on the controller, after it on an xdist worker), and
        only when one of ``specs`` may start it (its stored verdict does not stand;
        ``None``: as if one may):
        a cached rerun starts no Codex at all (docs/performance.md, row 6).

        The plugin's modules are loaded (:func:`~.workspace.containment.preload`) so a
        reviewer that rewrites their files changes nothing this run executes; a reviewer
        that cannot start (a missing or old Codex) is one usage error (asked on the
        controller only); the Codex sandbox probe begins in the background.  A review this
        guess missed still gets all three: each dispatch and lead turn loads the modules
        first (review.py), a missing Codex is that item's launch error, the dispatch probes.
        """
        if specs is not None and not self._needs_reviewer(specs):
            return
        containment.preload()
        check_ready = getattr(reviewer, "check_ready", None)
        if self._from_controller is None and callable(check_ready):
            problem = check_ready()
            if problem is not None:
                raise pytest.UsageError(f"pytest-advreview: {problem}")
        # The Codex backend probes its sandbox before the first review (one Codex start);
        # begun now, that overlaps the items before it. Under xdist the controller's probe
        # answers the workers too (they share it through the run directory).
        warm_up = getattr(reviewer, "warm_up", None)
        if callable(warm_up):
            warm_up(self.run_dir / f"preflight-{os.getpid()}")
            close = getattr(reviewer, "close", None)
            if callable(close):
                # Registered after the run directory's removal, so it runs before it.
                self.config.add_cleanup(close)

    def _needs_reviewer(self, specs: Iterable[TargetSpec]) -> bool:
        """Whether reviewing ``specs`` may start the reviewer or the lead: a target whose
        stored verdict does not stand (the coordinator's cache hit, asked without its
        effects).  A target whose material cannot be read errors without a reviewer."""
        for spec in specs:
            if spec.error is None and self.coordinator.stored(spec.key) is None:
                return True  # nothing stored (or --advreview-fresh): reviewed, unread
            try:
                material = build_material(
                    spec,
                    self.settings,
                    self.targets.repo_root,
                    self._shared.resolve,
                    with_hunks=False,
                )
            except ReviewInputError:
                continue
            if self.coordinator.needs_reviewer(spec, material):
                return True
        return False

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Decide once what every review of this process shares (and start the jobs pool).

        After collection, so a ``pytest_advreview_fix`` of a conftest collection loaded
        counts as one of the initial conftests' does.
        """
        if self.config.option.collectonly:
            return
        reviewer = self.reviewer()
        if self._from_controller is not None:
            # An xdist worker: its own items (it collects every item of the run).
            specs = [item.spec for item in session.items if isinstance(item, ReviewItem)]
            self._prepare_reviews(reviewer, specs)
        context = ReviewContext(
            self.config,
            self.settings,
            reviewer,
            self.targets.repo_root,
            in_git=self.targets.repo is not None,
            shared=self._shared,
            store=self.coordinator.store,
            progress=self._progress,
            fixer_hook=has_fixer_hook(self.config),
            layout=self.layout,
            # In the run directory, under the run's secret: every process of the run
            # knows the lead's edits the others copied into the checkout.
            adoptions=Adoptions(self.run_dir / "adopted", self.run_secret),
            samples=make_samples(self.config, self.settings, reviewer),
            verifier=make_verifier(
                self.config, self.settings, lambda: runstash.run_dir(self.config)
            ),
        )
        self.stash.context = context
        jobs = jobs_for(
            self.settings.jobs,
            shared_writable=self.layout.shared_writable,
            xdist_worker=self._from_controller is not None,
        )
        if jobs > 1:
            # Every backend of the run: the reviewer's, other samples' and the verifier's.
            backends = {id(b): b for b in (reviewer, *(r for _, r in context.samples))}
            if context.verifier is not None:
                backends[id(context.verifier)] = context.verifier
            cancels = [c for b in backends.values() if callable(c := getattr(b, "cancel", None))]

            def cancel_all() -> None:
                for cancel in cancels:
                    cancel()

            pool = ReviewPool(
                jobs,
                context=context,
                coordinator=self.coordinator,
                # One review per target: an item whose target another item reviews
                # replays that review (items.FirstReview), so it never starts one ahead.
                target_of=claim_ahead,
                cancel=cancel_all if cancels else None,
            )
            self.config.pluginmanager.register(pool, "advreview-pool")
            self.stash.pool = pool

    def _check_containment(self) -> None:
        """Refuse (where the verdict gates) or warn when the gate's own code lies where
        the reviewer may write (:mod:`.workspace.containment`); once, on the controller."""
        found = trust.of_run(self.config, self.settings)
        self.containment_warnings = containment.check(self.settings, self.layout, os.environ, found)

    # -- --advreview-only: review items and nothing else ---------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_directory(self, path: Path, parent: pytest.Collector) -> pytest.Dir | None:
        """With ``--advreview-only`` every folder is a plain ``Dir``, never a ``Package``.

        A ``Package`` imports its ``__init__.py`` when an item below it is set up, so a
        plan under a Python package would run the package's code.
        """
        if not self.only:
            return None
        folder: pytest.Dir = pytest.Dir.from_parent(parent, path=path)
        return folder

    @pytest.hookimpl(tryfirst=True)
    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> bool | None:
        """Skip what a review run must not collect.

        With ``--advreview-only`` only markdown files reach collection (no module import).
        Never walk into a symlinked folder that leads back to one of its ancestors: pytest
        follows folder symlinks, and a loop (``docs/plans/loop -> ..``) is walked 40 levels
        deep until the system refuses (ELOOP), which made one plan 41 items or failed the
        whole collection.  Everything in such a folder is reached without it.
        """
        if self.only and collection_path.suffix != ".md" and not collection_path.is_dir():
            return True
        text = os.fspath(collection_path)
        if text in self.targets.walked:
            return None  # a selected plan file: no folder, so no loop (and no lstat)
        if not os.path.islink(text):  # one lstat; almost every other path stops here
            return None
        real = os.path.realpath(text)
        parent = os.path.realpath(os.path.dirname(text))
        if parent == real or parent.startswith(os.path.join(real, "")):
            return True
        return None

    @pytest.hookimpl
    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> PlanFile | None:
        """Collect a plan file that is selected or named on the command line."""
        if file_path.suffix != ".md" or self.targets.head is not None:
            # Under --advreview-head every plan item is REF's (added below): a base file
            # pytest walks to must never become one, even one at the same path.
            return None
        resolved = self.targets.walked.get(os.fspath(file_path))
        if resolved is None:
            resolved = self._shared.resolve(file_path)
            self.targets.explicit_plans()
            # A selected plan reached under another name (a symlinked folder, a loop
            # of them) is not collected there: it is collected at its own path, or
            # added by pytest_collection_modifyitems.
            if resolved not in self.targets.explicit_set:
                return None
        if resolved in self._collected:
            return None  # each real file is one item
        self._collected.add(resolved)
        return self._plan_file(parent, file_path)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """Add selected plans outside the collected paths, and the code-review item;
        then keep this job's share of the review items (``--advreview-shard``).

        ``tryfirst`` so that ``-m``/``-k`` deselection (which runs in the same hook) sees
        the added items.
        """
        self._add_items(session, config, items)
        if self.settings.shard is not None:
            from .shard import keep_share

            keep_share(config, items, self.settings.shard)

    def _add_items(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if self.targets.named_only():
            return  # laptop mode: exactly the plans named on the command line
        added: list[pytest.Item] = []
        # Every selected plan that has no review item yet, whatever kept pytest from
        # making one: a collector pytest made and dropped (a file named on the command
        # line is collected from its folder, where its neighbours are made too), or one
        # whose collection a plugin skipped (--lf's last-failed filter).
        made = {item.spec.key for item in items if isinstance(item, ReviewItem)}
        # The selected plans, in order (under --advreview-head REF's, named in rootdir).
        for path, key in self.targets.keys.items():
            if key in made:
                continue
            plan = self._plan_file(session, path)
            added.extend(plan.collect())
        spec = self.targets.code_spec()
        if spec is not None:
            added.append(
                ReviewItem.from_parent(
                    session, name=CODE_ITEM_NAME, nodeid=CODE_ITEM_NODEID, spec=spec
                )
            )
        if added:
            items.extend(added)
            # Items made here never passed through a collector, so the terminal's
            # "collected N items" would not count them; a passed collect report carrying
            # them is how a collector announces items (xdist workers ignore passed ones).
            result: list[pytest.Item | pytest.Collector] = [*added]
            report = pytest.CollectReport(session.nodeid, "passed", None, result)
            config.hook.pytest_collectreport(report=report)

    def _plan_file(self, parent: pytest.Collector, path: Path) -> PlanFile:
        """The collector of the plan at ``path``, named (its item's keyword, what ``-k``
        matches) and identified as text: a name that is not UTF-8 as git prints it."""
        try:
            name = path.relative_to(parent.path).as_posix()  # pytest's own choice
        except ValueError:
            name = path.name
        plan: PlanFile = PlanFile.from_parent(
            parent, path=path, name=quote_path(name), nodeid=self._node_id(path)
        )
        return plan

    def _node_id(self, path: Path) -> str | None:
        """The node id of a plan outside rootdir (a run from a subdirectory without an ini),
        or whose name is not UTF-8; ``None``: pytest's own.

        pytest would name it by its file name alone; relative to rootdir (which is then
        the invocation directory) the id also works as a command-line argument.
        """
        relative = Path(os.path.relpath(path, self.config.rootpath)).as_posix()
        try:
            path.relative_to(self.config.rootpath)
        except ValueError:
            return quote_path(relative)
        # A name that is not UTF-8 as git prints it: pytest's own writers (the cache's
        # lastfailed, JUnit, the terminal) need text.
        quoted = quote_path(relative)
        return quoted if quoted != relative else None

    def required_targets(self) -> list[str]:
        """The keys of the targets a gate must see reviewed: every selected plan and the
        code item when there is a change set (or an unusable base), decided from the
        repository, not from what pytest collected; under ``--advreview-shard`` this
        shard's share of them."""
        keys = list(self.targets.keys.values())
        try:
            spec = self.targets.code_spec()
        except pytest.UsageError:  # reported at collection already: the run has failed
            spec = None
        if spec is not None:
            keys.append(spec.key)
        if self.settings.shard is not None:
            from .shard import share_of

            index, total = self.settings.shard
            keys = [key for key in keys if share_of(key, total) == index]
        return keys

    # -- running -----------------------------------------------------------------------

    def reviewer(self) -> Reviewer:
        """The backend named by the settings, built once per run through the hook."""
        if self._reviewer is None:
            self._reviewer = make_reviewer(self.config, self.settings)
        return self._reviewer

    # -- reporting ---------------------------------------------------------------------

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        """Effective settings, the plan selection, and the runtime hints.  A warning of
        the plugin (the stored state's) that a warnings filter made an error stops the run
        with its text and the filter line, not an INTERNALERROR."""
        with warnfilter.reported(warnfilter.usage_error):
            return self._header(config)

    def _header(self, config: pytest.Config) -> list[str]:
        from .settings import header_lines, runtime_hints

        verbose = int(config.getoption("verbose", 0) or 0) > 0
        lines = header_lines(self.settings, verbose=verbose)
        selected = self.targets
        if selected.head is not None:
            lines.append(selected.head.header)
        if selected.selection is not None:
            lines.append(f"advreview: {selected.selection.summary}")
        info = selected.code_change()[1]  # first: it may find the base unusable
        if selected.base_error is not None:
            reason = selected.base_error.removeprefix("pytest-advreview: ")
            lines.append(f"advreview: the base cannot be used: {reason}")
        if info is not None:
            lines.append(f"advreview: code change: {info.summary()}")
            differs = self.coordinator.change_note(CODE_ITEM_NAME, selected.code_change()[0])
            if differs is not None:
                lines.append(f"advreview: code-review: {differs}")
        if info is not None and (info.mode != "none" or info.filtered):
            # Under a gate: whose rules chose the files and the instructions.
            origin = selected.path_rules().origin
            if origin is not None:
                lines.append(f"advreview: path rules from {origin}")
        if self.coordinator.authority.gated:
            lines.append(
                "advreview: findings left to the operator are decided only by "
                f"{self.coordinator.authority.where}"
            )
        if selected.repo_note:
            lines.append(
                selected.repo_note
                if selected.repo_note.startswith("advreview:")
                else f"advreview: {selected.repo_note}"
            )
        lines.extend(f"advreview: {hint}" for hint in runtime_hints(self.settings))
        if "codex" in (self.settings.reviewer, self.settings.lead):
            # The tool shell's allow-list, as the user widened it (names, never values).
            from .runner.environment import allow_warnings, reviewer_process_env

            env = reviewer_process_env(os.environ)
            lines.extend(f"advreview: {w}" for w in allow_warnings(env, self.settings.env_allow))
        lines.extend(f"advreview: {warning}" for warning in self.containment_warnings)
        if self.lock_warning is not None:
            lines.append(f"advreview: WARNING: {self.lock_warning}")
        if (
            os.environ.get("CI", "").strip().lower() == "true"
            and not os.environ.get(STATE_KEY_ENV, "").strip()
        ):
            # A fresh runner makes a new per-user key, so every verdict restored from the
            # CI cache fails its check and is reviewed (and paid for) again.
            lines.append(
                f"advreview: {STATE_KEY_ENV} is not set: verdicts restored from a CI cache "
                "cannot be checked with this runner's new per-user key and are reviewed "
                'again; set it from a secret (docs/ci.md, "The state key")'
            )
        if self.only:
            lines.append("advreview: --advreview-only: review items only, no test module imported")
        # Ref names, commit subjects and paths come from the repository: one safe line each.
        return [outbound.one_line(line) for line in lines]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Put the item's record on each phase report (attributes travel through xdist)."""
        report = yield
        if isinstance(item, ReviewItem):
            excinfo = call.excinfo
            if excinfo is not None and item.stopped(excinfo.value):
                item.note_stopped(report, excinfo.value)  # first: it may make the record
            if item.record_json is not None:
                setattr(report, RECORD_ATTR, item.record_json)
            # pytest renders setup/teardown errors as tracebacks (repr_failure is only
            # used for the call phase); review errors are messages, never tracebacks.
            if excinfo is not None and report.when != "call" and item.own_error(excinfo.value):
                report.longrepr = item.repr_failure(excinfo, when=report.when)
        return report

    @pytest.hookimpl(wrapper=True)
    def pytest_report_to_serializable(
        self, report: pytest.TestReport | pytest.CollectReport
    ) -> Generator[None, dict[str, Any] | None, dict[str, Any] | None]:
        """Send a review's failure text whole (pytest would flatten it to one string),
        and every report as text.

        xdist carries UTF-8 text only: one string that holds a file name that is not UTF-8
        (a node's keyword, an exception's message, captured output) and the worker could not
        send the report at all, an internal error that loses the item's outcome.  Such
        names go out as git prints them, whichever field of whichever report holds them.
        """
        data = yield
        if data is not None and isinstance(report.longrepr, ReviewRepr):
            data["longrepr"] = report.longrepr.to_wire()
        return None if data is None else _as_text(data)

    @pytest.hookimpl(wrapper=True)
    def pytest_report_from_serializable(
        self, data: dict[str, Any]
    ) -> Generator[None, object, object]:
        """Rebuild the review's failure text, so the short summary stays one line."""
        report = yield
        if isinstance(report, pytest.TestReport):
            rebuilt = ReviewRepr.from_wire(report.longrepr)
            if rebuilt is not None:
                report.longrepr = rebuilt
        return report


def _as_text(value: Any) -> Any:
    """``value`` (a serialized report) with :func:`~.git.escaped_text` applied to every
    string in it, dict keys too."""
    if isinstance(value, str):
        return escaped_text(value)
    if isinstance(value, dict):
        return {_as_text(key): _as_text(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_as_text(item) for item in value)
    return value


class Controller:
    """The controller's side of a run; ``plugin.py`` registers it nowhere else, so none
    of its hooks asks where it runs (an xdist worker only reviews and sends reports)."""

    def __init__(self, config: pytest.Config, session: ReviewSession) -> None:
        self.config = config
        self.session = session
        self.results = ResultsCollector()

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> None:
        """Check the decisions file against the targets and their stored findings, then
        decide whether the run may review (:meth:`ReviewSession.prepare_run`).

        Here rather than at configure: stored state may warn, and pytest applies the
        ``filterwarnings`` of the run to warnings of collection.  (An xdist controller
        does not collect, but this hook still runs on it.)
        """
        from .trust.decisions import DecisionsError

        try:
            # A warning of the stored state made an error by the run's filterwarnings is
            # one clear usage error here too, not an INTERNALERROR (seen on pytest 8.0).
            with warnfilter.reported(warnfilter.usage_error):
                self.session.coordinator.check_decisions(self.session.targets.repo_root)
        except DecisionsError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.session.prepare_run()

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """Give each xdist worker the run it rebuilds (``workerinput``: a pipe to the
        worker, which no reviewer can read)."""
        node.workerinput.update(self.session.stash.serialized(self.config))

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect review records (also those of xdist workers)."""
        self.results.add(report)

    @pytest.hookimpl
    def pytest_warning_recorded(
        self, warning_message: warnings.WarningMessage, nodeid: str
    ) -> None:
        """Note the review warnings pytest recorded (the GitHub annotations leave to another
        plugin the findings it annotates from them, see ``report/publish.py``)."""
        if issubclass(warning_message.category, ReviewWarning):
            self.results.add_warning(nodeid, str(warning_message.message))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Write the report files once, also after errors."""
        # Imported here: the report writers run on the controller only, and xdist
        # workers (one Python start each) need not load them.
        from .report.publish import exit_status, publish

        results = self.results.ordered()
        try:
            info = self.session.targets.code_change()[1]
        except pytest.UsageError:  # reported at collection already; the reports still go out
            info = None
        written = publish(self.config, self.session.settings, results, change=info)
        status = exit_status(self.session.settings, results, int(exitstatus), config=self.config)
        if not written and status in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            # A gate whose SARIF/JSON/markdown could not be written must not pass: the
            # pipeline step that uploads it would fail later, or silently show nothing.
            status = pytest.ExitCode.USAGE_ERROR
        session.exitstatus = status

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """The final operator summary: one block per review item."""
        write_summary(terminalreporter, self.results.ordered())


def _close_pool(pool: WorktreePool, run_dir: Path | None, repo_root: Path) -> None:
    """Remove the process's review worktrees (and, on the controller, what crashed
    workers left in ``run_dir``); what cannot be removed is said, with the fix (at the
    end of the run nothing else can report it)."""
    for problem in pool.close():
        sys.stderr.write(f"{problem}\n")
    if run_dir is not None:
        WorktreePool.sweep(run_dir, repo_root)
