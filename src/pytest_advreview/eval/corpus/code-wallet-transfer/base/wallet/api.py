"""Wallet endpoints; `user` is authenticated and owns exactly one wallet."""

from __future__ import annotations

from wallet import ledger


def post_top_up(db, user, body):
    ledger.top_up(db, user.wallet_id, int(body["amount_cents"]), body["card_ref"])
    return 204, None
