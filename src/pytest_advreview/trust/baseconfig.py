"""The pytest configuration of the base commit, read from git objects only.

Under a gate the branch under review must not choose how it is reviewed: the Action
writes its gate file from these keys (``action.py``), and a gated run of the plugin reads
the path rules from them (``trust/pathrules.py``).  The work tree is never read: under a gate
it holds the pull request's files (or whatever an earlier step of the job wrote).
"""

from __future__ import annotations

import configparser
from pathlib import Path
from typing import Any

from .._toml import tomllib
from ..git import run_git

__all__ = [
    "CONFIG_FILES",
    "CONFIG_FILES_LAST",
    "BaseConfigError",
    "ini_at",
    "linelist",
    "show_file",
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
        if base_name in ("pytest.toml", ".pytest.toml"):
            table = _from_toml_text(text, name).get("pytest")
            return name, dict(table) if isinstance(table, dict) else {}
        if base_name in ("pytest.ini", ".pytest.ini"):
            return name, _from_ini_text(text, "pytest", name) or {}
        if base_name == "pyproject.toml":
            tool = _from_toml_text(text, name).get("tool", {}).get("pytest")
            if not isinstance(tool, dict):
                continue
            ini_options = tool.get("ini_options")
            if isinstance(ini_options, dict):
                return name, dict(ini_options)
            return name, {k: v for k, v in tool.items() if k != "ini_options"}
        section = "pytest" if base_name == "tox.ini" else "tool:pytest"
        found = _from_ini_text(text, section, name)
        if found is not None:
            return name, found
    return None, {}


def linelist(value: object) -> list[str]:
    """A ``linelist`` key's lines as pytest reads them: a TOML list's items, or an ini
    value's non-empty lines, stripped."""
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    return [line.strip() for line in str(value).splitlines() if line.strip()]
