"""What each webhook event does to our records."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from payhooks import orders


def payment_succeeded(data: dict[str, Any]) -> None:
    orders.mark_paid(data["order_id"], data["amount_cents"])


def payment_refunded(data: dict[str, Any]) -> None:
    orders.mark_refunded(data["order_id"], data["amount_cents"])


HANDLERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "payment.succeeded": payment_succeeded,
    "payment.refunded": payment_refunded,
}
