"""The built-in lead end to end: the lead as a real process.

Every test runs the whole review loop in one pytest run: round 1 (REVISE) → the lead's turn
(evaluate, edit the plan, decide) → round 2 resumed on the reviewer's thread → outcome.
The ``command`` lead's tests review with the in-process scripted reviewer; the ``codex``
and ``claude`` leads' tests use the real Codex CLI as the reviewer too.
"""

from __future__ import annotations

import json
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

from conftest import ReviewRepo, git, settled, sleeper_running
from pytest_advreview.lead.contract import LEAD_MARKER
from pytest_advreview.models import finding_id
from pytest_advreview.testing import (
    FindingSpec,
    ScriptedMessagesServer,
    approved_review,
    claude_offline_env,
    revise_review,
)

CRITICAL = FindingSpec("critical", "In-place id rewrite loses foreign keys", section="Step 2")
MEDIUM = FindingSpec("medium", "Pagination order is unspecified", section="Steps")
HIGH = FindingSpec("high", "The CLI flag changes meaning", section="Interface")
PLAN = "# Plan\n\n1. Migrate.\n\n## Step 2\nRewrite ids in place.\n"
FIXED_LINE = "Copy rows to a new table, then swap; foreign keys follow."
NO_CODE = "--advreview-diff=none"
LEAD_RULE = LEAD_MARKER.split("{", 1)[0]  # "<!-- ADVREVIEW-LEAD: "
REREVIEW = "I've evaluated the findings."


def fid(spec: FindingSpec) -> str:
    from pytest_advreview.models import Location

    return finding_id(spec.title, Location(section=spec.section))


def lead_script(
    folder: Path,
    *,
    decisions: list[dict[str, Any]],
    edit: dict[str, str] | None = None,
    extra_write: str | None = None,
    sleep: float = 0.0,
    stdout: str | None = None,
) -> str:
    """A lead CLI: saves its prompt, applies ``edit`` (path -> appended text), prints JSON.

    It lives outside the repository, and so does its log: anything it writes in the
    repository besides the plan is, by design, a mutation.
    """
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "lead.py"
    script.write_text(
        textwrap.dedent(
            f"""\
            import json, pathlib, re, sys, time
            log = pathlib.Path({str(folder)!r})
            n = len(list(log.glob("prompt-*.txt")))
            prompt = sys.stdin.read()
            (log / f"prompt-{{n}}.txt").write_text(prompt)
            # "FIRST" stands for the first finding id the prompt lists.
            first = re.search(r"^- \\[severity: \\w+\\] (AR-[0-9a-f]{{6}})", prompt, re.M)
            decisions = [dict(d, finding=first.group(1)) if d["finding"] == "FIRST" else d
                         for d in {decisions!r}]
            for path, text in {edit or {}!r}.items():
                with open(path, "a") as fh:
                    fh.write(text)
            (log / f"env-{{n}}.json").write_text(json.dumps(sorted(__import__("os").environ)))
            if {extra_write!r}:
                pathlib.Path({extra_write!r}).write_text("written by the lead\\n")
            time.sleep({sleep!r})
            out = {stdout!r}
            sys.stdout.write(out if out is not None else json.dumps({{"decisions": decisions}}))
            """
        )
    )
    return f"{sys.executable} {script}"


def lead_prompts(folder: Path) -> list[str]:
    return [
        (folder / f"prompt-{n}.txt").read_text() for n in range(len(list(folder.glob("*.txt"))))
    ]


def accept(spec: FindingSpec, changed: str = "rewrote Step 2") -> dict[str, Any]:
    return {"finding": fid(spec), "action": "accept", "reason": "Right.", "changed": changed}


@pytest.fixture
def lead_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lead")


def test_command_lead_fixes_the_plan_and_round_two_approves_in_one_run(
    scripted_repo: ReviewRepo, lead_dir: Path
) -> None:
    plan = scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer(REREVIEW, {"message": approved_review()})
    scripted_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    command = lead_script(
        lead_dir, decisions=[accept(CRITICAL)], edit={"docs/plans/x.md": FIXED_LINE}
    )
    patch, report = lead_dir / "lead.patch", lead_dir / "report.md"
    result = scripted_repo.run(
        NO_CODE,
        "--advreview-lead=command",
        f"--advreview-lead-command={command}",
        f"--advreview-lead-patch={patch}",
        f"--advreview-report={report}",
    )
    result.assert_outcomes(passed=1)
    assert plan.read_text().endswith(FIXED_LINE)
    # The patch file is the lead's edit: reversing it restores the plan as it was.
    git(scripted_repo.path, "apply", "--reverse", str(patch))
    assert plan.read_text() == PLAN
    # The operator summary and the markdown report show the evaluation matrix and edits.
    result.stdout.fnmatch_lines(
        [
            "*lead (command) after round 1: edited docs/plans/x.md (+1 -0)*",
            f"*{fid(CRITICAL)} | critical | accept | Right.*",
        ]
    )
    markdown = report.read_text()
    assert "**Lead (command) after round 1** — edited `docs/plans/x.md` (+1 −0)" in markdown
    assert (
        f"| `{fid(CRITICAL)}` In-place id rewrite loses foreign keys | critical | accept |"
        in markdown
    )
    first, second = scripted_repo.server.response_requests
    assert second.thread_id == first.thread_id  # round 2 resumed the reviewer's thread
    text = second.last_user_text
    assert f"+{FIXED_LINE}" in text  # the lead's edit, as a diff under "Applied"
    assert f"{fid(CRITICAL)} (In-place id rewrite loses foreign keys): Right." in text
    (prompt,) = lead_prompts(lead_dir)
    assert prompt.startswith(LEAD_MARKER.format(key="docs/plans/x.md", round=1))
    assert fid(CRITICAL) in prompt and "You may edit only: docs/plans/x.md" in prompt
    result.stdout.fnmatch_lines(["*x.md::adversarial-review: approved*round*2*"])


def test_codex_lead_edits_the_plan_on_its_own_thread_and_round_two_approves(
    review_repo: ReviewRepo,
) -> None:
    plan = review_repo.plan("x.md", PLAN)
    answer = {"decisions": [accept(CRITICAL)]}
    review_repo.answer(
        LEAD_RULE,
        {
            "function_call": {
                "name": "exec_command",
                "arguments": {"cmd": f"printf '%s' '{FIXED_LINE}' >> docs/plans/x.md"},
            },
            "call_id": "lead1",
        },
        {"message": json.dumps(answer)},
    )
    review_repo.answer(REREVIEW, {"message": approved_review()})
    review_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    report = review_repo.path.parent / "codex-lead.json"
    result = review_repo.run(NO_CODE, "--advreview-lead=codex", f"--advreview-json={report}")
    result.assert_outcomes(passed=1)
    # The lead's tokens count: the item's total is the reviewer's rounds plus the lead's.
    record = json.loads(report.read_text())["items"][0]["record"]
    lead_tokens = record["lead"][0]["tokens"]["input_tokens"]
    rounds_tokens = sum(r["usage"]["input_tokens"] for r in record["rounds"])
    assert lead_tokens > 0
    assert record["tokens"]["input_tokens"] == rounds_tokens + lead_tokens
    assert plan.read_text().endswith(FIXED_LINE)
    requests = review_repo.server.response_requests
    reviewer = [
        r for r in requests if LEAD_RULE not in r.last_user_text and not r.function_call_outputs
    ]
    lead = [r for r in requests if r not in reviewer]
    assert len(reviewer) == 2 and reviewer[0].thread_id == reviewer[1].thread_id
    assert {r.thread_id for r in lead}.isdisjoint({reviewer[0].thread_id})
    assert lead[0].body.get("text", {}).get("format", {}).get("type") == "json_schema"
    assert f"+{FIXED_LINE}" in reviewer[1].last_user_text
    result.stdout.fnmatch_lines(["*x.md::adversarial-review: approved*round*2*"])


def test_the_leads_tool_shell_sees_no_credential_and_no_lead_gets_the_state_key(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The lead runs tools with write access: it gets the reviewer's environment policy
    # (the allow-list), and never the key that signs stored verdicts.
    secrets_ = {
        "GITHUB_TOKEN": "ghp-planted-lead-0001",
        "DB_PASSWORD": "planted-lead-password-0002",
        "ADVREVIEW_STATE_KEY": "planted-lead-state-key-" + "0123456789abcdef" * 2,
        # Named like nothing secret: only an allow-list holds them back.
        "SLACK_WEBHOOK_URL": "https://hooks.invalid/services/planted-lead-hook-0003",
        "MAVEN_OPTS": "-Dserver.password=planted-lead-opt-0004",
        "GIT_CONFIG_VALUE_0": "AUTHORIZATION: basic planted-lead-gitcfg-0005",
    }
    for name, value in secrets_.items():
        monkeypatch.setenv(name, value)
    review_repo.plan("x.md", PLAN)
    review_repo.answer(
        LEAD_RULE,
        {
            "function_call": {"name": "exec_command", "arguments": {"cmd": "env"}},
            "call_id": "lead-env",
        },
        {"message": json.dumps({"decisions": [accept(CRITICAL, changed="nothing")]})},
    )
    review_repo.answer(REREVIEW, {"message": approved_review()})
    review_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    review_repo.run(NO_CODE, "--advreview-lead=codex")
    outputs = review_repo.tool_outputs()
    assert any("PATH=" in text for text in outputs)  # the lead's tool call really ran `env`
    bodies = [json.dumps(r.body) for r in review_repo.server.response_requests]
    for value in secrets_.values():
        assert not any(value in body for body in bodies), value


def test_lead_that_writes_a_second_file_is_a_mutation_error_naming_it(
    scripted_repo: ReviewRepo, lead_dir: Path
) -> None:
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    stray = scripted_repo.path / "src" / "evil.py"
    stray.parent.mkdir()
    command = lead_script(
        lead_dir,
        decisions=[accept(CRITICAL)],
        edit={"docs/plans/x.md": FIXED_LINE},
        extra_write=str(stray),
    )
    result = scripted_repo.run(
        NO_CODE, "--advreview-lead=command", f"--advreview-lead-command={command}"
    )
    result.assert_outcomes(passed=1, errors=1)  # the error is the teardown's mutation check
    result.stdout.fnmatch_lines(
        ["*src/evil.py (untracked, changed by the command lead after round 1*"]
    )
    assert len(scripted_repo.server.response_requests) == 1  # no round 2 after a broken contract


@pytest.mark.parametrize(
    ("stdout", "decisions", "message"),
    [
        ("I fixed it, trust me.", [], "*the lead command*returned invalid decisions: not JSON*"),
        (None, [], "*the command lead returned no decision for AR-*"),
        (
            None,
            [{"finding": "AR-000000", "action": "reject", "reason": "no"}],
            "*decided on AR-000000, which is not a finding of this review*",
        ),
        (None, "ACCEPT-WITHOUT-EDIT", "*accepted or re-scoped AR-* but changed nothing*"),
        (None, [{"finding": "CRIT", "action": "reject", "reason": " "}], "*gave no reason*"),
    ],
    ids=["not-json", "missing", "unknown-id", "accepted-but-unchanged", "empty-reason"],
)
def test_lead_with_missing_or_invalid_decisions_is_an_error_not_a_pass(
    scripted_repo: ReviewRepo, lead_dir: Path, stdout: str | None, decisions: Any, message: str
) -> None:
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer(REREVIEW, {"message": approved_review()})
    scripted_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    if decisions == "ACCEPT-WITHOUT-EDIT":
        decisions = [accept(CRITICAL)]
    decisions = [
        {**d, "finding": fid(CRITICAL)} if d.get("finding") == "CRIT" else d for d in decisions
    ]
    command = lead_script(lead_dir, decisions=decisions, stdout=stdout)
    result = scripted_repo.run(
        NO_CODE, "--advreview-lead=command", f"--advreview-lead-command={command}"
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*docs/plans/x.md — lead could not run (aborted)", message])
    assert len(scripted_repo.server.response_requests) == 1  # never re-reviewed as fixed


def test_lead_timeout_is_an_error_and_leaves_no_process(
    scripted_repo: ReviewRepo, lead_dir: Path
) -> None:
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    spawner = lead_dir / "spawn.py"
    # The child sits in its own session, as Claude Code's tool processes do: a kill of
    # the lead's process group alone would not reach it.
    spawner.write_text(
        textwrap.dedent(
            f"""\
            import pathlib, subprocess, sys, time
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                                     start_new_session=True)
            pathlib.Path({str(lead_dir / "child.pid")!r}).write_text(str(child.pid))
            time.sleep(600)
            """
        )
    )
    # The timeout is the lead's alone: the in-process reviewer keeps its own minute.
    result = scripted_repo.run(
        NO_CODE,
        "--advreview-timeout=3",
        "--advreview-lead=command",
        f"--advreview-lead-command={sys.executable} {spawner}",
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*did not finish within 3s*killed*"])
    pid = int((lead_dir / "child.pid").read_text())

    assert settled(lambda: [pid] if sleeper_running(pid) else []) == []


def test_structural_finding_needs_the_operator_is_not_applied_and_never_passes(
    scripted_repo: ReviewRepo, lead_dir: Path
) -> None:
    plan = scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer(REREVIEW, {"message": approved_review()})
    scripted_repo.answer("x.md", {"message": revise_review(CRITICAL, HIGH)})
    command = lead_script(
        lead_dir,
        decisions=[
            accept(CRITICAL),
            {
                "finding": fid(HIGH),
                "action": "needs-operator",
                "reason": "Changes the CLI grammar.",
            },
        ],
        edit={"docs/plans/x.md": FIXED_LINE},
    )
    result = scripted_repo.run(
        NO_CODE, "--advreview-lead=command", f"--advreview-lead-command={command}"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"needs the operator: {fid(HIGH)} — a structural fix*"])
    assert plan.read_text().count(FIXED_LINE) == 1  # the accepted fix only
    second = scripted_repo.server.response_requests[-1].last_user_text
    assert "not applied: a structural change that needs the operator's sign-off" in second
    # The finding stays open for the operator: the next run fails on it from the stored
    # state, without asking the reviewer again (tests/test_operator_e2e.py has the rest).
    calls = len(scripted_repo.server.response_requests)
    again = scripted_repo.run(NO_CODE)
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines([f"needs the operator: {fid(HIGH)} — a structural fix*"])
    assert len(scripted_repo.server.response_requests) == calls


def test_fixer_hook_wins_over_the_built_in_lead(scripted_repo: ReviewRepo, lead_dir: Path) -> None:
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.write(
        "conftest.py",
        textwrap.dedent(
            """
            from pytest_advreview.models import Decision, DecisionAction

            def pytest_advreview_fix(item, review):
                return [Decision(finding=f.id, action=DecisionAction.REJECT, reason="HOOK-REASON")
                        for f in review.findings]
            """
        ),
    )
    scripted_repo.answer(REREVIEW, {"message": approved_review()})
    scripted_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    command = lead_script(lead_dir, decisions=[accept(CRITICAL)])
    result = scripted_repo.run(
        NO_CODE, "--advreview-lead=command", f"--advreview-lead-command={command}"
    )
    result.assert_outcomes(passed=1)
    assert lead_prompts(lead_dir) == []  # the built-in lead never ran
    assert "HOOK-REASON" in scripted_repo.server.response_requests[-1].last_user_text


def test_five_rounds_without_approval_end_at_max_rounds_with_every_decision_reported(
    scripted_repo: ReviewRepo, lead_dir: Path
) -> None:
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer(REREVIEW, {"message": revise_review(MEDIUM)})
    scripted_repo.answer("x.md", {"message": revise_review(MEDIUM)})
    reject = {"finding": fid(MEDIUM), "action": "reject", "reason": "Order is by primary key."}
    command = lead_script(lead_dir, decisions=[reject])
    report = scripted_repo.path.parent / "results.json"
    result = scripted_repo.run(
        NO_CODE,
        "--advreview-lead=command",
        f"--advreview-lead-command={command}",
        f"--advreview-json={report}",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*x.md::adversarial-review: max rounds (failed) — round 5*"])
    assert len(lead_prompts(lead_dir)) == 4  # a lead turn after rounds 1-4, none after 5
    (entry,) = json.loads(report.read_text())["items"]
    item = entry["record"]
    assert [len(r["decisions"]) for r in item["rounds"]] == [0, 1, 1, 1, 1]
    assert [t["round"] for t in item["lead"]] == [1, 2, 3, 4]
    assert item["lead"][0]["evaluations"][0]["reason"] == "Order is by primary key."


# -- the claude lead: real Claude Code against the scripted Messages-API server ----------


@pytest.fixture
def claude_repo(
    review_repo: ReviewRepo,
    claude_executable: Path,
    messages_server: ScriptedMessagesServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> ReviewRepo:
    home = tmp_path_factory.mktemp("claude-home")
    for name, value in claude_offline_env(messages_server.url, home).items():
        monkeypatch.setenv(name, value)
    return review_repo


def claude_args(claude: Path, *extra: str) -> tuple[str, ...]:
    # In place: the scripted Edit calls name the checkout's files (Claude's Edit takes an
    # absolute path, and a worktree's is known only once the review runs).
    return (
        NO_CODE,
        "--advreview-lead=claude",
        f"--advreview-lead-command={claude}",
        "--advreview-isolation=none",
        *extra,
    )


def edit_step(path: Path, old: str, new: str) -> dict[str, Any]:
    return {
        "tool_use": {
            "name": "Edit",
            "input": {"file_path": str(path), "old_string": old, "new_string": new},
        }
    }


def script_one_fix(messages_server: ScriptedMessagesServer, plan: Path) -> None:
    """The lead fixes the critical finding in ``plan`` with one edit and accepts it."""
    messages_server.set_script(
        {
            "rules": [
                {
                    "match": LEAD_RULE,
                    "steps": [
                        edit_step(plan, "Rewrite ids in place.", FIXED_LINE),
                        {"structured": {"decisions": [accept(CRITICAL)]}},
                    ],
                }
            ]
        }
    )


def test_claude_lead_applies_rejects_with_reasoning_and_leaves_structural_to_the_operator(
    claude_repo: ReviewRepo, claude_executable: Path, messages_server: ScriptedMessagesServer
) -> None:
    plan = claude_repo.plan("x.md", PLAN)
    claude_repo.answer(REREVIEW, {"message": approved_review()})
    claude_repo.answer("x.md", {"message": revise_review(CRITICAL, MEDIUM, HIGH)})
    rejection = "Rows are paged by primary key; the order is total and stable."
    decisions = [
        accept(CRITICAL),
        {"finding": fid(MEDIUM), "action": "reject", "reason": rejection, "changed": ""},
        {
            "finding": fid(HIGH),
            "action": "needs-operator",
            "reason": "Renaming the flag changes the invocation grammar.",
            "changed": "",
        },
    ]
    messages_server.set_script(
        {
            "rules": [
                {
                    "match": LEAD_RULE,
                    "steps": [
                        edit_step(plan, "Rewrite ids in place.", FIXED_LINE),
                        {"structured": {"decisions": decisions}},
                    ],
                }
            ]
        }
    )
    result = claude_repo.run(*claude_args(claude_executable))
    # Round 2 approved, but a structural finding is still the operator's to decide.
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"needs the operator: {fid(HIGH)} — a structural fix*"])
    assert FIXED_LINE in plan.read_text() and "Rewrite ids in place." not in plan.read_text()
    first, second = claude_repo.server.response_requests
    assert second.thread_id == first.thread_id
    text = second.last_user_text
    assert f"{fid(MEDIUM)} (Pagination order is unspecified): {rejection}" in text
    assert f"+{FIXED_LINE}" in text
    assert "not applied: a structural change that needs the operator's sign-off" in text
    lead_calls = messages_server.requests
    assert lead_calls and all(r.path.startswith("/v1/messages") for r in lead_calls)
    # Only the read and edit tools (plus the decisions tool), never Bash or Write.
    tools = {t["name"] for t in lead_calls[0].body["tools"]}
    assert tools == {"Read", "Edit", "StructuredOutput"}


def test_claude_lead_fix_approved_in_round_two_passes(
    claude_repo: ReviewRepo, claude_executable: Path, messages_server: ScriptedMessagesServer
) -> None:
    plan = claude_repo.plan("x.md", PLAN)
    claude_repo.answer(REREVIEW, {"message": approved_review()})
    claude_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    script_one_fix(messages_server, plan)
    result = claude_repo.run(*claude_args(claude_executable))
    result.assert_outcomes(passed=1)
    assert FIXED_LINE in plan.read_text()
    result.stdout.fnmatch_lines(["*x.md::adversarial-review: approved*round*2*"])


def test_the_checkouts_claude_settings_do_not_choose_the_leads_model(
    claude_repo: ReviewRepo, claude_executable: Path, messages_server: ScriptedMessagesServer
) -> None:
    # ``--bare`` skips CLAUDE.md and hooks but still applies a project's settings file: a
    # branch could pick the lead's model (and so what it costs and how it judges).
    settings = claude_repo.path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"model": "branch-picked-model"}))
    plan = claude_repo.plan("x.md", PLAN)
    claude_repo.answer(REREVIEW, {"message": approved_review()})
    claude_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    script_one_fix(messages_server, plan)
    result = claude_repo.run(*claude_args(claude_executable))
    result.assert_outcomes(passed=1)
    models = {r.body.get("model") for r in messages_server.requests}
    assert models and "branch-picked-model" not in models


def test_claude_lead_whose_edit_is_denied_is_an_error(
    claude_repo: ReviewRepo, claude_executable: Path, messages_server: ScriptedMessagesServer
) -> None:
    claude_repo.plan("x.md", PLAN)
    readme = claude_repo.path / "README.md"
    claude_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    # Claude Code ends "success" with rc 0 after a denied edit: only the result says so.
    messages_server.set_script(
        {
            "rules": [
                {
                    "match": LEAD_RULE,
                    "steps": [
                        edit_step(readme, "# project", "# hacked"),
                        {"structured": {"decisions": [accept(CRITICAL)]}},
                    ],
                }
            ]
        }
    )
    result = claude_repo.run(*claude_args(claude_executable))
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the claude lead was denied 1 tool call(s)*README.md*"])
    assert readme.read_text() == "# project\n"
    assert len(claude_repo.server.response_requests) == 1


def test_claude_lead_without_structured_decisions_is_an_error(
    claude_repo: ReviewRepo, claude_executable: Path, messages_server: ScriptedMessagesServer
) -> None:
    claude_repo.plan("x.md", PLAN)
    claude_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    # Text only: Claude Code nudges once, then ends rc 0 with structured_output null.
    messages_server.set_script(
        {"rules": [{"match": LEAD_RULE, "steps": [{"text": "All fixed, looks good."}]}]}
    )
    result = claude_repo.run(*claude_args(claude_executable))
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*structured_output is null*"])


def test_claude_lead_timeout_is_an_error_and_leaves_no_claude_process(
    claude_repo: ReviewRepo, claude_executable: Path, messages_server: ScriptedMessagesServer
) -> None:
    claude_repo.plan("x.md", PLAN)
    claude_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    messages_server.set_script({"rules": [{"match": LEAD_RULE, "steps": [{"hang": 120}]}]})
    model = f"hang-{uuid.uuid4().hex}"  # marks this test's claude in /proc
    # 5 s: Codex's round 1, then the lead's, which Claude Code starts in about a second.
    result = claude_repo.run(
        *claude_args(claude_executable, f"--advreview-lead-model={model}", "--advreview-timeout=5")
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the claude lead did not finish within 5s*killed*"])

    def running() -> list[str]:
        found = []
        for entry in Path("/proc").iterdir():
            try:
                if model.encode() in (entry / "cmdline").read_bytes():
                    found.append(entry.name)
            except OSError:
                continue
        return found

    assert settled(running) == []


def test_plan_lead_under_worktree_isolation_edits_the_users_plan(
    scripted_repo: ReviewRepo, lead_dir: Path
) -> None:
    plan = scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer(REREVIEW, {"message": approved_review()})
    scripted_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    # A relative path: the lead runs in the review's private worktree.
    command = lead_script(
        lead_dir, decisions=[accept(CRITICAL)], edit={"docs/plans/x.md": FIXED_LINE}
    )
    result = scripted_repo.run(
        NO_CODE,
        "--advreview-isolation=worktree",
        "--advreview-lead=command",
        f"--advreview-lead-command={command}",
    )
    result.assert_outcomes(passed=1)
    assert plan.read_text() == PLAN + FIXED_LINE
    assert f"+{FIXED_LINE}" in scripted_repo.server.response_requests[-1].last_user_text


CODE = FindingSpec("high", "Counter overflows", file="src/app.py", lines=(1, 1))


def _code_change(review_repo: ReviewRepo) -> Path:
    app = review_repo.write("src/app.py", "x = 1\n")
    review_repo.commit("app")
    app.write_text("x = 2\n")
    review_repo.answer(REREVIEW, {"message": approved_review()})
    review_repo.answer("src/app.py", {"message": revise_review(CODE)})
    return app


def test_code_item_without_worktree_keeps_one_round_and_the_header_says_so(
    scripted_repo: ReviewRepo, lead_dir: Path
) -> None:
    app = _code_change(scripted_repo)
    command = lead_script(lead_dir, decisions=[accept(CRITICAL)], edit={"src/app.py": "y = 3\n"})
    result = scripted_repo.run(
        "--advreview-lead=command",
        f"--advreview-lead-command={command}",
        "--advreview-isolation=none",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["advreview:*code-review: one round per run, the lead does not edit code*"]
    )
    assert lead_prompts(lead_dir) == []
    assert app.read_text() == "x = 2\n"


@pytest.mark.parametrize(
    "allow",
    [("--advreview-isolation=worktree",), ("-o", "advreview_lead_code=true")],
    ids=["worktree", "ini-opt-in"],
)
def test_code_item_lead_edits_only_the_change_set_when_allowed(
    scripted_repo: ReviewRepo, lead_dir: Path, allow: tuple[str, ...]
) -> None:
    app = _code_change(scripted_repo)
    fix = {"finding": "FIRST", "action": "accept", "reason": "Bounded.", "changed": "guard"}
    command = lead_script(lead_dir, decisions=[fix], edit={"src/app.py": "y = 3\n"})
    result = scripted_repo.run(
        *allow, "--advreview-lead=command", f"--advreview-lead-command={command}"
    )
    result.assert_outcomes(passed=1)
    assert app.read_text() == "x = 2\ny = 3\n"  # the user's tree got the lead's edit
    (prompt,) = lead_prompts(lead_dir)
    assert "You may edit only: src/app.py" in prompt


def test_lead_takes_up_a_stored_revise_instead_of_failing_from_cache(
    scripted_repo: ReviewRepo, lead_dir: Path
) -> None:
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer(REREVIEW, {"message": approved_review()})
    scripted_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    scripted_repo.run(NO_CODE).assert_outcomes(failed=1)  # a run without a lead: round 1
    command = lead_script(
        lead_dir, decisions=[accept(CRITICAL)], edit={"docs/plans/x.md": FIXED_LINE}
    )
    result = scripted_repo.run(
        NO_CODE, "--advreview-lead=command", f"--advreview-lead-command={command}"
    )
    result.assert_outcomes(passed=1)
    first, second = scripted_repo.server.response_requests
    assert second.thread_id == first.thread_id
    assert f"+{FIXED_LINE}" in second.last_user_text
    result.stdout.fnmatch_lines(["*x.md::adversarial-review: approved*round 2*"])
    # The approval of the edited plan is stored: a third run passes from cache.
    again = scripted_repo.run(NO_CODE)
    again.assert_outcomes(passed=1)
    assert len(scripted_repo.server.response_requests) == 2


def test_lead_that_swaps_the_plan_for_a_symlink_is_an_error(
    scripted_repo: ReviewRepo, lead_dir: Path
) -> None:
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    secret = lead_dir / "secret.txt"
    secret.write_text("token=hunter2\n")
    swap = lead_dir / "swap.py"
    swap.write_text(
        textwrap.dedent(
            f"""\
            import json, os, re, sys
            prompt = sys.stdin.read()
            finding = re.search(r"(AR-[0-9a-f]{{6}})", prompt).group(1)
            os.remove("docs/plans/x.md")  # in the lead's folder (its worktree)
            os.symlink({str(secret)!r}, "docs/plans/x.md")
            print(json.dumps({{"decisions": [{{"finding": finding, "action": "accept",
                                               "reason": "r", "changed": "c"}}]}}))
            """
        )
    )
    result = scripted_repo.run(
        NO_CODE, "--advreview-lead=command", f"--advreview-lead-command={sys.executable} {swap}"
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*replaced docs/plans/x.md with a symbolic link*"])
    assert len(scripted_repo.server.response_requests) == 1  # the secret never reached it


def test_lead_under_xdist_reports_its_edits_on_the_controller(
    scripted_repo: ReviewRepo, lead_dir: Path
) -> None:
    plan = scripted_repo.plan("x.md", PLAN)
    scripted_repo.plan("y.md", "# Plan Y\n\n1. Ship.\n")
    scripted_repo.answer(REREVIEW, {"message": approved_review()})
    scripted_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    scripted_repo.answer("y.md", {"message": approved_review()})
    # A relative path: each review's lead runs in that review's private worktree.
    command = lead_script(
        lead_dir, decisions=[accept(CRITICAL)], edit={"docs/plans/x.md": FIXED_LINE}
    )
    patch = lead_dir / "lead.patch"
    result = scripted_repo.run(
        NO_CODE,
        "-n",
        "2",
        "--advreview-isolation=worktree",
        "--advreview-lead=command",
        f"--advreview-lead-command={command}",
        f"--advreview-lead-patch={patch}",
    )
    result.assert_outcomes(passed=2)
    assert plan.read_text() == PLAN + FIXED_LINE
    assert f"+{FIXED_LINE}" in patch.read_text()
    assert "docs/plans/y.md" not in patch.read_text()
    result.stdout.fnmatch_lines(["*lead (command) after round 1: edited docs/plans/x.md*"])


def test_under_ci_an_approval_of_the_leads_edits_does_not_pass_the_commit(
    scripted_repo: ReviewRepo, lead_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = scripted_repo.plan("x.md", PLAN)
    scripted_repo.commit("plan")
    scripted_repo.answer(REREVIEW, {"message": approved_review()})
    scripted_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    command = lead_script(
        lead_dir, decisions=[accept(CRITICAL)], edit={"docs/plans/x.md": FIXED_LINE}
    )
    monkeypatch.setenv("CI", "true")
    args = (NO_CODE, "--advreview-lead=command", f"--advreview-lead-command={command}")
    result = scripted_repo.run(*args, "docs/plans/x.md")
    # The reviewer approved the edited plan, but CI judges the commit, which lacks the edit.
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["not in the commit under review: the lead edited docs/plans/x.md*"]
    )
    assert plan.read_text().endswith(FIXED_LINE)
    # Nothing was stored as approved: back at the committed text, the next run reviews again.
    git(scripted_repo.path, "checkout", "--", "docs/plans/x.md")
    calls = len(scripted_repo.server.response_requests)
    again = scripted_repo.run(NO_CODE, "docs/plans/x.md")
    again.assert_outcomes(failed=1)
    assert len(scripted_repo.server.response_requests) > calls


def test_code_item_lead_never_edits_for_a_branch_change_set(
    scripted_repo: ReviewRepo, lead_dir: Path
) -> None:
    # A branch diff (BASE...HEAD) would be re-reviewed without working-tree edits.
    git(scripted_repo.path, "checkout", "-q", "-b", "feature")
    scripted_repo.write("src/app.py", "x = 1\n")
    scripted_repo.commit("app")
    scripted_repo.answer("src/app.py", {"message": revise_review(CODE)})
    fix = {"finding": "FIRST", "action": "accept", "reason": "Bounded.", "changed": "guard"}
    command = lead_script(lead_dir, decisions=[fix], edit={"src/app.py": "y = 3\n"})
    result = scripted_repo.run(
        "--advreview-diff=branch",
        "--advreview-base=main",
        "--advreview-isolation=worktree",
        "--advreview-lead=command",
        f"--advreview-lead-command={command}",
    )
    result.assert_outcomes(failed=1)
    assert lead_prompts(lead_dir) == []


def test_command_lead_process_never_gets_the_state_key(
    scripted_repo: ReviewRepo, lead_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_advreview.statekey import STATE_KEY_ENV

    scripted_repo.plan("x.md", PLAN)
    monkeypatch.setenv(STATE_KEY_ENV, "k" * 40)
    scripted_repo.answer(REREVIEW, {"message": approved_review()})
    scripted_repo.answer("x.md", {"message": revise_review(CRITICAL)})
    command = lead_script(
        lead_dir, decisions=[accept(CRITICAL)], edit={"docs/plans/x.md": FIXED_LINE}
    )
    scripted_repo.run(
        NO_CODE, "--advreview-lead=command", f"--advreview-lead-command={command}"
    ).assert_outcomes(passed=1)
    names = json.loads((lead_dir / "env-0.json").read_text())
    assert STATE_KEY_ENV not in names  # it could sign a forged approval
    assert "PATH" in names  # the rest of the environment is there
