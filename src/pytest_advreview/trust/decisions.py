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

Who decides what (docs/safety.md, "Authority over findings"): the file's entries are the
author's answers, sent to the reviewer as data (the reviewer still decides).  A finding the
lead left to a person is decided only by the operator: in a local run the file is the
operator's voice; under a gate (:attr:`.run.Trust.gated`) only the file as the **base** commit holds
it, read from git objects (:func:`load_at_commit`), never the branch's working tree.

Reasons: ``reject`` and ``re-scope`` need one (the reviewer is asked to weigh it; a
rejection without reasoning is just dismissal), ``accept`` may omit it (the "Applied"
diff shows what changed).

Two actions are a person's decisions, not answers sent to the reviewer (docs/deciding.md):
``waive`` (with a ``reason``) passes a blocking finding with a record in every report, and
``more-rounds`` (with ``rounds = N`` and a ``reason``, no ``finding``) raises the target's
round limit.  Under a gate they count only from the base commit's file; the branch's own
are ignored, and the reports say so.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from .._toml import tomllib
from ..git import GitError, commit, literal_pathspec, run_git, split_z
from ..models import (
    CommandsFile,
    Decision,
    DecisionAction,
    Finding,
    IgnoredCommand,
    RoundsGrant,
    Waiver,
    WireModel,
)
from ..targets import lexical_key

__all__ = [
    "CODE_TARGET",
    "Authority",
    "DecisionEntry",
    "DecisionsError",
    "DecisionsFile",
    "GateBase",
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


@dataclass(frozen=True)
class GateBase:
    """The base commit whose decisions file decides needs-operator findings under a gate.

    :param top: the top level of the trusted checkout (with ``--advreview-head``, the
        base's, not the head's).
    :param ref: the base as the run resolved it (``--advreview-base``, the CI base
        branch, ``origin/HEAD``, ``main``...); ``None`` when no base was found.
    """

    top: Path
    ref: str | None
    #: How messages name the base when ``ref`` is a commit id (``--advreview-head``'s base).
    name: str | None = None


#: Why the branch's own person decisions do not count under a gate.
_BRANCH_IGNORED = (
    "under a gate a decision in the branch's own decisions file is the author's, and "
    "only a person with authority waives or grants rounds: record it in the base "
    "branch's decisions file, or comment /advreview {verb} on the pull request as a "
    "user with write permission"
)


@dataclass(frozen=True)
class Authority:
    """Who decides what in one run (docs/safety.md, "Authority over findings"; docs/deciding.md).

    :param gated: a verdict of the run gates something (:attr:`.run.Trust.gated`).
    :param author: the author's answers, sent to the reviewer as data (the reviewer still
        decides); under a gate only the entries the checkout's file adds to the base's.
    :param operator: the decisions that close findings the lead left to a person: the
        same file in a local run, the base commit's under a gate.
    :param where: where the failure tells the operator to record a decision.
    :param waivers: the waivers that count, by target (``None``: a command, whose
        finding id names the finding on any target).
    :param grants: the grants of more rounds that count.
    :param decided: the operator's decisions made by pull-request commands (any target).
    :param ignored: decisions and commands that do not count, by target (``None``: any).
    """

    gated: bool
    author: DecisionsFile | None
    operator: DecisionsFile | None
    where: str
    waivers: tuple[tuple[str | None, Waiver], ...] = ()
    grants: tuple[RoundsGrant, ...] = ()
    #: Tokens a maintainer added to the token budget (``/advreview budget +N``).
    budget_tokens: int = 0
    decided: tuple[Decision, ...] = ()
    ignored: tuple[tuple[str | None, IgnoredCommand], ...] = ()
    #: The pull request the run is for (``None``: none).
    pull: int | None = None

    @classmethod
    def of(
        cls,
        path: Path,
        *,
        rootdir: Path,
        gated: bool,
        head: bool,
        base: GateBase | None,
        pull: int | None = None,
    ) -> Authority:
        """Read the decisions of a run whose decisions file is ``path``.

        :param head: ``--advreview-head``: the checkout is the base, the head is data, and
            REF's file is never read (the author has no entries).
        :param base: the run's base (``None`` or no ``ref``: none was found; under a gate
            no operator decision then counts, and the finding stays open).
        :param pull: the pull request the run is for (``--advreview-pull-request``, which
            the Action passes); ``None``: none, and only repository-wide waivers and
            grants hold.
        :raises DecisionsError: a file is invalid, the path lies outside the repository
            under a gate, the base's entry is a link, or git cannot read the base.
        """
        if not gated:
            return cls._local(load_decisions(path), pull)
        operator, where, shown = _at_base(path, rootdir, base)
        author = _added(None if head else load_decisions(path), operator)
        waivers, grants, elsewhere = _persons(operator, "base", f"the base branch ({shown})", pull)
        return cls(
            gated=True,
            author=author,
            operator=operator,
            where=where,
            waivers=waivers,
            grants=grants,
            ignored=(*_branch_ignored(author), *elsewhere),
            pull=pull,
        )

    @classmethod
    def _local(cls, own: DecisionsFile, pull: int | None) -> Authority:
        """A local run: the person running it decides, with their own file."""
        waivers, grants, elsewhere = _persons(own, "local", "local", pull)
        return cls(
            gated=False,
            author=own,
            operator=own,
            where=str(own.path),
            waivers=waivers,
            grants=grants,
            ignored=elsewhere,
            pull=pull,
        )

    def with_author(self, path: Path) -> Authority:
        """This authority with the author's file at ``path`` (a fixture's override); under
        a gate the operator's file stays the base's: no override moves it."""
        own = load_decisions(path)
        if not self.gated:
            local = Authority._local(own, self.pull)
            return replace(
                local,
                waivers=(*local.waivers, *((k, w) for k, w in self.waivers if k is None)),
                grants=(*local.grants, *(g for g in self.grants if g.target is None)),
                budget_tokens=self.budget_tokens,
                decided=self.decided,
                ignored=(*local.ignored, *((k, i) for k, i in self.ignored if k is None)),
            )
        author = _added(own, self.operator)
        kept = tuple((k, i) for k, i in self.ignored if k is None)
        return replace(self, author=author, ignored=(*_branch_ignored(author), *kept))

    def with_commands(self, commands: CommandsFile) -> Authority:
        """This authority with the pull request's vetted commands (``--advreview-commands``).

        The Action checked each author's permission; the ignored ones are kept to be
        reported on the targets whose findings they name (or on every target)."""
        waivers: list[tuple[str | None, Waiver]] = []
        grants: list[RoundsGrant] = []
        decided: list[Decision] = []
        budget = 0
        for command in commands.commands:
            by = f"@{command.login}"
            if command.verb == "waive" and command.finding:
                waiver = Waiver(
                    finding=command.finding,
                    by=by,
                    reason=command.reason,
                    source="command",
                    at=command.url,
                    content=command.content,
                    scope=self._pull_scope,
                )
                waivers.append((None, waiver))
            elif command.verb == "decide" and command.finding and command.action:
                decided.append(
                    Decision(
                        finding=command.finding,
                        action=DecisionAction(command.action),
                        reason=f"{command.reason} (decided by {by})",
                    )
                )
            elif command.verb == "rounds" and command.rounds:
                grant = RoundsGrant(
                    rounds=command.rounds,
                    by=by,
                    reason=command.reason,
                    source="command",
                    at=command.url,
                    scope=self._pull_scope,
                )
                grants.append(grant)
            elif command.verb == "budget" and command.tokens:
                budget += command.tokens
        return replace(
            self,
            waivers=(*self.waivers, *waivers),
            grants=(*self.grants, *grants),
            budget_tokens=self.budget_tokens + budget,
            decided=(*self.decided, *decided),
            ignored=(*self.ignored, *((None, i) for i in commands.ignored)),
        )

    @property
    def _pull_scope(self) -> str | None:
        # A command is the pull request's: the Action read it from that pull request.
        return f"pull request #{self.pull}" if self.pull is not None else None

    def waivers_for(self, key: str) -> tuple[Waiver, ...]:
        """The waivers on target ``key`` that count for this run (any content)."""
        return tuple(w for target, w in self.waivers if target in (None, key))

    def bound(
        self, key: str, content: Mapping[str, str]
    ) -> tuple[tuple[Waiver, ...], tuple[IgnoredCommand, ...]]:
        """The waivers of ``key`` that hold, and those that were for other code.

        A waiver holds while the finding's cited place has the content it was decided on
        (:func:`content_id`); the first that holds per finding counts.  A finding that
        has a waiver but none that holds is open again, and the waivers say why.

        :param content: finding id -> its content id now (the findings this run has).
        :returns: ``(held, stale)``.
        """
        held: dict[str, Waiver] = {}
        stale: dict[str, list[Waiver]] = {}
        for waiver in self.waivers_for(key):
            now = content.get(waiver.finding)
            if now is None or waiver.finding in held:
                continue
            if waiver.content == now:
                held[waiver.finding] = waiver
                stale.pop(waiver.finding, None)
            else:
                stale.setdefault(waiver.finding, []).append(waiver)
        return tuple(held.values()), tuple(
            _stale(waiver, content[finding]) for finding, found in stale.items() for waiver in found
        )

    def granted(self, key: str) -> tuple[RoundsGrant, ...]:
        """The grants of more rounds that count on target ``key``."""
        return tuple(g for g in self.grants if g.target in (None, key))

    def operator_decisions(self, key: str, *, with_file: bool = True) -> tuple[Decision, ...]:
        """The operator's decisions on ``key``: the operator's file's (unless
        ``with_file`` is false), then those made by command, which replace them."""
        own = self.operator.for_target(key) if with_file and self.operator is not None else ()
        commanded = {d.finding: d for d in self.decided}
        return (*(d for d in own if d.finding not in commanded), *commanded.values())

    def ignored_for(self, key: str, ids: Collection[str]) -> tuple[IgnoredCommand, ...]:
        """What did not count on ``key``: the branch's own entries on it, and ignored
        commands naming one of its finding ``ids`` (or no finding at all)."""
        return tuple(
            item
            for target, item in self.ignored
            if target == key or (target is None and (item.finding is None or item.finding in ids))
        )


def _stale(waiver: Waiver, now: str) -> IgnoredCommand:
    """Why ``waiver`` does not hold: it was for other code than the finding cites now."""
    fix = f"/advreview waive {waiver.finding}@{now}: reason"
    if waiver.content is None:
        why = (
            "a waiver holds only for the code it was decided on, and this one names none; "
            f"a person with authority comments `{fix}` (the content id is printed with the "
            "finding)"
        )
    else:
        at = f" at commit {waiver.commit[:12]}" if waiver.commit else ""
        why = (
            f"the waiver was for earlier code: it was decided on content {waiver.content}"
            f"{at}, and the finding's place now has content {now}; the finding is open "
            f'again: waive it anew (`{fix}`, or content = "{now}" in the base branch\'s '
            "entry) if the new code may pass"
        )
    return IgnoredCommand(
        text=f"waive {waiver.finding}"
        + (f"@{waiver.content}" if waiver.content else "")
        + f": {waiver.reason}",
        by=waiver.by,
        why=why,
        finding=waiver.finding,
        url=waiver.at if waiver.source == "command" else None,
    )


def _persons(
    decisions: DecisionsFile, source: Literal["base", "local"], by: str, pull: int | None
) -> tuple[
    tuple[tuple[str | None, Waiver], ...],
    tuple[RoundsGrant, ...],
    tuple[tuple[str | None, IgnoredCommand], ...],
]:
    """The waivers and grants of a decisions file that speaks for a person, for the pull
    request ``pull``; those for another pull request (or, with no pull request, for any)
    are kept as ignored, with why."""
    at = str(decisions.path)
    waivers: list[tuple[str | None, Waiver]] = []
    grants: list[RoundsGrant] = []
    elsewhere: list[tuple[str | None, IgnoredCommand]] = []
    for e in decisions.entries:
        if e.answer:
            continue
        if e.scope is None and e.pull != pull:
            now = (
                f"this run is for pull request #{pull}"
                if pull is not None
                else (
                    "this run names no pull request (the Action passes it as "
                    "--advreview-pull-request; a plain CI run has none)"
                )
            )
            what = f"waive {e.finding}" if e.finding else f"more-rounds +{e.rounds}"
            elsewhere.append(
                (
                    e.target,
                    IgnoredCommand(
                        text=f"{what}: {e.reason or ''}".strip(),
                        by=by,
                        why=(
                            f"the entry is for pull request #{e.pull}, and {now}; only an "
                            'entry with scope = "repository" holds for every run'
                        ),
                        finding=e.finding or None,
                    ),
                )
            )
            continue
        if e.action == "waive":
            waiver = Waiver(
                finding=e.finding,
                by=by,
                reason=e.reason or "",
                source=source,
                at=at,
                content=e.content,
                commit=e.commit,
                scope=e.scoped,
            )
            waivers.append((e.target, waiver))
        else:
            grants.append(
                RoundsGrant(
                    target=e.target,
                    rounds=e.rounds or 1,
                    by=by,
                    reason=e.reason or "",
                    source=source,
                    at=at,
                    scope=e.scoped,
                )
            )
    return tuple(waivers), tuple(grants), tuple(elsewhere)


def _branch_ignored(author: DecisionsFile | None) -> tuple[tuple[str | None, IgnoredCommand], ...]:
    """Under a gate: the branch's own waivers and grants, which do not count."""
    if author is None:
        return ()
    ignored: list[tuple[str | None, IgnoredCommand]] = []
    for e in author.entries:
        if e.answer:
            continue
        verb = f"waive {e.finding}: reason" if e.finding else "rounds +N: reason"
        what = e.finding or f"+{e.rounds}"
        item = IgnoredCommand(
            text=f"{e.action} {what}: {e.reason or ''}".strip(),
            by="the branch's decisions file",
            why=_BRANCH_IGNORED.format(verb=verb),
            finding=e.finding or None,
        )
        ignored.append((e.target, item))
    return tuple(ignored)


def _at_base(
    path: Path, rootdir: Path, base: GateBase | None
) -> tuple[DecisionsFile, str, str | None]:
    """Under a gate: the decisions file as the base commit holds it, where to record,
    and how the base is named (``main (1a2b3c4d5e6f)``; ``None``: no base was found)."""
    if base is None or base.ref is None:
        return (
            DecisionsFile(path=path),
            (
                f"{path} on the base branch (no base was found: pass --advreview-base=REF; "
                "under a gate the branch's own decisions file does not decide findings left "
                "to the operator)"
            ),
            None,
        )
    key = lexical_key(path, base.top, rootdir)
    if key is None:
        raise DecisionsError(
            path,
            f"lies outside the repository {base.top}, but under a gate (CI, "
            "--advreview-strict-exit, --advreview-head) the operator's decisions are read "
            "from the base commit; set advreview_decisions to a file inside the repository",
        )
    try:
        sha = commit(base.top, base.ref)
    except GitError as exc:
        raise DecisionsError(path, f"cannot be read from the base: {exc}") from None
    if sha is None:
        raise DecisionsError(
            path,
            f"cannot be read from the base {base.ref!r}, which is not a commit of "
            f"{base.top}; pass --advreview-base=REF (and fetch it)",
        )
    name = base.name or base.ref
    shown = name if name == sha else f"{name} ({sha[:12]})"
    return (
        load_at_commit(base.top, sha, key, shown=shown),
        (
            f"{key} on the base branch ({shown}: under a gate the branch's own decisions "
            "file does not decide findings left to the operator)"
        ),
        shown,
    )


def _added(checkout: DecisionsFile | None, base: DecisionsFile | None) -> DecisionsFile | None:
    """Under a gate, the branch's own answers: the entries its file adds to the base's.

    The base's entries are the operator's (on this and on other pull requests' findings);
    a merge checkout carries them too, and they must neither be checked as this branch's
    answers nor count as its own.
    """
    if checkout is None or base is None or not base.entries:
        return checkout
    own = tuple(e for e in checkout.entries if e not in base.entries)
    return DecisionsFile(path=checkout.path, entries=own)


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
