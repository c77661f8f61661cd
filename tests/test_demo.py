"""The README's first command: the bundled example, offline, against the real Codex CLI.

``scripts/demo`` runs ``examples/demo/run_demo.py`` after the setup; this runs the same
script, so a change that breaks what a newcomer sees first fails the suite.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo" / "run_demo.py"


def test_demo_shows_a_pass_a_failure_with_findings_and_a_warning(codex_executable: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(DEMO)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "1 failed, 2 passed" in out
    assert "docs/plans/add-audit-log.md::adversarial-review: approved (passed)" in out
    assert "FAILED docs/plans/rename-user-ids.md::adversarial-review" in out
    assert "[severity: critical]" in out
    assert "::code-review: revise (passed)" in out
    assert "demo: finished as expected" in out
    # The second run: the codex lead fixes the failing plan, round 2 approves it.
    assert "lead (codex) after round 1: edited docs/plans/rename-user-ids.md (+6 -0)" in out
    assert "docs/plans/rename-user-ids.md::adversarial-review: approved (passed) — round 2" in out
    # Nothing a newcomer would have to puzzle over: no traceback, no warning of our own
    # beyond the review's (the below-threshold finding).
    assert "Traceback" not in out + proc.stderr
    assert "StateWarning" not in out
