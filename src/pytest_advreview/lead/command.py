"""The ``command`` lead: any agent that reads the prompt on stdin and prints decisions JSON."""

from __future__ import annotations

import shlex

from . import LeadReply, LeadRequest
from ._attempt import run_cli
from .contract import parse_answer

__all__ = ["CommandLead"]


class CommandLead:
    """``--advreview-lead=command --advreview-lead-command=CMD``."""

    name = "command"

    def __init__(self, command: str, *, timeout: float) -> None:
        self.argv = shlex.split(command)
        self.timeout = timeout

    def run(self, request: LeadRequest) -> LeadReply:
        """Pipe the prompt in, read the decisions from stdout (no token figures)."""
        who = f"the lead command {self.argv[0]!r}"
        _, out = run_cli(
            self.argv,
            who=who,
            prompt=request.prompt,
            cwd=request.cwd,
            work_dir=request.work_dir,
            timeout=self.timeout,
        )
        return LeadReply(answer=parse_answer(out.stdout, who=who))
