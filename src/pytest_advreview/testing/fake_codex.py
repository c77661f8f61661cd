"""A fake ``codex`` executable, for fault injection the real CLI produces only sometimes.

:func:`install_fake_codex` writes ``directory/codex``: a copy of **this module** with a
shebang naming the current interpreter with ``-S``.  The module imports only the standard
library, so the copy runs as a standalone program, even outside the project's virtualenv.
Its configuration lives next to it:

``fake-codex.json``
    ``{"version": "0.171.0", "behaviours": [BEHAVIOUR, ...]}``; invocation *n* uses
    behaviour *n* (0-based) and, once past the end, the last one again.
``counter``
    how many invocations have started (read and bumped under an ``fcntl`` lock, so
    parallel invocations each get their own behaviour).
``calls.jsonl``
    one record per invocation: ``argv``, ``stdin`` (as read), ``prompt`` (what the real
    CLI would send: an argument prompt plus a ``<stdin>`` block), ``cwd``, ``codex_home``
    (the ``CODEX_HOME`` it saw), ``pid``, ``index`` (which invocation) and ``parsed`` (the
    options it understood: ``config`` list, ``model``, ``sandbox``, ``cd``, ``output``,
    ``output_schema``, ``resume``, ``thread_id``, ``json``, …).
``children.jsonl``
    ``{"pid": …, "child": …}`` for every child started by ``spawn_child_sleep``.
``sigterms.jsonl``
    ``{"pid": …}`` for every SIGTERM a fake with ``ignore_sigterm`` received.

The fake understands the part of Codex CLI 0.171's argv that a runner uses::

    codex --version
    codex exec [OPTIONS] [-] [PROMPT]
    codex exec [OPTIONS] resume [OPTIONS] [--last] [THREAD_ID] [-]

Unknown options (and ``-s``/``-C`` after ``resume``) fail like the real CLI: exit code 2
and ``error: unexpected argument``.  Like the real CLI it also fails with rc 1 when
``CODEX_HOME`` is set but missing, when ``-o`` cannot be created, and on an empty prompt
(the call is recorded and a behaviour consumed in each case).  It does **not** check that a
resumed thread's rollout exists.  What it prints and writes is described by
:class:`Behaviour`.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import fcntl
import functools
import json
import os
import signal
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

__all__ = ["FAKE_CODEX_VERSION", "Behaviour", "FakeCodex", "install_fake_codex"]

#: Version the fake reports by default (``codex --version`` → ``codex-cli 0.171.0``).
FAKE_CODEX_VERSION = "0.171.0"

_CONFIG = "fake-codex.json"
_COUNTER = "counter"
_CALLS = "calls.jsonl"
_CHILDREN = "children.jsonl"
_SIGTERMS = "sigterms.jsonl"
_LOCK = "lock"

#: Options of ``codex exec`` / ``codex exec resume`` that take a value (0.171.0 ``--help``).
_VALUE_OPTIONS = {
    "-c": "config",
    "--config": "config",
    "--enable": "enable",
    "--disable": "disable",
    "--remote": "remote",
    "--remote-auth-token-env": "remote_auth_token_env",
    "-i": "image",
    "--image": "image",
    "-m": "model",
    "--model": "model",
    "--local-provider": "local_provider",
    "-p": "profile",
    "--profile": "profile",
    "-s": "sandbox",
    "--sandbox": "sandbox",
    "-C": "cd",
    "--cd": "cd",
    "--add-dir": "add_dir",
    "--thread-source": "thread_source",
    "--cyber-access-program": "cyber_access_program",
    "--output-schema": "output_schema",
    "--color": "color",
    "-o": "output",
    "--output-last-message": "output",
}
#: Options without a value.
_FLAG_OPTIONS = {
    "--strict-config",
    "--oss",
    "--approve-for-me",
    "--dangerously-bypass-approvals-and-sandbox",
    "--dangerously-bypass-hook-trust",
    "--worktree",
    "--skip-git-repo-check",
    "--trust",
    "--ephemeral",
    "--ignore-user-config",
    "--ignore-rules",
    "--json",
    "--last",
    "--all",
}
#: Options ``codex exec resume`` rejects (``--help`` of 0.171.0): no sandbox, no ``-C``.
_EXEC_ONLY = {
    "-s",
    "--sandbox",
    "-C",
    "--cd",
    "-p",
    "--profile",
    "--oss",
    "--local-provider",
    "--approve-for-me",
    "--add-dir",
    "--color",
}
#: Options only ``resume`` knows.
_RESUME_ONLY = {"--last", "--all"}
#: Options that may be repeated; their values are collected in a list.
_REPEATED = {"config", "enable", "disable", "image", "add_dir"}
_SANDBOX_MODES = ("read-only", "workspace-write", "danger-full-access")
_DEFAULT_USAGE = {
    "input_tokens": 100,
    "cached_input_tokens": 0,
    "cache_write_input_tokens": 0,
    "output_tokens": 20,
    "reasoning_output_tokens": 0,
}


@dataclass(frozen=True)
class Behaviour:
    """What one invocation of the fake ``codex exec`` does.  Every field is optional.

    The run goes in this order: record the call → create ``-o`` (unless ``stale_o``) →
    ``write_files`` → rollouts → stdout up to ``turn.started`` and the extra output →
    ``spawn_child_sleep`` → ``sleep`` → ``stream_mb`` noise → the agent message and the
    ``-o`` text → ``turn.completed`` / ``turn.failed`` → ``delete_o`` → ``stderr`` → exit
    with ``rc``.  A kill during ``sleep`` therefore leaves ``-o`` as it was at startup, as
    the real CLI does.

    :param rc: exit code (default 0).
    :param thread_started: print ``{"type":"thread.started","thread_id":…}`` as the first
        stdout line (default ``True``; ``False`` tests the rollout tier of session-id capture).
    :param thread_id: the id to report; default the id asked for on ``resume``, else a new
        uuid4.
    :param review: text written to the ``-o`` file (exactly, no newline added) and reported
        as the ``agent_message`` item; ``None`` writes nothing (the file is still created
        empty at startup, like the real CLI does).
    :param stale_o: do not touch ``-o`` at all: not created, not written (a stale file from
        an earlier attempt keeps its content).
    :param delete_o: delete the ``-o`` file just before exiting.
    :param stderr: text written to stderr before exiting.
    :param stdout_extra: raw lines printed after ``turn.started`` (each gets a newline).
    :param stdout_bytes: raw bytes written to stdout after ``stdout_extra`` (e.g. invalid
        UTF-8).
    :param sleep: seconds to sleep after ``turn.started`` (hang tests; the process dies on
        SIGTERM/SIGKILL like any Python program).
    :param spawn_child_sleep: start a child process (same process group) that sleeps this
        many seconds; its pid goes to ``children.jsonl`` (tests of process-group killing).
    :param rollouts: how many rollout files to write under
        ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local ts>-<uuid>.jsonl``, each holding the
        prompt (so the attempt marker can be grepped).  The first one is named after
        ``thread_id``; a resume appends to the thread's existing rollout when there is one.
        Default 1, like the real CLI; nothing is written when ``CODEX_HOME`` is unset.
    :param usage: the ``turn.completed`` usage (default 100 input / 20 output tokens).
    :param turn_failed: emit ``{"type":"turn.failed","error":{"message": …}}`` with this
        message instead of ``turn.completed``.
    :param write_files: ``{relative path: content}`` created under the ``-C`` directory (or
        the cwd): a reviewer that mutates the workspace.
    :param stream_mb: megabytes of ``item.completed`` noise events printed before the agent
        message (memory tests).
    :param ignore_sigterm: record each SIGTERM in ``sigterms.jsonl`` and carry on, like a
        CLI that takes its time to stop: only SIGKILL ends it (tests of the kill's
        escalation).  The ``spawn_child_sleep`` child still dies on SIGTERM.
    """

    rc: int = 0
    thread_started: bool = True
    thread_id: str | None = None
    review: str | None = None
    stale_o: bool = False
    delete_o: bool = False
    stderr: str = ""
    stdout_extra: tuple[str, ...] = ()
    stdout_bytes: bytes = b""
    sleep: float = 0.0
    spawn_child_sleep: float = 0.0
    rollouts: int = 1
    usage: Mapping[str, int] | None = None
    turn_failed: str | None = None
    write_files: Mapping[str, str] = field(default_factory=dict)
    stream_mb: float = 0.0
    ignore_sigterm: bool = False

    @classmethod
    def from_value(cls, value: Behaviour | Mapping[str, Any]) -> Behaviour:
        """Accept a :class:`Behaviour` or a dict of its fields (unknown keys are an error)."""
        if isinstance(value, Behaviour):
            return value
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(
                f"advreview fake codex: unknown behaviour field(s) {unknown};"
                f" known: {sorted(known)}"
            )
        data = dict(value)
        if "stdout_extra" in data:
            data["stdout_extra"] = tuple(data["stdout_extra"])
        if isinstance(data.get("stdout_bytes"), str):
            data["stdout_bytes"] = data["stdout_bytes"].encode()
        return cls(**data)

    def to_json(self) -> dict[str, Any]:
        """The JSON form stored in ``fake-codex.json`` (bytes as base64)."""
        data = dataclasses.asdict(self)
        data["stdout_extra"] = list(self.stdout_extra)
        data["stdout_bytes"] = base64.b64encode(self.stdout_bytes).decode()
        data["write_files"] = dict(self.write_files)
        data["usage"] = dict(self.usage) if self.usage is not None else None
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Behaviour:
        """Inverse of :meth:`to_json`."""
        values = dict(data)
        values["stdout_bytes"] = base64.b64decode(values.get("stdout_bytes", ""))
        values["stdout_extra"] = tuple(values.get("stdout_extra", ()))
        return cls(**values)


class FakeCodex:
    """Handle on an installed fake ``codex``: its path, its calls, its behaviours."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        #: The executable to pass as the plugin's ``codex`` setting.
        self.path = directory / "codex"

    def set_behaviours(
        self,
        behaviours: Sequence[Behaviour | Mapping[str, Any]],
        *,
        version: str | None = None,
    ) -> None:
        """Replace the behaviours and restart from the first one.

        :param behaviours: one per invocation; the last repeats.  At least one.
        :param version: the version ``--version`` reports (default: keep the current one).
        """
        parsed = [Behaviour.from_value(b) for b in behaviours] or [Behaviour()]
        config_path = self.directory / _CONFIG
        if version is None and config_path.exists():
            version = json.loads(config_path.read_text(encoding="utf-8")).get("version")
        config = {
            "version": version or FAKE_CODEX_VERSION,
            "behaviours": [b.to_json() for b in parsed],
        }
        with _locked(self.directory):
            tmp = config_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(config, indent=2), encoding="utf-8")
            tmp.replace(config_path)
            (self.directory / _COUNTER).write_text("0", encoding="utf-8")

    def calls(self) -> list[dict[str, Any]]:
        """One record per invocation so far (see the module docstring), oldest first."""
        path = self.directory / _CALLS
        if not path.exists():
            return []
        lines = path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def child_pids(self) -> list[int]:
        """Pids of the children started by ``spawn_child_sleep``."""
        path = self.directory / _CHILDREN
        if not path.exists():
            return []
        lines = path.read_text(encoding="utf-8").splitlines()
        return [int(json.loads(line)["child"]) for line in lines if line.strip()]

    def sigterms(self) -> list[int]:
        """Pids of the ``ignore_sigterm`` fakes that received a SIGTERM, once per signal."""
        path = self.directory / _SIGTERMS
        if not path.exists():
            return []
        lines = path.read_text(encoding="utf-8").splitlines()
        return [int(json.loads(line)["pid"]) for line in lines if line.strip()]

    def __repr__(self) -> str:
        return f"FakeCodex({str(self.path)!r})"


def install_fake_codex(
    directory: Path,
    behaviours: Sequence[Behaviour | Mapping[str, Any]] = (),
    *,
    version: str = FAKE_CODEX_VERSION,
) -> FakeCodex:
    """Write an executable fake ``directory/codex`` and its configuration.

    :param directory: where to install (created if missing); put it first on ``PATH`` or
        pass ``FakeCodex.path`` as the ``codex`` setting.
    :param behaviours: one :class:`Behaviour` (or dict of its fields) per invocation; the
        last one repeats.  Empty means one default behaviour (rc 0, no review text).
    :param version: what ``codex --version`` reports after ``codex-cli``.
    """
    directory.mkdir(parents=True, exist_ok=True)
    source = Path(__file__).read_text(encoding="utf-8")
    script = directory / "codex"
    # -S: no site-packages, which the fake does not need, and no .pth start-up hook either
    # (coverage's subprocess measurement would otherwise start in every fake invocation,
    # for a copy outside src/ it cannot count).
    script.write_text(f"#!{sys.executable} -S\n{source}", encoding="utf-8")
    script.chmod(0o755)
    fake = FakeCodex(directory)
    fake.set_behaviours(list(behaviours), version=version)
    return fake


# -- the program ---------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """Hold an exclusive ``fcntl`` lock on ``directory/lock``."""
    with open(directory / _LOCK, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class _UsageError(Exception):
    """A command line the real CLI would reject with exit code 2."""


def _parse_argv(argv: Sequence[str]) -> dict[str, Any]:
    """Parse ``exec … [resume …]`` like Codex 0.171 (enough of it for a runner)."""
    parsed: dict[str, Any] = {"resume": False, "thread_id": None, "prompt": None, "stdin": False}
    for name in _REPEATED:
        parsed[name] = []
    args = list(argv)
    if not args or args[0] != "exec":
        raise _UsageError(f"error: the fake codex only implements `exec`; got {list(argv)!r}")
    positional: list[str] = []
    index = 1
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "resume" and not parsed["resume"] and not positional:
            parsed["resume"] = True
            continue
        if arg == "-":
            parsed["stdin"] = True
            continue
        if arg.startswith("-"):
            name, _, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
            if name in (_EXEC_ONLY if parsed["resume"] else _RESUME_ONLY):
                raise _UsageError(f"error: unexpected argument '{name}' found")
            if name in _FLAG_OPTIONS and not inline:
                parsed[name.lstrip("-").replace("-", "_")] = True
                continue
            if name in _VALUE_OPTIONS:
                if not inline:
                    if index >= len(args):
                        raise _UsageError(f"error: a value is required for '{name}'")
                    inline = args[index]
                    index += 1
                key = _VALUE_OPTIONS[name]
                if key in _REPEATED:
                    parsed[key].append(inline)
                else:
                    parsed[key] = inline
                continue
            raise _UsageError(f"error: unexpected argument '{arg}' found")
        positional.append(arg)
    if parsed["resume"] and positional and not parsed.get("last"):
        parsed["thread_id"] = positional.pop(0)
    if len(positional) > 1:
        raise _UsageError(f"error: unexpected argument '{positional[1]}' found")
    if positional:
        parsed["prompt"] = positional[0]
    sandbox = parsed.get("sandbox")
    if sandbox is not None and sandbox not in _SANDBOX_MODES:
        raise _UsageError(f"error: invalid value '{sandbox}' for '--sandbox <SANDBOX_MODE>'")
    return parsed


def _next_behaviour(directory: Path, record: dict[str, Any]) -> tuple[Behaviour, dict[str, Any]]:
    """Take the next behaviour and append the call record, atomically across processes."""
    with _locked(directory):
        config = json.loads((directory / _CONFIG).read_text(encoding="utf-8"))
        counter_path = directory / _COUNTER
        text = counter_path.read_text(encoding="utf-8").strip() if counter_path.exists() else ""
        count = int(text or 0)
        counter_path.write_text(str(count + 1), encoding="utf-8")
        behaviours = config["behaviours"] or [Behaviour().to_json()]
        behaviour = Behaviour.from_json(behaviours[min(count, len(behaviours) - 1)])
        record["index"] = count
        with open(directory / _CALLS, "a", encoding="utf-8") as calls:
            calls.write(json.dumps(record) + "\n")
    return behaviour, config


def _emit(stream: IO[bytes], event: Mapping[str, Any]) -> None:
    stream.write(json.dumps(event).encode() + b"\n")
    stream.flush()


def _write_rollouts(
    behaviour: Behaviour, thread_id: str, prompt: str, cwd: str, resume: bool
) -> None:
    """Write the rollout files a real run leaves under ``$CODEX_HOME/sessions``."""
    home = os.environ.get("CODEX_HOME")
    if not home or behaviour.rollouts <= 0:
        return
    sessions = Path(home) / "sessions"
    now = time.localtime()
    day = sessions / time.strftime("%Y/%m/%d", now)
    stamp = time.strftime("%Y-%m-%dT%H-%M-%S", now)
    for number in range(behaviour.rollouts):
        ident = thread_id if number == 0 else str(uuid.uuid4())
        existing = sorted(sessions.glob(f"*/*/*/rollout-*-{ident}.jsonl")) if resume else []
        if existing:
            path = existing[0]
            lines: list[dict[str, Any]] = []
        else:
            day.mkdir(parents=True, exist_ok=True)
            path = day / f"rollout-{stamp}-{ident}.jsonl"
            meta = {
                "id": ident,
                "cwd": cwd,
                "originator": "codex_exec",
                "cli_version": FAKE_CODEX_VERSION,
                "model_provider": "fake",
            }
            lines = [{"type": "session_meta", "payload": meta}]
        message = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": prompt}],
        }
        lines.append({"type": "response_item", "payload": message})
        with open(path, "a", encoding="utf-8") as handle:
            for line in lines:
                handle.write(json.dumps(line) + "\n")


def _noise(stdout: IO[bytes], megabytes: float) -> None:
    """Print about ``megabytes`` MB of ``item.completed`` events."""
    filler = "x" * 900
    total = int(megabytes * 1024 * 1024)
    written = 0
    number = 0
    while written < total:
        event = {
            "type": "item.completed",
            "item": {
                "id": f"noise_{number}",
                "type": "command_execution",
                "command": "/bin/bash -lc 'cat noise'",
                "aggregated_output": filler,
                "exit_code": 0,
                "status": "completed",
            },
        }
        line = json.dumps(event).encode() + b"\n"
        stdout.write(line)
        written += len(line)
        number += 1
    stdout.flush()


def _spawn_sleeper(directory: Path, seconds: float) -> None:
    """Start a sleeping child in our process group, like codex's native binary.

    Its stdio goes to ``/dev/null`` so a test reading the fake's pipes is not held open by
    an orphan; ``posix_spawn`` leaves no ``Popen`` object to warn about at exit.
    """
    actions = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
    code = f"import time; time.sleep({seconds!r})"
    child = os.posix_spawn(
        sys.executable, [sys.executable, "-c", code], dict(os.environ), file_actions=actions
    )
    with _locked(directory), open(directory / _CHILDREN, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"pid": os.getpid(), "child": child}) + "\n")


def _record_sigterm(directory: Path, _signum: int, _frame: object) -> None:
    """``ignore_sigterm``: note the signal and go on (``time.sleep`` resumes after it).

    No lock: the handler may run while this process holds it.  One short line appended
    in one write cannot interleave with another's.
    """
    with open(directory / _SIGTERMS, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"pid": os.getpid()}) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the installed fake: behave as the next :class:`Behaviour` says."""
    args = list(sys.argv[1:] if argv is None else argv)
    directory = Path(__file__).resolve().parent
    stdout = sys.stdout.buffer
    if args and args[0] in ("--version", "-V"):
        config = json.loads((directory / _CONFIG).read_text(encoding="utf-8"))
        stdout.write(f"codex-cli {config.get('version', FAKE_CODEX_VERSION)}\n".encode())
        return 0
    try:
        parsed = _parse_argv(args)
    except _UsageError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    prompt = ""
    stdin = ""
    if parsed["stdin"] or parsed["prompt"] is None:
        stdin = sys.stdin.read()
    prompt = stdin
    if parsed["prompt"] is not None:
        # What the real CLI sends for an argument prompt plus piped stdin.
        prompt = parsed["prompt"] + (f"\n\n<stdin>\n{stdin}\n</stdin>" if stdin else "")
    record = {
        "argv": args,
        "stdin": stdin,
        "prompt": prompt,
        "cwd": os.getcwd(),
        "codex_home": os.environ.get("CODEX_HOME"),
        "pid": os.getpid(),
        "parsed": parsed,
    }
    behaviour, _ = _next_behaviour(directory, record)
    if behaviour.ignore_sigterm:
        signal.signal(signal.SIGTERM, functools.partial(_record_sigterm, directory))
    # Startup errors of the real CLI, so a runner bug cannot pass against the fake.
    home = os.environ.get("CODEX_HOME")
    if home and not Path(home).is_dir():
        sys.stderr.write(
            f'Error finding codex home: CODEX_HOME points to "{home}", '
            "but that path does not exist\n"
        )
        return 1
    output = Path(parsed["output"]) if parsed.get("output") else None
    if output is not None and not behaviour.stale_o:
        # The real CLI opens -o at startup (created, not truncated).
        try:
            output.touch()
        except OSError as exc:
            sys.stderr.write(f'Error: Failed to open last message file "{output}": {exc}\n')
            return 1
    if not prompt:
        sys.stderr.write("No prompt provided via stdin.\n")
        return 1
    workdir = Path(parsed.get("cd") or os.getcwd())
    for relpath, content in behaviour.write_files.items():
        target = workdir / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    thread_id = behaviour.thread_id or parsed["thread_id"] or str(uuid.uuid4())
    _write_rollouts(behaviour, thread_id, prompt, str(workdir), parsed["resume"])

    if behaviour.thread_started:
        _emit(stdout, {"type": "thread.started", "thread_id": thread_id})
    _emit(stdout, {"type": "turn.started"})
    for line in behaviour.stdout_extra:
        stdout.write(line.encode() + b"\n")
    if behaviour.stdout_bytes:
        stdout.write(behaviour.stdout_bytes)
    stdout.flush()
    if behaviour.spawn_child_sleep > 0:
        _spawn_sleeper(directory, behaviour.spawn_child_sleep)
    if behaviour.sleep > 0:
        time.sleep(behaviour.sleep)
    if behaviour.stream_mb > 0:
        _noise(stdout, behaviour.stream_mb)
    if behaviour.review is not None:
        _emit(
            stdout,
            {
                "type": "item.completed",
                "item": {"id": "item_9", "type": "agent_message", "text": behaviour.review},
            },
        )
        if output is not None and not behaviour.stale_o:
            output.write_text(behaviour.review, encoding="utf-8")
    if behaviour.turn_failed is not None:
        _emit(stdout, {"type": "turn.failed", "error": {"message": behaviour.turn_failed}})
    else:
        usage = dict(_DEFAULT_USAGE)
        usage.update(behaviour.usage or {})
        _emit(stdout, {"type": "turn.completed", "usage": usage})
    if behaviour.delete_o and output is not None:
        output.unlink(missing_ok=True)
    if behaviour.stderr:
        sys.stderr.write(behaviour.stderr)
        sys.stderr.flush()
    return behaviour.rc


if __name__ == "__main__":
    sys.exit(main())
