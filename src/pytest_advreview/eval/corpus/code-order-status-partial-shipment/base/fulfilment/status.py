"""Order status, stored as its value in `orders.status` (text)."""

from __future__ import annotations

from enum import Enum


class OrderStatus(str, Enum):
    PAID = "paid"
    PICKING = "picking"
    SHIPPED = "shipped"
    DELIVERED = "delivered"
    CANCELLED = "cancelled"


def load_status(raw: str) -> OrderStatus:
    return OrderStatus(raw)
