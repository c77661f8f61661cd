"""``pytest --advreview-doctor``: check that the installed Codex CLI honours the contract.

The runner stands on measured facts about an external CLI that changes often (see
``docs/codex-compat.md``).  The doctor turns the manual smoke test after a Codex upgrade into
one command: it drives the Codex executable the settings select against the testing
kit's :class:`~pytest_advreview.testing.ScriptedServer` on 127.0.0.1, with a throw-away
``CODEX_HOME``, ``HOME`` and git repository, and reports one row per check::

    PASS exec-json — first event thread.started, thread_id 0199…

Required rows that fail make the exit status non-zero; ``WARN`` rows never do.  Rows
that observe a fact the runner depends on (sandbox on resume, stale ``-o``, resume of a
non-uuid) are compared with what the runner assumes (:data:`ASSUMED`), and
:attr:`DoctorReport.capabilities` is what the runner should assume for this Codex.

Nothing leaves the machine (loopback only, a dummy key, retries off), every launch has
a wall-clock timeout and is killed as a process group, independent checks run side by
side, and the temp directory and every process are gone when the doctor returns.  The
two rows about the user's own setup (:class:`ModelCheck`: ``codex-home`` and ``model``)
come last; ``model`` makes the one request that may leave the machine, to the
``base_url`` the user configured.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple, TextIO

import pytest

from .atomic import write_atomic
from .constants import PINNED_CODEX_VERSION
from .models import Operation, WireModel
from .parse import review_schema
from .prompts import with_marker
from .runner import STREAM_FILE, DispatchRequest, native, reachability
from .runner._process import launch, read_text
from .runner.codex import (
    _STDERR_FAILURE,
    INSTALL_HINT,
    VERSION_LINE,
    CodexCapabilities,
    CodexOptions,
    CodexReviewer,
    Sandbox,
    _read_stream,
    _Stream,
    older_than_pinned,
)
from .runner.environment import CORE_NAMES
from .testing.fixtures import offline_env
from .testing.server import ScriptedServer, shell_step

__all__ = [
    "CHECKS",
    "SANDBOX_REMEDY",
    "DoctorReport",
    "DoctorRow",
    "main",
    "run_and_report",
]

Status = Literal["PASS", "FAIL", "WARN"]

#: Wall-clock seconds one launch of Codex may take before its process group is killed.
#: A healthy launch takes about 0.5 s (1-3 s with the other checks running beside it).
#: This and :data:`BUDGET_S` are read when a launch starts: a test of a hanging Codex may
#: shorten both rather than wait them out.
LAUNCH_TIMEOUT_S = 10.0
#: Seconds after the doctor's start at which no new launch is started (total stays < 30 s).
BUDGET_S = 24.0
#: How long the timeout check lets Codex wait on a server that never answers.
HANG_PROBE_S = 2.0
#: Environment variable that tags every process the doctor starts (and their children), so
#: the final sweep can prove that nothing outlived the doctor.
RUN_TAG_ENV = "ADVREVIEW_DOCTOR_RUN"
#: The credential-looking variable the tool-env check plants in Codex's environment; its
#: value (a fresh random string) must never come back from the reviewer's tool shell.
PLANTED_ENV = "ADVREVIEW_DOCTOR_PLANTED_TOKEN"
#: Every other shape of credential the tool-env check plants: names that no guess by name
#: finds, and values that carry a credential inside.  ``{v}`` is a fresh random marker;
#: none of them may come back from the tool shell.
PLANTED_SHAPES: Mapping[str, str] = {
    PLANTED_ENV: "{v}",
    "ADVREVIEW_DOCTOR_DEPLOY_PAT": "github_pat_{v}",
    "ADVREVIEW_DOCTOR_HOOK_URL": "https://hooks.invalid/services/T0/B0/{v}",
    "ADVREVIEW_DOCTOR_SERVICE_URL": "https://api.invalid/v1?user=ci&password={v}",
    "ADVREVIEW_DOCTOR_MIRRORS": "https://a.invalid/simple https://ci:{v}@b.invalid/simple",
    "ADVREVIEW_DOCTOR_JAVA_OPTS": "-Xmx1g -Dserver.password={v}",
    "ADVREVIEW_DOCTOR_SIGNING": "-----BEGIN PRIVATE KEY-----\n{v}\n-----END PRIVATE KEY-----",
    "ADVREVIEW_DOCTOR_ID": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJkb2N0b3IifQ.{v}",
    "ADVREVIEW_DOCTOR_WALLET": "abandon ability able about above absent absorb {v}",
    "GIT_CONFIG_VALUE_0": "AUTHORIZATION: basic {v}",
}
#: The variable the tool-env check allows (through ``advreview_env_allow``, as a glob): it
#: must come through, as must Codex's core names.
ALLOWED_ENV = "ADVREVIEW_DOCTOR_ALLOWED"
#: How the check allows it: a glob, as a user writes one.
ALLOW_GLOB = "ADVREVIEW_DOCTOR_ALLOW*"
#: Names the tool shell has that do not come from Codex's environment: Codex 0.171 sets
#: them itself after the policy (its ids, and constants such as ``TERM=dumb``), bash sets
#: the rest.  A value equal to ours there is a coincidence, not a leak.
_SET_BY_CODEX_OR_BASH = frozenset(
    {"COLORTERM", "GH_PAGER", "GIT_PAGER", "LANG", "LC_ALL", "LC_CTYPE", "NO_COLOR"}
    | {"PAGER", "TERM", "PWD", "OLDPWD", "SHLVL", "_"}
)
#: The one a login shell would export from ``~/.bash_profile`` (the doctor's own HOME).
PLANTED_PROFILE_ENV = "ADVREVIEW_DOCTOR_PROFILE_SECRET"

#: Every row, in the order printed, with what it checks and whether it is required.
#: Non-required rows observe a runner capability: a difference is a WARN, never a failure,
#: because the runner's default assumption is the safe one.
CHECKS: Mapping[str, tuple[str, bool]] = {
    "version": ("`codex --version` runs and names the version", True),
    "native-launch": (
        "what reviews launch: the npm wrapper's native binary behaves like the wrapper",
        True,
    ),
    "exec-json": ("`exec --json`: the first event is thread.started with a UUID", True),
    "output-file": ("-o holds exactly the last agent message", True),
    "stderr": ("stderr is empty or noise-only on success", True),
    "rollout": ("the rollout file is where expected and holds the attempt marker", True),
    "stale-output-file": ("-o after a failed turn (capability stale_output_file)", False),
    "http-error": ("HTTP 500 with provider retries off: exit code 1 at once", True),
    "timeout-kill": ("a hung Codex is killed as a process group, nothing left", True),
    "resume-thread": ("`resume <id>` keeps the thread id and its rollout", True),
    "resume-history": ("`resume` re-sends the full history", True),
    "resume-bad-uuid": ("`resume <unknown uuid>` exits 1 with thread/resume failed", True),
    "resume-non-uuid": (
        "`resume <non-uuid>` (capability resume_may_start_new_thread)",
        False,
    ),
    "resume-sandbox": ("`-s workspace-write` given on resume is honoured", True),
    "resume-sandbox-inherit": (
        "sandbox of a resume without -s (capability resume_needs_sandbox)",
        False,
    ),
    "output-schema": ("--output-schema is forwarded strictly and unchanged", True),
    "sandbox": ("read-only blocks a write, workspace-write allows it", True),
    "tool-env": (
        "the tool shell sees only the core names and the allowed variable (planted)",
        True,
    ),
    "cleanup": ("no process and no temp directory left behind", True),
}

#: Printed (never applied) when the sandbox probe fails; the same steps as
#: ``docs/codex-compat.md``, "Linux sandbox prerequisites".  Changing AppArmor policy is the
#: operator's decision.
SANDBOX_REMEDY = """\
The Codex sandbox does not work on this host.  On Linux, Codex's workspace-write mode
relies on bubblewrap and unprivileged user namespaces; on Ubuntu 24.04+ AppArmor
restricts them.  Diagnose with:

    bwrap --dev-bind / / --unshare-net /bin/echo ok

If that fails because of AppArmor's user-namespace restriction, install the official
bwrap AppArmor profile (needs root; the doctor does not apply it):

    sudo apt install -y apparmor-profiles apparmor-utils
    sudo install -m 0644 /usr/share/apparmor/extra-profiles/bwrap-userns-restrict \\
      /etc/apparmor.d/bwrap-userns-restrict
    sudo apparmor_parser -r /etc/apparmor.d/bwrap-userns-restrict

Then verify with the bwrap probe above and re-run `pytest --advreview-doctor`.  Until
then, --advreview-sandbox=read-only keeps reviews working (no tests or builds by the
reviewer).  See https://developers.openai.com/codex/concepts/sandboxing"""

#: What the runner assumes of each fact a capability row observes: the text of a PASS row
#: (how the runner relies on it) and of a WARN row (why a difference stays safe).  Only
#: ``resume_needs_sandbox`` is a :class:`CodexCapabilities` field the runner reads; it
#: deletes ``-o`` before every attempt and compares thread ids whatever Codex does.
ASSUMED: Mapping[str, tuple[bool, str, str]] = {
    "resume_needs_sandbox": (
        CodexCapabilities().resume_needs_sandbox,
        "",
        "the runner keeps passing -s, which stays safe",
    ),
    "stale_output_file": (
        True,
        ": the runner deletes -o before every attempt",
        "the runner still deletes -o first, which stays safe",
    ),
    "resume_may_start_new_thread": (
        True,
        ": the runner compares thread ids",
        "comparing thread ids stays safe",
    ),
}

_ROLLOUT_GLOB = CodexCapabilities().rollout_glob
#: The remedy of a Codex that is missing, broken or too old: the pinned install command.
INSTALL_REMEDY = f"Fix: {INSTALL_HINT}."
_WRITE_PROBE = "Write the probe file."


# -- the result ------------------------------------------------------------------------


class DoctorRow(WireModel):
    """One check: ``PASS/FAIL/WARN name — observed``."""

    name: str
    status: Status
    observed: str
    required: bool = True
    #: What to do about a failure, printed after the table (never applied).
    remedy: str | None = None

    @property
    def failed(self) -> bool:
        """True when this row makes the doctor fail (a required row that did not pass)."""
        return self.required and self.status == "FAIL"


class Observed(WireModel):
    """The runner facts the doctor saw; ``None`` where a check could not tell."""

    resume_needs_sandbox: bool | None = None
    stale_output_file: bool | None = None
    resume_may_start_new_thread: bool | None = None
    rollout_glob: str | None = None


class DoctorReport(WireModel):
    """The doctor's result table, as written by ``--advreview-doctor-json``."""

    #: Local date of the run (ISO), for the version log in ``docs/codex-compat.md``.
    date: str
    #: Tags every process of this run (``ADVREVIEW_DOCTOR_RUN=<run_id>:<launch>``).
    run_id: str
    #: The Codex executable as selected (``--advreview-codex``) and as found.
    codex: str
    executable: str | None
    version: str | None
    pinned_version: str = PINNED_CODEX_VERSION
    duration_s: float
    ok: bool
    rows: tuple[DoctorRow, ...]
    observed: Observed
    #: What the runner should assume for this Codex: the defaults, overridden by what
    #: the doctor observed.
    capabilities: CodexCapabilities


# -- pytest wiring -----------------------------------------------------------------------


def main(config: pytest.Config) -> int:
    """Run the doctor for ``pytest --advreview-doctor`` (``doctorplugin.py`` calls it)."""
    from .settings import from_config

    json_path = config.getoption("advreview_doctor_json", None)
    settings = from_config(config)
    if json_path:
        json_path = str(Path(config.invocation_params.dir, json_path))
    model = ModelCheck(
        settings.codex_config,
        online=bool(config.getoption("advreview_doctor_online", False)),
        claude=settings.claude if settings.reviewer == "claude" else None,
    )
    return run_and_report(settings.codex, json_path=json_path, out=sys.stdout, model=model)


@dataclass(frozen=True)
class ModelCheck:
    """The rows about the user's own setup: their ``CODEX_HOME`` and model provider.

    Unlike the contract checks (offline, a throw-away ``CODEX_HOME``), these read the
    run's Codex configuration (``config``: ``--advreview-codex-config``) and make one
    request to the provider's ``base_url`` where one is configured; the built-in OpenAI
    provider only when ``online``.
    """

    config: tuple[str, ...] = ()
    online: bool = False
    #: The Claude Code executable when it is the reviewer (``--advreview-reviewer=claude``):
    #: one more row, its version.
    claude: str | None = None

    def rows(self, codex: str) -> list[DoctorRow]:
        return [*self._codex_rows(codex), *self._claude_rows()]

    def _claude_rows(self) -> list[DoctorRow]:
        """The ``claude`` row: the reviewer's executable answers ``--version`` as Claude
        Code does (``None`` reviewer: no row)."""
        if self.claude is None:
            return []
        from .runner.claude import ClaudeOptions, ClaudeReviewer

        reviewer = ClaudeReviewer(ClaudeOptions(executable=self.claude))
        problem = reviewer.check_ready()
        if problem is not None:
            return [
                DoctorRow(name="claude", status="FAIL", observed=problem, remedy=f"Fix: {problem}")
            ]
        version, _ = reviewer.version()
        seen = f"{self.claude} is Claude Code {version} (the reviewer)"
        return [DoctorRow(name="claude", status="PASS", observed=seen)]

    def _codex_rows(self, codex: str) -> list[DoctorRow]:
        reviewer = CodexReviewer(CodexOptions(executable=codex, config=self.config))
        home = reviewer.home_problem()
        return [
            DoctorRow(
                name="codex-home",
                status="FAIL" if home else "PASS",
                observed=home or f"{reviewer.codex_home} is usable",
                remedy=f"Fix: {home}." if home else None,
            ),
            self._model_row(reviewer),
        ]

    def _model_row(self, reviewer: CodexReviewer) -> DoctorRow:
        provider = reviewer.provider
        missing = reachability.not_configured(provider, reviewer.codex_home, os.environ)
        if missing is not None:
            status: Status = "FAIL" if self.online else "WARN"
            return DoctorRow(name="model", status=status, observed=missing, required=self.online)
        if provider.base_url is None and not self.online:
            seen = (
                f"{provider.endpoint} ({provider.where}); not asked without "
                "--advreview-doctor-online"
            )
            return DoctorRow(name="model", status="PASS", observed=seen)
        url = provider.base_url or reachability.BUILTIN_OPENAI_URL
        started = time.monotonic()
        cause = reachability.reach(url)
        seconds = time.monotonic() - started
        if cause is None:
            seen = f"{url} answered in {seconds:.1f}s ({provider.where})"
            return DoctorRow(name="model", status="PASS", observed=seen)
        message = reachability.unreachable_message(url, cause, 1, seconds)
        return DoctorRow(name="model", status="FAIL", observed=message, remedy=f"Fix: {message}")


def run_and_report(
    codex: str, *, json_path: str | None = None, out: TextIO, model: ModelCheck | None = None
) -> int:
    """Run the doctor, print the table to ``out``, write the JSON to ``json_path`` if given.

    ``model``: also check the user's ``CODEX_HOME`` and model provider (:class:`ModelCheck`).

    :returns: 0 when every required row passed, 1 otherwise.
    """
    out.write(f"advreview doctor: checking {codex} (offline, scripted server on 127.0.0.1)\n")
    out.flush()
    report = _Doctor(codex).run()
    if model is not None:
        rows = (*report.rows, *model.rows(codex))
        ok = not any(row.failed for row in rows)
        report = report.model_copy(update={"rows": rows, "ok": ok})
    out.writelines(f"{row.status} {row.name} — {row.observed}\n" for row in report.rows)
    for remedy in dict.fromkeys(row.remedy for row in report.rows if row.remedy and row.failed):
        out.write(f"\n{remedy}\n")
    failed = [row.name for row in report.rows if row.failed]
    warned = [row.name for row in report.rows if row.status == "WARN"]
    summary = (
        f"FAILED: {', '.join(failed)}"
        if failed
        else "all required checks passed" + (f" ({len(warned)} warning(s))" if warned else "")
    )
    out.write(f"advreview doctor: {summary} in {report.duration_s:.1f}s\n")
    if json_path:
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(Path(json_path), report.model_dump_json(indent=2) + "\n")
        out.write(f"advreview doctor: wrote {json_path}\n")
    out.flush()
    return 0 if report.ok else 1


# -- running -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Launch:
    """What one launch of Codex did."""

    rc: int | None  # None: killed by the doctor's timeout
    stdout: str
    stderr: str
    #: stdout as the runner reads it (its own JSONL reader).
    stream: _Stream
    #: The launch's ``-o`` file (``review.md`` in its work directory).
    output: Path
    seconds: float
    timeout: float
    #: Processes of this launch still alive after the kill (should be none).
    left: tuple[int, ...] = ()

    def how(self) -> str:
        """How the launch ended, for an observed value: ``rc 1 after 0.4 s`` etc."""
        if self.rc is None:
            return (
                f"no exit within {self.timeout:g}s (process group killed"
                + (f", {len(self.left)} process(es) survived" if self.left else "")
                + ")"
            )
        return f"rc {self.rc} after {self.seconds:.1f}s"

    def why(self) -> str:
        """The launch's own explanation of a failure (turn.failed, else stderr's end)."""
        text = self.stream.turn_failed or self.stderr.strip()
        return _clip(text.splitlines()[-1] if text else "no error output")


#: What a check decides for one row: its status and what was observed.
_Row = tuple[Status, str]


class _Probe(NamedTuple):
    """What a write probe did: tool output came back, the command ran, the file exists."""

    answered: bool
    ran: bool
    wrote: bool
    detail: str


class _Skip(Exception):
    """The doctor's time budget is spent: no launch was started; the message says so."""


class _Doctor:
    """One doctor run: temp dirs, server, environment, checks and cleanup."""

    def __init__(self, codex: str) -> None:
        self.codex = codex
        self.token = secrets.token_hex(4)
        self.review_id = f"doctor-{self.token}"
        self.answer1 = f"doctor answer {self.token}\nVERDICT: APPROVED"
        self.bad_uuid = str(uuid.uuid4())
        #: What the tool-env check plants in Codex's environment (name → marker, value)
        #: and in ~/.bash_profile, and the value of the variable it allows.
        self.planted = {
            name: (marker, shape.format(v=marker))
            for name, shape in PLANTED_SHAPES.items()
            for marker in [f"planted-{secrets.token_hex(8)}"]
        }
        self.profile = f"profile-{secrets.token_hex(8)}"
        self.allowed = f"allowed-{secrets.token_hex(8)}"
        self.started = time.monotonic()
        self.rows: dict[str, DoctorRow] = {}
        self.observed: dict[str, Any] = {}
        self.lock = threading.Lock()
        self.cancel = threading.Event()
        self.executable: str | None = None
        self.version: str | None = None
        #: The native binary every launch starts instead of the npm wrapper, as the
        #: runner does (``None``: the executable is launched as given).
        self.native: native.NativeCodex | None = None

    # -- orchestration -------------------------------------------------------------------

    def run(self) -> DoctorReport:
        root = Path(tempfile.mkdtemp(prefix="advreview-doctor-"))
        server: ScriptedServer | None = None
        try:
            self.root = root
            dirs = [root / name for name in ("codex-home", "home", "tmp", "repo")]
            for path in dirs:
                path.mkdir()
            self.home, self.user_home, self.tmp, self.repo = dirs
            self.env = offline_env(
                CODEX_HOME=str(self.home),
                # Codex must never see the user's home (~/.codex, shell rc files, git
                # config); TMPDIR outside CODEX_HOME silences its helper-binary warning.
                HOME=str(self.user_home),
                TMPDIR=str(self.tmp),
                GIT_CONFIG_NOSYSTEM="1",
            )
            self._version()
            if self.version is not None:
                server = ScriptedServer(self._script())
                server.start()
                self.server = server
                self.provider = tuple(server.codex_args(retries=False))
                self._parallel()
        except BaseException:
            self.cancel.set()
            raise
        finally:
            if server is not None:
                server.stop()
            self._cleanup(root)
        return self._report()

    def _parallel(self) -> None:
        try:
            self._git_repo()
        except (OSError, subprocess.SubprocessError) as exc:
            problem = f"cannot create the throw-away git repository: {_clip(str(exc))}"
            self._skip_rest([n for n in CHECKS if n not in ("version", "cleanup")], problem)
            return
        (self.user_home / ".bash_profile").write_text(
            f"export {PLANTED_PROFILE_ENV}={self.profile}\n", encoding="utf-8"
        )
        # The long exec → resume chain is first, so it starts at once.
        groups: dict[str, Callable[[], None]] = {
            "exec-and-resume": self._check_exec_and_resume,
            "native-launch": self._check_native_launch,
            "http-error": self._check_http_error,
        }
        # The checks of one launch and one row: the row, the server's rule, the judge of
        # the launch, and how the launch differs from a plain read-only exec.
        for row, kind, judge, how in (
            ("timeout-kill", "HANG", self._timeout_kill, {"timeout": HANG_PROBE_S}),
            ("resume-bad-uuid", "BADUUID", self._bad_uuid, {"resume": self.bad_uuid}),
            ("resume-non-uuid", "NONUUID", self._non_uuid, {"resume": "not-a-uuid"}),
            ("output-schema", "SCHEMA", self._output_schema, {"schema": True}),
            ("tool-env", "TOOL-ENV", self._tool_env, {"text": "Run the probe.", "env": True}),
        ):
            groups[row] = functools.partial(self._check, row, kind, judge, **how)
        groups["sandbox"] = self._check_sandbox
        # One Codex start costs about 0.8 CPU-seconds: more launches at once than CPUs only
        # stretch each of them towards LAUNCH_TIMEOUT_S (8 at once on a busy 2-core CI
        # runner all timed out), while the total stays bound by the CPUs either way.
        # The affinity mask, as in a container, where there is one.
        affinity = getattr(os, "sched_getaffinity", None)
        cpus = len(affinity(0)) if affinity else os.cpu_count() or 2
        workers = min(len(groups), max(2, cpus))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="doctor") as pool:
            futures = [pool.submit(self._guard, *group) for group in groups.items()]
            try:
                for future in futures:
                    future.result()
            except BaseException:
                # Ctrl-C: make every launch kill its process group now.
                self.cancel.set()
                raise

    def _guard(self, label: str, check: Callable[[], None]) -> None:
        """Run one group of checks; a doctor bug becomes a FAIL row, not a crash."""
        try:
            check()
        except Exception as exc:  # pragma: no cover - defensive
            self._add(label, "FAIL", f"doctor error: {type(exc).__name__}: {_clip(str(exc))}")

    def _check(self, row: str, kind: str, judge: Callable[[_Launch], _Row], **how: Any) -> None:
        """Launch Codex on the server's ``kind`` rule and let ``judge`` decide ``row``."""
        launch = self._exec(kind, [row], **how)
        if launch is not None:
            self._add(row, *judge(launch))

    def _add(self, name: str, status: Status, observed: str, *, remedy: str | None = None) -> None:
        required = CHECKS.get(name, ("", True))[1]
        if not required and status == "FAIL":
            status = "WARN"
        row = DoctorRow(
            name=name, status=status, observed=observed, required=required, remedy=remedy
        )
        with self.lock:
            self.rows.setdefault(name, row)

    def _skip_rest(self, names: Sequence[str], why: str, said: str = "not run") -> None:
        """``said`` rows (``not observed`` for a capability row) for ``names``."""
        for name in names:
            self._add(name, "FAIL", f"{said if CHECKS[name][1] else 'not observed'}: {why}")

    def _capability(self, field: str, value: bool, seen: str) -> _Row:
        """A row that observes a runner capability: PASS as assumed, WARN when it differs.

        A difference is never a failure: the runner's default assumption is the safe one.
        """
        self.observed[field] = value
        default, assumed, differs = ASSUMED[field]
        if value == default:
            return "PASS", f"{seen} (capabilities.{field}={value}, as assumed{assumed})"
        return "WARN", f"{seen} (capabilities.{field}={value}, differs from the default; {differs})"

    def _report(self) -> DoctorReport:
        missing = (
            "not run: codex cannot be used (see the version row)"
            if self.version is None
            else "not run: its check stopped early (see the other rows)"
        )
        # The rows that never ran because Codex could not: the same fix as the version row.
        remedy = INSTALL_REMEDY if self.version is None else None
        for name in CHECKS:
            self._add(name, "FAIL", missing, remedy=remedy)  # only where no row was made
        rows = [self.rows[name] for name in CHECKS]
        rows += [row for name, row in self.rows.items() if name not in CHECKS]
        # Only the facts the runner reads: the others are the doctor's own (ASSUMED).
        seen = {k: v for k, v in self.observed.items() if k in CodexCapabilities.model_fields}
        return DoctorReport(
            date=_dt.date.today().isoformat(),
            run_id=self.token,
            codex=self.codex,
            executable=self.executable,
            version=self.version,
            duration_s=round(time.monotonic() - self.started, 2),
            ok=not any(row.failed for row in rows),
            rows=tuple(rows),
            observed=Observed(**self.observed),
            capabilities=CodexCapabilities.from_observed(**seen),
        )

    # -- plumbing ------------------------------------------------------------------------

    def _marker(self, kind: str) -> str:
        return f"ADVREVIEW-DOCTOR-{kind}-{self.token}"

    def _call_id(self, kind: str) -> str:
        return f"call_{kind.lower()}_{self.token}"

    def _probe_cmd(self, kind: str) -> tuple[str, Path]:
        target = self.repo / f"probe-{kind.lower()}-{self.token}.txt"
        return f"echo RAN-{kind}-{self.token}; touch {target}", target

    def _script(self) -> dict[str, Any]:
        """The server's script: one rule per check, keyed by a marker with this run's token."""
        steps: dict[str, list[dict[str, Any]]] = {
            "BASIC": [{"message": self.answer1}],
            "NONUUID": [{"message": "fresh thread"}],
            "HTTP": [{"http_status": 500}],
            "HANG": [{"hang": 60}],
            "SCHEMA": [{"message": '{"doctor": true}'}],
        }
        probes = {
            kind: self._probe_cmd(kind)[0]
            for kind in ("RESUME-WW", "RESUME-BARE", "SANDBOX-RO", "SANDBOX-WW")
        }
        probes["TOOL-ENV"] = f"echo RAN-TOOL-ENV-{self.token}; env"
        for kind, cmd in probes.items():
            call = shell_step(cmd, self._call_id(kind))
            steps[kind] = [call, {"message": f"probe {kind} done"}]
        rules = [
            {"match": self._marker(kind), "in": "last_user", "steps": kind_steps}
            for kind, kind_steps in steps.items()
        ]
        return {"rules": rules, "default": {"message": "ok"}}

    def _exec(
        self,
        kind: str,
        rows: Sequence[str],
        *,
        sandbox: Sandbox = "read-only",
        resume: str | None = None,
        text: str = "Reply briefly.",
        schema: bool = False,
        env: bool = False,
        timeout: float | None = None,
    ) -> _Launch | None:
        """Launch Codex as a review does, on the prompt of the server's ``kind`` rule.

        The command line is the runner's own (:meth:`CodexReviewer.argv`), with approvals
        pinned to ``never``: a tool call must never wait for one.  ``schema`` passes the
        review schema, ``env`` plants :data:`PLANTED_SHAPES` and allows :data:`ALLOWED_ENV`.
        ``None`` when the budget is
        spent; ``rows`` then say so.
        """
        work = self._work(kind.lower())
        schema_file = work / "schema.json" if schema else None
        if schema_file is not None:
            schema_file.write_text(json.dumps(review_schema()), encoding="utf-8")
        launch_env = dict(self.env, **self._planted_env()) if env else self.env
        options = CodexOptions(
            executable=self.codex,
            sandbox=sandbox,
            approvals="never",
            config=self.provider,
            env=launch_env,
            env_allow=(ALLOW_GLOB,) if env else (),
        )
        request = DispatchRequest(
            review_id=self.review_id,
            repo_root=self.repo,
            operation=Operation.INITIAL if resume is None else Operation.RESUME,
            prompt_body=text,
            work_dir=work,
            session_id=resume,
        )
        argv = CodexReviewer(options).argv(request, work / "review.md", schema_file)
        prompt = with_marker(f"{self._marker(kind)} {text}\n", self.review_id, "000001")
        try:
            return self._launch(kind.lower(), argv, prompt, timeout=timeout, env=launch_env)
        except _Skip as skip:
            self._skip_rest(rows, str(skip))
            return None

    def _planted_env(self) -> dict[str, str]:
        """What the tool-env launch adds to Codex's environment."""
        env = {name: value for name, (_, value) in self.planted.items()}
        env |= {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.https://doctor.invalid/"}
        env[ALLOWED_ENV] = self.allowed
        return env

    def _work(self, name: str) -> Path:
        work = self.root / "runs" / name
        work.mkdir(parents=True, exist_ok=True)
        return work

    def _launch(
        self,
        name: str,
        argv: Sequence[str],
        prompt: str,
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        as_given: bool = False,
    ) -> _Launch:
        """Run one Codex process with a wall-clock timeout; kill its group when over.

        Codex is started the way the runner starts it: the native binary in place of the
        npm wrapper when it resolves, unless ``as_given``.

        :raises _Skip: the doctor's time budget is spent (no launch was started).
        """
        remaining = BUDGET_S - (time.monotonic() - self.started)
        if remaining < 1.0 or self.cancel.is_set():
            raise _Skip(f"the doctor's {BUDGET_S:g}s budget was spent before this launch")
        limit = min(LAUNCH_TIMEOUT_S if timeout is None else timeout, remaining)
        work = self._work(name)
        stdin, stdout, stderr = (work / "stdin.txt", work / STREAM_FILE, work / "stderr.txt")
        stdin.write_text(prompt, encoding="utf-8")
        env = dict(self.env if env is None else env, **{RUN_TAG_ENV: f"{self.token}:{name}"})
        if self.native is not None and not as_given:
            argv = [self.native.binary, *argv[1:]]
            env = self.native.environment(env)
        start = time.monotonic()
        rc = launch(
            argv,
            cwd=self.repo,
            stdin_file=stdin,
            stdout_file=stdout,
            stderr_file=stderr,
            env=env,
            timeout=limit,
            cancel=self.cancel,
        )
        seconds = time.monotonic() - start
        return _Launch(
            rc=rc,
            stdout=read_text(stdout) or "",
            stderr=read_text(stderr) or "",
            stream=_read_stream(stdout),
            output=work / "review.md",
            seconds=seconds,
            timeout=limit,
            left=tuple(_tagged_pids(f"{self.token}:{name}", grace=5.0)) if rc is None else (),
        )

    def _requests(self, kind: str) -> list[Any]:
        marker = self._marker(kind)
        return [r for r in self.server.response_requests if marker in r.last_user_text]

    def _tool_output(self, kind: str) -> str | None:
        """What the probe command printed, as Codex posted it back to the server."""
        for request in self._requests(kind):
            for item in request.function_call_outputs:
                if item.get("call_id") == self._call_id(kind):
                    output = item.get("output")
                    text = output if isinstance(output, str) else json.dumps(output)
                    return text.split("Output:\n", 1)[-1].strip()
        return None

    def _probe(self, kind: str, launch: _Launch) -> _Probe:
        """What one write probe (``echo RAN…; touch <repo>/probe-…``) did."""
        _, target = self._probe_cmd(kind)
        output = self._tool_output(kind)
        ran = output is not None and f"RAN-{kind}-{self.token}" in output
        if output is None:
            detail = f"the probe command never ran (no tool output came back; {launch.how()})"
        else:
            lines = [line for line in output.splitlines() if line.strip() and "RAN-" not in line]
            # The throw-away path says nothing to a reader and would crowd the row.
            shown = lines[-1].replace(str(self.repo), "<repo>") if lines else "no error output"
            detail = _clip(shown)
        return _Probe(answered=output is not None, ran=ran, wrote=target.exists(), detail=detail)

    # -- checks --------------------------------------------------------------------------

    def _version(self) -> None:
        """The version row; :attr:`version` stays ``None`` when Codex cannot be started
        (or is older than the runner needs: then no other check is worth running)."""
        self.executable = shutil.which(self.codex)
        if self.executable is None:
            return self._cannot_run(f"{self.codex!r} not found (not on PATH, not a file)")
        try:
            # Through _launch like every other call: timeout, group kill, run tag.
            launch = self._launch("version", [self.executable, "--version"], "", as_given=True)
        except (OSError, _Skip) as exc:
            return self._cannot_run(f"`{self.codex} --version` failed: {_clip(str(exc))}")
        printed = launch.stdout.strip()
        match = VERSION_LINE.match(printed)
        if launch.rc != 0 or match is None:
            seen = f"`--version` printed {_clip(printed)!r} ({launch.how()})"
            return self._cannot_run(f"{seen}, expected 'codex-cli X.Y.Z'")
        if older_than_pinned(match.group(1)):
            return self._cannot_run(f"{printed}: older than {PINNED_CODEX_VERSION}")
        self.version = match.group(1)
        self.native = native.resolve(self.codex, self.env)
        if self.version == PINNED_CODEX_VERSION:
            return self._add("version", "PASS", printed)
        verified = f"the plugin was verified against {PINNED_CODEX_VERSION}"
        observed = f"{printed} ({verified}; the rows below decide whether it still works)"
        return self._add("version", "WARN", observed)

    def _cannot_run(self, observed: str) -> None:
        """The version row's failure, with the install command as its remedy."""
        self._add("version", "FAIL", observed, remedy=INSTALL_REMEDY)

    def _check_native_launch(self) -> None:
        """Which program reviews start, and that the native binary acts as the wrapper.

        Both print the same version, and both hand a command the same ``CODEX_MANAGED_*``
        variables (``codex sandbox -- env``, read-only: it writes nothing).
        """
        assert self.executable is not None
        if self.native is None:
            script = Path(self.executable).resolve()
            if script.name == "codex.js":
                self._add(
                    "native-launch",
                    "WARN",
                    f"reviews launch the npm wrapper {self.executable}: its platform binary "
                    "could not be resolved (each launch pays for Node's start)",
                    remedy="Point --advreview-codex at the native binary "
                    "(node_modules/@openai/codex-<platform>/vendor/<target>/bin/codex).",
                )
            else:
                self._add("native-launch", "PASS", f"reviews launch {script} as given")
            return
        probe = ["sandbox", "-c", "sandbox_mode=read-only", "--", "env"]
        seen = {}
        try:
            for kind, as_given in (("wrapper", True), ("native", False)):
                version, env = (
                    self._launch(f"{kind}-{name}", [self.executable, *args], "", as_given=as_given)
                    for name, args in (("version", ["--version"]), ("env", probe))
                )
                pairs = (line.split("=", 1) for line in env.stdout.splitlines() if "=" in line)
                managed = {k: v for k, v in pairs if k.startswith("CODEX_MANAGED")}
                seen[kind] = (version.rc, version.stdout.strip()), (env.rc, managed), env.how()
        except _Skip as skip:
            self._add("native-launch", "FAIL", f"not run: {skip}")
            return
        (w_version, w_env, w_how), (n_version, n_env, n_how) = seen["wrapper"], seen["native"]
        differences = []
        if w_version != n_version:
            differences.append(
                f"--version: wrapper {_clip(w_version[1])!r}, native {_clip(n_version[1])!r}"
            )
        if w_env != n_env:
            differences.append(
                f"environment: wrapper {w_env[1]} ({w_how}), native {n_env[1]} ({n_how})"
            )
        if differences:
            self._add(
                "native-launch",
                "FAIL",
                f"the native binary {self.native.binary} differs from the wrapper: "
                + "; ".join(differences),
                remedy="Report it, and point --advreview-codex at the binary the wrapper "
                "starts once you have checked it.",
            )
            return
        self._add(
            "native-launch",
            "PASS",
            f"reviews launch {self.native.binary} (the npm wrapper's platform binary): same "
            f"version and CODEX_MANAGED_* environment as through the wrapper",
        )

    def _git_repo(self) -> None:
        (self.repo / "README.md").write_text("# advreview doctor\n", encoding="utf-8")
        # HOME is the doctor's own (no global git config): the commit names its identity.
        me = ["-c", "user.name=doctor", "-c", "user.email=doctor@example.invalid"]
        commit = [*me, "-c", "commit.gpgsign=false", "commit", "-qm", "doctor"]
        for args in (["init", "-q"], ["add", "."], commit):
            subprocess.run(
                ["git", *args],
                cwd=self.repo,
                env=self.env,
                check=True,
                capture_output=True,
                timeout=LAUNCH_TIMEOUT_S,
            )

    def _check_exec_and_resume(self) -> None:
        """exec → rows exec-json, output-file, stderr, rollout; then the resume chain."""
        resumes = ["resume-thread", "resume-history", "resume-sandbox", "resume-sandbox-inherit"]
        rows = ["exec-json", "output-file", "stderr", "rollout", *resumes]
        first = self._exec("BASIC", rows, sandbox="workspace-write")
        if first is None:
            return
        tid = first.stream.first_thread_id
        if first.rc != 0:
            self._add("exec-json", "FAIL", f"exec failed: {first.how()}: {first.why()}")
            failed = f"exec failed ({first.how()})"
            self._skip_rest(["output-file", "stderr"], failed, "not checked")
        else:
            self._add("exec-json", *self._exec_json(first))
            self._add("output-file", *self._output_file(first))
            self._add("stderr", *self._stderr(first))
        self._add("rollout", *self._rollout(tid))
        if tid is None or first.rc != 0:
            self._skip_rest(resumes, "the first exec gave no thread id to resume")
            return
        # resume with -s workspace-write (the runner's form), then resume without -s.
        again = self._exec(
            "RESUME-WW", resumes, sandbox="workspace-write", resume=tid, text=_WRITE_PROBE
        )
        if again is None:
            return
        self._add("resume-thread", *self._resume_thread(again, tid))
        self._add("resume-history", *self._resume_history())
        self._add("resume-sandbox", *self._resume_sandbox(self._probe("RESUME-WW", again)))
        bare = self._exec(
            "RESUME-BARE", resumes[-1:], sandbox="inherit", resume=tid, text=_WRITE_PROBE
        )
        if bare is not None:
            inherit = self._sandbox_inherit(self._probe("RESUME-BARE", bare))
            self._add("resume-sandbox-inherit", *inherit)

    def _exec_json(self, launch: _Launch) -> _Row:
        event: dict[str, Any] = {}
        with contextlib.suppress(ValueError):
            first = json.loads(launch.stdout.split("\n", 1)[0])
            event = first if isinstance(first, dict) else {}
        tid, kind = launch.stream.first_thread_id, event.get("type")
        if kind == "thread.started" and tid is None:
            got = event.get("thread_id")
            return "FAIL", f"thread.started with a non-UUID id {got!r}"
        if tid is None:
            seen = f"first event is {kind!r}" if kind else "stdout has no JSON event"
            return "FAIL", f"{seen}, not thread.started ({launch.how()})"
        return "PASS", f"first event thread.started, thread_id {tid}"

    def _output_file(self, launch: _Launch) -> _Row:
        text = read_text(launch.output)
        if text is None:
            return "FAIL", "-o was never created"
        if text == self.answer1:
            size = len(text.encode())
            return "PASS", f"holds exactly the agent message ({size} bytes, no trailing newline)"
        if not text:
            return "FAIL", "-o is empty (0 bytes) after a successful turn"
        return "FAIL", f"-o holds {_clip(text)!r}, expected the agent message {self.answer1!r}"

    def _stderr(self, launch: _Launch) -> _Row:
        lines = [line for line in launch.stderr.splitlines() if line.strip()]
        failure = next((line for line in lines if _STDERR_FAILURE.search(line)), None)
        if failure is not None:
            return (
                "FAIL",
                f"a successful run printed what the runner reads as failure: {_clip(failure)}",
            )
        return "PASS", f"noise only ({len(lines)} line(s): {_clip(lines[0])})" if lines else "empty"

    def _rollouts(self, tid: str) -> tuple[str, list[Path]]:
        """Where the runner looks for the rollout of thread ``tid``, and what is there."""
        pattern = _ROLLOUT_GLOB.format(thread_id=tid)
        return pattern, sorted(self.home.glob(pattern))

    def _rollout(self, tid: str | None) -> _Row:
        if tid is None:
            return "FAIL", "not checked: no thread id from exec"
        pattern, found = self._rollouts(tid)
        if len(found) != 1:
            anywhere = sorted(str(p.relative_to(self.home)) for p in self.home.rglob("rollout-*"))
            seen = _clip(", ".join(anywhere) or "none")
            return (
                "FAIL",
                f"{len(found)} file(s) match $CODEX_HOME/{pattern}; rollouts found: {seen}",
            )
        rel = found[0].relative_to(self.home)
        marker = f"ADVERSARIAL-REVIEW-SESSION: {self.review_id}-000001"
        if marker not in found[0].read_text(encoding="utf-8", errors="replace"):
            return "FAIL", f"{rel} does not hold the attempt marker"
        self.observed["rollout_glob"] = _ROLLOUT_GLOB
        return "PASS", f"$CODEX_HOME/{rel} holds the attempt marker"

    def _resume_thread(self, launch: _Launch, tid: str) -> _Row:
        again = launch.stream.first_thread_id
        count = len(self._rollouts(tid)[1])
        if launch.rc != 0:
            return "FAIL", f"resume failed: {launch.how()}: {launch.why()}"
        if again != tid:
            seen = f"thread {again}" if again else "no thread.started"
            return "FAIL", f"resume of {tid} reported {seen}"
        if count != 1:
            return "FAIL", f"same thread id, but {count} rollout files match it (expected 1)"
        return "PASS", f"same thread_id {tid}, same rollout file"

    def _resume_history(self) -> _Row:
        requests = self._requests("RESUME-WW")
        if not requests:
            return "FAIL", "the resume sent no request to the server"
        texts = requests[0].input_texts
        wanted = {
            "prompt 1": self._marker("BASIC"),
            "answer 1": self.answer1,
            "prompt 2": self._marker("RESUME-WW"),
        }
        positions = {
            label: next((i for i, text in enumerate(texts) if needle in text), None)
            for label, needle in wanted.items()
        }
        missing = [label for label, pos in positions.items() if pos is None]
        order = [pos for pos in positions.values() if pos is not None]
        if missing:
            lacks = ", ".join(missing)
            return "FAIL", f"the resume request ({len(texts)} messages) lacks {lacks}"
        if order != sorted(order):
            return "FAIL", f"history out of order: positions {order}"
        return "PASS", f"{len(texts)} messages re-sent: prompt 1, answer 1, prompt 2 in order"

    def _resume_sandbox(self, probe: _Probe) -> _Row:
        if probe.wrote:
            return "PASS", "resume with -s workspace-write wrote the probe"
        if not probe.ran:
            return "FAIL", probe.detail
        # Not the AppArmor remedy: the sandbox row tells whether the host sandbox works;
        # this row is about Codex ignoring the mode the runner passes on resume.
        return "FAIL", (
            f"resume with -s workspace-write could not write: {probe.detail} "
            "(reviews that resume would lose workspace-write)"
        )

    def _sandbox_inherit(self, probe: _Probe) -> _Row:
        if not probe.ran:
            return "WARN", f"not observed: {probe.detail}"
        if probe.wrote:
            seen = "inherited: a resume without -s could still write"
        else:
            seen = f"not inherited: a resume without -s ran read-only ({probe.detail})"
        return self._capability("resume_needs_sandbox", not probe.wrote, seen)

    def _check_http_error(self) -> None:
        """A 500 with retries off: exit 1 at once; -o written earlier stays stale."""
        stale = f"STALE-{self.token}"
        (self._work("http") / "review.md").write_text(stale, encoding="utf-8")
        launch = self._exec("HTTP", ["http-error", "stale-output-file"])
        if launch is None:
            return
        count = len(self._requests("HTTP"))
        if launch.rc == 1:
            self._add(
                "http-error",
                "PASS" if count <= 1 else "WARN",
                f"{launch.how()}, {count} request(s) (retries off): {launch.why()}",
            )
        else:
            seen = f"{launch.how()} on HTTP 500 (expected rc 1), {count} request(s)"
            self._add("http-error", "FAIL", seen)
        if launch.rc == 0:
            self._add("stale-output-file", "WARN", "not observed: the failing turn exited 0")
            return
        text = read_text(launch.output)
        if text is None:
            seen = "-o was deleted by the failed turn"
        elif text == stale:
            seen = "-o kept its stale content after the failed turn"
        else:
            seen = f"-o was rewritten to {_clip(text)!r} by the failed turn"
        self._add("stale-output-file", *self._capability("stale_output_file", text == stale, seen))

    def _timeout_kill(self, launch: _Launch) -> _Row:
        """A server that never answers: the doctor's timeout kills the whole group."""
        if launch.rc is not None:
            why = f"codex exited by itself ({launch.how()}) although the server never answered"
            return "WARN", f"not exercised: {why}"
        if launch.left:
            pids = ", ".join(map(str, launch.left))
            return "FAIL", f"after SIGTERM+SIGKILL to the process group, pid(s) {pids} still run"
        waited = f"still waiting after {launch.timeout:g}s"
        return "PASS", f"{waited}; process group killed, no process left"

    def _bad_uuid(self, launch: _Launch) -> _Row:
        """``resume <unknown uuid>`` must fail loudly, not start something."""
        said = "thread/resume failed"
        if launch.rc == 1 and said in launch.stderr:
            line = next(line for line in launch.stderr.splitlines() if said in line)
            return "PASS", f"rc 1: {_clip(line)}"
        if launch.rc == 1:
            return "FAIL", f"rc 1 but stderr lacks '{said}': {launch.why()}"
        got = launch.stream.first_thread_id
        started = f", thread.started {got}" if got else ""
        return "FAIL", (
            f"resume of unknown thread {self.bad_uuid}: {launch.how()}{started} "
            f"(expected rc 1 with '{said}')"
        )

    def _non_uuid(self, launch: _Launch) -> _Row:
        """``resume not-a-uuid``: 0.171 silently starts a new thread."""
        tid = launch.stream.first_thread_id
        if launch.rc == 0 and tid is not None:
            new, seen = True, f"rc 0, started a new thread {tid}"
        elif launch.rc is not None and launch.rc != 0:
            new, seen = False, f"rejected ({launch.how()}: {launch.why()})"
        else:
            got = "" if launch.rc is None else " without thread.started"
            return "WARN", f"not observed: {launch.how()}{got}"
        return self._capability("resume_may_start_new_thread", new, seen)

    def _output_schema(self, launch: _Launch) -> _Row:
        """``--output-schema``: the file goes out verbatim as a strict ``text.format``."""
        requests = self._requests("SCHEMA")
        if not requests:
            why = "" if launch.rc == 0 else f": {launch.why()}"
            return "FAIL", f"no request reached the server ({launch.how()}{why})"
        text = requests[0].body.get("text")
        fmt = text.get("format") if isinstance(text, dict) else None
        if not isinstance(fmt, dict):
            return "FAIL", "the request has no text.format"
        if fmt.get("type") != "json_schema" or fmt.get("strict") is not True:
            got = f"type={fmt.get('type')!r} strict={fmt.get('strict')!r}"
            return "FAIL", f"text.format {got} (expected json_schema, true)"
        if fmt.get("schema") != review_schema():
            return "FAIL", "the schema was changed on the way to the model"
        return "PASS", "text.format json_schema, strict: true, schema forwarded unchanged"

    def _tool_env(self, launch: _Launch) -> _Row:
        """Exactly the allow-list reaches the tool shell under the runner's arguments.

        The runner gives the tool shell Codex's core names and the allowed variables
        (:mod:`.runner.environment`); Codex's own default hands its whole environment, and
        a login shell's profile, to every tool call.  Planted: credentials of every shape
        that a guess by name misses (:data:`PLANTED_SHAPES`), a ``~/.bash_profile``
        export, and one allowed variable.
        """
        output = self._tool_output("TOOL-ENV")
        sent = "\n".join(json.dumps(r.body) for r in self._requests("TOOL-ENV"))
        planted = [
            (f"{name} (from Codex's environment)", marker)
            for name, (marker, _) in self.planted.items()
        ]
        planted.append((f"{PLANTED_PROFILE_ENV} (exported by ~/.bash_profile)", self.profile))
        seen = [label for label, marker in planted if marker in sent]
        if output is None or f"RAN-TOOL-ENV-{self.token}" not in output:
            return "FAIL", f"the env probe never ran (no tool output came back; {launch.how()})"
        if seen:
            return "FAIL", (
                f"the tool shell saw {' and '.join(seen)}, and its value went to the model; "
                "Codex no longer honours shell_environment_policy.include_only or "
                "allow_login_shell=false"
            )
        printed = dict(line.split("=", 1) for line in output.splitlines() if "=" in line)
        if printed.get(ALLOWED_ENV) != self.allowed:
            return "FAIL", (
                f"the allowed {ALLOWED_ENV} did not reach the tool shell (advreview_env_allow "
                f"would not work): {_clip(output)}"
            )
        if "PATH" not in printed:
            return "FAIL", f"env printed no PATH: {_clip(output)}"
        # Exactly the allow-list: any other variable of Codex's environment that came
        # through with its value is one the policy should have held back.
        ours = {**os.environ, **self.env, **self._planted_env()}
        ours[RUN_TAG_ENV] = f"{self.token}:tool-env"
        extra = sorted(
            name
            for name, value in printed.items()
            if ours.get(name) == value
            and name not in CORE_NAMES
            and name != ALLOWED_ENV
            and name not in _SET_BY_CODEX_OR_BASH
            and not name.startswith("CODEX_")
        )
        if extra:
            return "FAIL", (
                f"the tool shell saw {', '.join(extra[:8])} besides the allow-list; Codex "
                "no longer applies shell_environment_policy.include_only as measured"
            )
        core = [name for name in CORE_NAMES if name in printed]
        return "PASS", (
            f"planted {len(self.planted)} credentials (PAT, webhook, URL query, URL list, "
            "option string, PEM, JWT, mnemonic, GIT_CONFIG_VALUE_0) and a ~/.bash_profile "
            f"export: none came through; {ALLOWED_ENV} and {', '.join(core)} did"
        )

    def _check_sandbox(self) -> None:
        """Read-only must block a write, workspace-write must allow it (a real probe)."""
        probes: list[_Probe] = []
        for kind, mode in (("SANDBOX-RO", "read-only"), ("SANDBOX-WW", "workspace-write")):
            launch = self._exec(kind, ["sandbox"], sandbox=mode, text=_WRITE_PROBE)
            if launch is None:
                return  # the budget is spent, and the row says so
            probes.append(self._probe(kind, launch))
        ro, ww = probes
        problems: list[str] = []
        if not ro.ran:
            problems.append(f"read-only: {ro.detail}")
        elif ro.wrote:
            problems.append("read-only: the write went through (no sandbox)")
        if not ww.ran:
            problems.append(f"workspace-write: {ww.detail}")
        elif not ww.wrote:
            problems.append(f"workspace-write: the write was refused ({ww.detail})")
        if not problems:
            done = f"read-only refused the write ({ro.detail}); workspace-write wrote it"
            self._add("sandbox", "PASS", done)
            return
        # The AppArmor remedy only fits when Codex did run the tool call and the sandbox
        # got in the way; a probe that never came back is a different problem.
        remedy = SANDBOX_REMEDY if ro.answered and ww.answered else None
        self._add("sandbox", "FAIL", "; ".join(problems), remedy=remedy)

    # -- cleanup -------------------------------------------------------------------------

    def _cleanup(self, root: Path) -> None:
        """Kill whatever the doctor started that is still alive, remove the temp dir."""
        left = _tagged_pids(f"{self.token}:", grace=5.0)
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(root, ignore_errors=True)
        problems = []
        if left:
            problems.append(f"killed {len(left)} leftover process(es): {left[:5]}")
        if root.exists():
            problems.append(f"could not remove {root}")
        if problems:
            self._add("cleanup", "FAIL", "; ".join(problems))
        else:
            self._add("cleanup", "PASS", "no process left, temp directory removed")


# -- helpers -----------------------------------------------------------------------------


def _tagged_pids(tag: str, grace: float = 0.0) -> list[int]:
    """Pids of live processes whose environment has ``ADVREVIEW_DOCTOR_RUN=<tag>…``.

    The tag survives fork/exec and even ``setsid``, so it finds what a process-group kill
    would miss.  Linux only (``/proc``); elsewhere the group kill is all there is.
    SIGKILL is delivered asynchronously: for a moment after the group kill, a member can
    still show its environment in ``/proc``, so processes are looked for again for up to
    ``grace`` seconds until none is left.
    """
    needle = f"{RUN_TAG_ENV}={tag}".encode()
    deadline = time.monotonic() + grace
    while True:
        found: list[int] = []
        try:
            entries = [int(name) for name in os.listdir("/proc") if name.isdigit()]
        except OSError:  # pragma: no cover - not Linux
            return found
        for pid in entries:
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                continue  # gone, or not ours
            if pid != os.getpid() and any(v.startswith(needle) for v in environ.split(b"\0")):
                found.append(pid)
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


def _clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
