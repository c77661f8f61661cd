"""``--advreview-jobs`` without Codex: a reviewer plugged in with the project's own
``pytest_advreview_make_reviewer`` hook (see ``test_fixture_review_path.py``)."""

from __future__ import annotations

import pytest

from conftest import git
from pytest_advreview.testing import approved_review
from test_fixture_review_path import _stub_conftest


@pytest.fixture
def plans(pytester: pytest.Pytester) -> pytest.Pytester:
    git(pytester.path, "init", "-q", "-b", "main")
    git(pytester.path, "config", "user.name", "T")
    git(pytester.path, "config", "user.email", "t@example.invalid")
    (pytester.path / ".gitignore").write_text(
        ".pytest_cache/\n__pycache__/\n/conftest.py\n/prompts/\n"
    )
    folder = pytester.path / "docs" / "plans"
    folder.mkdir(parents=True)
    for name in ("a", "b", "c"):
        (folder / f"{name}.md").write_text(f"# Plan {name}\n\n1. Step.\n")
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-qm", "init")
    return pytester


def _run(plans: pytest.Pytester, hook: str, *args: str) -> pytest.RunResult:
    """Three approved plans reviewed by the stub, with ``hook`` added to the conftest."""
    _stub_conftest(plans, approved_review())
    with open(plans.path / "conftest.py", "a") as fh:
        fh.write("\nimport pytest\n\n" + hook)
    return plans.runpytest(
        "--adversarial-review",
        "--advreview-diff=none",
        "--advreview-reviewer=stub",
        "-p",
        "no:randomly",
        "-o",
        "advreview_plan_scope=all",
        *args,
    )


def test_an_item_skipped_before_its_setup_drops_the_review_started_for_it(
    plans: pytest.Pytester,
) -> None:
    # The first item's review is started ahead with the second's; a skip before its
    # setup means its review is never taken: the run still ends whole, in order.
    result = _run(
        plans,
        "@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_runtest_setup(item):\n"
        "    if 'a.md' in item.nodeid:\n"
        "        pytest.skip('not this one')\n",
        "--advreview-jobs=2",
    )
    result.assert_outcomes(passed=2, skipped=1)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_skip_mark_on_a_review_item_skips_it_with_its_plan_as_location(
    plans: pytest.Pytester, jobs: str
) -> None:
    # A conftest may mark review items like any other (here: skip one plan). pytest reads
    # the skip's location from reportinfo(), which must give a line number for that.
    result = _run(
        plans,
        "def pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        "        if 'b.md' in item.nodeid:\n"
        "            item.add_marker(pytest.mark.skip(reason='plan b is on hold'))\n",
        f"--advreview-jobs={jobs}",
        "-rs",
    )
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] docs/plans/b.md*: plan b is on hold"])
    assert len(list((plans.path / "prompts").glob("*.txt"))) == 2  # b was never reviewed
