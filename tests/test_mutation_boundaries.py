"""Boundaries of workspace mutation detection (mutation.py): every status transition
(absent, untracked, added, modified, deleted) in both directions, each review input
change, the allowed untracked globs at their edge, HEAD's move, and each detail word for
word."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from conftest import commit, git, init_repo, write
from pytest_advreview.workspace.mutation import (
    MISSING,
    Mutation,
    MutationError,
    Snapshot,
    compare,
    take_snapshot,
)

ROOT = "/repo"


def snap(status: dict[str, str], hashes: dict[str, str] | None = None, **kw: object) -> Snapshot:
    return Snapshot(
        root=ROOT,
        head=str(kw.get("head", "a" * 40)),
        status=status,
        status_hashes=hashes if hashes is not None else dict.fromkeys(status, "h"),
        inputs=kw.get("inputs", {}),  # type: ignore[arg-type]
    )


def changes(before: Snapshot, after: Snapshot, allow: tuple[str, ...] = ()) -> list[Mutation]:
    return compare(before, after, allow_untracked=allow)


@pytest.mark.parametrize(
    ("after", "kind", "detail"),
    [
        ("??", "untracked", "new untracked file"),
        (" D", "deleted", "tracked file deleted (' D')"),
        ("D ", "deleted", "tracked file deleted ('D ')"),
        ("A ", "added", "new file added to the index ('A ')"),
        ("AM", "added", "new file added to the index ('AM')"),
        (" M", "modified", "tracked file changed (' M')"),
        ("M ", "modified", "tracked file changed ('M ')"),
        ("R ", "modified", "tracked file changed ('R ')"),
    ],
)
def test_every_new_status_is_named(after: str, kind: str, detail: str) -> None:
    assert changes(snap({}), snap({"f": after})) == [Mutation("f", kind, detail)]  # type: ignore[arg-type]


@pytest.mark.parametrize("before", [" M", "M ", "A ", " D"])
def test_a_change_that_vanished_was_reverted_committed_or_deleted(before: str) -> None:
    assert changes(snap({"f": before}), snap({})) == [
        Mutation(
            "f",
            "modified",
            f"was {before!r} before the review and now matches HEAD (the change was "
            "reverted, committed or deleted)",
        )
    ]


def test_a_removed_untracked_file_is_deleted() -> None:
    assert changes(snap({"f": "??"}), snap({})) == [
        Mutation("f", "deleted", "untracked file removed")
    ]


@pytest.mark.parametrize(
    ("before", "after", "kind"),
    [
        (" M", " D", "deleted"),
        ("M ", "MD", "deleted"),
        (" D", "DD", "modified"),  # already deleted: a different code, not a new deletion
        (" M", "M ", "modified"),
        ("??", "A ", "modified"),
    ],
)
def test_a_changed_status_is_named_with_both_codes(before: str, after: str, kind: str) -> None:
    assert changes(snap({"f": before}), snap({"f": after})) == [
        Mutation("f", kind, f"status {before!r} -> {after!r}")  # type: ignore[arg-type]
    ]


@pytest.mark.parametrize(
    ("code", "what"),
    [("??", "untracked file"), (" M", "file already changed before the review")],
)
def test_a_file_changed_again_under_the_same_status_is_named(code: str, what: str) -> None:
    before = snap({"f": code}, {"f": "one"})
    assert changes(before, snap({"f": code}, {"f": "one"})) == []
    assert changes(before, snap({"f": code}, {"f": "two"})) == [
        Mutation("f", "modified", f"{what}, changed again")
    ]


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        (".pytest_cache/v/x", True),
        ("a/__pycache__/m.pyc", True),
        ("__pycache__/m.pyc", True),
        (".pytest_cachex/v", False),
        ("a/__pycache__", False),
        ("src/m.py", False),
    ],
)
def test_allowed_untracked_globs_cover_exactly_their_paths(path: str, allowed: bool) -> None:
    allow = (".pytest_cache/**", "**/__pycache__/**")
    found = changes(snap({}), snap({path: "??"}), allow)
    assert (found == []) is allowed
    # Appearing, changing or vanishing alike.
    found = changes(snap({path: "??"}, {path: "1"}), snap({path: "??"}, {path: "2"}), allow)
    assert (found == []) is allowed
    assert (changes(snap({path: "??"}), snap({}), allow) == []) is allowed


def test_an_allowed_glob_never_covers_a_tracked_file() -> None:
    allow = ("**",)
    assert changes(snap({}), snap({"a.py": " M"}), allow) != []
    assert changes(snap({"a.py": "??"}), snap({"a.py": "A "}), allow) != []


@pytest.mark.parametrize(
    ("old", "new", "detail"),
    [
        ("h1", "h2", "review input changed"),
        ("h1", MISSING, "review input deleted"),
        (MISSING, "h1", "review input created"),
    ],
)
def test_every_review_input_change_is_named_once(old: str, new: str, detail: str) -> None:
    key = f"{ROOT}/prompt.md"
    before = snap({"prompt.md": "??"}, {"prompt.md": old}, inputs={key: old})
    after = snap({"prompt.md": "??"}, {"prompt.md": new}, inputs={key: new})
    assert changes(before, after) == [Mutation("prompt.md", "input-changed", detail)]


def test_an_input_outside_the_repository_keeps_its_absolute_path() -> None:
    before = snap({}, inputs={"/elsewhere/p.md": "1", "/x/only-before.md": "1"})
    after = snap({}, inputs={"/elsewhere/p.md": "2", "/x/only-after.md": "2"})
    assert changes(before, after) == [
        Mutation("/elsewhere/p.md", "input-changed", "review input changed")
    ]
    outside_git = Snapshot(inputs={"/r/p.md": "1"})
    assert compare(outside_git, Snapshot(inputs={"/r/p.md": "2"}), allow_untracked=()) == [
        Mutation("/r/p.md", "input-changed", "review input changed")
    ]


def test_head_moving_is_named_with_12_characters_of_each_commit() -> None:
    before, after = snap({}, head="a" * 40), snap({}, head="b" * 40)
    assert changes(before, after) == [
        Mutation(
            "HEAD",
            "modified",
            f"HEAD moved from {'a' * 12} to {'b' * 12} (a commit, reset or checkout)",
        )
    ]
    unborn = Snapshot(root=ROOT, head=None)
    assert changes(unborn, after)[0].detail == (
        f"HEAD moved from an unborn branch to {'b' * 12} (a commit, reset or checkout)"
    )
    assert changes(before, Snapshot(root=ROOT, head=None))[0].detail == (
        f"HEAD moved from {'a' * 12} to an unborn branch (a commit, reset or checkout)"
    )
    assert compare(Snapshot(head="x"), Snapshot(head="y"), allow_untracked=()) == []


def test_mutations_are_sorted_by_path_then_kind() -> None:
    before = snap({"b": " M", "a": "??"}, inputs={f"{ROOT}/c": "1"})
    after = snap({"b": " D", "z": "??"}, inputs={f"{ROOT}/c": "2"}, head="c" * 40)
    assert [(m.path, m.kind) for m in changes(before, after)] == [
        ("HEAD", "modified"),
        ("a", "deleted"),
        ("b", "deleted"),
        ("c", "input-changed"),
        ("z", "untracked"),
    ]


@pytest.fixture
def repo(tmp_path: Path, hermetic_git: None) -> Path:
    root = init_repo(tmp_path / "repo")
    write(root, "a.txt", "a\n")
    commit(root, "init")
    return root


def test_a_snapshot_hashes_files_links_folders_and_missing_inputs(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "new.txt").write_text("n")
    (repo / "link").symlink_to("target-text")
    nested = init_repo(repo / "nested")
    write(nested, "x", "x")
    inputs = [tmp_path / "prompt.md", tmp_path / "gone.md"]
    inputs[0].write_text("p")
    shot = take_snapshot(repo / "nested" / "..", inputs)
    assert shot.root == str(repo)
    assert shot.head == git(repo, "rev-parse", "HEAD").strip()
    assert shot.status == {"link": "??", "nested/": "??", "new.txt": "??"}
    assert shot.status_hashes == {
        "link": "link:" + hashlib.sha256(b"target-text").hexdigest(),
        "nested/": "dir",
        "new.txt": hashlib.sha256(b"n").hexdigest(),
    }
    assert shot.inputs == {
        str(inputs[0]): hashlib.sha256(b"p").hexdigest(),
        str(inputs[1]): MISSING,
    }
    # The caller's top level is used as given.
    again = take_snapshot(repo, [], toplevel=repo)
    assert (again.root, again.status) == (str(repo), shot.status)


def test_a_relative_input_is_recorded_by_its_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("p.md").write_text("p")
    assert take_snapshot(None, [Path("p.md")]).inputs == {
        str(tmp_path / "p.md"): hashlib.sha256(b"p").hexdigest()
    }


def test_an_unreadable_path_has_its_own_hash(repo: Path) -> None:
    (repo / "loop").symlink_to("loop")  # lstat works: a link is hashed by its text
    (repo / "dir.txt").mkdir()
    shot = take_snapshot(None, [repo / "dir.txt", repo / "loop" / "x"])
    assert shot.inputs[str(repo / "dir.txt")] == "dir"
    assert shot.inputs[str(repo / "loop" / "x")].startswith("unreadable:")
    assert shot.inputs[str(repo / "loop" / "x")] == f"unreadable:{40}"  # ELOOP


def test_a_snapshot_outside_a_work_tree_names_the_failure(
    tmp_path: Path, hermetic_git: None
) -> None:
    with pytest.raises(MutationError) as info:
        take_snapshot(tmp_path, [])
    assert str(info.value).startswith("pytest-advreview: cannot snapshot the workspace: ")


@pytest.mark.parametrize("name", ["repoX", "repo ", "re\npo"])
def test_the_top_level_keeps_every_character_of_its_name(
    tmp_path: Path, hermetic_git: None, name: str
) -> None:
    root = init_repo(tmp_path / name)
    write(root, "a.txt", "a\n")
    commit(root, "init")
    (root / "a.txt").write_text("b\n")
    shot = take_snapshot(root, [])
    assert shot.root == str(root)
    assert shot.status_hashes == {"a.txt": hashlib.sha256(b"b\n").hexdigest()}


def test_an_input_is_shown_relative_to_whichever_snapshot_knows_the_repository() -> None:
    key = f"{ROOT}/p.md"
    only_after = compare(
        Snapshot(inputs={key: "1"}), Snapshot(root=ROOT, inputs={key: "2"}), allow_untracked=()
    )
    only_before = compare(
        Snapshot(root=ROOT, inputs={key: "1"}), Snapshot(inputs={key: "2"}), allow_untracked=()
    )
    assert [m.path for m in only_after] == ["p.md"]
    assert [m.path for m in only_before] == ["p.md"]


def test_every_path_after_a_skipped_one_is_still_compared() -> None:
    key = f"{ROOT}/a.md"
    before = snap({"a.md": "??", "b/__pycache__/x.pyc": "??"}, inputs={key: "1"})
    after = snap(
        {"a.md": "??", "b/__pycache__/x.pyc": "??", "c.py": " M"},
        {"a.md": "2", "b/__pycache__/x.pyc": "2", "c.py": "h"},
        inputs={key: "2"},
    )
    found = changes(before, after, ("**/__pycache__/**",))
    assert [(m.path, m.kind) for m in found] == [("a.md", "input-changed"), ("c.py", "modified")]


def test_a_tracked_change_that_vanished_is_reported_under_any_glob() -> None:
    assert changes(snap({"f.py": " M"}), snap({}), ("**",)) != []


def test_every_path_after_an_unchanged_one_is_still_compared() -> None:
    before = snap({"a.txt": " M"}, {"a.txt": "same"})
    after = snap({"a.txt": " M", "b.txt": "??"}, {"a.txt": "same", "b.txt": "h"})
    assert changes(before, after) == [Mutation("b.txt", "untracked", "new untracked file")]
