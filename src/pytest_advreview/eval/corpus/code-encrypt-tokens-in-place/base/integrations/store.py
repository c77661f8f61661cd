"""Third-party API tokens our customers connect (CRM, helpdesk, accounting)."""

from __future__ import annotations

import sqlite3


def save_token(db: sqlite3.Connection, integration_id: int, token: str) -> None:
    with db:
        db.execute(
            "UPDATE integrations SET api_token = ?, updated_at = CURRENT_TIMESTAMP WHERE id = ?",
            (token, integration_id),
        )


def get_token(db: sqlite3.Connection, integration_id: int) -> str:
    row = db.execute("SELECT api_token FROM integrations WHERE id = ?", (integration_id,)).fetchone()
    if row is None:
        raise KeyError(integration_id)
    return str(row[0])
