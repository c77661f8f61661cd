"""Progress of reviews in flight: round, elapsed time and the reviewer's latest activity.

End to end with the real Codex CLI: the reviewer runs a command that takes seconds, and
pytest runs with its output to a pipe (a CI log) and in a pseudo-terminal.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time

import pytest

from pytest_advreview.progress import activity_of
from pytest_advreview.testing import approved_review, shell_step

COMMAND = "sleep 4; echo slept"
LINE = re.compile(
    r"advreview: docs/plans/slow\.md::adversarial-review  round 1  0:0\d  running: sleep 4; "
    r"echo slept"
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


def _slow_review(review_repo):
    review_repo.plan("slow.md")
    review_repo.answer("slow.md", shell_step(COMMAND), {"message": approved_review()})


@pytest.mark.real_codex
def test_progress_lines_in_a_log(review_repo):
    _slow_review(review_repo)
    result = review_repo.run_subprocess("--advreview-progress=1")
    assert result.ret == 0, result.stdout.str()
    out = result.stdout.str()
    assert LINE.search(out), out
    # pytest's own line reads whole after the progress lines.
    result.stdout.fnmatch_lines(["docs/plans/slow.md .*"])


@pytest.mark.real_codex
def test_no_progress_under_quiet(review_repo):
    _slow_review(review_repo)
    result = review_repo.run_subprocess("--advreview-progress=1", "-q")
    assert result.ret == 0, result.stdout.str()
    assert "running: sleep" not in result.stdout.str()


@pytest.mark.real_codex
def test_progress_off(review_repo):
    _slow_review(review_repo)
    result = review_repo.run_subprocess("--advreview-progress=off")
    assert result.ret == 0, result.stdout.str()
    assert "running: sleep" not in result.stdout.str()


def _run_in_pty(argv: list[str], cwd, timeout: float = 120) -> str:
    """Run ``argv`` with a pseudo-terminal as stdout and stderr; everything it wrote."""
    leader, follower = pty.openpty()
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "160", "LINES": "40"}
    proc = subprocess.Popen(
        argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env=env
    )
    os.close(follower)
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
            elif proc.poll() is not None:
                break
    finally:
        proc.kill() if proc.poll() is None else None
        proc.wait()
        os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.real_codex
def test_progress_in_a_terminal_is_redrawn_in_place(review_repo):
    _slow_review(review_repo)
    argv = [sys.executable, "-m", "pytest", *review_repo.args()]
    out = _run_in_pty(argv, review_repo.path)
    assert LINE.search(out), out
    # Drawn below pytest's line, then the cursor goes back up to it; erased in the end.
    assert "\x1b[1A" in out
    assert out.count("\x1b[J") >= 2
    # Redrawn as time passes: at least two elapsed times for the running command.
    times = set(re.findall(r"round 1  (0:0\d)  running: sleep 4", out))
    assert len(times) >= 2, out
    assert re.search(r"1 passed", out), out
