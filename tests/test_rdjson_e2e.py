"""``--advreview-rdjson`` from a real run: the real Codex CLI reviews a branch, and the
findings it cites land on those lines of reviewdog's Diagnostic Format."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import ReviewRepo, git
from pytest_advreview.testing import FindingSpec, revise_review

PAY = "".join(f"line {n} of pay\n" for n in range(1, 13))
RANGE = FindingSpec("high", "Refund is paid twice", file="src/pay.py", lines=(9, 10))
SINGLE = FindingSpec("medium", "Amount is a float", file="src/pay.py:3")
UNPLACED = FindingSpec("medium", "No audit trail")


@pytest.mark.real_codex
def test_a_revise_on_a_branch_puts_the_diagnostics_on_the_cited_lines(
    review_repo: ReviewRepo, rdformat_validator: Callable[[Path], None]
) -> None:
    git(review_repo.path, "checkout", "-q", "-b", "feature")
    review_repo.write("src/pay.py", PAY)
    review_repo.write("pytest.ini", "[pytest]\n")
    review_repo.commit("the payment")
    review_repo.answer(
        "Review the code changes", {"message": revise_review(RANGE, SINGLE, UNPLACED)}
    )

    result = review_repo.run(
        "--advreview-diff=branch",
        "--advreview-fail-on=high",
        "--advreview-rdjson=out/review.rdjson",
        "--advreview-json=out/results.json",
        "-W",
        "default::pytest_advreview.outcome.ReviewWarning",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["locations: 2 of 3 findings have a line"])

    path = review_repo.path / "out" / "review.rdjson"
    rdformat_validator(path)
    data = json.loads(path.read_text())
    placed = {
        d["message"].splitlines()[0]: (d["location"], d["severity"]) for d in data["diagnostics"]
    }
    assert placed == {
        "[high] Refund is paid twice": (
            {"path": "src/pay.py", "range": {"start": {"line": 9}, "end": {"line": 10}}},
            "ERROR",
        ),
        "[medium] Amount is a float": (
            {"path": "src/pay.py", "range": {"start": {"line": 3}, "end": {"line": 3}}},
            "WARNING",
        ),
        # No place named: pinned to the configuration file, as in SARIF.
        "[medium] No audit trail": ({"path": "pytest.ini"}, "WARNING"),
    }
    assert {d["code"]["value"][:3] for d in data["diagnostics"]} == {"AR-"}
    totals = json.loads((review_repo.path / "out" / "results.json").read_text())["totals"]
    assert totals["findings_with_line"] == 2
