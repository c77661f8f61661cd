"""Review items under real pytest-xdist workers (each a process of its own).

Where results land and what the controller reports is the plugin's: the in-process scripted
reviewer reviews those.  A reviewer's tool call that writes into the shared checkout is
Codex's: that test runs the real Codex CLI.
"""

from __future__ import annotations

import re

from conftest import ReviewRepo
from pytest_advreview.testing import FindingSpec, approved_review, revise_review, shell_step

VERDICTS = {
    "p0.md": "approved",
    "p1.md": "high",
    "p2.md": "approved",
    "p3.md": "medium",
    "p4.md": "critical",
    "p5.md": "approved",
    "p6.md": "high",
    "p7.md": "approved",
}


def _script(repo: ReviewRepo) -> None:
    for name, verdict in VERDICTS.items():
        repo.plan(name, f"# Plan {name}\n\n1. Step.\n")
        if verdict == "approved":
            repo.answer(name, {"message": approved_review()})
        else:
            spec = FindingSpec(verdict, f"Problem in {name}", section="Steps")
            repo.answer(name, {"message": revise_review(spec)})


def _outcomes(out: str) -> dict[str, str]:
    found = dict(re.findall(r"docs/plans/(p\d\.md)::adversarial-review: (\w+)", out))
    return found


def test_eight_plans_on_four_workers_match_a_serial_run(scripted_repo: ReviewRepo) -> None:
    _script(scripted_repo)
    parallel = scripted_repo.run("--advreview-diff=none", "-n", "4")
    serial = scripted_repo.run("--advreview-diff=none", "--advreview-fresh")
    serial.assert_outcomes(passed=4, failed=4)
    parallel.assert_outcomes(passed=4, failed=4)
    expected = {name: ("approved" if v == "approved" else "revise") for name, v in VERDICTS.items()}
    assert _outcomes(serial.stdout.str()) == expected
    assert _outcomes(parallel.stdout.str()) == expected
    # The operator summary is written once, on the controller, listing all eight.
    summary = parallel.stdout.str().split("adversarial review summary", 1)[1]
    assert summary.count("::adversarial-review:") == 8
    assert parallel.stdout.str().count("adversarial review summary") == 1
    # Every worker stored its targets' state in the one pytest cache.
    states = scripted_repo.path / ".pytest_cache" / "d" / "advreview" / "state"
    assert len(list(states.glob("*.json"))) == 8
    # Each failure carries its own plan's finding (results land on the right item).
    for name, verdict in VERDICTS.items():
        if verdict != "approved":
            parallel.stdout.fnmatch_lines([f"*[[]severity: {verdict}[]] AR-* Problem in {name}*"])


def test_without_isolation_an_overlapping_mutation_fails_every_overlapping_item(
    review_repo: ReviewRepo,
) -> None:
    review_repo.plan("writer.md", "# Plan writer\n")
    review_repo.plan("slow.md", "# Plan slow\n")
    # The writer's reviewer writes pwned.txt once the slow review has asked the model (its
    # workspace is snapshotted), and the slow review is answered only after the write (the
    # writer's next request carries the tool's output).
    review_repo.answer(
        "writer.md",
        {**shell_step("echo 1 > pwned.txt"), "hold": {"seen": "docs/plans/slow.md"}},
        {"message": approved_review()},
    )
    review_repo.answer(
        "slow.md", {"message": approved_review(), "hold": {"seen": "function_call_output"}}
    )
    result = review_repo.run("--advreview-diff=none", "--advreview-isolation=none", "-n", "2")
    result.assert_outcomes(passed=2, errors=2)  # fail closed: both items error
    out = result.stdout.str()
    for name in ("writer.md", "slow.md"):
        section = out.split(f"ERROR at teardown of [advreview] docs/plans/{name}", 1)[1]
        assert "pwned.txt (untracked" in section.split("ERROR at teardown", 1)[0]
    assert "--advreview-isolation=worktree" in out
