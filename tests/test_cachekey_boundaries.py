"""Boundaries of the cache key (cachekey.py): the depth limit of nested repositories (at,
below and above it), a nested repository's commit on its own, an unborn branch, the
branch mode's file list, the files outside the change set, and each part of the
reviewer's identity (where Codex's home is, what a digest looks like)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from conftest import commit, git, init_repo, write
from pytest_advreview.cachekey import (
    CacheKey,
    cache_key,
    change_set_hash,
    code_digest,
    plan_digest,
    plan_hash,
    reviewer_identity,
)
from pytest_advreview.models import ChangeSet, Decision, DecisionAction
from pytest_advreview.prompts import PROMPT_VERSION
from pytest_advreview.settings import Settings
from test_cachekey import _repo


@pytest.fixture
def repo(tmp_path: Path, hermetic_git: None) -> Path:
    return _repo(tmp_path / "repo")


def uncommitted(*files: str) -> ChangeSet:
    return ChangeSet(files=files, description="d", diff_commands=())


def key(repo: Path, *files: str) -> str:
    return change_set_hash(repo, uncommitted(*files))


def test_cache_key_copies_what_it_is_given() -> None:
    identity = {"model": "m"}
    decision = Decision(finding="AR-abc123", action=DecisionAction.ACCEPT)
    made = cache_key(identity, "content", [decision])
    assert made == CacheKey(reviewer={"model": "m"}, content="content", decisions=(decision,))
    identity["model"] = "changed"
    assert made.reviewer == {"model": "m"}
    assert cache_key({}, "c") == CacheKey(reviewer={}, content="c", decisions=())


def _nest(root: Path, levels: int) -> list[Path]:
    """``levels`` repositories, each untracked inside the one before (git lists each as
    ``n<level>/``)."""
    chain, outer = [], root
    for level in range(1, levels + 1):
        inner = _repo(outer / f"n{level}")
        chain.append(inner)
        outer = inner
    return chain


@pytest.mark.parametrize(("level", "counts"), [(7, True), (8, True), (9, False)])
def test_nested_repositories_count_down_to_eight_levels(
    repo: Path, level: int, counts: bool
) -> None:
    chain = _nest(repo, 9)
    (chain[level - 1] / "x.txt").write_text("1")
    base = key(repo, "n1/")
    (chain[level - 1] / "x.txt").write_text("2")
    assert (key(repo, "n1/") != base) is counts


def test_a_nested_repository_moved_to_another_commit_changes_the_key(repo: Path) -> None:
    nested = _repo(repo / "n1")
    base = key(repo, "n1/")
    assert key(repo, "n1/") == base
    git(nested, "commit", "-q", "--allow-empty", "-m", "next")
    assert key(repo, "n1/") != base


def test_a_nested_repository_without_a_commit_is_keyed_by_its_files(repo: Path) -> None:
    nested = init_repo(repo / "n1")
    (nested / "a.txt").write_text("1")
    base = key(repo, "n1/")
    (nested / "a.txt").write_text("2")
    assert key(repo, "n1/") != base
    git(nested, "add", "a.txt")
    staged = key(repo, "n1/")
    assert staged != base
    (nested / "a.txt").write_text("3")  # staged "2", work tree "3"
    assert key(repo, "n1/") not in (base, staged)


def test_on_an_unborn_branch_the_index_and_the_work_tree_both_count(
    tmp_path: Path, hermetic_git: None
) -> None:
    repo = init_repo(tmp_path / "unborn")
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", "a.txt")
    staged = key(repo, "a.txt")
    (repo / "a.txt").write_text("two\n")
    changed = key(repo, "a.txt")
    assert changed != staged
    git(repo, "add", "a.txt")
    assert key(repo, "a.txt") not in (staged, changed)


def test_files_outside_the_change_set_never_move_the_key(repo: Path) -> None:
    (repo / "a.txt").write_text("a")
    (repo / "b.txt").write_text("b")
    (repo / "z.txt").write_text("z")
    base = key(repo, "a.txt", "z.txt")
    (repo / "b.txt").write_text("changed")
    assert key(repo, "a.txt", "z.txt") == base
    (repo / "z.txt").write_text("changed")  # the last file of the set still counts
    assert key(repo, "a.txt", "z.txt") != base


def test_a_file_named_like_an_option_is_a_path(repo: Path) -> None:
    (repo / "--cached").write_text("a")
    base = key(repo, "--cached")
    (repo / "--cached").write_text("b")
    assert key(repo, "--cached") != base


def test_the_branch_key_is_the_diff_of_the_listed_files_since_the_base(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "a.txt").write_text("a")
    (repo / "b.txt").write_text("b")
    commit(repo, "two files")
    main = git(repo, "rev-parse", "HEAD~1").strip()

    def branch(*files: str) -> str:
        change = ChangeSet(files=files, description="d", diff_commands=(), base=main)
        return change_set_hash(repo, change)

    only_a = branch("a.txt")
    assert branch("a.txt") == only_a
    assert branch("a.txt", "b.txt") != only_a
    (repo / "a.txt").write_text("uncommitted")  # the branch key reads commits only
    assert branch("a.txt") == only_a
    (repo / "a.txt").write_text("a")
    (repo / "b.txt").write_text("b2")
    commit(repo, "b again")
    assert branch("a.txt") == only_a
    (repo / "a.txt").write_text("a2")
    commit(repo, "a again")
    assert branch("a.txt") != only_a
    assert len(only_a) == 64


@pytest.mark.parametrize("size", [0, 1, (1 << 20) - 1, 1 << 20, (1 << 20) + 1])
def test_a_plan_hash_reads_every_chunk(tmp_path: Path, size: int) -> None:
    plan = tmp_path / "plan.md"
    data = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
    plan.write_bytes(data)
    assert plan_hash(plan) == hashlib.sha256(data).hexdigest()


def test_the_identity_reads_the_given_environment_not_the_process_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://process.invalid")
    environ = {"CODEX_HOME": str(tmp_path), "OPENAI_BASE_URL": "http://given.invalid"}
    other = {**environ, "OPENAI_BASE_URL": "http://other.invalid"}
    assert reviewer_identity(Settings(), environ) != reviewer_identity(Settings(), other)
    monkeypatch.setenv("CODEX_HOME", str(tmp_path))
    # A copy of the process environment (CI=true on a CI machine gates the identity too).
    assert reviewer_identity(Settings()) == reviewer_identity(Settings(), dict(os.environ))
    assert reviewer_identity(Settings()) != reviewer_identity(Settings(), environ)


@pytest.mark.parametrize("value", [None, "", "  "])
def test_without_codex_home_the_identity_reads_dot_codex_in_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    environ = {} if value is None else {"CODEX_HOME": value}
    base = reviewer_identity(Settings(), environ)
    assert base["codex_home/config.toml"] == "missing"
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text('model = "x"\n')
    changed = reviewer_identity(Settings(), environ)
    assert changed["codex_home/config.toml"] != "missing"
    assert len(changed["codex_home/config.toml"]) == 16


def test_the_identity_names_the_prompt_version_and_digests_of_16_hex_digits(
    tmp_path: Path,
) -> None:
    identity = reviewer_identity(Settings(model="modèle-ü"), {"CODEX_HOME": str(tmp_path)})
    assert identity["prompt_version"] == PROMPT_VERSION
    digests = {k: v for k, v in identity.items() if k != "prompt_version" and v != "missing"}
    assert digests and all(len(v) == 16 and int(v, 16) >= 0 for v in digests.values())
    assert set(identity) == {
        "approvals",
        "codex_config",
        "env_allow",
        "language",
        "model",
        "output_format",
        "reasoning",
        "reviewer",
        "sandbox",
        "prompt_version",
        "codex_gate",
        "codex_home/config.toml",
        "codex_home/AGENTS.md",
        "codex_home/AGENTS.override.md",
        "env/OPENAI_BASE_URL",
    }


def test_the_command_backend_has_no_codex_home_in_its_identity(tmp_path: Path) -> None:
    identity = reviewer_identity(
        Settings(reviewer="command", command="review"), {"CODEX_HOME": str(tmp_path)}
    )
    assert set(identity) == {"command", "language", "output_format", "reviewer", "prompt_version"}


def test_an_unreadable_codex_home_file_is_never_equal_to_a_readable_one(tmp_path: Path) -> None:
    (tmp_path / "config.toml").mkdir()  # reading a folder fails (EISDIR)
    identity = reviewer_identity(Settings(), {"CODEX_HOME": str(tmp_path)})
    assert identity["codex_home/config.toml"] == "unreadable:21"


def test_the_plan_key_is_the_documented_digest(tmp_path: Path) -> None:
    """The content key's own encoding, recomputed: a tag that moved would re-key every
    stored verdict silently (each is reviewed again), and a prompt may hold any text."""
    plan = tmp_path / "x.md"
    plan.write_bytes(b"# Plan\n")
    body = "Review x.md \udcff"  # a prompt read with surrogateescape
    expected = hashlib.sha256(
        b"plan\0" + b"Review x.md \xff" + b"\0" + hashlib.sha256(b"# Plan\n").hexdigest().encode()
    ).hexdigest()
    assert plan_digest(plan, body) == expected


def test_the_code_key_is_the_documented_digest(repo: Path) -> None:
    (repo / "a.txt").write_text("a")
    change = uncommitted("a.txt")
    files = change_set_hash(repo, change)
    expected = hashlib.sha256(
        b"code\0" + b"Review \xff" + b"\0" + files.encode() + b"\0plan\0" + b"# Plan \xfe"
    ).hexdigest()
    assert code_digest(repo, change, "Review \udcff", "# Plan \udcfe") == expected


def test_without_a_plan_the_code_key_feeds_an_empty_plan(repo: Path) -> None:
    (repo / "a.txt").write_text("a")
    change = uncommitted("a.txt")
    assert code_digest(repo, change, "p") == code_digest(repo, change, "p", "")


def test_a_deleted_tracked_file_is_keyed_as_missing(repo: Path) -> None:
    base = key(repo, "README.md")
    (repo / "README.md").unlink()
    deleted = key(repo, "README.md")
    assert deleted != base
    (repo / "README.md").write_text("")
    assert key(repo, "README.md") not in (base, deleted)


def test_a_tracked_file_whose_folder_became_a_file_is_keyed_as_unreadable(repo: Path) -> None:
    write(repo, "d/f.txt", "f")
    commit(repo, "folder")
    (repo / "d" / "f.txt").unlink()
    (repo / "d").rmdir()
    (repo / "d").write_text("now a file")  # lstat("d/f.txt") fails with ENOTDIR
    first = key(repo, "d/f.txt", "d")
    assert key(repo, "d/f.txt", "d") == first
    (repo / "d").write_text("changed")
    assert key(repo, "d/f.txt", "d") != first


def test_staging_a_change_keeps_the_key(repo: Path) -> None:
    """The reviewer sees ``git diff HEAD``: the index on its own is not content."""
    (repo / "README.md").write_text("# changed\n")
    before = key(repo, "README.md")
    git(repo, "add", "README.md")
    assert key(repo, "README.md") == before


def test_a_tracked_file_outside_the_change_set_never_moves_the_key(repo: Path) -> None:
    write(repo, "other.txt", "o")
    commit(repo, "other")
    (repo / "a.txt").write_text("a")
    base = key(repo, "a.txt")
    (repo / "other.txt").write_text("changed")
    assert key(repo, "a.txt") == base
