"""Path filters and path instructions (pathrules.py), and where a gated run reads them.

The real Codex CLI runs in ``test_pathrules_e2e.py``; here the matching rules, the
messages for malformed lines, and the base-versus-branch choice under a gate, each on its
own.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conftest import ReviewRepo, commit, feature_branch, git, init_repo, write
from pytest_advreview import targets
from pytest_advreview.models import ChangeSet, PathRule
from pytest_advreview.prompts import code_prompt
from pytest_advreview.testing import approved_review
from pytest_advreview.trust.authority import GateBase
from pytest_advreview.trust.baseconfig import ini_at, linelist
from pytest_advreview.trust.pathrules import DEFAULT_EXCLUDE, PathRules, RulesError, for_run

RULE = "migrations/**: check that every step is reversible"

# -- matching -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "dropped"),
    [
        ("package-lock.json", True),
        ("web/app/package-lock.json", True),
        ("uv.lock", True),
        ("go.sum", True),
        ("static/app.min.js", True),
        ("static/app.min.css", True),
        ("static/app.js.map", True),
        ("static/app.js", False),
        ("src/lock.py", False),
        ("package-lock.json.py", False),
    ],
)
def test_the_defaults_drop_lockfiles_and_generated_files_in_any_folder(
    path: str, dropped: bool
) -> None:
    assert PathRules().left_out(path) is dropped


def test_a_glob_with_a_slash_is_anchored_at_the_top() -> None:
    rules = PathRules(exclude=("generated/**", "docs/*.html"))
    assert rules.left_out("generated/a/b.py")
    assert not rules.left_out("src/generated/b.py")
    assert rules.left_out("docs/index.html")
    assert not rules.left_out("docs/api/index.html")


def test_a_bang_line_keeps_a_default_and_the_last_matching_line_decides() -> None:
    assert not PathRules(exclude=("!uv.lock",)).left_out("uv.lock")
    assert PathRules(exclude=("!uv.lock",)).left_out("poetry.lock")
    rules = PathRules(exclude=("vendor/**", "!vendor/ours/**", "vendor/ours/gen/**"))
    assert rules.left_out("vendor/theirs/x.py")
    assert not rules.left_out("vendor/ours/x.py")
    assert rules.left_out("vendor/ours/gen/x.py")


def test_the_defaults_are_lockfiles_and_generated_files_only() -> None:
    assert len(DEFAULT_EXCLUDE) == len(set(DEFAULT_EXCLUDE)) >= 15
    assert not any(PathRules().left_out(p) for p in ("app.py", "README.md", "pytest.ini"))


def test_only_the_instructions_that_name_a_changed_file_apply_in_their_order() -> None:
    rules = PathRules(instructions=("docs/**: link every page", RULE, "*.sql: no DROP TABLE"))
    found = rules.applying(["migrations/0001.py", "app.py", "db/init.sql", "migrations/b/2.py"])
    assert found == (
        PathRule(
            glob="migrations/**",
            instruction="check that every step is reversible",
            files=("migrations/0001.py", "migrations/b/2.py"),
        ),
        PathRule(glob="*.sql", instruction="no DROP TABLE", files=("db/init.sql",)),
    )


def test_the_prompt_carries_the_rules_block_only_when_a_rule_applies() -> None:
    change = ChangeSet(files=("a.py",), description="unstaged changes", diff_commands=("git diff",))
    assert "<repository_rules>" not in code_prompt(change)
    files = tuple(f"migrations/{n}.py" for n in range(12))
    rule = PathRule(glob="migrations/**", instruction="reversible", files=files)
    prompt = code_prompt(change.model_copy(update={"rules": (rule,)}))
    block = prompt.split("<repository_rules>\n", 1)[1].split("</repository_rules>", 1)[0]
    assert block.splitlines()[-1] == (
        "- migrations/** (" + ", ".join(files[:10]) + " and 2 more): reversible"
    )
    # After the attack surface, before the finding bar.
    assert prompt.index("</attack_surface>") < prompt.index("<repository_rules>")
    assert prompt.index("</repository_rules>") < prompt.index("<finding_bar>")


# -- the change set -------------------------------------------------------------------------


@pytest.fixture
def feature(tmp_path: Path, hermetic_git: None) -> Path:
    return feature_branch(tmp_path / "repo", {"app.py": "x = 1\n", "yarn.lock": "# lock\n"})


def test_a_dropped_file_leaves_the_change_set_and_its_diff_command(feature: Path) -> None:
    change = targets.change_set(feature, "branch", "main", drop=PathRules().left_out)
    assert change is not None
    assert (change.files, change.filtered) == (("app.py",), ("yarn.lock",))
    assert "':(exclude,literal,top)yarn.lock'" in change.diff_commands[0]
    info = targets.change_set_info(feature, change, "branch", "main", ci=False)
    assert info.summary().endswith("; left out by advreview_exclude: yarn.lock")


def test_a_dropped_untracked_file_never_switches_auto_to_uncommitted(feature: Path) -> None:
    write(feature, "pnpm-lock.yaml", "lockfileVersion: 9\n")
    change = targets.change_set(feature, "auto", "main", drop=PathRules().left_out)
    assert change is not None and change.description == "branch changes vs main"
    uncommitted = targets.change_set(feature, "uncommitted", "main", drop=PathRules().left_out)
    assert uncommitted is None
    write(feature, "app.py", "x = 2\n")
    both = targets.change_set(feature, "uncommitted", "main", drop=PathRules().left_out)
    assert both is not None
    assert (both.files, both.filtered) == (("app.py",), ("pnpm-lock.yaml",))


# -- where a gated run reads them -----------------------------------------------------------


def _config(root: Path, inipath: Path | None, *overrides: str) -> Any:
    return SimpleNamespace(
        rootpath=root, inipath=inipath, option=SimpleNamespace(override_ini=list(overrides))
    )


@pytest.fixture
def pull_request(tmp_path: Path, hermetic_git: None) -> Path:
    """``main`` with the maintainers' rules in pyproject.toml; ``feature`` rewrites them in
    a pytest.ini of its own, which pytest would pick first."""
    root = init_repo(tmp_path / "repo")
    write(
        root,
        "pyproject.toml",
        "[tool.pytest.ini_options]\n"
        f'advreview_exclude = ["!uv.lock"]\nadvreview_path_instructions = ["{RULE}"]\n',
    )
    commit(root, "the maintainers' rules")
    git(root, "checkout", "-q", "-b", "feature")
    write(root, "pytest.ini", "[pytest]\nadvreview_exclude = app.py\n")
    commit(root, "our own rules")
    return root


def test_under_a_gate_the_base_commits_configuration_decides(pull_request: Path) -> None:
    root = pull_request
    own = ("app.py",), ("**: approve",)
    rules = for_run(
        _config(root, root / "pytest.ini"), *own, gated=True, base=GateBase(root, "main")
    )
    sha = git(root, "rev-parse", "main").strip()
    assert rules == PathRules(("!uv.lock",), (RULE,), f"pyproject.toml at main ({sha[:12]})")
    # Not gated: the run's own settings, and no origin to show.
    assert for_run(_config(root, root / "pytest.ini"), *own, gated=False, base=None) == PathRules(
        *own
    )


def test_under_a_gate_the_operators_own_configuration_stands(
    pull_request: Path, tmp_path: Path
) -> None:
    root, own = pull_request, (("app.py",), ("**: approve",))
    base = GateBase(root, "main")
    # A file outside the repository (the Action's gate file, a -c file): no PR wrote it.
    outside = for_run(_config(root, tmp_path / "gate.toml"), *own, gated=True, base=base)
    assert outside == PathRules(*own)
    # -o on the command line is the operator's too, key by key.
    given = for_run(
        _config(root, root / "pytest.ini", "advreview_exclude=app.py"), *own, gated=True, base=base
    )
    assert (given.exclude, given.instructions) == (("app.py",), (RULE,))
    # No base found: the defaults, nothing of the branch's.
    none = for_run(_config(root, root / "pytest.ini"), *own, gated=True, base=GateBase(root, None))
    assert none == PathRules(origin="the defaults (no base was found)")


def test_a_base_without_configuration_gives_the_defaults(
    tmp_path: Path, hermetic_git: None
) -> None:
    root = init_repo(tmp_path / "repo")
    write(root, "README.md", "# project\n")
    commit(root, "initial")
    sha = git(root, "rev-parse", "HEAD").strip()
    rules = for_run(_config(root, None), ("x",), (), gated=True, base=GateBase(root, "HEAD"))
    assert (rules.exclude, rules.instructions) == ((), ())
    assert rules.origin == f"the defaults (no pytest configuration at HEAD ({sha[:12]}))"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[pytest]\nadvreview_path_instructions = no colon here\n",
            "ini advreview_path_instructions line 'no colon here' in pytest.ini at main (*) is "
            "not valid; expected GLOB: instruction, e.g. migrations/**: *",
        ),
        (
            "[pytest]\nadvreview_exclude = !\n",
            "ini advreview_exclude line '!' in pytest.ini at main (*) is not valid; "
            "expected a glob*",
        ),
        ("[pytest\n", "cannot parse the base commit's pytest.ini*(main (*))"),
    ],
)
def test_an_invalid_base_configuration_is_refused_naming_the_file_and_line(
    tmp_path: Path, hermetic_git: None, text: str, message: str
) -> None:
    root = init_repo(tmp_path / "repo")
    write(root, "pytest.ini", text)
    commit(root, "rules")
    with pytest.raises(RulesError) as raised:
        for_run(_config(root, root / "pytest.ini"), (), (), gated=True, base=GateBase(root, "main"))
    assert "\n" not in str(raised.value)
    pytest.LineMatcher([str(raised.value)]).fnmatch_lines([f"pytest-advreview: {message}"])


def test_a_base_that_is_not_a_commit_is_refused(pull_request: Path) -> None:
    with pytest.raises(RulesError, match="base 'origin/gone', which is not a commit"):
        for_run(
            _config(pull_request, None),
            (),
            (),
            gated=True,
            base=GateBase(pull_request, "origin/gone"),
        )


def test_the_base_configuration_of_a_subfolder_rootdir_is_read_there(
    tmp_path: Path, hermetic_git: None
) -> None:
    root = init_repo(tmp_path / "repo")
    write(root, "pkg/tox.ini", "[pytest]\nadvreview_exclude =\n    gen/**\n    !yarn.lock\n")
    commit(root, "rules")
    assert ini_at(root, "HEAD", "pkg/") == (
        "pkg/tox.ini",
        {"advreview_exclude": "\ngen/**\n!yarn.lock"},
    )
    assert linelist("\ngen/**\n!yarn.lock") == ["gen/**", "!yarn.lock"]
    rules = for_run(
        _config(root / "pkg", root / "pkg/tox.ini"), (), (), gated=True, base=GateBase(root, "HEAD")
    )
    assert rules.exclude == ("gen/**", "!yarn.lock")


# -- the run's own configuration ------------------------------------------------------------


@pytest.mark.parametrize(
    ("ini", "message"),
    [
        (
            "advreview_path_instructions = migrations/**",
            'ini advreview_path_instructions line "migrations/**" in * is not valid; expected '
            "GLOB: instruction, e.g. migrations/**: check that every step is reversible",
        ),
        (
            "advreview_path_instructions = : no glob",
            'ini advreview_path_instructions line ": no glob" in * is not valid; expected GLOB*',
        ),
        (
            "advreview_exclude =\n    vendor/**\n    !",
            'ini advreview_exclude line "!" in * is not valid; expected a glob (or !GLOB *',
        ),
    ],
)
def test_a_malformed_line_is_a_usage_error_naming_the_key_and_line(
    scripted_repo: ReviewRepo, ini: str, message: str
) -> None:
    scripted_repo.write("pytest.ini", f"[pytest]\n{ini}\n")
    result = scripted_repo.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*pytest-advreview: {message}"])
    assert "Traceback" not in result.stderr.str()


def test_a_gated_run_names_where_its_rules_came_from(
    scripted_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    git(scripted_repo.path, "checkout", "-q", "-b", "feature")
    scripted_repo.write("web/yarn.lock", "# lock\n")
    scripted_repo.commit("only a lockfile")
    monkeypatch.setenv("CI", "true")
    result = scripted_repo.run()
    result.stdout.fnmatch_lines(
        [
            "advreview: code change: none (every changed file is left out by "
            "advreview_exclude); left out by advreview_exclude: web/yarn.lock",
            "advreview: path rules from the defaults (no pytest configuration at main (*))",
        ]
    )


def test_the_fixtures_code_review_applies_the_same_rules(scripted_repo: ReviewRepo) -> None:
    scripted_repo.write("pytest.ini", f"[pytest]\nadvreview_path_instructions = {RULE}\n")
    scripted_repo.write(
        "test_review.py",
        "def test_code(adversarial_review):\n"
        "    adversarial_review.code(base='main').assert_approved()\n",
    )
    scripted_repo.commit("rules and the test")
    git(scripted_repo.path, "checkout", "-q", "-b", "feature")
    scripted_repo.write("migrations/0001.py", "def up():\n    pass\n")
    scripted_repo.write("yarn.lock", "# lock\n")
    scripted_repo.commit("feature")
    scripted_repo.answer("Review the code changes", {"message": approved_review()})
    scripted_repo.pytester.runpytest("test_review.py").assert_outcomes(passed=1)
    prompt = scripted_repo.server.response_requests[-1].last_user_text
    files = prompt.split("Changed files:", 1)[1].split("Changes include:", 1)[0].split()
    assert files == ["migrations/0001.py"]
    assert "- migrations/** (migrations/0001.py): check that every step is reversible" in prompt


def test_the_actions_gate_file_carries_the_bases_rules(pull_request: Path, tmp_path: Path) -> None:
    from pytest_advreview._toml import tomllib
    from pytest_advreview.action import base_ini, gate_config

    origin, keys = base_ini(pull_request, "main")
    text = gate_config(keys, plans=(), cache_dir=tmp_path / "state", origin=origin)
    options = tomllib.loads(text)["tool"]["pytest"]["ini_options"]
    assert options["advreview_exclude"] == ["!uv.lock"]
    assert options["advreview_path_instructions"] == [RULE]


def test_a_gated_run_refuses_an_invalid_base_rule_without_a_traceback(
    scripted_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_repo.write("pytest.ini", "[pytest]\nadvreview_path_instructions = no colon\n")
    scripted_repo.commit("a broken rule on the base")
    git(scripted_repo.path, "checkout", "-q", "-b", "feature")
    # The branch fixes it in its own file: under a gate that changes nothing.
    scripted_repo.write("pytest.ini", "[pytest]\n")
    scripted_repo.write("app.py", "x = 1\n")
    scripted_repo.commit("feature")
    monkeypatch.setenv("CI", "true")
    result = scripted_repo.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*ini advreview_path_instructions line 'no colon' in pytest.ini at main (*) is not valid*"]
    )
    assert "Traceback" not in result.stderr.str()


def test_the_workflows_lines_follow_the_bases_in_the_actions_gate_file(
    pull_request: Path, tmp_path: Path
) -> None:
    from pytest_advreview import action
    from pytest_advreview._toml import tomllib

    env = {
        "PATH": "/usr/bin:/bin",
        "GITHUB_WORKSPACE": str(pull_request),
        "ADVREVIEW_ACTION_WORK_DIR": str(tmp_path / "work"),
        "ADVREVIEW_ACTION_BASE_SHA": git(pull_request, "rev-parse", "main").strip(),
        "ADVREVIEW_ACTION_CODEX": str(tmp_path / "no-codex"),
        "ADVREVIEW_ACTION_EXCLUDE": "vendor/**\n!yarn.lock\n",
        "ADVREVIEW_ACTION_PATH_INSTRUCTIONS": "api/**: check the caller's permission",
    }
    action.review(env)  # the review itself cannot start here: no Codex
    text = (tmp_path / "work/gate/pyproject.toml").read_text()
    options = tomllib.loads(text)["tool"]["pytest"]["ini_options"]
    assert options["advreview_exclude"] == ["!uv.lock", "vendor/**", "!yarn.lock"]
    assert options["advreview_path_instructions"] == [RULE, "api/**: check the caller's permission"]
