"""Customer wallets: balances in cents, every movement recorded in `entries`."""

from __future__ import annotations

import sqlite3


class InsufficientFunds(Exception):
    pass


def balance(db: sqlite3.Connection, wallet_id: int) -> int:
    row = db.execute("SELECT balance_cents FROM wallets WHERE id = ?", (wallet_id,)).fetchone()
    if row is None:
        raise KeyError(wallet_id)
    return int(row[0])


def _move(db: sqlite3.Connection, wallet_id: int, delta: int, memo: str) -> None:
    db.execute(
        "UPDATE wallets SET balance_cents = balance_cents + ? WHERE id = ?", (delta, wallet_id)
    )
    db.execute(
        "INSERT INTO entries (wallet_id, delta_cents, memo) VALUES (?, ?, ?)",
        (wallet_id, delta, memo),
    )


def top_up(db: sqlite3.Connection, wallet_id: int, amount_cents: int, card_ref: str) -> None:
    if amount_cents <= 0:
        raise ValueError("a top-up must be positive")
    with db:
        _move(db, wallet_id, amount_cents, f"top-up {card_ref}")
