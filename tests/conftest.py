"""Shared test configuration: the advreview testing kit's fixtures."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import pytest_advreview
from pytest_advreview.testing import (
    FAKE_KEY_ENV,
    FAKE_KEY_VALUE,
    ScriptedReviews,
    ScriptedServer,
    codex_provider_args,
)
from pytest_advreview.testing.fixtures import _unavailable

pytest_plugins = ["pytest_advreview.testing.fixtures"]

# pytester's in-process runs drop the modules a run imported from sys.modules, but not the
# package attributes pointing at them: a later run's `from .. import parse` then finds the
# first run's module while `from ..models import Triage` loads a new one, and pydantic
# rejects the old Triage ("Input should be a valid dictionary or instance of Triage"; any
# test file run alone with two reviewing runs failed so).  Modules imported here, before
# any run, are in every run's snapshot, so all runs share them.
for _module in pkgutil.walk_packages(pytest_advreview.__path__, "pytest_advreview."):
    if not _module.name.endswith("__main__"):
        importlib.import_module(_module.name)


# -- end-to-end helpers: a git repository under pytester, reviewed by the real Codex ----


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


#: Seconds a review interrupted by the Ctrl-C tests would hang (the scripted server's
#: ``hang``, the fake's ``sleep``) and its reviewer timeout: far longer than any exit after
#: Ctrl-C, so a run that ends within :data:`INTERRUPTED_EXIT_S` stopped its review.
INTERRUPTED_HANG_S = 600
#: Most seconds an interrupted run may take to exit.  Not a speed requirement: it tells
#: "stopped the review in flight" from "waited it out" (:data:`INTERRUPTED_HANG_S`).  After
#: the SIGINT the plugin kills the reviewer's process group within a second, but pytest
#: then formats the interrupt's whole traceback, the plugin writes its reports and the
#: interpreter (under coverage: with its data file) shuts down; under coverage on a
#: machine loaded 8x its cores that took up to 20 s, and a loaded CI machine is slower.
INTERRUPTED_EXIT_S = INTERRUPTED_HANG_S / 2


def start_interruptible(argv: Sequence[str], **popen: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(argv, **popen)`` whose Python turns SIGINT into KeyboardInterrupt.

    A test run started in the background of a non-interactive shell (``scripts/test &``,
    a CI step's background job) inherits SIGINT ignored, an ignored signal stays ignored
    across exec, and a Python that starts with SIGINT ignored never raises
    KeyboardInterrupt: the SIGINT of a Ctrl-C test would do nothing and the test would
    fail on its exit bound.  A caught signal is reset to the default in the child, so
    SIGINT is caught here while the child starts.  The same holds for SIGHUP under
    ``nohup`` (a suite started as ``nohup scripts/test``): the plugin leaves an ignored
    SIGHUP ignored on purpose, so a SIGHUP test's child must start with the default.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    hangup = signal.signal(signal.SIGHUP, _caught)
    try:
        return subprocess.Popen(list(argv), **popen)
    finally:
        signal.signal(signal.SIGHUP, hangup)
        signal.signal(signal.SIGINT, previous)


def _caught(signum: int, _frame: object) -> None:
    """A SIGHUP while a child starts: caught (and dropped) so the child gets the default."""


def interrupt_when(proc: subprocess.Popen[Any], ready: Callable[[], bool], what: str) -> Any:
    """Send ``proc`` SIGINT (Ctrl-C) once ``ready()`` holds; its stdout after it exits.

    The SIGINT goes when the event has happened (``what``: the review is in flight), not
    after a guessed delay, and the wait for it has no deadline of its own: a loaded machine
    may take any time to start Python, pytest, git and the reviewer.  A run that ends
    first fails the test at once with its output; one that hangs before the event ends
    on its reviewer's timeout (:data:`INTERRUPTED_HANG_S`) and so fails too.  After the
    SIGINT the run must exit within :data:`INTERRUPTED_EXIT_S`; it is killed otherwise.
    """
    try:
        wait_for(proc, ready, what)
        proc.send_signal(signal.SIGINT)
        try:
            return proc.communicate(timeout=INTERRUPTED_EXIT_S)[0]
        except subprocess.TimeoutExpired:
            pytest.fail(
                f"still running {INTERRUPTED_EXIT_S:.0f} s after Ctrl-C: the review in flight "
                f"(hanging {INTERRUPTED_HANG_S} s) was waited out, not stopped"
            )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def wait_for(proc: subprocess.Popen[Any], ready: Callable[[], bool], what: str) -> None:
    """Return once ``ready()`` holds; fail with ``proc``'s output if it ends first."""
    while not ready():
        if proc.poll() is not None:
            out = proc.communicate()[0]
            pytest.fail(
                f"{what} never happened: the run ended first (exit {proc.returncode}):\n"
                f"{_text(out)}"
            )
        time.sleep(0.05)


def _text(out: str | bytes | None) -> str:
    return out.decode(errors="replace") if isinstance(out, bytes) else out or ""


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


def live_processes(needle: str | bytes) -> list[tuple[int, list[bytes], str | None]]:
    """``(pid, argv, real path of the executable)`` of every live process whose argv holds
    ``needle``; a zombie waiting for its reaper does not count (its work is over)."""
    wanted = os.fsencode(needle)
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if state in ("Z", "X") or not any(wanted in arg for arg in argv):
            continue
        try:
            exe: str | None = os.readlink(entry / "exe")
        except OSError:
            exe = None
        found.append((int(entry.name), argv, exe))
    return found


@pytest.fixture(scope="session")
def ecosystem_python(pytestconfig: pytest.Config) -> Path:
    """The Python of ``.venv-ecosystem`` (``scripts/setup``): this checkout's plugin with
    pytest-rerunfailures, pytest-retry, pytest-repeat, pytest-flakefinder, pytest-timeout,
    pytest-html and pytest-github-actions-annotate-failures; skip locally, fail under CI."""
    python = pytestconfig.rootpath / ".venv-ecosystem" / "bin" / "python"
    probe = "import pytest_advreview, pytest_rerunfailures, pytest_timeout, pytest_html"
    found = python.exists() and (
        subprocess.run([str(python), "-c", probe], capture_output=True, check=False).returncode == 0
    )
    if not found:
        reason = f"{python} with the ecosystem extra is missing; run scripts/setup"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes", "on"):
            pytest.fail(f"{reason} (CI=true, so this is a failure, not a skip)", pytrace=False)
        pytest.skip(reason)
    return python


#: The rdjson tests' validator of reviewdog's Diagnostic Format (npm package
#: ``@umbrelladocs/rdformat-validator``), installed into ``.tools`` by ``scripts/setup``
#: (which reads the pin here: a test tool, not the plugin's).
PINNED_RDFORMAT_VALIDATOR_VERSION = "1.0.1"
_RDFORMAT = Path(".tools") / "node_modules" / "@umbrelladocs" / "rdformat-validator"


@pytest.fixture(scope="session")
def rdformat_validator(pytestconfig: pytest.Config) -> Callable[[Path], None]:
    """Validates a file against reviewdog's Diagnostic Format schema, offline, with the pinned
    ``@umbrelladocs/rdformat-validator`` CLI of ``.tools`` (``scripts/setup``); skip locally
    when it is missing, fail under CI=true."""
    package = pytestconfig.rootpath / _RDFORMAT
    hint = "run scripts/setup"
    try:
        version = json.loads((package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        _unavailable(f"{package} is missing; {hint}", what="rdjson validator")
    if version != PINNED_RDFORMAT_VALIDATOR_VERSION:
        _unavailable(
            f"{package} is {version}, not {PINNED_RDFORMAT_VALIDATOR_VERSION}; {hint}",
            what="rdjson validator",
        )
    node = shutil.which("node")
    if node is None:
        _unavailable("node is not on PATH", what="rdjson validator")
    script = package / "bin" / "rdformat-validator.js"

    def validate(path: Path) -> None:
        # --strict and --no-extra-fields: a field reviewdog does not know is an error too.
        argv = [node, str(script), "--strict", "--no-extra-fields", "--verbose", str(path)]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, f"{path} is not valid rdjson:\n{proc.stdout}{proc.stderr}"

    return validate


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


def init_repo(path: Path, branch: str = "main") -> Path:
    """An empty git repository at ``path`` on ``branch``: a committer, no signing."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", branch)
    git(path, "config", "user.name", "Test")
    git(path, "config", "user.email", "test@example.invalid")
    git(path, "config", "commit.gpgsign", "false")
    return path


def write(root: Path, rel: str, text: str | bytes = "x\n") -> Path:
    """Write ``text`` to ``root/rel``, creating the folders on the way."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def commit(root: Path, message: str = "commit") -> None:
    """Commit everything in ``root``'s work tree."""
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def feature_branch(root: Path, files: dict[str, str]) -> Path:
    """A repository at ``root``: ``main`` with a README, ``feature`` adding ``files``."""
    init_repo(root)
    write(root, "README.md", "# project\n")
    commit(root, "initial")
    git(root, "checkout", "-q", "-b", "feature")
    for rel, text in files.items():
        write(root, rel, text)
    commit(root, "the feature")
    return root


def json_strings(value: Any) -> str:
    """Every string of a parsed JSON document, one per line (JSON escapes undone)."""
    if isinstance(value, str):
        return value + "\n"
    if isinstance(value, dict):
        return "".join(json_strings(k) + json_strings(v) for k, v in value.items())
    if isinstance(value, list):
        return "".join(json_strings(v) for v in value)
    return ""


def saved_prompts(root: Path) -> list[str]:
    """The prompts a test's reviewer saved as ``root/prompts/0.txt``, ``1.txt``, …, in order."""
    folder = root / "prompts"
    return [(folder / f"{n}.txt").read_text() for n in range(len(list(folder.glob("*.txt"))))]


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
        return write(self.path, relpath, text)

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
        commit(self.path, message)

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

    def tool_outputs(self) -> list[str]:
        """The output of every tool call the reviewers made, as Codex sent it back."""
        return [o["output"] for r in self.server.response_requests for o in r.function_call_outputs]

    def run(self, *extra: str) -> pytest.RunResult:
        return self.pytester.runpytest(*self.args(*extra))

    def run_subprocess(self, *extra: str) -> pytest.RunResult:
        return self.pytester.runpytest_subprocess(*self.args(*extra))

    def run_ecosystem(self, python: Path, *extra: str, timeout: float = 300) -> pytest.RunResult:
        """This repository's review run by ``python`` (:func:`ecosystem_python`): pytest with
        the plugins users run beside this one installed and autoloaded."""
        return self.pytester.run(
            str(python),
            "-m",
            "pytest",
            *self.args(*extra),
            timeout=timeout,
        )


@pytest.fixture
def review_repo(
    pytester: pytest.Pytester,
    advreview_server: ScriptedServer,
    codex_executable: Path,
    codex_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> ReviewRepo:
    """A git repo under ``pytester`` whose reviews go to the scripted server via real Codex."""
    monkeypatch.setenv(FAKE_KEY_ENV, FAKE_KEY_VALUE)
    _review_repository(pytester, monkeypatch, codex_home)
    return ReviewRepo(pytester, advreview_server, codex_executable)


def _review_repository(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, codex_home: Path
) -> None:
    """The committed repository both review fixtures start from, with no CI variable and
    Codex's home outside it (the containment check looks for it)."""
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    # The folders a run keeps after an error go under pytest's temporary folder (pruned
    # after three runs), not the machine's /tmp: TMPDIR for the runs in a subprocess,
    # tempfile's cached choice for the runs in this process.
    temp = pytester.path.parent / f"{pytester.path.name}-tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    # CI too: the suite runs under CI=true, where --advreview-diff=auto means the branch.
    for name in ("OPENAI_API_KEY", "CODEX_API_KEY", "CI", "GITHUB_ACTIONS", "GITHUB_BASE_REF"):
        monkeypatch.delenv(name, raising=False)
    repo = init_repo(pytester.path)
    # runpytest_subprocess writes its output to ./stdout and ./stderr during the run.
    # and its --basetemp under ./runpytest-*.
    (repo / ".gitignore").write_text(
        ".pytest_cache/\n__pycache__/\n/stdout\n/stderr\n/runpytest-*\n"
    )
    (repo / "README.md").write_text("# project\n")
    commit(repo, "initial")


class ScriptedRepo(ReviewRepo):
    """A :class:`ReviewRepo` reviewed by the in-process scripted reviewer (no CLI).

    ``server`` is the reviewer's :class:`ScriptedReviews`: the same script and request log
    as the scripted server's, so a test reads the same either way.
    """

    def __init__(self, pytester: pytest.Pytester, reviews: ScriptedReviews) -> None:
        self.pytester = pytester
        self.server = reviews  # type: ignore[assignment]
        # No CLI runs: the default name, which the scripted reviewer stands in for.
        self.codex = Path("codex")
        self.path = pytester.path
        self.rules = []

    def write(self, relpath: str, text: str | bytes) -> Path:
        # A test's own conftest.py keeps the hook that plugs the scripted reviewer in.
        if relpath == "conftest.py" and isinstance(text, str):
            text = f"{text}\n\n{self.server.conftest()}"
        return write(self.path, relpath, text)

    def args(self, *extra: str) -> list[str]:
        return [
            "--adversarial-review",
            "--advreview-model=fake-model",
            "--advreview-reasoning=low",
            "--advreview-timeout=60",
            *extra,
        ]


@pytest.fixture
def scripted_repo(
    pytester: pytest.Pytester,
    scripted_reviewer: ScriptedReviews,
    codex_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> ReviewRepo:
    """:func:`review_repo`'s repository, reviewed in process from the same kind of script."""
    _review_repository(pytester, monkeypatch, codex_home)
    return ScriptedRepo(pytester, scripted_reviewer)


def ran_prompts(server: ScriptedServer, match: str) -> Sequence[str]:
    """Last user messages of the model requests whose prompt contains ``match``."""
    return [r.last_user_text for r in server.response_requests if match in r.last_user_text]


def exec_then_resume(reviewer: Any, repo: Path, work_dir: Path) -> tuple[Any, Any]:
    """One ``exec`` and one ``resume`` of the same thread by ``reviewer`` (a
    ``CodexReviewer``), each asserted to succeed; the second one's verdict is APPROVED.

    For checks that must hold on both launches (Codex keeps no ``-c`` pair in a thread).
    """
    from pytest_advreview.models import Operation, RunnerStatus, Verdict
    from pytest_advreview.runner import DispatchRequest

    def request(op: Operation, **kw: object) -> DispatchRequest:
        return DispatchRequest.model_validate(
            {
                "review_id": "1700000000-12345678",
                "repo_root": repo,
                "operation": op,
                "prompt_body": "MARK-PLAN review the plan",
                "work_dir": work_dir,
                **kw,
            }
        )

    first = reviewer.dispatch(request(Operation.INITIAL))
    assert first.runner.result is RunnerStatus.SUCCESS, first.runner.errors
    second = reviewer.dispatch(request(Operation.RESUME, session_id=first.runner.codex_session_id))
    assert second.runner.result is RunnerStatus.SUCCESS, second.runner.errors
    assert second.runner.verdict is Verdict.APPROVED
    return first, second
