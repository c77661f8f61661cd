"""Native launch: the runner starts the platform binary the npm wrapper would start.

Real Codex CLI (pinned) against the scripted server; the process tree is read from
``/proc`` while a review waits on the model.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import live_processes, settled
from pytest_advreview.models import RunnerStatus, Verdict
from pytest_advreview.runner import native
from pytest_advreview.runner.codex import CodexReviewer
from pytest_advreview.testing import ScriptedServer, approved_review
from test_runner_real import request, reviewer

pytestmark = pytest.mark.real_codex


def _package_root(codex: Path) -> Path:
    return codex.resolve().parent.parent


def _triple(codex: Path) -> str:
    """The Rust target triple of this machine's platform package (``x86_64-unknown-…``)."""
    found = native.resolve(str(codex), os.environ)
    assert found is not None
    return Path(found.binary).parents[1].name


def platform_package(codex: Path) -> Path:
    """The installed platform package (``@openai/codex-linux-x64``) of the pinned CLI."""
    found = native.resolve(str(codex), os.environ)
    assert found is not None
    return Path(found.binary).parents[3]


def _processes_with(needle: str) -> list[tuple[int, str]]:
    """``(pid, real path of the executable)`` of every process whose argv holds ``needle``,
    but the launch's supervisor (this Python, ``runner/lifetime.py``: argv and all)."""
    supervisor = os.path.realpath(sys.executable)
    return [
        (pid, exe) for pid, _argv, exe in live_processes(needle) if exe not in (None, supervisor)
    ]


def _tree_while_waiting(
    codex_reviewer: CodexReviewer, server: ScriptedServer, repo: Path, work: Path
) -> list[str]:
    """The executables running for a review that waits on the model; then it is stopped.

    Found by the ``-o`` path in their argv, which only the review's launch carries (the
    sandbox preflight runs in the same work folder).  They are read once the review's
    request has reached the server: Codex then waits on the model, the wrapper's Node (if
    any) on the binary it started.  Then the review is cancelled, which kills its process
    group as the timeout would, without waiting out the timeout and its retry.
    """
    needle = str(work / "review.md")
    asked = len(server.response_requests)
    result: list[object] = []
    thread = threading.Thread(
        target=lambda: result.append(codex_reviewer.dispatch(request(repo, work)))
    )
    thread.start()
    try:
        seen = settled(lambda: [] if _processes_with(needle) else ["none yet"], within=30)
        assert seen == [], "no Codex process appeared for the review"
        waiting = settled(
            lambda: [] if len(server.response_requests) > asked else ["no request yet"],
            within=30,
        )
        assert waiting == [], "the review's request never reached the server"
        return sorted(exe for _pid, exe in _processes_with(needle))
    finally:
        codex_reviewer.cancel()
        thread.join()


def test_resolve_gives_the_binary_and_environment_the_wrapper_gives(codex_executable, tmp_path):
    """What the wrapper hands its binary, seen from inside (``codex sandbox -- env``)."""
    found = native.resolve(str(codex_executable), os.environ)
    assert found is not None
    assert Path(found.binary).parts[-3:] == (_triple(codex_executable), "bin", "codex")
    assert "/node_modules/@openai/codex-" in found.binary

    def managed(argv0: str, env: dict[str, str]) -> dict[str, str]:
        out = subprocess.run(
            [argv0, "sandbox", "-c", "sandbox_mode=workspace-write", "--", "env"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            check=True,
        ).stdout
        pairs = (line.split("=", 1) for line in out.splitlines() if "=" in line)
        return {k: v for k, v in pairs if k.startswith("CODEX_MANAGED")}

    # A stale marker of another package manager is removed, as the wrapper removes it.
    env = {**os.environ, "CODEX_MANAGED_BY_BUN": "1"}
    via_wrapper = managed(str(codex_executable), env)
    assert via_wrapper == {
        "CODEX_MANAGED_BY_NPM": "1",
        "CODEX_MANAGED_PACKAGE_ROOT": str(_package_root(codex_executable)),
    }
    assert managed(found.binary, found.environment(env)) == via_wrapper


def test_a_review_runs_the_native_binary_and_leaves_nothing(
    codex_executable, advreview_server, codex_env, git_repo, tmp_path
):
    advreview_server.set_script({"rules": [], "default": {"hang": 60}})
    work = tmp_path / "native-work"
    codex_reviewer = reviewer(codex_executable, advreview_server, codex_env, timeout=4.0)
    tree = _tree_while_waiting(codex_reviewer, advreview_server, git_repo, work)
    binary = native.resolve(str(codex_executable), codex_env)
    assert binary is not None
    # The binary itself, no Node in between (Codex may fork a helper of its own binary
    # while it starts, so the same executable can show twice).
    assert tree
    assert set(tree) == {binary.binary}
    assert settled(lambda: _processes_with(str(work))) == []


def test_native_binary_given_directly_is_launched_as_is(
    codex_executable, advreview_server, codex_env, git_repo, tmp_path
):
    """``--advreview-codex`` may name the binary itself: it is not a wrapper."""
    binary = native.resolve(str(codex_executable), codex_env)
    assert binary is not None
    assert native.resolve(binary.binary, codex_env) is None
    advreview_server.set_script({"rules": [], "default": {"message": approved_review()}})
    result = reviewer(Path(binary.binary), advreview_server, codex_env).dispatch(
        request(git_repo, tmp_path / "w")
    )
    assert result.runner.result is RunnerStatus.SUCCESS, result.runner.errors
    assert result.runner.verdict is Verdict.APPROVED


def wrapper_copy(codex: Path, where: Path) -> Path:
    """A copy of the npm wrapper package alone under ``where/node_modules``; its bin link."""
    root = where / "node_modules" / "@openai" / "codex"
    (root / "bin").mkdir(parents=True)
    shutil.copy2(_package_root(codex) / "package.json", root / "package.json")
    shutil.copy2(_package_root(codex) / "bin" / "codex.js", root / "bin" / "codex.js")
    link = where / "node_modules" / ".bin" / "codex"
    link.parent.mkdir()
    link.symlink_to("../@openai/codex/bin/codex.js")
    return link


def unresolvable_layout(codex: Path, where: Path) -> tuple[Path, str]:
    """A wrapper copy whose platform package only ``NODE_PATH`` finds, a layout the
    resolver does not follow: ``(its bin link, the NODE_PATH value)``."""
    wrapper = wrapper_copy(codex, where / "install")
    elsewhere = where / "elsewhere" / "node_modules" / "@openai"
    elsewhere.mkdir(parents=True)
    platform_dir = platform_package(codex)
    (elsewhere / platform_dir.name).symlink_to(platform_dir)
    return wrapper, str(elsewhere.parent)


def test_platform_package_missing_uses_the_wrappers_vendor_folder(
    codex_executable, advreview_server, codex_env, git_repo, tmp_path
):
    """No platform package: the wrapper's own fallback, ``@openai/codex/vendor``."""
    wrapper = wrapper_copy(codex_executable, tmp_path / "install")
    triple = _triple(codex_executable)
    vendor = wrapper.resolve().parent.parent / "vendor"
    vendor.mkdir()
    (vendor / triple).symlink_to(platform_package(codex_executable) / "vendor" / triple)
    found = native.resolve(str(wrapper), codex_env)
    assert found is not None
    assert found.binary == str(vendor / triple / "bin" / "codex")
    advreview_server.set_script({"rules": [], "default": {"hang": 60}})
    work = tmp_path / "vendor-work"
    vendor_reviewer = reviewer(wrapper, advreview_server, codex_env, timeout=4.0)
    tree = _tree_while_waiting(vendor_reviewer, advreview_server, git_repo, work)
    # No Node: only the binary (it can show twice while Codex forks a helper of itself).
    assert set(tree) == {str((vendor / triple / "bin" / "codex").resolve())}


def test_unresolvable_platform_package_falls_back_to_the_wrapper(
    codex_executable, advreview_server, codex_env, git_repo, tmp_path
):
    """A layout the resolver does not follow (``NODE_PATH``): the wrapper is launched."""
    wrapper, node_path = unresolvable_layout(codex_executable, tmp_path)
    env = {**codex_env, "NODE_PATH": node_path}
    assert native.resolve(str(wrapper), env) is None
    advreview_server.set_script({"rules": [], "default": {"message": approved_review()}})
    result = reviewer(wrapper, advreview_server, env).dispatch(request(git_repo, tmp_path / "w"))
    assert result.runner.result is RunnerStatus.SUCCESS, result.runner.errors
    assert result.runner.verdict is Verdict.APPROVED
    # And it is the wrapper that runs (node, then the binary it starts).
    advreview_server.set_script({"rules": [], "default": {"hang": 60}})
    work = tmp_path / "fallback-work"
    tree = _tree_while_waiting(
        reviewer(wrapper, advreview_server, env, timeout=4.0), advreview_server, git_repo, work
    )
    assert any(Path(exe).name.startswith("node") for exe in tree), tree
    assert settled(lambda: _processes_with(str(work))) == []


def test_no_binary_anywhere_reports_the_wrappers_remedy(
    codex_executable, advreview_server, codex_env, git_repo, tmp_path
):
    wrapper = wrapper_copy(codex_executable, tmp_path / "install")
    assert native.resolve(str(wrapper), codex_env) is None
    # read-only: no sandbox preflight, whose own failure would speak first.
    result = reviewer(wrapper, advreview_server, codex_env, sandbox="read-only").dispatch(
        request(git_repo, tmp_path / "w")
    )
    assert result.runner.result is RunnerStatus.LAUNCH_FAILURE
    assert "Missing optional dependency @openai/codex-" in (result.runner.errors or "")
