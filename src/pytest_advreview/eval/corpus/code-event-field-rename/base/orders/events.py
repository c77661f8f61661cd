"""Events the order service publishes on the `order-events` topic (JSON)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from orders.bus import publish
from orders.models import Order


def _event(kind: str, order: Order) -> dict[str, object]:
    return {
        "type": kind,
        "order_id": order.id,
        "customer_id": order.customer_id,
        "total_cents": order.total_cents,
        "currency": order.currency,
        "at": datetime.now(timezone.utc).isoformat(),
    }


def order_paid(order: Order) -> None:
    publish("order-events", key=str(order.id), value=json.dumps(_event("order.paid", order)))


def order_refunded(order: Order) -> None:
    publish("order-events", key=str(order.id), value=json.dumps(_event("order.refunded", order)))
