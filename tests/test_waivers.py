"""Waivers and grants of rounds: the decisions file's entries, who they count from, the
outcome they give and how the reports show them (docs/deciding.md).

The real Codex runs are in ``test_waive_e2e.py`` and ``test_decide_command_e2e.py``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conftest import commit, init_repo, write
from pytest_advreview.loop import LoopResult
from pytest_advreview.models import (
    CommandsFile,
    DecisionAction,
    Finding,
    IgnoredCommand,
    ItemRecord,
    PullRequestCommand,
    Review,
    ReviewStatus,
    Severity,
    Verdict,
    Waiver,
)
from pytest_advreview.outcome import (
    OutcomeKind,
    decide,
    failure_report,
    failure_summary,
    user_properties,
)
from pytest_advreview.report.collect import ItemResult
from pytest_advreview.report.markdown import render_markdown
from pytest_advreview.report.terminal import decided_lines
from pytest_advreview.settings import Settings
from pytest_advreview.trust.authority import Authority, GateBase
from pytest_advreview.trust.decisions import DecisionsError, load_decisions

KEY = ".advreview/decisions.toml"
CRIT = Finding(id="AR-c00001", severity=Severity.CRITICAL, title="Data loss")
HIGH = Finding(id="AR-b00002", severity=Severity.HIGH, title="No rollback")
MED = Finding(id="AR-d00003", severity=Severity.MEDIUM, title="Vague metric")


#: The content id the waivers below were decided on (any 16 hex digits: these tests
#: judge who may waive; what a waiver binds to is test_binding.py's).
CONTENT = "0123456789abcdef"
BOUND = {"content": CONTENT, "scope": "the repository"}


def waive(finding: str, reason: str = "the table is empty", target: str = "code-review") -> str:
    return (
        f'[[decision]]\ntarget = "{target}"\nfinding = "{finding}"\naction = "waive"\n'
        f'content = "{CONTENT}"\nscope = "repository"\nreason = "{reason}"\n\n'
    )


def more(rounds: int = 2, target: str = "code-review", reason: str = "close to done") -> str:
    return (
        f'[[decision]]\ntarget = "{target}"\naction = "more-rounds"\nrounds = {rounds}\n'
        f'scope = "repository"\nreason = "{reason}"\n\n'
    )


def load_error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "decisions.toml"
    path.write_text(text)
    with pytest.raises(DecisionsError) as err:
        load_decisions(path)
    return str(err.value)


# -- the decisions file -------------------------------------------------------------------


def test_waive_and_more_rounds_are_read_and_never_sent_to_the_reviewer(tmp_path: Path) -> None:
    path = tmp_path / "decisions.toml"
    path.write_text(
        waive("AR-C00001")
        + more(3)
        + '[[decision]]\ntarget = "code-review"\nfinding = "AR-b00002"\naction = "accept"\n'
    )
    loaded = load_decisions(path)
    assert [(e.action, e.finding, e.rounds) for e in loaded.entries] == [
        ("waive", "AR-c00001", None),
        ("more-rounds", "", 3),
        (DecisionAction.ACCEPT, "AR-b00002", None),
    ]
    # Only the author's answers reach the reviewer.
    assert [d.finding for d in loaded.for_target("code-review")] == ["AR-b00002"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            '[[decision]]\ntarget = "code-review"\nfinding = "AR-c00001"\naction = "waive"\n',
            "action 'waive' on AR-c00001 has no reason: a waiver is a record of why the "
            'finding passes; add reason = "why it may pass"',
        ),
        (
            '[[decision]]\ntarget = "code-review"\naction = "more-rounds"\nreason = "x"\n',
            "action 'more-rounds' needs how many: add rounds = 2",
        ),
        (
            '[[decision]]\ntarget = "code-review"\naction = "more-rounds"\nrounds = 0\n'
            'reason = "x"\n',
            "action 'more-rounds' needs how many",
        ),
        (
            '[[decision]]\ntarget = "code-review"\naction = "more-rounds"\nrounds = 2\n',
            "action 'more-rounds' has no reason",
        ),
        (
            '[[decision]]\ntarget = "code-review"\nfinding = "AR-c00001"\n'
            'action = "more-rounds"\nrounds = 2\nreason = "x"\n',
            "action 'more-rounds' is for the whole target; delete finding = ...",
        ),
        (
            '[[decision]]\ntarget = "code-review"\nfinding = "AR-c00001"\naction = "reject"\n'
            'rounds = 2\nreason = "x"\n',
            "'rounds' belongs only to action 'more-rounds'; delete it from the reject entry",
        ),
        (
            '[[decision]]\ntarget = "code-review"\nfinding = ""\naction = "waive"\nreason = "x"\n',
            "'finding' is empty; copy the id printed in the failure",
        ),
        (
            more(2) + more(1),
            "decision entry 2: repeats 'more-rounds' for code-review (entry 1); keep one "
            "entry per target (add the rounds up)",
        ),
    ],
)
def test_a_wrong_person_entry_names_the_entry_and_the_fix(
    tmp_path: Path, text: str, problem: str
) -> None:
    assert problem in load_error(tmp_path, text)


# -- who they count from ------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path, hermetic_git: None) -> Path:
    """``main`` waives AR-c00001 and grants two rounds; the checkout adds its own waiver
    of AR-b00002 and a grant of five."""
    root = init_repo(tmp_path / "repo")
    write(root, KEY, waive("AR-c00001") + more(2))
    commit(root, "base")
    write(
        root,
        KEY,
        waive("AR-c00001") + more(2) + waive("AR-b00002", target="x.md") + more(5, "x.md"),
    )
    return root


def test_under_a_gate_only_the_bases_waivers_count_and_the_branchs_are_ignored(repo: Path) -> None:
    authority = Authority.of(
        repo / KEY, rootdir=repo, gated=True, head=False, base=GateBase(repo, "main")
    )
    (waiver,) = authority.waivers_for("code-review")
    assert waiver.finding == "AR-c00001" and waiver.source == "base"
    assert waiver.by.startswith("the base branch (main (")
    assert waiver.at is not None and waiver.at.endswith(f"):{KEY}")
    assert authority.waivers_for("x.md") == ()
    assert [g.rounds for g in authority.granted("code-review")] == [2]
    assert authority.granted("x.md") == ()
    ignored = authority.ignored_for("x.md", set())
    assert [i.text for i in ignored] == [
        "waive AR-b00002: the table is empty",
        "more-rounds +5: close to done",
    ]
    assert all(i.by == "the branch's decisions file" for i in ignored)
    assert "comment /advreview waive AR-b00002: reason" in ignored[0].why
    assert "comment /advreview rounds +N: reason" in ignored[1].why
    assert authority.ignored_for("code-review", {"AR-c00001"}) == ()
    # A fixture's own decisions file is the author's too: still ignored, still the base's.
    other = repo / "other.toml"
    other.write_text(waive("AR-d00003", target="y.md"))
    moved = authority.with_author(other)
    assert moved.waivers_for("y.md") == ()
    assert [i.finding for i in moved.ignored_for("y.md", set())] == ["AR-d00003"]


def test_a_local_run_counts_the_operators_own_file(repo: Path) -> None:
    authority = Authority.of(repo / KEY, rootdir=repo, gated=False, head=False, base=None)
    assert [(w.finding, w.source, w.by) for w in authority.waivers_for("x.md")] == [
        ("AR-b00002", "local", "local")
    ]
    assert [g.rounds for g in authority.granted("x.md")] == [5]
    assert authority.ignored == ()
    other = repo / "other.toml"
    other.write_text(waive("AR-d00003", target="y.md"))
    commanded = authority.with_commands(CommandsFile(commands=(command("rounds", rounds=1),)))
    moved = commanded.with_author(other)
    assert [w.finding for w in moved.waivers_for("y.md")] == ["AR-d00003"]
    assert [g.by for g in moved.granted("y.md")] == ["@maint"]


def command(verb: str, **fields: object) -> PullRequestCommand:
    return PullRequestCommand.model_validate(
        {
            "verb": verb,
            "reason": "a maintainer's reason",
            "login": "maint",
            "permission": "maintain",
            "url": "https://github.test/o/r/pull/1#issuecomment-9",
            **fields,
        }
    )


def test_commands_waive_decide_and_grant_on_any_target(repo: Path) -> None:
    authority = Authority.of(
        repo / KEY, rootdir=repo, gated=True, head=False, base=GateBase(repo, "main")
    ).with_commands(
        CommandsFile(
            commands=(
                command("waive", finding="AR-b00002"),
                command("waive", finding="AR-c00001"),
                command("decide", finding="AR-d00003", action="reject"),
                command("rounds", rounds=2),
            ),
            ignored=(IgnoredCommand(text="/advreview rounds +9: x", by="@reader", why="read"),),
        )
    )
    waivers = {w.finding: w for w in authority.waivers_for("x.md")}
    assert waivers["AR-b00002"].by == "@maint" and waivers["AR-b00002"].source == "command"
    # The base's waiver came first and stays the record of AR-c00001 on its target.
    assert authority.waivers_for("code-review")[0].source == "base"
    assert [g.rounds for g in authority.granted("x.md")] == [2]
    assert sum(g.rounds for g in authority.granted("code-review")) == 4
    (decided,) = authority.operator_decisions("x.md")
    assert decided.action is DecisionAction.REJECT
    assert decided.reason == "a maintainer's reason (decided by @maint)"
    assert [i.by for i in authority.ignored_for("x.md", set())][-1] == "@reader"


# -- the outcome --------------------------------------------------------------------------


def revise(*findings: Finding, status: ReviewStatus = ReviewStatus.REVISE) -> LoopResult:
    review = Review(summary="s", findings=findings, verdict=Verdict.REVISE, raw="VERDICT: REVISE")
    return LoopResult(status=status, review=review, last_round=3)


def test_a_waived_blocking_finding_passes_and_is_named() -> None:
    outcome = decide(revise(CRIT), Severity.MEDIUM, {CRIT.id})
    assert outcome.kind is OutcomeKind.PASSED
    assert outcome.failing == () and outcome.waived == (CRIT,)
    assert outcome.summary == (
        "REVISE after 3 rounds: every finding at or above medium was waived (AR-c00001)"
    )
    shown = json.loads(str(dict(user_properties(revise(CRIT), outcome))["findings"]))
    assert [f["id"] for f in shown] == [CRIT.id]


def test_a_waiver_leaves_the_rest_to_the_table() -> None:
    warned = decide(revise(CRIT, MED), Severity.HIGH, {CRIT.id})
    assert warned.kind is OutcomeKind.WARNED
    assert warned.summary.endswith("(passed with a warning); waived: AR-c00001")
    failed = decide(revise(CRIT, HIGH), Severity.HIGH, {CRIT.id})
    assert failed.kind is OutcomeKind.FAILED
    assert failed.failing == (HIGH,)
    assert failed.summary.endswith("; waived: AR-c00001")
    text = failure_summary("x.md", failed)
    assert f"{CRIT.line()} — waived by a person with authority" in text
    # Waiving a finding nobody reported changes nothing.
    assert decide(revise(HIGH), Severity.HIGH, {"AR-ffffff"}).kind is OutcomeKind.FAILED


def test_a_waiver_closes_a_finding_left_to_the_operator() -> None:
    left = replace(revise(), needs_operator=(HIGH.id,))
    assert decide(left, Severity.HIGH).kind is OutcomeKind.FAILED
    approved = replace(
        left,
        status=ReviewStatus.APPROVED,
        review=Review(summary="s", verdict=Verdict.APPROVED, raw="VERDICT: APPROVED"),
    )
    outcome = decide(approved, Severity.HIGH, {HIGH.id})
    assert outcome.kind is OutcomeKind.PASSED
    assert outcome.summary == "APPROVED after 3 rounds; waived: AR-b00002"


def test_at_the_round_limit_the_failure_names_the_ways_forward_without_a_ci_edit() -> None:
    result = revise(HIGH, status=ReviewStatus.MAX_ROUNDS)
    outcome = decide(result, Severity.HIGH, content={HIGH.id: CONTENT})
    assert outcome.kind is OutcomeKind.FAILED
    for text in (failure_report("x.md", result, outcome), failure_summary("x.md", outcome)):
        assert "the round limit (3) is reached with blocking findings open" in text
        # The waiver names the code it is for: the content id of the finding's place.
        assert f"`/advreview waive AR-b00002@{CONTENT}: reason`" in text
        assert 'target = "x.md", finding = "AR-b00002", action = "waive"' in text
        assert f'content = "{CONTENT}", pull = <its number>' in text
        assert "`/advreview rounds +2: reason`" in text
        assert 'action = "more-rounds", rounds = 2' in text
    # Not at the limit: no such lines.
    assert "round limit" not in failure_summary("x.md", decide(revise(HIGH), Severity.HIGH))
    # At the limit with everything waived: a pass.
    assert decide(result, Severity.HIGH, {HIGH.id}).kind is OutcomeKind.PASSED


# -- the reports ----------------------------------------------------------------------------


def record(**fields: object) -> ItemRecord:
    base = ItemRecord(
        nodeid="docs/plans/x.md::adversarial-review",
        key="docs/plans/x.md",
        kind="plan",
        path="docs/plans/x.md",
        status=ReviewStatus.REVISE,
        outcome="passed",
        findings=(CRIT,),
        waived=(Waiver(finding=CRIT.id, by="@maint", reason="empty table", source="command"),),
    )
    return base.model_copy(update=fields)


def test_the_terminal_and_markdown_say_who_waived_granted_and_what_was_ignored() -> None:
    ignored = IgnoredCommand(text="/advreview waive AR-c00001: x", by="@reader", why="read only")
    item = record(rounds_granted=2, ignored=(ignored,))
    assert decided_lines(item) == [
        "waived AR-c00001 by @maint (command), reason: empty table",
        "rounds granted: +2 beyond max-rounds",
        "ignored: '/advreview waive AR-c00001: x' by @reader: read only",
    ]
    text = render_markdown(Settings(), [ItemResult(record=item, pytest_outcome="passed")])
    assert "| critical (waived) | `AR-c00001` |" in text
    # Markdown shows @ as an entity: a report mentions nobody.
    assert "- **Waived:** `AR-c00001` by &#64;maint (command), reason: empty table" in text
    assert "- **Rounds granted:** +2 beyond max-rounds" in text
    assert "- **Ignored:** `/advreview waive AR-c00001: x` by &#64;reader: read only" in text


def test_a_commands_file_from_addopts_is_refused(scripted_repo: Any, tmp_path: Path) -> None:
    commands = tmp_path / "commands.json"
    commands.write_text(CommandsFile().model_dump_json())
    scripted_repo.write("pytest.ini", f"[pytest]\naddopts = --advreview-commands={commands}\n")
    refused = scripted_repo.run("--advreview-diff=none")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(
        ["*--advreview-commands came from the ini file's addopts, which the repository*"]
    )
    scripted_repo.write("pytest.ini", "[pytest]\n")
    passed = scripted_repo.run("--advreview-diff=none", f"--advreview-commands={commands}")
    assert passed.ret == pytest.ExitCode.NO_TESTS_COLLECTED  # no plan here; no refusal
