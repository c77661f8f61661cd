"""Pull-request commands as GitHub renders the comment (CommonMark, markdown-it).

Observed on 1803125: a write user's command counted inside an HTML comment (GitHub shows
nothing of it), a ``<details>`` block, ``<pre>``, a fenced block inside a list item and a
lazy ``>`` continuation line, and Arabic-Indic digits counted as a number of rounds.
Only a line of a visible, unquoted, top-level paragraph is a command.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from action_kit import GitHubAPI
from pytest_advreview import action
from pytest_advreview.models import CommandsFile
from pytest_advreview.trust.commands import parse, vet
from test_action import REPO

WAIVE = "/advreview waive AR-1a2b3c: hidden from the reader"


def _why(body: str) -> list[str]:
    found = parse(body)
    assert found, body
    assert all(p.command is None for p in found), [p.command for p in found]
    return [p.why for p in found]


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (f"<!--\n{WAIVE}\n-->", "it is inside HTML, which GitHub does not show as text"),
        (f"<!-- {WAIVE} -->", "it is inside HTML, which GitHub does not show as text"),
        (f"Thanks <!-- a note\n{WAIVE}\n--> for the fix.", "it is inside HTML that GitHub"),
        (f"<!--\n\n{WAIVE}\n\n-->", "it is inside HTML, which GitHub does not show"),
        (
            f"<details>\n<summary>Looks fine</summary>\n\n{WAIVE}\n\n</details>",
            "it is inside an HTML element (<details>)",
        ),
        (f"<pre>\n\n{WAIVE}\n\n</pre>", "it is inside HTML, which GitHub does not show"),
        (f"<div>\n\n<p>\n\n{WAIVE}\n\n</div>", "it is inside an HTML element (<p>)"),
        (f"- item\n\n  ```\n  {WAIVE}\n  ```", "it is inside a code block"),
        (f"1. ```\n   {WAIVE}\n   ```", "it is inside a code block"),
        (f"  ```\n{WAIVE}\n  ```", "it is inside a code block"),
        (f"   ~~~\n{WAIVE}\n   ~~~", "it is inside a code block"),
        (f"````\n```\n{WAIVE}\n````", "it is inside a code block"),
        (f"> I said\n{WAIVE}", "it is quoted text"),
        (f"> > nested\n{WAIVE}", "it is quoted text"),
        (f"- {WAIVE}", "it is inside a list"),
        (f"- first\n  {WAIVE}", "it is inside a list"),
        (f"# {WAIVE}", "a command is a paragraph of its own"),
        (f"{WAIVE}\n---", "a command is a paragraph of its own"),
        (f"<span>x</span><span>\n{WAIVE}</span>", "it is inside an HTML element (<span>)"),
        (f"{WAIVE} <!-- and more -->", "it is inside HTML that GitHub does not show"),
        (f"[x]: {WAIVE}", "a command starts its own line"),
        ('[ref]:\n/advreview\n"waive AR-1a2b3c: a title"', "it is not shown as text"),
        (
            f"a | b\n--- | ---\n{WAIVE} | x",
            "a command is a paragraph of its own, at the top level",
        ),
        ("/advreview rounds +\u0662: Arabic-Indic two", "not understood"),
        ("/advreview rounds +\u0967\u0966: Devanagari ten", "not understood"),
        ("/advreview waive\u00a0AR-1a2b3c: a no-break space", "not understood"),
    ],
    ids=[
        "html-comment",
        "html-comment-one-line",
        "inline-html-comment",
        "html-comment-with-blank-lines",
        "details",
        "pre",
        "unclosed-p",
        "fence-in-list-item",
        "fence-in-ordered-item",
        "fence-indented-2",
        "tilde-fence-indented-3",
        "longer-fence",
        "lazy-quote",
        "lazy-nested-quote",
        "list-item",
        "list-continuation",
        "heading",
        "setext-heading",
        "inline-element-across-lines",
        "inline-html-after-the-command",
        "link-definition",
        "link-definition-title",
        "table-row",
        "arabic-indic-digits",
        "devanagari-digits",
        "no-break-space",
    ],
)
def test_what_github_does_not_show_as_a_top_level_line_is_no_command(body: str, why: str) -> None:
    reasons = _why(body)
    assert any(why in reason for reason in reasons), reasons


def test_a_visible_command_still_counts_around_what_does_not() -> None:
    found = parse(
        "<details>\n<summary>x</summary>\n\n/advreview waive AR-111111: hidden\n\n</details>\n\n"
        "/advreview waive AR-222222: after the details, visible\n"
        "<!-- /advreview waive AR-333333: comment -->\n\n"
        "Thanks.\r\n/advreview rounds +12: *two* more `rounds`\r\n"
        "> /advreview waive AR-444444: quoted\n"
    )
    assert [p.command for p in found if p.command is not None] == [
        {"verb": "waive", "finding": "AR-222222", "reason": "after the details, visible"},
        {"verb": "rounds", "rounds": 12, "reason": "*two* more `rounds`"},
    ]
    assert [p.text[:30] for p in found if p.command is None] == [
        "/advreview waive AR-111111: hi",
        "<!-- /advreview waive AR-33333",
        "> /advreview waive AR-444444: ",
    ]


def test_a_tag_github_does_not_know_opens_nothing() -> None:
    # GitHub drops an unknown tag and shows what follows: List<T> in a sentence does not
    # make the comment's commands invisible; a known element left open does.
    found = parse(f"Keep List<T> as is.\n\n{WAIVE}")
    assert [p.command is not None for p in found] == [True]
    (blocked,) = parse(f"<span>\n\n{WAIVE}")
    assert blocked.why.startswith("not a command: it is inside an HTML element (<span>)")


def test_the_private_use_marks_of_the_parser_cannot_be_forged() -> None:
    # The parser marks each line start with private-use characters; a comment that
    # writes them cannot make a hidden line's command count.
    body = (
        f"<!--\n{WAIVE}\n-->\n\n\ue0001\ue001 waive AR-999999: forged\n"
        "\ue0001\ue001/advreview waive AR-999999: forged too\n"
        "/advreview waive AR-888888: real"
    )
    found = parse(body)
    assert [p.command for p in found if p.command is not None] == [
        {"verb": "waive", "finding": "AR-888888", "reason": "real"}
    ]
    assert len(found) == 3 and found[0].why.startswith("not a command: it is inside HTML")


def test_a_write_users_hidden_command_is_listed_as_ignored_not_counted() -> None:
    comments = [
        {
            "id": n,
            "body": body,
            "user": {"login": "maint", "type": "User"},
            "html_url": f"https://github.test/o/r/pull/7#issuecomment-{n}",
        }
        for n, body in enumerate(
            [f"LGTM <!--\n{WAIVE}\n-->", f"<details>\n\n{WAIVE}\n\n</details>", f"> q\n{WAIVE}"]
        )
    ]
    vetted = vet(comments, lambda _login: "admin")
    assert vetted.commands == ()
    assert [i.why.split(";")[0] for i in vetted.ignored] == [
        "not a command: it is inside HTML that GitHub does not show (a comment or a tag)",
        "not a command: it is inside an HTML element (<details>)",
        "not a command: it is quoted text (a reply quoting someone decides nothing)",
    ]


def test_the_actions_commands_step_counts_only_what_a_reader_sees(tmp_path: Path) -> None:
    # Through the loopback GitHub API of the Action tests: the commands step lists the
    # comments and asks each commenter's permission as on GitHub.
    comments = [
        f"Looks good <!--\n{WAIVE.replace('1a2b3c', '111111')}\n-->",
        f"<details>\n<summary>CI</summary>\n\n{WAIVE.replace('1a2b3c', '222222')}\n\n</details>",
        f"- ```\n  {WAIVE.replace('1a2b3c', '333333')}\n  ```",
        f"> earlier\n{WAIVE.replace('1a2b3c', '444444')}",
        "/advreview rounds +\u0663: three in Arabic-Indic digits",
        "/advreview waive AR-555555: visible and on its own line",
    ]
    with GitHubAPI(REPO) as api:
        api.permissions["maint"] = "admin"
        api.comments[7] = [
            {"id": n, "body": body, "user": {"login": "maint", "type": "User"}}
            for n, body in enumerate(comments, start=1)
        ]
        env = {
            "GITHUB_REPOSITORY": REPO,
            "GITHUB_API_URL": api.url,
            "GH_TOKEN": "local-token",
            "GITHUB_OUTPUT": str(tmp_path / "output"),
            "ADVREVIEW_ACTION_PR": "7",
            "ADVREVIEW_ACTION_WORK_DIR": str(tmp_path),
        }
        assert action.commands(env) == 0
    written = CommandsFile.model_validate_json((tmp_path / "gate" / "commands.json").read_text())
    assert [(c.verb, c.finding) for c in written.commands] == [("waive", "AR-555555")]
    assert [i.finding for i in written.ignored] == [None] * 5
    assert [i.why.split(" (")[0].split(";")[0] for i in written.ignored] == [
        "not a command: it is inside HTML that GitHub does not show",
        "not a command: it is inside an HTML element",
        "not a command: it is inside a code block",
        "not a command: it is quoted text",
        "not understood",
    ]
