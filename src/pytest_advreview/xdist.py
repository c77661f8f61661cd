"""pytest-xdist integration: the controller decides, the workers execute.

Registered only when xdist is active (``plugin.py``), so the plugin works without it.
"""

from __future__ import annotations

from typing import Any

import pytest

from . import runstash
from .settings import WORKERINPUT_KEY, from_config

__all__ = ["XdistHooks"]


class XdistHooks:
    """Sends the controller's resolved settings to every worker node."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl
    def pytest_configure_node(self, node: Any) -> None:
        """Put the settings (JSON), the run directory, the run secret and any head checkout
        in ``workerinput`` (a pipe to the worker: no reviewer can read it there)."""
        node.workerinput[WORKERINPUT_KEY] = from_config(self.config).model_dump_json()
        stash = runstash.get(self.config)
        if stash is not None:
            # Any head checkout too: one checkout of REF for the run, the workers read it,
            # the controller removes it.
            node.workerinput.update(stash.serialized())
