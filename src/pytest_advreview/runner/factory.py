"""The built-in reviewer backends, offered through ``pytest_advreview_make_reviewer``."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..trust import run as trust
from ..workspace.head import HEAD_CODEX_CONFIG

if TYPE_CHECKING:
    from ..settings import Settings
    from . import Reviewer
    from .claude import ClaudeOptions
    from .codex import CodexOptions

__all__ = ["BuiltinReviewers", "claude_options", "codex_options"]


def codex_options(
    settings: Settings, run_dir: Path | None = None, run_trust: trust.Trust | None = None
) -> CodexOptions:
    """The Codex launch options that the resolved settings ask for.

    :param run_trust: the run's trust (:func:`.trust.run.of_run`): under a gate the
        reviewer gets no project instructions from the checkout.

    :param run_dir: the run's directory (shared with the xdist workers); the sandbox
        preflight's answer is shared there, one file per Codex executable.
    """
    from .codex import GATE_CODEX_CONFIG, CodexOptions

    if run_trust is None:  # a direct call: the process environment decides
        run_trust = trust.decide(os.environ, strict_exit=settings.strict_exit, head=settings.head)
    gate = run_trust.gated
    preflight_file = None
    if run_dir is not None:
        name = hashlib.sha256(settings.codex.encode("utf-8", "surrogateescape")).hexdigest()
        preflight_file = str(run_dir / f"codex-preflight-{name[:16]}.json")
    return CodexOptions(
        executable=settings.codex,
        model=settings.model,
        reasoning=settings.reasoning,
        sandbox=settings.sandbox,
        approvals=settings.approvals,
        # Last, so that they win: under a gate the branch's AGENTS.md is data, not the
        # reviewer's orders, and a head's reviewer has no web search either.
        config=(
            *settings.codex_config,
            *(GATE_CODEX_CONFIG if gate else ()),
            *(HEAD_CODEX_CONFIG if settings.head else ()),
        ),
        env_allow=tuple(settings.env_allow),
        timeout=settings.timeout,
        connect_timeout=settings.connect_timeout,
        preflight_file=preflight_file,
    )


def claude_options(settings: Settings) -> ClaudeOptions:
    """The Claude Code launch options that the resolved settings ask for."""
    from .claude import ClaudeOptions

    return ClaudeOptions(
        executable=settings.claude,
        model=settings.claude_model,
        timeout=settings.timeout,
        connect_timeout=settings.connect_timeout,
    )


class BuiltinReviewers:
    """Provides the ``codex``, ``claude`` and ``command`` backends as ``trylast``
    implementations."""

    def __init__(
        self, settings: Settings, run_dir: Callable[[], Path | None] = lambda: None
    ) -> None:
        """:param run_dir: the run directory of the ``--adversarial-review`` session,
        asked when a reviewer is built (``None``: no run is going)."""
        self.settings = settings
        self.run_dir = run_dir

    @pytest.hookimpl(trylast=True)
    def pytest_advreview_make_reviewer(self, config: pytest.Config, name: str) -> Reviewer | None:
        """Build the named built-in backend; ``None`` for names a plugin must provide.

        The backends' modules are imported here, when a reviewer is built: a run that only
        collects (``--collect-only``) never needs them.
        """
        if name == "codex":
            from .codex import CodexReviewer

            found = trust.of_run(config, self.settings)
            return CodexReviewer(codex_options(self.settings, self.run_dir(), found))
        if name == "command":
            from .command import CommandReviewer

            assert self.settings.command, "settings validation requires a command"
            return CommandReviewer(self.settings.command, timeout=self.settings.timeout)
        if name == "claude":
            from .claude import ClaudeReviewer

            return ClaudeReviewer(claude_options(self.settings))
        return None
