"""A tiny pytest plugin the benchmark loads with ``-p bench_probe`` (never in timed runs).

At the end of the run it writes JSON to the file named by ``$ADVREVIEW_BENCH_PROBE``:

``maxrss_kb``
    the peak RSS of this pytest process: ``VmHWM`` of ``/proc/self/status`` where there is
    one, else ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` (children, such as the
    reviewer, are not included).  Not ``ru_maxrss`` on Linux: it keeps the peak of the
    process before its ``exec``, the fork of the benchmark's own Python, so it measured
    the benchmark (79.6 MB, then 146 MB as the benchmark grew), not pytest.
``plan_hash``
    the paths passed to :func:`pytest_advreview.cachekey.plan_hash` (the per-plan content
    hash), in call order.
``snapshot_hash``
    the paths hashed by the mutation snapshots (``mutation._hash_path``).
``opened``
    with ``$ADVREVIEW_BENCH_WATCH`` set to a directory: every file below it that this
    process opened (a Python audit hook on the ``open`` event, which covers ``open``,
    ``io.open``, ``Path.open`` and ``os.open``), in call order.
``items``
    node ids of the collected items.
``process_cpu_s``
    the CPU seconds of this pytest process (every thread, no child process) at the end.
``timeline`` and ``spent``
    where the wall time went: seconds since ``$ADVREVIEW_BENCH_T0`` (the parent's
    ``time.time()`` just before it started pytest) at configure, after collection, when
    the last item finished and at unconfigure; and the seconds spent inside the
    reviewer launches, the sandbox preflight and git, in total and per phase.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import pytest

_OUT = os.environ.get("ADVREVIEW_BENCH_PROBE")
_WATCH = os.environ.get("ADVREVIEW_BENCH_WATCH")
_T0 = float(os.environ.get("ADVREVIEW_BENCH_T0") or time.time())
_seen: dict[str, list[str]] = {"plan_hash": [], "snapshot_hash": [], "opened": []}
_items: list[str] = []
_timeline: dict[str, float] = {}
_spent: dict[str, float] = {
    "launch_s": 0.0,
    "preflight_s": 0.0,
    "git_s": 0.0,
    "git_calls": 0,
    "git_in_items_s": 0.0,
    "items_s": 0.0,
    "background_s": 0.0,
}
_in_items = False


def _mark(name: str) -> None:
    _timeline[name] = round(time.time() - _T0, 4)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" or not _WATCH or not args:
        return
    target = args[0]
    if isinstance(target, (str, bytes, os.PathLike)):
        name = os.fsdecode(target)
        if name.startswith(_WATCH):
            _seen["opened"].append(name)


def _count(module: Any, attr: str, bucket: str) -> None:
    original = getattr(module, attr)

    def counting(path: Path) -> Any:
        _seen[bucket].append(str(path))
        return original(path)

    setattr(module, attr, counting)


def _timed(original: Callable[..., Any], key: str, *, git: bool = False) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent = time.perf_counter() - started
            if threading.current_thread() is not threading.main_thread():
                # The sandbox preflight runs in the background from session start; only
                # the time the main thread waits for it is on the run's critical path.
                _spent["background_s"] += spent
            else:
                _record(key, spent, git=git)

    return timed


def _record(key: str, spent: float, *, git: bool) -> None:
    _spent[key] += spent
    if git:
        _spent["git_calls"] += 1
        if _in_items:
            _spent["git_in_items_s"] += spent


def pytest_configure(config: pytest.Config) -> None:
    """Start counting (audit hook and wrappers); only when the output file is named."""
    _mark("configure")
    if not _OUT:
        return
    from pytest_advreview import cachekey, git, targets
    from pytest_advreview.runner import codex
    from pytest_advreview.workspace import mutation

    _count(cachekey, "plan_hash", "plan_hash")
    _count(mutation, "_hash_path", "snapshot_hash")
    codex.launch = _timed(codex.launch, "launch_s")
    # The wait for the preflight's answer (the probe itself may run in the background).
    codex.CodexReviewer.sandbox_preflight = _timed(  # type: ignore[method-assign]
        codex.CodexReviewer.sandbox_preflight, "preflight_s"
    )
    timed_git = _timed(git.run_git, "git_s", git=True)
    for module in (git, targets, mutation, cachekey):
        module.run_git = timed_git  # type: ignore[attr-defined]
    if _WATCH:
        sys.addaudithook(_audit)  # lives as long as the process, which is this run


def pytest_collection_finish(session: pytest.Session) -> None:
    """Remember the collected node ids."""
    _mark("collected")
    _items.extend(item.nodeid for item in session.items)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """Time the items (setup, call and teardown)."""
    global _in_items
    _in_items = True
    started = time.perf_counter()
    try:
        return (yield)
    finally:
        _spent["items_s"] += time.perf_counter() - started
        _in_items = False
        _mark("items_done")


def _peak_rss_kb() -> int:
    """This process's own peak RSS in KB (its memory since ``exec``, see the module doc)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Write the figures, last thing in the run."""
    _mark("unconfigure")
    if not _OUT or hasattr(config, "workerinput"):
        return
    data = {
        "maxrss_kb": _peak_rss_kb(),
        # CPU of this process, every thread, without its children (Codex, git).
        "process_cpu_s": round(time.process_time(), 4),
        "items": _items,
        "timeline": _timeline,
        "spent": {k: round(v, 4) for k, v in _spent.items()},
        **_seen,
    }
    Path(_OUT).write_text(json.dumps(data), encoding="utf-8")
