"""No reviewer outlives pytest: what a cancelled job, a hard exit or an escape leaves.

Observed before, with the real Codex CLI 0.171: SIGTERM to pytest (a cancelled CI job,
``timeout``, ``docker stop``) or a hard exit (pytest-timeout's ``thread`` method ends the
process with ``os._exit``) left Codex running with write access to the checkout, and it
wrote a file there seconds after pytest had exited; a tool process the reviewer started in
a session of its own outlived even a run that ended normally.  Each test here has the
reviewer's tool call write ``late.txt`` into the checkout a few seconds later, ends the run
its way, and then waits (bounded, for an event: no process of the review is left) before
it looks for the file.
"""

from __future__ import annotations

import secrets
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import (
    INTERRUPTED_EXIT_S,
    INTERRUPTED_HANG_S,
    ReviewRepo,
    live_processes,
    settled,
    start_interruptible,
    wait_for,
)
from pytest_advreview.runner.codex import TOOL_TMP_PREFIX
from pytest_advreview.testing import approved_review, shell_step

pytestmark = pytest.mark.real_codex

#: Seconds the tool call waits before it writes into the checkout: far shorter than the
#: wait for "nothing left" (:func:`settled`'s 5 s would see a surviving writer finish).
LATE_S = 3


def _late_write() -> tuple[str, str]:
    """A tool command that writes ``late.txt`` after :data:`LATE_S` s, and the marker in
    the argv of its processes (a fraction no other test on the machine sleeps for)."""
    marker = f"{LATE_S}.{secrets.randbelow(10**6):06d}1"
    return marker, f"sleep {marker}; echo late > late.txt"


def _start(
    review_repo: ReviewRepo, *extra: str, workers: tuple[str, ...] = ("-p", "no:xdist")
) -> subprocess.Popen[bytes]:
    # In place (isolation=none): the reviewer works in the checkout itself, the layout in
    # which a process left behind could write into it (a worktree of its own is removed).
    args = review_repo.args(
        "--advreview-diff=none",
        "--advreview-isolation=none",
        f"--advreview-timeout={INTERRUPTED_HANG_S}",
        *workers,
    )
    return start_interruptible(
        [sys.executable, "-m", "pytest", *args, *extra],
        cwd=review_repo.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _leftovers(review_repo: ReviewRepo, marker: str) -> list[str]:
    """Every process of the review still running: Codex and its tool processes (their
    argv names the checkout or the marker), after the bounded wait for them to end."""
    found = settled(
        lambda: live_processes(marker) + live_processes(str(review_repo.path)), within=5.0
    )
    return [b" ".join(argv).decode(errors="replace") for _pid, argv, _exe in found]


def _tool_tmp_folders(review_repo: ReviewRepo) -> list[str]:
    """The reviewer's private temporary folders left in the runs' TMPDIR."""
    temp = review_repo.path.parent / f"{review_repo.path.name}-tmp"
    return sorted(p.name for p in temp.iterdir() if p.name.startswith(TOOL_TMP_PREFIX))


def _communicate(proc: subprocess.Popen[bytes], after: str) -> str:
    try:
        return proc.communicate(timeout=INTERRUPTED_EXIT_S)[0].decode(errors="replace")
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"still running {INTERRUPTED_EXIT_S:.0f} s after {after}")


@pytest.mark.parametrize(
    ("signum", "workers", "shown"),
    [
        (signal.SIGTERM, ("-p", "no:xdist"), "SIGTERM"),
        (signal.SIGHUP, ("-p", "no:xdist"), "SIGHUP"),
        (signal.SIGTERM, ("-n", "1"), "SIGTERM"),
        (signal.SIGINT, ("-n", "1"), "KeyboardInterrupt"),
    ],
    ids=["sigterm", "sighup", "sigterm-xdist-controller", "sigint-xdist-controller"],
)
def test_a_signal_to_pytest_mid_review_ends_the_reviewer_and_nothing_is_written_after(
    review_repo: ReviewRepo, signum: int, workers: tuple[str, ...], shown: str
) -> None:
    # Under xdist the signal goes to the controller alone (`timeout`, `docker stop`, a CI
    # runner that signals the process it started).
    marker, command = _late_write()
    review_repo.plan("x.md")
    review_repo.answer("x.md", shell_step(command), {"message": approved_review()})
    proc = _start(review_repo, "--advreview-strict-exit", workers=workers)
    try:
        wait_for(proc, lambda: bool(live_processes(f"sleep {marker}")), "the tool call")
        proc.send_signal(signum)
        out = _communicate(proc, shown)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert _leftovers(review_repo, marker) == []
    assert not (review_repo.path / "late.txt").exists(), "written after pytest had exited"
    assert _tool_tmp_folders(review_repo) == []
    # The orderly path of Ctrl-C: the review in flight is stopped, the run is interrupted.
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert shown in out, out
    assert "passed" not in out.splitlines()[-1], out
    # The gate names the interrupt, not "a conftest or plugin removed it".
    assert "pytest was interrupted (Ctrl-C, SIGTERM or SIGHUP)" in out, out
    assert "conftest or plugin" not in out, out


def test_a_hard_exit_of_pytest_still_ends_the_reviewer(review_repo: ReviewRepo) -> None:
    # os._exit runs no handler, no finally and no atexit: what pytest-timeout's thread
    # method does when a test overruns (and what SIGKILL does from outside).
    marker, command = _late_write()
    review_repo.write(
        "conftest.py",
        "import os, pathlib, threading, time\n\n"
        "def pytest_runtest_setup(item):\n"
        "    def watch():\n"
        "        while not pathlib.Path('started').exists():\n"
        "            time.sleep(0.05)\n"
        "        os._exit(3)\n"
        "    threading.Thread(target=watch, daemon=True).start()\n",
    )
    review_repo.commit("a conftest that ends pytest hard once the tool call runs")
    review_repo.plan("x.md")
    review_repo.answer(
        "x.md", shell_step(f"touch started; {command}"), {"message": approved_review()}
    )
    proc = _start(review_repo)
    try:
        out = _communicate(proc, "the tool call started")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert (review_repo.path / "started").exists(), out
    assert _leftovers(review_repo, marker) == []
    assert not (review_repo.path / "late.txt").exists(), "written after pytest had exited"
    assert _tool_tmp_folders(review_repo) == []
    assert proc.returncode == 3, out


def test_a_tool_process_in_a_new_session_ends_with_the_review(review_repo: ReviewRepo) -> None:
    # Outside Codex's sandbox (its bubblewrap ends what it started with the sandbox).
    marker, command = _late_write()
    review_repo.plan("x.md")
    escape = f"setsid sh -c '{command}' >/dev/null 2>&1 < /dev/null & echo escaped"
    review_repo.answer("x.md", shell_step(escape), {"message": approved_review()})
    result = review_repo.run_subprocess(
        "--advreview-diff=none", "--advreview-sandbox=danger-full-access", "-p", "no:xdist"
    )
    assert any("escaped" in output for output in review_repo.tool_outputs())
    result.assert_outcomes(passed=1)
    assert _leftovers(review_repo, marker) == []
    assert not (review_repo.path / "late.txt").exists(), "written after the review had ended"


def test_what_the_login_shell_of_codex_starts_ends_with_the_review(
    review_repo: ReviewRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Codex snapshots the environment of a login shell (bash -lc: the profile runs, out of
    # any sandbox); a profile that leaves a process behind (pyenv's rehash waiting on a
    # stale lock did) must not outlive the review either.
    marker, command = _late_write()
    home = tmp_path / "home"
    home.mkdir()
    command = command.replace("late.txt", str(review_repo.path / "late.txt"))
    (home / ".bash_profile").write_text(f"setsid sh -c '{command}' >/dev/null 2>&1 < /dev/null &\n")
    monkeypatch.setenv("HOME", str(home))
    review_repo.plan("x.md")
    review_repo.answer("x.md", shell_step("echo ran"), {"message": approved_review()})
    result = review_repo.run_subprocess("--advreview-diff=none", "-p", "no:xdist")
    result.assert_outcomes(passed=1)
    assert _leftovers(review_repo, marker) == []
    assert not (review_repo.path / "late.txt").exists(), "written after the review had ended"


@pytest.mark.ecosystem
def test_pytest_timeouts_thread_method_ends_the_reviewer(
    review_repo: ReviewRepo, ecosystem_python: Path
) -> None:
    # pytest-timeout's thread method dumps the stacks and ends pytest with os._exit: no
    # handler, no finally.  The tool call sleeps far past the timeout, then would write;
    # the model never answers its output (Codex leaves a command running in the
    # background after 10 s and waits), so the review is in flight when the timeout hits.
    marker = f"40.{secrets.randbelow(10**6):06d}1"
    review_repo.plan("x.md")
    review_repo.answer(
        "x.md",
        shell_step(f"sleep {marker}; echo late > late.txt"),
        {"hang": INTERRUPTED_HANG_S},
    )
    args = review_repo.args(
        "--advreview-diff=none",
        "--advreview-isolation=none",
        f"--advreview-timeout={INTERRUPTED_HANG_S}",
        "--timeout=15",
        "--timeout-method=thread",
    )
    proc = subprocess.Popen(
        [str(ecosystem_python), "-m", "pytest", *args],
        cwd=review_repo.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        # The timeout must hit the tool call: it is running before pytest-timeout fires.
        wait_for(proc, lambda: bool(live_processes(f"sleep {marker}")), "the tool call")
        out = _communicate(proc, "pytest-timeout's thread method")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != pytest.ExitCode.OK, out
    assert "Timeout" in out, out
    assert _leftovers(review_repo, marker) == []
    assert not (review_repo.path / "late.txt").exists(), "written after pytest had exited"
    assert _tool_tmp_folders(review_repo) == []
