"""Shipments: one row per parcel handed to a carrier."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg


@dataclass(frozen=True)
class Shipment:
    id: int
    order_id: int
    carrier: str
    tracking_number: str | None
    country: str


def create_shipment(
    conn: psycopg.Connection, order_id: int, carrier: str, country: str
) -> Shipment:
    row = conn.execute(
        "INSERT INTO shipments (order_id, carrier, country) VALUES (%s, %s, %s) "
        "RETURNING id, order_id, carrier, tracking_number, country",
        (order_id, carrier, country),
    ).fetchone()
    return Shipment(*row)
