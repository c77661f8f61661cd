"""``--advreview-eval`` end to end on the in-process scripted reviewer (fast)."""

from __future__ import annotations

import json

import pytest

from conftest import ReviewRepo
from eval_kit import CORPUS, oracle, script


def test_smoke(scripted_repo: ReviewRepo) -> None:
    scripted_repo.server.set_script(script(CORPUS, oracle, real=False))
    result = scripted_repo.run(f"--advreview-eval={CORPUS}", "--advreview-eval-report=out.json")
    print(result.stdout.str())
    result.assert_outcomes(passed=4)
    report = json.loads((scripted_repo.path / "out.json").read_text())
    assert report["recall"]["value"] == 1.0
