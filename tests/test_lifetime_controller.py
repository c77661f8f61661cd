"""An xdist worker's launches end with the controller (runner/lifetime.py), on plain
processes; the real-CLI case is test_xdist_kill_e2e.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import settled
from pytest_advreview.runner import lifetime

pytestmark = pytest.mark.skipif(
    not hasattr(os, "pidfd_open"), reason="pidfds are Linux's (the fallback is tested below)"
)


def wait_until(ready: Callable[[], bool], within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while not ready():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.05)


def _alive(pid: int) -> list[int]:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return []
    return [] if state in ("Z", "X") else [pid]


def test_a_sigkill_of_the_controller_ends_the_workers_launch(tmp_path: Path) -> None:
    # controller -> worker (watches the controller, launches) -> supervisor -> sleep.
    # The worker lives on after the controller's SIGKILL, as an xdist worker does.
    worker = textwrap.dedent(
        f"""
        import os, sys
        from pathlib import Path
        from pytest_advreview.runner import _process, lifetime
        lifetime.watch_controller()
        tmp = Path({str(tmp_path)!r})
        (tmp / "in").write_text("")
        _process.launch(
            ["sh", "-c", "echo $$ > pid; exec sleep 300"],
            cwd=tmp, stdin_file=tmp / "in", stdout_file=tmp / "out",
            stderr_file=tmp / "err", env=dict(os.environ), timeout=600,
        )
        (tmp / "launch-ended").write_text("")
        """
    )
    controller = textwrap.dedent(
        f"""
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", {worker!r}])
        time.sleep(600)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", controller])
    pid_file = tmp_path / "pid"
    try:
        wait_until(lambda: pid_file.exists() and pid_file.read_text().strip() != "")
        sleeper = int(pid_file.read_text())
        proc.kill()
        proc.wait()
        assert settled(lambda: _alive(sleeper), within=5.0) == []
        # The launch returned in the worker: it went on (as xdist's worker does) without
        # the reviewer.
        wait_until(lambda: (tmp_path / "launch-ended").exists())
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_worker_passes_the_controller_to_each_supervisor_and_closes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lifetime, "_controller_fd", None)
    close = lifetime.watch_controller()
    fd = lifetime._controller_fd
    assert fd is not None
    assert lifetime.watch_controller()() is None  # a second call watches nothing more
    with lifetime.Supervised(["true"], {}) as supervised:
        assert fd in supervised.pass_fds
        assert supervised.argv[supervised.argv.index("--controller") + 1] == str(fd)
    os.fstat(fd)  # a launch does not close the shared pidfd
    close()
    assert lifetime._controller_fd is None
    with pytest.raises(OSError):
        os.fstat(fd)
    with lifetime.Supervised(["true"], {}) as supervised:
        assert "--controller" not in supervised.argv


@pytest.mark.parametrize("why", ["no-pidfds", "denied", "re-parented"])
def test_without_a_watchable_controller_nothing_is_watched(
    monkeypatch: pytest.MonkeyPatch, why: str
) -> None:
    monkeypatch.setattr(lifetime, "_controller_fd", None)
    if why == "no-pidfds":  # macOS, or Python built without it
        monkeypatch.delattr(os, "pidfd_open")
    elif why == "denied":  # a kernel before 5.3, or a seccomp profile

        def denied(_pid: int) -> int:
            raise OSError(38, "Function not implemented")

        monkeypatch.setattr(os, "pidfd_open", denied)
    else:  # the controller ended between the two questions: its pid may be reused
        parents = iter([os.getppid(), 1])
        monkeypatch.setattr(os, "getppid", lambda: next(parents))
    lifetime.watch_controller()()
    assert lifetime._controller_fd is None


def test_the_supervisor_of_a_launch_after_the_controller_ended_ends_it_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker goes on to its next item after the controller died: that launch's
    # supervisor finds the pidfd readable at once.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    fd = os.pidfd_open(dead.pid)
    dead.wait()
    monkeypatch.setattr(lifetime, "_controller_fd", fd)
    try:
        from pytest_advreview.runner import _process

        (tmp_path / "in").write_text("")
        rc = _process.launch(
            ["sleep", "300"],
            cwd=tmp_path,
            stdin_file=tmp_path / "in",
            stdout_file=tmp_path / "out",
            stderr_file=tmp_path / "err",
            env=dict(os.environ),
            timeout=600,
        )
    finally:
        os.close(fd)
    assert rc == -signal.SIGTERM
