"""Samples and verification measured by the eval mode (docs/eval.md, "Samples and
verification"): a scripted reviewer whose draws disagree -- every third draw adds a wrong
blocker, every third misses the defects -- reviewed with one sample, then with three
samples and verification, over three epochs.

One sample blocks a clean case in one epoch of three and misses a defective one in
another, so every case flips.  Three samples see every kind of draw in each epoch: the
merge keeps the defects another sample missed, the verifier refutes the wrong blocker
(high: below fail-on), so nothing flips and nothing clean is blocked.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from conftest import ReviewRepo
from eval_kit import CORPUS, cases, oracle, script, wrong_blocker
from pytest_advreview.eval import BUILTIN_CORPUS
from pytest_advreview.eval.case import Case
from pytest_advreview.testing import review_text

EPOCHS = 3
#: Enough draws for every sample of every epoch (the last step repeats past the end).
DRAWS = 3 * EPOCHS
WRONG = "Unrelated concern with naming"  # eval_kit.wrong_blocker's title
VERIFY = "You verify ONE finding"


def _verdict(result: str) -> dict[str, Any]:
    return {
        "message": f"VERIFICATION: {result}\nEVIDENCE: read the cited lines\n"
        f"REASON: the cited lines {'do not show' if result == 'REFUTED' else 'show'} it\n"
        "VERDICT: APPROVED"
    }


def noisy(case: Case) -> list[dict[str, Any]]:
    """Draw n: the oracle (n % 3 == 0), the oracle plus a wrong blocker (1), an approval
    that misses every defect (2); for a clean case: approval, wrong blocker, approval."""
    right = oracle(case)[0]
    wrong_too = {
        "message": review_text(
            "REVISE",
            [wrong_blocker(case)] if case.spec.clean else [*_findings(case), wrong_blocker(case)],
        )
    }
    approve = {"message": review_text("APPROVED")}
    return [[right, wrong_too, approve][n % 3] for n in range(DRAWS)]


def _findings(case: Case) -> list[Any]:
    from eval_kit import finding_of

    return [finding_of(d) for d in case.spec.defect]


def _script(corpus: Path) -> dict[str, Any]:
    drawn = script(corpus, noisy, real=False, threads_all=True)
    # The verifier, asked in a thread of its own: the wrong blocker is refuted, every
    # seeded defect confirmed.
    verify = [
        {"match": WRONG, "in": "last_user", "steps": [_verdict("REFUTED")], "threads": "all"},
        {"match": VERIFY, "in": "last_user", "steps": [_verdict("CONFIRMED")], "threads": "all"},
    ]
    return {**drawn, "rules": [*verify, *drawn["rules"]]}


def _measure(repo: ReviewRepo, corpus: Path, *extra: str) -> dict[str, Any]:
    repo.server.set_script(_script(corpus))
    result = repo.run(
        f"--advreview-eval={corpus}",
        f"--advreview-eval-epochs={EPOCHS}",
        "--advreview-eval-report=eval.json",
        "--advreview-jobs=1",  # epochs in order: each draws the next steps of its case
        "-W",
        "default",
        *extra,
    )
    assert "error" not in result.parseoutcomes(), result.stdout.str()
    report: dict[str, Any] = json.loads((repo.path / "eval.json").read_text())
    assert report["errors"] == 0
    return report


#: The kit's four cases on every run; the bundled corpus (six minutes on two cores) with
#: ``CONFIRMATION_EVAL_CORPUS=builtin``: the figures of docs/eval.md.
CHOSEN = BUILTIN_CORPUS if os.environ.get("CONFIRMATION_EVAL_CORPUS") == "builtin" else CORPUS


def test_three_samples_with_verification_remove_false_blocks_and_flips(
    scripted_repo: ReviewRepo,
) -> None:
    corpus = CHOSEN
    clean = sum(1 for c in cases(corpus) if c.spec.clean)
    total = len(cases(corpus))
    one = _measure(scripted_repo, corpus)
    assert one["false_block"]["successes"] == clean  # one epoch of three each
    assert one["false_block"]["trials"] == clean * EPOCHS
    assert one["flip"]["value"] == 1.0 and one["flip"]["trials"] == total
    assert one["recall"]["value"] == pytest.approx(2 / 3)

    three = _measure(scripted_repo, corpus, "--advreview-samples=3", "--advreview-verify")
    assert three["false_block"]["value"] == 0.0
    assert three["false_block"]["trials"] == clean * EPOCHS
    assert three["flip"]["value"] == 0.0 and three["flip"]["trials"] == total
    assert three["recall"]["value"] == 1.0
    # The report names the configuration, so a comparison shows what changed.
    assert "samples" not in one["reviewer"] and "verify" not in one["reviewer"]
    assert three["reviewer"]["samples"] == "3"
    assert three["reviewer"]["verify"] == "codex (demotes high,medium)"
    print(
        f"\n{corpus.name}: K=1 false-block {one['false_block']['value']:.3f} "
        f"flip {one['flip']['value']:.3f} recall {one['recall']['value']:.3f} "
        f"tokens {one.get('tokens')}; K=3+verify false-block "
        f"{three['false_block']['value']:.3f} flip {three['flip']['value']:.3f} "
        f"recall {three['recall']['value']:.3f} tokens {three.get('tokens')}"
    )
