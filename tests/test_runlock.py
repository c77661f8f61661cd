"""Where a checkout's run lock lives and what its waiting message may say (runlock.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from conftest import commit, git, init_repo, write
from pytest_advreview import runlock


class _Cache:
    def __init__(self, root: Path) -> None:
        self.root = root

    def mkdir(self, name: str) -> Path:
        path = self.root / "d" / name
        path.mkdir(parents=True, exist_ok=True)
        return path


def _config(rootdir: Path, cache: Path | None = None) -> pytest.Config:
    found: dict[str, Any] = {"rootpath": rootdir}
    if cache is not None:
        found["cache"] = _Cache(cache)
    return cast("pytest.Config", SimpleNamespace(**found))


def test_the_lock_is_in_each_work_trees_own_git_directory(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    write(repo, "sub/x.py")
    commit(repo, "initial")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked))
    main_lock = runlock.lock_path(_config(repo / "sub", cache=tmp_path / "cache"))
    linked_lock = runlock.lock_path(_config(linked))
    assert main_lock == repo / ".git" / runlock.LOCK_NAME
    # What git itself names as the linked worktree's git directory.
    named = git(linked, "rev-parse", "--absolute-git-dir").strip()
    assert linked_lock == Path(named) / runlock.LOCK_NAME
    assert linked_lock != main_lock


def test_outside_git_the_lock_is_in_the_cache_folder_and_without_one_there_is_none(
    tmp_path: Path,
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    # A folder named .git that holds no repository (as CI machines leave one in /tmp) is
    # no git directory: git passes over it, and so does the lock.
    (tmp_path / ".git").mkdir()
    (plain / "sub").mkdir()
    (plain / "sub" / ".git").mkdir()
    (plain / "sub" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert runlock.lock_path(_config(plain / "sub", cache=tmp_path / "cache")) == (
        tmp_path / "cache" / "d" / "advreview" / "run.lock"
    )
    assert runlock.lock_path(_config(plain, cache=tmp_path / "cache")) == (
        tmp_path / "cache" / "d" / "advreview" / "run.lock"
    )
    assert runlock.lock_path(_config(plain)) is None
    # A .git file that names no folder is no git directory.
    (plain / ".git").write_text("gitdir: nowhere\n")
    assert runlock.lock_path(_config(plain)) is None
    (plain / ".git").write_text("not a pointer\n")
    assert runlock.lock_path(_config(plain)) is None


def _try_hold(path: Path) -> list[str]:
    """A process that takes the lock at ``path`` and prints what it was told (the waiting
    message, then it stops) or ``held``, or the error."""
    return [
        sys.executable,
        "-c",
        "import sys\nfrom pytest_advreview import runlock\n"
        "def said(text):\n    print(text, flush=True)\n    sys.exit(0)\n"
        "try:\n"
        f"    runlock.hold({str(path)!r}, said)\n"
        "    print('held')\n"
        "except runlock.NestedRunError as exc:\n"
        "    print(exc)\n",
    ]


def test_the_waiting_message_names_the_holder_only_from_a_record_it_can_check(
    tmp_path: Path,
) -> None:
    path = tmp_path / runlock.LOCK_NAME
    # The holder: another process, not an ancestor of the one that waits.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom pytest_advreview import runlock\n"
            f"runlock.hold({str(path)!r}, print)\n"
            "print('held', flush=True)\nsys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        said = subprocess.run(_try_hold(path), capture_output=True, text=True, timeout=60)
        assert f"waiting for another run on this checkout (pid {holder.pid}, started " in (
            said.stdout
        )
        assert str(path) in said.stdout
        # A record someone else wrote into the file is not echoed.
        record = b'{"pid": 1, "started": "\\u001b[2Jforged"}'
        path.write_bytes(record + b" " * 40)
        said = subprocess.run(_try_hold(path), capture_output=True, text=True, timeout=60)
        assert "(its pid is not recorded yet)" in said.stdout
        assert "forged" not in said.stdout
    finally:
        holder.communicate("")
    said = subprocess.run(_try_hold(path), capture_output=True, text=True, timeout=60)
    assert said.stdout == "held\n"  # the holder ended: the lock went with it


def test_a_run_started_from_inside_the_holder_is_refused_instead_of_waiting_forever(
    tmp_path: Path,
) -> None:
    path = tmp_path / runlock.LOCK_NAME
    held = runlock.hold(path, lambda text: pytest.fail(f"nobody holds it: {text}"))
    try:
        said = subprocess.run(_try_hold(path), capture_output=True, text=True, timeout=60)
    finally:
        held.release()
    assert said.stdout.startswith(
        f"pytest-advreview: this run was started from inside another run on this checkout "
        f"(pid {os.getpid()}, started "
    )
    assert "waiting for another run" not in said.stdout
    held.release()  # twice: nothing happens
    again = runlock.hold(path, lambda text: pytest.fail(f"released: {text}"))
    again.release()
