"""The ``claude`` backend: Claude Code (``claude -p``) as a reviewer that can only read.

A second model family for the gate (``--advreview-reviewer=claude``), with the Codex
backend's contract: the same prompt and markdown (or JSON) review, the same parser, one
retry on a failed attempt, the run's attempt timeout and the review's whole limit, the
connect budget, token usage, and resume for later rounds (``--resume <session id>``).

Facts of Claude Code 2.1.332 this backend is built on (measured against the scripted
Messages-API server; docs/confirmation.md, "A second model family"):

* ``--restricted --tools Read,Grep,Glob`` leaves the model exactly ``Read``, ``Grep`` and
  ``Glob``, confined to the working directory (a read outside it is denied; ``--bare``
  would leave only ``Read``), and loads no ``CLAUDE.md``, ``.claude/settings*.json`` or
  ``.mcp.json`` of the checkout: the branch's files are material to review, never the
  reviewer's orders (without it a branch's settings hooks run their commands, measured).
  A call of any other tool (``Write``, ``Edit``, ``Bash``) is answered "No such tool
  available" and nothing runs.  ``--permission-mode dontAsk`` denies whatever no rule
  allows.  With no shell, the code item's diff commands are run by the backend (the
  plugin's own ``git diff`` lines, as argv lists) and their output is handed over.
* Exit code 0 proves nothing: a refused tool call still ends ``success``.  So the event
  stream (``--output-format stream-json --verbose``) is read whole: a call of a tool a
  reviewer may not use makes the attempt an error, never a review, whatever the model
  wrote after it (a reviewer that tries to change or run something is not trusted).
* Connection failures show as ``system/api_retry`` events with no HTTP status; the
  connect budget (:class:`~.reachability.ConnectWatch`) reads them as the stream grows.
* ``--session-id <new uuid>`` names the thread before it starts; ``--resume <id>`` keeps
  the id and resends the whole conversation.  Sessions live under
  ``$CLAUDE_CONFIG_DIR/projects/<cwd>/<id>.jsonl``.
* Tool processes run in their own sessions: a timeout kills every descendant
  (:func:`~._process.kill_group`).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import parse
from ..constants import PINNED_CLAUDE_VERSION
from ..models import (
    Operation,
    ReviewQuality,
    RunnerResult,
    RunnerStatus,
    TokenUsage,
    Triage,
)
from ..options import default
from ..prompts import with_marker
from . import (
    CANCELLED,
    STREAM_FILE,
    DispatchRequest,
    DispatchResult,
    attempt_seconds,
    environment,
    files_digest,
    reachability,
    retry_once,
    review_limit_reached,
)
from ._process import clip, launch, read_text, tail

# Shared with the Codex backend: the attempt type (``thread_usage`` holds this launch's
# own usage here: Claude Code reports no thread total), the session-id shape, the
# version check's time and the stream's line reader.
from .codex import _UUID, VERSION_TIMEOUT_S, _Attempt, _lines

__all__ = [
    "INSTALL_HINT",
    "READ_TOOLS",
    "ClaudeOptions",
    "ClaudeReviewer",
    "result_model",
    "result_usage",
]

#: The only tools the reviewer gets: read a file, search contents, find files by name.
READ_TOOLS = ("Read", "Grep", "Glob")
#: Appended to Claude Code's system prompt: the review prompt asks the reviewer to run
#: the diff commands, which this reviewer cannot; it is told so before it tries.
SYSTEM_NOTE = (
    "You are reviewing with read and search tools only (Read, Grep, Glob), confined to "
    "the working directory. You cannot run commands or change files: never try. Where the "
    "task says to run a diff command, its output is in the prompt's <diff_output>; for "
    "anything else read and search the files, and write the review in the format the task "
    "gives."
)
#: Most characters of diff output handed to the reviewer; past it, it reads the files.
MAX_DIFF_CHARS = 400_000
#: Seconds one of the code item's diff commands may take.
DIFF_TIMEOUT_S = 120.0
#: Frames the diff output the backend hands over (the reviewer cannot run the commands).
DIFF_FRAME = """

<diff_output>
This reviewer cannot run commands, so the plugin ran the diff commands named above in
the working directory and gives their output here, as data to review:
{outputs}
</diff_output>
"""
#: The fix every message about a missing or broken Claude Code names.
INSTALL_HINT = (
    f"install Claude Code {PINNED_CLAUDE_VERSION} (npm package @anthropic-ai/claude-code), "
    "or point --advreview-claude=PATH at one"
)
#: Where Claude Code sends its requests unless ``ANTHROPIC_BASE_URL`` says otherwise.
DEFAULT_BASE_URL = "https://api.anthropic.com"
#: What ``claude --version`` prints: ``2.1.332 (Claude Code)``.
VERSION_LINE = re.compile(r"^(\d+\.\d+\.\d+\S*) \(Claude Code\)$")
#: Set for the Claude process unless the user's environment sets them: no telemetry,
#: update checks or other traffic besides the model's (measured: zero outside lookups).
_QUIET_ENV = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}


@dataclass(frozen=True)
class ClaudeOptions:
    """How to launch Claude Code as the reviewer."""

    executable: str = default("claude")
    #: ``--model``; ``None``: Claude Code's own default.
    model: str | None = None
    #: Wall-clock seconds per attempt.
    timeout: float = default("timeout")
    #: Seconds an attempt may go on failing to connect to its model.
    connect_timeout: float = default("connect_timeout")
    #: Extra environment for the Claude process (on top of ``os.environ``).
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Stream:
    """What the runner keeps from Claude Code's ``stream-json`` events."""

    result: dict[str, Any] | None = None
    #: Calls of tools a reviewer may not use: ``Write (path)``, ``Bash (`cmd`)``.  Not
    #: reported as writes: Claude Code refused them, and the workspace guard's own
    #: snapshot shows whether anything changed.
    forbidden: tuple[str, ...] = ()
    #: Whether the model answered at all (an assistant message).
    answered: bool = False
    #: Retries that never reached the model (no HTTP status), and Claude's word for why.
    unreached: int = 0
    cause: str | None = None


class ClaudeReviewer:
    """``--advreview-reviewer=claude``: Claude Code, headless, with read tools only."""

    name = "claude"
    supports_resume = True

    def __init__(self, options: ClaudeOptions) -> None:
        self.options = options
        self._cancel = threading.Event()

    # -- public ------------------------------------------------------------------------

    @property
    def config_dir(self) -> Path:
        """``$CLAUDE_CONFIG_DIR`` as the Claude process sees it (``~/.claude`` unset)."""
        home = self.options.env.get("CLAUDE_CONFIG_DIR") or os.environ.get("CLAUDE_CONFIG_DIR")
        return Path(home) if home else Path.home() / ".claude"

    @property
    def endpoint(self) -> str:
        """Where the requests go (``ANTHROPIC_BASE_URL``, else Anthropic's API)."""
        return self._env().get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL

    def cancel(self) -> None:
        """Stop every launch now and start no other (pytest is stopping)."""
        self._cancel.set()

    def check_ready(self) -> str | None:
        """Why this run cannot review with this Claude Code (``None``: it can), asked once
        at the start of a run: not found, not executable, or not answering ``--version``
        as Claude Code does."""
        given = self.options.executable
        env = self._env()
        found = shutil.which(given, path=env.get("PATH")) if "/" not in given else given
        if found is None or not os.path.isfile(found) or not os.access(found, os.X_OK):
            what = "is not on PATH" if found is None else "is not an executable file"
            return f"Claude Code {given!r} {what}; {INSTALL_HINT}"
        return self.version(found)[1]

    def version(self, found: str | None = None) -> tuple[str | None, str | None]:
        """``(version, None)`` from ``claude --version``, or ``(None, why not)``."""
        given = found or self.options.executable
        try:
            proc = subprocess.run(
                [given, "--version"],
                env=self._env(),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=VERSION_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return None, f"`{given} --version` failed ({clip(str(exc))}); {INSTALL_HINT}"
        printed = proc.stdout.strip()
        match = VERSION_LINE.match(printed)
        if proc.returncode != 0 or match is None:
            first = (printed or proc.stderr.strip()).splitlines()
            seen = first[0][:200] if first else "nothing"
            return None, (
                f"{given!r} is not Claude Code: `--version` printed {seen!r} (exit "
                f"{proc.returncode}), expected '{PINNED_CLAUDE_VERSION} (Claude Code)'; "
                f"{INSTALL_HINT}"
            )
        return match.group(1), None

    def can_resume(self, session_id: str) -> bool:
        """True when the session's transcript is on this machine."""
        return bool(self._sessions(session_id))

    def session_digest(self, session_id: str) -> str | None:
        """The SHA-256 of the session's transcript files (each name and its bytes);
        ``None`` when none is here.  A session resumes only while its files are the bytes
        the plugin last saw (as Codex's rollouts: docs/safety.md)."""
        return files_digest(self._sessions(session_id), lambda p: f"{p.parent.name}/{p.name}")

    def dispatch(self, request: DispatchRequest) -> DispatchResult:
        """Run one dispatch: an attempt, one retry on a failure that may pass, the result."""
        started = time.monotonic()
        request.work_dir.mkdir(parents=True, exist_ok=True)
        problem = _input_problem(request)
        if problem is not None:
            failed = _Attempt(attempt_id="000000", status=RunnerStatus.INPUT_ERROR, errors=problem)
            return self._result(request, failed, (), 0, started)
        deadline = None if request.time_left_s is None else started + request.time_left_s
        diffs, problem = _diff_outputs(request, self._env())
        if problem is not None:
            failed = _Attempt(attempt_id="000000", status=RunnerStatus.INFRA_ERROR, errors=problem)
            return self._result(request, failed, (), 0, started)
        tried: list[_Attempt] = []

        def attempt_once() -> _Attempt:
            tried.append(self._attempt(request, deadline, diffs))
            return tried[-1]

        attempt, attempts = retry_once(
            attempt_once,
            lambda failed: failed.status is not RunnerStatus.SUCCESS and not failed.terminal,
        )
        return self._result(request, attempt, tuple(tried[:-1]), attempts, started)

    def argv(self, request: DispatchRequest, session_id: str) -> list[str]:
        """The ``claude -p`` launch command (never a shell): read tools only."""
        argv = [
            self.options.executable,
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            # No CLAUDE.md of the checkout, and file tools only inside the working tree.
            "--restricted",
            "--tools",
            ",".join(READ_TOOLS),
            "--allowedTools",
            ",".join(READ_TOOLS),
            "--permission-mode",
            "dontAsk",
            "--append-system-prompt",
            SYSTEM_NOTE,
        ]
        if self.options.model:
            argv += ["--model", self.options.model]
        if request.operation is Operation.RESUME:
            argv += ["--resume", session_id]
        else:
            argv += ["--session-id", session_id]
        return argv

    # -- one attempt -------------------------------------------------------------------

    def _attempt(
        self, request: DispatchRequest, deadline: float | None, diffs: str = ""
    ) -> _Attempt:
        attempt_id = f"{secrets.randbelow(1_000_000):06d}"
        work = request.work_dir
        prompt_file = work / (
            "resume-prompt.md" if request.operation is Operation.RESUME else "prompt.md"
        )
        stream_file = work / STREAM_FILE
        stderr_file = work / "stderr.txt"
        review_file = work / "review.md"
        attempt = _Attempt(attempt_id=attempt_id)

        def fail(status: RunnerStatus, errors: str, *, terminal: bool = False) -> _Attempt:
            return replace(attempt, status=status, errors=clip(errors), terminal=terminal)

        if self._cancel.is_set():
            return fail(RunnerStatus.INFRA_ERROR, CANCELLED, terminal=True)
        timeout = attempt_seconds(self.options.timeout, deadline)
        if timeout <= 0:
            why = review_limit_reached(request.review_timeout_s or 0, self.options.timeout)
            return fail(RunnerStatus.TIMEOUT, why, terminal=True)
        session_id = (
            request.session_id
            if request.operation is Operation.RESUME and request.session_id
            else str(uuid.uuid4())
        )
        try:
            body = with_marker(request.prompt_body, request.review_id, attempt_id)
            prompt_file.write_text(body + diffs, encoding="utf-8")
            # An old review must never pass for this attempt's answer.
            review_file.unlink(missing_ok=True)
        except OSError as exc:
            why = f"cannot write review files in {work}: {exc}"
            return fail(RunnerStatus.INFRA_ERROR, why, terminal=True)
        watch = reachability.ConnectWatch(
            stream_file,
            self._cancel,
            self.options.connect_timeout,
            reconnect=reachability.claude_retry_of,
            answered=_answered,
        )
        try:
            rc = launch(
                self.argv(request, session_id),
                cwd=request.repo_root,
                stdin_file=prompt_file,
                stdout_file=stream_file,
                stderr_file=stderr_file,
                env=self._env(),
                timeout=timeout,
                cancel=watch,
            )
        except FileNotFoundError:
            why = f"Claude Code executable not found: {self.options.executable!r}; {INSTALL_HINT}"
            return fail(RunnerStatus.LAUNCH_FAILURE, why, terminal=True)
        except OSError as exc:
            why = f"cannot start Claude Code ({self.options.executable!r}): {exc}; {INSTALL_HINT}"
            return fail(RunnerStatus.LAUNCH_FAILURE, why, terminal=True)
        if rc is None and self._cancel.is_set():
            return fail(RunnerStatus.INFRA_ERROR, CANCELLED, terminal=True)
        stream = _read_stream(stream_file)
        attempt = replace(attempt, thread_usage=result_usage(stream.result))
        if rc is None and watch.gave_up_after is not None:
            cause = watch.cause or "no connection"
            why = reachability.unreachable_message(
                self.endpoint, cause, watch.tries, watch.gave_up_after
            )
            return fail(RunnerStatus.INFRA_ERROR, why, terminal=True)
        if rc is None and timeout < self.options.timeout:
            why = review_limit_reached(request.review_timeout_s or 0, self.options.timeout)
            return fail(RunnerStatus.TIMEOUT, why, terminal=True)
        if rc is None:
            return fail(
                RunnerStatus.TIMEOUT,
                f"Claude Code did not finish within {self.options.timeout:g}s; it and every "
                "process it started were killed",
            )
        # Before anything else: a reviewer that asked to write or run is not trusted, even
        # though Claude Code refused (no such tool) and the review that followed looks fine.
        if stream.forbidden:
            return fail(
                RunnerStatus.LAUNCH_FAILURE,
                f"the claude reviewer asked for tools a reviewer may not use: "
                f"{', '.join(stream.forbidden)}; Claude Code refused them, but a review whose "
                "model tried to change or run something is not trusted (a pull request may "
                "have told it to); the reviewer has only Read, Grep and Glob",
                terminal=True,
            )
        result = stream.result
        if result is None:
            detail = tail(read_text(stderr_file)) or "no output on stderr"
            return fail(RunnerStatus.LAUNCH_FAILURE, f"claude exited {rc} with no result: {detail}")
        if result.get("is_error") or rc != 0:
            if (
                not stream.answered
                and result.get("terminal_reason") == "api_error"
                and result.get("api_error_status") is None
            ):
                # No HTTP answer at all: never retried (the same network, the same answer).
                cause = str(result.get("result") or stream.cause or "no connection")
                why = reachability.unreachable_message(
                    self.endpoint, clip(cause)[:200], stream.unreached + 1, 0.0
                )
                return fail(RunnerStatus.INFRA_ERROR, why, terminal=True)
            reason = result.get("terminal_reason") or result.get("subtype") or f"rc {rc}"
            said = result.get("result") or result.get("errors") or tail(read_text(stderr_file))
            return fail(RunnerStatus.LAUNCH_FAILURE, f"claude failed ({reason}): {said}")
        ran = result.get("session_id")
        if ran != session_id:
            why = f"claude was asked for session {session_id} but ran session {ran}"
            return fail(RunnerStatus.LAUNCH_FAILURE, why)
        text = result.get("result")
        if not isinstance(text, str) or not text.strip():
            return fail(RunnerStatus.LAUNCH_FAILURE, "review is missing or empty")
        try:
            review_file.write_text(text, encoding="utf-8")
        except OSError as exc:
            return fail(RunnerStatus.INFRA_ERROR, f"cannot keep the review: {exc}", terminal=True)
        analysis = parse.analyse(text, request.output_format, request.fail_on)
        if (
            analysis.drift is not None
            and analysis.quality is not ReviewQuality.DEGRADED_ENVIRONMENTAL
        ):
            return fail(RunnerStatus.LAUNCH_FAILURE, f"reviewer format drift: {analysis.drift}")
        return replace(
            attempt,
            session_id=session_id,
            review=analysis.review,
            quality=analysis.quality,
            triage=analysis.triage,
        )

    def _result(
        self,
        request: DispatchRequest,
        attempt: _Attempt,
        earlier: tuple[_Attempt, ...],
        attempts: int,
        started: float,
    ) -> DispatchResult:
        """The dispatch's result from its last attempt; every attempt's tokens count
        (Claude Code reports each launch's own usage, not the thread's total)."""
        success = attempt.status is RunnerStatus.SUCCESS
        review = attempt.review if success else None
        runner = RunnerResult(
            result=attempt.status,
            verdict=review.verdict if review else None,
            review_file=str(request.work_dir / "review.md") if review else None,
            codex_session_id=attempt.session_id if success else None,
            attempt_id=attempt.attempt_id,
            errors=attempt.errors,
            review_quality=attempt.quality if success else ReviewQuality.UNKNOWN,
            triage=attempt.triage if success else Triage(status="skipped"),
        )
        usage = sum((a.thread_usage or TokenUsage() for a in (*earlier, attempt)), TokenUsage())
        prior = request.prior_usage if request.operation is Operation.RESUME else TokenUsage()
        return DispatchResult(
            runner=runner,
            operation=request.operation,
            review=review,
            usage=usage,
            thread_usage=prior + usage,
            attempts=attempts,
            duration_s=time.monotonic() - started,
        )

    def _env(self) -> dict[str, str]:
        """The Claude process's environment: ours (minus what no reviewer may see), quiet."""
        env = environment.reviewer_process_env({**os.environ, **self.options.env})
        return {**_QUIET_ENV, **env}

    def _sessions(self, session_id: str) -> list[Path]:
        if not _UUID.match(session_id):
            return []
        found = (self.config_dir / "projects").glob(f"*/{session_id}.jsonl")
        return sorted(found, key=lambda p: (p.parent.name, p.name))


# -- helpers ---------------------------------------------------------------------------


def _input_problem(request: DispatchRequest) -> str | None:
    if not request.prompt_body.strip():
        return "empty prompt body"
    if not request.repo_root.is_dir():
        return f"repository root {request.repo_root} is not a directory"
    if request.operation is Operation.RESUME and not request.session_id:
        return "resume needs the session id of the thread to continue"
    return None


def _diff_outputs(request: DispatchRequest, env: Mapping[str, str]) -> tuple[str, str | None]:
    """``(text, None)``: the output of the request's diff commands, framed for the prompt
    (empty without commands); ``("", why)`` when one of them cannot run: a reviewer
    that cannot see the change must not review it.

    The commands are the plugin's own ``git diff`` lines (never the branch's text); each
    runs as an argv list, never through a shell, in the reviewer's working directory.
    """
    outputs: list[str] = []
    left = MAX_DIFF_CHARS
    for command in request.diff_commands:
        argv = shlex.split(command)
        if not argv or argv[0] != "git":
            return "", f"not a git command, not run for the claude reviewer: {command!r}"
        try:
            proc = subprocess.run(
                argv,
                cwd=request.repo_root,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=DIFF_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return "", f"cannot run `{command}` for the claude reviewer: {clip(str(exc))}"
        if proc.returncode != 0:
            said = tail(proc.stderr.decode("utf-8", "replace")) or f"exit {proc.returncode}"
            return "", f"`{command}` failed for the claude reviewer: {said}"
        text = proc.stdout.decode("utf-8", "replace")
        if len(text) > left:
            text = text[:left] + (
                f"\n[cut after {MAX_DIFF_CHARS} characters: read the changed files for the rest]"
            )
        left -= min(len(text), left)
        outputs.append(f"$ {command}\n{text}")
    if not outputs:
        return "", None
    return DIFF_FRAME.format(outputs="\n".join(outputs)), None


def _events(path: Path) -> Iterator[dict[str, Any]]:
    """The stream's JSON objects, line by line (never the whole stream in memory)."""
    for line in _lines(path):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event


def _read_stream(path: Path) -> _Stream:
    """The result, the forbidden tool calls and the failed connections of a stream."""
    result: dict[str, Any] | None = None
    forbidden: list[str] = []
    answered = False
    unreached, cause = 0, None
    for event in _events(path):
        kind = event.get("type")
        if kind == "result":
            result = event
        elif kind == "assistant":
            answered = answered or _answered(event)
            message = event.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else ():
                if not isinstance(block, dict) or block.get("type") != "tool_use":
                    continue
                name = str(block.get("name"))
                if name in READ_TOOLS:
                    continue
                args = block.get("input") if isinstance(block.get("input"), dict) else {}
                assert isinstance(args, dict)
                target = args.get("file_path") or args.get("notebook_path")
                if isinstance(target, str):
                    forbidden.append(f"{name} ({target})")
                elif isinstance(args.get("command"), str):
                    forbidden.append(f"{name} (`{clip(args['command'])[:120]}`)")
                else:
                    forbidden.append(name)
        else:
            found = reachability.claude_retry_of(event)
            if found is not None and found.no_connection:
                unreached, cause = unreached + 1, found.cause
    return _Stream(
        result=result,
        forbidden=tuple(forbidden),
        answered=answered,
        unreached=unreached,
        cause=cause,
    )


def _answered(event: Mapping[str, Any]) -> bool:
    """Whether an event shows the model answered: one of its messages.  Claude Code
    reports an API error as a message of its own too (model ``<synthetic>``), which is
    no answer."""
    message = event.get("message")
    return (
        event.get("type") == "assistant"
        and isinstance(message, dict)
        and message.get("model") != "<synthetic>"
    )


def result_model(result: Mapping[str, Any]) -> str | None:
    """The model Claude Code answered with: the one key of ``modelUsage`` (``None`` when
    it names none or several, which one price cannot cover)."""
    used = result.get("modelUsage")
    if isinstance(used, dict) and len(used) == 1:
        (name,) = used
        return name if isinstance(name, str) and name else None
    return None


def result_usage(result: Mapping[str, Any] | None) -> TokenUsage:
    """Claude Code's ``usage`` block (input, cache reads, output) as a :class:`TokenUsage`."""
    raw = result.get("usage") if result is not None else None
    if not isinstance(raw, dict):
        return TokenUsage()

    def num(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) and value >= 0 else 0

    return TokenUsage(
        input_tokens=num("input_tokens") + num("cache_read_input_tokens"),
        cached_input_tokens=num("cache_read_input_tokens"),
        output_tokens=num("output_tokens"),
    )
