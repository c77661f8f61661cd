"""What the reviewer is told of the changed files ``advreview_exclude`` leaves out.

A left-out file (a lockfile, a minified script, a source map: :data:`~.pathrules.
DEFAULT_EXCLUDE`) is not in the diff commands the reviewer runs, yet it is part of the
change: a pull request can put a script in a ``.min.js`` or point a lockfile entry at
another package source.  So the code prompt names each one with its size of change (lines
added and removed, the object id of its new content), and for a lockfile it lists the
entries that changed (package, version, source) instead of dropping the file whole.

Lockfiles read: ``package-lock.json`` and ``npm-shrinkwrap.json`` (npm's v1-v3 formats),
``Pipfile.lock`` (JSON), and the TOML locks that list ``[[package]]`` tables with a name,
a version and a source (``poetry.lock``, ``uv.lock``, ``pdm.lock``, ``Cargo.lock``).  The
other defaults (``yarn.lock``, ``pnpm-lock.yaml``, ``go.sum``, ``Gemfile.lock``,
``composer.lock`` …) are named with their size only.  A lockfile that does not parse
says so in the prompt.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from ._toml import tomllib
from .git import GitError, literal_pathspec, run_git, split_z
from .models import LeftOutFile

__all__ = ["MAX_ENTRIES", "describe"]

#: Most changed entries listed per lockfile; the rest are counted.
MAX_ENTRIES = 30
#: Most characters of one entry's line (a source URL can be long).
_ENTRY_CHARS = 300

#: A lockfile's entries: the package's key -> what pins it ("1.2.3 (source)").
Entries = dict[str, str]


def _clean(text: object) -> str:
    """One line of untrusted text: no control characters, no line breaks."""
    return "".join(c if c.isprintable() else " " for c in str(text)).strip()


def _pin(version: object, source: object) -> str:
    shown = _clean(version) if version not in (None, "") else "(no version)"
    if isinstance(source, Mapping):
        source = ", ".join(f"{k}={v}" for k, v in sorted(source.items()) if v not in (None, ""))
    return f"{shown} ({_clean(source)})" if source not in (None, "") else shown


def _npm(text: str) -> Entries:
    data = json.loads(text)
    found: Entries = {}
    packages = data.get("packages")
    if isinstance(packages, dict):  # lockfile v2 and v3: every installed path
        for where, info in packages.items():
            if where and isinstance(info, dict):
                found[where] = _pin(info.get("version"), info.get("resolved"))
        return found

    def walk(deps: object, prefix: str) -> None:  # v1: nested by dependency
        if not isinstance(deps, dict):
            return
        for name, info in deps.items():
            if isinstance(info, dict):
                found[prefix + name] = _pin(info.get("version"), info.get("resolved"))
                walk(info.get("dependencies"), f"{prefix}{name} > ")

    walk(data.get("dependencies"), "")
    return found


def _pipfile(text: str) -> Entries:
    data = json.loads(text)
    found: Entries = {}
    for group in ("default", "develop"):
        for name, info in (data.get(group) or {}).items():
            if isinstance(info, dict):
                source = (
                    info.get("index") or info.get("git") or info.get("path") or info.get("file")
                )
                found[f"{name} [{group}]"] = _pin(info.get("version"), source)
    return found


def _toml_packages(text: str) -> Entries:
    data = tomllib.loads(text)
    pins: dict[str, list[str]] = {}
    for info in data.get("package") or ():
        if isinstance(info, dict) and "name" in info:
            pins.setdefault(_clean(info["name"]), []).append(
                _pin(info.get("version"), info.get("source"))
            )
    return {name: "; ".join(sorted(found)) for name, found in pins.items()}


#: Lockfile name -> its reader.
READERS: dict[str, Callable[[str], Entries]] = {
    "package-lock.json": _npm,
    "npm-shrinkwrap.json": _npm,
    "Pipfile.lock": _pipfile,
    "poetry.lock": _toml_packages,
    "uv.lock": _toml_packages,
    "pdm.lock": _toml_packages,
    "Cargo.lock": _toml_packages,
}


def _changed(old: Entries, new: Entries) -> list[str]:
    lines = []
    for key in sorted(old.keys() | new.keys()):
        before, after = old.get(key), new.get(key)
        if before == after:
            continue
        name = _clean(key)
        if before is None:
            line = f"{name}: added {after}"
        elif after is None:
            line = f"{name}: removed {before}"
        else:
            line = f"{name}: {before} -> {after}"
        lines.append(line[:_ENTRY_CHARS])
    return lines


def _blob(root: Path, rev: str | None, path: str) -> bytes | None:
    """``path`` at ``rev`` (``None``: the work tree); ``None`` where it does not exist."""
    if rev is None:
        try:
            return (root / path).read_bytes()
        except OSError:
            return None
    done = run_git(root, "cat-file", "blob", f"{rev}:{path}", check=False)
    return done.stdout if done.returncode == 0 else None


def _object_ids(root: Path, rev: str | None, paths: Sequence[str]) -> dict[str, str]:
    """path -> the git object id of its content at ``rev`` (``None``: in the work tree),
    in one git call; a path that does not exist there is missing."""
    if rev is not None:
        specs = [literal_pathspec(p) for p in paths]
        found = {}
        for record in split_z(run_git(root, "ls-tree", "-z", "-r", rev, "--", *specs).stdout):
            meta, _, path = record.partition("\t")
            found[path] = meta.split()[-1]
        return found
    present = [p for p in paths if (root / p).is_file() and not (root / p).is_symlink()]
    if not present:
        return {}
    done = run_git(root, "hash-object", "--no-filters", "--", *present)
    return dict(zip(present, done.stdout.decode().split(), strict=False))


def _numstat(
    root: Path, old: str | None, new: str | None, paths: Sequence[str]
) -> dict[str, tuple[int | None, int | None]]:
    """path -> (added, removed) from ``git diff --numstat`` (``None``s: binary)."""
    if old is None or not paths:
        return {}
    revs = [old] if new is None else [old, new]
    args = ["diff", "--numstat", "-z", "--no-renames", "--no-textconv", "--no-ext-diff"]
    specs = [literal_pathspec(p) for p in paths]
    found: dict[str, tuple[int | None, int | None]] = {}
    for record in split_z(run_git(root, *args, *revs, "--", *specs).stdout):
        added, removed, path = record.split("\t", 2)
        found[path] = (
            int(added) if added.isdigit() else None,
            int(removed) if removed.isdigit() else None,
        )
    return found


def _lines(data: bytes | None) -> int | None:
    if data is None:
        return 0
    if b"\0" in data:
        return None
    return len(data.splitlines())


def describe(
    root: Path, paths: Iterable[str], *, old: str | None, new: str | None
) -> tuple[LeftOutFile, ...]:
    """What the prompt says of each left-out ``paths`` (top-level relative).

    :param root: the repository's top level.
    :param old: the commit the change starts from (``None``: none, an unborn branch).
    :param new: the commit it ends at; ``None``: the work tree (uncommitted mode).
    """
    paths = sorted(paths)
    try:
        stats = _numstat(root, old, new, paths)
        ids = _object_ids(root, new, paths)
    except GitError:
        stats, ids = {}, {}
    described = []
    for path in paths:
        reader = READERS.get(os.path.basename(path))
        added, removed = stats.get(path, (None, None))
        before = after = None
        if reader is not None or path not in stats:
            before = _blob(root, old, path) if old is not None else None
            after = _blob(root, new, path)
        if path not in stats:  # untracked, or no commit to compare with: all of it is new
            added, removed = _lines(after), _lines(before)
        entries: list[str] = []
        unread = None
        if reader is not None:
            try:
                entries = _changed(
                    reader(before.decode("utf-8")) if before else {},
                    reader(after.decode("utf-8")) if after else {},
                )
            except (ValueError, TypeError, AttributeError, tomllib.TOMLDecodeError) as exc:
                unread = _clean(f"{type(exc).__name__}: {exc}")[:_ENTRY_CHARS]
        described.append(
            LeftOutFile(
                path=path,
                added=added,
                removed=removed,
                blob=ids.get(path),
                entries=tuple(entries[:MAX_ENTRIES]),
                more_entries=max(0, len(entries) - MAX_ENTRIES),
                unread=unread,
            )
        )
    return tuple(described)
