"""Feature flags of the shop, read once from the JSON file the deploy writes."""

from __future__ import annotations

import json
import logging
from pathlib import Path

log = logging.getLogger(__name__)


class FlagClient:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._flags: dict[str, bool] = {}

    def start(self) -> None:
        self._flags = json.loads(self._path.read_text())["flags"]
        log.info("loaded %d flags from %s", len(self._flags), self._path)

    def is_enabled(self, name: str, default: bool = False) -> bool:
        return bool(self._flags.get(name, default))
