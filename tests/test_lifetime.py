"""The supervisor every launch runs under (runner/lifetime.py), on plain processes.

The CLI contract passes through it unchanged (stdin, stdout, exit status, a signal's end,
a missing executable); what a launch leaves running is ended when it exits, and
everything when the process that launched it dies without any cleanup.  The real-CLI
cases are in test_lifetime_e2e.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import settled
from pytest_advreview.runner import _process, lifetime


@pytest.fixture(autouse=True)
def measured_supervisor(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same supervisor, imported through the package (with ``site``), so that
    coverage measures it; the launches otherwise go exactly as in a run."""
    boot = "import sys; from pytest_advreview.runner import lifetime; lifetime.main(sys.argv[1:])"
    monkeypatch.setattr(lifetime, "_BOOT", ("-I", "-c", boot))


def _launch(tmp_path: Path, argv: list[str], *, stdin: str = "", **kw: object) -> int | None:
    (tmp_path / "in").write_text(stdin)
    env = kw.pop("env", None) or dict(os.environ)
    return _process.launch(
        argv,
        cwd=tmp_path,
        stdin_file=tmp_path / "in",
        stdout_file=tmp_path / "out",
        stderr_file=tmp_path / "err",
        env=env,  # type: ignore[arg-type]
        timeout=kw.pop("timeout", 60.0),  # type: ignore[arg-type]
    )


def _alive(pid: int) -> list[int]:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return []
    return [] if state in ("Z", "X") else [pid]


def test_stdin_stdout_and_the_exit_status_pass_through(tmp_path: Path) -> None:
    assert _launch(tmp_path, ["sh", "-c", "cat; exit 7"], stdin="the prompt\n") == 7
    assert (tmp_path / "out").read_text() == "the prompt\n"


def test_a_child_ended_by_a_signal_ends_the_launch_the_same_way(tmp_path: Path) -> None:
    assert _launch(tmp_path, ["sh", "-c", "kill -TERM $$"]) == -signal.SIGTERM


def test_sigpipe_is_the_default_in_the_launched_process(tmp_path: Path) -> None:
    # Python ignores SIGPIPE; a CLI started by Popen gets the default back, so here too.
    assert _launch(tmp_path, ["sh", "-c", "grep SigIgn /proc/self/status"]) == 0
    ignored = int((tmp_path / "out").read_text().split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1))


def test_a_missing_executable_raises_as_popen_would(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as raised:
        _launch(tmp_path, ["advreview-no-such-program"])
    assert raised.value.filename == "advreview-no-such-program"


@pytest.mark.parametrize("lc_ctype", [None, "C"])
def test_the_environment_is_the_launchs_own(tmp_path: Path, lc_ctype: str | None) -> None:
    # The supervisor's Python sets LC_CTYPE at start (locale coercion); the CLI must not
    # see that.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG"))}
    if lc_ctype is not None:
        env["LC_CTYPE"] = lc_ctype
    env["ADVREVIEW_PROBE"] = "x y"
    assert _launch(tmp_path, ["env"], env=env) == 0
    seen = dict(line.split("=", 1) for line in (tmp_path / "out").read_text().splitlines())
    assert seen.get("LC_CTYPE") == lc_ctype
    assert seen["ADVREVIEW_PROBE"] == "x y"


def test_what_the_launch_left_running_ends_when_it_exits(tmp_path: Path) -> None:
    # A process in a new session is not in the launch's process group, and its parent has
    # exited: only the subreaper still finds it.
    script = "setsid sh -c 'sleep 300' >/dev/null 2>&1 < /dev/null & echo $! > pid"
    assert _launch(tmp_path, ["sh", "-c", script]) == 0
    escaped = int((tmp_path / "pid").read_text())
    assert settled(lambda: _alive(escaped), within=5.0) == []


def test_a_timeout_ends_every_process_of_the_launch(tmp_path: Path) -> None:
    script = "setsid sh -c 'sleep 300' >/dev/null 2>&1 < /dev/null & echo $! > pid; sleep 300"
    assert _launch(tmp_path, ["sh", "-c", script], timeout=2.0) is None
    escaped = int((tmp_path / "pid").read_text())
    assert settled(lambda: _alive(escaped), within=5.0) == []


def test_when_the_launcher_dies_hard_everything_ends_and_the_folders_go(tmp_path: Path) -> None:
    folder = tmp_path / "tool-tmp"
    (folder / "ro").mkdir(parents=True)
    (folder / "ro" / "f").write_text("x")
    (folder / "ro").chmod(0o500)
    late = tmp_path / "late.txt"
    # The launched CLI starts a writer in a new session and waits; the launcher (a
    # Python like pytest) then ends with os._exit, running no cleanup at all.
    escape = f"setsid sh -c 'sleep 4; echo late > {late}' >/dev/null 2>&1 < /dev/null &"
    driver = tmp_path / "driver.py"
    driver.write_text(
        textwrap.dedent(
            f"""\
            import os, threading, time
            from pathlib import Path
            from pytest_advreview.runner import _process, lifetime
            lifetime._BOOT = {lifetime._BOOT!r}
            here = Path({str(tmp_path)!r})
            (here / "in").write_text("")
            def hard_exit():
                while not (here / "pid").exists():
                    time.sleep(0.02)
                os._exit(3)
            threading.Thread(target=hard_exit, daemon=True).start()
            _process.launch(
                ["sh", "-c", {escape + " echo $! > pid.tmp; mv pid.tmp pid; sleep 300"!r}],
                cwd=here, stdin_file=here / "in", stdout_file=here / "out",
                stderr_file=here / "err", env=dict(os.environ), timeout=300,
                remove=[Path({str(folder)!r})],
            )
            """
        )
    )
    proc = subprocess.run([sys.executable, str(driver)], cwd=tmp_path, timeout=120, check=False)
    assert proc.returncode == 3
    escaped = int((tmp_path / "pid").read_text())
    assert settled(lambda: _alive(escaped), within=10.0) == []
    assert settled(lambda: [folder] if folder.exists() else [], within=5.0) == []
    assert not late.exists()


def test_sigterm_and_sighup_raise_terminated_and_are_restored() -> None:
    before = {s: signal.getsignal(s) for s in lifetime.STOP_SIGNALS}
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # nohup: stays ignored
    try:
        restore = lifetime.interrupt_on_signals()
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        with pytest.raises(lifetime.Terminated, match="SIGTERM"):
            os.kill(os.getpid(), signal.SIGTERM)
        restore()
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
