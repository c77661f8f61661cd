"""What one ``--adversarial-review`` run shares between its parts and its xdist workers.

The run's parts find it in ``config.stash`` (never by a plugin's registered name): the
items ask it for their plans' keys, the review context and the coordinator they hand the
engine and the reviews the jobs pool started ahead; the fixture for the run's
coordinator (stored state, decisions, budget), the controller for what the workers need,
and the Codex backend for the run directory.  What crosses to a worker travels as strings
in ``workerinput`` (:meth:`RunStash.serialized` / :func:`from_workerinput`): a pipe no
reviewer can read.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .constants import RUN_DIR_KEY, RUN_SECRET_KEY
from .settings import WORKERINPUT_KEY, from_config
from .workspace.head import HEAD_KEY, HeadCheckout

if TYPE_CHECKING:
    from .coordinator import Coordinator
    from .parallel import ReviewPool
    from .review import ReviewContext
    from .selection import TargetSelection

__all__ = ["RUN_STASH", "RunStash", "from_workerinput", "get"]


@dataclasses.dataclass
class RunStash:
    """The run's directory and secret, its coordinator, its plans, what its reviews share
    and any head checkout."""

    #: One directory per run (the token ledger, the sandbox preflight), shared by workers.
    run_dir: Path
    #: Tags the state entries this run writes (state.py); held in memory only.
    run_secret: bytes
    coordinator: Coordinator
    #: What a plan file's collector asks of the run: the plan's key and source.
    plans: TargetSelection
    #: ``--advreview-head``: the one checkout of REF of the run (the controller removes it).
    head: HeadCheckout | None = None
    #: What every review of the run shares; set when collection has finished (the
    #: reviewer is built and every plugin and conftest has registered).
    context: ReviewContext | None = None
    #: ``--advreview-jobs`` above 1: the reviews started ahead of their items.
    pool: ReviewPool | None = None

    def serialized(self, config: pytest.Config) -> dict[str, str]:
        """The ``workerinput`` entries a worker rebuilds its run from: the settings the
        header printed (JSON), the run directory and secret, and any head checkout (one
        checkout of REF for the run: the workers read it, the controller removes it)."""
        entries = {
            WORKERINPUT_KEY: from_config(config).model_dump_json(),
            RUN_DIR_KEY: str(self.run_dir),
            RUN_SECRET_KEY: self.run_secret.hex(),
        }
        if self.head is not None:
            entries[HEAD_KEY] = self.head.model_dump_json()
        return entries


def from_workerinput(config: pytest.Config) -> tuple[Path, bytes, HeadCheckout | None] | None:
    """The run directory, secret and head checkout an xdist worker got from its
    controller; ``None`` on the controller (the settings are read by ``settings.py``)."""
    workerinput = getattr(config, "workerinput", None)
    if not isinstance(workerinput, dict) or RUN_DIR_KEY not in workerinput:
        return None
    checkout = workerinput.get(HEAD_KEY)
    return (
        Path(str(workerinput[RUN_DIR_KEY])),
        bytes.fromhex(str(workerinput[RUN_SECRET_KEY])),
        None if checkout is None else HeadCheckout.model_validate_json(str(checkout)),
    )


RUN_STASH: pytest.StashKey[RunStash] = pytest.StashKey()


def get(config: pytest.Config) -> RunStash | None:
    """The running ``--adversarial-review`` run, ``None`` without one."""
    return config.stash.get(RUN_STASH, None)


def run_dir(config: pytest.Config) -> Path | None:
    """The run directory of the ``--adversarial-review`` session, if one is running."""
    stash = get(config)
    return stash.run_dir if stash is not None and stash.run_dir.is_dir() else None
