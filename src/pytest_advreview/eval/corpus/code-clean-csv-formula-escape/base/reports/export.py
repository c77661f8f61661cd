"""CSV export of a shop's customers, opened by shop owners in a spreadsheet."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

COLUMNS = ("email", "name", "city", "orders", "total_spent")


def customers_csv(rows: Iterable[dict[str, object]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow([row[column] for column in COLUMNS])
    return buffer.getvalue()
