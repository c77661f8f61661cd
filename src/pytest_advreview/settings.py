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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest
from pydantic import model_validator

from .models import OutputFormat, Severity, WireModel
from .options import (
    BY_FIELD,
    CHOICES,
    PREFIX,
    REVIEW_TIMEOUT_FACTOR,
    SPECS,
    Invalid,
    Spec,
    add_options,
    default,
)
from .pricing import PriceError, PriceTable
from .trust import run as trust
from .trust.baseconfig import (
    BaseConfigError,
    GateConfig,
    gate_config,
    linelist,
    trust_at_configure,
)

__all__ = ["Settings", "add_options", "from_config", "header_lines", "resolve", "runtime_hints"]


class Settings(WireModel):
    """Every resolved setting of one run, as plain serialisable values.

    The defaults and allowed values are :data:`.options.SPECS`'s; :func:`resolve` checks
    every value against them.  Paths (``report``, ``sarif``, ``rdjson``, ``json_report``,
    ``against_plan``, ``decisions`` and a ``codex`` given as a path) are absolute, so
    workers and the runner's subprocesses see the same files whatever their working
    directory.  ``plans`` and ``allow_untracked`` are globs relative to rootdir and to
    the repository root respectively.
    """

    enabled: bool = False
    reviewer: str = default("reviewer")
    command: str | None = None
    model: str = default("model")
    reasoning: str = default("reasoning")
    sandbox: str = default("sandbox")
    #: True when sandbox came from the CLI, the environment or the ini file.
    sandbox_explicit: bool = False
    approvals: str = default("approvals")
    #: Why ``approvals`` is not what the options and ini say (``gate default``, ``head
    #: default``); ``None``: it is.  Shown in the header.
    approvals_why: str | None = None
    language: str = default("language")
    codex: str = default("codex")
    claude: str = default("claude")
    claude_model: str | None = None
    codex_config: tuple[str, ...] = default("codex_config")
    timeout: float = default("timeout")
    connect_timeout: float = default("connect_timeout")
    #: ``None``: :data:`~.options.REVIEW_TIMEOUT_FACTOR` times ``timeout``
    #: (:attr:`review_limit`).
    review_timeout: float | None = None
    max_rounds: int = default("max_rounds")
    #: First-round reviews of each target (docs/confirmation.md).
    samples: int = default("samples")
    #: The reviewer of each sample (empty: every sample uses ``reviewer``).
    sample_reviewers: tuple[str, ...] = default("sample_reviewers")
    #: Verify each blocking finding (docs/confirmation.md).
    verify: bool = default("verify")
    #: Severities a refutation takes below fail-on.
    verify_demotes: tuple[str, ...] = default("verify_demotes")
    #: The verifier's backend (``None``: the reviewer's).
    verifier: str | None = None
    fail_on: Severity = Severity(default("fail_on"))
    #: ``block`` or ``warn``: whether a pre-existing finding of the code item fails it
    #: (:func:`.hunks.pre_existing`; :func:`.outcome.decide` applies it).
    pre_existing: str = default("pre_existing")
    output_format: OutputFormat = OutputFormat(default("output_format"))
    isolation: str = default("isolation")
    report: str | None = None
    sarif: str | None = None
    rdjson: str | None = None
    #: ``--advreview-json``; named so because ``json`` shadows a pydantic method.
    json_report: str | None = None
    budget_tokens: int | None = None
    budget_money: float | None = None
    budget_scope: str = default("budget_scope")
    max_change_files: int | None = None
    max_change_lines: int | None = None
    #: ``advreview_prices`` lines, ``MODEL: input=X cached_input=Y output=Z`` each
    #: (:mod:`.pricing` reads them).
    prices: tuple[str, ...] = default("prices")
    fresh: bool = default("fresh")
    #: Seconds between progress lines in a log; 0: no progress display.
    progress: int = default("progress")
    #: ``auto`` or a number (:func:`~.parallel.jobs_for` decides what ``auto`` gives).
    jobs: int | Literal["auto"] = default("jobs")
    diff: str = default("diff")
    base: str | None = None
    against_plan: str | None = None
    #: ``--advreview-head``: the pull request's head, reviewed as data (see ``workspace/head.py``).
    head: str | None = None
    plans: tuple[str, ...] = default("plans")
    plan_scope: str = default("plan_scope")
    decisions: str = default("decisions")
    #: ``--advreview-commands``: the Action's file of vetted pull-request commands.
    commands: str | None = None
    #: ``--advreview-pull-request``: the pull request the run reviews (``None``: none).
    pull_request: int | None = None
    allow_untracked: tuple[str, ...] = default("allow_untracked")
    env_allow: tuple[str, ...] = default("env_allow")
    #: ``advreview_exclude`` lines, added to :data:`~.trust.pathrules.DEFAULT_EXCLUDE`; under a
    #: gate the base commit's lines count instead (:mod:`.trust.pathrules`).
    exclude: tuple[str, ...] = default("exclude")
    #: ``advreview_path_instructions`` lines, ``GLOB: instruction`` each.
    path_instructions: tuple[str, ...] = default("path_instructions")
    lead: str = default("lead")
    lead_command: str | None = None
    lead_model: str | None = None
    lead_patch: str | None = None
    lead_code: bool = default("lead_code")
    github: str = default("github")
    strict_exit: bool = default("strict_exit")
    #: ``--advreview-shard=K/N``: this job reviews share K (1-based) of N.
    shard: tuple[int, int] | None = None
    #: Under a gate: the base's configuration the settings were read from (with the
    #: command line and the environment); ``None``: the run's own (docs/safety.md).
    gate_where: str | None = None
    #: Under a gate: what the checkout's own configuration gives and the base's does not,
    #: not used (a header line each).
    gate_ignored: tuple[str, ...] = ()
    #: ``--advreview-eval``: the corpus folder (absolute) or ``builtin`` (docs/eval.md).
    eval: str | None = None
    eval_epochs: int = default("eval_epochs")
    eval_report: str | None = None
    eval_baseline: str | None = None
    eval_transcripts: str | None = None
    eval_rescore: bool = default("eval_rescore")
    eval_min_recall: float | None = None
    eval_max_false_block: float | None = None
    eval_max_flip: float | None = None

    @property
    def reviewer_model(self) -> str | None:
        """The model the reviewer reviews with, as priced (:meth:`model_of`)."""
        return self.model_of(self.reviewer)

    def model_of(self, backend: str) -> str | None:
        """The model ``backend`` (the reviewer's, a sample's, the verifier's) reviews with,
        as priced: ``claude``'s ``claude_model`` (``None`` when Claude Code chooses),
        every other backend's ``model``."""
        return self.claude_model if backend == "claude" else self.model

    @property
    def review_limit(self) -> float:
        """Seconds one review may take as a whole (``review_timeout`` or its default)."""
        if self.review_timeout is not None:
            return self.review_timeout
        return REVIEW_TIMEOUT_FACTOR * self.timeout

    @model_validator(mode="after")
    def _known_choices(self) -> Settings:
        # Settings built without resolve() (an xdist worker, a fixture override) hold
        # only the values the options allow, as resolve() does: this is a gate's sandbox.
        for field, allowed in CHOICES.items():
            value = getattr(self, field)
            if str(getattr(value, "value", value)) not in allowed:
                raise ValueError(f"{field}={value!r}: choose one of: {', '.join(allowed)}")
        return self


# -- resolution ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Found:
    """A raw value and the words that name where it came from."""

    raw: object
    where: str
    origin: Literal["cli", "env", "ini"]


class _Resolver:
    """Reads raw values in CLI > env > ini order and validates them in place.

    Under a gate (:func:`~.baseconfig.gate_config`) "CLI" is the command line and
    ``PYTEST_ADDOPTS`` only, and "ini" the base commit's configuration: nothing of the
    checkout's own pytest configuration (keys, ``addopts``, ``-o`` in ``addopts``) counts.
    """

    def __init__(
        self, config: pytest.Config, environ: Mapping[str, str], gate: GateConfig | None = None
    ) -> None:
        self.config = config
        self.environ = environ
        self.gate = gate
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
        if self.gate is not None:
            return self._find_under_gate(spec, self.gate)
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

    def _find_under_gate(self, spec: Spec, gate: GateConfig) -> _Found | None:
        """:meth:`find` under a gate: the command line, the environment, the base's file."""
        if spec.cli is not None:
            given = gate.option(spec.option)
            if given:
                raw, ours = given[-1]
                origin: Literal["cli", "ini"] = "cli" if ours else "ini"
                if spec.cli == "flag":
                    where = spec.option if ours else f"{spec.option} in addopts of {gate.where}"
                    return _Found(True, where, origin)
                shown = f"{spec.option}={raw}"
                return _Found(raw, shown if ours else f"{shown} in addopts of {gate.where}", origin)
        if spec.env:
            env_raw = self.environ.get(spec.env_var)
            if env_raw is not None and env_raw.strip():
                return _Found(env_raw, f"environment {spec.env_var}={env_raw}", "env")
        if spec.ini is not None:
            in_base = gate.ini(spec.ini_key)
            if in_base is not None:
                value, where = in_base
                given_raw: object = linelist(value) if spec.ini == "linelist" else value
                return _Found(given_raw, where, "ini")
        return None

    def _ini_lines(self, spec: Spec) -> tuple[object, ...]:
        """An ``append`` setting's ini lines (under a gate the base's)."""
        if self.gate is None:
            return self.lines(spec, self.config.getini(spec.ini_key) or ())
        found = self.gate.ini(spec.ini_key)
        if found is None:
            return ()
        return self.lines(spec, linelist(found[0]), found[1])

    def value(self, spec: Spec) -> tuple[object, _Found | None]:
        """The validated value of ``spec`` and where it came from; ``None`` when unset."""
        if spec.cli == "append":
            # Merges instead of overriding: a project keeps its model-provider lines in the
            # ini file, and a -c given for one run must not silently drop them.
            if self.gate is None:
                cli = self.config.getoption(spec.dest) or ()
            else:
                cli = tuple(v or "" for v, _ours in self.gate.option(spec.option))
            given = self._ini_lines(spec)
            return given + tuple(
                _parse_one(spec, item, f"{spec.option}={item}") for item in cli
            ), None
        found = self.find(spec)
        if found is None:
            return None, None
        if isinstance(found.raw, list):  # a linelist ini key: validate line by line
            return self.lines(spec, found.raw, found.where), found
        return _parse_one(spec, found.raw, found.where), found

    def lines(
        self, spec: Spec, items: Iterable[object], where: str | None = None
    ) -> tuple[object, ...]:
        """Each line of a linelist value, validated; ``where``: the gate's words for the
        value (:meth:`~.baseconfig.GateConfig.ini`), else the run's ini file."""
        return tuple(_parse_one(spec, item, self._line_where(spec, item, where)) for item in items)

    def _line_where(self, spec: Spec, item: object, where: str | None) -> str:
        if where is None or self.gate is None:
            return self.ini_where(spec, item, line=True)
        if where.startswith("ini "):  # the base's file
            return f"ini {spec.ini_key} line {item!r} in {self.gate.where}"
        return f"{where} line {item!r}"


def _parse_one(spec: Spec, raw: object, where: str) -> object:
    try:
        return spec.parse(raw)
    except Invalid as exc:
        raise pytest.UsageError(f"{PREFIX}: {where} is not valid; {exc}") from None


def _absolute(base: Path, value: str) -> str:
    return str(base / Path(value).expanduser())


def _approvals_never(values: dict[str, object], found: dict[str, _Found | None], why: str) -> None:
    """Approvals ``never`` unless this run's own option or environment chose otherwise.

    Measured on 0.171: with ``auto_review``, a command that asks for escalated
    permissions runs outside the sandbox once Codex's auto-reviewer (a model, reading the
    same injected text) allows it; one read every process's environment, the state key
    and the API key with it.  Where a verdict gates something (a fork's head, CI, strict
    exit), escalation requests are refused instead.  An ini line does not count: the
    repository under review writes it.
    """
    approvals_from = found["approvals"]
    if approvals_from is None or approvals_from.origin == "ini":
        values["approvals"] = "never"
        values["approvals_why"] = why


def resolve(config: pytest.Config, environ: Mapping[str, str] | None = None) -> Settings:
    """Resolve every setting in the order CLI > ``ADVREVIEW_*`` env > ini > default.

    :param environ: the environment to read (``os.environ`` when ``None``).
    :raises pytest.UsageError: a value is invalid (the message names the option, the
        environment variable or the ini key and file, and the allowed values), or the
        settings contradict each other (``--advreview-reviewer=command`` without a
        command, a missing ``--advreview-against-plan`` file).
    """
    environ = os.environ if environ is None else environ
    # The run's trust first, from the workflow's view (never the checkout's ini): the
    # gate's configuration and every later reader use it and the base it resolves.
    run_trust = config.stash[trust.TRUST_KEY] = trust_at_configure(config, environ)
    try:
        gate = gate_config(config, environ, run_trust)
    except BaseConfigError as exc:
        raise pytest.UsageError(f"{PREFIX}: {exc}") from None
    resolver = _Resolver(config, environ, gate)
    invocation_dir = config.invocation_params.dir
    values: dict[str, object] = {"enabled": bool(config.getoption("advreview_enabled", False))}
    found: dict[str, _Found | None] = {}
    for spec in (spec for spec in SPECS if spec.setting):
        value, found[spec.field] = resolver.value(spec)
        if spec.path and isinstance(value, str) and value not in spec.words:
            # An ini line names a path of the project (rootdir), as ``decisions`` does.
            source = found[spec.field]
            from_ini = source is not None and source.origin == "ini"
            value = _absolute(config.rootpath if from_ini else invocation_dir, value)
        if value is not None:
            values["json_report" if spec.field == "json" else spec.field] = value

    values["sandbox_explicit"] = found["sandbox"] is not None
    if gate is not None:
        values["gate_ignored"] = gate.ignored
        values["gate_where"] = gate.where
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
        _approvals_never(values, found, "head default")
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
    elif run_trust.with_mode(values.get("strict_exit") is True, None).enforced_by is not None:
        _approvals_never(values, found, "gate default")
    for name in ("codex", "claude"):
        executable = values.get(name)
        if isinstance(executable, str) and ("/" in executable or os.sep in executable):
            # subprocess resolves a relative executable against the child's cwd (the
            # repo), not against the directory pytest was started in.
            values[name] = _absolute(invocation_dir, executable)
    values["decisions"] = _absolute(
        config.rootpath, str(values.get("decisions", default("decisions")))
    )
    against = found["against_plan"]
    if against is not None and not Path(str(values["against_plan"])).is_file():
        raise pytest.UsageError(
            f"{PREFIX}: --advreview-against-plan={against.raw}: no such file "
            f"(looked for {values['against_plan']}); pass the path of an existing plan"
        )
    _check_eval(values)
    _check_samples(values)
    for choice, needed, example in (
        ("reviewer", "command", "my-reviewer"),
        ("lead", "lead_command", "my-agent"),
    ):
        if values.get(choice) == "command" and not values.get(needed):
            spec = BY_FIELD[needed]
            raise pytest.UsageError(
                f"{PREFIX}: {BY_FIELD[choice].option}=command needs the command to run; pass "
                f"{spec.option}='{example} --flag', set {spec.env_var}, or set ini {spec.ini_key}"
            )
    settings = Settings.model_validate(values)
    _check_prices(settings)
    # The ini may turn strict exit on outside a gate: the run keeps its final mode.
    config.stash[trust.TRUST_KEY] = run_trust.for_settings(settings)
    return settings


def _check_samples(values: Mapping[str, object]) -> None:
    """The sample reviewers name one reviewer per sample, the reviewer's first (its thread
    is the one later rounds resume)."""
    names = values.get("sample_reviewers") or ()
    if not names:
        return
    assert isinstance(names, tuple)
    count = int(str(values.get("samples", default("samples"))))
    option, key = BY_FIELD["sample_reviewers"].option, BY_FIELD["sample_reviewers"].ini_key
    if len(names) != count:
        raise pytest.UsageError(
            f"{PREFIX}: {option} (ini {key}) names {len(names)} reviewers for "
            f"{count} sample{'s' if count != 1 else ''}; name one per sample or set "
            f"{BY_FIELD['samples'].option}={len(names)}"
        )
    reviewer = values.get("reviewer", default("reviewer"))
    if names[0] != reviewer:
        raise pytest.UsageError(
            f"{PREFIX}: {option} (ini {key}) starts with {names[0]!r}, but sample 1 is the "
            f"reviewer ({reviewer!r}), whose thread later rounds resume; list {reviewer} "
            f"first or set {BY_FIELD['reviewer'].option}={names[0]}"
        )


def _check_prices(settings: Settings) -> None:
    """Refuse a price table that repeats a model or leaves out one the run uses."""
    used: list[tuple[str, str]] = []
    if settings.reviewer == "codex":
        used.append(("the reviewer (--advreview-model)", settings.model))
    if settings.reviewer == "claude" and settings.claude_model is not None:
        used.append(("the reviewer (--advreview-claude-model)", settings.claude_model))
    lead_model = settings.lead_model or (settings.model if settings.lead == "codex" else None)
    if settings.lead != "none" and lead_model is not None:
        used.append(("the lead (--advreview-lead-model)", lead_model))
    try:
        table = PriceTable.of(settings.prices)
        table.require(used)
    except PriceError as exc:
        raise pytest.UsageError(f"{PREFIX}: {exc}") from None
    if settings.budget_money is not None and not table:
        spec = BY_FIELD["budget_money"]
        raise pytest.UsageError(
            f"{PREFIX}: {spec.option} ({spec.ini_key}) counts money, but ini advreview_prices "
            "is not set, so no review has a price; add a line per model (MODEL: input=X "
            "cached_input=Y output=Z) or use --advreview-budget-tokens"
        )


#: Options of a review run that an eval run has no use for, and what it offers instead.
_NOT_IN_EVAL = {
    "head": "an eval reviews its corpus, not a pull request; drop --advreview-head",
    "shard": "drop --advreview-shard (use -n or --advreview-jobs to run cases side by side)",
    "against_plan": "a code-vs-plan case names its plan in case.toml; drop the option",
    "sarif": "use --advreview-eval-report (JSON) or --advreview-report (markdown)",
    "rdjson": "use --advreview-eval-report (JSON) or --advreview-report (markdown)",
    "json_report": "use --advreview-eval-report (JSON) or --advreview-report (markdown)",
}
#: Options of an eval run only.
_EVAL_ONLY = ("eval_report", "eval_baseline", "eval_rescore")


def _check_eval(values: dict[str, object]) -> None:
    """Refuse an option the run would silently ignore: a review option in an eval run,
    or an eval option without ``--advreview-eval``."""
    if values.get("eval") is not None:
        for field, fix in _NOT_IN_EVAL.items():
            if values.get(field) not in (None, False):
                option = BY_FIELD["json" if field == "json_report" else field].option
                raise pytest.UsageError(
                    f"{PREFIX}: {option} does nothing in an eval run (--advreview-eval); {fix}"
                )
        return
    for field in _EVAL_ONLY:
        if values.get(field) not in (None, False):
            raise pytest.UsageError(
                f"{PREFIX}: {BY_FIELD[field].option} belongs to an eval run; add "
                "--advreview-eval=PATH (or builtin), or drop it"
            )


#: Not on the header's second line: on the first one, on a line of their own (head), or
#: rootdir-relative defaults not worth the room (decisions, allow_untracked).
_NOT_LISTED = {
    *("reviewer", "command", "model", "reasoning", "sandbox", "approvals", "approvals_why"),
    *("timeout", "connect_timeout", "review_timeout"),
    *("max_rounds", "fail_on", "output_format", "head", "lead_code", "decisions"),
    "allow_untracked",
    # Their own header line names where they came from and what they left out.
    *("exclude", "path_instructions"),
}


def header_lines(settings: Settings, *, verbose: bool = False) -> list[str]:
    """The effective settings for ``pytest_report_header``, enough to reproduce a run.

    The first line always has the reviewer, its model settings, rounds, threshold, format
    and timeout (one line: it is what a run is reproduced from).  The next lines list the
    other settings that differ from their defaults, wrapped between settings at
    :data:`_HEADER_WIDTH` characters; a list longer than :data:`_LISTED_CHARS`
    (``--advreview-codex-config``: a provider's whole configuration) is counted there, and
    listed whole with ``verbose`` (``-v``).
    """
    q = shlex.quote
    parts = [f"reviewer={q(settings.reviewer)}"]
    if settings.reviewer == "command":
        parts.append(f"command={q(settings.command or '')}")
    elif settings.reviewer == "claude":
        parts.append(f"claude={q(settings.claude)} model={q(settings.claude_model or 'default')}")
    else:
        parts.append(f"model={q(settings.model)} reasoning={settings.reasoning}")
        why = f" ({settings.approvals_why})" if settings.approvals_why else ""
        parts.append(f"sandbox={settings.sandbox} approvals={settings.approvals}{why}")
    parts.append(
        f"rounds<={settings.max_rounds} fail-on>={settings.fail_on.value} "
        f"format={settings.output_format.value} timeout={settings.timeout:g}s"
    )
    lines = ["advreview: " + " ".join(parts)]

    hidden = set(_NOT_LISTED)
    if settings.reviewer in ("command", "claude"):
        hidden |= {"codex", "codex_config"}
    if settings.reviewer == "claude":
        hidden |= {"claude", "claude_model"}
    if settings.lead == "none":
        hidden |= {"lead_command", "lead_model"}
    extra: list[str] = []
    for spec in (spec for spec in SPECS if spec.setting and spec.field not in hidden):
        value = getattr(settings, "json_report" if spec.field == "json" else spec.field)
        if value == spec.default:
            continue
        if spec.field == "progress":
            shown = f"{value}s" if value else "off"
        elif spec.field == "shard":
            shown = f"{value[0]}/{value[1]}"
        elif isinstance(value, tuple):
            shown = ",".join(q(item) for item in value)
            if len(shown) > _LISTED_CHARS and not verbose:
                shown = f"<{len(value)} values, -v lists them>"
        else:
            shown = "yes" if value is True else q(str(value))
        extra.append(f"{spec.field.replace('_', '-')}={shown}")
    # The lead may edit code only in a private worktree (auto gives one to a lead) or
    # with an explicit opt-in.
    code_locked = settings.isolation == "none" and not settings.lead_code
    if settings.lead != "none" and settings.diff != "none" and code_locked:
        extra.append(
            "code-review: one round per run, the lead does not edit code (pass "
            "--advreview-isolation=worktree or set ini advreview_lead_code = true)"
        )
    # What the checkout's own configuration said and the gate did not use, one per line.
    ignored = [
        f"advreview: not used under a gate (the settings come from the command line, the "
        f"environment and {settings.gate_where}): the checkout's {item}"
        for item in settings.gate_ignored
    ]
    return lines + _wrapped(extra) + ignored


#: The widest header line the settings make (a line of a terminal of normal width).
_HEADER_WIDTH = 100


def _wrapped(parts: list[str]) -> list[str]:
    """``parts`` as header lines of at most :data:`_HEADER_WIDTH` characters where they
    fit: a part is never split (one longer than that is a line of its own)."""
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + 1 + len(part) <= _HEADER_WIDTH:
            lines[-1] += " " + part
        else:
            lines.append(f"advreview: {part}")
    return lines


#: Longest list setting the header shows without ``-v`` (longer ones are counted).
_LISTED_CHARS = 60

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

    The workspace-write hint (ignored files under the repository are writable) appears
    only when the reviewer works in the repository (``--advreview-isolation=none``) and
    the sandbox was not chosen explicitly: whoever chose it knows.
    ``danger-full-access`` always warns.
    """
    if settings.sandbox == "danger-full-access":
        return [_FULL_ACCESS_WARNING]
    in_place = settings.isolation == "none" and not settings.sandbox_explicit
    return [_WORKSPACE_WRITE_HINT] if settings.sandbox == "workspace-write" and in_place else []


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
