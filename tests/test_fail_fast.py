"""The pieces of failing fast, one by one: what Codex's reconnect events say, the watch that
ends an attempt, the provider Codex will use, the one request that names a cause, the
review's whole limit in the loop and in both backends, and the progress line.

The end-to-end behaviour with the real Codex CLI is in ``test_fail_fast_e2e.py``.
"""

from __future__ import annotations

import json
import signal
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from pytest_advreview.loop import ReviewLimit, ReviewTarget, run_loop
from pytest_advreview.models import (
    Finding,
    Operation,
    Review,
    ReviewStatus,
    RoundRecord,
    RunnerResult,
    RunnerStatus,
    Severity,
    Verdict,
)
from pytest_advreview.progress import activity_of
from pytest_advreview.runner import DispatchRequest, DispatchResult
from pytest_advreview.runner import reachability as r
from pytest_advreview.runner.codex import CodexOptions, CodexReviewer, _signal_name
from pytest_advreview.runner.command import CommandReviewer
from pytest_advreview.testing import Behaviour, ScriptedServer

WAITING = "Reconnecting... waiting for network (Connection failed: error sending request)"
DNS = (
    "Reconnecting... 2/5 (stream disconnected before completion: failed to lookup address "
    "information: Name does not resolve)"
)
BUSY = "Reconnecting... 3/5 (We're currently experiencing high demand)"


def _error(message: str) -> dict[str, str]:
    return {"type": "error", "message": message}


# -- what Codex's events say ------------------------------------------------------------


def test_reconnect_events_are_read_with_their_try_and_cause() -> None:
    waiting = r.reconnect_of(_error(WAITING))
    assert waiting == r.Reconnect(None, None, "Connection failed: error sending request", True)
    dns = r.reconnect_of(_error(DNS))
    assert dns is not None and (dns.number, dns.of, dns.no_connection) == (2, 5, True)
    busy = r.reconnect_of(_error(BUSY))
    # A server that answers (5xx, "high demand") is reachable: never the connect budget's.
    assert busy is not None and busy.no_connection is False
    for other in (
        {"type": "turn.started"},
        _error("Falling back from WebSockets to HTTPS transport"),
        {"type": "error", "message": 3},
    ):
        assert r.reconnect_of(other) is None


def test_read_events_keeps_a_partial_line_and_skips_a_huge_one(tmp_path: Path) -> None:
    stream = tmp_path / "stdout.jsonl"
    assert r.read_events(stream, 0) == ([], 0)  # not there yet
    stream.write_bytes(b'{"type":"turn.started"}\nnot json\n[1]\n{"type":"err')
    events, offset = r.read_events(stream, 0)
    assert events == [{"type": "turn.started"}]
    assert r.read_events(stream, offset) == ([], offset)  # the line is still being written
    stream.write_bytes(b"x" * r.READ_LIMIT)
    assert r.read_events(stream, 0) == ([], r.READ_LIMIT)


def _watch(tmp_path: Path, budget: float, *lines: dict[str, object]) -> r.ConnectWatch:
    stream = tmp_path / "stdout.jsonl"
    stream.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return r.ConnectWatch(stream, threading.Event(), budget)


def test_the_watch_ends_an_attempt_that_only_fails_to_connect(tmp_path: Path) -> None:
    watch = _watch(tmp_path, 0.0, {"type": "turn.started"}, _error(WAITING), _error(WAITING))
    assert watch.is_set()
    assert (watch.tries, watch.cause) == (2, "Connection failed: error sending request")
    assert watch.gave_up_after is not None


def test_the_watch_leaves_a_model_that_answered_alone(tmp_path: Path) -> None:
    answered = {"type": "item.completed", "item": {"type": "agent_message", "text": "hi"}}
    assert not _watch(tmp_path, 0.0, _error(WAITING), answered).is_set()
    assert not _watch(tmp_path, 0.0, _error(WAITING), _error(BUSY)).is_set()
    assert not _watch(tmp_path, 0.0, {"type": "turn.started"}).is_set()
    # An error item (model metadata, a transport fallback) is no answer.
    noise = {"type": "item.completed", "item": {"type": "error", "message": "metadata"}}
    assert _watch(tmp_path, 0.0, _error(WAITING), noise).is_set()
    # Within the budget nothing is ended.
    assert not _watch(tmp_path, 3600.0, _error(WAITING)).is_set()


def test_the_watch_follows_the_runs_own_cancel(tmp_path: Path) -> None:
    watch = _watch(tmp_path, 3600.0)
    watch.cancel = cancel = threading.Event()
    cancel.set()
    assert watch.is_set()
    assert watch.gave_up_after is None


# -- the provider Codex will use ---------------------------------------------------------


def test_the_provider_comes_from_the_pairs_over_config_toml(tmp_path: Path) -> None:
    assert r.find_provider((), tmp_path) == r.Provider("openai", None, "Codex's default")
    assert r.find_provider((), tmp_path).endpoint == r.BUILTIN_OPENAI_URL
    (tmp_path / "config.toml").write_text(
        'profile = "work"\nmodel_provider = "top"\n'
        '[profiles.work]\nmodel_provider = "local"\n'
        '[model_providers.local]\nbase_url = "http://127.0.0.1:9/v1"\n'
    )
    chosen = r.find_provider((), tmp_path)
    assert chosen == r.Provider("local", "http://127.0.0.1:9/v1", str(tmp_path / "config.toml"))
    pairs = ('model_provider="mine"', "model_providers.mine.base_url=http://h:1/v1", "junk")
    assert r.find_provider(pairs, tmp_path) == r.Provider(
        "mine", "http://h:1/v1", "--advreview-codex-config"
    )
    oss = r.find_provider(("model_provider=oss",), tmp_path)
    assert oss.endpoint == "the built-in provider 'oss'"
    (tmp_path / "config.toml").write_text("not = [toml")
    assert r.find_provider((), tmp_path).id == "openai"


def test_no_provider_at_all_is_named_and_a_login_or_key_is_one(tmp_path: Path) -> None:
    default = r.find_provider((), tmp_path)
    problem = r.not_configured(default, tmp_path, {})
    assert problem is not None and "no model provider is configured for Codex" in problem
    assert r.not_configured(default, tmp_path, {"OPENAI_API_KEY": "k"}) is None
    assert r.not_configured(default, tmp_path, {"CODEX_API_KEY": "k"}) is None
    named = r.find_provider(("model_provider=x",), tmp_path)
    assert r.not_configured(named, tmp_path, {}) is None
    (tmp_path / "auth.json").write_text("{}")
    assert r.not_configured(default, tmp_path, {}) is None


# -- one request names the cause -----------------------------------------------------------


def test_reach_tells_a_server_from_a_closed_port() -> None:
    with ScriptedServer({"default": {"http_status": 404}}) as server:
        url = server.url
        assert r.reach(url) is None  # any HTTP answer: the server is there
    assert r.reach(url) == "connection refused"
    assert r.reach("ftp://x/v1") == "'ftp://x/v1' is not an http(s) URL"


@pytest.mark.parametrize(
    ("reason", "said"),
    [
        (socket.gaierror(-2, "Name or service not known"), "the host name does not resolve"),
        (TimeoutError(), "no answer within 10 s"),
        (OSError(113, "No route to host"), "no route to host"),
        ("odd", "odd"),
    ],
)
def test_each_cause_is_named(reason: object, said: str) -> None:
    assert r._cause(reason, 10.0) == said


def test_the_message_names_endpoint_cause_tries_and_time() -> None:
    assert r.unreachable_message("http://h/v1", "connection refused", 3, 28.4).startswith(
        "cannot reach the model at http://h/v1 (connection refused) after 3 tries in 28 s; "
        "is the server running?"
    )
    assert "after 1 try in" in r.unreachable_message("u", "c", 1, 1)
    assert "after" not in r.unreachable_message("u", "c", 0, 0)


def test_the_progress_line_shows_the_reconnect() -> None:
    assert activity_of(_error(DNS)) == (
        "reconnecting to the model, try 2 of 5: stream disconnected before completion: "
        "failed to lookup address information: Name does not resolve"
    )
    assert activity_of(_error(WAITING), 3) == (
        "reconnecting to the model, try 3: Connection failed: error sending request"
    )


def test_signals_are_named_with_their_usual_cause() -> None:
    assert _signal_name(signal.SIGXFSZ) == (
        "killed by SIGXFSZ: the file-size limit (`ulimit -f`); raise it or run without it"
    )
    assert _signal_name(signal.SIGKILL).startswith("killed by SIGKILL: an outside kill")
    assert _signal_name(signal.SIGUSR1) == "killed by SIGUSR1"
    assert _signal_name(200) == "killed by signal 200"


# -- the review's whole limit -------------------------------------------------------------


HIGH = Review(
    summary="s",
    findings=(Finding(id="AR-1", severity=Severity.HIGH, title="t"),),
    verdict=Verdict.REVISE,
    raw="[severity: high] t\nVERDICT: REVISE\n",
)


class SlowFailingReviewer:
    """Every dispatch takes ``seconds`` and times out; records each request."""

    name = "slow"
    supports_resume = True

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.requests: list[DispatchRequest] = []

    def dispatch(self, request: DispatchRequest) -> DispatchResult:
        self.requests.append(request)
        time.sleep(self.seconds)
        runner = RunnerResult(result=RunnerStatus.TIMEOUT, attempt_id="1", errors="slow")
        return DispatchResult(runner=runner, operation=request.operation, attempts=2)

    def can_resume(self, session_id: str) -> bool:
        return True


def test_the_loop_starts_no_fallback_past_the_review_limit(tmp_path: Path) -> None:
    target = ReviewTarget(
        key="docs/plans/x.md",
        kind="plan",
        review_id="1700000000-00000001",
        repo_root=tmp_path,
        work_dir=tmp_path / "work",
        initial_prompt="review it",
        content="# Plan\n",
        content_hash="h",
    )
    history = [
        RoundRecord(
            number=1,
            operation=Operation.INITIAL,
            runner=RunnerResult(
                result=RunnerStatus.SUCCESS, attempt_id="1", codex_session_id="thread-1"
            ),
            review=HIGH,
            content_hash="h0",
        )
    ]
    reviewer = SlowFailingReviewer(0.3)
    result = run_loop(target, reviewer, max_rounds=5, history=history, limit=ReviewLimit(0.2, 600))
    # The resume timed out; the fallback's fresh review would start past the limit.
    assert [q.operation for q in reviewer.requests] == [Operation.RESUME]
    (request,) = reviewer.requests
    assert request.review_timeout_s == 0.2
    assert request.time_left_s is not None and 0 < request.time_left_s <= 0.2
    assert result.status is ReviewStatus.ABORTED
    assert result.error == (
        "the review reached its limit of 0.2s (advreview_review_timeout), retries and "
        "fallback included; each attempt may take 600s (advreview_timeout); find out why "
        "the model hangs, or raise advreview_review_timeout"
    )


def _request(repo: Path, left: float, work: Path | None = None) -> DispatchRequest:
    return DispatchRequest(
        review_id="1700000000-00000001",
        repo_root=repo,
        operation=Operation.INITIAL,
        prompt_body="review docs/plans/x.md",
        work_dir=work or repo / "work",
        time_left_s=left,
        review_timeout_s=7,
    )


def test_the_command_reviewer_gets_what_is_left_and_no_retry_past_it(tmp_path: Path) -> None:
    reviewer = CommandReviewer(f"{sys.executable} -c 'import time; time.sleep(30)'", timeout=60)
    started = time.monotonic()
    result = reviewer.dispatch(_request(tmp_path, 0.5))
    assert time.monotonic() - started < 30  # cut to the review's half second, not 60 s
    assert result.runner.result is RunnerStatus.TIMEOUT
    assert result.runner.errors is not None
    assert result.runner.errors.startswith("the review reached its limit of 7s")
    assert "each attempt may take 60s" in result.runner.errors
    assert result.attempts == 1
    spent = reviewer.dispatch(_request(tmp_path, 0))
    assert spent.runner.result is RunnerStatus.TIMEOUT
    assert spent.runner.errors is not None and "limit of 7s" in spent.runner.errors


def test_codex_gets_what_is_left_and_no_retry_past_it(
    fake_codex, git_repo: Path, tmp_path: Path
) -> None:
    fake = fake_codex(Behaviour(sleep=30))
    home = tmp_path / "codex-home"
    home.mkdir()
    options = CodexOptions(
        executable=str(fake.path), sandbox="read-only", timeout=60, env={"CODEX_HOME": str(home)}
    )
    reviewer = CodexReviewer(options)
    result = reviewer.dispatch(_request(git_repo, 1.0, tmp_path / "work"))
    assert result.runner.result is RunnerStatus.TIMEOUT
    assert result.runner.errors is not None
    assert result.runner.errors.startswith("the review reached its limit of 7s")
    assert result.attempts == 1  # the retry would start past the limit
    spent = reviewer.dispatch(_request(git_repo, 0, tmp_path / "work"))
    assert spent.runner.errors is not None and "limit of 7s" in spent.runner.errors


def _one_shot_server(answer: bytes) -> tuple[int, threading.Thread]:
    """A loopback server that answers one connection with ``answer`` (nothing: closes)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve() -> None:
        with listener:
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)
                if answer:
                    conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener.getsockname()[1], thread


def test_reach_counts_any_answer_and_names_a_dropped_connection() -> None:
    port, thread = _one_shot_server(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}")
    assert r.reach(f"http://127.0.0.1:{port}/v1") is None
    thread.join(10)
    port, thread = _one_shot_server(b"")
    assert r.reach(f"http://127.0.0.1:{port}/v1") == (
        "Remote end closed connection without response"
    )
    thread.join(10)


def test_a_blip_after_a_long_answer_gets_the_whole_budget(tmp_path: Path) -> None:
    answered = {"type": "item.started", "item": {"type": "reasoning"}}
    watch = _watch(tmp_path, 3600.0, answered)
    assert not watch.is_set()
    watch.since -= 7200  # then two hours of thinking, without an event
    with watch.stream.open("a") as fh:
        fh.write(json.dumps(_error(WAITING)) + "\n")
    watch._next_look = 0.0
    assert not watch.is_set()  # the budget starts at the failure, not at the answer
    assert watch.tries == 1
