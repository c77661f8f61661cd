"""What the GitHub Action (``action.yml``) runs, as ``python -m pytest_advreview.action COMMAND``.

The action is a review *gate*: everything that decides what is reviewed, how, and what
fails comes from the workflow (the action's inputs) and from the **base** commit, never
from the pull request under review. Each command reads the action's inputs from
``ADVREVIEW_ACTION_*`` variables (set by the step's ``env:``) and GitHub's own variables:

``prepare``
    Which event this is, the base and head commits, and whether to review at all: fork
    and Dependabot pull requests of a ``pull_request`` run are skipped with a notice (they
    get no secret); a ``pull_request_target`` run reviews only what a maintainer approved
    (a trusted author, or the approval label applied by someone with write access), at
    the head commit the approval saw.
``review``
    One pytest run of the review items only. Its configuration is a file the action
    writes from its inputs and from the ``advreview_*`` keys of the base commit's
    pytest configuration (read with ``git show BASE:FILE``); the pull request's
    ``pytest.ini``/``pyproject.toml``, ``conftest.py`` files, plugins and test modules are
    never read or imported. Then the outputs (outcome, counts, report paths).
``commands``
    The pull request's ``/advreview`` commands (waive, decide, rounds) from its issue
    comments, kept only when the commenter's repository permission is write or higher
    (looked up through the REST API), written as the file the ``review`` step passes to
    ``--advreview-commands`` (docs/deciding.md).
``rerun``
    Mode ``rerun`` (an ``issue_comment`` event): a maintainer's ``/advreview`` command
    re-runs the gate's last run of the pull request's head commit (``actions: write``),
    so the required check counts the command without a push.
``comment``
    Create or update the one pull-request comment that carries the markdown report.
``review-comments``
    The pull-request review with line comments (input ``comment: review``): findings on
    the changed lines, the others in the review's body, answers to earlier comments
    (resolved, waived); planned by :mod:`pytest_advreview.report.pr_review`.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from . import outbound
from .constants import ENV_PREFIX, EXIT_REVIEW_ERRORS
from .git import commit, run_git
from .options import SPECS
from .report.files import Anchors
from .report.json_report import ResultsReport
from .report.pr_review import Posted, hunks_from_patch, plan_review
from .trust.baseconfig import BaseConfigError, ini_at, linelist, show_file
from .trust.commands import vet

__all__ = [
    "APIError",
    "ActionError",
    "Decision",
    "base_ini",
    "decide",
    "gate_config",
    "main",
    "pytest_argv",
    "pytest_env",
    "summarise",
]

#: Prefix of the variables through which the action's steps hand their inputs over.
INPUT_PREFIX = "ADVREVIEW_ACTION_"
#: The hidden first line by which the action finds its own pull-request comment.
COMMENT_MARKER = "<!-- pytest-advreview:report -->"
#: GitHub rejects issue comments over 65,536 characters.
COMMENT_LIMIT = 65_000
#: ``ini`` keys of the plugin, and which of them are lists.
_INI_KEYS = {spec.ini_key: spec.ini for spec in SPECS if spec.ini is not None}
_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?\Z")
DEPENDABOT = "dependabot[bot]"
#: Repository permissions that may approve a ``pull_request_target`` review by label.
WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})


class ActionError(Exception):
    """A problem the workflow's author must fix; printed as one ``::error::`` line."""


class APIError(ActionError):
    """A GitHub REST call that failed or answered something unexpected."""


#: Who posts the comments by default: the workflow's ``GITHUB_TOKEN``.
DEFAULT_COMMENT_AUTHOR = "github-actions[bot]"
#: Values of the input ``comment``.
COMMENT_MODES = ("false", "true", "review")


# -- small GitHub Actions helpers ------------------------------------------------------------


def _input(name: str, env: Mapping[str, str], default: str = "") -> str:
    return env.get(INPUT_PREFIX + name.upper().replace("-", "_"), default).strip() or default


# Everything the steps print or write goes through outbound: redacted (this step's
# environment decides what is secret) and neutralised for the log.


def _command(kind: str, text: str) -> None:
    if os.environ.get("GITHUB_ACTIONS") == "true":
        print(f"::{kind}::{outbound.annotation_data(text)}", flush=True)
    else:  # another CI system: a plain line
        print(outbound.terminal_text(f"{kind}: {text}"), flush=True)


def _say(text: str) -> None:
    """A plain line of the step's log."""
    print(outbound.terminal_text(text), flush=True)


def _write_outputs(values: Mapping[str, str], env: Mapping[str, str]) -> None:
    """Append ``values`` to ``$GITHUB_OUTPUT`` (heredoc form: values never break a line)."""
    target = env.get("GITHUB_OUTPUT")
    if not target:
        for key, value in values.items():
            _say(f"{key}={value}")
        return
    with open(target, "a", encoding="utf-8") as out:
        for key, value in values.items():
            delimiter = f"ADVREVIEW_EOF_{os.urandom(8).hex()}"
            out.write(f"{key}<<{delimiter}\n{outbound.one_line(value)}\n{delimiter}\n")


def _notice(text: str, env: Mapping[str, str]) -> None:
    """A notice in the log that also goes to the job summary, where the run page shows it."""
    _command("notice", text)
    target = env.get("GITHUB_STEP_SUMMARY")
    if target:
        with open(target, "a", encoding="utf-8") as out:
            out.write(outbound.terminal_text(text.rstrip("\n")) + "\n")


def _event(env: Mapping[str, str]) -> dict[str, Any]:
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ActionError(
            f"cannot read the event payload GITHUB_EVENT_PATH={path}: {exc}"
        ) from None
    return data if isinstance(data, dict) else {}


def _sha(value: object, what: str) -> str:
    text = str(value or "").strip().lower()
    if not _SHA.match(text):
        raise ActionError(f"{what} is {value!r}, not a full commit SHA")
    return text


# -- prepare: what to review, and whether ----------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """Whether and what to review: the ``prepare`` step's outputs."""

    review: bool
    mode: str
    base: str = ""
    head: str = ""
    pr: str = ""
    reason: str = ""

    def outputs(self) -> dict[str, str]:
        """The step outputs, as ``$GITHUB_OUTPUT`` takes them."""
        values = {name: str(value) for name, value in asdict(self).items()}
        return {**values, "review": "true" if self.review else "false"}


PermissionLookup = Any  # Callable[[str], str | None]; Any keeps mypy quiet about the default


def decide(
    event_name: str,
    event: Mapping[str, Any],
    env: Mapping[str, str],
    permission: PermissionLookup = None,
) -> Decision:
    """Decide from the event what to review (see the module docstring).

    :param permission: looks up a user's permission on the repository (``admin``,
        ``write``, ...) for the label approval; by default asks the GitHub API.
    """
    mode = _input("mode", env, "auto")
    if mode == "auto":
        mode = {"pull_request_target": "pull_request_target", "issue_comment": "rerun"}.get(
            event_name, "pull_request"
        )
    if mode not in ("pull_request", "pull_request_target", "rerun"):
        raise ActionError(
            f"input mode is {mode!r}; use auto, pull_request, pull_request_target or rerun"
        )
    if mode == "rerun":
        # A comment reviews nothing: the rerun step re-runs the pull request's own gate.
        number = str((event.get("issue") or {}).get("number", ""))
        return Decision(
            False, "rerun", pr=number, reason="mode rerun: a comment re-runs the gate, no review"
        )
    explicit_base = _input("base", env)
    if mode == "pull_request_target":
        if event_name != "pull_request_target":
            raise ActionError(
                f"mode pull_request_target needs a pull_request_target event, not {event_name!r}"
            )
        return _decide_target(event, env, permission)
    pr = event.get("pull_request")
    if event_name == "pull_request" and isinstance(pr, Mapping):
        number = str(pr.get("number", ""))
        head_repo = (pr.get("head") or {}).get("repo") or {}
        author = (pr.get("user") or {}).get("login")
        if head_repo.get("full_name") != env.get("GITHUB_REPOSITORY"):
            skipped = (
                "pull request from a fork: a pull_request run gets no secrets, so it is "
                "not reviewed here; review fork pull requests with mode "
                "pull_request_target (docs/ci.md)"
            )
        elif author == DEPENDABOT and env.get("GITHUB_ACTOR") == DEPENDABOT:
            skipped = "Dependabot pull request: it gets no secrets, so it is not reviewed"
        else:
            base = explicit_base or _sha((pr.get("base") or {}).get("sha"), "pull_request.base.sha")
            return Decision(True, mode, base=base, head="HEAD", pr=number)
        return Decision(False, mode, pr=number, reason=skipped)
    if event_name == "merge_group":
        group = event.get("merge_group") or {}
        base = explicit_base or _sha(group.get("base_sha"), "merge_group.base_sha")
        return Decision(True, mode, base=base, head="HEAD")
    if explicit_base:
        return Decision(True, mode, base=explicit_base, head="HEAD")
    raise ActionError(
        f"a {event_name!r} event names no base to review against; run the action on "
        "pull_request, pull_request_target or merge_group, or set the input base"
    )


def _decide_target(
    event: Mapping[str, Any], env: Mapping[str, str], permission: PermissionLookup
) -> Decision:
    pr = event.get("pull_request")
    if not isinstance(pr, Mapping):
        raise ActionError("the pull_request_target event has no pull_request")
    number = str(pr.get("number", ""))
    base = _input("base", env) or _sha((pr.get("base") or {}).get("sha"), "pull_request.base.sha")
    # The SHA the approval saw: a push after it is a new event that needs a new approval.
    head = _sha((pr.get("head") or {}).get("sha"), "pull_request.head.sha")
    trusted = {
        part.strip().upper()
        for part in _input("trusted-associations", env, "OWNER,MEMBER,COLLABORATOR").split(",")
        if part.strip()
    }
    association = str(pr.get("author_association", "")).upper()
    label = _input("approval-label", env, "advreview")
    sender = str((event.get("sender") or {}).get("login", ""))
    applied = str((event.get("label") or {}).get("name", ""))
    if association in trusted:
        review, reason = True, f"author is {association}"
    elif event.get("action") == "labeled" and applied == label and sender:
        lookup = permission if permission is not None else _api_permission(env)
        granted = lookup(sender)
        review = granted in WRITE_PERMISSIONS
        reason = (
            f"label {label!r} applied by {sender} ({granted})"
            if review
            else f"label {label!r} was applied by {sender}, who has {granted or 'no'} "
            "permission; only someone with write access can approve a review"
        )
    else:
        review = False
        reason = (
            f"not approved for review: a maintainer must apply the label {label!r} "
            f"(author association {association or 'unknown'} is not trusted); a push "
            "after the label needs the label applied again"
        )
    return Decision(review, "pull_request_target", base=base, head=head, pr=number, reason=reason)


def _api(env: Mapping[str, str], method: str, path: str, body: object = None) -> Any:
    """One GitHub REST call with the job's token (``GH_TOKEN``); JSON in and out."""
    token = env.get("GH_TOKEN") or env.get("GITHUB_TOKEN") or ""
    url = env.get("GITHUB_API_URL", "https://api.github.com").rstrip("/") + path
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Accept", "application/vnd.github+json")
    request.add_header("X-GitHub-Api-Version", "2022-11-28")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            payload = response.read()
    except urllib.error.HTTPError as exc:
        raise APIError(
            f"GitHub API {method} {path} answered {exc.code} {exc.reason}; check the job's "
            "permissions (pull-requests: write) and that the pull request still exists"
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        raise APIError(f"GitHub API {method} {path} failed: {exc}") from None
    try:
        return json.loads(payload) if payload else None
    except ValueError:
        raise APIError(f"GitHub API {method} {path} answered something that is not JSON") from None


def _pages(env: Mapping[str, str], path: str) -> list[dict[str, Any]]:
    """Every entry of a paginated list (100 a page, until a short page)."""
    entries: list[dict[str, Any]] = []
    page = 1
    while True:
        found = _api(env, "GET", f"{path}?per_page=100&page={page}")
        if not isinstance(found, list):
            raise APIError(f"GitHub API GET {path} answered {type(found).__name__}, not a list")
        entries.extend(entry for entry in found if isinstance(entry, dict))
        if len(found) < 100:
            return entries
        page += 1


def _login(entry: Mapping[str, Any]) -> str:
    user = entry.get("user")
    return str(user.get("login", "")) if isinstance(user, dict) else ""


def _api_permission(env: Mapping[str, str]) -> PermissionLookup:
    repo = env.get("GITHUB_REPOSITORY", "")

    def lookup(user: str) -> str | None:
        answer = _api(env, "GET", f"/repos/{repo}/collaborators/{user}/permission")
        permission = answer.get("permission") if isinstance(answer, dict) else None
        return str(permission) if permission else None

    return lookup


def _command_permission(env: Mapping[str, str]) -> PermissionLookup:
    """:func:`_api_permission` for commands: a commenter the API cannot answer for (a
    deleted account, a 404) is that commenter's problem (:class:`LookupError`), not a
    failure that would drop every maintainer's command."""
    lookup = _api_permission(env)

    def checked(user: str) -> str | None:
        try:
            return lookup(user)  # type: ignore[no-any-return]
        except APIError as exc:
            raise LookupError(str(exc)) from None

    return checked


def cache_keys(decision: Decision, env: Mapping[str, str]) -> dict[str, str]:
    """The cache key of this run's state, and the prefix that restores the newest earlier one.

    The key is new for every run **and** every attempt (a re-run saves under a key of its
    own; cache entries cannot be overwritten), so the state of a failing run is kept too.
    """
    scope = f"pr{decision.pr}" if decision.pr else env.get("GITHUB_REF_NAME", "ref")
    scope = re.sub(r"[^A-Za-z0-9._/-]", "_", scope)
    prefix = f"{_input('state-key', env, 'advreview')}-{scope}-"
    run = f"{env.get('GITHUB_RUN_ID', '0')}-{env.get('GITHUB_RUN_ATTEMPT', '1')}"
    return {"cache-key": prefix + run, "cache-prefix": prefix}


def _checked_out(env: Mapping[str, str]) -> str:
    return commit(Path(env.get("GITHUB_WORKSPACE") or os.getcwd()), "HEAD") or ""


def _check_base_checkout(env: Mapping[str, str]) -> None:
    """``pull_request_target`` runs with secrets: the checkout must be the trusted base.

    actions/checkout's default for this event is ``GITHUB_SHA`` (the base branch); a
    workflow that checks out the pull request's head would run its configuration and code
    with the key, which is exactly what this mode exists to prevent.
    """
    workspace = Path(env.get("GITHUB_WORKSPACE") or os.getcwd())
    checked_out = _checked_out(env)
    expected = env.get("GITHUB_SHA", "")
    if not checked_out or (expected and checked_out != expected):
        raise ActionError(
            f"mode pull_request_target reviews from the base checkout, but {workspace} has "
            f"{checked_out or 'no commit'} checked out, not the base {expected}; use "
            "actions/checkout without ref: (the pull request's head is fetched as data)"
        )


def prepare(env: Mapping[str, str]) -> int:
    """The ``prepare`` command."""
    mode = _input("comment", env, "false")
    if mode not in COMMENT_MODES:
        raise ActionError(f"input comment is {mode!r}; use false, true or review")
    event_name = env.get("GITHUB_EVENT_NAME", "")
    decision = decide(event_name, _event(env), env)
    if decision.mode == "pull_request_target":
        _check_base_checkout(env)
    elif decision.review:
        # Name the commit that is reviewed, not "HEAD".
        decision = replace(decision, head=_checked_out(env) or decision.head)
    _write_outputs({**decision.outputs(), **cache_keys(decision, env)}, env)
    if decision.mode == "rerun":
        _command("notice", f"pytest-advreview: {decision.reason}")
        _write_outputs(Summary("skipped").outputs(), env)
        return 0
    if not decision.review:
        if decision.mode == "pull_request_target":
            # Fail closed: a required check must not turn green on code nobody reviewed.
            _command("error", f"pytest-advreview: {decision.reason}")
            _write_outputs(Summary("not-approved").outputs(), env)
            return 1
        _notice(f"pytest-advreview: skipped: {decision.reason}", env)
        _write_outputs(Summary("skipped").outputs(), env)
        return 0
    _command(
        "notice",
        f"pytest-advreview: reviewing {decision.head} against {decision.base} "
        f"({decision.mode}{'; ' + decision.reason if decision.reason else ''})",
    )
    return 0


# -- review: the trusted configuration and the pytest run ------------------------------------


def base_ini(repo: Path, base: str) -> tuple[str | None, dict[str, object]]:
    """The pytest configuration file of commit ``base`` at the repository root, and its keys
    (:func:`~.trust.baseconfig.ini_at`), read from the commit's objects, never the work tree.

    :returns: ``(file name, keys)``; ``(None, {})`` when the commit has none.
    """
    try:
        return ini_at(repo, base)
    except BaseConfigError as exc:
        raise ActionError(str(exc)) from None


def _toml_string(text: str) -> str:
    out = ['"']
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def gate_config(
    keys: Mapping[str, object],
    *,
    plans: Sequence[str],
    cache_dir: Path,
    origin: str | None,
    added: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """The text of the gate's own configuration file (``pyproject.toml`` form).

    Only the plugin's ``advreview_*`` keys of the base configuration are kept (every other
    key, ``addopts`` included, belongs to the project's tests, not to the gate);
    ``plans`` from the workflow replace the base's globs; ``added`` lines from the
    workflow follow the base's lines of a list key (the path rules: a workflow's
    ``!GLOB`` line can keep what the base left out); ``cache_dir`` (the review state)
    lives outside the checkout, so a pull request cannot bring a state of its own.
    """
    values: dict[str, object] = {
        key: value for key, value in keys.items() if key in _INI_KEYS and value is not None
    }
    if plans:
        values["advreview_plans"] = list(plans)
    for key, lines in (added or {}).items():
        if lines:
            values[key] = [*linelist(values.get(key, "")), *lines]
    lines = [
        "# Written by the pytest-advreview action: the gate's settings, from the workflow",
        f"# and from the base commit's {origin or 'defaults (no pytest configuration)'}.",
        "[tool.pytest.ini_options]",
        f"cache_dir = {_toml_string(str(cache_dir))}",
    ]
    for key in sorted(values):
        value = values[key]
        if _INI_KEYS[key] == "linelist":
            items = ", ".join(_toml_string(item) for item in linelist(value))
            lines.append(f"{key} = [{items}]")
        else:
            lines.append(f"{key} = {_toml_string(str(value))}")
    return "\n".join(lines) + "\n"


#: Variables that would let something other than the gate's configuration steer pytest,
#: Python or the plugin (an earlier step may have written them to $GITHUB_ENV): every
#: setting's ``ADVREVIEW_*`` variable (derived from the option table, so a new setting is
#: covered), the head of head-as-data runs, and pytest's own.
_SCRUB_EXACT = frozenset(
    {
        "PYTEST_ADDOPTS",
        "PYTEST_PLUGINS",
        "PYTEST_THEME",
        "PYTEST_THEME_MODE",
        f"{ENV_PREFIX}HEAD",
        *(spec.env_var for spec in SPECS if spec.env),
    }
)
_SCRUB_PREFIXES = ("PYTHON", "PYTEST_DEBUG", INPUT_PREFIX)


def pytest_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment of the gate's pytest: no plugin autoload, no steering variables."""
    clean = {
        key: value
        for key, value in env.items()
        if key not in _SCRUB_EXACT and not key.startswith(_SCRUB_PREFIXES)
    }
    clean["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    # No module of the working directory shadows pytest or the plugin (Python 3.11+; the
    # gate also runs from an empty folder of its own for older Pythons and xdist workers).
    clean["PYTHONSAFEPATH"] = "1"
    clean["PYTHONNOUSERSITE"] = "1"
    clean["PYTHONDONTWRITEBYTECODE"] = "1"
    return clean


class Paths:
    """Where the gate keeps its configuration, state and reports (outside the checkout)."""

    def __init__(self, root: Path) -> None:
        self.config = root / "gate" / "pyproject.toml"
        self.cwd = root / "gate" / "cwd"
        self.out = root / "out"
        self.json = self.out / "results.json"
        self.report = self.out / "report.md"
        self.sarif = self.out / "advreview.sarif"
        #: For reviewdog (``-f=rdjson``): inline comments outside GitHub.
        self.rdjson = self.out / "advreview.rdjson"
        self.state = root / "state"
        #: The pull request's vetted ``/advreview`` commands (the ``commands`` step).
        self.commands = root / "gate" / "commands.json"


def pytest_argv(
    python: str,
    workspace: Path,
    paths: Paths,
    env: Mapping[str, str],
    *,
    base: str,
    head: str,
    codex: str,
) -> list[str]:
    """The gate's pytest command line: only the plugin, the gate's file, review items only."""
    argv = [
        python,
        "-I",
        "-m",
        "pytest",
        "-p",
        "pytest_advreview.plugin",
        f"--config-file={paths.config}",
        f"--rootdir={workspace}",
        "--noconftest",
        "--adversarial-review",
        "--advreview-only",
        "--advreview-diff=branch",
        f"--advreview-base={base}",
        f"--advreview-codex={codex}",
        "--advreview-strict-exit",
        # The verdict gates the pull request: a command that asks to leave the sandbox is
        # refused, never left to Codex's auto-reviewer (the pytest-args input may say
        # otherwise, explicitly).
        "--advreview-approvals=never",
        f"--advreview-json={paths.json}",
        f"--advreview-report={paths.report}",
        f"--advreview-sarif={paths.sarif}",
        f"--advreview-rdjson={paths.rdjson}",
        "-ra",
    ]
    if env.get("GITHUB_ACTIONS") == "true":
        argv.append("--advreview-github=on")
    if head != "HEAD":
        argv.append(f"--advreview-head={_sha(head, 'the approved head')}")
    for name in ("fail-on", "model", "reasoning", "sandbox"):
        value = _input(name, env)
        if value:
            argv.append(f"--advreview-{name}={value}")
    workers = _input("workers", env, "0")
    if workers not in ("", "0"):
        argv[4:4] = ["-p", "xdist.plugin"]
        argv.append(f"--numprocesses={workers}")
    vetted = _input("commands", env)
    if vetted:
        argv.append(f"--advreview-commands={vetted}")
    pull = _input("pr", env)
    if pull.isascii() and pull.isdigit():
        # A waiver or grant of the base's decisions file holds only for the pull request
        # it names (or the whole repository): the run says which one it reviews.
        argv.append(f"--advreview-pull-request={pull}")
    extra = _input("pytest-args", env)
    if extra:
        argv.extend(shlex.split(extra))
    argv.append(str(workspace))
    return argv


@dataclass(frozen=True)
class Summary:
    """What the gate's run means for the pipeline."""

    outcome: str
    passed: int = 0
    failed: int = 0
    errored: int = 0
    exit_code: int = 0
    message: str = ""

    def outputs(self) -> dict[str, str]:
        """The outcome and the counts, as step outputs."""
        counts = {"passed": self.passed, "failed": self.failed, "errored": self.errored}
        return {"outcome": self.outcome, **{key: str(n) for key, n in counts.items()}}


def summarise(returncode: int, json_path: Path) -> Summary:
    """The run's outcome from pytest's exit status and the JSON report it wrote.

    "Nothing to review" is success only when pytest says no item was collected **and**
    the JSON report agrees; every other combination that is not a clean pass fails.
    """
    try:
        data = json.loads(json_path.read_text(encoding="utf-8"))
        gate = str(data["totals"]["gate"])
        outcomes = [str(item["pytest_outcome"]) for item in data.get("items", [])]
    except (OSError, ValueError, KeyError, TypeError):
        return Summary(
            "error",
            exit_code=returncode or 1,
            message=f"pytest exited {returncode} without the JSON report {json_path}: "
            "the gate could not run (see the log above)",
        )
    passed = outcomes.count("passed")
    failed = outcomes.count("failed")
    errored = outcomes.count("error")
    if returncode == 5 and gate == "empty":
        return Summary("empty", message="nothing to review: no plan and no code change")
    if returncode == 0 and gate == "passed":
        return Summary("passed", passed, failed, errored, 0, f"{passed} review(s) passed")
    if returncode in (1, EXIT_REVIEW_ERRORS) and gate in ("failed", "error"):
        what = f"{failed} review(s) failed" if gate == "failed" else "reviews could not run"
        return Summary(gate, passed, failed, errored, 1, what)
    return Summary(
        "error",
        passed,
        failed,
        errored,
        returncode or 1,
        f"pytest exited {returncode} with gate result {gate!r}: the gate could not run",
    )


def review(env: Mapping[str, str]) -> int:
    """The ``review`` command."""
    workspace = Path(env.get("GITHUB_WORKSPACE") or os.getcwd()).resolve()
    temp = Path(env.get("RUNNER_TEMP") or tempfile.gettempdir())
    paths = Paths(Path(_input("work-dir", env) or temp / "advreview"))
    base = _input("base-sha", env)
    # Head as data only in pull_request_target mode; otherwise the checkout is the head.
    head = _input("head-sha", env) if _input("mode", env) == "pull_request_target" else "HEAD"
    if not base:
        raise ActionError("no base commit: the prepare step did not run or decided not to review")
    if commit(workspace, base) is None:
        raise ActionError(
            f"the base commit {base} is not in the checkout at {workspace}; fetch it with "
            f"`git fetch --no-tags origin {base}` in a step before this one, or check out "
            "with actions/checkout and fetch-depth: 0"
        )
    origin, keys = base_ini(workspace, base)
    plans = linelist(_input("plans", env))
    paths.config.parent.mkdir(parents=True, exist_ok=True)
    paths.config.write_text(
        gate_config(
            keys,
            plans=plans,
            cache_dir=paths.state,
            origin=origin,
            added={
                "advreview_exclude": linelist(_input("exclude", env)),
                "advreview_path_instructions": linelist(_input("path-instructions", env)),
            },
        ),
        encoding="utf-8",
    )
    paths.cwd.mkdir(parents=True, exist_ok=True)
    paths.out.mkdir(parents=True, exist_ok=True)
    for stale in (paths.json, paths.report, paths.sarif, paths.rdjson):
        stale.unlink(missing_ok=True)
    python = _input("python", env) or sys.executable
    codex = _input("codex", env) or "codex"
    argv = pytest_argv(python, workspace, paths, env, base=base, head=head, codex=codex)
    _say(f"pytest-advreview: gate configuration {paths.config} (from {origin or 'defaults'})")
    _say("pytest-advreview: " + shlex.join(argv))
    # From an empty folder of the action's own: nothing of the checkout is importable.
    proc = subprocess.run(argv, cwd=paths.cwd, env=pytest_env(env), check=False)
    summary = summarise(proc.returncode, paths.json)
    _write_outputs(
        {
            **summary.outputs(),
            "json": str(paths.json),
            "report": str(paths.report),
            "sarif": str(paths.sarif),
            "exit-code": str(proc.returncode),
        },
        env,
    )
    if summary.outcome == "empty":
        _notice(f"pytest-advreview: {summary.message}", env)
    elif summary.exit_code != 0:
        _command("error", f"pytest-advreview: gate {summary.outcome}: {summary.message}")
    return summary.exit_code


# -- comment ---------------------------------------------------------------------------------


def comment_body(report: str, run_url: str) -> str:
    """The comment: the marker, then the report, cut to GitHub's limit with a pointer."""
    body = f"{COMMENT_MARKER}\n{report}"
    if len(body) <= COMMENT_LIMIT:
        return body
    tail = f"\n\n… the report is longer than a comment can be; the whole report: {run_url}\n"
    return body[: COMMENT_LIMIT - len(tail)] + tail


def comment(env: Mapping[str, str]) -> int:
    """The ``comment`` command: create the report comment, or update the one there is."""
    number = _input("pr", env)
    if not number.isdigit():
        _command("notice", "pytest-advreview: no pull request to comment on")
        return 0
    report_path = Path(_input("report", env))
    try:
        report = report_path.read_text(encoding="utf-8")
    except OSError as exc:
        _command("warning", f"pytest-advreview: no report to post ({report_path}: {exc})")
        return 0
    repo = env.get("GITHUB_REPOSITORY", "")
    run_url = (
        f"{env.get('GITHUB_SERVER_URL', 'https://github.com')}/{repo}/actions/runs/"
        f"{env.get('GITHUB_RUN_ID', '')}"
    )
    # The report was redacted by the review step; this step's own secrets (the token
    # that posts it) are redacted here, before the text leaves for GitHub's API, and
    # its invisible characters shown again (the file is read back from disk), and its
    # mentions made code: reviewer-written text notifies nobody.
    body = comment_body(outbound.quiet_mentions(outbound.document_text(report)), run_url)
    # Only the poster's own marked comment is updated: anybody can write the marker.
    author = _input("comment-author", env, DEFAULT_COMMENT_AUTHOR)
    existing = next(
        (
            entry.get("id")
            for entry in _pages(env, f"/repos/{repo}/issues/{number}/comments")
            if _login(entry) == author and str(entry.get("body", "")).startswith(COMMENT_MARKER)
        ),
        None,
    )
    if existing is not None:
        _api(env, "PATCH", f"/repos/{repo}/issues/comments/{existing}", {"body": body})
        _say(f"pytest-advreview: updated comment {existing} on pull request #{number}")
    else:
        _api(env, "POST", f"/repos/{repo}/issues/{number}/comments", {"body": body})
        _say(f"pytest-advreview: commented on pull request #{number}")
    return 0


# -- review-comments -------------------------------------------------------------------------


def _posted(entries: list[dict[str, Any]], kind: str) -> list[Posted]:
    out = []
    for entry in entries:
        ident = entry.get("id")
        if not isinstance(ident, int):
            continue
        reply = entry.get("in_reply_to_id")
        out.append(
            Posted(
                id=ident,
                kind="review" if kind == "review" else "comment",
                author=_login(entry),
                body=str(entry.get("body") or ""),
                in_reply_to=reply if isinstance(reply, int) else None,
            )
        )
    return out


def review_comments(env: Mapping[str, str]) -> int:
    """The ``review-comments`` command: the pull-request review with line comments."""
    number = _input("pr", env)
    if not number.isdigit():
        _command("notice", "pytest-advreview: no pull request to review")
        return 0
    json_path = Path(_input("json", env))
    try:
        results = ResultsReport.model_validate_json(json_path.read_text(encoding="utf-8"))
    except (OSError, ValidationError) as exc:
        reason = exc if isinstance(exc, OSError) else "not a results file of this version"
        _command("warning", f"pytest-advreview: no results to comment on ({json_path}: {reason})")
        return 0
    pr = _event(env).get("pull_request") or {}
    head = _sha((pr.get("head") or {}).get("sha"), "pull_request.head.sha")
    repo = env.get("GITHUB_REPOSITORY", "")
    base = f"/repos/{repo}/pulls/{number}"
    hunks = {
        str(entry.get("filename")): hunks_from_patch(entry["patch"])
        for entry in _pages(env, f"{base}/files")
        if isinstance(entry.get("patch"), str)
    }
    posted = _posted(_pages(env, f"{base}/comments"), "comment")
    posted += _posted(_pages(env, f"{base}/reviews"), "review")
    workspace = Path(env.get("GITHUB_WORKSPACE") or os.getcwd())
    # A file of the reviewed head is read as data (``git show``), else the work tree's.
    anchors = Anchors(workspace, read=lambda relpath: show_file(workspace, head, relpath))
    plan = plan_review(
        [item.record for item in results.items],
        hunks,
        head,
        posted,
        poster=_input("comment-author", env, DEFAULT_COMMENT_AUTHOR),
        anchor_of=anchors.of,
    )
    request = plan.review_request()
    if request is not None:
        _api(env, "POST", f"{base}/reviews", request)
    for reply in plan.replies:
        _api(env, "POST", f"{base}/comments/{reply.comment_id}/replies", {"body": reply.body})
    _say(
        f"pytest-advreview: pull request #{number} at {head[:12]}: "
        f"{len(plan.on_lines)} finding(s) commented on lines, {len(plan.in_body)} in the "
        f"review body, {len(plan.replies)} answer(s) to earlier comments"
        + ("" if request is not None else "; no new review (nothing new to say)")
    )
    return 0


# -- commands --------------------------------------------------------------------------------


def commands(env: Mapping[str, str]) -> int:
    """The ``commands`` step: the pull request's ``/advreview`` commands that count
    (their commenters have write permission), as the file ``--advreview-commands`` reads.

    The gate's own report comment is skipped: it quotes commands as advice."""
    number = _input("pr", env)
    temp = Path(env.get("RUNNER_TEMP") or tempfile.gettempdir())
    path = Paths(Path(_input("work-dir", env) or temp / "advreview")).commands
    if not number.isdigit():
        _command("notice", "pytest-advreview: no pull request, so no /advreview commands")
        _write_outputs({"commands": ""}, env)
        return 0
    repo = env.get("GITHUB_REPOSITORY", "")
    poster = _input("comment-author", env, DEFAULT_COMMENT_AUTHOR)
    try:
        people = [
            entry
            for entry in _pages(env, f"/repos/{repo}/issues/{number}/comments")
            if not (
                _login(entry) == poster and str(entry.get("body") or "").startswith(COMMENT_MARKER)
            )
        ]
        vetted = vet(people, _command_permission(env))
    except ActionError as exc:
        # Fail closed: without the comments no command counts, and the gate judges
        # without them (a waiver that cannot be checked is no waiver).
        _command(
            "warning",
            f"pytest-advreview: the pull request's /advreview commands cannot be read, so "
            f"none counts in this run: {exc}; give the job pull-requests: read (or "
            "issues: read) and re-run",
        )
        _write_outputs({"commands": ""}, env)
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(vetted.model_dump_json(indent=2) + "\n", encoding="utf-8")
    for command in vetted.commands:
        _say(f"pytest-advreview: counts: {command.verb} by @{command.login} ({command.permission})")
    for ignored in vetted.ignored:
        _say(f"pytest-advreview: ignored: {ignored.text!r} by {ignored.by}: {ignored.why}")
    _write_outputs({"commands": str(path)}, env)
    return 0


# -- rerun -----------------------------------------------------------------------------------


def _workflow(env: Mapping[str, str]) -> str:
    """The gate's workflow file: the input ``workflow``, else this run's own workflow
    (``GITHUB_WORKFLOW_REF``: ``owner/repo/.github/workflows/gate.yml@refs/heads/main``)."""
    named = _input("workflow", env)
    if named:
        return named.rsplit("/", 1)[-1]
    ref = env.get("GITHUB_WORKFLOW_REF", "").partition("@")[0]
    if ref.endswith((".yml", ".yaml")):
        return ref.rsplit("/", 1)[-1]
    raise ActionError(
        "mode rerun cannot tell which workflow is the gate; set the input workflow to its "
        "file name (workflow: advreview.yml)"
    )


def rerun(env: Mapping[str, str]) -> int:
    """The ``rerun`` command (mode ``rerun``, an ``issue_comment`` event): a maintainer's
    ``/advreview`` command re-runs the gate's last run of the pull request's head commit,
    whose ``commands`` step then counts it: the required check turns green without a push.

    Nothing is re-run for a comment without a command that counts (the same rules as the
    ``commands`` step: write permission, no bot, no quote or code).
    """
    event_name = env.get("GITHUB_EVENT_NAME", "")
    if event_name != "issue_comment":
        raise ActionError(
            f"mode rerun runs on issue_comment events, not {event_name!r}; run it from a "
            "workflow with on: issue_comment (docs/deciding.md)"
        )
    event = _event(env)
    issue = event.get("issue") or {}
    if not issue.get("pull_request"):
        _command("notice", "pytest-advreview: a comment on an issue, not a pull request")
        return 0
    vetted = vet([event.get("comment") or {}], _command_permission(env))
    if not vetted.commands:
        why = vetted.ignored[0].why if vetted.ignored else "the comment has no /advreview command"
        _command("notice", f"pytest-advreview: nothing to re-run: {why}")
        return 0
    workflow = _workflow(env)
    repo = env.get("GITHUB_REPOSITORY", "")
    pr = _api(env, "GET", f"/repos/{repo}/pulls/{issue.get('number')}")
    head = _sha(((pr or {}).get("head") or {}).get("sha"), "the pull request's head.sha")
    found = _api(
        env,
        "GET",
        f"/repos/{repo}/actions/workflows/{urllib.parse.quote(workflow)}/runs"
        f"?head_sha={head}&per_page=100",
    )
    runs = [
        run
        for run in ((found or {}).get("workflow_runs") or [])
        if isinstance(run, dict)
        and run.get("head_sha") == head
        and run.get("event") in ("pull_request", "pull_request_target")
    ]
    if not runs:
        _command(
            "notice",
            f"pytest-advreview: {workflow} has no pull-request run of {head[:12]} yet; "
            "the command counts when it runs",
        )
        return 0
    last = max(runs, key=lambda run: int(run.get("id") or 0))
    if last.get("status") != "completed":
        # It may have read the comments before this one: it cannot be re-run while running.
        _command(
            "warning",
            f"pytest-advreview: run {last.get('id')} of {workflow} is {last.get('status')}; "
            "it may have read the comments before this command: re-run it once it finished",
        )
        return 0
    _api(
        env,
        "POST",
        f"/repos/{repo}/actions/runs/{last['id']}/rerun",
        {"enable_debug_logging": False},
    )
    who = ", ".join(f"{c.verb} by @{c.login}" for c in vetted.commands)
    _say(f"pytest-advreview: re-ran {workflow} run {last['id']} of {head[:12]} for {who}")
    return 0


# -- fetch-head ------------------------------------------------------------------------------


def fetch_head(env: Mapping[str, str]) -> int:
    """Fetch the approved head commit by its SHA (``pull_request_target`` mode), as data."""
    head = _sha(_input("head-sha", env), "the approved head")
    workspace = Path(env.get("GITHUB_WORKSPACE") or os.getcwd())
    argv: list[str] = []
    token = env.get("GH_TOKEN", "")
    server = env.get("GITHUB_SERVER_URL", "https://github.com")
    if token:
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        argv += ["-c", f"http.{server}/.extraheader=AUTHORIZATION: basic {basic}"]
    argv += ["fetch", "--no-tags", "--no-recurse-submodules", "origin", head]
    proc = run_git(workspace, *argv, check=False)
    if proc.returncode != 0:
        raise ActionError(
            f"cannot fetch the approved head {head}: {proc.stderr.decode(errors='replace').strip()}"
        )
    if commit(workspace, head) is None:
        raise ActionError(f"the fetched head is not the approved commit {head}")
    return 0


# -- entry point -----------------------------------------------------------------------------

_COMMANDS = {
    "prepare": prepare,
    "commands": commands,
    "rerun": rerun,
    "review": review,
    "comment": comment,
    "review-comments": review_comments,
    "fetch-head": fetch_head,
}


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Run one command; an :class:`ActionError` is one ``::error::`` line and status 1."""
    parser = argparse.ArgumentParser(prog="python -m pytest_advreview.action")
    parser.add_argument("command", choices=sorted(_COMMANDS))
    args = parser.parse_args(argv)
    environ = dict(os.environ if env is None else env)
    # This step's environment decides what its output must not show.
    outbound.install(outbound.Redactor.from_environ(environ))
    try:
        return _COMMANDS[args.command](environ)
    except ActionError as exc:
        _command("error", f"pytest-advreview: {exc}")
        if args.command in ("prepare", "review"):
            _write_outputs(Summary("error").outputs(), environ)
        return 1
    finally:
        outbound.install(None)


if __name__ == "__main__":  # pragma: no cover - the action's entry point
    raise SystemExit(main())
