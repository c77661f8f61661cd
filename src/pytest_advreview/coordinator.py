"""Rounds across runs: stored state, the decisions file and the token budget.

A CI run usually has nobody to apply fixes, so rounds span runs (docs/rounds.md, "Rounds across
runs (CI)").  For every target the coordinator reads its stored state, decides with
:func:`~pytest_advreview.state.decide_next` whether the stored verdict stands (zero
reviewer calls), the next round is due (resume on the stored thread with the decisions
file's entries), or the round limit is spent, runs the review when one is due, and
stores the result.
"""

from __future__ import annotations

import copy
import json
import os
import threading
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from . import cachekey, interdiff, targets
from .atomic import write_atomic
from .cachekey import cache_key, reviewer_identity
from .lead.session import LeadTurns
from .loop import FixFailed, LoopResult
from .material import ReviewInputError, ReviewMaterial, TargetSpec
from .models import (
    Changed,
    ChangeSet,
    Decision,
    Finding,
    LeadAction,
    OpenFinding,
    Operation,
    Review,
    ReviewedChange,
    ReviewStatus,
    RoundRecord,
    Severity,
)
from .options import BY_FIELD
from .pricing import money
from .prompts import applied_text, operator_open_decision
from .record import priced
from .review import ReviewRun
from .state import NextStep, ReviewState, Spend, StateStore, StateWarning, decide_next
from .trust import authority
from .trust import run as trust
from .trust.authority import GateBase, TargetAuthority
from .trust.decisions import (
    CODE_TARGET,
    DecisionsError,
    DecisionsFile,
    check_known,
    check_targets,
    content_ids,
)

if TYPE_CHECKING:
    from .models import ItemRecord
    from .outcome import Outcome
    from .settings import Settings

__all__ = ["Coordinator", "Due", "Rounds", "TokenLedger"]


class TokenLedger:
    """The run's token total, shared by every xdist worker through one directory.

    Each process keeps its own file (``tokens-<pid>.json``, replaced atomically), and the
    total is the sum of all files: no locks, and no process ever writes another's file.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._mine = directory / f"tokens-{os.getpid()}.json"
        self._spent = 0
        self._cost = 0.0
        # Reviews side by side (--advreview-jobs) add from several threads: an older
        # total must never replace a newer one.
        self._lock = threading.Lock()

    def add(self, tokens: int, cost: float | None = None) -> None:
        """Record ``tokens`` (and the money they cost) used by this process."""
        with self._lock:
            self._spent += tokens
            self._cost += cost or 0.0
            self.directory.mkdir(parents=True, exist_ok=True)
            write_atomic(self._mine, json.dumps({"tokens": self._spent, "cost": self._cost}))

    def spent(self) -> tuple[int, float]:
        """Tokens and money used so far by every process of the run."""
        tokens, cost = 0, 0.0
        for path in self.directory.glob("tokens-*.json"):
            try:
                data = json.loads(path.read_text())
                tokens += int(data["tokens"])
                cost += float(data.get("cost", 0.0))
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                continue  # a file being replaced right now; the next check sees it
        return tokens, cost


class Coordinator:
    """One target's stored verdict, rounds and save (the engine's steps 2, 3 and 5), with
    the stored state, the decisions file and the run's token budget."""

    def __init__(
        self,
        config: pytest.Config,
        settings: Settings,
        run_dir: Path,
        *,
        run_secret: bytes | None = None,
        base: GateBase | None = None,
    ) -> None:
        """:param run_secret: the secret of this run's state tags (shared by xdist workers).
        :param base: the run's base, whose decisions file decides needs-operator findings
            under a gate (found here from the settings when not given).
        """
        self.config = config
        self.settings = settings
        self.store = StateStore(config, run_secret=run_secret)
        self.ledger = TokenLedger(run_dir)
        #: What every earlier run of the pull request spent (read on the first check).
        self._prior: tuple[int, float] | None = None
        #: Who reviews in this run; a stored verdict of another reviewer never counts.
        #: Whether the run gates (decided once, at configure).
        self.trust = trust.of_run(config, settings)
        self.identity = reviewer_identity(settings, run_trust=self.trust)
        # Each state is read once per run (collection reads it for the severity markers).
        self._loaded: dict[str, ReviewState | None] = {}
        #: Why a stored entry was not used, warned once, by the item that reviews it (so
        #: xdist workers, which all collect every item, do not each warn).
        self._problems: dict[str, str] = {}
        #: Target -> finding id -> its content id in this run (:meth:`bind`).
        self._content: dict[str, dict[str, str]] = {}
        self.decisions_path = Path(settings.decisions)
        if self.trust.gated and base is None:
            base = _find_base(config, settings)
        #: Who decides what: the author's answers (sent to the reviewer as data), the
        #: operator's decisions (they close needs-operator findings; under a gate the base
        #: commit's file) and where the failure tells the operator to record one.
        self.authority = authority.of_run(self.trust, config, settings, base)
        #: The authority's one answer per target (:meth:`for_target`).
        self._answers: dict[str, TargetAuthority] = {}
        #: The verdicts this run's rounds gave, by target and cache key: a later review of
        #: the same content by the same reviewer in the run (a rerun of a test that asks
        #: the fixture) gets the same verdict, also under --advreview-fresh.  Shared with
        #: the copies for_settings makes.
        self._this_run: dict[str, LoopResult] = {}

    @property
    def decisions(self) -> DecisionsFile | None:
        """The author's answers: sent to the reviewer, checked against the targets."""
        return self.authority.author

    def for_target(self, key: str) -> TargetAuthority:
        """What the authority says of target ``key``: asked once per target."""
        if key not in self._answers:
            self._answers[key] = self.authority.for_target(key)
        return self._answers[key]

    def for_settings(self, settings: Settings) -> Coordinator:
        """This coordinator for one review with other settings (a fixture's overrides).

        The store, the token ledger and the states read so far are shared, so the review
        is judged from the same stored state and counts against the same budget; the
        reviewer identity follows the settings, and so does the decisions file.
        """
        if settings == self.settings:
            return self
        other = copy.copy(self)
        other.settings = settings
        other.trust = self.trust.for_settings(settings)
        other.identity = reviewer_identity(settings, run_trust=other.trust)
        if Path(settings.decisions) != self.decisions_path:
            other.decisions_path = Path(settings.decisions)
            try:
                other.authority = self.authority.with_author(other.decisions_path)
            except DecisionsError as exc:
                raise pytest.UsageError(str(exc)) from None
            other._answers = {}
        return other

    def check_decisions(self, repo_root: Path) -> None:
        """Refuse decisions on targets that do not exist or findings they never had.

        Run once per run, before any review, so a wrong entry is a usage error naming it
        instead of an error of one item (or nothing at all, for a target nobody reviews).

        Also refuses a run while a plan that is gone (deleted, renamed) still has findings
        the lead left to the operator: renaming the plan must not re-roll them away.  The
        decisions on them stay valid (and needed) while the plan's entry is stored.

        :param repo_root: the repository top level, which targets are relative to.
        :raises DecisionsError: the first wrong entry, or a gone plan's open findings.
        """
        gone = {
            key: state
            for key, state in self.store.open_states().items()
            if key != CODE_TARGET and not (repo_root / key).is_file()
        }
        if gone:
            self._check_gone(gone)
        if self.decisions is None or not self.decisions.entries:
            return
        check_targets(self.decisions, lambda key: key in gone or (repo_root / key).is_file())
        for key in sorted(self.decisions.targets):
            state = self.stored(key)
            if state is not None:
                check_known(self.decisions, key, state.known_finding_ids, self.decisions_path)

    def _check_gone(self, gone: dict[str, ReviewState]) -> None:
        """Refuse open findings of plans that no longer exist and nobody decided."""
        for key in sorted(gone):
            decided = self._decided(key)
            still = [o for o in gone[key].operator_open if o.finding.id not in decided]
            if not still:
                continue
            listed = "; ".join(
                f"{o.finding.line()} (after round {o.round}: {o.reason or 'no reason'})"
                for o in still
            )
            first = still[0].finding.id
            raise DecisionsError(
                self.decisions_path,
                f"the plan {key} no longer exists, but findings the lead left to the "
                f"operator on it are still open: {listed}. A deleted or renamed plan does "
                "not take them along. Fix: record the operator's decision on each in "
                f'{self.for_target(key).where} ([[decision]] target = "{key}", finding = '
                f'"{first}", action = "accept", "re-scope" or "reject" with a reason)',
            )

    def stored(self, key: str) -> ReviewState | None:
        """The stored state of ``key`` (``None`` with ``--advreview-fresh``)."""
        return None if self.settings.fresh else self._read(key)

    def _read(self, key: str) -> ReviewState | None:
        """The stored state of ``key``, also under ``--advreview-fresh``."""
        if key not in self._loaded:
            state, problem = self.store.read(key)
            self._loaded[key] = state
            if problem is not None:
                self._problems[key] = problem
        return self._loaded[key]

    def operator_open(self, key: str) -> tuple[OpenFinding, ...]:
        """Findings of ``key`` left to the operator that the decisions file does not decide.

        Read also under ``--advreview-fresh``: starting the reviewer's rounds over does not
        answer a question put to a person.
        """
        state = self._read(key)
        if state is None or not state.operator_open:
            return ()
        decided = self._decided(key)
        return tuple(o for o in state.operator_open if o.finding.id not in decided)

    def _decided(self, key: str) -> frozenset[str]:
        """Ids the operator has decided for target ``key`` (under a gate: the base's file,
        or a command), and those a person with authority waived."""
        decided = {d.finding for d in self.for_target(key).operator}
        return frozenset(decided | self.waived(key))

    def waived(self, key: str) -> frozenset[str]:
        """Ids of the findings of ``key`` a person with authority waived, on the code each
        cites now (:meth:`bind`): a waiver for earlier code does not hold."""
        held, _stale = self.for_target(key).bound(self._content.get(key, {}))
        return frozenset(w.finding for w in held)

    def bind(
        self,
        spec: TargetSpec,
        material: ReviewMaterial,
        findings: Iterable[Finding],
        root: Path | None,
    ) -> None:
        """Learn the content ids of ``findings`` of ``spec``'s target (the content a waiver
        of each is bound to: :func:`~.decisions.content_ids`), from ``material`` and, for
        the code change, the reviewed tree ``root``."""
        plan = material.content if spec.kind == "plan" else None
        ids = content_ids(
            findings,
            plan=plan,
            root=None if plan is not None else root,
            whole=plan if plan is not None else material.content_hash,
        )
        self._content.setdefault(spec.key, {}).update(ids)

    def content(self, key: str) -> dict[str, str]:
        """The content ids of ``key``'s findings learnt so far (:meth:`bind`)."""
        return dict(self._content.get(key, {}))

    def max_rounds(self, key: str) -> int:
        """The round limit of ``key``: ``max-rounds`` plus the rounds a person granted."""
        return self.settings.max_rounds + self.for_target(key).rounds_granted

    def _sent(self, key: str, state: ReviewState | None) -> tuple[Decision, ...]:
        """The decisions sent to the reviewer on ``key``: the author's answers, and under
        a gate the operator's (the base's file) on findings this target has had, which
        replace an answer of the author's on the same finding."""
        answer = self.for_target(key)
        author, operator = answer.answers, answer.sent
        if not operator:
            return author
        known = state.known_finding_ids if state is not None else frozenset()
        decided = {d.finding: d for d in operator if d.finding in known}
        return (*(d for d in author if d.finding not in decided), *decided.values())

    def decided_record(self, record: ItemRecord, outcome: Outcome) -> ItemRecord:
        """``record`` with what people decided on its target: the waivers of findings it
        has (its findings, and those left to the operator), the rounds granted, and the
        decisions and commands that did not count."""
        key = record.key
        state = self._read(key)
        ids = {f.id for f in record.findings} | {
            o.finding.id for o in (state.operator_open if state is not None else ())
        }
        ids |= {f.id for f in outcome.waived}
        content = {k: v for k, v in self._content.get(key, {}).items() if k in ids}
        answer = self.for_target(key)
        held, stale = answer.bound(content)
        return record.model_copy(
            update={
                "waived": held,
                "rounds_granted": answer.rounds_granted,
                "ignored": (*answer.ignored_for(ids), *stale),
            }
        )

    def change_note(self, key: str, change: ChangeSet | None) -> str | None:
        """How ``change`` differs from the change the stored rounds of ``key`` reviewed
        (``None``: the same, nothing stored, or no change set)."""
        state = self.stored(key)
        if change is None or state is None or state.change is None or not state.rounds:
            return None
        return state.change.differs(ReviewedChange.of(change))

    def stored_severity(self, key: str) -> str | None:
        """The max severity of the last stored review when it asked for revision."""
        state = self.stored(key)
        if state is None or state.last_verdict is None or state.last_verdict.value != "REVISE":
            return None
        severity = state.max_severity
        return severity.value if severity is not None else None

    def stored_verdict(
        self,
        spec: TargetSpec,
        material: ReviewMaterial,
        *,
        fixer_hook: bool,
        root: Path | None = None,
    ) -> Due:
        """What the stored state says of the target ``spec`` names, whose material is
        ``material``: the verdict stands (cached, the round limit spent, the run's budget
        spent), or which rounds are due.

        :param fixer_hook: a plugin fixes (``pytest_advreview_fix``): the built-in lead
            takes up no stored REVISE review.
        :param root: the work tree of the code change: a re-review of it is shown the
            interdiff since the commit reviewed last (:mod:`.interdiff`).

        :raises ReviewInputError: a decisions-file entry that names a finding this target
            never had.
        """
        key = spec.key
        reviewed = self._this_run.get(self._run_key(key, material.content_hash))
        if reviewed is not None:
            # One verdict per target per run: a second sample of the reviewer never
            # replaces the first (docs/safety.md).
            return Due(stands=reviewed)
        too_large = self._too_large(spec, root)
        if too_large is not None:
            return Due(stands=LoopResult(status=ReviewStatus.TOO_LARGE, error=too_large))
        spent = self._budget_spent()
        if spent is not None:
            return Due(stands=LoopResult(status=ReviewStatus.BUDGET_EXHAUSTED, error=spent))
        state = self.stored(key)
        opened = self._read(key)
        if opened is not None and opened.operator_open:
            # What the findings left to a person cite now: a waiver of one is bound to it.
            self.bind(spec, material, (o.finding for o in opened.operator_open), root)
        problem = self._problems.pop(key, None)
        if problem is not None:
            # Attributed to the entry file: that is what the user inspects or deletes.
            where = self.store.path_for(key)
            warnings.warn_explicit(
                StateWarning(problem), StateWarning, filename=str(where or key), lineno=1
            )
        if state is not None and self.decisions is not None:
            try:
                check_known(self.decisions, key, state.known_finding_ids, self.decisions_path)
            except DecisionsError as exc:
                raise ReviewInputError(str(exc)) from None
        step = self._next_step(key, state, material)
        if step.action in ("cached_approved", "cached_revise", "max_rounds"):
            assert state is not None
            stands = self._with_open(
                LoopResult(
                    status=ReviewStatus.MAX_ROUNDS
                    if step.action == "max_rounds"
                    else ReviewStatus.CACHED,
                    review=step.review,
                    session_id=state.session_id,
                    last_round=state.rounds_used,
                    # A cached approval is a pass, not a pass with a warning: the summary's
                    # "cached" line says why no reviewer was asked.
                    warnings=() if step.action == "cached_approved" else (step.reason,),
                ),
                self.operator_open(key),
            )
            if step.action == "cached_revise" and step.review is not None and not fixer_hook:
                # The built-in lead (when one was asked for) takes up the stored REVISE
                # review instead of the run failing from cache, and the reviewer
                # re-reviews its fixes.  A fixer hook fixes only in the rounds.
                return Due(stands=stands, history=state.rounds, lead_on=(state, step.review))
            return Due(stands=stands, history=state.rounds)
        applied = None
        changed: Changed | None = None
        if step.action == "continue" and state is not None and state.last_content is not None:
            applied = applied_text(spec.kind, key, state.last_content, material.content)
            if (
                root is not None
                and spec.change is not None
                and state.change is not None
                and material.reviewed is not None
                and state.last_content_hash != material.content_hash
            ):
                # The code change: what changed since the commit reviewed last (the
                # interdiff), not the whole change again.
                shown = interdiff.since(
                    root,
                    state.change,
                    material.reviewed,
                    spec.change,
                    round_no=state.rounds_used,
                )
                applied, changed = shown.text, shown.changed
            differs = self.change_note(key, spec.change)
            if differs is not None:
                # The earlier rounds judged other files: the reviewer must know.
                applied = f"Note: {differs}.\n\n{applied or ''}".rstrip("\n")
        return Due(
            decisions=tuple(step.decisions),
            history=step.history,
            applied=applied,
            changed=changed,
        )

    def _next_step(self, key: str, state: ReviewState | None, material: ReviewMaterial) -> NextStep:
        """What :func:`~.state.decide_next` says of ``key``'s stored state for ``material``."""
        return decide_next(
            state,
            cache_key(self.identity, material.content_hash, self._sent(key, state)),
            max_rounds=self.max_rounds(key),
            fresh=self.settings.fresh,
        )

    def needs_reviewer(self, spec: TargetSpec, material: ReviewMaterial) -> bool:
        """Whether the review of ``spec``'s target (whose material is ``material``) may
        start the reviewer or the lead: ``False`` only when its stored verdict stands
        (:meth:`stored_verdict`'s cache hit), read without its effects (no warning, no
        binding).  A guess made after collection: the review itself decides again."""
        state = self.stored(spec.key)
        action = self._next_step(spec.key, state, material).action
        if action == "cached_approved":
            return False
        # A stored REVISE: the built-in lead (when one is asked for) takes it up.
        return action not in ("cached_revise", "max_rounds") or self.settings.lead != "none"

    def _budget_spent(self) -> str | None:
        """Why no review may start: a budget is spent (``None``: none is).

        With ``advreview_budget_scope = pull-request`` what every earlier run of the pull
        request spent counts too (kept with the rounds' state, read once per process).
        """
        limits = self.settings
        if limits.budget_tokens is None and limits.budget_money is None:
            return None
        tokens, cost = self.ledger.spent()
        whose = "this run's reviews"
        if limits.budget_scope == "pull-request":
            if self._prior is None:
                self._prior = self.store.spent()
            tokens, cost = tokens + self._prior[0], cost + self._prior[1]
            whose = "the pull request's reviews (this run and the earlier runs stored)"
        granted = self.authority.budget_tokens
        command = ""
        if limits.budget_tokens is not None and tokens >= limits.budget_tokens + granted:
            spec, used = BY_FIELD["budget_tokens"], f"{tokens} tokens"
            budget = str(limits.budget_tokens)
            if granted:
                budget += f" + {granted} granted by /advreview budget"
            command = "comments `/advreview budget +TOKENS: reason` on the pull request, "
        elif limits.budget_money is not None and cost >= limits.budget_money:
            spec, budget, used = BY_FIELD["budget_money"], f"{limits.budget_money:g}", money(cost)
        else:
            return None
        return (
            f"{whose} spent {used}, which reaches the budget {spec.ini_key} = {budget}, "
            f"before this review started; nothing was reviewed. To raise it, a maintainer "
            f"{command}sets a higher {spec.ini_key} in the base branch's pytest "
            f"configuration (under a gate this branch's does not count) or passes "
            f"{spec.option} in the workflow"
        )

    def _too_large(self, spec: TargetSpec, root: Path | None) -> str | None:
        """Why the code change is too large to review (``None``: it is not, or no limit
        is set): a review that cannot have read the change is no verdict on it."""
        limits, change = self.settings, spec.change
        if change is None or (limits.max_change_files is None and limits.max_change_lines is None):
            return None
        files = len(change.files)
        if limits.max_change_files is not None and files > limits.max_change_files:
            spec_, size = BY_FIELD["max_change_files"], f"{files} files"
            limit = limits.max_change_files
        else:
            if limits.max_change_lines is None or root is None:
                return None
            try:
                lines = cachekey.changed_lines(root, change)
            except cachekey.CacheKeyError as exc:
                raise ReviewInputError(str(exc)) from None
            if lines <= limits.max_change_lines:
                return None
            spec_, size = BY_FIELD["max_change_lines"], f"{lines} changed lines"
            limit = limits.max_change_lines
        return (
            f"the change ({change.description}) has {size}, more than {spec_.ini_key} = "
            f"{limit}: too large to review, so it was not reviewed and this item fails. "
            "Split the change into smaller pull requests, or raise the limit in the base "
            "branch's pytest configuration"
        )

    def _run_key(self, key: str, content_hash: str) -> str:
        """Target ``key`` and its cache key: this reviewer, this content, these decisions."""
        found = cache_key(self.identity, content_hash, self.for_target(key).answers)
        told = [decision.model_dump(mode="json") for decision in found.decisions]
        return json.dumps([key, found.reviewer, found.content, told], sort_keys=True)

    def rounds(self, run: ReviewRun, due: Due) -> Rounds | None:
        """Run the rounds ``due`` says are due (a lead's turn on a stored REVISE first)
        and count their tokens; ``None`` when no lead runs and the stored verdict stands.
        """
        if due.lead_on is not None:
            state, review = due.lead_on
            return self._lead_on_stored(run, state, review)
        return self._rounds(run, due.history, due.decisions, due.applied, due.changed)

    def _with_open(self, result: LoopResult, still_open: Sequence[OpenFinding]) -> LoopResult:
        """``result`` with the findings still open for the operator attached.

        :func:`~.outcome.decide` fails an item with any of them, whatever the verdict.
        """
        if still_open:
            result = replace(
                result,
                needs_operator=tuple(o.finding.id for o in still_open),
                operator_open=tuple(still_open),
                decisions_file=self.authority.where,
            )
        return result

    def _rounds(
        self,
        run: ReviewRun,
        history: tuple[RoundRecord, ...],
        decisions: Sequence[Decision],
        applied: str | None = None,
        changed: Changed | None = None,
    ) -> Rounds:
        """Run the rounds due after ``history`` and count their tokens.

        Findings still open for the operator from earlier runs go into the re-review's
        prompt (when this run re-reviews: a first round has no history to carry them);
        each stays open unless a counted re-review of other content carried it.
        """
        key = run.spec.key
        carried = self.operator_open(key)
        told: dict[str, Decision] = {}
        if history:
            answered = {d.finding for d in decisions}
            subject = "plan" if run.spec.kind == "plan" else "change"
            told = {
                o.finding.id: operator_open_decision(o, subject=subject)
                for o in carried
                if o.finding.id not in answered
            }
        result = run.run(
            history=history,
            decisions=(*decisions, *told.values()),
            applied=applied,
            max_rounds=self.max_rounds(key),
        )
        cost = priced(run, result.usage)[1]  # the lead's turns included
        self.ledger.add(result.usage.total, cost)
        if changed is not None and result.rounds:
            # The first round of this run is the one that was shown what changed.
            first, *rest = result.rounds
            result = replace(result, rounds=(first.model_copy(update={"changed": changed}), *rest))
        # A lead may have edited the plan: the text the last round reviewed.
        material = run.material()
        new = _left_open(run.lead, history, result, material.content_hash)
        renewed = {o.finding.id for o in new}
        settled = {o.finding.id for o in carried if _settled(o, told.get(o.finding.id), result)}
        still_open = (
            *(o for o in carried if o.finding.id not in renewed | settled),
            *new,
        )
        return Rounds(
            result=self._with_open(result, still_open),
            material=material,
            history=history,
            cost=cost,
            still_open=still_open,
            closed=frozenset(renewed | settled),
            change=material.reviewed
            or (ReviewedChange.of(run.spec.change) if run.spec.change is not None else None),
        )

    def save(self, key: str, rounds: Rounds) -> None:
        """Store what ``rounds`` reviewed: the verdict, and the findings open for the
        operator (stored whatever happened: only the operator's decision, or a re-review
        that was told of them, closes them)."""
        if rounds.still_open is None or rounds.material is None:
            return  # the lead could not finish its turn: nothing was reviewed
        result, still_open = rounds.result, rounds.still_open
        if not result.mutations:  # a reviewer that changed files is judged by its run
            self._this_run[self._run_key(key, rounds.material.content_hash)] = result
        previous = self._read(key)
        stored_open = previous.operator_open if previous is not None else ()
        if not result.rounds:
            # No round counted: a decision in the file has reached no review yet, so the
            # stored record keeps the finding until one does (the file may still change).
            kept = (o for o in stored_open if o.finding.id not in rounds.closed)
            still_stored = (*(o for o in kept if o not in still_open), *still_open)
        else:
            still_stored = still_open
        state: ReviewState | None = None
        # Lead edits that are not in the commit under review are not stored as a verdict:
        # it must not pass from cache next time.
        if result.rounds and not result.uncommitted_edits:
            material = rounds.material
            state = ReviewState(
                key=key,
                reviewer=self.identity,
                rounds=(*rounds.history, *result.rounds),
                session_id=result.session_id,
                last_content_hash=material.content_hash,
                last_content=material.content,
                status=result.status,
                operator_open=still_stored,
                change=rounds.change,
            )
        elif still_stored != stored_open:
            state = (
                previous.model_copy(update={"operator_open": still_stored})
                if previous is not None
                else ReviewState(key=key, reviewer=self.identity, operator_open=still_stored)
            )
        if result.usage.total or rounds.cost:
            # Every token counts against a pull request's budget, an aborted review's
            # retries too: kept with the target's state whether or not a round counted.
            state = state or previous or ReviewState(key=key, reviewer=self.identity)
            state = state.model_copy(update={"spend": self._spend(state, previous, rounds)})
        if state is not None and self.store.save(state):
            self._loaded[key] = state

    def _spend(
        self, state: ReviewState, previous: ReviewState | None, rounds: Rounds
    ) -> tuple[Spend, ...]:
        """The spend records of ``state`` with this run's tokens on it added."""
        known = {s.run: s for s in (*(previous.spend if previous else ()), *state.spend)}
        run = self.store.run_id
        mine = known.pop(run, Spend(run=run))
        cost = (
            None
            if mine.cost is None and rounds.cost is None
            else ((mine.cost or 0.0) + (rounds.cost or 0.0))
        )
        mine = mine.model_copy(
            update={"tokens": mine.tokens + rounds.result.usage.total, "cost": cost}
        )
        return (*known.values(), mine)

    def _lead_on_stored(self, run: ReviewRun, state: ReviewState, review: Review) -> Rounds | None:
        """Let the built-in lead fix a stored REVISE review, then continue the rounds.

        ``None`` when no lead runs for this item (none asked for, or a code item without
        worktree isolation): the stored verdict stands.
        """
        try:
            decisions = run.lead_turn(review, state.rounds_used)
        except FixFailed as exc:
            aborted = LoopResult(
                status=ReviewStatus.ABORTED,
                review=review,
                last_round=state.rounds_used,
                error=f"the lead could not finish its turn on the stored round "
                f"{state.rounds_used}: {exc}",
                mutations=exc.mutations,
                failed_by="lead",
            )
            return Rounds(result=aborted, material=None, history=state.rounds, still_open=None)
        if decisions is None:
            return None
        return self._rounds(run, state.rounds, decisions)


@dataclass(frozen=True)
class Due:
    """What the stored state says of one target (:meth:`Coordinator.stored_verdict`).

    :param stands: the verdict judged as it is (``None``: rounds are due).
    :param history: the counted rounds of earlier runs (those the rounds continue).
    :param decisions: the decisions sent with the rounds due.
    :param applied: the "Applied" text of the re-review: the diff of the stored text.
    :param lead_on: a stored REVISE review the built-in lead takes up first (when no lead
        runs, ``stands`` does).
    """

    stands: LoopResult | None = None
    history: tuple[RoundRecord, ...] = ()
    #: What changed in the code change since the last round (kept on the next round).
    changed: Changed | None = None
    decisions: tuple[Decision, ...] = ()
    applied: str | None = None
    lead_on: tuple[ReviewState, Review] | None = None

    @property
    def rounds_due(self) -> bool:
        """Whether the reviewer (or the lead) has work: else the stored verdict stands."""
        return self.stands is None or self.lead_on is not None


@dataclass(frozen=True)
class Rounds:
    """The rounds one review ran (:meth:`Coordinator.rounds`), with what the save needs.

    :param result: the loop's result, the findings open for the operator attached.
    :param material: the material the last round reviewed (after any lead's edits;
        ``None``: nothing was reviewed).
    :param history: the counted rounds of earlier runs they continued.
    :param still_open: the findings open for the operator after them (``None``: nothing
        was reviewed, nothing is saved).
    :param closed: ids renewed or settled by these rounds (never kept from the store).
    """

    result: LoopResult
    material: ReviewMaterial | None
    history: tuple[RoundRecord, ...]
    still_open: tuple[OpenFinding, ...] | None
    closed: frozenset[str] = frozenset()
    #: What the rounds cost under ``advreview_prices`` (``None``: none set).
    cost: float | None = None
    #: The code change the rounds reviewed (code targets), stored with them.
    change: ReviewedChange | None = None


def _left_open(
    lead: LeadTurns, history: tuple[RoundRecord, ...], result: LoopResult, content_hash: str
) -> tuple[OpenFinding, ...]:
    """The findings this run's lead left to the operator, as stored records.

    Each keeps the reviewer's finding (its text goes into the failure and into later
    re-review prompts), the round it came from and the lead's reason.
    """
    if not lead.needs_operator:
        return ()
    last_hash = result.rounds[-1].content_hash if result.rounds else None
    # The latest of each: the last round's finding with the id, the lead's last row on it.
    found = {
        f.id: f
        for record in (*history, *result.rounds)
        if record.review is not None
        for f in reversed(record.review.findings)
    }
    rows = {
        e.finding: (turn.round, e)
        for turn in lead.records
        for e in reversed(turn.evaluations)
        if e.action is LeadAction.NEEDS_OPERATOR
    }
    left: list[OpenFinding] = []
    for fid in lead.needs_operator:
        number, row = rows.get(fid, (0, None))
        finding = found.get(fid)
        if finding is None:
            # The lead's contract admits only ids of the review it was given, so this is
            # defensive: keep what the lead's row knew rather than lose the finding.
            severity = row.severity if row is not None else None
            title = row.title if row is not None else ""
            finding = Finding(id=fid, severity=severity or Severity.HIGH, title=title or fid)
        left.append(
            OpenFinding(
                finding=finding,
                round=number,
                reason=row.reason if row is not None else "",
                content_hash=last_hash or content_hash,
            )
        )
    return tuple(left)


def _settled(item: OpenFinding, told: Decision | None, result: LoopResult) -> bool:
    """Whether a counted re-review of this run settled ``item`` without the operator.

    Only a round whose prompt carried the finding (``told``), of other content than the
    finding was left open on, whose review no longer lists it: the reviewer judged the
    changed artifact knowing a person was asked.
    """
    return told is not None and any(
        record.operation in (Operation.RESUME, Operation.FRESH_EXEC)
        and told in record.decisions
        and record.content_hash != item.content_hash
        and record.review is not None
        and all(f.id != item.finding.id for f in record.review.findings)
        for record in result.rounds
    )


def _find_base(config: pytest.Config, settings: Settings) -> GateBase | None:
    """The base as the run's targets would find it (for a fixture's own coordinator)."""
    try:
        repo = targets.repo_info(Path(config.rootpath))
        if repo is None:
            return None
        if settings.head is not None:
            return GateBase(repo.root, settings.base or "HEAD")
        return GateBase(repo.root, trust.of_run(config, settings).base(repo.root, settings.base))
    except targets.TargetError:
        return None
