"""``--advreview-shard=K/N``: split the review items between N CI jobs.

Each item's share is a function of its key alone (``docs/plans/x.md``, ``code-review``),
not of its position among the collected items: jobs that collect different sets (one
job saw a plan the others did not, ``-k`` differs) still never review an item twice or
drop one between them, and an item keeps its share from run to run.  The price is an
uneven split for a handful of items; at dozens of plans the shares even out.

Only review items are sharded: other tests in the same run are left to the user (or a
sharding plugin), because splitting them is not this plugin's to decide.
"""

from __future__ import annotations

import hashlib

import pytest

from .exitstatus import note_own_deselection

__all__ = ["keep_share", "share_of"]


def share_of(key: str, total: int) -> int:
    """The 1-based share of ``key`` among ``total`` (sha256 of the key, mod ``total``)."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") % total + 1


def keep_share(config: pytest.Config, items: list[pytest.Item], shard: tuple[int, int]) -> None:
    """Deselect the review items outside share ``shard`` (``(K, N)``), in place.

    Deselected items are reported through ``pytest_deselected``, so the terminal counts
    them ("9 deselected") like ``-k`` and ``-m`` do.
    """
    from .items import ReviewItem

    index, total = shard
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        if isinstance(item, ReviewItem) and share_of(item.spec.key, total) != index:
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        # Told to the gate first: under CI any other deselection of a review item fails.
        note_own_deselection(config, dropped)
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
