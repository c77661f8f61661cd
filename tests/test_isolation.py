"""Tests of ``pytest_advreview.workspace.isolation``: worktrees of real temporary git repositories.

The mirror is compared file by file (bytes, symlink targets, executable bits) and through
git's own eyes (``status``, ``diff``, ``diff --cached``), and the user's tree is checked
to be untouched whatever happens in the worktree.
"""

from __future__ import annotations

import os
import stat
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import git
from pytest_advreview.git import GitError
from pytest_advreview.workspace.isolation import (
    WORKTREE_PREFIX,
    IsolationError,
    Worktree,
    leftover_worktrees,
)

WEIRD = 'sp ace "q" $HOME.txt'
BINARY = bytes(range(256)) * 8

pytestmark = pytest.mark.usefixtures("hermetic_git")


@contextmanager
def worktree(repo: Path, parent: Path) -> Iterator[Worktree]:
    """A worktree removed at the end whatever happens in between, as the review removes it."""
    tree = Worktree.create(repo, parent)
    try:
        yield tree
    finally:
        tree.remove()


def tree_state(root: Path) -> dict[str, tuple[str, bytes, bool]]:
    """Every path below ``root`` except ``.git``: kind, content (or link target), exec bit."""
    found: dict[str, tuple[str, bytes, bool]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = Path(dirpath, name)
            if name == ".git":  # a worktree's .git is a file pointing at the admin dir
                continue
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[rel] = ("link", os.fsencode(os.readlink(path)), False)
            else:
                mode = path.stat().st_mode
                found[rel] = ("file", path.read_bytes(), bool(mode & stat.S_IXUSR))
    return found


def git_view(root: Path) -> tuple[str, str, str]:
    """What the reviewer's git commands show: status, staged diff, unstaged diff."""
    return (
        git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all"),
        git(root, "diff", "--cached", "--binary", "--no-color"),
        git(root, "diff", "--binary", "--no-color"),
    )


@pytest.fixture
def dirty_repo(git_repo: Path) -> Path:
    """A repository with every kind of local change the mirror must reproduce."""
    repo = git_repo
    (repo / "docs" / "plans").mkdir(parents=True)
    files = {
        "modified.txt": "one\ntwo\n",
        "staged.txt": "base\n",
        "mixed.txt": "base\n",
        "deleted.txt": "gone soon\n",
        "staged_deleted.txt": "gone soon\n",
        "reverted.txt": "original\n",
        "script.sh": "#!/bin/sh\necho hi\n",
        WEIRD: "weird name\n",
        "docs/plans/x.md": "# Plan\n",
        ".gitignore": "*.log\nbuild/\n",
    }
    for name, text in files.items():
        (repo / name).write_text(text, encoding="utf-8")
    (repo / "image.bin").write_bytes(BINARY)
    os.symlink("modified.txt", repo / "link")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "content")

    (repo / "modified.txt").write_text("one\nTWO\n", encoding="utf-8")  # unstaged
    (repo / "staged.txt").write_text("staged\n", encoding="utf-8")
    git(repo, "add", "staged.txt")
    (repo / "mixed.txt").write_text("staged part\n", encoding="utf-8")
    git(repo, "add", "mixed.txt")
    (repo / "mixed.txt").write_text("staged part\nunstaged part\n", encoding="utf-8")
    (repo / "deleted.txt").unlink()  # deleted, not staged
    git(repo, "rm", "-q", "staged_deleted.txt")
    (repo / "reverted.txt").write_text("in the index only\n", encoding="utf-8")
    git(repo, "add", "reverted.txt")
    (repo / "reverted.txt").write_text("original\n", encoding="utf-8")  # back to HEAD
    (repo / "new_staged.txt").write_text("new and staged\n", encoding="utf-8")
    git(repo, "add", "new_staged.txt")
    (repo / "image.bin").write_bytes(BINARY[::-1] + b"\0\0tail")  # binary change
    (repo / "script.sh").chmod(0o755)  # mode-only change
    (repo / WEIRD).write_text("weird name, changed\n", encoding="utf-8")
    os.unlink(repo / "link")
    os.symlink("staged.txt", repo / "link")  # symlink retargeted
    (repo / "docs" / "plans" / "new plan 'v2' $X.md").write_text("# New\n", encoding="utf-8")
    (repo / "untracked.bin").write_bytes(b"\0\1\2")
    (repo / "debug.log").write_text("ignored\n", encoding="utf-8")  # ignored: not mirrored
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_bytes(b"ignored")
    return repo


def ignored(paths: dict[str, tuple[str, bytes, bool]]) -> dict[str, tuple[str, bytes, bool]]:
    return {k: v for k, v in paths.items() if not (k.endswith(".log") or k.startswith("build/"))}


def test_mirror_equals_the_work_tree(dirty_repo: Path, tmp_path: Path) -> None:
    with worktree(dirty_repo, tmp_path) as wt:
        assert wt.path.is_dir()
        assert wt.path.parent.name.startswith(WORKTREE_PREFIX)
        assert tree_state(wt.path) == ignored(tree_state(dirty_repo))
        assert not (wt.path / "debug.log").exists()
        assert not (wt.path / "build").exists()
        # The reviewer's git commands see the same change set, staged and unstaged apart.
        assert git_view(wt.path) == git_view(dirty_repo)
        assert git(wt.path, "rev-parse", "HEAD") == git(dirty_repo, "rev-parse", "HEAD")
        assert git(wt.path, "rev-parse", "--abbrev-ref", "HEAD").strip() == "HEAD"  # detached


def test_clean_repo_mirror(git_repo: Path, tmp_path: Path) -> None:
    with worktree(git_repo, tmp_path) as wt:
        assert tree_state(wt.path) == tree_state(git_repo)
        assert git(wt.path, "status", "--porcelain") == ""


def test_created_from_a_subdirectory(dirty_repo: Path, tmp_path: Path) -> None:
    with worktree(dirty_repo / "docs" / "plans", tmp_path) as wt:
        assert wt.repo_root == dirty_repo.resolve()
        assert (wt.path / "docs" / "plans" / "x.md").is_file()
        assert wt.translate(dirty_repo / "docs" / "plans" / "x.md") == (
            wt.path / "docs" / "plans" / "x.md"
        )
        with pytest.raises(ValueError):
            wt.translate(tmp_path / "elsewhere")


def test_untracked_nested_repository_is_copied(git_repo: Path, tmp_path: Path) -> None:
    nested = git_repo / "vendor"
    nested.mkdir()
    git(nested, "init", "-q")
    (nested / "lib.py").write_text("x = 1\n", encoding="utf-8")
    with worktree(git_repo, tmp_path) as wt:
        assert (wt.path / "vendor" / "lib.py").read_text(encoding="utf-8") == "x = 1\n"


def test_user_tree_is_never_touched(dirty_repo: Path, tmp_path: Path) -> None:
    before_files = tree_state(dirty_repo)
    before_git = git_view(dirty_repo)
    before_head = git(dirty_repo, "rev-parse", "HEAD")
    before_index = git(dirty_repo, "ls-files", "--stage", "-z")
    with worktree(dirty_repo, tmp_path) as wt:
        # Play a reviewer that writes, deletes, stages and even commits.
        (wt.path / "modified.txt").write_text("reviewer was here\n", encoding="utf-8")
        (wt.path / "new_by_reviewer.txt").write_text("x\n", encoding="utf-8")
        (wt.path / "docs" / "plans" / "x.md").unlink()
        (wt.path / "secret.log").write_text("ignored write\n", encoding="utf-8")
        git(wt.path, "add", "-A")
        git(wt.path, "-c", "user.name=r", "-c", "user.email=r@x.invalid", "commit", "-qm", "r")
        # A read-only directory must not stop the removal.
        (wt.path / "ro").mkdir()
        (wt.path / "ro" / "f").write_text("", encoding="utf-8")
        (wt.path / "ro").chmod(0o500)
    assert tree_state(dirty_repo) == before_files
    assert git_view(dirty_repo) == before_git
    assert git(dirty_repo, "rev-parse", "HEAD") == before_head
    assert git(dirty_repo, "ls-files", "--stage", "-z") == before_index
    assert leftover_worktrees(dirty_repo) == []
    assert list(tmp_path.iterdir()) == []


def test_removed_after_an_exception(dirty_repo: Path, tmp_path: Path) -> None:
    with (
        pytest.raises(RuntimeError, match="review failed"),
        worktree(dirty_repo, tmp_path) as wt,
    ):
        raise RuntimeError("review failed")
    assert not wt.path.exists()
    assert leftover_worktrees(dirty_repo) == []
    assert git(dirty_repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_removed_after_ctrl_c(git_repo: Path, tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), worktree(git_repo, tmp_path) as wt:
        raise KeyboardInterrupt
    assert not wt.path.exists()
    assert leftover_worktrees(git_repo) == []


def test_remove_is_idempotent(git_repo: Path, tmp_path: Path) -> None:
    wt = Worktree.create(git_repo, tmp_path)
    assert leftover_worktrees(git_repo) == [str(wt.path)]
    wt.remove()
    wt.remove()
    assert leftover_worktrees(git_repo) == []


def test_remove_when_the_files_are_already_gone(git_repo: Path, tmp_path: Path) -> None:
    wt = Worktree.create(git_repo, tmp_path)
    subprocess.run(["rm", "-rf", str(wt.path.parent)], check=True)
    wt.remove()
    assert leftover_worktrees(git_repo) == []


def test_a_failed_mirror_leaves_nothing(
    dirty_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Worktree) -> None:
        raise GitError(["git", "apply"], self.path, 1, "patch does not apply")

    monkeypatch.setattr(Worktree, "_mirror", broken)
    with pytest.raises(
        IsolationError, match=r"could not build the review worktree.*does not apply"
    ):
        Worktree.create(dirty_repo, tmp_path)
    assert leftover_worktrees(dirty_repo) == []
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_while_mirroring_leaves_nothing(
    git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(self: Worktree) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Worktree, "_mirror", interrupted)
    with pytest.raises(KeyboardInterrupt):
        Worktree.create(git_repo, tmp_path)
    assert leftover_worktrees(git_repo) == []
    assert list(tmp_path.iterdir()) == []


def test_concurrent_worktrees_are_distinct(dirty_repo: Path, tmp_path: Path) -> None:
    made: list[Worktree] = []
    errors: list[BaseException] = []

    def create() -> None:
        try:
            made.append(Worktree.create(dirty_repo, tmp_path))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=create) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len({wt.path for wt in made}) == 4
    assert sorted(leftover_worktrees(dirty_repo)) == sorted(str(wt.path) for wt in made)
    for wt in made:
        assert (wt.path / "mixed.txt").read_text(encoding="utf-8") == (
            "staged part\nunstaged part\n"
        )
        wt.remove()
    assert leftover_worktrees(dirty_repo) == []


def test_leftover_worktrees_lists_only_ours_by_default(git_repo: Path, tmp_path: Path) -> None:
    git(git_repo, "worktree", "add", "-q", "--detach", str(tmp_path / "users own"), "HEAD")
    with worktree(git_repo, tmp_path / "reviews") as wt:
        assert leftover_worktrees(git_repo) == [str(wt.path)]
        assert len(leftover_worktrees(git_repo, ours_only=False)) == 2
    assert leftover_worktrees(git_repo, ours_only=False) == [
        str((tmp_path / "users own").resolve())
    ]


def test_not_a_git_work_tree(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(IsolationError, match=r"needs a git work tree.*drop --advreview-isolation"):
        Worktree.create(plain, tmp_path / "wt")


def test_no_commit_yet(tmp_path: Path) -> None:
    repo = tmp_path / "empty"
    repo.mkdir()
    git(repo, "init", "-q")
    with pytest.raises(IsolationError, match="has none yet"):
        Worktree.create(repo, tmp_path / "wt")
    assert not (tmp_path / "wt").exists() or list((tmp_path / "wt").iterdir()) == []


def test_refused_when_git_is_redirected(
    git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_INDEX_FILE", str(git_repo / ".git" / "index"))
    with pytest.raises(IsolationError, match=r"while GIT_INDEX_FILE is set .*git hook"):
        Worktree.create(git_repo, tmp_path)
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert leftover_worktrees(git_repo) == []


def test_post_checkout_hook_does_not_run(git_repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "hook-ran"
    hook = git_repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch '{marker}'\n", encoding="utf-8")
    hook.chmod(0o755)
    with worktree(git_repo, tmp_path / "wt"):
        pass
    assert not marker.exists()
