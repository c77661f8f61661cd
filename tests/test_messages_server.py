"""The testing kit's scripted Messages-API server (the Claude Code side of the kit)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_advreview.testing import ScriptedMessagesServer

SCRIPT = {
    "rules": [
        {
            "match": "LEAD",
            "steps": [
                {"tool_use": {"name": "Edit", "input": {"file_path": "/x", "old_string": "a"}}},
                {"structured": {"decisions": []}},
            ],
        }
    ],
    "default": {"text": "hello"},
}


@pytest.fixture
def server() -> Iterator[ScriptedMessagesServer]:
    with ScriptedMessagesServer(SCRIPT) as srv:
        yield srv


def post(server: ScriptedMessagesServer, body: dict[str, Any]) -> tuple[int, bytes]:
    request = urllib.request.Request(
        f"{server.url}/v1/messages?beta=true",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def events(raw: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line[len("data: ") :])
        for line in raw.decode().splitlines()
        if line.startswith("data: ")
    ]


def turn(text: str, assistant_turns: int, *, stream: bool) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": text}]
    for _ in range(assistant_turns):
        messages += [
            {"role": "assistant", "content": [{"type": "text", "text": "…"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]},
        ]
    # Claude Code puts a role "system" entry inside messages; it is not a turn.
    messages.append({"role": "system", "content": ""})
    return {"model": "m", "stream": stream, "messages": messages}


def test_stream_answers_a_tool_use_as_server_sent_events(server: ScriptedMessagesServer) -> None:
    status, raw = post(server, turn("LEAD plan", 0, stream=True))
    assert status == 200
    kinds = [e["type"] for e in events(raw)]
    assert kinds == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    start, delta = events(raw)[1], events(raw)[2]
    assert start["content_block"]["name"] == "Edit"
    assert json.loads(delta["delta"]["partial_json"])["file_path"] == "/x"
    assert events(raw)[4]["delta"]["stop_reason"] == "tool_use"


def test_step_follows_the_conversation_not_the_arrival_order(
    server: ScriptedMessagesServer,
) -> None:
    # A retry and the non-streaming fallback of the same turn get the same answer.
    for _ in range(2):
        _, raw = post(server, turn("LEAD", 1, stream=True))
        assert events(raw)[1]["content_block"]["name"] == "StructuredOutput"
    status, raw = post(server, turn("LEAD", 1, stream=False))
    message = json.loads(raw)
    assert status == 200 and message["type"] == "message"
    assert message["content"][0]["name"] == "StructuredOutput"
    assert message["stop_reason"] == "tool_use"
    assert [r.step for r in server.requests] == [1, 1, 1]
    assert all(r.path == "/v1/messages?beta=true" for r in server.requests)


def test_default_text_and_last_step_repeats(server: ScriptedMessagesServer) -> None:
    _, raw = post(server, turn("other", 0, stream=False))
    assert json.loads(raw)["content"] == [{"type": "text", "text": "hello"}]
    _, raw = post(server, turn("LEAD", 5, stream=False))
    assert json.loads(raw)["content"][0]["name"] == "StructuredOutput"


def test_http_error_and_hang_steps(server: ScriptedMessagesServer) -> None:
    server.set_script({"rules": [{"match": "X", "steps": [{"http_status": 529}]}]})
    status, raw = post(server, turn("X", 0, stream=True))
    assert status == 529 and json.loads(raw)["type"] == "error"
    server.set_script({"rules": [{"match": "X", "steps": [{"hang": 60}]}]})
    started = time.monotonic()
    with pytest.raises((TimeoutError, urllib.error.URLError)):
        urllib.request.urlopen(
            urllib.request.Request(
                f"{server.url}/v1/messages",
                data=json.dumps(turn("X", 0, stream=True)).encode(),
            ),
            timeout=0.5,
        )
    assert time.monotonic() - started < 5


def test_invalid_script_is_rejected_naming_the_step(server: ScriptedMessagesServer) -> None:
    with pytest.raises(ValueError, match="exactly one of text, tool_use"):
        server.set_script({"rules": [{"match": "X", "steps": [{"txt": "typo"}]}]})
