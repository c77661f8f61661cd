"""The run's trust is decided once, before the settings, and resolves the base once.

Before: ``settings.resolve`` had the gate's configuration (:func:`~pytest_advreview.trust.
baseconfig.gate_config`) decide the trust on its own and resolve the base itself; the
session then decided the trust again and :meth:`~pytest_advreview.trust.run.Trust.base`
resolved the base a second time (a second chain of ``git rev-parse``).  Now the
configure-time path builds the one :class:`~pytest_advreview.trust.run.Trust` first,
the gate's configuration uses it, and the run keeps it, with the final settings' strict
exit and head.  A real git repository, the in-process scripted reviewer, and a spy on
the one function that resolves the base.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import ReviewRepo, git
from pytest_advreview import settings as settings_mod
from pytest_advreview import targets
from pytest_advreview.testing import approved_review
from pytest_advreview.trust import baseconfig
from pytest_advreview.trust import run as trust_run


@pytest.fixture
def resolved(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, str | None]]:
    """Each resolution of the base (in process): repository and explicit ref."""
    calls: list[tuple[Path, str | None]] = []
    original = targets.resolve_base

    def spy(repo: Path, explicit: str | None, env: Any) -> str | None:
        calls.append((repo, explicit))
        return original(repo, explicit, env)

    monkeypatch.setattr(targets, "resolve_base", spy)
    # A module that took its own reference at import leads to the spy too.
    monkeypatch.setattr(baseconfig, "resolve_base", spy, raising=False)
    return calls


class _Kept:
    """Keeps the run's settings and the trust the run holds, once collection is done."""

    def __init__(self) -> None:
        self.settings: settings_mod.Settings | None = None
        self.trust: trust_run.Trust | None = None
        self.of_run: trust_run.Trust | None = None

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        config = session.config
        self.settings = settings_mod.from_config(config)
        self.trust = config.stash[trust_run.TRUST_KEY]
        self.of_run = trust_run.of_run(config, self.settings)


def pull_request(repo: ReviewRepo, ini: str = "") -> None:
    """``main`` with a plan, the pytest file and a test that asks the fixture for a code
    review; ``feature`` changes a module and the plan."""
    repo.write("pytest.ini", f"[pytest]\n{ini}")
    repo.plan("p.md")
    repo.write(
        "test_review.py",
        "def test_code(adversarial_review):\n"
        "    adversarial_review.code(base='main').assert_approved()\n",
    )
    repo.commit("plan, configuration and the test")
    git(repo.path, "checkout", "-q", "-b", "feature")
    repo.write("app.py", "def f():\n    return 1\n")
    repo.plan("p.md", "# Plan\n\n1. Do the thing.\n2. And this.\n")
    repo.commit("feature")
    repo.answer("", {"message": approved_review()})


def test_a_gated_run_with_a_base_resolves_it_once_for_every_reader(
    scripted_repo: ReviewRepo,
    monkeypatch: pytest.MonkeyPatch,
    resolved: list[tuple[Path, str | None]],
) -> None:
    pull_request(scripted_repo)
    monkeypatch.setenv("CI", "true")
    kept = _Kept()
    result = scripted_repo.pytester.runpytest(
        *scripted_repo.args("--advreview-base=main"), plugins=[kept]
    )
    # The plan item, the code item and the fixture's code review all ran and passed.
    result.assert_outcomes(passed=3)
    # gate_config (the base's configuration), the targets, the coordinator and the
    # fixture asked for the base of one repository: git resolved it once.
    assert resolved == [(scripted_repo.path, "main")]
    assert kept.trust is not None and kept.trust.gated
    assert kept.of_run is kept.trust


def test_the_kept_trust_has_the_final_settings_strict_exit_from_the_ini(
    scripted_repo: ReviewRepo,
    resolved: list[tuple[Path, str | None]],
) -> None:
    # Outside CI the checkout's ini may turn strict exit on (not off: a gate never reads
    # it there): the gate's configuration saw no gate, the run's trust enforces.
    pull_request(scripted_repo, "advreview_strict_exit = true\n")
    kept = _Kept()
    result = scripted_repo.pytester.runpytest(
        *scripted_repo.args("--advreview-base=main"), plugins=[kept]
    )
    result.assert_outcomes(passed=3)
    assert kept.settings is not None and kept.settings.strict_exit
    assert kept.trust is not None
    assert kept.trust.strict_exit
    assert kept.trust.enforced_by == "--advreview-strict-exit"
    assert kept.of_run is kept.trust
    assert resolved == [(scripted_repo.path, "main")]


def test_resolving_again_keeps_what_the_runs_trust_holds(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("CI", "GITHUB_ACTIONS", "GITHUB_BASE_REF", "ADVREVIEW_STRICT_EXIT"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeini("[pytest]\nadvreview_strict_exit = true\n")
    config = pytester.parseconfig()
    earlier = trust_run.decide({}, strict_exit=False, head=None)
    earlier.held[("read",)] = "once"
    config.stash[trust_run.TRUST_KEY] = earlier
    settings = settings_mod.resolve(config, {})
    kept = config.stash[trust_run.TRUST_KEY]
    # Not decided again: the bases and what the run read stay; the mode is the final one.
    assert kept.held is earlier.held
    assert settings.strict_exit and kept.strict_exit
    assert trust_run.of_run(config, settings) is kept
