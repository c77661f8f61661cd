"""Tests of the testing kit: scripted server, fake codex, review builders and fixtures."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.client import RemoteDisconnected
from pathlib import Path
from typing import Any

import pytest

from conftest import settled, sleeper_running
from pytest_advreview.constants import PINNED_CODEX_VERSION
from pytest_advreview.testing import (
    FAKE_KEY_ENV,
    FAKE_KEY_VALUE,
    Behaviour,
    FakeCodex,
    FindingSpec,
    ScriptedServer,
    approved_review,
    codex_config_argv,
    codex_provider_args,
    install_fake_codex,
    offline_env,
    review_text,
    revise_review,
    shell_step,
)

# -- helpers -------------------------------------------------------------------------------


def responses_body(prompt: str, *, earlier: tuple[str, ...] = ()) -> dict[str, Any]:
    """A Responses request shaped like Codex's: developer message, then user messages."""
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "B"}]}
    ]
    for text in (*earlier, prompt):
        items.append(
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
        )
    return {"model": "fake-model", "stream": True, "input": items}


def post(
    server: ScriptedServer,
    body: dict[str, Any],
    *,
    thread: str | None = "t-1",
    timeout: float = 10,
) -> tuple[int, dict[str, str], bytes]:
    """POST a body to ``/v1/responses``; returns (status, lower-case headers, raw body)."""
    headers = {"Content-Type": "application/json"}
    if thread is not None:
        headers["thread-id"] = thread
    request = urllib.request.Request(
        f"{server.url}/responses", data=json.dumps(body).encode(), headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return (
                response.status,
                {k.lower(): v for k, v in response.headers.items()},
                (response.read()),
            )
    except urllib.error.HTTPError as error:
        with error:
            return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def sse_events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Parse a server-sent-event stream into (event name, data) pairs."""
    events = []
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events


def texts(events: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Output texts of the message items in an event list."""
    out = []
    for name, data in events:
        if name == "response.output_item.done" and data["item"]["type"] == "message":
            out.append(data["item"]["content"][0]["text"])
    return out


@pytest.fixture
def server() -> Any:
    with ScriptedServer() as srv:
        yield srv


# -- scripted server: rules, counters, log -------------------------------------------------


def test_message_step_streams_minimal_sse_with_byte_count_usage(server: ScriptedServer) -> None:
    server.set_script({"rules": [{"match": "MARK-A", "steps": [{"message": "hello"}]}]})
    body = responses_body("MARK-A review this")
    status, headers, raw = post(server, body)
    assert status == 200
    assert headers["content-type"] == "text/event-stream"
    events = sse_events(raw)
    assert [name for name, _ in events] == [
        "response.created",
        "response.output_item.done",
        "response.completed",
    ]
    assert texts(events) == ["hello"]
    usage = events[-1][1]["response"]["usage"]
    assert usage["input_tokens"] == len(json.dumps(body).encode())
    assert usage["output_tokens"] == len(b"hello")
    assert usage["input_tokens_details"] == {"cached_tokens": 0}
    assert usage["output_tokens_details"] == {"reasoning_tokens": 0}
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


def test_first_matching_rule_answers_on_last_user_message(server: ScriptedServer) -> None:
    server.set_script(
        {
            "rules": [
                {"match": "MARK-X", "steps": [{"message": "x"}]},
                {"match": "MARK", "steps": [{"message": "generic"}]},
            ]
        }
    )
    # Only the LAST user message counts: MARK-X in an earlier one does not match rule 0.
    _, _, raw = post(server, responses_body("MARK-Y", earlier=("MARK-X",)))
    assert texts(sse_events(raw)) == ["generic"]
    _, _, raw = post(server, responses_body("MARK-X now"))
    assert texts(sse_events(raw)) == ["x"]
    assert [r.rule for r in server.requests] == [1, 0]


def test_body_rule_matches_anywhere_in_raw_body(server: ScriptedServer) -> None:
    server.set_script(
        {"rules": [{"match": "DEV-MARK", "in": "body", "steps": [{"message": "in body"}]}]}
    )
    body = responses_body("plain prompt")
    body["input"][0]["content"][0]["text"] = "DEV-MARK instructions"
    _, _, raw = post(server, body)
    assert texts(sse_events(raw)) == ["in body"]


def test_counter_is_per_thread_and_last_step_repeats(server: ScriptedServer) -> None:
    server.set_script(
        {"rules": [{"match": "M", "steps": [{"message": "one"}, {"message": "two"}]}]}
    )
    got = [texts(sse_events(post(server, responses_body("M"), thread="a")[2])) for _ in range(3)]
    assert got == [["one"], ["two"], ["two"]]
    # Another thread starts at the first step.
    assert texts(sse_events(post(server, responses_body("M"), thread="b")[2])) == ["one"]
    assert [r.step for r in server.requests] == [0, 1, 1, 0]


def test_default_step_and_builtin_fallback(server: ScriptedServer) -> None:
    _, _, raw = post(server, responses_body("nothing matches"))
    assert texts(sse_events(raw)) == ["VERDICT: APPROVED"]
    server.set_script({"rules": [], "default": [{"message": "d1"}, {"message": "d2"}]})
    answers = [texts(sse_events(post(server, responses_body("?"))[2])) for _ in range(3)]
    assert answers == [["d1"], ["d2"], ["d2"]]
    assert server.requests[-1].rule is None


def test_set_script_resets_counters(server: ScriptedServer) -> None:
    script = {"rules": [{"match": "M", "steps": [{"message": "one"}, {"message": "two"}]}]}
    server.set_script(script)
    post(server, responses_body("M"))
    server.set_script(script)
    assert texts(sse_events(post(server, responses_body("M"))[2])) == ["one"]


def test_invalid_script_is_rejected_with_the_culprit_named(server: ScriptedServer) -> None:
    with pytest.raises(ValueError, match="rule 0 step 1"):
        server.set_script({"rules": [{"match": "M", "steps": [{"message": "a"}, {"mesage": 1}]}]})
    with pytest.raises(ValueError, match="'in'"):
        server.set_script({"rules": [{"match": "M", "in": "all", "steps": [{"message": "a"}]}]})
    with pytest.raises(ValueError, match="'threads'"):
        server.set_script({"rules": [{"match": "M", "threads": 2, "steps": [{"message": "a"}]}]})


def test_a_rule_counting_all_threads_moves_on_across_threads(server: ScriptedServer) -> None:
    steps = [{"message": "one"}, {"message": "two"}]
    server.set_script({"rules": [{"match": "M", "threads": "all", "steps": steps}]})
    first = texts(sse_events(post(server, responses_body("M"), thread="t-1")[2]))
    second = texts(sse_events(post(server, responses_body("M"), thread="t-2")[2]))
    assert (first, second) == (["one"], ["two"])


def test_request_log_records_headers_body_and_helpers(tmp_path: Path) -> None:
    with ScriptedServer(log_dir=tmp_path / "log") as srv:
        body = responses_body("MARK-L second", earlier=("first",))
        post(srv, body, thread="thread-42")
        (logged,) = srv.requests
    assert logged.method == "POST"
    assert logged.path == "/v1/responses"
    assert logged.thread_id == "thread-42"
    assert logged.headers["content-type"] == "application/json"
    assert logged.body == body
    assert logged.raw_size == len(json.dumps(body).encode())
    assert logged.last_user_text == "MARK-L second"
    assert logged.input_texts == ["B", "first", "MARK-L second"]
    on_disk = json.loads((tmp_path / "log" / "req-0000.json").read_text())
    assert on_disk["body"] == body
    assert on_disk["headers"]["thread-id"] == "thread-42"


def test_get_and_unknown_paths_answer_empty_404(server: ScriptedServer) -> None:
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(f"{server.url}/models", timeout=5)
    with info.value as error:
        assert error.code == 404
        assert json.loads(error.read()) == {}
    assert [(r.method, r.path) for r in server.requests] == [("GET", "/v1/models")]
    assert server.response_requests == []


# -- scripted server: every step kind over plain HTTP ----------------------------------------


def test_function_call_step_json_encodes_arguments(server: ScriptedServer) -> None:
    step = shell_step("ls", call_id="c7")
    server.set_script({"default": step})
    events = sse_events(post(server, responses_body("x"))[2])
    item = events[1][1]["item"]
    assert item["type"] == "function_call"
    assert item["name"] == "exec_command"
    assert item["call_id"] == "c7"
    assert json.loads(item["arguments"]) == {"cmd": "ls"}
    assert events[-1][0] == "response.completed"


def test_custom_tool_call_step(server: ScriptedServer) -> None:
    patch = "*** Begin Patch\n*** Add File: p.txt\n+hi\n*** End Patch\n"
    server.set_script({"default": {"custom_tool_call": {"name": "apply_patch", "input": patch}}})
    item = sse_events(post(server, responses_body("x"))[2])[1][1]["item"]
    assert item["type"] == "custom_tool_call"
    assert item["name"] == "apply_patch"
    assert item["input"] == patch
    assert item["call_id"]


def test_items_step_sends_raw_items_in_order(server: ScriptedServer) -> None:
    items = [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Z"}]},
    ]
    server.set_script({"default": {"items": items}})
    events = sse_events(post(server, responses_body("x"))[2])
    sent = [data for name, data in events if name == "response.output_item.done"]
    assert [d["item"] for d in sent] == items
    assert [d["output_index"] for d in sent] == [0, 1]


def test_http_status_step_sends_body_and_headers(server: ScriptedServer) -> None:
    server.set_script(
        {
            "default": {
                "http_status": 429,
                "body": {"error": {"message": "slow down"}},
                "headers": {"Retry-After": "1"},
            }
        }
    )
    status, headers, raw = post(server, responses_body("x"))
    assert status == 429
    assert headers["retry-after"] == "1"
    assert json.loads(raw) == {"error": {"message": "slow down"}}


def test_hang_step_sends_nothing_then_closes(server: ScriptedServer) -> None:
    server.set_script({"default": {"hang": 0.3}})
    started = time.monotonic()
    with pytest.raises(RemoteDisconnected):
        post(server, responses_body("x"))
    assert time.monotonic() - started >= 0.3


def test_hang_after_created_sends_only_created(server: ScriptedServer) -> None:
    server.set_script({"default": {"hang_after_created": 0.2}})
    events = sse_events(post(server, responses_body("x"))[2])
    assert [name for name, _ in events] == ["response.created"]


def test_truncate_step_closes_after_created(server: ScriptedServer) -> None:
    server.set_script({"default": {"truncate": True}})
    assert [n for n, _ in sse_events(post(server, responses_body("x"))[2])] == ["response.created"]


def test_truncate_after_items_sends_message_without_completed(server: ScriptedServer) -> None:
    server.set_script({"default": {"message": "partial", "truncate_after_items": True}})
    events = sse_events(post(server, responses_body("x"))[2])
    assert [n for n, _ in events] == ["response.created", "response.output_item.done"]
    assert texts(events) == ["partial"]


def test_failed_step_sends_response_failed(server: ScriptedServer) -> None:
    server.set_script({"default": {"failed": {"code": "server_error", "message": "boom"}}})
    events = sse_events(post(server, responses_body("x"))[2])
    assert [n for n, _ in events] == ["response.created", "response.failed"]
    assert events[1][1]["response"]["error"] == {"code": "server_error", "message": "boom"}


def test_step_usage_overrides_default(server: ScriptedServer) -> None:
    server.set_script({"default": {"message": "m", "usage": {"input_tokens": 10}}})
    usage = sse_events(post(server, responses_body("x"))[2])[-1][1]["response"]["usage"]
    assert usage["input_tokens"] == 10
    assert usage["total_tokens"] == 10 + len(b"m")


def test_step_and_server_latency_delay_the_answer(server: ScriptedServer) -> None:
    server.set_script({"default": {"message": "m", "latency": 0.2}})
    server.latency = 0.1
    started = time.monotonic()
    post(server, responses_body("x"))
    assert time.monotonic() - started >= 0.3


def test_hold_answers_once_enough_requests_are_in_flight(server: ScriptedServer) -> None:
    server.set_script({"default": {"message": "m", "hold": {"answering": 3}}})
    answers: list[bytes] = []

    def ask(prompt: str) -> None:
        answers.append(post(server, responses_body(prompt))[2])

    clients = [threading.Thread(target=ask, args=(prompt,)) for prompt in "abc"]
    for number, client in enumerate(clients):
        if number:  # none answered while fewer than three were in flight
            deadline = time.monotonic() + 5
            while len(server.requests) < number and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(server.requests) == number and answers == []
        client.start()
    for client in clients:
        client.join(10)
    assert len(answers) == 3 and all(texts(sse_events(raw)) == ["m"] for raw in answers)
    assert sorted(r.answering for r in server.requests) == [0, 1, 2]


def test_hold_waits_for_a_request_holding_a_text(server: ScriptedServer) -> None:
    server.set_script(
        {
            "rules": [{"match": "first", "steps": [{"message": "1", "hold": {"seen": "GO"}}]}],
            "default": {"message": "2"},
        }
    )
    answers: list[str] = []
    client = threading.Thread(
        target=lambda: answers.extend(texts(sse_events(post(server, responses_body("first"))[2])))
    )
    client.start()
    deadline = time.monotonic() + 5
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    assert answers == []
    assert texts(sse_events(post(server, responses_body("GO"))[2])) == ["2"]
    client.join(10)
    assert answers == ["1"]


def test_hold_ends_after_at_most_and_its_shape_is_checked(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.set_script({"default": {"message": "m", "hold": {"seen": "never", "at_most": 0.1}}})
    assert texts(sse_events(post(server, responses_body("x"))[2])) == ["m"]
    with pytest.raises(ValueError, match="default step 0 'hold' takes a dict"):
        server.set_script({"default": {"message": "m", "hold": {"latency": 1}}})
    from pytest_advreview.testing import ScriptedReviews

    reviews = ScriptedReviews(tmp_path / "state")
    with pytest.raises(ValueError, match=r"has a 'hold'.*use 'latency' in process"):
        reviews.set_script({"default": {"message": "m", "hold": {"answering": 2}}})


def test_stop_interrupts_a_hanging_handler_quickly() -> None:
    srv = ScriptedServer({"default": {"hang": 60}}).start()
    outcome: list[BaseException] = []

    def client() -> None:
        try:
            post(srv, responses_body("x"), timeout=30)
        except Exception as exc:
            outcome.append(exc)

    thread = threading.Thread(target=client)
    thread.start()
    deadline = time.monotonic() + 5
    while not srv.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    srv.stop()
    thread.join(10)
    # A hang guard (the handler sleeps 60 s), loose enough for a loaded CI machine.
    assert time.monotonic() - started < 8
    assert not thread.is_alive()
    assert len(outcome) == 1


def test_url_requires_a_started_server_and_uses_loopback() -> None:
    srv = ScriptedServer()
    with pytest.raises(RuntimeError, match="not started"):
        _ = srv.url
    with srv:
        assert srv.url == f"http://127.0.0.1:{srv.port}/v1"
        assert srv.port > 0


def test_codex_provider_args_define_the_provider_without_config_toml() -> None:
    url = "http://127.0.0.1:9/v1"
    assert codex_provider_args(url) == [
        "model_provider=advreview-fake",
        "model=fake-model",
        "model_providers.advreview-fake.name=advreview-fake",
        f"model_providers.advreview-fake.base_url={url}",
        "model_providers.advreview-fake.env_key=ADVREVIEW_FAKE_KEY",
        "model_providers.advreview-fake.request_max_retries=0",
        "model_providers.advreview-fake.stream_max_retries=0",
    ]
    with_retries = codex_provider_args(url, provider="p", env_key="K", retries=True, model="m")
    assert not any("max_retries" in value for value in with_retries)
    assert "model=m" in with_retries
    assert codex_config_argv(["a=1", "b=2"]) == ["-c", "a=1", "-c", "b=2"]


# -- scripted server through the real Codex CLI ---------------------------------------------


def run_codex(
    codex: Path,
    env: dict[str, str],
    args: list[str],
    prompt: str,
    cwd: Path,
) -> subprocess.CompletedProcess[str]:
    """Run codex with ``prompt`` on stdin, wall-clock bounded."""
    return subprocess.run(
        [str(codex), *args],
        input=prompt,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
        check=False,
    )


def jsonl(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


@pytest.mark.real_codex
def test_real_codex_exec_gets_scripted_message(
    codex_executable: Path,
    codex_env: dict[str, str],
    advreview_server: ScriptedServer,
    git_repo: Path,
    tmp_path: Path,
) -> None:
    advreview_server.set_script(
        {"rules": [{"match": "MARK-A", "steps": [{"message": "scripted answer"}]}]}
    )
    out = tmp_path / "out.md"
    args = ["exec", "--json", "-s", "read-only", "-C", str(git_repo), "-o", str(out)]
    args += [*codex_config_argv(advreview_server.codex_args()), "-"]
    proc = run_codex(codex_executable, codex_env, args, "MARK-A hello", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == "scripted answer"
    events = jsonl(proc.stdout)
    assert events[0]["type"] == "thread.started"
    assert events[-1]["type"] == "turn.completed"
    (request,) = advreview_server.response_requests
    assert request.thread_id == events[0]["thread_id"]
    assert request.last_user_text == "MARK-A hello"
    assert request.headers["authorization"] == f"Bearer {FAKE_KEY_VALUE}"
    # The usage Codex reports is the server's: input tokens = request body bytes.
    assert events[-1]["usage"]["input_tokens"] == request.raw_size
    assert proc.stderr == ""  # TMPDIR outside CODEX_HOME: no helper-binaries warning


@pytest.mark.real_codex
def test_real_codex_function_call_writes_file_under_workspace_write(
    codex_executable: Path,
    codex_env: dict[str, str],
    advreview_server: ScriptedServer,
    git_repo: Path,
    tmp_path: Path,
) -> None:
    call = {"name": "exec_command", "arguments": {"cmd": "echo made > created.txt"}}
    advreview_server.set_script(
        {
            "rules": [
                {
                    "match": "MARK-F",
                    "steps": [{"function_call": call, "call_id": "call_1"}, {"message": "done"}],
                }
            ]
        }
    )
    out = tmp_path / "out.md"
    args = ["exec", "--json", "-s", "workspace-write", "-C", str(git_repo), "-o", str(out)]
    args += [*codex_config_argv(advreview_server.codex_args()), "-"]
    proc = run_codex(codex_executable, codex_env, args, "MARK-F write", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (git_repo / "created.txt").read_text() == "made\n"
    assert out.read_text() == "done"
    first, second = advreview_server.response_requests
    assert (first.step, second.step) == (0, 1)
    assert [o["call_id"] for o in second.function_call_outputs] == ["call_1"]


@pytest.mark.real_codex
def test_real_codex_http_500_without_retries_fails_fast(
    codex_executable: Path,
    codex_env: dict[str, str],
    advreview_server: ScriptedServer,
    git_repo: Path,
    tmp_path: Path,
) -> None:
    advreview_server.set_script({"rules": [], "default": {"http_status": 500}})
    args = ["exec", "--json", "-s", "read-only", "-C", str(git_repo), "-o", str(tmp_path / "o")]
    args += [*codex_config_argv(advreview_server.codex_args(retries=False)), "-"]
    started = time.monotonic()
    proc = run_codex(codex_executable, codex_env, args, "MARK-E", tmp_path)
    assert proc.returncode == 1
    assert time.monotonic() - started < 15
    assert len(advreview_server.response_requests) == 1
    assert jsonl(proc.stdout)[-1]["type"] == "turn.failed"


@pytest.mark.real_codex
def test_real_codex_resume_sends_the_same_thread_id(
    codex_executable: Path,
    codex_env: dict[str, str],
    advreview_server: ScriptedServer,
    git_repo: Path,
    tmp_path: Path,
) -> None:
    advreview_server.set_script(
        {"rules": [{"match": "MARK-R", "steps": [{"message": "round 1"}, {"message": "round 2"}]}]}
    )
    config = codex_config_argv(advreview_server.codex_args())
    out = tmp_path / "out.md"
    first = run_codex(
        codex_executable,
        codex_env,
        ["exec", "--json", "-s", "read-only", "-C", str(git_repo), *config, "-o", str(out), "-"],
        "MARK-R first",
        tmp_path,
    )
    assert first.returncode == 0, first.stderr
    thread_id = jsonl(first.stdout)[0]["thread_id"]
    out.unlink()
    second = run_codex(
        codex_executable,
        codex_env,
        ["exec", "resume", "--json", *config, thread_id, "-o", str(out), "-"],
        "MARK-R second",
        git_repo,
    )
    assert second.returncode == 0, second.stderr
    assert jsonl(second.stdout)[0]["thread_id"] == thread_id
    assert out.read_text() == "round 2"
    requests = advreview_server.response_requests
    assert [r.thread_id for r in requests] == [thread_id, thread_id]
    assert "MARK-R first" in requests[1].input_texts  # full history re-sent


@pytest.mark.real_codex
def test_real_codex_applies_a_scripted_patch_under_workspace_write(
    codex_executable: Path,
    codex_env: dict[str, str],
    advreview_server: ScriptedServer,
    git_repo: Path,
    tmp_path: Path,
) -> None:
    patch = "*** Begin Patch\n*** Add File: patched.txt\n+hello\n*** End Patch\n"
    call = {"name": "apply_patch", "input": patch}
    advreview_server.set_script(
        {"default": [{"custom_tool_call": call, "call_id": "p1"}, {"message": "patched"}]}
    )
    # apply_patch is only offered for a known model slug.
    config = codex_config_argv(advreview_server.codex_args(model="gpt-5.5"))
    args = ["exec", "--json", "-s", "workspace-write", "-C", str(git_repo), *config, "-"]
    proc = run_codex(codex_executable, codex_env, args, "patch it", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (git_repo / "patched.txt").read_text() == "hello\n"
    changes = [e for e in jsonl(proc.stdout) if e.get("item", {}).get("type") == "file_change"]
    assert changes


# -- review builders -----------------------------------------------------------------------


def test_review_text_approved_has_no_findings_and_verdict_last() -> None:
    text = approved_review()
    assert text.splitlines()[0] == "## Summary"
    assert "No actionable findings." in text
    assert text.splitlines()[-1] == "VERDICT: APPROVED"
    assert not text.endswith("\n")


def test_review_text_renders_findings_in_the_markdown_contract() -> None:
    text = review_text(
        "REVISE",
        [
            FindingSpec("critical", "Data loss", file="app.py", lines=(3, 7)),
            FindingSpec("medium", "Order", section="Rollout"),
            ("high", "Pair form"),
        ],
        summary="S.",
    )
    lines = text.splitlines()
    assert "### [severity: critical] Data loss" in lines
    assert "- **File:** app.py lines 3-7" in lines
    assert "- **Section:** Rollout" in lines
    assert "### [severity: high] Pair form" in lines
    for field in ("What can go wrong", "Why vulnerable", "Impact", "Recommendation"):
        assert sum(line.startswith(f"- **{field}:**") for line in lines) == 3
    assert lines[-3:] == ["## Verdict", "", "VERDICT: REVISE"]
    assert "No actionable findings." not in text


def test_review_text_bold_style_drops_the_bracket_tag() -> None:
    text = review_text("REVISE", [("high", "T")], style="bold")
    assert "[severity:" not in text
    assert "- **Severity:** High" in text
    with pytest.raises(ValueError, match="style"):
        review_text("REVISE", style="fancy")


def test_revise_review_defaults_to_one_high_finding() -> None:
    text = revise_review()
    assert text.count("### [severity: high]") == 1
    assert text.endswith("VERDICT: REVISE")


# -- fake codex ------------------------------------------------------------------------------


def run_fake(
    fake: FakeCodex,
    args: list[str],
    *,
    prompt: str = "PROMPT",
    cwd: Path,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(fake.path), *args],
        input=prompt.encode(),
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=30,
        check=False,
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def fenv(home: Path) -> dict[str, str]:
    return offline_env(CODEX_HOME=str(home))


def test_fake_writes_review_and_jsonl(fake_codex: Any, tmp_path: Path, fenv: Any) -> None:
    fake = fake_codex(Behaviour(review="R", usage={"input_tokens": 7}))
    out = tmp_path / "o.md"
    proc = run_fake(fake, ["exec", "--json", "-o", str(out), "-"], cwd=tmp_path, env=fenv)
    assert proc.returncode == 0
    events = jsonl(proc.stdout.decode())
    assert [e["type"] for e in events] == [
        "thread.started",
        "turn.started",
        "item.completed",
        "turn.completed",
    ]
    assert events[2]["item"] == {"id": "item_9", "type": "agent_message", "text": "R"}
    assert events[3]["usage"]["input_tokens"] == 7
    assert out.read_text() == "R"


def test_fake_behaviours_advance_and_last_repeats(
    fake_codex: Any, tmp_path: Path, fenv: Any
) -> None:
    fake = fake_codex({"rc": 3}, {"rc": 0, "stderr": "Error: x\n"})
    rcs = [run_fake(fake, ["exec", "-"], cwd=tmp_path, env=fenv).returncode for _ in range(3)]
    assert rcs == [3, 0, 0]
    assert run_fake(fake, ["exec", "-"], cwd=tmp_path, env=fenv).stderr == b"Error: x\n"
    fake.set_behaviours([{"rc": 5}])
    assert run_fake(fake, ["exec", "-"], cwd=tmp_path, env=fenv).returncode == 5


def test_fake_parallel_invocations_each_take_their_own_behaviour(
    fake_codex: Any, tmp_path: Path, fenv: Any
) -> None:
    fake = fake_codex(*({"rc": n} for n in range(6)))
    procs = [
        subprocess.Popen(
            [str(fake.path), "exec", "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            cwd=tmp_path,
            env=fenv,
        )
        for _ in range(6)
    ]
    for proc in procs:
        proc.communicate(b"P", timeout=30)
    assert sorted(proc.returncode for proc in procs) == list(range(6))
    assert sorted(call["index"] for call in fake.calls()) == list(range(6))


def test_fake_output_file_semantics(fake_codex: Any, tmp_path: Path, fenv: Any) -> None:
    out = tmp_path / "o.md"
    fake = fake_codex({"stale_o": True, "review": "NEW"}, {"review": None}, {"delete_o": True})
    out.write_text("OLD")
    run_fake(fake, ["exec", "-o", str(out), "-"], cwd=tmp_path, env=fenv)
    assert out.read_text() == "OLD"  # stale_o: never touched
    out.unlink()
    run_fake(fake, ["exec", "-o", str(out), "-"], cwd=tmp_path, env=fenv)
    assert out.read_text() == ""  # created at startup, nothing written
    run_fake(fake, ["exec", "-o", str(out), "-"], cwd=tmp_path, env=fenv)
    assert not out.exists()


def test_fake_without_thread_started_begins_with_turn_started(
    fake_codex: Any, tmp_path: Path, fenv: Any
) -> None:
    proc = run_fake(fake_codex({"thread_started": False}), ["exec", "-"], cwd=tmp_path, env=fenv)
    assert jsonl(proc.stdout.decode())[0] == {"type": "turn.started"}


def test_fake_resume_reports_requested_thread_and_rejects_sandbox(
    fake_codex: Any, tmp_path: Path, fenv: Any
) -> None:
    fake = fake_codex()
    tid = "01234567-89ab-cdef-0123-456789abcdef"
    proc = run_fake(fake, ["exec", "resume", "--json", tid, "-"], cwd=tmp_path, env=fenv)
    assert jsonl(proc.stdout.decode())[0] == {"type": "thread.started", "thread_id": tid}
    bad = run_fake(fake, ["exec", "resume", "-s", "read-only", tid, "-"], cwd=tmp_path, env=fenv)
    assert bad.returncode == 2
    assert b"unexpected argument '-s'" in bad.stderr
    # Before `resume`, exec options are fine.
    good = run_fake(
        fake, ["exec", "-s", "workspace-write", "resume", tid, "-"], cwd=tmp_path, env=fenv
    )
    assert good.returncode == 0


def test_fake_rollouts_hold_the_prompt(
    fake_codex: Any, tmp_path: Path, fenv: Any, home: Path
) -> None:
    fake = fake_codex({"rollouts": 2, "thread_started": False, "thread_id": "tid-1"})
    run_fake(fake, ["exec", "-"], prompt="<!-- MARKER-77 -->\nbody", cwd=tmp_path, env=fenv)
    files = sorted(home.glob("sessions/*/*/*/rollout-*.jsonl"))
    assert len(files) == 2
    assert all("MARKER-77" in f.read_text() for f in files)
    assert len(list(home.glob("sessions/*/*/*/rollout-*-tid-1.jsonl"))) == 1
    meta = json.loads(files[0].read_text().splitlines()[0])
    assert meta["type"] == "session_meta"


def test_fake_resume_appends_to_the_thread_rollout(
    fake_codex: Any, tmp_path: Path, fenv: Any, home: Path
) -> None:
    fake = fake_codex()
    first = run_fake(fake, ["exec", "--json", "-"], prompt="ONE", cwd=tmp_path, env=fenv)
    tid = jsonl(first.stdout.decode())[0]["thread_id"]
    run_fake(fake, ["exec", "resume", tid, "-"], prompt="TWO", cwd=tmp_path, env=fenv)
    (rollout,) = home.glob(f"sessions/*/*/*/rollout-*-{tid}.jsonl")
    assert "ONE" in rollout.read_text()
    assert "TWO" in rollout.read_text()
    fake.set_behaviours([{"rollouts": 0}])
    run_fake(fake, ["exec", "-"], cwd=tmp_path, env=fenv)
    assert len(list(home.glob("sessions/*/*/*/*.jsonl"))) == 1


def test_fake_records_every_call(fake_codex: Any, tmp_path: Path, fenv: Any, home: Path) -> None:
    fake = fake_codex()
    args = ["exec", "--json", "-m", "gpt-x", "-c", "a=1", "--config=b=2", "-C", str(tmp_path)]
    run_fake(fake, [*args, "-o", "o.md", "-"], prompt="hello", cwd=tmp_path, env=fenv)
    (call,) = fake.calls()
    assert call["argv"] == [*args, "-o", "o.md", "-"]
    assert call["stdin"] == "hello"
    assert call["cwd"] == str(tmp_path)
    assert call["codex_home"] == str(home)
    parsed = call["parsed"]
    assert parsed["config"] == ["a=1", "b=2"]
    assert (parsed["model"], parsed["cd"], parsed["output"]) == ("gpt-x", str(tmp_path), "o.md")
    assert parsed["json"] is True
    assert parsed["resume"] is False


def test_fake_write_files_mutates_the_cd_directory(
    fake_codex: Any, tmp_path: Path, fenv: Any
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    fake = fake_codex({"write_files": {"sub/new.txt": "x"}})
    run_fake(fake, ["exec", "-C", str(work), "-"], cwd=tmp_path, env=fenv)
    assert (work / "sub" / "new.txt").read_text() == "x"


def test_fake_stream_mb_emits_that_much_noise(fake_codex: Any, tmp_path: Path, fenv: Any) -> None:
    proc = run_fake(
        fake_codex({"stream_mb": 1, "review": "R"}), ["exec", "-"], cwd=tmp_path, env=fenv
    )
    assert len(proc.stdout) >= 1024 * 1024
    events = jsonl(proc.stdout.decode())
    assert events[-2]["item"]["text"] == "R"  # noise comes before the final message


def test_fake_sleep_dies_on_sigterm(fake_codex: Any, tmp_path: Path, fenv: Any) -> None:
    fake = fake_codex({"sleep": 30, "review": "late"})
    out = tmp_path / "o.md"
    proc = subprocess.Popen(
        [str(fake.path), "exec", "-o", str(out), "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=tmp_path,
        env=fenv,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(b"P")
    proc.stdin.close()
    assert b"turn.started" in proc.stdout.readline() + proc.stdout.readline()
    proc.terminate()
    assert proc.wait(timeout=5) == -signal.SIGTERM
    proc.stdout.close()
    assert out.read_text() == ""  # killed before the review was written


def test_fake_spawned_child_dies_with_its_process_group(
    fake_codex: Any, tmp_path: Path, fenv: Any
) -> None:
    fake = fake_codex({"sleep": 30, "spawn_child_sleep": 30})
    proc = subprocess.Popen(
        [str(fake.path), "exec", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        cwd=tmp_path,
        env=fenv,
        start_new_session=True,
    )
    assert proc.stdin is not None
    proc.stdin.write(b"P")
    proc.stdin.close()
    deadline = time.monotonic() + 10
    while not fake.child_pids() and time.monotonic() < deadline:
        time.sleep(0.02)
    (child,) = fake.child_pids()
    assert os.getpgid(child) == proc.pid
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=5)
    # The child is not ours to reap; it is gone (or a zombie) once the group is killed.
    assert not settled(lambda: [child] if sleeper_running(child) else [])


def test_fake_runs_with_the_bare_standard_library(tmp_path: Path) -> None:
    fake = install_fake_codex(tmp_path / "bin", [{"review": "R"}])
    out = tmp_path / "o.md"
    # -I -S: no site-packages, no PYTHONPATH: only the standard library is importable.
    proc = subprocess.run(
        [sys.executable, "-I", "-S", str(fake.path), "exec", "-o", str(out), "-"],
        input=b"P",
        capture_output=True,
        env={"PATH": os.environ.get("PATH", "")},
        timeout=30,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == "R"
    assert fake.path.read_text().startswith(f"#!{sys.executable} -S\n")


def test_behaviour_rejects_unknown_fields(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown behaviour field"):
        install_fake_codex(tmp_path, [{"exit_code": 1}])


# -- fixtures --------------------------------------------------------------------------------


@pytest.fixture
def _secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real")
    monkeypatch.setenv("CODEX_API_KEY", "real")


@pytest.mark.usefixtures("_secret_env")
def test_codex_env_is_offline(codex_env: dict[str, str], codex_home: Path) -> None:
    assert "OPENAI_API_KEY" not in codex_env
    assert "CODEX_API_KEY" not in codex_env
    assert codex_env["CODEX_HOME"] == str(codex_home)
    assert codex_env[FAKE_KEY_ENV] == FAKE_KEY_VALUE
    assert not codex_home.is_relative_to(codex_env["TMPDIR"])
    assert Path(codex_env["TMPDIR"]).is_dir()
    assert "127.0.0.1" in codex_env["NO_PROXY"].split(",")
    assert list(codex_home.iterdir()) == []


def test_advreview_server_fixture_is_started(advreview_server: ScriptedServer) -> None:
    assert texts(sse_events(post(advreview_server, responses_body("x"))[2])) == [
        "VERDICT: APPROVED"
    ]


def test_fake_codex_fixture_installs_separate_fakes(fake_codex: Any) -> None:
    one, two = fake_codex(), fake_codex()
    assert one.path.parent != two.path.parent
    assert os.access(one.path, os.X_OK)


def test_git_repo_fixture_has_one_clean_commit_on_main(git_repo: Path) -> None:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=git_repo, capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()

    assert git("branch", "--show-current") == "main"
    assert git("rev-list", "--count", "HEAD") == "1"
    assert git("status", "--porcelain") == ""
    assert (git_repo / "README.md").exists()


CODEX_EXECUTABLE_TEST = """
def test_codex(codex_executable):
    print("FOUND", codex_executable)
"""


@pytest.mark.parametrize(
    ("version", "ci", "outcome"),
    [
        (PINNED_CODEX_VERSION, "", "passed"),
        (PINNED_CODEX_VERSION, "true", "passed"),
        ("0.1.0", "", "skipped"),
        ("0.1.0", "true", "errors"),
        (None, "", "skipped"),
        (None, "true", "errors"),
    ],
)
def test_codex_executable_skips_locally_and_errors_in_ci(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    version: str | None,
    ci: str,
    outcome: str,
) -> None:
    if version is None:
        target = tmp_path / "missing" / "codex"
    else:
        target = install_fake_codex(tmp_path / "bin", [], version=version).path
    monkeypatch.setenv("ADVREVIEW_CODEX", str(target))
    monkeypatch.setenv("CI", ci)
    pytester.makeconftest('pytest_plugins = ["pytest_advreview.testing.fixtures"]')
    pytester.makepyfile(CODEX_EXECUTABLE_TEST)
    result = pytester.runpytest("-p", "no:advreview", "-p", "no:cacheprovider", "-rsf", "-s")
    result.assert_outcomes(**{outcome: 1})
    if outcome == "passed":
        result.stdout.fnmatch_lines([f"*FOUND {target}"])
    else:
        result.stdout.fnmatch_lines(["*real Codex CLI unavailable*"])


# -- the in-process scripted reviewer --------------------------------------------------


def _dispatch(reviewer: Any, tmp_path: Path, operation: str = "initial", **fields: Any) -> Any:
    from pytest_advreview.runner import DispatchRequest

    fields.setdefault("prompt_body", "Review docs/plans/x.md")
    return reviewer.dispatch(
        DispatchRequest(
            review_id="r1",
            repo_root=tmp_path,
            operation=operation,
            work_dir=tmp_path / "work",
            **fields,
        )
    )


def test_scripted_reviewer_answers_resumes_and_counts_usage_like_codex(tmp_path: Path) -> None:
    from pytest_advreview.models import Operation, RunnerStatus, Verdict
    from pytest_advreview.runner import Reviewer
    from pytest_advreview.testing import ScriptedReviewer, ScriptedReviews

    reviews = ScriptedReviews(tmp_path / "state")
    rule = {"match": "x.md", "in": "body", "steps": []}
    rule["steps"] = [
        {"message": revise_review(FindingSpec("high", "Stale"))},
        {"message": approved_review(), "usage": {"output_tokens": 7}},
    ]
    reviews.set_script({"rules": [rule]})
    reviewer = ScriptedReviewer(reviews.folder)
    assert isinstance(reviewer, Reviewer)

    first = _dispatch(reviewer, tmp_path)
    assert first.runner.result is RunnerStatus.SUCCESS
    assert first.runner.verdict is Verdict.REVISE and first.attempts == 1
    thread = first.runner.codex_session_id
    assert thread is not None and reviewer.can_resume(thread)
    assert not reviewer.can_resume("00000000-0000-0000-0000-000000000000")
    assert Path(first.runner.review_file or "").read_text() == first.review.raw
    assert first.usage == first.thread_usage and first.usage.output_tokens > 1

    second = _dispatch(
        reviewer,
        tmp_path,
        Operation.RESUME,
        prompt_body="fixed it",
        session_id=thread,
        prior_usage=first.thread_usage,
    )
    assert second.runner.verdict is Verdict.APPROVED
    assert second.runner.codex_session_id == thread
    assert second.usage.output_tokens == 7  # the delta; the thread's total is cumulative
    assert second.thread_usage == first.thread_usage + second.usage
    requests = reviews.response_requests
    assert [r.thread_id for r in requests] == [thread, thread]
    assert requests[1].last_user_text.endswith("\nfixed it")
    assert requests[1].last_user_text.startswith("<!-- ADVERSARIAL-REVIEW-SESSION: r1-")
    assert requests[1].input_texts[0] == requests[0].last_user_text  # the history
    reviews.clear_requests()
    assert reviews.requests == []


@pytest.mark.parametrize(
    ("step", "status", "error"),
    [
        ({"http_status": 500}, "launch_failure", "answered HTTP 500"),
        ({"failed": {"message": "nope"}}, "launch_failure", "response failed"),
        ({"truncate": True}, "launch_failure", "stream closed"),
        ({"message": "no verdict here"}, "launch_failure", "format drift"),
        ({"message": "  "}, "launch_failure", "missing or empty"),
        ({"hang": 5}, "timeout", "did not finish within 0.1s"),
    ],
)
def test_scripted_reviewer_failures_are_retried_once_and_are_no_review(
    tmp_path: Path, step: dict[str, Any], status: str, error: str
) -> None:
    from pytest_advreview.testing import ScriptedReviewer, ScriptedReviews

    reviews = ScriptedReviews(tmp_path / "state", {"rules": [], "default": step})
    result = _dispatch(ScriptedReviewer(reviews.folder, timeout=0.1), tmp_path)
    assert result.runner.result.value == status
    assert error in (result.runner.errors or "")
    assert result.review is None and result.runner.codex_session_id is None
    assert result.attempts == 2 and len(reviews.requests) == 2
    assert len({r.thread_id for r in reviews.requests}) == 2  # each attempt a new thread


def test_scripted_reviewer_refuses_tool_steps_and_bad_input(tmp_path: Path) -> None:
    from pytest_advreview.models import Operation
    from pytest_advreview.testing import ScriptedReviewer, ScriptedReviews

    reviews = ScriptedReviews(tmp_path / "state")
    with pytest.raises(ValueError, match=r"rule 0 step 0 is a function_call step.*real CLI"):
        reviews.set_script({"rules": [{"match": "x", "steps": [shell_step("id")]}]})
    with pytest.raises(ValueError, match="needs a 'match' string"):
        reviews.set_script({"rules": [{"steps": [{"message": "x"}]}]})
    reviewer = ScriptedReviewer(reviews.folder)
    empty = _dispatch(reviewer, tmp_path, prompt_body=" ")
    assert empty.runner.result.value == "input_error" and empty.attempts == 0
    unknown = _dispatch(reviewer, tmp_path, Operation.RESUME, session_id="gone")
    assert unknown.runner.result.value == "launch_failure"
    assert "no thread gone to resume" in (unknown.runner.errors or "")
    reviewer.cancel()
    cancelled = _dispatch(reviewer, tmp_path)
    assert cancelled.attempts == 1 and "pytest is stopping" in (cancelled.runner.errors or "")
    assert reviews.requests == []  # nothing was asked


def test_scripted_reviewer_runs_a_run_step_in_its_workspace_and_sends_its_output(
    tmp_path: Path,
) -> None:
    from pytest_advreview.models import RunnerStatus, Verdict
    from pytest_advreview.runner import STREAM_FILE
    from pytest_advreview.testing import ScriptedReviewer, ScriptedReviews, run_step

    reviews = ScriptedReviews(tmp_path / "state")
    command = 'pwd; grep -c "Review docs/plans" "$ADVREVIEW_SCRIPTED_PROMPT"; exit 3'
    reviews.set_script(
        {
            "rules": [
                {
                    "match": "x.md",
                    "steps": [run_step(command, "r1"), {"message": approved_review()}],
                }
            ]
        }
    )
    result = _dispatch(ScriptedReviewer(reviews.folder), tmp_path)
    assert result.runner.result is RunnerStatus.SUCCESS, result.runner.errors
    assert result.runner.verdict is Verdict.APPROVED and result.attempts == 1
    first, second = reviews.requests
    assert first.thread_id == second.thread_id and first.function_call_outputs == []
    assert second.last_user_text == first.last_user_text
    (output,) = second.function_call_outputs
    assert output["call_id"] == "r1"
    assert output["output"] == f"Process exited with code 3\nOutput:\n{tmp_path}\n1\n"
    events = (tmp_path / "work" / STREAM_FILE).read_text().splitlines()
    ran = [json.loads(line)["item"] for line in events if "command_execution" in line]
    assert [item["command"] for item in ran] == [command, command]
    assert ran[1]["exit_code"] == 3
    with pytest.raises(ValueError, match="'run' must be a command string"):
        reviews.set_script({"default": {"run": ""}})
    with pytest.raises(ValueError, match="exactly one of"):
        reviews.set_script({"default": {"run": "true", "http_status": 500}})


def test_a_run_step_that_outlasts_the_timeout_is_a_timeout(tmp_path: Path) -> None:
    from pytest_advreview.testing import ScriptedReviewer, ScriptedReviews, run_step

    reviews = ScriptedReviews(tmp_path / "state", {"default": run_step("sleep 5")})
    result = _dispatch(ScriptedReviewer(reviews.folder, timeout=0.2), tmp_path)
    assert result.runner.result.value == "timeout"
    assert "did not finish within 0.2s" in (result.runner.errors or "")


def test_scripted_reviewer_fixture_reviews_a_run_and_a_reviewer_error_is_an_item_error(
    pytester: pytest.Pytester, scripted_reviewer: Any
) -> None:
    pytester.makefile(".md", **{"docs/plans/ok": "# Plan\n", "docs/plans/down": "# Plan\n"})
    scripted_reviewer.set_script(
        {
            "rules": [{"match": "ok.md", "steps": [{"message": approved_review()}]}],
            "default": {"http_status": 500},
        }
    )
    result = pytester.runpytest("--adversarial-review", "--advreview-diff=none")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*down.md*reviewer could not run*"])
    assert len(scripted_reviewer.response_requests) == 3  # one review, one failed twice


def test_tests_using_the_real_cli_are_marked_by_their_fixture(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('pytest_plugins = ["pytest_advreview.testing.fixtures"]')
    pytester.makepyfile(
        """
        import pytest

        @pytest.fixture
        def through(codex_executable):
            return codex_executable

        def test_direct(codex_executable): pass
        def test_indirect(through): pass
        def test_none(advreview_server): pass
        """
    )
    real = pytester.runpytest("-p", "no:advreview", "--collect-only", "-q", "-m", "real_codex")
    real.stdout.fnmatch_lines(["*test_direct", "*test_indirect", "*2/3 tests collected*"])
    rest = pytester.runpytest("-p", "no:advreview", "--collect-only", "-q", "-m", "not real_codex")
    rest.stdout.fnmatch_lines(["*test_none", "*1/3 tests collected*"])
