"""``head.py`` on its own: resolving REF and the private read-only checkout (no Codex)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from conftest import git
from pytest_advreview.workspace import head


@pytest.fixture
def repo_with_head(git_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``git_repo`` plus a branch ``pr`` whose files include a link to a file outside it."""
    outside = tmp_path_factory.mktemp("outside") / "runner-file.txt"
    outside.write_text("a file of the runner\n")
    git(git_repo, "checkout", "-q", "-b", "pr")
    (git_repo / "docs/plans").mkdir(parents=True)
    (git_repo / "docs/plans/p.md").write_text("# plan\n")
    (git_repo / "link.txt").symlink_to(outside)
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "head")
    git(git_repo, "checkout", "-q", "main")
    return git_repo, outside


def test_checkout_is_read_only_its_own_repository_and_removed(
    repo_with_head: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, outside = repo_with_head
    checkout = head.materialise(repo, "pr", None, rootdir=repo)
    top = Path(checkout.path)
    try:
        assert checkout.sha == git(repo, "rev-parse", "pr").strip()
        assert checkout.base == "HEAD"
        assert checkout.base_sha == checkout.merge_base == git(repo, "rev-parse", "main").strip()
        assert (top / "docs/plans/p.md").read_text() == "# plan\n"
        # Every file and folder of REF is read-only ...
        for path in (top, top / "docs", top / "docs/plans", top / "docs/plans/p.md"):
            assert not stat.S_IMODE(path.stat().st_mode) & 0o222, path
        # ... but chmod did not follow REF's link to a file of this machine (mode bits:
        # os.access says yes to root whatever they are).
        assert stat.S_IMODE(outside.stat().st_mode) & 0o200
        # Its own repository (Codex must not see a worktree of a trusted repository),
        # with HEAD at REF and a clean status.
        assert (top / ".git").is_dir()
        assert git(top, "rev-parse", "--git-common-dir").strip() == ".git"
        assert git(top, "status", "--porcelain") == ""
        assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
        assert not top.resolve().is_relative_to(repo.resolve())
    finally:
        head.remove(checkout)
    assert not Path(checkout.holder).exists()
    assert outside.read_text() == "a file of the runner\n"


def test_a_sha_is_pinned_when_the_branch_moves_on(repo_with_head: tuple[Path, Path]) -> None:
    repo, _ = repo_with_head
    first = git(repo, "rev-parse", "pr").strip()
    checkout = head.materialise(repo, first, None, rootdir=repo)
    try:
        git(repo, "checkout", "-q", "pr")
        (repo / "docs/plans/p.md").write_text("# pushed after the approval\n")
        git(repo, "commit", "-qam", "later push")
        assert (Path(checkout.path) / "docs/plans/p.md").read_text() == "# plan\n"
        assert checkout.sha == first
    finally:
        head.remove(checkout)


def test_an_explicit_base_is_used_and_a_bad_one_is_named(
    repo_with_head: tuple[Path, Path],
) -> None:
    repo, _ = repo_with_head
    with pytest.raises(head.HeadError, match=r"the base 'nope' of --advreview-head=pr"):
        head.materialise(repo, "pr", "nope", rootdir=repo)
    checkout = head.materialise(repo, "pr", "main", rootdir=repo)
    head.remove(checkout)
    assert checkout.base == "main"


@pytest.mark.parametrize("name", ["GIT_DIR", "GIT_WORK_TREE"])
def test_git_redirected_by_the_environment_is_refused(
    repo_with_head: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    repo, _ = repo_with_head
    monkeypatch.setenv(name, str(repo / ".git") if name == "GIT_DIR" else str(repo))
    with pytest.raises(head.HeadError, match=f"cannot run while {name} is set"):
        head.materialise(repo, "pr", None, rootdir=repo)
    monkeypatch.delenv(name)
    assert not (repo / "docs/plans/p.md").exists()  # REF was not checked out into main
    assert git(repo, "status", "--porcelain") == ""
