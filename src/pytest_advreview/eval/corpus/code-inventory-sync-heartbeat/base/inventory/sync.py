"""Push stock levels to every store's point-of-sale system, every 15 minutes.

Alerting: `inventory_sync_last_success_seconds` older than one hour pages on-call
(see ops/alerts.yaml); stores sell items they no longer have when the sync stops.
"""

from __future__ import annotations

import logging
import time

from inventory import metrics
from inventory.pos import PosClient, stock_levels

log = logging.getLogger(__name__)


def push_store(client: PosClient, store_id: str) -> None:
    levels = stock_levels(store_id)
    client.put_levels(store_id, levels)
    log.info("store %s: %d levels pushed", store_id, len(levels))


def sync_all(client: PosClient, store_ids: list[str]) -> None:
    started = time.monotonic()
    for store_id in store_ids:
        push_store(client, store_id)
    metrics.gauge("inventory_sync_duration_seconds", time.monotonic() - started)
    metrics.gauge("inventory_sync_last_success_seconds", time.time())
