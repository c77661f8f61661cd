"""pytest-advreview benchmark: the plugin's own cost, parallel speed-up, cache, scale.

Usage (from the project root, after ``scripts/setup``; ``scripts/bench`` does both)::

    .venv/bin/python benchmarks/run.py            # everything, about 8 minutes on 2 cores
    .venv/bin/python benchmarks/run.py --only 1,4 # some benchmarks
    .venv/bin/python benchmarks/run.py --quick    # one repetition of small sizes (smoke)

Each comparison runs side by side, A, B, A, B …, and reports medians: 5 repetitions, except
benchmark 2 (3 pairs of pytest runs of about 33 s and 2 pairs of shell runs of about 28 s,
so that everything stays under 10 minutes).  A global warm-up runs each kind of command
once first; the cheap benchmarks also warm up each arm.  The reviewer is the real Codex
CLI (``.tools/``) talking to the testing kit's scripted Responses-API server on 127.0.0.1
(instant unless a latency is set); the memory benchmark uses the kit's fake ``codex`` to
stream 50 MB of events, and benchmark 3 fills its cache with it.  Synthetic git
repositories are built in a temporary directory that is removed at the end.

The table is printed (ratios first, absolute medians for context) and written as JSON to
``benchmarks/results/latest.json`` (``--json`` to change it); the exit status is 1 when a
target is missed.  docs/performance.md explains the figures, ``NOTES.md``
how they were improved.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from _harness import (
    PROBE_OUT,
    PROBE_WATCH,
    PROJECT,
    BenchError,
    CpuLog,
    Workspace,
    expect,
    git,
    load_average,
    make_repo,
    median,
    pytest_cmd,
    read_probe,
    review_args,
    run_timed,
    side_by_side,
)

from pytest_advreview.constants import PINNED_CODEX_VERSION
from pytest_advreview.models import Operation
from pytest_advreview.options import DEFAULT_JOBS
from pytest_advreview.prompts import plan_prompt, with_marker
from pytest_advreview.runner import DispatchRequest
from pytest_advreview.runner.codex import CodexOptions, CodexReviewer
from pytest_advreview.testing import (
    Behaviour,
    FindingSpec,
    ScriptedServer,
    approved_review,
    codex_provider_args,
    find_codex,
    install_fake_codex,
    revise_review,
    shell_step,
)

RESULTS = PROJECT / "benchmarks" / "results"
#: Row 5's target: half of the plugin process's CPU per review on main before
#: --advreview-jobs (measured the same way: benchmarks/NOTES.md).
PER_REVIEW_CPU_TARGET_S = 0.5 * 0.0165
MB = 1024 * 1024


@dataclass
class Sizes:
    """Problem sizes and repetitions; ``--quick`` shrinks them to a smoke test."""

    reps: int = 5
    #: Benchmark 2's pytest arms (about 33 s a pair).
    heavy_reps: int = 3
    #: Benchmark 2's shell reference arms (about 28 s a pair).
    reference_reps: int = 2
    warmup: bool = True
    overhead_plans: int = 20
    #: Row 5: probed runs of 20 and of 5 plans.
    cpu_reps: int = 3
    parallel_plans: int = 8
    parallel_latency: float = 2.0
    #: Benchmark 3: two waves of reviews that each wait on the model.
    wave_plans: int = 16
    wave_jobs: int = 8
    wave_latency: float = 10.0
    wave_reps: int = 2
    cache_plans: int = 200
    scale_plans: int = 5000
    stream_mb: float = 50.0

    @classmethod
    def quick(cls) -> Sizes:
        return cls(
            reps=1,
            heavy_reps=1,
            reference_reps=1,
            warmup=False,
            overhead_plans=2,
            cpu_reps=1,
            parallel_plans=4,
            parallel_latency=0.5,
            wave_plans=4,
            wave_jobs=2,
            wave_latency=0.5,
            wave_reps=1,
            cache_plans=10,
            scale_plans=200,
            stream_mb=2.0,
        )


@dataclass
class Row:
    """One line of the results table."""

    id: str
    name: str
    #: The headline figure (a ratio, a difference, a count), as shown.
    result: str
    target: str
    met: bool | None
    #: Absolute medians for context: label -> value (seconds, MB, bytes).
    medians: dict[str, float] = field(default_factory=dict)
    reps: int = 0
    bound: str = ""
    details: dict[str, Any] = field(default_factory=dict)


# -- helpers ---------------------------------------------------------------------------------


def _fresh_cache(repo: Path) -> None:
    subprocess.run(["rm", "-rf", str(repo / ".pytest_cache")], check=True)


def _passed(timed_stdout: str, n: int) -> bool:
    return f"{n} passed" in timed_stdout


# -- the shell side: the runner's own `codex exec` commands -----------------------------


def codex_scripts(ws: Workspace, repo: Path, plans: list[Path], url: str, name: str) -> Path:
    """Write one shell script per plan with the exact command the runner launches.

    Same prompt body (:func:`plan_prompt` + :func:`with_marker`), same argv
    (:meth:`CodexReviewer.argv` with the plugin's default settings), stdin from the
    prompt file and stdout/stderr to files, as :func:`runner._process.launch` does.
    Returns the folder holding ``cmd-NNN.sh``; ``seq.sh`` runs them one after another,
    ``par4.sh`` four at a time.
    """
    reviewer = CodexReviewer(
        CodexOptions(
            executable=str(ws.codex),
            model="fake-model",
            config=tuple(codex_provider_args(url)),
        )
    )
    folder = ws.root / name
    commands: list[Path] = []
    for i, plan in enumerate(plans):
        work = folder / f"{i:03d}"
        work.mkdir(parents=True)
        review_id = f"1700000000-{i:08d}"
        body = with_marker(plan_prompt(plan.relative_to(repo).as_posix()), review_id, "000001")
        (work / "prompt.md").write_text(body, encoding="utf-8")
        request = DispatchRequest(
            review_id=review_id,
            repo_root=repo,
            operation=Operation.INITIAL,
            prompt_body=body,
            work_dir=work,
        )
        argv = reviewer.argv(request, work / "review.md", None)
        command = folder / f"cmd-{i:03d}.sh"
        command.write_text(
            f"cd {shlex.quote(str(repo))}\n"
            f"exec {shlex.join(argv)} < {shlex.quote(str(work / 'prompt.md'))}"
            f" > {shlex.quote(str(work / 'stdout.jsonl'))}"
            f" 2> {shlex.quote(str(work / 'stderr.txt'))}\n",
            encoding="utf-8",
        )
        commands.append(command)
    (folder / "seq.sh").write_text(
        "set -e\n" + "".join(f"bash {shlex.quote(str(c))}\n" for c in commands),
        encoding="utf-8",
    )
    listing = " ".join(shlex.quote(str(c)) for c in commands)
    (folder / "par4.sh").write_text(
        f"set -e\nprintf '%s\\n' {listing} | xargs -P 4 -n 1 bash\n", encoding="utf-8"
    )
    return folder


def _probed(argv: list[str], *, cwd: Path, env: dict[str, str], out: Path) -> dict[str, Any]:
    """One extra (untimed) run under ``bench_probe``: where its wall time went."""
    env = {**env, PROBE_OUT: str(out), "ADVREVIEW_BENCH_T0": repr(time.time())}
    t = expect(run_timed([*argv, "-p", "bench_probe"], cwd=cwd, env=env), [0], "probed run")
    data = read_probe(out)
    spent, line = data["spent"], data["timeline"]
    reviews = spent["items_s"] - spent["launch_s"] - spent["preflight_s"]
    return {
        "wall_s": round(t.seconds, 3),
        "start_and_collect_s": line["collected"],
        "codex_exec_s": spent["launch_s"],
        # The wait for the preflight's answer; the probe starts in the background at
        # session start, and its own run time is shown apart.
        "sandbox_preflight_wait_s": spent["preflight_s"],
        "sandbox_preflight_background_s": round(spent.get("background_s", 0.0), 4),
        "git_during_reviews_s": spent["git_in_items_s"],
        "other_review_work_s": round(reviews - spent["git_in_items_s"], 4),
        "finish_and_exit_s": round(t.seconds - line["items_done"], 4),
        "git_calls": spent["git_calls"],
    }


# -- 1. per-review overhead --------------------------------------------------------------


def bench_overhead(ws: Workspace, sizes: Sizes) -> list[Row]:
    """20 plans, instant server: the plugin (fresh cache, -n 0) vs a shell script of the
    same 20 ``codex exec`` commands with the same prompt bodies and the runner's argv."""
    cpu = CpuLog()
    n = sizes.overhead_plans
    repo = ws.root / "overhead"
    plans = make_repo(repo, n)
    script = {"rules": [], "default": {"message": approved_review()}}
    with ScriptedServer(script) as server:
        env = ws.env()
        loop_sh = codex_scripts(ws, repo, plans, server.url, "overhead-loop") / "seq.sh"
        plugin_argv = pytest_cmd(
            *review_args(ws.codex, server.url), "-n", "0", "--advreview-jobs=1"
        )
        default_argv = pytest_cmd(*review_args(ws.codex, server.url), "-n", "0")
        requests: list[int] = []

        def plugin() -> float:
            _fresh_cache(repo)
            ws.clear_sessions()
            before = len(server.response_requests)
            t = expect(run_timed(plugin_argv, cwd=repo, env=env), [0], "overhead: pytest")
            if not _passed(t.stdout, n):
                raise BenchError(f"overhead: expected {n} passed\n{t.stdout[-2000:]}")
            requests.append(len(server.response_requests) - before)
            return cpu("pytest", t)

        def shell_loop() -> float:
            ws.clear_sessions()
            t = expect(run_timed(["bash", str(loop_sh)], cwd=repo, env=env), [0], "overhead: loop")
            return cpu("loop", t)

        # No per-benchmark warm-up: the global one ran the same commands already.
        a, b = side_by_side(sizes.reps, plugin, shell_loop, warmup=False)
        if DEFAULT_JOBS != 1:
            plugin_argv, default_arm = default_argv, plugin_argv
            c, _ = side_by_side(sizes.reps, plugin, shell_loop, warmup=False)
            plugin_argv = default_arm
        else:
            c = a  # the default is one review at a time: the same runs
        _fresh_cache(repo)
        ws.clear_sessions()
        where = _probed(plugin_argv, cwd=repo, env=env, out=ws.root / "probe-overhead.json")
        # Row 5: the plugin process's own CPU per review, as the slope between a run of
        # n plans and one of a quarter of them: fixed costs (start, imports, schema
        # builds, exit) cancel out, and Codex and git are other processes.
        few = max(1, n // 4)
        small = ws.root / "overhead-small"
        make_repo(small, few)
        big_cpu: list[float] = []
        small_cpu: list[float] = []
        for _ in range(sizes.cpu_reps):
            for target, log in ((repo, big_cpu), (small, small_cpu)):
                _fresh_cache(target)
                ws.clear_sessions()
                probe = ws.root / "probe-cpu.json"
                _probed(plugin_argv, cwd=target, env=env, out=probe)
                log.append(read_probe(probe)["process_cpu_s"])
        slopes = [(b - s) / (n - few) for b, s in zip(big_cpu, small_cpu, strict=True)]
    ratio = median(a) / median(b)
    default_ratio = median(c) / median(b)
    per_review_cpu = median(slopes) if n > few else 0.0
    rows = [
        Row(
            id="1b",
            name=f"What a user gets: the same {n} plans with the default "
            f"`--advreview-jobs` ({DEFAULT_JOBS}) vs the same shell loop",
            result=f"{default_ratio:.3f}x",
            target="report",
            met=None,
            medians={"pytest_s": median(c), "loop_s": median(b)},
            reps=sizes.reps,
            bound=(
                "The default runs up to 4 reviews at a time, each in a worktree of its own "
                "(see docs/parallel.md, Reviews side by side)."
            ),
            details={"pytest_s": c, "loop_s": b},
        ),
        Row(
            id="5",
            name="CPU of the plugin process per review, Codex and git excluded "
            f"(slope between runs of {n} and {few} plans)",
            result=f"{per_review_cpu * 1000:.0f} ms",
            target=f"<= {PER_REVIEW_CPU_TARGET_S * 1000:.0f} ms (half of main's)",
            met=per_review_cpu <= PER_REVIEW_CPU_TARGET_S,
            medians={f"run_{n}_cpu_s": median(big_cpu), f"run_{few}_cpu_s": median(small_cpu)},
            reps=sizes.cpu_reps,
            bound="Reading the event stream, the prompt, the state entry and the reports of "
            "each review; pydantic validation of each wire model.",
            details={"big_cpu_s": big_cpu, "small_cpu_s": small_cpu, "slopes_s": slopes},
        ),
    ]
    return [
        Row(
            id="1",
            name=f"Per-review overhead: {n} plans, -n 0 --advreview-jobs=1, fresh cache vs a "
            f"shell loop of the same {n} `codex exec` through the npm wrapper",
            result=f"{ratio:.3f}x",
            target="<= 0.90x",
            met=ratio <= 0.90,
            medians={"pytest_s": median(a), "loop_s": median(b)},
            reps=sizes.reps,
            bound="Fixed costs that do not shrink with the reviews: pytest's own start and exit, "
            "the plugin's import, one sandbox preflight (`codex sandbox -- true`, started in "
            "the background at session start so that it overlaps collection); then three "
            "`git status` snapshots per review; with reviews of seconds the ratio tends to 1.",
            details={
                "pytest_s": a,
                "loop_s": b,
                "per_review_overhead_s": (median(a) - median(b)) / n,
                "model_requests_per_run": requests,
                "cpu_s": cpu.medians(),
                "where_the_pytest_run_went": where,
            },
        ),
        *rows,
    ]


# -- 2. parallel speed-up ----------------------------------------------------------------


def _review_runs(
    ws: Workspace, repo: Path, url: str, n: int, cpu: CpuLog, what: str
) -> Callable[..., float]:
    """One timed review run of ``repo``'s ``n`` plans from a fresh cache, all passing."""
    env = ws.env()

    def run(label: str, *extra: str) -> float:
        _fresh_cache(repo)
        ws.clear_sessions()
        argv = pytest_cmd(*review_args(ws.codex, url), *extra)
        t = expect(run_timed(argv, cwd=repo, env=env), [0], f"{what}: {label}")
        if not _passed(t.stdout, n):
            raise BenchError(f"{what}: expected {n} passed\n{t.stdout[-2000:]}")
        return cpu(label, t)

    return run


def bench_parallel(ws: Workspace, sizes: Sizes) -> Row:
    """8 plans, 2 s latency: --advreview-jobs=4 vs 1 in one process, and -n 4 (and a shell)."""
    cpu = CpuLog()
    n = sizes.parallel_plans
    repo = ws.root / "parallel"
    plans = make_repo(repo, n)
    script = {"rules": [], "default": {"message": approved_review()}}
    with ScriptedServer(script, latency=sizes.parallel_latency) as server:
        env = ws.env()
        shell = codex_scripts(ws, repo, plans, server.url, "parallel-shell")

        run = _review_runs(ws, repo, server.url, n, cpu, "parallel")

        def sh(name: str) -> float:
            ws.clear_sessions()
            t = run_timed(["bash", str(shell / name)], cwd=repo, env=env)
            return cpu(name, expect(t, [0], f"parallel: shell {name}"))

        a, b, x = side_by_side(
            sizes.heavy_reps,
            lambda: run("jobs4", "-n", "0", "--advreview-jobs=4"),
            lambda: run("jobs1", "-n", "0", "--advreview-jobs=1"),
            lambda: run("n4", "-n", "4", "--advreview-jobs=1"),
            warmup=False,
        )
        # The machine's own ceiling: the same Codex commands without pytest.
        c, d = side_by_side(
            sizes.reference_reps, lambda: sh("par4.sh"), lambda: sh("seq.sh"), warmup=False
        )
    ratio = median(a) / median(b)
    ceiling = median(c) / median(d)
    return Row(
        id="2",
        name=f"Parallel: {n} plans, {sizes.parallel_latency:g} s latency, one process "
        "`--advreview-jobs=4` vs `--advreview-jobs=1` (and `-n 4`)",
        result=f"{ratio:.3f}x; -n 4: {median(x) / median(b):.3f}x (Codex alone in a shell, "
        f"4 at a time vs 1: {ceiling:.3f}x)",
        target="<= 0.37x and faster than -n 4",
        met=ratio <= 0.37 and median(a) < median(x),
        medians={
            "jobs4_s": median(a),
            "jobs1_s": median(b),
            "n4_s": median(x),
            "shell4_s": median(c),
            "shell1_s": median(d),
        },
        reps=sizes.heavy_reps,
        bound="CPU: each `codex exec` burns about 0.7 CPU-seconds, so 4 at a time on 2 cores "
        "already stretch each 2 s wave (the shell ceiling); `-n 4` adds four worker starts "
        "(Python, pytest, the plugin: about 1 CPU-second each) on the same 2 cores.",
        details={
            "jobs4_s": a,
            "jobs1_s": b,
            "n4_s": x,
            "shell_4_at_a_time_s": c,
            "shell_one_at_a_time_s": d,
            "reference_reps": sizes.reference_reps,
            "cpu_s": cpu.medians(),
        },
    )


# -- 2b. what a user gets by default ------------------------------------------------------


#: Row 2b's target: the default's speed-up over one review at a time.
DEFAULT_PARALLEL_TARGET = 0.40


def bench_default(ws: Workspace, sizes: Sizes) -> Row:
    """8 plans, 2 s latency: the default options vs --advreview-jobs=1."""
    cpu = CpuLog()
    n = sizes.parallel_plans
    repo = ws.root / "default"
    make_repo(repo, n)
    script = {"rules": [], "default": {"message": approved_review()}}
    with ScriptedServer(script, latency=sizes.parallel_latency) as server:
        # No -n: xdist is installed, but a user who does not ask for it does not get it.
        run = _review_runs(ws, repo, server.url, n, cpu, "default")
        a, b = side_by_side(
            sizes.heavy_reps,
            lambda: run("default"),
            lambda: run("jobs1", "--advreview-jobs=1"),
            warmup=False,
        )
    ratio = median(a) / median(b)
    return Row(
        id="2b",
        name=f"What a user gets with default options: {n} plans, "
        f"{sizes.parallel_latency:g} s latency, vs `--advreview-jobs=1`",
        result=f"{ratio:.3f}x",
        target=f"<= {DEFAULT_PARALLEL_TARGET:.2f}x",
        met=ratio <= DEFAULT_PARALLEL_TARGET,
        medians={"default_s": median(a), "jobs1_s": median(b)},
        reps=sizes.heavy_reps,
        bound="As row 2 (up to 4 reviews at a time by default, `--advreview-jobs=auto`), plus "
        "a private git worktree per review on both sides (`--advreview-isolation=auto`).",
        details={"default_s": a, "jobs1_s": b, "cpu_s": cpu.medians()},
    )


# -- 3. waves ------------------------------------------------------------------------------


def bench_waves(ws: Workspace, sizes: Sizes) -> Row:
    """16 plans, 10 s latency, --advreview-jobs=8: two waves, against the ideal 2 x 10 s."""
    cpu = CpuLog()
    n, jobs, latency = sizes.wave_plans, sizes.wave_jobs, sizes.wave_latency
    repo = ws.root / "waves"
    make_repo(repo, n)
    script = {"rules": [], "default": {"message": approved_review()}}
    with ScriptedServer(script, latency=latency) as server:
        env = ws.env()

        def run() -> float:
            _fresh_cache(repo)
            ws.clear_sessions()
            argv = pytest_cmd(*review_args(ws.codex, server.url), f"--advreview-jobs={jobs}")
            t = expect(run_timed(argv, cwd=repo, env=env), [0], "waves")
            if not _passed(t.stdout, n):
                raise BenchError(f"waves: expected {n} passed\n{t.stdout[-2000:]}")
            return cpu("waves", t)

        walls = [run() for _ in range(sizes.wave_reps)]
    ideal = -(-n // jobs) * latency
    ratio = median(walls) / ideal
    return Row(
        id="3",
        name=f"Waves: {n} plans, {latency:g} s latency, `--advreview-jobs={jobs}`, wall vs "
        f"the ideal of {-(-n // jobs)} waves ({ideal:g} s)",
        result=f"{ratio:.3f}x",
        target="<= 1.15x",
        met=ratio <= 1.15,
        medians={"wall_s": median(walls), "ideal_s": ideal},
        reps=sizes.wave_reps,
        bound="pytest's start and collection, then each wave's Codex starts (about 0.7 "
        f"CPU-seconds each, {jobs} at once on the machine's cores) before the model's "
        "latency begins; the next wave starts as soon as the first item has its result.",
        details={"wall_s": walls, "cpu_s": cpu.medians()},
    )


# -- 6. cache ----------------------------------------------------------------------------


def _approving_fake(ws: Workspace) -> Path:
    """The testing kit's fake ``codex``, approving every plan, behind a tiny wrapper.

    The wrapper answers the sandbox preflight (``codex sandbox … -- true``) itself,
    which the fake does not implement, so the default settings (workspace-write) apply.
    """
    fake = install_fake_codex(ws.root / "fake-codex-approve", [Behaviour(review=approved_review())])
    wrapper = ws.root / "fake-codex-approve" / "codex-with-sandbox"
    target = shlex.quote(str(fake.path))
    wrapper.write_text(
        f'#!/bin/sh\nif [ "$1" = sandbox ]; then exit 0; fi\nexec {target} "$@"\n',
        encoding="utf-8",
    )
    wrapper.chmod(0o755)
    return wrapper


def bench_cache(ws: Workspace, sizes: Sizes) -> Row:
    """200 approved plans: run 2 makes zero reviewer calls; wall vs --collect-only."""
    cpu = CpuLog()
    n = sizes.cache_plans
    repo = ws.root / "cache"
    make_repo(repo, n)
    script = {"rules": [], "default": {"message": approved_review()}}
    with ScriptedServer(script) as server:
        env = ws.env()
        # Run 1 only fills the cache: the kit's fake codex approves 200 plans in seconds
        # (the real one needs about 0.7 CPU-seconds a review).  Run 2 uses the real CLI
        # and the server: any reviewer call would show up there.
        # The executable's path is part of a verdict's key: both runs name the same
        # path, a link that points at the fake for run 1 and at the real CLI for run 2.
        fake = _approving_fake(ws)
        codex = ws.root / "codex-for-cache" / "codex"
        codex.parent.mkdir()
        codex.symlink_to(fake)
        run1 = pytest_cmd(*review_args(codex, server.url), "-n", "2", "-q")
        first = run_timed(run1, cwd=repo, env=env)
        if not _passed(expect(first, [0], "cache: run 1").stdout, n):
            raise BenchError(f"cache: run 1 should pass {n} plans\n{first.stdout[-2000:]}")
        codex.unlink()
        codex.symlink_to(ws.codex.resolve())
        args = review_args(codex, server.url)
        calls: list[int] = []

        def second() -> float:
            before = len(server.response_requests)
            t = expect(run_timed(pytest_cmd(*args, "-q"), cwd=repo, env=env), [0], "cache: run 2")
            if not _passed(t.stdout, n) or "cached (passed)" not in t.stdout:
                raise BenchError(f"cache: run 2 expected {n} cached passes\n{t.stdout[-2000:]}")
            calls.append(len(server.response_requests) - before)
            return cpu("run2", t)

        def collect() -> float:
            argv = pytest_cmd(*args, "--collect-only", "-q")
            return cpu("collect_only", expect(run_timed(argv, cwd=repo, env=env), [0], "collect"))

        # pytest's own price for running n items: no-op items, run vs --collect-only.
        floor = pytest_cmd("-q", "-p", "no:advreview", "-p", "bench_floor")

        def floor_run() -> float:
            return cpu("floor_run", expect(run_timed(floor, cwd=repo, env=env), [0], "floor run"))

        def floor_collect() -> float:
            t = run_timed([*floor, "--collect-only"], cwd=repo, env=env)
            return cpu("floor_collect", expect(t, [0], "floor collect"))

        a, b, c, d = side_by_side(
            sizes.reps, second, collect, floor_run, floor_collect, warmup=sizes.warmup
        )
    ratio = median(a) / median(b)
    floor_ratio = median(c) / median(d)
    zero = all(x == 0 for x in calls)
    return Row(
        id="6",
        name=f"Cache: {n} approved plans, run 2 vs `--collect-only` (same repo)",
        result=f"{ratio:.3f}x, {max(calls)} reviewer calls "
        f"(pytest's own run vs collect of {n} no-op items: {floor_ratio:.3f}x)",
        target="<= 1.50x, 0 calls",
        met=ratio <= 1.5 and zero,
        medians={
            "run2_s": median(a),
            "collect_only_s": median(b),
            "noop_run_s": median(c),
            "noop_collect_s": median(d),
        },
        reps=sizes.reps,
        bound="Collection with one cache entry read per plan is the floor; run 2 adds "
        "pytest's per-item protocol (setup, call, teardown, three reports) and, per plan, "
        "one read and hash, a verdict record and the summary line.",
        details={
            "run2_s": a,
            "collect_only_s": b,
            "noop_run_s": c,
            "noop_collect_s": d,
            "reviewer_calls_run2": calls,
            "run1_fake_codex_s": round(first.seconds, 2),
            "cpu_s": cpu.medians(),
        },
    )


# -- 4. collection at scale --------------------------------------------------------------


def bench_scale(ws: Workspace, sizes: Sizes) -> list[Row]:
    """5,000 plans: --collect-only with and without the plugin; scope changed hashes 3."""
    cpu = CpuLog()
    n = sizes.scale_plans
    repo = ws.root / "scale"
    plans = make_repo(repo, n, spread=True)
    rows: list[Row] = []
    script = {"rules": [], "default": {"message": approved_review()}}
    with ScriptedServer(script) as server:
        env = ws.env()
        args = review_args(ws.codex, server.url)
        without = pytest_cmd("--collect-only", "-q", "-p", "no:advreview")

        def plugin_collect() -> float:
            t = expect(
                run_timed(pytest_cmd(*args, "--collect-only", "-q"), cwd=repo, env=env),
                [0],
                "scale: --collect-only",
            )
            if f"{n} tests collected" not in t.stdout:
                raise BenchError(f"scale: expected {n} items\n{t.stdout[-1500:]}")
            return cpu("plugin", t)

        def bare_collect() -> float:
            # No test files: pytest walks the same tree and collects nothing (exit 5).
            return cpu("no_plugin", expect(run_timed(without, cwd=repo, env=env), [5], "no plugin"))

        def floor_collect() -> float:
            t = expect(run_timed(floor, cwd=repo, env=env), [0], "scale: floor collector")
            if f"{n} tests collected" not in t.stdout:
                raise BenchError(f"scale: the floor collector found\n{t.stdout[-1500:]}")
            return cpu("floor", t)

        floor = pytest_cmd("--collect-only", "-q", "-p", "no:advreview", "-p", "bench_floor")
        a, b, f = side_by_side(
            sizes.reps, plugin_collect, bare_collect, floor_collect, warmup=sizes.warmup
        )
        delta = median(a) - median(b)
        floor_delta = median(f) - median(b)
        # Paired: each repetition's plugin run minus the floor run next to it.
        above = median([p - q for p, q in zip(a, f, strict=True)])
        rows.append(
            Row(
                id="4a",
                name=f"Collection: {n:,} plans, scope all, `--collect-only`: extra over "
                "`-p no:advreview` minus pytest's floor for the same nodes",
                result=f"+{above:.2f} s (extra +{delta:.2f} s, floor +{floor_delta:.2f} s)",
                target="<= +0.30 s",
                met=above <= 0.3,
                medians={
                    "plugin_s": median(a),
                    "no_plugin_s": median(b),
                    "floor_s": median(f),
                    "plugin_minus_floor_s": above,
                },
                reps=sizes.reps,
                bound="pytest's own cost of one file node and one item per plan (the floor: "
                "a minimal collector of the same files) plus one `git ls-files`, the "
                "plugin's import and one state lookup per plan; no plan file is read.",
                details={"plugin_s": a, "no_plugin_s": b, "floor_s": f, "cpu_s": cpu.medians()},
            )
        )

        # Scope changed: commit the ini switch, then change 3 plans in the work tree.
        ini = repo / "pytest.ini"
        ini.write_text("[pytest]\nadvreview_plan_scope = changed\n", encoding="utf-8")
        git(repo, "commit", "-qam", "scope changed")
        changed = [plans[7], plans[n // 2], plans[-3]]
        for plan in changed:
            plan.write_text(plan.read_text(encoding="utf-8") + "\n5. Tell finance.\n")

        def changed_collect() -> float:
            t = expect(
                run_timed(pytest_cmd(*args, "--collect-only", "-q"), cwd=repo, env=env),
                [0],
                "scale: scope changed --collect-only",
            )
            if "3 tests collected" not in t.stdout:
                raise BenchError(f"scale: expected 3 items\n{t.stdout[-1500:]}")
            return cpu("changed", t)

        c, d = side_by_side(sizes.reps, changed_collect, bare_collect, warmup=sizes.warmup)
        # The proof: a real review run of the 3 changed plans under the probe plugin.
        probe = ws.root / "probe-scale.json"
        plans_dir = str((repo / "docs" / "plans").resolve())
        proof = expect(
            run_timed(
                pytest_cmd(*args, "-p", "bench_probe", "--advreview-diff=none"),
                cwd=repo,
                env=ws.env(**{PROBE_OUT: str(probe), PROBE_WATCH: plans_dir}),
            ),
            [0],
            "scale: scope changed review run",
        )
        data = read_probe(probe)
    wanted = {str(p.resolve()) for p in changed}
    hashed = set(data["plan_hash"])
    opened = set(data["opened"])
    others_hashed = len(hashed - wanted)
    others_opened = len(opened - wanted)
    ok = (
        len(data["items"]) == 3
        and _passed(proof.stdout, 3)
        and hashed == wanted
        and others_opened == 0
    )
    rows.append(
        Row(
            id="4b",
            name=f"Collection: scope changed, 3 of {n:,} plans changed",
            result=f"{len(data['items'])} items; other plans hashed {others_hashed}, "
            f"opened {others_opened}; +{median(c) - median(d):.2f} s",
            target="3 items, 0 of the others hashed",
            met=ok,
            medians={"plugin_s": median(c), "no_plugin_s": median(d)},
            reps=sizes.reps,
            bound="`git status` + `git diff --name-only` pick the 3 changed files; only "
            "they are read and hashed (counted by an audit hook in a probe plugin during "
            "a real review run).",
            details={
                "plugin_s": c,
                "no_plugin_s": d,
                "items": data["items"],
                "plan_hash_calls": len(data["plan_hash"]),
                "files_opened_under_docs_plans": sorted(opened),
                "open_calls_under_docs_plans": len(data["opened"]),
                "cpu_s": cpu.medians(),
            },
        )
    )
    return rows


# -- 7. memory ---------------------------------------------------------------------------


def bench_memory(ws: Workspace, sizes: Sizes) -> Row:
    """Peak RSS of the pytest process: a 50 MB JSONL stream vs a 1 KB one."""
    repo = ws.root / "memory"
    make_repo(repo, 1)
    fake = install_fake_codex(ws.root / "fake-codex")
    probe = ws.root / "probe-memory.json"
    env = ws.env(**{PROBE_OUT: str(probe)})
    # The fake has no `codex sandbox` probe: read-only skips the workspace-write preflight.
    args = review_args(fake.path, "http://127.0.0.1:9/v1", "--advreview-sandbox=read-only")
    argv = pytest_cmd(*args, "-p", "bench_probe")

    def run(stream_mb: float) -> float:
        fake.set_behaviours([Behaviour(review=approved_review(), stream_mb=stream_mb)])
        _fresh_cache(repo)
        t = expect(run_timed(argv, cwd=repo, env=env), [0], f"memory: {stream_mb} MB")
        if not _passed(t.stdout, 1):
            raise BenchError(f"memory: expected 1 passed\n{t.stdout[-2000:]}")
        return read_probe(probe)["maxrss_kb"] / 1024.0

    a, b = side_by_side(
        sizes.reps, lambda: run(sizes.stream_mb), lambda: run(1 / 1024), warmup=sizes.warmup
    )
    delta = median(a) - median(b)
    return Row(
        id="7",
        name=f"Memory: peak RSS of pytest, {sizes.stream_mb:g} MB JSONL stream vs 1 KB",
        result=f"+{delta:.1f} MB",
        target="<= +20 MB",
        met=delta <= 20,
        medians={"big_stream_mb": median(a), "small_stream_mb": median(b)},
        reps=sizes.reps,
        bound="The stream goes to a file and is read one line at a time, with a substring "
        "pre-filter before any JSON parsing; nothing keeps the events.",
        details={"big_stream_rss_mb": a, "small_stream_rss_mb": b},
    )


# -- 8. tokens ---------------------------------------------------------------------------

_HIGH = FindingSpec("high", "Rollback restores a stale backup", section="Rollback")


def bench_tokens(ws: Workspace, sizes: Sizes) -> Row:
    """Bytes the model server receives for round 2: resume vs fresh-exec; cached rerun."""
    figures: dict[str, Any] = {}
    for mode in ("resume", "fresh-exec"):
        repo = ws.root / f"tokens-{mode}"
        (plan,) = make_repo(repo, 1)
        name = plan.name
        script = {
            "rules": [
                {"match": "## Previous review rounds", "steps": [{"message": approved_review()}]},
                {
                    "match": name,
                    "in": "body",
                    "steps": [{"message": revise_review(_HIGH)}, {"message": approved_review()}],
                },
            ],
            "default": {"http_status": 400, "body": {"error": {"message": "unscripted"}}},
        }
        ws.clear_sessions()
        with ScriptedServer(script) as server:
            env = ws.env()
            argv = pytest_cmd(*review_args(ws.codex, server.url, "--advreview-diff=none"))
            expect(run_timed(argv, cwd=repo, env=env), [1], f"tokens {mode}: round 1")
            round1 = [r.raw_size for r in server.response_requests]
            if mode == "fresh-exec":
                ws.clear_sessions()  # the thread's rollout is gone: resume is impossible
            plan.write_text(
                plan.read_text(encoding="utf-8") + "\n## Rollback test\nRestore in staging.\n"
            )
            t = expect(run_timed(argv, cwd=repo, env=env), [0], f"tokens {mode}: round 2")
            if not _passed(t.stdout, 1):
                raise BenchError(f"tokens {mode}: round 2 should pass\n{t.stdout[-2000:]}")
            round2 = [r.raw_size for r in server.response_requests][len(round1) :]
            threads = [r.thread_id for r in server.response_requests]
            expect(run_timed(argv, cwd=repo, env=env), [0], f"tokens {mode}: cached rerun")
            rerun = [r.raw_size for r in server.response_requests][len(round1) + len(round2) :]
        same_thread = threads[-1] == threads[0]
        if same_thread != (mode == "resume"):
            raise BenchError(f"tokens {mode}: round 2 ran on the wrong thread ({threads})")
        figures[mode] = {
            "round1_bytes": sum(round1),
            "round2_bytes": sum(round2),
            "round2_requests": len(round2),
            "cached_rerun_bytes": sum(rerun),
            "cached_rerun_requests": len(rerun),
        }
    resume = figures["resume"]["round2_bytes"]
    fresh = figures["fresh-exec"]["round2_bytes"]
    cached = max(f["cached_rerun_bytes"] for f in figures.values())
    return Row(
        id="8",
        name="Tokens: bytes the model server received for round 2; cached rerun",
        result=f"resume {resume:,} B, fresh-exec {fresh:,} B ({resume / fresh:.2f}x); "
        f"cached rerun {cached} B",
        target="report; cached rerun 0 B",
        met=cached == 0,
        medians={"resume_bytes": resume, "fresh_exec_bytes": fresh, "cached_bytes": cached},
        reps=1,
        bound="Resume re-sends the whole thread (Codex keeps no server-side state); "
        "fresh-exec sends Codex's base prompt plus the plan, earlier reviews and decisions; "
        "an unchanged plan sends nothing.",
        details=figures,
    )


#: The change of benchmark 9: 20 files of 60 lines on a branch, then a one-file push.
_CHANGE_FILES = 20
_CHANGE_LINES = 60
#: The whole change, as a reviewer that was not shown what changed reads it again.
_WHOLE_DIFF = "git --no-pager diff main...HEAD"


def _code_change(repo: Path) -> None:
    make_repo(repo, 0)
    git(repo, "checkout", "-q", "-b", "feature")
    for n in range(_CHANGE_FILES):
        body = "".join(
            f"def step_{n}_{k}(rows):\n    return [r for r in rows if r.id % {k + 2} == 0]\n"
            for k in range(_CHANGE_LINES // 2)
        )
        (repo / "src").mkdir(exist_ok=True)
        (repo / "src" / f"module_{n:02d}.py").write_text(body, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the feature")


def bench_interdiff(ws: Workspace, sizes: Sizes) -> Row:
    """Bytes and requests the model server receives for round 2 after a one-file push.

    The scripted reviewer behaves as a reviewer would: shown the interdiff, it answers;
    not shown what changed, it runs the whole branch diff first, then answers.  Run on an
    older build (``PYTHONPATH=<its src>``) the same row measures that build.
    """
    repo = ws.root / "interdiff"
    _code_change(repo)
    high = FindingSpec("high", "Filter drops rows", file="src/module_03.py", lines=(3, 4))
    script = {
        "rules": [
            {"match": "<interdiff>", "steps": [{"message": approved_review()}]},
            {
                "match": "I've evaluated the findings.",
                "steps": [shell_step(_WHOLE_DIFF, "whole"), {"message": approved_review()}],
            },
            {"match": "Review the code changes", "steps": [{"message": revise_review(high)}]},
        ],
        "default": {"http_status": 400, "body": {"error": {"message": "unscripted"}}},
    }
    ws.clear_sessions()
    with ScriptedServer(script) as server:
        env = ws.env()
        argv = pytest_cmd(*review_args(ws.codex, server.url, "--advreview-diff=branch"))
        expect(run_timed(argv, cwd=repo, env=env), [1], "interdiff: round 1")
        round1 = [r.raw_size for r in server.response_requests]
        path = repo / "src" / "module_03.py"
        path.write_text(path.read_text(encoding="utf-8").replace("% 3 ==", "% 3 !="))
        git(repo, "commit", "-q", "-am", "fix module 3")
        t = expect(run_timed(argv, cwd=repo, env=env), [0], "interdiff: round 2")
        if not _passed(t.stdout, 1):
            raise BenchError(f"interdiff: round 2 should pass\n{t.stdout[-2000:]}")
        round2 = [r.raw_size for r in server.response_requests][len(round1) :]
        prompt = server.response_requests[len(round1)].last_user_text
    shown = "interdiff" if "<interdiff>" in prompt else "no interdiff"
    return Row(
        id="9",
        name=f"Interdiff: round 2 after a 1-file push to a {_CHANGE_FILES}-file change",
        result=f"{sum(round2):,} B in {len(round2)} request(s) ({shown} in the prompt)",
        target="report; against main b1b99cb (PYTHONPATH=its src)",
        met=None,
        medians={"round2_bytes": sum(round2), "round1_bytes": sum(round1)},
        reps=1,
        bound="Resume re-sends the whole thread; a reviewer shown the interdiff needs no "
        "tool call, one that must find what changed runs the whole diff and sends its "
        "output back in a second request.",
        details={"round1": round1, "round2": round2, "shown": shown},
    )


# -- main --------------------------------------------------------------------------------


# -- 10. an unreachable model -------------------------------------------------------------


#: Row 10's target: the error comes within the connect budget plus pytest's and Codex's start.
UNREACHABLE_SLACK_S = 15.0


def bench_unreachable(ws: Workspace, sizes: Sizes) -> Row:
    """One plan, the provider on a closed loopback port, default options: time to the error."""
    import socket

    from pytest_advreview.options import default

    repo = ws.root / "unreachable"
    make_repo(repo, 1)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    # Codex's own retries as a user has them (retries=True), every plugin option default.
    argv = pytest_cmd(
        "--adversarial-review",
        f"--advreview-codex={ws.codex}",
        "--advreview-model=fake-model",
        *[f"--advreview-codex-config={v}" for v in codex_provider_args(url, retries=True)],
    )
    attempt = float(default("timeout"))
    budget = float(default("connect_timeout"))
    walls = []
    for _ in range(max(1, sizes.reps // 5)):
        _fresh_cache(repo)
        ws.clear_sessions()
        t = expect(run_timed(argv, cwd=repo, env=ws.env(), timeout=attempt), [1], "unreachable")
        if "cannot reach the model at" not in t.stdout:
            raise BenchError(f"unreachable: no 'cannot reach' error\n{t.stdout[-2000:]}")
        walls.append(t.seconds)
    wall = median(walls)
    return Row(
        id="10",
        name="An unreachable model (closed 127.0.0.1 port), default options: time to the "
        f"item's error, vs the attempt timeout ({attempt:g} s)",
        result=f"{wall / attempt:.3f}x",
        target=f"<= {(budget + UNREACHABLE_SLACK_S) / attempt:.3f}x "
        f"(connect budget {budget:g} s + {UNREACHABLE_SLACK_S:g} s)",
        met=wall <= budget + UNREACHABLE_SLACK_S,
        medians={"error_s": wall, "attempt_timeout_s": attempt},
        reps=len(walls),
        bound="The connect budget (`advreview_connect_timeout`, 30 s): Codex reports its "
        "failed connections about 4, 12 and 25 s in and never gives up on its own; the "
        "attempt is ended once the budget is spent and is not retried. Before: two attempt "
        "timeouts (1200 s) per item, four with a fallback.",
        details={"error_s": walls},
    )


# -- 11. the eval ------------------------------------------------------------------------


def bench_eval(ws: Workspace, sizes: Sizes) -> list[Row]:
    """The bundled eval corpus: re-scoring from kept transcripts; the eval against an
    instant server with default options vs as many plain plan reviews."""
    from pytest_advreview.eval import BUILTIN_CORPUS
    from pytest_advreview.eval.case import load_corpus

    cpu = CpuLog()
    cases = len(load_corpus(BUILTIN_CORPUS).cases)
    plain = ws.root / "eval-plain"
    make_repo(plain, cases)
    evals = ws.root / "eval-runs"
    make_repo(evals, 0)
    transcripts = ws.root / "eval-transcripts"
    script = {"rules": [], "default": {"message": approved_review()}}
    with ScriptedServer(script) as server:
        env = ws.env()
        base = review_args(ws.codex, server.url)

        def eval_run(label: str, *extra: str) -> float:
            ws.clear_sessions()
            shutil.rmtree(transcripts, ignore_errors=True)
            argv = pytest_cmd(*base, "--advreview-eval=builtin", *extra)
            # The approving reviewer misses every seeded defect: those items fail (1).
            t = expect(run_timed(argv, cwd=evals, env=env), [1], f"eval: {label}")
            if f"{cases} items" not in t.stdout and f"collected {cases}" not in t.stdout:
                raise BenchError(f"eval: expected {cases} items\n{t.stdout[-2000:]}")
            return cpu(label, t)

        run = _review_runs(ws, plain, server.url, cases, cpu, "eval-plain")
        a, b = side_by_side(
            sizes.heavy_reps,
            lambda: eval_run("eval", f"--advreview-eval-transcripts={transcripts}"),
            lambda: run("plain"),
            warmup=False,
        )
        # Kept transcripts: one run fills them, the timed ones only re-score.
        argv = pytest_cmd(
            *base, "--advreview-eval=builtin", f"--advreview-eval-transcripts={transcripts}"
        )
        expect(run_timed(argv, cwd=evals, env=env), [1], "eval: fill transcripts")

        def rescore() -> float:
            t = run_timed([*argv, "--advreview-eval-rescore"], cwd=evals, env=env)
            expect(t, [1], "eval: re-score")
            if "re-scored from kept transcripts: " + str(cases) not in t.stdout:
                raise BenchError(f"eval: not every case re-scored\n{t.stdout[-2000:]}")
            return cpu("rescore", t)

        r = [rescore() for _ in range(sizes.reps)]
    ratio = median(a) / median(b)
    return [
        Row(
            id="11",
            name=f"Eval of the bundled corpus ({cases} cases), instant server, default "
            f"options, vs {cases} plain plan reviews",
            result=f"{median(a):.1f} s; {ratio:.2f}x",
            target="—",
            met=None,
            medians={"eval_s": median(a), "plain_s": median(b)},
            reps=sizes.heavy_reps,
            bound="Per case the eval builds a scratch repository (git init, a commit or two, "
            "git apply) and a review worktree; the plain reviews share one repository.",
            details={"eval_s": a, "plain_s": b, "cpu_s": cpu.medians()},
        ),
        Row(
            id="11b",
            name=f"Re-scoring the bundled corpus ({cases} cases) from kept transcripts",
            result=f"{median(r):.2f} s",
            target="—",
            met=None,
            medians={"rescore_s": median(r)},
            reps=sizes.reps,
            bound="No reviewer starts: pytest's start, reading the corpus and the transcripts.",
            details={"rescore_s": r},
        ),
    ]


def warm_up(ws: Workspace) -> None:
    """Run each kind of command once, untimed: bytecode, page cache, Codex's first start."""
    repo = ws.root / "warm-up"
    make_repo(repo, 2)
    with ScriptedServer({"rules": [], "default": {"message": approved_review()}}) as server:
        env = ws.env()
        argv = pytest_cmd(*review_args(ws.codex, server.url))
        expect(run_timed(argv, cwd=repo, env=env), [0], "warm-up: review")
        expect(run_timed([*argv, "-n", "2"], cwd=repo, env=env), [0], "warm-up: xdist")
        bare = pytest_cmd("--collect-only", "-q", "-p", "no:advreview")
        expect(run_timed(bare, cwd=repo, env=env), [5], "warm-up: no plugin")
    ws.clear_sessions()


BENCHES: dict[str, Callable[[Workspace, Sizes], Row | list[Row]]] = {
    "1": bench_overhead,  # rows 1, 1b and 5
    "2": bench_parallel,
    "2b": bench_default,
    "3": bench_waves,
    "4": bench_scale,
    "6": bench_cache,
    "7": bench_memory,
    "8": bench_tokens,
    "9": bench_interdiff,
    "10": bench_unreachable,
    "11": bench_eval,  # rows 11 and 11b
}


def _codex_version(codex: Path) -> str:
    proc = subprocess.run([str(codex), "--version"], capture_output=True, text=True, check=False)
    return proc.stdout.strip() or f"unknown (rc {proc.returncode})"


def render(rows: list[Row]) -> str:
    """The results as a markdown table: ratios first, then the absolute medians."""
    lines = [
        "| # | Benchmark | Result | Target | Met | Medians (A / B) | n |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        met = "—" if row.met is None else ("yes" if row.met else "**no**")
        shown = " / ".join(_fmt(k, v) for k, v in row.medians.items())
        lines.append(
            f"| {row.id} | {row.name} | {row.result} | {row.target} | {met} | {shown} "
            f"| {row.reps} |"
        )
    return "\n".join(lines)


def _fmt(key: str, value: float) -> str:
    label = key.rsplit("_", 1)[0]
    if key.endswith("_s"):
        return f"{label} {value:.2f} s"
    if key.endswith("_mb"):
        return f"{label} {value:.1f} MB"
    return f"{label} {value:,.0f} B"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one repetition, small sizes")
    parser.add_argument(
        "--only", default="", help="comma-separated benchmark ids (1, 2, 2b, 3, 4, 6, 7, 8, 9, 10)"
    )
    parser.add_argument("--reps", type=int, default=None, help="repetitions per side")
    parser.add_argument(
        "--json", type=Path, default=RESULTS / "latest.json", help="where to write the JSON"
    )
    opts = parser.parse_args(argv)
    sizes = Sizes.quick() if opts.quick else Sizes()
    if opts.reps is not None:
        sizes.reps = sizes.heavy_reps = sizes.reference_reps = opts.reps
    chosen = [b.strip() for b in opts.only.split(",") if b.strip()] or list(BENCHES)
    unknown = [b for b in chosen if b not in BENCHES]
    if unknown:
        parser.error(f"unknown benchmark id(s) {unknown}; choose from {list(BENCHES)}")
    # The pinned CLI that scripts/setup installs, not whatever `codex` is on PATH.
    local = PROJECT / ".tools" / "node_modules" / ".bin" / "codex"
    codex = local if local.exists() else find_codex(PROJECT)
    if codex is None:
        print("bench: the Codex CLI is not installed; run scripts/setup first", file=sys.stderr)
        return 2
    version = _codex_version(codex)
    if version != f"codex-cli {PINNED_CODEX_VERSION}":
        print(f"bench: warning: {codex} is {version!r}, not {PINNED_CODEX_VERSION}", flush=True)
    started = time.perf_counter()
    load_before = load_average()
    rows: list[Row] = []
    timings: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="advreview-bench-") as tmp:
        ws = Workspace(Path(tmp), codex)
        if not opts.quick:
            print("bench: warm-up (one review, one xdist run, one bare pytest)", flush=True)
            warm_up(ws)
        for bench_id in chosen:
            t0 = time.perf_counter()
            doc = (BENCHES[bench_id].__doc__ or "").splitlines()[0]
            print(f"bench {bench_id}: {doc}", flush=True)
            made = BENCHES[bench_id](ws, sizes)
            rows.extend(made if isinstance(made, list) else [made])
            timings[bench_id] = round(time.perf_counter() - t0, 1)
            print(f"bench {bench_id}: done in {timings[bench_id]:.0f} s", flush=True)
    total = time.perf_counter() - started
    table = render(rows)
    print()
    print(table)
    print(
        f"\nbench: {total:.0f} s in all; load average {load_before} before, "
        f"{load_average()} after; {os.cpu_count()} CPUs"
    )
    result = {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "codex": version,
            "load_average_before": load_before,
            "load_average_after": load_average(),
        },
        "quick": opts.quick,
        "total_s": round(total, 1),
        "bench_s": timings,
        "table": table,
        "rows": [asdict(r) for r in rows],
    }
    opts.json.parent.mkdir(parents=True, exist_ok=True)
    opts.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"bench: wrote {opts.json}")
    return 0 if all(r.met is not False for r in rows) else 1


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        raise SystemExit(3) from None
