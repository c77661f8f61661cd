"""``--advreview-only``: the review items, and no test module or package imported (real Codex)."""

from __future__ import annotations

import pytest

from conftest import ReviewRepo
from pytest_advreview.testing import approved_review

pytestmark = pytest.mark.real_codex


def _trap(repo: ReviewRepo, relpath: str, name: str) -> None:
    marker = repo.path.parent / f"IMPORTED-{name}"
    repo.write(relpath, f"from pathlib import Path\nPath({str(marker)!r}).write_text('x')\n")


def _imported(repo: ReviewRepo) -> list[str]:
    return sorted(p.name for p in repo.path.parent.glob("IMPORTED-*"))


def test_only_reviews_plans_without_importing_modules_or_packages(review_repo: ReviewRepo) -> None:
    review_repo.plan("x.md")
    _trap(review_repo, "tests/test_app.py", "test-module")
    # A plan inside a Python package: pytest would import the package's __init__.py when
    # the plan's item is set up.
    _trap(review_repo, "docs/__init__.py", "docs-package")
    _trap(review_repo, "docs/plans/__init__.py", "plans-package")
    review_repo.answer("x.md", {"message": approved_review()})

    result = review_repo.run("--advreview-only", "--advreview-diff=none")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*--advreview-only: review items only*"])
    assert _imported(review_repo) == []
    # Without the option the same run imports them: the traps work.
    review_repo.run("--advreview-diff=none")
    assert _imported(review_repo) == [
        "IMPORTED-docs-package",
        "IMPORTED-plans-package",
        "IMPORTED-test-module",
    ]
