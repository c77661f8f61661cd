"""Tests of ``Authority`` (decisions.py): who decides what, at the boundaries of each route.

docs/safety.md, "Authority over findings": in a local run the checkout's decisions file
serves both the author and the operator; under a gate only the base commit's file (read
from git objects) decides findings left to the operator, and the author's answers are the
entries the checkout's file adds to the base's.  Real git repositories in ``tmp_path``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import commit, git, init_repo, write
from pytest_advreview.trust.authority import Authority, GateBase
from pytest_advreview.trust.decisions import (
    DecisionsError,
    DecisionsFile,
    load_at_commit,
    load_decisions,
)

KEY = ".advreview/decisions.toml"
PREFIX = "pytest-advreview: decisions file"
#: The tail of every gated ``where``.
TAIL = "under a gate the branch's own decisions file does not decide findings left to the operator)"


def entry(finding: str, action: str = "reject", reason: str = "it does not apply") -> str:
    return (
        f'[[decision]]\ntarget = "code-review"\nfinding = "{finding}"\n'
        f'action = "{action}"\nreason = "{reason}"\n\n'
    )


#: The operator's entries in the base commit.
BASE = entry("AR-111111") + entry("AR-222222", "accept", "applied")


@pytest.fixture
def repo(tmp_path: Path, hermetic_git: None) -> tuple[Path, str]:
    """A repository whose base commit (branch main) holds BASE; the checkout adds one entry."""
    root = init_repo(tmp_path / "repo")
    write(root, KEY, BASE)
    write(root, "keep.txt")
    commit(root, "base")
    sha = git(root, "rev-parse", "HEAD").strip()
    write(root, KEY, BASE + entry("AR-333333"))
    return root, sha


def base_commit(root: Path, files: dict[str, str]) -> str:
    """Commit ``files`` (the decisions file removed first) on a new branch; its id."""
    git(root, "checkout", "-q", "-b", "other")
    git(root, "rm", "-q", "-f", KEY)
    for rel, text in files.items():
        write(root, rel, text)
        git(root, "add", "--", rel)
    git(root, "commit", "-q", "-m", "other base")
    return git(root, "rev-parse", "HEAD").strip()


def gate(root: Path, *, head: bool = False, base: GateBase | None = None) -> Authority:
    base = GateBase(top=root, ref="main") if base is None else base
    return Authority.of(root / KEY, rootdir=root, gated=True, head=head, base=base)


def findings(decisions: DecisionsFile | None) -> list[str]:
    assert decisions is not None
    return [e.finding for e in decisions.entries]


# -- a local run: one file serves both parts ---------------------------------------------


@pytest.mark.parametrize("ref", [None, "main", "no-such-ref"])
def test_a_local_run_reads_the_checkouts_file_for_both_parts_and_never_the_base(
    repo: tuple[Path, str], ref: str | None
) -> None:
    root, _ = repo
    path = root / KEY
    found = Authority.of(
        path, rootdir=root, gated=False, head=False, base=GateBase(top=root, ref=ref)
    )
    own = DecisionsFile(path=path, entries=load_decisions(path).entries)
    assert found == Authority(gated=False, author=own, operator=own, where=str(path))
    assert findings(found.operator) == ["AR-111111", "AR-222222", "AR-333333"]


def test_a_local_run_with_no_file_has_no_decisions(tmp_path: Path) -> None:
    path = tmp_path / "absent.toml"
    found = Authority.of(path, rootdir=tmp_path, gated=False, head=False, base=None)
    empty = DecisionsFile(path=path)
    assert found == Authority(gated=False, author=empty, operator=empty, where=str(path))


# -- gated: no base, a base that is no commit, a path outside, git failing ----------------


@pytest.mark.parametrize("base", [None, "ref-none"])
def test_gated_without_a_base_no_operator_decision_counts(
    repo: tuple[Path, str], base: str | None
) -> None:
    root, _ = repo
    path = root / KEY
    given = None if base is None else GateBase(top=root, ref=None, name="main")
    found = Authority.of(path, rootdir=root, gated=True, head=False, base=given)
    assert found.gated is True
    assert found.operator == DecisionsFile(path=path)
    # With no base entries, every entry of the checkout is the author's.
    assert found.author == load_decisions(path)
    assert found.where == (
        f"{path} on the base branch (no base was found: pass --advreview-base=REF; "
        "under a gate the branch's own decisions file does not decide findings left to "
        "the operator)"
    )


def test_gated_head_mode_without_a_base_reads_no_file(repo: tuple[Path, str]) -> None:
    root, _ = repo
    write(root, KEY, "not toml [")
    found = Authority.of(root / KEY, rootdir=root, gated=True, head=True, base=None)
    assert found.author is None
    assert found.operator == DecisionsFile(path=root / KEY)


@pytest.mark.parametrize("ref", ["no-such-ref", "HEAD^{tree}", "-main"])
def test_a_base_that_is_not_a_commit_is_refused_word_for_word(
    repo: tuple[Path, str], ref: str
) -> None:
    root, _ = repo
    with pytest.raises(DecisionsError) as info:
        gate(root, base=GateBase(top=root, ref=ref))
    assert str(info.value) == (
        f"{PREFIX} {root / KEY}: cannot be read from the base {ref!r}, which is not a "
        f"commit of {root}; pass --advreview-base=REF (and fetch it)"
    )


def test_a_path_outside_the_repository_is_refused_under_a_gate_word_for_word(
    repo: tuple[Path, str], tmp_path: Path
) -> None:
    root, _ = repo
    outside = tmp_path / "elsewhere.toml"
    outside.write_text(BASE, encoding="utf-8")
    with pytest.raises(DecisionsError) as info:
        Authority.of(
            outside, rootdir=root, gated=True, head=False, base=GateBase(top=root, ref="main")
        )
    assert str(info.value) == (
        f"{PREFIX} {outside}: lies outside the repository {root}, but under a gate (CI, "
        "--advreview-strict-exit, --advreview-head) the operator's decisions are read "
        "from the base commit; set advreview_decisions to a file inside the repository"
    )
    # The same path in a local run is simply the operator's file.
    local = Authority.of(outside, rootdir=root, gated=False, head=False, base=None)
    assert findings(local.operator) == ["AR-111111", "AR-222222"]


def test_the_repository_top_itself_is_no_decisions_file_under_a_gate(
    repo: tuple[Path, str],
) -> None:
    root, _ = repo
    with pytest.raises(DecisionsError, match="lies outside the repository"):
        Authority.of(root, rootdir=root, gated=True, head=False, base=GateBase(top=root, ref="m"))


def test_git_that_cannot_run_in_the_base_is_refused_word_for_word(tmp_path: Path) -> None:
    top = tmp_path / "gone"
    path = top / KEY
    with pytest.raises(DecisionsError) as info:
        Authority.of(path, rootdir=top, gated=True, head=False, base=GateBase(top=top, ref="main"))
    assert str(info.value) == (
        f"{PREFIX} {path}: cannot be read from the base: could not run "
        f"`git rev-parse --verify --quiet 'main^{{commit}}'` in {top}: No such file or directory"
    )


# -- gated with a base: absent, present, a link or a folder -------------------------------


def test_the_base_commits_file_decides_and_the_checkout_adds_the_authors_answers(
    repo: tuple[Path, str],
) -> None:
    root, sha = repo
    found = gate(root)
    shown = f"main ({sha[:12]})"
    assert found.gated is True
    assert found.operator is not None
    assert found.operator.path == Path(f"{shown}:{KEY}")
    assert findings(found.operator) == ["AR-111111", "AR-222222"]
    assert found.author is not None
    assert found.author.path == root / KEY
    assert findings(found.author) == ["AR-333333"]
    assert found.where == f"{KEY} on the base branch ({shown}: {TAIL}"


def test_a_base_without_the_file_has_no_operator_entries(repo: tuple[Path, str]) -> None:
    root, _ = repo
    sha = base_commit(root, {"other.txt": "x\n"})
    write(root, KEY, BASE)
    found = gate(root, base=GateBase(top=root, ref="other"))
    shown = f"other ({sha[:12]})"
    assert found.operator == DecisionsFile(path=Path(f"{shown}:{KEY}"))
    assert findings(found.author) == ["AR-111111", "AR-222222"]
    assert found.where == f"{KEY} on the base branch ({shown}: {TAIL}"


def test_a_link_at_the_path_in_the_base_commit_is_refused_word_for_word(
    repo: tuple[Path, str],
) -> None:
    root, _ = repo
    write(root, "real.toml", BASE)
    git(root, "add", "real.toml")
    git(root, "rm", "-q", "--cached", KEY)
    (root / KEY).unlink()
    (root / KEY).symlink_to("../real.toml")
    commit(root, "link")
    sha = git(root, "rev-parse", "HEAD").strip()
    with pytest.raises(DecisionsError) as info:
        gate(root)
    assert str(info.value) == (
        f"{PREFIX} main ({sha[:12]}):{KEY}: is a symbolic link in the base commit; the "
        "operator's decisions are read from the base commit's own file: commit the file "
        "itself in place of the link"
    )


def test_a_folder_at_the_path_in_the_base_commit_is_refused_word_for_word(
    repo: tuple[Path, str],
) -> None:
    root, _ = repo
    sha = base_commit(root, {f"{KEY}/inner.toml": BASE})
    with pytest.raises(DecisionsError) as info:
        gate(root, base=GateBase(top=root, ref="other"))
    assert str(info.value) == (
        f"{PREFIX} other ({sha[:12]}):{KEY}: is a tree, not a file, in the base commit; "
        "point advreview_decisions at a TOML file"
    )


# -- the author's entries: those the checkout's file adds to the base's -------------------


@pytest.mark.parametrize(
    ("checkout", "added"),
    [
        (None, []),  # no file in the checkout
        ("", []),  # an empty file
        (BASE, []),  # the base's entries only (a merge checkout): none are the author's
        (BASE + entry("AR-333333"), ["AR-333333"]),
        (entry("AR-333333") + entry("AR-111111"), ["AR-333333"]),
        (entry("AR-333333") + entry("AR-444444"), ["AR-333333", "AR-444444"]),
        # The same finding answered otherwise is the author's own answer.
        (entry("AR-111111", reason="another reason"), ["AR-111111"]),
    ],
)
def test_the_authors_entries_are_those_the_checkout_adds_to_the_base(
    repo: tuple[Path, str], checkout: str | None, added: list[str]
) -> None:
    root, _ = repo
    if checkout is None:
        (root / KEY).unlink()
    else:
        write(root, KEY, checkout)
    found = gate(root)
    assert found.author is not None
    assert found.author.path == root / KEY
    assert findings(found.author) == added
    assert findings(found.operator) == ["AR-111111", "AR-222222"]


@pytest.mark.parametrize("base", ["", "# nothing decided yet\n"])
def test_with_an_empty_base_file_every_checkout_entry_is_the_authors(
    repo: tuple[Path, str], base: str
) -> None:
    root, _ = repo
    base_commit(root, {KEY: base})
    write(root, KEY, BASE)
    found = gate(root, base=GateBase(top=root, ref="other"))
    assert found.author == load_decisions(root / KEY)
    assert findings(found.operator) == []


# -- head mode: the head's file is never read ---------------------------------------------


def test_head_mode_never_reads_the_checkouts_file(repo: tuple[Path, str]) -> None:
    root, sha = repo
    write(root, KEY, "not toml [")
    found = gate(root, head=True)
    assert found.gated is True
    assert found.author is None
    assert findings(found.operator) == ["AR-111111", "AR-222222"]
    assert found.where == f"{KEY} on the base branch (main ({sha[:12]}): {TAIL}"


# -- with_author: a fixture's other decisions path ----------------------------------------


def test_with_author_in_a_local_run_moves_both_parts_and_where(repo: tuple[Path, str]) -> None:
    root, _ = repo
    other = write(root, "fixture.toml", entry("AR-555555"))
    found = Authority.of(root / KEY, rootdir=root, gated=False, head=False, base=None)
    moved = found.with_author(other)
    own = load_decisions(other)
    assert moved == Authority(gated=False, author=own, operator=own, where=str(other))


def test_with_author_under_a_gate_keeps_the_bases_operator_and_where(
    repo: tuple[Path, str],
) -> None:
    root, _ = repo
    other = write(
        root, "fixture.toml", entry("AR-555555") + entry("AR-222222", "accept", "applied")
    )
    found = gate(root)
    moved = found.with_author(other)
    assert moved.gated is True
    assert moved.operator == found.operator
    assert moved.where == found.where
    assert moved.author is not None
    assert moved.author.path == other
    assert findings(moved.author) == ["AR-555555"]


def test_with_author_under_a_gate_in_head_mode_reads_the_fixtures_file(
    repo: tuple[Path, str],
) -> None:
    root, _ = repo
    other = write(root, "fixture.toml", entry("AR-555555"))
    moved = gate(root, head=True).with_author(other)
    assert findings(moved.author) == ["AR-555555"]


def test_with_author_under_a_gate_without_operator_entries_keeps_every_entry(
    tmp_path: Path,
) -> None:
    other = write(tmp_path, "fixture.toml", BASE)
    for operator in (None, DecisionsFile(path=tmp_path / "base")):
        found = Authority(gated=True, author=None, operator=operator, where="w")
        moved = found.with_author(other)
        assert moved == Authority(
            gated=True, author=load_decisions(other), operator=operator, where="w"
        )


def test_with_author_refuses_an_invalid_fixture_file(repo: tuple[Path, str]) -> None:
    root, _ = repo
    other = write(root, "fixture.toml", "not toml [")
    with pytest.raises(DecisionsError, match="is not valid TOML"):
        gate(root).with_author(other)


# -- how the base is shown: its name, and the commit cut to 12 characters -----------------


def test_a_base_named_by_its_commit_id_is_shown_once(repo: tuple[Path, str]) -> None:
    root, sha = repo
    for base in (GateBase(top=root, ref=sha), GateBase(top=root, ref="main", name=sha)):
        found = gate(root, base=base)
        assert found.operator is not None
        assert found.operator.path == Path(f"{sha}:{KEY}")
        assert found.where == f"{KEY} on the base branch ({sha}: {TAIL}"


@pytest.mark.parametrize(
    ("ref", "name", "shown"),
    [
        ("main", None, "main"),
        ("refs/heads/main", None, "refs/heads/main"),
        ("SHA", "origin/main", "origin/main"),  # --advreview-head's base: a commit id, named
        ("main", "the base", "the base"),
    ],
)
def test_a_named_base_is_shown_with_its_commit_cut_to_12_characters(
    repo: tuple[Path, str], ref: str, name: str | None, shown: str
) -> None:
    root, sha = repo
    ref = sha if ref == "SHA" else ref
    found = gate(root, base=GateBase(top=root, ref=ref, name=name))
    assert found.operator is not None
    assert found.operator.path == Path(f"{shown} ({sha[:12]}):{KEY}")
    assert found.where == f"{KEY} on the base branch ({shown} ({sha[:12]}): {TAIL}"


def test_the_key_is_relative_to_the_top_not_to_where_pytest_runs(
    repo: tuple[Path, str],
) -> None:
    root, _ = repo
    rootdir = root / "sub"
    rootdir.mkdir()
    key = "sub/decisions.toml"
    base_commit(root, {key: BASE})
    found = Authority.of(
        rootdir / "decisions.toml",
        rootdir=rootdir,
        gated=True,
        head=True,
        base=GateBase(top=root, ref="other"),
    )
    assert findings(found.operator) == ["AR-111111", "AR-222222"]
    assert found.where.startswith(f"{key} on the base branch (other (")


# -- load_at_commit at its edges ----------------------------------------------------------


def test_a_file_absent_from_the_commit_is_named_by_the_commit(repo: tuple[Path, str]) -> None:
    root, sha = repo
    assert load_at_commit(root, sha, "absent.toml", shown="main") == DecisionsFile(
        path=Path("main:absent.toml")
    )


def test_a_name_with_a_tab_is_read_from_the_commit(repo: tuple[Path, str]) -> None:
    root, _ = repo
    sha = base_commit(root, {"dec\tisions.toml": BASE})
    found = load_at_commit(root, sha, "dec\tisions.toml", shown="other")
    assert found.path == Path("other:dec\tisions.toml")
    assert findings(found) == ["AR-111111", "AR-222222"]


def test_a_commit_git_does_not_hold_is_refused_word_for_word(repo: tuple[Path, str]) -> None:
    root, _ = repo
    missing = "0" * 40
    with pytest.raises(DecisionsError) as info:
        load_at_commit(root, missing, KEY, shown="main")
    assert str(info.value) == (
        f"{PREFIX} main:{KEY}: cannot be read from the base commit "
        f"(`git ls-tree -z --full-tree {missing} -- ':(literal,top){KEY}'` failed in "
        f"{root} (exit code 128): fatal: not a tree object); fetch the base's history"
    )
