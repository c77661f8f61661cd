"""The advreview testing kit: scripted Responses- and Messages-API servers, fake ``codex``,
an in-process scripted reviewer, review builders.

It is shipped with the plugin so that projects extending pytest-advreview (custom
reviewers, hooks, CI recipes) can test against the same doubles the plugin's own suite
uses.  Enable the fixtures in a ``conftest.py``::

    pytest_plugins = ["pytest_advreview.testing.fixtures"]

Two ways to review a ``pytester`` run from a script: the real Codex CLI against
:class:`ScriptedServer` (fixtures ``codex_executable``, ``advreview_server``), for what
depends on the CLI (launch, resume, sandbox, environment, tool calls, faults); and the
in-process :class:`ScriptedReviewer` (fixture ``scripted_reviewer``, a
:class:`ScriptedReviews` with the same script format and request log), for the plugin's
own logic (verdicts, rounds, stored state, reports, exit codes) without starting a
process.  Every test that uses ``codex_executable`` is marked ``real_codex``, so
``-m "not real_codex"`` selects the tests that start no real CLI.

Nothing here contacts a real model service: the server binds loopback only and the
environment helpers strip real API keys.
"""

from __future__ import annotations

from .fake_codex import FAKE_CODEX_VERSION, Behaviour, FakeCodex, install_fake_codex
from .fixtures import CODEX_ENV_VAR, FakeCodexFactory, find_codex, offline_env
from .messages_server import MessagesRequest, ScriptedMessagesServer, claude_offline_env
from .reviews import FindingSpec, approved_review, review_text, revise_review
from .scripted import ScriptedReviewer, ScriptedReviews, run_step
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
    "ScriptedReviewer",
    "ScriptedReviews",
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
    "run_step",
    "shell_step",
]
