"""Options, ini keys and environment variables, resolved into one frozen :class:`Settings`.

Every setting is declared once in :data:`.options.SPECS`, with one description shared by
its ``--advreview-*`` option and its ``advreview_*`` ini key (pytest-timeout style).
:func:`resolve` applies the order CLI > environment (``ADVREVIEW_*``) > ini > default and
validates each value where it was read, so an invalid value is reported as a
:class:`pytest.UsageError` that names its source and the allowed values, never as a
traceback.

Option values stay plain strings until :func:`resolve`: xdist serialises options, and the
resolved :class:`Settings` travel to workers as ``model_dump(mode="json")``.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from .models import OutputFormat, Severity, WireModel
from .options import (
    BY_FIELD,
    CHOICES,
    DEFAULT_ALLOW_UNTRACKED,
    DEFAULT_DECISIONS,
    DEFAULT_JOBS,
    DEFAULT_PLANS,
    PREFIX,
    SPECS,
    Invalid,
    Spec,
    add_options,
)

__all__ = [
    "CHOICES",
    "DEFAULT_ALLOW_UNTRACKED",
    "DEFAULT_PLANS",
    "Settings",
    "add_options",
    "from_config",
    "header_lines",
    "resolve",
    "runtime_hints",
]

Reasoning = Literal["low", "medium", "high", "xhigh"]
Sandbox = Literal["read-only", "workspace-write", "danger-full-access", "inherit"]
Approvals = Literal["auto_review", "user", "never"]
Isolation = Literal["none", "worktree"]
DiffMode = Literal["auto", "uncommitted", "branch", "none"]
PlanScope = Literal["changed", "all"]
GithubMode = Literal["auto", "on", "off"]
LeadName = Literal["none", "codex", "claude", "command"]


class Settings(WireModel):
    """Every resolved setting of one run, as plain serialisable values.

    Paths (``report``, ``sarif``, ``json_report``, ``against_plan``, ``decisions`` and a
    ``codex`` given as a path) are absolute, so workers and the runner's subprocesses see
    the same files whatever their working directory.  ``plans`` and ``allow_untracked``
    are globs relative to rootdir and to the repository root respectively.
    """

    enabled: bool = False
    reviewer: str = "codex"
    command: str | None = None
    model: str = "gpt-5.5"
    reasoning: Reasoning = "high"
    sandbox: Sandbox = "workspace-write"
    #: True when sandbox came from the CLI, the environment or the ini file.
    sandbox_explicit: bool = False
    approvals: Approvals = "auto_review"
    language: str = "English"
    codex: str = "codex"
    codex_config: tuple[str, ...] = ()
    timeout: float = 600.0
    max_rounds: int = 5
    fail_on: Severity = Severity.MEDIUM
    output_format: OutputFormat = OutputFormat.MARKDOWN
    isolation: Isolation = "none"
    report: str | None = None
    sarif: str | None = None
    #: ``--advreview-json``; named so because ``json`` shadows a pydantic method.
    json_report: str | None = None
    budget_tokens: int | None = None
    fresh: bool = False
    #: Seconds between progress lines in a log; 0: no progress display.
    progress: int = 30
    #: Reviews run at once in one process (``--advreview-jobs``).
    jobs: int = DEFAULT_JOBS
    diff: DiffMode = "auto"
    base: str | None = None
    against_plan: str | None = None
    #: ``--advreview-head``: the pull request's head, reviewed as data (see ``head.py``).
    head: str | None = None
    plans: tuple[str, ...] = DEFAULT_PLANS
    plan_scope: PlanScope = "changed"
    decisions: str = DEFAULT_DECISIONS
    allow_untracked: tuple[str, ...] = DEFAULT_ALLOW_UNTRACKED
    #: Globs of variable names the reviewer's tool shell may see although they look like
    #: credentials (ini ``advreview_env_allow``).
    env_allow: tuple[str, ...] = ()
    #: The built-in lead (``none``: one round per run unless a fixer hook applies fixes).
    lead: LeadName = "none"
    lead_command: str | None = None
    lead_model: str | None = None
    lead_patch: str | None = None
    #: The lead may edit the change set's files without worktree isolation.
    lead_code: bool = False
    #: GitHub Actions annotations and step summary: auto (on under GITHUB_ACTIONS=true).
    github: GithubMode = "auto"
    #: Exit with EXIT_REVIEW_ERRORS when review items errored and none failed.
    strict_exit: bool = False
    #: ``--advreview-shard=K/N``: this job reviews share K (1-based) of N.
    shard: tuple[int, int] | None = None


# -- declarations --------------------------------------------------------------------------


# -- resolution ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Found:
    """A raw value and the words that name where it came from."""

    raw: object
    where: str
    origin: Literal["cli", "env", "ini"]


class _Resolver:
    """Reads raw values in CLI > env > ini order and validates them in place."""

    def __init__(self, config: pytest.Config, environ: Mapping[str, str]) -> None:
        self.config = config
        self.environ = environ
        self.overrides = {
            item.partition("=")[0].strip(): item
            for item in (getattr(config.option, "override_ini", None) or ())
        }

    def ini_where(self, spec: Spec, raw: object, *, line: bool = False) -> str:
        """``ini advreview_x = "raw" in <inifile>``, or the ``-o`` that set it."""
        if spec.ini_key in self.overrides:
            return f"-o {self.overrides[spec.ini_key]}"
        inipath = self.config.inipath
        shown = json.dumps(raw) if isinstance(raw, str) else repr(raw)
        place = f" in {inipath}" if inipath is not None else ""
        joiner = " line " if line else " = "
        return f"ini {spec.ini_key}{joiner}{shown}{place}"

    def find(self, spec: Spec) -> _Found | None:
        if spec.cli is not None:
            raw = self.config.getoption(spec.dest)
            if spec.cli == "flag" and raw:
                return _Found(True, spec.option, "cli")
            if spec.cli != "flag" and raw is not None:
                shown = raw if isinstance(raw, str) else " ".join(raw)
                return _Found(raw, f"{spec.option}={shown}", "cli")
        if spec.env:
            env_raw = self.environ.get(spec.env_var)
            # An empty variable counts as unset: CI systems export empty values freely.
            if env_raw is not None and env_raw.strip():
                return _Found(env_raw, f"environment {spec.env_var}={env_raw}", "env")
        if spec.ini is not None:
            ini_raw = self.config.getini(spec.ini_key)
            if ini_raw is not None:
                return _Found(ini_raw, self.ini_where(spec, ini_raw), "ini")
        return None

    def value(self, spec: Spec) -> tuple[object, _Found | None]:
        """The validated value of ``spec`` and where it came from; ``None`` when unset."""
        found = self.find(spec)
        if found is None:
            return None, None
        if isinstance(found.raw, list):  # a linelist ini key: validate line by line
            items = [
                _parse_one(spec, item, self.ini_where(spec, item, line=True)) for item in found.raw
            ]
            return tuple(items), found
        return _parse_one(spec, found.raw, found.where), found


def _parse_one(spec: Spec, raw: object, where: str) -> object:
    try:
        return spec.parse(raw)
    except Invalid as exc:
        raise pytest.UsageError(f"{PREFIX}: {where} is not valid; {exc}") from None


def _absolute(base: Path, value: str) -> str:
    return str(base / Path(value).expanduser())


def resolve(config: pytest.Config, environ: Mapping[str, str] | None = None) -> Settings:
    """Resolve every setting in the order CLI > ``ADVREVIEW_*`` env > ini > default.

    :param config: the pytest config whose parser went through :func:`add_options`.
    :param environ: the environment to read (``os.environ`` when ``None``).
    :raises pytest.UsageError: a value is invalid (the message names the option, the
        environment variable or the ini key and file, and the allowed values), or the
        settings contradict each other (``--advreview-reviewer=command`` without a
        command, a missing ``--advreview-against-plan`` file).
    """
    resolver = _Resolver(config, os.environ if environ is None else environ)
    values: dict[str, object] = {"enabled": bool(config.getoption("advreview_enabled", False))}
    found: dict[str, _Found | None] = {}
    for spec in SPECS:
        if spec.field == "codex_config":
            continue
        value, found[spec.field] = resolver.value(spec)
        if value is not None:
            values["json_report" if spec.field == "json" else spec.field] = value

    # codex_config merges instead of overriding: a project keeps its model-provider lines in
    # the ini file, and a -c given for one run must not silently drop them.
    spec = BY_FIELD["codex_config"]
    merged: list[str] = []
    ini_raw = config.getini(spec.ini_key)
    if ini_raw is not None:
        assert isinstance(ini_raw, list)
        for item in ini_raw:
            merged.append(str(_parse_one(spec, item, resolver.ini_where(spec, item, line=True))))
    for item in config.getoption(spec.dest, None) or ():
        merged.append(str(_parse_one(spec, item, f"{spec.option}={item}")))
    values["codex_config"] = tuple(merged)

    values["sandbox_explicit"] = found["sandbox"] is not None
    head_var = BY_FIELD["head"].env_var
    if found["head"] is None and resolver.environ.get(head_var) is not None:
        # Elsewhere an empty variable counts as unset; here it would silently review the
        # base checkout instead of the pull request (a workflow whose expression for the
        # head's SHA came out empty), so the gate would find nothing and pass.
        raise pytest.UsageError(
            f"{PREFIX}: environment {head_var} is set but empty; set it to the pull "
            "request's head commit (e.g. ${{ github.event.pull_request.head.sha }}), or "
            "unset it to review the checkout itself"
        )
    if values.get("head") is not None:
        sandbox_from = found["sandbox"]
        if sandbox_from is None or sandbox_from.origin == "ini":
            # The reviewer reads the head's files; by default it must not be able to run
            # the head's code with write access.  Only this run's own choice (option or
            # environment) overrides that: an ini line written for same-repository runs
            # (often just to silence the workspace-write hint) must not apply to a fork.
            values["sandbox"] = "read-only"
            values["sandbox_explicit"] = False
        approvals_from = found["approvals"]
        if approvals_from is None or approvals_from.origin == "ini":
            # Measured on 0.171: under read-only with approvals=auto_review, a command that
            # asks for escalated permissions runs outside the sandbox once the auto-reviewer
            # (a model, reading the same injected text) allows it.  A fork's head gets
            # "never": escalation requests are refused.
            values["approvals"] = "never"
        if values.get("lead", "none") != "none":
            raise pytest.UsageError(
                f"{PREFIX}: --advreview-lead edits what it reviews, but with "
                "--advreview-head the head is untrusted data in a read-only checkout; drop "
                "--advreview-lead (or --advreview-head)"
            )
        if values.get("diff") == "uncommitted":
            raise pytest.UsageError(
                f"{PREFIX}: --advreview-diff=uncommitted reviews the checkout's own "
                "uncommitted changes, but with --advreview-head the change under review is "
                "BASE...REF; pass --advreview-diff=branch (or auto), or drop --advreview-head"
            )
    invocation_dir = config.invocation_params.dir
    for field in ("report", "sarif", "json_report", "lead_patch"):
        if isinstance(values.get(field), str):
            values[field] = _absolute(invocation_dir, str(values[field]))
    codex = values.get("codex")
    if isinstance(codex, str) and ("/" in codex or os.sep in codex):
        # subprocess resolves a relative executable against the child's cwd (the repo),
        # not against the directory pytest was started in.
        values["codex"] = _absolute(invocation_dir, codex)
    values["decisions"] = _absolute(
        config.rootpath, str(values.get("decisions", DEFAULT_DECISIONS))
    )
    against = values.get("against_plan")
    if isinstance(against, str):
        path = Path(_absolute(invocation_dir, against))
        if not path.is_file():
            raise pytest.UsageError(
                f"{PREFIX}: --advreview-against-plan={against}: no such file "
                f"(looked for {path}); pass the path of an existing plan"
            )
        values["against_plan"] = str(path)

    if values.get("reviewer", "codex") == "command" and not values.get("command"):
        raise pytest.UsageError(
            f"{PREFIX}: --advreview-reviewer=command needs the command to run; "
            "pass --advreview-command='my-reviewer --flag', set ADVREVIEW_COMMAND, "
            "or set ini advreview_command"
        )
    if values.get("lead") == "command" and not values.get("lead_command"):
        raise pytest.UsageError(
            f"{PREFIX}: --advreview-lead=command needs the command to run; pass "
            "--advreview-lead-command='my-agent --flag', set ADVREVIEW_LEAD_COMMAND, or set "
            "ini advreview_lead_command"
        )
    return Settings.model_validate(values)


# -- presentation and Codex arguments ------------------------------------------------------


def _show(value: str) -> str:
    return shlex.quote(value)


def header_lines(settings: Settings, *, verbose: bool = False) -> list[str]:
    """The effective settings for ``pytest_report_header``, enough to reproduce a run.

    The first line always has the reviewer, its model settings, rounds, threshold, format
    and timeout.  A second line lists the other settings: only those that differ from
    their defaults, or all of them with ``verbose``.
    """
    parts = [f"reviewer={_show(settings.reviewer)}"]
    if settings.reviewer == "command":
        parts.append(f"command={_show(settings.command or '')}")
    else:
        parts += [
            f"model={_show(settings.model)}",
            f"reasoning={settings.reasoning}",
            f"sandbox={settings.sandbox}",
            f"approvals={settings.approvals}",
        ]
    parts += [
        f"rounds<={settings.max_rounds}",
        f"fail-on>={settings.fail_on.value}",
        f"format={settings.output_format.value}",
        f"timeout={settings.timeout:g}s",
    ]
    lines = ["advreview: " + " ".join(parts)]

    defaults = Settings()
    extra: list[str] = []

    def add(name: str, value: object, default: object, shown: str | None = None) -> None:
        if verbose or value != default:
            extra.append(f"{name}={shown if shown is not None else value}")

    add("language", settings.language, defaults.language, _show(settings.language))
    if settings.reviewer != "command":
        add("codex", settings.codex, defaults.codex, _show(settings.codex))
        add(
            "codex-config",
            settings.codex_config,
            defaults.codex_config,
            ",".join(_show(c) for c in settings.codex_config),
        )
    add("isolation", settings.isolation, defaults.isolation)
    add("diff", settings.diff, defaults.diff)
    add("base", settings.base, defaults.base, _show(settings.base or "auto"))
    if settings.against_plan is not None:
        extra.append(f"against-plan={_show(settings.against_plan)}")
    add("plans", settings.plans, defaults.plans, ",".join(_show(p) for p in settings.plans))
    add("plan-scope", settings.plan_scope, defaults.plan_scope)
    add("budget-tokens", settings.budget_tokens, None, str(settings.budget_tokens or "off"))
    add("fresh", settings.fresh, False, "yes" if settings.fresh else "no")
    add("jobs", settings.jobs, defaults.jobs)
    add(
        "progress",
        settings.progress,
        defaults.progress,
        f"{settings.progress}s" if settings.progress else "off",
    )
    for name, path in (
        ("report", settings.report),
        ("sarif", settings.sarif),
        ("json", settings.json_report),
    ):
        add(name, path, None, _show(path or "off"))
    add("env-allow", settings.env_allow, (), ",".join(_show(g) for g in settings.env_allow))
    add(
        "shard",
        settings.shard,
        None,
        f"{settings.shard[0]}/{settings.shard[1]}" if settings.shard else "off",
    )
    if settings.lead != "none":
        extra.append(f"lead={settings.lead}")
        if settings.lead_command:
            extra.append(f"lead-command={_show(settings.lead_command)}")
        if settings.lead_model:
            extra.append(f"lead-model={_show(settings.lead_model)}")
        if settings.diff != "none" and not (settings.isolation == "worktree" or settings.lead_code):
            # The lead may edit code only in a private worktree or with an explicit opt-in.
            extra.append(
                "code-review: one round per run, the lead does not edit code (pass "
                "--advreview-isolation=worktree or set ini advreview_lead_code = true)"
            )
    add("lead-patch", settings.lead_patch, None, _show(settings.lead_patch or "off"))
    add("github", settings.github, defaults.github)
    add("strict-exit", settings.strict_exit, False, "yes" if settings.strict_exit else "no")
    if verbose:
        extra.append(f"decisions={_show(settings.decisions)}")
        extra.append("allow-untracked=" + ",".join(_show(g) for g in settings.allow_untracked))
    if extra:
        lines.append("advreview: " + " ".join(extra))
    return lines


_WORKSPACE_WRITE_HINT = (
    "workspace-write in effect; pass --advreview-sandbox=read-only if sensitive ignored "
    "state lives under the repo"
)
_FULL_ACCESS_WARNING = (
    "WARNING: sandbox=danger-full-access: the reviewer runs without any sandbox and can "
    "change anything this user can; use it only in a disposable environment"
)


def runtime_hints(settings: Settings) -> list[str]:
    """Hints to print once per run (bare text; the caller adds its prefix).

    The workspace-write hint of the refresh design appears only when the sandbox was not
    chosen explicitly; ``danger-full-access`` always warns.
    """
    hints: list[str] = []
    if settings.sandbox == "workspace-write" and not settings.sandbox_explicit:
        hints.append(_WORKSPACE_WRITE_HINT)
    if settings.sandbox == "danger-full-access":
        hints.append(_FULL_ACCESS_WARNING)
    return hints


_SETTINGS_KEY = pytest.StashKey["Settings"]()
#: Key of the resolved settings in an xdist worker's ``workerinput``.
WORKERINPUT_KEY = "advreview_settings"


def from_config(config: pytest.Config) -> Settings:
    """The run's settings, resolved once and kept in ``config.stash``.

    On an xdist worker they come from the controller (``workerinput``), so every worker
    reviews with exactly the settings the controller printed in the header.
    """
    cached = config.stash.get(_SETTINGS_KEY, None)
    if cached is not None:
        return cached
    workerinput = getattr(config, "workerinput", None)
    if isinstance(workerinput, dict) and WORKERINPUT_KEY in workerinput:
        settings = Settings.model_validate_json(str(workerinput[WORKERINPUT_KEY]))
    else:
        settings = resolve(config)
    config.stash[_SETTINGS_KEY] = settings
    return settings
