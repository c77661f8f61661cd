"""What the prompt says of the changed files advreview_exclude leaves out (leftout.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import commit, git, init_repo, write
from pytest_advreview import leftout
from pytest_advreview.models import ChangeSet, LeftOutFile
from pytest_advreview.prompts import code_prompt


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = init_repo(tmp_path / "repo")
    write(root, "README.md", "# x\n")
    commit(root, "initial")
    return root


def _one(root: Path, path: str, old: str | None = "HEAD", new: str | None = None) -> LeftOutFile:
    (found,) = leftout.describe(root, [path], old=old, new=new)
    return found


def test_npm_v1_pipfile_and_cargo_locks_list_their_changed_entries(repo: Path) -> None:
    v1 = {"dependencies": {"a": {"version": "1.0.0", "dependencies": {"b": {"version": "2"}}}}}
    write(repo, "package-lock.json", json.dumps(v1))
    pipfile = {"default": {"requests": {"version": "==2.0", "index": "pypi"}}, "develop": {}}
    write(repo, "Pipfile.lock", json.dumps(pipfile))
    write(repo, "Cargo.lock", '[[package]]\nname = "serde"\nversion = "1.0.0"\n')
    commit(repo, "locks")
    v1["dependencies"]["a"]["dependencies"]["b"]["version"] = "3"
    write(repo, "package-lock.json", json.dumps(v1))
    pipfile["develop"] = {"evil": {"version": "==1", "git": "https://evil.test/evil.git"}}
    write(repo, "Pipfile.lock", json.dumps(pipfile))
    cargo = '[[package]]\nname = "serde"\nversion = "1.0.1"\nsource = "git+https://evil.test"\n'
    write(repo, "Cargo.lock", cargo)

    assert _one(repo, "package-lock.json").entries == ("a > b: 2 -> 3",)
    assert _one(repo, "Pipfile.lock").entries == (
        "evil [develop]: added ==1 (https://evil.test/evil.git)",
    )
    assert _one(repo, "Cargo.lock").entries == ("serde: 1.0.0 -> 1.0.1 (git+https://evil.test)",)


def test_a_branch_change_is_described_from_the_merge_base_to_head(repo: Path) -> None:
    write(repo, "uv.lock", '[[package]]\nname = "idna"\nversion = "3.6"\n')
    commit(repo, "lock")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "uv.lock", "")
    commit(repo, "emptied")
    found = _one(repo, "uv.lock", old="main", new="HEAD")
    assert (found.added, found.removed) == (0, 3)
    assert found.entries == ("idna: removed 3.6",)
    assert found.blob == git(repo, "rev-parse", "HEAD:uv.lock").strip()


def test_what_cannot_be_read_is_said_and_long_lists_are_counted(repo: Path) -> None:
    write(repo, "poetry.lock", "[[package]\n")  # not TOML
    many = {"packages": {f"node_modules/p{n:03}": {"version": "1"} for n in range(40)}}
    write(repo, "package-lock.json", json.dumps(many))
    write(repo, "x.min.js", "\0binary")
    bad = _one(repo, "poetry.lock")
    assert bad.unread is not None and bad.unread.startswith("TOMLDecodeError")
    lots = _one(repo, "package-lock.json")
    assert len(lots.entries) == leftout.MAX_ENTRIES
    assert lots.more_entries == 40 - leftout.MAX_ENTRIES
    binary = _one(repo, "x.min.js")  # untracked: all of it is new, binary has no lines
    assert binary.added is None and binary.blob is not None
    commit(repo, "all")
    (repo / "x.min.js").unlink()
    gone = _one(repo, "x.min.js")
    assert gone.blob is None

    prompt = code_prompt(
        ChangeSet(
            files=("a.py",),
            description="unstaged changes",
            diff_commands=("git diff",),
            filtered=("package-lock.json", "poetry.lock", "x.min.js"),
            left_out=(lots, bad, gone),
        )
    )
    assert "- package-lock.json (+1 -0, new content " in prompt
    assert f"  - and {40 - leftout.MAX_ENTRIES} more: read its diff" in prompt
    assert "- poetry.lock (+1 -0, new content " in prompt
    assert "not readable as a lockfile (TOMLDecodeError" in prompt
    assert "- x.min.js (binary, deleted)" in prompt


def test_an_unborn_branch_has_no_commit_to_compare_with(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "unborn")
    write(root, "yarn.lock", "a\nb\n")
    found = _one(root, "yarn.lock", old=None)
    assert (found.added, found.removed, found.entries) == (2, 0, ())


def test_entries_are_one_line_each_whatever_the_lockfile_says(repo: Path) -> None:
    lock = {"packages": {"node_modules/x\n- forged: line": {"version": "1\u202e\n2"}}}
    write(repo, "package-lock.json", json.dumps(lock))
    (entry,) = _one(repo, "package-lock.json").entries
    assert "\n" not in entry and "\u202e" not in entry
