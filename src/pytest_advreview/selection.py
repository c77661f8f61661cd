"""Which targets a run reviews: the repository, its base, the plans and the change set.

:class:`TargetSelection` decides them once per process, when the run starts (git runs
there, through :mod:`.targets`), and answers the collection hooks (``session.py``): a
plan's key and source, the code item's target, the change set the header and the reports
name.  What cannot be selected is the user's to fix: a :class:`pytest.UsageError` with the
reason.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import sys
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from . import outbound, targets
from .constants import CODE_ITEM_NAME
from .git import quote_path, unpassable_path
from .material import TargetSpec, repo_relative
from .models import ChangeSet, ChangeSetInfo
from .review import SharedLookups
from .trust import pathrules
from .trust import run as trust
from .trust.authority import GateBase
from .workspace import head

if TYPE_CHECKING:
    from .settings import Settings

__all__ = ["TargetSelection", "code_change", "not_the_change"]


def code_change(
    config: pytest.Config,
    settings: Settings,
    root: Path,
    mode: str,
    base: str | None,
    rules: pathrules.PathRules,
    *,
    excluded: Collection[str] = (),
    resolver: targets.PathResolver | None = None,
    top: Path | None = None,
) -> tuple[ChangeSet | None, set[str]]:
    """The change set a code review reviews, and the changed files the path filters
    dropped: the one builder the code item and the fixture call.

    :param excluded: plans reviewed as plan items (never reviewed again as code).
    :param top: the top level the decisions file and the run's own files are named from
        (with ``--advreview-head``, the base's); ``root`` when not given.
    :raises targets.TargetError: git failed, or the base cannot be used.
    """
    dropped: set[str] = set()

    def drop(path: str) -> bool:
        if rules.left_out(path):
            dropped.add(path)
            return True
        return False

    change = targets.change_set(
        root,
        mode,
        base,
        excluded,
        resolver=resolver,
        ci=trust.of_run(config, settings).in_ci,
        outside=not_the_change(config, settings, top or root),
        drop=drop,
    )
    if change is not None:
        change = change.model_copy(update={"rules": rules.applying(change.files)})
    return change, dropped


def not_the_change(config: pytest.Config, settings: Settings, top: Path) -> targets.NotTheChange:
    """What this run and its tools write, and the decisions file: never the code change.

    The plugin's own report files, the JUnit (``--junitxml``), ``--report-log`` and
    ``--html`` files of this run (with pytest-html's ``assets`` folder), the pytest cache
    folder; coverage data is matched by name in :class:`~.targets.NotTheChange`.
    """
    here = Path(config.invocation_params.dir)
    written: list[str] = [
        path
        for path in (
            settings.json_report,
            settings.report,
            settings.sarif,
            settings.rdjson,
            settings.lead_patch,
        )
        if path is not None
    ]
    for name in ("xmlpath", "report_log", "htmlpath"):
        value = getattr(config.option, name, None)
        if isinstance(value, str) and value:
            path = here / os.path.expandvars(os.path.expanduser(value))
            written.append(os.fspath(path))
            if name == "htmlpath":
                written.append(os.path.join(path.parent, "assets", ""))
    # ``cache_dir`` is the cacheprovider's ini key: unknown (a ValueError) when a user
    # disables it with ``-p no:cacheprovider``, and then nothing is written there.
    has_cache = config.pluginmanager.has_plugin("cacheprovider")
    cache_dir = config.getini("cache_dir") if has_cache else None
    if isinstance(cache_dir, str) and cache_dir:
        folder = Path(config.rootpath) / os.path.expandvars(os.path.expanduser(cache_dir))
        written.append(os.path.join(folder, ""))
    return targets.NotTheChange.of(top, settings.decisions, written, rootdir=Path(config.rootpath))


def _unpassable(change: ChangeSet) -> str | None:
    """Why a name of ``change`` cannot go into the prompt (:func:`~.git.unpassable_path`):
    a changed file, a file left out, or a path the diff commands exclude by name."""
    named = [("the changed file", n) for n in change.files]
    named += [("the file advreview_exclude leaves out", n) for n in change.filtered]
    named += [("the file", n) for n in (*change.attributes, *change.converted)]
    for command in change.diff_commands:
        # A left-out path is named in the command (``:(exclude,literal)PATH``).
        named += [
            ("the path the diff commands leave out", word.rpartition(")")[2])
            for word in shlex.split(command)
        ]
    for what, name in named:
        why = unpassable_path(name, what)
        if why is not None:
            return why
    return None


class TargetSelection:
    """The repository, the base, the plans and the change set of one process of a run.

    :param checkout: an xdist worker's ``--advreview-head`` checkout, made by the
        controller (``None``: this process makes its own when one is asked for).
    :param shared: git top levels and resolved paths, shared with the run's reviews.
    :raises pytest.UsageError: a bare repository, a base that is not a commit, a plan
        that may not be reviewed, a failing git command.
    """

    def __init__(
        self,
        config: pytest.Config,
        settings: Settings,
        *,
        checkout: head.HeadCheckout | None,
        shared: SharedLookups,
    ) -> None:
        self.config = config
        self.settings = settings
        self.rootdir = Path(config.rootpath)
        self.shared = shared
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
        #: The path filters and instructions (see path_rules).
        self._rules: pathrules.PathRules | None = None
        # Dict and set lookups: pytest asks about every file of the tree, thousands of
        # plans each time (a tuple here made collecting 5,000 plans quadratic).
        #: Selected plan → its repo-relative key; walked path text → selected plan.
        self.keys: dict[Path, str] = {}
        self.walked: dict[str, Path] = {}
        self._explicit: list[Path] | None = None
        self.explicit_set: frozenset[Path] = frozenset()
        #: ``--advreview-head``: the private checkout of REF, and each plan item's node
        #: path (REF's path, named under the rootdir) -> the file in that checkout.
        self.head: head.HeadCheckout | None = None
        self._checkout = checkout
        self._sources: dict[Path, Path] = {}
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
                run_trust = trust.of_run(self.config, self.settings)
                self.base = run_trust.base(self.repo.root, self.settings.base)
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
        self.explicit_plans()  # a named plan that leads out of the repository is refused
        no_code_item = self.settings.diff == "none"
        if (
            self.base_error is not None
            and no_code_item
            and self.settings.plan_scope == "changed"
            and not self.explicit_plans()
        ):
            # No code item to carry the error, and the plan selection is incomplete.
            raise pytest.UsageError(self.base_error)
        # Keys are names in prompts, reports, state and node ids: UTF-8 text, so a file
        # name git stores as other bytes is keyed as git prints it ("caf\\351.md").
        self.keys = {
            path: quote_path(key)
            for path, key in zip(self.selection.selected, self.selection.keys, strict=True)
        }
        # pytest hands pytest_collect_file the path it walked to: rootdir joined with the
        # folders below it. When that text is a selected plan's, it is that plan, and
        # resolving it (an lstat per file) can be skipped.
        root_text = os.fspath(self.plan_root)
        cut = len(self.selection.prefix)
        self.walked = {
            os.path.join(root_text, key[cut:]): path
            for path, key in self.keys.items()
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
        if self.explicit_plans():
            raise head.HeadError(
                "pytest-advreview: with --advreview-head the plans come from REF "
                "(advreview_plans, advreview_plan_scope); a .md path on the command line "
                "names a file of the base checkout: drop it, or select items with -k"
            )
        checkout = self._checkout
        if checkout is None:
            checkout = head.materialise(
                self.repo.root, ref, self.settings.base, rootdir=self.rootdir
            )
            # Removed however the run ends (Ctrl-C and usage errors after this included).
            self.config.add_cleanup(lambda: _remove_at_end(checkout))
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
            self.keys[node_path] = key
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
        key = self.keys.get(path) or self.keys.get(self.shared.resolve(path))
        return key or quote_path(repo_relative(path, self.repo_root, self.shared.resolve))

    def explicit_plans(self) -> list[Path]:
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
            self.explicit_set = frozenset(found)
        return self._explicit

    def named_only(self) -> list[Path]:
        """The plans named on the command line when they narrow the run to themselves:
        outside a gate only.  Under one (``Trust.enforced_by``: CI, strict exit) they are
        reviewed besides the plan selection and the change set, never instead of them:
        the gate requires every selected target."""
        if trust.of_run(self.config, self.settings).enforced_by is not None:
            return []
        return self.explicit_plans()

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

    def code_spec(self) -> TargetSpec | None:
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
        why = _unpassable(change)
        if why is not None:
            # Fail closed: a name the prompt cannot carry; the item says which, escaped.
            return TargetSpec(kind="code", key=CODE_ITEM_NAME, error=why)
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
        change: ChangeSet | None = None
        dropped: set[str] = set()
        note: str | None = None
        try:
            if self.named_only():
                note = "plans named on the command line: no code review"
            elif self.settings.diff != "none" and self.base_error is None:
                # Under --advreview-head: BASE...REF, REF being HEAD of the private checkout
                # (repo_root), so the diff commands the prompt names work there as written.
                mode = self.settings.diff if self.head is None else "branch"
                try:
                    change, dropped = code_change(
                        self.config,
                        self.settings,
                        self.repo_root,
                        mode,
                        self.base,
                        self.path_rules(),
                        # A plan reviewed as a plan item is not reviewed again as code;
                        # repo-relative keys: no path arithmetic per plan.
                        excluded=self.selection.keys,
                        resolver=self.shared.resolve,
                        # Keys from the base's top: with --advreview-head, REF's same paths.
                        top=self.repo.root,
                    )
                except targets.BaseRefError as exc:
                    if self.head is not None:
                        raise  # REF's own base: a usage error, as any git failure of a head
                    self.base_error = str(exc)
                if change is not None and self.head is not None:
                    change = change.model_copy(update={"description": self.head.description})
                if change is None and dropped and self.base_error is None:
                    note = "every changed file is left out by advreview_exclude"
            if self.base_error is not None and note is None:
                note = "not reviewed: the base cannot be used (the code item says why)"
            info = targets.change_set_info(
                self.repo_root,
                change,
                self.settings.diff,
                self.base,
                ci=trust.of_run(self.config, self.settings).in_ci,
                note=note,
            )
            if change is None and note is not None and note.startswith("every changed"):
                info = info.model_copy(update={"filtered": tuple(sorted(dropped))})
        except targets.TargetError as exc:
            raise pytest.UsageError(str(exc)) from None
        self._change = (change, info)
        return self._change

    def gate_base(self) -> GateBase | None:
        """The run's base as a gate reads it: the decisions file's and the path rules'
        (with ``--advreview-head``: its commit, resolved once); ``None`` outside git."""
        if self.repo is None:
            return None
        return GateBase(self.repo.root, self.base, self.head.base if self.head else None)

    def path_rules(self) -> pathrules.PathRules:
        """The path filters and instructions of this run (under a gate the base's).

        :raises pytest.UsageError: the base's rules cannot be read or are invalid.
        """
        if self._rules is None:
            self._rules = pathrules.for_settings(self.config, self.settings, self.gate_base())
        return self._rules


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


def _remove_at_end(checkout: head.HeadCheckout) -> None:
    """The head checkout removed at the session's end.  A failure to remove it that a
    warnings filter made an error (a HeadError then) is written as its message: anything
    raised from a clean-up reaches the user as a Python traceback."""
    try:
        head.remove(checkout)
    except head.HeadError as exc:
        sys.stderr.write(f"{exc}\n")
