"""The ``command`` backend: any CLI that reads the prompt on stdin and prints the review.

For example ``--advreview-reviewer=command --advreview-command="claude -p"``.  There is
no thread to resume, so later rounds are fresh runs that carry the earlier rounds in the
prompt (the loop's fresh-exec path).  The checks are the runner contract's, minus the
session id: exit code, then the review text (empty, no verdict, REVISE without a
severity, APPROVED with a finding at or above fail-on → one retry).
"""

from __future__ import annotations

import secrets
import shlex
import threading
import time

from .. import parse
from ..models import Review, ReviewQuality, RunnerResult, RunnerStatus, Triage
from ..prompts import with_marker
from . import (
    CANCELLED,
    DispatchRequest,
    DispatchResult,
    attempt_seconds,
    retry_once,
    review_limit_reached,
)
from ._process import clip, read_text, run_piped, tail

__all__ = ["CommandReviewer"]


class CommandReviewer:
    """A reviewer backend that pipes the prompt into an arbitrary command."""

    name = "command"
    supports_resume = False

    def __init__(self, command: str, *, timeout: float) -> None:
        self.argv = shlex.split(command)  # never empty: the option's parser rejects that
        self.timeout = timeout
        self._cancel = threading.Event()

    def cancel(self) -> None:
        """Stop every launch now and start no other (pytest is stopping; see codex.py)."""
        self._cancel.set()

    def can_resume(self, session_id: str) -> bool:
        """Never: a plain command has no thread to continue."""
        return False

    def dispatch(self, request: DispatchRequest) -> DispatchResult:
        """Run the command (one retry on failure) and check the review it printed."""
        started = time.monotonic()
        request.work_dir.mkdir(parents=True, exist_ok=True)
        deadline = None if request.time_left_s is None else started + request.time_left_s
        (result, review), attempts = retry_once(
            lambda: self._attempt(request, deadline),
            lambda failed: (
                failed[0].result is not RunnerStatus.SUCCESS
                and not self._cancel.is_set()
                and attempt_seconds(self.timeout, deadline) > 0
            ),
        )
        return DispatchResult(
            runner=result,
            operation=request.operation,
            review=review,
            attempts=attempts,
            duration_s=time.monotonic() - started,
        )

    def _attempt(
        self, request: DispatchRequest, deadline: float | None = None
    ) -> tuple[RunnerResult, Review | None]:
        attempt_id = f"{secrets.randbelow(1_000_000):06d}"
        out = request.work_dir / "review.md"

        def failed(status: RunnerStatus, errors: str) -> tuple[RunnerResult, None]:
            triage = Triage(status="skipped")
            return RunnerResult(
                result=status, attempt_id=attempt_id, errors=clip(errors), triage=triage
            ), None

        if self._cancel.is_set():
            return failed(RunnerStatus.INFRA_ERROR, CANCELLED)
        timeout = attempt_seconds(self.timeout, deadline)
        limit = review_limit_reached(request.review_timeout_s or 0, self.timeout)
        if timeout <= 0:
            return failed(RunnerStatus.TIMEOUT, limit)
        # The command authenticates itself (e.g. ANTHROPIC_API_KEY for `claude -p`), so its
        # environment stays whole, except what no reviewer needs: the state-signing key.
        try:
            rc = run_piped(
                self.argv,
                prompt=with_marker(request.prompt_body, request.review_id, attempt_id),
                work=request.work_dir,
                names=("prompt.md", out.name, "stderr.txt"),
                cwd=request.repo_root,
                timeout=timeout,
                cancel=self._cancel,
            )
        except OSError as exc:
            return failed(
                RunnerStatus.LAUNCH_FAILURE, f"cannot run review command {self.argv[0]!r}: {exc}"
            )
        if rc is None and self._cancel.is_set():
            return failed(RunnerStatus.INFRA_ERROR, CANCELLED)
        if rc is None and timeout < self.timeout:
            return failed(RunnerStatus.TIMEOUT, limit)
        if rc is None:
            return failed(
                RunnerStatus.TIMEOUT, f"review command did not finish within {self.timeout:g}s"
            )
        if rc != 0:
            stderr = read_text(request.work_dir / "stderr.txt")
            return failed(
                RunnerStatus.LAUNCH_FAILURE, f"review command exited {rc}: {tail(stderr)}"
            )
        text = read_text(out) or ""
        analysis = parse.analyse(text, request.output_format, request.fail_on)
        if not text.strip() or (
            analysis.drift and analysis.quality is not ReviewQuality.DEGRADED_ENVIRONMENTAL
        ):
            reason = analysis.drift or "empty review"
            return failed(RunnerStatus.LAUNCH_FAILURE, f"reviewer format drift: {reason}")
        return RunnerResult(
            result=RunnerStatus.SUCCESS,
            verdict=analysis.review.verdict,
            review_file=str(out),
            attempt_id=attempt_id,
            review_quality=analysis.quality,
            triage=analysis.triage,
        ), analysis.review
