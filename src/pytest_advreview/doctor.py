"""``pytest --advreview-doctor``: check that the installed Codex CLI honours the contract.

(Filled in by the doctor work.)
"""

from __future__ import annotations

import pytest

__all__ = ["add_options", "main"]


def add_options(parser: pytest.Parser) -> None:
    """Register ``--advreview-doctor`` and ``--advreview-doctor-json``."""


def main(config: pytest.Config) -> int | None:
    """Run the doctor when asked (``None``: not asked, pytest goes on as usual)."""
    return None
