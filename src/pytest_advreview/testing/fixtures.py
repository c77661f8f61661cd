"""Pytest fixtures of the advreview testing kit.

Enable them in a ``conftest.py`` with::

    pytest_plugins = ["pytest_advreview.testing.fixtures"]

Fixtures: ``advreview_server`` (a started :class:`ScriptedServer`), ``codex_home`` (an empty
``CODEX_HOME``), ``codex_executable`` (the real, pinned Codex CLI, or a skip), ``codex_env``
(an environment for running Codex offline), ``fake_codex`` (a factory installing a fake
``codex``), ``git_repo`` (a fresh git repository with one commit), and for Claude Code
``messages_server`` (a started :class:`ScriptedMessagesServer`) and ``claude_executable``
(the real, pinned Claude Code CLI, installed on first use when npm is there, or a skip).

A real-Codex (or real-Claude) test is skipped with a reason when the CLI is missing or
has another version, unless the environment variable ``CI`` is ``true``: then it fails, so
a CI job cannot pass by silently skipping the end-to-end layer.

PYTEST_DONT_REWRITE: the module has no assertions to rewrite, and a conftest that imports
the kit (``from pytest_advreview.testing import ...``) before pytest reads its
``pytest_plugins`` would otherwise get "Module already imported so cannot be rewritten",
an error under ``filterwarnings = error`` on pytest before 9.2.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NoReturn

import pytest

from ..constants import PINNED_CODEX_VERSION
from .fake_codex import Behaviour, FakeCodex, install_fake_codex
from .messages_server import ScriptedMessagesServer
from .scripted import ScriptedReviews
from .server import FAKE_KEY_ENV, FAKE_KEY_VALUE, ScriptedServer
from .tools import CLAUDE_VERSION_LINE, InstallError, claude_bin, ensure_claude, version_problem

__all__ = [
    "CLAUDE_ENV_VAR",
    "CODEX_ENV_VAR",
    "REAL_CODEX_MARK",
    "FakeCodexFactory",
    "advreview_server",
    "claude_executable",
    "codex_env",
    "codex_executable",
    "codex_home",
    "fake_codex",
    "find_codex",
    "git_repo",
    "messages_server",
    "offline_env",
    "scripted_reviewer",
]

#: Environment variable naming the Codex executable for the real-Codex tests.
CODEX_ENV_VAR = "ADVREVIEW_CODEX"
#: Where ``.ci``/setup scripts install the pinned CLI, relative to the rootdir.
_LOCAL_CODEX = Path(".tools/node_modules/.bin/codex")
#: Variables that could let a test reach a real model service; never passed to Codex.
_SECRET_VARS = ("OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORGANIZATION")
_INSTALL_HINT = (
    f"install it with `npm install --prefix .tools @openai/codex@{PINNED_CODEX_VERSION}` "
    f"or point {CODEX_ENV_VAR} at a codex {PINNED_CODEX_VERSION} executable"
)

#: Environment variable naming the Claude Code executable for the real-Claude tests.
CLAUDE_ENV_VAR = "ADVREVIEW_CLAUDE"
#: Where the fixture installs Claude Code when it is missing, relative to the rootdir.
_CLAUDE_PREFIX = Path(".tools")

#: Signature of the ``fake_codex`` fixture.
FakeCodexFactory = Callable[..., FakeCodex]


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() == "true"


def _unavailable(reason: str, *, what: str = "Codex CLI") -> NoReturn:
    """Skip locally, fail in CI (``CI=true``): the real-CLI layer must run there."""
    message = f"pytest-advreview: real {what} unavailable: {reason}"
    if _in_ci():
        pytest.fail(f"{message} (CI=true, so this is a failure, not a skip)", pytrace=False)
    pytest.skip(message)


def find_codex(rootdir: Path | None = None) -> Path | None:
    """Locate the Codex executable: ``$ADVREVIEW_CODEX``, ``codex`` on PATH, then
    ``<rootdir>/.tools/node_modules/.bin/codex``.

    :param rootdir: the project root to look under for the locally installed CLI.
    :returns: the path, or ``None`` when none is found.
    """
    explicit = os.environ.get(CODEX_ENV_VAR)
    if explicit:
        return Path(explicit)
    on_path = shutil.which("codex")
    if on_path:
        return Path(on_path)
    if rootdir is not None and (rootdir / _LOCAL_CODEX).exists():
        return rootdir / _LOCAL_CODEX
    return None


def offline_env(base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """A copy of ``base`` (default ``os.environ``) that cannot reach a real model service.

    Real API keys and base URLs are removed, the fake provider key is set, and loopback is
    exempted from any HTTP proxy (the scripted server must be reached directly).

    :param extra: variables to set on top.
    """
    env = dict(os.environ if base is None else base)
    for name in _SECRET_VARS:
        env.pop(name, None)
    env[FAKE_KEY_ENV] = FAKE_KEY_VALUE
    for name in ("NO_PROXY", "no_proxy"):
        current = [part for part in env.get(name, "").split(",") if part]
        env[name] = ",".join([*current, "127.0.0.1", "localhost"])
    env.update(extra)
    return env


@pytest.fixture
def advreview_server() -> Iterator[ScriptedServer]:
    """A started :class:`ScriptedServer` on loopback (empty script), stopped at teardown."""
    with ScriptedServer() as server:
        yield server


@pytest.fixture
def codex_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty directory to use as ``CODEX_HOME``."""
    return tmp_path_factory.mktemp("codex-home")


@pytest.fixture(scope="session")
def codex_executable(pytestconfig: pytest.Config) -> Path:
    """The real Codex CLI, checked to be the pinned version; skip (or fail in CI) otherwise."""
    found = find_codex(pytestconfig.rootpath)
    if found is None:
        _unavailable(f"no codex executable found; {_INSTALL_HINT}")
    expected = f"codex-cli {PINNED_CODEX_VERSION}"
    problem = version_problem(found, expected, offline_env())
    if problem is not None:
        _unavailable(f"{problem}; {_INSTALL_HINT}")
    return found


@pytest.fixture
def messages_server() -> Iterator[ScriptedMessagesServer]:
    """A started :class:`ScriptedMessagesServer` (Messages API) on loopback."""
    with ScriptedMessagesServer() as server:
        yield server


@pytest.fixture(scope="session")
def claude_executable(pytestconfig: pytest.Config) -> Path:
    """The real Claude Code CLI at the pinned version; skip (or fail in CI) otherwise.

    Looked up as ``$ADVREVIEW_CLAUDE`` (used as it is), then
    ``<rootdir>/.tools/node_modules/.bin/claude``, then ``claude`` on PATH.  When none is
    the pinned version, it is installed into ``<rootdir>/.tools`` with npm
    (:func:`~.tools.ensure_claude`, one process at a time): at about 400 MB it is fetched
    only by a run that has a real-Claude test.
    """
    hint = (
        "install it with `python -m pytest_advreview.testing install-claude .tools` "
        f"or point {CLAUDE_ENV_VAR} at a claude whose --version prints {CLAUDE_VERSION_LINE!r}"
    )

    def problem(path: Path) -> str | None:
        return version_problem(path, CLAUDE_VERSION_LINE, offline_env())

    explicit = os.environ.get(CLAUDE_ENV_VAR)
    if explicit:
        found = problem(Path(explicit))
        if found is not None:
            _unavailable(f"{found}; {hint}", what="Claude Code CLI")
        return Path(explicit)
    prefix = pytestconfig.rootpath / _CLAUDE_PREFIX
    if claude_bin(prefix).exists() and problem(claude_bin(prefix)) is None:
        return claude_bin(prefix)
    on_path = shutil.which("claude")
    if on_path and problem(Path(on_path)) is None:
        return Path(on_path)
    try:
        binary, _ = ensure_claude(prefix, problem=problem)
    except InstallError as exc:
        _unavailable(f"{exc}; {hint}", what="Claude Code CLI")
    return binary


@pytest.fixture
def codex_env(codex_home: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment for running Codex offline against the scripted server.

    ``CODEX_HOME`` is :func:`codex_home`, the fake provider key is set, real API keys are
    removed, and ``TMPDIR`` is a directory that does not contain ``CODEX_HOME`` (which
    silences Codex's harmless "Refusing to create helper binaries" warning).
    """
    tmpdir = tmp_path_factory.mktemp("codex-tmp")
    return offline_env(CODEX_HOME=str(codex_home), TMPDIR=str(tmpdir))


@pytest.fixture
def fake_codex(tmp_path_factory: pytest.TempPathFactory) -> FakeCodexFactory:
    """A factory ``fake_codex(*behaviours, version=...) -> FakeCodex``.

    Each call installs a new fake ``codex`` in its own temp directory; see
    :class:`~pytest_advreview.testing.fake_codex.Behaviour` for the behaviours.
    """

    def install(*behaviours: Behaviour | Mapping[str, Any], **kwargs: Any) -> FakeCodex:
        return install_fake_codex(tmp_path_factory.mktemp("fake-codex"), behaviours, **kwargs)

    return install


def _git(repo: Path, *args: str) -> None:
    # Neutral identity and no signing, whatever the user's global git config says.
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0")
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, timeout=60)


@pytest.fixture
def git_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh git repository on branch ``main`` with one commit holding ``README.md``."""
    if shutil.which("git") is None:
        pytest.skip("pytest-advreview: git is not installed")
    repo = tmp_path_factory.mktemp("repo")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.name", "advreview tests")
    _git(repo, "config", "user.email", "advreview-tests@example.invalid")
    _git(repo, "config", "commit.gpgsign", "false")
    (repo / "README.md").write_text("# Test repository\n", encoding="utf-8")
    _git(repo, "add", "README.md")
    _git(repo, "commit", "-q", "-m", "Initial commit")
    return repo


# -- the in-process scripted reviewer, and the mark of the real-CLI tests ---------------

#: The mark of every test that uses the real Codex CLI (``codex_executable``, directly or
#: through another fixture): ``-m "not real_codex"`` selects the tests that start no CLI.
REAL_CODEX_MARK = "real_codex"


@pytest.fixture
def scripted_reviewer(
    pytester: pytest.Pytester,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> ScriptedReviews:
    """A :class:`~.scripted.ScriptedReviews` whose reviewer reviews the ``pytester`` runs.

    The fixture writes ``conftest.py`` into the pytester folder: its
    ``pytest_advreview_make_reviewer`` puts the in-process scripted reviewer in place of the
    ``codex`` backend (a test that writes its own ``conftest.py`` starts it with
    ``scripted_reviewer.conftest()``).  Script it like :class:`ScriptedServer` and read the
    prompts from ``response_requests``; runs in a subprocess or under xdist share it.
    """
    reviews = ScriptedReviews(tmp_path_factory.mktemp("scripted-reviewer"))
    # pytester's HOME is the repository under review, so Codex's default home would lie
    # inside the reviewer's workspace, which a gate run (CI) refuses: keep it outside.
    monkeypatch.setenv("CODEX_HOME", str(tmp_path_factory.mktemp("codex-home")))
    pytester.makeconftest(reviews.conftest())
    return reviews


def pytest_configure(config: pytest.Config) -> None:
    """Register the mark, so ``--strict-markers`` accepts it in any project."""
    config.addinivalue_line(
        "markers", f"{REAL_CODEX_MARK}: uses the real Codex CLI (the codex_executable fixture)"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test whose fixtures include ``codex_executable`` with ``real_codex``.

    First, so that ``-m`` (which deselects in the same hook) sees the mark: the mark
    follows the fixture and cannot be forgotten by hand.
    """
    for item in items:
        if "codex_executable" in getattr(item, "fixturenames", ()):
            item.add_marker(REAL_CODEX_MARK)
