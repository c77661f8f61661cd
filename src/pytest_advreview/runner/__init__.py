"""Reviewer backends: the :class:`Reviewer` protocol and the data one dispatch uses.

One *dispatch* is the runner contract's unit of work: at most two launches of the
reviewer (one attempt plus one retry) for one operation (initial, resume, fresh-exec).
The loop (``loop.py``) decides what to dispatch; a backend only runs it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, TypeVar, runtime_checkable

from pydantic import Field

from ..models import (
    Operation,
    OutputFormat,
    Review,
    RunnerResult,
    Severity,
    TokenUsage,
    WireModel,
)

__all__ = [
    "CANCELLED",
    "STREAM_FILE",
    "DispatchRequest",
    "DispatchResult",
    "Reviewer",
    "attempt_seconds",
    "dispatch_usage",
    "files_digest",
    "retry_once",
    "review_limit_reached",
]

#: The file in a request's ``work_dir`` that a backend streams its events to while it
#: runs (Codex's ``--json`` JSONL); the progress display reads it as it grows.
STREAM_FILE = "stdout.jsonl"
#: The error of an attempt stopped because pytest is stopping; never retried.
CANCELLED = (
    "the review was stopped because pytest is stopping (-x, --maxfail or Ctrl-C); its "
    "process group was killed"
)


class DispatchRequest(WireModel):
    """The runner contract's input block, typed.

    Pydantic although it stays in the process: third-party backends
    (``pytest_advreview_make_reviewer``) build and read it, and keyword validation
    keeps a plugin's mistake from reaching the loop.  The same holds for
    :class:`DispatchResult`, which every backend builds.

    ``prompt_body`` is the body *without* the session marker: the runner prepends a fresh
    marker for every attempt.  ``work_dir`` is private to one review (one item), so
    reviews running side by side under xdist never share a file.
    """

    review_id: str
    repo_root: Path
    operation: Operation
    prompt_body: str
    work_dir: Path
    session_id: str | None = None
    output_format: OutputFormat = OutputFormat.MARKDOWN
    #: Cumulative usage Codex reported for this thread so far (resume reports totals).
    prior_usage: TokenUsage = Field(default_factory=TokenUsage)
    #: Whether ``repo_root`` is in a git work tree; outside one, Codex needs
    #: ``--skip-git-repo-check`` (the plugin, not Codex's trust prompt, chose the directory).
    in_git: bool = True
    #: The run's fail-on threshold: ``APPROVED`` with a finding at or above it is format
    #: drift (one retry), never a review to judge.
    fail_on: Severity = Severity.MEDIUM
    #: Seconds the review as a whole has left (``advreview_review_timeout``): no launch of
    #: this dispatch may run past them.  ``None``: no bound beyond each attempt's.
    time_left_s: float | None = None
    #: The review's whole limit, for the message when it is reached.
    review_timeout_s: float | None = None
    #: The code item's ``git diff`` command lines that the prompt tells the reviewer to
    #: run (built by the plugin, never text of the branch).  A backend whose reviewer has
    #: no shell (``claude``) runs them itself and hands their output over.
    diff_commands: tuple[str, ...] = ()


class DispatchResult(WireModel):
    """What one dispatch produced: the runner result plus what the loop needs next."""

    runner: RunnerResult
    operation: Operation
    review: Review | None = None
    #: Tokens used by this dispatch alone (a per-round delta).
    usage: TokenUsage = Field(default_factory=TokenUsage)
    #: Cumulative usage of the thread after this dispatch (feed into the next request).
    thread_usage: TokenUsage = Field(default_factory=TokenUsage)
    attempts: int = 0
    duration_s: float = 0.0
    #: Paths the reviewer reported writing (``file_change`` / write-like commands).
    reported_writes: tuple[str, ...] = ()


@runtime_checkable
class Reviewer(Protocol):
    """A reviewer backend.  Codex is the built-in one; ``command`` is the second."""

    #: Short name shown in the header and summaries (``codex``, ``command``).
    name: str
    #: Whether ``Operation.RESUME`` is possible; without it, later rounds are fresh runs.
    supports_resume: bool

    def dispatch(self, request: DispatchRequest) -> DispatchResult:
        """Run one dispatch (at most one retry inside) and return its result."""
        ...

    def can_resume(self, session_id: str) -> bool:
        """Whether the thread ``session_id`` can be resumed on this machine."""
        ...


_A = TypeVar("_A")


def files_digest(paths: Sequence[Path], name: Callable[[Path], str]) -> str | None:
    """The SHA-256 of a resumable session's files (each ``name(path)``, its length and its
    bytes, in the given order); ``None`` when there are none or one cannot be read.  Kept
    with each round in the signed state: a session resumes only while its files are the
    bytes the plugin last saw (docs/safety.md, "What restored state is trusted")."""
    if not paths:
        return None
    digest = hashlib.sha256()
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError:
            return None
        digest.update(f"{name(path)}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def retry_once(attempt: Callable[[], _A], retry: Callable[[_A], bool]) -> tuple[_A, int]:
    """Run ``attempt``, and exactly once more when ``retry`` says its failure may pass.

    Every call of ``attempt`` launches with a fresh attempt id and session marker.
    Returns the last attempt and how many were made.
    """
    first = attempt()
    return (attempt(), 2) if retry(first) else (first, 1)


def attempt_seconds(timeout: float, deadline: float | None) -> float:
    """The seconds an attempt may run: its own ``timeout``, or what is left before the
    review's ``deadline`` (``time.monotonic()``) when that is less (maybe ``<= 0``)."""
    return timeout if deadline is None else min(timeout, deadline - time.monotonic())


def review_limit_reached(review_timeout: float, attempt_timeout: float | None) -> str:
    """The error of a review stopped by its whole limit, naming both figures."""
    each = (
        f"; each attempt may take {attempt_timeout:g}s (advreview_timeout)"
        if attempt_timeout is not None
        else ""
    )
    return (
        f"the review reached its limit of {review_timeout:g}s (advreview_review_timeout), "
        f"retries and fallback included{each}; find out why the model hangs, or raise "
        "advreview_review_timeout"
    )


def dispatch_usage(
    request: DispatchRequest, reported: TokenUsage | None
) -> tuple[TokenUsage, TokenUsage]:
    """``(usage, thread_usage)`` of one dispatch, from the thread total a backend reported.

    Codex reports cumulative usage per thread: a resume's own tokens are the difference
    from the total before it; a first exec's are the total (nothing reported: none).
    """
    thread_usage = reported or request.prior_usage
    if request.operation is Operation.RESUME:
        return thread_usage.minus(request.prior_usage), thread_usage
    return reported or TokenUsage(), thread_usage
