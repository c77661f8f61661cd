"""Launching a reviewer process safely: argv lists, files for I/O, group kill on timeout.

Every launch runs under the supervisor of :mod:`.lifetime`, which ends what the process
leaves behind and everything when pytest itself ends without its cleanup.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from ..constants import MAX_ERROR_CHARS
from . import environment, lifetime
from .lifetime import descendants


class Cancel(Protocol):
    """What a launch looks at to stop early: a ``threading.Event``, or a watch of the
    reviewer's stream (``reachability.ConnectWatch``)."""

    def is_set(self) -> bool: ...


#: Seconds between SIGTERM to the process group and SIGKILL.
KILL_GRACE_S = 3.0


def launch(
    argv: Sequence[str],
    *,
    cwd: Path,
    stdin_file: Path,
    stdout_file: Path,
    stderr_file: Path,
    env: Mapping[str, str],
    timeout: float,
    cancel: Cancel | None = None,
    remove: Sequence[Path] = (),
) -> int | None:
    """Run ``argv`` with ``stdin_file`` on stdin; return the exit code, ``None`` on timeout.

    stdout and stderr go straight to files, so a long event stream never sits in this
    process's memory.  The child gets its own process group: the Codex npm wrapper does
    not forward SIGKILL to the native binary, so only killing the whole group leaves
    nothing behind (also on Ctrl-C).  Setting ``cancel`` ends the wait early, like a
    timeout (the doctor runs checks in threads and stops them when its budget is spent).

    ``argv`` runs under the supervisor (:mod:`.lifetime`): what it leaves running when it
    exits is ended, and should pytest die during the launch, everything is ended and the
    folders in ``remove`` (the launch's private temporary folders) are removed.

    :raises OSError: ``argv`` cannot be started (as ``Popen`` raises it).
    """
    with (
        stdin_file.open("rb") as stdin,
        stdout_file.open("wb") as out,
        stderr_file.open("wb") as err,
        lifetime.Supervised(argv, env, remove=remove) as supervised,
    ):
        proc = subprocess.Popen(
            supervised.argv,
            stdin=stdin,
            stdout=out,
            stderr=err,
            cwd=cwd,
            env=supervised.env,
            start_new_session=True,
            pass_fds=supervised.pass_fds,
        )
        try:
            supervised.started()
            rc = _wait(proc, timeout, cancel)
        except BaseException:
            kill_group(proc)
            raise
        if rc is None:
            kill_group(proc)
        return rc


def run_piped(
    argv: Sequence[str],
    *,
    prompt: str,
    work: Path,
    names: tuple[str, str, str],
    cwd: Path,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cancel: Cancel | None = None,
    remove: Sequence[Path] = (),
) -> int | None:
    """:func:`launch` a CLI that reads ``prompt`` on stdin, its files ``names`` in ``work``.

    ``names`` are the prompt, stdout and stderr files; a stale stdout is deleted first.
    The environment is ours plus ``env``, minus what no reviewer or lead may see (the
    state-signing key: one that read it could sign forged verdicts).
    """
    prompt_file, out, err = (work / name for name in names)
    prompt_file.write_text(prompt, encoding="utf-8")
    out.unlink(missing_ok=True)
    merged = environment.reviewer_process_env({**os.environ, **(env or {})})
    return launch(
        argv,
        cwd=cwd,
        stdin_file=prompt_file,
        stdout_file=out,
        stderr_file=err,
        env=merged,
        timeout=timeout,
        cancel=cancel,
        remove=remove,
    )


def _wait(proc: subprocess.Popen[bytes], timeout: float, cancel: Cancel | None) -> int | None:
    """The exit code, or ``None`` when ``timeout`` passed or ``cancel`` was set first.

    ``Popen.wait(timeout=…)`` polls with sleeps that grow to 50 ms, so an exit is noticed
    25 ms late on average, per review.  Where the OS offers a process file descriptor
    (Linux 5.3+), this wait sleeps on it instead and wakes the moment the child exits.
    """
    deadline = time.monotonic() + timeout
    pidfd = _pidfd(proc.pid)
    try:
        while cancel is None or not cancel.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            # With a cancel event, look at it at least every 0.1 s.
            step = remaining if cancel is None else min(0.1, remaining)
            if pidfd is None:
                try:
                    return proc.wait(timeout=step)
                except subprocess.TimeoutExpired:
                    continue
            if _exited(pidfd, step):
                return proc.wait()
        return None
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _pidfd(pid: int) -> int | None:
    """A file descriptor that becomes readable when ``pid`` exits, where there is one."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        fd: int = pidfd_open(pid)
    except OSError:  # an old kernel (ENOSYS) or a seccomp filter that forbids it
        return None
    return fd


def _exited(pidfd: int, seconds: float) -> bool:
    """Whether the process behind ``pidfd`` exits within ``seconds``."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(max(0, math.ceil(seconds * 1000))))


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, SIGKILL what is left after a grace period, reap.

    The group is the supervisor's (:mod:`.lifetime`), which on SIGTERM ends its child's
    group and every descendant itself within its shorter grace.  Descendants that left
    the group (Claude Code starts its tool processes with
    ``setsid``) are found before the kill and SIGKILLed after it: once their parent is
    gone they are reparented and no longer findable as its descendants.  A second Ctrl-C
    during the grace period ends the grace, not the kill: the SIGKILL still goes.
    """
    strays = descendants(proc.pid)
    try:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=KILL_GRACE_S)
    finally:
        # Members of the group (the native binary under the npm wrapper) may outlive the
        # leader; SIGKILL the group whatever the leader did.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in strays:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()


def read_text(path: Path) -> str | None:
    """The file as text (undecodable bytes replaced), or ``None`` when it is missing."""
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        return None


def tail(text: str | None, limit: int = MAX_ERROR_CHARS - 60) -> str:
    """The last ``limit`` characters of ``text``, stripped (the useful end of stderr)."""
    if not text:
        return ""
    return text.strip()[-limit:]


def clip(text: str) -> str:
    """``text`` cut to the limit of a result's ``errors`` (:data:`MAX_ERROR_CHARS`)."""
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"
