"""Progress of reviews in flight: round, elapsed time and the reviewer's latest activity.

End to end with the real Codex CLI: the reviewer runs a command that takes seconds, and
pytest runs with its output to a pipe (a CI log) and in a pseudo-terminal.  Where a test
looks for progress lines, the command waits until the test has read what it looks for
(it then creates :data:`RELEASE` in the repository's ``.git``, which no review reads);
where a test proves that no line is printed, the command sleeps two progress intervals.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_advreview.progress import activity_of
from pytest_advreview.testing import approved_review, shell_step

#: Where the test releases the waiting command (relative to the repository, its cwd).
RELEASE = ".git/go"
#: The command that waits to be released; after 20 s it gives up (what the test waited
#: for never showed: it fails).
COMMAND = f"for i in $(seq 200); do [ -e {RELEASE} ] && break; sleep 0.1; done; echo slept"
#: The command of the tests that prove no line is printed: two lines' time at the interval 1.
SLEEP = "sleep 2; echo slept"
LINE = re.compile(
    r"advreview: docs/plans/slow\.md::adversarial-review  round 1  0:0\d  running: "
    + re.escape(COMMAND)
)


def test_activity_of_names_the_command_without_the_shell_wrapper():
    started = {
        "type": "item.started",
        "item": {"type": "command_execution", "command": "/bin/bash -lc 'ls -la src'"},
    }
    done = {
        "type": "item.completed",
        "item": {"type": "command_execution", "command": "/bin/bash -lc 'ls'", "exit_code": 2},
    }
    assert activity_of(started) == "running: ls -la src"
    assert activity_of(done) == "ran: ls (exit 2)"
    assert activity_of({"type": "turn.started"}) == "waiting for the model"
    assert activity_of({"type": "item.completed", "item": {"type": "agent_message"}}) == (
        "writing the review"
    )
    assert activity_of({"type": "item.updated", "item": {"type": "todo_list"}}) is None


def test_a_command_cannot_drive_the_terminal():
    """A hostile reviewer's command is shown as text: no escape sequence reaches the tty."""
    evil = "/bin/bash -lc 'printf \x1b]52;c;c2VjcmV0\x07 \x1b[2K\r PASSED \x9b31m'"
    event = {"type": "item.started", "item": {"type": "command_execution", "command": evil}}
    shown = activity_of(event)
    assert shown is not None and shown.startswith("running: printf")
    assert not any(not ch.isprintable() for ch in shown), repr(shown)
    assert "\x1b" not in shown and "\x07" not in shown and "\x9b" not in shown


def _slow_review(review_repo, command=COMMAND):
    review_repo.plan("slow.md")
    review_repo.answer("slow.md", shell_step(command), {"message": approved_review()})


@pytest.mark.real_codex
def test_progress_lines_in_a_log(review_repo):
    _slow_review(review_repo)
    argv = [sys.executable, "-m", "pytest", *review_repo.args("--advreview-progress=1")]
    # runpytest_subprocess's basetemp, which the repository ignores.
    argv.append(f"--basetemp={review_repo.path / 'runpytest-0'}")
    ret, out = _run(argv, review_repo.path, terminal=False, release=LINE.search)
    assert ret == 0, out
    assert LINE.search(out), out
    # pytest's own line reads whole after the progress lines.
    pytest.LineMatcher(out.splitlines()).fnmatch_lines(["docs/plans/slow.md .*"])


@pytest.mark.real_codex
def test_no_progress_under_quiet(review_repo):
    _slow_review(review_repo, SLEEP)
    result = review_repo.run_subprocess("--advreview-progress=1", "-q")
    assert result.ret == 0, result.stdout.str()
    assert "running: sleep" not in result.stdout.str()


@pytest.mark.real_codex
def test_progress_off(review_repo):
    _slow_review(review_repo, SLEEP)
    result = review_repo.run_subprocess("--advreview-progress=off")
    assert result.ret == 0, result.stdout.str()
    assert "running: sleep" not in result.stdout.str()


def _run(
    argv: list[str],
    cwd: Path,
    *,
    terminal: bool,
    release: Callable[[str], object],
    timeout: float = 120,
) -> tuple[int, str]:
    """Run ``argv`` with its stdout (and, on a terminal, stderr) to a pseudo-terminal or a
    pipe; its exit code and everything it wrote there.

    Once the output read so far satisfies ``release``, the waiting command is released.
    """
    if terminal:
        leader, follower = pty.openpty()
        env = {**os.environ, "TERM": "xterm", "COLUMNS": "160", "LINES": "40"}
        proc = subprocess.Popen(
            argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env=env
        )
    else:
        # stderr apart, as runpytest_subprocess keeps it (in a file the repository ignores).
        leader, follower = os.pipe()
        with (cwd / "runpytest-0.stderr").open("wb") as err:
            proc = subprocess.Popen(
                argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=follower, stderr=err
            )
    os.close(follower)
    go = cwd / RELEASE
    chunks = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                try:
                    data = os.read(leader, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
                if not go.exists() and release(b"".join(chunks).decode("utf-8", "replace")):
                    go.touch()
            elif proc.poll() is not None:
                break
    finally:
        proc.kill() if proc.poll() is None else None
        proc.wait()
        os.close(leader)
    return proc.returncode, b"".join(chunks).decode("utf-8", "replace")


def _redrawn(out: str) -> set[str]:
    """The elapsed times drawn for the running command."""
    return set(re.findall(r"round 1  (0:0\d)  running: " + re.escape(COMMAND[:20]), out))


@pytest.mark.real_codex
def test_progress_in_a_terminal_is_redrawn_in_place(review_repo):
    _slow_review(review_repo)
    argv = [sys.executable, "-m", "pytest", *review_repo.args()]
    _, out = _run(argv, review_repo.path, terminal=True, release=lambda o: len(_redrawn(o)) >= 2)
    assert LINE.search(out), out
    # Drawn below pytest's line, then the cursor goes back up to it; erased in the end.
    assert "\x1b[1A" in out
    assert out.count("\x1b[J") >= 2
    # Redrawn as time passes: at least two elapsed times for the running command.
    times = _redrawn(out)
    assert len(times) >= 2, out
    assert re.search(r"1 passed", out), out
