"""The ``codex`` lead: a second ``codex exec`` on its own thread, allowed to write.

It runs with ``workspace-write`` whatever the reviewer's sandbox (the lead's job is to
edit the plan), the user's ``-c`` pairs (a custom model provider applies to both), and
``--output-schema`` so its last message is the decisions JSON, read from ``-o``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..models import TokenUsage
from ..runner._process import read_text
from ..runner.codex import (
    approval_args,
    containment_args,
    private_tool_tmp,
    remove_tool_tmp,
    stream_usage,
)
from ..runner.environment import reviewer_process_env, tool_shell_args
from . import LeadReply, LeadRequest
from ._attempt import CliLead
from .contract import LeadError, answer_schema, parse_answer

__all__ = ["CodexLead"]


class CodexLead(CliLead):
    """``--advreview-lead=codex``."""

    name = "codex"

    def argv(self, request: LeadRequest, tool_tmp: Path | None = None) -> list[str]:
        """``codex exec`` for one lead turn (an argv list, never a shell).

        :param tool_tmp: the turn's private temporary folder (``private_tool_tmp``).
        """
        s = self.settings
        argv = [
            s.codex,
            "exec",
            "--json",
            "-m",
            s.lead_model or s.model,
            "-c",
            f"model_reasoning_effort={s.reasoning}",
            "-s",
            "workspace-write",
            *approval_args(s.approvals),
        ]
        for pair in s.codex_config:
            argv += ["-c", pair]
        # The lead's tool shell sees no credential either (after the user's pairs, so
        # they cannot undo it), exactly as the reviewer's.
        env = reviewer_process_env(os.environ)
        if tool_tmp is not None:
            env = {"TMPDIR": "", **env}  # a name the tool shell may see: it is set below
        argv += tool_shell_args(env, s.env_allow)
        # It writes as the reviewer may: its workspace and a private temporary folder,
        # never /tmp or $TMPDIR, where the gate's code may live.
        argv += containment_args(tool_tmp)
        argv += [
            "-C",
            str(request.cwd),
            "-o",
            str(request.work_dir / "lead-answer.json"),
            "--output-schema",
            str(request.work_dir / "lead-schema.json"),
            "-",
        ]
        return argv

    def run(self, request: LeadRequest) -> LeadReply:
        """Run the turn; the answer is the ``-o`` file (deleted first: Codex keeps stale
        content there after a failed turn)."""
        request.work_dir.mkdir(parents=True, exist_ok=True)
        answer = request.work_dir / "lead-answer.json"
        answer.unlink(missing_ok=True)
        (request.work_dir / "lead-schema.json").write_text(
            json.dumps(answer_schema()), encoding="utf-8"
        )
        try:
            tool_tmp = private_tool_tmp()
        except OSError as exc:
            raise LeadError(f"cannot create {self.who}'s private temporary folder: {exc}") from None
        try:
            out = self.launch(self.argv(request, tool_tmp), request, remove=(tool_tmp,))
        finally:
            remove_tool_tmp(tool_tmp)
        text = read_text(answer)
        if text is None:
            raise LeadError(f"{self.who} finished without an answer (no {answer.name})")
        usage = stream_usage(out.stdout_file)
        answered = parse_answer(text, who=self.who)
        model = self.settings.lead_model or self.settings.model
        return LeadReply(answer=answered, usage=usage or TokenUsage(), model=model)
