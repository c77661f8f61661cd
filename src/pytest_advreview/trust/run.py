"""Whether this run's verdict gates, and why: decided once per process, at configure.

The one place that reads ``CI``, ``GITHUB_ACTIONS``, the strict exit status and
``--advreview-head`` for that question.  Everything that behaves differently under a gate
(containment, the exit-status account, settings' defaults, path rules, the cache key, the
runner options, the coordinator, the lead's edits) reads the :class:`Trust` value this
module builds; none reads the environment for it.

Two facts, kept apart on purpose:

* :attr:`Trust.enforced_by`: the exit status follows the plugin's own records
  (``CI``/``GITHUB_ACTIONS`` true, or ``--advreview-strict-exit``).
* :attr:`Trust.gated`: the verdict gates something: the above, or a pull request's head
  reviewed as data (``--advreview-head``).  Then the head is hostile: only the base
  commit's decisions and path rules count, the reviewer gets no project instructions
  from the checkout, and containment refuses a writable gate.  Outside CI and without
  the strict option, a head-as-data run keeps pytest's own exit status: a maintainer who
  reviews a fork's head on a laptop may still pick items with ``-k``
  (docs/safety.md, "Reviewing a head as data").
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import pytest

__all__ = ["CI_VARIABLES", "TRUST_KEY", "Trust", "decide", "enforced_by", "in_ci", "of_run"]

#: Variables that mark a CI run; GitHub Actions, GitLab CI, CircleCI, Travis, Buildkite
#: and Azure Pipelines (TF_BUILD aside) all set ``CI`` to a true value.
CI_VARIABLES = ("CI", "GITHUB_ACTIONS")
_TRUTHY = frozenset({"1", "true", "yes", "on"})


class Settings(Protocol):
    """What trust reads of the settings (:class:`~.settings.Settings`)."""

    @property
    def strict_exit(self) -> bool: ...
    @property
    def head(self) -> str | None: ...
    @property
    def decisions(self) -> str: ...
    @property
    def pull_request(self) -> int | None: ...
    @property
    def commands(self) -> str | None: ...


def in_ci(env: Mapping[str, str]) -> bool:
    """True when ``CI`` or ``GITHUB_ACTIONS`` is set to a true value (any case)."""
    return _ci_variable(env) is not None


def _ci_variable(env: Mapping[str, str]) -> str | None:
    """``NAME=value`` of the first CI variable set to a true value, else ``None``."""
    for name in CI_VARIABLES:
        value = env.get(name, "")
        if value.strip().lower() in _TRUTHY:
            return f"{name}={value}"
    return None


def enforced_by(environ: Mapping[str, str], *, strict_exit: bool) -> str | None:
    """Why the exit status follows the plugin's records: ``CI=true``, the strict option.

    ``None`` outside CI without ``--advreview-strict-exit``: a laptop run that picks one
    review with ``-k`` stays as it was.
    """
    return decide(environ, strict_exit=strict_exit, head=None).enforced_by


def gated(environ: Mapping[str, str], *, strict_exit: bool, head: str | None) -> bool:
    """Whether a verdict of this run gates something (CI, strict exit, head as data):
    then only the base commit's decisions file decides needs-operator findings."""
    return decide(environ, strict_exit=strict_exit, head=head).gated


@dataclass(frozen=True)
class Trust:
    """The run's trust mode, one frozen value per process (see the module docstring).

    :param ci: ``NAME=value`` of the CI variable that makes this a CI run, else ``None``.
    :param strict_exit: ``--advreview-strict-exit``.
    :param head: ``--advreview-head``'s ref: the head is reviewed as data.
    :param base_hint: ``GITHUB_BASE_REF`` as the run started (the CI's base branch).
    """

    ci: str | None
    strict_exit: bool
    head: str | None
    base_hint: str = ""
    #: Bases resolved so far, by repository and explicit ref (shared by for_settings).
    _bases: dict[tuple[Path, str | None], str | None] = field(
        default_factory=dict, compare=False, repr=False
    )
    #: What the run holds once made, by key (shared by for_settings): the base's pytest
    #: configuration (:func:`.baseconfig.ini_once`) and the run's authority
    #: (:func:`.authority.of_run`), so no review reads them again.
    held: dict[tuple[object, ...], object] = field(default_factory=dict, compare=False, repr=False)

    @property
    def in_ci(self) -> bool:
        """A CI run: the gate judges the commit, and ``diff=auto`` means the branch."""
        return self.ci is not None

    @property
    def enforced_by(self) -> str | None:
        """Why the exit status follows the plugin's records (``None``: pytest's own)."""
        if self.ci is not None:
            return self.ci
        return "--advreview-strict-exit" if self.strict_exit else None

    @property
    def gated(self) -> bool:
        """The verdict gates: CI, strict exit, or a head reviewed as data."""
        return self.enforced_by is not None or self.head is not None

    def base(self, repo: Path, explicit: str | None) -> str | None:
        """The run's base ref in ``repo`` (:func:`~.targets.resolve_base`), resolved
        once per run: the targets, the coordinator and the fixture get the same answer.

        :raises ~.targets.BaseRefError: the explicit base is not a commit git knows.
        """
        key = (repo, explicit)
        if key not in self._bases:
            from ..targets import resolve_base

            self._bases[key] = resolve_base(repo, explicit, {"GITHUB_BASE_REF": self.base_hint})
        return self._bases[key]

    def for_settings(self, settings: Settings) -> Trust:
        """This run's trust for a review with other settings (a fixture's overrides of
        ``strict_exit`` or ``head``); the environment is not read again."""
        return self.with_mode(settings.strict_exit, settings.head)

    def with_mode(self, strict_exit: bool, head: str | None) -> Trust:
        """This run's trust with that strict exit and head, sharing what it holds."""
        if (strict_exit, head) == (self.strict_exit, self.head):
            return self
        return dataclasses.replace(self, strict_exit=strict_exit, head=head)


def decide(environ: Mapping[str, str], *, strict_exit: bool, head: str | None) -> Trust:
    """The one function that decides the run's trust mode."""
    return Trust(
        ci=_ci_variable(environ),
        strict_exit=strict_exit,
        head=head,
        base_hint=environ.get("GITHUB_BASE_REF", ""),
    )


#: The run's trust, decided at configure before the settings (:func:`~.settings.resolve`,
#: :func:`.baseconfig.trust_at_configure`) and kept with the final settings' strict exit
#: and head; an xdist worker, whose settings come resolved, decides it in :func:`of_run`.
TRUST_KEY: pytest.StashKey[Trust] = pytest.StashKey()


def of_run(config: pytest.Config, settings: Settings) -> Trust:
    """The run's trust for a review with ``settings``: the one decided with the settings,
    or, on an xdist worker (its settings come resolved), decided once here."""
    found = config.stash.get(TRUST_KEY, None)
    if found is None:
        found = decide(os.environ, strict_exit=settings.strict_exit, head=settings.head)
        config.stash[TRUST_KEY] = found
    return found.for_settings(settings)
