"""Path filters and review rules: which changed files are reviewed, and how.

Two ini keys (``linelist``), both globs relative to the repository's top level:

``advreview_exclude``
    Files left out of the code change (lockfiles, generated files).  The lines are added
    to :data:`DEFAULT_EXCLUDE`; ``!GLOB`` keeps what an earlier line left out, and the
    last line that matches a path decides (as in ``.gitignore``).  A dropped file is no
    part of the change set's files: excluded from the reviewer's diff commands by
    pathspec, its bytes not hashed into the cache key; the header and the reports name
    it, and the prompt names it with its size of change and, for a lockfile, the entries
    that changed (:mod:`.leftout`).
``advreview_path_instructions``
    ``GLOB: instruction`` lines; the ones whose glob matches a changed file are sent in
    the prompt's ``<repository_rules>`` block (``prompts.py``).

A glob without ``/`` matches the file name in any folder (``*.min.js``); one with ``/``
matches from the top (``migrations/**``), with :func:`~.targets.compile_glob`'s rules.

**Owned by the base.**  Under a gate (:attr:`~.trust.run.Trust.gated`) the branch under review
must not choose what is reviewed nor how: both keys are read from the pytest
configuration of the base commit (:func:`~.trust.baseconfig.ini_at`), never from the checkout's
file, unless the run's configuration file lies outside the repository (the Action's gate
file, a ``-c`` file: the operator's) or the key is given with ``-o`` on the command line.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Protocol

import pytest

from ..git import GitError, commit
from ..models import PathRule
from ..options import BY_FIELD, PREFIX, Invalid
from ..targets import compile_glob, lexical_key
from . import run as trust
from .authority import GateBase
from .baseconfig import BaseConfigError, ini_at, ini_once, linelist


class Settings(trust.Settings, Protocol):
    """What the path rules read of the settings (:class:`~.settings.Settings`): a
    Protocol, so that trust/ does not import the settings that import it."""

    @property
    def exclude(self) -> tuple[str, ...]: ...
    @property
    def path_instructions(self) -> tuple[str, ...]: ...


__all__ = ["DEFAULT_EXCLUDE", "PathRules", "RulesError", "for_run", "for_settings"]

#: Left out of every code change unless a ``!GLOB`` line keeps them: lockfiles, minified
#: and source-map files.  Machine-written, long, and reviewed by nobody line by line; a
#: repository that wants them reviewed (a lockfile can point at another package source)
#: keeps them with ``!uv.lock`` and the like.
DEFAULT_EXCLUDE: tuple[str, ...] = (
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "bun.lockb",
    "poetry.lock",
    "uv.lock",
    "Pipfile.lock",
    "pdm.lock",
    "Cargo.lock",
    "go.sum",
    "Gemfile.lock",
    "composer.lock",
    "packages.lock.json",
    "flake.lock",
    "*.min.js",
    "*.min.css",
    "*.js.map",
    "*.css.map",
)

_EXCLUDE = BY_FIELD["exclude"]
_INSTRUCTIONS = BY_FIELD["path_instructions"]


class RulesError(Exception):
    """The base's rules cannot be read or are invalid; the text says where and the fix."""


def _pattern(glob: str) -> re.Pattern[str]:
    """A glob without ``/`` matches the name in any folder, as in ``.gitignore``."""
    return compile_glob(glob if "/" in glob.strip("/") else "**/" + glob.strip("/"))


@dataclass(frozen=True)
class PathRules:
    """The path filters and path instructions of one run, and where they came from.

    :param exclude: the ``advreview_exclude`` lines (validated), after the defaults.
    :param instructions: the ``advreview_path_instructions`` lines, ``GLOB: instruction``.
    :param origin: where a gated run read them (``pytest.ini at main (1a2b3c4d5e6f)``);
        ``None``: this run's own configuration.
    """

    exclude: tuple[str, ...] = ()
    instructions: tuple[str, ...] = ()
    origin: str | None = None

    @cached_property
    def _filters(self) -> tuple[tuple[bool, re.Pattern[str]], ...]:
        # (keep, pattern), in order: the last one that matches decides.
        lines = (*DEFAULT_EXCLUDE, *self.exclude)
        return tuple(
            (line.startswith("!"), _pattern(line.removeprefix("!").strip())) for line in lines
        )

    def left_out(self, path: str) -> bool:
        """Whether the top-level-relative ``path`` is dropped from the code change."""
        dropped = False
        for keep, pattern in self._filters:
            if pattern.match(path):
                dropped = not keep
        return dropped

    def applying(self, files: Sequence[str]) -> tuple[PathRule, ...]:
        """The path instructions whose glob matches one of ``files``, in ini order."""
        found = []
        for line in self.instructions:
            glob, _, text = line.partition(":")
            pattern = _pattern(glob.strip())
            matched = tuple(f for f in files if pattern.match(f))
            if matched:
                found.append(PathRule(glob=glob.strip(), instruction=text.strip(), files=matched))
        return tuple(found)


def _parsed(lines: Iterable[str], key: str, where: str) -> tuple[str, ...]:
    spec = BY_FIELD[key.removeprefix("advreview_")]
    out = []
    for line in lines:
        try:
            out.append(str(spec.parse(line)))
        except Invalid as exc:
            raise RulesError(
                f"{PREFIX}: ini {key} line {line!r} in {where} is not valid; {exc}"
            ) from None
    return tuple(out)


def for_run(
    config: pytest.Config,
    exclude: tuple[str, ...],
    instructions: tuple[str, ...],
    *,
    gated: bool,
    base: GateBase | None,
    ini: Callable[[Path, str, str], tuple[str | None, dict[str, object]]] = ini_at,
) -> PathRules:
    """The run's path rules: its own settings, or under a gate the base commit's.

    :param exclude: the run's ``advreview_exclude`` lines (from its settings).
    :param instructions: the run's ``advreview_path_instructions`` lines.
    :param gated: a verdict of this run gates something (:attr:`~.trust.run.Trust.gated`).
    :param base: the run's base (``None`` or no ``ref``: none was found; under a gate the
        defaults then apply and nothing of the branch's).
    :param ini: reads the base's configuration (the run's trust reads it once).
    :raises RulesError: under a gate, the base's configuration does not parse, has an
        invalid line, or the base is not a commit.
    """
    own = PathRules(exclude, instructions)
    if not gated:
        return own
    rootdir = Path(config.rootpath)
    overridden = {
        item.partition("=")[0].strip() for item in (config.option.override_ini or ()) if item
    }
    if base is None or base.ref is None:
        defaults = PathRules(origin="the defaults (no base was found)")
        return _keep_overridden(defaults, own, overridden)
    inipath = config.inipath
    if inipath is not None and lexical_key(inipath, base.top, rootdir) is None:
        # A configuration file outside the repository is the operator's (the Action's gate
        # file, written from the base; a -c file): no pull request wrote it.
        return own
    try:
        sha = commit(base.top, base.ref)
    except GitError as exc:
        raise RulesError(f"{PREFIX}: cannot read the path rules from the base: {exc}") from None
    if sha is None:
        raise RulesError(
            f"{PREFIX}: under a gate the path rules are read from the base {base.ref!r}, "
            f"which is not a commit of {base.top}; pass --advreview-base=REF (and fetch it)"
        )
    name = base.name or base.ref
    shown = name if name == sha else f"{name} ({sha[:12]})"
    folder = lexical_key(rootdir, base.top, rootdir) or ""
    try:
        found, keys = ini(base.top, sha, folder + "/" if folder else "")
    except BaseConfigError as exc:
        raise RulesError(f"{PREFIX}: {exc} ({shown})") from None
    where = f"{found} at {shown}" if found else f"the defaults (no pytest configuration at {shown})"
    rules = PathRules(
        exclude=_parsed(linelist(keys.get(_EXCLUDE.ini_key, "")), _EXCLUDE.ini_key, where),
        instructions=_parsed(
            linelist(keys.get(_INSTRUCTIONS.ini_key, "")), _INSTRUCTIONS.ini_key, where
        ),
        origin=where,
    )
    return _keep_overridden(rules, own, overridden)


def for_settings(config: pytest.Config, settings: Settings, base: GateBase | None) -> PathRules:
    """:func:`for_run` for a run (or a fixture call) with ``settings``, gated as they say.

    :raises pytest.UsageError: the base's rules cannot be read or are invalid.
    """
    run_trust = trust.of_run(config, settings)
    try:
        return for_run(
            config,
            settings.exclude,
            settings.path_instructions,
            gated=run_trust.gated,
            base=base,
            ini=functools.partial(ini_once, run_trust),
        )
    except RulesError as exc:
        raise pytest.UsageError(str(exc)) from None


def _keep_overridden(rules: PathRules, own: PathRules, overridden: set[str]) -> PathRules:
    """``-o advreview_exclude=…`` on the command line is the operator's: it stands."""
    return PathRules(
        exclude=own.exclude if _EXCLUDE.ini_key in overridden else rules.exclude,
        instructions=own.instructions
        if _INSTRUCTIONS.ini_key in overridden
        else rules.instructions,
        origin=rules.origin,
    )
