"""Who decides what in one run: the author, the operator, and a person with authority.

docs/safety.md, "Authority over findings"; docs/deciding.md.  The decisions file's
entries (:mod:`.decisions`, the format) are the author's answers, sent to the reviewer
as data.  A finding the lead left to a person is decided only by the operator: in a
local run the file is the operator's voice; under a gate (:attr:`.run.Trust.gated`) only
the file as the **base** commit holds it (:func:`.decisions.load_at_commit`), and the
pull request's commands the Action vetted.  Waivers and grants of more rounds count only
from those; the branch's own are ignored, and the reports say so.

The coordinator asks once per target (:meth:`Authority.for_target`) and gets one frozen
:class:`TargetAuthority`.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, cast

import pytest

from ..git import GitError, commit
from ..models import (
    CommandsFile,
    Decision,
    DecisionAction,
    IgnoredCommand,
    RoundsGrant,
    Waiver,
)
from ..targets import lexical_key
from .commands import CommandsError, load_commands
from .decisions import DecisionsError, DecisionsFile, load_at_commit, load_decisions
from .run import Settings, Trust

__all__ = ["Authority", "GateBase", "TargetAuthority", "of_run"]


def of_run(
    run_trust: Trust, config: pytest.Config, settings: Settings, base: GateBase | None
) -> Authority:
    """Who decides what in this run, chosen once and held by the run's trust (the
    session's coordinator and the fixture's get the same value): the decisions file
    ``settings`` name (under a gate the base's), with the pull request's commands the
    Action vetted (``--advreview-commands``, from the command line only).

    :raises pytest.UsageError: a file is invalid (:meth:`Authority.of`), or the commands
        came from the ini file's ``addopts``.
    """
    key: tuple[object, ...] = ("authority", run_trust.gated, settings.head is not None)
    key += (settings.decisions, base, settings.pull_request, settings.commands)
    if key in run_trust.held:
        return cast(Authority, run_trust.held[key])
    try:
        found = Authority.of(
            Path(settings.decisions),
            rootdir=Path(config.rootpath),
            gated=run_trust.gated,
            head=settings.head is not None,
            base=base,
            pull=settings.pull_request,
        )
        if settings.commands is not None:
            _from_command_line(config)
            found = found.with_commands(load_commands(Path(settings.commands)))
    except (DecisionsError, CommandsError) as exc:
        raise pytest.UsageError(str(exc)) from None
    run_trust.held[key] = found
    return found


def _from_command_line(config: pytest.Config) -> None:
    """Refuse ``--advreview-commands`` that only an ini file's ``addopts`` passed: the
    repository under review must not supply the maintainers' commands."""
    given = (*config.invocation_params.args, *os.environ.get("PYTEST_ADDOPTS", "").split())
    if not any(str(a).split("=", 1)[0] == "--advreview-commands" for a in given):
        raise pytest.UsageError(
            "pytest-advreview: --advreview-commands came from the ini file's addopts, which "
            "the repository under review writes; the maintainers' commands count only from "
            "the command line (the Action passes them): remove it from addopts"
        )


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
            if command.verb == "decide" and command.finding and command.action:
                decided.append(
                    Decision(
                        finding=command.finding,
                        action=DecisionAction(command.action),
                        reason=f"{command.reason} (decided by {by})",
                    )
                )
            elif command.verb == "budget" and command.tokens:
                budget += command.tokens
            elif (command.verb == "waive" and command.finding) or (
                command.verb == "rounds" and command.rounds
            ):
                _person(
                    waivers,
                    grants,
                    None,
                    finding=(command.finding or "") if command.verb == "waive" else "",
                    rounds=command.rounds or 0,
                    by=by,
                    reason=command.reason,
                    source="command",
                    at=command.url,
                    content=command.content,
                    scope=self._pull_scope,
                )
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

    def for_target(self, key: str) -> TargetAuthority:
        """What this authority says of target ``key``, in one frozen answer: what is sent
        to the reviewer, waived, granted, and the operator's decisions."""
        operator = self.operator_decisions(key)
        commanded = tuple({d.finding: d for d in self.decided}.values())
        return TargetAuthority(
            key=key,
            where=self.where,
            answers=self.author.for_target(key) if self.author is not None else (),
            operator=operator,
            # Locally the operator's file is the author's: only commands add to it.
            sent=operator if self.operator is not self.author else commanded,
            waivers=self.waivers_for(key),
            grants=self.granted(key),
            ignored=tuple((t, i) for t, i in self.ignored if t in (None, key)),
        )

    def waivers_for(self, key: str) -> tuple[Waiver, ...]:
        """The waivers on target ``key`` that count for this run (any content)."""
        return tuple(w for target, w in self.waivers if target in (None, key))

    def bound(
        self, key: str, content: Mapping[str, str]
    ) -> tuple[tuple[Waiver, ...], tuple[IgnoredCommand, ...]]:
        """:meth:`TargetAuthority.bound` of target ``key``."""
        return self.for_target(key).bound(content)

    def granted(self, key: str) -> tuple[RoundsGrant, ...]:
        """The grants of more rounds that count on target ``key``."""
        return tuple(g for g in self.grants if g.target in (None, key))

    def operator_decisions(self, key: str) -> tuple[Decision, ...]:
        """The operator's decisions on ``key``: the operator's file's, then those made by
        command, which replace them."""
        own = self.operator.for_target(key) if self.operator is not None else ()
        commanded = {d.finding: d for d in self.decided}
        return (*(d for d in own if d.finding not in commanded), *commanded.values())

    def ignored_for(self, key: str, ids: Collection[str]) -> tuple[IgnoredCommand, ...]:
        """:meth:`TargetAuthority.ignored_for` of target ``key``."""
        return self.for_target(key).ignored_for(ids)


@dataclass(frozen=True)
class TargetAuthority:
    """What the authority says of one target (:meth:`Authority.for_target`).

    :param where: where the failure tells the operator to record a decision.
    :param answers: the author's answers on the target, sent to the reviewer as data.
    :param operator: the operator's decisions on it (the operator's file's, then those
        made by command, which replace them): they close findings left to a person.
    :param sent: the operator's decisions sent to the reviewer with the author's answers
        (in a local run the file is the author's, so only the commands').
    :param waivers: the waivers on it that count for this run (any content: :meth:`bound`).
    :param grants: the grants of more rounds on it that count.
    :param ignored: decisions and commands that did not count, by target (``None``: any).
    """

    key: str
    where: str
    answers: tuple[Decision, ...] = ()
    operator: tuple[Decision, ...] = ()
    sent: tuple[Decision, ...] = ()
    waivers: tuple[Waiver, ...] = ()
    grants: tuple[RoundsGrant, ...] = ()
    ignored: tuple[tuple[str | None, IgnoredCommand], ...] = ()

    @property
    def rounds_granted(self) -> int:
        """The rounds a person added to the target's limit."""
        return sum(g.rounds for g in self.grants)

    def bound(
        self, content: Mapping[str, str]
    ) -> tuple[tuple[Waiver, ...], tuple[IgnoredCommand, ...]]:
        """The waivers that hold, and those that were for other code.

        A waiver holds while the finding's cited place has the content it was decided on
        (:func:`~.decisions.content_ids`); the first that holds per finding counts.  A
        finding that has a waiver but none that holds is open again, and the waivers say
        why.

        :param content: finding id -> its content id now (the findings this run has).
        :returns: ``(held, stale)``.
        """
        held: dict[str, Waiver] = {}
        stale: dict[str, list[Waiver]] = {}
        for waiver in self.waivers:
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

    def ignored_for(self, ids: Collection[str]) -> tuple[IgnoredCommand, ...]:
        """What did not count: the branch's own entries on the target, and ignored
        commands naming one of its finding ``ids`` (or no finding at all)."""
        return tuple(
            item
            for target, item in self.ignored
            if target == self.key
            or (target is None and (item.finding is None or item.finding in ids))
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
        _person(
            waivers,
            grants,
            e.target,
            finding=e.finding,
            rounds=e.rounds or 1,
            by=by,
            reason=e.reason or "",
            source=source,
            at=at,
            content=e.content,
            commit=e.commit,
            scope=e.scoped,
        )
    return tuple(waivers), tuple(grants), tuple(elsewhere)


def _person(
    waivers: list[tuple[str | None, Waiver]],
    grants: list[RoundsGrant],
    target: str | None,
    *,
    finding: str,
    rounds: int,
    by: str,
    reason: str,
    source: Literal["base", "local", "command"],
    at: str | None,
    content: str | None,
    scope: str | None,
    commit: str | None = None,
) -> None:
    """Add a person's waiver of ``finding`` (or, with no finding, their grant of
    ``rounds`` more rounds) on ``target`` (``None``: any) to ``waivers`` or ``grants``:
    one construction for an entry of a decisions file and for a vetted command."""
    if finding:
        waiver = Waiver(
            finding=finding,
            by=by,
            reason=reason,
            source=source,
            at=at,
            content=content,
            commit=commit,
            scope=scope,
        )
        waivers.append((target, waiver))
    else:
        grant = RoundsGrant(
            target=target, rounds=rounds, by=by, reason=reason, source=source, at=at, scope=scope
        )
        grants.append(grant)


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
