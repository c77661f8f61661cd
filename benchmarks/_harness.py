"""Building blocks of the benchmark: synthetic repositories, environments, timed runs.

Everything lives under one temporary directory (removed at the end): the git
repositories, ``CODEX_HOME`` and ``TMPDIR``.  The reviewer is the real, pinned Codex CLI
pointed at the testing kit's scripted server on 127.0.0.1 (or, for the memory benchmark,
the kit's fake ``codex``), so nothing leaves the machine.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_advreview.testing import codex_provider_args, offline_env

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
PYTHON = sys.executable
#: Environment variables of the probe plugin (``bench_probe.py``).
PROBE_OUT = "ADVREVIEW_BENCH_PROBE"
PROBE_WATCH = "ADVREVIEW_BENCH_WATCH"

#: A plan of about 1.5 KB, the size of a short real one.
PLAN_TEXT = """\
# Plan {n}: move the {n}th report to the new storage backend

## Context
The report job {n} reads from the legacy store and writes a CSV that finance downloads
every morning.  The legacy store is read-only from next quarter.

## Steps
1. Add a reader for the new backend behind the `reports.new_store` flag.
2. Run both readers side by side for a week and diff their outputs nightly.
3. Switch the flag on for job {n}; keep the old reader for one release.
4. Delete the old reader and the flag.

## Rollback
Turn the flag off.  The old reader stays deployable until step 4.

## Risks
- The new backend paginates differently; totals could drift by one page.
- The nightly diff needs read access to both stores from the batch host.

## Acceptance
- A week of identical nightly diffs.
- The CSV of job {n} is byte-identical before and after the switch.
"""


class BenchError(RuntimeError):
    """A benchmark step did not behave as expected (the message says what and where)."""


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with a neutral identity; return stdout."""
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0")
    proc = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise BenchError(f"git {' '.join(args)} failed in {repo}: {proc.stderr.strip()}")
    return proc.stdout


def plan_path(index: int, *, spread: bool) -> str:
    """Repo-relative path of plan ``index``; ``spread`` puts 100 plans per folder."""
    name = f"plan-{index:05d}.md"
    return f"docs/plans/area-{index // 100:03d}/{name}" if spread else f"docs/plans/{name}"


def make_repo(path: Path, plans: int, *, scope: str = "all", spread: bool = False) -> list[Path]:
    """A git repository with ``plans`` committed plan files on ``main``; returns their paths.

    ``pytest.ini`` sets ``advreview_plan_scope`` (an ini-only setting) and nothing else.
    """
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "bench")
    git(path, "config", "user.email", "bench@example.invalid")
    git(path, "config", "commit.gpgsign", "false")
    (path / ".gitignore").write_text(".pytest_cache/\n__pycache__/\n", encoding="utf-8")
    (path / "pytest.ini").write_text(
        f"[pytest]\nadvreview_plan_scope = {scope}\n", encoding="utf-8"
    )
    (path / "README.md").write_text("# bench project\n", encoding="utf-8")
    written: list[Path] = []
    for n in range(plans):
        target = path / plan_path(n, spread=spread)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(PLAN_TEXT.format(n=n), encoding="utf-8")
        written.append(target)
    git(path, "add", "-A")
    git(path, "commit", "-qm", "plans")
    return written


@dataclass
class Workspace:
    """One temporary root holding the repositories, ``CODEX_HOME`` and ``TMPDIR``."""

    root: Path
    codex: Path
    home: Path = field(init=False)
    tmp: Path = field(init=False)

    def __post_init__(self) -> None:
        self.home = self.root / "codex-home"
        self.tmp = self.root / "tmp"
        self.home.mkdir()
        self.tmp.mkdir()

    def env(self, **extra: str) -> dict[str, str]:
        """An offline environment: fake key, loopback proxy bypass, our CODEX_HOME/TMPDIR.

        ``PYTHONPATH`` gets the benchmark folder so ``-p bench_probe`` can be loaded, and
        variables that would change the plugin's settings are removed.
        """
        env = offline_env(CODEX_HOME=str(self.home), TMPDIR=str(self.tmp))
        for name in list(env):
            if name.startswith(("ADVREVIEW_", "PYTEST_")) and name != "ADVREVIEW_FAKE_KEY":
                del env[name]
        # Python's bytecode cache stays on, as in a normal install (this sandbox sets
        # PYTHONDONTWRITEBYTECODE, which would recompile the plugin on every start).
        for name in ("GITHUB_ACTIONS", "GITHUB_BASE_REF", "CI", "PYTHONDONTWRITEBYTECODE"):
            env.pop(name, None)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p
        )
        env.update(extra)
        return env

    def clear_sessions(self) -> None:
        """Forget Codex's rollouts, so every repetition starts from the same CODEX_HOME."""
        shutil.rmtree(self.home / "sessions", ignore_errors=True)


def review_args(codex: Path | str, url: str, *extra: str) -> list[str]:
    """``--adversarial-review`` with the fake provider; plugin defaults otherwise."""
    return [
        "--adversarial-review",
        f"--advreview-codex={codex}",
        "--advreview-model=fake-model",
        *[f"--advreview-codex-config={v}" for v in codex_provider_args(url)],
        *extra,
    ]


@dataclass(frozen=True)
class Timed:
    """One timed command: wall seconds, CPU seconds (it and its children), exit code, output."""

    seconds: float
    cpu: float
    returncode: int
    stdout: str
    stderr: str


class CpuLog:
    """The CPU seconds of every timed run, by arm: less noisy than wall time on a busy host."""

    def __init__(self) -> None:
        self.runs: dict[str, list[float]] = {}

    def __call__(self, arm: str, timed: Timed) -> float:
        """Record ``timed``'s CPU time under ``arm``; return its wall seconds."""
        self.runs.setdefault(arm, []).append(round(timed.cpu, 3))
        return timed.seconds

    def medians(self) -> dict[str, float]:
        """Median CPU seconds per arm (warm-up runs included)."""
        return {arm: round(median(values), 3) for arm, values in self.runs.items()}


def run_timed(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float = 300.0
) -> Timed:
    """Run ``argv`` and time it: wall clock from fork to exit, and the CPU time it used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(
        list(argv),
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timed(wall, cpu, proc.returncode, proc.stdout, proc.stderr)


def pytest_cmd(*args: str) -> list[str]:
    """``python -m pytest ARGS`` with the benchmark's interpreter."""
    return [PYTHON, "-m", "pytest", *args]


def expect(timed: Timed, codes: Iterable[int], what: str) -> Timed:
    """Raise :class:`BenchError` (with the output's tail) unless the exit code is expected."""
    if timed.returncode not in set(codes):
        tail = (timed.stdout[-3000:] + "\n" + timed.stderr[-2000:]).strip()
        raise BenchError(f"{what}: exit code {timed.returncode}\n{tail}")
    return timed


def median(values: Sequence[float]) -> float:
    """The median (the benchmark's one statistic)."""
    return float(statistics.median(values))


def side_by_side(
    reps: int,
    a: Callable[[], float],
    b: Callable[[], float],
    *more: Callable[[], float],
    warmup: bool = True,
) -> list[list[float]]:
    """Run ``a, b, a, b …`` (or ``a, b, c, a, b, c …``) ``reps`` times each.

    One untimed warm-up of each comes first (disk cache, bytecode, Codex's first start).
    Returns one list of timings per callable, in the order given.
    """
    arms = (a, b, *more)
    if warmup:
        for arm in arms:
            arm()
    results: list[list[float]] = [[] for _ in arms]
    for _ in range(reps):
        for arm, out in zip(arms, results, strict=True):
            out.append(arm())
    return results


def read_probe(path: Path) -> dict[str, Any]:
    """What ``bench_probe`` wrote at session end."""
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BenchError(f"the probe plugin wrote no readable {path}: {exc}") from None
    return data


def load_average() -> float | None:
    """The 1-minute load average (``None`` where the OS has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None
