"""What the reviewer cannot see is never approved: repository shapes and inputs.

Each class is driven end to end with the real Codex CLI against the scripted server, in
real git repositories: a shallow CI clone whose named base was never fetched, pytest with
one of its built-in plugins disabled, file names git stores as bytes that are not UTF-8,
and the git entries a worktree or a diff can hide (submodules, symlinks, LFS pointers,
attributes, case-only renames).  docs/safety.md's table "Repository shapes" names these
tests; :func:`test_the_shapes_table_names_tests_that_exist` keeps it true.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _pytest.config import default_plugins, essential_plugins

from conftest import ReviewRepo, commit, git, init_repo, ran_prompts, write
from pytest_advreview.testing import approved_review, shell_step

CODE_PROMPT = "Review the code changes"
PLAN_PROMPT = "docs/plans/"
INI = "[pytest]\nadvreview_plan_scope = all\n"


def _shallow_feature_clone(review_repo: ReviewRepo) -> Path:
    """``git clone --depth 1 --branch feature`` of the review repository, as CI checks out.

    The upstream has ``main`` (with a plan, reviewed under scope ``all``) and ``feature``
    (a code change); the clone has only the feature branch's tip.
    """
    upstream = review_repo.path
    review_repo.write("pytest.ini", INI)
    review_repo.plan("rollout.md")
    review_repo.commit("a plan")
    git(upstream, "checkout", "-q", "-b", "feature")
    review_repo.write("src/feature.py", "def feature():\n    return 1\n")
    review_repo.commit("the feature")
    git(upstream, "checkout", "-q", "main")  # the remote's HEAD, as on a forge
    clone = upstream.parent / f"{upstream.name}-clone"
    # file:// so that --depth applies (a local path clones by hard links, whole).
    git(
        upstream.parent,
        "clone",
        "-q",
        "--depth",
        "1",
        "--branch",
        "feature",
        upstream.as_uri(),
        str(clone),
    )
    assert git(clone, "rev-parse", "--is-shallow-repository").strip() == "true"
    assert git(clone, "branch", "-a", "--format=%(refname)").split() == [
        "refs/heads/feature",
        "refs/remotes/origin/feature",
    ]
    return clone


FETCH = "`git fetch origin main:refs/remotes/origin/main`"


@pytest.mark.real_codex
@pytest.mark.parametrize("named_by", ["GITHUB_BASE_REF", "option", "ini"])
def test_a_named_base_missing_from_a_shallow_clone_is_an_error(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch, named_by: str
) -> None:
    """Class 3 of the issue: the base the pull request names was never fetched.

    On main 1803125 GITHUB_BASE_REF fell back to "no base": no code item, the gate
    passed on the plan alone (exit 0; exit 5 and gate "empty" under the default plan
    scope).  Under a gate the base's configuration decides the gate's settings, so a
    base that is not in the clone stops the run before any review, with the fetch
    command; the checkout's own ``advreview_base`` is not used under a gate, and with
    no other base it says what to pass instead of comparing with nothing.
    """
    clone = _shallow_feature_clone(review_repo)
    monkeypatch.setenv("CI", "true")
    extra: list[str] = []
    if named_by == "GITHUB_BASE_REF":
        monkeypatch.setenv("GITHUB_BASE_REF", "main")
    elif named_by == "option":
        extra.append("--advreview-base=origin/main")
    else:
        (clone / "pytest.ini").write_text(INI + "advreview_base = origin/main\n")
    monkeypatch.chdir(clone)
    review_repo.answer(PLAN_PROMPT, {"message": approved_review()})
    result = review_repo.pytester.runpytest_subprocess(
        *review_repo.args("--advreview-json=out.json", "--advreview-github=off", *extra)
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    err = result.stderr.str()
    assert FETCH in err, err
    assert "pytest-advreview: pytest-advreview:" not in err, err
    if named_by == "ini":
        assert "not used under a gate" in err and "--advreview-base=origin/main" in err, err
    else:
        assert "is not in the clone" in err or "is not a commit" in err, err
    assert review_repo.server.requests == [], "no review may run without the gate's base"


@pytest.mark.real_codex
def test_outside_a_gate_a_named_base_missing_from_the_clone_errors_the_code_item(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a gate the settings are the checkout's: the code item errors with the
    fetch command, and the plan is still reviewed."""
    clone = _shallow_feature_clone(review_repo)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.chdir(clone)
    review_repo.answer(PLAN_PROMPT, {"message": approved_review()})
    result = review_repo.pytester.runpytest(
        *review_repo.args(
            "--advreview-json=out.json",
            "--advreview-github=off",
            "--advreview-base=origin/main",
            "--advreview-diff=branch",
        )
    )
    assert result.ret == 1, result.stdout.str()
    result.assert_outcomes(passed=1, errors=1)
    out = result.stdout.str()
    assert FETCH in out, out
    report = json.loads((clone / "out.json").read_text())
    assert report["totals"]["gate"] == "error"
    outcomes = {i["record"]["key"]: i["record"]["outcome"] for i in report["items"]}
    assert outcomes == {"docs/plans/rollout.md": "passed", "code-review": "error"}, outcomes


@pytest.mark.real_codex
def test_the_fetch_commands_the_error_names_make_the_review_run(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The way out the messages give works: fetch the base, then the history."""
    clone = _shallow_feature_clone(review_repo)
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("GITHUB_BASE_REF", "main")
    monkeypatch.chdir(clone)
    review_repo.answer(PLAN_PROMPT, {"message": approved_review()})
    review_repo.answer(CODE_PROMPT, {"message": approved_review()})
    args = review_repo.args("--advreview-github=off")
    git(clone, "fetch", "-q", "origin", "main:refs/remotes/origin/main")
    result = review_repo.pytester.runpytest(*args)
    # Still shallow: no merge base, and the message says how to get one.
    result.assert_outcomes(passed=1, errors=1)
    assert "git fetch --unshallow" in result.stdout.str()
    git(clone, "fetch", "-q", "--unshallow")
    result = review_repo.pytester.runpytest(*args)
    result.assert_outcomes(passed=2)
    (prompt,) = [p for p in review_repo.server.response_requests if CODE_PROMPT in p.last_user_text]
    assert "src/feature.py" in prompt.last_user_text
    assert "branch changes vs origin/main" in prompt.last_user_text


def test_github_base_ref_that_is_no_branch_name_is_an_error(review_repo: ReviewRepo) -> None:
    from pytest_advreview.targets import BaseRefError, resolve_base

    with pytest.raises(BaseRefError, match="GITHUB_BASE_REF names the base '--all'"):
        resolve_base(review_repo.path, None, {"GITHUB_BASE_REF": "--all"})
    # Nothing named a base: the fallbacks, and "no base" only when none exists.
    assert resolve_base(review_repo.path, None, {}) == "main"
    assert resolve_base(review_repo.path, None, {"GITHUB_BASE_REF": "  "}) == "main"
    git(review_repo.path, "branch", "-m", "main", "trunk")
    assert resolve_base(review_repo.path, None, {}) is None


def test_the_action_names_the_fetch_for_a_base_commit_not_in_the_checkout(
    review_repo: ReviewRepo,
) -> None:
    from pytest_advreview import action

    missing = "0123456789abcdef0123456789abcdef01234567"
    env = {
        "GITHUB_WORKSPACE": str(review_repo.path),
        "ADVREVIEW_ACTION_BASE_SHA": missing,
        "ADVREVIEW_ACTION_WORK_DIR": str(review_repo.path.parent / "work"),
    }
    with pytest.raises(action.ActionError, match=f"`git fetch --no-tags origin {missing}`"):
        action.review(env)


#: pytest's built-in plugins the gate touches (its ini keys and options, its hooks, the
#: plugin objects it looks up, the warnings it raises) that a user can disable with
#: ``-p no:NAME``; the essential ones (mark, main, runner, fixtures, helpconfig) cannot be.
#: All 25 disablable ones of pytest 9 were checked once the same way (3.5 minutes).
TOUCHED = (
    "cacheprovider",  # cache_dir, config.cache, --lf
    "terminal",  # the header, the summary, the progress lines
    "junitxml",  # --junitxml is left out of the change
    "stepwise",  # --sw deselects
    "capture",  # the capturemanager around the progress lines
    "warnings",  # the state warnings
    "logging",
    "python",
    "skipping",
)


@pytest.mark.real_codex
@pytest.mark.parametrize("plugin", TOUCHED)
def test_a_disabled_builtin_plugin_never_crashes_the_gate(
    review_repo: ReviewRepo, plugin: str
) -> None:
    """Class 4 of the issue: ``-p no:cacheprovider`` was an INTERNALERROR (selection.py read
    the cacheprovider's ``cache_dir`` ini key) whenever the code item was worked out."""
    review_repo.plan("rollout.md")  # uncommitted: both are the change
    review_repo.write("src/app.py", "def app():\n    return 1\n")
    review_repo.answer(PLAN_PROMPT, {"message": approved_review()})
    review_repo.answer(CODE_PROMPT, {"message": approved_review()})
    result = review_repo.pytester.runpytest_subprocess(
        *review_repo.args(
            "-p", f"no:{plugin}", "--advreview-json=out.json", "-W", "ignore::DeprecationWarning"
        )
    )
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output, output
    assert result.ret == 0, output
    assert plugin in default_plugins and plugin not in essential_plugins
    report = json.loads((review_repo.path / "out.json").read_text())
    outcomes = {i["record"]["key"]: i["record"]["outcome"] for i in report["items"]}
    assert outcomes == {"docs/plans/rollout.md": "passed", "code-review": "passed"}, outcomes
    assert report["totals"]["gate"] == "passed"
    if plugin == "cacheprovider":
        # The documented behaviour: one warning, and no rounds stored.
        assert output.count("the cacheprovider plugin is disabled") == 1, output
        assert not (review_repo.path / ".pytest_cache").exists()


CAFE = b"caf\xe9.py"  # latin-1: not UTF-8, a name git stores as bytes
RESUME = b"docs/plans/r\xe9sum\xe9.md"


@pytest.mark.real_codex
def test_names_that_are_not_utf8_error_their_item_and_every_report_lists_every_item(
    review_repo: ReviewRepo,
) -> None:
    """Class 1 of the issue: on main 1803125 the changed file crashed the prompt writer
    (UnicodeEncodeError), the plan crashed pytest at session end (its node id), no JSON
    report was written.  Now each item errors naming the file as git prints it, and the
    reports list every item with its outcome."""
    review_repo.plan("rollout.md")
    (review_repo.path / os.fsdecode(CAFE)).write_bytes(b"x = 1\n")
    (review_repo.path / os.fsdecode(RESUME)).write_bytes(b"# Plan\n\n1. Do it.\n")
    review_repo.answer(PLAN_PROMPT, {"message": approved_review()})
    review_repo.answer(CODE_PROMPT, {"message": approved_review()})
    # Not pytester's runner: it decodes the output as UTF-8 and fails on the raw name.
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *review_repo.args("--advreview-json=out.json", "--advreview-report=out.md"),
        ],
        cwd=review_repo.path,
        capture_output=True,
        timeout=300,
        check=False,
    )
    out = proc.stdout.decode("utf-8", "replace") + proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 1, out
    assert "INTERNALERROR" not in out and "Traceback" not in out, out
    assert '"docs/plans/r\\351sum\\351.md"::adversarial-review' in out
    assert 'the changed file "caf\\351.py" is not UTF-8' in out
    report = json.loads((review_repo.path / "out.json").read_text(encoding="utf-8"))
    assert report["totals"]["gate"] == "error"
    outcomes = {i["record"]["key"]: i["record"]["outcome"] for i in report["items"]}
    assert outcomes == {
        "docs/plans/rollout.md": "passed",
        '"docs/plans/r\\351sum\\351.md"': "error",
        "code-review": "error",
    }, outcomes
    markdown = (review_repo.path / "out.md").read_text(encoding="utf-8")
    assert "No review item ran" not in markdown
    # Every item, with the names as git prints them (prose escapes the backslash).
    assert "| `docs/plans/rollout.md` | approved | ✅ passed |" in markdown, markdown
    assert '| `"docs/plans/r\\351sum\\351.md"` | aborted | ⛔ error |' in markdown, markdown
    assert "| `code-review` | aborted | ⛔ error |" in markdown, markdown
    assert re.search(r"caf\\{1,2}351\.py", markdown), markdown
    # Only the plan whose name is UTF-8 reached the reviewer.
    prompts = [r.last_user_text for r in review_repo.server.response_requests]
    assert len(prompts) == 1 and "docs/plans/rollout.md" in prompts[0], prompts


def test_quote_path_is_gits_quoting() -> None:
    from pytest_advreview.git import quote_path, unpassable_path

    assert quote_path(os.fsdecode(CAFE)) == '"caf\\351.py"'
    assert quote_path('a\tb"c\\d\x01') == '"a\\tb\\"c\\\\d\\001"'
    assert quote_path("café.py") == "café.py"  # UTF-8 text stays as it is
    assert unpassable_path("café.py", "the plan") is None
    message = unpassable_path(os.fsdecode(CAFE), "the changed file")
    assert message is not None and '"caf\\351.py" is not UTF-8' in message


def test_the_shapes_table_names_tests_that_exist() -> None:
    """docs/safety.md's "Repository shapes and inputs" table names the tests of each row."""
    here = Path(__file__).parent
    text = (here.parent / "docs" / "safety.md").read_text(encoding="utf-8")
    section = text.split("## Repository shapes and inputs", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) > 9
    named = set()
    for row in rows[1:]:
        cell = row.rstrip(" |").rsplit(" | ", 1)[1]
        found = re.findall(r"`(test_\w+)(?:\[(\w+)\])?`", cell)
        assert found or (cell == "—" and "not yet handled" in row), row
        named.update(found)
    sources = "\n".join(p.read_text(encoding="utf-8") for p in here.glob("test_*.py"))
    for name, param in named:
        assert re.search(rf"^def {name}\(", sources, re.M), name
        if param:
            assert f'"{param}"' in sources, (name, param)


def _submodule_repo(review_repo: ReviewRepo) -> tuple[Path, str, str]:
    """The review repository with a submodule ``lib`` at commit OLD, checked out at NEW
    (one commit later, not committed in the superproject: an uncommitted pointer change)."""
    lib = init_repo(review_repo.path.parent / f"{review_repo.path.name}-lib")
    write(lib, "lib.py", "def helper():\n    return 1\n")
    commit(lib, "the helper")
    old = git(lib, "rev-parse", "HEAD").strip()
    repo = review_repo.path
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    review_repo.commit("the lib submodule")
    write(lib, "lib.py", "def helper():\n    return 2  # SUBMODULE-NEW-CODE\n")
    commit(lib, "helper returns two")
    inside = repo / "lib"
    git(inside, "fetch", "-q", "origin")
    git(inside, "checkout", "-q", "--detach", "origin/HEAD")
    new = git(inside, "rev-parse", "HEAD").strip()
    assert new != old
    assert git(repo, "status", "--porcelain").strip() == "M lib"
    return inside, old, new


@pytest.mark.real_codex
def test_an_uncommitted_submodule_pointer_change_is_shown_to_the_reviewer(
    review_repo: ReviewRepo,
) -> None:
    """Class 2 of the issue: on main 1803125 the reviewer's private worktree had an empty
    ``lib`` and its diff command printed nothing for the pointer change; the prompt named
    no commit.  Now the prompt names OLD -> NEW with the submodule's log, and the
    reviewer's own diff in its worktree shows the ``Subproject commit`` lines and the
    submodule's files at NEW."""
    _inside, old, new = _submodule_repo(review_repo)
    review_repo.answer(
        CODE_PROMPT,
        shell_step(
            "git --no-pager diff --ignore-submodules=none HEAD; cat lib/lib.py; echo PROBE-DONE"
        ),
        {"message": approved_review()},
    )
    result = review_repo.run("--advreview-json=out.json")
    result.assert_outcomes(passed=1)
    prompt = ran_prompts(review_repo.server, CODE_PROMPT)[0]
    assert f"lib: {old} -> {new}" in prompt, prompt
    assert "helper returns two" in prompt, prompt
    [output] = review_repo.tool_outputs()
    assert "PROBE-DONE" in output, output
    assert f"-Subproject commit {old}" in output, output
    assert f"+Subproject commit {new}" in output, output
    assert "SUBMODULE-NEW-CODE" in output, output


def test_a_committed_submodule_pointer_change_names_its_commits(review_repo: ReviewRepo) -> None:
    from pytest_advreview.targets import submodule_changes

    _inside, old, new = _submodule_repo(review_repo)
    repo = review_repo.path
    git(repo, "checkout", "-q", "-b", "feature")
    git(repo, "commit", "-qam", "bump lib")
    lines = submodule_changes(repo, ["lib"], "main")
    assert lines[0] == f"lib: {old} -> {new}"
    assert lines[1].endswith("helper returns two")
    # Without the submodule's history: said so, never an empty log.
    shutil.rmtree(repo / "lib")
    (repo / "lib").mkdir()
    lines = submodule_changes(repo, ["lib"], "main")
    assert lines[0] == f"lib: {old} -> {new}"
    assert "not in this clone" in lines[1]


# -- the other entries a worktree or a diff can hide -----------------------------------------


def _shown(repo: Path, mode: str, base: str | None = "main") -> tuple[tuple[str, ...], str]:
    """The change set's files and what its diff commands print (what the reviewer runs)."""
    from pytest_advreview.targets import change_set

    change = change_set(repo, mode, base if mode == "branch" else None, set())
    assert change is not None
    printed = "".join(
        subprocess.run(
            ["bash", "-c", command], cwd=repo, capture_output=True, check=True, text=True
        ).stdout
        for command in change.diff_commands
        if command.startswith("git ")
    )
    return change.files, printed


@pytest.fixture
def plain_repo(tmp_path: Path, hermetic_git: None) -> Path:
    repo = init_repo(tmp_path / "repo")
    write(repo, "README.md", "# project\n")
    commit(repo, "initial")
    git(repo, "checkout", "-q", "-b", "feature")
    return repo


@pytest.mark.parametrize("mode", ["branch", "uncommitted"])
def test_a_symlink_change_shows_its_target(plain_repo: Path, mode: str) -> None:
    (plain_repo / "config.py").symlink_to("/etc/SYMLINK-TARGET")
    if mode == "branch":
        commit(plain_repo, "a link")
    else:
        git(plain_repo, "add", "config.py")
    files, printed = _shown(plain_repo, mode)
    assert files == ("config.py",)
    assert "new file mode 120000" in printed and "+/etc/SYMLINK-TARGET" in printed, printed


def test_a_file_outside_a_sparse_checkout_is_still_in_the_diff(plain_repo: Path) -> None:
    write(plain_repo, "hidden/deep.py", "HIDDEN-CODE = 1\n")
    write(plain_repo, "shown/app.py", "x = 1\n")
    commit(plain_repo, "two folders")
    git(plain_repo, "sparse-checkout", "set", "shown")
    assert not (plain_repo / "hidden").exists()  # the work tree cannot show it...
    files, printed = _shown(plain_repo, "branch")
    assert files == ("hidden/deep.py", "shown/app.py")
    assert "+HIDDEN-CODE = 1" in printed  # ...the diff, read from git's objects, does


def test_an_lfs_pointer_is_reviewed_as_the_pointer_git_stores(plain_repo: Path) -> None:
    # git-lfs need not be installed: the branch commits what it would, a pointer file.
    write(plain_repo, ".gitattributes", "*.bin filter=lfs diff=lfs merge=lfs -text\n")
    oid = "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393"
    write(
        plain_repo,
        "model.bin",
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize 12345\n",
    )
    commit(plain_repo, "an LFS object")
    files, printed = _shown(plain_repo, "branch")
    assert files == (".gitattributes", "model.bin")
    # The pointer's oid and size reach the reviewer; the object's content is not in git.
    assert f"+oid sha256:{oid}" in printed and "+size 12345" in printed, printed


@pytest.mark.parametrize("mode", ["branch", "uncommitted"])
def test_export_ignore_and_minus_diff_hide_nothing(plain_repo: Path, mode: str) -> None:
    write(plain_repo, ".gitattributes", "secret.py -diff export-ignore\n")
    commit(plain_repo, "attributes")
    base = git(plain_repo, "rev-parse", "HEAD").strip()
    write(plain_repo, "secret.py", "BACKDOOR = True\n")
    if mode == "branch":
        commit(plain_repo, "the file")
    else:
        git(plain_repo, "add", "secret.py")
    files, printed = _shown(plain_repo, mode, base)
    assert files == ("secret.py",)
    assert "+BACKDOOR = True" in printed and "Binary files" not in printed, printed


def test_a_case_only_rename_names_both_paths(plain_repo: Path) -> None:
    write(plain_repo, "Util.py", "def util():\n    return 1\n")
    git(plain_repo, "add", "Util.py")
    git(plain_repo, "commit", "-qm", "util")
    base = git(plain_repo, "rev-parse", "HEAD").strip()
    git(plain_repo, "mv", "Util.py", "util.py")
    write(plain_repo, "util.py", "def util():\n    return 2  # CHANGED-IN-RENAME\n")
    commit(plain_repo, "rename by case, and an edit")
    files, printed = _shown(plain_repo, "branch", base)
    assert files == ("Util.py", "util.py")
    assert "deleted file mode" in printed and "+    return 2  # CHANGED-IN-RENAME" in printed


def test_the_worktree_mirrors_a_staged_submodule_pointer(review_repo: ReviewRepo) -> None:
    from pytest_advreview.workspace.isolation import Worktree

    inside, old, new = _submodule_repo(review_repo)
    repo = review_repo.path
    git(repo, "add", "lib")  # staged: the index says NEW
    tree = Worktree.create(repo, repo.parent / f"{repo.name}-trees")
    try:
        staged = git(tree.path, "diff", "--cached", "--ignore-submodules=none")
        assert f"-Subproject commit {old}" in staged and f"+Subproject commit {new}" in staged
        assert git(tree.path / "lib", "rev-parse", "HEAD").strip() == new
    finally:
        tree.remove()
    # A submodule the user has not checked out stays an empty folder in the worktree.
    shutil.rmtree(inside)
    inside.mkdir()
    tree = Worktree.create(repo, repo.parent / f"{repo.name}-trees")
    try:
        assert list((tree.path / "lib").iterdir()) == []
        assert f"+Subproject commit {new}" in git(tree.path, "diff", "--cached")
    finally:
        tree.remove()


@pytest.mark.real_codex
def test_a_left_out_name_that_is_not_utf8_errors_the_code_item(review_repo: ReviewRepo) -> None:
    """A file ``advreview_exclude`` leaves out is named in the diff commands (to exclude
    it) and in the header and the JSON report: there as git prints it; the code item errors
    naming it (its diff commands cannot carry it), and nothing crashes."""
    review_repo.write("pytest.ini", "[pytest]\nadvreview_exclude = generated/*\n")
    review_repo.commit("exclude generated files")
    (review_repo.path / "generated").mkdir()
    (review_repo.path / "generated" / os.fsdecode(CAFE)).write_bytes(b"x = 1\n")
    review_repo.write("src/app.py", "def app():\n    return 1\n")
    review_repo.answer(CODE_PROMPT, {"message": approved_review()})
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *review_repo.args("--advreview-json=out.json")],
        cwd=review_repo.path,
        capture_output=True,
        timeout=300,
        check=False,
    )
    out = proc.stdout.decode("utf-8", "replace") + proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 1, out
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    assert 'left out by advreview_exclude: "generated/caf\\351.py"' in out, out
    assert 'advreview_exclude leaves out "generated/caf\\351.py" is not UTF-8' in out, out
    report = json.loads((review_repo.path / "out.json").read_text(encoding="utf-8"))
    assert report["change_set"]["filtered"] == ['"generated/caf\\351.py"']
    assert report["totals"]["gate"] == "error"
    assert review_repo.server.response_requests == []  # nothing was sent unreviewable


@pytest.mark.real_codex
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_an_item_that_crashes_inside_is_in_every_report_as_an_error(
    review_repo: ReviewRepo, workers: list[str]
) -> None:
    """On main 1803125 an exception inside a review (there: the prompt writer's
    UnicodeEncodeError) left the JSON report saying gate "empty" with 0 items and the
    markdown "No review item ran".  Here a conftest makes the prompt step raise."""
    review_repo.write(
        "conftest.py",
        "import pytest_advreview.prompts as prompts\n\n\n"
        "def boom(*args, **kwargs):\n    raise RuntimeError('BOOM-INSIDE')\n\n\n"
        "prompts.with_marker = boom\n",
    )
    review_repo.commit("a conftest that breaks the plugin")
    review_repo.plan("rollout.md")
    review_repo.write("src/app.py", "x = 1\n")
    result = review_repo.run_subprocess(
        "--advreview-json=out.json", "--advreview-report=out.md", *workers
    )
    assert result.ret == 1
    result.assert_outcomes(errors=2)
    report = json.loads((review_repo.path / "out.json").read_text())
    assert report["totals"]["gate"] == "error"
    outcomes = {i["record"]["key"]: i["record"]["outcome"] for i in report["items"]}
    assert outcomes == {"docs/plans/rollout.md": "error", "code-review": "error"}, outcomes
    assert all("RuntimeError: BOOM-INSIDE" in i["record"]["error"] for i in report["items"])
    markdown = (review_repo.path / "out.md").read_text()
    assert "No review item ran" not in markdown and "**Gate: error**" in markdown, markdown
    assert review_repo.server.response_requests == []


def test_a_submodule_added_or_moved_back_is_named_as_such(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_advreview import targets
    from pytest_advreview.targets import submodule_changes

    inside, old, new = _submodule_repo(review_repo)
    repo = review_repo.path
    first = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    assert submodule_changes(repo, ["lib"], first) == (f"lib: (none: added) -> {old}",)
    git(repo, "commit", "-qam", "bump lib")
    git(inside, "checkout", "-q", "--detach", old)  # back: nothing new comes in
    assert submodule_changes(repo, ["lib"], None) == (
        f"lib: {new} -> {old}",
        "  (no commit of NEW is new: the pointer moved back or sideways)",
    )
    assert submodule_changes(repo, [], None) == ()
    # A long history is cut, and says how to read the rest.
    git(inside, "config", "user.name", "Test")
    git(inside, "config", "user.email", "test@example.invalid")
    for n in range(3):
        write(inside, "lib.py", f"v = {n}\n")
        commit(inside, f"step {n}")
    monkeypatch.setattr(targets, "SUBMODULE_LOG_LINES", 2)
    lines = submodule_changes(repo, ["lib"], None)
    assert lines[1].endswith("step 2") and lines[2].endswith("step 1")
    assert lines[3] == "  ... and 1 more commits (git -C lib log)"
