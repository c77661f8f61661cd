"""The trust value itself: what decide() keeps of the environment, what a fixture's
override changes, and the base it resolves once (scripts/mutants trust)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import commit, git, init_repo
from pytest_advreview.trust import run as trust_run


def test_decide_keeps_the_ci_base_branch_and_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    assert trust_run.decide({"GITHUB_BASE_REF": "release"}, strict_exit=False, head=None) == (
        trust_run.Trust(ci=None, strict_exit=False, head=None, base_hint="release")
    )
    assert trust_run.decide({}, strict_exit=False, head=None).base_hint == ""


def test_a_fixtures_override_of_the_head_is_kept() -> None:
    run_trust = trust_run.decide({}, strict_exit=False, head=None)
    other = run_trust.for_settings(SimpleNamespace(strict_exit=False, head="feature"))  # type: ignore[arg-type]
    assert (other.head, other.gated, run_trust.gated) == ("feature", True, False)


def test_of_run_without_a_review_run_decides_with_the_settings_head(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    config = SimpleNamespace(stash={})
    found = trust_run.of_run(config, SimpleNamespace(strict_exit=False, head="feature"))  # type: ignore[arg-type]
    assert found.head == "feature" and found.gated


def test_the_base_is_resolved_once_from_the_ci_base_branch(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / "a.txt").write_text("a\n")
    commit(repo, "first")
    git(repo, "update-ref", "refs/remotes/origin/release", "HEAD")
    run_trust = trust_run.decide({"GITHUB_BASE_REF": "release"}, strict_exit=False, head=None)
    found = run_trust.base(repo, None)
    assert found is not None and "release" in found
    git(repo, "update-ref", "-d", "refs/remotes/origin/release")
    assert run_trust.base(repo, None) == found  # held: not resolved again
