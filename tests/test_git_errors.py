"""git.py's one way to run git gives a caller its own error class: targets.py asks for
:class:`~pytest_advreview.targets.TargetError` (a user-facing message), never a bare
:class:`~pytest_advreview.git.GitError` traceback, on each path it runs git through."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import init_repo
from pytest_advreview.git import GitError, commit, run_git
from pytest_advreview.targets import TargetError, resolve_base


def test_a_failed_git_command_raises_the_callers_error_with_the_plugins_prefix(
    tmp_path: Path,
) -> None:
    repo = init_repo(tmp_path / "repo")
    with pytest.raises(TargetError) as raised:
        run_git(repo, "rev-parse", "--verify", "no-such-ref", error=TargetError)
    assert str(raised.value).startswith("pytest-advreview: `git rev-parse --verify no-such-ref`")
    assert "exit code 128" in str(raised.value)
    # Without one, git.py's own error, as before.
    with pytest.raises(GitError):
        run_git(repo, "rev-parse", "--verify", "no-such-ref")


def test_git_missing_while_resolving_the_base_is_a_target_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = init_repo(tmp_path / "repo")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(TargetError, match=r"^pytest-advreview: could not run `git rev-parse"):
        commit(repo, "main", error=TargetError)
    with pytest.raises(TargetError, match=r"^pytest-advreview: could not run `git rev-parse"):
        resolve_base(repo, "main", {})
    with pytest.raises(GitError):
        commit(repo, "main")
