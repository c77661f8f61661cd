"""What one ``--adversarial-review`` run shares between its parts and its xdist workers.

The run's parts find it in ``config.stash`` (never by a plugin's registered name): the
items ask it for their reviews, the fixture for the run's coordinator (stored state,
decisions, budget), the xdist hooks for what the workers need, and the Codex backend for
the run directory.  What crosses to a worker travels as strings in ``workerinput``
(:meth:`RunStash.serialized` / :func:`from_workerinput`): a pipe no reviewer can read.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pytest

from .constants import RUN_DIR_KEY, RUN_SECRET_KEY

if TYPE_CHECKING:
    from .coordinator import Coordinator
    from .head import HeadCheckout
    from .loop import LoopResult
    from .outcome import Outcome
    from .review import ReviewRun

__all__ = ["RUN_STASH", "Reviews", "RunStash", "from_workerinput", "get"]


class Reviews(Protocol):
    """What the review nodes ask of the run: a plan's key and source, its stored
    severity, its review and the review's result."""

    def relpath(self, path: Path) -> str:
        """The repository-relative key of the plan collected at ``path``."""

    def plan_source(self, path: Path) -> Path:
        """The file a plan item reviews (under ``--advreview-head``, REF's copy)."""

    def stored_severity(self, key: str) -> str | None:
        """The max severity of ``key``'s last stored review, when it asked for revision."""

    def new_run(self, item: pytest.Item) -> ReviewRun:
        """The review of ``item`` with the run's settings and reviewer (under
        ``--advreview-jobs`` the one started ahead of it)."""

    def run_review(self, run: ReviewRun) -> tuple[LoopResult, Outcome]:
        """Run one review with its stored state, decisions and the run's token budget."""


@dataclasses.dataclass
class RunStash:
    """The run's directory and secret, its coordinator, its reviews and any head checkout."""

    #: One directory per run (the token ledger, the sandbox preflight), shared by workers.
    run_dir: Path
    #: Tags the state entries this run writes (state.py); held in memory only.
    run_secret: bytes
    coordinator: Coordinator
    reviews: Reviews
    #: ``--advreview-head``: the one checkout of REF of the run (the controller removes it).
    head: HeadCheckout | None = None

    def serialized(self) -> dict[str, str]:
        """The ``workerinput`` entries a worker rebuilds its run from."""
        entries = {RUN_DIR_KEY: str(self.run_dir), RUN_SECRET_KEY: self.run_secret.hex()}
        if self.head is not None:
            from .head import HEAD_KEY

            entries[HEAD_KEY] = self.head.model_dump_json()
        return entries


def from_workerinput(config: pytest.Config) -> tuple[Path, bytes] | None:
    """The run directory and secret an xdist worker got from its controller, if any."""
    workerinput = getattr(config, "workerinput", None)
    if not isinstance(workerinput, dict) or RUN_DIR_KEY not in workerinput:
        return None
    return Path(str(workerinput[RUN_DIR_KEY])), bytes.fromhex(str(workerinput[RUN_SECRET_KEY]))


RUN_STASH: pytest.StashKey[RunStash] = pytest.StashKey()


def get(config: pytest.Config) -> RunStash | None:
    """The running ``--adversarial-review`` run, ``None`` without one."""
    return config.stash.get(RUN_STASH, None)
