"""The gate's own code, kept out of the reviewer's reach.

A reviewer that can write where the gate's code lives can change what decides its own
verdict: one appended code to the installed plugin (a venv under ``/tmp``, writable under
Codex's ``workspace-write``), answered REVISE, and the run passed, because the changed
module was imported only at session finish.  Three things keep that out:

* the sandbox (``runner/codex.py``, ``containment_args``): the reviewer writes only its
  workspace and a private temporary folder, never ``/tmp`` or ``$TMPDIR``;
* :func:`preload`: every module of the plugin that a run may use is imported before the
  first review starts, so a file rewritten on disk afterwards changes nothing that runs;
* :func:`exposed` / :func:`check`: the plugin's package, the Python environment running
  pytest and ``CODEX_HOME`` must not lie inside a folder of the user's that the reviewer
  (or the lead) may write (:class:`~.workspace.Layout` says which one, if any).  By
  default each review that may write gets a private worktree outside the checkout, so a
  ``.venv`` in the repository is out of reach and nothing is said.  Where the reviewer
  does write the repository itself (``--advreview-isolation=none``, outside git, before
  the first commit) and the verdict gates something (under CI, with
  ``--advreview-strict-exit``) that is a usage error; elsewhere a warning in the header.

What this cannot do: code imported after the reviews from outside the plugin (a lazily
imported module of pydantic, pytest or the standard library) is read from disk then; it
is safe only while it lies outside the reviewer's reach, which is what :func:`check`
verifies for the Python environment.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import pytest_advreview

from ..trust import run as trust

if TYPE_CHECKING:
    from ..settings import Settings
    from . import Layout

__all__ = [
    "ContainmentWarning",
    "Exposure",
    "check",
    "exposed",
    "preload",
]

PACKAGE = pytest_advreview.__name__
#: Modules a review run never uses: the testing kit (its servers), the doctor (a run of
#: its own) and the ``python -m`` entry point.
_NOT_PRELOADED = (f"{PACKAGE}.testing", f"{PACKAGE}.doctor", f"{PACKAGE}.__main__")


_preloaded: list[str] = []
#: Reviews side by side (``--advreview-jobs``) may build their first dispatch together.
_lock = threading.Lock()


class ContainmentWarning(pytest.PytestWarning):
    """The gate's own code lies where a fixture review's reviewer may write (nothing
    gates the run, so it is not refused)."""


def preload() -> list[str]:
    """Import every module of the plugin a review run may use; return their names.

    Called when a reviewer is built (``review.make_reviewer``), so before the first
    review of every process (xdist workers and the fixture's reviews included): the
    report writers, the lead backends and everything else a run imports late are then
    in memory, and a reviewer that rewrites their files afterwards changes nothing this
    run executes.  Done once per process.
    """
    with _lock:
        if not _preloaded:
            _preloaded.extend(_import_all(pytest_advreview.__path__, f"{PACKAGE}."))
    return list(_preloaded)


def _import_all(path: Sequence[str], prefix: str) -> Iterator[str]:
    """Import every module and package below ``path`` but :data:`_NOT_PRELOADED`.

    Not ``pkgutil.walk_packages``: it imports every package it walks into, the testing
    kit too (its HTTP servers, ``urllib.request`` and ``ssl``: about a tenth of a cached
    run's time, and memory), before a filter on the names can leave it out.
    """
    for module in pkgutil.iter_modules(path, prefix):
        if module.name.startswith(_NOT_PRELOADED):
            continue
        imported = importlib.import_module(module.name)
        yield module.name
        if module.ispkg:
            yield from _import_all(imported.__path__, f"{module.name}.")


@dataclass(frozen=True)
class Exposure:
    """A part of the gate found inside the folder the reviewer may write."""

    what: str
    path: Path


def _codex_home(environ: Mapping[str, str]) -> Path:
    home = environ.get("CODEX_HOME", "").strip()
    return Path(home) if home else Path.home() / ".codex"


def _inside(path: Path, folder: str) -> bool:
    real = os.path.realpath(path)
    return real == folder or real.startswith(os.path.join(folder, ""))


def exposed(workspace: Path, environ: Mapping[str, str]) -> list[Exposure]:
    """The parts of the gate that lie inside ``workspace`` (links resolved)."""
    candidates = [
        ("the pytest-advreview package", Path(pytest_advreview.__file__).parent),
        ("the Python environment running pytest (sys.prefix)", Path(sys.prefix)),
        ("the Python installation (sys.base_prefix)", Path(sys.base_prefix)),
        ("CODEX_HOME (Codex's configuration and sessions)", _codex_home(environ)),
    ]
    folder = os.path.realpath(workspace)
    found: list[Exposure] = []
    seen: set[str] = set()
    for what, path in candidates:
        real = os.path.realpath(path)
        if real not in seen and _inside(path, folder):
            found.append(Exposure(what, path))
        seen.add(real)
    return found


def check(
    settings: Settings,
    layout: Layout,
    environ: Mapping[str, str],
    run_trust: trust.Trust | None = None,
) -> list[str]:
    """Warnings for the header; raises a usage error instead when the verdict gates
    (:attr:`.trust.run.Trust.gated`: under CI, with ``--advreview-strict-exit``, or with
    a head reviewed as data).

    :param run_trust: the run's trust (:func:`.trust.run.of_run`).

    :param layout: where the reviews run: only the folder it says a reviewer or lead may
        write (:attr:`~.workspace.Layout.writable`) is searched.

    :raises pytest.UsageError: the verdict gates and a part of the gate lies inside the
        folder the reviewer may write.
    """
    if run_trust is None:  # a direct call: the environment given decides
        run_trust = trust.decide(environ, strict_exit=settings.strict_exit, head=settings.head)
    gated = run_trust.gated
    why = (
        "under CI or --advreview-strict-exit" if run_trust.enforced_by else "with --advreview-head"
    )
    workspace = layout.writable
    if workspace is None:
        return []
    found = exposed(workspace, environ)
    if not found:
        return []
    who = f"sandbox={settings.sandbox}" if settings.lead == "none" else f"lead={settings.lead}"
    listed = "; ".join(f"{item.what} at {item.path}" for item in found)
    problem = (
        f"the reviewer may write {workspace} ({who}), and the gate's own code lies inside "
        f"it: {listed}. A reviewer could change what decides its verdict"
    )
    fix = (
        "move the virtual environment (and CODEX_HOME) out of the repository, pass "
        "--advreview-sandbox=read-only, or let each review run in a worktree of its own "
        "(--advreview-isolation=auto or worktree; auto needs a git repository with a commit)"
    )
    if gated:
        raise pytest.UsageError(f"pytest-advreview: {problem}; {why} this is refused: {fix}")
    return [f"WARNING: {problem}; {fix}"]
