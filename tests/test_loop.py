"""The round loop: the dispatch table, rounds, the fallback chain, mutation and usage.

Every test drives :func:`run_loop` with an in-memory scripted reviewer that returns
queued :class:`DispatchResult` objects and records each request.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_advreview import loop
from pytest_advreview.loop import LoopHooks, LoopResult, ReviewTarget, run_loop
from pytest_advreview.models import (
    Decision,
    DecisionAction,
    Finding,
    Operation,
    Review,
    ReviewQuality,
    ReviewStatus,
    RoundRecord,
    RunnerResult,
    RunnerStatus,
    Severity,
    TokenUsage,
    Verdict,
)
from pytest_advreview.runner import DispatchRequest, DispatchResult

# -- scaffolding ------------------------------------------------------------------------


class ScriptedReviewer:
    """A :class:`Reviewer` that returns queued results and records every call."""

    name = "scripted"

    def __init__(
        self,
        results: Sequence[DispatchResult],
        *,
        supports_resume: bool = True,
        resumable: bool = True,
    ) -> None:
        self.queue = list(results)
        self.supports_resume = supports_resume
        self.resumable = resumable
        self.requests: list[DispatchRequest] = []
        self.can_resume_calls: list[str] = []

    def dispatch(self, request: DispatchRequest) -> DispatchResult:
        self.requests.append(request)
        assert self.queue, f"unexpected dispatch: {request.operation.value}"
        return self.queue.pop(0)

    def can_resume(self, session_id: str) -> bool:
        self.can_resume_calls.append(session_id)
        return self.resumable

    @property
    def operations(self) -> list[Operation]:
        return [r.operation for r in self.requests]


class RecordingHooks(LoopHooks):
    """Hooks that script the fixer and mutations, and record every call."""

    def __init__(
        self,
        fixes: Sequence[Sequence[Decision] | None] = (),
        mutations: dict[int, Sequence[str]] | None = None,
        summary: str | None = None,
    ) -> None:
        self.fixes = list(fixes)
        self.mutations = mutations or {}
        self.summary = summary
        self.fix_calls: list[int] = []
        self.done: list[RoundRecord] = []
        self.mutation_checks: list[int] = []
        self.prompts: list[tuple[Operation, str]] = []

    def modify_prompt(self, operation: Operation, prompt: str) -> str:
        self.prompts.append((operation, prompt))
        return prompt + f"\n<!-- modified for {operation.value} -->"

    def fix(self, review: Review, record: RoundRecord) -> Sequence[Decision] | None:
        self.fix_calls.append(record.number)
        return self.fixes.pop(0) if self.fixes else None

    def round_done(self, record: RoundRecord) -> None:
        self.done.append(record)

    def check_mutation(self, round_no: int) -> Sequence[str]:
        self.mutation_checks.append(round_no)
        return self.mutations.get(len(self.mutation_checks), ())

    def applied_summary(self) -> str | None:
        return self.summary


def finding(severity: Severity, title: str, fid: str) -> Finding:
    return Finding(id=fid, severity=severity, title=title)


def review(verdict: Verdict, *severities: Severity, tag: str = "") -> Review:
    """A review whose raw text is distinctive (``tag``) so tests can find it verbatim."""
    findings = tuple(
        finding(s, f"problem {i} {tag}".strip(), f"AR-{tag or 'x'}{i}")
        for i, s in enumerate(severities)
    )
    lines = [f"## Review {tag}", *(f"[severity: {f.severity.value}] {f.title}" for f in findings)]
    raw = "\n".join([*lines, f"VERDICT: {verdict.value}"]) + "\n"
    return Review(summary=f"summary {tag}", findings=findings, verdict=verdict, raw=raw)


def usage(n: int) -> TokenUsage:
    return TokenUsage(input_tokens=n, output_tokens=n // 10)


def ok(
    operation: Operation,
    rev: Review,
    *,
    session: str | None = "thread-1",
    quality: ReviewQuality = ReviewQuality.VALID,
    tokens: int = 100,
    thread_tokens: int | None = None,
    attempts: int = 1,
    warning: str | None = None,
) -> DispatchResult:
    return DispatchResult(
        runner=RunnerResult(
            result=RunnerStatus.SUCCESS,
            verdict=rev.verdict,
            codex_session_id=session,
            attempt_id=f"a{attempts}",
            review_quality=quality,
            user_warning=warning,
        ),
        operation=operation,
        review=rev,
        usage=usage(tokens),
        thread_usage=usage(thread_tokens) if thread_tokens is not None else TokenUsage(),
        attempts=attempts,
        duration_s=1.5,
    )


def failed(
    operation: Operation,
    status: RunnerStatus,
    *,
    errors: str | None = "codex exited 1",
    warning: str | None = None,
    tokens: int = 0,
) -> DispatchResult:
    return DispatchResult(
        runner=RunnerResult(result=status, attempt_id="a2", errors=errors, user_warning=warning),
        operation=operation,
        usage=usage(tokens),
        attempts=2,
    )


def degraded_env(operation: Operation, *, tokens: int = 10) -> DispatchResult:
    return ok(
        operation,
        review(Verdict.REVISE, Severity.CRITICAL, tag="sandbox"),
        quality=ReviewQuality.DEGRADED_ENVIRONMENTAL,
        warning="bwrap: EPERM - the review describes a broken sandbox",
        tokens=tokens,
    )


@pytest.fixture
def target(tmp_path: Path) -> ReviewTarget:
    return ReviewTarget(
        key="docs/plans/x.md",
        kind="plan",
        review_id="rid-1",
        repo_root=tmp_path,
        work_dir=tmp_path / "work",
        initial_prompt="INITIAL PROMPT BODY",
        content="# Plan X\ncurrent text of the plan\n",
        content_hash="hash-now",
    )


def record(
    number: int,
    rev: Review | None,
    *,
    operation: Operation = Operation.INITIAL,
    session: str | None = "thread-old",
    decisions: Sequence[Decision] = (),
    tokens: int = 100,
) -> RoundRecord:
    return RoundRecord(
        number=number,
        operation=operation,
        runner=RunnerResult(
            result=RunnerStatus.SUCCESS,
            verdict=rev.verdict if rev else None,
            codex_session_id=session,
            attempt_id="old",
        ),
        review=rev,
        decisions=tuple(decisions),
        usage=usage(tokens),
        content_hash="hash-old",
    )


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[dict[str, Any]]]:
    """Record the arguments the loop passes to the prompt builders (real ones still run)."""
    calls: dict[str, list[dict[str, Any]]] = {"rereview": [], "fresh": []}
    from pytest_advreview.prompts import fresh_exec_prompt as real_fresh
    from pytest_advreview.prompts import rereview_prompt as real_rereview

    def rereview(**kwargs: Any) -> str:
        calls["rereview"].append(kwargs)
        return real_rereview(**kwargs)

    def fresh(original_body: str, **kwargs: Any) -> str:
        calls["fresh"].append({"original_body": original_body, **kwargs})
        return real_fresh(original_body, **kwargs)

    monkeypatch.setattr(loop, "rereview_prompt", rereview)
    monkeypatch.setattr(loop, "fresh_exec_prompt", fresh)
    return calls


CRIT_HISTORY = (record(1, review(Verdict.REVISE, Severity.CRITICAL, Severity.MEDIUM, tag="r1")),)
MEDIUM_HISTORY = (record(1, review(Verdict.REVISE, Severity.MEDIUM, tag="r1")),)
REJECT = Decision(finding="AR-r10", action=DecisionAction.REJECT, reason="runs in one transaction")


# -- success rows of the dispatch table -----------------------------------------------


def test_initial_valid_approved_is_one_counted_round(target: ReviewTarget) -> None:
    hooks = RecordingHooks()
    reviewer = ScriptedReviewer([ok(Operation.INITIAL, review(Verdict.APPROVED))])

    result = run_loop(target, reviewer, max_rounds=5, hooks=hooks)

    assert result.status is ReviewStatus.APPROVED
    assert [r.number for r in result.rounds] == [1]
    rec = result.rounds[0]
    assert rec.operation is Operation.INITIAL
    assert rec.content_hash == "hash-now"
    assert rec.decisions == ()
    assert rec.duration_s == 1.5
    assert hooks.done == [rec]
    assert hooks.fix_calls == []
    assert result.session_id == "thread-1"
    assert result.last_round == 1
    request = reviewer.requests[0]
    assert request.prompt_body == "INITIAL PROMPT BODY\n<!-- modified for initial -->"
    assert request.session_id is None
    assert request.review_id == "rid-1"
    assert request.work_dir == target.work_dir


def test_initial_valid_revise_without_fixer_stops_at_revise(target: ReviewTarget) -> None:
    rev = review(Verdict.REVISE, Severity.HIGH)
    reviewer = ScriptedReviewer([ok(Operation.INITIAL, rev)])

    result = run_loop(target, reviewer, max_rounds=5)

    assert result.status is ReviewStatus.REVISE
    assert result.review == rev
    assert len(result.rounds) == 1
    assert result.error is None


@pytest.mark.parametrize("operation", [Operation.INITIAL, Operation.RESUME, Operation.FRESH_EXEC])
def test_degraded_content_warns_and_counts_the_round(
    target: ReviewTarget, operation: Operation
) -> None:
    reviewer, history = _reach(
        operation,
        ok(
            operation, review(Verdict.REVISE, Severity.HIGH), quality=ReviewQuality.DEGRADED_CONTENT
        ),
    )

    result = run_loop(target, reviewer, max_rounds=5, history=history)

    assert result.status is ReviewStatus.REVISE
    assert result.rounds[-1].operation is operation
    assert result.rounds[-1].number == len(history) + 1
    assert any("degraded content" in w for w in result.warnings)


@pytest.mark.parametrize("operation", [Operation.INITIAL, Operation.RESUME, Operation.FRESH_EXEC])
def test_unknown_quality_warns_and_is_treated_as_valid(
    target: ReviewTarget, operation: Operation
) -> None:
    reviewer, history = _reach(
        operation, ok(operation, review(Verdict.APPROVED), quality=ReviewQuality.UNKNOWN)
    )

    result = run_loop(target, reviewer, max_rounds=5, history=history)

    assert result.status is ReviewStatus.APPROVED
    assert result.rounds[-1].operation is operation
    assert any("could not be classified" in w for w in result.warnings)


def _reach(
    operation: Operation, final: DispatchResult, *, severity_history: Sequence[RoundRecord] = ()
) -> tuple[ScriptedReviewer, Sequence[RoundRecord]]:
    """A reviewer and history such that ``final`` is returned for ``operation``.

    Fresh-exec is reached the headless way: resume times out after a critical round.
    """
    if operation is Operation.INITIAL:
        return ScriptedReviewer([final]), ()
    history = severity_history or CRIT_HISTORY
    if operation is Operation.RESUME:
        return ScriptedReviewer([final]), history
    return ScriptedReviewer([failed(Operation.RESUME, RunnerStatus.TIMEOUT), final]), history


# -- degraded_environmental -------------------------------------------------------------


def test_degraded_environmental_on_initial_aborts_without_a_round(target: ReviewTarget) -> None:
    hooks = RecordingHooks()
    reviewer = ScriptedReviewer([degraded_env(Operation.INITIAL)])

    result = run_loop(target, reviewer, max_rounds=5, hooks=hooks)

    assert result.status is ReviewStatus.ABORTED
    assert result.rounds == ()
    assert result.review is None  # the pseudo-review is never shown
    assert result.error is not None
    assert "bwrap" in result.error
    assert result.warnings == ("bwrap: EPERM - the review describes a broken sandbox",)
    assert hooks.done == []


def test_degraded_environmental_on_resume_falls_back_to_fresh_exec_without_a_round(
    target: ReviewTarget,
) -> None:
    hooks = RecordingHooks()
    fresh_review = review(Verdict.APPROVED, tag="fresh")
    reviewer = ScriptedReviewer(
        [
            degraded_env(Operation.RESUME),
            ok(Operation.FRESH_EXEC, fresh_review, session="thread-fresh"),
        ]
    )

    result = run_loop(
        target, reviewer, max_rounds=5, hooks=hooks, history=CRIT_HISTORY, decisions=[REJECT]
    )

    assert reviewer.operations == [Operation.RESUME, Operation.FRESH_EXEC]
    assert result.status is ReviewStatus.APPROVED
    # The degraded resume was not a round: the fresh exec takes number 2.
    assert [(r.number, r.operation) for r in result.rounds] == [(2, Operation.FRESH_EXEC)]
    assert result.rounds[0].decisions == (REJECT,)
    assert result.session_id == "thread-fresh"
    assert hooks.mutation_checks == [2, 2]


def test_degraded_environmental_on_resume_with_medium_prior_is_not_verified(
    target: ReviewTarget,
) -> None:
    reviewer = ScriptedReviewer([degraded_env(Operation.RESUME)])

    result = run_loop(target, reviewer, max_rounds=5, history=MEDIUM_HISTORY)

    assert result.status is ReviewStatus.NOT_VERIFIED
    assert result.rounds == ()
    assert result.error is not None
    assert "medium" in result.error
    assert "NOT VERIFIED" in result.error
    assert result.review == MEDIUM_HISTORY[0].review


def test_degraded_environmental_on_fresh_exec_is_not_verified(target: ReviewTarget) -> None:
    reviewer, history = _reach(Operation.FRESH_EXEC, degraded_env(Operation.FRESH_EXEC))

    result = run_loop(target, reviewer, max_rounds=5, history=history)

    assert reviewer.operations == [Operation.RESUME, Operation.FRESH_EXEC]
    assert result.status is ReviewStatus.NOT_VERIFIED
    assert result.rounds == ()
    assert result.error is not None
    assert "bwrap" in result.error
    # The last valid review is the history's, not the degraded one.
    assert result.review == CRIT_HISTORY[0].review


# -- timeout / launch_failure / infra_error / input_error --------------------------------


@pytest.mark.parametrize("status", [RunnerStatus.TIMEOUT, RunnerStatus.LAUNCH_FAILURE])
def test_timeout_or_launch_failure_on_initial_aborts_with_errors(
    target: ReviewTarget, status: RunnerStatus
) -> None:
    reviewer = ScriptedReviewer(
        [failed(Operation.INITIAL, status, errors="codex: not found", warning="install codex")]
    )

    result = run_loop(target, reviewer, max_rounds=5)

    assert result.status is ReviewStatus.ABORTED
    assert result.rounds == ()
    assert result.error is not None
    assert "codex: not found" in result.error
    assert "install codex" in result.error
    assert "install codex" in result.warnings


@pytest.mark.parametrize("status", [RunnerStatus.TIMEOUT, RunnerStatus.LAUNCH_FAILURE])
def test_timeout_or_launch_failure_on_resume_routes_to_fresh_exec(
    target: ReviewTarget, status: RunnerStatus
) -> None:
    reviewer = ScriptedReviewer(
        [
            failed(Operation.RESUME, status),
            ok(Operation.FRESH_EXEC, review(Verdict.REVISE, Severity.HIGH), session="t2"),
        ]
    )

    result = run_loop(target, reviewer, max_rounds=5, history=CRIT_HISTORY)

    assert reviewer.operations == [Operation.RESUME, Operation.FRESH_EXEC]
    assert result.status is ReviewStatus.REVISE
    assert [(r.number, r.operation) for r in result.rounds] == [(2, Operation.FRESH_EXEC)]


@pytest.mark.parametrize("status", [RunnerStatus.TIMEOUT, RunnerStatus.LAUNCH_FAILURE])
def test_timeout_or_launch_failure_on_fresh_exec_is_not_verified(
    target: ReviewTarget, status: RunnerStatus
) -> None:
    reviewer, history = _reach(
        Operation.FRESH_EXEC, failed(Operation.FRESH_EXEC, status, errors="second failure")
    )

    result = run_loop(target, reviewer, max_rounds=5, history=history)

    assert result.status is ReviewStatus.NOT_VERIFIED
    assert result.error is not None
    assert "second failure" in result.error
    assert result.rounds == ()


@pytest.mark.parametrize("status", [RunnerStatus.INFRA_ERROR, RunnerStatus.INPUT_ERROR])
@pytest.mark.parametrize("operation", [Operation.INITIAL, Operation.RESUME, Operation.FRESH_EXEC])
def test_infra_or_input_error_aborts_on_every_operation(
    target: ReviewTarget, status: RunnerStatus, operation: Operation
) -> None:
    reviewer, history = _reach(operation, failed(operation, status, errors="prompt body missing"))

    result = run_loop(target, reviewer, max_rounds=5, history=history)

    assert reviewer.operations[-1] is operation
    assert result.status is ReviewStatus.ABORTED
    assert result.error == "prompt body missing"
    assert result.rounds == ()


def test_success_without_a_verdict_on_initial_aborts(target: ReviewTarget) -> None:
    broken = ok(Operation.INITIAL, Review(raw="no verdict here"))
    reviewer = ScriptedReviewer([broken])

    result = run_loop(target, reviewer, max_rounds=5)

    assert result.status is ReviewStatus.ABORTED
    assert result.error is not None
    assert "verdict" in result.error
    assert result.rounds == ()


# -- rounds within a run ----------------------------------------------------------------


def test_fixer_drives_rounds_one_two_three_on_one_resumed_thread(
    target: ReviewTarget, captured: dict[str, list[dict[str, Any]]]
) -> None:
    r1 = review(Verdict.REVISE, Severity.CRITICAL, Severity.HIGH, Severity.MEDIUM, tag="a")
    r2 = review(Verdict.REVISE, Severity.HIGH, tag="b")
    first = [
        Decision(finding="AR-a0", action=DecisionAction.ACCEPT, reason="added a rollback step"),
        Decision(finding="AR-a1", action=DecisionAction.RESCOPE, reason="only for v2 tables"),
        Decision(finding="AR-a2", action=DecisionAction.REJECT, reason="runs in one transaction"),
    ]
    second = [Decision(finding="AR-b0", action=DecisionAction.ACCEPT, reason=None)]
    hooks = RecordingHooks(fixes=[first, second])
    reviewer = ScriptedReviewer(
        [
            ok(Operation.INITIAL, r1, session="thread-1", tokens=100, thread_tokens=100),
            # A resume that finds no new session id keeps the prior one: the thread is the same.
            ok(Operation.RESUME, r2, session=None, tokens=50, thread_tokens=150),
            ok(Operation.RESUME, review(Verdict.APPROVED, tag="c"), tokens=30, thread_tokens=180),
        ]
    )

    result = run_loop(target, reviewer, max_rounds=5, hooks=hooks)

    assert result.status is ReviewStatus.APPROVED
    assert [(r.number, r.operation) for r in result.rounds] == [
        (1, Operation.INITIAL),
        (2, Operation.RESUME),
        (3, Operation.RESUME),
    ]
    assert hooks.fix_calls == [1, 2]
    assert [r.number for r in hooks.done] == [1, 2, 3]
    assert [r.session_id for r in reviewer.requests] == [None, "thread-1", "thread-1"]
    assert [r.prior_usage for r in reviewer.requests] == [TokenUsage(), usage(100), usage(150)]
    assert result.rounds[1].decisions == tuple(first)
    assert result.rounds[2].decisions == tuple(second)
    assert captured["rereview"][0] == {
        "applied": ["AR-a0 (problem 0 a): added a rollback step"],
        "rescoped": ["AR-a1 (problem 1 a): only for v2 tables"],
        "rejected": ["AR-a2 (problem 2 a): runs in one transaction"],
        "answered": "",
        "language": "English",
        "output_format": target.output_format,
    }
    prompt = reviewer.requests[1].prompt_body
    for text in ("Applied", "Re-scoped", "Rejected with reasoning", "runs in one transaction"):
        assert text in prompt
    assert prompt.endswith("<!-- modified for resume -->")
    assert captured["rereview"][1]["applied"] == ["AR-b0 (problem 0 b)"]
    assert result.usage == usage(100) + usage(50) + usage(30)
    assert result.session_id == "thread-1"


def test_applied_summary_is_prepended_to_applied(
    target: ReviewTarget, captured: dict[str, list[dict[str, Any]]]
) -> None:
    hooks = RecordingHooks(summary="Rewrote section 3 (rollback).")
    accept = Decision(finding="AR-r10", action=DecisionAction.ACCEPT, reason="done")
    reviewer = ScriptedReviewer([ok(Operation.RESUME, review(Verdict.APPROVED))])

    run_loop(target, reviewer, max_rounds=5, hooks=hooks, history=CRIT_HISTORY, decisions=[accept])

    assert captured["rereview"][0]["applied"] == [
        "Rewrote section 3 (rollback).",
        "AR-r10 (problem 0 r1): done",
    ]


def test_history_continues_numbering_with_a_resume_of_the_last_thread(
    target: ReviewTarget, captured: dict[str, list[dict[str, Any]]]
) -> None:
    history = (
        record(1, review(Verdict.REVISE, Severity.HIGH, tag="r1"), session="thread-old"),
        record(
            2,
            review(Verdict.REVISE, Severity.HIGH, tag="r2"),
            operation=Operation.RESUME,
            session=None,
            tokens=40,
        ),
    )
    reviewer = ScriptedReviewer([ok(Operation.RESUME, review(Verdict.APPROVED), session=None)])

    result = run_loop(target, reviewer, max_rounds=5, history=history, decisions=[REJECT])

    assert [r.number for r in result.rounds] == [3]
    assert reviewer.can_resume_calls == ["thread-old"]
    request = reviewer.requests[0]
    assert request.operation is Operation.RESUME
    assert request.session_id == "thread-old"
    # Thread usage rebuilt from the history: initial 100 + resume 40.
    assert request.prior_usage == usage(100) + usage(40)
    assert captured["rereview"][0]["rejected"] == ["AR-r10: runs in one transaction"]
    assert result.session_id == "thread-old"
    assert result.last_round == 3


def test_max_rounds_reached_while_revise(target: ReviewTarget) -> None:
    hooks = RecordingHooks(fixes=[[REJECT], [REJECT], [REJECT]])
    reviewer = ScriptedReviewer(
        [
            ok(Operation.INITIAL, review(Verdict.REVISE, Severity.HIGH)),
            ok(Operation.RESUME, review(Verdict.REVISE, Severity.HIGH)),
        ]
    )

    result = run_loop(target, reviewer, max_rounds=2, hooks=hooks)

    assert result.status is ReviewStatus.MAX_ROUNDS
    assert len(result.rounds) == 2
    # The fixer is not asked after the last allowed round: nothing would review its work.
    assert hooks.fix_calls == [1]


def test_history_at_max_rounds_makes_no_dispatch(target: ReviewTarget) -> None:
    reviewer = ScriptedReviewer([])

    result = run_loop(target, reviewer, max_rounds=1, history=CRIT_HISTORY, decisions=[REJECT])

    assert result.status is ReviewStatus.MAX_ROUNDS
    assert reviewer.requests == []
    assert result.review == CRIT_HISTORY[0].review
    assert result.last_round == 1


def test_retries_inside_a_dispatch_do_not_consume_rounds(target: ReviewTarget) -> None:
    reviewer = ScriptedReviewer([ok(Operation.INITIAL, review(Verdict.APPROVED), attempts=2)])

    result = run_loop(target, reviewer, max_rounds=1)

    assert result.status is ReviewStatus.APPROVED
    assert [r.number for r in result.rounds] == [1]


# -- fallback chain ---------------------------------------------------------------------


def test_resume_failure_with_critical_runs_fresh_exec_with_every_round_verbatim(
    target: ReviewTarget, captured: dict[str, list[dict[str, Any]]]
) -> None:
    r1 = review(Verdict.REVISE, Severity.CRITICAL, tag="one")
    r2 = review(Verdict.REVISE, Severity.CRITICAL, Severity.MEDIUM, tag="two")
    d1 = Decision(finding="AR-one0", action=DecisionAction.ACCEPT, reason="added a lock")
    history = (
        record(1, r1),
        record(2, r2, operation=Operation.RESUME, decisions=[d1]),
    )
    d2 = Decision(finding="AR-two1", action=DecisionAction.REJECT, reason="not reachable")
    reviewer = ScriptedReviewer(
        [
            failed(Operation.RESUME, RunnerStatus.LAUNCH_FAILURE, tokens=7),
            ok(Operation.FRESH_EXEC, review(Verdict.APPROVED), session="thread-new", tokens=90),
        ]
    )

    result = run_loop(
        target, reviewer, max_rounds=5, hooks=RecordingHooks(), history=history, decisions=[d2]
    )

    assert result.status is ReviewStatus.APPROVED
    assert [(r.number, r.operation) for r in result.rounds] == [(3, Operation.FRESH_EXEC)]
    call = captured["fresh"][0]
    assert call["original_body"] == "INITIAL PROMPT BODY"
    assert call["current_state"] == target.content
    rounds = call["previous_rounds"]
    assert [p.number for p in rounds] == [1, 2]
    assert [p.review for p in rounds] == [r1.raw, r2.raw]
    assert "AR-one0 (problem 0 one): accept — added a lock" in rounds[0].decisions
    assert "AR-two1 (problem 1 two): reject — not reachable" in rounds[1].decisions
    fresh_request = reviewer.requests[1]
    assert fresh_request.session_id is None
    assert fresh_request.prior_usage == TokenUsage()
    assert r1.raw in fresh_request.prompt_body
    assert r2.raw in fresh_request.prompt_body
    assert fresh_request.prompt_body.endswith("<!-- modified for fresh-exec -->")
    assert result.session_id == "thread-new"
    assert result.usage == usage(7) + usage(90)


def test_resume_failure_with_medium_only_is_not_verified(target: ReviewTarget) -> None:
    reviewer = ScriptedReviewer([failed(Operation.RESUME, RunnerStatus.TIMEOUT)])

    result = run_loop(target, reviewer, max_rounds=5, history=MEDIUM_HISTORY)

    assert reviewer.operations == [Operation.RESUME]
    assert result.status is ReviewStatus.NOT_VERIFIED
    assert result.error is not None
    assert "NOT VERIFIED" in result.error


def test_resume_failure_without_any_severity_runs_fresh_exec(target: ReviewTarget) -> None:
    # REVISE without parsable findings: "no severity" reads as critical, never weaker.
    history = (record(1, review(Verdict.REVISE)),)
    reviewer = ScriptedReviewer(
        [
            failed(Operation.RESUME, RunnerStatus.TIMEOUT),
            ok(Operation.FRESH_EXEC, review(Verdict.APPROVED)),
        ]
    )

    result = run_loop(target, reviewer, max_rounds=5, history=history)

    assert reviewer.operations == [Operation.RESUME, Operation.FRESH_EXEC]
    assert result.status is ReviewStatus.APPROVED


def test_unresumable_thread_goes_straight_to_fresh_exec(target: ReviewTarget) -> None:
    reviewer = ScriptedReviewer(
        [ok(Operation.FRESH_EXEC, review(Verdict.APPROVED))], resumable=False
    )

    result = run_loop(target, reviewer, max_rounds=5, history=CRIT_HISTORY)

    assert reviewer.can_resume_calls == ["thread-old"]
    assert reviewer.operations == [Operation.FRESH_EXEC]
    assert result.rounds[0].number == 2


def test_reviewer_without_resume_is_never_asked_to_resume(target: ReviewTarget) -> None:
    reviewer = ScriptedReviewer(
        [ok(Operation.FRESH_EXEC, review(Verdict.APPROVED))], supports_resume=False
    )

    result = run_loop(target, reviewer, max_rounds=5, history=CRIT_HISTORY)

    assert reviewer.can_resume_calls == []
    assert reviewer.operations == [Operation.FRESH_EXEC]
    assert result.status is ReviewStatus.APPROVED


def test_unresumable_thread_with_medium_only_makes_no_dispatch(target: ReviewTarget) -> None:
    reviewer = ScriptedReviewer([], resumable=False)

    result = run_loop(target, reviewer, max_rounds=5, history=MEDIUM_HISTORY)

    assert reviewer.requests == []
    assert result.status is ReviewStatus.NOT_VERIFIED


def test_fixer_round_on_unresumable_reviewer_uses_fresh_exec(target: ReviewTarget) -> None:
    hooks = RecordingHooks(fixes=[[REJECT]])
    reviewer = ScriptedReviewer(
        [
            ok(Operation.INITIAL, review(Verdict.REVISE, Severity.HIGH)),
            ok(Operation.FRESH_EXEC, review(Verdict.APPROVED)),
        ],
        supports_resume=False,
    )

    result = run_loop(target, reviewer, max_rounds=5, hooks=hooks)

    assert reviewer.operations == [Operation.INITIAL, Operation.FRESH_EXEC]
    assert [(r.number, r.operation) for r in result.rounds] == [
        (1, Operation.INITIAL),
        (2, Operation.FRESH_EXEC),
    ]
    assert result.rounds[1].decisions == (REJECT,)


# -- mutation ---------------------------------------------------------------------------


def test_mutation_stops_the_loop_and_the_fixer_is_never_called(target: ReviewTarget) -> None:
    hooks = RecordingHooks(fixes=[[REJECT]], mutations={1: ["README.md", "src/app.py"]})
    reviewer = ScriptedReviewer([ok(Operation.INITIAL, review(Verdict.REVISE, Severity.HIGH))])

    result = run_loop(target, reviewer, max_rounds=5, hooks=hooks)

    assert result.status is ReviewStatus.ABORTED
    assert result.mutations == ("README.md", "src/app.py")
    assert hooks.fix_calls == []
    assert hooks.done == []
    assert result.rounds == ()


def test_mutation_is_checked_after_a_failed_dispatch_too(target: ReviewTarget) -> None:
    hooks = RecordingHooks(mutations={1: ["notes.txt"]})
    reviewer = ScriptedReviewer([failed(Operation.RESUME, RunnerStatus.TIMEOUT)])

    result = run_loop(target, reviewer, max_rounds=5, hooks=hooks, history=CRIT_HISTORY)

    assert reviewer.operations == [Operation.RESUME]  # no fresh exec after a mutation
    assert result.status is ReviewStatus.ABORTED
    assert result.mutations == ("notes.txt",)


def test_mutation_is_checked_after_every_dispatch_with_its_round_number(
    target: ReviewTarget,
) -> None:
    hooks = RecordingHooks(fixes=[[REJECT]])
    reviewer = ScriptedReviewer(
        [
            ok(Operation.INITIAL, review(Verdict.REVISE, Severity.HIGH)),
            failed(Operation.RESUME, RunnerStatus.TIMEOUT),
            ok(Operation.FRESH_EXEC, review(Verdict.APPROVED)),
        ]
    )

    run_loop(target, reviewer, max_rounds=5, hooks=hooks)

    assert hooks.mutation_checks == [1, 2, 2]


# -- usage ------------------------------------------------------------------------------


def test_usage_sums_every_dispatch_including_failed_ones(target: ReviewTarget) -> None:
    reviewer = ScriptedReviewer(
        [
            degraded_env(Operation.RESUME, tokens=20),
            failed(Operation.FRESH_EXEC, RunnerStatus.TIMEOUT, tokens=300),
        ]
    )

    result = run_loop(target, reviewer, max_rounds=5, history=CRIT_HISTORY)

    assert result.status is ReviewStatus.NOT_VERIFIED
    assert result.usage == usage(20) + usage(300)


def test_default_hooks_are_no_ops(target: ReviewTarget) -> None:
    hooks = LoopHooks()
    rec = record(1, review(Verdict.REVISE, Severity.HIGH))

    assert hooks.modify_prompt(Operation.INITIAL, "body") == "body"
    assert rec.review is not None
    assert hooks.fix(rec.review, rec) is None
    hooks.round_done(rec)
    assert hooks.check_mutation(1) == ()
    assert hooks.applied_summary() is None
    result = run_loop(
        target, ScriptedReviewer([ok(Operation.INITIAL, review(Verdict.APPROVED))]), max_rounds=3
    )
    assert isinstance(result, LoopResult)
    assert result.status is ReviewStatus.APPROVED


def test_fresh_exec_shows_the_content_a_fixer_changed(
    target: ReviewTarget, captured: dict[str, list[dict[str, Any]]]
) -> None:
    class EditedHooks(LoopHooks):
        def current_content(self) -> str | None:
            return "THE PLAN AFTER THE FIX"

    reviewer = ScriptedReviewer(
        [
            failed(Operation.RESUME, RunnerStatus.LAUNCH_FAILURE),
            ok(Operation.FRESH_EXEC, review(Verdict.APPROVED)),
        ]
    )
    run_loop(target, reviewer, max_rounds=5, hooks=EditedHooks(), history=CRIT_HISTORY)
    assert captured["fresh"][0]["current_state"] == "THE PLAN AFTER THE FIX"


def test_command_backend_rereviews_medium_findings_as_a_fresh_run(target: ReviewTarget) -> None:
    # No resume by design: the severity rule only governs recovery from a failed resume.
    reviewer = ScriptedReviewer(
        [ok(Operation.FRESH_EXEC, review(Verdict.APPROVED))], supports_resume=False
    )
    result = run_loop(target, reviewer, max_rounds=5, history=MEDIUM_HISTORY)
    assert reviewer.operations == [Operation.FRESH_EXEC]
    assert result.status is ReviewStatus.APPROVED
