"""One launch of a lead CLI: the runner's process launch, with the lead's error wording.

Every backend goes through :func:`run_cli`: prompt in a file on stdin (never an open
pipe), stdout and stderr to files, its own deadline, and on timeout the process group
*and every descendant* killed (Claude Code runs tool children in their own sessions,
where a group kill does not reach them).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..runner._process import launch, read_text, tail
from ..runner.environment import reviewer_process_env
from .contract import LeadError

__all__ = ["CliOutput", "run_cli"]


@dataclass(frozen=True)
class CliOutput:
    """What a lead CLI printed, and where it was kept."""

    stdout: str
    stderr: str
    stdout_file: Path


def run_cli(
    argv: Sequence[str],
    *,
    who: str,
    prompt: str,
    cwd: Path,
    work_dir: Path,
    timeout: float,
    env: Mapping[str, str] | None = None,
    check_rc: bool = True,
) -> tuple[int, CliOutput]:
    """Run one lead CLI with ``prompt`` on stdin.

    :param who: how messages name the lead (``the codex lead``).
    :param check_rc: raise on a non-zero exit code (Claude Code prints its JSON result
        with rc 1 too, so its backend reads the result first).
    :raises LeadError: it cannot be started, did not finish within ``timeout`` (then
        nothing of it is left running), or exited non-zero with ``check_rc``.
    """
    work_dir.mkdir(parents=True, exist_ok=True)
    prompt_file = work_dir / "lead-prompt.md"
    out = work_dir / "lead-stdout.txt"
    err = work_dir / "lead-stderr.txt"
    prompt_file.write_text(prompt, encoding="utf-8")
    out.unlink(missing_ok=True)
    # Never the state key (a lead that read it could sign forged verdicts).
    merged = reviewer_process_env({**os.environ, **(env or {})})
    try:
        rc = launch(
            argv,
            cwd=cwd,
            stdin_file=prompt_file,
            stdout_file=out,
            stderr_file=err,
            env=merged,
            timeout=timeout,
        )
    except OSError as exc:
        raise LeadError(
            f"{who} could not be started ({argv[0]!r}: {exc.strerror or exc}); install it "
            "or fix --advreview-lead-command"
        ) from None
    stdout = read_text(out) or ""
    stderr = read_text(err) or ""
    if rc is None:
        raise LeadError(
            f"{who} did not finish within {timeout:g}s (--advreview-timeout); it and every "
            "process it started were killed"
        )
    if check_rc and rc != 0:
        raise LeadError(f"{who} exited {rc}: {tail(stderr) or tail(stdout) or 'no output'}")
    return rc, CliOutput(stdout=stdout, stderr=stderr, stdout_file=out)
