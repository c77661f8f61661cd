"""Nightly import of the supplier's price file into the catalogue.

Run by the scheduler as `python -m catalog.import_prices FILE`; a non-zero exit pages the
on-call engineer.
"""

from __future__ import annotations

import csv
import logging
import sys
from decimal import Decimal, InvalidOperation

from catalog.db import connect, upsert_price

log = logging.getLogger("catalog.import_prices")


def parse_row(row: dict[str, str]) -> tuple[str, int]:
    sku = row["sku"].strip()
    if not sku:
        raise ValueError("empty sku")
    try:
        cents = int(Decimal(row["price"]) * 100)
    except InvalidOperation as exc:
        raise ValueError(f"bad price {row['price']!r}") from exc
    return sku, cents


def run(path: str) -> int:
    with open(path, newline="") as handle, connect() as db:
        for number, row in enumerate(csv.DictReader(handle), start=2):
            try:
                sku, cents = parse_row(row)
            except ValueError as exc:
                log.error("line %d: %s; nothing imported", number, exc)
                return 1
            upsert_price(db, sku, cents)
        db.commit()
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    sys.exit(run(sys.argv[1]))
