"""The version matrix: Python 3.10 to 3.13, the oldest supported and the newest pytest.

    .venv/bin/nox                       # every session (subset on each Python x pytest)
    .venv/bin/nox -s "tests-3.12(pytest='min')" -- -x   # one session, extra pytest args
    .venv/bin/nox -s full               # the whole suite on the default Python

``tests`` runs the fast tests, every test not marked ``real_codex`` (the testing kit
marks every test that uses the ``codex_executable`` fixture: the behaviour tests run on
the in-process scripted reviewer and are not marked), and then only the marked tests of
the core CLI contract, so no test runs twice; ``full`` runs the whole suite.
``scripts/test`` runs the whole suite on the development venv and then four ``tests``
sessions, two at a time.

The interpreters are pyenv's (``$PYENV_ROOT/versions/3.X.Y``, the machines have them):
their folders go first on ``PATH`` so nox finds ``python3.X`` without ``pyenv global``.
The real-Codex tests use the pinned CLI that ``scripts/setup`` installs into ``.tools``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nox

HERE = Path(__file__).parent
PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
DEFAULT_PYTHON = "3.11"
#: The oldest pytest the plugin supports; ``pyproject.toml`` requires ``pytest>=`` it (a
#: test keeps the two equal).
PYTEST_MIN = "8.0.0"
PYTEST_VERSIONS = {"min": f"pytest=={PYTEST_MIN}", "latest": "pytest"}

#: Where the real-Codex tests that run on every interpreter are: a plan passes and fails,
#: the code change on a branch, xdist, rounds across runs, the CI default.  Only their
#: ``real_codex`` tests run from here (the rest of these files ran in the fast pass, as did
#: sharding, whose test reviews in process).
CORE_REAL_CODEX = [
    "tests/test_plugin_e2e.py::test_plan_approved_passes",
    "tests/test_plugin_e2e.py::test_plan_revise_high_fails_with_review_verbatim",
    "tests/test_plugin_e2e.py::test_code_review_on_a_branch_names_the_changed_files",
    "tests/test_xdist_e2e.py",
    "tests/test_rounds_e2e.py",
    "tests/test_ci_mode_e2e.py",
]

nox.options.sessions = ["tests"]
nox.options.reuse_venv = "yes"
nox.options.error_on_missing_interpreters = True


def _pyenv_first() -> None:
    """Put each wanted pyenv interpreter's folder (highest patch release) first on PATH."""
    versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    folders: list[str] = []
    for wanted in PYTHONS:
        found = [
            p
            for p in versions.glob(f"{wanted}.*")
            if re.fullmatch(rf"{re.escape(wanted)}\.\d+", p.name)
            and (p / "bin" / f"python{wanted}").exists()
        ]
        if found:
            best = max(found, key=lambda p: int(p.name.rsplit(".", 1)[1]))
            folders.append(str(best / "bin"))
    if folders:
        os.environ["PATH"] = os.pathsep.join([*folders, os.environ.get("PATH", "")])


_pyenv_first()


def _install(session: nox.Session, pytest_spec: str) -> None:
    session.install("-e", ".[test]")
    # After the package: its own requirement would otherwise upgrade a pinned pytest.
    session.install(pytest_spec)


def _env() -> dict[str, str]:
    tools = str(HERE / ".tools" / "node_modules" / ".bin")
    # Last on PATH: the workflow linters scripts/setup puts in the development venv
    # (actionlint, shellcheck, zizmor) are the same whatever the session's Python.
    linters = str(HERE / ".venv" / "bin")
    return {"PATH": os.pathsep.join([tools, os.environ.get("PATH", ""), linters])}


@nox.session(python=PYTHONS)
@nox.parametrize("pytest", list(PYTEST_VERSIONS))
def tests(session: nox.Session, pytest: str) -> None:
    """The fast tests (not marked real_codex), then the core real-Codex tests."""
    _install(session, PYTEST_VERSIONS[pytest])
    env = _env()
    pytest_argv = ("python", "-m", "pytest", "-q", "-n", "2")
    # The ecosystem tests drive the other plugins in .venv-ecosystem (scripts/setup), the
    # same for every session's Python: the development venv's run has them.
    fast = "not real_codex and not ecosystem"
    session.run(*pytest_argv, "-m", fast, *session.posargs, env=env)
    session.run(*pytest_argv, "-m", "real_codex", *CORE_REAL_CODEX, *session.posargs, env=env)


@nox.session(python=DEFAULT_PYTHON)
def full(session: nox.Session) -> None:
    """The whole suite with the newest pytest."""
    _install(session, PYTEST_VERSIONS["latest"])
    session.run("python", "-m", "pytest", "-n", "2", *session.posargs, env=_env())
