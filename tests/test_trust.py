"""trust/run.py: the run's trust mode is decided once and read, never re-read from the
environment; a head reviewed as data outside CI gates (docs/safety.md, "Reviewing a head
as data")."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from pytest_advreview.settings import Settings
from pytest_advreview.trust import run as trust
from pytest_advreview.workspace import Layout, containment


@pytest.mark.parametrize(
    ("environ", "strict", "head", "enforced", "gated"),
    [
        ({}, False, None, None, False),
        ({"CI": "true"}, False, None, "CI=true", True),
        ({"GITHUB_ACTIONS": "TRUE"}, False, None, "GITHUB_ACTIONS=TRUE", True),
        ({"CI": "false"}, True, None, "--advreview-strict-exit", True),
        ({}, False, "pr-head", None, True),
    ],
)
def test_the_gate_mode_has_two_parts(
    environ: dict[str, str], strict: bool, head: str | None, enforced: str | None, gated: bool
) -> None:
    decided = trust.decide(environ, strict_exit=strict, head=head)
    assert decided.enforced_by == enforced
    assert decided.gated is gated


def _config() -> pytest.Config:
    return cast(pytest.Config, SimpleNamespace(stash=pytest.Stash()))


def test_the_trust_is_decided_once_and_the_environment_is_not_read_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = _config()
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    first = trust.of_run(config, Settings())
    monkeypatch.setenv("CI", "true")
    assert trust.of_run(config, Settings()) is first
    assert not first.in_ci


def test_a_review_with_other_settings_gets_the_run_trust_for_them() -> None:
    config = _config()
    config.stash[trust.TRUST_KEY] = trust.decide({"CI": "1"}, strict_exit=False, head=None)
    found = trust.of_run(config, Settings(strict_exit=True))
    assert (found.ci, found.strict_exit) == ("CI=1", True)
    assert trust.of_run(config, Settings()).strict_exit is False


def test_a_head_as_data_outside_ci_refuses_a_writable_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    inside = repo / "python"
    inside.mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))
    monkeypatch.setattr(sys, "base_prefix", str(inside))
    settings = Settings(head="pr-head", sandbox="workspace-write")
    layout = Layout.decide(settings, repo, in_git=False)
    environ = {"CODEX_HOME": str(tmp_path / "codex-home")}
    local = trust.decide(environ, strict_exit=False, head="pr-head")
    with pytest.raises(pytest.UsageError, match="with --advreview-head this is refused"):
        containment.check(settings, layout, environ, local)
    # The same layout without a head, outside CI: a warning.
    plain = Settings(sandbox="workspace-write")
    (warning,) = containment.check(
        plain, layout, environ, trust.decide(environ, strict_exit=False, head=None)
    )
    assert warning.startswith("WARNING: ")


def test_the_action_fetches_the_approved_head_as_data_through_git(tmp_path: Path) -> None:
    # fetch-head runs git through git.py: the approved commit arrives, a missing one fails.
    from conftest import commit, git, init_repo, write
    from pytest_advreview import action

    origin = init_repo(tmp_path / "origin")
    write(origin, "a.txt", "base\n")
    commit(origin, "base")
    git(origin, "checkout", "-q", "-b", "pr")
    write(origin, "a.txt", "head\n")
    commit(origin, "head")
    head = git(origin, "rev-parse", "HEAD").strip()
    git(origin, "checkout", "-q", "main")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--single-branch", "--branch", "main", str(origin), str(clone))
    env = {"GITHUB_WORKSPACE": str(clone), "ADVREVIEW_ACTION_HEAD_SHA": head}
    assert action.main(["fetch-head"], env) == 0
    assert git(clone, "cat-file", "-t", head).strip() == "commit"
    missing = {**env, "ADVREVIEW_ACTION_HEAD_SHA": "0" * 40}
    assert action.main(["fetch-head"], missing) != 0
