"""The lead backend the settings ask for (apart from the package, which the backends import)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..settings import Settings
    from ._attempt import CliLead

__all__ = ["make_lead"]


def make_lead(settings: Settings) -> CliLead | None:
    """The lead backend the settings ask for; ``None`` for ``--advreview-lead=none``."""
    if settings.lead == "codex":
        from .codex import CodexLead

        return CodexLead(settings)
    if settings.lead == "claude":
        from .claude import ClaudeLead

        return ClaudeLead(settings)
    if settings.lead == "command":
        from .command import CommandLead

        return CommandLead(settings)
    return None
