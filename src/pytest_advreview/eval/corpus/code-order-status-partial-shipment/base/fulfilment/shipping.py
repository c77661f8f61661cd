"""Marking orders shipped when the warehouse scans parcels out."""

from __future__ import annotations

import sqlite3

from fulfilment.status import OrderStatus, load_status


def parcels_left(db: sqlite3.Connection, order_id: int) -> int:
    row = db.execute(
        "SELECT count(*) FROM parcels WHERE order_id = ? AND scanned_out_at IS NULL",
        (order_id,),
    ).fetchone()
    return int(row[0])


def on_parcel_scanned(db: sqlite3.Connection, order_id: int, parcel_id: int) -> None:
    with db:
        db.execute(
            "UPDATE parcels SET scanned_out_at = CURRENT_TIMESTAMP WHERE id = ? AND order_id = ?",
            (parcel_id, order_id),
        )
        current = load_status(
            db.execute("SELECT status FROM orders WHERE id = ?", (order_id,)).fetchone()[0]
        )
        if current is OrderStatus.PICKING and parcels_left(db, order_id) == 0:
            db.execute(
                "UPDATE orders SET status = ? WHERE id = ?", (OrderStatus.SHIPPED.value, order_id)
            )
