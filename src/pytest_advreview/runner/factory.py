"""The built-in reviewer backends, offered through ``pytest_advreview_make_reviewer``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from .codex import CodexOptions, CodexReviewer
from .command import CommandReviewer

if TYPE_CHECKING:
    from ..settings import Settings
    from . import Reviewer

__all__ = ["BuiltinReviewers", "codex_options"]


def codex_options(settings: Settings) -> CodexOptions:
    """The Codex launch options that the resolved settings ask for."""
    return CodexOptions(
        executable=settings.codex,
        model=settings.model,
        reasoning=settings.reasoning,
        sandbox=settings.sandbox,
        approvals=settings.approvals,
        config=tuple(settings.codex_config),
        timeout=settings.timeout,
    )


class BuiltinReviewers:
    """Provides the ``codex`` and ``command`` backends as ``trylast`` implementations."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @pytest.hookimpl(trylast=True)
    def pytest_advreview_make_reviewer(self, config: pytest.Config, name: str) -> Reviewer | None:
        """Build the named built-in backend; ``None`` for names a plugin must provide."""
        if name == "codex":
            return CodexReviewer(codex_options(self.settings))
        if name == "command":
            assert self.settings.command, "settings validation requires a command"
            return CommandReviewer(self.settings.command, timeout=self.settings.timeout)
        return None
