"""Boundary tests of trust/authority.py: each field a person's decision carries, each part
an override keeps, each message word for word (the mutation tests' survivors pointed at
them: scripts/mutants authority)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from pytest_advreview.models import CommandsFile, IgnoredCommand, PullRequestCommand, Waiver
from pytest_advreview.trust import authority
from pytest_advreview.trust import run as trust_run
from pytest_advreview.trust.authority import Authority

URL = "https://github.test/o/r/pull/4#issuecomment-9"
CONTENT = "0123456789abcdef"
NOW = "fedcba9876543210"


def command(verb: str, **fields: object) -> PullRequestCommand:
    return PullRequestCommand.model_validate(
        {"verb": verb, "reason": "why", "login": "maint", "permission": "write", "url": URL}
        | fields
    )


def local(tmp_path: Path, text: str = "", pull: int | None = 4) -> Authority:
    path = tmp_path / "decisions.toml"
    path.write_text(text)
    return Authority.of(path, rootdir=tmp_path, gated=False, head=False, base=None, pull=pull)


def entry(action: str, *, finding: str = "", rounds: int = 0, extra: str = "") -> str:
    lines = ["[[decision]]", 'target = "x.md"', f'action = "{action}"', 'reason = "ok"']
    lines += [f'finding = "{finding}"'] if finding else []
    lines += [f"rounds = {rounds}"] if rounds else []
    return "\n".join([*lines, 'scope = "repository"', extra, ""])


# -- one construction of a person's waiver or grant ----------------------------------------


def test_a_waiver_entry_carries_every_field(tmp_path: Path) -> None:
    text = entry("waive", finding="AR-a00001", extra=f'content = "{CONTENT}"\ncommit = "abc1234"')
    (waiver,) = local(tmp_path, text).waivers_for("x.md")
    assert waiver == Waiver(
        finding="AR-a00001",
        by="local",
        reason="ok",
        source="local",
        at=str(tmp_path / "decisions.toml"),
        content=CONTENT,
        commit="abc1234",
        scope="the repository",
    )


def test_a_grant_entry_carries_every_field(tmp_path: Path) -> None:
    (grant,) = local(tmp_path, entry("more-rounds", rounds=3)).granted("x.md")
    assert (grant.target, grant.rounds, grant.by, grant.reason) == ("x.md", 3, "local", "ok")
    assert (grant.source, grant.at, grant.scope) == (
        "local",
        str(tmp_path / "decisions.toml"),
        "the repository",
    )


def test_a_command_waiver_and_grant_carry_every_field(tmp_path: Path) -> None:
    found = local(tmp_path).with_commands(
        CommandsFile(
            commands=(
                command("waive", finding="AR-a00001", content=CONTENT),
                command("rounds", rounds=2, finding="AR-a00002"),
            )
        )
    )
    (waiver,) = found.waivers_for("any.md")
    assert waiver == Waiver(
        finding="AR-a00001",
        by="@maint",
        reason="why",
        source="command",
        at=URL,
        content=CONTENT,
        scope="pull request #4",
    )
    # A rounds command is a grant for every target, whatever finding it names.
    (grant,) = found.granted("any.md")
    assert (grant.target, grant.rounds, grant.by, grant.at) == (None, 2, "@maint", URL)
    assert (grant.source, grant.scope, grant.reason) == ("command", "pull request #4", "why")


# -- with_author keeps what is the run's, not the file's -----------------------------------


def test_with_author_in_a_local_run_keeps_the_pull_request_and_the_commands(
    tmp_path: Path,
) -> None:
    ignored = IgnoredCommand(text="/advreview rounds +9: x", by="@reader", why="read")
    run = local(tmp_path, entry("waive", finding="AR-a00001", extra=f'content = "{CONTENT}"'))
    run = run.with_commands(
        CommandsFile(
            commands=(
                command("waive", finding="AR-b00002", content=CONTENT),
                command("decide", finding="AR-c00003", action="reject"),
                command("budget", tokens=500),
            ),
            ignored=(ignored,),
        )
    )
    other = tmp_path / "other.toml"
    other.write_text(entry("more-rounds", rounds=1).replace("x.md", "y.md"))
    moved = run.with_author(other)
    assert (moved.pull, moved.budget_tokens) == (4, 500)
    assert [(k, w.finding) for k, w in moved.waivers] == [(None, "AR-b00002")]
    assert [d.finding for d in moved.decided] == ["AR-c00003"]
    assert [(k, i) for k, i in moved.ignored] == [(None, ignored)]
    assert [g.target for g in moved.grants] == ["y.md"]


def test_with_author_under_a_gate_keeps_only_the_ignored_commands(tmp_path: Path) -> None:
    ignored = IgnoredCommand(text="/advreview rounds +9: x", by="@reader", why="read")
    path = tmp_path / "decisions.toml"
    path.write_text(entry("waive", finding="AR-a00001", extra=f'content = "{CONTENT}"'))
    gate = Authority.of(path, rootdir=tmp_path, gated=True, head=False, base=None)
    gate = gate.with_commands(CommandsFile(ignored=(ignored,)))
    moved = gate.with_author(path)
    # The branch's own waiver is ignored on its target, once; the command's stays.
    assert [(k, i.finding) for k, i in moved.ignored] == [("x.md", "AR-a00001"), (None, None)]


# -- the per-target questions answer for the target asked ----------------------------------


def test_bound_and_ignored_for_answer_for_the_target_asked(tmp_path: Path) -> None:
    text = entry("waive", finding="AR-a00001", extra=f'content = "{CONTENT}"')
    found = local(tmp_path, text).with_commands(
        CommandsFile(
            ignored=(IgnoredCommand(text="waive", by="@r", why="read", finding="AR-a00001"),)
        )
    )
    held, stale = found.bound("x.md", {"AR-a00001": CONTENT})
    assert [w.finding for w in held] == ["AR-a00001"] and stale == ()
    assert [i.by for i in found.ignored_for("x.md", {"AR-a00001"})] == ["@r"]
    assert found.ignored_for("x.md", {"AR-other"}) == ()


def test_a_stale_waiver_says_why_word_for_word(tmp_path: Path) -> None:
    named = entry("waive", finding="AR-a00001", extra=f'content = "{CONTENT}"\ncommit = "abc1234"')
    _held, (stale,) = local(tmp_path, named).bound("x.md", {"AR-a00001": NOW})
    assert stale == IgnoredCommand(
        text=f"waive AR-a00001@{CONTENT}: ok",
        by="local",
        why=(
            f"the waiver was for earlier code: it was decided on content {CONTENT} at commit "
            f"abc1234, and the finding's place now has content {NOW}; the finding is open "
            f"again: waive it anew (`/advreview waive AR-a00001@{NOW}: reason`, or content = "
            f'"{NOW}" in the base branch\'s entry) if the new code may pass'
        ),
        finding="AR-a00001",
        url=None,
    )
    # A long commit id is shown by its first twelve digits; none, not at all.
    long = named.replace("abc1234", "0123456789abcdef0123")
    _held, (shown,) = local(tmp_path, long).bound("x.md", {"AR-a00001": NOW})
    assert f"content {CONTENT} at commit 0123456789ab, and" in shown.why
    bare = named.replace('commit = "abc1234"', "")
    _held, (plain,) = local(tmp_path, bare).bound("x.md", {"AR-a00001": NOW})
    assert f"decided on content {CONTENT}, and the finding's" in plain.why
    commanded = local(tmp_path).with_commands(
        CommandsFile(commands=(command("waive", finding="AR-a00001"),))
    )
    _held, (unbound,) = commanded.bound("x.md", {"AR-a00001": NOW})
    assert unbound == IgnoredCommand(
        text="waive AR-a00001: why",
        by="@maint",
        why=(
            "a waiver holds only for the code it was decided on, and this one names none; a "
            f"person with authority comments `/advreview waive AR-a00001@{NOW}: reason` (the "
            "content id is printed with the finding)"
        ),
        finding="AR-a00001",
        url=URL,
    )


# -- the vetted commands come from the command line only -----------------------------------


def config(tmp_path: Path, *args: str) -> pytest.Config:
    return cast(
        pytest.Config,
        SimpleNamespace(rootpath=tmp_path, invocation_params=SimpleNamespace(args=args)),
    )


def settings(tmp_path: Path) -> SimpleNamespace:
    commands = tmp_path / "commands.json"
    commands.write_text(CommandsFile().model_dump_json())
    return SimpleNamespace(
        decisions=str(tmp_path / "decisions.toml"),
        head=None,
        pull_request=None,
        commands=str(commands),
        strict_exit=False,
    )


@pytest.mark.parametrize(
    "given",
    [
        ("--advreview-commands", "x"),
        ("--advreview-commands=x",),
        ("--advreview-commands=a=b",),
        ("-q",),
    ],
)
def test_commands_count_from_the_command_line_or_pytest_addopts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: tuple[str, ...]
) -> None:
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    if given == ("-q",):
        monkeypatch.setenv("PYTEST_ADDOPTS", "-q --advreview-commands=x")
    run_trust = trust_run.decide({}, strict_exit=False, head=None)
    found = authority.of_run(run_trust, config(tmp_path, *given), settings(tmp_path), None)
    assert found.waivers == ()


def test_commands_only_an_ini_addopts_passed_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "-q")
    run_trust = trust_run.decide({}, strict_exit=False, head=None)
    with pytest.raises(pytest.UsageError) as refused:
        authority.of_run(run_trust, config(tmp_path, "-q"), settings(tmp_path), None)
    assert str(refused.value) == (
        "pytest-advreview: --advreview-commands came from the ini file's addopts, which the "
        "repository under review writes; the maintainers' commands count only from the "
        "command line (the Action passes them): remove it from addopts"
    )


# -- each verb counts only as itself -------------------------------------------------------


@pytest.mark.parametrize(
    "odd",
    [
        {"verb": "waive", "finding": "AR-a00001", "content": CONTENT, "action": "accept"},
        {"verb": "decide", "finding": "", "action": "accept"},
        {"verb": "waive", "finding": "", "rounds": 3},
        {"verb": "rounds", "rounds": 2, "tokens": 5},
    ],
)
def test_a_command_counts_only_for_what_its_verb_says(
    tmp_path: Path, odd: dict[str, object]
) -> None:
    found = local(tmp_path).with_commands(CommandsFile(commands=(command(**odd),)))
    assert found.decided == () and found.budget_tokens == 0
    assert [g.rounds for g in found.grants] == ([2] if odd["verb"] == "rounds" else [])
    waived = [w.finding for _target, w in found.waivers]
    assert waived == (["AR-a00001"] if odd.get("finding") else [])


def test_budget_commands_add_up(tmp_path: Path) -> None:
    budgets = (command("budget", tokens=100), command("budget", tokens=250))
    found = local(tmp_path).with_commands(CommandsFile(commands=budgets))
    assert found.budget_tokens == 350


def test_under_a_gate_every_person_decision_of_the_branch_is_ignored_after_an_answer(
    tmp_path: Path,
) -> None:
    path = tmp_path / "decisions.toml"
    answer = entry("reject", finding="AR-a00001").replace('scope = "repository"\n', "")
    path.write_text(answer + entry("waive", finding="AR-b00002", extra=f'content = "{CONTENT}"'))
    gate = Authority.of(path, rootdir=tmp_path, gated=True, head=False, base=None)
    assert [(k, i.text) for k, i in gate.ignored] == [("x.md", "waive AR-b00002: ok")]


# -- the one answer per target -------------------------------------------------------------


def test_the_answer_of_a_local_run(tmp_path: Path) -> None:
    text = (
        entry("reject", finding="AR-a00001").replace('scope = "repository"\n', "")
        + entry("waive", finding="AR-b00002", extra=f'content = "{CONTENT}"')
        + entry("more-rounds", rounds=2)
    )
    found = local(tmp_path, text).with_commands(
        CommandsFile(
            commands=(
                command("decide", finding="AR-c00003", action="accept"),
                command("decide", finding="AR-c00003", action="reject"),
            )
        )
    )
    answer = found.for_target("x.md")
    assert answer.key == "x.md" and answer.where == str(tmp_path / "decisions.toml")
    assert [d.finding for d in answer.answers] == ["AR-a00001"]
    # Locally the file is the author's: only the commands are sent as the operator's,
    # the later of two on one finding.
    assert [(d.finding, d.action.value) for d in answer.sent] == [("AR-c00003", "reject")]
    assert [d.finding for d in answer.operator] == ["AR-a00001", "AR-c00003"]
    assert [w.finding for w in answer.waivers] == ["AR-b00002"]
    assert (answer.rounds_granted, [g.target for g in answer.grants]) == (2, ["x.md"])
    other = found.for_target("y.md")
    assert (other.answers, other.waivers, other.grants) == ((), (), ())


def test_the_answer_under_a_gate_sends_the_operators_file(tmp_path: Path) -> None:
    path = tmp_path / "decisions.toml"
    path.write_text(entry("reject", finding="AR-a00001").replace('scope = "repository"\n', ""))
    gate = Authority.of(path, rootdir=tmp_path, gated=True, head=False, base=None)
    gate = gate.with_commands(
        CommandsFile(commands=(command("decide", finding="AR-c00003", action="accept"),))
    )
    answer = gate.for_target("x.md")
    assert [d.finding for d in answer.answers] == ["AR-a00001"]
    assert answer.sent == answer.operator
    assert [d.finding for d in answer.sent] == ["AR-c00003"]


def test_a_waiver_for_a_finding_not_in_this_run_does_not_stop_the_next(tmp_path: Path) -> None:
    text = entry("waive", finding="AR-a00001", extra=f'content = "{CONTENT}"') + entry(
        "waive", finding="AR-b00002", extra=f'content = "{CONTENT}"'
    )
    held, _stale = local(tmp_path, text).for_target("x.md").bound({"AR-b00002": CONTENT})
    assert [w.finding for w in held] == ["AR-b00002"]


# -- entries for another pull request ------------------------------------------------------


def pulled(action: str, pull: int, **fields: object) -> str:
    return entry(action, **fields).replace('scope = "repository"', f"pull = {pull}")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("pull", "now"),
    [
        (5, "this run is for pull request #5"),
        (
            None,
            "this run names no pull request (the Action passes it as "
            "--advreview-pull-request; a plain CI run has none)",
        ),
    ],
)
def test_an_entry_for_another_pull_request_is_ignored_saying_why(
    tmp_path: Path, pull: int | None, now: str
) -> None:
    text = (
        entry("reject", finding="AR-a00001").replace('scope = "repository"\n', "")
        + pulled("waive", 4, finding="AR-b00002", extra=f'content = "{CONTENT}"')
        + pulled("more-rounds", 4, rounds=2)
    )
    found = local(tmp_path, text, pull=pull)
    assert (found.waivers, found.grants) == ((), ())
    why = (
        f"the entry is for pull request #4, and {now}; only an entry with "
        'scope = "repository" holds for every run'
    )
    assert list(found.ignored) == [
        (
            "x.md",
            IgnoredCommand(text="waive AR-b00002: ok", by="local", why=why, finding="AR-b00002"),
        ),
        ("x.md", IgnoredCommand(text="more-rounds +2: ok", by="local", why=why, finding=None)),
    ]


def test_an_invalid_decisions_file_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "decisions.toml").write_text("[[decision]]\n")
    run_trust = trust_run.decide({}, strict_exit=False, head=None)
    own = settings(tmp_path)
    own.commands = None
    with pytest.raises(pytest.UsageError) as refused:
        authority.of_run(run_trust, config(tmp_path), own, None)
    assert str(refused.value).startswith(
        f"pytest-advreview: decisions file {tmp_path / 'decisions.toml'}: decision entry 1: "
    )
