"""Tests of ``pytest_advreview.cachekey``: what a cached verdict is keyed to."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import commit, git, init_repo, write
from pytest_advreview.cachekey import (
    IDENTITY_SETTINGS,
    NOT_IDENTITY_SETTINGS,
    change_set_hash,
    code_digest,
    plan_digest,
    reviewer_identity,
)
from pytest_advreview.models import OutputFormat, Severity
from pytest_advreview.settings import Settings
from pytest_advreview.targets import change_set

# -- the reviewer ------------------------------------------------------------------------------


def test_every_setting_is_either_part_of_the_reviewer_identity_or_says_why_not() -> None:
    keyed = frozenset().union(*IDENTITY_SETTINGS.values())
    assert keyed.isdisjoint(NOT_IDENTITY_SETTINGS)
    assert keyed | set(NOT_IDENTITY_SETTINGS) == set(Settings.model_fields)


@pytest.fixture
def codex_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "codex-home"
    home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(home))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return home


CODEX_CHANGES: list[tuple[str, dict[str, Any]]] = [
    ("model", {"model": "other-model"}),
    ("reasoning", {"reasoning": "low"}),
    ("sandbox", {"sandbox": "read-only"}),
    ("approvals", {"approvals": "never"}),
    ("codex_config", {"codex_config": ("model_providers.x.base_url=http://elsewhere/v1",)}),
    ("language", {"language": "Deutsch"}),
    ("output_format", {"output_format": OutputFormat.JSON}),
    ("reviewer", {"reviewer": "command", "command": "claude -p"}),
]


@pytest.mark.parametrize(("component", "change"), CODEX_CHANGES, ids=[c for c, _ in CODEX_CHANGES])
def test_each_codex_setting_alone_changes_the_identity(
    codex_home: Path, component: str, change: dict[str, Any]
) -> None:
    base = reviewer_identity(Settings())
    changed = reviewer_identity(Settings(**change))
    assert changed != base
    assert base.get(component) != changed.get(component)


def test_the_order_of_codex_config_values_counts(codex_home: Path) -> None:
    # The last -c for a key wins in Codex: the same values in another order can select
    # another provider.
    one = Settings(codex_config=("model_provider=a", "model_provider=b"))
    two = Settings(codex_config=("model_provider=b", "model_provider=a"))
    assert reviewer_identity(one) != reviewer_identity(two)


def test_the_command_line_is_the_command_backends_identity(codex_home: Path) -> None:
    base = reviewer_identity(Settings(reviewer="command", command="claude -p"))
    other = reviewer_identity(Settings(reviewer="command", command="claude -p --model opus"))
    assert base["command"] != other["command"]
    # Codex's own settings do not move a command reviewer's identity.
    assert reviewer_identity(Settings(reviewer="command", command="claude -p", model="m")) == base


@pytest.mark.parametrize("name", ["config.toml", "AGENTS.md", "AGENTS.override.md"])
def test_codex_home_files_that_pick_the_provider_or_instruct_the_model_count(
    codex_home: Path, name: str
) -> None:
    base = reviewer_identity(Settings())
    (codex_home / name).write_text('model_provider = "other"\n')
    assert reviewer_identity(Settings())[f"codex_home/{name}"] != base[f"codex_home/{name}"]


def test_the_base_url_from_the_environment_counts(
    codex_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = reviewer_identity(Settings())
    monkeypatch.setenv("OPENAI_BASE_URL", "http://proxy.invalid/v1")
    assert reviewer_identity(Settings()) != base


def test_a_plugin_backend_is_keyed_by_every_builtin_setting(codex_home: Path) -> None:
    base = reviewer_identity(Settings(reviewer="mine"))
    assert reviewer_identity(Settings(reviewer="mine", model="m2")) != base
    assert reviewer_identity(Settings(reviewer="mine", command="x")) != base


@pytest.mark.parametrize(
    "change",
    [
        {"timeout": 5},
        {"max_rounds": 2},
        {"fail_on": Severity.HIGH},
        {"isolation": "worktree"},
        {"budget_tokens": 10},
        {"report": "/tmp/r.md"},
        {"codex": "/opt/other/codex"},
    ],
)
def test_settings_that_never_change_a_verdict_keep_the_identity(
    codex_home: Path, change: dict[str, Any]
) -> None:
    assert reviewer_identity(Settings(**change)) == reviewer_identity(Settings())


def test_a_gate_keys_the_codex_config_it_adds_and_nothing_else(codex_home: Path) -> None:
    # Under a gate Codex loads no AGENTS.md of the checkout: another reviewer's verdict.
    local = reviewer_identity(Settings(), {"CODEX_HOME": str(codex_home)})
    strict = reviewer_identity(Settings(strict_exit=True), {"CODEX_HOME": str(codex_home)})
    ci = reviewer_identity(Settings(), {"CODEX_HOME": str(codex_home), "CI": "true"})
    assert strict == ci != local
    assert {k for k in local if local[k] != ci[k]} == {"codex_gate"}


def test_no_value_is_stored_in_the_identity(codex_home: Path) -> None:
    token = "sk-live-0123456789abcdef"
    identity = reviewer_identity(
        Settings(codex_config=(f'model_providers.x.http_headers.Authorization="Bearer {token}"',))
    )
    assert token not in repr(identity)


# -- the content -------------------------------------------------------------------------------


def test_a_plan_is_keyed_by_its_bytes_and_its_prompt(tmp_path: Path) -> None:
    plan = tmp_path / "x.md"
    plan.write_text("# Plan\n")
    base = plan_digest(plan, "Review x.md")
    assert plan_digest(plan, "Review x.md in German") != base
    plan.write_text("# Plan \n")
    assert plan_digest(plan, "Review x.md") != base


def _repo(path: Path) -> Path:
    write(init_repo(path), "README.md", "# r\n")
    commit(path, "init")
    return path


@pytest.fixture
def repo(tmp_path: Path, hermetic_git: None) -> Path:
    return _repo(tmp_path / "repo")


def _hash(repo: Path) -> str:
    change = change_set(repo, "uncommitted", None)
    assert change is not None
    return change_set_hash(repo, change)


def test_every_byte_of_an_untracked_binary_file_counts(repo: Path) -> None:
    blob = repo / "image.bin"
    blob.write_bytes(b"\x00\x01\x02" * 100)
    base = _hash(repo)
    blob.write_bytes(b"\x00\x01\x03" + b"\x00\x01\x02" * 99)
    assert _hash(repo) != base


def test_every_byte_of_a_tracked_binary_file_counts(repo: Path) -> None:
    blob = repo / "image.bin"
    blob.write_bytes(b"\x00" * 300)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "blob")
    blob.write_bytes(b"\x00" * 299 + b"\x01")
    base = _hash(repo)
    blob.write_bytes(b"\x00" * 299 + b"\x02")
    assert _hash(repo) != base


def test_an_untracked_symlink_is_keyed_by_its_target_text(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("one")
    (repo / "link").symlink_to(outside)
    base = _hash(repo)
    outside.write_text("two")  # not part of the change: git stores the link, not the file
    assert _hash(repo) == base
    (repo / "link").unlink()
    (repo / "link").symlink_to(tmp_path / "elsewhere.txt")
    assert _hash(repo) != base


@pytest.fixture
def with_submodule(repo: Path, tmp_path: Path) -> Path:
    library = _repo(tmp_path / "library")
    (library / "lib.py").write_text("VALUE = 1\n")
    git(library, "add", "-A")
    git(library, "commit", "-qm", "lib")
    subprocess.run(
        ["git", "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "lib"],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    git(repo, "commit", "-qm", "add submodule")
    return repo / "lib"


def test_a_dirty_submodules_content_counts_not_just_its_dirty_mark(
    repo: Path, with_submodule: Path
) -> None:
    (with_submodule / "lib.py").write_text("VALUE = 2\n")
    base = _hash(repo)
    # git diff shows "Subproject commit …-dirty" before and after this edit.
    (with_submodule / "lib.py").write_text("VALUE = 3\n")
    assert _hash(repo) != base


def test_an_untracked_file_inside_a_submodule_counts(repo: Path, with_submodule: Path) -> None:
    (with_submodule / "new.py").write_text("a = 1\n")
    base = _hash(repo)
    (with_submodule / "new.py").write_text("a = 2\n")
    assert _hash(repo) != base


def test_an_untracked_nested_repository_is_keyed_by_its_content(repo: Path) -> None:
    nested = _repo(repo / "vendor" / "tool")
    (nested / "tool.py").write_text("x = 1\n")
    base = _hash(repo)
    (nested / "tool.py").write_text("x = 2\n")
    assert _hash(repo) != base


def test_the_code_key_covers_the_prompt_and_the_plan(repo: Path) -> None:
    (repo / "app.py").write_text("print(1)\n")
    change = change_set(repo, "uncommitted", None)
    assert change is not None
    base = code_digest(repo, change, "Review the code changes")
    assert code_digest(repo, change, "Review the code changes in German") != base
    assert code_digest(repo, change, "Review the code changes", "# Plan\n") != base
    assert code_digest(repo, change, "Review the code changes") == base
