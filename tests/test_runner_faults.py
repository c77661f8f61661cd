"""Fault injection: the Codex runner against the fake ``codex`` of the testing kit.

Each test is one failure a runner must classify: first the general ones (timeout, exit
code, stderr, a missing or drifting review file, the session id), then the failures the
real Codex CLI shows only in some environments.  The expected ``result`` and
``review_quality`` are the runner contract's (``models.RunnerResult``).
"""

from __future__ import annotations

import signal
import stat
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import (
    INTERRUPTED_HANG_S,
    interrupt_when,
    live_processes,
    settled,
    sleeper_running,
    start_interruptible,
    wait_for,
)
from pytest_advreview.models import Operation, ReviewQuality, RunnerStatus, Verdict
from pytest_advreview.runner import DispatchRequest, DispatchResult
from pytest_advreview.runner.codex import CodexOptions, CodexReviewer
from pytest_advreview.testing import (
    Behaviour,
    FakeCodex,
    FindingSpec,
    approved_review,
    revise_review,
)

HIGH = FindingSpec("high", "Migration is not idempotent", section="Step 3")
SID = "0193a2b4-c5d6-7e8f-9a0b-1c2d3e4f5a6b"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "codex-home"
    home.mkdir()
    return {"CODEX_HOME": str(home)}


def run(
    fake: FakeCodex,
    repo: Path,
    work: Path,
    env: dict[str, str],
    op: Operation = Operation.INITIAL,
    *,
    sandbox: str = "read-only",
    timeout: float = 30.0,
    session_id: str | None = None,
) -> DispatchResult:
    options = CodexOptions(executable=str(fake.path), sandbox=sandbox, timeout=timeout, env=env)
    req = DispatchRequest(
        review_id="1700000000-00000001",
        repo_root=repo,
        operation=op,
        prompt_body="review docs/plans/x.md",
        work_dir=work,
        session_id=session_id,
    )
    return CodexReviewer(options).dispatch(req)


# -- the general failures of any runner ------------------------------------------------


def test_success_reference_environment(fake_codex, git_repo, tmp_path, env):
    fake = fake_codex(Behaviour(review=revise_review(HIGH), thread_id=SID))
    result = run(fake, git_repo, tmp_path / "w", env)
    assert result.runner.result is RunnerStatus.SUCCESS
    assert result.runner.review_quality is ReviewQuality.VALID
    assert result.runner.codex_session_id == SID
    assert result.attempts == 1


def test_affected_sandbox_empty_stdout_uses_rollout_tier(fake_codex, git_repo, tmp_path, env):
    # --json suppressed: no thread.started; the rollout holding the marker names the id.
    fake = fake_codex(Behaviour(review=revise_review(HIGH), thread_started=False, thread_id=SID))
    result = run(fake, git_repo, tmp_path / "w", env)
    assert result.runner.result is RunnerStatus.SUCCESS
    assert result.runner.codex_session_id == SID


def test_empty_stdout_and_no_rollout_retries_then_fails(fake_codex, git_repo, tmp_path, env):
    fake = fake_codex(Behaviour(review=revise_review(HIGH), thread_started=False, rollouts=0))
    result = run(fake, git_repo, tmp_path / "w", env)
    assert result.runner.result is RunnerStatus.LAUNCH_FAILURE
    assert result.attempts == 2
    assert "both tiers empty" in (result.runner.errors or "")


def test_approved_without_session_id_still_succeeds(fake_codex, git_repo, tmp_path, env):
    # Review sanity comes before session capture: an APPROVED round needs no id.
    fake = fake_codex(Behaviour(review=approved_review(), thread_started=False, rollouts=0))
    result = run(fake, git_repo, tmp_path / "w", env)
    assert result.runner.result is RunnerStatus.SUCCESS
    assert result.runner.verdict is Verdict.APPROVED
    assert result.runner.codex_session_id is None


def test_timeout_exit_124(fake_codex, git_repo, tmp_path, env):
    # A `timeout 600 codex …` wrapper exits 124: retried once, then the result is timeout.
    fake = fake_codex(Behaviour(rc=124, review=None))
    result = run(fake, git_repo, tmp_path / "w", env)
    assert result.runner.result is RunnerStatus.TIMEOUT
    assert result.attempts == 2


def test_model_not_available(fake_codex, git_repo, tmp_path, env):
    fake = fake_codex(Behaviour(rc=1, review=None, turn_failed="The model `bogus` does not exist"))
    result = run(fake, git_repo, tmp_path / "w", env)
    assert result.runner.result is RunnerStatus.LAUNCH_FAILURE
    assert result.attempts == 2
    assert "does not exist" in (result.runner.errors or "")


def test_output_file_unwritable_exit_zero(fake_codex, git_repo, tmp_path, env):
    # Exit 0 is misleading here: stderr says the last message could not be written.
    fake = fake_codex(
        Behaviour(review=None, stderr="Failed to write last message file /x/review.md\n")
    )
    result = run(fake, git_repo, tmp_path / "w", env)
    assert result.runner.result is RunnerStatus.LAUNCH_FAILURE
    assert "Failed to write" in (result.runner.errors or "")


def test_not_inside_trusted_directory(fake_codex, git_repo, tmp_path, env):
    fake = fake_codex(
        Behaviour(
            rc=1,
            review=None,
            stderr="Not inside a trusted directory and --skip-git-repo-check was not specified.\n",
        )
    )
    result = run(fake, git_repo, tmp_path / "w", env)
    assert result.runner.result is RunnerStatus.LAUNCH_FAILURE
    assert "trusted directory" in (result.runner.errors or "")


def test_resume_bad_uuid_archives_diagnostics(fake_codex, git_repo, tmp_path, env):
    fake = fake_codex(
        Behaviour(
            rc=1,
            review=None,
            stderr="Error: thread/resume: thread/resume failed: no rollout found\n",
        )
    )
    work = tmp_path / "w"
    result = run(fake, git_repo, work, env, Operation.RESUME, session_id=SID)
    assert result.runner.result is RunnerStatus.LAUNCH_FAILURE
    assert result.attempts == 2
    assert result.runner.archived_stdout == str(work / "stdout-failed-resume.jsonl")
    assert "no rollout found" in Path(result.runner.archived_stderr or "").read_text()


def test_exit_1_with_empty_stderr(fake_codex, git_repo, tmp_path, env):
    fake = fake_codex(Behaviour(rc=1, review=None, thread_started=False))
    result = run(fake, git_repo, tmp_path / "w", env)
    assert result.runner.result is RunnerStatus.LAUNCH_FAILURE
    assert "no output on stderr" in (result.runner.errors or "")


# -- failures measured with the real Codex CLI 0.171 --------------------------------------


def test_stale_output_file_is_never_taken_for_a_review(fake_codex, git_repo, tmp_path, env):
    work = tmp_path / "w"
    work.mkdir()
    (work / "review.md").write_text(approved_review())  # left over from an earlier run
    fake = fake_codex(Behaviour(rc=1, review=None, stale_o=True, turn_failed="boom"))
    result = run(fake, git_repo, work, env)
    assert result.runner.result is RunnerStatus.LAUNCH_FAILURE
    assert result.runner.verdict is None


def test_exit_zero_with_empty_output_file(fake_codex, git_repo, tmp_path, env):
    fake = fake_codex(Behaviour(review=""))
    result = run(fake, git_repo, tmp_path / "w", env)
    assert result.runner.result is RunnerStatus.LAUNCH_FAILURE
    assert "missing or empty" in (result.runner.errors or "")


def test_stderr_noise_on_success_is_not_failure(fake_codex, git_repo, tmp_path, env):
    noise = (
        "WARNING: proceeding, even though we could not create PATH aliases\n"
        "2026-11-30T10:00:00Z ERROR codex_core::tools::router: approval policy is Never\n"
    )
    fake = fake_codex(Behaviour(review=approved_review(), stderr=noise))
    result = run(fake, git_repo, tmp_path / "w", env)
    assert result.runner.result is RunnerStatus.SUCCESS


def test_resume_of_non_uuid_starting_a_new_thread_is_a_failure(fake_codex, git_repo, tmp_path, env):
    other = "0193a2b4-0000-7000-8000-000000000000"
    fake = fake_codex(Behaviour(review=revise_review(HIGH), thread_id=other))
    result = run(fake, git_repo, tmp_path / "w", env, Operation.RESUME, session_id=SID)
    assert result.runner.result is RunnerStatus.LAUNCH_FAILURE
    assert f"Codex ran thread {other}" in (result.runner.errors or "")


def test_resume_zero_find_keeps_previous_id_with_warning(fake_codex, git_repo, tmp_path, env):
    fake = fake_codex(Behaviour(review=revise_review(HIGH), thread_started=False, rollouts=0))
    result = run(fake, git_repo, tmp_path / "w", env, Operation.RESUME, session_id=SID)
    assert result.runner.result is RunnerStatus.SUCCESS
    assert result.runner.codex_session_id == SID
    assert "both tiers empty" in (result.runner.user_warning or "")


def test_several_rollouts_matching_the_marker_abort(fake_codex, git_repo, tmp_path, env):
    fake = fake_codex(Behaviour(review=revise_review(HIGH), thread_started=False, rollouts=2))
    result = run(fake, git_repo, tmp_path / "w", env)
    assert result.runner.result is RunnerStatus.LAUNCH_FAILURE
    assert result.attempts == 1  # binding the wrong session is worse than stopping
    assert "multiple rollouts" in (result.runner.errors or "")


def test_format_drift_is_retried_once(fake_codex, git_repo, tmp_path, env):
    drift = "## Findings\nThe rollback is broken.\n\nVERDICT: REVISE"
    fake = fake_codex(Behaviour(review=drift), Behaviour(review=revise_review(HIGH)))
    result = run(fake, git_repo, tmp_path / "w", env)
    assert result.runner.result is RunnerStatus.SUCCESS
    assert result.attempts == 2
    prompts = [call["prompt"].splitlines()[0] for call in fake.calls()]
    assert len(set(prompts)) == 2  # a fresh attempt id (and marker) on the retry


def test_degraded_pseudo_review_is_environmental(fake_codex, git_repo, tmp_path, env):
    pseudo = (
        "## Summary\nI could not read the plan: every command failed with "
        "`bwrap: setting up uid map: Permission denied`.\n\n## Findings\n"
        "### [severity: high] Sandbox prevented the review\n\nVERDICT: REVISE"
    )
    fake = fake_codex(Behaviour(review=pseudo, thread_id=SID))
    result = run(fake, git_repo, tmp_path / "w", env)
    assert result.runner.result is RunnerStatus.SUCCESS
    assert result.runner.review_quality is ReviewQuality.DEGRADED_ENVIRONMENTAL


def test_non_utf8_output_is_replaced_not_a_crash(fake_codex, git_repo, tmp_path, env):
    fake = fake_codex(
        Behaviour(
            review=approved_review(),
            stdout_bytes=b"\xff\xfe not json \x80\n",
            stderr="caf\udcc3 noise",
        )
    )
    result = run(fake, git_repo, tmp_path / "w", env)
    assert result.runner.result is RunnerStatus.SUCCESS


def test_missing_executable_is_launch_failure_with_fix(git_repo, tmp_path, env):
    options = CodexOptions(executable=str(tmp_path / "nope" / "codex"), sandbox="read-only")
    req = DispatchRequest(
        review_id="1-2",
        repo_root=git_repo,
        operation=Operation.INITIAL,
        prompt_body="x",
        work_dir=tmp_path / "w",
    )
    result = CodexReviewer(options).dispatch(req)
    assert result.runner.result is RunnerStatus.LAUNCH_FAILURE
    assert "--advreview-codex" in (result.runner.errors or "")


def test_usage_is_a_per_round_delta_on_resume(fake_codex, git_repo, tmp_path, env):
    fake = fake_codex(
        Behaviour(
            review=revise_review(HIGH),
            thread_id=SID,
            usage={"input_tokens": 30, "output_tokens": 9},
        )
    )
    options = CodexOptions(executable=str(fake.path), sandbox="read-only", env=env)
    from pytest_advreview.models import TokenUsage

    req = DispatchRequest(
        review_id="1-2",
        repo_root=git_repo,
        operation=Operation.RESUME,
        session_id=SID,
        prompt_body="x",
        work_dir=tmp_path / "w",
        prior_usage=TokenUsage(input_tokens=20, output_tokens=6),
    )
    result = CodexReviewer(options).dispatch(req)
    assert result.usage == TokenUsage(input_tokens=10, output_tokens=3)
    assert result.thread_usage == TokenUsage(input_tokens=30, output_tokens=9)


def test_timeout_kills_the_whole_process_group(fake_codex, git_repo, tmp_path, env):
    fake = fake_codex(Behaviour(sleep=60, spawn_child_sleep=60, review=None))
    started = time.monotonic()
    # 3 s, not less: on a loaded machine (the CI matrix runs four workers on two cores)
    # the fake needs time to start its child at all, and this test needs the child.
    timeout = 3.0
    result = run(fake, git_repo, tmp_path / "w", env, timeout=timeout)
    assert result.runner.result is RunnerStatus.TIMEOUT
    assert result.attempts == 2
    assert time.monotonic() - started < 2 * (timeout + 3.0) + 8
    assert fake.child_pids()
    pids = fake.child_pids()
    assert not settled(lambda: [pid for pid in pids if sleeper_running(pid)])


def _broken_sandbox_codex(fake: FakeCodex, tmp_path: Path) -> Path:
    wrapper = tmp_path / "codex-broken-sandbox"
    wrapper.write_text(
        textwrap.dedent(
            f"""\
            #!/bin/sh
            if [ "$1" = sandbox ]; then
              echo "bwrap: setting up uid map: Permission denied" >&2
              exit 1
            fi
            exec "{fake.path}" "$@"
            """
        )
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    return wrapper


def test_broken_sandbox_preflight_is_degraded_environmental(fake_codex, git_repo, tmp_path, env):
    fake = fake_codex(Behaviour(review=approved_review()))
    wrapper = _broken_sandbox_codex(fake, tmp_path)
    options = CodexOptions(executable=str(wrapper), sandbox="workspace-write", env=env)
    req = DispatchRequest(
        review_id="1-2",
        repo_root=git_repo,
        operation=Operation.INITIAL,
        prompt_body="x",
        work_dir=tmp_path / "w",
    )
    result = CodexReviewer(options).dispatch(req)
    assert result.runner.result is RunnerStatus.SUCCESS
    assert result.runner.review_quality is ReviewQuality.DEGRADED_ENVIRONMENTAL
    assert "uid map" in (result.runner.errors or "")
    assert fake.calls() == []  # no review launch was wasted on a broken sandbox


def _drive_a_review(fake, git_repo, tmp_path, env, kill_grace=None) -> subprocess.Popen[str]:
    """A Python process that runs one dispatch against ``fake``; prints "interrupted" on
    Ctrl-C.  ``kill_grace`` replaces the seconds between the kill's SIGTERM and SIGKILL."""
    script = tmp_path / "drive.py"
    script.write_text(
        textwrap.dedent(
            f"""\
            from pathlib import Path
            from pytest_advreview.models import Operation
            from pytest_advreview.runner import DispatchRequest, _process
            from pytest_advreview.runner.codex import CodexOptions, CodexReviewer
            if {kill_grace!r} is not None:
                _process.KILL_GRACE_S = {kill_grace!r}
            opts = CodexOptions(executable={str(fake.path)!r}, sandbox="read-only",
                                timeout={INTERRUPTED_HANG_S}, env={env!r})
            req = DispatchRequest(review_id="1-2", repo_root=Path({str(git_repo)!r}),
                                  operation=Operation.INITIAL, prompt_body="x",
                                  work_dir=Path({str(tmp_path / "w")!r}))
            try:
                CodexReviewer(opts).dispatch(req)
            except KeyboardInterrupt:
                print("interrupted", flush=True)
            """
        )
    )
    return start_interruptible([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)


def test_ctrl_c_during_a_review_leaves_no_codex(fake_codex, git_repo, tmp_path, env):
    hang = INTERRUPTED_HANG_S
    fake = fake_codex(Behaviour(sleep=hang, spawn_child_sleep=hang, review=None))
    proc = _drive_a_review(fake, git_repo, tmp_path, env)
    out = interrupt_when(proc, lambda: bool(fake.child_pids()), "the fake codex's start")
    assert "interrupted" in out
    assert fake.child_pids()
    pids = fake.child_pids()
    assert not settled(lambda: [pid for pid in pids if sleeper_running(pid)])


def test_a_second_ctrl_c_during_the_kill_still_kills_the_reviewer(
    fake_codex, git_repo, tmp_path, env
):
    # A reviewer slow to stop on SIGTERM (this one ignores it) holds the kill in its grace
    # period; the user presses Ctrl-C again.  The grace here outlasts the test, so the
    # second Ctrl-C surely lands in it.
    hang = INTERRUPTED_HANG_S
    fake = fake_codex(
        Behaviour(sleep=hang, spawn_child_sleep=hang, ignore_sigterm=True, review=None)
    )
    proc = _drive_a_review(fake, git_repo, tmp_path, env, kill_grace=hang)
    wait_for(proc, lambda: bool(fake.child_pids()), "the fake codex's start")
    proc.send_signal(signal.SIGINT)
    out = interrupt_when(proc, lambda: bool(fake.sigterms()), "the kill's SIGTERM")
    assert "interrupted" in out
    assert len(fake.sigterms()) == 1  # the fake was still running when the kill began
    assert not settled(lambda: live_processes(str(fake.path)))
    pids = fake.child_pids()
    assert not settled(lambda: [pid for pid in pids if sleeper_running(pid)])


# Measured on Codex 0.171: every failure ends rc 1 with its reason in turn.failed or stderr.
@pytest.mark.parametrize(
    ("behaviour", "shown"),
    [
        pytest.param(
            Behaviour(rc=1, review=None, turn_failed="unexpected status 503 Service Unavailable"),
            "503 Service Unavailable",
            id="503",
        ),
        pytest.param(
            Behaviour(
                rc=1, review=None, turn_failed="exceeded retry limit, last status: 429 Too Many"
            ),
            "429",
            id="429",
        ),
        pytest.param(
            Behaviour(rc=1, review=None, turn_failed="unexpected status 401 Unauthorized: bad"),
            "401 Unauthorized",
            id="401",
        ),
        pytest.param(
            Behaviour(rc=1, review=None, turn_failed='{"error":{"message":"bad request"}}'),
            "bad request",
            id="400",
        ),
        pytest.param(
            Behaviour(
                rc=1,
                review=None,
                turn_failed="stream disconnected before completion: idle timeout waiting for SSE",
            ),
            "idle timeout",
            id="stream-idle",
        ),
        pytest.param(
            Behaviour(
                rc=1,
                review=None,
                stdout_extra=(
                    '{"type":"item.completed","item":{"type":"agent_message","text":"partial"}}',
                ),
                turn_failed="stream disconnected before completion: stream closed",
            ),
            "stream closed",
            id="message-then-closed",
        ),
        pytest.param(
            Behaviour(rc=1, review=None, turn_failed="Missing environment variable: `KEY`."),
            "Missing environment variable",
            id="missing-key",
        ),
        pytest.param(
            Behaviour(
                rc=1,
                review=None,
                thread_started=False,
                stderr="Output schema file /x.json is not valid JSON: expected value\n",
            ),
            "not valid JSON",
            id="bad-output-schema",
        ),
    ],
)
def test_codex_facts_failure_rows_are_launch_failures(
    fake_codex, git_repo, tmp_path, env, behaviour, shown
):
    fake = fake_codex(behaviour)
    result = run(fake, git_repo, tmp_path / "w", env)
    assert result.runner.result is RunnerStatus.LAUNCH_FAILURE
    assert result.attempts == 2
    assert shown in (result.runner.errors or "")
    assert result.runner.review_quality is ReviewQuality.UNKNOWN
    assert result.runner.triage.status == "skipped"


def test_missing_codex_home_is_a_launch_failure(fake_codex, git_repo, tmp_path):
    fake = fake_codex(Behaviour(review=approved_review()))
    result = run(fake, git_repo, tmp_path / "w", {"CODEX_HOME": str(tmp_path / "nope")})
    assert result.runner.result is RunnerStatus.LAUNCH_FAILURE
    assert "Error finding codex home" in (result.runner.errors or "")


def test_resume_argv_repeats_sandbox_approvals_and_config(tmp_path):
    options = CodexOptions(
        executable="codex",
        model="m",
        reasoning="xhigh",
        sandbox="workspace-write",
        approvals="auto_review",
        config=("model_provider=p", "model_providers.p.base_url=http://127.0.0.1:1/v1"),
    )
    req = DispatchRequest(
        review_id="1-2",
        repo_root=tmp_path,
        operation=Operation.RESUME,
        prompt_body="x",
        work_dir=tmp_path / "w",
        session_id=SID,
    )
    argv = CodexReviewer(options).argv(req, tmp_path / "o.md", None)
    head = argv[: argv.index("resume")]
    assert argv[argv.index("resume") + 1] == SID
    assert head[head.index("-s") : head.index("-s") + 2] == ["-s", "workspace-write"]
    assert "model_reasoning_effort=xhigh" in head
    assert 'approval_policy="on-request"' in head
    assert 'approvals_reviewer="auto_review"' in head
    assert "model_provider=p" in head
    assert "model_providers.p.base_url=http://127.0.0.1:1/v1" in head
    assert argv[-1] == "-"
    assert "--skip-git-repo-check" not in argv


def test_outside_git_the_trust_check_is_skipped(tmp_path):
    req = DispatchRequest(
        review_id="1-2",
        repo_root=tmp_path,
        operation=Operation.INITIAL,
        prompt_body="x",
        work_dir=tmp_path / "w",
        in_git=False,
    )
    argv = CodexReviewer(CodexOptions(sandbox="inherit")).argv(req, tmp_path / "o.md", None)
    assert argv.index("--skip-git-repo-check") < argv.index("-C")
    assert "-s" not in argv  # inherit: the user's Codex config decides


def test_sandbox_preflight_is_shared_through_the_preflight_file(
    fake_codex, git_repo, tmp_path, env
):
    """xdist workers of one run share one probe: the second reviewer reads the answer."""
    fake = fake_codex(Behaviour(review=approved_review()))
    wrapper = _broken_sandbox_codex(fake, tmp_path)
    shared = tmp_path / "preflight.json"
    options = CodexOptions(
        executable=str(wrapper),
        sandbox="workspace-write",
        env=env,
        preflight_file=str(shared),
    )
    first = CodexReviewer(options).sandbox_preflight(tmp_path)
    assert first is not None and "uid map" in first
    assert "uid map" in shared.read_text()
    # A second reviewer (another worker) with a working sandbox still gets the answer
    # of the run's one probe, without probing again.
    working = replace(options, executable=str(fake.path))
    assert CodexReviewer(working).sandbox_preflight(tmp_path) == first
    shared.write_text('{"problem": null}')
    assert CodexReviewer(options).sandbox_preflight(tmp_path) is None


def test_each_run_has_its_own_preflight_file(tmp_path):
    from pytest_advreview.runner.factory import codex_options
    from pytest_advreview.settings import Settings

    settings = Settings()
    assert codex_options(settings).preflight_file is None
    one = codex_options(settings, tmp_path / "run-1").preflight_file
    assert one is not None and one.startswith(str(tmp_path / "run-1"))
    other = codex_options(settings.model_copy(update={"codex": "/opt/codex"}), tmp_path)
    assert other.preflight_file != codex_options(settings, tmp_path).preflight_file


def _probe_wrapper(fake: FakeCodex, tmp_path: Path, probe: str) -> Path:
    """A ``codex`` whose ``sandbox`` subcommand runs the shell lines ``probe``."""
    wrapper = tmp_path / "codex-probe"
    wrapper.write_text(
        f'#!/bin/sh\nif [ "$1" = sandbox ]; then\n{probe}\nfi\nexec "{fake.path}" "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    return wrapper


def test_warm_up_probes_once_in_the_background_and_dispatch_waits_for_it(
    fake_codex, git_repo, tmp_path, env
):
    fake = fake_codex(Behaviour(review=approved_review()))
    log = tmp_path / "probes.log"
    wrapper = _probe_wrapper(
        fake,
        tmp_path,
        f'echo probe >> "{log}"\nsleep 1\necho "bwrap: setting up uid map: Permission denied" >&2'
        "\nexit 1",
    )
    options = CodexOptions(executable=str(wrapper), sandbox="workspace-write", env=env)
    reviewer = CodexReviewer(options)
    started = time.monotonic()
    reviewer.warm_up(tmp_path / "scratch")
    assert time.monotonic() - started < 0.5  # it returns at once; the probe runs behind
    req = DispatchRequest(
        review_id="1-2",
        repo_root=git_repo,
        operation=Operation.INITIAL,
        prompt_body="x",
        work_dir=tmp_path / "w",
    )
    result = reviewer.dispatch(req)
    # The dispatch waited for the background answer instead of probing again.
    assert result.runner.review_quality is ReviewQuality.DEGRADED_ENVIRONMENTAL
    assert "uid map" in (result.runner.errors or "")
    assert log.read_text().splitlines() == ["probe"]
    assert fake.calls() == []
    reviewer.close()


def test_close_stops_a_hanging_warm_up_without_leaving_an_answer_or_a_process(
    fake_codex, tmp_path, env
):
    fake = fake_codex(Behaviour(review=approved_review()))
    pidfile = tmp_path / "probe.pid"
    wrapper = _probe_wrapper(
        fake,
        tmp_path,
        f'echo $$ > "{pidfile}"\nexec "{sys.executable}" -c "import time; time.sleep(60)"',
    )
    shared = tmp_path / "preflight.json"
    options = CodexOptions(
        executable=str(wrapper),
        sandbox="workspace-write",
        env=env,
        preflight_file=str(shared),
    )
    reviewer = CodexReviewer(options)
    reviewer.warm_up(tmp_path / "scratch")
    deadline = time.monotonic() + 20
    while not pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = int(pidfile.read_text())
    started = time.monotonic()
    reviewer.close()
    assert time.monotonic() - started < 10  # not the probe's 60 s
    assert not settled(lambda: [pid] if sleeper_running(pid) else [])
    # A stopped probe is not an answer: nobody else may read "timed out" from it.
    assert "problem" not in shared.read_text()
