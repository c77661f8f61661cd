"""No credential reaches the reviewer's tool shell, and so none reaches the model.

Observed before: pytest ran with ``OPENAI_API_KEY``, ``GITHUB_TOKEN``,
``AWS_SECRET_ACCESS_KEY`` and a ``*_PASSWORD`` variable set; a tool call of the reviewer
ran ``env``, and every value went back to the model in the next request (Codex 0.171
hands its whole environment to the tool shell).  These tests plant such variables, make
the scripted reviewer run ``env`` through the real Codex CLI, and look for the values in
every request the model server received (the request after a tool call carries its
output), on ``exec`` and on ``resume``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ReviewRepo
from pytest_advreview.models import Operation, RunnerStatus, Verdict
from pytest_advreview.runner import DispatchRequest
from pytest_advreview.runner.codex import CodexOptions, CodexReviewer
from pytest_advreview.runner.environment import (
    looks_like_credential,
    reviewer_process_env,
    tool_shell_args,
    tool_shell_names,
)
from pytest_advreview.testing import (
    FAKE_KEY_VALUE,
    ScriptedServer,
    approved_review,
    codex_provider_args,
    revise_review,
    shell_step,
)

#: Variables that look like credentials, each with a value that is easy to find.
PLANTED = {
    "OPENAI_API_KEY": "sk-planted-openai-0001",
    "GITHUB_TOKEN": "ghp_planted_github_0002",
    "AWS_SECRET_ACCESS_KEY": "planted-aws-secret-0003",
    "DB_PASSWORD": "planted-db-password-0004",
    "ADVREVIEW_STATE_KEY": "planted-state-key-0005-" + "0123456789abcdef" * 2,
    "Session_Cookie": "planted-cookie-0006",
    "DATABASE_URL": "postgres://app:planted-url-password-0007@db.invalid/app",
}
#: A credential-looking variable the user allows through (ini advreview_env_allow).
ALLOWED = {"NPM_TOKEN": "planted-but-allowed-0008"}
#: An ordinary variable: the tool shell keeps it (the env command really ran).
PLAIN = {"ADVREVIEW_TEST_PLAIN": "plain-value-0009"}


def _bodies(server: ScriptedServer) -> str:
    return "\n".join(json.dumps(r.body) for r in server.response_requests)


def _tool_outputs(server: ScriptedServer) -> list[str]:
    """The output of each tool call, once (a resume re-sends the earlier ones)."""
    found: dict[str, str] = {}
    for request in server.response_requests:
        for item in request.function_call_outputs:
            found.setdefault(str(item.get("call_id")), str(item.get("output")))
    return list(found.values())


# -- the policy ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "github_token",
        "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD",
        "PGPASSWORD",
        "MYSQL_PWD",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "NPM_CONFIG__AUTH",
        "SSH_PRIVATE_KEY_PATH",
        "SESSION_COOKIE",
        "SENTRY_DSN",
        "ADVREVIEW_STATE_KEY",
    ],
)
def test_credential_looking_names_are_recognised(name: str) -> None:
    assert looks_like_credential(name)


@pytest.mark.parametrize("name", ["PATH", "HOME", "LANG", "TERM", "CI", "GITHUB_SHA", "TMPDIR"])
def test_ordinary_names_are_not_credentials(name: str) -> None:
    assert not looks_like_credential(name, "/usr/bin")


def test_a_url_with_a_password_is_a_credential_whatever_its_name() -> None:
    assert looks_like_credential("HTTPS_PROXY", "http://user:pw@proxy.invalid:3128")
    assert not looks_like_credential("HTTPS_PROXY", "http://proxy.invalid:3128")


def test_include_only_lists_plain_safe_names_and_is_never_empty() -> None:
    env = {**PLANTED, **ALLOWED, **PLAIN, "HOME": "/h", "A*": "glob", "B[": "glob"}
    names = tool_shell_names(env, allow=["npm_*"])
    assert names[0] == "PATH"  # listed even when absent: an empty list means "no filter"
    assert set(names) == {"PATH", "HOME", "NPM_TOKEN", "ADVREVIEW_TEST_PLAIN"}
    assert tool_shell_names({}) == ["PATH"]
    args = tool_shell_args(env)
    assert args[0::2] == ["-c", "-c"]
    key, value = args[1].split("=", 1)
    assert key == "shell_environment_policy.include_only"
    assert json.loads(value) == ["PATH", "ADVREVIEW_TEST_PLAIN", "HOME"]
    assert args[3] == "allow_login_shell=false"


def test_the_state_key_never_reaches_a_reviewer_process() -> None:
    env = reviewer_process_env({"ADVREVIEW_STATE_KEY": "k", "OPENAI_API_KEY": "o"})
    assert env == {"OPENAI_API_KEY": "o"}  # Codex still has its own key


def test_allowing_the_state_key_does_not_pass_it() -> None:
    assert "ADVREVIEW_STATE_KEY" not in tool_shell_names({"ADVREVIEW_STATE_KEY": "k"}, ["*"])


# -- the real Codex CLI ------------------------------------------------------------------


@pytest.mark.real_codex
def test_tool_shell_sees_no_credential_on_exec_and_resume(
    codex_executable: Path,
    advreview_server: ScriptedServer,
    codex_env: dict[str, str],
    git_repo: Path,
    tmp_path: Path,
) -> None:
    advreview_server.set_script(
        {
            "rules": [],
            "default": [
                shell_step("env", "c1"),
                {"message": revise_review()},
                shell_step("env", "c2"),
                {"message": approved_review()},
            ],
        }
    )
    options = CodexOptions(
        executable=str(codex_executable),
        model="fake-model",
        reasoning="low",
        sandbox="read-only",
        config=tuple(codex_provider_args(advreview_server.url)),
        timeout=60.0,
        env={**codex_env, **PLANTED, **ALLOWED, **PLAIN},
        env_allow=("NPM_*",),
    )
    rev = CodexReviewer(options)

    def request(op: Operation, **kw: object) -> DispatchRequest:
        return DispatchRequest.model_validate(
            {
                "review_id": "1700000000-12345678",
                "repo_root": git_repo,
                "operation": op,
                "prompt_body": "MARK-PLAN review the plan",
                "work_dir": tmp_path / "w",
                **kw,
            }
        )

    first = rev.dispatch(request(Operation.INITIAL))
    assert first.runner.result is RunnerStatus.SUCCESS, first.runner.errors
    second = rev.dispatch(request(Operation.RESUME, session_id=first.runner.codex_session_id))
    assert second.runner.result is RunnerStatus.SUCCESS, second.runner.errors
    assert second.runner.verdict is Verdict.APPROVED

    outputs = _tool_outputs(advreview_server)
    assert len(outputs) == 2  # the exec's tool call and the resume's
    for output in outputs:
        assert "ADVREVIEW_TEST_PLAIN=plain-value-0009" in output  # env did run
        assert "NPM_TOKEN=planted-but-allowed-0008" in output  # the allow-list works
    sent = _bodies(advreview_server)
    leaked = [name for name, value in PLANTED.items() if value in sent]
    assert leaked == []
    # The provider's key is a credential too: Codex authenticates with it, the tools
    # never see it.
    assert FAKE_KEY_VALUE not in sent
    assert {r.headers.get("authorization") for r in advreview_server.response_requests} == {
        f"Bearer {FAKE_KEY_VALUE}"
    }


@pytest.mark.real_codex
def test_a_review_run_keeps_the_jobs_secrets_from_the_model(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The observed case end to end: pytest itself runs with the CI job's secrets.
    for name, value in {**PLANTED, **ALLOWED, **PLAIN}.items():
        monkeypatch.setenv(name, value)
    review_repo.pytester.makeini("[pytest]\nadvreview_env_allow =\n    npm_token\n")
    review_repo.commit("ini")
    review_repo.plan("x.md")
    review_repo.answer("x.md", shell_step("env"), {"message": approved_review()})

    result = review_repo.run("--advreview-diff=none", "--advreview-sandbox=read-only")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["advreview: * env-allow=npm_token*"])
    [output] = _tool_outputs(review_repo.server)
    assert "ADVREVIEW_TEST_PLAIN=plain-value-0009" in output
    assert "NPM_TOKEN=planted-but-allowed-0008" in output
    sent = _bodies(review_repo.server)
    assert [name for name, value in PLANTED.items() if value in sent] == []


def test_a_codex_config_that_would_undo_the_policy_is_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    for arg in (
        "--advreview-codex-config=shell_environment_policy.include_only=[]",
        '--advreview-codex-config=shell_environment_policy={inherit="all"}',
        "--advreview-codex-config=allow_login_shell=true",
    ):
        result = pytester.runpytest("--adversarial-review", arg)
        out = result.stdout.str() + result.stderr.str()
        assert result.ret == pytest.ExitCode.USAGE_ERROR, out
        assert "so that no credential reaches the reviewer's tool shell" in out
        assert "advreview_env_allow" in out
        assert "Traceback" not in out
