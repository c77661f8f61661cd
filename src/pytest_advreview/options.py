"""Every ``--advreview-*`` option, ``advreview_*`` ini key and ``ADVREVIEW_*`` variable.

Each setting is declared once in :data:`SPECS`, with one description shared by its option
and its ini key (pytest-timeout style) and the parser that validates a raw value.
:mod:`.settings` resolves them into the frozen :class:`~.settings.Settings`.

This module is what every pytest start imports (``pytest --help`` lists the options even
without ``--adversarial-review``), so it needs nothing beyond the standard library and
pytest: the pydantic models load only when a review run or the doctor is asked for.
The doctor's two rows are here too, but its own entry point (``doctorplugin.py``)
registers them: :func:`add_options` leaves them out.
"""

from __future__ import annotations

import inspect
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

from .constants import ENV_PREFIX, EXIT_REVIEW_ERRORS

__all__ = [
    "AUTO_JOBS",
    "BY_FIELD",
    "CHOICES",
    "DEFAULT_ALLOW_UNTRACKED",
    "DEFAULT_DECISIONS",
    "DEFAULT_JOBS",
    "DEFAULT_PLANS",
    "DOCTOR_SPECS",
    "PREFIX",
    "PRICE_KEYS",
    "SPECS",
    "Invalid",
    "Spec",
    "add_options",
    "add_specs",
    "check_spaced_values",
    "default",
    "price_line",
]

PREFIX = "pytest-advreview"

#: Allowed values of every choice setting, each with the line ``--help`` prints for it.
#: The help listings are generated from this dict, and so are the validation messages
#: and the defaults (the value whose line starts with "Default:").
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
    "pre_existing": {
        "block": "Default: a finding outside every changed hunk fails like any other.",
        "warn": (
            "A finding placed outside every changed hunk of the code change is reported "
            "apart and passes with a warning."
        ),
    },
    "output_format": {
        "markdown": "Default: the markdown review contract.",
        "json": "Strict JSON checked against a schema (--output-schema).",
    },
    "isolation": {
        "auto": (
            "Default: worktree for each review that may write (not with sandbox read-only "
            "and no lead), in a git repository with a commit; else none."
        ),
        "worktree": "Each review runs in a private git worktree mirroring the work tree.",
        "none": "The reviewer works in the repository itself.",
    },
    "diff": {
        "auto": (
            "Default: uncommitted changes if any, else the branch against the base; "
            "under CI (CI or GITHUB_ACTIONS true) the branch only."
        ),
        "uncommitted": "Staged, unstaged and untracked changes only.",
        "branch": "BASE...HEAD only.",
        "none": "No code review item.",
    },
    "plan_scope": {
        "changed": "Default: plans added or modified against the base, plus uncommitted ones.",
        "all": "Every plan that matches advreview_plans.",
    },
    "lead": {
        "none": "Default: no lead; one round per run unless a fixer hook applies fixes.",
        "codex": "A second codex exec (workspace-write, its own thread) evaluates and fixes.",
        "claude": "Claude Code (claude -p) with only the read and edit tools.",
        "command": "--advreview-lead-command: prompt on stdin, decisions JSON on stdout.",
    },
    "budget_scope": {
        "run": "Default: the budgets count this run's reviews (every xdist worker together).",
        "pull-request": (
            "The budgets count every run of the pull request, kept with the rounds' state."
        ),
    },
    "github": {
        "auto": "Default: on when the environment has GITHUB_ACTIONS=true.",
        "on": "Always print annotations and append to $GITHUB_STEP_SUMMARY when it is set.",
        "off": "Never.",
    },
}

#: Default of ini ``advreview_plans``: globs relative to rootdir, pathlib semantics.
DEFAULT_PLANS = ("docs/**/plans/**/*.md", "docs/**/specs/**/*.md")
#: Default of ini ``advreview_allow_untracked``: new untracked files that are not a mutation.
DEFAULT_ALLOW_UNTRACKED = (".pytest_cache/**", "**/__pycache__/**")
DEFAULT_DECISIONS = ".advreview/decisions.toml"


class Invalid(ValueError):
    """A value failed validation; the text says what was expected."""


_Parser = Callable[[object], object]
_Kind = Literal["store", "append", "flag"]


@dataclass(frozen=True)
class Spec:
    """One setting: its field, description, parser, default and where it can be given."""

    field: str
    desc: str
    parse: _Parser
    metavar: str | None = None
    cli: _Kind | None = "store"
    ini: Literal["string", "linelist"] | None = "string"
    env: bool = True
    #: The value when nothing sets it; a choice setting's comes from :data:`CHOICES`.
    default: object = None
    #: A path relative to the directory pytest was started in (made absolute).
    path: bool = False
    #: False for a switch of this pytest run that is not a review setting (the doctor).
    setting: bool = True
    #: Registered by the doctor's entry point (``doctorplugin.py``), not by ``plugin.py``.
    doctor: bool = False
    #: Values of a ``path`` setting that are words, not paths (never made absolute).
    words: tuple[str, ...] = ()

    @property
    def option(self) -> str:
        return "--advreview-" + self.field.replace("_", "-")

    @property
    def dest(self) -> str:
        return "advreview_" + self.field

    #: The ini key has the option's dest for its name.
    ini_key = dest

    @property
    def env_var(self) -> str:
        return ENV_PREFIX + self.field.upper()


def _pick(field: str, intro: str, metavar: str | None = None, **where: Any) -> Spec:
    """A choice setting: its help lists :data:`CHOICES`, its parser accepts only those."""
    allowed = CHOICES[field]

    def parse(raw: object) -> object:
        value = _text(raw).strip()
        if value not in allowed:
            raise Invalid("choose one of: " + ", ".join(allowed))
        return value

    lines = "\n".join(f"{value}: {text}" for value, text in allowed.items())
    first = next(value for value, text in allowed.items() if text.startswith("Default:"))
    return Spec(field, f"{intro}\n{lines}", parse, metavar, default=first, **where)


def _text(raw: object) -> str:
    if isinstance(raw, (str, int, float)) and not isinstance(raw, bool):
        return str(raw)
    raise Invalid("expected a string")


def _non_empty(what: str) -> _Parser:
    def parse(raw: object) -> object:
        value = _text(raw).strip()
        if not value:
            raise Invalid(f"expected {what}, not an empty value")
        return value

    return parse


#: Longest allowed ``timeout``: one day.  A review has no use for more, and the process
#: wait turns seconds into a C ``int`` of milliseconds (``poll``), which overflows past
#: about 24.8 days: 1e12 passed a "greater than 0" check and then crashed every item.
MAX_TIMEOUT_S = 86_400
#: ``review_timeout`` when unset: this many attempts' worth (an attempt, its retry and
#: one fallback).
REVIEW_TIMEOUT_FACTOR = 3
#: Largest allowed ``budget_tokens``: far above any run, and an exact integer in every
#: JSON reader (a JavaScript dashboard reads the JSON report as doubles).
MAX_BUDGET_TOKENS = 10**12
#: Largest allowed ``max_rounds``.
MAX_ROUNDS = 20
#: Most reviews at once in one process (``--advreview-jobs``).
MAX_JOBS = 32
#: Default of ``--advreview-jobs``; docs/performance.md "Performance" says how it was chosen.
DEFAULT_JOBS = "auto"
#: Most reviews at once under ``--advreview-jobs=auto`` (about the Codex starts that fit
#: on 2 cores in one wave: docs/performance.md).
AUTO_JOBS = 4
#: Longest interval between progress lines in a log: an hour.
MAX_PROGRESS_S = 3600


def _decimal(
    expected: str, ok: Callable[[float], bool], trim: Callable[[str], str] = str.strip
) -> _Parser:
    """A number ``ok`` accepts, read from ``trim`` of the text (``ok`` must refuse nan:
    a range check such as ``0 < value`` does, as nan compares false with everything)."""

    def parse(raw: object) -> object:
        try:
            value = float(trim(_text(raw)))
        except ValueError:  # Invalid too: not a string
            raise Invalid(expected) from None
        if not ok(value):
            raise Invalid(expected)
        return value

    return parse


_seconds = _decimal(
    f"expected a number of seconds greater than 0 and at most {MAX_TIMEOUT_S} (one day), e.g. 600",
    lambda value: 0 < value <= MAX_TIMEOUT_S,
    lambda text: text.strip().removesuffix("s"),
)


def _whole(
    low: int, high: int, unit: str = "", off: tuple[set[str], object] | None = None
) -> _Parser:
    """A whole number from ``low`` to ``high``: of ``unit`` (``seconds`` also takes ``30s``),
    or, with ``off``, one of its words, which stand for its value."""
    of = f" of {unit}" if unit else ""
    word = "" if off is None else "off" if "off" in off[0] else min(off[0])
    expected = f"expected a whole number{of} from {low} to {high}" + (
        f", or {word}" if word else ""
    )
    suffix = "s" if unit == "seconds" else ""

    def parse(raw: object) -> object:
        # ValueError also covers a number too long for int() (sys.int_info's digit limit).
        try:
            text = _text(raw).strip()
            if off is not None and text.lower() in off[0]:
                return off[1]
            value = int(text.removesuffix(suffix).replace("_", ""))
        except (Invalid, ValueError):
            raise Invalid(expected) from None
        if not low <= value <= high:
            raise Invalid(expected)
        return value

    return parse


_REVIEWER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")


def _reviewer(raw: object) -> object:
    value = _text(raw).strip()
    if not _REVIEWER_NAME.match(value):
        raise Invalid("expected codex, claude, command or the name of a reviewer a plugin provides")
    return value


def _command(raw: object) -> object:
    value = _text(raw).strip()
    try:
        argv = shlex.split(value)
    except ValueError as exc:
        raise Invalid(f"expected a shell-quoted command line ({exc})") from None
    if not argv:
        raise Invalid("expected a command line, not an empty value")
    return value


_CONFIG_KEY = re.compile(r"[^\s=]+\Z")
#: Codex settings the runner sets itself to keep credentials out of the reviewer's tool
#: shell (runner/environment.py); a ``-c`` that changes them would undo that silently.
RESERVED_CODEX_KEYS = frozenset(
    {
        "shell_environment_policy",
        "shell_environment_policy.inherit",
        "shell_environment_policy.ignore_default_excludes",
        "shell_environment_policy.exclude",
        "shell_environment_policy.include_only",
        "shell_environment_policy.filters",
        "shell_environment_policy.experimental_use_profile",
        "allow_login_shell",
    }
)


#: Codex settings the runner sets itself so that the reviewer writes only its workspace
#: and a private temporary folder (``runner/codex.py``, ``containment_args``): a ``-c``
#: that changed them would give the reviewer ``/tmp``, ``$TMPDIR`` or other folders back.
CONTAINMENT_CODEX_KEYS = frozenset(
    {
        "sandbox_workspace_write",
        "sandbox_workspace_write.exclude_slash_tmp",
        "sandbox_workspace_write.exclude_tmpdir_env_var",
        "sandbox_workspace_write.writable_roots",
    }
)


def _refuse_containment_key(bare: str) -> None:
    if bare in CONTAINMENT_CODEX_KEYS or bare.startswith("sandbox_workspace_write.writable_roots."):
        raise Invalid(
            f"{bare} is set by pytest-advreview so that the reviewer can write only the "
            "workspace and a private temporary folder (never /tmp, $TMPDIR or the folders "
            "of the gate's own code); drop this -c pair (a reviewer that needs more room "
            "runs in a disposable environment with --advreview-sandbox=danger-full-access)"
        )


def _codex_config_item(raw: object) -> object:
    value = _text(raw).strip()
    key, sep, _ = value.partition("=")
    if not sep or not _CONFIG_KEY.match(key.strip()):
        raise Invalid("expected KEY=VALUE with a non-empty key, e.g. model_provider=azure")
    bare = key.strip().replace('"', "").replace("'", "")
    _refuse_containment_key(bare)
    if bare in RESERVED_CODEX_KEYS or bare.startswith("shell_environment_policy.filters."):
        raise Invalid(
            f"{bare} is set by pytest-advreview so that no credential reaches the "
            "reviewer's tool shell; let more variables through with the ini key "
            "advreview_env_allow (one glob per line)"
        )
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
    raise Invalid("expected one of: 1, true, yes, on, 0, false, no, off")


_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*\Z")


def _shard(raw: object) -> object:
    match = _SHARD.match(_text(raw))
    if match is None:
        raise Invalid("expected K/N, this job's share K of N jobs, e.g. 2/3")
    index, total = int(match.group(1)), int(match.group(2))
    if not 1 <= index <= total:
        raise Invalid(f"expected K/N with 1 <= K <= N, e.g. 1/{max(total, 1)}")
    return (index, total)


_MODEL_DESC = "Codex model of the reviewer, passed as -m (default: gpt-5.5)"
_REASONING_DESC = "Reasoning effort of the reviewer model, passed as -c model_reasoning_effort=."
_APPROVALS_DESC = (
    "Who answers the reviewer's approval requests (-c approval_policy, -c approvals_reviewer)."
)
_LANGUAGE_DESC = (
    "Language the reviewer writes its review in; verdict and severity literals stay "
    "English (default: English)"
)
_CODEX_DESC = "Codex executable, a name on PATH or a path (default: codex)"
_CODEX_CONFIG_DESC = (
    "Extra KEY=VALUE passed as -c KEY=VALUE to every codex exec and resume, e.g. a custom "
    "model provider. Repeatable; command-line values come after the ini lines."
)
_TIMEOUT_DESC = (
    "Wall-clock seconds per reviewer attempt, at most 86400; then its process group is "
    "killed (default: 600)"
)
_CONNECT_TIMEOUT_DESC = (
    "Seconds a reviewer attempt may go on failing to connect to its model before it is "
    "an error naming the endpoint and the cause, never retried (default: 30)"
)
_REVIEW_TIMEOUT_DESC = (
    "Wall-clock seconds for one review as a whole: its attempts, their retry and the "
    "fresh-review fallback together (default: 3 x the per-attempt timeout)"
)
_MAX_ROUNDS_DESC = "Most review rounds per item, 1 to 20 (default: 5)"
_FAIL_ON_DESC = "Lowest finding severity that fails an item; findings below it pass with a warning."
_PRE_EXISTING_DESC = (
    "What a finding of the code item placed outside every changed hunk of the diff does "
    "(pre-existing, decided from the diff alone; never for plans)"
)
_REPORT_DESC = "Write a markdown report of every review to this path"
_SARIF_DESC = "Write the findings as a SARIF 2.1.0 log to this path"
_RDJSON_DESC = (
    "Write the findings in reviewdog's Diagnostic Format (rdjson) to this path, for "
    "`reviewdog -f=rdjson`"
)
_JSON_DESC = "Write the review results as JSON to this path"
_GITHUB_DESC = (
    "GitHub Actions workflow-command annotations for the findings and the markdown report "
    "appended to $GITHUB_STEP_SUMMARY."
)
_STRICT_EXIT_DESC = (
    f"Exit with status {EXIT_REVIEW_ERRORS} instead of 1 when review items errored (the "
    "reviewer could not run) and nothing failed, so CI can tell 'the gate could not run' "
    "from 'the gate found problems'; and, as always under CI, fail the run when a review "
    "item was skipped, deselected, dropped or its report changed by anything but the plugin"
)
_PRICES_DESC = (
    "Prices of the models, one MODEL: input=X cached_input=Y output=Z per line, in money per "
    "million tokens (e.g. gpt-5.5: input=1.25 cached_input=0.125 output=10). Turns the tokens "
    "the reviewer and the lead report into money per round, item and run in every report. No "
    "built-in prices (they change); without this key the reports show tokens only"
)
_BUDGET_DESC = (
    "Stop starting reviews once the run's token total passes this many tokens, 1 to 10^12 "
    "(default: off)"
)
_BUDGET_MONEY_DESC = (
    "Stop starting reviews once the money spent passes this amount, priced with "
    "advreview_prices (which must be set), e.g. 2.50 (default: off)"
)
_BUDGET_SCOPE_DESC = "What the token and money budgets count."
_MAX_CHANGE_FILES_DESC = (
    "Fail the code-review item, without a review, when the change has more files than "
    "this, 1 to 10^6 (default: off)"
)
_MAX_CHANGE_LINES_DESC = (
    "Fail the code-review item, without a review, when the change adds and removes more "
    "lines than this, 1 to 10^9 (default: off)"
)
_FRESH_DESC = "Ignore persisted review state and cached verdicts"
_JOBS_DESC = (
    f"Reviews run at once in this pytest process, 1 to {MAX_JOBS}: the next selected review "
    "items start ahead of their turn in threads and report in order. auto (default): up to "
    f"{AUTO_JOBS}, never more than the review items, and 1 where the reviews would write "
    "one folder together (--advreview-isolation=none) or on an xdist worker"
)
_PROGRESS_DESC = (
    "Progress of the reviews in flight (node id, round, elapsed time, the reviewer's latest "
    "activity): on a terminal one block updated in place, in a log (output not a terminal) "
    f"a line per review every this many seconds, 1 to {MAX_PROGRESS_S}; 0 or off: none. "
    "Quiet under -q (default: 30)"
)
_REVIEWER_DESC = (
    "Reviewer backend: codex (default), claude (Claude Code with read and search tools "
    "only), command (any CLI that reads the prompt on stdin and prints the review), or a "
    "name a plugin provides"
)
_CLAUDE_DESC = (
    "Claude Code executable, a name on PATH or a path, for --advreview-reviewer=claude and "
    "--advreview-lead=claude (default: claude)"
)
_CLAUDE_MODEL_DESC = (
    "Model of the claude reviewer, passed as --model (default: Claude Code's own; name one "
    "to price its tokens with advreview_prices)"
)
_COMMAND_DESC = (
    "Command line of the command reviewer, shell-quoted; the prompt arrives on stdin "
    "and the review is read from stdout"
)
_SHARD_DESC = (
    "Review only share K of N (K/N, 1-based): review items whose key hashes to share K "
    "run, the others are deselected. Give each of N CI jobs its own K; every item lands in "
    "exactly one share whatever the others collect. Other tests are not sharded."
)
_BASE_DESC = (
    "Base of branch diffs and of plan_scope = changed (default: origin/$GITHUB_BASE_REF "
    "when that is set, else origin/HEAD, main, master); a named base missing from the "
    "clone is an error"
)
_AGAINST_PLAN_DESC = "Review the code change against this implementation plan"
_HEAD_DESC = (
    "Review a pull request's head as data: the plans and the change BASE...REF are read "
    "from REF's git objects into a private read-only checkout, while the gate (settings, "
    "conftest files, plugins, decisions) stays the checked-out base's; nothing of REF is "
    "imported or executed. Sandbox read-only and approvals never, unless this run's "
    "--advreview-sandbox / --advreview-approvals or their ADVREVIEW_* variables say "
    "otherwise (the ini keys do not apply). Command line or ADVREVIEW_HEAD only: no ini "
    "key, so a repository cannot set or unset it"
)
_PLANS_DESC = (
    "Globs of plan files relative to rootdir, one per line; ** matches zero or more "
    "folders (default: docs/**/plans/**/*.md and docs/**/specs/**/*.md)"
)
_DECISIONS_DESC = (
    "TOML file of accept / re-scope / reject decisions on findings, relative to rootdir "
    "(default: .advreview/decisions.toml); under a gate the operator's decisions are read "
    "from the base commit's copy"
)
_COMMANDS_DESC = (
    "JSON file of the pull request's /advreview commands that count (waive, decide, "
    "rounds), written by the Action after it checked each commenter's permission "
    "(docs/deciding.md). Command line only: no ini key or variable, refused from addopts, "
    "so a repository cannot point it at a file of its own"
)
_PULL_REQUEST_DESC = (
    "The number of the pull request this run reviews (the Action passes it): a waiver or "
    "grant of rounds in the decisions file holds only for the pull request it names, or "
    'with scope = "repository" for every run (docs/deciding.md). Command line or '
    "environment only"
)
_ENV_ALLOW_DESC = (
    "Globs of environment variable names (case-insensitive) that the reviewer's tool shell "
    "may see besides HOME, LOGNAME, PATH, SHELL, USER, TMPDIR, TEMP and TMP, one per line "
    "(default: none; the header names what they pass)"
)
_ALLOW_UNTRACKED_DESC = (
    "Globs of new untracked files that are not a workspace mutation, one per line "
    "(default: .pytest_cache/** and **/__pycache__/**)"
)

_EXCLUDE_DESC = (
    "Globs of files left out of the code change, relative to the repository's top level, "
    "one per line; a glob without / matches the name in any folder, !GLOB keeps what an "
    "earlier line left out. Added to the defaults (lockfiles, minified and source-map "
    "files). Under a gate read from the base commit's configuration"
)
_PATH_INSTRUCTIONS_DESC = (
    "Review instructions for paths, one GLOB: instruction per line (e.g. migrations/**: "
    "check that every step is reversible), sent in the prompt for the changed files they "
    "match. Under a gate read from the base commit's configuration"
)

_LEAD_DESC = (
    "Built-in lead that evaluates every finding of a REVISE review, applies the accepted "
    "fixes to the plan and asks for re-review, up to the round limit (passing one is an "
    "explicit request for autonomous work)."
)
_LEAD_COMMAND_DESC = (
    "Command line of the command lead (prompt on stdin, decisions JSON on stdout), or the "
    "claude executable for --advreview-lead=claude (default: --advreview-claude)"
)
_LEAD_MODEL_DESC = "Model of the lead (default: the reviewer's model for codex, claude's own)"
_LEAD_PATCH_DESC = "Write the combined diff of every edit the lead made to this path"
_LEAD_CODE_DESC = (
    "Let the lead edit the files of the change set for the code-review item without "
    "--advreview-isolation=worktree (default: false)"
)

_ONLY_DESC = (
    "With --adversarial-review: collect the review items only. No Python test module or "
    "package __init__.py is imported (a CI gate that reviews a pull request need not run "
    "its code)."
)
_DOCTOR_DESC = (
    "Check that the Codex CLI selected by --advreview-codex still honours the plugin's "
    "contract (offline, in seconds), print one row per check and exit. Run it after every "
    "Codex upgrade."
)
_DOCTOR_JSON_DESC = "With --advreview-doctor: also write the result table as JSON to PATH"
_DOCTOR_ONLINE_DESC = (
    "With --advreview-doctor: also ask the built-in OpenAI provider, and fail when no "
    "provider is configured (a provider with a base_url is asked in any case)"
)

_PATH = _non_empty("a path")
_GLOB = _non_empty("a glob")
_budget = _whole(1, MAX_BUDGET_TOKENS, "tokens", ({"off", "none"}, None))
_max_files = _whole(1, 10**6, "files", ({"off", "none"}, None))
_max_lines = _whole(1, 10**9, "lines", ({"off", "none"}, None))
#: Largest allowed ``budget_money``.
MAX_BUDGET_MONEY = 1e9


_money = _decimal(
    f"expected an amount of money greater than 0 and at most {MAX_BUDGET_MONEY:g}, or off",
    lambda value: 0 < value <= MAX_BUDGET_MONEY,
    lambda text: text.strip().removeprefix("$"),
)


def _budget_money(raw: object) -> object:
    return None if _text(raw).strip().removeprefix("$").lower() in ("off", "none") else _money(raw)


_progress = _whole(0, MAX_PROGRESS_S, "seconds", ({"off"}, 0))
_pull_request = _whole(1, 10**12, off=({"none"}, None))


def _globs(field: str, desc: str, default: tuple[str, ...] = (), parse: _Parser = _GLOB) -> Spec:
    """An ini key of globs, one per line."""
    return Spec(field, desc, parse, cli=None, ini="linelist", env=False, default=default)


def _env_glob(raw: object) -> object:
    """One ``advreview_env_allow`` glob: it must name variables, not all of them."""
    value = _text(raw).strip()
    if not value:
        raise Invalid("expected a glob of variable names, not an empty value")
    if not value.strip("*?"):
        # The tool shell's environment is an allow-list; a glob that matches every
        # name would turn it back into "everything", credentials included.
        raise Invalid(
            f"{value!r} matches every variable, credentials included; list the names "
            "the reviewer's tests need (e.g. NPM_TOKEN, MY_APP_*)"
        )
    if "=" in value or any(c.isspace() or not c.isprintable() for c in value):
        raise Invalid(
            f"{value!r} cannot match a variable name (no '=', space or control "
            "character); give the name only, e.g. NPM_TOKEN"
        )
    return value


def _exclude_line(raw: object) -> object:
    """One ``advreview_exclude`` line: a glob, or ``!GLOB`` (keep what it matches)."""
    value = _text(raw).strip()
    if not value.removeprefix("!").strip():
        raise Invalid("expected a glob (or !GLOB to keep what it matches), e.g. docs/generated/**")
    return value


def _instruction_line(raw: object) -> object:
    """One ``advreview_path_instructions`` line: ``GLOB: instruction``."""
    value = _text(raw).strip()
    glob, colon, text = value.partition(":")
    if not colon or not glob.strip() or not text.strip():
        raise Invalid(
            "expected GLOB: instruction, e.g. migrations/**: check that every step is reversible"
        )
    return f"{glob.strip()}: {text.strip()}"


#: The columns of one ``advreview_prices`` line, in the order they are written back.
PRICE_KEYS = ("input", "cached_input", "output")
#: Highest price per million tokens a line may give: far above any model's list price.
MAX_PRICE = 1_000_000.0
_PRICE_EXAMPLE = "gpt-5.5: input=1.25 cached_input=0.125 output=10"


def price_line(raw: object) -> tuple[str, dict[str, float]]:
    """One ``advreview_prices`` line as its model and its prices per million tokens.

    :raises Invalid: no model, a missing, repeated, unknown or impossible price; the text
        shows a correct line.
    """
    words = _text(raw).split()
    fix = f"write MODEL: input=X cached_input=Y output=Z, e.g. {_PRICE_EXAMPLE}"
    if not words or "=" in words[0]:
        raise Invalid(f"expected a model name first; {fix}")
    model = words[0].removesuffix(":")
    if not model:
        raise Invalid(f"expected a model name first; {fix}")
    prices: dict[str, float] = {}
    for word in words[1:]:
        key, sep, text = word.partition("=")
        if not sep or key not in PRICE_KEYS:
            raise Invalid(f"{word!r} is not a price of {', '.join(PRICE_KEYS)}; {fix}")
        if key in prices:
            raise Invalid(f"{key} is given twice for {model}; {fix}")
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        # ``not 0 <= value`` also rejects nan.
        if not 0 <= value <= MAX_PRICE:
            raise Invalid(
                f"{key}={text!r} for {model} is not a price per million tokens from 0 to "
                f"{MAX_PRICE:g}; {fix}"
            )
        prices[key] = value
    missing = [key for key in PRICE_KEYS if key not in prices]
    if missing:
        raise Invalid(f"{model} has no {' and no '.join(missing)} price; {fix}")
    return model, prices


def _price(raw: object) -> object:
    model, prices = price_line(raw)
    return f"{model}: " + " ".join(f"{key}={prices[key]!r}" for key in PRICE_KEYS)


def _doctor(
    field: str, desc: str, parse: _Parser, metavar: str | None = None, cli: _Kind = "store"
) -> Spec:
    """A switch of ``pytest --advreview-doctor``: command line only, registered by the
    doctor's own plugin."""
    return Spec(
        field, desc, parse, metavar, cli=cli, ini=None, env=False, setting=False, doctor=True
    )


#: Most epochs of ``--advreview-eval-epochs``.
MAX_EPOCHS = 20


_fraction = _decimal("expected a fraction from 0 to 1, e.g. 0.8", lambda value: 0 <= value <= 1)


_EVAL_DESC = (
    "Measure the reviewer instead of gating: review each case of the corpus PATH (a "
    "folder with one folder per case), or of the bundled corpus with builtin, as test "
    "items, and report recall, precision and false blocks (docs/eval.md)"
)
_EVAL_EPOCHS_DESC = "Reviews of each eval case (default 1); two or more measure the flip rate"
_EVAL_REPORT_DESC = "Write the eval's aggregate report as JSON to PATH"
_EVAL_BASELINE_DESC = (
    "Compare the eval with an earlier --advreview-eval-report file, side by side with deltas"
)
_EVAL_TRANSCRIPTS_DESC = (
    "Folder of the eval's kept transcripts (default: advreview-eval in pytest's cache)"
)
_EVAL_RESCORE_DESC = (
    "Score the eval from kept transcripts only; a case without one is an error, no reviewer "
    "is asked"
)
_SAMPLES_DESC = (
    "Independent first-round reviews of each target (default 1); their findings are merged, "
    "any sample's blocker blocks and any sample that cannot run is an error "
    "(docs/confirmation.md)"
)
_SAMPLE_REVIEWERS_DESC = (
    "The reviewer of each sample, comma-separated, one name per sample (default: every "
    "sample uses --advreview-reviewer); the first is the reviewer, whose thread later "
    "rounds resume"
)
MAX_SAMPLES = 8


def _names(raw: object) -> object:
    """A comma-separated list of reviewer names (``codex,command``)."""
    names = tuple(part.strip() for part in _text(raw).split(","))
    if not names or not all(_REVIEWER_NAME.match(name) for name in names):
        raise Invalid("expected reviewer names separated by commas, e.g. codex,codex")
    if len(names) > MAX_SAMPLES:
        raise Invalid(f"expected at most {MAX_SAMPLES} names, one per sample")
    return names


_VERIFY_DESC = (
    "Check each blocking finding in a separate read-only verifier turn that must answer "
    "CONFIRMED or REFUTED with its evidence; a refuted finding of a severity in "
    "advreview_verify_demotes is shown as refuted, below fail-on (docs/confirmation.md)"
)
_VERIFY_DEMOTES_DESC = (
    "Severities a refutation may take below fail-on, comma-separated (default high,medium; "
    "critical only when listed; none: no demotion)"
)
_VERIFIER_DESC = "The verifier's backend (default: the reviewer's)"
_SEVERITY_NAMES = ("critical", "high", "medium")


def _severities(raw: object) -> object:
    text = _text(raw).strip().lower()
    if text == "none":
        return ()
    names = tuple(part.strip() for part in text.split(","))
    if not all(name in _SEVERITY_NAMES for name in names):
        raise Invalid("expected severities separated by commas (critical, high, medium), or none")
    return tuple(dict.fromkeys(names))


_EVAL_MIN_RECALL_DESC = "Fail an eval run whose recall is below this fraction (0-1)"
_EVAL_MAX_FALSE_BLOCK_DESC = (
    "Fail an eval run whose false-block rate on clean cases is above this fraction (0-1)"
)
_EVAL_MAX_FLIP_DESC = "Fail an eval run whose flip rate across epochs is above this fraction (0-1)"


SPECS: tuple[Spec, ...] = (
    Spec("reviewer", _REVIEWER_DESC, _reviewer, "NAME", default="codex"),
    Spec("command", _COMMAND_DESC, _command, "CMD"),
    Spec("model", _MODEL_DESC, _non_empty("a model name"), "NAME", default="gpt-5.5"),
    _pick("reasoning", _REASONING_DESC, "EFFORT"),
    _pick("sandbox", "Sandbox of the Codex reviewer, passed as -s.", "MODE"),
    _pick("approvals", _APPROVALS_DESC, "MODE"),
    Spec("language", _LANGUAGE_DESC, _non_empty("a language name"), "LANGUAGE", default="English"),
    Spec("codex", _CODEX_DESC, _non_empty("a path or command name"), "PATH", default="codex"),
    Spec("claude", _CLAUDE_DESC, _non_empty("a path or command name"), "PATH", default="claude"),
    Spec("claude_model", _CLAUDE_MODEL_DESC, _non_empty("a model name"), "NAME"),
    Spec(
        "codex_config",
        _CODEX_CONFIG_DESC,
        _codex_config_item,
        "KEY=VALUE",
        cli="append",
        ini="linelist",
        env=False,
        default=(),
    ),
    Spec("timeout", _TIMEOUT_DESC, _seconds, "SECONDS", default=600.0),
    Spec("connect_timeout", _CONNECT_TIMEOUT_DESC, _seconds, "SECONDS", default=30.0),
    Spec("review_timeout", _REVIEW_TIMEOUT_DESC, _seconds, "SECONDS"),
    Spec("max_rounds", _MAX_ROUNDS_DESC, _whole(1, MAX_ROUNDS), "N", default=5),
    Spec("samples", _SAMPLES_DESC, _whole(1, MAX_SAMPLES), "K", default=1),
    Spec("sample_reviewers", _SAMPLE_REVIEWERS_DESC, _names, "NAMES", default=()),
    Spec("verify", _VERIFY_DESC, _bool, cli="flag", default=False),
    Spec(
        "verify_demotes",
        _VERIFY_DEMOTES_DESC,
        _severities,
        "SEVERITIES",
        default=("high", "medium"),
    ),
    Spec("verifier", _VERIFIER_DESC, _reviewer, "NAME"),
    _pick("fail_on", _FAIL_ON_DESC, "SEVERITY"),
    _pick("pre_existing", _PRE_EXISTING_DESC, "MODE"),
    _pick("output_format", "How the reviewer answers.", "FORMAT"),
    _pick("isolation", "Where the reviewer runs.", "MODE"),
    Spec("budget_tokens", _BUDGET_DESC, _budget, "TOKENS"),
    Spec("budget_money", _BUDGET_MONEY_DESC, _budget_money, "AMOUNT"),
    _pick("budget_scope", _BUDGET_SCOPE_DESC, "SCOPE"),
    Spec("max_change_files", _MAX_CHANGE_FILES_DESC, _max_files, "N"),
    Spec("max_change_lines", _MAX_CHANGE_LINES_DESC, _max_lines, "N"),
    Spec("prices", _PRICES_DESC, _price, cli=None, ini="linelist", env=False, default=()),
    Spec("report", _REPORT_DESC, _PATH, "PATH", ini=None, path=True),
    Spec("sarif", _SARIF_DESC, _PATH, "PATH", ini=None, path=True),
    Spec("rdjson", _RDJSON_DESC, _PATH, "PATH", ini=None, path=True),
    Spec("json", _JSON_DESC, _PATH, "PATH", ini=None, path=True),
    _pick("lead", _LEAD_DESC, "LEAD"),
    Spec("lead_command", _LEAD_COMMAND_DESC, _command, "CMD"),
    Spec("lead_model", _LEAD_MODEL_DESC, _non_empty("a model name"), "NAME"),
    Spec("lead_patch", _LEAD_PATCH_DESC, _PATH, "PATH", ini=None, path=True),
    Spec("lead_code", _LEAD_CODE_DESC, _bool, cli=None, env=False, default=False),
    _pick("github", _GITHUB_DESC, "MODE"),
    Spec("strict_exit", _STRICT_EXIT_DESC, _bool, cli="flag", default=False),
    Spec("fresh", _FRESH_DESC, _bool, cli="flag", ini=None, default=False),
    Spec("progress", _PROGRESS_DESC, _progress, "SECONDS", default=30),
    Spec(
        "jobs", _JOBS_DESC, _whole(1, MAX_JOBS, off=({"auto"}, "auto")), "N", default=DEFAULT_JOBS
    ),
    Spec("shard", _SHARD_DESC, _shard, "K/N", ini=None),
    _pick("diff", "Which code change the code-review item reviews.", "MODE"),
    Spec("base", _BASE_DESC, _non_empty("a branch, tag or commit"), "REF"),
    Spec("against_plan", _AGAINST_PLAN_DESC, _PATH, "PATH", ini=None, env=False, path=True),
    # No ini key: the repository under review must not be able to switch head mode off.
    Spec("head", _HEAD_DESC, _non_empty("a commit, branch or tag"), "REF", ini=None),
    _globs("plans", _PLANS_DESC, DEFAULT_PLANS),
    _pick("plan_scope", "Which matching plans are reviewed.", cli=None, env=False),
    Spec("decisions", _DECISIONS_DESC, _PATH, cli=None, env=False, default=DEFAULT_DECISIONS),
    Spec("commands", _COMMANDS_DESC, _PATH, "PATH", ini=None, env=False, path=True),
    Spec("pull_request", _PULL_REQUEST_DESC, _pull_request, "N", ini=None),
    _globs("allow_untracked", _ALLOW_UNTRACKED_DESC, DEFAULT_ALLOW_UNTRACKED),
    _globs("env_allow", _ENV_ALLOW_DESC, parse=_env_glob),
    _globs("exclude", _EXCLUDE_DESC, parse=_exclude_line),
    _globs("path_instructions", _PATH_INSTRUCTIONS_DESC, parse=_instruction_line),
    Spec("only", _ONLY_DESC, _bool, cli="flag", ini=None, env=False, setting=False),
    # No ini key: a repository must not turn its gate runs into eval runs.
    Spec("eval", _EVAL_DESC, _PATH, "PATH", ini=None, env=False, path=True, words=("builtin",)),
    Spec("eval_epochs", _EVAL_EPOCHS_DESC, _whole(1, MAX_EPOCHS), "N", default=1),
    Spec("eval_report", _EVAL_REPORT_DESC, _PATH, "PATH", ini=None, env=False, path=True),
    Spec("eval_baseline", _EVAL_BASELINE_DESC, _PATH, "PATH", ini=None, env=False, path=True),
    Spec("eval_transcripts", _EVAL_TRANSCRIPTS_DESC, _PATH, "PATH", path=True),
    Spec("eval_rescore", _EVAL_RESCORE_DESC, _bool, cli="flag", ini=None, env=False, default=False),
    Spec("eval_min_recall", _EVAL_MIN_RECALL_DESC, _fraction, cli=None),
    Spec("eval_max_false_block", _EVAL_MAX_FALSE_BLOCK_DESC, _fraction, cli=None),
    Spec("eval_max_flip", _EVAL_MAX_FLIP_DESC, _fraction, cli=None),
    _doctor("doctor", _DOCTOR_DESC, _bool, cli="flag"),
    _doctor("doctor_json", _DOCTOR_JSON_DESC, _PATH, "PATH"),
    _doctor("doctor_online", _DOCTOR_ONLINE_DESC, _bool, cli="flag"),
)
BY_FIELD = {spec.field: spec for spec in SPECS}
#: The options of ``pytest --advreview-doctor``, which the doctor's own plugin registers.
DOCTOR_SPECS = tuple(spec for spec in SPECS if spec.doctor)


def default(field: str) -> Any:
    """The default of the setting ``field`` (typed ``Any`` so a model field can use it)."""
    return BY_FIELD[field].default


def add_options(parser: pytest.Parser) -> None:
    """Register ``--adversarial-review``, every ``--advreview-*`` option and ini key but the
    doctor's (:data:`DOCTOR_SPECS`, registered by ``doctorplugin.py``).

    Value options and ini keys default to ``None`` so that "not given" is visible to
    :func:`~.settings.resolve` (the real defaults are the specs').
    """
    _group(parser).addoption(
        "--adversarial-review",
        action="store_true",
        dest="advreview_enabled",
        default=False,
        help="Review changed plans and the current code change as test items",
    )
    add_specs(parser, (spec for spec in SPECS if not spec.doctor))


def add_specs(parser: pytest.Parser, specs: Iterable[Spec]) -> None:
    """Register the option and ini key of each of ``specs`` (those it has)."""
    group = _group(parser)
    for spec in specs:
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


def _group(parser: pytest.Parser) -> pytest.OptionGroup:
    """The ``--help`` section of every option of the package (both entry points)."""
    return parser.getgroup("advreview", "adversarial reviews (pytest-advreview)")


def check_spaced_values(parser: pytest.Parser, args: Sequence[str], invocation_dir: Path) -> None:
    """Refuse a value option written with a space (``--advreview-codex PATH``) that moved
    pytest's rootdir.

    pytest chooses its rootdir and ini file before it loads plugins, so this package's
    options are unknown then, and the value after one (an existing path) is taken for a
    test path: ``--advreview-codex /opt/codex/bin/codex`` made ``/opt/codex/bin`` the
    rootdir, the project's ini file was never read, no plan was found and the run passed.
    The choice is made again here, with and without those values, now that the options
    are known: the same choice means the option worked; another is a usage error.

    :param args: the arguments pytest chose its rootdir from (``PYTEST_ADDOPTS``, then
        the command line).
    :raises pytest.UsageError: a value written with a space changed the rootdir or ini
        file, with the ``=`` form that fixes it.
    """
    cut = list(args).index("--") if "--" in args else len(args)
    values = {spec.option for spec in SPECS if spec.cli in ("store", "append")}
    spaced = [i for i in range(cut - 1) if args[i] in values and not args[i + 1].startswith("-")]
    if not spaced:
        return
    # As pytest read them (the option names unknown, their values left as test paths),
    # and as they were meant.
    as_read = [arg for i, arg in enumerate(args) if i not in spaced]
    meant = [arg for i, arg in enumerate(args) if i not in spaced and i - 1 not in spaced]
    moved = ""
    try:
        chosen, wanted = (
            _setup(parser, as_read, invocation_dir),
            _setup(parser, meant, invocation_dir),
        )
    except TypeError:
        # Another pytest's signature: refuse every such value that names a path, as a
        # path is what pytest would have taken it for.
        spaced = [i for i in spaced if (invocation_dir / args[i + 1].split("::")[0]).exists()]
    else:
        if chosen == wanted:
            return
        moved = f" (rootdir {chosen[0]} instead of {wanted[0]})"
    if not spaced:
        return
    shown = " ".join(f"{args[i]}={args[i + 1]}" for i in spaced)
    raise pytest.UsageError(
        "pytest-advreview: "
        + ", ".join(f"{args[i]} {args[i + 1]}" for i in spaced)
        + ": pytest chooses its rootdir before it knows this option, so it took the value "
        f"for a test path{moved} and would read another configuration and find no plans; "
        f"write {shown}"
    )


def _setup(
    parser: pytest.Parser, args: Sequence[str], invocation_dir: Path
) -> tuple[Path | None, Path | None]:
    """The rootdir and ini file pytest chooses for ``args`` (its own function).

    :raises TypeError: this pytest's ``determine_setup`` takes other arguments.
    """
    from _pytest.config.findpaths import determine_setup

    namespace = parser.parse_known_args(list(args))
    given = {
        "inifile": namespace.inifilename,
        "override_ini": namespace.override_ini,
        "args": list(namespace.file_or_dir),
        "rootdir_cmd_arg": namespace.rootdir or None,
        "invocation_dir": invocation_dir,
    }
    # pytest 8.0 has no override_ini parameter; 9 has.
    accepted = inspect.signature(determine_setup).parameters
    result = determine_setup(**{k: v for k, v in given.items() if k in accepted})
    return result[0], result[1]
