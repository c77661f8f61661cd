"""Every warning class of the plugin under a project's ``filterwarnings = error``.

A project that makes warnings errors (itsdangerous does, as many projects do) turns the
plugin's warnings into exceptions raised from the plugin's code: in a review item
(``ReviewWarning``, ``StateWarning``), in a test that reviews through the
``adversarial_review`` fixture (``ContainmentWarning``) and at the session's end
(``HeadWarning``).  Each must reach the user as its text and the filter line to add,
never as a dump of the plugin's source or an INTERNALERROR.
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pytest

from conftest import ReviewRepo, git
from pytest_advreview import warnfilter
from pytest_advreview.testing import FindingSpec, approved_review, revise_review

PLAN = "# Plan\n\n1. Migrate.\n\n## Rollback\nRestore the backup.\n"
MEDIUM = FindingSpec("medium", "A log line could be clearer", section="Rollback")
STRICT = "[pytest]\nfilterwarnings =\n    error\n"


def _review_warning(repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A finding below fail-on: the review passes with a ReviewWarning."""
    repo.plan("x.md", PLAN)
    repo.answer("x.md", {"message": revise_review(MEDIUM)})
    return ["--advreview-fail-on=high"]


def _state_warning(repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A file where the state folder should be: the stored state cannot be used."""
    repo.plan("x.md", PLAN)
    repo.answer("x.md", {"message": approved_review()})
    in_the_way = repo.path / ".pytest_cache" / "d" / "advreview"
    in_the_way.parent.mkdir(parents=True)
    in_the_way.write_text("a file\n")
    return []


def _containment_warning(repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A fixture review whose reviewer could write its own CODEX_HOME (outside CI)."""
    repo.plan("x.md", PLAN)
    repo.answer("x.md", {"message": approved_review()})
    repo.write(
        "test_review.py",
        "def test_review(adversarial_review):\n"
        "    adversarial_review.plan('docs/plans/x.md').assert_approved()\n",
    )
    repo.write(
        ".gitignore", ".pytest_cache/\n__pycache__/\n/stdout\n/stderr\n/runpytest-*\n.codex/\n"
    )
    repo.commit("a fixture review")
    monkeypatch.setenv("CODEX_HOME", str(repo.path / ".codex"))
    monkeypatch.setenv("ADVREVIEW_ISOLATION", "none")  # the reviewer writes the repository
    return ["-p", "no:randomly"]


def _head_warning(repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A head checkout that cannot be removed at the session's end."""
    git(repo.path, "checkout", "-q", "-b", "pr")
    repo.plan("x.md", PLAN)
    repo.commit("head pr")
    git(repo.path, "checkout", "-q", "main")
    repo.answer("x.md", {"message": approved_review()})
    # Fault injection: the removal leaves the checkout in place.
    repo.write(
        "conftest.py",
        "from pytest_advreview.workspace import head\n\nhead._rmtree = lambda path: None\n",
    )
    repo.commit("a conftest that keeps the head checkout")
    return ["--advreview-head=pr"]


CASES: dict[str, Callable[[ReviewRepo, pytest.MonkeyPatch], list[str]]] = {
    "outcome.ReviewWarning": _review_warning,
    "state.StateWarning": _state_warning,
    "workspace.containment.ContainmentWarning": _containment_warning,
    "workspace.head.HeadWarning": _head_warning,
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_each_warning_class_under_filterwarnings_error_gives_its_text_and_filter_line(
    scripted_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    scripted_repo.write("pytest.ini", STRICT)
    scripted_repo.commit("warnings are errors")
    extra = CASES[kind](scripted_repo, monkeypatch)
    result = scripted_repo.run_subprocess("--advreview-diff=none", *extra)
    out = result.stdout.str() + result.stderr.str()
    name = kind.rsplit(".", 1)[1]
    if name == "HeadWarning" and f"made this {name} an error" not in out:
        # Older pytest (the matrix's 8.0) applies the ini's filterwarnings to the hooks,
        # not to the run's clean-up, where the head checkout is removed: there the warning
        # stays a warning, shown with the command that removes what is left.
        assert pytest.version_tuple < (9, 2), out
        assert "HeadWarning: pytest-advreview: the head checkout" in out, out
        assert "could not be removed completely; remove it with" in out, out
    else:
        assert f"made this {name} an error" in out, out
        assert f"add default::pytest_advreview.{kind} to filterwarnings" in out, out
    # The text of the warning, not pytest's dump of the plugin's source or a crash.
    assert "INTERNALERROR" not in out, out
    assert "Traceback" not in out, out
    assert "warnings.warn(" not in out, out
    assert "    def " not in out, out


def test_a_warning_of_another_package_made_an_error_is_left_to_pytest() -> None:
    def never(text: str) -> NoReturn:
        raise AssertionError(f"a foreign warning was reported as the plugin's: {text}")

    with pytest.raises(DeprecationWarning, match="not ours"), warnfilter.reported(never):
        raise DeprecationWarning("not ours")


def test_a_head_checkout_that_failed_and_stays_names_both_under_an_error_filter(
    git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkout's failure is said first; the removal that the filter made an error is
    added with its filter line, not raised instead of it."""
    from pytest_advreview.workspace import head

    git(git_repo, "branch", "pr")
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))

    def fail(repo: Path, checkout: head.HeadCheckout) -> None:
        raise OSError("No space left on device")

    monkeypatch.setattr(head, "_check_out", fail)
    monkeypatch.setattr(head, "_rmtree", lambda path: None)  # the checkout stays
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(head.HeadError) as raised:
            head.materialise(git_repo, "pr", None, rootdir=git_repo)
    text = str(raised.value)
    assert text.index("could not check out --advreview-head=pr") < text.index(
        "could not be removed completely"
    ), text
    assert "No space left on device" in text
    assert "add default::pytest_advreview.workspace.head.HeadWarning to filterwarnings" in text
