"""Tests of ``pytest_advreview.settings``: options, precedence, validation, header, Codex args.

The inner pytest runs use ``-p no:advreview`` and a conftest that calls
:func:`~pytest_advreview.settings.add_options` itself, with a ``pytest_configure`` that
calls :func:`~pytest_advreview.settings.resolve`.  That tests the settings module on its
own, whatever the real entry point (``plugin.py``) registers: registering the options
twice would be an argparse conflict.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_advreview.models import OutputFormat, Severity
from pytest_advreview.options import CHOICES
from pytest_advreview.runner.codex import approval_args, sandbox_args
from pytest_advreview.settings import Settings, header_lines, resolve, runtime_hints

CONFTEST = """
from pytest_advreview.settings import add_options, header_lines, resolve

def pytest_addoption(parser):
    add_options(parser)

def pytest_configure(config):
    config._advreview_test_settings = resolve(config)

def pytest_report_header(config):
    return header_lines(config._advreview_test_settings)
"""

NO_PLUGIN = ("-p", "no:advreview")


@pytest.fixture
def pyt(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester dir with the settings conftest and no ``ADVREVIEW_*`` from the outer env.

    Not under CI either (the suite itself runs under ``CI=true`` there): CI changes
    defaults (approvals ``never``), which the CI tests set on purpose.
    """
    for name in list(os.environ):
        if name.startswith("ADVREVIEW_") or name in ("GITHUB_BASE_REF", "CI", "GITHUB_ACTIONS"):
            monkeypatch.delenv(name)
    pytester.makeconftest(CONFTEST)
    return pytester


def settings_of(pytester: pytest.Pytester, *args: str) -> Settings:
    config = pytester.parseconfigure(*NO_PLUGIN, *args)
    return resolve(config)


def usage_error(pytester: pytest.Pytester, *args: str) -> str:
    """Run pytest, assert a clean usage error, return its combined output."""
    result = pytester.runpytest(*NO_PLUGIN, *args)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "Traceback" not in out
    return out


# -- defaults and precedence ---------------------------------------------------------------


def test_defaults_apply_when_nothing_is_set(pyt: pytest.Pytester) -> None:
    settings = settings_of(pyt)
    expected = Settings(decisions=str(pyt.path / ".advreview" / "decisions.toml"))
    assert settings == expected
    assert settings.model == "gpt-5.5"
    assert settings.sandbox == "workspace-write"
    assert not settings.sandbox_explicit
    assert settings.fail_on is Severity.MEDIUM
    assert settings.plans == ("docs/**/plans/**/*.md", "docs/**/specs/**/*.md")
    assert settings.allow_untracked == (".pytest_cache/**", "**/__pycache__/**")


@pytest.mark.parametrize(
    ("field", "ini", "env", "cli", "expected"),
    [
        ("model", "m-ini", "m-env", "m-cli", ("m-ini", "m-env", "m-cli")),
        ("reasoning", "low", "medium", "xhigh", ("low", "medium", "xhigh")),
        ("timeout", "30", "45.5", "90", (30.0, 45.5, 90.0)),
        ("max_rounds", "2", "3", "4", (2, 3, 4)),
        (
            "fail_on",
            "critical",
            "high",
            "medium",
            (Severity.CRITICAL, Severity.HIGH, Severity.MEDIUM),
        ),
        (
            "output_format",
            "json",
            "markdown",
            "json",
            (OutputFormat.JSON, OutputFormat.MARKDOWN, OutputFormat.JSON),
        ),
    ],
)
def test_cli_beats_env_beats_ini_beats_default(
    pyt: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    field: str,
    ini: str,
    env: str,
    cli: str,
    expected: tuple[object, object, object],
) -> None:
    option = "--advreview-" + field.replace("_", "-")
    default = getattr(Settings(), field)
    assert getattr(settings_of(pyt), field) == default

    pyt.makeini(f"[pytest]\nadvreview_{field} = {ini}\n")
    assert getattr(settings_of(pyt), field) == expected[0]

    monkeypatch.setenv(f"ADVREVIEW_{field.upper()}", env)
    assert getattr(settings_of(pyt), field) == expected[1]

    assert getattr(settings_of(pyt, f"{option}={cli}"), field) == expected[2]


def test_empty_environment_variable_counts_as_unset(
    pyt: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pyt.makeini("[pytest]\nadvreview_model = from-ini\n")
    monkeypatch.setenv("ADVREVIEW_MODEL", "")
    assert settings_of(pyt).model == "from-ini"


def test_pyproject_ini_options_are_read(pyt: pytest.Pytester) -> None:
    pyt.makepyprojecttoml(
        """
        [tool.pytest.ini_options]
        advreview_max_rounds = 7
        advreview_plans = ["plans/*.md"]
        advreview_codex_config = ["model_provider=fake"]
        """
    )
    settings = settings_of(pyt)
    assert settings.max_rounds == 7
    assert settings.plans == ("plans/*.md",)
    assert settings.codex_config == ("model_provider=fake",)


def test_linelist_ini_keys_replace_their_defaults(pyt: pytest.Pytester) -> None:
    pyt.makeini(
        "[pytest]\n"
        "advreview_plans =\n    plans/*.md\n    rfcs/**/*.md\n"
        "advreview_allow_untracked =\n    build/**\n"
        "advreview_plan_scope = all\n"
    )
    settings = settings_of(pyt)
    assert settings.plans == ("plans/*.md", "rfcs/**/*.md")
    assert settings.allow_untracked == ("build/**",)
    assert settings.plan_scope == "all"


def test_env_allow_is_an_ini_list_that_reaches_the_codex_options(pyt: pytest.Pytester) -> None:
    from pytest_advreview.runner.factory import codex_options

    assert settings_of(pyt).env_allow == ()
    pyt.makeini("[pytest]\nadvreview_env_allow =\n    NPM_TOKEN\n    MY_APP_*\n")
    settings = settings_of(pyt)
    assert settings.env_allow == ("NPM_TOKEN", "MY_APP_*")
    assert codex_options(settings).env_allow == ("NPM_TOKEN", "MY_APP_*")
    assert "env-allow=NPM_TOKEN,'MY_APP_*'" in header_lines(settings)[1]


def test_an_ini_codex_config_line_that_would_undo_the_env_policy_is_named(
    pyt: pytest.Pytester,
) -> None:
    ini = pyt.makeini("[pytest]\nadvreview_codex_config =\n    allow_login_shell=true\n")
    out = usage_error(pyt)
    assert (
        f'pytest-advreview: ini advreview_codex_config line "allow_login_shell=true" in {ini} '
        "is not valid; allow_login_shell is set by pytest-advreview so that no credential "
        "reaches the reviewer's tool shell; let more variables through with the ini key "
        "advreview_env_allow (one glob per line)"
    ) in out


def test_codex_config_merges_ini_lines_then_command_line_values(pyt: pytest.Pytester) -> None:
    pyt.makeini("[pytest]\nadvreview_codex_config =\n    model_provider=fake\n    a.b=1\n")
    settings = settings_of(
        pyt, "--advreview-codex-config=a.b=2", '--advreview-codex-config=x="y z"'
    )
    assert settings.codex_config == ("model_provider=fake", "a.b=1", "a.b=2", 'x="y z"')


def test_fresh_flag_and_environment(pyt: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    assert settings_of(pyt).fresh is False
    assert settings_of(pyt, "--advreview-fresh").fresh is True
    monkeypatch.setenv("ADVREVIEW_FRESH", "yes")
    assert settings_of(pyt).fresh is True
    monkeypatch.setenv("ADVREVIEW_FRESH", "0")
    assert settings_of(pyt).fresh is False


def test_enabled_follows_adversarial_review_flag(pyt: pytest.Pytester) -> None:
    assert settings_of(pyt).enabled is False
    assert settings_of(pyt, "--adversarial-review").enabled is True


def test_sandbox_is_explicit_from_any_source(
    pyt: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert settings_of(pyt).sandbox_explicit is False
    pyt.makeini("[pytest]\nadvreview_sandbox = workspace-write\n")
    assert settings_of(pyt).sandbox_explicit is True
    monkeypatch.setenv("ADVREVIEW_SANDBOX", "read-only")
    settings = settings_of(pyt)
    assert (settings.sandbox, settings.sandbox_explicit) == ("read-only", True)


def test_head_mode_is_read_only_unless_this_run_chooses_the_sandbox(
    pyt: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The ini line is the project's choice for its own branches, not for a fork's head.
    pyt.makeini("[pytest]\nadvreview_sandbox = workspace-write\n")
    settings = settings_of(pyt, "--advreview-head=pr")
    assert (settings.head, settings.sandbox, settings.sandbox_explicit) == (
        "pr",
        "read-only",
        False,
    )
    monkeypatch.setenv("ADVREVIEW_HEAD", "env-sha")
    assert settings_of(pyt).head == "env-sha"
    assert settings_of(pyt).sandbox == "read-only"
    monkeypatch.setenv("ADVREVIEW_SANDBOX", "workspace-write")
    assert settings_of(pyt).sandbox == "workspace-write"
    assert settings_of(pyt, "--advreview-sandbox=danger-full-access").sandbox == (
        "danger-full-access"
    )


def test_an_empty_head_variable_is_a_usage_error_not_a_review_of_the_base(
    pyt: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADVREVIEW_HEAD", " ")
    out = usage_error(pyt, "--adversarial-review")
    assert "environment ADVREVIEW_HEAD is set but empty" in out
    assert settings_of(pyt, "--advreview-head=abc123").head == "abc123"


def test_head_mode_refuses_escalations_unless_this_run_chooses_approvals(
    pyt: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pyt.makeini("[pytest]\nadvreview_approvals = auto_review\n")
    assert settings_of(pyt).approvals == "auto_review"
    assert settings_of(pyt, "--advreview-head=pr").approvals == "never"
    monkeypatch.setenv("ADVREVIEW_APPROVALS", "user")
    assert settings_of(pyt, "--advreview-head=pr").approvals == "user"


def test_paths_are_made_absolute_against_the_invocation_dir(pyt: pytest.Pytester) -> None:
    plan = pyt.path / "docs" / "plan with space.md"
    plan.parent.mkdir()
    plan.write_text("# plan\n")
    settings = settings_of(
        pyt,
        "--advreview-report=out/r.md",
        "--advreview-sarif=r.sarif",
        "--advreview-json=r.json",
        "--advreview-codex=bin/codex",
        "--advreview-against-plan=docs/plan with space.md",
    )
    assert settings.report == str(pyt.path / "out" / "r.md")
    assert settings.sarif == str(pyt.path / "r.sarif")
    assert settings.json_report == str(pyt.path / "r.json")
    assert settings.codex == str(pyt.path / "bin" / "codex")
    assert settings.against_plan == str(plan)
    assert settings_of(pyt, "--advreview-codex=codex-beta").codex == "codex-beta"


def test_budget_tokens_accepts_off(pyt: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADVREVIEW_BUDGET_TOKENS", "200000")
    assert settings_of(pyt).budget_tokens == 200_000
    assert settings_of(pyt, "--advreview-budget-tokens=off").budget_tokens is None


def test_command_reviewer_with_command(pyt: pytest.Pytester) -> None:
    settings = settings_of(
        pyt, "--advreview-reviewer=command", "--advreview-command=my-review --strict 'a b'"
    )
    assert (settings.reviewer, settings.command) == ("command", "my-review --strict 'a b'")


def test_settings_survive_the_json_round_trip_to_xdist_workers(pyt: pytest.Pytester) -> None:
    settings = settings_of(
        pyt, "--advreview-codex-config=a=1", "--advreview-fail-on=high", "--advreview-fresh"
    )
    assert Settings.model_validate(settings.model_dump(mode="json")) == settings


# -- validation ----------------------------------------------------------------------------


def test_invalid_cli_choice_names_the_option_and_the_choices(pyt: pytest.Pytester) -> None:
    out = usage_error(pyt, "--adversarial-review", "--advreview-reasoning=extreme")
    assert (
        "pytest-advreview: --advreview-reasoning=extreme is not valid; "
        "choose one of: low, medium, high, xhigh"
    ) in out


def test_invalid_environment_value_names_the_variable(
    pyt: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADVREVIEW_TIMEOUT", "abc")
    out = usage_error(pyt)
    assert (
        "pytest-advreview: environment ADVREVIEW_TIMEOUT=abc is not valid; "
        "expected a number of seconds greater than 0"
    ) in out


def test_invalid_ini_value_names_the_key_and_the_file(pyt: pytest.Pytester) -> None:
    ini = pyt.makeini("[pytest]\nadvreview_max_rounds = 50\n")
    out = usage_error(pyt)
    assert (
        f'pytest-advreview: ini advreview_max_rounds = "50" in {ini} is not valid; '
        "expected a whole number from 1 to 20"
    ) in out


def test_invalid_override_ini_value_names_the_override(pyt: pytest.Pytester) -> None:
    out = usage_error(pyt, "-o", "advreview_fail_on=low")
    assert (
        "pytest-advreview: -o advreview_fail_on=low is not valid; "
        "choose one of: critical, high, medium"
    ) in out


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        (
            "--advreview-sandbox=none",
            "choose one of: read-only, workspace-write, danger-full-access, inherit",
        ),
        ("--advreview-approvals=untrusted", "choose one of: auto_review, user, never"),
        ("--advreview-output-format=yaml", "choose one of: markdown, json"),
        ("--advreview-isolation=docker", "choose one of: auto, worktree, none"),
        ("--advreview-diff=staged", "choose one of: auto, uncommitted, branch, none"),
        ("--advreview-timeout=0", "expected a number of seconds greater than 0"),
        ("--advreview-timeout=inf", "expected a number of seconds greater than 0"),
        ("--advreview-max-rounds=0", "expected a whole number from 1 to 20"),
        ("--advreview-max-rounds=2.5", "expected a whole number from 1 to 20"),
        ("--advreview-budget-tokens=-5", "expected a whole number of tokens from 1 to"),
        ("--advreview-jobs=fast", "expected a whole number from 1 to 32, or auto"),
        ("--advreview-jobs=0", "expected a whole number from 1 to 32, or auto"),
        ("--advreview-model=", "expected a model name, not an empty value"),
        (
            "--advreview-reviewer=my reviewer",
            "expected codex, claude, command or the name of a reviewer",
        ),
        ("--advreview-command=x 'unclosed", "expected a shell-quoted command line"),
        ("--advreview-codex-config=novalue", "expected KEY=VALUE with a non-empty key"),
        ("--advreview-codex-config==value", "expected KEY=VALUE with a non-empty key"),
    ],
)
def test_each_invalid_cli_value_is_a_usage_error(
    pyt: pytest.Pytester, arg: str, expected: str
) -> None:
    out = usage_error(pyt, arg)
    assert f"pytest-advreview: {arg} is not valid; {expected}" in out


# Every numeric setting, out of the range the code can handle, from every source.  A value
# that passes validation must be one the run can use: --advreview-timeout=1e12 used to pass
# "greater than 0" and then crash every item with OverflowError in the process wait.
_TIMEOUT_ERR = "expected a number of seconds greater than 0 and at most 86400 (one day)"
_ROUNDS_ERR = "expected a whole number from 1 to 20"
_BUDGET_ERR = "expected a whole number of tokens from 1 to 1000000000000, or off"
OUT_OF_RANGE = [
    *[
        ("timeout", raw, _TIMEOUT_ERR)
        for raw in ("1e12", "86401", "1e400", "inf", "-inf", "nan", "-1", "0", "1e-400", "x")
    ],
    *[
        ("max_rounds", raw, _ROUNDS_ERR)
        for raw in ("0", "21", "-1", "9" * 30, "9" * 5000, "nan", "1e3", "2.5")
    ],
    *[
        ("budget_tokens", raw, _BUDGET_ERR)
        for raw in ("0", "-5", "1000000000001", "9" * 30, "9" * 5000, "inf", "nan", "1e6")
    ],
]


def _numeric_id(case: tuple[str, str, str]) -> str:
    field, raw, _ = case
    return f"{field}={raw if len(raw) < 12 else raw[:6] + f'...({len(raw)})'}"


@pytest.mark.parametrize("source", ["cli", "env", "ini"])
@pytest.mark.parametrize("case", OUT_OF_RANGE, ids=[_numeric_id(c) for c in OUT_OF_RANGE])
def test_numeric_value_out_of_range_is_a_usage_error_naming_its_source(
    pyt: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
    case: tuple[str, str, str],
) -> None:
    field, raw, expected = case
    option = "--advreview-" + field.replace("_", "-")
    args: list[str] = []
    if source == "cli":
        args = [f"{option}={raw}"]
        where = f"{option}={raw}"
    elif source == "env":
        monkeypatch.setenv(f"ADVREVIEW_{field.upper()}", raw)
        where = f"environment ADVREVIEW_{field.upper()}={raw}"
    else:
        ini = pyt.makeini(f"[pytest]\nadvreview_{field} = {raw}\n")
        where = f'ini advreview_{field} = "{raw}" in {ini}'
    out = usage_error(pyt, "--adversarial-review", *args)
    assert f"pytest-advreview: {where} is not valid; {expected}" in out


@pytest.mark.parametrize(
    ("field", "raw", "value"),
    [
        ("timeout", "86400", 86400.0),
        ("timeout", "0.5s", 0.5),
        ("max_rounds", "20", 20),
        ("max_rounds", "1", 1),
        ("budget_tokens", "1000000000000", 10**12),
        ("budget_tokens", "1_000", 1000),
    ],
)
def test_numeric_values_at_the_bounds_are_accepted(
    pyt: pytest.Pytester, field: str, raw: str, value: object
) -> None:
    option = "--advreview-" + field.replace("_", "-")
    assert getattr(settings_of(pyt, f"{option}={raw}"), field) == value


def test_a_timeout_at_the_bound_runs_the_process_wait(tmp_path: Path) -> None:
    # The largest accepted value must be one the wait can take (poll() takes an int of ms).
    from pytest_advreview.options import MAX_TIMEOUT_S
    from pytest_advreview.runner._process import launch

    stdin = tmp_path / "in"
    stdin.write_text("")
    rc = launch(
        ["true"],
        cwd=tmp_path,
        stdin_file=stdin,
        stdout_file=tmp_path / "out",
        stderr_file=tmp_path / "err",
        env=dict(os.environ),
        timeout=float(MAX_TIMEOUT_S),
    )
    assert rc == 0


def test_invalid_ini_plan_scope_lists_choices(pyt: pytest.Pytester) -> None:
    pyt.makeini("[pytest]\nadvreview_plan_scope = some\n")
    out = usage_error(pyt)
    assert 'advreview_plan_scope = "some"' in out
    assert "choose one of: changed, all" in out


def test_invalid_ini_codex_config_line_is_named(pyt: pytest.Pytester) -> None:
    pyt.makeini("[pytest]\nadvreview_codex_config =\n    ok=1\n    broken\n")
    out = usage_error(pyt)
    assert 'ini advreview_codex_config line "broken"' in out


def test_command_reviewer_without_command_says_how_to_fix(pyt: pytest.Pytester) -> None:
    out = usage_error(pyt, "--advreview-reviewer=command")
    assert "--advreview-reviewer=command needs the command to run" in out
    assert "--advreview-command=" in out


def test_lead_command_without_command_says_how_to_fix(pyt: pytest.Pytester) -> None:
    out = usage_error(pyt, "--advreview-lead=command")
    assert "--advreview-lead=command needs the command to run" in out
    assert "--advreview-lead-command=" in out


def test_lead_with_head_mode_is_a_usage_error(pyt: pytest.Pytester) -> None:
    out = usage_error(
        pyt, "--adversarial-review", "--advreview-head=main", "--advreview-lead=codex"
    )
    assert "--advreview-lead edits what it reviews, but with --advreview-head" in out


def test_unknown_lead_names_the_choices(pyt: pytest.Pytester) -> None:
    out = usage_error(pyt, "--adversarial-review", "--advreview-lead=gpt")
    assert "--advreview-lead=gpt is not valid; choose one of: none, codex, claude, command" in out


def test_lead_settings_from_ini_and_environment(
    pyt: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pyt.makeini("[pytest]\nadvreview_lead = claude\nadvreview_lead_code = true\n")
    monkeypatch.setenv("ADVREVIEW_LEAD_MODEL", "sonnet")
    settings = settings_of(pyt, "--advreview-lead-patch=out/lead.patch")
    assert (settings.lead, settings.lead_model, settings.lead_code) == ("claude", "sonnet", True)
    assert settings.lead_patch == str(pyt.path / "out" / "lead.patch")


def test_missing_against_plan_file_is_a_usage_error(pyt: pytest.Pytester) -> None:
    out = usage_error(pyt, "--advreview-against-plan=docs/nope.md")
    assert "--advreview-against-plan=docs/nope.md: no such file" in out


# -- help ----------------------------------------------------------------------------------


def test_help_lists_options_ini_keys_and_generated_choices(pyt: pytest.Pytester) -> None:
    result = pyt.runpytest(*NO_PLUGIN, "--help")
    out = result.stdout.str()
    for name in ("--adversarial-review", "--advreview-reasoning", "--advreview-codex-config"):
        assert name in out
    for key in ("advreview_plans", "advreview_allow_untracked", "advreview_max_rounds"):
        assert key in out
    flat = " ".join(out.split())  # argparse wraps lines; compare word by word
    for field in ("sandbox", "reasoning", "diff"):
        for value, text in CHOICES[field].items():
            assert f"{value}: {text}" in flat


# -- header, hints, Codex arguments --------------------------------------------------------


def test_header_line_shows_the_effective_settings() -> None:
    assert header_lines(Settings()) == [
        "advreview: reviewer=codex model=gpt-5.5 reasoning=high sandbox=workspace-write "
        "approvals=auto_review rounds<=5 fail-on>=medium format=markdown timeout=600s"
    ]


def test_header_second_line_lists_non_defaults() -> None:
    settings = Settings(isolation="worktree", budget_tokens=1000, language="Deutsch")
    lines = header_lines(settings)
    assert len(lines) == 2
    assert lines[1] == "advreview: language=Deutsch isolation=worktree budget-tokens=1000"


def test_header_wraps_the_non_defaults_between_settings_at_normal_width() -> None:
    codex = "/opt/tools/" + "x" * 60 + "/bin/codex"
    settings = Settings(
        isolation="worktree",
        budget_tokens=1000,
        language="Deutsch",
        codex=codex,
        base="origin/main",
        strict_exit=True,
    )
    lines = header_lines(settings)[1:]
    assert len(lines) == 3, lines
    assert all(len(line) <= 100 for line in lines), lines
    # Every setting stays whole, on one line, after the prefix.
    assert f"codex={codex}" in " ".join(lines)
    assert all(line.startswith("advreview: ") for line in lines)
    # A setting longer than the width is a line of its own, never split.
    alone = header_lines(Settings(codex="/" + "y" * 120))[1]
    assert alone == "advreview: codex=/" + "y" * 120


def test_header_for_command_reviewer_shows_the_command() -> None:
    line = header_lines(Settings(reviewer="command", command="rev --x", timeout=1.5))[0]
    assert line.startswith("advreview: reviewer=command command='rev --x' rounds<=5")
    assert "model=" not in line
    assert line.endswith("timeout=1.5s")


def test_header_is_printed_by_report_header(pyt: pytest.Pytester) -> None:
    result = pyt.runpytest(*NO_PLUGIN, "--advreview-max-rounds=3")
    result.stdout.fnmatch_lines(["advreview: reviewer=codex model=gpt-5.5 * rounds<=3 *"])


def test_workspace_write_hint_only_in_place_when_sandbox_not_explicit() -> None:
    assert runtime_hints(Settings(isolation="none")) == [
        "workspace-write in effect; pass --advreview-sandbox=read-only if sensitive ignored "
        "state lives under the repo"
    ]
    # Each review in a worktree of its own: the repository's ignored files are not in it.
    assert runtime_hints(Settings()) == []
    assert runtime_hints(Settings(isolation="none", sandbox_explicit=True)) == []
    assert runtime_hints(Settings(sandbox="read-only", sandbox_explicit=True)) == []


def test_danger_full_access_warns() -> None:
    hints = runtime_hints(Settings(sandbox="danger-full-access", sandbox_explicit=True))
    assert len(hints) == 1
    assert hints[0].startswith("WARNING: sandbox=danger-full-access")


@pytest.mark.parametrize(
    ("sandbox", "expected"),
    [
        ("read-only", ["-s", "read-only"]),
        ("workspace-write", ["-s", "workspace-write"]),
        ("danger-full-access", ["-s", "danger-full-access"]),
        ("inherit", []),
    ],
)
def test_settings_sandbox_maps_to_codex_args(sandbox: str, expected: list[str]) -> None:
    assert sandbox_args(Settings.model_validate({"sandbox": sandbox}).sandbox) == expected


@pytest.mark.parametrize(
    ("approvals", "expected"),
    [
        (
            "auto_review",
            ["-c", 'approval_policy="on-request"', "-c", 'approvals_reviewer="auto_review"'],
        ),
        ("user", ["-c", 'approval_policy="on-request"']),
        ("never", ["-c", 'approval_policy="never"']),
    ],
)
def test_settings_approvals_map_to_codex_args(approvals: str, expected: list[str]) -> None:
    assert approval_args(Settings.model_validate({"approvals": approvals}).approvals) == expected


def test_settings_built_without_resolve_refuse_an_unknown_choice() -> None:
    # A worker's or a fixture's Settings never pass resolve(); the model checks choices too.
    with pytest.raises(ValueError, match="sandbox='bogus': choose one of: read-only"):
        Settings.model_validate({"sandbox": "bogus"})


def test_settings_are_frozen() -> None:
    settings = Settings()
    with pytest.raises(ValueError, match="frozen"):
        settings.model = "x"  # type: ignore[misc]


def test_every_option_is_in_the_options_page() -> None:
    # docs/options.md is the user's reference: an option added without a row there is an
    # option nobody can find (tests/test_docs.py also keeps its table equal to SPECS).
    from pytest_advreview.options import SPECS

    page = (Path(__file__).resolve().parents[1] / "docs" / "options.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip() for line in page.splitlines() if line.startswith("| `--")}
    shown = {row.strip("`").split("=")[0] for row in rows}
    expected = {"--adversarial-review", "--advreview-doctor", "--advreview-doctor-json"}
    expected |= {spec.option for spec in SPECS if spec.cli is not None}
    assert expected - shown == set()
    ini_only = {spec.ini_key for spec in SPECS if spec.cli is None}
    assert all(f"`{key}`" in page for key in ini_only)


def test_fixture_override_out_of_range_is_a_usage_error(pytester: pytest.Pytester) -> None:
    # The adversarial_review fixture's keyword overrides are one more source of a setting:
    # they go through the same bounds (timeout=1e12 used to reach the process wait).
    pytester.makepyfile(
        """
        import pytest

        def test_override(adversarial_review):
            with pytest.raises(pytest.UsageError) as info:
                adversarial_review.plan("docs/plans/x.md", timeout=1e12)
            print("MESSAGE:", info.value)
            with pytest.raises(pytest.UsageError, match="max_rounds=0 is not valid"):
                adversarial_review.plan("docs/plans/x.md", max_rounds=0)
            with pytest.raises(pytest.UsageError, match="budget_tokens=-1 is not valid"):
                adversarial_review.plan("docs/plans/x.md", budget_tokens=-1)
        """
    )
    result = pytester.runpytest("-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*MESSAGE: pytest-advreview: adversarial_review override timeout=1000000000000.0 is "
            "not valid; expected a number of seconds greater than 0 and at most 86400 *"
        ]
    )
