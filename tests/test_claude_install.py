"""Claude Code is installed on first use, once, and only where npm can do it.

A fake ``npm`` on PATH stands in for the registry: it records its argv, takes a moment
where a test needs two callers to overlap (as a real install does, ``FAKE_NPM_DELAY``
seconds), and links a ``claude`` that prints the pinned version into the prefix it was
given, exactly where npm would.  The prefixes are
empty temporary folders: the project's own ``.tools`` is never touched.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
from pathlib import Path

import pytest

from pytest_advreview.constants import PINNED_CLAUDE_VERSION
from pytest_advreview.testing import tools
from pytest_advreview.testing.tools import (
    CLAUDE_VERSION_LINE,
    InstallError,
    NpmMissing,
    claude_bin,
    claude_install_command,
    ensure_claude,
)

ROOT = Path(__file__).resolve().parents[1]

FAKE_NPM = """\
#!{python} -S
import json, os, sys, time
from pathlib import Path
log = Path({log!r})
with log.open("a") as out:
    out.write(json.dumps(sys.argv[1:]) + "\\n")
if os.environ.get("FAKE_NPM_FAIL"):
    print("npm ERR! network unreachable", file=sys.stderr)
    sys.exit(1)
# A real install takes a while: a second caller arrives meanwhile.
time.sleep(float(os.environ.get("FAKE_NPM_DELAY", "0")))
prefix = Path(sys.argv[sys.argv.index("--prefix") + 1])
binary = prefix / "node_modules" / ".bin" / "claude"
binary.parent.mkdir(parents=True, exist_ok=True)
binary.write_text("#!/bin/sh\\necho '{version}'\\n")
binary.chmod(0o755)
"""


def _fake_npm(bin_dir: Path, log: Path) -> None:
    """Standard library alone, started with ``-S``: no coverage measurement in each call."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    npm = bin_dir / "npm"
    npm.write_text(
        FAKE_NPM.format(python=sys.executable, log=str(log), version=CLAUDE_VERSION_LINE)
    )
    npm.chmod(npm.stat().st_mode | stat.S_IXUSR)


def _calls(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.fixture
def npm_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake npm alone on PATH (no real npm, no claude); returns its argv log."""
    log = tmp_path / "npm-calls.jsonl"
    _fake_npm(tmp_path / "bin", log)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    return log


def test_the_install_command_is_the_pinned_package_with_its_postinstall() -> None:
    command = claude_install_command(Path("/p"), "npm")
    assert command[:4] == ["npm", "install", "--prefix", "/p"]
    assert command[-1] == f"@anthropic-ai/claude-code@{PINNED_CLAUDE_VERSION}"
    assert "--ignore-scripts" not in command  # the postinstall links the native binary


def test_installs_once_into_an_empty_prefix(tmp_path: Path, npm_log: Path) -> None:
    prefix = tmp_path / "tools"
    first = ensure_claude(prefix)
    second = ensure_claude(prefix)
    assert first == (claude_bin(prefix), True)
    assert second == (claude_bin(prefix), False)
    assert _calls(npm_log) == [claude_install_command(prefix)[1:]]


def test_concurrent_callers_install_once(
    tmp_path: Path, npm_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NPM_DELAY", "1")
    prefix = tmp_path / "tools"
    start = threading.Barrier(2)
    results: list[tuple[Path, bool]] = []
    errors: list[BaseException] = []

    def call() -> None:
        start.wait()
        try:
            results.append(ensure_claude(prefix))
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(_calls(npm_log)) == 1
    assert sorted(installed for _, installed in results) == [False, True]
    assert {binary for binary, _ in results} == {claude_bin(prefix)}


def test_npm_missing_is_its_own_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(NpmMissing, match="npm is not on PATH"):
        ensure_claude(tmp_path / "tools")
    assert not (tmp_path / "tools").exists()


def test_a_failed_install_names_the_command_and_npm_s_message(
    tmp_path: Path, npm_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NPM_FAIL", "1")
    with pytest.raises(InstallError, match=r"exited 1: npm ERR! network unreachable") as info:
        ensure_claude(tmp_path / "tools")
    assert f"@anthropic-ai/claude-code@{PINNED_CLAUDE_VERSION}" in str(info.value)


def test_an_install_of_the_wrong_version_is_an_error(tmp_path: Path, npm_log: Path) -> None:
    with pytest.raises(InstallError, match=r"succeeded, but .* expected"):
        ensure_claude(tmp_path / "tools", problem=lambda path: f"{path} is 0.0.1, expected x")


def test_the_command_line_installs_and_reports(
    tmp_path: Path, npm_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert tools.main(["install-claude", str(tmp_path / "tools")]) == 0
    assert tools.main(["install-claude", str(tmp_path / "tools")]) == 0
    assert tools.main(["install-clod"]) == 2
    out, err = capsys.readouterr()
    assert out.count("installed:") == 1 and out.count("already there:") == 1
    assert "usage:" in err
    assert len(_calls(npm_log)) == 1


def test_setup_installs_claude_only_under_ci_and_through_the_one_command() -> None:
    setup = (ROOT / "scripts" / "setup").read_text()
    assert "@anthropic-ai/claude-code" not in setup  # the command lives in testing/tools.py
    assert '[ "$ci" = true ]' in setup
    assert "pytest_advreview.testing install-claude .tools" in setup


# -- the claude_executable fixture, in a pytester run whose rootdir has no .tools ----------
# In process (a session of its own, whose environment is the test's), except where two
# worker processes must race for the install.

FIXTURE_TEST = """\
import os
from pathlib import Path

def test_one(claude_executable):
    assert claude_executable == Path(os.getcwd()) / ".tools/node_modules/.bin/claude"

def test_two(claude_executable):
    assert claude_executable.exists()
"""


@pytest.fixture
def kit_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeconftest('pytest_plugins = ["pytest_advreview.testing.fixtures"]\n')
    pytester.makepyfile(test_uses_claude=FIXTURE_TEST)
    monkeypatch.delenv("ADVREVIEW_CLAUDE", raising=False)
    monkeypatch.delenv("CI", raising=False)
    return pytester


def test_the_fixture_installs_on_first_use_once(
    kit_project: pytest.Pytester, npm_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two workers ask at once: the second arrives while the first installs.
    monkeypatch.setenv("FAKE_NPM_DELAY", "1")
    result = kit_project.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(passed=2)
    assert _calls(npm_log) == [claude_install_command(kit_project.path / ".tools")[1:]]


def test_without_npm_the_fixture_skips_with_the_reason(
    kit_project: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    result = kit_project.runpytest_inprocess("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*real Claude Code CLI unavailable: npm is not on PATH*"])
    assert not (kit_project.path / ".tools").exists()


def test_without_npm_the_fixture_fails_under_ci(
    kit_project: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("CI", "true")
    result = kit_project.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*npm is not on PATH*CI=true, so this is a failure, not a skip*"])


def test_the_local_install_is_preferred_and_not_repeated(
    kit_project: pytest.Pytester, npm_log: Path
) -> None:
    ensure_claude(kit_project.path / ".tools")
    result = kit_project.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert len(_calls(npm_log)) == 1  # the one above; the fixture found it
    assert os.access(claude_bin(kit_project.path / ".tools"), os.X_OK)
