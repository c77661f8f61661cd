"""The ``command`` backend: any CLI that reads the prompt on stdin and prints the review.

For example ``--advreview-reviewer=command --advreview-command="claude -p"``.  There is
no thread to resume, so later rounds are fresh runs that carry the earlier rounds in the
prompt (the loop's fresh-exec path).  The checks are the runner contract's, minus the
session id: exit code, then the review text (empty, no verdict, REVISE without a
severity, APPROVED with a finding at or above fail-on → one retry).
"""

from __future__ import annotations

import os
import secrets
import shlex
import threading
import time
from collections.abc import Mapping, Sequence

from .. import parse
from ..models import ReviewQuality, RunnerResult, RunnerStatus, Triage
from ..prompts import with_marker
from . import DispatchRequest, DispatchResult, environment
from ._process import clip, launch, read_text, tail

__all__ = ["CommandReviewer"]


_CANCELLED = (
    "the review was stopped because pytest is stopping (-x, --maxfail or Ctrl-C); its "
    "process group was killed"
)


class CommandReviewer:
    """A reviewer backend that pipes the prompt into an arbitrary command."""

    name = "command"
    supports_resume = False

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        timeout: float = 600.0,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise ValueError("the review command is empty")
        self.timeout = timeout
        self.env = dict(env or {})
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
        result: RunnerResult | None = None
        text: str | None = None
        attempts = 0
        for attempts in (1, 2):  # noqa: B007 - the last value is the attempt count
            result, text = self._attempt(request)
            if result.result is RunnerStatus.SUCCESS or self._cancel.is_set():
                break
        assert result is not None
        review = (
            parse.analyse(text, request.output_format, request.fail_on).review if text else None
        )
        return DispatchResult(
            runner=result,
            operation=request.operation,
            review=review,
            attempts=attempts,
            duration_s=time.monotonic() - started,
        )

    def _attempt(self, request: DispatchRequest) -> tuple[RunnerResult, str | None]:
        attempt_id = f"{secrets.randbelow(1_000_000):06d}"
        work = request.work_dir
        prompt = work / "prompt.md"
        out = work / "review.md"
        err = work / "stderr.txt"
        prompt.write_text(
            with_marker(request.prompt_body, request.review_id, attempt_id), encoding="utf-8"
        )
        out.unlink(missing_ok=True)
        # The command authenticates itself (e.g. ANTHROPIC_API_KEY for `claude -p`), so its
        # environment stays whole, except what no reviewer needs: the state-signing key.
        env = environment.reviewer_process_env({**os.environ, **self.env})
        if self._cancel.is_set():
            return self._failed(attempt_id, RunnerStatus.INFRA_ERROR, _CANCELLED), None
        try:
            rc = launch(
                self.argv,
                cwd=request.repo_root,
                stdin_file=prompt,
                stdout_file=out,
                stderr_file=err,
                env=env,
                timeout=self.timeout,
                cancel=self._cancel,
            )
        except OSError as exc:
            return self._failed(
                attempt_id,
                RunnerStatus.LAUNCH_FAILURE,
                f"cannot run review command {self.argv[0]!r}: {exc}",
            ), None
        if rc is None and self._cancel.is_set():
            return self._failed(attempt_id, RunnerStatus.INFRA_ERROR, _CANCELLED), None
        if rc is None:
            return self._failed(
                attempt_id,
                RunnerStatus.TIMEOUT,
                f"review command did not finish within {self.timeout:g}s",
            ), None
        if rc != 0:
            return self._failed(
                attempt_id,
                RunnerStatus.LAUNCH_FAILURE,
                f"review command exited {rc}: {tail(read_text(err))}",
            ), None
        text = read_text(out) or ""
        analysis = parse.analyse(text, request.output_format, request.fail_on)
        if not text.strip() or (
            analysis.drift and analysis.quality is not ReviewQuality.DEGRADED_ENVIRONMENTAL
        ):
            reason = analysis.drift or "empty review"
            return self._failed(
                attempt_id, RunnerStatus.LAUNCH_FAILURE, f"reviewer format drift: {reason}"
            ), None
        return RunnerResult(
            result=RunnerStatus.SUCCESS,
            verdict=analysis.review.verdict,
            review_file=str(out),
            attempt_id=attempt_id,
            review_quality=analysis.quality,
            triage=analysis.triage,
        ), text

    @staticmethod
    def _failed(attempt_id: str, status: RunnerStatus, errors: str) -> RunnerResult:
        return RunnerResult(
            result=status,
            attempt_id=attempt_id,
            errors=clip(errors),
            triage=Triage(status="skipped"),
        )
