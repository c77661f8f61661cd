"""Reviews on demand from inside ordinary tests: what ``adversarial_review`` returns.

.. code-block:: python

    def test_migration_plan(adversarial_review):
        outcome = adversarial_review.plan("docs/plans/migration.md", fail_on="high")
        outcome.assert_approved()
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import warnings
from enum import Enum
from pathlib import Path
from typing import Any, NoReturn

import pytest

from . import engine, runlock, runstash, targets, warnfilter
from . import settings as settings_mod
from .coordinator import Coordinator
from .loop import LoopResult
from .material import TargetSpec, repo_relative
from .models import Finding, ReviewStatus, Severity, Verdict
from .options import BY_FIELD, Invalid
from .outcome import (
    Outcome,
    OutcomeKind,
    ReviewerUnavailable,
    error_report,
    failure_report,
)
from .review import (
    ReviewContext,
    ReviewRun,
    has_fixer_hook,
    make_reviewer,
    make_samples,
    make_verifier,
)
from .selection import code_change
from .state import StateWarning
from .trust import pathrules
from .trust import run as trust
from .trust.authority import GateBase
from .workspace import Layout, containment

__all__ = ["AdversarialReview", "ReviewOutcome"]

#: The coordinator of fixture reviews in a pytest run without ``--adversarial-review``.
_OWN_COORDINATOR: pytest.StashKey[Coordinator] = pytest.StashKey()


class ReviewOutcome:
    """The result of one fixture review: verdict, findings, rounds, tokens."""

    def __init__(self, key: str, result: LoopResult, outcome: Outcome) -> None:
        self.key = key
        self.result = result
        self.outcome = outcome

    @property
    def verdict(self) -> Verdict | None:
        """``APPROVED`` / ``REVISE`` of the last valid review."""
        return self.outcome.verdict

    @property
    def status(self) -> ReviewStatus:
        """Final status (approved, revise, max rounds, …)."""
        return self.outcome.status

    @property
    def findings(self) -> tuple[Finding, ...]:
        """Open findings, highest first (failing ones, then those below fail-on)."""
        return (*self.outcome.failing, *self.outcome.pre_existing, *self.outcome.below)

    @property
    def max_severity(self) -> Severity | None:
        """Severity of the worst open finding."""
        return self.outcome.max_severity

    @property
    def rounds(self) -> int:
        """Number of the last counted round."""
        return self.outcome.rounds

    @property
    def tokens(self) -> int:
        """Tokens this review used."""
        return self.result.usage.total

    def assert_approved(self) -> None:
        """Fail the test with the review verbatim unless nothing reaches fail-on."""
        if self.outcome.kind in (OutcomeKind.PASSED, OutcomeKind.WARNED):
            return
        __tracebackhide__ = True
        raise AssertionError(failure_report(self.key, self.result, self.outcome))


def _fail_test(text: str) -> NoReturn:
    """The test that asked for the review fails with ``text`` alone (no traceback)."""
    pytest.fail(text, pytrace=False)


def _checked_override(name: str, value: Any) -> Any:
    """``value`` validated by the same parser as the option of that name.

    A keyword override is one more way to set a setting, so it gets the same bounds as
    the command line, the environment and the ini file (``timeout=1e12`` would otherwise
    reach the process wait and crash there).  Names that are not declared settings are
    left to the :class:`~.settings.Settings` model, which rejects unknown ones.
    """
    spec = BY_FIELD.get("json" if name == "json_report" else name)
    if spec is None or value is None:
        return value
    raw = value.value if isinstance(value, Enum) else value
    try:
        if isinstance(raw, (list, tuple)):
            return tuple(spec.parse(item) for item in raw)
        return spec.parse(raw)
    except Invalid as exc:
        raise pytest.UsageError(
            f"pytest-advreview: adversarial_review override {name}={value!r} is not valid; {exc}"
        ) from None


class AdversarialReview:
    """Runs reviews on demand with the run's settings, overridable per call."""

    def __init__(self, config: pytest.Config, node: pytest.Item) -> None:
        self.config = config
        self.node = node
        self.rootdir = Path(config.rootpath)

    @functools.cached_property
    def repo(self) -> targets.GitRepoInfo | None:
        """The repository the reviews run in (``None``: rootdir is outside git); asked
        when a review needs it, so a git error is that call's failure."""
        return targets.repo_info(self.rootdir)

    @property
    def root(self) -> Path:
        """Where the reviewer runs: the repository's top level, else rootdir."""
        return self.repo.root if self.repo is not None else self.rootdir

    def _settings(self, overrides: dict[str, Any]) -> settings_mod.Settings:
        # The run's coordinator's settings when a review run is active: the same decisions
        # file the run's items use (found from the repository's top level).
        base = self._coordinator().settings
        if not overrides:
            return base
        checked = {name: _checked_override(name, value) for name, value in overrides.items()}
        try:
            return settings_mod.Settings.model_validate({**base.model_dump(), **checked})
        except ValueError as exc:
            raise pytest.UsageError(
                f"pytest-advreview: invalid override for adversarial_review: {exc}"
            ) from None

    def _coordinator(self) -> Coordinator:
        """The coordinator of the run (stored state, decisions and the token budget).

        The ``--adversarial-review`` run's when one is active, so a fixture review is
        judged like an item: from the same stored verdicts (watched while its reviewer
        runs; the run secret tells other workers' entries apart), the same decisions and
        against the same budget. Else one of this pytest process, kept for its reviews.
        """
        stash = runstash.get(self.config)
        if stash is not None:
            return stash.coordinator
        own = self.config.stash.get(_OWN_COORDINATOR, None)
        if own is None:
            if not hasattr(self.config, "workerinput"):
                # Stored state is written: no other run on this checkout at the same time
                # (runlock.py).  An xdist worker cannot tell its siblings from another run.
                problem = runlock.hold_for_run(self.config)
                if problem is not None:
                    warnings.warn(StateWarning(f"pytest-advreview: {problem}"), stacklevel=4)
            run_dir = Path(tempfile.mkdtemp(prefix="advreview-run-"))
            self.config.add_cleanup(lambda: shutil.rmtree(run_dir, ignore_errors=True))
            own = Coordinator(self.config, settings_mod.from_config(self.config), run_dir)
            self.config.stash[_OWN_COORDINATOR] = own
        return own

    def _run(self, spec: TargetSpec, settings: settings_mod.Settings) -> ReviewOutcome:
        """The review of ``spec``; a warning of the plugin that a warnings filter made an
        error (the run lock's, the containment check's, the stored state's) fails the
        test with its text and the filter line to add, not with the plugin's source."""
        __tracebackhide__ = True
        with warnfilter.reported(_fail_test):
            return self._review(spec, settings)

    def _review(self, spec: TargetSpec, settings: settings_mod.Settings) -> ReviewOutcome:
        from .runner.factory import BuiltinReviewers

        __tracebackhide__ = True
        # The items' check runs once at configure for the run's settings; a fixture review
        # has settings of its own (a sandbox override) and may run with no review run.
        try:
            layout = Layout.decide(settings, self.root, in_git=self.repo is not None)
            run_trust = trust.of_run(self.config, settings)
            exposed = containment.check(settings, layout, os.environ, run_trust)
        except pytest.UsageError as exc:
            raise pytest.UsageError(str(exc)) from None  # the message, not check's source
        for warning in exposed:
            found = containment.ContainmentWarning(warning.removeprefix("WARNING: "))
            warnings.warn(found, stacklevel=4)
        coordinator = self._coordinator().for_settings(settings)
        stash = runstash.get(self.config)
        builtin = BuiltinReviewers(
            settings, run_dir=lambda: runstash.run_dir(self.config)
        ).pytest_advreview_make_reviewer
        reviewer = make_reviewer(self.config, settings, builtin)
        context = ReviewContext(
            self.config,
            settings,
            reviewer,
            self.root,
            in_git=self.repo is not None,
            store=coordinator.store,
            fixer_hook=has_fixer_hook(self.config),
            layout=layout,
            # The run's, when one is active: its items' leads copy edits into the checkout.
            adoptions=stash.context.adoptions if stash and stash.context else None,
            samples=make_samples(self.config, settings, reviewer, builtin),
            verifier=make_verifier(self.config, settings, lambda: runstash.run_dir(self.config)),
        )
        run = ReviewRun(context, spec, item=self.node)
        # The items' path: a stored verdict stands, decisions are sent, the budget holds;
        # the workspace is compared before the test goes on (WorkspaceMutated).
        reviewed = engine.review_target(
            run, coordinator, nodeid=self.node.nodeid, compare_workspace="now"
        )
        result, outcome = reviewed.result, reviewed.outcome
        if outcome.kind is OutcomeKind.ERROR:
            raise ReviewerUnavailable(
                error_report(spec.key, result, outcome)
                + (f"reviewer files kept in {reviewed.kept}\n" if reviewed.kept else "")
            )
        return ReviewOutcome(spec.key, result, outcome)

    def plan(self, path: str | os.PathLike[str], **overrides: Any) -> ReviewOutcome:
        """Review one plan file (relative paths are taken from rootdir)."""
        settings = self._settings(overrides)
        plan = self.rootdir / path  # an absolute path stays as it is
        spec = TargetSpec(kind="plan", key=repo_relative(plan, self.root), path=plan)
        return self._run(spec, settings)

    def code(
        self,
        base: str | None = None,
        against_plan: str | os.PathLike[str] | None = None,
        **overrides: Any,
    ) -> ReviewOutcome:
        """Review the change set (vs ``base``), optionally against a plan."""
        settings = self._settings(overrides)
        root = self.root
        resolved = trust.of_run(self.config, settings).base(root, base or settings.base)
        mode = settings.diff if settings.diff != "none" else "auto"
        # The run's path rules (under a gate the base's), as the code item applies them.
        rules = pathrules.for_settings(self.config, settings, GateBase(root, resolved))
        change, _dropped = code_change(self.config, settings, root, mode, resolved, rules)
        if change is None:
            raise pytest.UsageError(
                f"pytest-advreview: there is no code change to review in {root} "
                f"(diff mode {mode}, base {resolved or 'unknown'})"
            )
        plan = None if against_plan is None else self.rootdir / against_plan
        spec = TargetSpec(kind="code", key="code-review", change=change, against_plan=plan)
        return self._run(spec, settings)
