"""``pytest --advreview-doctor``: the Codex contract checks, against the real and a fake CLI.

Every run goes through pytester (in process), with ``HOME`` and the temp directory
pointed at empty folders, so each test can also prove that the doctor leaves no temp
directory and no process behind and never writes to the user's home (``~/.codex``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

import pytest_advreview.doctor as doctor_module
from conftest import settled, sleeper_running
from pytest_advreview.doctor import CHECKS, SANDBOX_REMEDY, DoctorReport, DoctorRow, _tagged_pids
from pytest_advreview.runner import native
from pytest_advreview.runner.codex import CodexCapabilities, CodexOptions
from pytest_advreview.testing import Behaviour
from test_native_launch import unresolvable_layout

REQUIRED = [name for name, (_, required) in CHECKS.items() if required]


@dataclass
class Isolated:
    """The empty HOME and temp directory a doctor run must leave empty."""

    home: Path
    tmp: Path


@pytest.fixture
def isolated(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Point HOME and tempfile at empty folders; after the test, both must still be empty."""
    home = tmp_path / "home"
    tmp = tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    # The doctor's wall-clock limits (BUDGET_S, LAUNCH_TIMEOUT_S) are made for a machine
    # that runs the doctor alone.  Under the suite's load (xdist workers, another suite on
    # the same two cores) its last launches start late, are cut to what is left of the
    # budget, and their rows fail, the sandbox row first: the doctor failing closed, as
    # it must when it cannot finish.  These tests check what each row says of Codex, not
    # how fast the machine is, so the doctor gets four times its limits here (a healthy
    # run is no slower); the test of the limits themselves sets its own.
    monkeypatch.setattr(doctor_module, "BUDGET_S", 4 * doctor_module.BUDGET_S)
    monkeypatch.setattr(doctor_module, "LAUNCH_TIMEOUT_S", 4 * doctor_module.LAUNCH_TIMEOUT_S)
    yield Isolated(home, tmp)
    assert list(home.iterdir()) == [], "the doctor wrote into HOME"
    assert list(tmp.iterdir()) == [], "the doctor left a temp directory behind"


def doctor(pytester: pytest.Pytester, codex: Path | str, *args: str):
    """Run ``pytest --advreview-doctor``; return the result and the JSON report."""
    result = pytester.runpytest(
        "--advreview-doctor",
        f"--advreview-codex={codex}",
        "--advreview-doctor-json=doctor.json",
        *args,
    )
    report = DoctorReport.model_validate_json((pytester.path / "doctor.json").read_text())
    # Nothing the doctor started may still run (the tag survives fork, exec and setsid).
    assert _tagged_pids(f"{report.run_id}:") == []
    assert row(report, "cleanup").status == "PASS"
    return result, report


def row(report: DoctorReport, name: str) -> DoctorRow:
    (found,) = [r for r in report.rows if r.name == name]
    return found


def failed(report: DoctorReport) -> set[str]:
    return {row.name for row in report.rows if row.failed}


def wrapper(tmp_path: Path, real: Path, body: str) -> Path:
    """A ``codex`` that rewrites its argv (``args``) with ``body``, then starts ``real``.

    When ``real`` is the npm wrapper, this starts the platform binary behind it with the
    wrapper's environment, as reviews do (:mod:`pytest_advreview.runner.native`), so no
    launch pays for Node's start.  Started with ``-S``, like the testing kit's fake codex:
    it needs the standard library alone, and without ``site`` no coverage measurement
    starts in each of its launches.
    """
    found = native.resolve(str(real), os.environ) or native.NativeCodex(str(real), {}, ())
    script = tmp_path / "codex-wrapper"
    script.write_text(
        f"#!{sys.executable} -S\nimport os, sys\nargs = sys.argv[1:]\n{body}\n"
        f"env = {{k: v for k, v in os.environ.items() if k not in {found.unset_env!r}}}\n"
        f"env.update({found.set_env!r})\n"
        f"os.execve({found.binary!r}, [{found.binary!r}, *args], env)\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


# -- the real, pinned Codex ------------------------------------------------------------


@pytest.mark.real_codex
def test_real_codex_passes_every_required_row(pytester, isolated, codex_executable):
    result, report = doctor(pytester, codex_executable)
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"PASS {name} — *" for name in CHECKS])
    # The isolated HOME configures no model provider: the model row says so, as a
    # warning (a failure only under --advreview-doctor-online; test_doctor_model.py).
    result.stdout.fnmatch_lines(
        [
            "WARN model — no model provider is configured for Codex*",
            "advreview doctor: all required checks passed (1 warning(s)) in *s",
        ]
    )
    assert report.ok
    assert report.version == "0.171.0"
    assert all(row(report, name).status == "PASS" for name in REQUIRED)
    # The measured facts of 0.171 are exactly the runner's defaults.
    assert report.capabilities == CodexCapabilities()
    assert report.observed.resume_needs_sandbox is True
    assert report.observed.stale_output_file is True
    assert report.observed.resume_may_start_new_thread is True
    assert report.duration_s < 30
    # The rows ran against what reviews launch: the binary behind the npm wrapper.
    assert "/vendor/" in row(report, "native-launch").observed


@pytest.mark.real_codex
def test_unresolved_platform_binary_is_a_warning_and_the_wrapper_runs(
    pytester, isolated, codex_executable, monkeypatch, tmp_path
):
    """A layout the resolver does not follow: every row runs through the wrapper."""
    install, node_path = unresolvable_layout(codex_executable, tmp_path)
    monkeypatch.setenv("NODE_PATH", node_path)
    result, report = doctor(pytester, install)
    native_row = row(report, "native-launch")
    assert native_row.status == "WARN"
    assert f"reviews launch the npm wrapper {install}" in native_row.observed
    assert report.ok, result.stdout.str()


@pytest.mark.real_codex
def test_resume_that_drops_the_sandbox_fails_its_row(
    pytester, isolated, codex_executable, tmp_path
):
    # A Codex whose resume ignores -s: every resumed review would silently run read-only.
    drop = """
if "resume" in args:
    kept, it = [], iter(args)
    for arg in it:
        if arg in ("-s", "--sandbox"):
            next(it, None)
        elif not arg.startswith("--sandbox="):
            kept.append(arg)
    args = kept
"""
    result, report = doctor(pytester, wrapper(tmp_path, codex_executable, drop))
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "FAIL resume-sandbox — resume with -s workspace-write could not write: "
            "touch: cannot touch '<repo>/probe-resume-ww-*': Read-only file system "
            "(reviews that resume would lose workspace-write)",
            "advreview doctor: FAILED: resume-sandbox in *s",
        ]
    )
    assert failed(report) == {"resume-sandbox"}
    # The host sandbox itself is fine, so the AppArmor remedy is not printed.
    assert row(report, "sandbox").status == "PASS"
    assert "apparmor_parser" not in result.stdout.str()


@pytest.mark.real_codex
def test_broken_sandbox_prints_the_remedy_without_applying_it(
    pytester, isolated, codex_executable, tmp_path
):
    # workspace-write that cannot write: what an AppArmor-restricted host looks like.
    ro = 'args = ["read-only" if arg == "workspace-write" else arg for arg in args]'
    result, report = doctor(pytester, wrapper(tmp_path, codex_executable, ro))
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "FAIL sandbox — workspace-write: the write was refused (touch: cannot touch "
            "'<repo>/probe-sandbox-ww-*': Read-only file system)",
            "*bwrap --dev-bind / / --unshare-net /bin/echo ok*",
            "*sudo apparmor_parser -r /etc/apparmor.d/bwrap-userns-restrict*",
        ]
    )
    assert row(report, "sandbox").remedy == SANDBOX_REMEDY
    assert failed(report) == {"sandbox", "resume-sandbox"}


@pytest.mark.real_codex
def _include_only(value: str) -> str:
    """A wrapper body that replaces the runner's include_only with ``value``."""
    return f"""
args = [
    {value!r}
    if arg.startswith("shell_environment_policy.include_only=")
    else arg
    for arg in args
]
"""


_CORE_ONLY = json.dumps(["HOME", "LOGNAME", "PATH", "SHELL", "USER", "TMPDIR", "TEMP", "TMP"])


@pytest.mark.parametrize(
    ("body", "line"),
    [
        (
            # A wrapper (or a Codex) that drops the runner's environment policy.
            """
kept, it = [], iter(args)
for arg in it:
    if arg == "-c":
        value = next(it, "")
        if value.startswith(("shell_environment_policy", "allow_login_shell")):
            continue
        kept += [arg, value]
    else:
        kept.append(arg)
args = kept
""",
            "the tool shell saw ADVREVIEW_DOCTOR_PLANTED_TOKEN (from Codex's environment) and "
            "* and ADVREVIEW_DOCTOR_PROFILE_SECRET (exported by ~/.bash_profile), and its "
            "value went to the model; *",
        ),
        (
            # One that widens the list to every variable (an empty list means no filter).
            _include_only("shell_environment_policy.include_only=[]"),
            "the tool shell saw ADVREVIEW_DOCTOR_PLANTED_TOKEN (from Codex's environment) *",
        ),
        (
            # A deny-list by name (Codex's own *KEY*/*SECRET*/*TOKEN*): the planted token
            # is held back, the credentials named otherwise are not.
            _include_only("shell_environment_policy.include_only=[]")
            + 'args += ["-c", "shell_environment_policy.ignore_default_excludes=false"]\n',
            "the tool shell saw ADVREVIEW_DOCTOR_DEPLOY_PAT (from Codex's environment) and *"
            "GIT_CONFIG_VALUE_0 (from Codex's environment), and its value went to the model; *",
        ),
        (
            # One that holds back the allowed variable too.
            _include_only(f"shell_environment_policy.include_only={_CORE_ONLY}"),
            "the allowed ADVREVIEW_DOCTOR_ALLOWED did not reach the tool shell *",
        ),
        (
            # One that lets one more, harmless-looking, variable through.
            _include_only(
                "shell_environment_policy.include_only="
                + json.dumps([*json.loads(_CORE_ONLY), "ADVREVIEW_DOCTOR_A*", "*RUN"])
            ),
            # (Under coverage, COVERAGE_RUN matches "*RUN" too and is named beside it.)
            "the tool shell saw ADVREVIEW_DOCTOR_RUN* besides the allow-list; *",
        ),
    ],
    ids=["policy-dropped", "include-only-emptied", "deny-list-by-name", "allowed-dropped", "extra"],
)
def test_a_codex_that_passes_other_than_the_allow_list_fails_tool_env(
    pytester, isolated, codex_executable, tmp_path, body, line
):
    result, report = doctor(pytester, wrapper(tmp_path, codex_executable, body))
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [f"FAIL tool-env — {line}", "advreview doctor: FAILED: tool-env in *s"]
    )
    assert failed(report) == {"tool-env"}


# -- a fake Codex that misbehaves ------------------------------------------------------


def test_missing_thread_started_fails_exec_json(pytester, isolated, fake_codex):
    fake = fake_codex(Behaviour(thread_started=False, review="ok"))
    result, report = doctor(pytester, fake.path)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["FAIL exec-json — first event is 'turn.started', not thread.started (rc 0 after *s)"]
    )
    assert row(report, "exec-json").failed
    assert row(report, "resume-thread").observed.startswith("not run: the first exec gave no")


def test_every_exec_is_the_command_line_a_review_launches(pytester, isolated, fake_codex):
    """The doctor checks what reviews run: each exec carries the runner's own arguments."""
    fake = fake_codex(Behaviour(review="ok"))
    doctor(pytester, fake.path)
    execs = [call["argv"] for call in fake.calls() if "exec" in call["argv"]]
    assert len(execs) >= 8, execs
    defaults = CodexOptions()
    for argv in execs:
        assert argv[argv.index("-m") + 1] == defaults.model
        assert f"model_reasoning_effort={defaults.reasoning}" in argv
        assert 'approval_policy="never"' in argv
        assert "allow_login_shell=false" in argv
        assert any(arg.startswith("shell_environment_policy.include_only=") for arg in argv)


def test_bad_uuid_that_exits_0_fails_its_row(pytester, isolated, fake_codex):
    # The fake does not look for the thread's rollout: resume of any id "works".
    fake = fake_codex(Behaviour(review="ok"))
    result, report = doctor(pytester, fake.path)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "FAIL resume-bad-uuid — resume of unknown thread *: rc 0 after *s, thread.started * "
            "(expected rc 1 with 'thread/resume failed')"
        ]
    )
    assert row(report, "resume-bad-uuid").failed
    resumed = [c for c in fake.calls() if c["parsed"]["resume"]]
    assert resumed, "the doctor never tried a resume"


def test_output_file_never_written_fails_its_row(pytester, isolated, fake_codex):
    fake = fake_codex(Behaviour(review="ok", stale_o=True))
    result, report = doctor(pytester, fake.path)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["FAIL output-file — -o was never created"])
    assert row(report, "output-file").failed


def test_hang_is_killed_and_fails_the_rows(pytester, isolated, fake_codex, monkeypatch):
    # Every launch hangs, so the doctor runs until its budget: both limits are shortened
    # (the doctor reads them at each launch) to leave the timeout check its 2 s and no more.
    monkeypatch.setattr(doctor_module, "LAUNCH_TIMEOUT_S", 3.0)
    monkeypatch.setattr(doctor_module, "BUDGET_S", 7.0)
    fake = fake_codex(Behaviour(sleep=120, spawn_child_sleep=120))
    result, report = doctor(pytester, fake.path)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "FAIL exec-json — exec failed: no exit within 3s (process group killed): *",
            "FAIL http-error — no exit within 3s (process group killed) on HTTP 500 *",
            "PASS timeout-kill — still waiting after 2s; process group killed, no process left",
        ]
    )
    assert report.duration_s < 30
    assert fake.child_pids(), "the fake never started its child"
    pids = fake.child_pids()
    assert settled(lambda: [pid for pid in pids if sleeper_running(pid)]) == []


# -- wiring ----------------------------------------------------------------------------


def test_missing_codex_fails_fast(pytester, isolated, tmp_path):
    result, report = doctor(pytester, tmp_path / "no-such-codex")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["FAIL version — '*no-such-codex' not found (not on PATH, not a file)"]
    )
    assert row(report, "exec-json").observed.startswith("not run:")
    assert report.duration_s < 5


def test_other_version_is_a_warning_not_a_failure(pytester, isolated, fake_codex):
    fake = fake_codex(Behaviour(review="ok"), version="0.172.0")
    result, report = doctor(pytester, fake.path)
    result.stdout.fnmatch_lines(
        ["WARN version — codex-cli 0.172.0 (the plugin was verified against 0.171.0; *"]
    )
    assert not row(report, "version").failed
    assert report.version == "0.172.0"


def test_json_option_alone_is_a_usage_error(pytester):
    result = pytester.runpytest("--advreview-doctor-json=x.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--advreview-doctor-json only works together with*"])


def test_without_the_option_pytest_runs_as_usual(pytester):
    pytester.makepyfile("def test_ok():\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert "advreview doctor" not in result.stdout.str()


def test_python_m_doctor(fake_codex, tmp_path, isolated):
    fake = fake_codex(Behaviour(review="ok"))
    out = tmp_path / "sub" / "doctor.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_advreview",
            "doctor",
            f"--codex={fake.path}",
            f"--json={out}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TMPDIR": str(isolated.tmp)},
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert "PASS version — codex-cli 0.171.0" in proc.stdout
    assert "FAIL resume-bad-uuid" in proc.stdout
    data = json.loads(out.read_text())
    assert data["ok"] is False
    assert [row["name"] for row in data["rows"]] == list(CHECKS)
    assert list(out.parent.iterdir()) == [out], "the atomic write left a temp file"
