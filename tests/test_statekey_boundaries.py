"""Boundaries of the state key's rules: its length, the key file's mode, owner and content.

Each rule is tested at its limit and one step on each side, every permission bit the
mask guards on its own (mutation tests: a mask weakened to 0o007 and a length measured
before stripping both passed the whole suite).
"""

from __future__ import annotations

import errno
import os
import stat
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

GENERATE = 'python -c "import secrets; print(secrets.token_hex(32))"'


def _env(tmp_path: Path, value: str | None = None) -> dict[str, str]:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    if value is not None:
        env[STATE_KEY_ENV] = value
    return env


def test_the_documented_minimum_is_32_characters() -> None:
    assert MIN_KEY_CHARS == 32


@pytest.mark.parametrize("length", [MIN_KEY_CHARS, MIN_KEY_CHARS + 1])
def test_a_ci_secret_of_the_minimum_length_or_longer_is_used(tmp_path: Path, length: int) -> None:
    key = load_state_key(_env(tmp_path, "s" * length))
    assert key == StateKey(b"s" * length, "env", STATE_KEY_ENV)


def test_a_ci_secret_one_below_the_minimum_is_refused_with_its_length_and_the_fix(
    tmp_path: Path,
) -> None:
    with pytest.raises(StateKeyUsageError) as info:
        load_state_key(_env(tmp_path, "s" * (MIN_KEY_CHARS - 1)))
    assert str(info.value) == (
        f"pytest-advreview: environment {STATE_KEY_ENV} has 31 characters; a state key "
        f"needs at least 32. Fix: set it to a random secret, e.g. the output of {GENERATE} "
        "(in CI: a repository secret)"
    )


@pytest.mark.parametrize("pad", [" ", "\n", "\t", "  \n"])
def test_a_31_character_key_padded_with_whitespace_is_refused(tmp_path: Path, pad: str) -> None:
    """The length is measured after stripping: padding adds no secret."""
    short = "s" * (MIN_KEY_CHARS - 1)
    for value in (short + pad, pad + short, pad + short + pad):
        assert len(value) >= MIN_KEY_CHARS
        with pytest.raises(StateKeyUsageError, match=f"{STATE_KEY_ENV} has 31 characters"):
            load_state_key(_env(tmp_path, value))


def test_a_padded_key_of_the_minimum_length_is_used_without_its_padding(tmp_path: Path) -> None:
    key = load_state_key(_env(tmp_path, "  " + "s" * MIN_KEY_CHARS + "\n"))
    assert key.secret == b"s" * MIN_KEY_CHARS


def test_a_ci_secret_that_is_not_utf8_keeps_its_bytes(tmp_path: Path) -> None:
    value = "s" * MIN_KEY_CHARS + "\udcff"  # what os.environ holds for a byte 0xff
    assert load_state_key(_env(tmp_path, value)).secret == b"s" * MIN_KEY_CHARS + b"\xff"


def _key_file(tmp_path: Path, mode: int, content: str = "ab" * 32 + "\n") -> Path:
    path = user_key_path(_env(tmp_path))
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text(content, encoding="ascii")
    path.chmod(mode)
    return path


# Every bit of 0o077 on its own, and the group modes 0640, 0620 and 0660.
GROUP_OR_OTHER = [0o640, 0o620, 0o660, 0o610, 0o604, 0o602, 0o601, 0o644, 0o666]


@pytest.mark.parametrize("mode", GROUP_OR_OTHER, ids=[f"{m:o}" for m in GROUP_OR_OTHER])
def test_a_key_file_the_group_or_others_can_use_is_refused(tmp_path: Path, mode: int) -> None:
    path = _key_file(tmp_path, mode)
    with pytest.raises(StateKeyError) as info:
        load_state_key(_env(tmp_path))
    assert str(info.value) == (
        f"the state key {path} has mode {mode:o}: other users can read or replace it. "
        f"Fix: chmod 600 {path}"
    )


@pytest.mark.parametrize("mode", [0o600, 0o400, 0o700])
def test_a_key_file_only_its_owner_can_use_is_trusted(tmp_path: Path, mode: int) -> None:
    path = _key_file(tmp_path, mode)
    key = load_state_key(_env(tmp_path))
    assert key == StateKey(bytes.fromhex("ab" * 32), "file", str(path))


@pytest.mark.parametrize(
    "content",
    ["ab" * 31 + "\n", "ab" * 32 + "a\n", "ab" * 33 + "\n", "zz" * 32 + "\n", "é" * 64, ""],
    ids=["62-hex", "65-hex", "66-hex", "not-hex", "not-ascii", "empty"],
)
def test_a_key_file_without_64_hex_characters_is_refused(tmp_path: Path, content: str) -> None:
    path = user_key_path(_env(tmp_path))
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text(content, encoding="utf-8")
    path.chmod(0o600)
    with pytest.raises(StateKeyError) as info:
        load_state_key(_env(tmp_path))
    assert str(info.value) == (
        f"the state key {path} does not hold a key. Fix: delete {path} (a new key is made on "
        "the next run, and every stored verdict is reviewed again), or set "
        f"{STATE_KEY_ENV} to a secret of at least 32 characters"
    )


@pytest.mark.parametrize("pad", ["", "\n", "  \n", "\r\n"])
def test_a_key_file_with_64_hex_characters_and_surrounding_whitespace_is_read(
    tmp_path: Path, pad: str
) -> None:
    _key_file(tmp_path, 0o600, " " * (len(pad) > 1) + "cd" * 32 + pad)
    assert load_state_key(_env(tmp_path)).secret == bytes.fromhex("cd" * 32)


def test_a_key_file_that_is_a_folder_is_refused(tmp_path: Path) -> None:
    path = user_key_path(_env(tmp_path))
    path.mkdir(parents=True, mode=0o700)
    with pytest.raises(StateKeyError) as info:
        load_state_key(_env(tmp_path))
    assert str(info.value) == (
        f"the state key {path} is not a regular file. Fix: delete {path} (a new key is made "
        "on the next run, and every stored verdict is reviewed again), or set "
        f"{STATE_KEY_ENV} to a secret of at least 32 characters"
    )


def test_a_symlinked_key_file_is_refused_by_name(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere.key"
    real.write_text("ab" * 32, encoding="ascii")
    real.chmod(0o600)
    path = user_key_path(_env(tmp_path))
    path.parent.mkdir(parents=True, mode=0o700)
    path.symlink_to(real)
    with pytest.raises(StateKeyError) as info:
        load_state_key(_env(tmp_path))
    assert str(info.value).startswith(
        f"the state key {path} cannot be opened (a symlink is refused). Fix: delete {path}"
    )


def test_a_key_file_of_another_user_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _key_file(tmp_path, 0o600)
    me = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: me + 1)
    with pytest.raises(StateKeyError) as info:
        load_state_key(_env(tmp_path))
    assert str(info.value).startswith(
        f"the state key {path} belongs to uid {me}, not to this user ({me + 1}), who would "
        f"trust entries that user can forge. Fix: delete {path}"
    )


def test_a_new_key_file_is_64_hex_characters_private_in_a_private_folder(tmp_path: Path) -> None:
    key = load_state_key(_env(tmp_path))
    path = user_key_path(_env(tmp_path))
    text = path.read_text(encoding="ascii")
    assert text == key.secret.hex() + "\n"
    assert len(key.secret) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_an_unwritable_key_folder_says_where_and_the_fix(tmp_path: Path) -> None:
    blocker = tmp_path / "pytest-advreview"
    blocker.write_text("", encoding="ascii")  # a file where the folder must go
    path = blocker / "state.key"
    with pytest.raises(StateKeyError) as info:
        load_state_key(_env(tmp_path))
    assert str(info.value).startswith(f"the state key {path} cannot be created (")
    assert str(info.value).endswith(
        f"). Fix: make {blocker} writable, point XDG_STATE_HOME at a writable folder outside "
        f"the repository, or set {STATE_KEY_ENV} to a secret of at least 32 characters"
    )


def test_the_state_key_repr_never_shows_the_secret() -> None:
    key = StateKey(b"topsecret" * 4, "env", STATE_KEY_ENV)
    assert repr(key) == f"StateKey(source='env', where='{STATE_KEY_ENV}')"


def test_a_mac_verifies_only_its_own_payload_under_its_own_key() -> None:
    key = StateKey(b"k" * 32, "env", STATE_KEY_ENV)
    other = StateKey(b"j" * 32, "env", STATE_KEY_ENV)
    mac = key.mac(b"payload")
    assert len(mac) == 64
    assert key.verify(b"payload", mac)
    assert not key.verify(b"payload!", mac)
    assert not other.verify(b"payload", mac)
    assert not key.verify(b"payload", mac.encode())  # not a str
    assert not key.verify(b"payload", None)


def test_without_an_environment_argument_the_process_environment_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STATE_KEY_ENV, "e" * MIN_KEY_CHARS)
    assert load_state_key().secret == b"e" * MIN_KEY_CHARS


def test_a_key_file_is_read_only_as_far_as_a_key_and_its_line_end(tmp_path: Path) -> None:
    _key_file(tmp_path, 0o600, "cd" * 32 + "\r\n" + "anything after the key line")
    assert load_state_key(_env(tmp_path)).secret == bytes.fromhex("cd" * 32)
    _key_file_again = user_key_path(_env(tmp_path))
    _key_file_again.write_text("cd" * 32 + "\n" + "x", encoding="ascii")
    with pytest.raises(StateKeyError, match="does not hold a key"):
        load_state_key(_env(tmp_path))


def test_the_key_folder_is_made_with_its_parents(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path / "a" / "b")}
    key = load_state_key(env)
    assert key.where == str(tmp_path / "a" / "b" / "pytest-advreview" / "state.key")


def test_a_new_key_is_linked_into_place_from_a_temporary_file_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    links: list[tuple[str, str]] = []
    real_link = os.link

    def link(src: str, dst: str) -> None:
        links.append((str(src), str(dst)))
        real_link(src, dst)

    monkeypatch.setattr(os, "link", link)
    key = load_state_key(_env(tmp_path))
    ((src, dst),) = links
    assert dst == key.where
    assert Path(src).parent == Path(dst).parent
    assert Path(src).name.startswith(".state.key-")
    assert not Path(src).exists()
    load_state_key(_env(tmp_path))  # an existing key is read, never made again
    assert len(links) == 1


def test_a_key_that_cannot_be_linked_into_place_says_why_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def link(src: str, dst: str) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", link)
    path = user_key_path(_env(tmp_path))
    with pytest.raises(StateKeyError) as info:
        load_state_key(_env(tmp_path))
    assert str(info.value) == (
        f"the state key {path} cannot be written (Invalid cross-device link). Fix: delete "
        f"{path} (a new key is made on the next run, and every stored verdict is reviewed "
        f"again), or set {STATE_KEY_ENV} to a secret of at least 32 characters"
    )
    assert list(path.parent.iterdir()) == []  # the temporary file is removed


def test_a_temporary_file_that_cannot_be_removed_does_not_fail_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unlink(path: str) -> None:
        raise OSError(errno.EBUSY, "busy")

    monkeypatch.setattr(os, "unlink", unlink)
    assert load_state_key(_env(tmp_path)).source == "file"


def test_a_key_that_vanishes_right_after_it_was_made_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_advreview import statekey

    monkeypatch.setattr(statekey, "_read_user_key", lambda path: None)
    path = user_key_path(_env(tmp_path))
    with pytest.raises(StateKeyError) as info:
        load_state_key(_env(tmp_path))
    assert str(info.value) == f"{path} vanished right after it was created"


def test_a_key_path_that_cannot_be_opened_says_why(tmp_path: Path) -> None:
    long = tmp_path / ("x" * 300)  # longer than a file name may be
    with pytest.raises(StateKeyError) as info:
        load_state_key({"XDG_STATE_HOME": str(long)})
    path = long / "pytest-advreview" / "state.key"
    assert str(info.value).startswith(
        f"the state key {path} cannot be opened (File name too long). Fix: delete {path}"
    )
