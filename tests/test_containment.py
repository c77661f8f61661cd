"""Containment of the reviewer, the parts that need no Codex: which folder the reviewer
may write, what of the gate lies in it, what is imported before a review, and the
approvals a gate gets (the end-to-end tests are in test_containment_e2e.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import pytest_advreview
from conftest import commit, init_repo, write
from pytest_advreview.runner.codex import (
    TOOL_TMP_PREFIX,
    containment_args,
    private_tool_tmp,
    remove_tool_tmp,
)
from pytest_advreview.settings import Settings
from pytest_advreview.testing import approved_review
from pytest_advreview.workspace import Layout, containment


def test_the_python_environment_and_the_package_are_found_inside_a_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = tmp_path / "repo" / ".venv"
    venv.mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(venv))
    elsewhere = {"CODEX_HOME": str(tmp_path / "home")}
    found = containment.exposed(tmp_path / "repo", elsewhere)
    assert [(item.what, item.path) for item in found] == [
        ("the Python environment running pytest (sys.prefix)", venv)
    ]
    package = Path(pytest_advreview.__file__).parent
    assert [item.path for item in containment.exposed(package.parent, elsewhere)] == [package]
    # A link into the workspace is followed: the folder is where the files are.
    (tmp_path / "link").symlink_to(tmp_path / "repo")
    assert containment.exposed(tmp_path / "link", elsewhere) != []
    assert containment.exposed(tmp_path / "other", elsewhere) == []


def test_which_folder_of_the_users_the_reviewer_may_write(tmp_path: Path) -> None:
    root = tmp_path

    def ws(settings: Settings) -> Path | None:
        return Layout.decide(settings, root, in_git=False).writable

    # In place (outside git, auto runs there; or --advreview-isolation=none):
    assert ws(Settings()) == root  # workspace-write
    assert ws(Settings(isolation="none")) == root
    assert ws(Settings(sandbox="inherit")) == root  # unknown: writable
    assert ws(Settings(sandbox="read-only")) is None
    assert ws(Settings(isolation="worktree")) is None  # a worktree each: none of the user's
    assert ws(Settings(sandbox="read-only", lead="codex")) == root
    assert ws(Settings(reviewer="command", command="x")) is None  # no Codex sandbox


def test_auto_gives_each_review_that_may_write_a_worktree_in_a_repository_with_a_commit(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    init_repo(repo)

    def layout(settings: Settings, **kw: Any) -> Layout:
        return Layout.decide(settings, repo, in_git=True, **kw)

    unborn = layout(Settings())
    assert not unborn.isolated and unborn.writable == repo and unborn.shared_writable
    write(repo, "README.md")
    commit(repo)
    auto = layout(Settings())
    assert auto.isolated and auto.writable is None and not auto.shared_writable
    assert layout(Settings(lead="codex", sandbox="read-only")).isolated
    assert layout(Settings(reviewer="command", command="x")).isolated  # no sandbox of ours
    # Nothing writes: the repository itself, shared safely.
    reads = layout(Settings(sandbox="read-only"))
    assert not reads.isolated and reads.writable is None and not reads.shared_writable
    # A head is reviewed in its own private checkout already.
    assert not layout(Settings(), head=True).isolated
    none = layout(Settings(isolation="none"))
    assert not none.isolated and none.writable == repo and none.shared_writable


def test_every_module_a_run_uses_is_imported_before_a_review() -> None:
    names = containment.preload()
    assert "pytest_advreview.report.publish" in names
    assert "pytest_advreview.report.sarif" in names
    assert "pytest_advreview.lead.claude" in names
    assert not any(name.startswith("pytest_advreview.testing") for name in names)
    assert all(name in sys.modules for name in names)


def test_the_action_refuses_escalations_in_every_mode() -> None:
    from pytest_advreview.action import Paths, pytest_argv

    for head in ("HEAD", "a" * 40):
        argv = pytest_argv(
            "python",
            Path("/w"),
            Paths(Path("/g")),
            {},
            base="origin/main",
            head=head,
            codex="codex",
        )
        assert "--advreview-approvals=never" in argv
        # pytest-args (the workflow's own) come after it and may still say otherwise.
        assert argv.index("--advreview-approvals=never") < argv.index("/w")


def test_the_approvals_reason_is_kept_out_of_the_cache_key_but_approvals_is_in() -> None:
    from pytest_advreview.cachekey import IDENTITY_SETTINGS, NOT_IDENTITY_SETTINGS

    assert "approvals" in IDENTITY_SETTINGS["codex"]
    assert "approvals_why" in NOT_IDENTITY_SETTINGS
    # What travels to xdist workers keeps the reason for their header-free runs too.
    settings = Settings(approvals="never", approvals_why="gate default")
    assert json.loads(settings.model_dump_json())["approvals_why"] == "gate default"


def test_the_containment_args_exclude_tmp_and_name_only_the_private_folder(tmp_path: Path) -> None:
    args = containment_args(tmp_path / "t")
    pairs = dict(a.split("=", 1) for a in args[1::2])
    assert args[0::2] == ["-c"] * 4
    assert pairs["sandbox_workspace_write.exclude_slash_tmp"] == "true"
    assert pairs["sandbox_workspace_write.exclude_tmpdir_env_var"] == "true"
    assert json.loads(pairs["sandbox_workspace_write.writable_roots"]) == [str(tmp_path / "t")]
    assert json.loads(pairs["shell_environment_policy.set.TMPDIR"]) == str(tmp_path / "t")
    # Without a folder (the doctor, the preflight): no extra root at all, not even the
    # user's own writable_roots.
    bare = dict(a.split("=", 1) for a in containment_args(None)[1::2])
    assert bare["sandbox_workspace_write.writable_roots"] == "[]"
    assert "shell_environment_policy.set.TMPDIR" not in bare


def test_the_private_folder_is_removed_with_what_the_reviewer_left(tmp_path: Path) -> None:
    folder = private_tool_tmp()
    assert folder.name.startswith(TOOL_TMP_PREFIX)
    assert folder.stat().st_mode & 0o777 == 0o700
    (folder / "locked").mkdir()
    (folder / "locked" / "f").write_text("x")
    (folder / "locked").chmod(0o500)
    victim = tmp_path / "victim"
    victim.write_text("keep")
    victim.chmod(0o400)
    (folder / "link").symlink_to(victim)
    remove_tool_tmp(folder)
    assert not folder.exists()
    assert victim.read_text() == "keep"
    assert victim.stat().st_mode & 0o777 == 0o400  # a link is removed, never followed


@pytest.fixture
def fixture_review(pytester: pytest.Pytester, scripted_reviewer: Any) -> Any:
    """A repository whose test reviews a plan through the ``adversarial_review`` fixture
    (no review run), with the in-process reviewer standing in for Codex."""
    from conftest import commit, init_repo

    init_repo(pytester.path)
    (pytester.path / ".gitignore").write_text(".pytest_cache/\n__pycache__/\n/conftest.py\n")
    (pytester.path / "notes").mkdir()
    (pytester.path / "notes" / "a.md").write_text("# Plan\n\n1. Step.\n")
    pytester.makepyfile(
        test_review="""
        def test_review(adversarial_review):
            adversarial_review.plan("notes/a.md").assert_approved()
        """
    )
    commit(pytester.path, "init")
    scripted_reviewer.set_script({"default": {"message": approved_review()}})
    return scripted_reviewer


def test_a_fixture_review_under_ci_refuses_a_codex_home_the_reviewer_may_write(
    pytester: pytest.Pytester, fixture_review: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("CODEX_HOME", str(pytester.path / ".codex"))
    monkeypatch.setenv("ADVREVIEW_ISOLATION", "none")  # the reviewer writes the repository
    result = pytester.runpytest("-p", "no:randomly", "-W", "default")
    result.assert_outcomes(failed=1)
    refused = "*UsageError*inside it: CODEX_HOME*under CI or --advreview-strict-exit*refused*"
    result.stdout.fnmatch_lines([refused])
    assert fixture_review.response_requests == []


def test_a_fixture_review_warns_of_a_codex_home_the_reviewer_may_write(
    pytester: pytest.Pytester, fixture_review: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("CI", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CODEX_HOME", str(pytester.path / ".codex"))
    monkeypatch.setenv("ADVREVIEW_ISOLATION", "none")  # the reviewer writes the repository
    result = pytester.runpytest("-p", "no:randomly", "-W", "default")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*ContainmentWarning*CODEX_HOME*"])
    assert len(fixture_review.response_requests) == 1


def test_a_fixture_review_with_nothing_exposed_or_a_read_only_sandbox_is_not_warned(
    pytester: pytest.Pytester, fixture_review: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    # CODEX_HOME is the fixture's, outside the repository.
    result = pytester.runpytest("-p", "no:randomly", "-W", "default")
    result.assert_outcomes(passed=1)
    monkeypatch.setenv("CODEX_HOME", str(pytester.path / ".codex"))
    (pytester.path / "test_review.py").write_text(
        "def test_review(adversarial_review):\n"
        '    adversarial_review.plan("notes/a.md", sandbox="read-only").assert_approved()\n'
    )
    result = pytester.runpytest("-p", "no:randomly", "-W", "default")
    result.assert_outcomes(passed=1)
