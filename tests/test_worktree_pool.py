"""The run's review worktrees are made once and reset between reviews, never reused dirty.

A worktree goes back to the pool only when nothing in it or its git admin folder changed
during its review, and is handed out again only after that was checked once more and it
was brought up to the user's tree as it is then.  Anything else removes it: the next
review gets a new one.  Real git repositories throughout; the end-to-end tests drive the
real Codex CLI against the scripted server, whose reviewer really writes.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import ReviewRepo, commit, git, init_repo
from pytest_advreview.testing import approved_review, shell_step
from pytest_advreview.workspace.isolation import Worktree, WorktreePool, leftover_worktrees


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = init_repo(tmp_path / "repo")
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('app')\n")
    (root / "README.md").write_text("# project\n")
    commit(root, "initial")
    # The user's own work in progress: an unstaged edit, a staged file, an untracked one.
    (root / "README.md").write_text("# project, edited\n")
    (root / "staged.txt").write_text("staged\n")
    git(root, "add", "staged.txt")
    (root / "notes").mkdir()
    (root / "notes" / "todo.md").write_text("todo\n")
    return root


@pytest.fixture
def pool(tmp_path: Path) -> WorktreePool:
    return WorktreePool(tmp_path / "pool")


def _files(top: Path) -> dict[str, bytes]:
    """Every file below ``top`` except git's own, with its bytes."""
    found = {}
    for folder, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            path = Path(folder, name)
            if name != ".git":
                found[path.relative_to(top).as_posix()] = path.read_bytes()
    return found


def _staged(top: Path) -> str:
    return git(top, "diff", "--cached", "--name-status", "HEAD")


def test_a_clean_worktree_is_reset_and_handed_out_again(repo: Path, pool: WorktreePool) -> None:
    first = pool.acquire(repo)
    pool.release(first, repo)
    # The user's tree moves on between the reviews (as a fixer or a lead's edit would).
    (repo / "notes" / "todo.md").unlink()
    (repo / "notes" / "new.md").write_text("new\n")
    (repo / "README.md").write_text("# project, edited again\n")
    (repo / "src" / "app.py").write_text("print('changed')\n")

    second = pool.acquire(repo)

    assert second is first and (pool.made, pool.reused) == (1, 1)
    fresh = Worktree.create(repo, repo.parent / "fresh")
    try:
        assert _files(second.path) == _files(fresh.path)
        assert _staged(second.path) == _staged(fresh.path) == "A\tstaged.txt\n"
    finally:
        fresh.remove()
    # The folder the deleted untracked file left is gone too, as in a new worktree.
    (repo / "notes" / "new.md").unlink()
    (repo / "notes").rmdir()
    pool.release(second, repo)
    third = pool.acquire(repo)
    assert third is first and not (third.path / "notes").exists()


def _write_tracked(tree: Path) -> None:
    (tree / "src" / "app.py").write_text("print('planted')\n")


def _write_same_size_same_mtime(tree: Path) -> None:
    path = tree / "src" / "app.py"
    before = path.stat()
    path.write_text("print('PLANT')\n")  # the same length
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _delete(tree: Path) -> None:
    (tree / "README.md").unlink()


def _chmod(tree: Path) -> None:
    path = tree / "src" / "app.py"
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _untracked(tree: Path) -> None:
    (tree / "src" / "planted.py").write_text("x = 1\n")


def _ignored(tree: Path) -> None:
    (tree / "debug.log").write_text("planted\n")


def _ignored_folder(tree: Path) -> None:
    (tree / "build").mkdir()
    (tree / "build" / "out.bin").write_bytes(b"\0")


def _empty_folder(tree: Path) -> None:
    (tree / "empty").mkdir()


def _move_head(tree: Path) -> None:
    git(tree, "commit", "-q", "--allow-empty", "-m", "planted")


def _stage(tree: Path) -> None:
    git(tree, "add", "README.md")


def _admin_folder(tree: Path) -> None:
    admin = Path(git(tree, "rev-parse", "--absolute-git-dir").strip())
    (admin / "info").mkdir(exist_ok=True)
    (admin / "info" / "exclude").write_text("*.py\n")


def _dot_git_file(tree: Path) -> None:
    dot_git = tree / ".git"
    dot_git.write_text(dot_git.read_text())  # the same bytes, written again


DIRTY: dict[str, Callable[[Path], None]] = {
    "wrote a tracked file": _write_tracked,
    "wrote it back to its size and mtime": _write_same_size_same_mtime,
    "deleted a file": _delete,
    "chmod-ed a file": _chmod,
    "left an untracked file": _untracked,
    "left an ignored file": _ignored,
    "left an ignored folder": _ignored_folder,
    "left an empty folder": _empty_folder,
    "moved HEAD": _move_head,
    "staged a file": _stage,
    "wrote the git admin folder": _admin_folder,
    "rewrote .git": _dot_git_file,
}


@pytest.mark.parametrize("change", DIRTY.values(), ids=DIRTY.keys())
def test_a_worktree_changed_during_its_review_is_removed_not_reused(
    repo: Path, pool: WorktreePool, change: Callable[[Path], None]
) -> None:
    first = pool.acquire(repo)
    change(first.path)

    pool.release(first, repo)

    assert not first.path.exists()
    assert str(first.path) not in leftover_worktrees(repo)
    second = pool.acquire(repo)
    assert second is not first and second.path != first.path
    assert (pool.made, pool.reused, pool.discarded) == (2, 0, 1)
    assert _files(second.path) == {
        ".gitignore": b"*.log\nbuild/\n",
        "README.md": b"# project, edited\n",
        "notes/todo.md": b"todo\n",
        "src/app.py": b"print('app')\n",
        "staged.txt": b"staged\n",
    }


@pytest.mark.parametrize("change", [_write_tracked, _untracked, _move_head])
def test_a_worktree_changed_while_idle_in_the_pool_is_removed_not_reused(
    repo: Path, pool: WorktreePool, change: Callable[[Path], None]
) -> None:
    first = pool.acquire(repo)
    pool.release(first, repo)
    change(first.path)

    second = pool.acquire(repo)

    assert second is not first and not first.path.exists()
    assert pool.discarded == 1


def test_a_new_user_head_or_staged_change_builds_a_new_worktree(
    repo: Path, pool: WorktreePool
) -> None:
    first = pool.acquire(repo)
    pool.release(first, repo)
    (repo / "more.txt").write_text("more\n")
    git(repo, "add", "more.txt")

    second = pool.acquire(repo)
    assert second is not first
    assert _staged(second.path) == "A\tmore.txt\nA\tstaged.txt\n"
    pool.release(second, repo)
    commit(repo, "the user commits")

    third = pool.acquire(repo)
    assert third is not second
    assert git(third.path, "rev-parse", "HEAD") == git(repo, "rev-parse", "HEAD")


def test_closing_the_pool_removes_every_worktree_idle_or_not(
    repo: Path, pool: WorktreePool
) -> None:
    idle, busy = pool.acquire(repo), pool.acquire(repo)
    pool.release(idle, repo)

    assert pool.close() == []

    assert leftover_worktrees(repo) == []
    assert not idle.path.exists() and not busy.path.exists() and not pool.folder.exists()
    # Given back after the close: removed, not kept.
    pool.release(busy, repo)
    assert leftover_worktrees(repo) == []


# -- end to end: the real Codex CLI, whose reviewer really writes ---------------------------

#: The tool call of the second review: where it runs and what it finds there.
_LOOK = 'pwd; ls -a; test -e planted.txt && echo "PLANTED-SEEN" || echo "NOTHING-PLANTED"'


def _two_reviews(review_repo: ReviewRepo, first_writes: bool) -> tuple[str, str]:
    """Review two plans one after the other; the first reviewer writes a file into its
    folder when ``first_writes``.  Returns each review's tool output."""
    review_repo.plan("first.md")
    review_repo.plan("second.md")
    write = "echo planted > planted.txt; " if first_writes else ""
    review_repo.answer("first.md", shell_step(f"{write}pwd", "c1"), {"message": approved_review()})
    review_repo.answer("second.md", shell_step(_LOOK, "c2"), {"message": approved_review()})

    result = review_repo.run("--advreview-diff=none", "--advreview-jobs=1", "-p", "no:randomly")

    first, second = review_repo.tool_outputs()
    if first_writes:
        result.assert_outcomes(passed=2, errors=1)  # the first: at its teardown
        assert "planted.txt" in result.stdout.str()  # the mutation check saw the write
    else:
        result.assert_outcomes(passed=2)
    assert leftover_worktrees(review_repo.path) == []
    return first, second


def _folder(output: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("/"))


@pytest.mark.real_codex
def test_the_next_review_gets_the_clean_worktree_again(review_repo: ReviewRepo) -> None:
    first, second = _two_reviews(review_repo, first_writes=False)

    assert _folder(first) == _folder(second), (first, second)
    assert "NOTHING-PLANTED" in second


@pytest.mark.real_codex
def test_a_worktree_the_reviewer_wrote_is_never_handed_to_the_next_review(
    review_repo: ReviewRepo,
) -> None:
    first, second = _two_reviews(review_repo, first_writes=True)

    assert "NOTHING-PLANTED" in second and "PLANTED-SEEN" not in second, second
    assert _folder(first) != _folder(second), (first, second)
    assert not Path(_folder(first)).exists()


def test_the_controller_sweeps_the_pool_a_crashed_worker_left(repo: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    crashed = WorktreePool(run_dir / "worktrees-4242")  # never closed: its process died
    tree = crashed.acquire(repo)
    assert leftover_worktrees(repo) == [str(tree.path)]
    kept = run_dir / "ledger.json"
    kept.write_text("{}")  # the run's own files are not the sweep's

    WorktreePool.sweep(run_dir, repo)

    assert leftover_worktrees(repo) == [] and not tree.path.exists()
    assert kept.exists()


def test_a_worktree_with_a_submodule_is_never_reset_but_rebuilt(
    repo: Path, pool: WorktreePool, tmp_path: Path
) -> None:
    # A submodule's checkout is a clone of its own, with a .git the reset does not check.
    library = init_repo(tmp_path / "library")
    (library / "lib.py").write_text("x = 1\n")
    commit(library, "library")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "lib")
    first = pool.acquire(repo)
    assert (first.path / "lib" / "lib.py").read_text() == "x = 1\n"
    pool.release(first, repo)

    second = pool.acquire(repo)

    assert second is not first and pool.reused == 0
    assert (second.path / "lib" / "lib.py").read_text() == "x = 1\n"


def test_a_worktree_that_cannot_be_walked_counts_as_changed(repo: Path, pool: WorktreePool) -> None:
    first = pool.acquire(repo)
    admin = Path(git(first.path, "rev-parse", "--absolute-git-dir").strip())
    admin.rename(admin.parent / "moved-away")  # what was in it can no longer be checked

    assert not first.clean()
    assert not first.clean()  # and it never becomes clean again


def test_a_worktree_whose_reset_fails_is_removed_and_replaced(
    repo: Path, pool: WorktreePool, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = pool.acquire(repo)
    pool.release(first, repo)
    (repo / "README.md").write_text("# changed again\n")

    def refuse(_self: Worktree, name: str) -> None:
        raise OSError(f"cannot write {name}")

    with monkeypatch.context() as patch:
        patch.setattr(Worktree, "_sync", refuse)
        assert not first.reset()
    second = pool.acquire(repo)
    assert second is not first and (second.path / "README.md").read_text() == "# changed again\n"
