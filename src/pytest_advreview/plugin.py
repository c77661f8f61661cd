"""The ``pytest11`` entry point: options, hookspecs and sub-plugin registration only.

Everything else lives in the modules named for what they own (see ``design.md`` §1).
Without ``--adversarial-review`` nothing but the options and markers is registered, so
installing the plugin never changes an unrelated suite.
"""

from __future__ import annotations

import os

import pytest

from . import hookspecs, options
from .constants import MARKER

_SEVERITY_MARKERS = ("critical", "high", "medium")


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ``--adversarial-review`` / ``--advreview-*`` options and ini keys."""
    options.add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Register the ``pytest_advreview_*`` hook specifications."""
    pluginmanager.add_hookspecs(hookspecs)


def pytest_configure(config: pytest.Config) -> None:
    """Register markers; with ``--adversarial-review``, resolve settings and start a run."""
    config.addinivalue_line("markers", f"{MARKER}: an adversarial review item (pytest-advreview)")
    for level in _SEVERITY_MARKERS:
        config.addinivalue_line(
            "markers",
            f"severity_{level}: the review's highest open finding is {level} (pytest-advreview)",
        )
    # The fixture works in any run (a test may call a review without the flag).
    from . import fixtures

    config.pluginmanager.register(fixtures, "advreview-fixtures")
    if not config.getoption("advreview_enabled", default=False):
        return
    from . import outbound, settings
    from .runner.factory import BuiltinReviewers
    from .session import Controller, ReviewSession

    resolved = settings.from_config(config)
    # What is secret is decided once, before anything is printed: every output of the run
    # (and the workers', through workerinput) is redacted the same way.
    redactor = outbound.Redactor.for_run(config, resolved.env_allow)
    outbound.install(redactor)
    config.add_cleanup(lambda: outbound.install(None))
    config.pluginmanager.register(BuiltinReviewers(resolved), "advreview-builtin-reviewers")
    session = ReviewSession(config, resolved)
    config.pluginmanager.register(session, "advreview-session")
    if not hasattr(config, "workerinput"):  # an xdist worker only reviews and reports
        config.pluginmanager.register(Controller(config, session), "advreview-controller")
        guard = outbound.LogGuard(redactor, os.environ)
        config.pluginmanager.register(guard, "advreview-log-guard")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """``--advreview-doctor`` runs the Codex contract checks instead of a test session."""
    if not options.doctor_asked(config):
        return None
    # Imported only when asked: the doctor loads the testing kit's HTTP server, which
    # every other pytest start (with or without --adversarial-review) would pay for.
    from . import doctor

    return doctor.main(config)
