"""Order queries (PostgreSQL through the shared pool)."""

from __future__ import annotations

from typing import Any

from orders_api.pool import query


def fetch_orders(user_id: int, before: str | None, limit: int) -> list[dict[str, Any]]:
    """The user's orders, newest first, optionally only those older than order `before`."""
    if before is None:
        return query(
            "SELECT id, number, total_cents, created_at FROM orders "
            "WHERE user_id = %s ORDER BY created_at DESC, id DESC LIMIT %s",
            (user_id, limit),
        )
    return query(
        "SELECT o.id, o.number, o.total_cents, o.created_at FROM orders o "
        "JOIN orders b ON b.id = %s AND b.user_id = o.user_id "
        "WHERE o.user_id = %s AND (o.created_at, o.id) < (b.created_at, b.id) "
        "ORDER BY o.created_at DESC, o.id DESC LIMIT %s",
        (before, user_id, limit),
    )
