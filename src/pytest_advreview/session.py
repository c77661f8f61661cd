"""The plugins of one ``--adversarial-review`` run, registered by ``plugin.py``.

:class:`ReviewSession` (every process): what to collect and how to run its reviews.
:class:`Controller` (the controller only, never an xdist worker): the decisions check,
what the workers get, the report files and the terminal summary.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import shutil
import tempfile
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import containment, head, outbound, runstash, targets
from .constants import BUILTIN_REVIEWERS, CODE_ITEM_NAME, RECORD_ATTR
from .coordinator import Coordinator
from .items import PlanFile, ReviewItem, ReviewRepr
from .models import ChangeSet, ChangeSetInfo
from .options import DEFAULT_DECISIONS
from .parallel import ReviewPool
from .progress import progress_plugin
from .report.collect import ResultsCollector
from .report.terminal import write_summary
from .review import (
    ReviewContext,
    SharedLookups,
    TargetSpec,
    has_fixer_hook,
    make_reviewer,
    repo_relative,
)
from .runner import Reviewer
from .statekey import STATE_KEY_ENV

if TYPE_CHECKING:
    from .settings import Settings

__all__ = ["ReviewSession"]


class ReviewSession:
    """Collection, the reviewer and the reviews of one run, in every process of it."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.rootdir = Path(config.rootpath)
        self.repo: targets.GitRepoInfo | None = None
        self.repo_note: str | None = None
        self.selection: targets.PlanSelection | None = None
        self.base: str | None = None
        #: Why the base cannot be used (it does not exist, or cannot be diffed with
        #: HEAD); the code item reports it, so a plan named on the command line is still
        #: reviewed.
        self.base_error: str | None = None
        #: Where the plan globs are anchored: rootdir when an ini file (or --rootdir)
        #: decided it, else the repository's top level, so a run from a subdirectory
        #: finds the same plans as one from the top.
        self.plan_root = self.rootdir
        #: The code change and its description, decided once per process (see code_change).
        self._change: tuple[ChangeSet | None, ChangeSetInfo | None] | None = None
        self._reviewer: Reviewer | None = None
        self._collected: set[Path] = set()
        # Dict and set lookups: pytest asks about every file of the tree, thousands of
        # plans each time (a tuple here made collecting 5,000 plans quadratic).
        #: Selected plan → its repo-relative key; walked path text → selected plan.
        self._keys: dict[Path, str] = {}
        self._walked: dict[str, Path] = {}
        self._explicit: list[Path] | None = None
        self._explicit_set: frozenset[Path] = frozenset()
        #: ``--advreview-head``: the private checkout of REF, and each plan item's node
        #: path (REF's path, named under the rootdir) -> the file in that checkout.
        self.head: head.HeadCheckout | None = None
        self._sources: dict[Path, Path] = {}
        #: Shared by the run's reviews: git top levels and resolved paths.
        self._shared = SharedLookups()
        #: ``--advreview-only``: collect the review items, import no test module.
        self.only = bool(config.getoption("advreview_only", default=False))
        # One directory per run, decided on the controller and shared with the workers
        # (the token ledger lives there); removed by the controller at the end.
        #: A worker's run directory, secret and head checkout (``None`` on the controller).
        self._from_controller = runstash.from_workerinput(config)
        if self._from_controller is not None:
            self.run_dir, self.run_secret, _ = self._from_controller
        else:
            self.run_dir = Path(tempfile.mkdtemp(prefix="advreview-run-"))
            # Removed however the run ends (a usage error after configure included).
            config.add_cleanup(lambda: shutil.rmtree(self.run_dir, ignore_errors=True))
            # Tags the state entries this run writes, so a review can tell the entries
            # other workers write meanwhile from a reviewer's (state.py).
            self.run_secret = secrets.token_bytes(32)
        # The repository, the base and the plans to review (git runs once here). A bare
        # repository, a base that is not a commit or a failing git command is the user's
        # to fix: a usage error with the reason, never an internal error.
        try:
            self.repo = targets.repo_info(self.rootdir)
            if settings.head is not None:
                self._find_head_targets(settings.head)
            else:
                self._find_targets()
        except (targets.TargetError, head.HeadError) as exc:
            raise pytest.UsageError(str(exc)) from None
        if self.plan_root != self.rootdir:
            # No ini file (hence no advreview_decisions key): the decisions file is the
            # repository's, found from a subdirectory as from the top.
            decisions = os.fspath(self.plan_root / DEFAULT_DECISIONS)
            self.settings = settings = settings.model_copy(update={"decisions": decisions})
        #: Warnings of the containment check for the header (the controller's).
        self.containment_warnings: list[str] = []
        if self._from_controller is None:
            self._check_containment()
        self.coordinator = Coordinator(config, settings, self.run_dir, run_secret=self.run_secret)
        self.stash = runstash.RunStash(
            run_dir=self.run_dir,
            run_secret=self.run_secret,
            coordinator=self.coordinator,
            plans=self,
            head=self.head,
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
        reviewer = self.reviewer()
        # At session start: pytest's terminal reporter is configured by now.
        display = progress_plugin(self.config, self.settings.progress)
        if display is not None:
            self.config.pluginmanager.register(display, "advreview-progress")
        # What every review of the run shares, decided once: every initial conftest and
        # plugin has registered its pytest_advreview_fix by now.
        context = ReviewContext(
            self.config,
            self.settings,
            reviewer,
            self.repo_root,
            in_git=self.repo is not None,
            shared=self._shared,
            store=self.coordinator.store,
            progress=display.progress if display is not None else None,
            fixer_hook=has_fixer_hook(self.config),
        )
        self.stash.context = context
        if self.settings.jobs > 1:
            cancel = getattr(reviewer, "cancel", None)
            pool = ReviewPool(
                self.settings.jobs,
                context=context,
                coordinator=self.coordinator,
                target_of=lambda item: item.spec if isinstance(item, ReviewItem) else None,
                cancel=cancel if callable(cancel) else None,
            )
            self.config.pluginmanager.register(pool, "advreview-pool")
            self.stash.pool = pool
        # The Codex backend probes its sandbox before the first review (one Codex start);
        # begun now, that overlaps collection. Under xdist the controller's probe answers
        # the workers too (they share it through the run directory).
        warm_up = getattr(reviewer, "warm_up", None)
        if callable(warm_up):
            warm_up(self.run_dir / f"preflight-{os.getpid()}")
            close = getattr(reviewer, "close", None)
            if callable(close):
                # Registered after the run directory's removal, so it runs before it.
                self.config.add_cleanup(close)

    def _check_containment(self) -> None:
        """Refuse (where the verdict gates) or warn when the gate's own code lies where
        the reviewer may write (:mod:`.containment`); once, on the controller."""
        gated = targets.in_ci(os.environ) or self.settings.strict_exit
        self.containment_warnings = containment.check(
            self.settings, self.repo_root, os.environ, gated=gated
        )

    # -- what to review ----------------------------------------------------------------

    def _find_targets(self) -> None:
        if self.repo is None:
            self.repo_note = (
                f"{self.rootdir} is not inside a git repository: plan items only, no code review"
            )
        else:
            self.repo_note = self.repo.warning
            if self.config.inipath is None and not self.config.option.rootdir:
                # Without an ini file pytest's rootdir is wherever it was started.
                self.plan_root = self.repo.root
            try:
                self.base = targets.resolve_base(self.repo.root, self.settings.base, os.environ)
            except targets.BaseRefError as exc:
                self.base_error = str(exc)
        try:
            self.selection = self._select(self.base)
        except targets.BaseRefError as exc:
            # Scope ``changed`` cannot see the branch's plans: the uncommitted ones are
            # still selected, and the code item fails with the reason (never a pass).
            self.base_error = str(exc)
            self.base = None
            self.selection = self._select(None)
        self._explicit_plans()  # a named plan that leads out of the repository is refused
        no_code_item = self.settings.diff == "none"
        if (
            self.base_error is not None
            and no_code_item
            and self.settings.plan_scope == "changed"
            and not self._explicit_plans()
        ):
            # No code item to carry the error, and the plan selection is incomplete.
            raise pytest.UsageError(self.base_error)
        self._keys = dict(zip(self.selection.selected, self.selection.keys, strict=True))
        # pytest hands pytest_collect_file the path it walked to: rootdir joined with the
        # folders below it. When that text is a selected plan's, it is that plan, and
        # resolving it (an lstat per file) can be skipped.
        root_text = os.fspath(self.plan_root)
        cut = len(self.selection.prefix)
        self._walked = {
            os.path.join(root_text, key[cut:]): path
            for path, key in self._keys.items()
            if key.startswith(self.selection.prefix)
        }
        _refuse_unsafe_plans(self.selection.keys)

    def _select(self, base: str | None) -> targets.PlanSelection:
        return targets.plan_files(
            self.plan_root,
            self.settings.plans,
            self.settings.plan_scope,
            base,
            repo=self.repo,
        )

    def _find_head_targets(self, ref: str) -> None:
        """``--advreview-head``: REF's plans and ``BASE...REF``, from a private checkout.

        The controller materialises REF once and removes it at the end; xdist workers get
        the same checkout (and the commits it was resolved to) through ``workerinput``.
        """
        if self.repo is None:
            raise head.HeadError(
                f"pytest-advreview: --advreview-head={ref} needs the base checkout to be a "
                f"git repository, but {self.rootdir} is not in one; run pytest in a clone "
                "of the base"
            )
        if self._explicit_plans():
            raise head.HeadError(
                "pytest-advreview: with --advreview-head the plans come from REF "
                "(advreview_plans, advreview_plan_scope); a .md path on the command line "
                "names a file of the base checkout: drop it, or select items with -k"
            )
        checkout = self._from_controller[2] if self._from_controller else None
        if checkout is None:
            checkout = head.materialise(
                self.repo.root, ref, self.settings.base, rootdir=self.rootdir
            )
            # Removed however the run ends (Ctrl-C and usage errors after this included).
            self.config.add_cleanup(lambda: head.remove(checkout))
        self.head = checkout
        self.base = checkout.base_sha
        top = Path(checkout.path)
        # Globs are relative to the rootdir: the same folder of REF.
        prefix = targets._prefix(self.rootdir, self.repo.root)
        root = top / prefix if prefix else top
        if not root.is_dir():
            self.selection = targets.PlanSelection(
                (), 0, f"{prefix.rstrip('/')} does not exist in {ref}: no plans to review"
            )
            return
        selection = targets.plan_files(
            root,
            self.settings.plans,
            self.settings.plan_scope,
            checkout.base_sha,
            repo=targets.GitRepoInfo(root=top),
        )
        # "changed against <40 hex digits>" names the base the way the header does.
        shown = f"{checkout.base} ({checkout.base_sha[:12]})"
        self.selection = dataclasses.replace(
            selection, summary=selection.summary.replace(checkout.base_sha, shown)
        )
        plans = list(zip(self.selection.selected, self.selection.keys, strict=True))
        # A link (out of REF's files, or any other): following it would send a file of
        # this machine to the reviewer, and skipping it would pass a plan nobody reviewed.
        links = [*self.selection.outside, *(key for path, key in plans if path.is_symlink())]
        if links:
            raise head.HeadError(
                f"pytest-advreview: the plan {links[0]} is a symbolic link in "
                f"--advreview-head={ref}; a head's plans are read only from regular "
                "files: ask the author to commit the plan itself"
            )
        _refuse_unsafe_plans(key for _path, key in plans)
        for path, key in plans:
            node_path = self.rootdir / key[len(self.selection.prefix) :]
            self._keys[node_path] = key
            self._sources[node_path] = path

    @property
    def repo_root(self) -> Path:
        """The repository root (or rootdir outside git): where the reviewer runs.

        With ``--advreview-head`` that is the private checkout of REF.
        """
        if self.head is not None:
            return Path(self.head.path)
        return self.repo.root if self.repo else self.rootdir

    def plan_source(self, path: Path) -> Path:
        """The file a plan item reads: REF's copy under ``--advreview-head``, else ``path``."""
        return self._sources.get(path, path)

    def relpath(self, path: Path) -> str:
        """A repo-relative posix path, the key of a plan in state and decisions."""
        key = self._keys.get(path) or self._keys.get(self._shared.resolve(path))
        return key or repo_relative(path, self.repo_root, self._shared.resolve)

    def _explicit_plans(self) -> list[Path]:
        """``.md`` files named on the command line: always reviewed (looked up once)."""
        if self._explicit is None:
            found = []
            for arg in self.config.args:
                path = Path(arg.split("::", 1)[0])
                if not path.is_absolute():
                    path = Path(self.config.invocation_params.dir) / path
                if path.suffix == ".md" and path.is_file():
                    _refuse_unsafe_plans([arg.split("::", 1)[0]])
                    real = path.resolve()
                    self._refuse_disguised(path, real)
                    found.append(real)
            self._explicit = found
            self._explicit_set = frozenset(found)
        return self._explicit

    def _refuse_disguised(self, path: Path, real: Path) -> None:
        """A named plan inside the repository that is a link to a file outside it.

        Naming a file outside the repository is a choice (one plan on a laptop); a link
        in the repository that leads out of it is a file of someone else's disguised as
        the project's plan, and is never reviewed or hashed as one.
        """
        if self.repo is None:
            return
        top = os.path.realpath(self.repo.root)
        inside = os.path.abspath(path).startswith(os.path.join(os.path.abspath(self.repo.root), ""))
        if inside and not os.fspath(real).startswith(os.path.join(top, "")):
            raise pytest.UsageError(
                f"pytest-advreview: {path} is a symlink to {real}, outside the repository "
                f"{self.repo.root}; it is not reviewed as the project's plan: name the file "
                "itself, or commit the plan in place of the link"
            )

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
        if text in self._walked:
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
        if file_path.suffix != ".md" or self.head is not None:
            # Under --advreview-head every plan item is REF's (added below): a base file
            # pytest walks to must never become one, even one at the same path.
            return None
        resolved = self._walked.get(os.fspath(file_path))
        if resolved is None:
            resolved = self._shared.resolve(file_path)
            self._explicit_plans()
            # A selected plan reached under another name (a symlinked folder, a loop
            # of them) is not collected there: it is collected at its own path, or
            # added by pytest_collection_modifyitems.
            if resolved not in self._explicit_set:
                return None
        if resolved in self._collected:
            return None  # each real file is one item
        self._collected.add(resolved)
        plan: PlanFile = PlanFile.from_parent(parent, path=file_path)
        return plan

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
        explicit = self._explicit_plans()
        if explicit:
            return  # laptop mode: exactly the plans named on the command line
        assert self.selection is not None
        added: list[pytest.Item] = []
        for path in self._keys:  # the selected plans, in order (REF's, named in rootdir)
            if path in self._collected:
                continue
            plan = PlanFile.from_parent(session, path=path, nodeid=self._node_id(path))
            added.extend(plan.collect())
        spec = self._code_spec()
        if spec is not None:
            added.append(ReviewItem.from_parent(session, name=CODE_ITEM_NAME, spec=spec))
        if added:
            items.extend(added)
            # Items made here never passed through a collector, so the terminal's
            # "collected N items" would not count them; a passed collect report carrying
            # them is how a collector announces items (xdist workers ignore passed ones).
            result: list[pytest.Item | pytest.Collector] = [*added]
            report = pytest.CollectReport(session.nodeid, "passed", None, result)
            config.hook.pytest_collectreport(report=report)

    def _node_id(self, path: Path) -> str | None:
        """The node id of a plan outside rootdir (a run from a subdirectory without an ini).

        pytest would name it by its file name alone; relative to rootdir (which is then
        the invocation directory) the id also works as a command-line argument.
        """
        try:
            path.relative_to(self.config.rootpath)
        except ValueError:
            return Path(os.path.relpath(path, self.config.rootpath)).as_posix()
        return None

    def _code_spec(self) -> TargetSpec | None:
        """The code item's target; one that errors with the reason when the base is unusable."""
        if self.repo is None or self.settings.diff == "none":
            return None
        change = self.code_change()[0]
        if self.base_error is not None:
            # Fail closed: the branch's change (and, with scope ``changed``, its plans)
            # cannot be told apart, so the gate must not pass; plan items still run.
            return TargetSpec(kind="code", key=CODE_ITEM_NAME, error=self.base_error)
        if change is None:
            return None
        unsafe = [name for name in change.files if outbound.unsafe_name(name)]
        if unsafe:
            # Fail closed: the name would forge a line wherever it is printed; the code
            # item errors and says which file, escaped.
            more = f" (and {len(unsafe) - 1} more)" if len(unsafe) > 1 else ""
            return TargetSpec(
                kind="code",
                key=CODE_ITEM_NAME,
                error="pytest-advreview: the change set has a file named "
                f"{outbound.shown(unsafe[0])}{more}: a control "
                "character or '##[' in a file name would forge CI log and terminal lines "
                "wherever it is printed; rename the file",
            )
        return TargetSpec(
            kind="code",
            key=CODE_ITEM_NAME,
            change=change,
            against_plan=Path(self.settings.against_plan).resolve()
            if self.settings.against_plan
            else None,
        )

    def code_change(self) -> tuple[ChangeSet | None, ChangeSetInfo | None]:
        """The change set the code item reviews and its description (``None`` outside git).

        Decided once per process, at the header (or at collection without a terminal),
        so the header, the item and the reports all name the same change set.  Under CI
        ``--advreview-diff=auto`` means the branch (:func:`targets.change_set`).  A base
        that cannot be used is kept in ``base_error``: the code item reports it.
        """
        if self._change is not None:
            return self._change
        if self.repo is None:
            self._change = (None, None)
            return self._change
        assert self.selection is not None
        ci = targets.in_ci(os.environ)
        change: ChangeSet | None = None
        note: str | None = None
        try:
            if self._explicit_plans():
                note = "plans named on the command line: no code review"
            elif self.settings.diff != "none" and self.base_error is None:
                # Under --advreview-head: BASE...REF, REF being HEAD of the private checkout
                # (repo_root), so the diff commands the prompt names work there as written.
                mode = self.settings.diff if self.head is None else "branch"
                try:
                    change = targets.change_set(
                        self.repo_root,
                        mode,
                        self.base,
                        # A plan reviewed as a plan item is not reviewed again as code;
                        # repo-relative keys: no path arithmetic per plan.
                        self.selection.keys,
                        resolver=self._shared.resolve,
                        ci=ci,
                    )
                except targets.BaseRefError as exc:
                    if self.head is not None:
                        raise  # REF's own base: a usage error, as any git failure of a head
                    self.base_error = str(exc)
                if change is not None and self.head is not None:
                    change = change.model_copy(update={"description": self.head.description})
            if self.base_error is not None and note is None:
                note = "not reviewed: the base cannot be used (the code item says why)"
            info = targets.change_set_info(
                self.repo_root,
                change,
                self.settings.diff,
                self.base,
                ci=ci,
                note=note,
            )
        except targets.TargetError as exc:
            raise pytest.UsageError(str(exc)) from None
        self._change = (change, info)
        return self._change

    # -- running -----------------------------------------------------------------------

    def reviewer(self) -> Reviewer:
        """The backend named by the settings, built once per run through the hook."""
        if self._reviewer is None:
            self._reviewer = make_reviewer(self.config, self.settings)
        return self._reviewer

    # -- reporting ---------------------------------------------------------------------

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        """Effective settings, the plan selection, and the runtime hints."""
        from .settings import header_lines, runtime_hints

        lines = header_lines(self.settings)
        if self.head is not None:
            lines.append(self.head.header)
        if self.selection is not None:
            lines.append(f"advreview: {self.selection.summary}")
        info = self.code_change()[1]  # first: it may find the base unusable
        if self.base_error is not None:
            reason = self.base_error.removeprefix("pytest-advreview: ")
            lines.append(f"advreview: the base cannot be used: {reason}")
        if info is not None:
            lines.append(f"advreview: code change: {info.summary()}")
        if self.repo_note:
            lines.append(
                self.repo_note
                if self.repo_note.startswith("advreview:")
                else f"advreview: {self.repo_note}"
            )
        lines.extend(f"advreview: {hint}" for hint in runtime_hints(self.settings))
        if "codex" in (self.settings.reviewer, self.settings.lead):
            # The tool shell's allow-list, as the user widened it (names, never values).
            from .runner.environment import allow_warnings, reviewer_process_env

            env = reviewer_process_env(os.environ)
            lines.extend(f"advreview: {w}" for w in allow_warnings(env, self.settings.env_allow))
        lines.extend(f"advreview: {warning}" for warning in self.containment_warnings)
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
            if item.record_json is not None:
                setattr(report, RECORD_ATTR, item.record_json)
            # pytest renders setup/teardown errors as tracebacks (repr_failure is only
            # used for the call phase); review errors are messages, never tracebacks.
            excinfo = call.excinfo
            if excinfo is not None and report.when != "call" and item.own_error(excinfo.value):
                report.longrepr = item.repr_failure(excinfo)
        return report

    @pytest.hookimpl(wrapper=True)
    def pytest_report_to_serializable(
        self, report: pytest.TestReport | pytest.CollectReport
    ) -> Generator[None, dict[str, Any] | None, dict[str, Any] | None]:
        """Send a review's failure text whole (pytest would flatten it to one string)."""
        data = yield
        if data is not None and isinstance(report.longrepr, ReviewRepr):
            data["longrepr"] = report.longrepr.to_wire()
        return data

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


def _refuse_unsafe_plans(names: Iterable[str]) -> None:
    """A plan whose name would forge a CI log line or drive the terminal is refused: its
    node id is printed at the start of lines, where the runner reads workflow commands."""
    for name in names:
        if outbound.unsafe_name(name) or "::" in name:
            raise pytest.UsageError(
                f"pytest-advreview: the plan file {outbound.shown(name)} has a control "
                "character, '::' or '##[' in its name, which would forge CI log lines (a "
                "workflow command) or rewrite terminal lines wherever its node id is "
                "printed; it is not collected: rename the file"
            )


class Controller:
    """The controller's side of a run; ``plugin.py`` registers it nowhere else, so none
    of its hooks asks where it runs (an xdist worker only reviews and sends reports)."""

    def __init__(self, config: pytest.Config, session: ReviewSession) -> None:
        self.config = config
        self.session = session
        self.results = ResultsCollector()

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> None:
        """Check the decisions file against the targets and their stored findings.

        Here rather than at configure: stored state may warn, and pytest applies the
        ``filterwarnings`` of the run to warnings of collection.  (An xdist controller
        does not collect, but this hook still runs on it.)
        """
        from .decisions import DecisionsError

        try:
            self.session.coordinator.check_decisions(self.session.repo_root)
        except DecisionsError as exc:
            raise pytest.UsageError(str(exc)) from None

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """Give each xdist worker the run it rebuilds (``workerinput``: a pipe to the
        worker, which no reviewer can read)."""
        node.workerinput.update(self.session.stash.serialized(self.config))

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect review records (also those of xdist workers)."""
        self.results.add(report)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Write the report files once, also after errors."""
        # Imported here: the report writers run on the controller only, and xdist
        # workers (one Python start each) need not load them.
        from .report.publish import exit_status, publish

        results = self.results.ordered()
        try:
            info = self.session.code_change()[1]
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
