"""Tests of ``pytest_advreview.statekey``: where the state key comes from, and its checks."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from pytest_advreview.statekey import (
    MIN_KEY_CHARS,
    STATE_KEY_ENV,
    StateKey,
    StateKeyError,
    StateKeyUsageError,
    load_state_key,
    user_key_path,
)

SECRET = "k" * MIN_KEY_CHARS


def test_the_ci_secret_wins_over_the_per_user_key(tmp_path: Path) -> None:
    env = {STATE_KEY_ENV: SECRET, "XDG_STATE_HOME": str(tmp_path)}
    key = load_state_key(env)
    assert (key.source, key.where, key.secret) == ("env", STATE_KEY_ENV, SECRET.encode())
    assert not (tmp_path / "pytest-advreview").exists()  # no file is made


def test_a_short_ci_secret_is_a_usage_error_that_says_how_to_make_one(tmp_path: Path) -> None:
    env = {STATE_KEY_ENV: "short", "XDG_STATE_HOME": str(tmp_path)}
    with pytest.raises(StateKeyUsageError, match=r"ADVREVIEW_STATE_KEY has 5 characters.*"):
        load_state_key(env)
    with pytest.raises(StateKeyUsageError, match=r"secrets\.token_hex\(32\)"):
        load_state_key(env)


def test_an_empty_ci_secret_counts_as_unset(tmp_path: Path) -> None:
    key = load_state_key({STATE_KEY_ENV: "  ", "XDG_STATE_HOME": str(tmp_path)})
    assert key.source == "file"


def test_the_per_user_key_is_created_once_private_and_reused(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    first = load_state_key(env)
    path = tmp_path / "pytest-advreview" / "state.key"
    assert (first.source, first.where) == ("file", str(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert len(first.secret) == 32
    assert load_state_key(env) == first
    assert sorted(p.name for p in path.parent.iterdir()) == ["state.key"]  # no temp file left


def test_the_per_user_key_lives_under_home_without_an_absolute_xdg_state_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    expected = tmp_path / ".local" / "state" / "pytest-advreview" / "state.key"
    assert user_key_path({}) == expected
    assert user_key_path({"XDG_STATE_HOME": "relative/dir"}) == expected


def test_processes_racing_to_create_the_key_all_get_the_same_one(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    start = threading.Barrier(8)
    keys: list[StateKey] = []

    def make() -> None:
        start.wait()
        keys.append(load_state_key(env))

    threads = [threading.Thread(target=make) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(keys) == 8
    assert len({key.secret for key in keys}) == 1
    assert sorted(p.name for p in (tmp_path / "pytest-advreview").iterdir()) == ["state.key"]


def _key_file(tmp_path: Path) -> Path:
    path = tmp_path / "pytest-advreview" / "state.key"
    load_state_key({"XDG_STATE_HOME": str(tmp_path)})
    return path


def test_a_key_file_others_can_read_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = _key_file(tmp_path)
    path.chmod(0o644)
    with pytest.raises(StateKeyError, match=r"mode 644: other users.*chmod 600"):
        load_state_key({"XDG_STATE_HOME": str(tmp_path)})


def test_a_symlinked_key_file_is_refused(tmp_path: Path) -> None:
    path = _key_file(tmp_path)
    elsewhere = tmp_path / "elsewhere.key"
    path.rename(elsewhere)
    path.symlink_to(elsewhere)
    with pytest.raises(StateKeyError, match="a symlink is refused"):
        load_state_key({"XDG_STATE_HOME": str(tmp_path)})


def test_a_key_file_without_a_key_is_refused(tmp_path: Path) -> None:
    path = _key_file(tmp_path)
    path.write_text("not a key\n")
    with pytest.raises(StateKeyError, match=r"does not hold a key.*delete"):
        load_state_key({"XDG_STATE_HOME": str(tmp_path)})


def test_an_uncreatable_key_names_the_folder_and_the_fixes(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StateKeyError, match=r"cannot be created.*XDG_STATE_HOME.*ADVREVIEW"):
        load_state_key({"XDG_STATE_HOME": str(blocker)})


def test_macs_depend_on_key_and_payload_and_the_secret_is_never_shown() -> None:
    key = StateKey(b"a" * 32, "env", STATE_KEY_ENV)
    other = StateKey(b"b" * 32, "env", STATE_KEY_ENV)
    mac = key.mac(b"payload")
    assert key.verify(b"payload", mac)
    assert not key.verify(b"payload!", mac)
    assert not other.verify(b"payload", mac)
    assert not key.verify(b"payload", None)
    assert "aaaa" not in repr(key)
    assert os.fsencode("a" * 32) not in repr(key).encode()


@pytest.mark.parametrize("secret", [None, SECRET])
def test_a_ci_run_without_the_secret_says_so_in_the_header(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
    secret: str | None,
) -> None:
    monkeypatch.setenv("CI", "true")
    # pytester's HOME is the repository: Codex's default home would be inside it, which a
    # gate run refuses before the header.
    monkeypatch.setenv("CODEX_HOME", str(tmp_path_factory.mktemp("codex-home")))
    if secret is not None:
        monkeypatch.setenv(STATE_KEY_ENV, secret)
    result = pytester.runpytest("--adversarial-review", "--collect-only")
    hint = "advreview: ADVREVIEW_STATE_KEY is not set: verdicts restored from a CI cache*"
    if secret is None:
        result.stdout.fnmatch_lines([hint])
    else:
        result.stdout.no_fnmatch_line(hint)
