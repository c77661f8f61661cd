"""Daily exchange rates from the central bank's public feed.

Called once a day by the `fx-refresh` job; the job fails (and alerts) when this raises,
and yesterday's rates stay in use until the next successful run.
"""

from __future__ import annotations

from decimal import Decimal

import requests

FEED = "https://rates.bank.example/daily.json"


class RatesUnavailable(Exception):
    pass


def fetch_rates(session: requests.Session) -> dict[str, Decimal]:
    try:
        response = session.get(FEED, timeout=10)
        response.raise_for_status()
    except requests.RequestException as exc:
        raise RatesUnavailable(f"could not fetch {FEED}: {exc}") from exc
    return {code: Decimal(str(rate)) for code, rate in response.json()["rates"].items()}
