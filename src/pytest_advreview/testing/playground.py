"""``python -m pytest_advreview.testing serve``: try the plugin in your own repository, offline.

It starts the scripted Responses-API server (:mod:`.server`, on 127.0.0.1 only) with one
answer for every review (``--approve``, ``--revise SEVERITY``, or a script file in the
server's format, ``--script FILE``), prints the environment that points the real Codex
CLI at it (the same ``-c`` pairs as ``scripts/demo``, :func:`.server.codex_provider_args`,
and the dummy key the provider reads), and serves until Ctrl-C.  docs/try-it.md walks
through it.

The port (default :data:`DEFAULT_PORT`) and the private Codex home stay the same from one
start to the next, so the printed lines stay valid when the server is restarted with
another answer.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, TextIO

from .reviews import FindingSpec, approved_review, revise_review
from .server import (
    FAKE_KEY_ENV,
    FAKE_KEY_VALUE,
    FAKE_MODEL,
    ScriptedServer,
    codex_provider_args,
    validate_script,
)

__all__ = [
    "DEFAULT_PORT",
    "SEVERITIES",
    "add_arguments",
    "codex_home",
    "environment",
    "script_for",
    "serve",
]

#: The port the playground listens on unless ``--port`` says otherwise.
DEFAULT_PORT = 8712
#: What ``--revise`` takes: the severities of the review contract.
SEVERITIES = ("critical", "high", "medium")
#: How often the serving loop looks for new requests to report.
_POLL_S = 0.2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` subcommand's arguments."""
    answer = parser.add_mutually_exclusive_group(required=True)
    answer.add_argument(
        "--approve", action="store_true", help="answer every review with VERDICT: APPROVED"
    )
    answer.add_argument(
        "--revise",
        metavar="SEVERITY",
        choices=SEVERITIES,
        help=f"answer every review with VERDICT: REVISE and one finding ({', '.join(SEVERITIES)})",
    )
    answer.add_argument(
        "--script",
        metavar="FILE",
        type=Path,
        help="a JSON script in the scripted server's format (pytest_advreview.testing.server)",
    )
    parser.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        help=f"port on 127.0.0.1 (default: {DEFAULT_PORT}; 0: any free port)",
    )


def _port(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got {raw!r}")
    return value


def script_for(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """The server's script for the chosen answer, and how to describe it.

    :raises ValueError: ``--script`` names a file that is not a valid script.
    """
    if args.script is not None:
        path: Path = args.script
        try:
            script = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise ValueError(f"{path} is not JSON: {exc}") from None
        if not isinstance(script, dict):
            raise ValueError(f"{path} must hold a JSON object with 'rules' and 'default'")
        validate_script(script)
        return script, f"the script in {path}"
    if args.approve:
        text = approved_review("The playground's scripted reviewer approves everything it reads.")
        return {"rules": [], "default": {"message": text}}, "VERDICT: APPROVED"
    finding = FindingSpec(
        severity=args.revise,
        title="Playground finding: no rollback step",
        what="The change cannot be undone once it is half applied.",
        why="No step says how to go back.",
        impact="A failed rollout stays broken until someone fixes it by hand.",
        recommendation="Add a rollback step and say how to verify it.",
    )
    text = revise_review(finding, summary="The playground's scripted reviewer found a problem.")
    return {
        "rules": [],
        "default": {"message": text},
    }, f"VERDICT: REVISE, one {args.revise} finding"


def codex_home() -> Path:
    """The playground's own Codex home: never the user's ``~/.codex`` (its settings, MCP
    servers and history stay out of it), and the same one on every start."""
    return Path(tempfile.gettempdir()) / f"advreview-playground-{os.getuid()}" / "codex-home"


def environment(url: str, home: Path) -> list[str]:
    """The ``export`` lines that point the plugin's Codex at the server at ``url``."""
    options = [
        f"--advreview-model={FAKE_MODEL}",
        # The scripted answers are in the markdown contract, whatever the ini file says.
        "--advreview-output-format=markdown",
        *(f"--advreview-codex-config={value}" for value in codex_provider_args(url)),
    ]
    return [
        f"export {FAKE_KEY_ENV}={FAKE_KEY_VALUE}",
        f"export CODEX_HOME={shlex.quote(str(home))}",
        f"export PYTEST_ADDOPTS={shlex.quote(' '.join(options))}",
    ]


def serve(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Run the playground until Ctrl-C; 0 then, 1 when it cannot start, 2 for a bad script."""
    try:
        script, answer = script_for(args)
    except ValueError as exc:
        print(f"serve: {exc}; see --help", file=err)
        return 2
    # Ctrl-C and a plain kill both stop it cleanly, also when it was started in the
    # background of a shell, which leaves SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    home = codex_home()
    server = ScriptedServer(script, port=args.port)
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        server.start()
    except OSError as exc:
        print(
            f"serve: cannot listen on 127.0.0.1:{args.port} ({exc.strerror or exc}); "
            "pass --port N, or --port 0 for any free port",
            file=err,
        )
        return 1
    try:
        lines = environment(server.url, home)
        # The same names as the page's clean-up (docs/try-it.md), taken from the lines.
        names = " ".join(line.split()[1].split("=", 1)[0] for line in lines)
        out.write(
            f"advreview playground: a scripted reviewer on {server.url} answers every review "
            f"with {answer}. Nothing leaves this machine.\n\n"
            "In another terminal, in your repository, point pytest-advreview's Codex at it:\n\n"
            + "".join(f"    {line}\n" for line in lines)
            + "\nthen run `pytest --adversarial-review --advreview-only`. Ctrl-C stops the "
            f"server; `unset {names}` ends the playground (docs/try-it.md step 5 removes "
            "what it made).\n"
        )
        out.flush()
        _report_until_interrupted(server, out)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    out.write("\nadvreview playground: stopped\n")
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _report_until_interrupted(server: ScriptedServer, out: TextIO) -> None:
    """One line per review request answered, until Ctrl-C (``KeyboardInterrupt``)."""
    seen = 0
    idle = threading.Event()
    while True:
        answered = len(server.response_requests)
        if answered > seen:
            seen = answered
            out.write(f"advreview playground: {answered} request(s) answered\n")
            out.flush()
        idle.wait(_POLL_S)
