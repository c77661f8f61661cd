"""The key that authenticates stored review state, and where it comes from.

Stored verdicts live in the repository's pytest cache, which the reviewer's
``workspace-write`` sandbox, an earlier step of a pull request's CI job and a restored CI
cache can all write.  Each entry therefore carries an HMAC-SHA256 under a key that the
workspace does not hold, and an entry that does not verify never passes an item:

* ``ADVREVIEW_STATE_KEY`` (a CI secret, at least 32 characters) when it is set;
* else a per-user key created on first use outside every repository, at
  ``${XDG_STATE_HOME:-~/.local/state}/pytest-advreview/state.key`` (mode 0600).

The runners never pass ``ADVREVIEW_STATE_KEY`` to a reviewer process (see
:data:`STATE_KEY_ENV` in ``runner/``).  What the key cannot stop: a reviewer process that
can read this user's files (the per-user key file) or this process's memory;
docs/safety.md "Safety considerations" says when that is the case.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import os
import secrets
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

__all__ = [
    "MIN_KEY_CHARS",
    "STATE_KEY_ENV",
    "StateKey",
    "StateKeyError",
    "StateKeyUsageError",
    "load_state_key",
    "user_key_path",
]

#: The environment variable that holds the CI secret.
STATE_KEY_ENV: Final = "ADVREVIEW_STATE_KEY"
#: Shortest accepted ``ADVREVIEW_STATE_KEY``: 32 characters of ``secrets.token_hex`` are
#: 128 bits; anything shorter is likely a placeholder.
MIN_KEY_CHARS: Final = 32
#: Hex characters of the per-user key (256 bits).
_USER_KEY_HEX: Final = 64
#: Domain separation: a MAC of stored state is never a MAC of anything else.
_DOMAIN: Final = b"pytest-advreview/state/v2\n"

_GENERATE = 'python -c "import secrets; print(secrets.token_hex(32))"'


class StateKeyError(Exception):
    """The per-user key cannot be created or trusted; the message says why and the fix."""


class StateKeyUsageError(StateKeyError):
    """``ADVREVIEW_STATE_KEY`` is set to something unusable (the user must fix it)."""


@dataclass(frozen=True)
class StateKey:
    """A secret that authenticates stored state entries.

    :param secret: the key bytes.
    :param source: ``env`` (``ADVREVIEW_STATE_KEY``) or ``file`` (the per-user key).
    :param where: the variable's name or the key file's path, for messages.
    """

    secret: bytes
    source: Literal["env", "file"]
    where: str

    def mac(self, payload: bytes) -> str:
        """HMAC-SHA256 (hex) of ``payload`` under this key."""
        return hmac.new(self.secret, _DOMAIN + payload, hashlib.sha256).hexdigest()

    def verify(self, payload: bytes, mac: object) -> bool:
        """True when ``mac`` is this key's MAC of ``payload`` (constant-time compare)."""
        return isinstance(mac, str) and hmac.compare_digest(self.mac(payload), mac)

    def __repr__(self) -> str:
        # Never print the secret (a traceback, a debugger, a log line).
        return f"StateKey(source={self.source!r}, where={self.where!r})"


def user_key_path(environ: Mapping[str, str]) -> Path:
    """``$XDG_STATE_HOME/pytest-advreview/state.key``, else under ``~/.local/state``.

    A relative ``XDG_STATE_HOME`` is ignored, as the XDG specification says.
    """
    base = environ.get("XDG_STATE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / "pytest-advreview" / "state.key"


def load_state_key(environ: Mapping[str, str] | None = None) -> StateKey:
    """The key to authenticate stored state with: the CI secret, else the per-user key.

    The per-user key is created on first use, atomically (a complete temporary file is
    hard-linked into place, so processes racing to create it, xdist workers for example,
    all end up with the one that won).

    :raises StateKeyUsageError: ``ADVREVIEW_STATE_KEY`` is set but too short.
    :raises StateKeyError: the per-user key cannot be created or read, or others than
        this user could read or replace it.
    """
    env = os.environ if environ is None else environ
    value = env.get(STATE_KEY_ENV, "")
    if value.strip():
        if len(value.strip()) < MIN_KEY_CHARS:
            raise StateKeyUsageError(
                f"pytest-advreview: environment {STATE_KEY_ENV} has {len(value.strip())} "
                f"characters; a state key needs at least {MIN_KEY_CHARS}. Fix: set it to a "
                f"random secret, e.g. the output of {_GENERATE} (in CI: a repository secret)"
            )
        return StateKey(value.strip().encode("utf-8", "surrogateescape"), "env", STATE_KEY_ENV)
    path = user_key_path(env)
    secret = _read_user_key(path)
    if secret is None:
        _create_user_key(path)
        secret = _read_user_key(path)
        if secret is None:  # pragma: no cover - created a moment ago, then deleted
            raise StateKeyError(f"{path} vanished right after it was created")
    return StateKey(secret, "file", str(path))


def _fix(path: Path) -> str:
    return (
        f"Fix: delete {path} (a new key is made on the next run, and every stored verdict is "
        f"reviewed again), or set {STATE_KEY_ENV} to a secret of at least {MIN_KEY_CHARS} "
        "characters"
    )


def _read_user_key(path: Path) -> bytes | None:
    """The key in ``path``; ``None`` when there is no file yet."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except (FileNotFoundError, NotADirectoryError):
        return None  # creating it says what is wrong with the folder
    except OSError as exc:
        why = "a symlink is refused" if exc.errno == errno.ELOOP else exc.strerror
        raise StateKeyError(
            f"the state key {path} cannot be opened ({why}). " + _fix(path)
        ) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        # Checked before fdopen, which raises IsADirectoryError (a traceback) on a folder.
        os.close(fd)
        raise StateKeyError(f"the state key {path} is not a regular file. " + _fix(path))
    with os.fdopen(fd, "rb") as fh:
        if info.st_uid != os.getuid():
            raise StateKeyError(
                f"the state key {path} belongs to uid {info.st_uid}, not to this user "
                f"({os.getuid()}), who would trust entries that user can forge. " + _fix(path)
            )
        if info.st_mode & 0o077:
            raise StateKeyError(
                f"the state key {path} has mode {stat.S_IMODE(info.st_mode):o}: other users "
                f"can read or replace it. Fix: chmod 600 {path}"
            )
        text = fh.read(_USER_KEY_HEX + 2).strip()
    try:
        secret = bytes.fromhex(text.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        secret = b""
    if len(secret) * 2 != _USER_KEY_HEX:
        raise StateKeyError(f"the state key {path} does not hold a key. " + _fix(path))
    return secret


def _create_user_key(path: Path) -> None:
    """Write a new random key to ``path`` unless another process got there first."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".state.key-", dir=path.parent)  # mode 0600
    except OSError as exc:
        raise StateKeyError(
            f"the state key {path} cannot be created ({exc.strerror}). Fix: make "
            f"{path.parent} writable, point XDG_STATE_HOME at a writable folder outside the "
            f"repository, or set {STATE_KEY_ENV} to a secret of at least {MIN_KEY_CHARS} "
            "characters"
        ) from None
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_hex(_USER_KEY_HEX // 2) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        # A hard link never replaces an existing file: the first process to link wins,
        # and everyone (the losers included) then reads the winner's complete file.
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    except OSError as exc:
        raise StateKeyError(
            f"the state key {path} cannot be written ({exc.strerror}). " + _fix(path)
        ) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
