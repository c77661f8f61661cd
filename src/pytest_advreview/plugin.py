"""The ``pytest11`` entry point: options, hookspecs and sub-plugin registration only.

Everything else lives in the modules named for what they own (docs/development.md, "Where
things are").
Without ``--adversarial-review`` nothing but the options and markers is registered, so
installing the plugin never changes an unrelated suite.  The doctor has an entry point of
its own (``doctorplugin.py``): nothing this module imports reaches the doctor or the
GitHub Action's steps (``action.py``).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Generator
from typing import TYPE_CHECKING

import pytest

from . import hookspecs, options
from .constants import MARKER

if TYPE_CHECKING:
    from .exitstatus import GateCheck


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ``--adversarial-review`` / ``--advreview-*`` options and ini keys."""
    options.add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser) -> None:
    """The first moment this package's options are known: refuse one written with a
    space whose value pytest took for a test path when it chose the rootdir."""
    args = [
        *shlex.split(os.environ.get("PYTEST_ADDOPTS", "")),
        *early_config.invocation_params.args,
    ]
    options.check_spaced_values(parser, args, early_config.invocation_params.dir)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Register the ``pytest_advreview_*`` hook specifications."""
    pluginmanager.add_hookspecs(hookspecs)


def pytest_configure(config: pytest.Config) -> None:
    """Register markers; with ``--adversarial-review``, resolve settings and start a run."""
    config.addinivalue_line("markers", f"{MARKER}: an adversarial review item (pytest-advreview)")
    for level in ("critical", "high", "medium"):
        config.addinivalue_line(
            "markers",
            f"severity_{level}: the review's highest open finding is {level} (pytest-advreview)",
        )
    # The fixture works in any run (a test may call a review without the flag).
    from . import fixtures

    config.pluginmanager.register(fixtures, "advreview-fixtures")
    if not config.getoption("advreview_enabled", default=False):
        return
    from . import exitstatus, outbound, runstash, settings
    from .runner import lifetime
    from .runner.factory import BuiltinReviewers
    from .session import Controller, ReviewSession
    from .trust import run as trust

    resolved = settings.from_config(config)
    # Whether the run gates, decided once for every part of it (trust/run.py): with the
    # settings, or here on an xdist worker, whose settings come resolved.
    run_trust = trust.of_run(config, resolved)
    # What is secret is decided once, before anything is printed: every output of the run
    # (and the workers', through workerinput) is redacted the same way.
    redactor = outbound.Redactor.for_run(config, resolved.env_allow)
    outbound.install(redactor)
    config.add_cleanup(lambda: outbound.install(None))
    # SIGTERM and SIGHUP (a cancelled CI job, `timeout`, a closed terminal) take Ctrl-C's
    # path: the reviews in flight are killed and the run ends interrupted, not passed.
    controller = not hasattr(config, "workerinput") and config.getoption("dist", "no") != "no"
    config.add_cleanup(lifetime.interrupt_on_signals(workers=controller))
    if hasattr(config, "workerinput"):
        # A SIGKILL of the controller leaves its workers running (xdist interrupts one
        # 5 s later): their reviewers end with the controller, not with the worker.
        config.add_cleanup(lifetime.watch_controller())
    builtin = BuiltinReviewers(resolved, run_dir=lambda: runstash.run_dir(config))
    config.pluginmanager.register(builtin, "advreview-builtin-reviewers")
    if resolved.eval is not None:
        # Measuring the reviewer (docs/eval.md): the corpus's items only, no gate.
        from .eval.plugin import register

        register(config, resolved, redactor)
        return
    # Before any review item is made: each one notes itself with the recorder.
    recorder = exitstatus.GateRecorder()
    config.stash[exitstatus.GATE_KEY] = recorder
    config.pluginmanager.register(recorder, "advreview-gate-recorder")
    session = ReviewSession(config, resolved)
    config.pluginmanager.register(session, "advreview-session")
    if not hasattr(config, "workerinput"):  # an xdist worker only reviews and reports
        config.pluginmanager.register(Controller(config, session), "advreview-controller")
        check = exitstatus.GateCheck(
            config,
            recorder,
            enforced=run_trust.enforced_by,
            strict=resolved.strict_exit,
            required=session.required_targets,
        )
        config.stash[_GATE_CHECK] = check
        config.pluginmanager.register(check, "advreview-gate")
        guard = outbound.LogGuard(redactor, os.environ)
        config.pluginmanager.register(guard, "advreview-log-guard")


#: The run's gate check (controller only), for the exit status pytest_cmdline_main returns.
_GATE_CHECK: pytest.StashKey[GateCheck] = pytest.StashKey()


@pytest.hookimpl(wrapper=True, tryfirst=True, specname="pytest_cmdline_main")
def pytest_gate_exit_status(
    config: pytest.Config,
) -> Generator[None, int | pytest.ExitCode | None, int | pytest.ExitCode | None]:
    """Hold the run's exit status to the gate's records (``exitstatus.py``) to the very end.

    (A second ``pytest_cmdline_main`` of this module, by ``specname``: pytest reads hook
    implementations only from names that start with ``pytest_``.)

    Session finish already set it; this runs after pytest's unconfigure and cleanups,
    which a conftest could also use to lower ``session.exitstatus``.
    """
    status = yield
    check = config.stash.get(_GATE_CHECK, None)
    if status is None or check is None or check.required is None:
        return status
    from .exitstatus import final_status

    return final_status(int(status), check.required)
