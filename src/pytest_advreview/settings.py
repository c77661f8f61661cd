"""Options, ini keys and environment variables, resolved into one frozen :class:`Settings`.

Every setting is declared once in :data:`_SPECS` with one description shared by its
``--advreview-*`` option and its ``advreview_*`` ini key (pytest-timeout style).
:func:`resolve` applies the order CLI > environment (``ADVREVIEW_*``) > ini > default and
validates each value where it was read, so an invalid value is reported as a
:class:`pytest.UsageError` that names its source and the allowed values, never as a
traceback.

Option values stay plain strings until :func:`resolve`: xdist serialises options, and the
resolved :class:`Settings` travel to workers as ``model_dump(mode="json")``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from .constants import ENV_PREFIX, EXIT_REVIEW_ERRORS
from .models import OutputFormat, Severity, WireModel

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

_PREFIX = "pytest-advreview"

#: Allowed values of every choice setting, each with the line ``--help`` prints for it.
#: The help listings are generated from this dict, and so are the validation messages.
CHOICES: Mapping[str, Mapping[str, str]] = {
    "reasoning": {
        "low": "Fastest, shallowest review.",
        "medium": "Balanced.",
        "high": "Default: deep review at moderate cost.",
        "xhigh": "Deepest and slowest review.",
    },
    "sandbox": {
        "read-only": "The reviewer reads but cannot write (no tests, no builds).",
        "workspace-write": "Default: writes inside the repository, so tests and builds run.",
        "danger-full-access": "No sandbox at all; prints a warning.",
        "inherit": "Omit -s and use the sandbox of your Codex config.",
    },
    "approvals": {
        "auto_review": "Default: Codex's auto-reviewer answers approval requests.",
        "user": "A person answers approval requests (can hang a headless run).",
        "never": "Boundary crossings fail instead of asking.",
    },
    "fail_on": {
        "critical": "Only critical findings fail an item.",
        "high": "High and critical findings fail an item.",
        "medium": "Default: every finding fails an item.",
    },
    "output_format": {
        "markdown": "Default: the markdown review contract.",
        "json": "Strict JSON checked against a schema (--output-schema).",
    },
    "isolation": {
        "none": "Default: the reviewer works in the repository itself.",
        "worktree": "Each review runs in a private git worktree mirroring the work tree.",
    },
    "diff": {
        "auto": "Default: uncommitted changes if any, else the branch against the base.",
        "uncommitted": "Staged, unstaged and untracked changes only.",
        "branch": "BASE...HEAD only.",
        "none": "No code review item.",
    },
    "plan_scope": {
        "changed": "Default: plans added or modified against the base, plus uncommitted ones.",
        "all": "Every plan that matches advreview_plans.",
    },
    "github": {
        "auto": "Default: on when the environment has GITHUB_ACTIONS=true.",
        "on": "Always print annotations and append to $GITHUB_STEP_SUMMARY when it is set.",
        "off": "Never.",
    },
}

#: Default of ini ``advreview_plans``: globs relative to rootdir, pathlib semantics.
DEFAULT_PLANS: tuple[str, ...] = ("docs/**/plans/**/*.md", "docs/**/specs/**/*.md")
#: Default of ini ``advreview_allow_untracked``: new untracked files that are not a mutation.
DEFAULT_ALLOW_UNTRACKED: tuple[str, ...] = (".pytest_cache/**", "**/__pycache__/**")
_DEFAULT_DECISIONS = ".advreview/decisions.toml"

Reasoning = Literal["low", "medium", "high", "xhigh"]
Sandbox = Literal["read-only", "workspace-write", "danger-full-access", "inherit"]
Approvals = Literal["auto_review", "user", "never"]
Isolation = Literal["none", "worktree"]
DiffMode = Literal["auto", "uncommitted", "branch", "none"]
PlanScope = Literal["changed", "all"]
GithubMode = Literal["auto", "on", "off"]


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
    diff: DiffMode = "auto"
    base: str | None = None
    against_plan: str | None = None
    plans: tuple[str, ...] = DEFAULT_PLANS
    plan_scope: PlanScope = "changed"
    decisions: str = _DEFAULT_DECISIONS
    allow_untracked: tuple[str, ...] = DEFAULT_ALLOW_UNTRACKED
    #: GitHub Actions annotations and step summary: auto (on under GITHUB_ACTIONS=true).
    github: GithubMode = "auto"
    #: Exit with EXIT_REVIEW_ERRORS when review items errored and none failed.
    strict_exit: bool = False

    def settings_hash(self) -> str:
        """sha256 over the settings that change what a review says.

        A cached verdict is reused only under the same hash; the caller mixes in the
        prompt version.
        """
        key = {
            "model": self.model,
            "reasoning": self.reasoning,
            "sandbox": self.sandbox,
            "output_format": self.output_format.value,
        }
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


# -- declarations --------------------------------------------------------------------------


class _Invalid(ValueError):
    """A value failed validation; the text says what was expected."""


_Parser = Callable[[object], object]
_Kind = Literal["store", "append", "flag"]


@dataclass(frozen=True)
class _Spec:
    """One setting: its field, description, parser and where it can be given."""

    field: str
    desc: str
    parse: _Parser
    metavar: str | None = None
    cli: _Kind | None = "store"
    ini: Literal["string", "linelist"] | None = "string"
    env: bool = True

    @property
    def option(self) -> str:
        return "--advreview-" + self.field.replace("_", "-")

    @property
    def dest(self) -> str:
        return "advreview_" + self.field

    @property
    def ini_key(self) -> str:
        return "advreview_" + self.field

    @property
    def env_var(self) -> str:
        return ENV_PREFIX + self.field.upper()


def _choices_help(field: str) -> str:
    return "\n".join(f"{value}: {text}" for value, text in CHOICES[field].items())


def _choice(field: str) -> _Parser:
    allowed = CHOICES[field]

    def parse(raw: object) -> object:
        value = _text(raw).strip()
        if value not in allowed:
            raise _Invalid("choose one of: " + ", ".join(allowed))
        return value

    return parse


def _text(raw: object) -> str:
    if isinstance(raw, (str, int, float)) and not isinstance(raw, bool):
        return str(raw)
    raise _Invalid("expected a string")


def _non_empty(what: str) -> _Parser:
    def parse(raw: object) -> object:
        value = _text(raw).strip()
        if not value:
            raise _Invalid(f"expected {what}, not an empty value")
        return value

    return parse


def _positive_float(raw: object) -> object:
    try:
        value = float(_text(raw).strip().removesuffix("s"))
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise _Invalid("expected a number of seconds greater than 0, e.g. 600")
    return value


def _int_range(low: int, high: int | None) -> _Parser:
    expected = (
        f"expected a whole number from {low} to {high}"
        if high is not None
        else f"expected a whole number of at least {low}"
    )

    def parse(raw: object) -> object:
        try:
            value = int(_text(raw).strip().replace("_", ""))
        except ValueError:
            raise _Invalid(expected) from None
        if value < low or (high is not None and value > high):
            raise _Invalid(expected)
        return value

    return parse


_budget_int = _int_range(1, None)


def _budget(raw: object) -> object:
    if isinstance(raw, str) and raw.strip().lower() in {"off", "none"}:
        return None
    try:
        return _budget_int(raw)
    except _Invalid:
        raise _Invalid("expected a whole number of tokens of at least 1, or off") from None


_REVIEWER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")


def _reviewer(raw: object) -> object:
    value = _text(raw).strip()
    if not _REVIEWER_NAME.match(value):
        raise _Invalid("expected codex, command or the name of a reviewer a plugin provides")
    return value


def _command(raw: object) -> object:
    value = _text(raw).strip()
    try:
        argv = shlex.split(value)
    except ValueError as exc:
        raise _Invalid(f"expected a shell-quoted command line ({exc})") from None
    if not argv:
        raise _Invalid("expected a command line, not an empty value")
    return value


_CONFIG_KEY = re.compile(r"[^\s=]+\Z")


def _codex_config_item(raw: object) -> object:
    value = _text(raw).strip()
    key, sep, _ = value.partition("=")
    if not sep or not _CONFIG_KEY.match(key.strip()):
        raise _Invalid("expected KEY=VALUE with a non-empty key, e.g. model_provider=azure")
    return value


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _bool(raw: object) -> object:
    if isinstance(raw, bool):
        return raw
    value = _text(raw).strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise _Invalid("expected one of: 1, true, yes, on, 0, false, no, off")


def _glob(raw: object) -> object:
    value = _text(raw).strip()
    if not value:
        raise _Invalid("expected a glob, not an empty value")
    return value


_MODEL_DESC = "Codex model of the reviewer, passed as -m (default: gpt-5.5)"
_REASONING_DESC = (
    "Reasoning effort of the reviewer model, passed as -c model_reasoning_effort=.\n"
    + _choices_help("reasoning")
)
_SANDBOX_DESC = "Sandbox of the Codex reviewer, passed as -s.\n" + _choices_help("sandbox")
_APPROVALS_DESC = (
    "Who answers the reviewer's approval requests (-c approval_policy, "
    "-c approvals_reviewer).\n" + _choices_help("approvals")
)
_LANGUAGE_DESC = (
    "Language the reviewer writes its review in; verdict and severity literals stay "
    "English (default: English)"
)
_CODEX_DESC = (
    "Codex executable, a name on PATH or a path (default: codex). "
    "Write --advreview-codex=PATH with '=', or pytest takes the path for a test path."
)
_CODEX_CONFIG_DESC = (
    "Extra KEY=VALUE passed as -c KEY=VALUE to every codex exec and resume, e.g. a custom "
    "model provider. Repeatable; command-line values come after the ini lines."
)
_TIMEOUT_DESC = (
    "Wall-clock seconds per reviewer attempt; then its process group is killed (default: 600)"
)
_MAX_ROUNDS_DESC = "Most review rounds per item, 1 to 20 (default: 5)"
_FAIL_ON_DESC = (
    "Lowest finding severity that fails an item; findings below it pass with a warning.\n"
    + _choices_help("fail_on")
)
_OUTPUT_FORMAT_DESC = "How the reviewer answers.\n" + _choices_help("output_format")
_ISOLATION_DESC = "Where the reviewer runs.\n" + _choices_help("isolation")
_REPORT_DESC = "Write a markdown report of every review to this path"
_SARIF_DESC = "Write the findings as a SARIF 2.1.0 log to this path"
_JSON_DESC = "Write the review results as JSON to this path"
_GITHUB_DESC = (
    "GitHub Actions workflow-command annotations for the findings and the markdown report "
    "appended to $GITHUB_STEP_SUMMARY.\n" + _choices_help("github")
)
_STRICT_EXIT_DESC = (
    f"Exit with status {EXIT_REVIEW_ERRORS} instead of 1 when review items errored (the "
    "reviewer could not run) and nothing failed, so CI can tell 'the gate could not run' "
    "from 'the gate found problems'"
)
_BUDGET_DESC = (
    "Stop starting reviews once the run's token total passes this many tokens (default: off)"
)
_FRESH_DESC = "Ignore persisted review state and cached verdicts"
_REVIEWER_DESC = (
    "Reviewer backend: codex (default), command (any CLI that reads the prompt on stdin "
    "and prints the review), or a name a plugin provides"
)
_COMMAND_DESC = (
    "Command line of the command reviewer, shell-quoted; the prompt arrives on stdin "
    "and the review is read from stdout"
)
_DIFF_DESC = "Which code change the code-review item reviews.\n" + _choices_help("diff")
_BASE_DESC = (
    "Base of branch diffs and of plan_scope = changed (default: origin/$GITHUB_BASE_REF, "
    "else origin/HEAD, main, master)"
)
_AGAINST_PLAN_DESC = "Review the code change against this implementation plan"
_PLANS_DESC = (
    "Globs of plan files relative to rootdir, one per line; ** matches zero or more "
    "folders (default: docs/**/plans/**/*.md and docs/**/specs/**/*.md)"
)
_PLAN_SCOPE_DESC = "Which matching plans are reviewed.\n" + _choices_help("plan_scope")
_DECISIONS_DESC = (
    "TOML file of accept / re-scope / reject decisions on findings, relative to rootdir "
    "(default: .advreview/decisions.toml)"
)
_ALLOW_UNTRACKED_DESC = (
    "Globs of new untracked files that are not a workspace mutation, one per line "
    "(default: .pytest_cache/** and **/__pycache__/**)"
)

_SPECS: tuple[_Spec, ...] = (
    _Spec("reviewer", _REVIEWER_DESC, _reviewer, "NAME"),
    _Spec("command", _COMMAND_DESC, _command, "CMD"),
    _Spec("model", _MODEL_DESC, _non_empty("a model name"), "NAME"),
    _Spec("reasoning", _REASONING_DESC, _choice("reasoning"), "EFFORT"),
    _Spec("sandbox", _SANDBOX_DESC, _choice("sandbox"), "MODE"),
    _Spec("approvals", _APPROVALS_DESC, _choice("approvals"), "MODE"),
    _Spec("language", _LANGUAGE_DESC, _non_empty("a language name"), "LANGUAGE"),
    _Spec("codex", _CODEX_DESC, _non_empty("a path or command name"), "PATH"),
    _Spec(
        "codex_config",
        _CODEX_CONFIG_DESC,
        _codex_config_item,
        "KEY=VALUE",
        cli="append",
        ini="linelist",
        env=False,
    ),
    _Spec("timeout", _TIMEOUT_DESC, _positive_float, "SECONDS"),
    _Spec("max_rounds", _MAX_ROUNDS_DESC, _int_range(1, 20), "N"),
    _Spec("fail_on", _FAIL_ON_DESC, _choice("fail_on"), "SEVERITY"),
    _Spec("output_format", _OUTPUT_FORMAT_DESC, _choice("output_format"), "FORMAT"),
    _Spec("isolation", _ISOLATION_DESC, _choice("isolation"), "MODE"),
    _Spec("budget_tokens", _BUDGET_DESC, _budget, "TOKENS"),
    _Spec("report", _REPORT_DESC, _non_empty("a path"), "PATH", ini=None),
    _Spec("sarif", _SARIF_DESC, _non_empty("a path"), "PATH", ini=None),
    _Spec("json", _JSON_DESC, _non_empty("a path"), "PATH", ini=None),
    _Spec("github", _GITHUB_DESC, _choice("github"), "MODE"),
    _Spec("strict_exit", _STRICT_EXIT_DESC, _bool, cli="flag"),
    _Spec("fresh", _FRESH_DESC, _bool, cli="flag", ini=None),
    _Spec("diff", _DIFF_DESC, _choice("diff"), "MODE"),
    _Spec("base", _BASE_DESC, _non_empty("a branch, tag or commit"), "REF"),
    _Spec("against_plan", _AGAINST_PLAN_DESC, _non_empty("a path"), "PATH", ini=None, env=False),
    _Spec("plans", _PLANS_DESC, _glob, cli=None, ini="linelist", env=False),
    _Spec("plan_scope", _PLAN_SCOPE_DESC, _choice("plan_scope"), cli=None, env=False),
    _Spec("decisions", _DECISIONS_DESC, _non_empty("a path"), cli=None, env=False),
    _Spec("allow_untracked", _ALLOW_UNTRACKED_DESC, _glob, cli=None, ini="linelist", env=False),
)
_BY_FIELD = {spec.field: spec for spec in _SPECS}


def add_options(parser: pytest.Parser) -> None:
    """Register ``--adversarial-review``, every ``--advreview-*`` option and ini key.

    Value options default to ``None`` so that "not given" is visible to :func:`resolve`;
    ini keys default to ``None`` for the same reason (the real defaults live in
    :class:`Settings`).
    """
    group = parser.getgroup("advreview", "adversarial reviews (pytest-advreview)")
    group.addoption(
        "--adversarial-review",
        action="store_true",
        dest="advreview_enabled",
        default=False,
        help="Review changed plans and the current code change as test items",
    )
    for spec in _SPECS:
        if spec.cli == "flag":
            group.addoption(
                spec.option, action="store_true", dest=spec.dest, default=False, help=spec.desc
            )
        elif spec.cli is not None:
            group.addoption(
                spec.option,
                action=spec.cli,
                dest=spec.dest,
                default=None,
                metavar=spec.metavar,
                help=spec.desc,
            )
        if spec.ini is not None:
            parser.addini(spec.ini_key, spec.desc, type=spec.ini, default=None)


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

    def ini_where(self, spec: _Spec, raw: object, *, line: bool = False) -> str:
        """``ini advreview_x = "raw" in <inifile>``, or the ``-o`` that set it."""
        if spec.ini_key in self.overrides:
            return f"-o {self.overrides[spec.ini_key]}"
        inipath = self.config.inipath
        shown = json.dumps(raw) if isinstance(raw, str) else repr(raw)
        place = f" in {inipath}" if inipath is not None else ""
        joiner = " line " if line else " = "
        return f"ini {spec.ini_key}{joiner}{shown}{place}"

    def find(self, spec: _Spec) -> _Found | None:
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

    def value(self, spec: _Spec) -> tuple[object, _Found | None]:
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


def _parse_one(spec: _Spec, raw: object, where: str) -> object:
    try:
        return spec.parse(raw)
    except _Invalid as exc:
        raise pytest.UsageError(f"{_PREFIX}: {where} is not valid; {exc}") from None


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
    for spec in _SPECS:
        if spec.field == "codex_config":
            continue
        value, found[spec.field] = resolver.value(spec)
        if value is not None:
            values["json_report" if spec.field == "json" else spec.field] = value

    # codex_config merges instead of overriding: a project keeps its model-provider lines in
    # the ini file, and a -c given for one run must not silently drop them.
    spec = _BY_FIELD["codex_config"]
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
    invocation_dir = config.invocation_params.dir
    for field in ("report", "sarif", "json_report"):
        if isinstance(values.get(field), str):
            values[field] = _absolute(invocation_dir, str(values[field]))
    codex = values.get("codex")
    if isinstance(codex, str) and ("/" in codex or os.sep in codex):
        # subprocess resolves a relative executable against the child's cwd (the repo),
        # not against the directory pytest was started in.
        values["codex"] = _absolute(invocation_dir, codex)
    values["decisions"] = _absolute(
        config.rootpath, str(values.get("decisions", _DEFAULT_DECISIONS))
    )
    against = values.get("against_plan")
    if isinstance(against, str):
        path = Path(_absolute(invocation_dir, against))
        if not path.is_file():
            raise pytest.UsageError(
                f"{_PREFIX}: --advreview-against-plan={against}: no such file "
                f"(looked for {path}); pass the path of an existing plan"
            )
        values["against_plan"] = str(path)

    if values.get("reviewer", "codex") == "command" and not values.get("command"):
        raise pytest.UsageError(
            f"{_PREFIX}: --advreview-reviewer=command needs the command to run; "
            "pass --advreview-command='my-reviewer --flag', set ADVREVIEW_COMMAND, "
            "or set ini advreview_command"
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
    for name, path in (
        ("report", settings.report),
        ("sarif", settings.sarif),
        ("json", settings.json_report),
    ):
        add(name, path, None, _show(path or "off"))
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
