"""Pull-request commands: a person with authority decides findings from a comment.

The grammar (docs/deciding.md, "Commands"), one command per line, at the start of the
line::

    /advreview waive AR-1a2b3c: why it may pass
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
- a command in quoted text (``> ``), in a fenced code block, or not at the start of its
  line (inline code, a sentence that mentions one);
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

from pydantic import ValidationError

from ..models import CommandsFile, IgnoredCommand, PullRequestCommand

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
_WAIVE = re.compile(r"waive\s+(AR-[0-9a-fA-F]{6})\s*:\s*(.*)", re.IGNORECASE)
_DECIDE = re.compile(r"decide\s+(AR-[0-9a-fA-F]{6})\s+(accept|reject)\s*:\s*(.*)", re.IGNORECASE)
_ROUNDS = re.compile(r"rounds\s+\+(\d{1,2})\s*:\s*(.*)", re.IGNORECASE)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_GRAMMAR = (
    "write /advreview waive AR-1a2b3c: reason, /advreview decide AR-1a2b3c accept|reject: "
    "reason, or /advreview rounds +N: reason"
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
    :param command: the command's fields (``verb``, ``finding``, ``action``, ``rounds``,
        ``reason``), or ``None`` with ``why`` saying what is wrong.
    """

    text: str
    command: Mapping[str, Any] | None
    why: str = ""


def _lines(body: str) -> Iterator[tuple[str, str | None]]:
    """Each line of a comment with why it cannot hold a command (``None``: it can)."""
    fence: str | None = None
    for line in body.splitlines():
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            yield line, "it is inside a code block"
            continue
        if opened:
            fence = opened.group(1)
            yield line, "it is inside a code block"
            continue
        stripped = line.lstrip(" ")
        if stripped.startswith(">"):
            yield line, "it is quoted text (a reply quoting someone decides nothing)"
        elif line.startswith("    ") or line.startswith("\t"):
            yield line, "it is an indented code block"
        else:
            yield line, None


def parse(body: str) -> list[Parsed]:
    """Every line of comment ``body`` that mentions ``/advreview``, parsed.

    A command counts only at the start of a line of plain text; a mention elsewhere
    (quoted, in code, mid-sentence) is returned with why it is not a command, so the
    report can say so.  Lines that do not mention ``/advreview`` are not returned.
    """
    found: list[Parsed] = []
    for line, blocked in _lines(body):
        if _PREFIX not in line.lower():
            continue
        text = line.strip()[:_SHOWN]
        if blocked is not None:
            found.append(Parsed(text, None, f"not a command: {blocked}"))
            continue
        stripped = line.strip()
        if not stripped.lower().startswith(_PREFIX):
            found.append(
                Parsed(text, None, "not a command: a command starts its own line of plain text")
            )
            continue
        found.append(_command(text, stripped[len(_PREFIX) :].strip()))
    return found


def _command(text: str, rest: str) -> Parsed:
    """The command after ``/advreview``, or why it does not parse."""
    waive = _WAIVE.fullmatch(rest)
    decide = _DECIDE.fullmatch(rest)
    rounds = _ROUNDS.fullmatch(rest)
    if waive:
        fields: dict[str, Any] = {"verb": "waive", "finding": waive[1], "reason": waive[2]}
    elif decide:
        fields = {
            "verb": "decide",
            "finding": decide[1],
            "action": decide[2].lower(),
            "reason": decide[3],
        }
    elif rounds:
        fields = {"verb": "rounds", "rounds": int(rounds[1]), "reason": rounds[2]}
    else:
        return Parsed(text, None, f"not understood; {_GRAMMAR}")
    fields["reason"] = str(fields["reason"]).strip()
    if not fields["reason"]:
        return Parsed(text, None, f"has no reason after the colon; {_GRAMMAR}")
    if fields.get("rounds") == 0:
        return Parsed(text, None, "grants no rounds; write rounds +1 or more")
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
            why: str | None
            if item.command is None:
                why = item.why
            elif edited:
                why = EDITED
            else:
                why = _refused(user, login, known, permission)
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
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the file"
        raise CommandsError(
            path,
            f"is not a commands file: {where}: {first['msg']}; pass the file the Action's "
            "commands step wrote (docs/deciding.md)",
        ) from None
