"""Thin client of the card processor."""

from __future__ import annotations

from typing import Protocol


class Gateway(Protocol):
    def refund(self, payment_id: str, amount_cents: int) -> str:
        """Refund amount_cents of a captured payment; return the processor's reference."""
        ...
