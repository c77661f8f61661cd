"""actionlint and zizmor find nothing in ``action.yml``, in every workflow of docs/ci.md and
in the repository's own workflows (``.github/workflows``: the release).

actionlint reads workflows only, so the action's steps are also checked as the job of a
reusable workflow with the same inputs (expressions, the cache actions' inputs, and
shellcheck on every ``run:`` script). zizmor reads composite actions itself. Both run
offline; scripts/setup installs the exact versions whose findings these tests are.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
CI_DOC = ROOT / "docs" / "ci.md"
WORKFLOWS = ROOT / ".github" / "workflows"
RELEASE = WORKFLOWS / "release.yml"
_FENCE = re.compile(r"^```yaml\n(.*?)^```", re.S | re.M)
_PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*$")


def _tool(name: str) -> str:
    """The linter next to this Python, else on PATH; CI fails without it, a laptop skips."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        message = f"{name} is not installed; run scripts/setup"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{message} (CI=true, so this is a failure, not a skip)", pytrace=False)
        pytest.skip(message)
    return found


def doc_workflows() -> list[tuple[str, dict[str, Any], str]]:
    """The GitHub workflows among the YAML blocks of docs/ci.md: (name, parsed, text)."""
    found = []
    for index, match in enumerate(_FENCE.finditer(CI_DOC.read_text(encoding="utf-8"))):
        text = match.group(1)
        data = yaml.safe_load(text)
        if isinstance(data, dict) and "jobs" in data:
            found.append((f"ci-md-{index}.yml", data, text))
    return found


def repo_workflows() -> list[tuple[str, dict[str, Any], str]]:
    """The repository's own workflows: (name, parsed, text)."""
    found = []
    for path in sorted(WORKFLOWS.glob("*.yml")):
        text = path.read_text(encoding="utf-8")
        found.append((f"repo-{path.name}", yaml.safe_load(text), text))
    return found


def all_workflows() -> list[tuple[str, dict[str, Any], str]]:
    return [*doc_workflows(), *repo_workflows()]


def _action_as_workflow() -> str:
    action = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    inputs = {
        name: {"type": "string", "default": str(spec.get("default", "")), "required": False}
        for name, spec in action["inputs"].items()
    }
    workflow = {
        "name": "action.yml as a reusable workflow",
        "on": {"workflow_call": {"inputs": inputs}},
        "permissions": {"contents": "read"},
        "jobs": {
            "action": {
                "runs-on": "ubuntu-latest",
                "timeout-minutes": 60,
                "steps": action["runs"]["steps"],
            }
        },
    }
    return yaml.safe_dump(workflow, sort_keys=False)


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NO_COLOR="1")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_docs_have_the_workflows_the_tests_lint() -> None:
    names = [data["name"] for _, data, _ in doc_workflows()]
    assert {"adversarial review", "adversarial review (fork pull requests)"} <= set(names)


def test_actionlint_finds_nothing(tmp_path: Path) -> None:
    actionlint = _tool("actionlint")
    _tool("shellcheck")
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "action.yml").write_text(_action_as_workflow(), encoding="utf-8")
    for name, _, text in all_workflows():
        (workflows / name).write_text(text, encoding="utf-8")
    files = sorted(str(path) for path in workflows.iterdir())
    proc = _run([actionlint, "-no-color", *files], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The linter did look: a broken expression in a copy is reported.
    broken = _action_as_workflow().replace("steps.prepare.outputs.review", "steps.nope.outputs.x")
    (workflows / "action.yml").write_text(broken, encoding="utf-8")
    assert _run([actionlint, "-no-color", *files], tmp_path).returncode != 0


def test_zizmor_finds_nothing(tmp_path: Path) -> None:
    zizmor = _tool("zizmor")
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    for name, _, text in all_workflows():
        (workflows / name).write_text(text, encoding="utf-8")
    shutil.copy(ACTION, tmp_path / "action.yml")
    proc = _run([zizmor, "--offline", "--no-progress", "--format=plain", str(tmp_path)], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No findings" in proc.stdout + proc.stderr
    # The linter did look: an input spliced into a script is reported.
    spliced = ACTION.read_text(encoding="utf-8").replace(
        'mkdir -p "$CODEX_HOME"', 'mkdir -p "$CODEX_HOME" ${{ inputs.model }}'
    )
    assert spliced != ACTION.read_text(encoding="utf-8")
    (tmp_path / "action.yml").write_text(spliced, encoding="utf-8")
    again = _run([zizmor, "--offline", "--no-progress", "--format=plain", str(tmp_path)], tmp_path)
    assert "template-injection" in again.stdout + again.stderr


def test_every_action_is_pinned_to_a_full_commit_with_its_version() -> None:
    texts = [ACTION.read_text(encoding="utf-8"), *(text for _, _, text in all_workflows())]
    uses = [
        line.split("uses:", 1)[1].strip()
        for text in texts
        for line in text.splitlines()
        if line.strip().startswith(("uses:", "- uses:"))
    ]
    assert len(uses) >= 10
    unpinned = [use for use in uses if not _PINNED.match(use)]
    assert unpinned == []


def test_the_action_installs_the_codex_version_the_plugin_pins() -> None:
    import json

    from pytest_advreview.constants import PINNED_CODEX_VERSION

    lock = json.loads((ROOT / "action" / "codex" / "package-lock.json").read_text())
    package = json.loads((ROOT / "action" / "codex" / "package.json").read_text())
    assert package["dependencies"]["@openai/codex"] == PINNED_CODEX_VERSION
    assert lock["packages"]["node_modules/@openai/codex"]["version"] == PINNED_CODEX_VERSION


def test_the_release_builds_checks_runs_the_demo_and_publishes_with_trusted_publishing() -> None:
    """What the release workflow promises (docs/development.md "Releasing"): the files
    published are the ones built, checked with twine check --strict and run (the demo
    with the installed wheel), published without a stored token."""
    release = yaml.safe_load(RELEASE.read_text(encoding="utf-8"))
    assert release[True] == {"push": {"tags": ["v*"]}}  # YAML 1.1 reads the key "on" as true
    assert release["permissions"] == {}
    build, publish = release["jobs"]["build"], release["jobs"]["publish"]
    script = "\n".join(step.get("run", "") for step in build["steps"])
    order = [
        "python -m build --outdir dist .",
        "twine check --strict dist/*",
        'bin/pip" install --disable-pip-version-check dist/*.whl',
        "npm ci --prefix",
        "examples/demo/run_demo.py",
    ]
    assert [script.index(part) for part in order] == sorted(script.index(p) for p in order)
    assert build["permissions"] == {"contents": "read"}
    # Only the publish job may ask for an identity token, and it takes no secret.
    assert publish["needs"] == "build"
    assert publish["permissions"] == {"id-token": "write"}
    assert publish["environment"] == "release"
    uses = [step["uses"].split("@")[0] for step in publish["steps"]]
    assert uses == ["actions/download-artifact", "pypa/gh-action-pypi-publish"]
    assert "secrets." not in RELEASE.read_text(encoding="utf-8")
    assert "password" not in str(publish)
