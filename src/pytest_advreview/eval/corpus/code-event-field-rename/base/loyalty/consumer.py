"""Loyalty points: one point per whole currency unit paid, taken back on refund."""

from __future__ import annotations

import json

from loyalty.points import add_points


def handle(message: bytes) -> None:
    event = json.loads(message)
    points = event["total_cents"] // 100
    if event["type"] == "order.paid":
        add_points(event["customer_id"], points, reason=f"order {event['order_id']}")
    elif event["type"] == "order.refunded":
        add_points(event["customer_id"], -points, reason=f"refund {event['order_id']}")
