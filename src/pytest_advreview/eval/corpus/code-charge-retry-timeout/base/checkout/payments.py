"""Charging a saved card through the processor's REST API."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import requests

log = logging.getLogger(__name__)

API = "https://api.processor.example/v2"


class ChargeFailed(Exception):
    pass


@dataclass(frozen=True)
class Charge:
    charge_id: str
    amount_cents: int


def charge(session: requests.Session, card_token: str, amount_cents: int, order_id: str) -> Charge:
    response = session.post(
        f"{API}/charges",
        json={"source": card_token, "amount": amount_cents, "currency": "eur",
              "metadata": {"order_id": order_id}},
        timeout=10,
    )
    if response.status_code != 201:
        log.warning("charge for order %s refused: %s", order_id, response.text[:200])
        raise ChargeFailed(response.json().get("error", "refused"))
    body = response.json()
    return Charge(body["id"], body["amount"])
