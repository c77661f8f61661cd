"""Which stored threads resume: the session digest check of the reviewer wrapper.

The real Codex runs (a rewritten rollout) are in ``test_session_trust_e2e.py``.
"""

from __future__ import annotations

from typing import Any

from pytest_advreview.models import (
    Operation,
    RoundRecord,
    RunnerResult,
    RunnerStatus,
)
from pytest_advreview.review import _WatchedReviewer
from pytest_advreview.runner import DispatchResult

THREAD = "01a251a3-b891-7971-b3b3-17ad8bd7618d"


class Backend:
    """A backend whose thread is on this machine, with session files of ``digest``."""

    name = "fake"
    supports_resume = True

    def __init__(self, digest: str | None) -> None:
        self.digest = digest

    def can_resume(self, session_id: str) -> bool:
        return session_id == THREAD

    def session_digest(self, session_id: str) -> str | None:
        return self.digest

    def dispatch(self, request: Any) -> DispatchResult:
        runner = RunnerResult(result=RunnerStatus.SUCCESS, attempt_id="a", codex_session_id=THREAD)
        return DispatchResult(runner=runner, operation=Operation.RESUME)


class NoDigest:
    name = "plugin"
    supports_resume = True

    def can_resume(self, session_id: str) -> bool:
        return True


def stored(digest: str | None) -> RoundRecord:
    runner = RunnerResult(
        result=RunnerStatus.SUCCESS,
        attempt_id="a",
        codex_session_id=THREAD,
        codex_session_digest=digest,
    )
    return RoundRecord(number=1, operation=Operation.INITIAL, runner=runner)


def watched(inner: Any, history: tuple[RoundRecord, ...]) -> _WatchedReviewer:
    reviewer = _WatchedReviewer(inner, lambda request: None)
    reviewer.trust(history)
    return reviewer


def test_a_thread_resumes_only_with_the_digest_the_signed_state_recorded() -> None:
    assert watched(Backend("d1"), (stored("d1"),)).can_resume(THREAD)
    rewritten = watched(Backend("forged"), (stored("d1"),))
    assert not rewritten.can_resume(THREAD)
    # The notice goes with the fresh thread's first dispatch, once.
    first = rewritten.dispatch(object())
    assert first.runner.user_warning is not None
    assert "not the ones the plugin recorded (rewritten or foreign)" in first.runner.user_warning
    assert rewritten.dispatch(object()).runner.user_warning is None
    # The dispatch recorded the files' digest: the thread now resumes on them.
    assert first.runner.codex_session_digest == "forged"
    assert rewritten.can_resume(THREAD)


def test_an_entry_without_a_digest_starts_a_fresh_thread_with_a_notice() -> None:
    old = watched(Backend("d1"), (stored(None),))
    assert not old.can_resume(THREAD)
    said = old.dispatch(object()).runner.user_warning or ""
    assert "recorded in the signed state (an entry of an older version)" in said


def test_a_backend_without_session_digests_resumes_as_before() -> None:
    assert watched(NoDigest(), (stored(None),)).can_resume(THREAD)
