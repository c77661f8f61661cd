"""Refunds of captured payments."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from billing.gateway import Gateway


class RefundError(Exception):
    pass


@dataclass(frozen=True)
class Refund:
    payment_id: str
    amount_cents: int
    gateway_ref: str


def refund_in_full(db: sqlite3.Connection, gateway: Gateway, payment_id: str) -> Refund:
    """Refund the whole captured amount of a payment, once."""
    with db:
        row = db.execute(
            "UPDATE payments SET status = 'refunding' "
            "WHERE id = ? AND status = 'captured' RETURNING amount_cents",
            (payment_id,),
        ).fetchone()
    if row is None:
        raise RefundError(f"payment {payment_id} is not captured or already refunded")
    amount = row[0]
    ref = gateway.refund(payment_id, amount)
    with db:
        db.execute(
            "UPDATE payments SET status = 'refunded', refunded_cents = ? WHERE id = ?",
            (amount, payment_id),
        )
    return Refund(payment_id, amount, ref)
