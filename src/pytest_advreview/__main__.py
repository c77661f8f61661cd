"""``python -m pytest_advreview doctor [--codex=PATH] [--json=PATH]``.

The same checks as ``pytest --advreview-doctor``, without a pytest run around them (no
conftest is imported).  The executable is ``--codex``, else ``$ADVREVIEW_CODEX``, else
``codex`` on ``PATH``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .constants import ENV_PREFIX

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``) and run the command; return its status."""
    parser = argparse.ArgumentParser(
        prog="python -m pytest_advreview",
        description="pytest-advreview utilities.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    doctor = commands.add_parser(
        "doctor",
        help="check that the installed Codex CLI honours the plugin's contract (offline)",
        description=(
            "Check that the installed Codex CLI still honours the plugin's contract, "
            "offline, against a scripted server on 127.0.0.1. Same as "
            "`pytest --advreview-doctor`."
        ),
    )
    doctor.add_argument(
        "--codex",
        default=os.environ.get(f"{ENV_PREFIX}CODEX", "").strip() or "codex",
        metavar="PATH",
        help="Codex executable, a name on PATH or a path (default: $ADVREVIEW_CODEX or codex)",
    )
    doctor.add_argument(
        "--json", metavar="PATH", default=None, help="also write the result table as JSON"
    )
    args = parser.parse_args(argv)
    # Imported late: `--help` must not pay for pydantic and the testing kit.
    from .doctor import run_and_report

    return run_and_report(args.codex, json_path=args.json, out=sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
