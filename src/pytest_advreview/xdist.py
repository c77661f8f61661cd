"""pytest-xdist integration: the controller decides, the workers execute.

Registered only when xdist is active (``plugin.py``), so the plugin works without it.
"""

from __future__ import annotations

from typing import Any

import pytest

from .constants import RUN_DIR_KEY, RUN_SECRET_KEY
from .head import HEAD_KEY
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
        session = self.config.pluginmanager.get_plugin("advreview-session")
        if session is not None:
            node.workerinput[RUN_DIR_KEY] = str(session.run_dir)
            node.workerinput[RUN_SECRET_KEY] = session.run_secret.hex()
            if session.head is not None:
                # One checkout of REF for the run: the workers read it, the controller
                # removes it.
                node.workerinput[HEAD_KEY] = session.head.model_dump_json()
