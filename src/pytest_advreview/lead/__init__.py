"""The built-in lead: evaluates a REVISE review, applies the accepted fixes, answers.

``--advreview-lead=codex|claude|command`` turns one run into the whole review loop: after
every REVISE round the lead decides on each finding (:mod:`.contract`), edits the plan,
and the loop resumes the reviewer's thread with the structured re-review prompt.  A
plugin's ``pytest_advreview_fix`` hook wins over the built-in lead.  :mod:`.turn` runs one
turn and checks what the lead changed; the backends only launch a CLI, and
:mod:`.session` picks the one the settings ask for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..models import TokenUsage
from .contract import LeadAnswer, LeadError

__all__ = ["LeadError", "LeadReply", "LeadRequest"]


@dataclass(frozen=True)
class LeadRequest:
    """One turn of the lead: the prompt, where it runs, and what it may edit."""

    prompt: str
    #: The repository (or the review's worktree) the lead works in.
    cwd: Path
    #: Private folder for the prompt, outputs and logs of this turn.
    work_dir: Path
    #: Repository-relative paths the lead may edit.
    allowed: tuple[str, ...]


@dataclass(frozen=True)
class LeadReply:
    """What one turn returned: the decisions, and the tokens the lead's model used."""

    answer: LeadAnswer
    usage: TokenUsage = field(default_factory=TokenUsage)
    #: The model that answered (``None``: the backend cannot say).
    model: str | None = None
