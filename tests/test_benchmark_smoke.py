"""The benchmark command works (``benchmarks/run.py --quick``); no timing is asserted.

Benchmarks are not tests: the figures live in ``benchmarks/results/`` and docs/performance.md.
This only proves that the documented command runs end to end and writes its JSON, with
the one benchmark whose result is a count rather than a time (scope ``changed`` reads
and hashes only the changed plans).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.real_codex

PROJECT = Path(__file__).resolve().parents[1]


def test_quick_benchmark_runs_and_writes_its_table(codex_executable: Path, tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(PROJECT / "benchmarks" / "run.py"),
            "--quick",
            "--only",
            "4,7",
            f"--json={out}",
        ],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    # Exit 1 means "a target was missed", which quick sizes may do; 2 and 3 are errors.
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "| # | Benchmark | Result | Target | Met |" in proc.stdout
    data = json.loads(out.read_text(encoding="utf-8"))
    rows = {row["id"]: row for row in data["rows"]}
    assert sorted(rows) == ["4a", "4b", "7"]
    changed = rows["4b"]["details"]
    assert len(changed["items"]) == 3
    assert changed["plan_hash_calls"] == 3
    assert len(changed["files_opened_under_docs_plans"]) == 3
    assert rows["7"]["medians"]["big_stream_mb"] > 0
