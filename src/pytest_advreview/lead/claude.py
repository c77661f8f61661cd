"""The ``claude`` lead: Claude Code (``claude -p``) with only the read and edit tools.

Facts of Claude Code 2.1.332 this backend is built on (measured; docs/lead.md, "The built-in
lead"): exit code 0 does not mean success -- a denied edit still ends ``success``, and
``--json-schema`` does not guarantee ``structured_output`` -- so the JSON result is read
whatever the exit code and checked field by field; its own retries and stall watchdog
can take many minutes, so the turn has the plugin's own deadline; its tool processes run
in their own sessions, so a timeout kills every descendant, not only the group.
"""

from __future__ import annotations

import json
from typing import Any

from ..runner.claude import result_model, result_usage
from . import LeadReply, LeadRequest
from ._attempt import CliLead
from .contract import LeadError, answer_schema, validate_answer

__all__ = ["ClaudeLead"]


class ClaudeLead(CliLead):
    """``--advreview-lead=claude``: ``--advreview-lead-command``, else ``--advreview-claude``."""

    name = "claude"

    def argv(self, request: LeadRequest) -> list[str]:
        """``claude --bare -p`` with JSON output, the decisions schema and edit rules.

        No ``--permission-mode acceptEdits``: that would allow edits to any file under the
        working directory.  In the default mode an edit is denied unless an
        ``Edit(./path)`` rule allows it, so only the files the lead may touch are writable.
        """
        s = self.settings
        argv = [
            s.lead_command or s.claude,
            "--bare",
            # --bare still applies the checkout's .claude/settings.json (its "model" too):
            # the branch under review must not choose the lead's model or settings.
            "--setting-sources",
            "user",
            "-p",
            "--output-format",
            "json",
            "--tools",
            "Read,Edit",
            "--json-schema",
            json.dumps(answer_schema()),
            "--no-session-persistence",
            "--allowedTools",
            *(f"Edit(./{path})" for path in request.allowed),
        ]
        if s.lead_model:
            argv += ["--model", s.lead_model]
        return argv

    def run(self, request: LeadRequest) -> LeadReply:
        """Run the turn and check the JSON result (rc alone proves nothing)."""
        out = self.launch(self.argv(request), request, check_rc=False)
        rc, who = out.rc, self.who
        try:
            result: Any = json.loads(out.stdout)
        except ValueError:
            detail = out.stderr.strip() or out.stdout.strip() or "no output"
            raise LeadError(f"{who} exited {rc} without a JSON result: {detail[-400:]}") from None
        if not isinstance(result, dict):
            raise LeadError(f"{who} printed JSON that is not a result object")
        denials = result.get("permission_denials") or []
        if denials:
            names = ", ".join(
                str((d.get("tool_input") or {}).get("file_path") or d.get("tool_name"))
                for d in denials
                if isinstance(d, dict)
            )
            raise LeadError(
                f"{who} was denied {len(denials)} tool call(s) ({names}); it may edit only "
                f"{', '.join(request.allowed)}"
            )
        if result.get("is_error") or rc != 0:
            reason = result.get("terminal_reason") or result.get("subtype") or f"rc {rc}"
            text = str(result.get("result") or result.get("errors") or "")[:400]
            raise LeadError(f"{who} failed ({reason}): {text}")
        structured = result.get("structured_output")
        if structured is None:
            raise LeadError(
                f"{who} returned no structured decisions (structured_output is null); "
                f"its text was: {str(result.get('result') or '')[:300]}"
            )
        return LeadReply(
            answer=validate_answer(structured, who=who),
            usage=result_usage(result),
            model=self.settings.lead_model or result_model(result),
        )
