"""The ``command`` lead: any agent that reads the prompt on stdin and prints decisions JSON."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from . import LeadReply, LeadRequest
from ._attempt import CliLead
from .contract import parse_answer

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["CommandLead"]


class CommandLead(CliLead):
    """``--advreview-lead=command --advreview-lead-command=CMD``."""

    name = "command"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        assert settings.lead_command, "settings validation requires a lead command"
        self.argv = shlex.split(settings.lead_command)
        self.who = f"the lead command {self.argv[0]!r}"

    def run(self, request: LeadRequest) -> LeadReply:
        """Pipe the prompt in, read the decisions from stdout (no token figures)."""
        out = self.launch(self.argv, request)
        return LeadReply(answer=parse_answer(out.stdout, who=self.who))
