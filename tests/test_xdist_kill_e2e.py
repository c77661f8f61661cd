"""No reviewer outlives pytest under xdist: a SIGKILL of the controller.

Observed on 1803125 with the real Codex CLI 0.171: with ``-n 1`` (the Action's ``workers``
input) a SIGKILL of the controller left the worker and its reviewer running (xdist
interrupts a worker whose controller is gone only 5 s later), and with
``--advreview-isolation=none`` the reviewer wrote into the checkout after pytest had
died.  Each launch's supervisor watched a pipe from the worker, and the worker was not
the process that died.  Here the reviewer's tool call writes ``late.txt`` into the
checkout a few seconds after it starts; the controller is SIGKILLed while it sleeps.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import INTERRUPTED_HANG_S, ReviewRepo, live_processes, settled, wait_for
from pytest_advreview.testing import approved_review, shell_step
from test_lifetime_e2e import LATE_S, _late_write

pytestmark = pytest.mark.real_codex

#: Seconds the reviewer may outlive the controller: docs/safety.md's "about 2 s" (the
#: supervisor's SIGTERM grace) with room for a loaded machine; below :data:`LATE_S`, so
#: a reviewer that is still running when the tool call writes fails on the file too.
BOUND_S = LATE_S - 0.5


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if int(stat[1]) == pid:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _files(root: Path) -> dict[str, int]:
    """Every file of the checkout outside ``.git``, with its modification time."""
    return {
        str(path.relative_to(root)): path.stat().st_mtime_ns
        for path in root.rglob("*")
        if ".git" not in path.relative_to(root).parts and path.is_file()
    }


def test_a_sigkill_of_the_xdist_controller_ends_the_workers_reviewer(
    review_repo: ReviewRepo, tmp_path: Path
) -> None:
    marker, command = _late_write()
    review_repo.plan("x.md")
    review_repo.answer("x.md", shell_step(command), {"message": approved_review()})
    args = review_repo.args(
        "--advreview-diff=none",
        "--advreview-isolation=none",
        f"--advreview-timeout={INTERRUPTED_HANG_S}",
        "-n",
        "1",
    )
    # Output to a file: the orphaned worker holds the controller's stderr as long as it
    # lives, and a pipe would keep this test waiting for it.
    log = tmp_path / "pytest.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", *args],
            cwd=review_repo.path,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    workers: list[int] = []
    try:
        wait_for(proc, lambda: bool(live_processes(f"sleep {marker}")), "the tool call")
        workers = _children(proc.pid)
        assert workers, "no xdist worker under the controller"
        reviewers = [pid for pid, _argv, _exe in live_processes(str(review_repo.path))]
        before = _files(review_repo.path)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed = time.monotonic()
        left = settled(
            lambda: (
                live_processes(marker)
                + [p for p in live_processes(str(review_repo.path)) if p[0] in reviewers]
            ),
            within=BOUND_S,
        )
        ended_after = time.monotonic() - killed
        assert left == [], (
            f"the reviewer outlived the SIGKILLed controller by {ended_after:.1f} s: "
            f"{[b' '.join(argv) for _pid, argv, _exe in left]}\n{log.read_text()}"
        )
        # The worker itself ends on xdist's own terms (its controller is gone); once it
        # has, nothing of the run may have written into the checkout since the kill.
        settled(lambda: [pid for pid in workers if _alive(pid)], within=INTERRUPTED_HANG_S / 10)
        time.sleep(max(0.0, LATE_S + 1 - (time.monotonic() - killed)))
        assert not (review_repo.path / "late.txt").exists(), "written after pytest was killed"
        assert _files(review_repo.path) == before, "the checkout changed after the kill"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
