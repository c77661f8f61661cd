"""A scripted Anthropic Messages-API server on loopback, for driving Claude Code offline.

The sibling of :class:`~.server.ScriptedServer` (Responses API, Codex) for a lead or a
reviewer built on ``claude -p``.  It answers ``POST /v1/messages`` (any query string, e.g.
Claude Code's ``?beta=true``), streaming (``stream: true``, server-sent events) and not
(a plain JSON message: Claude Code's non-streaming fallback), from a *script*::

    {"rules": [{"match": "MARK-A", "steps": [STEP, STEP, ...]}], "default": STEP}

The first rule whose ``match`` occurs in the raw request body answers.  **The step is
chosen by conversation state, not arrival order**: step *n* answers a request whose
``messages`` hold *n* assistant turns, so a retry or the non-streaming fallback of the
same turn gets the same answer again (past the end, the last step repeats).  ``role:
"system"`` entries inside ``messages`` (Claude Code sends them) are ignored for that count.

STEP kinds (exactly one of):

``{"text": T}``
    one text block; ``stop_reason: end_turn``.
``{"tool_use": {"name": N, "input": {...}}}``
    one tool_use block (e.g. ``Read``, ``Edit``); ``stop_reason: tool_use``.
``{"structured": {...}}``
    shorthand for a ``StructuredOutput`` tool_use with that input (``--json-schema``).
``{"content": [BLOCK, ...]}``
    raw content blocks (text and tool_use), sent as they are.
``{"http_status": N, "body": {...}}``
    an Anthropic-style JSON error answer.
``{"hang": S}``
    send nothing for ``S`` seconds (or until :meth:`ScriptedMessagesServer.stop`).

Only the standard library is used.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, cast

from ._http import LoopbackServer, json_object, send_event, send_json, start_sse

__all__ = ["MessagesRequest", "ScriptedMessagesServer", "claude_offline_env"]

_KINDS = ("text", "tool_use", "structured", "content", "http_status", "hang")


def claude_offline_env(url: str, home: Path) -> dict[str, str]:
    """Environment variables that make Claude Code talk only to ``url``, hermetically.

    A private ``HOME``/``CLAUDE_CONFIG_DIR``/``TMPDIR`` under ``home``, a dummy key, no
    telemetry, update checks or other non-essential traffic, and short retries so a
    scripted fault fails in seconds instead of minutes.

    :param url: :attr:`ScriptedMessagesServer.url`.
    :param home: an empty directory to use as the CLI's home.
    """
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    (home / "tmp").mkdir(exist_ok=True)
    return {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "TMPDIR": str(home / "tmp"),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-advreview-fake",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
        "API_TIMEOUT_MS": "30000",
    }


@dataclass(frozen=True)
class MessagesRequest:
    """One request the server received."""

    index: int
    path: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]
    #: The raw body as text (rules match on it).
    text: str
    rule: int | None = None
    step: int = 0

    @property
    def stream(self) -> bool:
        """Whether the client asked for a server-sent-event stream."""
        return bool(self.body.get("stream"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The ``messages`` of the request."""
        raw = self.body.get("messages")
        return [m for m in raw if isinstance(m, dict)] if isinstance(raw, list) else []

    @property
    def assistant_turns(self) -> int:
        """How many assistant turns the conversation holds so far."""
        return sum(1 for m in self.messages if m.get("role") == "assistant")

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        """Every ``tool_result`` block sent back by the client, in order."""
        found: list[dict[str, Any]] = []
        for message in self.messages:
            content = message.get("content")
            if isinstance(content, list):
                found += [
                    b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
                ]
        return found


def _validate(script: Mapping[str, Any]) -> None:
    steps: list[Any] = []
    for number, rule in enumerate(script.get("rules", [])):
        if not isinstance(rule, dict) or not isinstance(rule.get("match"), str):
            raise ValueError(f"advreview messages server: rule {number} needs a 'match' string")
        if not isinstance(rule.get("steps"), list) or not rule["steps"]:
            raise ValueError(f"advreview messages server: rule {number} needs non-empty 'steps'")
        steps += rule["steps"]
    if "default" in script:
        steps.append(script["default"])
    for step in steps:
        kinds = [k for k in _KINDS if isinstance(step, dict) and k in step]
        if len(kinds) != 1:
            raise ValueError(
                f"advreview messages server: a step needs exactly one of {', '.join(_KINDS)}; "
                f"got {step!r}"
            )


class ScriptedMessagesServer(LoopbackServer):
    """A scripted Messages-API server bound to 127.0.0.1; see the module docstring.

    ``url`` (``http://127.0.0.1:<port>``) is what ``ANTHROPIC_BASE_URL`` takes.
    """

    _name = "advreview messages server"

    def __init__(self, script: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self._script: dict[str, Any] = {"rules": []}
        self._requests: list[MessagesRequest] = []
        if script is not None:
            self.set_script(script)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (Claude Code appends ``/v1/messages``)."""
        return self._origin()

    def set_script(self, script: Mapping[str, Any]) -> None:
        """Replace the script; :raises ValueError: when its shape is wrong."""
        copy = cast("dict[str, Any]", json.loads(json.dumps(script)))
        _validate(copy)
        with self._lock:
            self._script = copy

    @property
    def requests(self) -> list[MessagesRequest]:
        """Every ``/v1/messages`` request so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    # -- handler side ------------------------------------------------------------------

    def _respond(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        if handler.command != "POST" or not handler.path.split("?")[0].endswith("/v1/messages"):
            # Probes (``HEAD /api/hello`` without the hermetic env) get an empty 404.
            send_json(handler, 404, {})
            return
        text = raw.decode("utf-8", "replace")
        body = json_object(text)
        headers = {k.lower(): v for k, v in handler.headers.items()}
        probe = MessagesRequest(0, handler.path, headers, body, text)
        with self._lock:
            rule, index, step = self._choose(probe)
            request = MessagesRequest(
                len(self._requests), handler.path, headers, body, text, rule, index
            )
            self._requests.append(request)
        self._answer(handler, request, step)

    def _choose(self, request: MessagesRequest) -> tuple[int | None, int, dict[str, Any]]:
        steps: list[dict[str, Any]] | None = None
        rule_index: int | None = None
        for number, rule in enumerate(self._script.get("rules", [])):
            if rule["match"] in request.text:
                steps, rule_index = rule["steps"], number
                break
        if steps is None:
            steps = [self._script.get("default", {"text": "OK"})]
        index = min(request.assistant_turns, len(steps) - 1)
        return rule_index, index, steps[index]

    def _answer(
        self, handler: BaseHTTPRequestHandler, request: MessagesRequest, step: Mapping[str, Any]
    ) -> None:
        if "http_status" in step:
            body = step.get("body") or {
                "type": "error",
                "error": {"type": "api_error", "message": "scripted error"},
            }
            send_json(handler, int(step["http_status"]), body)
            return
        if "hang" in step:
            self._stop_event.wait(float(step["hang"]))
            return
        blocks = _blocks(step)
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        model = str(request.body.get("model") or "claude-scripted")
        usage = {
            "input_tokens": len(request.text.encode()),
            "output_tokens": 1 + len(json.dumps(blocks)),
        }
        message_id = f"msg_{uuid.uuid4().hex[:20]}"
        if not request.stream:
            send_json(
                handler,
                200,
                {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": blocks,
                    "stop_reason": stop_reason,
                    "stop_sequence": None,
                    "usage": usage,
                },
            )
            return
        start_sse(handler)
        start: dict[str, Any] = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 1},
        }
        send_event(handler, "message_start", {"type": "message_start", "message": start})
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                opening: dict[str, Any] = {"type": "text", "text": ""}
                delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
            else:
                opening = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            send_event(
                handler,
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
            send_event(
                handler,
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
            send_event(
                handler, "content_block_stop", {"type": "content_block_stop", "index": index}
            )
        send_event(
            handler,
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
        send_event(handler, "message_stop", {"type": "message_stop"})


def _blocks(step: Mapping[str, Any]) -> list[dict[str, Any]]:
    if "text" in step:
        return [{"type": "text", "text": str(step["text"])}]
    if "tool_use" in step:
        call = step["tool_use"]
        return [_tool(str(call["name"]), call.get("input") or {})]
    if "structured" in step:
        return [_tool("StructuredOutput", step["structured"])]
    return [dict(block) for block in step["content"]]


def _tool(name: str, arguments: Any) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": f"toolu_{uuid.uuid4().hex[:20]}",
        "name": name,
        "input": arguments,
    }
