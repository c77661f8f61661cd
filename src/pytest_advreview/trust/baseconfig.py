"""The pytest configuration of the base commit, read from git objects only.

Under a gate the branch under review must not choose how it is reviewed: the Action
writes its gate file from these keys (``action.py``), and a gated run of the plugin reads
the path rules from them (``trust/pathrules.py``).  The work tree is never read: under a gate
it holds the pull request's files (or whatever an earlier step of the job wrote).
"""

from __future__ import annotations

import configparser
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from .._toml import tomllib
from ..git import GitError, commit, run_git
from ..options import SPECS
from ..targets import TargetError, fetch_hint, lexical_key, repo_info
from .run import TRUST_KEY, Trust, decide

__all__ = [
    "CONFIG_FILES",
    "CONFIG_FILES_LAST",
    "BaseConfigError",
    "GateConfig",
    "advreview_args",
    "branch_overrides",
    "gate_config",
    "ini_at",
    "ini_once",
    "keys_of",
    "linelist",
    "show_file",
    "trust_at_configure",
]

#: pytest's configuration files, in the order pytest looks for them in one folder.
CONFIG_FILES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml")
CONFIG_FILES_LAST = ("tox.ini", "setup.cfg")


class BaseConfigError(Exception):
    """The base commit's configuration file cannot be parsed (the text says which)."""


def show_file(repo: Path, commit: str, name: str) -> str | None:
    """The text of ``name`` in ``commit`` (``git show``), ``None`` when git cannot show it.

    :raises ~.git.GitError: git could not be started.
    """
    proc = run_git(repo, "show", f"{commit}:{name}", check=False, nosystem=True)
    if proc.returncode != 0:
        return None
    return proc.stdout.decode("utf-8", errors="replace")


def _from_ini_text(text: str, section: str, origin: str) -> dict[str, object] | None:
    parser = configparser.RawConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys keep their case
    try:
        parser.read_string(text, source=origin)
    except configparser.Error as exc:
        raise BaseConfigError(
            f"cannot parse the base commit's {origin}: {_one_line(exc)}"
        ) from None
    if not parser.has_section(section):
        return None
    return dict(parser.items(section))


def _from_toml_text(text: str, origin: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BaseConfigError(
            f"cannot parse the base commit's {origin}: {_one_line(exc)}"
        ) from None


def _one_line(exc: Exception) -> str:
    # configparser's messages span lines; a message here is one line of a log or header.
    return " ".join(str(exc).split())


def ini_once(
    run_trust: Trust, repo: Path, commit: str, folder: str = ""
) -> tuple[str | None, dict[str, object]]:
    """:func:`ini_at`, read once per run and held by the run's trust."""
    key = ("ini", repo, commit, folder)
    if key not in run_trust.held:
        run_trust.held[key] = ini_at(repo, commit, folder)
    return cast("tuple[str | None, dict[str, object]]", run_trust.held[key])


def ini_at(repo: Path, commit: str, folder: str = "") -> tuple[str | None, dict[str, object]]:
    """The pytest configuration file of ``commit`` in ``folder``, and its keys.

    The same file pytest would pick in that folder (``pytest.toml``, ``pytest.ini``,
    ``pyproject.toml`` with a pytest table, ``tox.ini`` with ``[pytest]``, ``setup.cfg``
    with ``[tool:pytest]``), read from the commit's objects, never from the work tree.

    :param folder: the folder relative to the repository's top level, ``/``-terminated
        ("" for the top).
    :returns: ``(path of the file in the commit, keys)``; ``(None, {})`` when it has none.
    :raises BaseConfigError: the file pytest would pick does not parse.
    """
    for base_name in (*CONFIG_FILES, *CONFIG_FILES_LAST):
        name = folder + base_name
        text = show_file(repo, commit, name)
        if text is None:
            continue
        keys = keys_of(name, text)
        if keys is not None:
            return name, keys
    return None, {}


def keys_of(name: str, text: str) -> dict[str, object] | None:
    """The pytest keys of the configuration file ``name`` (its base name says its kind)
    whose text is ``text``; ``None`` when the file holds no pytest configuration (a
    ``pyproject.toml`` without a pytest table, a ``tox.ini`` without ``[pytest]``).

    :raises BaseConfigError: the file does not parse.
    """
    base_name = name.rpartition("/")[2]
    if base_name in ("pytest.toml", ".pytest.toml"):
        table = _from_toml_text(text, name).get("pytest")
        return dict(table) if isinstance(table, dict) else {}
    if base_name in ("pytest.ini", ".pytest.ini"):
        return _from_ini_text(text, "pytest", name) or {}
    if base_name == "pyproject.toml":
        tool = _from_toml_text(text, name).get("tool", {}).get("pytest")
        if not isinstance(tool, dict):
            return None
        ini_options = tool.get("ini_options")
        if isinstance(ini_options, dict):
            return dict(ini_options)
        return {k: v for k, v in tool.items() if k != "ini_options"}
    section = "pytest" if base_name == "tox.ini" else "tool:pytest"
    return _from_ini_text(text, section, name)


def linelist(value: object) -> list[str]:
    """A ``linelist`` key's lines as pytest reads them: a TOML list's items, or an ini
    value's non-empty lines, stripped."""
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    return [line.strip() for line in str(value).splitlines() if line.strip()]


# -- the branch's own configuration under a gate --------------------------------------------

#: Options that only the command line or the workflow may give, even when the base's
#: ``addopts`` holds the same: which share of the reviews a job runs, and which change is
#: reviewed, are the workflow's (a branch's ``--advreview-shard=2/2`` or
#: ``--advreview-diff=none`` deselects the code review).
_WORKFLOW_ONLY = ("--advreview-shard", "--advreview-diff")
#: The ini keys of :data:`_WORKFLOW_ONLY`'s settings (``--advreview-shard`` has none).
_WORKFLOW_ONLY_KEYS = ("advreview_diff",)
#: The options that take a value as the next argument (``--advreview-fail-on high``).
_TAKES_VALUE = {spec.option for spec in SPECS if spec.cli in ("store", "append")}


def advreview_args(addopts: object) -> tuple[str, ...]:
    """The plugin's arguments in an ``addopts`` value, each in one canonical form:
    ``--advreview-x=value``, a flag alone, or ``-o advreview_x=value``.

    :param addopts: the key as the file holds it (an ini string, or a TOML list or string).
    """
    if isinstance(addopts, (list, tuple)):
        args = [str(a) for a in addopts]
    else:
        try:
            args = shlex.split(str(addopts))
        except ValueError:  # pytest fails on it too: nothing of it reaches the run
            return ()
    found: list[str] = []
    rest = iter(args)
    for arg in rest:
        name, eq, value = arg.partition("=")
        if arg in ("-o", "--override-ini"):
            setting = next(rest, "")
        elif name == "--override-ini":
            setting = value
        elif arg.startswith("-o"):
            setting = arg[2:]  # -oadvreview_x=value
        elif name.startswith("--adv"):
            if not eq and name in _TAKES_VALUE:
                value, eq = next(rest, ""), "="
            found.append(f"{name}={value}" if eq else name)
            continue
        else:
            continue
        if setting.strip().startswith("advreview_"):
            found.append(f"-o {setting.strip()}")
    return tuple(found)


def _shown(value: object) -> str:
    lines = linelist(value)
    return " / ".join(lines) if lines else '""'


def branch_overrides(branch: Mapping[str, object], base: Mapping[str, object]) -> list[str]:
    """What the branch's pytest configuration gives the plugin that the base's does not:
    each ``advreview_*`` key whose lines differ, each of the plugin's arguments in
    ``addopts`` that is not the base's (or that the branch drops), and any
    workflow-only option (:data:`_WORKFLOW_ONLY`) in the branch's ``addopts`` at all.

    :param branch: the keys of the configuration file pytest read from the checkout.
    :param base: the keys of the base commit's configuration in the same folder.
    :returns: one description per difference (empty: the branch changes nothing).
    """
    problems: list[str] = []
    for key in sorted(k for k in {*branch, *base} if k.startswith("advreview_")):
        mine, theirs = branch.get(key), base.get(key)
        if key in _WORKFLOW_ONLY_KEYS:
            if mine is not None:
                problems.append(
                    f"ini {key} = {_shown(mine)} (the change under review comes from the "
                    "command line or the workflow only)"
                )
            continue
        if mine is None or theirs is None or linelist(mine) != linelist(theirs):
            now = "not set" if mine is None else f"= {_shown(mine)}"
            was = "not set" if theirs is None else f"= {_shown(theirs)}"
            problems.append(f"ini {key} {now} (the base: {was})")
    mine_args = advreview_args(branch.get("addopts", ""))
    theirs_args = list(advreview_args(base.get("addopts", "")))
    for arg in mine_args:
        if arg.partition("=")[0] in _WORKFLOW_ONLY:
            problems.append(
                f"addopts {arg} (shards and the change under review come from the command "
                "line or the workflow only)"
            )
        elif arg in theirs_args:
            theirs_args.remove(arg)
        else:
            problems.append(f"addopts {arg} (not in the base's addopts)")
    problems.extend(
        f"addopts without {arg} (the base's addopts has it)"
        for arg in theirs_args
        if arg.partition("=")[0] not in _WORKFLOW_ONLY
    )
    return problems


@dataclass(frozen=True)
class GateConfig:
    """Under a gate, where the plugin's settings may come from: the command line and
    ``PYTEST_ADDOPTS`` (the workflow's), the environment, and the base commit's pytest
    configuration in the folder of the checkout's; never the checkout's own file.

    :param command_line: the plugin's arguments of the command line and ``PYTEST_ADDOPTS``
        (:func:`advreview_args` form).
    :param base_args: the plugin's arguments of the base's ``addopts``, without the
        workflow-only ones.
    :param base_keys: the base's configuration keys.
    :param where: how messages name the base's file (``pytest.ini at main (1a2b3c4d5e6f)``).
    :param ignored: what the checkout's file gives and the base's does not, as the header
        says it (:func:`branch_overrides`).
    """

    command_line: tuple[str, ...]
    base_args: tuple[str, ...]
    base_keys: Mapping[str, object]
    where: str
    ignored: tuple[str, ...] = ()

    def option(self, option: str) -> tuple[tuple[str | None, bool], ...]:
        """The values ``option`` is given, in the order pytest reads them (the base's
        ``addopts`` first, then the command line), each with whether the command line
        gave it (``None``: a flag given)."""
        found: list[tuple[str | None, bool]] = []
        for args, ours in ((self.base_args, False), (self.command_line, True)):
            for arg in args:
                name, eq, value = arg.partition("=")
                if name == option:
                    found.append((value if eq else None, ours))
        return tuple(found)

    def ini(self, key: str) -> tuple[object, str] | None:
        """The raw value of ini ``key`` and where it came from: a ``-o`` of the command line,
        one of the base's ``addopts``, or the base's file; ``None`` when none sets it."""
        for args, place in ((self.command_line, None), (self.base_args, self.where)):
            for arg in reversed(args):
                name, _, value = arg.removeprefix("-o ").partition("=")
                if arg.startswith("-o ") and name.strip() == key:
                    shown = f"-o {key}={value}"
                    return value, shown if place is None else f"{shown} in addopts of {place}"
        if key in self.base_keys:
            return self.base_keys[key], f"ini {key} in {self.where}"
        return None


def _unprefixed(message: str) -> str:
    """``message`` without the plugin's prefix: the usage error adds it once."""
    return message.removeprefix("pytest-advreview: ")


def _branch_base_only(root: Path, named: str) -> str:
    """Why a gated run stops when only the checkout's own configuration names a base."""
    fetch = fetch_hint(root, named).removesuffix(", or ") if commit(root, named) is None else ""
    return (
        f"the checkout's ini names advreview_base = {named}, which is not used under a "
        "gate (a branch must not choose what it is compared with), and neither the "
        "command line, the environment nor GITHUB_BASE_REF names a base, and the clone "
        f"has no origin/HEAD, main or master: pass --advreview-base={named} on the "
        "command line" + (f" and {fetch}" if fetch else "")
    )


def _command_line(config: pytest.Config, environ: Mapping[str, str]) -> tuple[str, ...]:
    """The plugin's arguments of the command line and ``PYTEST_ADDOPTS``: the workflow's
    (the ini's ``addopts`` is not)."""
    try:
        extra = shlex.split(environ.get("PYTEST_ADDOPTS", ""))
    except ValueError:
        extra = []
    return advreview_args([*map(str, config.invocation_params.args), *extra])


def _chosen(command_line: tuple[str, ...], environ: Mapping[str, str], field: str) -> str | None:
    """The setting ``field`` as the command line or the environment gives it, else ``None``."""
    values = GateConfig(command_line, (), {}, "").option(f"--advreview-{field.replace('_', '-')}")
    if values:
        return values[-1][0] if values[-1][0] is not None else "1"
    return environ.get(f"ADVREVIEW_{field.upper()}", "").strip() or None


def trust_at_configure(config: pytest.Config, environ: Mapping[str, str]) -> Trust:
    """The run's trust, decided once before its settings (:func:`~.settings.resolve`).

    Its strict exit and head are the command line's, ``PYTEST_ADDOPTS``' and the
    environment's, never the checkout's ini: under a gate the checkout must not switch
    the gate off (:func:`gate_config` decides from this value whether it reads the ini).
    A trust the run holds already keeps what it resolved and read, in this mode.
    """
    command_line = _command_line(config, environ)
    strict = (_chosen(command_line, environ, "strict_exit") or "0").lower()
    strict_exit = strict not in ("0", "false", "no", "off")
    head = _chosen(command_line, environ, "head")
    found = config.stash.get(TRUST_KEY, None)
    if found is not None:
        return found.with_mode(strict_exit, head)
    return decide(environ, strict_exit=strict_exit, head=head)


def gate_config(
    config: pytest.Config, environ: Mapping[str, str], run_trust: Trust
) -> GateConfig | None:
    """The sources of a gated run's settings (:class:`GateConfig`); ``None`` when the run
    gates nothing or its configuration is not the checkout's to write.

    Gated: ``run_trust`` (:func:`trust_at_configure`) enforces the exit status: ``CI`` /
    ``GITHUB_ACTIONS`` true, or ``--advreview-strict-exit`` on the command line or in the
    environment; not with ``--advreview-head`` (the checkout is the base).
    Not the checkout's: no configuration file, or one outside the repository (the
    Action's gate file, written from the base).  The base is the one the command line or
    the environment names (``--advreview-base``), else ``origin/$GITHUB_BASE_REF``,
    ``origin/HEAD``, ``main``, ``master``: never the checkout's own ``advreview_base``;
    it is resolved once per run (:meth:`.Trust.base`), for this and every later reader.
    With no base found, nothing of the checkout's file counts (the defaults do).

    :raises BaseConfigError: the base's configuration does not parse, or the base named
        on the command line is not a commit.
    """
    command_line = _command_line(config, environ)
    inipath = config.inipath
    if run_trust.head is not None or run_trust.enforced_by is None or inipath is None:
        return None
    rootpath = Path(config.rootpath)
    try:
        repo = repo_info(rootpath)
    except TargetError:
        repo = None
    key = lexical_key(inipath, repo.root, rootpath) if repo is not None else None
    if repo is None or key is None:
        # Outside git the run's targets say why; a file outside the repository is the
        # operator's (the Action's gate file).
        return None
    try:
        branch = keys_of(key, inipath.read_text(encoding="utf-8", errors="replace")) or {}
    except (BaseConfigError, OSError):
        branch = {}  # pytest read it: what it could not parse, pytest reports
    try:
        ref = run_trust.base(repo.root, _chosen(command_line, environ, "base"))
        sha = commit(repo.root, ref) if ref is not None else None
    except (TargetError, GitError) as exc:
        raise BaseConfigError(_unprefixed(str(exc))) from None
    base: dict[str, object] = {}
    if ref is None and isinstance(branch.get("advreview_base"), str):
        # The checkout names a base the gate may not take from it, and no other names
        # one: comparing with nothing would review nothing and pass, so say what to pass.
        raise BaseConfigError(_branch_base_only(repo.root, str(branch["advreview_base"])))
    if ref is None or sha is None:
        where = "the defaults (no base was found: pass --advreview-base=REF)"
    else:
        folder = key.rpartition("/")[0]
        found, base = ini_at(repo.root, sha, folder + "/" if folder else "")
        shown = ref if ref == sha else f"{ref} ({sha[:12]})"
        where = f"{found} at {shown}" if found else f"the defaults (no pytest file at {shown})"
    return GateConfig(
        command_line=command_line,
        base_args=tuple(
            arg
            for arg in advreview_args(base.get("addopts", ""))
            if arg.partition("=")[0] not in _WORKFLOW_ONLY
        ),
        base_keys={
            k: v
            for k, v in base.items()
            if k.startswith("advreview_") and k not in _WORKFLOW_ONLY_KEYS
        },
        where=where,
        ignored=tuple(branch_overrides(branch, base)),
    )
