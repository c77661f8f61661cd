"""The round loop: the operation-aware dispatch table and the fallback chain, headless.

This module drives the rounds of one review without an operator.  It decides *what* to
dispatch (initial, resume, fresh-exec), dispatches through the
:class:`~.runner.Reviewer` protocol, and turns each :class:`~.runner.DispatchResult` into
the next step: the dispatch table maps the runner's ``result`` and ``review_quality`` to
advance, retry or stop, and the fallback chain answers a resume that cannot continue (a
fresh exec that carries the earlier rounds, or NOT VERIFIED).
It never touches pytest, files or the cache: the caller supplies the history of earlier
runs and reacts to the :class:`LoopResult`.

Headless choices, where an interactive review would ask an operator:

* ``degraded_content`` ("ask operator whether to advance"): the round is advanced and
  counted like a valid one, with a warning.  Refusing to advance would turn a review the
  runner already judged parseable into an infrastructure error; the verdict and findings
  still decide the outcome, and the warning tells the reader to look twice.
* The fallback chain never asks whether a fresh review is worth its cost: critical/high
  (or no severity found, read as critical so that an unreadable review never weakens the
  gate) -> fresh exec; medium only -> NOT VERIFIED.
* Within one run a further round happens only when :meth:`LoopHooks.fix` returns
  decisions; in CI nobody applies fixes, so the run stops at ``revise``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .models import (
    Decision,
    DecisionAction,
    Finding,
    OpenFinding,
    Operation,
    OutputFormat,
    Review,
    ReviewQuality,
    ReviewStatus,
    RoundRecord,
    RunnerResult,
    RunnerStatus,
    SampleRecord,
    Severity,
    TokenUsage,
    Verdict,
    VerificationRecord,
    WireModel,
)
from .parse.verification import VerificationFormatError, parse_verification
from .prompts import (
    PreviousRound,
    answered_text,
    decision_item,
    fresh_exec_prompt,
    owed_findings,
    render_decisions,
    rereview_prompt,
    sample_note,
    verify_prompt,
)
from .runner import DispatchRequest, DispatchResult, Reviewer, review_limit_reached
from .samples import Sampled, merge, owed, settle

__all__ = [
    "FixFailed",
    "LoopHooks",
    "LoopResult",
    "ReviewLimit",
    "ReviewTarget",
    "run_loop",
]


class ReviewTarget(WireModel):
    """One thing to review (a plan file or the code change) and how to talk about it."""

    #: ``docs/plans/x.md`` or ``code-review``: the key of persisted state and decisions.
    key: str
    kind: Literal["plan", "code"]
    review_id: str
    repo_root: Path
    #: Private to this review, so reviews side by side under xdist never share a file.
    work_dir: Path
    #: The round-1 prompt body, without the session marker (the runner adds it).
    initial_prompt: str
    #: The artifact's current text: the "Current state" section of a fresh exec.
    content: str
    content_hash: str
    language: str = "English"
    output_format: OutputFormat = OutputFormat.MARKDOWN
    #: Whether ``repo_root`` is inside a git work tree (Codex refuses other directories
    #: unless told to skip its check).
    in_git: bool = True
    #: The run's fail-on threshold, for the runner's drift check (an approval with a
    #: failing finding is retried, never judged).
    fail_on: Severity = Severity.MEDIUM
    #: The code item's diff commands (:attr:`.DispatchRequest.diff_commands`).
    diff_commands: tuple[str, ...] = ()


class FixFailed(Exception):
    """The fixer (the built-in lead) could not do its job: the item errors, never passes.

    :param mutations: files it changed that it must not touch (a mutation error).
    """

    def __init__(self, message: str, *, mutations: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.mutations = tuple(mutations)


class LoopHooks:
    """Extension points of the loop; every method is a no-op by default.

    The plugin subclasses this to forward to its pluggy hooks; tests subclass it to
    script a fixer or a mutation.
    """

    def modify_prompt(self, operation: Operation, prompt: str) -> str:
        """Return the prompt body to send for ``operation`` (default: unchanged)."""
        return prompt

    def fix(self, review: Review, record: RoundRecord) -> Sequence[Decision] | None:
        """Apply fixes for a REVISE review and return the decisions taken.

        ``None`` means nobody fixes anything in this run, so the loop stops at
        ``revise``.  An empty sequence means fixes were applied without per-finding
        decisions; the loop re-reviews.  :class:`FixFailed` ends the run as aborted.
        """
        return None

    def current_hash(self) -> str | None:
        """The content hash now, when a fixer changed the artifact; ``None``: unchanged."""
        return None

    def round_done(self, record: RoundRecord) -> None:
        """Observe a counted round (PR comments, dashboards)."""

    def check_mutation(self, round_no: int) -> Sequence[str]:
        """Paths the reviewer changed during the last dispatch (default: none)."""
        return ()

    def applied_summary(self) -> str | None:
        """What changed since the last reviewed content, for the "Applied" section."""
        return None

    def current_content(self) -> str | None:
        """The artifact's text now (a fixer may have changed it); ``None``: unchanged."""
        return None


@dataclass(frozen=True)
class ReviewLimit:
    """How long one review may take: as a whole (its attempts, retries and fallback
    together), and each attempt (named in the message only; the backend enforces it)."""

    review_timeout: float
    attempt_timeout: float | None = None


@dataclass(frozen=True)
class LoopResult:
    """What one run of the loop ended with (in-process: the item's record is the wire form)."""

    #: approved | revise | max rounds | not verified | aborted.
    status: ReviewStatus
    #: The counted rounds of this run only (earlier runs are the caller's history).
    rounds: tuple[RoundRecord, ...] = ()
    #: The last valid review, from this run or, failing that, from the history.
    review: Review | None = None
    #: Why the reviewer could not run, or why the result is NOT VERIFIED.
    error: str | None = None
    #: ``user_warning`` texts and notes on degraded or unclassified reviews.
    warnings: tuple[str, ...] = ()
    #: Mutation messages; non-empty means the caller errors in teardown.
    mutations: tuple[str, ...] = ()
    #: Tokens of every dispatch of this run, failed ones included (the caller adds the
    #: built-in lead's).
    usage: TokenUsage = field(default_factory=TokenUsage)
    #: The thread to resume next time.
    session_id: str | None = None
    #: Number of the last counted round, history included (0: none yet).
    last_round: int = 0
    #: Findings the lead left for the operator (structural fixes it did not apply), in
    #: this run or in an earlier one and not decided since: the item never passes.
    needs_operator: tuple[str, ...] = ()
    #: The stored record of each of those findings (its text, the lead's reason).
    operator_open: tuple[OpenFinding, ...] = ()
    #: The decisions file where the operator's decision on them is recorded.
    decisions_file: str | None = None
    #: Files the lead edited that the change under review does not contain (under CI the
    #: commit is reviewed, not the working tree): the approval is not of that commit.
    uncommitted_edits: tuple[str, ...] = ()
    #: Who could not do its part when the run aborted: the reviewer, or the lead.
    failed_by: Literal["reviewer", "lead"] = "reviewer"


def _mutated(run: _Run, number: int, who: str) -> LoopResult | None:
    """The aborted result when ``who`` changed the workspace during round ``number``
    (the workspace guard's comparison); ``None`` when nothing changed."""
    mutated = tuple(run.hooks.check_mutation(number))
    if not mutated:
        return None
    return run.finish(
        ReviewStatus.ABORTED,
        error=f"{who} changed the workspace during round {number}",
        mutations=mutated,
    )


def _runner_error(runner: RunnerResult, default: str) -> str:
    """The error text of a failed dispatch: the runner's ``errors`` and ``user_warning``."""
    parts = [p for p in (runner.errors, runner.user_warning) if p]
    return "\n".join(parts) if parts else default


class _Run:
    """Mutable state of one :func:`run_loop` call; kept private so the API stays a function."""

    def __init__(
        self,
        target: ReviewTarget,
        reviewer: Reviewer,
        max_rounds: int,
        hooks: LoopHooks,
        history: Sequence[RoundRecord],
        limit: ReviewLimit | None = None,
        samples: Sequence[tuple[str, Reviewer]] = (),
        verifier: Reviewer | None = None,
    ) -> None:
        self.limit = limit
        #: Checks each blocking finding of a round (``None``: no verification).
        self.verifier = verifier
        #: The reviewers of samples 2 to K (name, backend); sample 1 is ``reviewer``.
        self.samples = tuple(samples)
        self.deadline = None if limit is None else time.monotonic() + limit.review_timeout
        self.target = target
        self.reviewer = reviewer
        self.max_rounds = max_rounds
        self.hooks = hooks
        self.history = tuple(history)
        self.rounds: list[RoundRecord] = []
        self.warnings: list[str] = []
        self.usage = TokenUsage()
        self.session_id: str | None = None
        for record in self.history:
            if record.runner.codex_session_id:
                self.session_id = record.runner.codex_session_id
        self.thread_usage = _thread_usage(self.history)

    # -- bookkeeping ---------------------------------------------------------------

    @property
    def all_rounds(self) -> tuple[RoundRecord, ...]:
        return self.history + tuple(self.rounds)

    @property
    def last_round(self) -> int:
        return self.all_rounds[-1].number if self.all_rounds else 0

    def last_review(self) -> Review | None:
        return next((r.review for r in reversed(self.all_rounds) if r.review is not None), None)

    def finish(
        self,
        status: ReviewStatus,
        *,
        error: str | None = None,
        mutations: Sequence[str] = (),
        failed_by: Literal["reviewer", "lead"] = "reviewer",
    ) -> LoopResult:
        return LoopResult(
            failed_by=failed_by,
            status=status,
            rounds=tuple(self.rounds),
            review=self.last_review(),
            error=error,
            warnings=tuple(self.warnings),
            mutations=tuple(mutations),
            usage=self.usage,
            session_id=self.session_id,
            last_round=self.last_round,
        )

    # -- prompts -------------------------------------------------------------------

    def resume_prompt(self, decisions: Sequence[Decision]) -> str:
        review = self.last_review()

        def taken(action: DecisionAction) -> list[str]:
            return [decision_item(d, review) for d in decisions if d.action is action]

        applied = taken(DecisionAction.ACCEPT)
        summary = self.hooks.applied_summary()
        if summary:
            applied.insert(0, summary)
        body = rereview_prompt(
            applied=applied,
            rescoped=taken(DecisionAction.RESCOPE),
            rejected=taken(DecisionAction.REJECT),
            answered=answered_text(self.all_rounds, decisions),
            language=self.target.language,
            output_format=self.target.output_format,
        )
        return self.hooks.modify_prompt(Operation.RESUME, self.with_owed(body))

    def with_owed(self, body: str) -> str:
        """``body`` with the findings only other samples reported, which this thread
        must answer (:func:`~.samples.owed`; unchanged without them)."""
        section = owed_findings(owed(self.last_review()))
        return f"{body.rstrip()}\n\n{section}" if section else body

    def fresh_prompt(self, pending: Sequence[Decision]) -> str:
        # A round's decisions travel with the *next* round's prompt, so the decisions on
        # round k are stored on round k+1 -- or, for the last round, are still pending.
        counted = self.all_rounds
        answered = (*(record.decisions for record in counted[1:]), pending)
        previous = [
            PreviousRound(
                number=record.number,
                review=record.review.raw,
                decisions=render_decisions(decided, record.review),
            )
            for record, decided in zip(counted, answered, strict=False)
            if record.review is not None
        ]
        current = self.hooks.current_content() or self.target.content
        summary = self.hooks.applied_summary()
        if summary:
            # What changed since the last round (the code change's interdiff): a new
            # thread needs it as much as a resumed one.
            current = f"{current.rstrip()}\n\n{summary}"
        body = fresh_exec_prompt(
            self.target.initial_prompt,
            previous_rounds=previous,
            current_state=current,
        )
        return self.hooks.modify_prompt(Operation.FRESH_EXEC, self.with_owed(body))

    # -- dispatch ------------------------------------------------------------------

    def request(
        self, operation: Operation, prompt: str, work_dir: Path | None = None
    ) -> DispatchRequest:
        resume = operation is Operation.RESUME
        return DispatchRequest(
            review_id=self.target.review_id,
            repo_root=self.target.repo_root,
            operation=operation,
            prompt_body=prompt,
            work_dir=work_dir or self.target.work_dir,
            session_id=self.session_id if resume else None,
            output_format=self.target.output_format,
            # A fresh exec or an initial run starts a new thread: nothing to subtract.
            prior_usage=self.thread_usage if resume else TokenUsage(),
            in_git=self.target.in_git,
            fail_on=self.target.fail_on,
            time_left_s=self.time_left(),
            review_timeout_s=self.limit.review_timeout if self.limit is not None else None,
            diff_commands=self.target.diff_commands,
        )

    def dispatch(self, operation: Operation, prompt: str) -> tuple[DispatchResult, float]:
        resume = operation is Operation.RESUME
        request = self.request(operation, prompt)
        started = time.monotonic()
        result = self.reviewer.dispatch(request)
        elapsed = time.monotonic() - started
        self.usage = self.usage + result.usage
        base = self.thread_usage if resume else TokenUsage()
        # Prefer the runner's cumulative figure; fall back to adding this delta.
        self.thread_usage = (
            result.thread_usage if result.thread_usage != TokenUsage() else base + result.usage
        )
        if result.runner.user_warning:
            self.warnings.append(result.runner.user_warning)
        return result, elapsed

    def dispatch_samples(
        self, prompt: str
    ) -> tuple[DispatchResult, float, tuple[SampleRecord, ...], str | None]:
        """The first round as K samples side by side: sample 1 through :meth:`dispatch`
        (its thread is the one later rounds resume), the others each in a folder of its
        own.  Returns the merged result (sample 1's runner, every sample's tokens), the
        time, each sample's record, and why the round failed (``None``: every sample
        gave a review; any sample that could not is the round's error, never outvoted).
        """

        count = len(self.samples) + 1

        def other(number: int, reviewer: Reviewer) -> tuple[DispatchResult, float]:
            work_dir = self.target.work_dir / f"sample-{number}"
            work_dir.mkdir(parents=True, exist_ok=True)
            body = sample_note(prompt, number, count)
            request = self.request(Operation.INITIAL, body, work_dir)
            started = time.monotonic()
            return reviewer.dispatch(request), time.monotonic() - started

        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=count) as pool:
            first = pool.submit(self.dispatch, Operation.INITIAL, sample_note(prompt, 1, count))
            rest = [
                pool.submit(other, number, reviewer)
                for number, (_, reviewer) in enumerate(self.samples, start=2)
            ]
            done = [first.result(), *(future.result() for future in rest)]
        elapsed = time.monotonic() - started
        names = (self.reviewer.name, *(name for name, _ in self.samples))
        records: list[SampleRecord] = []
        reviews: list[Sampled] = []
        error: str | None = None
        for number, (name, (result, took)) in enumerate(zip(names, done, strict=True), start=1):
            if number > 1:
                self.usage = self.usage + result.usage
                if result.runner.user_warning:
                    self.warnings.append(f"sample {number}: {result.runner.user_warning}")
            review = _usable(result)
            records.append(
                SampleRecord(
                    sample=number,
                    reviewer=name,
                    verdict=review.verdict if review is not None else None,
                    findings=len(review.findings) if review is not None else 0,
                    usage=result.usage,
                    duration_s=result.duration_s or took,
                )
            )
            if review is None:
                error = error or (
                    f"sample {number} of {len(names)} ({name}) could not review: "
                    f"{_failure_reason(result)}; a sample that cannot run is the item's "
                    "error, never outvoted by the others"
                )
            else:
                reviews.append(Sampled(number, name, review))
        head = done[0][0]
        merged = head.model_copy(
            update={
                "review": merge(reviews) if error is None else None,
                "usage": sum((r.usage for r, _ in done), TokenUsage()),
                "duration_s": elapsed,
            }
        )
        return merged, elapsed, tuple(records), error

    def verify(
        self, review: Review, number: int
    ) -> tuple[Review, tuple[VerificationRecord, ...], str | None]:
        """Each blocking finding of ``review`` checked in a verifier turn of its own (a new
        thread, side by side): ``review`` with the refuted ones marked, each turn's record,
        and why verification failed (``None``: every verifier answered).  A verifier that
        cannot run, or answers neither CONFIRMED nor REFUTED, is the round's error.
        """
        verifier = self.verifier
        checked = [
            f for f in review.findings if f.severity.at_least(self.target.fail_on) and not f.refuted
        ]
        if verifier is None or not checked:
            return review, (), None
        material = self.hooks.current_content() or self.target.content

        def one(index: int, finding: Finding) -> tuple[DispatchResult, float]:
            work_dir = self.target.work_dir / f"verify-{number}-{index}"
            work_dir.mkdir(parents=True, exist_ok=True)
            request = self.request(
                Operation.INITIAL, verify_prompt(finding, material), work_dir
            ).model_copy(update={"output_format": OutputFormat.MARKDOWN})
            started = time.monotonic()
            return verifier.dispatch(request), time.monotonic() - started

        with ThreadPoolExecutor(max_workers=len(checked)) as pool:
            futures = [pool.submit(one, i, f) for i, f in enumerate(checked, start=1)]
            done = [future.result() for future in futures]
        records: list[VerificationRecord] = []
        refuted: dict[str, str] = {}
        error: str | None = None
        for finding, (result, took) in zip(checked, done, strict=True):
            self.usage = self.usage + result.usage
            who = f"the verifier ({verifier.name}) of {finding.id}"
            usable = _usable(result)
            if usable is None:
                error = error or f"{who} could not run: {_failure_reason(result)}"
                continue
            try:
                answer = parse_verification(usable.raw)
            except VerificationFormatError as exc:
                error = error or f"{who} answered neither CONFIRMED nor REFUTED: {exc}"
                continue
            records.append(
                VerificationRecord(
                    finding=finding.id,
                    reviewer=verifier.name,
                    result=answer.result,
                    evidence=answer.evidence,
                    reason=answer.reason,
                    usage=result.usage,
                    duration_s=result.duration_s or took,
                )
            )
            if answer.result == "REFUTED":
                refuted[finding.id] = f"{answer.reason} (evidence: {answer.evidence})"
        marked = tuple(
            f.model_copy(update={"refuted": refuted[f.id]}) if f.id in refuted else f
            for f in review.findings
        )
        return review.model_copy(update={"findings": marked}), tuple(records), error

    def time_left(self) -> float | None:
        """Seconds the review has left under its whole limit; ``None``: no limit."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    def out_of_time(self) -> LoopResult | None:
        """The review's end when its whole limit is spent (before another dispatch)."""
        left = self.time_left()
        if left is None or left > 0 or self.limit is None:
            return None
        return self.finish(
            ReviewStatus.ABORTED,
            error=review_limit_reached(self.limit.review_timeout, self.limit.attempt_timeout),
        )

    def can_resume(self) -> bool:
        if not self.reviewer.supports_resume or self.session_id is None:
            return False
        return self.reviewer.can_resume(self.session_id)


def _thread_usage(history: Sequence[RoundRecord]) -> TokenUsage:
    """Cumulative usage of the current thread, rebuilt from the counted rounds.

    The thread starts at the last initial or fresh-exec round.  Failed dispatches of
    earlier runs are not in the history, so this can undercount; the runner clamps
    negative deltas (:meth:`TokenUsage.minus`), so an undercount only overstates a delta.
    """
    total = TokenUsage()
    for record in history:
        total = record.usage if record.operation is not Operation.RESUME else total + record.usage
    return total


def _usable(result: DispatchResult) -> Review | None:
    """The review of a successful, non-environmental dispatch with a verdict, else None."""
    runner = result.runner
    if runner.result is not RunnerStatus.SUCCESS:
        return None
    if runner.review_quality is ReviewQuality.DEGRADED_ENVIRONMENTAL:
        return None
    review = result.review
    if review is None:
        return None
    if review.verdict is None and runner.verdict is not None:
        review = review.model_copy(update={"verdict": runner.verdict})
    return review if review.verdict is not None else None


def run_loop(
    target: ReviewTarget,
    reviewer: Reviewer,
    *,
    max_rounds: int,
    hooks: LoopHooks | None = None,
    history: Sequence[RoundRecord] = (),
    decisions: Sequence[Decision] = (),
    limit: ReviewLimit | None = None,
    samples: Sequence[tuple[str, Reviewer]] = (),
    verifier: Reviewer | None = None,
) -> LoopResult:
    """Run review rounds for ``target`` until a terminal state of this run.

    ``history`` holds the counted rounds of earlier runs; numbering continues from it
    and, when it is non-empty, the next round re-reviews (resume, or the fallback chain
    when the thread cannot be resumed) with ``decisions`` in the re-review prompt.
    At most ``max_rounds`` rounds are counted over history and this run together, and
    no dispatch starts or runs past ``limit`` (the review is then aborted, naming it).
    ``samples`` are the reviewers of the first round's samples 2 to K (name, backend):
    the first round is then K reviews merged into one (:mod:`.samples`).  ``verifier``
    checks each blocking finding of every round (:meth:`_Run.verify`).
    """
    run = _Run(
        target, reviewer, max_rounds, hooks or LoopHooks(), history, limit, samples, verifier
    )

    pending: tuple[Decision, ...] = tuple(decisions)
    step: tuple[Operation, str] | LoopResult
    if not run.history:
        step = Operation.INITIAL, run.hooks.modify_prompt(Operation.INITIAL, target.initial_prompt)
    elif run.last_round >= max_rounds:
        # Every round is spent already; a further dispatch would break the limit.
        return run.finish(ReviewStatus.MAX_ROUNDS)
    else:
        step = _next_round(run, pending, "the thread cannot be resumed on this machine")

    while True:
        if isinstance(step, LoopResult):
            return step
        operation, prompt = step
        number = run.last_round + 1
        spent = run.out_of_time()
        if spent is not None:
            return spent
        sampled: tuple[SampleRecord, ...] = ()
        failed_sample: str | None = None
        if operation is Operation.INITIAL and run.samples:
            result, elapsed, sampled, failed_sample = run.dispatch_samples(prompt)
        else:
            result, elapsed = run.dispatch(operation, prompt)
        # The mutation check comes first: a reviewer that changed the workspace broke its
        # contract, so nothing it returned is trusted and the fixer must never run.
        aborted = _mutated(run, number, "the reviewer")
        if aborted is not None:
            return aborted
        if failed_sample is not None:
            return run.finish(ReviewStatus.ABORTED, error=failed_sample)

        runner = result.runner
        if runner.result in (RunnerStatus.INFRA_ERROR, RunnerStatus.INPUT_ERROR):
            return run.finish(
                ReviewStatus.ABORTED,
                error=_runner_error(runner, f"{runner.result.value} on {operation.value}"),
            )

        review = _usable(result)
        if review is None:
            why = _failure_reason(result)
            if operation is Operation.INITIAL:
                # No earlier valid review exists to recover from: terminal.
                return run.finish(ReviewStatus.ABORTED, error=why)
            if operation is Operation.FRESH_EXEC:
                # Fresh exec already was the fallback; the environment is reliably broken.
                return run.finish(
                    ReviewStatus.NOT_VERIFIED,
                    error=f"the fresh review (round {number}) failed: {why}",
                )
            step = _fallback(run, pending, f"resume failed: {why}")
            continue

        if runner.review_quality is ReviewQuality.DEGRADED_CONTENT:
            run.warnings.append(
                f"round {number}: the runner marked the review as degraded content "
                "(not clearly actionable); it was counted as a round - read it critically"
            )
        elif runner.review_quality is ReviewQuality.UNKNOWN:
            run.warnings.append(
                f"round {number}: the review quality could not be classified; "
                "it was treated as valid"
            )
        if operation is not Operation.INITIAL:
            # A later round of sample 1's thread: what only other samples reported stays
            # open unless it answered it.
            review, unanswered = settle(review, owed(run.last_review()), target.fail_on)
            if unanswered is not None:
                run.warnings.append(f"round {number}: {unanswered}")
        review, verifications, unverified = run.verify(review, number)
        if verifications or unverified:
            # The verifiers are reviewers too: one that changed the workspace broke the
            # same contract.
            aborted = _mutated(run, number, "a verifier")
            if aborted is not None:
                return aborted
        if unverified is not None:
            return run.finish(ReviewStatus.ABORTED, error=unverified)
        if runner.codex_session_id:
            run.session_id = runner.codex_session_id
        record = RoundRecord(
            number=number,
            operation=operation,
            runner=runner,
            review=review,
            decisions=pending,
            usage=result.usage,
            duration_s=result.duration_s or elapsed,
            content_hash=run.hooks.current_hash() or target.content_hash,
            samples=sampled,
            verifications=verifications,
        )
        run.rounds.append(record)
        run.hooks.round_done(record)

        if review.verdict is Verdict.APPROVED:
            return run.finish(ReviewStatus.APPROVED)
        if number >= max_rounds:
            return run.finish(ReviewStatus.MAX_ROUNDS)
        try:
            fixed = run.hooks.fix(review, record)
        except FixFailed as exc:
            return run.finish(
                ReviewStatus.ABORTED,
                error=f"the lead could not finish its turn after round {number}: {exc}",
                mutations=exc.mutations,
                failed_by="lead",
            )
        if fixed is None:
            return run.finish(ReviewStatus.REVISE)
        pending = tuple(fixed)
        step = _next_round(run, pending, "the thread cannot be resumed")


def _failure_reason(result: DispatchResult) -> str:
    runner = result.runner
    if runner.result is not RunnerStatus.SUCCESS:
        return _runner_error(runner, runner.result.value)
    if runner.review_quality is ReviewQuality.DEGRADED_ENVIRONMENTAL:
        return _runner_error(
            runner, "the reviewer's environment failed (degraded_environmental review)"
        )
    return _runner_error(runner, "the reviewer returned no review with a verdict")


def _next_round(
    run: _Run, pending: Sequence[Decision], why: str
) -> tuple[Operation, str] | LoopResult:
    """A resume of the thread when it can continue, else :func:`_fallback` for ``why``."""
    if run.can_resume():
        return Operation.RESUME, run.resume_prompt(pending)
    return _fallback(run, pending, why)


def _fallback(
    run: _Run, pending: Sequence[Decision], why: str
) -> tuple[Operation, str] | LoopResult:
    """The fallback when a resume cannot continue: fresh exec for critical/high or no severity.

    Medium only ends NOT VERIFIED rather than paying for a whole new review: the outcome
    is an error either way, never a pass.

    Returns the next dispatch, or the terminal result.
    """
    review = run.last_review()
    severity = review.max_severity if review is not None else None
    # A backend without resume (``command``) re-reviews by design as a fresh run with the
    # history; the severity rule only governs recovery from a *failed* resume.
    if severity is Severity.MEDIUM and run.reviewer.supports_resume:
        return run.finish(
            ReviewStatus.NOT_VERIFIED,
            error=(
                f"{why}; the last round's maximum severity is medium, so no fresh review "
                "was run and the remaining findings are NOT VERIFIED"
            ),
        )
    if run.last_round >= run.max_rounds:
        return run.finish(ReviewStatus.MAX_ROUNDS, error=why)
    return Operation.FRESH_EXEC, run.fresh_prompt(pending)
