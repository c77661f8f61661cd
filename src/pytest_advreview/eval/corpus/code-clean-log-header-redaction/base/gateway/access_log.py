"""One structured access-log line per request, shipped to the shared log store."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping

log = logging.getLogger("gateway.access")


def log_request(
    method: str, path: str, status: int, headers: Mapping[str, str], started: float
) -> None:
    log.info(
        json.dumps(
            {
                "method": method,
                "path": path,
                "status": status,
                "ms": round((time.monotonic() - started) * 1000, 1),
                "headers": dict(headers),
            }
        )
    )
