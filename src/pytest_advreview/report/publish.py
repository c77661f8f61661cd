"""Writing the report files and the CI integrations, once, on the controller.

:func:`publish` runs in ``pytest_sessionfinish`` on the xdist controller (or the only
process) after every item has reported, also when items errored.  Each report is built
and written on its own: one that cannot be written (a folder in the way, no permission)
is named in a warning line with its option and path, and the others are still written.
Report files are replaced atomically; ``$GITHUB_STEP_SUMMARY`` is appended to.

GitHub workflow commands go to the terminal reporter's stream (stdout, where the runner
reads them), or to ``sys.stdout`` when the terminal plugin is disabled; they are printed
at session finish, before the adversarial review summary.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..constants import EXIT_REVIEW_ERRORS
from ..models import ChangeSetInfo
from ..outbound import terminal_text
from . import github
from .collect import ItemResult
from .files import Anchors, find_repo_root, write_atomic
from .json_report import gate_result, render_json
from .markdown import render_markdown, step_summary
from .rdjson import render_rdjson
from .sarif import render_sarif

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["exit_status", "lead_patch", "other_failures", "publish"]

_PREFIX = "pytest-advreview"


class _Output:
    """Where publish prints: the terminal reporter's writer, else ``sys.stdout``."""

    def __init__(self, config: pytest.Config) -> None:
        self.terminal: pytest.TerminalReporter | None = config.pluginmanager.get_plugin(
            "terminalreporter"
        )

    def line(self, text: str, **markup: bool) -> None:
        """Print ``text`` at the start of its own line (workflow commands must be)."""
        if self.terminal is not None:
            # Under xdist the progress line ("....  [100%]") is left open and
            # write_line's ensure_newline() does not know it; a command glued to it
            # would be lost on GitHub.
            if self.terminal._tw.width_of_current_line:
                self.terminal._tw.line()
            self.terminal.write_line(text, **markup)
        else:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()


def _fallback_path(config: pytest.Config, repo_root: Path) -> str | None:
    """The pytest configuration file, repo-relative: where an unlocated finding is pinned."""
    inipath = config.inipath
    if inipath is None:
        return None
    try:
        return Path(inipath).resolve().relative_to(repo_root).as_posix()
    except ValueError:
        return None


def lead_patch(results: list[ItemResult]) -> str:
    """The combined diff of every item's lead edits, in node-id order (may be empty)."""
    return "".join(r.record.lead_patch for r in results)


def publish(
    config: pytest.Config,
    settings: Settings,
    results: list[ItemResult],
    *,
    environ: Mapping[str, str] | None = None,
    change: ChangeSetInfo | None = None,
) -> bool:
    """Write every report the settings ask for (controller only; atomic files).

    :param config: the run's config (terminal output, rootdir, ini file).
    :param settings: which reports to write, and where.
    :param results: the collected review items, in node-id order.
    :param environ: the environment for the GitHub integration (``os.environ`` if None).
    :param change: the change set the code item reviewed, named in JSON and markdown.
    :returns: whether every report file asked for on the command line was written (the
        GitHub step summary, set by the environment, only warns).
    """
    env = os.environ if environ is None else environ
    out = _Output(config)
    repo_root = find_repo_root(Path(config.rootpath))
    anchors = Anchors(repo_root)
    fallback = _fallback_path(config, repo_root)

    files: list[tuple[str, str | None, Callable[[], str]]] = [
        (
            "--advreview-json",
            settings.json_report,
            lambda: render_json(settings, results, change=change),
        ),
        (
            "--advreview-report",
            settings.report,
            lambda: render_markdown(settings, results, change=change),
        ),
        (
            "--advreview-sarif",
            settings.sarif,
            lambda: render_sarif(results, anchors, fallback_path=fallback),
        ),
        (
            "--advreview-rdjson",
            settings.rdjson,
            lambda: render_rdjson(results, anchors, fallback_path=fallback),
        ),
        # Every lead edit of the run, for a CI job to upload or open a pull request with.
        ("--advreview-lead-patch", settings.lead_patch, lambda: lead_patch(results)),
    ]
    written = True
    for option, target, render in files:
        if target is not None:
            written = _write(out, option, Path(target), render) and written

    if not github.enabled(settings.github, env):
        return written
    try:
        commands = github.workflow_commands(results, anchors, _annotated_elsewhere(config, env))
    except Exception as exc:  # a bug must not cost the summary below
        _warn(out, f"could not build the GitHub annotations: {exc!r}; please report this bug")
        commands = []
    for command in commands:
        out.line(command)
    summary = env.get("GITHUB_STEP_SUMMARY", "").strip()
    if not summary:
        return written
    try:
        text = step_summary(settings, results, change=change) + "\n"
        # Appended, never replaced: GitHub expects every step to add to the summary.
        with Path(summary).open("ab") as handle:
            handle.write(text.encode("utf-8"))
    except OSError as exc:
        _warn(
            out,
            f"cannot append the step summary to GITHUB_STEP_SUMMARY={summary}: "
            f"{exc.strerror or exc}; the other reports were written",
        )
    except Exception as exc:
        _warn(out, f"could not build the step summary: {exc!r}; please report this bug")
    return written


def _annotated_elsewhere(
    config: pytest.Config, env: Mapping[str, str]
) -> github.AnnotatedElsewhere:
    """What pytest-github-actions-annotate-failures annotates in this run: it registers
    ``annotate_errors`` (failures) and, unless ``--exclude-warning-annotations``,
    ``annotate_warnings``, and prints only when ``GITHUB_ACTIONS`` is ``true``."""
    if env.get("GITHUB_ACTIONS") != "true":
        return github.AnnotatedElsewhere()
    plugins = config.pluginmanager
    return github.AnnotatedElsewhere(
        failures=plugins.get_plugin("annotate_errors") is not None,
        warnings=plugins.get_plugin("annotate_warnings") is not None,
    )


def _write(out: _Output, option: str, path: Path, render: Callable[[], str]) -> bool:
    """Build and write one report; a failure is one warning line (never a traceback)."""
    try:
        text = render()
    except Exception as exc:  # one broken format must not cost the other reports
        _warn(out, f"could not build {option}={path}: {exc!r}; please report this bug")
        return False
    try:
        write_atomic(path, text)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        _warn(
            out,
            f"cannot write {option}={path}: {reason}"
            + (f" ({exc.filename})" if exc.filename and str(exc.filename) != str(path) else "")
            + "; pass a path in a writable folder",
        )
        return False
    return True


def _warn(out: _Output, message: str) -> None:
    # A path or an exception's text may be anything: redacted and neutralised.
    out.line(terminal_text(f"{_PREFIX}: WARNING: {message}"), yellow=True, bold=True)


def other_failures(config: pytest.Config, results: list[ItemResult]) -> bool:
    """True when a test that is not a review item failed or errored in this run.

    Read from the terminal reporter's statistics; without the terminal plugin, False.
    """
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is None:
        return False
    reviews = {r.record.nodeid for r in results}
    return any(
        getattr(report, "nodeid", None) not in reviews
        for key in ("failed", "error")
        for report in terminal.stats.get(key, ())
    )


def exit_status(
    settings: Settings,
    results: list[ItemResult],
    exitstatus: int,
    *,
    config: pytest.Config | None = None,
) -> int:
    """The exit status to end the run with: pytest's own, unless strict exit applies.

    With ``--advreview-strict-exit``, a run whose only problems are review items that
    errored (the reviewer could not run, or changed the workspace) exits with
    :data:`~pytest_advreview.constants.EXIT_REVIEW_ERRORS` instead of 1.  Any failed
    review, or (when ``config`` is given) any other failed or errored test, keeps 1.

    :param settings: ``strict_exit`` decides.
    :param config: the run's config, to see failures of tests that are not reviews.
    """
    if not settings.strict_exit or exitstatus != pytest.ExitCode.TESTS_FAILED:
        return exitstatus
    if gate_result(results) != "error":  # a failed review, or no errored one
        return exitstatus
    if config is not None and other_failures(config, results):
        return exitstatus
    return EXIT_REVIEW_ERRORS
