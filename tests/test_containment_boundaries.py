"""Boundaries of containment.py: every place of the gate checked for exposure on its own,
the edge of "inside the workspace", when it is refused and when warned, and who may write
the workspace (each setting in each place a review may run: outside git, a repository
without a commit, one with a commit, a head's private checkout).

The check searches only the folder :class:`~pytest_advreview.workspace.Layout` says a
reviewer or lead may write; the tests here run in place (outside git), where that folder
is the repository, unless they say otherwise.

A mutation test: ``sys.base_prefix`` dropped from the places checked passed the whole
suite; the tests moved only ``sys.prefix``, the package and ``CODEX_HOME``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import pytest_advreview
from conftest import commit, init_repo, write
from pytest_advreview.settings import Settings
from pytest_advreview.trust import run as trust
from pytest_advreview.workspace import Layout, containment
from pytest_advreview.workspace.containment import Exposure

PACKAGE = Path(pytest_advreview.__file__).parent
FIX = (
    "move the virtual environment (and CODEX_HOME) out of the repository, pass "
    "--advreview-sandbox=read-only, or let each review run in a worktree of its own "
    "(--advreview-isolation=auto or worktree; auto needs a git repository with a commit)"
)


def in_place(root: Path, settings: Settings | None = None) -> Layout:
    """The layout of reviews outside git: they run in ``root`` itself."""
    return Layout.decide(settings or Settings(), root, in_git=False)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace; the Python environment, the installation and Codex's home elsewhere."""
    root = tmp_path / "repo"
    root.mkdir()
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))
    monkeypatch.setattr(sys, "base_prefix", str(tmp_path / "python"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return root


@pytest.fixture
def base(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A base Python installation inside the workspace."""
    inside = repo / "python"
    inside.mkdir()
    monkeypatch.setattr(sys, "base_prefix", str(inside))
    return inside


def elsewhere(tmp_path: Path) -> dict[str, str]:
    return {"CODEX_HOME": str(tmp_path / "codex-home")}


def test_nothing_of_the_gate_inside_the_workspace_is_no_finding(repo: Path, tmp_path: Path) -> None:
    assert containment.exposed(repo, elsewhere(tmp_path)) == []


def test_a_base_python_inside_the_workspace_is_found(
    repo: Path, tmp_path: Path, base: Path
) -> None:
    assert containment.exposed(repo, elsewhere(tmp_path)) == [
        Exposure("the Python installation (sys.base_prefix)", base)
    ]


def test_a_base_python_inside_the_workspace_is_refused_under_ci(
    repo: Path, tmp_path: Path, base: Path
) -> None:
    with pytest.raises(pytest.UsageError) as info:
        containment.check(Settings(), in_place(repo), {**elsewhere(tmp_path), "CI": "true"})
    assert str(info.value) == (
        f"pytest-advreview: the reviewer may write {repo} (sandbox=workspace-write), and "
        f"the gate's own code lies inside it: the Python installation (sys.base_prefix) at "
        f"{base}. A reviewer could change what decides its verdict; under CI or "
        f"--advreview-strict-exit this is refused: {FIX}"
    )


def test_a_base_python_inside_the_workspace_is_warned_about_locally(
    repo: Path, tmp_path: Path, base: Path
) -> None:
    assert containment.check(Settings(), in_place(repo), elsewhere(tmp_path)) == [
        f"WARNING: the reviewer may write {repo} (sandbox=workspace-write), and the gate's "
        f"own code lies inside it: the Python installation (sys.base_prefix) at {base}. A "
        f"reviewer could change what decides its verdict; {FIX}"
    ]


def test_the_python_environment_inside_the_workspace_is_found(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = repo / ".venv"
    venv.mkdir()
    monkeypatch.setattr(sys, "prefix", str(venv))
    assert containment.exposed(repo, elsewhere(tmp_path)) == [
        Exposure("the Python environment running pytest (sys.prefix)", venv)
    ]


def test_a_venv_and_its_base_python_in_one_place_are_named_once(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside a venv sys.prefix and sys.base_prefix are the same folder: one finding."""
    python = repo / "python"
    python.mkdir()
    monkeypatch.setattr(sys, "prefix", str(python))
    monkeypatch.setattr(sys, "base_prefix", str(repo / "link"))
    (repo / "link").symlink_to(python)
    assert containment.exposed(repo, elsewhere(tmp_path)) == [
        Exposure("the Python environment running pytest (sys.prefix)", python)
    ]


def test_the_package_inside_the_workspace_is_found(tmp_path: Path, repo: Path) -> None:
    assert containment.exposed(PACKAGE.parent, elsewhere(tmp_path)) == [
        Exposure("the pytest-advreview package", PACKAGE)
    ]
    assert containment.exposed(PACKAGE, elsewhere(tmp_path)) == [
        Exposure("the pytest-advreview package", PACKAGE)
    ]  # the folder itself is inside


def test_codex_home_inside_the_workspace_is_found(repo: Path) -> None:
    home = repo / ".codex-home"
    assert containment.exposed(repo, {"CODEX_HOME": f"  {home}\n"}) == [
        Exposure("CODEX_HOME (Codex's configuration and sessions)", home)
    ]


@pytest.mark.parametrize("value", [None, "", "   "])
def test_without_codex_home_codex_uses_dot_codex_in_the_home_folder(
    repo: Path, monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    monkeypatch.setenv("HOME", str(repo))
    environ = {} if value is None else {"CODEX_HOME": value}
    assert containment.exposed(repo, environ) == [
        Exposure("CODEX_HOME (Codex's configuration and sessions)", repo / ".codex")
    ]


def test_a_folder_beside_the_workspace_with_its_name_as_a_prefix_is_not_inside(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    beside = tmp_path / "repo2"
    beside.mkdir()
    monkeypatch.setattr(sys, "prefix", str(beside))
    monkeypatch.setattr(sys, "base_prefix", str(tmp_path / "repo-python"))
    assert containment.exposed(repo, {"CODEX_HOME": str(tmp_path / "repox")}) == []
    # The workspace itself is inside.
    monkeypatch.setattr(sys, "prefix", str(repo))
    assert [e.path for e in containment.exposed(repo, elsewhere(tmp_path))] == [repo]


def test_every_place_inside_is_listed_in_order_in_the_refusal(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv, base, home = repo / ".venv", repo / "python", repo / "codex"
    monkeypatch.setattr(sys, "prefix", str(venv))
    monkeypatch.setattr(sys, "base_prefix", str(base))
    settings = Settings(lead="codex", sandbox="read-only", strict_exit=True)
    with pytest.raises(pytest.UsageError) as info:
        containment.check(settings, in_place(repo, settings), {"CODEX_HOME": str(home)})
    assert (
        f"may write {repo} (lead=codex), and the gate's own code lies inside it: the Python "
        f"environment running pytest (sys.prefix) at {venv}; the Python installation "
        f"(sys.base_prefix) at {base}; CODEX_HOME (Codex's configuration and sessions) at "
        f"{home}. A reviewer"
    ) in str(info.value)


@pytest.mark.parametrize(
    ("environ", "strict", "gated"),
    [
        ({}, False, False),
        ({"CI": "false"}, False, False),
        ({"CI": "true"}, False, True),
        ({"CI": " TRUE "}, False, True),
        ({"GITHUB_ACTIONS": "true"}, False, True),
        ({}, True, True),
    ],
)
def test_the_exposure_is_refused_exactly_when_the_verdict_gates(
    repo: Path, monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], strict: bool, gated: bool
) -> None:
    monkeypatch.setattr(sys, "prefix", str(repo / ".venv"))
    environ = {**environ, "CODEX_HOME": str(repo.parent / "codex-home")}
    settings = Settings(strict_exit=strict)
    if gated:
        with pytest.raises(pytest.UsageError, match="this is refused"):
            containment.check(settings, in_place(repo, settings), environ)
    else:
        (warning,) = containment.check(settings, in_place(repo, settings), environ)
        assert warning.startswith("WARNING: the reviewer may write")


def test_no_writable_workspace_or_nothing_inside_is_no_warning(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "prefix", str(repo / ".venv"))
    ci = {**elsewhere(tmp_path), "CI": "true"}
    for settings in (Settings(sandbox="read-only"), Settings(isolation="worktree")):
        assert containment.check(settings, in_place(repo, settings), ci) == []
    # In place, with nothing of the gate inside.
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))
    assert containment.check(Settings(), in_place(repo), ci) == []


def test_a_venv_in_the_checkout_is_refused_only_where_the_reviewer_writes_the_checkout(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under the default the layout decides: the same repository is refused where the
    reviews run in it (before the first commit, with isolation none, under a head) and
    not where each gets a worktree of its own."""
    monkeypatch.setattr(sys, "prefix", str(repo / ".venv"))
    ci = {**elsewhere(tmp_path), "CI": "true"}
    init_repo(repo)
    with pytest.raises(pytest.UsageError, match="this is refused"):  # an unborn branch
        containment.check(Settings(), Layout.decide(Settings(), repo, in_git=True), ci)
    write(repo, "README.md")
    commit(repo)
    auto = Layout.decide(Settings(), repo, in_git=True)
    assert auto.isolated  # a worktree per review: the .venv is out of the reviewer's reach
    assert containment.check(Settings(), auto, ci) == []
    none = Settings(isolation="none")
    with pytest.raises(pytest.UsageError, match="this is refused"):
        containment.check(none, Layout.decide(none, repo, in_git=True), ci)
    head = Layout.decide(Settings(), repo, in_git=True, head=True)
    with pytest.raises(pytest.UsageError, match="this is refused"):
        containment.check(Settings(), head, ci)


@pytest.mark.parametrize(
    ("settings", "writes"),
    [
        (Settings(), True),
        (Settings(sandbox="inherit"), True),
        (Settings(sandbox="danger-full-access"), True),
        (Settings(sandbox="read-only"), False),
        (Settings(reviewer="command", command="x"), False),
        (Settings(reviewer="command", command="x", lead="command", lead_command="y"), True),
        (Settings(sandbox="read-only", lead="codex"), True),
        (Settings(sandbox="read-only", lead="claude"), True),
        (Settings(isolation="none"), True),
        (Settings(isolation="none", sandbox="read-only"), False),
        (Settings(isolation="worktree"), False),
        (Settings(isolation="worktree", lead="codex"), False),
    ],
)
def test_who_may_write_the_workspace(tmp_path: Path, settings: Settings, writes: bool) -> None:
    """``writes``: a sandboxed reviewer or lead of ``settings`` may write the user's
    repository wherever the reviews run in it.  They do outside git, before the first
    commit and in a head's private checkout; in a repository with a commit ``auto`` gives
    each review a worktree of its own (``none`` keeps them in place)."""
    repo = init_repo(tmp_path / "repo")
    expected = repo if writes else None

    def writable(*, in_git: bool = True, head: bool = False) -> Path | None:
        return Layout.decide(settings, repo, in_git=in_git, head=head).writable

    assert writable(in_git=False) == expected
    assert writable() == expected  # no commit yet
    write(repo, "README.md")
    commit(repo)
    assert writable(head=True) == expected
    assert writable() == (expected if settings.isolation == "none" else None)


def test_the_preload_leaves_out_the_testing_kit_the_doctor_and_the_entry_point() -> None:
    names = containment.preload()
    assert names == containment.preload()  # once per process, the same list
    assert "pytest_advreview.plugin" in names
    assert "pytest_advreview.runner.environment" in names
    for left_out in ("testing", "doctor", "__main__"):
        assert not any(n.startswith(f"pytest_advreview.{left_out}") for n in names)


def test_the_first_preload_of_a_process_imports_every_module_it_lists(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Measured from an empty list (an earlier test of this process preloaded already)."""
    monkeypatch.setattr(containment, "_preloaded", [])
    names = containment.preload()
    assert names == containment._preloaded
    assert names is not containment._preloaded  # a copy: the caller cannot change it
    assert all(isinstance(n, str) and n.startswith("pytest_advreview.") for n in names)
    assert {"pytest_advreview.exitstatus", "pytest_advreview.report.sarif"} <= set(names)
    assert not any(
        n.startswith(("pytest_advreview.testing", "pytest_advreview.doctor.")) for n in names
    )
    assert "pytest_advreview.doctor" not in names and "pytest_advreview.__main__" not in names


@pytest.mark.parametrize("given", [False, True])
@pytest.mark.parametrize(
    ("environ", "strict", "why"),
    [
        ({}, False, "with --advreview-head"),
        ({"CI": "true"}, False, "under CI or --advreview-strict-exit"),
        ({}, True, "under CI or --advreview-strict-exit"),
    ],
)
def test_a_head_reviewed_as_data_gates_and_the_refusal_says_why(
    repo: Path,
    tmp_path: Path,
    base: Path,
    environ: dict[str, str],
    strict: bool,
    why: str,
    given: bool,
) -> None:
    """docs/safety.md, "Reviewing a head as data": outside CI and without the strict
    option a head reviewed as data still gates containment; the refusal names what made
    the run gate, the CI or the strict option first.  The same whether the run's trust is
    handed in or decided from the settings and the environment (a direct call)."""
    settings = Settings(head="pr-head", strict_exit=strict)
    environ = {**elsewhere(tmp_path), **environ}
    run_trust = trust.decide(environ, strict_exit=strict, head="pr-head") if given else None
    with pytest.raises(pytest.UsageError) as info:
        containment.check(settings, in_place(repo, settings), environ, run_trust)
    assert str(info.value) == (
        f"pytest-advreview: the reviewer may write {repo} (sandbox=workspace-write), and "
        f"the gate's own code lies inside it: the Python installation (sys.base_prefix) at "
        f"{base}. A reviewer could change what decides its verdict; {why} this is refused: "
        f"{FIX}"
    )
