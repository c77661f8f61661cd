"""No credential reaches the reviewer's tool shell, and so none reaches the model.

Observed before: pytest ran with ``OPENAI_API_KEY``, ``GITHUB_TOKEN``,
``AWS_SECRET_ACCESS_KEY`` and a ``*_PASSWORD`` variable set; a tool call of the reviewer
ran ``env``, and every value went back to the model in the next request (Codex 0.171
hands its whole environment to the tool shell).  Then a filter by name held those back
and let through every credential not named like one (a ``*_PAT``, a webhook URL, a JWT,
a PEM key, a mnemonic, a password in a URL query or in a list of URLs, an option string,
``GIT_CONFIG_VALUE_0``).  The tool shell now gets an allow-list: Codex's core names and
the user's ``advreview_env_allow``.  These tests plant such variables, make the scripted
reviewer run ``env`` through the real Codex CLI, and look for the values in every request
the model server received (the request after a tool call carries its output), on
``exec`` and on ``resume``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import ReviewRepo, exec_then_resume
from pytest_advreview.runner import environment
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
#: An ordinary-looking variable nobody allowed: it does not reach the tool shell either.
PLAIN = {"ADVREVIEW_TEST_PLAIN": "plain-value-0009"}


#: A PEM private key: multi-line, and its name has no KEY/TOKEN/SECRET.
_PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ-PLANTED-PEM-21\n"
    "-----END OPENSSH PRIVATE KEY-----"
)
#: Credentials that no guess by name finds: each value carries its own marker.
CREDENTIALS = {
    # names without KEY, TOKEN or SECRET
    "GH_PAT": "github_pat_PLANTED-PAT-11",
    "AZURE_DEVOPS_EXT_PAT": "PLANTED-AZPAT-12",
    "SLACK_WEBHOOK_URL": "https://hooks.slack.invalid/services/T0/B0/PLANTED-HOOK-13",
    "DISCORD_HOOK": "https://discord.invalid/api/webhooks/1/PLANTED-HOOK-14",
    "OIDC_JWT": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjaSJ9.PLANTED-JWT-15",
    "ID_ASSERTION": "eyJ0eXAiOiJKV1QifQ.eyJhdWQiOiJ4In0.PLANTED-JWT-16",
    "STRIPE_SK": "sk_live_PLANTED-STRIPE-17",
    "TWILIO_SID_AND_PW": "AC0:PLANTED-TWILIO-18",
    "DOCKER_CONFIG_JSON": '{"auths":{"r.invalid":{"a":"PLANTED-DOCKER-19"}}}',
    "BASIC_HEADER": "Authorization: Basic PLANTED-HEADER-20",
    "DEPLOY_PEM": _PEM,
    "WALLET_MNEMONIC": "abandon ability able about above absent absorb PLANTED-MNEMONIC-22",
    "SEED_WORDS": "zoo zone zero youth young PLANTED-SEED-23",
    # a password in a URL's query, not in its userinfo
    "SERVICE_URL": "https://api.invalid/v1?user=ci&password=PLANTED-QUERY-24",
    "FEED": "https://feed.invalid/rss?access_token=PLANTED-QUERY-25",
    "BLOB_SAS": "https://acct.blob.invalid/c?sv=2022&sig=PLANTED-SAS-26",
    # a second URL in a list
    "PIP_EXTRA_INDEX_URL": (
        "https://pypi.invalid/simple https://__t__:PLANTED-LIST-27@upload.invalid/simple"
    ),
    "REDIS_NODES": "redis://a.invalid:6379,redis://:PLANTED-LIST-28@b.invalid:6379",
    # option strings
    "MAVEN_OPTS": "-Xmx1g -Dserver.password=PLANTED-OPT-29",
    "JAVA_TOOL_OPTIONS": "-Djavax.net.ssl.trustStorePassword=PLANTED-OPT-30",
    "CURL_ARGS": "-u ci:PLANTED-OPT-31",
    # git configuration from the environment (GIT_CONFIG_COUNT is set beside them)
    "GIT_CONFIG_KEY_0": "http.https://github.invalid/.extraheader",
    "GIT_CONFIG_VALUE_0": "AUTHORIZATION: basic PLANTED-GITCFG-32",
    "GIT_CONFIG_KEY_1": "url.https://x:PLANTED-GITCFG-33@git.invalid/.insteadOf",
    "GIT_CONFIG_VALUE_1": "https://git.invalid/",
    # a core name in another case (Codex matches names case-insensitively)
    "home": "PLANTED-CASE-34",
    "Path": "PLANTED-CASE-35",
    "user": "PLANTED-CASE-36",
    # names that no shell can use, and the old deny-list's own examples
    "my-conn": "PLANTED-DASH-37",
    **PLANTED,
}
#: What the user lets through: one exact name and one glob (ini advreview_env_allow).
LET_THROUGH = {"NPM_TOKEN": "npm-allowed-0041", "MY_APP_MODE": "app-allowed-0042"}
#: Set by Codex itself (constants, or its own ids) or by bash: not from the job's env.
_CODEX_OR_SHELL = ("CODEX_", "LANG", "LC_", "TERM", "NO_COLOR", "PAGER", "GIT_PAGER")
_CODEX_OR_SHELL_EXACT = {"COLORTERM", "GH_PAGER", "PWD", "OLDPWD", "SHLVL", "_"}


def _markers(value: str) -> list[str]:
    return [word for word in value.replace("\n", " ").split() if "PLANTED" in word] or [value]


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


def test_include_only_is_the_core_names_and_the_allowed_ones() -> None:
    # Before: every name that did not look like a credential was listed (a deny-list by
    # name); a plain-looking variable reached the tool shell whatever its value.
    env = {**PLANTED, **ALLOWED, **PLAIN, "HOME": "/h", "PATH": "/b", "A*": "g", "NPM[": "g"}
    assert tool_shell_names(env, allow=["npm_*"]) == ["HOME", "NPM_TOKEN", "PATH"]
    assert tool_shell_names(env) == ["HOME", "PATH"]
    assert tool_shell_names({}) == []
    args = tool_shell_args(env, ["npm_*"])
    assert args[0::2] == ["-c"] * 5
    pairs = dict(arg.split("=", 1) for arg in args[1::2])
    assert pairs == {
        "shell_environment_policy.inherit": '"all"',
        "shell_environment_policy.ignore_default_excludes": "true",
        "shell_environment_policy.exclude": "[]",
        "shell_environment_policy.include_only": json.dumps([*environment.CORE_NAMES, "NPM_TOKEN"]),
        "allow_login_shell": "false",
    }
    # Never empty (Codex reads [] as "no filter"), even with nothing to pass.
    [only] = [a for a in tool_shell_args({})[1::2] if "include_only" in a]
    assert json.loads(only.split("=", 1)[1]) == list(environment.CORE_NAMES)


def test_codex_core_set_as_measured_on_0_171() -> None:
    assert environment.CORE_NAMES == (
        "HOME",
        "LOGNAME",
        "PATH",
        "SHELL",
        "USER",
        "TMPDIR",
        "TEMP",
        "TMP",
    )


def test_a_case_variant_of_a_core_name_never_reaches_codex() -> None:
    # Codex matches include_only (and its own core set) ignoring case: "Path" would pass
    # as PATH does.  The plugin removes it from the Codex process instead.
    environ = {"PATH": "/b", "Path": "s1", "home": "s2", "tmp": "s3", "NPM_TOKEN": "n"}
    environ["\u017fHELL"] = "s4"  # a long s: "SHELL" to a Unicode-aware matcher
    env = reviewer_process_env(environ)
    assert env == {"PATH": "/b", "NPM_TOKEN": "n"}
    assert tool_shell_names(env, ["*_TOKEN"]) == ["NPM_TOKEN", "PATH"]
    # tool_shell_names tells the truth about an environment that was not cleaned.
    assert tool_shell_names(environ) == ["PATH", "Path", "home", "tmp", "\u017fHELL"]


def test_an_allowed_glob_passes_every_case_of_its_names_and_nothing_with_glob_chars() -> None:
    env = {"NPM_TOKEN": "a", "npm_token": "b", "NPM*": "c", "MY_APP_X": "d", "MY_APPX": "e"}
    assert tool_shell_names(env, ["npm_token", "MY_APP_*"]) == [
        "MY_APP_X",
        "NPM_TOKEN",
        "npm_token",
    ]


def test_the_header_names_what_the_allow_list_passes_and_warns_of_credentials() -> None:
    env = {"NPM_TOKEN": "n", "MY_APP_MODE": "x", "MY_APP_URL": "https://u:pw@h.invalid/"}
    lines = environment.allow_warnings(env, ["npm_token", "MY_APP_*"])
    assert lines[0] == (
        "the reviewer's tool shell also sees (advreview_env_allow): "
        "MY_APP_MODE, MY_APP_URL, NPM_TOKEN"
    )
    assert lines[1].startswith("WARNING: advreview_env_allow passes credential-looking")
    assert "MY_APP_URL, NPM_TOKEN" in lines[1]
    assert "MY_APP_MODE" not in lines[1]
    assert "pw" not in " ".join(lines)  # names only, never a value
    assert environment.allow_warnings(env, []) == []
    assert environment.allow_warnings(env, ["NOPE_*"]) == [
        "advreview_env_allow passes no variable of this environment (NOPE_*)"
    ]


@pytest.mark.parametrize(
    ("glob", "message"),
    [
        ("*", "matches every variable, credentials included"),
        ("**", "matches every variable, credentials included"),
        ("?*", "matches every variable, credentials included"),
        ("NPM_TOKEN=abc", "cannot match a variable name"),
        ("NPM TOKEN", "cannot match a variable name"),
    ],
)
def test_a_nonsense_allow_glob_is_a_usage_error(
    pytester: pytest.Pytester, glob: str, message: str
) -> None:
    pytester.makeini(f"[pytest]\nadvreview_env_allow =\n    NPM_TOKEN\n    {glob}\n")
    result = pytester.runpytest("--adversarial-review")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "advreview_env_allow" in out
    assert message in out
    assert "Traceback" not in out


def test_the_codex_lead_gets_the_same_policy() -> None:
    from pytest_advreview.lead import LeadRequest
    from pytest_advreview.lead.codex import CodexLead
    from pytest_advreview.settings import Settings

    settings = Settings.model_validate({"lead": "codex", "env_allow": ("MY_APP_*",)})
    request = LeadRequest(prompt="p", cwd=Path("/r"), work_dir=Path("/w"), allowed=())
    argv = CodexLead(settings).argv(request)
    env = reviewer_process_env(os.environ)
    expected = tool_shell_args(env, ("MY_APP_*",))
    assert any(argv[i : i + len(expected)] == expected for i in range(len(argv)))


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
        env={**codex_env, **CREDENTIALS, **ALLOWED, **PLAIN},
        env_allow=("NPM_*",),
    )
    rev = CodexReviewer(options)

    exec_then_resume(rev, git_repo, tmp_path / "w")

    outputs = _tool_outputs(advreview_server)
    assert len(outputs) == 2  # the exec's tool call and the resume's
    for output in outputs:
        assert "NPM_TOKEN=planted-but-allowed-0008" in output  # env ran, the allow-list works
        assert "\nPATH=" in output  # a core name
        # Before: an ordinary-looking variable passed (only names like credentials were
        # held back); now only the allow-list does, whatever the name.
        assert "plain-value-0009" not in output
    sent = _bodies(advreview_server)
    leaked = [
        name for name, value in CREDENTIALS.items() if any(m in sent for m in _markers(value))
    ]
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
    result.stdout.fnmatch_lines(
        [
            "advreview: * env-allow=npm_token*",
            "advreview: the reviewer's tool shell also sees (advreview_env_allow): NPM_TOKEN",
            "advreview: WARNING: advreview_env_allow passes credential-looking * NPM_TOKEN;*",
        ]
    )
    [output] = _tool_outputs(review_repo.server)
    assert "NPM_TOKEN=planted-but-allowed-0008" in output
    assert "plain-value-0009" not in output  # not allowed: the name does not matter
    sent = _bodies(review_repo.server)
    assert [name for name, value in PLANTED.items() if value in sent] == []


def test_a_codex_config_that_would_undo_the_policy_is_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    for arg in (
        "--advreview-codex-config=shell_environment_policy.include_only=[]",
        '--advreview-codex-config=shell_environment_policy.inherit="core"',
        "--advreview-codex-config=shell_environment_policy.ignore_default_excludes=false",
        '--advreview-codex-config=shell_environment_policy.exclude=["X"]',
        '--advreview-codex-config=shell_environment_policy={inherit="all"}',
        "--advreview-codex-config=allow_login_shell=true",
    ):
        result = pytester.runpytest("--adversarial-review", arg)
        out = result.stdout.str() + result.stderr.str()
        assert result.ret == pytest.ExitCode.USAGE_ERROR, out
        assert "so that no credential reaches the reviewer's tool shell" in out
        assert "advreview_env_allow" in out
        assert "Traceback" not in out


@pytest.mark.real_codex
def test_only_core_names_and_allowed_ones_reach_the_tool_shell(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The CI job has credentials that no name pattern recognises; the reviewer's tool
    # shell must see Codex's core names and what the user allowed, nothing else.
    review_repo.pytester.makeini("[pytest]\nadvreview_env_allow =\n    npm_token\n    MY_APP_*\n")
    review_repo.commit("ini")
    # Core names are passed only when the job has them: a CI container may start with no
    # SHELL, LOGNAME or USER, so the test gives each one a value of its own.
    monkeypatch.setenv("LOGNAME", "ci-runner")
    monkeypatch.setenv("USER", "ci-runner")
    monkeypatch.setenv("SHELL", "/bin/sh")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "2")
    for name, value in {**CREDENTIALS, **LET_THROUGH}.items():
        monkeypatch.setenv(name, value)
    review_repo.plan("x.md")
    review_repo.answer("x.md", shell_step("env"), {"message": approved_review()})

    result = review_repo.run("--advreview-diff=none", "--advreview-sandbox=read-only")

    result.assert_outcomes(passed=1)
    [output] = _tool_outputs(review_repo.server)
    printed = dict(
        line.split("=", 1) for line in output.split("Output:\n", 1)[1].splitlines() if "=" in line
    )
    sent = _bodies(review_repo.server)
    leaked = sorted(
        name
        for name, value in CREDENTIALS.items()
        if any(m in output or m in sent for m in _markers(value))
    )
    assert leaked == []
    assert printed["NPM_TOKEN"] == "npm-allowed-0041"
    assert printed["MY_APP_MODE"] == "app-allowed-0042"
    for name in ("HOME", "LOGNAME", "PATH", "SHELL", "USER", "TMPDIR"):
        assert name in printed, name
    assert printed["USER"] == "ci-runner"
    # Exactly: nothing of the test runner's own environment came through either.
    allowed = {"HOME", "LOGNAME", "PATH", "SHELL", "USER", "TMPDIR", "TEMP", "TMP", *LET_THROUGH}
    others = sorted(
        name
        for name in printed
        if name not in allowed
        and name not in _CODEX_OR_SHELL_EXACT
        and not name.startswith(_CODEX_OR_SHELL)
    )
    assert others == []
