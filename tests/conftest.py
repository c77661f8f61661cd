"""Shared test configuration: the advreview testing kit's fixtures."""

from __future__ import annotations

pytest_plugins = ["pytest_advreview.testing.fixtures"]

import importlib  # noqa: E402
import pkgutil  # noqa: E402

import pytest_advreview  # noqa: E402

# pytester's in-process runs restore sys.modules afterwards, but a package keeps the
# attribute of a submodule first imported during a run: a later run's `from .. import
# parse` then finds that stale module, whose pydantic classes are not the current ones
# ("Input should be a valid dictionary or instance of Triage").  Importing every module
# once, here, keeps them all out of the snapshots.
for _module in pkgutil.walk_packages(pytest_advreview.__path__, "pytest_advreview."):
    if not _module.name.endswith("__main__"):
        importlib.import_module(_module.name)


def _import_the_whole_package() -> None:
    """Import every module of the plugin once, before any in-process pytester run.

    ``pytester.runpytest`` drops the modules a run imported from ``sys.modules``, but not
    the package attributes pointing at them: in the next run ``from .. import parse``
    returns the first run's module while ``from ..models import Triage`` imports a new
    one, and pydantic rejects the first run's ``Triage`` (seen with ``-n 0`` whenever no
    unit-test module had imported the models first).  Modules loaded here are in every
    run's snapshot, so all runs share them.
    """
    import importlib
    import pkgutil

    import pytest_advreview

    for module in pkgutil.walk_packages(pytest_advreview.__path__, "pytest_advreview."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)


_import_the_whole_package()


# -- end-to-end helpers: a git repository under pytester, reviewed by the real Codex ----

import os  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402

# pytester's in-process runs drop the modules a run imported first, but the package keeps
# them as attributes: a later run's ``from . import parse`` then finds the old module
# while ``from .models import Triage`` loads a new one, and pydantic refuses "Triage" for
# Triage (any test file run alone, with two reviewing runs, failed so).  Importing the
# machinery here keeps every in-process run on one set of modules.
import pytest_advreview.report.publish  # noqa: E402
import pytest_advreview.runner.codex  # noqa: E402
import pytest_advreview.runner.command  # noqa: E402
import pytest_advreview.session  # noqa: E402
from pytest_advreview.testing import (  # noqa: E402
    FAKE_KEY_ENV,
    FAKE_KEY_VALUE,
    ScriptedServer,
    codex_provider_args,
)


def settled(probe: Callable[[], list[Any]], within: float = 5.0) -> list[Any]:
    """What ``probe`` still finds after up to ``within`` seconds of polling.

    For "no process left" checks: SIGKILL is delivered when the target is next scheduled,
    so on a loaded machine (CI under xdist) a killed process can show for a moment after
    the group kill returned.  A process that really survives still shows after the wait.
    """
    deadline = time.monotonic() + within
    while True:
        found = probe()
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


def sleeper_running(pid: int) -> bool:
    """The fake codex's ``spawn_child_sleep`` child ``pid`` still runs.

    A zombie waiting for a reaper counts as dead, and so does a pid that now belongs to
    another program: a busy CI machine with a small ``pid_max`` reuses pids within seconds.
    """
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X") and b"time.sleep" in cmdline


@pytest.fixture(autouse=True)
def private_state_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """Each test's per-user state key lives in its own temp folder, never in ``~``.

    ``ADVREVIEW_STATE_KEY`` is unset, so the key is the per-user file unless a test sets
    the variable itself.  Returns the ``XDG_STATE_HOME`` the runs under the test see.
    """
    home = tmp_path_factory.mktemp("xdg-state")
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    monkeypatch.delenv("ADVREVIEW_STATE_KEY", raising=False)
    return home


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` (argv list) and return stdout; a failure shows git's stderr."""
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return os.fsdecode(proc.stdout)


@pytest.fixture
def hermetic_git(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Git that sees neither the user's config nor a repository above the temp dirs."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path_factory.getbasetemp()))
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"):
        monkeypatch.delenv(name, raising=False)


class ReviewRepo:
    """A pytester directory that is a git repository reviewed against the scripted server."""

    def __init__(self, pytester: pytest.Pytester, server: ScriptedServer, codex: Path) -> None:
        self.pytester = pytester
        self.server = server
        self.codex = codex
        self.path = pytester.path
        self.rules: list[dict[str, Any]] = []

    def write(self, relpath: str, text: str | bytes) -> Path:
        target = self.path / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            target.write_bytes(text)
        else:
            target.write_text(text, encoding="utf-8")
        return target

    def plan(self, name: str, text: str = "# Plan\n\n1. Do the thing.\n") -> Path:
        return self.write(f"docs/plans/{name}", text)

    def answer(self, match: str, *steps: dict[str, Any], where: str = "last_user") -> None:
        """Answer prompts containing ``match`` with ``steps`` (in order, last repeats).

        ``where="body"`` matches anywhere in the request, history included (a resumed
        thread's later prompts do not repeat the plan's name).
        """
        self.rules.append({"match": match, "in": where, "steps": list(steps)})
        self.server.set_script({"rules": self.rules, "default": {"http_status": 404}})

    def commit(self, message: str = "work") -> None:
        git(self.path, "add", "-A")
        git(self.path, "commit", "-qm", message)

    def args(self, *extra: str) -> list[str]:
        return [
            "--adversarial-review",
            f"--advreview-codex={self.codex}",
            "--advreview-model=fake-model",
            "--advreview-reasoning=low",
            "--advreview-timeout=60",
            *[f"--advreview-codex-config={v}" for v in codex_provider_args(self.server.url)],
            *extra,
        ]

    def run(self, *extra: str) -> pytest.RunResult:
        return self.pytester.runpytest(*self.args(*extra))

    def run_subprocess(self, *extra: str) -> pytest.RunResult:
        return self.pytester.runpytest_subprocess(*self.args(*extra))


@pytest.fixture
def review_repo(
    pytester: pytest.Pytester,
    advreview_server: ScriptedServer,
    codex_executable: Path,
    codex_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> ReviewRepo:
    """A git repo under ``pytester`` whose reviews go to the scripted server via real Codex."""
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    monkeypatch.setenv(FAKE_KEY_ENV, FAKE_KEY_VALUE)
    monkeypatch.setenv("TMPDIR", str(tmp_path_factory.mktemp("codex-tmp")))
    # CI too: the suite runs under CI=true, where --advreview-diff=auto means the branch.
    for name in ("OPENAI_API_KEY", "CODEX_API_KEY", "CI", "GITHUB_ACTIONS", "GITHUB_BASE_REF"):
        monkeypatch.delenv(name, raising=False)
    repo = pytester.path
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Test")
    git(repo, "config", "user.email", "test@example.invalid")
    git(repo, "config", "commit.gpgsign", "false")
    # runpytest_subprocess writes its output to ./stdout and ./stderr during the run.
    # and its --basetemp under ./runpytest-*.
    (repo / ".gitignore").write_text(
        ".pytest_cache/\n__pycache__/\n/stdout\n/stderr\n/runpytest-*\n"
    )
    (repo / "README.md").write_text("# project\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "initial")
    return ReviewRepo(pytester, advreview_server, codex_executable)


def ran_prompts(server: ScriptedServer, match: str) -> Sequence[str]:
    """Last user messages of the model requests whose prompt contains ``match``."""
    return [r.last_user_text for r in server.response_requests if match in r.last_user_text]
