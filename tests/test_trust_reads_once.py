"""The run's trust value holds the base's configuration: read once, not once per review.

Before: under a gate every code review of the ``adversarial_review`` fixture read the
base commit's pytest configuration again (the path rules), so a test module with many
fixture reviews read it as often.  Now :meth:`~pytest_advreview.trust.run.Trust.base_ini`
reads it once per run and every review gets the same value.  A real git repository, the
in-process scripted reviewer, and a spy on the one function that reads the configuration.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from conftest import ReviewRepo, git
from pytest_advreview.testing import approved_review
from pytest_advreview.trust import authority, baseconfig, pathrules
from pytest_advreview.trust import run as trust_run

RULE = "migrations/**: check that every step is reversible"


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter[tuple[str, str]]:
    """Counts reads of the base's configuration by commit and folder (in process)."""
    counted: Counter[tuple[str, str]] = Counter()
    original = baseconfig.ini_at

    def spy(repo: Any, commit: str, folder: str = "") -> Any:
        counted[(commit, folder)] += 1
        return original(repo, commit, folder)

    # pathrules took its own reference at import; both names lead to the spy.
    monkeypatch.setattr(baseconfig, "ini_at", spy)
    monkeypatch.setattr(pathrules, "ini_at", spy)
    return counted


def gated_fixture_reviews(repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """A pull request whose test module asks the fixture for ``n`` code reviews, in CI."""
    repo.write("pytest.ini", f"[pytest]\nadvreview_path_instructions = {RULE}\n")
    calls = "".join(
        "    adversarial_review.code(base='main').assert_approved()\n" for _ in range(n)
    )
    repo.write("test_review.py", f"def test_code(adversarial_review):\n{calls}")
    repo.commit("rules and the test")
    git(repo.path, "checkout", "-q", "-b", "feature")
    repo.write("migrations/0001.py", "def up():\n    pass\n")
    repo.commit("feature")
    repo.answer("Review the code changes", {"message": approved_review()})
    monkeypatch.setenv("CI", "true")


@pytest.mark.parametrize("n", [1, 3])
def test_the_bases_configuration_is_read_once_however_many_reviews(
    scripted_repo: ReviewRepo,
    monkeypatch: pytest.MonkeyPatch,
    reads: Counter[tuple[str, str]],
    n: int,
) -> None:
    gated_fixture_reviews(scripted_repo, monkeypatch, n)
    result = scripted_repo.pytester.runpytest("test_review.py")
    result.assert_outcomes(passed=1)
    # The rules reached the reviewer: they were read from the base.
    prompt = scripted_repo.server.response_requests[-1].last_user_text
    assert "- migrations/** (migrations/0001.py): check that every step is reversible" in prompt
    # Once for the settings (the gate's configuration at configure), once for the path
    # rules: the same for one review and for three.
    assert sum(reads.values()) == 2


def test_the_authority_is_chosen_once_and_held_by_the_runs_trust(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded: list[Path] = []
    original = authority.load_decisions

    def spy(path: Path) -> Any:
        loaded.append(path)
        return original(path)

    monkeypatch.setattr(authority, "load_decisions", spy)
    run_trust = trust_run.decide({}, strict_exit=False, head=None)
    settings = SimpleNamespace(
        decisions=str(tmp_path / "decisions.toml"),
        head=None,
        pull_request=None,
        commands=None,
        strict_exit=False,
    )
    config = cast(pytest.Config, SimpleNamespace(rootpath=tmp_path))
    first = authority.of_run(run_trust, config, settings, None)
    # The fixture's coordinator, with the same settings: the same value, not read again.
    assert authority.of_run(run_trust.for_settings(settings), config, settings, None) is first
    assert loaded == [tmp_path / "decisions.toml"]
    # A fixture's override of the gate shares what the run holds, but is another mode.
    strict = SimpleNamespace(**{**vars(settings), "strict_exit": True})
    assert run_trust.for_settings(strict).held is run_trust.held
    gated = authority.of_run(run_trust.for_settings(strict), config, strict, None)
    assert gated.gated and not first.gated
    # Another decisions file, pull request or head mode is another authority.
    other = SimpleNamespace(**{**vars(settings), "decisions": str(tmp_path / "other.toml")})
    assert authority.of_run(run_trust, config, other, None).where == str(tmp_path / "other.toml")
    pull = SimpleNamespace(**{**vars(settings), "pull_request": 7})
    assert authority.of_run(run_trust, config, pull, None).pull == 7
    head = SimpleNamespace(**{**vars(settings), "head": "feature"})
    assert authority.of_run(run_trust.for_settings(head), config, head, None).author is None
