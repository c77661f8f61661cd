"""GET /orders: the caller's orders, newest first, one page at a time."""

from __future__ import annotations

from typing import Any

from orders_api.db import fetch_orders

DEFAULT_PAGE_SIZE = 50


class BadRequest(Exception):
    """Answered with 400 and the message by the app's error handler."""


def list_orders(user_id: int, query: dict[str, str]) -> dict[str, Any]:
    limit = int(query.get("limit", DEFAULT_PAGE_SIZE))
    before = query.get("before")
    rows = fetch_orders(user_id, before=before, limit=limit + 1)
    page = rows[:limit]
    return {
        "orders": page,
        "next": page[-1]["id"] if len(rows) > limit else None,
    }
