"""One launch of a lead CLI: the runner's process launch, with the lead's error wording.

Every backend is a :class:`CliLead`: prompt in a file on stdin (never an open pipe),
stdout and stderr to files, its own deadline, and on timeout the process group *and
every descendant* killed (Claude Code runs tool children in their own sessions, where a
group kill does not reach them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..runner._process import read_text, run_piped, tail
from . import LeadReply, LeadRequest
from .contract import LeadError

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["CliLead", "CliOutput"]


@dataclass(frozen=True)
class CliOutput:
    """What a lead CLI printed, its exit code, and where stdout was kept."""

    rc: int
    stdout: str
    stderr: str
    stdout_file: Path


class CliLead:
    """A lead CLI driven headless: one launch per turn, decisions back or a LeadError.

    Subclasses build the command line and read the reply (:meth:`run`).
    """

    #: ``codex``, ``claude`` or ``command``.
    name: str

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        #: How messages name the lead (``the codex lead``).
        self.who = f"the {self.name} lead"

    def run(self, request: LeadRequest) -> LeadReply:
        """Run the turn; raise :class:`LeadError` when the lead could not do its job."""
        raise NotImplementedError

    def launch(
        self,
        argv: list[str],
        request: LeadRequest,
        *,
        check_rc: bool = True,
        remove: Sequence[Path] = (),
    ) -> CliOutput:
        """Run ``argv`` with the turn's prompt on stdin, in the turn's folder.

        :param check_rc: raise on a non-zero exit code (Claude Code prints its JSON result
            with rc 1 too, so its backend reads the result first).
        :param remove: the turn's private folders, removed should pytest die meanwhile.
        :raises LeadError: it cannot be started, did not finish within the timeout (then
            nothing of it is left running), or exited non-zero with ``check_rc``.
        """
        work = request.work_dir
        work.mkdir(parents=True, exist_ok=True)
        timeout = self.settings.timeout
        try:
            rc = run_piped(
                argv,
                prompt=request.prompt,
                work=work,
                names=("lead-prompt.md", "lead-stdout.txt", "lead-stderr.txt"),
                cwd=request.cwd,
                timeout=timeout,
                remove=remove,
            )
        except OSError as exc:
            raise LeadError(
                f"{self.who} could not be started ({argv[0]!r}: {exc.strerror or exc}); "
                "install it or fix --advreview-lead-command"
            ) from None
        out = work / "lead-stdout.txt"
        stdout = read_text(out) or ""
        stderr = read_text(work / "lead-stderr.txt") or ""
        if rc is None:
            raise LeadError(
                f"{self.who} did not finish within {timeout:g}s (--advreview-timeout); it and "
                "every process it started were killed"
            )
        if check_rc and rc != 0:
            detail = tail(stderr) or tail(stdout) or "no output"
            raise LeadError(f"{self.who} exited {rc}: {detail}")
        return CliOutput(rc=rc, stdout=stdout, stderr=stderr, stdout_file=out)
