"""An in-process scripted reviewer: the plugin's review logic tested without starting a CLI.

:class:`ScriptedReviewer` is a reviewer backend (the :class:`~pytest_advreview.runner.Reviewer`
protocol) that answers every dispatch from the same kind of script as the scripted
Responses server (:mod:`.server`; its matching and counting code, :func:`.server.choose_step`,
is reused), so a test written against the server moves over by swapping the fixture:

* one *request* per attempt: ``last_user`` is the prompt as a backend sends it (the session
  marker, then the body); ``body`` is the thread's history (earlier prompts and answers)
  plus that prompt, as ``{"input": [...]}``;
* an initial or fresh-exec attempt starts a new thread (a UUID, like Codex's); a resume
  continues ``request.session_id``, and the rule counters are per thread as on the server;
* usage is the server's default (input tokens: the size of the request body; output:
  the bytes of the answer), and ``thread_usage`` is cumulative per thread, as Codex
  reports it; a step's ``"usage"`` overrides it.

STEP kinds and what the backend makes of them: ``message`` is the review (empty, or a
review the parser calls drift, is a failed attempt retried once, as with Codex);
``http_status``, ``failed``, ``truncate``, ``truncate_after_items`` and
``hang_after_created`` are failed attempts (retried once); ``hang`` waits (until the
timeout: a timeout; until pytest stops: cancelled); ``latency`` delays the answer.  Tool
calls (``function_call``, ``custom_tool_call``, ``items``) are refused when the script
is set: the scripted reviewer runs no tool of Codex's, so tests of tool calls, the
sandbox, the environment, rollouts or process handling stay on the real CLI
(``codex_executable``).

One step kind is the in-process reviewer's own: ``{"run": CMD, "call_id": C}``
(:func:`run_step`) runs ``CMD`` with ``/bin/sh -c`` in the reviewer's workspace (the
``repo_root`` the plugin hands the backend, Codex's ``-C``), with no sandbox, the test
process's environment and ``$ADVREVIEW_SCRIPTED_PROMPT`` naming a file that holds the
prompt; its exit code and output go back in the next request as a ``function_call`` and
its ``function_call_output`` (as Codex sends a tool's output), and the step after it
answers that request, like :func:`.server.shell_step` with the real CLI.  It is for the
plugin's logic around a reviewer that reads or writes (what the prompt's commands show,
a write the plugin must catch); what the real tool shell can reach stays on the real CLI.
The event stream shows the command (``command_execution``) while it runs.

The script and the log live in a folder (``state.json``, ``requests.jsonl``, one lock),
so the backend works in the pytest process under test, in a ``runpytest_subprocess`` and
in every xdist worker alike, while the test reads the prompts through
:class:`ScriptedReviews` (the same :class:`~.server.LoggedRequest` objects as
``ScriptedServer.response_requests``).  The ``scripted_reviewer`` fixture
(:mod:`.fixtures`) writes the conftest that plugs the backend in through
``pytest_advreview_make_reviewer``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, cast

from .. import parse
from ..models import (
    Operation,
    ReviewQuality,
    RunnerResult,
    RunnerStatus,
    TokenUsage,
    Triage,
)
from ..prompts import with_marker
from ..runner import (
    CANCELLED,
    STREAM_FILE,
    DispatchRequest,
    DispatchResult,
    dispatch_usage,
    retry_once,
)
from ..runner._process import kill_group
from ..runner.codex import _Attempt  # one attempt type for both backends
from .server import FAKE_MODEL, LoggedRequest, choose_step, validate_script

__all__ = [
    "PROMPT_FILE_ENV",
    "SCRIPTED_REVIEWER_NAME",
    "ScriptedReviewer",
    "ScriptedReviews",
    "run_step",
]

#: The backend's own name (``Reviewer.name``).  Not a built-in name, so the fixture path
#: keeps it when it stands in for ``codex`` (``review.make_reviewer``).
SCRIPTED_REVIEWER_NAME = "scripted"

_STATE = "state.json"
_LOG = "requests.jsonl"
_LOCK = ".lock"
#: Steps that ask for a tool call: there is no tool to run in process.
_TOOL_STEPS = ("function_call", "custom_tool_call", "items")
#: The path logged requests carry, so code filtering like ``response_requests`` keeps them.
_PATH = "/v1/responses"
#: The step the in-process reviewer runs itself (:func:`run_step`).
_RUN = "run"
#: In a ``run`` step's command: the file holding the prompt the reviewer was given.
PROMPT_FILE_ENV = "ADVREVIEW_SCRIPTED_PROMPT"


def run_step(cmd: str, call_id: str = "c1") -> dict[str, Any]:
    """A step in which the in-process reviewer runs ``cmd`` in its workspace itself.

    The scripted reviewer's counterpart of :func:`.server.shell_step` (see the module
    doc): ``cmd`` runs under ``/bin/sh -c`` in the reviewer's working directory, without a
    sandbox, and the step after it answers the request that carries its output.
    """
    return {_RUN: cmd, "call_id": call_id}


def _steps(script: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """``(where, step)`` of every step of a validated script."""
    steps: list[tuple[str, Any]] = []
    for number, rule in enumerate(script.get("rules", [])):
        steps += [(f"rule {number} step {i}", step) for i, step in enumerate(rule["steps"])]
    default = script.get("default", [])
    for index, step in enumerate(default if isinstance(default, list) else [default]):
        steps.append((f"default step {index}", step))
    return steps


def _runs_as_messages(script: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``script`` whose ``run`` steps are messages, for the server's checks
    (which know no ``run``); a ``run`` with another step kind still fails them."""
    copy = cast("dict[str, Any]", json.loads(json.dumps(script)))

    def swap(step: Any) -> Any:
        if isinstance(step, dict) and _RUN in step:
            if not isinstance(step[_RUN], str) or not step[_RUN].strip():
                raise ValueError("advreview scripted reviewer: 'run' must be a command string")
            return {**{k: v for k, v in step.items() if k != _RUN}, "message": ""}
        return step

    for rule in copy.get("rules", []) if isinstance(copy.get("rules"), list) else []:
        if isinstance(rule, dict) and isinstance(rule.get("steps"), list):
            rule["steps"] = [swap(step) for step in rule["steps"]]
    if isinstance(copy.get("default"), list):
        copy["default"] = [swap(step) for step in copy["default"]]
    elif "default" in copy:
        copy["default"] = swap(copy["default"])
    return copy


def _validate(script: Mapping[str, Any]) -> None:
    """The server's checks, plus: no tool-call step (the reviewer runs no tools)."""
    validate_script(_runs_as_messages(script))
    for where, step in _steps(script):
        if "hold" in step:
            raise ValueError(
                f"advreview scripted reviewer: {where} has a 'hold', which waits for "
                "requests arriving at the scripted server; use 'latency' in process"
            )
        kinds = [kind for kind in _TOOL_STEPS if kind in step]
        if kinds:
            raise ValueError(
                f"advreview scripted reviewer: {where} is a {kinds[0]} step, but the "
                "in-process reviewer runs no tools; drive tool calls with the real CLI "
                "(codex_executable and advreview_server)"
            )


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One writer at a time across processes (xdist workers share the folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / _LOCK).open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read_state(folder: Path) -> dict[str, Any]:
    try:
        state = json.loads((folder / _STATE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        state = {}
    state.setdefault("script", {"rules": []})
    state.setdefault("counters", [])
    state.setdefault("threads", {})
    return cast("dict[str, Any]", state)


def _write_state(folder: Path, state: Mapping[str, Any]) -> None:
    target = folder / _STATE
    partial = target.with_suffix(".tmp")
    partial.write_text(json.dumps(state), encoding="utf-8")
    partial.replace(target)


class ScriptedReviews:
    """The test's side of a :class:`ScriptedReviewer`: its script and the requests it got.

    Mirrors :class:`~.server.ScriptedServer`'s script and log API (``set_script``,
    ``requests``, ``response_requests``, ``clear_requests``), so assertions written for the
    server read the same.

    :param folder: where the script and the log are kept (created when missing).
    :param script: the initial script; without one every prompt gets the server's
        fallback answer (``VERDICT: APPROVED``).
    """

    def __init__(self, folder: Path, script: Mapping[str, Any] | None = None) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        if script is not None:
            self.set_script(script)

    def set_script(self, script: Mapping[str, Any]) -> None:
        """Replace the script and reset every step counter (threads are kept).

        :raises ValueError: when the script's shape is wrong or it has a tool-call step.
        """
        copy = cast("dict[str, Any]", json.loads(json.dumps(script)))
        _validate(copy)
        with _locked(self.folder):
            state = _read_state(self.folder)
            state["script"] = copy
            state["counters"] = []
            _write_state(self.folder, state)

    @property
    def requests(self) -> list[LoggedRequest]:
        """Every request (one per attempt) received so far, in arrival order."""
        try:
            lines = (self.folder / _LOG).read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        logged = []
        for index, line in enumerate(lines):
            entry = json.loads(line)
            logged.append(
                LoggedRequest(
                    index=index,
                    method="POST",
                    path=_PATH,
                    headers=entry["headers"],
                    body=entry["body"],
                    raw_size=entry["raw_size"],
                    rule=entry["rule"],
                    step=entry["step"],
                )
            )
        return logged

    @property
    def response_requests(self) -> list[LoggedRequest]:
        """The same as :attr:`requests`: every request is a model call."""
        return self.requests

    def clear_requests(self) -> None:
        """Forget the logged requests (counters and threads are kept)."""
        with _locked(self.folder):
            (self.folder / _LOG).unlink(missing_ok=True)

    def conftest(self, name: str = "codex", timeout: float = 60.0) -> str:
        """The source of a ``conftest.py`` whose hook builds the backend for ``name``.

        ``codex`` (the default) stands the scripted reviewer in for the built-in Codex
        backend, so a run reviews with the default settings; any other name needs
        ``--advreview-reviewer=NAME``.

        :param timeout: seconds after which a ``hang`` step is a timeout.
        """
        return (
            "from pytest_advreview.testing.scripted import ScriptedReviewer\n\n\n"
            "def pytest_advreview_make_reviewer(config, name):\n"
            f"    if name == {name!r}:\n"
            f"        return ScriptedReviewer({str(self.folder)!r}, timeout={timeout!r})\n"
            "    return None\n"
        )


class ScriptedReviewer:
    """A reviewer backend answering from a script kept in ``folder``; see the module doc.

    :param folder: the folder of a :class:`ScriptedReviews` (a ``str`` is accepted, for
        the generated conftest).
    :param timeout: seconds per attempt; a longer ``hang`` step is a timeout.
    """

    name = SCRIPTED_REVIEWER_NAME
    supports_resume = True

    def __init__(self, folder: Path | str, *, timeout: float = 60.0) -> None:
        self.folder = Path(folder)
        self.timeout = timeout
        self._cancel = threading.Event()

    def cancel(self) -> None:
        """Stop a waiting attempt now and start no other (pytest is stopping)."""
        self._cancel.set()

    def can_resume(self, session_id: str) -> bool:
        """Whether the thread was started by this script folder's reviewer."""
        with _locked(self.folder):
            return session_id in _read_state(self.folder)["threads"]

    def dispatch(self, request: DispatchRequest) -> DispatchResult:
        """One attempt, one retry when it failed and may pass, then the runner's result."""
        started = time.monotonic()
        request.work_dir.mkdir(parents=True, exist_ok=True)
        problem = _input_problem(request)
        if problem is not None:
            attempt, attempts = _Attempt("000000", RunnerStatus.INPUT_ERROR, errors=problem), 0
        else:
            attempt, attempts = retry_once(
                lambda: self._attempt(request),
                lambda failed: (
                    failed.status is not RunnerStatus.SUCCESS
                    and not failed.terminal
                    and not self._cancel.is_set()
                ),
            )
        return _result(request, attempt, attempts, started)

    def _attempt(self, request: DispatchRequest) -> _Attempt:
        attempt_id = f"{secrets.randbelow(1_000_000):06d}"
        work = request.work_dir
        prompt = with_marker(request.prompt_body, request.review_id, attempt_id)
        kind = "resume-prompt" if request.operation is Operation.RESUME else "prompt"
        (work / f"{kind}.md").write_text(prompt, encoding="utf-8")
        (work / "review.md").unlink(missing_ok=True)
        if self._cancel.is_set():
            return _cancelled(attempt_id)
        resume = request.operation is Operation.RESUME
        thread = request.session_id if resume and request.session_id else str(uuid.uuid4())
        user = {"role": "user", "content": [{"type": "input_text", "text": prompt}]}
        # This attempt's input: the prompt, then each ``run`` step's call and output.
        turn: list[dict[str, Any]] = [user]
        stream = work / STREAM_FILE
        begun = False
        while True:
            with _locked(self.folder):
                state = _read_state(self.folder)
                if resume and thread not in state["threads"]:
                    why = f"scripted reviewer: no thread {thread} to resume"
                    return _Attempt(attempt_id, RunnerStatus.LAUNCH_FAILURE, errors=why)
                known = state["threads"].get(thread, {"input": [], "usage": {}})
                body = {"model": FAKE_MODEL, "input": [*known["input"], *turn]}
                raw = json.dumps(body).encode()
                probe = LoggedRequest(0, "POST", _PATH, {"thread-id": thread}, body, len(raw))
                counters = {(rule, tid): count for rule, tid, count in state["counters"]}
                rule, index, step = choose_step(state["script"], counters, probe, raw)
                state["counters"] = [[r, t, n] for (r, t), n in counters.items()]
                text = str(step["message"]) if "message" in step else None
                usage: TokenUsage | None = None
                if text is not None:
                    usage = _usage(step, len(raw), text) + TokenUsage(**known["usage"])
                    answer = {
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text}],
                    }
                    known = {"input": [*body["input"], answer], "usage": usage.model_dump()}
                    state["threads"][thread] = known
                _write_state(self.folder, state)
                entry = {
                    "headers": {"thread-id": thread},
                    "body": body,
                    "raw_size": len(raw),
                    "rule": rule,
                    "step": index,
                }
                with (self.folder / _LOG).open("a", encoding="utf-8") as log:
                    log.write(json.dumps(entry) + "\n")
            wait = float(step.get("latency", 0.0))
            if wait > 0 and self._cancel.wait(wait):
                return _cancelled(attempt_id)
            if not begun:
                _begin_stream(stream, thread)
                begun = True
            if _RUN not in step:
                break
            ran = self._run(str(step[_RUN]), request.repo_root, work / f"{kind}.md", stream)
            if isinstance(ran, _Attempt):
                return _replace_id(ran, attempt_id)
            call_id = str(step.get("call_id", "c1"))
            call = {"cmd": step[_RUN]}
            turn.append(
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": json.dumps(call),
                    "call_id": call_id,
                }
            )
            turn.append({"type": "function_call_output", "call_id": call_id, "output": ran})
        _end_stream(stream, text, usage)
        if text is None:
            return self._failed(attempt_id, step)
        return _review(request, attempt_id, thread, text, usage)

    def _run(self, command: str, cwd: Path, prompt: Path, stream: Path) -> str | _Attempt:
        """Run a ``run`` step's command; its exit code and output as a tool's output.

        :returns: the output, or a failed attempt (timeout, cancelled) with no id.
        """
        started = {"type": "command_execution", "command": command, "status": "in_progress"}
        _stream(stream, {"type": "item.started", "item": started})
        proc = subprocess.Popen(
            ["/bin/sh", "-c", command],
            cwd=cwd,
            env={**os.environ, PROMPT_FILE_ENV: str(prompt)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            # Its own group: a timeout kills what the shell started too, which would
            # otherwise hold the output pipe open until it finished on its own.
            start_new_session=True,
        )
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                out, _ = proc.communicate(timeout=0.05)
                break
            except subprocess.TimeoutExpired:
                if self._cancel.is_set() or time.monotonic() >= deadline:
                    kill_group(proc)
                    proc.communicate()
                    if self._cancel.is_set():
                        return _cancelled("")
                    why = f"scripted reviewer: {command!r} did not finish within {self.timeout:g}s"
                    return _Attempt("", RunnerStatus.TIMEOUT, errors=why)
        output = out.decode("utf-8", "replace")
        done = {**started, "status": "completed", "exit_code": proc.returncode}
        _stream(stream, {"type": "item.completed", "item": {**done, "aggregated_output": output}})
        return f"Process exited with code {proc.returncode}\nOutput:\n{output}"

    def _failed(self, attempt_id: str, step: Mapping[str, Any]) -> _Attempt:
        """What a step that is not a message does to the attempt."""
        closed = "scripted reviewer: the stream closed before response.completed"
        if "http_status" in step:
            why = f"scripted reviewer: the model service answered HTTP {step['http_status']}"
        elif "failed" in step:
            why = f"scripted reviewer: the response failed: {step['failed']}"
        elif "hang" in step or "hang_after_created" in step:
            seconds = float(step.get("hang", step.get("hang_after_created", 0.0)))
            if self._cancel.wait(min(seconds, self.timeout)):
                return _cancelled(attempt_id)
            if seconds >= self.timeout:
                why = f"scripted reviewer did not finish within {self.timeout:g}s"
                return _Attempt(attempt_id, RunnerStatus.TIMEOUT, errors=why)
            why = closed
        elif any(kind in step for kind in _TOOL_STEPS):  # only a hand-edited state file
            why = "scripted reviewer: tool calls are not supported in process"
            return _Attempt(attempt_id, RunnerStatus.INFRA_ERROR, terminal=True, errors=why)
        else:
            why = closed
        return _Attempt(attempt_id, RunnerStatus.LAUNCH_FAILURE, errors=why)


def _cancelled(attempt_id: str) -> _Attempt:
    """Pytest is stopping: never retried."""
    return _Attempt(attempt_id, RunnerStatus.INFRA_ERROR, terminal=True, errors=CANCELLED)


def _input_problem(request: DispatchRequest) -> str | None:
    """The checks every backend makes before it starts (the Codex backend's)."""
    if not request.prompt_body.strip():
        return "empty prompt body"
    if not request.repo_root.is_dir():
        return f"repository root {request.repo_root} is not a directory"
    if request.operation is Operation.RESUME and not request.session_id:
        return "resume needs the session id of the thread to continue"
    return None


def _usage(step: Mapping[str, Any], size: int, text: str) -> TokenUsage:
    """The scripted server's default usage for one answer, with the step's ``usage``."""
    raw: dict[str, Any] = {
        "input_tokens": size,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": max(1, len(text.encode())),
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    raw.update(step.get("usage") or {})
    return TokenUsage(
        input_tokens=int(raw["input_tokens"]),
        cached_input_tokens=int(raw["input_tokens_details"].get("cached_tokens", 0)),
        output_tokens=int(raw["output_tokens"]),
        reasoning_output_tokens=int(raw["output_tokens_details"].get("reasoning_tokens", 0)),
    )


def _stream(path: Path, event: Mapping[str, Any], *, fresh: bool = False) -> None:
    """Add one event to a Codex-like ``--json`` event stream (the progress display reads
    it while the review runs)."""
    with path.open("w" if fresh else "a", encoding="utf-8") as handle:
        handle.write(json.dumps(event) + "\n")


def _begin_stream(path: Path, thread: str) -> None:
    _stream(path, {"type": "thread.started", "thread_id": thread}, fresh=True)
    _stream(path, {"type": "turn.started"})


def _end_stream(path: Path, text: str | None, usage: TokenUsage | None) -> None:
    """The stream's last events: the answer and the turn's end, or the turn's failure."""
    if text is not None and usage is not None:
        _stream(path, {"type": "item.completed", "item": {"type": "agent_message", "text": text}})
        _stream(path, {"type": "turn.completed", "usage": usage.model_dump()})
    else:
        _stream(path, {"type": "turn.failed", "error": {"message": "scripted failure"}})


def _review(
    request: DispatchRequest, attempt_id: str, thread: str, text: str, usage: TokenUsage | None
) -> _Attempt:
    """Check the answer as the Codex backend checks its review file."""
    failed = _Attempt(attempt_id, RunnerStatus.LAUNCH_FAILURE, thread_usage=usage)
    if not text.strip():
        return _replace(failed, errors="review file is missing or empty")
    (request.work_dir / "review.md").write_text(text, encoding="utf-8")
    analysis = parse.analyse(text, request.output_format, request.fail_on)
    if analysis.drift is not None and analysis.quality is not ReviewQuality.DEGRADED_ENVIRONMENTAL:
        return _replace(failed, errors=f"reviewer format drift: {analysis.drift}")
    return _Attempt(
        attempt_id,
        session_id=thread,
        review=analysis.review,
        quality=analysis.quality,
        triage=analysis.triage,
        thread_usage=usage,
    )


def _replace_id(attempt: _Attempt, attempt_id: str) -> _Attempt:
    return _Attempt(attempt_id, attempt.status, terminal=attempt.terminal, errors=attempt.errors)


def _replace(attempt: _Attempt, *, errors: str) -> _Attempt:
    return _Attempt(
        attempt.attempt_id, attempt.status, errors=errors, thread_usage=attempt.thread_usage
    )


def _result(
    request: DispatchRequest, attempt: _Attempt, attempts: int, started: float
) -> DispatchResult:
    """The :class:`DispatchResult` the Codex backend would build from the same attempt."""
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
    usage, thread_usage = dispatch_usage(request, attempt.thread_usage)
    return DispatchResult(
        runner=runner,
        operation=request.operation,
        review=review,
        usage=usage,
        thread_usage=thread_usage,
        attempts=attempts,
        duration_s=time.monotonic() - started,
    )
