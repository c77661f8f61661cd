"""Visit counters."""

import threading

_lock = threading.Lock()
_counts: dict[str, int] = {}


def visit(page: str) -> int:
    with _lock:
        _counts[page] = _counts.get(page, 0) + 1
        return _counts[page]
