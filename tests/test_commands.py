"""Pull-request commands: the grammar, who they count from, and the file pytest reads.

The Action's own run against a fake GitHub API is in ``test_waive_action.py``; the real
Codex run with a maintainer's command in ``test_decide_command_e2e.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_advreview.trust.commands import EDITED, CommandsError, load_commands, parse, vet

PERMISSIONS = {"maint": "write", "boss": "admin", "reader": "read", "renovate[bot]": "write"}


def comment(body: str, login: str = "maint", kind: str = "User", n: int = 1) -> dict[str, Any]:
    return {
        "id": n,
        "body": body,
        "user": {"login": login, "type": kind},
        "html_url": f"https://github.test/o/r/pull/7#issuecomment-{n}",
    }


def lookup(asked: list[str]) -> Any:
    def permission(login: str) -> str | None:
        asked.append(login)
        return PERMISSIONS.get(login)

    return permission


def test_the_three_commands_parse_with_their_reasons() -> None:
    found = parse(
        "Thanks!\n"
        "/advreview waive AR-1A2B3C: the table is empty since release 4\n"
        "/advreview decide AR-00ff00 Reject: the flag was never public\n"
        "  /advreview rounds +2:  nearly there  \n"
    )
    assert [p.command for p in found] == [
        {"verb": "waive", "finding": "AR-1a2b3c", "reason": "the table is empty since release 4"},
        {
            "verb": "decide",
            "finding": "AR-00ff00",
            "action": "reject",
            "reason": "the flag was never public",
        },
        {"verb": "rounds", "rounds": 2, "reason": "nearly there"},
    ]


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("> /advreview waive AR-1a2b3c: quoted", "not a command: it is quoted text"),
        (
            "```\n/advreview waive AR-1a2b3c: fenced\n```",
            "not a command: it is inside a code block",
        ),
        ("~~~~\n/advreview waive AR-1a2b3c: x\n~~~~", "not a command: it is inside a code block"),
        ("    /advreview waive AR-1a2b3c: indented", "not a command: it is an indented code block"),
        ("`/advreview waive AR-1a2b3c: inline`", "not a command: a command starts its own line"),
        ("please /advreview waive AR-1a2b3c: x", "not a command: a command starts its own line"),
        ("/advreview waive AR-1a2b3c", "not understood; write /advreview waive AR-1a2b3c: reason"),
        ("/advreview waive AR-1a2b3c:   ", "has no reason after the colon"),
        ("/advreview decide AR-1a2b3c maybe: x", "not understood"),
        ("/advreview rounds +0: x", "grants no rounds; write rounds +1 or more"),
        ("/advreview rounds 2: x", "not understood"),
        ("/advreview please", "not understood"),
    ],
)
def test_a_mention_that_is_no_command_says_why(body: str, why: str) -> None:
    found = parse(body)
    assert found and all(p.command is None for p in found)
    assert found[-1].why.startswith(why)


def test_a_fence_ends_only_with_its_own_kind_and_text_after_it_counts_again() -> None:
    found = parse(
        "```\n~~~\n/advreview waive AR-111111: in code\n```\n/advreview waive AR-222222: out\n"
    )
    assert [p.command is None for p in found] == [True, False]
    assert parse("no command here\n") == []


def test_only_commenters_with_write_permission_count_and_each_is_asked_once() -> None:
    asked: list[str] = []
    vetted = vet(
        [
            comment("/advreview waive AR-111111: fine", "maint", n=1),
            comment("/advreview rounds +2: more", "maint", n=2),
            comment("/advreview waive AR-222222: trust me", "reader", n=3),
            comment("/advreview decide AR-333333 accept: applied", "boss", n=4),
            comment("/advreview waive AR-444444: automated", "renovate[bot]", n=5),
            comment("/advreview waive AR-555555: app", "helper", kind="Bot", n=6),
            comment("/advreview waive AR-666666: who", "stranger", n=7),
            comment("> /advreview waive AR-777777: quoted", "boss", n=8),
            comment("just a comment", "reader", n=9),
            # A bot's report quoting a command as advice is no attempt: not even listed.
            comment("> /advreview waive AR-999999: x", "helper[bot]", kind="Bot", n=10),
            {"body": "/advreview waive AR-888888: ghost", "user": None},
        ],
        lookup(asked),
    )
    assert [(c.verb, c.login, c.permission) for c in vetted.commands] == [
        ("waive", "maint", "write"),
        ("rounds", "maint", "write"),
        ("decide", "boss", "admin"),
    ]
    assert vetted.commands[0].url == "https://github.test/o/r/pull/7#issuecomment-1"
    why = {i.finding: (i.by, i.why) for i in vetted.ignored}
    assert why["AR-222222"] == (
        "@reader",
        "@reader has read permission on the repository; only users with write, maintain "
        "or admin permission decide findings",
    )
    assert why["AR-444444"][1] == "commands from bots do not count; a person decides"
    assert why["AR-555555"][1] == "commands from bots do not count; a person decides"
    assert why["AR-666666"][1].startswith("@stranger has no permission")
    assert why["AR-888888"] == ("(unknown user)", "the comment names no author")
    assert not any("AR-999999" in i.text for i in vetted.ignored)
    quoted = next(i for i in vetted.ignored if "AR-777777" in i.text)
    assert quoted.finding is None and quoted.why.startswith("not a command: it is quoted")
    # Bots and comments without a command cost no permission lookup; repeats neither.
    assert asked == ["maint", "reader", "boss", "stranger"]


def test_a_command_in_an_edited_comment_never_counts_whoever_wrote_it() -> None:
    # GitHub's REST data says when a comment was edited, not by whom: a maintainer's
    # command could be another writer's words, so it is posted anew or it does not count.
    asked: list[str] = []
    posted = "2026-12-01T10:00:00Z"
    edited = {**comment("/advreview waive AR-111111: fine", "maint", n=1)}
    edited.update(created_at=posted, updated_at="2026-12-01T10:05:00Z")
    fresh = {**comment("/advreview waive AR-222222: fine", "maint", n=2)}
    fresh.update(created_at=posted, updated_at=posted)
    vetted = vet([edited, fresh], lookup(asked))
    assert [c.finding for c in vetted.commands] == ["AR-222222"]
    [ignored] = vetted.ignored
    assert (ignored.finding, ignored.by, ignored.why) == ("AR-111111", "@maint", EDITED)
    assert "post the command in a new comment" in EDITED
    assert asked == ["maint"]  # asked for the fresh command only


def test_the_commands_file_round_trips(tmp_path: Path) -> None:
    vetted = vet([comment("/advreview waive AR-111111: fine")], lookup([]))
    path = tmp_path / "commands.json"
    path.write_text(vetted.model_dump_json())
    assert load_commands(path) == vetted


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (None, "does not exist; pass the file the Action's commands step wrote"),
        ("{", "is not JSON ("),
        ('{"commands": [{"verb": "waive"}]}', "is not a commands file: commands.0.reason: "),
        (
            '{"commands": [{"verb": "waive", "reason": "x", "login": "a", "permission": "read"}]}',
            "is not a commands file: commands.0.permission: ",
        ),
        ('{"version": 2}', "is not a commands file: version: "),
        (
            '{"commands": [{"verb": "decide", "finding": "AR-111111", "reason": "x", '
            '"login": "a", "permission": "write"}]}',
            "is not a commands file: commands.0: Value error, a decide command needs action",
        ),
        ("[]", "is not a commands file: the file: "),
    ],
)
def test_a_wrong_commands_file_is_named_with_the_fix(
    tmp_path: Path, text: str | None, problem: str
) -> None:
    path = tmp_path / "commands.json"
    if text is not None:
        path.write_text(text)
    with pytest.raises(CommandsError) as err:
        load_commands(path)
    assert str(err.value).startswith(f"pytest-advreview: --advreview-commands={path}: {problem}")


def test_an_unreadable_commands_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(CommandsError, match=r"cannot be read \("):
        load_commands(tmp_path)
