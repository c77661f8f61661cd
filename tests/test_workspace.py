"""The reviewer's workspace (``workspace.py``) on real temporary git repositories: what a
review watches, what flows back into the checkout, and how many reviews run at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import commit, init_repo, write
from pytest_advreview.parallel import jobs_for
from pytest_advreview.settings import Settings
from pytest_advreview.workspace import Layout, Workspace, WorkspaceError

pytestmark = pytest.mark.usefixtures("hermetic_git")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = init_repo(tmp_path / "repo")
    write(root, ".gitignore", ".venv/\n")
    write(root, "docs/plans/x.md", "# Plan\n")
    commit(root)
    write(root, ".venv/lib/site.py", "GATE = 1\n")  # ignored, like a venv in the checkout
    return root


def _workspace(repo: Path, settings: Settings | None = None) -> Workspace:
    layout = Layout.decide(settings or Settings(), repo, in_git=True)
    return Workspace(layout, inputs=[repo / "docs/plans/x.md"])


def test_a_write_in_the_worktree_is_caught_there_and_never_reaches_the_checkout(
    repo: Path, tmp_path: Path
) -> None:
    ws = _workspace(repo)
    root = ws.open(tmp_path / "work")
    assert root != repo and not (root / ".venv").exists()  # ignored folders stay behind
    ws.rebaseline()
    write(root, "pwned.txt")
    (root / "docs/plans/x.md").write_text("# Plan, rewritten by the reviewer\n")
    assert sorted((c.path, c.kind) for c in ws.changes()) == [
        ("docs/plans/x.md", "input-changed"),
        ("pwned.txt", "untracked"),
    ]
    assert ws.changes() == []  # each path once
    ws.close()
    assert not root.exists()
    assert not (repo / "pwned.txt").exists()
    assert (repo / "docs/plans/x.md").read_text() == "# Plan\n"


def test_a_fixers_edit_of_the_checkout_reaches_the_worktree(repo: Path, tmp_path: Path) -> None:
    ws = _workspace(repo)
    root = ws.open(tmp_path / "work")
    write(repo, "docs/plans/x.md", "# Plan, fixed\n")
    write(repo, "docs/plans/new.md", "# New\n")
    ws.refresh()
    assert (root / "docs/plans/x.md").read_text() == "# Plan, fixed\n"
    assert (root / "docs/plans/new.md").read_text() == "# New\n"
    ws.close()


def test_only_the_leads_edits_flow_back(repo: Path, tmp_path: Path) -> None:
    ws = _workspace(repo, Settings(lead="codex"))
    root = ws.open(tmp_path / "work")
    write(root, "docs/plans/x.md", "# Plan, edited by the lead\n")
    write(root, "other.txt", "not the lead's to hand back\n")
    ws.adopt(["docs/plans/x.md"])
    ws.close()
    assert (repo / "docs/plans/x.md").read_text() == "# Plan, edited by the lead\n"
    assert not (repo / "other.txt").exists()


def test_a_writer_no_sandbox_holds_is_watched_in_the_checkout_too(
    repo: Path, tmp_path: Path
) -> None:
    ws = _workspace(repo, Settings(reviewer="command", command="review"))
    assert ws.layout.watch_checkout and ws.layout.shared_writable
    ws.open(tmp_path / "work")
    ws.rebaseline()
    write(repo, "planted.txt")
    [change] = ws.changes(checkout_only=True)
    assert change.path == "planted.txt" and "in the checkout" in change.detail
    ws.close()


def test_a_removed_workspace_is_never_snapshotted(repo: Path, tmp_path: Path) -> None:
    ws = _workspace(repo)
    ws.open(tmp_path / "work")
    ws.close()
    ws.close()  # idempotent
    with pytest.raises(WorkspaceError, match="removed before its last comparison"):
        ws.snapshot()


def test_a_worktree_that_cannot_be_built_is_one_message(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    layout = Layout(repo_root=plain, isolated=True)
    with pytest.raises(WorkspaceError, match="needs a git work tree"):
        Workspace(layout).open(tmp_path / "work")


@pytest.mark.parametrize(
    ("setting", "shared", "worker", "expected"),
    [
        ("auto", False, False, 4),
        ("auto", True, False, 1),  # one folder the reviews may write
        ("auto", False, True, 1),  # an xdist worker: -n runs them side by side already
        (2, True, False, 2),  # an explicit number is what it says
        (1, False, False, 1),
    ],
)
def test_jobs_auto(setting: int | str, shared: bool, worker: bool, expected: int) -> None:
    assert jobs_for(setting, shared_writable=shared, xdist_worker=worker) == expected
