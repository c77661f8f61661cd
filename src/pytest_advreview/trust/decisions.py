"""The decisions file: what the author did with each finding, between CI runs.

Format (TOML; ini ``advreview_decisions``, default ``.advreview/decisions.toml``)::

    [[decision]]
    target = "docs/plans/x.md"   # or "code-review"
    finding = "AR-1a2b3c"        # the id printed in the failure
    action = "reject"            # accept | re-scope | reject
    reason = "Runs in one transaction; no partial write is possible."

A missing file means no decisions.  Every other problem is a :class:`DecisionsError`
that names the file, the entry (1-based, in file order),
the problem and the fix, so a typo never silently drops a decision.

This module is the format only (parse, model, check); who decides what with the entries
is :mod:`.authority`.  Under a gate the operator's file is read from git objects
(:func:`load_at_commit`), never the branch's working tree.

Reasons: ``reject`` and ``re-scope`` need one (the reviewer is asked to weigh it; a
rejection without reasoning is just dismissal), ``accept`` may omit it (the "Applied"
diff shows what changed).

Two actions are a person's decisions, not answers sent to the reviewer (docs/deciding.md):
``waive`` (with a ``reason``) passes a blocking finding with a record in every report, and
``more-rounds`` (with ``rounds = N`` and a ``reason``, no ``finding``) raises the target's
round limit.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from .._toml import tomllib
from ..git import GitError, literal_pathspec, run_git, split_z
from ..models import (
    Decision,
    DecisionAction,
    Finding,
    WireModel,
)

__all__ = [
    "CODE_TARGET",
    "DecisionEntry",
    "DecisionsError",
    "DecisionsFile",
    "check_known",
    "check_targets",
    "content_ids",
    "load_at_commit",
    "load_decisions",
]

#: The ``target`` of decisions on the code review item.
CODE_TARGET = "code-review"
#: A person's decisions (docs/deciding.md): never sent to the reviewer as an answer.
PersonAction = Literal["waive", "more-rounds"]
_ACTIONS = ", ".join((*(a.value for a in DecisionAction), "waive", "more-rounds"))
_FIELDS = ("target", "finding", "action", "reason", "rounds", "content", "commit", "pull", "scope")
_CONTENT = re.compile(r"[0-9a-f]{16}")
#: Where the entry format of a person's decision is told.
_FORMAT = 'docs/deciding.md, "What a waiver binds to"'
_ID = re.compile(r"AR-([0-9a-f]{6})", re.IGNORECASE)
_EXAMPLE = (
    '[[decision]]\ntarget = "docs/plans/x.md"\nfinding = "AR-1a2b3c"\n'
    'action = "reject"\nreason = "why the finding does not apply"'
)


class DecisionsError(Exception):
    """The decisions file cannot be used; the message names file, entry, problem and fix.

    Raise it to the user as ``pytest.UsageError(str(exc))`` (``UsageError`` is final).

    :param path: the decisions file.
    :param problem: what is wrong, including the fix.
    :param entry: 1-based number of the ``[[decision]]`` entry, ``None`` for the file.
    """

    def __init__(self, path: Path, problem: str, *, entry: int | None = None) -> None:
        self.entry = entry
        where = f"{path}: decision entry {entry}" if entry is not None else str(path)
        super().__init__(f"pytest-advreview: decisions file {where}: {problem}")


class _EntryProblem(ValueError):
    """A problem with one entry, already worded for the user."""


class DecisionEntry(WireModel):
    """One ``[[decision]]`` table, validated."""

    target: str
    finding: str
    action: DecisionAction | PersonAction
    reason: str | None = None
    #: ``more-rounds`` only: how many rounds it adds to the target's limit.
    rounds: int | None = None
    #: ``waive`` only: the content id of the code it was decided on (:func:`content_id`).
    content: str | None = None
    #: ``waive`` only, optional: the commit it was decided on (shown in messages).
    commit: str | None = None
    #: ``waive`` and ``more-rounds``: the pull request it is for...
    pull: int | None = None
    #: ...or ``"repository"``: every pull request and every run.
    scope: Literal["repository"] | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_finding(cls, data: Any) -> Any:
        # A grant of rounds is for the target, not for one finding.
        if isinstance(data, dict) and data.get("action") == "more-rounds":
            return {"finding": "", **data}
        return data

    @field_validator("target", "finding", "reason", "content", "commit", mode="before")
    @classmethod
    def _strip(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value

    @field_validator("target")
    @classmethod
    def _target(cls, value: str) -> str:
        # Keys are repo-relative posix paths; accept the ways people write them.
        value = value.replace("\\", "/")
        while value.startswith("./"):
            value = value[2:]
        if not value:
            raise _EntryProblem(
                f"'target' is empty; give the plan's repo-relative path "
                f'(target = "docs/plans/x.md") or target = "{CODE_TARGET}"'
            )
        return value

    @field_validator("content")
    @classmethod
    def _content(cls, value: str | None) -> str | None:
        return value.lower() if isinstance(value, str) else value

    @field_validator("finding")
    @classmethod
    def _finding(cls, value: str) -> str:
        match = _ID.fullmatch(value)
        # Ids are printed as AR-<lowercase hex>; a case slip should not be a mismatch.
        return f"AR-{match.group(1).lower()}" if match else value

    @model_validator(mode="after")
    def _reason(self) -> DecisionEntry:
        self._person()
        if self.reason:
            return self
        if self.action is DecisionAction.REJECT:
            raise _EntryProblem(
                f"action 'reject' on {self.finding} has no reason: rejections need reasons; "
                'add reason = "why the finding does not apply"'
            )
        if self.action is DecisionAction.RESCOPE:
            raise _EntryProblem(
                f"action 're-scope' on {self.finding} has no reason; "
                'add reason = "how the scope changed and why"'
            )
        return self.model_copy(update={"reason": None})

    def _person(self) -> None:
        """The checks of a person's decision (waive, more-rounds) and of ``rounds``."""
        verb = getattr(self.action, "value", self.action)
        if self.answer:
            given = [k for k in ("content", "commit", "pull", "scope") if getattr(self, k)]
            if given:
                raise _EntryProblem(
                    f"{', '.join(repr(k) for k in given)} belong only to a person's decision "
                    f"(waive, more-rounds); delete them from the {verb} entry"
                )
        if self.action == "more-rounds":
            if self.finding:
                raise _EntryProblem(
                    "action 'more-rounds' is for the whole target; delete finding = ..."
                )
            if self.rounds is None or self.rounds < 1:
                raise _EntryProblem(
                    "action 'more-rounds' needs how many: add rounds = 2 (a whole number, "
                    "at least 1)"
                )
            if not self.reason:
                raise _EntryProblem(
                    "action 'more-rounds' has no reason; add reason = \"why more rounds "
                    'are worth it"'
                )
            self._bound(str(verb))
            return
        if not self.finding:
            raise _EntryProblem(
                "'finding' is empty; copy the id printed in the failure (finding = \"AR-1a2b3c\")"
            )
        if self.rounds is not None:
            raise _EntryProblem(
                f"'rounds' belongs only to action 'more-rounds'; delete it from the "
                f"{getattr(self.action, 'value', self.action)} entry"
            )
        if self.action == "waive" and not self.reason:
            raise _EntryProblem(
                f"action 'waive' on {self.finding} has no reason: a waiver is a record of "
                'why the finding passes; add reason = "why it may pass"'
            )
        if self.action == "waive":
            self._bound(str(verb))

    def _bound(self, verb: str) -> None:
        """A waiver names the code it was decided on; a waiver or grant names what it is
        for: one pull request, or the whole repository (docs/deciding.md)."""
        what = f"action '{verb}'" + (f" on {self.finding}" if self.finding else "")
        if (self.pull is None) == (self.scope is None):
            raise _EntryProblem(
                f"{what} must name what it is for: add pull = 123 (the pull request it "
                'was decided for) or scope = "repository" (every pull request), not both; '
                f"an entry of the old format has neither ({_FORMAT})"
            )
        if self.pull is not None and self.pull < 1:
            raise _EntryProblem(f"{what}: pull = {self.pull} is no pull request number")
        if verb == "more-rounds":
            if self.content or self.commit:
                raise _EntryProblem(
                    "'content' and 'commit' belong to a waiver; delete them from the "
                    "more-rounds entry"
                )
            return
        if not self.content or not _CONTENT.fullmatch(self.content):
            raise _EntryProblem(
                f"{what} must name the code it was decided on: add content = "
                '"0123456789abcdef" (the content id the failure prints with the finding: '
                "copy its entry); a waiver holds only while the cited code is unchanged, and "
                f"an entry of the old format has no content ({_FORMAT})"
            )

    @property
    def scoped(self) -> str:
        """What a person's decision is for, in words."""
        return "the repository" if self.scope else f"pull request #{self.pull}"

    @property
    def answer(self) -> bool:
        """Whether this is an answer sent to the reviewer (accept, re-scope, reject)."""
        return isinstance(self.action, DecisionAction)

    def decision(self) -> Decision:
        """The :class:`Decision` sent to the reviewer (only of an :attr:`answer`)."""
        assert isinstance(self.action, DecisionAction), "a person's decision is no answer"
        return Decision(finding=self.finding, action=self.action, reason=self.reason)


@dataclass(frozen=True)
class DecisionsFile:
    """A parsed decisions file: its entries in file order."""

    path: Path
    entries: tuple[DecisionEntry, ...] = ()

    def for_target(self, key: str) -> tuple[Decision, ...]:
        """The decisions on target ``key`` (``docs/plans/x.md`` or ``code-review``)."""
        return tuple(e.decision() for e in self.entries if e.target == key and e.answer)

    @property
    def targets(self) -> frozenset[str]:
        """Every target some entry names."""
        return frozenset(e.target for e in self.entries)


def load_decisions(path: Path) -> DecisionsFile:
    """Read and validate the decisions file at ``path``.

    :param path: the file (absolute, or relative to the current directory).
    :returns: the entries; none when the file does not exist.
    :raises DecisionsError: the file is unreadable, not TOML, or an entry is invalid.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return DecisionsFile(path=path)
    except IsADirectoryError:
        raise DecisionsError(
            path, "is a directory, not a file; point advreview_decisions at a TOML file"
        ) from None
    except OSError as exc:
        raise DecisionsError(
            path, f"cannot be read ({exc.strerror or exc}); fix its permissions"
        ) from exc
    return _parse(path, raw)


def load_at_commit(top: Path, commit: str, key: str, *, shown: str) -> DecisionsFile:
    """The decisions file ``key`` as commit ``commit`` holds it, from git objects only.

    The working tree is never read: under a gate it is the branch's (or whatever an
    earlier step of the job wrote).  A symbolic link or a folder at ``key`` in the commit
    is refused rather than followed or skipped.

    :param top: the repository top level.
    :param commit: the base commit (a full id).
    :param key: the file, relative to ``top`` (:func:`~.targets.lexical_key`).
    :param shown: how messages name the commit (``origin/main (1a2b3c4d5e6f)``).
    :returns: the entries; none when the commit has no such file.
    :raises DecisionsError: the entry is a link or not a file, git failed, or the file is
        not a valid decisions file.
    """
    where = Path(f"{shown}:{key}")
    try:
        listed = run_git(top, "ls-tree", "-z", "--full-tree", commit, "--", literal_pathspec(key))
        rows = [row for row in split_z(listed.stdout) if row]
        if not rows:
            return DecisionsFile(path=where)
        meta, _, _name = rows[0].partition("\t")
        mode, kind, oid = meta.split()
        if mode == "120000":
            raise DecisionsError(
                where,
                "is a symbolic link in the base commit; the operator's decisions are read "
                "from the base commit's own file: commit the file itself in place of the link",
            )
        if kind != "blob":
            raise DecisionsError(
                where,
                f"is a {kind}, not a file, in the base commit; point "
                "advreview_decisions at a TOML file",
            )
        raw = run_git(top, "cat-file", "blob", oid).stdout
    except GitError as exc:
        raise DecisionsError(
            where, f"cannot be read from the base commit ({exc}); fetch the base's history"
        ) from None
    return _parse(where, raw)


def _parse(path: Path, raw: bytes) -> DecisionsFile:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecisionsError(
            path, f"is not UTF-8 (at offset {exc.start}); save it as UTF-8"
        ) from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DecisionsError(
            path, f"is not valid TOML: {exc}; fix the syntax (entries look like:\n{_EXAMPLE})"
        ) from exc
    return DecisionsFile(path=path, entries=_entries(path, data))


def _entries(path: Path, data: dict[str, Any]) -> tuple[DecisionEntry, ...]:
    unknown = sorted(k for k in data if k != "decision")
    if unknown:
        raise DecisionsError(
            path,
            f"unknown top-level key {', '.join(repr(k) for k in unknown)}; the file holds "
            "only [[decision]] tables",
        )
    tables = data.get("decision", [])
    if not isinstance(tables, list):
        raise DecisionsError(
            path, "'decision' must be an array of tables; write each entry as [[decision]]"
        )
    entries: list[DecisionEntry] = []
    seen: dict[tuple[str, str, int | None], int] = {}
    for number, table in enumerate(tables, start=1):
        if not isinstance(table, dict):
            raise DecisionsError(
                path, "is not a table; write each entry as [[decision]]", entry=number
            )
        try:
            entry = DecisionEntry.model_validate(table)
        except ValidationError as exc:
            # Every validation error of the entry, worded for a person editing the file.
            problems = dict.fromkeys(_describe(e, table) for e in exc.errors())
            raise DecisionsError(path, "; also ".join(problems), entry=number) from None
        first = seen.setdefault((entry.target, entry.finding, entry.pull), number)
        if first != number:
            what = f"the decision on {entry.finding}" if entry.finding else "'more-rounds'"
            raise DecisionsError(
                path,
                f"repeats {what} for {entry.target} (entry {first}); keep one entry per "
                + ("finding" if entry.finding else "target (add the rounds up)"),
                entry=number,
            )
        entries.append(entry)
    return tuple(entries)


def _describe(error: ErrorDetails, table: dict[str, Any]) -> str:
    field = str(error["loc"][0]) if error["loc"] else ""
    kind = error["type"]
    cause = error.get("ctx", {}).get("error")
    if isinstance(cause, _EntryProblem):
        return str(cause)
    if kind == "extra_forbidden":
        return f"unknown key {field!r}; allowed keys: {', '.join(_FIELDS)}"
    if kind == "missing":
        hint = {
            "target": f'the plan path or "{CODE_TARGET}"',
            "finding": 'the finding id, e.g. "AR-1a2b3c"',
            "action": _ACTIONS,
        }.get(field, "a string")
        return f"missing {field!r}; add {field} = ... ({hint})"
    if field == "action":
        return f"unknown action {table.get('action')!r}; use one of: {_ACTIONS}"
    return f"{field!r}: {error['msg']}; give a string"


def check_known(
    decisions: DecisionsFile,
    key: str,
    known_ids: Collection[str],
    path: Path | None = None,
) -> None:
    """Refuse decisions on target ``key`` whose finding id no stored round ever reported.

    With no known ids at all (no stored rounds: first run, fresh CI runner without the
    cache, ``--advreview-fresh``) nothing can be checked and nothing is sent, so this
    returns without error rather than breaking every run of a fresh machine.

    :param decisions: the parsed decisions file.
    :param key: the target (``docs/plans/x.md`` or ``code-review``).
    :param known_ids: ids of the findings of every stored round of ``key``.
    :param path: the file named in the error; defaults to ``decisions.path``.
    :raises DecisionsError: the first entry for ``key`` with an unknown finding id.
    """
    if not known_ids:
        return
    where = path if path is not None else decisions.path
    for number, entry in enumerate(decisions.entries, start=1):
        if entry.target == key and entry.finding and entry.finding not in known_ids:
            known = ", ".join(sorted(known_ids))
            raise DecisionsError(
                where,
                f"unknown finding id {entry.finding} for {key}; known: {known}. "
                "Copy the id from the failure output, or delete the entry if the finding "
                "is gone",
                entry=number,
            )


def check_targets(decisions: DecisionsFile, exists: Callable[[str], bool]) -> None:
    """Refuse an entry whose target is neither ``code-review`` nor a file that exists.

    A decision on a misspelt or moved plan would never reach any review: the finding it
    answers would stay open while its author believes it was answered.

    :param decisions: the parsed decisions file.
    :param exists: whether a repo-relative target is a file of the repository.
    :raises DecisionsError: the first entry with such a target.
    """
    for number, entry in enumerate(decisions.entries, start=1):
        if entry.target != CODE_TARGET and not exists(entry.target):
            raise DecisionsError(
                decisions.path,
                f"target {entry.target!r} is not a file of the repository (nor "
                f'"{CODE_TARGET}"); give the plan\'s path relative to the repository top '
                f'(target = "docs/plans/x.md"), or delete the entry if the plan is gone',
                entry=number,
            )


# -- what a waiver binds to ------------------------------------------------------------------

_HEADING = re.compile(r" {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def _section(plan: str, name: str) -> str | None:
    """The text of the plan's section headed ``name`` (to the next heading of its level or
    above), ``None`` when no heading is ``name``."""
    wanted = " ".join(name.lstrip("#").split()).lower()
    lines = plan.splitlines(keepends=True)
    for start, line in enumerate(lines):
        heading = _HEADING.fullmatch(line.rstrip("\n"))
        if heading is None or " ".join(heading[2].split()).lower() != wanted:
            continue
        level = len(heading[1])
        end = start + 1
        while end < len(lines):
            other = _HEADING.fullmatch(lines[end].rstrip("\n"))
            if other is not None and len(other[1]) <= level:
                break
            end += 1
        return "".join(lines[start:end])
    return None


def _lines(text: str, start: int, end: int | None) -> str:
    return "".join(text.splitlines(keepends=True)[start - 1 : end if end is not None else start])


def _file(root: Path, name: str) -> str:
    """The text of the reviewed file ``name`` under ``root``; a path that leaves the tree
    or names no file reads as a marker (the id still changes when that changes)."""
    top = root.resolve()
    path = (top / name).resolve()
    if not path.is_relative_to(top) or not path.is_file():
        return f"\0no file {name}\0"
    return path.read_bytes().decode("utf-8", errors="surrogateescape")


def _cited(finding: Finding, *, plan: str | None, root: Path | None, whole: str) -> str:
    """What ``finding`` cites, as the text a waiver of it is bound to: the cited lines of
    the plan or file, else the plan's section, else the whole file, else the whole
    target (``whole``: the plan, or the code change's content hash)."""
    where = finding.location
    if plan is not None:
        if where is not None and where.has_line and where.line_start is not None:
            return _lines(plan, where.line_start, where.line_end)
        if where is not None and where.section:
            found = _section(plan, where.section)
            if found is not None:
                return found
        return plan
    if where is None or not where.file or root is None:
        return whole
    text = _file(root, where.file)
    if where.has_line and where.line_start is not None:
        return _lines(text, where.line_start, where.line_end)
    return text


def content_ids(
    findings: Iterable[Finding], *, plan: str | None, root: Path | None, whole: str
) -> dict[str, str]:
    """Each finding's content id: what a waiver of it is bound to (docs/deciding.md).

    The SHA-256 (first 16 hex digits) of the finding's place and the text there now
    (:func:`_cited`).  A waiver holds only while its finding's content id is the one it
    names: when the author changes the cited lines, the section or the file, the
    finding is open again.

    :param plan: a plan target's text (``None``: the code change).
    :param root: the code change's reviewed tree (its files are read there).
    :param whole: what a finding without a place is bound to.
    """
    found: dict[str, str] = {}
    for finding in findings:
        text = _cited(finding, plan=plan, root=root, whole=whole)
        digest = hashlib.sha256(
            f"{finding.location or ''}\0{text}".encode(errors="surrogateescape")
        )
        found[finding.id] = digest.hexdigest()[:16]
    return found
