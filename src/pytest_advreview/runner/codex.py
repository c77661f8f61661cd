"""The Codex CLI backend: one runner dispatch of ``codex exec``, checked strictly.

One :meth:`CodexReviewer.dispatch` is one runner dispatch: at most two launches of
``codex exec`` (an attempt and one retry, each with a fresh attempt id), four strict
checks in order (exit code, stderr, review file, session id: the first that fails names
the failure), two-tier session-id capture, archival of a failed resume, and a
:class:`~pytest_advreview.models.RunnerResult` with the field names of the published
result schema (``docs/advreview-results.schema.json``).

Where Codex CLI 0.171 differs from what a runner would assume, the measured behaviour
wins (``docs/codex-compat.md``, "Where 0.171 differs from the obvious assumptions"): the
sandbox is *not* inherited on resume, so every launch
passes it again; ``-o`` keeps stale content, so it is deleted before every attempt;
``resume <non-uuid>`` silently starts a new thread, so the thread id is checked; the npm
wrapper orphans the native binary on SIGKILL, so the whole process group is killed.  The
tool shell inherits Codex's whole environment, so every launch narrows it
(:mod:`.environment`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from .. import parse
from ..constants import CODEX_INSTALL_COMMAND, MAX_ERROR_CHARS, PINNED_CODEX_VERSION
from ..models import (
    Operation,
    OutputFormat,
    Review,
    ReviewQuality,
    RunnerResult,
    RunnerStatus,
    TokenUsage,
    Triage,
    Verdict,
    WireModel,
)
from ..options import default
from ..prompts import with_marker
from . import (
    CANCELLED,
    STREAM_FILE,
    DispatchRequest,
    DispatchResult,
    attempt_seconds,
    dispatch_usage,
    environment,
    files_digest,
    lifetime,
    native,
    reachability,
    retry_once,
    review_limit_reached,
)
from ._process import clip, launch, read_text, tail

__all__ = [
    "GATE_CODEX_CONFIG",
    "INSTALL_HINT",
    "TOOL_TMP_PREFIX",
    "VERSION_LINE",
    "CodexCapabilities",
    "CodexOptions",
    "CodexReviewer",
    "approval_args",
    "containment_args",
    "older_than_pinned",
    "private_tool_tmp",
    "remove_tool_tmp",
    "sandbox_args",
]

#: A ``--advreview-sandbox`` value, one of ``options.CHOICES["sandbox"]``.
Sandbox = str

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_ROLLOUT_ID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$")
_STDERR_FAILURE = re.compile(r"^Error:|Failed to write", re.MULTILINE)
_ERROR_LINE = re.compile(r"^Error: .*$", re.MULTILINE)
#: What ``codex --version`` prints: ``codex-cli 0.171.0``.
VERSION_LINE = re.compile(r"^codex-cli (\d+\.\d+\.\d+\S*)$")
#: The fix every message about a missing, broken or old Codex names.
INSTALL_HINT = (
    f"install the version this plugin was verified against with `{CODEX_INSTALL_COMMAND}`, "
    "or point --advreview-codex=PATH at one"
)
#: Seconds ``codex --version`` may take at the start of a run (a cold disk, a slow Node).
VERSION_TIMEOUT_S = 30.0


def older_than_pinned(version: str) -> bool:
    """Whether ``version`` (``X.Y.Z``, maybe with a suffix) predates the pinned version.

    Older CLIs lack what the runner was built on; a newer one is the doctor's to judge.
    """

    def numbers(text: str) -> tuple[int, ...]:
        return tuple(int(n) for n in re.findall(r"\d+", text)[:3])

    return numbers(version) < numbers(PINNED_CODEX_VERSION)


class CodexCapabilities(WireModel):
    """Facts about the installed Codex CLI that the runner depends on, in one place.

    The defaults are the measured behaviour of Codex 0.171.0.  A CLI upgrade that
    changes one of them is one edit here (and a failing row in the doctor).  A wire
    model: the doctor writes it into its JSON report (``DoctorReport.capabilities``).
    Behaviours the runner guards against unconditionally (stale ``-o`` content, a resume
    that starts a new thread) are not here: the doctor observes them against its own
    expectations (``doctor.ASSUMED``).
    """

    #: The sandbox must be passed again on ``exec resume`` (not persisted in the thread).
    resume_needs_sandbox: bool = True
    #: Rollouts live at ``$CODEX_HOME/sessions/*/*/*/rollout-*-<id>.jsonl``.
    rollout_glob: str = "sessions/*/*/*/rollout-*-{thread_id}.jsonl"

    @classmethod
    def from_observed(cls, **observed: bool | str | None) -> CodexCapabilities:
        """The defaults, overridden by every fact that was observed (``None``: not seen).

        ``pytest --advreview-doctor`` fills this from its checks
        (``DoctorReport.capabilities``).
        """
        return cls.model_validate({k: v for k, v in observed.items() if v is not None})


@dataclass(frozen=True)
class CodexOptions:
    """How to launch Codex: executable, model settings and the user's ``-c`` pairs.

    The defaults and allowed values are the options' (:data:`..options.SPECS`).
    """

    executable: str = default("codex")
    model: str = default("model")
    reasoning: str = default("reasoning")
    sandbox: str = default("sandbox")
    approvals: str = default("approvals")
    #: ``KEY=VALUE`` pairs passed as ``-c`` to every exec *and* resume.
    config: tuple[str, ...] = ()
    #: Wall-clock seconds per attempt.
    timeout: float = default("timeout")
    #: Seconds an attempt may go on failing to connect to its model (``ConnectWatch``).
    connect_timeout: float = default("connect_timeout")
    #: Extra environment for the Codex process (on top of ``os.environ``).
    env: Mapping[str, str] = field(default_factory=dict)
    #: Globs of variable names the reviewer's tool shell may see although they look like
    #: credentials (ini ``advreview_env_allow``; see :mod:`.environment`).
    env_allow: tuple[str, ...] = ()
    #: Start the native binary behind the npm wrapper directly (:mod:`.native`); off:
    #: always launch ``executable`` itself.
    native_launch: bool = True
    #: A file that shares the sandbox preflight's answer between the processes of one
    #: run (the xdist workers): the first one probes, the others read its answer.
    #: ``None``: every reviewer probes for itself.
    preflight_file: str | None = None
    capabilities: CodexCapabilities = field(default_factory=CodexCapabilities)


def sandbox_args(sandbox: Sandbox) -> list[str]:
    """``-s MODE``, or nothing for ``inherit`` (the user's Codex config decides)."""
    return [] if sandbox == "inherit" else ["-s", sandbox]


def approval_args(approvals: str) -> list[str]:
    """``--advreview-approvals`` as ``-c`` overrides (TOML-quoted values).

    ``never`` refuses every escalation request; otherwise the reviewer may ask
    (``on-request``), and ``auto_review`` has Codex's auto-reviewer answer instead of the
    user (``user``), since nobody is there to answer in a headless run.
    """
    if approvals == "never":
        return ["-c", 'approval_policy="never"']
    args = ["-c", 'approval_policy="on-request"']
    if approvals == "auto_review":
        args += ["-c", 'approvals_reviewer="auto_review"']
    return args


#: Extra ``-c`` values of every Codex launch whose verdict gates something (CI,
#: ``--advreview-strict-exit``, ``--advreview-head``: :func:`~..decisions.gated`).  The
#: checkout's ``AGENTS.md`` (``AGENTS.override.md``, fallback names) and its skills are the
#: branch's, so they are material to review, never the reviewer's instructions; the
#: repository's review rules reach the prompt from the base instead (``trust/pathrules.py``).
#: Measured on 0.171.0: without them a branch's ``AGENTS.md`` text and the skills block
#: are instruction messages of every request; with them neither is sent.  Codex still
#: loads the trusted project's ``.codex/config.toml`` (docs/safety.md says so).
GATE_CODEX_CONFIG = ("project_doc_max_bytes=0", "skills.include_instructions=false")

#: Prefix of the private temporary folder each dispatch hands the reviewer's tools.
TOOL_TMP_PREFIX = "advreview-tool-tmp-"


def containment_args(tool_tmp: Path | None) -> list[str]:
    """The ``-c`` pairs that leave the reviewer only its workspace and ``tool_tmp`` to write.

    Codex's ``workspace-write`` also makes ``/tmp`` and ``$TMPDIR`` writable, and there
    lie the gate's own code (a venv under ``/tmp``, as in CI recipes), the Codex home of
    a temporary runner, the run's state: a reviewer rewrote the plugin there and the run
    passed.  Both are excluded, and no other writable root is kept (a ``writable_roots``
    of the user's Codex config included).  ``tool_tmp`` (the dispatch's own folder,
    :func:`private_tool_tmp`) becomes the one extra root and the tool shell's
    ``TMPDIR``; the Codex process keeps its own ``TMPDIR``.

    Measured on 0.171: the keys are not kept in the thread, so every ``exec`` and
    ``resume`` passes them, after the user's pairs so they win (a pair that names them is
    refused as a usage error, ``options.CONTAINMENT_CODEX_KEYS``).  Under read-only they
    change nothing; under danger-full-access nothing is contained.
    """
    roots = [os.fspath(tool_tmp)] if tool_tmp is not None else []
    # A JSON array of strings (and a JSON string) is also valid TOML.
    args = [
        "-c",
        "sandbox_workspace_write.exclude_slash_tmp=true",
        "-c",
        "sandbox_workspace_write.exclude_tmpdir_env_var=true",
        "-c",
        "sandbox_workspace_write.writable_roots=" + json.dumps(roots),
    ]
    if tool_tmp is not None:
        args += ["-c", "shell_environment_policy.set.TMPDIR=" + json.dumps(os.fspath(tool_tmp))]
    return args


def private_tool_tmp() -> Path:
    """A fresh folder for the reviewer's temporary files; :func:`remove_tool_tmp` removes it.

    Created by this process (mode 0700, a name nobody can guess) in this process's
    temporary folder, which the reviewer itself cannot write.

    :raises OSError: the folder cannot be created.
    """
    return Path(tempfile.mkdtemp(prefix=TOOL_TMP_PREFIX)).resolve()


def remove_tool_tmp(folder: Path) -> None:
    """Remove a :func:`private_tool_tmp` with all the reviewer left in it, read-only
    folders included (the supervisor removes it the same way should pytest die)."""
    lifetime.remove_tree(folder)


@dataclass(frozen=True)
class _Attempt:
    """What one launch produced, before it becomes a :class:`RunnerResult`."""

    attempt_id: str
    status: RunnerStatus = RunnerStatus.SUCCESS
    #: True when the failure must not be retried (several rollouts matched the marker).
    terminal: bool = False
    errors: str | None = None
    user_warning: str | None = None
    session_id: str | None = None
    #: The review file parsed (once: the drift check and the result both need it).
    review: Review | None = None
    quality: ReviewQuality = ReviewQuality.UNKNOWN
    triage: Triage = field(default_factory=Triage)
    thread_usage: TokenUsage | None = None
    writes: tuple[str, ...] = ()
    archived_stdout: str | None = None
    archived_stderr: str | None = None


@dataclass(frozen=True)
class _Stream:
    """What the runner keeps from the JSONL event stream (read line by line)."""

    first_thread_id: str | None = None
    usage: TokenUsage | None = None
    turn_failed: str | None = None
    writes: tuple[str, ...] = ()


class CodexReviewer:
    """The built-in reviewer backend: OpenAI's Codex CLI, driven non-interactively."""

    name = "codex"
    supports_resume = True

    def __init__(self, options: CodexOptions) -> None:
        self.options = options
        self._preflight: str | Literal[False] | None = False  # False = not run yet
        # The preflight may run in a background thread (warm_up); the lock makes a
        # dispatch wait for that answer instead of probing a second time.
        self._preflight_lock = threading.Lock()
        self._warm_up: threading.Thread | None = None
        self._cancel = threading.Event()
        self._native: native.NativeCodex | Literal[False] | None = False  # False = not yet
        self._native_lock = threading.Lock()
        self._provider: reachability.Provider | None = None

    # -- public ------------------------------------------------------------------------

    @property
    def codex_home(self) -> Path:
        """``$CODEX_HOME`` as the Codex process sees it (``~/.codex`` when unset)."""
        home = self.options.env.get("CODEX_HOME") or os.environ.get("CODEX_HOME")
        return Path(home) if home else Path.home() / ".codex"

    @property
    def provider(self) -> reachability.Provider:
        """The model provider Codex will use (its ``-c`` pairs over its ``config.toml``)."""
        if self._provider is None:
            self._provider = reachability.find_provider(self.options.config, self.codex_home)
        return self._provider

    @property
    def native(self) -> native.NativeCodex | None:
        """The native binary launched in place of the npm wrapper; ``None``: as given."""
        with self._native_lock:
            if self._native is False:
                found = None
                if self.options.native_launch:
                    found = native.resolve(self.options.executable, self._env())
                self._native = found
            return self._native

    def launch_command(self, argv: list[str]) -> tuple[list[str], dict[str, str]]:
        """``argv`` (built for ``executable``) and the environment, as they are launched.

        The tool shell's variables (``include_only``) are chosen from the environment
        *before* the wrapper's additions, so the reviewer's tools see the same names
        whichever of the two is started.
        """
        env = self._env()
        target = self.native
        if target is None:
            return argv, env
        return [target.binary, *argv[1:]], target.environment(env)

    def check_ready(self) -> str | None:
        """Why this run cannot review with this Codex (``None``: it can), asked once at
        the start of a run so that a missing or old CLI is one error, not one per item.

        Not found, not executable, not answering ``--version`` as the Codex CLI does, or
        older than :data:`~..constants.PINNED_CODEX_VERSION`; each with the install hint.
        """
        given = self.options.executable
        env = self._env()
        found = shutil.which(given, path=env.get("PATH")) if "/" not in given else given
        what = None
        if found is None:
            what = "is not on PATH"
        elif not os.path.isfile(found):
            what = "does not exist" if not os.path.exists(found) else "is not a file"
        elif not os.access(found, os.X_OK):
            what = "is not executable"
        if what is not None:
            return f"the Codex CLI {given!r} {what}; {INSTALL_HINT}"
        argv, env = self.launch_command([str(found), "--version"])
        try:
            proc = subprocess.run(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=VERSION_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return f"`{given} --version` failed ({clip(str(exc))}); {INSTALL_HINT}"
        printed = proc.stdout.strip()
        match = VERSION_LINE.match(printed)
        if proc.returncode != 0 or match is None:
            first = (printed or proc.stderr.strip()).splitlines()
            seen = first[0][:200] if first else "nothing"
            return (
                f"{given!r} is not the Codex CLI: `--version` printed {seen!r} "
                f"(exit {proc.returncode}), expected 'codex-cli {PINNED_CODEX_VERSION}'; "
                f"{INSTALL_HINT}"
            )
        if older_than_pinned(match.group(1)):
            return (
                f"the Codex CLI {given!r} is version {match.group(1)}, older than "
                f"{PINNED_CODEX_VERSION}, which this plugin needs; {INSTALL_HINT}"
            )
        return self.home_problem() or reachability.not_configured(
            self.provider, self.codex_home, env
        )

    def home_problem(self) -> str | None:
        """Why Codex cannot keep its state in ``$CODEX_HOME`` (``None``: it can).

        Codex 0.171.0 fails late and obscurely there: a missing folder is a Rust
        backtrace, a file or a read-only folder an app-server error that a sandbox
        preflight reads as a broken sandbox.  Unset, Codex makes ``~/.codex`` itself.
        """
        home = self.codex_home
        explicit = bool(self.options.env.get("CODEX_HOME") or os.environ.get("CODEX_HOME"))
        fix = "point CODEX_HOME at a writable folder (or unset it to use ~/.codex)"
        if not home.exists():
            if not explicit:
                return None
            return f"CODEX_HOME={home} does not exist; create it (mkdir -p) or {fix}"
        if not home.is_dir():
            return f"CODEX_HOME={home} is not a folder; {fix}"
        if not os.access(home, os.W_OK | os.X_OK):
            return f"CODEX_HOME={home} is not writable by this user; {fix}"
        return None

    def can_resume(self, session_id: str) -> bool:
        """True when the thread's rollout is on this machine (resume would find it)."""
        if not _UUID.match(session_id):
            return False
        pattern = self.options.capabilities.rollout_glob.format(thread_id=session_id)
        return any(self.codex_home.glob(pattern))

    def session_digest(self, session_id: str) -> str | None:
        """The SHA-256 of the thread's rollout files (each name and its bytes, in name
        order); ``None`` when none is on this machine.  Kept with each round in the signed
        state: a thread resumes only while its files are the bytes the plugin last saw
        (docs/safety.md, "What restored state is trusted")."""
        if not _UUID.match(session_id):
            return None
        pattern = self.options.capabilities.rollout_glob.format(thread_id=session_id)
        paths = sorted(self.codex_home.glob(pattern), key=lambda p: p.name)
        return files_digest(paths, lambda p: p.name)

    def dispatch(self, request: DispatchRequest) -> DispatchResult:
        """Run one dispatch: an attempt, one retry on failure, then the runner result."""
        started = time.monotonic()
        request.work_dir.mkdir(parents=True, exist_ok=True)
        problem = self._input_problem(request)
        if problem is not None:
            return self._result(
                request,
                _Attempt(attempt_id="000000", status=RunnerStatus.INPUT_ERROR, errors=problem),
                0,
                started,
            )
        if self.options.sandbox == "workspace-write":
            broken = self.sandbox_preflight(request.work_dir)
            if broken is not None:
                attempt = _Attempt(
                    attempt_id="000000",
                    status=RunnerStatus.SUCCESS,
                    quality=ReviewQuality.DEGRADED_ENVIRONMENTAL,
                    errors=broken,
                    user_warning="the Codex sandbox does not work on this host; "
                    "see docs/safety.md 'Linux sandbox prerequisites' or pass "
                    "--advreview-sandbox=read-only",
                )
                return self._result(request, attempt, 0, started)
        try:
            tool_tmp = private_tool_tmp()
        except OSError as exc:
            why = f"cannot create the reviewer's private temporary folder: {exc}"
            attempt = _Attempt(attempt_id="000000", status=RunnerStatus.INFRA_ERROR, errors=why)
            return self._result(request, attempt, 0, started)
        deadline = None if request.time_left_s is None else started + request.time_left_s
        tried: list[_Attempt] = []

        def attempt_once() -> _Attempt:
            tried.append(self._attempt(request, tool_tmp, deadline))
            return tried[-1]

        try:
            attempt, attempts = retry_once(
                attempt_once,
                lambda failed: failed.status is not RunnerStatus.SUCCESS and not failed.terminal,
            )
        finally:
            remove_tool_tmp(tool_tmp)
        if attempt.status is not RunnerStatus.SUCCESS and request.operation is Operation.RESUME:
            attempt = self._archive_failed_resume(request, attempt)
        return self._result(request, attempt, attempts, started, earlier=tuple(tried[:-1]))

    def warm_up(self, scratch: Path) -> None:
        """Start the sandbox preflight in the background, ahead of the first dispatch.

        The probe is one Codex start (about 0.3 s); begun at session start it overlaps
        pytest's collection instead of delaying the first review.  A dispatch waits for
        its answer; :meth:`close` stops it.  Nothing happens unless the sandbox is
        workspace-write (the only mode that is probed).
        """
        if self.options.sandbox != "workspace-write" or self._warm_up is not None:
            return
        scratch.mkdir(parents=True, exist_ok=True)
        self._warm_up = threading.Thread(
            target=self._warm_up_main, args=(scratch,), name="advreview-preflight", daemon=True
        )
        self._warm_up.start()

    def _warm_up_main(self, scratch: Path) -> None:
        with contextlib.suppress(Exception):  # the dispatch probes again and reports it
            self.sandbox_preflight(scratch)

    def cancel(self) -> None:
        """Stop every launch of this reviewer now and start no other (pytest is stopping).

        A launch waiting on Codex kills its process group; an attempt that was cancelled
        is not retried.  Reviews running side by side (``--advreview-jobs``) are stopped
        this way after ``-x``/``--maxfail`` or Ctrl-C.
        """
        self._cancel.set()

    def close(self) -> None:
        """Stop a background preflight that is still running (its process group too)."""
        if self._warm_up is not None:
            self._cancel.set()
            self._warm_up.join()

    def sandbox_preflight(self, scratch: Path) -> str | None:
        """Probe the workspace-write sandbox once per reviewer; ``None`` when it works.

        Rather than probing ``bwrap`` directly, the probe uses Codex's own sandbox, so it
        tests exactly what the review will use.  The probe runs ``true`` in a scratch directory and
        writes nothing to the repository.  With ``preflight_file`` set, the processes of
        one run share a single probe (the first one runs it, under a file lock).
        """
        with self._preflight_lock:
            if self._preflight is not False:
                return self._preflight
            found = self._shared_preflight(scratch)
            if not self._cancel.is_set():  # a probe stopped by close() is not an answer
                self._preflight = found
            return found

    def _shared_preflight(self, scratch: Path) -> str | None:
        """The probe's answer, shared with the other processes of the run when it can be."""
        if self.options.preflight_file is None:
            return self._probe_sandbox(scratch)
        # One probe per run: each xdist worker would otherwise start its own Codex for
        # the same answer.  The lock makes the others wait for the first one's answer.
        try:
            shared = open(self.options.preflight_file, "a+", encoding="utf-8")  # noqa: SIM115
        except OSError:
            return self._probe_sandbox(scratch)
        with shared:
            fcntl.flock(shared, fcntl.LOCK_EX)
            shared.seek(0)
            try:
                answer = json.loads(shared.read() or "null")
            except ValueError:
                answer = None
            if isinstance(answer, dict) and "problem" in answer:
                problem = answer["problem"]
                return problem if isinstance(problem, str) else None
            found = self._probe_sandbox(scratch)
            if not self._cancel.is_set():
                shared.seek(0)
                shared.truncate()
                shared.write(json.dumps({"problem": found}))
                shared.flush()
            return found

    def _probe_sandbox(self, scratch: Path) -> str | None:
        """Run ``codex sandbox -- true``; the problem it shows, ``None`` when it works."""
        # No -C: on 0.171 `sandbox -C` demands a permission profile; the cwd does the job.
        argv = [
            self.options.executable,
            "sandbox",
            "-c",
            "sandbox_mode=workspace-write",
            # The sandbox the reviews get: without /tmp and $TMPDIR (containment_args).
            *containment_args(None),
            "--",
            "true",
        ]
        files = [scratch / f"preflight.{name}" for name in ("stdin", "stdout", "stderr")]
        argv, env = self.launch_command(argv)
        try:
            files[0].write_bytes(b"")
            rc = launch(
                argv,
                cwd=scratch,
                stdin_file=files[0],
                stdout_file=files[1],
                stderr_file=files[2],
                env=env,
                timeout=min(60.0, self.options.timeout),
                cancel=self._cancel,
            )
        except OSError:
            # A missing or unrunnable executable (or an unwritable scratch folder) is
            # reported by the real launch (launch_failure), with its reason and fix.
            return None
        if rc is None:
            return "sandbox preflight timed out (codex sandbox -- true)"
        stderr = read_text(files[2]) or ""
        if rc == 0 or (rc == 2 and "Usage:" in stderr):
            # rc 2 with a usage text: this Codex has no such probe.  The launch itself
            # still exposes a broken sandbox (degraded_environmental), so do not block.
            return None
        tail_text = stderr.strip()[-MAX_ERROR_CHARS:]
        return f"sandbox preflight failed: `codex sandbox -- true` exited {rc}: {tail_text}"

    def argv(
        self,
        request: DispatchRequest,
        output_file: Path,
        schema_file: Path | None,
        tool_tmp: Path | None = None,
    ) -> list[str]:
        """The ``codex exec`` launch command, as an argv list (never a shell).

        :param tool_tmp: the reviewer's private temporary folder (:func:`private_tool_tmp`);
            ``None``: its tools get no writable temporary folder at all.
        """
        opts = self.options
        argv = [
            opts.executable,
            "exec",
            "--json",
            "-m",
            opts.model,
            "-c",
            f"model_reasoning_effort={opts.reasoning}",
        ]
        # Measured on 0.171: the sandbox is not persisted in the thread, so resume gets it
        # again, as do the approval settings and every user -c pair.
        if request.operation is not Operation.RESUME or opts.capabilities.resume_needs_sandbox:
            argv += sandbox_args(opts.sandbox)
        argv += approval_args(opts.approvals)
        for pair in opts.config:
            argv += ["-c", pair]
        # After the user's pairs, so they win: no credential of this process reaches the
        # shell of the reviewer's tool calls (and from there the model).  Measured on
        # 0.171: not kept in the thread, so resume needs them again like the rest.
        env = self._env()
        if tool_tmp is not None:
            # The tool shell's TMPDIR is set below; it must also be a name it may see.
            env = {"TMPDIR": "", **env}
        argv += environment.tool_shell_args(env, opts.env_allow)
        # Also after the user's pairs: what the reviewer may write (containment_args).
        argv += containment_args(tool_tmp)
        if not request.in_git:
            argv.append("--skip-git-repo-check")
        argv += ["-C", str(request.repo_root)]
        if request.operation is Operation.RESUME:
            assert request.session_id is not None  # checked by _input_problem
            argv += ["resume", request.session_id]
        argv += ["-o", str(output_file)]
        if schema_file is not None:
            argv += ["--output-schema", str(schema_file)]
        argv.append("-")
        return argv

    # -- one attempt -------------------------------------------------------------------

    def _input_problem(self, request: DispatchRequest) -> str | None:
        if not request.prompt_body.strip():
            return "empty prompt body"
        if not request.repo_root.is_dir():
            return f"repository root {request.repo_root} is not a directory"
        if request.operation is Operation.RESUME and not request.session_id:
            return "resume needs the session id of the thread to continue"
        return None

    def _attempt(
        self, request: DispatchRequest, tool_tmp: Path | None = None, deadline: float | None = None
    ) -> _Attempt:
        attempt_id = f"{secrets.randbelow(1_000_000):06d}"
        work = request.work_dir
        kind = "resume-prompt" if request.operation is Operation.RESUME else "prompt"
        prompt_file = work / f"{kind}.md"
        output_file = work / "review.md"
        stdout_file = work / STREAM_FILE
        stderr_file = work / "stderr.txt"
        marker_body = with_marker(request.prompt_body, request.review_id, attempt_id)
        attempt = _Attempt(attempt_id=attempt_id)

        def fail(status: RunnerStatus, errors: str, *, terminal: bool = False) -> _Attempt:
            return replace(attempt, status=status, errors=clip(errors), terminal=terminal)

        try:
            prompt_file.write_text(marker_body, encoding="utf-8")
            # Codex keeps stale -o content after a failed turn: an old review must never
            # pass for this attempt's answer.
            output_file.unlink(missing_ok=True)
            schema_file = None
            if request.output_format is OutputFormat.JSON:
                schema_file = work / "review-schema.json"
                schema_file.write_text(json.dumps(parse.review_schema()), encoding="utf-8")
        except OSError as exc:
            why = f"cannot write review files in {work}: {exc}"
            return fail(RunnerStatus.INFRA_ERROR, why, terminal=True)
        anchor = prompt_file.stat().st_mtime
        argv, env = self.launch_command(self.argv(request, output_file, schema_file, tool_tmp))
        if self._cancel.is_set():
            return fail(RunnerStatus.INFRA_ERROR, CANCELLED, terminal=True)
        # The review's whole limit comes first: this attempt gets what is left of it.
        timeout = attempt_seconds(self.options.timeout, deadline)
        if timeout <= 0:
            why = review_limit_reached(request.review_timeout_s or 0, self.options.timeout)
            return fail(RunnerStatus.TIMEOUT, why, terminal=True)
        watch = reachability.ConnectWatch(stdout_file, self._cancel, self.options.connect_timeout)
        try:
            rc = launch(
                argv,
                cwd=request.repo_root,
                stdin_file=prompt_file,
                stdout_file=stdout_file,
                stderr_file=stderr_file,
                env=env,
                timeout=timeout,
                cancel=watch,
                remove=() if tool_tmp is None else (tool_tmp,),
            )
        except FileNotFoundError:
            why = f"Codex executable not found: {self.options.executable!r}; {INSTALL_HINT}"
            return fail(RunnerStatus.LAUNCH_FAILURE, why, terminal=True)
        except OSError as exc:
            return fail(RunnerStatus.LAUNCH_FAILURE, f"cannot start Codex: {exc}", terminal=True)

        if rc is None and self._cancel.is_set():
            return fail(RunnerStatus.INFRA_ERROR, CANCELLED, terminal=True)
        if rc is None and watch.gave_up_after is not None:
            # Never retried, here or by the loop's fallback: the same network gives the
            # same answer, and each try would cost another budget.
            return fail(RunnerStatus.INFRA_ERROR, self._unreachable(watch), terminal=True)
        stream = _read_stream(stdout_file)
        stderr = read_text(stderr_file)
        # fail() copies this one from here on: the usage and writes are known.
        attempt = replace(attempt, thread_usage=stream.usage, writes=stream.writes)

        # Check 1 of 4, exit code.  124 is what `timeout` returns: a wrapper script around codex
        # (--advreview-codex=my-wrapper) that enforces its own limit is a timeout too.
        if rc is None and timeout < self.options.timeout:
            why = review_limit_reached(request.review_timeout_s or 0, self.options.timeout)
            return fail(RunnerStatus.TIMEOUT, why, terminal=True)
        if rc is None or rc == 124:
            return fail(
                RunnerStatus.TIMEOUT,
                f"Codex did not finish within {self.options.timeout:g}s; "
                "the process group was killed",
            )
        if rc < 0:
            detail = stream.turn_failed or _error_line(stderr) or "no output on stderr"
            return fail(RunnerStatus.LAUNCH_FAILURE, f"codex was {_signal_name(-rc)}: {detail}")
        if rc != 0:
            detail = stream.turn_failed or _error_line(stderr) or "no output on stderr"
            return fail(RunnerStatus.LAUNCH_FAILURE, f"codex exited {rc}: {detail}")
        # Check 2 of 4, stderr: only these lines mean failure; other stderr is noise (warnings).
        if stderr is None:
            return fail(
                RunnerStatus.INFRA_ERROR, f"stderr file {stderr_file} is missing", terminal=True
            )
        if _STDERR_FAILURE.search(stderr):
            return fail(RunnerStatus.LAUNCH_FAILURE, f"codex reported an error: {tail(stderr)}")
        # Check 3 of 4, review file: it must exist and follow the output contract.
        text = read_text(output_file)
        if not text or not text.strip():
            failed = f"; {stream.turn_failed}" if stream.turn_failed else ""
            return fail(RunnerStatus.LAUNCH_FAILURE, f"review file is missing or empty{failed}")
        analysis = parse.analyse(text, request.output_format, request.fail_on)
        if (
            analysis.drift is not None
            and analysis.quality is not ReviewQuality.DEGRADED_ENVIRONMENTAL
        ):
            return fail(RunnerStatus.LAUNCH_FAILURE, f"reviewer format drift: {analysis.drift}")
        verdict = analysis.review.verdict
        # Check 4 of 4, session id: the JSON stream's thread id, else the rollout with our marker.
        session_id, warning, problem, terminal = self._session_id(
            request, stream.first_thread_id, attempt_id, anchor, verdict
        )
        if problem is not None:
            return fail(RunnerStatus.LAUNCH_FAILURE, problem, terminal=terminal)
        return replace(
            attempt,
            session_id=session_id,
            user_warning=warning,
            review=analysis.review,
            quality=analysis.quality,
            triage=analysis.triage,
        )

    def _unreachable(self, watch: reachability.ConnectWatch) -> str:
        """The message of an attempt ended by its connect budget: endpoint and cause."""
        provider = self.provider
        cause = None
        if provider.base_url is not None:
            # Codex says only "Connection failed"; one connection of our own names why.
            cause = reachability.reach(provider.base_url, timeout=5.0)
        cause = cause or watch.cause or "no connection"
        return reachability.unreachable_message(
            provider.endpoint, cause, watch.tries, watch.gave_up_after or 0.0
        )

    def _env(self) -> dict[str, str]:
        """The Codex process's environment: ours, minus what Codex never needs."""
        return environment.reviewer_process_env({**os.environ, **self.options.env})

    def _session_id(
        self,
        request: DispatchRequest,
        first_thread_id: str | None,
        attempt_id: str,
        anchor: float,
        verdict: Verdict | None,
    ) -> tuple[str | None, str | None, str | None, bool]:
        """Return ``(session_id, user_warning, problem, terminal)``."""
        found = first_thread_id
        if found is None:
            marker = f"ADVERSARIAL-REVIEW-SESSION: {request.review_id}-{attempt_id}"
            matches = self._rollouts_with(marker, anchor)
            if len(matches) > 1:
                shown = ", ".join(str(m) for m in matches[:3])
                why = "multiple rollouts matched marker — aborting to avoid wrong-session bind"
                return None, None, f"{why}: {shown}", True
            if matches:
                m = _ROLLOUT_ID.search(matches[0].name)
                found = m.group(1) if m else None
        if request.operation is Operation.RESUME:
            if found is not None and found != request.session_id:
                # resume <id> can silently start a new thread; that is not a re-review.
                why = f"resume asked for thread {request.session_id} but Codex ran thread {found}"
                return None, None, why, False
            if found is None:
                warning = (
                    "session-id refresh on resume: both tiers empty, continuing with the "
                    "previous thread id"
                )
                return request.session_id, warning, None, False
        elif found is None and verdict is Verdict.REVISE:
            why = "session-id capture failed: both tiers empty on initial/fresh-exec"
            return None, None, why, False
        return found, None, None, False

    def _rollouts_with(self, marker: str, anchor: float) -> list[Path]:
        """Rollout files newer than the prompt that contain the attempt marker."""
        hits: list[Path] = []
        sessions = self.codex_home / "sessions"
        for path in sessions.glob("*/*/*/rollout-*.jsonl"):
            try:
                if path.stat().st_mtime < anchor - 1.0:
                    continue
                if _file_contains(path, marker):
                    hits.append(path)
            except OSError:
                continue
        return sorted(hits)

    def _archive_failed_resume(self, request: DispatchRequest, attempt: _Attempt) -> _Attempt:
        """Keep a failed resume's stdout/stderr for diagnosis (the fallback reuses paths)."""

        def archive(name: str, target: str) -> str | None:
            src = request.work_dir / name
            if not src.exists():
                return None
            dst = request.work_dir / target
            src.replace(dst)
            return str(dst)

        return replace(
            attempt,
            archived_stdout=archive("stdout.jsonl", "stdout-failed-resume.jsonl"),
            archived_stderr=archive("stderr.txt", "stderr-failed-resume.txt"),
        )

    def _result(
        self,
        request: DispatchRequest,
        attempt: _Attempt,
        attempts: int,
        started: float,
        *,
        earlier: tuple[_Attempt, ...] = (),
    ) -> DispatchResult:
        """The dispatch's result from its last attempt.

        :param earlier: the attempts before it (a retry): the tokens a failed exec spent
            count too.  A resume's retry continues the same thread, whose total the last
            attempt reports, so it has nothing to add.
        """
        review_file = request.work_dir / "review.md"
        success = attempt.status is RunnerStatus.SUCCESS
        review = attempt.review if success else None
        runner = RunnerResult(
            result=attempt.status,
            verdict=review.verdict if review else None,
            review_file=str(review_file) if review else None,
            codex_session_id=attempt.session_id if success else None,
            attempt_id=attempt.attempt_id,
            errors=clip(attempt.errors) if attempt.errors else None,
            archived_stdout=attempt.archived_stdout,
            archived_stderr=attempt.archived_stderr,
            user_warning=attempt.user_warning,
            review_quality=attempt.quality if success else ReviewQuality.UNKNOWN,
            triage=attempt.triage if success else Triage(status="skipped"),
        )
        usage, thread_usage = dispatch_usage(request, attempt.thread_usage)
        if request.operation is not Operation.RESUME:
            for failed in earlier:
                usage = usage + dispatch_usage(request, failed.thread_usage)[0]
        return DispatchResult(
            runner=runner,
            operation=request.operation,
            review=review,
            usage=usage,
            thread_usage=thread_usage,
            attempts=attempts,
            duration_s=time.monotonic() - started,
            reported_writes=attempt.writes,
        )


# -- helpers ---------------------------------------------------------------------------


def _file_contains(path: Path, needle: str) -> bool:
    """Whether ``needle`` occurs in ``path``, read in chunks (rollouts can be large)."""
    data = needle.encode()
    keep = len(data) - 1
    tail = b""
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            if data in tail + chunk:
                return True
            tail = chunk[-keep:] if keep else b""
    return False


def _lines(path: Path) -> Iterator[str]:
    """The JSONL stream line by line: never the whole stream in memory."""
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return
    with fh:
        for raw in fh:
            yield raw.decode("utf-8", "replace")


def _read_stream(path: Path) -> _Stream:
    """Pick the few events the runner needs out of Codex's ``--json`` stream."""
    first: str | None = None
    usage: TokenUsage | None = None
    failed: str | None = None
    writes: list[str] = []
    for index, line in enumerate(_lines(path)):
        # Cheap pre-filter: most lines of a long stream are events we do not need.
        if index > 0 and not any(
            key in line for key in ('"turn.', '"file_change"', '"thread.started"')
        ):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if index == 0 and kind == "thread.started":
            tid = event.get("thread_id")
            if isinstance(tid, str) and _UUID.match(tid):
                first = tid
        elif kind == "turn.completed":
            usage = _usage(event.get("usage"))
        elif kind == "turn.failed":
            err = event.get("error")
            if isinstance(err, dict) and isinstance(err.get("message"), str):
                failed = err["message"]
        elif kind == "item.completed":
            item = event.get("item")
            if isinstance(item, dict) and item.get("type") == "file_change":
                for change in item.get("changes") or ():
                    if isinstance(change, dict) and isinstance(change.get("path"), str):
                        writes.append(change["path"])
    return _Stream(first_thread_id=first, usage=usage, turn_failed=failed, writes=tuple(writes))


#: What a signal that ends Codex means, for the ones a user's limits send.
_SIGNAL_CAUSES = {
    "SIGXFSZ": "the file-size limit (`ulimit -f`); raise it or run without it",
    "SIGXCPU": "the CPU-time limit (`ulimit -t`); raise it or run without it",
    "SIGKILL": "an outside kill, often the kernel's out-of-memory killer; check `dmesg`",
    "SIGSEGV": "a crash of Codex itself; reinstall it",
    "SIGTERM": "an outside request to stop",
}


def _signal_name(number: int) -> str:
    """``killed by SIGXFSZ: the file-size limit (`ulimit -f`) …`` for signal ``number``."""
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"killed by signal {number}"
    cause = _SIGNAL_CAUSES.get(name)
    return f"killed by {name}: {cause}" if cause else f"killed by {name}"


def _error_line(stderr: str | None) -> str:
    """The last ``Error: …`` line of ``stderr``, else its end.

    Both the native binary and the npm wrapper (Node) print the message on an ``Error:``
    line followed by a stack trace; the end of stderr would show only the trace.
    """
    found = _ERROR_LINE.findall(stderr or "")
    return found[-1].strip() if found else tail(stderr)


def stream_usage(path: Path) -> TokenUsage | None:
    """The usage of the last completed turn in a ``codex exec --json`` stream file."""
    return _read_stream(path).usage


def _usage(raw: object) -> TokenUsage | None:
    if not isinstance(raw, dict):
        return None

    def num(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) and value >= 0 else 0

    return TokenUsage(
        input_tokens=num("input_tokens"),
        cached_input_tokens=num("cached_input_tokens"),
        output_tokens=num("output_tokens"),
        reasoning_output_tokens=num("reasoning_output_tokens"),
    )
