"""One review run per checkout at a time.

While a reviewer runs, the review watches the workspace and the stored state: whatever
changes there that this run did not write is the reviewer's doing (the entry is discarded
and the review fails).  A second run on the same checkout writes there too (its verdicts,
its lead's edits, its report files), so two runs at once would each blame its own
reviewer for the other's writes.  A run therefore holds the checkout's run lock from its
start (before the targets are chosen) to its end, and a second run waits for it, saying
so, before it looks at anything.

* One lock per run: the controller takes it; xdist workers are part of the same run and
  never take it (they share the run secret that tells their writes apart, ``state.py``).
* The lock is the kernel's (``lockf``), not the file: it goes with the process that holds
  it however that process ends (a crash, SIGKILL), so a file left by a dead run never
  blocks, and nothing the lock file says is trusted beyond the pid and time it shows.
* It lives in the checkout's git directory (``advreview-run.lock``), which ``git status``
  and so the workspace snapshots never see, whatever the cacheprovider does; outside git,
  in pytest's cache folder (``d/advreview/run.lock``, ignored by git); with neither there
  is no stored state and nothing in the checkout to watch, so no lock.
* A lock held is not a licence: the waiting run starts its own watch only after the first
  run ended, so every write during its reviews is still checked against its own tag.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Final

import pytest

__all__ = ["LOCK_NAME", "NestedRunError", "RunLock", "hold", "hold_for_run", "lock_path"]

#: The lock file's name in the git directory.
LOCK_NAME: Final = "advreview-run.lock"
#: Outside git: the lock file in pytest's cache folder (``d/advreview/``).
_CACHE_LOCK_NAME: Final = "run.lock"
_CACHE_DIR_NAME: Final = "advreview"
#: Bytes of the holder's record read back (a pid and a time are far shorter).
_RECORD_MAX: Final = 512


class NestedRunError(Exception):
    """The run that holds the checkout is an ancestor of this process."""


@dataclass
class RunLock:
    """The held run lock of a checkout; :meth:`release` (or the process's end) frees it."""

    path: Path
    fd: int | None

    def release(self) -> None:
        """Free the lock (closing the file frees it; the file itself stays)."""
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)


def lock_path(config: pytest.Config) -> Path | None:
    """Where the run lock of ``config``'s checkout lives, ``None`` when no lock is needed.

    The git directory of the work tree containing rootdir (per work tree: each linked
    worktree is a checkout of its own); outside git, pytest's cache folder; else ``None``.
    """
    git_dir = _git_dir(Path(config.rootpath))
    if git_dir is not None:
        return git_dir / LOCK_NAME
    cache: pytest.Cache | None = getattr(config, "cache", None)
    if cache is None:
        return None
    try:
        return cache.mkdir(_CACHE_DIR_NAME) / _CACHE_LOCK_NAME
    except OSError:
        return None


def _git_dir(start: Path) -> Path | None:
    """The git directory of the work tree containing ``start``: the first ``.git`` above
    it, a folder or (a linked worktree, a submodule) a file naming one.  Found without
    starting git, as every run of the checkout finds it."""
    for folder in (start, *start.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            if _is_git_directory(dot_git):
                return dot_git
            # As git does: a folder named .git that is no repository (an empty one left in
            # /tmp) is passed over, or every run below it would share one lock.
            continue
        if dot_git.is_file():
            try:
                text = dot_git.read_text(encoding="utf-8", errors="surrogateescape")
            except OSError:
                return None
            line = text.splitlines()[0] if text else ""
            if not line.startswith("gitdir: "):
                return None
            named = folder / line.removeprefix("gitdir: ").strip()
            return named if _is_git_directory(named) else None
    return None


def _is_git_directory(path: Path) -> bool:
    """What git checks before it takes a folder for a git directory: a ``HEAD``, and the
    objects (a repository's own, or a linked worktree's ``commondir`` naming them)."""
    return (path / "HEAD").is_file() and (
        (path / "objects").is_dir() or (path / "commondir").is_file()
    )


def hold(path: Path, announce: Callable[[str], None]) -> RunLock:
    """Take the run lock at ``path``, waiting (after one ``announce``) while another run
    holds it.

    :raises OSError: the lock file cannot be opened or locked (a read-only folder).
    :raises NestedRunError: the holder is an ancestor of this process.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o600)
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise
            pid, holder = _holder(fd)
            if pid is not None and pid in _ancestors():
                # Started by the holder (a reviewer's or a test's pytest): it would wait
                # for a run that waits for it.
                raise NestedRunError(
                    f"pytest-advreview: this run was started from inside another run on "
                    f"this checkout ({holder}), which holds it until it ends ({path}): "
                    "waiting for it would never end. Fix: run it outside that run, or "
                    "without --adversarial-review"
                ) from None
            announce(
                f"pytest-advreview: waiting for another run on this checkout "
                f"({holder}) to finish: it holds {path}. Two runs at once would each "
                "take the other's writes for its own reviewer's. Wait, or stop that run"
            )
            fcntl.lockf(fd, fcntl.LOCK_EX)
        record = {"pid": os.getpid(), "started": datetime.now(timezone.utc).isoformat()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode("ascii") + b"\n", 0)
    except BaseException:
        os.close(fd)
        raise
    return RunLock(path, fd)


def hold_for_run(config: pytest.Config) -> str | None:
    """Hold ``config``'s checkout until the run ends (its last cleanup frees it), after
    waiting for any other run on it; the waiting is said on stderr, past pytest's
    capture (a fixture review waits inside a test).

    :returns: a header line when the lock cannot be taken (the run goes on without it).
    :raises pytest.UsageError: the run holding the checkout started this one.
    """
    path = lock_path(config)
    if path is None:
        return None

    def announce(text: str) -> None:
        capture = config.pluginmanager.get_plugin("capturemanager")
        shown = capture.global_and_fixture_disabled() if capture is not None else None
        with shown or contextlib.nullcontext():
            sys.stderr.write(text + "\n")
            sys.stderr.flush()

    try:
        held = hold(path, announce)
    except NestedRunError as exc:
        raise pytest.UsageError(str(exc)) from None
    except OSError as exc:
        return (
            f"the run lock {path} cannot be taken ({exc.strerror or exc}): a second run on "
            "this checkout at the same time would take this run's writes for its reviewer's"
        )
    config.add_cleanup(held.release)
    return None


def _holder(fd: int) -> tuple[int | None, str]:
    """The holding run's pid and how to name it, from its record (pid and start time),
    checked, never echoed: the file is in a folder others may write to."""
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        record = json.loads(os.pread(fd, _RECORD_MAX, 0))
        pid, started = record["pid"], record["started"]
        if isinstance(pid, int) and isinstance(started, str):
            when = datetime.fromisoformat(started).astimezone(timezone.utc)
            return pid, f"pid {pid}, started {when.isoformat(timespec='seconds')}"
    return None, "its pid is not recorded yet"


def _ancestors() -> set[int]:
    """The pids of this process's parent, its parent, ... (from ``/proc``; on a system
    without it, none: a run started from inside the holder then waits for it)."""
    found: set[int] = set()
    pid = os.getppid()
    while pid > 1 and pid not in found:
        found.add(pid)
        try:
            stat_line = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
            # "pid (comm) state ppid ...": the name may hold spaces and parentheses.
            pid = int(stat_line.rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return found
