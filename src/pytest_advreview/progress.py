"""Progress of the reviews in flight: node id, round, elapsed time, the latest activity.

A real review waits minutes on a model, and pytest shows only the item's path until it
ends: a working reviewer and a hung one look the same.  While reviews run, this shows
one line per review in flight:

    advreview: docs/plans/x.md::adversarial-review  round 1  1:05  running: pytest -q

* On a terminal the lines are one block below pytest's current line, redrawn in place
  every second (ANSI cursor moves relative to that line, so a scrolling screen does not
  break it) and erased before pytest writes anything.
* In a log (output not a terminal: CI) a review gets a line every ``interval`` seconds,
  the first after ``interval`` seconds: a review shorter than that prints nothing.
* Nothing under ``-q``, on an xdist worker (its output is not shown), or without a
  terminal file descriptor (pytester's in-process runs).

The activity comes from the reviewer's own event stream (Codex's ``--json`` JSONL, which
the runner writes to a file): it is read from where the last look stopped, never whole.

The display writes to its own duplicate of pytest's terminal file descriptor: while an
item's setup runs (the review), pytest's capture has the process's file descriptor 1
pointed at a temporary file, and a line written there would be the item's captured
output.  pytest's own writes happen in its reporting hooks, between phases; the plugin's
wrappers around those hooks erase the block first and hold the display's lock until
pytest is done, so the two never interleave.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .outbound import one_line
from .runner.reachability import claude_retry_of, event_batches, reconnect_of

if TYPE_CHECKING:
    from _pytest._io import TerminalWriter

__all__ = ["Progress", "ProgressPlugin", "activity_of", "progress_plugin"]

#: Seconds between redraws on a terminal.
LIVE_INTERVAL_S = 1.0
#: Longest command shown.
_COMMAND_CHARS = 120


#: What the reviewer is doing, by the type of a thread or turn event.
_TURN_ACTIVITY = {
    "thread.started": "started",
    "turn.started": "waiting for the model",
    "turn.completed": "turn completed",
    "turn.failed": "turn failed",
}
#: ... and by the type of the item an ``item.started``/``item.completed`` event carries.
_ITEM_ACTIVITY = {
    "reasoning": "thinking",
    "agent_message": "writing the review",
    "file_change": "changing files",
    "web_search": "searching the web",
    "mcp_tool_call": "calling a tool",
}


def activity_of(event: dict[str, Any], attempt: int = 1) -> str | None:
    """What a Codex ``--json`` event (or a Claude Code ``stream-json`` one) says the
    reviewer is doing; ``None``: nothing new.

    ``attempt``: the number of a reconnect Codex does not number itself.
    """
    if event.get("type") == "assistant":
        return _claude_activity(event.get("message"))
    reconnect = reconnect_of(event) or claude_retry_of(event)
    if reconnect is not None:
        number = reconnect.number or attempt
        of = f" of {reconnect.of}" if reconnect.of else ""
        cause = f": {one_line(reconnect.cause)}" if reconnect.cause else ""
        return f"reconnecting to the model, try {number}{of}{cause}"
    kind = event.get("type")
    item = event.get("item")
    if kind in _TURN_ACTIVITY:
        return _TURN_ACTIVITY[str(kind)]
    if not isinstance(item, dict):
        return None
    item_type = item.get("type")
    if item_type == "command_execution":
        command = _command(item.get("command"))
        if kind == "item.started":
            return f"running: {command}"
        code = item.get("exit_code")
        return f"ran: {command} (exit {code})" if code is not None else f"ran: {command}"
    if kind not in ("item.started", "item.completed"):
        return None
    return _ITEM_ACTIVITY.get(str(item_type))


#: What Claude Code's read and search tools do, and the argument that says on what.
_CLAUDE_TOOLS = {
    "Read": ("reading", "file_path"),
    "Grep": ("searching", "pattern"),
    "Glob": ("finding files", "pattern"),
}


def _claude_activity(message: object) -> str | None:
    """What one of Claude Code's assistant messages says the reviewer is doing."""
    if not isinstance(message, dict) or message.get("model") == "<synthetic>":
        return None
    content = message.get("content")
    for block in reversed(content if isinstance(content, list) else []):
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_use":
            name = str(block.get("name"))
            what, key = _CLAUDE_TOOLS.get(name, (f"asking for {name}", ""))
            args = block.get("input")
            on = args.get(key) if isinstance(args, dict) and key else None
            return f"{what}: {_command(on)}" if isinstance(on, str) else what
        if block.get("type") == "text":
            return "writing the review"
    return None


def _command(raw: object) -> str:
    """The command as the reviewer wrote it: Codex wraps it in ``/bin/bash -lc '…'``.

    Shown through :func:`~.outbound.one_line`, as everything this display prints: the
    command comes from the reviewer, which the plan under review may have talked into
    anything; an escape sequence in it (``ESC ]52`` sets the clipboard, ``ESC [2K`` erases
    a line, a fake "PASSED") must reach the terminal as text, and a secret it echoes must
    not reach the log.
    """
    text = raw if isinstance(raw, str) else str(raw)
    for shell in ("/bin/bash -lc ", "/bin/bash -c ", "bash -lc ", "/bin/sh -c "):
        if text.startswith(shell):
            text = text[len(shell) :]
            if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
                text = text[1:-1]
            break
    text = " ".join(one_line(text).split())
    return text if len(text) <= _COMMAND_CHARS else text[: _COMMAND_CHARS - 1] + "…"


@dataclass
class _Entry:
    """One review in flight."""

    started: float
    round: int = 0
    activity: str = "preparing"
    stream: Path | None = None
    offset: int = 0
    next_line: float = 0.0
    reconnects: int = 0

    def follow(self) -> None:
        """Read the stream from where the last look stopped; keep the latest activity."""
        if self.stream is None:
            return
        for events, after in event_batches(self.stream, self.offset):
            self.offset = after
            for event in events:
                found = activity_of(event, self.reconnects + 1)
                if found is None:
                    continue
                # Codex numbers its stream retries (2/5) but not its waits for the
                # network: those are counted here, and any other activity starts the
                # count afresh.
                self.reconnects = self.reconnects + 1 if reconnect_of(event) else 0
                self.activity = found


class Progress:
    """The reviews in flight and their display; safe to feed from any thread.

    :param out: the file descriptor to write to (a duplicate of pytest's terminal).
    :param live: redraw one block in place (a terminal) instead of printing lines.
    :param interval: seconds between one review's lines in a log.
    :param column: the column pytest's current line ends at (where the block returns).
    :param current_line: the text of pytest's current line (re-printed after lines in a
        log, so pytest's own line continues whole).
    """

    def __init__(
        self,
        out: int,
        *,
        live: bool,
        interval: float,
        width: Callable[[], int],
        column: Callable[[], int],
        current_line: Callable[[], str],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._out = out
        self.live = live
        self.interval = interval
        self._width = width
        self._column = column
        self._current_line = current_line
        self._clock = clock
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.RLock()
        self._drawn = False
        self._held = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- feeding -----------------------------------------------------------------------

    def begin(self, key: str) -> None:
        """A review of ``key`` (a node id) starts; the first starts the display's thread,
        which redraws (terminal) or prints lines (log)."""
        now = self._clock()
        with self._lock:
            self._entries[key] = _Entry(started=now, next_line=now + self.interval)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._main, name="advreview-progress", daemon=True
                )
                self._thread.start()

    def dispatch(self, key: str, round_no: int, stream: Path | None) -> None:
        """The reviewer is launched for round ``round_no``; its events go to ``stream``."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                entry.round = round_no
                entry.activity = "starting the reviewer"
                entry.stream = stream
                entry.offset = 0

    def end(self, key: str) -> None:
        """The review of ``key`` is over (whatever its result)."""
        with self._lock:
            self._entries.pop(key, None)
            if self.live and self._drawn and not self._held:
                self._draw()

    # -- the display -------------------------------------------------------------------

    def stop(self) -> None:
        """Stop the thread and erase the block; the file descriptor is closed."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            self._erase()
            with contextlib.suppress(OSError):
                os.close(self._out)
            self._out = -1

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Keep the display off the screen while pytest writes (its reporting hooks)."""
        with self._lock:
            self._erase()
            self._held += 1
            try:
                yield
            finally:
                self._held -= 1

    def _main(self) -> None:
        step = LIVE_INTERVAL_S if self.live else min(LIVE_INTERVAL_S, self.interval)
        while not self._stop.wait(step):
            with self._lock:
                if self._held or self._out < 0:
                    continue
                for entry in self._entries.values():
                    entry.follow()
                if self.live:
                    self._draw()
                else:
                    self._lines()

    def _line(self, key: str, entry: _Entry, now: float) -> str:
        seconds = int(now - entry.started)
        elapsed = f"{seconds // 60}:{seconds % 60:02d}"
        where = f"round {entry.round}" if entry.round else "before round 1"
        return one_line(f"advreview: {key}  {where}  {elapsed}  {entry.activity}")

    def _draw(self) -> None:
        """Redraw the block below pytest's current line and return to where it ends."""
        now = self._clock()
        width = max(20, self._width() - 1)
        lines = [self._line(k, e, now)[:width] for k, e in self._entries.items()]
        text = "\x1b[J"  # erase from pytest's line end: the old block
        if lines:
            text += "\n" + "\n".join(lines)
            text += f"\x1b[{len(lines)}A\x1b[{self._column() % (width + 1) + 1}G"
        self._write(text)
        self._drawn = bool(lines)

    def _erase(self) -> None:
        if self.live and self._drawn:
            self._write("\x1b[J")
            self._drawn = False

    def _lines(self) -> None:
        """In a log: a line for each review whose interval has passed."""
        now = self._clock()
        due = [(k, e) for k, e in self._entries.items() if now >= e.next_line]
        if not due:
            return
        for _key, entry in due:
            entry.next_line = now + self.interval
        text = "\n".join(self._line(k, e, now) for k, e in due) + "\n"
        current = self._current_line()
        if current:
            # pytest is in the middle of a line: finish it here and print it again after
            # the block, so its own line reads whole in the log.
            text = "\n" + text + current
        self._write(text)

    def _write(self, text: str) -> None:
        if self._out < 0:
            return
        data = text.encode("utf-8", "replace")
        with contextlib.suppress(OSError):
            while data:
                data = data[os.write(self._out, data) :]


class ProgressPlugin:
    """Keeps the progress display off pytest's lines: registered only when it is shown."""

    def __init__(self, progress: Progress, terminal: TerminalWriter) -> None:
        self.progress = progress
        self.terminal = terminal

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logstart(self) -> Generator[None, None, None]:
        """Erase the block while pytest writes the item's name, a phase's result or its
        progress percentage (the same wrapper serves the three hooks)."""
        with self.progress.held():
            result = yield
            # pytest's writer buffers; what it wrote must be out before the block is drawn.
            self.terminal.flush()
        return result

    pytest_runtest_logreport = pytest_runtest_logfinish = pytest_runtest_logstart

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        """Gone before pytest's summary; also at unconfigure, after an internal error or
        Ctrl-C that skipped the session's finish."""
        self.progress.stop()

    pytest_unconfigure = pytest_sessionfinish


def progress_plugin(config: pytest.Config, interval: int) -> ProgressPlugin | None:
    """The display for this run, or ``None`` when it is not shown (see the module doc).

    :param interval: ``--advreview-progress``: seconds between lines in a log; 0: off.
    """
    if interval <= 0 or config.get_verbosity() < 0 or hasattr(config, "workerinput"):
        return None
    if config.pluginmanager.get_plugin("terminalreporter") is None:
        return None
    try:
        fd = os.dup(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real stdout (pytester in-process)
        return None
    terminal = config.get_terminal_writer()
    live = os.isatty(fd) and os.environ.get("TERM", "") != "dumb"
    progress = Progress(
        fd,
        live=live,
        interval=float(interval),
        width=lambda: terminal.fullwidth,
        column=lambda: terminal.width_of_current_line,
        # pytest's writer keeps the line it is on (public since pytest 6 only as a width).
        current_line=lambda: str(getattr(terminal, "_current_line", "")),
    )
    return ProgressPlugin(progress, terminal)
