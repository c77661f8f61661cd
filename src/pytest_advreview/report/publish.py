"""Writing the report files and the CI integrations, once, on the controller.

(Filled in by the reports work: JSON, markdown, SARIF, GitHub annotations.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from .collect import ItemResult

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["exit_status", "publish"]


def publish(config: pytest.Config, settings: Settings, results: list[ItemResult]) -> None:
    """Write every report the settings ask for (controller only; atomic files)."""


def exit_status(settings: Settings, results: list[ItemResult], exitstatus: int) -> int:
    """The exit status to end the run with (pytest's own unless a setting changes it)."""
    return exitstatus
