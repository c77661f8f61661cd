"""The loopback HTTP plumbing both scripted servers share (Responses API for Codex, Messages
API for Claude Code): serving in a background thread, a stop that wakes hanging answers,
and the JSON and server-sent-event writers.  Only the standard library is used."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

_Self = TypeVar("_Self", bound="LoopbackServer")


class _Server(ThreadingHTTPServer):
    """The HTTP server object; carries a back reference to its :class:`LoopbackServer`."""

    daemon_threads = True
    # LoopbackServer.stop() joins the handler threads itself, with a deadline.
    block_on_close = False
    owner: LoopbackServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet about clients that went away (a CLI killed mid-stream is normal)."""
        self.owner._note_error()


class _Handler(BaseHTTPRequestHandler):
    """Answers one request (HTTP/1.0: one request per connection, closed at the end)."""

    server: _Server
    # A stalled client must not pin a handler thread for long.
    timeout = 30

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output clean; every request is in the server's ``requests``."""

    def do_POST(self) -> None:
        """Every method goes to the owner, which answers from its script or with a 404."""
        self.server.owner._serve(self)

    do_GET = do_HEAD = do_PUT = do_DELETE = do_PATCH = do_POST


class LoopbackServer:
    """A server bound to loopback that answers every request through :meth:`_respond`.

    Use it as a context manager or call :meth:`start` and :meth:`stop`.
    """

    #: How messages name the server.
    _name = "advreview scripted server"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._errors = 0
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._handlers: set[threading.Thread] = set()
        self._connections: set[socket.socket] = set()

    def start(self: _Self) -> _Self:
        """Bind and serve in a background thread; returns ``self``."""
        if self._httpd is not None:
            raise RuntimeError(f"{self._name}: already started")
        self._stop_event.clear()
        httpd = _Server((self.host, self.port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"advreview-scripted-server-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving, wake hanging handlers, close every socket and join the threads.

        :param timeout: how long to wait for handler threads in total.
        """
        httpd = self._httpd
        if httpd is None:
            return
        # Wake every `hang` first, then cut idle connections so no handler blocks on a read.
        self._stop_event.set()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout)
        deadline = time.monotonic() + timeout
        with self._lock:
            handlers = list(self._handlers)
        for thread in handlers:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._httpd = None
        self._thread = None

    def __enter__(self: _Self) -> _Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _origin(self) -> str:
        """``http://<host>:<port>``; :raises RuntimeError: before :meth:`start`."""
        if self._httpd is None:
            raise RuntimeError(f"{self._name}: not started")
        return f"http://{self.host}:{self.port}"

    @property
    def errors(self) -> int:
        """How many handler errors occurred (mostly clients that hung up mid-answer)."""
        with self._lock:
            return self._errors

    def _note_error(self) -> None:
        with self._lock:
            self._errors += 1

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self._handlers.add(threading.current_thread())
            self._connections.add(handler.connection)
        try:
            length = int(handler.headers.get("content-length") or 0)
            self._respond(handler, handler.rfile.read(length) if length > 0 else b"")
        except (BrokenPipeError, ConnectionResetError):
            # The CLI gave up (killed by a timeout test, or its own idle timeout): expected.
            self._note_error()
        finally:
            with self._lock:
                self._handlers.discard(threading.current_thread())
                self._connections.discard(handler.connection)

    def _respond(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        """Answer one request whose body is ``raw``."""
        raise NotImplementedError


def json_object(raw: bytes | str) -> dict[str, Any]:
    """``raw`` parsed as JSON, ``{}`` when it is empty or not a JSON object."""
    try:
        parsed = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def send_json(
    handler: BaseHTTPRequestHandler,
    status: int,
    body: Any,
    headers: Mapping[str, Any] | None = None,
) -> None:
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for name, value in (headers or {}).items():
        handler.send_header(name, str(value))
    handler.end_headers()
    handler.wfile.write(data)
    handler.wfile.flush()


def start_sse(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    # HTTP/1.0 without a length: the stream ends when the connection closes.
    handler.end_headers()
    handler.wfile.flush()


def send_event(handler: BaseHTTPRequestHandler, event: str, data: Mapping[str, Any]) -> None:
    handler.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
    handler.wfile.flush()
