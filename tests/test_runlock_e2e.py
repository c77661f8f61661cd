"""Two runs on one checkout do not collide: the second waits for the first (runlock.py).

While its reviewer runs, a review takes every stored entry this run did not write for the
reviewer's doing.  A second pytest on the same checkout, started while the first one's
review is in flight, must therefore wait (saying for whom) instead of reporting the first
run's verdict as its reviewer's and discarding it; the workers of one xdist run must not
wait for each other; a run that died leaves nothing that blocks.  The runs are real pytest
processes on the in-process scripted reviewer, whose run steps wait for the test's signals.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ReviewRepo, wait_for
from pytest_advreview.state import state_key
from pytest_advreview.testing import approved_review, run_step

PLAN = "# Plan\n\n1. Migrate.\n\n## Rollback\nRestore the backup.\n"
NO_CODE = "--advreview-diff=none"
WAITING = "waiting for another run on this checkout"
BLAMED = "changed outside pytest-advreview"
#: The lock file in the git directory (runlock.LOCK_NAME).
LOCK_NAME = "advreview-run.lock"


def entry(repo: ReviewRepo, key: str) -> Path:
    return repo.path / ".pytest_cache" / "d" / "advreview" / "state" / f"{state_key(key)}.json"


def _touch_then_wait(started: Path, go: Path) -> str:
    """A reviewer's command: say it is in flight, then wait for the test's signal (60 s at
    most: the test then fails on what did not happen, not on a hang)."""
    mark, until = shlex.quote(str(started)), shlex.quote(str(go))
    return (
        f"touch {mark}; i=0; "
        f"until [ -e {until} ] || [ $i -ge 1200 ]; do i=$((i+1)); sleep 0.05; done"
    )


class Run:
    """One pytest of the repository in a process of its own, its output in a file."""

    def __init__(self, repo: ReviewRepo, name: str, *args: str) -> None:
        self.log = repo.path.parent / f"{repo.path.name}-{name}.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "pytest", *repo.args(NO_CODE, *args)],
                cwd=repo.path,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def finish(self) -> tuple[int, str]:
        try:
            code = self.proc.wait(timeout=180)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"the run did not end:\n{self.output()}")
        return code, self.output()


@pytest.fixture
def signals(scripted_repo: ReviewRepo) -> Path:
    """A folder outside the repository for the reviewers' and the test's signal files."""
    folder = scripted_repo.path.parent / f"{scripted_repo.path.name}-signals"
    folder.mkdir()
    return folder


def test_a_second_run_waits_for_the_first_instead_of_blaming_its_reviewer(
    scripted_repo: ReviewRepo, signals: Path
) -> None:
    for name in ("alpha", "bravo"):
        scripted_repo.plan(f"{name}.md", PLAN)
        scripted_repo.answer(
            f"{name}.md",
            run_step(_touch_then_wait(signals / f"{name}-started", signals / f"{name}-go")),
            {"message": approved_review()},
        )
    scripted_repo.commit("two plans")

    first = Run(scripted_repo, "first", "docs/plans/alpha.md")
    wait_for(first.proc, (signals / "alpha-started").exists, "the first run's review")
    second = Run(scripted_repo, "second", "docs/plans/bravo.md")
    # The second run either waits for the lock or (without one) reviews at once.
    wait_for(
        second.proc,
        lambda: WAITING in second.output() or (signals / "bravo-started").exists(),
        "the second run's start",
    )
    (signals / "alpha-go").touch()  # the first run's review ends and its verdict is stored
    code, out = first.finish()
    assert code == 0, out
    (signals / "bravo-go").touch()
    code, out = second.finish()

    assert BLAMED not in out
    assert code == 0, out
    assert entry(scripted_repo, "docs/plans/alpha.md").is_file()  # the first verdict stays
    assert entry(scripted_repo, "docs/plans/bravo.md").is_file()
    waited = next(line for line in out.splitlines() if WAITING in line)
    assert f"pid {first.proc.pid}, started " in waited
    assert LOCK_NAME in waited


def test_the_workers_of_one_run_do_not_wait_for_each_other(
    scripted_repo: ReviewRepo, signals: Path
) -> None:
    # Each plan's reviewer waits until the other's is in flight: both at once, or neither.
    for name, other in (("alpha", "bravo"), ("bravo", "alpha")):
        scripted_repo.plan(f"{name}.md", PLAN)
        scripted_repo.answer(
            f"{name}.md",
            run_step(_touch_then_wait(signals / name, signals / other)),
            {"message": approved_review()},
        )
    run = Run(scripted_repo, "xdist", "-n", "2")
    code, out = run.finish()
    assert code == 0, out
    assert "2 passed" in out
    assert WAITING not in out
    assert BLAMED not in out


def test_a_run_that_died_holding_the_lock_does_not_block_the_next(
    scripted_repo: ReviewRepo,
) -> None:
    scripted_repo.plan("alpha.md", PLAN)
    scripted_repo.answer("alpha.md", {"message": approved_review()})
    lock = scripted_repo.path / ".git" / LOCK_NAME
    # A run killed while it held the lock (SIGKILL: no handler, no cleanup) and left its
    # record: the file stays, the lock went with the process.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, json, os, sys, time\n"
            f"fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT)\n"
            "fcntl.lockf(fd, fcntl.LOCK_EX)\n"
            "record = {'pid': os.getpid(), 'started': '2026-01-01T00:00:00+00:00'}\n"
            "os.write(fd, json.dumps(record).encode())\n"
            "print('held', flush=True)\n"
            "time.sleep(600)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline() == "held\n"
    with lock.open("rb") as probe, pytest.raises(OSError):  # held: no other can take it
        fcntl.lockf(probe.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
    holder.send_signal(signal.SIGKILL)
    holder.communicate()
    assert json.loads(lock.read_text())["pid"] == holder.pid

    result = scripted_repo.run_subprocess(NO_CODE)
    result.assert_outcomes(passed=1)
    assert WAITING not in result.stderr.str() + result.stdout.str()
    # The lock file is in the git directory: no workspace change, no untracked file.
    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored"],
        cwd=scripted_repo.path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert LOCK_NAME not in status
    assert json.loads(lock.read_text())["pid"] != holder.pid  # the new run's record


def test_a_run_without_the_cacheprovider_still_holds_the_checkout(
    scripted_repo: ReviewRepo, signals: Path
) -> None:
    scripted_repo.plan("alpha.md", PLAN)
    scripted_repo.answer(
        "alpha.md",
        run_step(_touch_then_wait(signals / "alpha-started", signals / "alpha-go")),
        {"message": approved_review()},
    )
    lock = scripted_repo.path / ".git" / LOCK_NAME
    first = Run(scripted_repo, "nocache", "-p", "no:cacheprovider")
    wait_for(first.proc, (signals / "alpha-started").exists, "the run's review")
    with lock.open("rb") as probe, pytest.raises(OSError):
        fcntl.lockf(probe.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
    (signals / "alpha-go").touch()
    code, out = first.finish()
    assert code == 0, out
    assert not (scripted_repo.path / ".pytest_cache").exists()
    with lock.open("rb") as probe:  # freed at the end of the run
        fcntl.lockf(probe.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
    assert os.path.getsize(lock) > 0


def test_a_pytest_the_reviewer_starts_on_the_checkout_is_refused_not_left_waiting(
    scripted_repo: ReviewRepo,
) -> None:
    # A reviewer that runs the suite, whose addopts review too: the inner run would wait
    # for the run that waits for its reviewer.
    scripted_repo.plan("alpha.md", PLAN)
    inner = f"{shlex.quote(sys.executable)} -m pytest --adversarial-review {NO_CODE}"
    scripted_repo.answer(
        "alpha.md", run_step(f"{inner}; echo exit=$?"), {"message": approved_review()}
    )
    # In place: a reviewer in a worktree of its own starts pytest on that worktree, which
    # has a lock of its own and so never waits for this run.
    run = Run(scripted_repo, "outer", "--advreview-isolation=none")
    code, out = run.finish()
    assert code == 0, out
    [said] = scripted_repo.tool_outputs()
    assert "this run was started from inside another run on this checkout" in said
    assert f"(pid {run.proc.pid}, started " in said
    assert "exit=4" in said  # a usage error
    assert WAITING not in said
