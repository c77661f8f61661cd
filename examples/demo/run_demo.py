"""Run ``pytest --adversarial-review`` on the bundled example repository, offline.

The reviewer is the real Codex CLI; the model behind it is the testing kit's scripted
Responses-API server on 127.0.0.1, answering with the reviews in ``reviews/``.  Nothing
leaves this machine and no account or key is needed.

What you should see: the sound plan passes, the flawed plan fails with its findings
(critical and high), the code change passes with a warning (its one finding is medium,
below ``--advreview-fail-on=high``), and the operator summary lists all three.

Then a second run adds the built-in lead (``--advreview-lead=codex``, a second Codex on
its own thread, scripted too): it takes up the flawed plan's stored review, accepts both
findings, rewrites the plan, and the reviewer's round 2 on the same thread approves it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pytest_advreview.models import Location, finding_id
from pytest_advreview.testing import (
    FAKE_KEY_ENV,
    FAKE_KEY_VALUE,
    ScriptedServer,
    approved_review,
    codex_provider_args,
    find_codex,
    shell_step,
)

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parents[1]


def git(repo: Path, *args: str) -> None:
    """Run git quietly in ``repo``."""
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def build_repo(root: Path) -> Path:
    """The example repository: plans on a feature branch, plus an uncommitted code change."""
    repo = root / "demo-repo"
    shutil.copytree(HERE / "repo", repo)
    plans = repo / "docs"
    shutil.move(str(plans), root / "docs")  # committed on the branch, not on main
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Demo")
    git(repo, "config", "user.email", "demo@example.invalid")
    git(repo, "config", "commit.gpgsign", "false")
    (repo / ".gitignore").write_text(".pytest_cache/\n__pycache__/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "service")
    git(repo, "checkout", "-q", "-b", "feature")
    shutil.move(str(root / "docs"), plans)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "plans")
    shutil.copy(HERE / "change" / "accounts.py", repo / "src" / "accounts.py")
    return repo


#: What the scripted lead does to the flawed plan (a shell command Codex runs for it).
LEAD_EDIT = """cat >> docs/plans/rename-user-ids.md <<'EOF'

## Revised approach (lead, round 1)
1. Add a `uuid` column beside `id`, backfill it in batches, and dual-write both.
2. Verify referential integrity for every table that references `users.id` before
   readers switch to `uuid`.
3. Drop the integer column one release later; every step above can be reverted.
EOF"""


def lead_decisions() -> str:
    """The scripted lead's answer: both findings of the flawed plan accepted."""
    accepted = [
        ("In-place key rewrite has no safe rollback", "Rollback", "expand/contract steps"),
        ("Foreign keys are rewritten without a consistency check", "Steps", "integrity check"),
    ]
    return json.dumps(
        {
            "decisions": [
                {
                    "finding": finding_id(title, Location(section=section)),
                    "action": "accept",
                    "reason": "Right; the plan now migrates with reversible steps.",
                    "changed": changed,
                }
                for title, section, changed in accepted
            ]
        }
    )


def script() -> dict[str, object]:
    """Server rules: each prompt names its plan (or is the code prompt); the lead's prompt
    and the reviewer's re-review prompt come first, since they name the plan too."""
    review = {p.stem: p.read_text(encoding="utf-8") for p in (HERE / "reviews").glob("*.md")}
    return {
        "rules": [
            {
                "match": "<!-- ADVREVIEW-LEAD:",
                "steps": [shell_step(LEAD_EDIT, "lead-edit"), {"message": lead_decisions()}],
            },
            {"match": "I've evaluated the findings.", "steps": [{"message": approved_review()}]},
            {"match": "add-audit-log.md", "steps": [{"message": review["add-audit-log"]}]},
            {"match": "rename-user-ids.md", "steps": [{"message": review["rename-user-ids"]}]},
            {"match": "Review the code changes", "steps": [{"message": review["code-change"]}]},
        ],
        "default": {"http_status": 400, "body": {"error": {"message": "unscripted prompt"}}},
    }


def main() -> int:
    """Build the repo, start the scripted server, run pytest, explain the result."""
    codex = find_codex(PROJECT)
    if codex is None:
        print("demo: the Codex CLI is not installed; run scripts/setup first", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="advreview-demo-") as tmp:
        root = Path(tmp)
        repo = build_repo(root)
        home = root / "codex-home"
        home.mkdir()
        env = {
            **os.environ,
            "CODEX_HOME": str(home),
            FAKE_KEY_ENV: FAKE_KEY_VALUE,
            "TMPDIR": str(root),
        }
        for secret in ("OPENAI_API_KEY", "CODEX_API_KEY"):
            env.pop(secret, None)
        # The demo is a laptop session: its code change is uncommitted, and under CI
        # (CI=true, as when the test suite runs it there) auto would review the branch.
        for name in ("CI", "GITHUB_ACTIONS"):
            env.pop(name, None)
        with ScriptedServer(script()) as server:
            argv = [
                sys.executable,
                "-m",
                "pytest",
                "--adversarial-review",
                f"--advreview-codex={codex}",
                "--advreview-model=fake-model",
                "--advreview-fail-on=high",
                "--advreview-base=main",
                *[f"--advreview-codex-config={v}" for v in codex_provider_args(server.url)],
            ]
            print("demo: $ pytest --adversarial-review --advreview-fail-on=high ...", flush=True)
            ret = subprocess.run(argv, cwd=repo, env=env, check=False).returncode
            lead = [*argv, "--advreview-lead=codex", "docs/plans/rename-user-ids.md"]
            print(
                "\ndemo: $ pytest --adversarial-review docs/plans/rename-user-ids.md "
                "--advreview-lead=codex ...",
                flush=True,
            )
            lead_ret = subprocess.run(lead, cwd=repo, env=env, check=False).returncode
    # The flawed plan is meant to fail first: exit status 1, then 0 once the lead fixed it.
    if ret == 1 and lead_ret == 0:
        print("\ndemo: finished as expected — one plan approved, one plan failed with its")
        print("demo: findings, and the code change passed with a warning (medium < high).")
        print("demo: With --advreview-lead=codex the lead fixed the failing plan and the")
        print("demo: reviewer approved it in round 2, in one command.")
        return 0
    print(f"\ndemo: unexpected pytest exit status {ret}, then {lead_ret}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
