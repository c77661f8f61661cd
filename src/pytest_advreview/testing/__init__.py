"""The advreview testing kit: scripted Responses- and Messages-API servers, fake ``codex``,
review builders.

It is shipped with the plugin so that projects extending pytest-advreview (custom
reviewers, hooks, CI recipes) can test against the same doubles the plugin's own suite
uses.  Enable the fixtures in a ``conftest.py``::

    pytest_plugins = ["pytest_advreview.testing.fixtures"]

Nothing here contacts a real model service: the server binds loopback only and the
environment helpers strip real API keys.
"""

from __future__ import annotations

from .fake_codex import FAKE_CODEX_VERSION, Behaviour, FakeCodex, install_fake_codex
from .fixtures import CODEX_ENV_VAR, FakeCodexFactory, find_codex, offline_env
from .messages_server import MessagesRequest, ScriptedMessagesServer, claude_offline_env
from .reviews import FindingSpec, approved_review, review_text, revise_review
from .server import (
    FAKE_KEY_ENV,
    FAKE_KEY_VALUE,
    FAKE_MODEL,
    FAKE_PROVIDER,
    LoggedRequest,
    ScriptedServer,
    codex_config_argv,
    codex_provider_args,
    shell_step,
)

__all__ = [
    "CODEX_ENV_VAR",
    "FAKE_CODEX_VERSION",
    "FAKE_KEY_ENV",
    "FAKE_KEY_VALUE",
    "FAKE_MODEL",
    "FAKE_PROVIDER",
    "Behaviour",
    "FakeCodex",
    "FakeCodexFactory",
    "FindingSpec",
    "LoggedRequest",
    "MessagesRequest",
    "ScriptedMessagesServer",
    "ScriptedServer",
    "approved_review",
    "claude_offline_env",
    "codex_config_argv",
    "codex_provider_args",
    "find_codex",
    "install_fake_codex",
    "offline_env",
    "review_text",
    "revise_review",
    "shell_step",
]
