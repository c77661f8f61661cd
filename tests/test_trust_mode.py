"""The run's trust in another mode (strict exit, head) is the same run's: what it resolved
and read is shared, and the same mode is the same value (scripts/mutants trust)."""

from __future__ import annotations

from pathlib import Path

from conftest import commit, git, init_repo
from pytest_advreview.trust import run as trust_run


def test_the_same_mode_is_the_same_value_and_another_mode_shares_what_the_run_holds() -> None:
    run_trust = trust_run.decide({}, strict_exit=False, head=None)
    assert run_trust.with_mode(False, None) is run_trust
    strict = run_trust.with_mode(True, None)
    assert (strict.strict_exit, strict.head, strict.enforced_by) == (
        True,
        None,
        "--advreview-strict-exit",
    )
    assert not run_trust.strict_exit  # the run's own value is not changed
    head = run_trust.with_mode(False, "feature")
    assert (head.strict_exit, head.head, head.gated, head.enforced_by) == (
        False,
        "feature",
        True,
        None,
    )
    # Bases resolved and files read once serve every mode of the run.
    assert strict.held is run_trust.held and head.held is run_trust.held
    assert strict._bases is run_trust._bases


def test_each_named_base_is_resolved_as_named(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / "a.txt").write_text("a\n")
    commit(repo, "first")
    git(repo, "branch", "other")
    run_trust = trust_run.decide({}, strict_exit=False, head=None)
    # Held by repository and name: the second name is its own answer, not the first's.
    assert run_trust.base(repo, "other") == "other"
    assert run_trust.base(repo, None) == "main"  # the fallback, when none is named
    assert run_trust.base(repo, "other") == "other"
