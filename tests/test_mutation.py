"""Tests of ``pytest_advreview.workspace.mutation``: snapshots of real temporary git repositories.

Each test plays the reviewer between two snapshots and checks what :func:`compare`
reports.  git runs without global or system config, below a ceiling at ``tmp_path``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import commit, git, init_repo, write
from pytest_advreview.git import STATUS_V2_ARGS, StatusEntry, parse_status_v2_z
from pytest_advreview.options import DEFAULT_ALLOW_UNTRACKED
from pytest_advreview.workspace.mutation import (
    Mutation,
    MutationError,
    compare,
    take_snapshot,
)

WEIRD = 'sp ace "q" $HOME.txt'

pytestmark = pytest.mark.usefixtures("hermetic_git")


def parse_status_z(data: bytes) -> list[StatusEntry]:
    """Parse ``git status --porcelain=v1 -z`` output: the oracle for the v2 parser.

    Each record is ``XY PATH\\0``; renames and copies carry the source as an extra
    ``ORIG\\0`` field after the destination.
    """
    fields = data.split(b"\0")
    entries: list[StatusEntry] = []
    i = 0
    while i < len(fields):
        record = fields[i]
        i += 1
        if not record:
            continue
        xy = record[:2].decode("ascii", "replace")
        path = os.fsdecode(record[3:])
        if "R" in xy or "C" in xy:
            i += 1  # the source of a rename or copy, a field of its own
        entries.append(StatusEntry(xy, path))
    return entries


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A committed repository with a few tracked files, one of them with an odd name."""
    root = init_repo(tmp_path / "repo")
    write(root, "src/app.py", "v1\n")
    write(root, "docs/plans/p.md", "plan\n")
    write(root, WEIRD, "odd\n")
    commit(root, "initial")
    return root.resolve()


@pytest.fixture
def inputs(tmp_path: Path) -> list[Path]:
    """Review inputs outside the repository, like the per-item prompt files."""
    work = tmp_path / "work"
    return [write(work, "prompt.md", "prompt\n"), write(work, "plan-copy.md", "copy\n")]


def check(repo: Path | None, inputs: list[Path], act: object) -> list[Mutation]:
    before = take_snapshot(repo, inputs)
    assert callable(act)
    act()
    after = take_snapshot(repo, inputs)
    return compare(before, after, allow_untracked=DEFAULT_ALLOW_UNTRACKED)


def test_no_change_is_empty_even_with_dirty_and_untracked_files(
    repo: Path, inputs: list[Path]
) -> None:
    write(repo, "src/app.py", "dirty before the review\n")
    write(repo, "notes.txt", "untracked before the review\n")
    assert check(repo, inputs, lambda: None) == []


def test_tracked_change_is_modified(repo: Path, inputs: list[Path]) -> None:
    found = check(repo, inputs, lambda: write(repo, "src/app.py", "reviewer\n"))
    assert found == [
        Mutation(path="src/app.py", kind="modified", detail="tracked file changed (' M')")
    ]


def test_new_untracked_file_is_reported(repo: Path, inputs: list[Path]) -> None:
    found = check(repo, inputs, lambda: write(repo, "out/result.log"))
    assert found == [Mutation(path="out/result.log", kind="untracked", detail="new untracked file")]


def test_allowed_untracked_files_are_ignored(repo: Path, inputs: list[Path]) -> None:
    def act() -> None:
        write(repo, ".pytest_cache/x")
        write(repo, "src/__pycache__/app.cpython-311.pyc")
        write(repo, "__pycache__/top.pyc")

    assert check(repo, inputs, act) == []


def test_allow_list_does_not_hide_other_untracked_files(repo: Path, inputs: list[Path]) -> None:
    def act() -> None:
        write(repo, ".pytest_cache/x")
        write(repo, "pytest_cache_lookalike/x")

    found = check(repo, inputs, act)
    assert [m.path for m in found] == ["pytest_cache_lookalike/x"]


def test_changed_input_outside_the_repo_is_input_changed(repo: Path, inputs: list[Path]) -> None:
    found = check(repo, inputs, lambda: inputs[0].write_text("tampered\n"))
    assert found == [
        Mutation(path=str(inputs[0]), kind="input-changed", detail="review input changed")
    ]


def test_deleted_input_is_input_changed(repo: Path, inputs: list[Path]) -> None:
    found = check(repo, inputs, inputs[1].unlink)
    assert found == [
        Mutation(path=str(inputs[1]), kind="input-changed", detail="review input deleted")
    ]


def test_plan_under_review_inside_the_repo_is_reported_once(repo: Path) -> None:
    plan = repo / "docs/plans/p.md"
    found = check(repo, [plan], lambda: plan.write_text("rewritten\n"))
    assert found == [
        Mutation(path="docs/plans/p.md", kind="input-changed", detail="review input changed")
    ]


def test_already_dirty_file_changed_again_is_modified(repo: Path, inputs: list[Path]) -> None:
    write(repo, "src/app.py", "user's uncommitted edit\n")
    found = check(repo, inputs, lambda: write(repo, "src/app.py", "reviewer's edit\n"))
    assert found == [
        Mutation(
            path="src/app.py",
            kind="modified",
            detail="file already changed before the review, changed again",
        )
    ]


def test_untracked_file_changed_again_is_modified(repo: Path, inputs: list[Path]) -> None:
    write(repo, "notes.txt", "mine\n")
    found = check(repo, inputs, lambda: write(repo, "notes.txt", "reviewer\n"))
    assert [(m.path, m.kind) for m in found] == [("notes.txt", "modified")]


def test_odd_path_is_reported_exactly(repo: Path, inputs: list[Path]) -> None:
    def act() -> None:
        write(repo, WEIRD, "changed\n")
        write(repo, f"new {WEIRD}")

    found = check(repo, inputs, act)
    assert [(m.path, m.kind) for m in found] == [
        (f"new {WEIRD}", "untracked"),
        (WEIRD, "modified"),
    ]


def test_tracked_deletion_is_deleted(repo: Path, inputs: list[Path]) -> None:
    found = check(repo, inputs, (repo / "src/app.py").unlink)
    assert [(m.path, m.kind) for m in found] == [("src/app.py", "deleted")]


def test_staging_a_new_file_is_added(repo: Path, inputs: list[Path]) -> None:
    def act() -> None:
        write(repo, "src/extra.py")
        git(repo, "add", "src/extra.py")

    found = check(repo, inputs, act)
    assert [(m.path, m.kind) for m in found] == [("src/extra.py", "added")]


def test_reverting_the_users_change_is_reported(repo: Path, inputs: list[Path]) -> None:
    write(repo, "src/app.py", "user's work in progress\n")
    found = check(repo, inputs, lambda: git(repo, "checkout", "--", "src/app.py"))
    assert [(m.path, m.kind) for m in found] == [("src/app.py", "modified")]
    assert "reverted" in found[0].detail


def test_commit_by_the_reviewer_moves_head(repo: Path, inputs: list[Path]) -> None:
    def act() -> None:
        write(repo, "src/app.py", "committed by the reviewer\n")
        git(repo, "commit", "-q", "-am", "sneaky")

    found = check(repo, inputs, act)
    assert [(m.path, m.kind) for m in found] == [("HEAD", "modified")]
    assert "HEAD moved" in found[0].detail


def test_outside_git_only_inputs_are_watched(tmp_path: Path, inputs: list[Path]) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    snapshot = take_snapshot(None, inputs)
    assert snapshot.root is None
    assert snapshot.status == {}
    assert check(None, inputs, lambda: write(plain, "anything")) == []
    found = check(None, inputs, lambda: inputs[0].write_text("changed\n"))
    assert [m.kind for m in found] == ["input-changed"]


def test_snapshot_keys_status_by_the_exact_path(repo: Path, inputs: list[Path]) -> None:
    write(repo, "src/app.py", "dirty\n")
    write(repo, WEIRD, "dirty too\n")
    snapshot = take_snapshot(repo, inputs)
    assert snapshot.status == {"src/app.py": " M", WEIRD: " M"}


def test_snapshot_of_a_directory_outside_git_is_a_mutation_error(
    tmp_path: Path, inputs: list[Path]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(MutationError, match="cannot snapshot the workspace"):
        take_snapshot(plain, inputs)


def _status(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True).stdout


def test_porcelain_v2_parses_to_the_same_entries_as_v1(repo: Path) -> None:
    """The snapshot's one-call status (v2 + branch header) equals v1 plus rev-parse HEAD."""
    write(repo, "src/app.py", "unstaged\n")  # " M"
    write(repo, "docs/plans/p.md", "staged\n")
    git(repo, "add", "docs/plans/p.md")
    write(repo, "docs/plans/p.md", "staged, then changed again\n")  # "MM"
    write(repo, "new dir/staged new.md", "new\n")
    git(repo, "add", "new dir/staged new.md")  # "A "
    (repo / WEIRD).unlink()  # " D"
    write(repo, "untracked/é x.txt", "u\n")  # "??"
    git(repo, "mv", "src/app.py", "src/moved.py")  # a rename, listed as D + A (--no-renames)
    v1 = parse_status_z(
        _status(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
    )
    head, v2 = parse_status_v2_z(_status(repo, *STATUS_V2_ARGS))
    assert sorted(v2, key=lambda e: e.path) == sorted(v1, key=lambda e: e.path)
    assert {e.xy for e in v2} >= {"MM", "A ", "??", " D"}
    assert head == git(repo, "rev-parse", "HEAD").strip()


def test_porcelain_v2_of_an_unborn_branch_and_a_conflict(tmp_path: Path) -> None:
    root = tmp_path / "unborn"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    write(root, "a.txt")
    head, entries = parse_status_v2_z(_status(root, *STATUS_V2_ARGS))
    assert head is None
    assert entries == [StatusEntry("??", "a.txt")]

    git(root, "config", "user.name", "T")
    git(root, "config", "user.email", "t@example.com")
    git(root, "add", "a.txt")
    git(root, "commit", "-qm", "1")
    git(root, "checkout", "-qb", "other")
    write(root, "a.txt", "other\n")
    git(root, "commit", "-qam", "2")
    git(root, "checkout", "-q", "main")
    write(root, "a.txt", "main\n")
    git(root, "commit", "-qam", "3")
    merge = subprocess.run(["git", "merge", "-q", "other"], cwd=root, capture_output=True)
    assert b"CONFLICT" in merge.stdout + merge.stderr
    v1 = parse_status_z(
        _status(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
    )
    _, v2 = parse_status_v2_z(_status(root, *STATUS_V2_ARGS))
    assert v2 == v1 == [StatusEntry("UU", "a.txt")]


def test_known_toplevel_gives_the_same_snapshot(repo: Path, inputs: list[Path]) -> None:
    write(repo, "src/app.py", "dirty\n")
    first = take_snapshot(repo, inputs)
    assert first.root is not None
    assert take_snapshot(repo, inputs, toplevel=Path(first.root)) == first
