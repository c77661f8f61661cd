"""A scripted OpenAI Responses-API server on loopback, for driving the real Codex CLI offline.

The server answers ``POST …/responses`` with the minimal server-sent-event stream that Codex
CLI 0.171 accepts (``response.created`` → ``response.output_item.done`` per item →
``response.completed``), chosen by a *script*::

    {"rules": [{"match": "MARK-A", "in": "last_user", "steps": [STEP, STEP, ...]}],
     "default": STEP}

The first rule whose ``match`` string occurs in the text of the last ``role: user`` input
item (``"in": "last_user"``, the default) or anywhere in the raw request body
(``"in": "body"``) answers.  Each rule keeps one counter per ``thread-id`` header: every
request it answers (a retry, a tool round trip, a resume of the same thread) moves on to the
next step, and once past the end the last step repeats.  ``"threads": "all"`` makes a rule
count every request it answers on one counter, so a new ``codex exec`` (a new thread, e.g.
the runner's retry) gets the next step.  Requests no rule matches get
``default`` (a STEP, or a list of steps counted the same way; without a default the server
answers ``{"message": "VERDICT: APPROVED"}``).

STEP kinds (exactly one of the first eight keys, plus the optional modifiers below):

``{"message": T}``
    one assistant message with output text ``T``.
``{"function_call": {"name": N, "arguments": {...}}, "call_id": C}``
    one ``function_call`` item; ``arguments`` is JSON-encoded into the item, as the
    Responses API does.  Codex runs the tool and posts again with its output.
``{"custom_tool_call": {"name": N, "input": S}, "call_id": C}``
    one ``custom_tool_call`` item (``apply_patch`` with a known model slug).
``{"items": [ITEM, ...]}``
    raw output items, sent as they are.
``{"http_status": N, "body": {...}, "headers": {...}}``
    a plain JSON error answer (no stream); ``body`` defaults to an OpenAI-style error.
``{"hang": S}``
    send nothing for ``S`` seconds (or until :meth:`ScriptedServer.stop`), then close.
``{"hang_after_created": S}``
    send ``response.created``, then nothing for ``S`` seconds, then close.
``{"truncate": true}``
    close the stream right after ``response.created``.
``{"failed": {...}}``
    ``response.created`` then ``response.failed`` whose ``response.error`` is the value.

Modifiers: ``"truncate_after_items": true`` (with ``message``/``items``/tool calls: send the
items, then close without ``response.completed``), ``"latency": S`` (sleep before
answering; the server-wide :attr:`ScriptedServer.latency` adds to it), ``"usage":
{...}`` (merged over the default usage of ``response.completed``) and ``"hold": {...}``.

``"hold": {"answering": N, "seen": T, "at_most": S}`` waits, before the latency, for
events instead of a guessed time: until ``N`` Responses requests, this one included, are
being answered at once (``answering``) and a request whose raw body holds the text ``T``
has arrived (``seen``; requests :meth:`ScriptedServer.clear_requests` forgot do not
count), but never longer than ``S`` seconds (default 60), so a test whose event never
comes fails on its assertions instead of hanging.  Both conditions are optional.

**Default usage**: ``input_tokens`` is the size in bytes of the request body (so a benchmark
can read "bytes sent to the model" off Codex's ``turn.completed`` event), ``output_tokens``
is the byte length of the step's message texts (at least 1), cached and reasoning tokens are
0 and ``total_tokens`` is the sum.

Only the standard library is used, so the server runs wherever the tests run.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, cast

from ._http import LoopbackServer, json_object, send_event, send_json, start_sse

__all__ = [
    "FAKE_KEY_ENV",
    "FAKE_KEY_VALUE",
    "FAKE_MODEL",
    "FAKE_PROVIDER",
    "LoggedRequest",
    "ScriptedServer",
    "choose_step",
    "codex_config_argv",
    "codex_provider_args",
    "shell_step",
    "validate_script",
]

#: Name of the environment variable that carries the fake provider's API key.
FAKE_KEY_ENV = "ADVREVIEW_FAKE_KEY"
#: Its dummy value; Codex sends it as ``Authorization: Bearer …`` to the scripted server.
FAKE_KEY_VALUE = "advreview-fake-key"
#: Provider id and model slug the ``-c`` overrides of :func:`codex_provider_args` define.
FAKE_PROVIDER = "advreview-fake"
FAKE_MODEL = "fake-model"

#: Answer used when no rule matches and the script has no ``default``.
_FALLBACK_STEP: dict[str, Any] = {"message": "VERDICT: APPROVED"}
#: Step keys that decide what kind of answer a step is; used to validate scripts early.
_STEP_KINDS = (
    "message",
    "function_call",
    "custom_tool_call",
    "items",
    "http_status",
    "hang",
    "hang_after_created",
    "truncate",
    "failed",
)


def codex_provider_args(
    url: str,
    *,
    provider: str = FAKE_PROVIDER,
    env_key: str = FAKE_KEY_ENV,
    retries: bool = False,
    model: str = FAKE_MODEL,
) -> list[str]:
    """The ``-c`` values that point Codex at ``url`` without any ``config.toml``.

    Each string is one ``KEY=VALUE`` to pass after ``-c`` (they are also what the plugin's
    ``codex-config`` setting takes).  Codex needs them on every ``exec`` **and** ``resume``:
    a resumed thread must find its provider again.

    :param url: base URL of the Responses API, e.g. :attr:`ScriptedServer.url`.
    :param provider: id of the model provider to define and select.
    :param env_key: environment variable whose value Codex sends as the bearer token.
    :param retries: keep Codex's default retries (4 request, 5 stream retries, about 25 s
        for a persistent error).  ``False`` sets both to 0 so an error fails at once.
    :param model: model slug sent in every request.
    """
    prefix = f"model_providers.{provider}"
    values = [
        f"model_provider={provider}",
        f"model={model}",
        f"{prefix}.name={provider}",
        f"{prefix}.base_url={url}",
        f"{prefix}.env_key={env_key}",
    ]
    if not retries:
        values += [f"{prefix}.request_max_retries=0", f"{prefix}.stream_max_retries=0"]
    return values


def codex_config_argv(values: Sequence[str]) -> list[str]:
    """Interleave ``-c`` with each ``KEY=VALUE`` of ``values`` for a Codex argv."""
    argv: list[str] = []
    for value in values:
        argv += ["-c", value]
    return argv


def shell_step(cmd: str, call_id: str = "c1") -> dict[str, Any]:
    """A script step in which the model asks Codex to run ``cmd`` (an ``exec_command`` call).

    Codex runs it under its sandbox and sends the output back in the next request, so the
    step after it answers that request (usually with the review).  Tests of mutation
    detection use it to make a reviewer really write into the workspace.
    """
    call = {"name": "exec_command", "arguments": {"cmd": cmd}}
    return {"function_call": call, "call_id": call_id}


@dataclass(frozen=True)
class LoggedRequest:
    """One request the server received, as it arrived."""

    #: 0-based arrival index.
    index: int
    method: str
    #: Path including any query string, e.g. ``/v1/responses``.
    path: str
    #: Header names in lower case; a repeated header keeps its last value.
    headers: Mapping[str, str]
    #: The parsed JSON body (``{}`` when empty or not a JSON object).
    body: Mapping[str, Any]
    #: Size of the raw body in bytes.
    raw_size: int
    #: Index of the rule that answered, ``None`` for the default (or a non-POST request).
    rule: int | None = None
    #: Index of the step within the rule's steps (after clamping to the last one).
    step: int = 0
    #: How many other Responses requests were being answered (waiting out a latency or a
    #: hang, or streaming) when this one arrived: above 0, two reviews overlapped in time.
    answering: int = 0

    @property
    def thread_id(self) -> str | None:
        """The ``thread-id`` header Codex sends (its thread / session id)."""
        return self.headers.get("thread-id")

    @property
    def input_items(self) -> list[dict[str, Any]]:
        """The ``input`` items of a Responses request."""
        items = self.body.get("input")
        if not isinstance(items, list):
            return []
        return [item for item in items if isinstance(item, dict)]

    @property
    def input_texts(self) -> list[str]:
        """The text of every message in ``input``, in order (all roles)."""
        return [_message_text(item) for item in self.input_items if "role" in item]

    @property
    def last_user_text(self) -> str:
        """The text of the last ``role: user`` input item (the prompt), or ``""``."""
        for item in reversed(self.input_items):
            if item.get("role") == "user":
                return _message_text(item)
        return ""

    @property
    def function_call_outputs(self) -> list[dict[str, Any]]:
        """The ``function_call_output`` / ``custom_tool_call_output`` items in ``input``."""
        kinds = ("function_call_output", "custom_tool_call_output")
        return [item for item in self.input_items if item.get("type") in kinds]


def _message_text(item: Mapping[str, Any]) -> str:
    """Concatenated text parts of one message item (``content`` may also be a string)."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [part.get("text", "") for part in content if isinstance(part, dict)]
    return "".join(part for part in parts if isinstance(part, str))


def _validate_step(step: Any, where: str) -> None:
    """Raise ``ValueError`` naming ``where`` when ``step`` is not a known STEP."""
    if not isinstance(step, dict):
        raise ValueError(f"advreview scripted server: {where} must be a dict, got {step!r}")
    kinds = [kind for kind in _STEP_KINDS if kind in step]
    if len(kinds) != 1:
        raise ValueError(
            f"advreview scripted server: {where} needs exactly one of {', '.join(_STEP_KINDS)};"
            f" got keys {sorted(step)}"
        )
    hold = step.get("hold", {})
    if not isinstance(hold, dict) or not set(hold) <= {"answering", "seen", "at_most"}:
        raise ValueError(
            f"advreview scripted server: {where} 'hold' takes a dict of answering, seen and "
            f"at_most; got {hold!r}"
        )


def choose_step(
    script: Mapping[str, Any],
    counters: dict[tuple[int | None, str | None], int],
    request: LoggedRequest,
    raw: bytes,
) -> tuple[int | None, int, dict[str, Any]]:
    """Pick ``(rule, step index, step)`` of a validated ``script`` for ``request``.

    The matching and counting rules of the module docstring, in one place: the scripted
    server and the in-process scripted reviewer (:mod:`.scripted`) both answer by them.
    ``counters`` (rule index and thread id -> requests answered) is updated.
    """
    steps: list[dict[str, Any]] | None = None
    rule_index: int | None = None
    one_counter = False
    last_user: str | None = None
    body_text: str | None = None
    for number, rule in enumerate(script.get("rules", [])):
        if rule.get("in", "last_user") == "body":
            if body_text is None:
                body_text = raw.decode("utf-8", "replace")
            haystack = body_text
        else:
            if last_user is None:
                last_user = request.last_user_text
            haystack = last_user
        if rule["match"] in haystack:
            steps, rule_index = rule["steps"], number
            one_counter = rule.get("threads", "each") == "all"
            break
    if steps is None:
        default = script.get("default", _FALLBACK_STEP)
        steps = default if isinstance(default, list) else [default]
    key = (rule_index, None if one_counter else request.thread_id)
    count = counters.get(key, 0)
    counters[key] = count + 1
    index = min(count, len(steps) - 1)
    return rule_index, index, steps[index]


def validate_script(script: Mapping[str, Any]) -> None:
    """Check a script's shape up front, so a typo fails the test that set it, not codex."""
    rules = script.get("rules", [])
    if not isinstance(rules, list):
        raise ValueError("advreview scripted server: 'rules' must be a list")
    for number, rule in enumerate(rules):
        if not isinstance(rule, dict) or not isinstance(rule.get("match"), str):
            raise ValueError(f"advreview scripted server: rule {number} needs a 'match' string")
        if rule.get("in", "last_user") not in ("last_user", "body"):
            raise ValueError(
                f"advreview scripted server: rule {number} 'in' must be 'last_user' or 'body'"
            )
        if rule.get("threads", "each") not in ("each", "all"):
            raise ValueError(
                f"advreview scripted server: rule {number} 'threads' must be 'each' or 'all'"
            )
        steps = rule.get("steps")
        if not isinstance(steps, list) or not steps:
            raise ValueError(f"advreview scripted server: rule {number} needs a non-empty 'steps'")
        for index, step in enumerate(steps):
            _validate_step(step, f"rule {number} step {index}")
    if "default" in script:
        default = script["default"]
        defaults = default if isinstance(default, list) else [default]
        if not defaults:
            raise ValueError("advreview scripted server: 'default' must not be an empty list")
        for index, step in enumerate(defaults):
            _validate_step(step, f"default step {index}")


class ScriptedServer(LoopbackServer):
    """A scripted Responses-API server bound to loopback; see the module docstring.

    Use it as a context manager or call :meth:`start` and :meth:`stop`.  ``url`` is the base
    URL to give Codex (``http://127.0.0.1:<port>/v1``).

    :param script: the initial script (``{"rules": [], "default": …}`` when omitted).
    :param host: address to bind; keep the default loopback so nothing leaves the machine.
    :param port: port to bind; 0 picks a free one.
    :param log_dir: when given, every request is also written to ``log_dir/req-NNNN.json``.
    :param latency: seconds added before every answer (on top of a step's ``latency``).
    """

    def __init__(
        self,
        script: Mapping[str, Any] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log_dir: Path | None = None,
        latency: float = 0.0,
    ) -> None:
        super().__init__(host, port)
        self.log_dir = log_dir
        #: Seconds to wait before every answer; may be changed at any time.
        self.latency = latency
        #: Responses requests being answered right now (see LoggedRequest.answering).
        self._answering = 0
        self._script: dict[str, Any] = {"rules": []}
        self._counters: dict[tuple[int | None, str | None], int] = {}
        self._requests: list[LoggedRequest] = []
        #: The raw bodies of ``_requests``, for the ``seen`` condition of a ``hold``.
        self._bodies: list[str] = []
        #: For every Responses request ever received, in order: how many were being
        #: answered once it arrived, itself included (a ``hold``'s ``answering``).
        self._in_flight: list[int] = []
        #: Notified whenever a request is logged: what a ``hold`` waits on.
        self._changed = threading.Condition(self._lock)
        if script is not None:
            self.set_script(script)

    def start(self) -> ScriptedServer:
        """Bind and serve in a background thread; returns ``self``."""
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
        return super().start()

    @property
    def url(self) -> str:
        """Base URL of the API, ``http://127.0.0.1:<port>/v1``."""
        return f"{self._origin()}/v1"

    def codex_args(self, **kwargs: Any) -> list[str]:
        """:func:`codex_provider_args` for this server's ``url`` (same keyword arguments)."""
        return codex_provider_args(self.url, **kwargs)

    # -- script and log ----------------------------------------------------------------

    def set_script(self, script: Mapping[str, Any]) -> None:
        """Replace the script (thread-safe) and reset every step counter.

        :raises ValueError: when the script's shape is wrong.
        """
        copy = cast("dict[str, Any]", json.loads(json.dumps(script)))
        validate_script(copy)
        with self._lock:
            self._script = copy
            self._counters.clear()

    @property
    def requests(self) -> list[LoggedRequest]:
        """A snapshot of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def response_requests(self) -> list[LoggedRequest]:
        """Only the ``POST …/responses`` requests (the model calls)."""
        return [
            r
            for r in self.requests
            if r.method == "POST" and r.path.split("?")[0].endswith("/responses")
        ]

    def clear_requests(self) -> None:
        """Forget the logged requests (counters are kept)."""
        with self._lock:
            self._requests.clear()
            self._bodies.clear()

    # -- handler side ------------------------------------------------------------------

    def _log(
        self,
        handler: BaseHTTPRequestHandler,
        raw: bytes,
        choose: bool,
    ) -> tuple[LoggedRequest, dict[str, Any], int]:
        """Log the request and (for a POST) pick its step, both under one lock; the third
        value is the request's place in ``_in_flight`` (-1 when no step was picked)."""
        body = json_object(raw)
        headers = {name.lower(): value for name, value in handler.headers.items()}
        probe = LoggedRequest(0, handler.command, handler.path, headers, body, len(raw))
        rule_index: int | None = None
        step_index = 0
        step: dict[str, Any] = {}
        arrival = -1
        with self._lock:
            answering = 0
            if choose:
                rule_index, step_index, step = self._choose(probe, raw)
                answering = self._answering
                self._answering += 1
                self._in_flight.append(self._answering)
                arrival = len(self._in_flight) - 1
            logged = LoggedRequest(
                index=len(self._requests),
                method=handler.command,
                path=handler.path,
                headers=headers,
                body=body,
                raw_size=len(raw),
                rule=rule_index,
                step=step_index,
                answering=answering,
            )
            self._requests.append(logged)
            self._bodies.append(raw.decode("utf-8", "replace"))
            self._changed.notify_all()
        if self.log_dir is not None:
            record = {
                "method": logged.method,
                "path": logged.path,
                "headers": dict(logged.headers),
                "body": body,
                "raw_size": logged.raw_size,
                "rule": rule_index,
                "step": step_index,
            }
            target = self.log_dir / f"req-{logged.index:04d}.json"
            target.write_text(json.dumps(record, indent=2), encoding="utf-8")
        return logged, step, arrival

    def _choose(self, request: LoggedRequest, raw: bytes) -> tuple[int | None, int, dict[str, Any]]:
        """Pick (rule, step index, step) for a request; the caller holds the lock."""
        return choose_step(self._script, self._counters, request, raw)

    def _respond(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        if handler.command != "POST" or not handler.path.split("?")[0].endswith("/responses"):
            # Probes such as ``GET /v1/models`` get a harmless empty 404.
            self._log(handler, raw, choose=False)
            send_json(handler, 404, {})
            return
        _, step, arrival = self._log(handler, raw, choose=True)
        try:
            if "hold" in step and not self._hold(step["hold"], arrival):
                return
            wait = float(step.get("latency", 0.0)) + float(self.latency)
            if wait > 0 and self._stop_event.wait(wait):
                return
            self._answer(handler, step, len(raw))
        finally:
            with self._lock:
                self._answering -= 1

    def _hold(self, hold: Mapping[str, Any], arrival: int) -> bool:
        """Wait out a step's ``hold``; ``False`` when the server stopped meanwhile.

        ``answering`` is met once a request arriving while this one (``arrival``) waits
        found that many in flight: a condition that, once met, stays met, so no held
        request misses it when another is answered first.
        """
        answering = int(hold.get("answering", 0))
        seen = hold.get("seen")
        deadline = time.monotonic() + float(hold.get("at_most", 60.0))
        with self._changed:
            while not self._stop_event.is_set():
                arrived = seen is None or any(str(seen) in body for body in self._bodies)
                together = max(self._in_flight[arrival:]) >= answering
                left = deadline - time.monotonic()
                if (together and arrived) or left <= 0:
                    return True
                # In slices: stop() sets its event without notifying this condition.
                self._changed.wait(min(left, 0.1))
        return False

    def _answer(self, handler: BaseHTTPRequestHandler, step: Mapping[str, Any], size: int) -> None:
        """Send the answer one step describes."""
        if "http_status" in step:
            body = step.get("body")
            if body is None:
                body = {"error": {"message": "scripted error", "type": "server_error"}}
            send_json(handler, int(step["http_status"]), body, step.get("headers") or {})
            return
        if "hang" in step:
            self._stop_event.wait(float(step["hang"]))
            return
        response_id = f"resp_{uuid.uuid4().hex[:16]}"
        start_sse(handler)
        send_event(
            handler,
            "response.created",
            {"type": "response.created", "response": {"id": response_id}},
        )
        if "hang_after_created" in step:
            self._stop_event.wait(float(step["hang_after_created"]))
            return
        if step.get("truncate"):
            return
        if "failed" in step:
            error = step["failed"] or {"code": "server_error", "message": "scripted failure"}
            send_event(
                handler,
                "response.failed",
                {
                    "type": "response.failed",
                    "response": {"id": response_id, "status": "failed", "error": error},
                },
            )
            return
        items = _step_items(step)
        for index, item in enumerate(items):
            send_event(
                handler,
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": index, "item": item},
            )
        if step.get("truncate_after_items"):
            return
        out_tokens = max(1, sum(len(_message_text(i).encode()) for i in items if "role" in i))
        usage: dict[str, Any] = {
            "input_tokens": size,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": out_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
        }
        usage.update(step.get("usage") or {})
        if "total_tokens" not in usage:
            usage["total_tokens"] = int(usage["input_tokens"]) + int(usage["output_tokens"])
        send_event(
            handler,
            "response.completed",
            {
                "type": "response.completed",
                "response": {"id": response_id, "status": "completed", "usage": usage},
            },
        )


def _step_items(step: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The output items a step sends."""
    if "items" in step:
        return [dict(item) for item in step["items"]]
    if "function_call" in step:
        call = step["function_call"]
        arguments = call.get("arguments", {})
        return [
            {
                "type": "function_call",
                "id": f"fc_{uuid.uuid4().hex[:16]}",
                "call_id": step.get("call_id") or f"call_{uuid.uuid4().hex[:12]}",
                "name": call["name"],
                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
            }
        ]
    if "custom_tool_call" in step:
        call = step["custom_tool_call"]
        return [
            {
                "type": "custom_tool_call",
                "id": f"ctc_{uuid.uuid4().hex[:16]}",
                "call_id": step.get("call_id") or f"call_{uuid.uuid4().hex[:12]}",
                "name": call.get("name", "apply_patch"),
                "input": call["input"],
            }
        ]
    return [
        {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{uuid.uuid4().hex[:16]}",
            "status": "completed",
            "content": [{"type": "output_text", "text": str(step["message"]), "annotations": []}],
        }
    ]
