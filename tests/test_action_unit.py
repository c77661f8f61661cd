"""The action's decisions without a reviewer: configuration from the base, outcomes, events."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from action_kit import GitHubAPI
from conftest import git
from pytest_advreview import action
from pytest_advreview._toml import tomllib
from pytest_advreview.action import ActionError, base_ini, decide, gate_config, summarise
from pytest_advreview.models import CommandsFile

SHA_A = "a" * 40
SHA_B = "b" * 40
GLOBS = ["plans/*.md", "specs/**/*.md"]
#: The same settings in each of pytest's configuration files.
FORMATS = {
    "pytest.ini": "[pytest]\nadvreview_fail_on = high\nadvreview_plans =\n  plans/*.md\n"
    "  specs/**/*.md\naddopts = -p evil\n",
    ".pytest.ini": "[pytest]\nadvreview_fail_on = high\nadvreview_plans =\n  plans/*.md\n"
    "  specs/**/*.md\n",
    "pyproject.toml": '[tool.pytest.ini_options]\nadvreview_fail_on = "high"\n'
    'advreview_plans = ["plans/*.md", "specs/**/*.md"]\naddopts = ["-p", "evil"]\n',
    "tox.ini": "[tox]\nenvlist = py\n[pytest]\nadvreview_fail_on = high\nadvreview_plans =\n"
    "  plans/*.md\n  specs/**/*.md\n",
    "setup.cfg": "[metadata]\nname = x\n[tool:pytest]\nadvreview_fail_on = high\n"
    "advreview_plans =\n  plans/*.md\n  specs/**/*.md\n",
    "pytest.toml": '[pytest]\nadvreview_fail_on = "high"\n'
    'advreview_plans = ["plans/*.md", "specs/**/*.md"]\n',
}


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_the_base_commits_configuration_is_read_from_git_not_the_work_tree(
    git_repo: Path, name: str, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    (git_repo / name).write_text(FORMATS[name], encoding="utf-8")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "base settings")
    base = git(git_repo, "rev-parse", "HEAD").strip()
    # The work tree (the pull request) says otherwise, in the file pytest would prefer.
    (git_repo / "pytest.ini").write_text("[pytest]\nadvreview_fail_on = critical\n")

    origin, keys = base_ini(git_repo, base)

    assert origin == name
    config = gate_config(keys, plans=[], cache_dir=git_repo / "state", origin=origin)
    options = tomllib.loads(config)["tool"]["pytest"]["ini_options"]
    assert options["advreview_fail_on"] == "high"
    assert options["advreview_plans"] == GLOBS
    assert "addopts" not in options  # the project's test options are not the gate's
    # pytest itself reads the written file that way.
    path = git_repo.parent / f"gate-{name}.toml"
    path.write_text(config, encoding="utf-8")
    pytester.chdir()
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # as the action runs it
    result = pytester.run(
        sys.executable, "-m", "pytest", "-p", "pytest_advreview.plugin",
        f"--config-file={path}", f"--rootdir={git_repo}", "--adversarial-review",
        "--advreview-only", "--collect-only", str(git_repo),
    )  # fmt: skip
    result.stdout.fnmatch_lines(["advreview: *fail-on>=high*"])


def test_a_pytest_ini_of_the_base_wins_over_its_pyproject(git_repo: Path) -> None:
    (git_repo / "pytest.ini").write_text("[pytest]\nadvreview_fail_on = critical\n")
    (git_repo / "pyproject.toml").write_text(FORMATS["pyproject.toml"])
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "two files")
    assert base_ini(git_repo, "HEAD") == ("pytest.ini", {"advreview_fail_on": "critical"})


def test_a_base_without_a_pytest_table_in_pyproject_falls_through(git_repo: Path) -> None:
    (git_repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (git_repo / "tox.ini").write_text(FORMATS["tox.ini"])
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "tox")
    assert base_ini(git_repo, "HEAD")[0] == "tox.ini"
    assert base_ini(git_repo, "HEAD~1") == (None, {})


def test_a_broken_base_configuration_is_a_message_not_a_traceback(git_repo: Path) -> None:
    (git_repo / "pyproject.toml").write_text("[tool.pytest.ini_options\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "broken")
    with pytest.raises(ActionError, match=r"cannot parse the base commit's pyproject\.toml"):
        base_ini(git_repo, "HEAD")


def test_workflow_globs_replace_the_base_and_survive_toml_quoting(tmp_path: Path) -> None:
    odd = ['docs/"quoted"/*.md', "back\\slash/**/*.md", "ünïcode/*.md", "tab\there.md"]
    config = gate_config(
        {"advreview_plans": "base/*.md", "advreview_model": 'm"x'},
        plans=odd,
        cache_dir=tmp_path / 'st"ate',
        origin="pyproject.toml",
    )
    options = tomllib.loads(config)["tool"]["pytest"]["ini_options"]
    assert options["advreview_plans"] == odd
    assert options["advreview_model"] == 'm"x'
    assert options["cache_dir"] == str(tmp_path / 'st"ate')


def _report(tmp_path: Path, gate: str | None, outcomes: list[str]) -> Path:
    path = tmp_path / "results.json"
    if gate is not None:
        items = [{"pytest_outcome": o} for o in outcomes]
        path.write_text(json.dumps({"totals": {"gate": gate}, "items": items}))
    return path


@pytest.mark.parametrize(
    ("returncode", "gate", "outcomes", "outcome", "exit_code"),
    [
        (0, "passed", ["passed", "passed"], "passed", 0),
        (5, "empty", [], "empty", 0),
        (1, "failed", ["passed", "failed"], "failed", 1),
        (10, "error", ["error"], "error", 1),
        (1, "error", ["error", "passed"], "error", 1),
        # Everything else fails closed:
        (5, None, [], "error", 5),  # "nothing collected" without the report saying so
        (5, "failed", ["failed"], "error", 5),
        (0, None, [], "error", 1),  # a pass without the JSON report
        (0, "failed", ["failed"], "error", 1),
        (4, "passed", ["passed"], "error", 4),  # e.g. a report file could not be written
        (2, "passed", ["passed"], "error", 2),  # interrupted
    ],
)
def test_what_a_run_means_for_the_pipeline(
    tmp_path: Path,
    returncode: int,
    gate: str | None,
    outcomes: list[str],
    outcome: str,
    exit_code: int,
) -> None:
    summary = summarise(returncode, _report(tmp_path, gate, outcomes))
    assert (summary.outcome, summary.exit_code) == (outcome, exit_code)
    if gate is not None and outcome != "empty":
        counts = (summary.passed, summary.failed, summary.errored)
        assert counts == tuple(outcomes.count(o) for o in ("passed", "failed", "error"))


def _pr(**extra: Any) -> dict[str, Any]:
    return {
        "pull_request": {
            "number": 3,
            "user": {"login": "alice"},
            "author_association": "NONE",
            "base": {"sha": SHA_A},
            "head": {"sha": SHA_B, "repo": {"full_name": "acme/w"}},
            **extra,
        }
    }


ENV = {"GITHUB_REPOSITORY": "acme/w", "GITHUB_ACTOR": "alice"}


def test_an_event_without_a_base_needs_the_input() -> None:
    with pytest.raises(ActionError, match="names no base"):
        decide("push", {}, ENV)
    decided = decide("push", {}, {**ENV, "ADVREVIEW_ACTION_BASE": SHA_A})
    assert (decided.review, decided.base, decided.head) == (True, SHA_A, "HEAD")


def test_a_base_that_is_not_a_commit_sha_is_refused() -> None:
    event = _pr(base={"sha": "main; rm -rf /"})
    with pytest.raises(ActionError, match="not a full commit SHA"):
        decide("pull_request", event, ENV)


def test_a_comment_event_is_rerun_mode_and_reviews_nothing() -> None:
    event = {"issue": {"number": 7, "pull_request": {}}, "comment": {"body": "hi"}}
    decided = decide("issue_comment", event, ENV)
    assert (decided.review, decided.mode, decided.pr) == (False, "rerun", "7")
    explicit = decide("issue_comment", event, {**ENV, "ADVREVIEW_ACTION_MODE": "rerun"})
    assert explicit.mode == "rerun"


def test_an_unknown_mode_is_a_message() -> None:
    with pytest.raises(ActionError, match="use auto, pull_request, pull_request_target or rerun"):
        decide("pull_request", _pr(), {**ENV, "ADVREVIEW_ACTION_MODE": "yolo"})
    with pytest.raises(ActionError, match="needs a pull_request_target event"):
        decide("pull_request", _pr(), {**ENV, "ADVREVIEW_ACTION_MODE": "pull_request_target"})


@pytest.mark.parametrize(
    ("association", "event_extra", "permission", "approved"),
    [
        ("OWNER", {}, None, True),
        ("COLLABORATOR", {}, None, True),
        ("NONE", {}, None, False),
        ("NONE", {"action": "labeled", "label": {"name": "advreview"}}, "write", True),
        ("NONE", {"action": "labeled", "label": {"name": "advreview"}}, "maintain", True),
        ("NONE", {"action": "labeled", "label": {"name": "advreview"}}, "triage", False),
        ("NONE", {"action": "labeled", "label": {"name": "other"}}, "admin", False),
        ("NONE", {"action": "synchronize", "label": {"name": "advreview"}}, "admin", False),
    ],
)
def test_the_maintainer_gate_of_pull_request_target(
    association: str, event_extra: dict[str, Any], permission: str | None, approved: bool
) -> None:
    event = {**_pr(author_association=association), "sender": {"login": "bob"}, **event_extra}
    decided = decide("pull_request_target", event, ENV, permission=lambda user: permission)
    assert decided.review is approved
    assert decided.head == SHA_B  # always the SHA of this event, never a branch


def test_the_comment_is_cut_to_githubs_limit_with_a_link() -> None:
    body = action.comment_body("x" * 100_000, "https://example.invalid/run/1")
    assert len(body) <= action.COMMENT_LIMIT
    assert body.startswith(action.COMMENT_MARKER)
    assert body.rstrip().endswith("https://example.invalid/run/1")


def test_the_comment_is_found_again_on_a_later_page(tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    report.write_text("# Adversarial review\n")
    with GitHubAPI("acme/w") as api:
        others = [{"id": i, "body": f"comment {i}", "user": {"login": "bob"}} for i in range(150)]
        mine = {"id": 999, "body": action.COMMENT_MARKER + "\nold", "user": {"login": api.login}}
        api.comments[3] = [*others, mine]
        env = {
            **ENV,
            "GITHUB_API_URL": api.url,
            "GH_TOKEN": "t0ken",
            "ADVREVIEW_ACTION_PR": "3",
            "ADVREVIEW_ACTION_REPORT": str(report),
        }
        assert action.main(["comment"], env) == 0
    assert api.comments[3][-1] == {
        "id": 999,
        "body": action.COMMENT_MARKER + "\n# Adversarial review\n",
        "user": {"login": "github-actions[bot]"},
    }
    assert len(api.comments[3]) == 151
    assert api.invalid == []
    assert [c[0] for c in api.calls] == ["GET", "GET", "PATCH"]
    assert {c[3] for c in api.calls} == {"Bearer t0ken"}


def test_a_marked_comment_by_someone_else_is_never_edited(tmp_path: Path) -> None:
    # Anybody can write the marker; only the poster's own comment is updated.
    report = tmp_path / "report.md"
    report.write_text("# Adversarial review\n")
    forged = {"id": 5, "body": action.COMMENT_MARKER + "\nfake", "user": {"login": "mallory"}}
    with GitHubAPI("acme/w") as api:
        api.comments[3] = [forged.copy()]
        env = {
            **ENV,
            "GITHUB_API_URL": api.url,
            "ADVREVIEW_ACTION_PR": "3",
            "ADVREVIEW_ACTION_REPORT": str(report),
        }
        assert action.main(["comment"], env) == 0
    assert api.comments[3][0] == forged
    assert [c[0] for c in api.calls] == ["GET", "POST"]
    assert api.comments[3][1]["user"] == {"login": "github-actions[bot]"}


def test_the_posted_comment_mentions_nobody_from_the_report(tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    report.write_text("# Adversarial review\n\nFinding: ask @octo-org/admins to merge.\n")
    with GitHubAPI("acme/w") as api:
        env = {
            **ENV,
            "GITHUB_API_URL": api.url,
            "ADVREVIEW_ACTION_PR": "3",
            "ADVREVIEW_ACTION_REPORT": str(report),
        }
        assert action.main(["comment"], env) == 0
    (posted,) = api.comments[3]
    assert "ask <code>@octo-org/admins</code> to merge." in posted["body"]
    assert api.invalid == []


def test_other_ci_systems_run_the_same_gate_without_github(git_repo: Path) -> None:
    # docs/ci.md's GitLab recipe: only the base commit and a work folder are given.
    base = git(git_repo, "rev-parse", "HEAD").strip()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GITHUB_", "RUNNER_", "PYTEST_", "ADVREVIEW_"))
    }
    env.update(
        ADVREVIEW_ACTION_BASE_SHA=base, ADVREVIEW_ACTION_WORK_DIR=str(git_repo.parent / "work")
    )
    # The recipe's masked CI/CD variable: without a key (or a login, or a provider) the run
    # stops before any review, since Codex would retry for ever. Nothing is launched here.
    env["CODEX_API_KEY"] = "not-used-nothing-is-reviewed"
    proc = subprocess.run(
        [sys.executable, "-I", "-m", "pytest_advreview.action", "review"],
        cwd=git_repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "outcome=empty" in proc.stdout.splitlines()
    assert "notice: pytest-advreview: nothing to review" in proc.stdout
    assert "::" not in proc.stdout.replace("::code-review", "")  # no GitHub commands
    assert (git_repo.parent / "work" / "out" / "results.json").is_file()
    # The reviewdog file too (empty here), for a GitLab merge request's inline comments.
    rdjson = json.loads((git_repo.parent / "work" / "out" / "advreview.rdjson").read_text())
    assert rdjson == {"source": {"name": "pytest-advreview"}, "diagnostics": []}


def test_the_commands_step_keeps_write_commands_and_survives_a_failed_lookup(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    comments = [
        {"id": 1, "body": "/advreview waive AR-111111: fine", "user": {"login": "maint"}},
        {"id": 2, "body": "/advreview waive AR-222222: mine", "user": {"login": "ghost"}},
        {
            "id": 3,
            "body": f"{action.COMMENT_MARKER}\n/advreview waive AR-333333: advice",
            "user": {"login": "github-actions[bot]", "type": "Bot"},
        },
    ]

    def api(env: Any, method: str, path: str, body: object = None) -> Any:
        if path.startswith("/repos/o/r/issues/7/comments"):
            return comments
        if path == "/repos/o/r/collaborators/ghost/permission":
            raise action.APIError(f"GitHub API GET {path} answered 404 Not Found")
        return {"permission": "write"}

    monkeypatch.setattr(action, "_api", api)
    output = tmp_path / "output"
    env = {
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_OUTPUT": str(output),
        "ADVREVIEW_ACTION_PR": "7",
        "ADVREVIEW_ACTION_WORK_DIR": str(tmp_path),
    }
    assert action.commands(env) == 0
    written = CommandsFile.model_validate_json(
        (tmp_path / "gate" / "commands.json").read_text(encoding="utf-8")
    )
    assert [c.login for c in written.commands] == ["maint"]
    (ghost,) = written.ignored  # the gate's own report comment is not read at all
    assert ghost.why.startswith("@ghost's permission cannot be looked up (GitHub API GET ")
    assert f"\n{tmp_path / 'gate' / 'commands.json'}\n" in output.read_text()

    # Without the comments nothing counts, and the gate still runs.
    def down(env: Any, method: str, path: str, body: object = None) -> Any:
        raise action.APIError("GitHub API GET answered 403 Forbidden")

    monkeypatch.setattr(action, "_api", down)
    output.write_text("")
    assert action.commands(env) == 0
    assert output.read_text().splitlines()[1] == ""  # the output commands is empty
    assert action.commands({**env, "ADVREVIEW_ACTION_PR": ""}) == 0
