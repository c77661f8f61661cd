"""What a careful saboteur of the gate would change: five behaviours, each a one-line
change away from letting through something nobody approved, that no test pinned down.

Each test names the break it catches (each was made by hand once, and the test failed):

1. a ``/advreview`` command in a fenced code block indented by one to three spaces (a
   fence in a list item is indented) is code: never acted on, reported as inside code
   (break: the fence opener must start at column 0);
2. a fence closes with a run at least as long as its opening: a mention inside stays as
   it is, one after such a close is quieted (break: the closing run must be exactly as
   long as the opening);
3. the gate's own paths are compared with the folder the reviewer may write after
   resolving links: one reached through a link outside that resolves inside is exposed
   (break: paths compared as written);
4. the Action's summary fails closed on every exit status: a report whose gate is
   "empty" is "nothing to review" only when pytest exited 5 (break: "empty" trusted
   whatever the exit status);
5. the gated reviewer is launched so that the checkout's ``AGENTS.md`` and skills are no
   instructions (break: the ``-c`` values that keep them out dropped).

The tests go through the public behaviour (``commands.vet``, ``outbound.quiet_mentions``,
``containment.check``, the Action's ``review`` step, the reviewer's launch command), so
they hold however the code behind them is written.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

import pytest_advreview
from conftest import commit, git, init_repo
from pytest_advreview import action, outbound
from pytest_advreview.constants import EXIT_REVIEW_ERRORS
from pytest_advreview.models import Operation
from pytest_advreview.runner import DispatchRequest
from pytest_advreview.runner.codex import CodexReviewer
from pytest_advreview.runner.factory import codex_options
from pytest_advreview.settings import Settings
from pytest_advreview.trust import commands
from pytest_advreview.workspace import containment
from test_containment_boundaries import in_place

# -- 1. a command in an indented fenced code block is code -----------------------------------

COMMAND = "/advreview waive AR-1a2b3c: it is fine"


def _vetted(body: str) -> tuple[list[str], list[str]]:
    """The findings the comment's commands waive, and why its other commands do not
    count, for a commenter with write permission."""
    comment = {"body": body, "user": {"login": "maint", "type": "User"}, "html_url": "u"}
    found = commands.vet([comment], lambda login: "write")
    return [c.finding for c in found.commands], [i.why for i in found.ignored]


@pytest.mark.parametrize(
    "body",
    [
        f" ```\n{COMMAND}\n ```",
        f"  ```\n  {COMMAND}\n  ```",
        f"   ```\n   {COMMAND}\n   ```",
        f"   ~~~~\n{COMMAND}\n~~~~",
        f"   ```text\n {COMMAND}\n```",
        # A fence in a list item is indented by the item's marker.
        f"- Apply this:\n\n  ```\n  {COMMAND}\n  ```",
        f"1. Apply this:\n   ~~~\n   {COMMAND}\n   ~~~",
    ],
)
def test_a_command_in_an_indented_fence_is_code_and_never_acted_on(body: str) -> None:
    waived, why = _vetted(body)
    assert waived == []
    (reason,) = why
    assert reason.startswith("not a command:") and "code" in reason, reason


def test_a_command_after_an_indented_fence_closes_counts() -> None:
    # The same command outside the block counts: the one inside is refused for being
    # code, not for its words.
    waived, why = _vetted(f"  ```\n{COMMAND}\n  ```\n/advreview waive AR-4d5e6f: this one")
    assert waived == ["AR-4d5e6f"]
    (reason,) = why
    assert "code" in reason


# -- 2. a longer run closes a fence ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "quiet"),
    [
        ("```\n@inside\n````\nthen @after", "```\n@inside\n````\nthen <code>@after</code>"),
        ("~~~\n@inside\n~~~~~~~\n@after", "~~~\n@inside\n~~~~~~~\n<code>@after</code>"),
        ("```py\n@fixture\n  `````\n@after", "```py\n@fixture\n  `````\n<code>@after</code>"),
        # Shorter or of the other character: still inside, up to the real close.
        (
            "````\n@a\n```\n~~~~~\n@b\n`````\n@c",
            "````\n@a\n```\n~~~~~\n@b\n`````\n<code>@c</code>",
        ),
    ],
)
def test_a_fence_closed_by_a_longer_run_quiets_the_mentions_after_it(text: str, quiet: str) -> None:
    assert outbound.quiet_mentions(text) == quiet


# -- 3. the gate's paths are compared after resolving links ------------------------------


def _link(tmp_path: Path, target: Path) -> Path:
    """A link outside the workspace to ``target`` inside it."""
    target.mkdir(parents=True, exist_ok=True)
    link = tmp_path / "outside" / target.name
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(target, target_is_directory=True)
    return link


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace; the gate's paths elsewhere until a test links one inside."""
    root = tmp_path / "repo"
    root.mkdir()
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))
    monkeypatch.setattr(sys, "base_prefix", str(tmp_path / "python"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return root


@pytest.mark.parametrize(
    "what",
    [
        "the pytest-advreview package",
        "the Python environment running pytest (sys.prefix)",
        "the Python installation (sys.base_prefix)",
        "CODEX_HOME (Codex's configuration and sessions)",
    ],
)
def test_a_path_of_the_gate_linked_from_outside_into_the_workspace_is_refused_under_a_gate(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    environ = {"CI": "true", "CODEX_HOME": str(tmp_path / "codex-home")}
    if what.startswith("the pytest-advreview"):
        link = _link(tmp_path, workspace / "site" / "pytest_advreview")
        monkeypatch.setattr(pytest_advreview, "__file__", str(link / "__init__.py"))
    elif "sys.prefix" in what:
        link = _link(tmp_path, workspace / ".venv")
        monkeypatch.setattr(sys, "prefix", str(link))
    elif "sys.base_prefix" in what:
        link = _link(tmp_path, workspace / "python")
        monkeypatch.setattr(sys, "base_prefix", str(link))
    else:
        link = _link(tmp_path, workspace / ".codex")
        environ["CODEX_HOME"] = str(link)
    assert not str(link).startswith(str(workspace))  # as written, it lies outside
    assert containment.exposed(workspace, environ) == [containment.Exposure(what, link)]
    with pytest.raises(pytest.UsageError, match="this is refused") as info:
        containment.check(Settings(), in_place(workspace), environ)
    assert f"{what} at {link}" in str(info.value)


# -- 4. the Action's summary fails closed on every exit status --------------------------


def _empty_report(tmp_path: Path) -> Path:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"totals": {"gate": "empty"}, "items": []}), encoding="utf-8")
    return path


# pytest's exit statuses but "no tests collected" (5), the plugin's own, and a run killed
# by a signal (a negative status from subprocess).
NOT_FIVE = [0, 1, 2, 3, 4, EXIT_REVIEW_ERRORS, -2, -9]


@pytest.mark.parametrize("returncode", NOT_FIVE)
def test_an_empty_gate_is_an_error_unless_pytest_exited_5(tmp_path: Path, returncode: int) -> None:
    summary = action.summarise(returncode, _empty_report(tmp_path))
    assert summary.outcome == "error"
    assert summary.exit_code != 0
    assert f"pytest exited {returncode} with gate result 'empty'" in summary.message
    assert action.summarise(5, _empty_report(tmp_path)).outcome == "empty"  # the one case


def _fake_python(tmp_path: Path, status: int | None) -> Path:
    """Stands in for the gate's pytest: writes a report whose gate is "empty" where the
    Action asked for it, then exits ``status`` (``None``: killed by SIGKILL)."""
    script = tmp_path / "fake-python"
    end = "kill -9 $$" if status is None else f"exit {status}"
    script.write_text(
        "#!/bin/sh\n"
        'for arg; do case "$arg" in --advreview-json=*) out="${arg#--advreview-json=}";; '
        "esac; done\n"
        'printf \'{"totals": {"gate": "empty"}, "items": []}\' > "$out"\n'
        f"{end}\n",
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def _outputs(path: Path) -> dict[str, str]:
    """``$GITHUB_OUTPUT``'s heredoc entries."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: dict[str, str] = {}
    for n, line in enumerate(lines):
        if "<<ADVREVIEW_EOF_" in line:
            found[line.split("<<", 1)[0]] = lines[n + 1]
    return found


@pytest.mark.parametrize("status", [0, 1, 2, 3, 4, EXIT_REVIEW_ERRORS, None, 5])
def test_the_review_step_fails_on_an_empty_gate_unless_pytest_exited_5(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    status: int | None,
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")  # the step's log lines are workflow commands
    repo = init_repo(tmp_path / "repo")
    (repo / "README.md").write_text("# r\n")
    commit(repo, "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    output = tmp_path / "github-output"
    env: Mapping[str, str] = {
        "PATH": os.environ["PATH"],
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(repo),
        "GITHUB_OUTPUT": str(output),
        "RUNNER_TEMP": str(tmp_path / "runner-temp"),
        "ADVREVIEW_ACTION_BASE_SHA": base,
        "ADVREVIEW_ACTION_PYTHON": str(_fake_python(tmp_path, status)),
    }
    code = action.main(["review"], env)
    log = capsys.readouterr().out
    outcome = _outputs(output)["outcome"]
    if status == 5:  # the one way "nothing to review" passes
        assert (code, outcome) == (0, "empty")
        assert "::notice::pytest-advreview: nothing to review" in log
        return
    assert code != 0
    assert outcome == "error"
    assert "::error::pytest-advreview: gate error: pytest exited" in log
    assert "nothing to review" not in log


# -- 5. the gated reviewer does not take the checkout's AGENTS.md as instructions --------


def _launch(tmp_path: Path, settings: Settings, operation: Operation) -> list[str]:
    """The reviewer's launch command for ``settings``, as a review would build it."""
    request = DispatchRequest(
        review_id="r",
        repo_root=tmp_path,
        operation=operation,
        prompt_body="Review it.",
        work_dir=tmp_path,
        session_id="019a0000-0000-7000-8000-000000000000",
    )
    return CodexReviewer(codex_options(settings)).argv(request, tmp_path / "review.md", None)


def _pairs(argv: list[str]) -> list[str]:
    return [argv[n + 1] for n, arg in enumerate(argv[:-1]) if arg == "-c"]


#: What keeps the checkout's AGENTS.md (its override and fallback names) and its skills
#: out of the reviewer's instructions, as Codex 0.171.0 reads them.
KEEP_OUT = ["project_doc_max_bytes=0", "skills.include_instructions=false"]


@pytest.mark.parametrize(
    ("environ", "settings"),
    [
        ({"CI": "true"}, {}),
        ({"GITHUB_ACTIONS": "true"}, {}),
        ({}, {"strict_exit": True}),
        ({}, {"head": "feature"}),
    ],
)
@pytest.mark.parametrize("operation", [Operation.INITIAL, Operation.RESUME])
def test_a_gated_reviewer_is_launched_without_the_checkouts_instructions(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    environ: dict[str, str],
    settings: dict[str, object],
    operation: Operation,
) -> None:
    for name in ("CI", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    # A user's pair that would load them again comes first; the gate's win (the last
    # -c of a key is the one Codex keeps).
    user = ["project_doc_max_bytes=65536", "skills.include_instructions=true"]
    pairs = _pairs(_launch(tmp_path, Settings(codex_config=tuple(user), **settings), operation))
    for pair in KEEP_OUT:
        key = pair.split("=", 1)[0]
        assert [p for p in pairs if p.startswith(f"{key}=")][-1] == pair, pairs


def test_an_ungated_reviewer_reads_the_checkouts_instructions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A local run reviews the user's own checkout: its AGENTS.md is the user's.
    for name in ("CI", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
    pairs = _pairs(_launch(tmp_path, Settings(), Operation.INITIAL))
    assert not set(KEEP_OUT) & set(pairs)
