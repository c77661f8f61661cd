"""The doctor's own ``pytest11`` entry point: ``--advreview-doctor`` and its JSON option.

A plugin of its own, so that ``plugin.py`` (imported by every pytest start) and every
module it imports never reach the doctor, which loads the testing kit's HTTP server.
This module registers the doctor's two options (their rows are in ``options.SPECS``, the
one settings table) and runs the doctor instead of a test session when asked; the doctor
itself is imported only then.

The entry point's name is this module's import name, as pytest-xdist does for
``xdist.looponfail``: ``-p pytest_advreview.doctorplugin`` then loads it once, installed
or not.  ``-p no:advreview`` turns the doctor off too: it reads the review settings
(``--advreview-codex``, its ini key and variable) that only the review plugin registers.
``-p no:pytest_advreview.doctorplugin`` turns off the doctor alone.
"""

from __future__ import annotations

import pytest

from . import options

#: The name ``-p no:NAME`` blocks the whole package under (``plugin.py``'s entry point).
PACKAGE_PLUGIN = "advreview"


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Register ``--advreview-doctor`` and ``--advreview-doctor-json``, unless the package
    is turned off (pytest applies the command line's ``-p no:`` before loading plugins)."""
    if not pluginmanager.is_blocked(PACKAGE_PLUGIN):
        options.add_specs(parser, options.DOCTOR_SPECS)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """``--advreview-doctor`` runs the Codex contract checks instead of a test session."""
    if not _asked(config):
        return None
    # Imported only when asked: the doctor loads the testing kit's HTTP server, which
    # every other pytest start (with or without --adversarial-review) would pay for.
    from . import doctor

    return doctor.main(config)


def _asked(config: pytest.Config) -> bool:
    """Whether this pytest run is ``--advreview-doctor`` (a usage error for half of it)."""
    if config.getoption("advreview_doctor", False):
        return True
    if config.getoption("advreview_doctor_json", None):
        raise pytest.UsageError(
            "pytest-advreview: --advreview-doctor-json only works together with "
            "--advreview-doctor; add --advreview-doctor"
        )
    return False
