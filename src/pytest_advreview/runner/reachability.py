"""Whether Codex can reach its model: the provider it will use, and what a failure says.

Measured on Codex 0.171.0 (docs/codex-compat.md, "An unreachable model"): against a
closed port Codex never gives up.  Its ``--json`` stream shows
``{"type":"error","message":"Reconnecting... waiting for network (Connection failed:
error sending request)"}`` at about 4, 12, 25, 49 s and so on, for ever; with no provider
configured it falls back to the built-in OpenAI provider and does the same
(``Reconnecting... 2/5 (stream disconnected before completion: failed to lookup address
information: …)``, then ``waiting for network``).  The runner reads these events as the
stream grows (:class:`ConnectWatch`) and ends the attempt once the connect budget is
spent; the doctor asks the endpoint once (:func:`reach`).  Both say the same thing
(:func:`unreachable_message`).
"""

from __future__ import annotations

import json
import re
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .._toml import tomllib
from ._process import Cancel

__all__ = [
    "BUILTIN_OPENAI_URL",
    "ConnectWatch",
    "Provider",
    "Reconnect",
    "claude_retry_of",
    "event_batches",
    "find_provider",
    "not_configured",
    "reach",
    "read_events",
    "reconnect_of",
    "unreachable_message",
]

#: Where Codex's built-in ``openai`` provider sends its requests.
BUILTIN_OPENAI_URL = "https://api.openai.com/v1"
#: Seconds :func:`reach` waits for an answer.
REACH_TIMEOUT_S = 10.0
#: Longest line parsed (a tool's huge output is skipped, not parsed).
READ_LIMIT = 1 << 20
#: Bytes of new stream read and parsed at a time: what a look holds, however much Codex
#: wrote since the last one (a 50 MB stream once grew the pytest process by 3.7 MB).
READ_CHUNK = 64 << 10
#: Seconds between two looks at the stream while a launch waits.
LOOK_INTERVAL_S = 0.25

#: ``Reconnecting... 2/5 (cause)`` or ``Reconnecting... waiting for network (cause)``.
_RECONNECT = re.compile(
    r"^Reconnecting\.\.\.\s*(?:(?P<no>\d+)/(?P<of>\d+)|waiting for network)\s*"
    r"(?:\((?P<cause>.*)\))?\s*$",
    re.DOTALL,
)
#: Causes that mean no connection was made (as opposed to a server that answered 5xx).
_NO_CONNECTION = re.compile(
    r"waiting for network|connection failed|error sending request|failed to lookup address"
    r"|name does not resolve|connection refused|dns error|tcp connect|network is unreachable"
    r"|no route to host",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Reconnect:
    """One ``Reconnecting...`` event of Codex's stream."""

    #: The try and how many Codex makes (``2/5``); ``None``: it waits for the network.
    number: int | None
    of: int | None
    #: Codex's words for why (``Connection failed: error sending request``).
    cause: str
    #: Whether no connection was made at all (rather than a server that answered).
    no_connection: bool


def reconnect_of(event: Mapping[str, Any]) -> Reconnect | None:
    """The reconnect an event of Codex's ``--json`` stream reports; ``None``: not one."""
    if event.get("type") != "error":
        return None
    message = event.get("message")
    if not isinstance(message, str):
        return None
    found = _RECONNECT.match(message.strip())
    if found is None:
        return None
    number, of = found.group("no"), found.group("of")
    cause = (found.group("cause") or "").strip()
    waiting = number is None
    return Reconnect(
        number=int(number) if number else None,
        of=int(of) if of else None,
        cause=cause,
        no_connection=waiting or bool(_NO_CONNECTION.search(cause)),
    )


def claude_retry_of(event: Mapping[str, Any]) -> Reconnect | None:
    """A ``system/api_retry`` event of Claude Code's ``stream-json`` as a reconnect;
    without an HTTP status, no connection was made (a 5xx or 429 is a server that
    answered)."""
    if event.get("type") != "system" or event.get("subtype") != "api_retry":
        return None
    number, of = event.get("attempt"), event.get("max_retries")
    status = event.get("error_status")
    error = event.get("error")
    return Reconnect(
        number=number if isinstance(number, int) else None,
        of=of if isinstance(of, int) else None,
        # Claude Code says ``unknown`` for a refused connection; its final result has the
        # words (``Connection refused … (ECONNREFUSED)``).
        cause="no connection" if error in (None, "", "unknown") else str(error),
        no_connection=status is None,
    )


def event_batches(path: Path, offset: int) -> Iterator[tuple[list[dict[str, Any]], int]]:
    """The complete JSON lines of ``path`` from ``offset`` on, a batch of about
    :data:`READ_CHUNK` bytes at a time, each with the offset after it: a reader handles
    one batch before the next is read, so a huge stream is never held at once."""
    while True:
        events, after = read_events(path, offset)
        if after == offset:
            return
        yield events, after
        offset = after


def read_events(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """The complete JSON lines in about :data:`READ_CHUNK` bytes of ``path`` from
    ``offset`` on, and the offset after them.

    A line still being written is left for the next look; one line longer than
    :data:`READ_LIMIT` is skipped.  A missing file has no events yet.
    """
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            data = fh.read(READ_CHUNK)
            # A line longer than a chunk is read on, up to the longest line parsed.
            while b"\n" not in data and len(data) < READ_LIMIT:
                more = fh.read(min(len(data) or READ_CHUNK, READ_LIMIT - len(data)))
                if not more:
                    break
                data += more
    except OSError:
        return [], offset
    end = data.rfind(b"\n")
    if end < 0:
        return [], offset + (len(data) if len(data) >= READ_LIMIT else 0)
    events: list[dict[str, Any]] = []
    for raw in data[:end].splitlines():
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events, offset + end + 1


class ConnectWatch:
    """Stops a reviewer launch that has not reached its model within ``budget`` seconds.

    Passed to the launch as its ``cancel``: :meth:`is_set` is true once the run's own
    cancel is, or once the stream has shown only failed connections for ``budget``
    seconds: counted from the launch while the model has not answered yet (Codex's own
    quick retries come before its first event), and from the first failed connection
    after an answer (a model that thought for minutes, then a network blip, gets the
    whole budget afresh).
    """

    def __init__(
        self,
        stream: Path,
        cancel: Cancel,
        budget: float,
        *,
        reconnect: Callable[[Mapping[str, Any]], Reconnect | None] | None = None,
        answered: Callable[[Mapping[str, Any]], bool] | None = None,
    ) -> None:
        """:param reconnect: reads a failed connection out of one stream event, and
        :param answered: says whether an event shows the model answered; both
        default to Codex's ``--json`` stream (another CLI's stream brings its own)."""
        self.stream = stream
        self._reconnect = reconnect or reconnect_of
        self._is_answer = answered or _answered
        self.cancel = cancel
        self.budget = budget
        self._offset = 0
        self._next_look = 0.0
        #: Since when the connections have failed (the launch, until the model answers).
        self.since = time.monotonic()
        self._answered = False
        #: Failed connections since then, and Codex's words for the last one.
        self.tries = 0
        self.cause: str | None = None
        #: Set once the budget was spent: the seconds it took.
        self.gave_up_after: float | None = None

    def is_set(self) -> bool:
        if self.cancel.is_set():
            return True
        now = time.monotonic()
        if now >= self._next_look:
            self._next_look = now + LOOK_INTERVAL_S
            self._follow(now)
        if self.tries and now - self.since >= self.budget:
            self.gave_up_after = now - self.since
            return True
        return False

    def _follow(self, now: float) -> None:
        for events, after in event_batches(self.stream, self._offset):
            self._offset = after
            self._count(events, now)

    def _count(self, events: list[dict[str, Any]], now: float) -> None:
        for event in events:
            found = self._reconnect(event)
            if found is not None and found.no_connection:
                if self._answered and not self.tries:
                    self.since = now
                self.tries += 1
                self.cause = found.cause
            elif found is not None or self._is_answer(event):
                self._answered = True
                self.tries, self.cause = 0, None


def _answered(event: Mapping[str, Any]) -> bool:
    """Whether an event shows the model answered (an item, a finished turn)."""
    kind = event.get("type")
    if kind in ("turn.completed", "turn.failed"):
        return True
    item = event.get("item")
    return (
        isinstance(kind, str)
        and kind.startswith("item.")
        and isinstance(item, dict)
        and item.get("type") != "error"
    )


# -- the provider Codex will use ---------------------------------------------------------


@dataclass(frozen=True)
class Provider:
    """The model provider Codex will use, as far as its configuration says."""

    #: ``model_provider`` (``openai`` when nothing sets it).
    id: str
    #: Its ``base_url``; ``None`` for a built-in provider the configuration does not define.
    base_url: str | None
    #: Where it was found: ``--advreview-codex-config``, a ``config.toml`` path, or
    #: ``Codex's default``.
    where: str

    @property
    def endpoint(self) -> str:
        """The URL to name in a message."""
        if self.base_url:
            return self.base_url
        return BUILTIN_OPENAI_URL if self.id == "openai" else f"the built-in provider {self.id!r}"


def _value(raw: str) -> object:
    """A ``-c KEY=VALUE`` value as Codex reads it: TOML, or else the bare string."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except (tomllib.TOMLDecodeError, KeyError):
        return raw.strip()


def _pairs(config: Sequence[str]) -> dict[str, object]:
    split = (pair.partition("=") for pair in config)
    return {key.strip(): _value(raw) for key, sep, raw in split if sep}


def _dig(table: object, *keys: str) -> object:
    for key in keys:
        if not isinstance(table, dict):
            return None
        table = table.get(key)
    return table


def find_provider(config: Sequence[str], codex_home: Path) -> Provider:
    """The provider of ``-c`` pairs ``config`` over ``$CODEX_HOME/config.toml`` (and its
    selected ``profile``), the way Codex picks it; ``openai`` when neither names one.

    An unreadable ``config.toml`` counts as empty here: Codex reports it itself.
    """
    pairs = _pairs(config)
    toml_file = codex_home / "config.toml"
    try:
        user: object = tomllib.loads(toml_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        user = {}
    profile = pairs.get("profile", _dig(user, "profile"))
    named = (
        (pairs.get("model_provider"), "--advreview-codex-config"),
        (
            _dig(user, "profiles", profile, "model_provider") if isinstance(profile, str) else None,
            str(toml_file),
        ),
        (_dig(user, "model_provider"), str(toml_file)),
    )
    provider_id, where = next(
        ((str(value), origin) for value, origin in named if isinstance(value, str) and value),
        ("openai", "Codex's default"),
    )
    base = pairs.get(f"model_providers.{provider_id}.base_url")
    if not isinstance(base, str):
        base = _dig(user, "model_providers", provider_id, "base_url")
    return Provider(provider_id, base if isinstance(base, str) and base else None, where)


def not_configured(provider: Provider, codex_home: Path, env: Mapping[str, str]) -> str | None:
    """Why Codex has no model to ask (``None``: it has one), before anything is launched.

    Only the built-in OpenAI provider chosen by default with neither a login
    (``$CODEX_HOME/auth.json``) nor an API key in the environment: Codex would then
    retry for ever (measured on 0.171.0).  A provider the user named is theirs to judge.
    """
    if provider.where != "Codex's default":
        return None
    if (codex_home / "auth.json").is_file():
        return None
    if any(env.get(name) for name in ("OPENAI_API_KEY", "CODEX_API_KEY")):
        return None
    return (
        "no model provider is configured for Codex: no model_provider in "
        f"--advreview-codex-config or {codex_home / 'config.toml'}, and no login "
        f"({codex_home / 'auth.json'}) or OPENAI_API_KEY for the built-in OpenAI provider, "
        "so Codex would retry for ever; run `codex login`, set OPENAI_API_KEY, or name a "
        "provider (e.g. --advreview-codex-config=model_provider=ID with "
        "model_providers.ID.base_url=URL; docs/getting-started.md, 'Which model')"
    )


# -- asking the endpoint -----------------------------------------------------------------


def reach(url: str, timeout: float = REACH_TIMEOUT_S) -> str | None:
    """One request to ``url``'s ``/models``; ``None`` when anything answers, else why not.

    Any HTTP answer (a 401, a 404) means the server is there; only a failed connection
    is a cause: ``connection refused``, ``the host name does not resolve``, ``no answer
    within 10 s``, or the system's words.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{url!r} is not an http(s) URL"
    request = urllib.request.Request(url.rstrip("/") + "/models", method="GET")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout):
            return None
    except urllib.error.HTTPError:
        return None
    except urllib.error.URLError as exc:
        return _cause(exc.reason, timeout)
    except OSError as exc:
        return _cause(exc, timeout)


def _cause(reason: object, timeout: float) -> str:
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, socket.gaierror):
        return "the host name does not resolve"
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return f"no answer within {timeout:g} s"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror.lower()
    return str(reason) or type(reason).__name__


def unreachable_message(endpoint: str, cause: str, tries: int, seconds: float) -> str:
    """The one message of a model that cannot be reached (runner and doctor)."""
    tried = f" after {tries} {'try' if tries == 1 else 'tries'} in {seconds:.0f} s" if tries else ""
    return (
        f"cannot reach the model at {endpoint} ({cause}){tried}; is the server running? "
        "(a network failure is never retried: the same network gives the same answer)"
    )
