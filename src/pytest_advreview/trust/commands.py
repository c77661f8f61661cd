"""Pull-request commands: a person with authority decides findings from a comment.

The grammar (docs/deciding.md, "Commands"), one command per line, at the start of a
line of a visible, unquoted, top-level paragraph as GitHub renders the comment::

    /advreview waive AR-1a2b3c@0123456789abcdef: why it may pass   (the code it was decided on)
    /advreview decide AR-1a2b3c accept: what was applied     (a finding left to a person)
    /advreview decide AR-1a2b3c reject: why it does not apply
    /advreview rounds +2: why more rounds are worth it

The Action lists the pull request's comments through the REST API and keeps a command
only when its commenter's repository permission is write, maintain or admin
(:func:`vet`); it writes the result as a :class:`~.models.CommandsFile`, which pytest
reads with ``--advreview-commands`` (:func:`load_commands`).  Everything else is kept as
an :class:`~.models.IgnoredCommand` with the reason, so the reports say what did not
count and why:

- a commenter without write permission, or a bot (``[bot]`` logins, type ``Bot``);
- a command GitHub does not show as a paragraph's line of its own: the comment is parsed
  as CommonMark (markdown-it, GitHub's grammar), not by rules of our own, so a command
  in a quote (a lazy ``>`` continuation too), a code block (fenced, indented, a fence
  in a list item), a list, an HTML comment or element (``<details>``, ``<pre>``), or
  not at the start of its line (inline code, a sentence that mentions one) is none;
- a number in another script's digits (``+٢``): ASCII digits alone are a number;
- a command that does not parse (the reason names the grammar).

- a command in a comment edited after it was posted (``updated_at`` later than
  ``created_at``): the REST data does not say who edited it, and a command must be the
  decision of the person it is recorded for, so an edited command is posted anew.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markdown_it.token import Token
from pydantic import ValidationError

from .. import rendered
from ..models import CommandsFile, IgnoredCommand, PullRequestCommand
from ..validation import first_error

__all__ = [
    "ALLOWED",
    "CommandsError",
    "Parsed",
    "load_commands",
    "parse",
    "vet",
]

#: Repository permissions whose commands count.
ALLOWED = frozenset({"write", "maintain", "admin"})
_PREFIX = "/advreview"
# ASCII alone (re.ASCII): another script's digits are no number, its spaces no separator.
# A waiver may name the content id of the code it was decided on (AR-1a2b3c@<16 hex>).
_WAIVE = re.compile(
    r"waive\s+(AR-[0-9a-fA-F]{6})(?:@([0-9a-fA-F]{16}))?\s*:\s*(.*)", re.IGNORECASE | re.ASCII
)
_DECIDE = re.compile(
    r"decide\s+(AR-[0-9a-fA-F]{6})\s+(accept|reject)\s*:\s*(.*)", re.IGNORECASE | re.ASCII
)
_ROUNDS = re.compile(r"rounds\s+\+([0-9]{1,2})\s*:\s*(.*)", re.IGNORECASE | re.ASCII)
_BUDGET = re.compile(r"budget\s+\+([0-9]{1,12})\s*(?:tokens)?\s*:\s*(.*)", re.IGNORECASE | re.ASCII)
_GRAMMAR = (
    "write /advreview waive AR-1a2b3c: reason, /advreview decide AR-1a2b3c accept|reject: "
    "reason, /advreview rounds +N: reason, or /advreview budget +TOKENS: reason"
)
#: How much of a command line a report quotes.
_SHOWN = 200


class CommandsError(Exception):
    """The ``--advreview-commands`` file cannot be used; the message names it and the fix."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"pytest-advreview: --advreview-commands={path}: {problem}")


@dataclass(frozen=True)
class Parsed:
    """One ``/advreview`` line of a comment: a command, or why it is none.

    :param text: the line as written (shortened).
    :param command: the command's fields (``verb``, ``finding``, ``action``, ``rounds``, ``tokens``,
        ``reason``), or ``None`` with ``why`` saying what is wrong.
    """

    text: str
    command: Mapping[str, Any] | None
    why: str = ""


#: Why a line in a block of each kind holds no command (the innermost kind that decides).
_BLOCKED = {
    "blockquote": "it is quoted text (a reply quoting someone decides nothing)",
    "fence": "it is inside a code block",
    "code_block": "it is an indented code block",
    "html_block": (
        "it is inside HTML, which GitHub does not show as text (a comment, <pre>, <details>)"
    ),
    "list_item": "it is inside a list; a command is a paragraph of its own, at the top level",
}
_NOT_OWN = "a command is a paragraph of its own, at the top level"
_NOT_START = "a command starts its own line of plain text"
_NOT_SHOWN = "it is not shown as text (a link reference definition)"
_IN_HTML = "it is inside HTML that GitHub does not show (a comment or a tag)"
#: Marks the start of a source line for the parser (``\ue000`` N ``\ue001``); private-use
#: characters, taken out of the comment first, so a comment cannot forge one.
_MARK = re.compile("\ue000([0-9]+)\ue001")
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)(?:\s[^>]*)?>")
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.DOTALL)
#: The elements that, left open, put the text after them in something other than a
#: visible top-level paragraph: those GitHub's sanitiser keeps (a ``<details>`` collapses,
#: a ``<blockquote>`` quotes, a ``<pre>`` or ``<code>`` is code, a table cell ...) and
#: those whose content it drops (``<script>``, ``<style>`` ...).  A tag GitHub does not
#: know (``List<T>``) is dropped with its content shown: it opens nothing.
_CONTAINERS = frozenset(
    re.findall(
        r"\w+",
        """a abbr b bdo blockquote caption center cite code dd del details dfn div dl dt em
        figcaption figure font h1 h2 h3 h4 h5 h6 i iframe ins kbd li mark math noembed
        noframes noscript object ol p picture plaintext pre q rp rt ruby s samp script small
        span strike strong style sub summary sup svg table tbody td template textarea tfoot
        th thead time title tr tt u ul var video audio xmp""",
    )
)


def _track_html(html: str, open_elements: list[str]) -> None:
    """Update the HTML elements open at this point of the comment with ``html``."""
    for match in _TAG.finditer(_HTML_COMMENT.sub("", html)):
        name = match[2].lower()
        if match[1]:
            if name in open_elements:
                del open_elements[len(open_elements) - 1 - open_elements[::-1].index(name) :]
        elif name in _CONTAINERS and not match[0].endswith("/>"):
            open_elements.append(name)


def _visible_lines(
    inline: Token, open_elements: list[str], why: dict[int, str]
) -> Iterator[tuple[int, str]]:
    """The marked source lines that start a visible line of a top-level paragraph, each
    with its visible text; one inside HTML gets its reason in ``why`` instead."""
    line: list[Token] = []
    for child in [*(inline.children or ()), None]:
        if child is not None and child.type not in ("softbreak", "hardbreak"):
            line.append(child)
            continue
        first = line[0] if line else None
        mark = _MARK.match(first.content) if first is not None and first.type == "text" else None
        if mark is None:
            pass
        elif open_elements:
            why[int(mark[1])] = f"it is inside an HTML element (<{open_elements[-1]}>); {_NOT_OWN}"
        elif any(token.type == "html_inline" for token in line):
            why[int(mark[1])] = _IN_HTML
        else:
            yield int(mark[1]), _MARK.sub("", "".join(_shown(token) for token in line))
        for token in line:
            if token.type == "html_inline":
                _track_html(token.content, open_elements)
        line = []


def _shown(token: Token) -> str:
    if token.type == "code_inline":
        return f"{token.markup}{token.content}{token.markup}"
    return token.content if token.type == "text" else token.markup


def _structure(body: str) -> tuple[list[str], dict[int, str], dict[int, str]]:
    """The comment as GitHub renders it (CommonMark): its source lines, why a line holds
    no command (by the block it is in), and the lines that start a visible line of a
    top-level paragraph outside any HTML element, with their visible text."""
    lines = re.split(r"\r\n|\r|\n", body.replace("\ue000", "\ufffd").replace("\ue001", "\ufffd"))
    marked = []
    for n, line in enumerate(lines):
        rest = line.lstrip(" \t")
        if rest.lower().startswith(_PREFIX):
            line = f"{line[: len(line) - len(rest)]}\ue000{n}\ue001{rest}"
        marked.append(line)
    why: dict[int, str] = {}
    visible: dict[int, str] = {}
    containers: list[str] = []
    open_elements: list[str] = []
    for token in rendered.parser().parse("\n".join(marked)):
        if token.nesting == 1 and token.type != "paragraph_open":
            containers.append(token.type.removesuffix("_open"))
        elif token.nesting == -1 and token.type != "paragraph_close":
            containers.pop()
        if token.map is not None and token.nesting != -1:
            kinds = [*containers, token.type]
            reason = next((_BLOCKED[k] for k in _BLOCKED if k in kinds), None)
            if reason is None and open_elements:
                reason = f"it is inside an HTML element (<{open_elements[-1]}>); {_NOT_OWN}"
            for n in range(*token.map):
                why[n] = reason or (_NOT_START if kinds == ["inline"] else _NOT_OWN)
        if token.type == "html_block":
            _track_html(token.content, open_elements)
        elif token.type == "inline":
            if not containers:  # a top-level paragraph's text
                visible.update(_visible_lines(token, open_elements, why))
            for child in token.children or ():
                if child.type == "html_inline":
                    for mark in _MARK.finditer(child.content):
                        why[int(mark[1])] = _IN_HTML
    return lines, why, visible


def parse(body: str) -> list[Parsed]:
    """Every line of comment ``body`` that mentions ``/advreview``, parsed.

    A command counts only where GitHub shows it as a line of its own in a visible,
    unquoted, top-level paragraph (the comment is parsed as CommonMark, as GitHub renders
    it): not in a code block, a quote (lazy continuation lines included), a list, an
    HTML comment or element (``<details>``, ``<pre>``), nor mid-sentence.  A mention
    elsewhere is returned with why it is not a command, so the report can say so.  Lines
    that do not mention ``/advreview`` are not returned.
    """
    lines, why, visible = _structure(body)
    found: list[Parsed] = []
    for n, line in enumerate(lines):
        if _PREFIX not in line.lower():
            continue
        text = line.strip()[:_SHOWN]
        shown = visible.get(n)
        if shown is not None:
            found.append(_command(text, shown.strip()[len(_PREFIX) :].strip()))
        else:
            found.append(Parsed(text, None, f"not a command: {why.get(n, _NOT_SHOWN)}"))
    return found


def _command(text: str, rest: str) -> Parsed:
    """The command after ``/advreview``, or why it does not parse."""
    waive = _WAIVE.fullmatch(rest)
    decide = _DECIDE.fullmatch(rest)
    rounds = _ROUNDS.fullmatch(rest)
    budget = _BUDGET.fullmatch(rest)
    if waive:
        fields: dict[str, Any] = {"verb": "waive", "finding": waive[1], "reason": waive[3]}
        if waive[2]:  # AR-1a2b3c@<content id>: the code the waiver was decided on
            fields["content"] = waive[2].lower()
    elif decide:
        fields = {
            "verb": "decide",
            "finding": decide[1],
            "action": decide[2].lower(),
            "reason": decide[3],
        }
    elif rounds:
        fields = {"verb": "rounds", "rounds": int(rounds[1]), "reason": rounds[2]}
    elif budget:
        fields = {"verb": "budget", "tokens": int(budget[1]), "reason": budget[2]}
    else:
        return Parsed(text, None, f"not understood; {_GRAMMAR}")
    fields["reason"] = str(fields["reason"]).strip()
    if not fields["reason"]:
        return Parsed(text, None, f"has no reason after the colon; {_GRAMMAR}")
    if fields.get("rounds") == 0:
        return Parsed(text, None, "grants no rounds; write rounds +1 or more")
    if fields.get("tokens") == 0:
        return Parsed(text, None, "grants no tokens; write budget +1 or more")
    if "finding" in fields:
        fields["finding"] = f"AR-{str(fields['finding'])[3:].lower()}"
    return Parsed(text, fields)


#: Looks up a login's repository permission (``admin``, ``write``, ``read``...; ``None``:
#: none); raises :class:`LookupError` when it cannot tell.
PermissionLookup = Callable[[str], "str | None"]


def _bot(user: Mapping[str, Any]) -> bool:
    return str(user.get("type", "")) == "Bot" or str(user.get("login", "")).endswith("[bot]")


#: Why a command in an edited comment does not count.
EDITED = (
    "the comment was edited after it was posted, and GitHub does not say by whom; "
    "post the command in a new comment"
)


def _edited(comment: Mapping[str, Any]) -> bool:
    """Whether ``comment`` was changed after it was posted (GitHub keeps both times)."""
    created, updated = comment.get("created_at"), comment.get("updated_at")
    return bool(created and updated and updated != created)


def vet(comments: Iterable[Mapping[str, Any]], permission: PermissionLookup) -> CommandsFile:
    """The commands of ``comments`` (GitHub issue comments, oldest first) that count.

    :param comments: the REST API's issue comments of the pull request.
    :param permission: the repository permission of a login (asked once per commenter,
        and only of commenters who wrote a command).
    """
    commands: list[PullRequestCommand] = []
    ignored: list[IgnoredCommand] = []
    known: dict[str, str | None] = {}
    for comment in comments:
        user = comment.get("user") or {}
        login = str(user.get("login") or "")
        url = str(comment.get("html_url") or "") or None
        edited = _edited(comment)
        for item in parse(str(comment.get("body") or "")):
            if item.command is None and _bot(user):
                continue  # a bot's mention of a command (advice in a report) is no attempt
            if item.command is None:
                why: str | None = item.why
            else:
                why = EDITED if edited else _refused(user, login, known, permission)
            if why is None and item.command is not None:
                fields = {**item.command, "login": login, "permission": known[login], "url": url}
                commands.append(PullRequestCommand.model_validate(fields))
                continue
            finding = item.command.get("finding") if item.command is not None else None
            ignored.append(
                IgnoredCommand(
                    text=item.text,
                    by=f"@{login}" if login else "(unknown user)",
                    why=why or "",
                    finding=finding,
                    url=url,
                )
            )
    return CommandsFile(commands=tuple(commands), ignored=tuple(ignored))


def _refused(
    user: Mapping[str, Any],
    login: str,
    known: dict[str, str | None],
    permission: PermissionLookup,
) -> str | None:
    """Why a well-formed command of ``login`` does not count (``None``: it counts)."""
    if not login:
        return "the comment names no author"
    if _bot(user):
        return "commands from bots do not count; a person decides"
    if login not in known:
        try:
            known[login] = permission(login)
        except LookupError as exc:
            # One commenter the API cannot answer for decides nothing, and blocks nobody.
            return f"@{login}'s permission cannot be looked up ({exc}); the command does not count"
    level = known[login]
    if level not in ALLOWED:
        return (
            f"@{login} has {level or 'no'} permission on the repository; only users with "
            "write, maintain or admin permission decide findings"
        )
    return None


def load_commands(path: Path) -> CommandsFile:
    """Read the ``--advreview-commands`` file the Action wrote.

    :raises CommandsError: it is missing, unreadable, not JSON, or not a commands file.
    """
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CommandsError(
            path, "does not exist; pass the file the Action's commands step wrote"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandsError(path, f"cannot be read ({exc}); fix the path or the file") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CommandsError(path, f"is not JSON ({exc}); pass the Action's file") from None
    try:
        return CommandsFile.model_validate(data)
    except ValidationError as exc:
        raise CommandsError(
            path,
            f"is not a commands file: {first_error(exc, 'the file')}; pass the file the "
            "Action's commands step wrote (docs/deciding.md)",
        ) from None
