"""Atomic file writes: a reader sees the old content or the new, never half a file."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(path: Path, data: str | bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` (text as UTF-8) in one rename.

    The temporary file is a hidden ``*.tmp`` in the same folder, so the rename never
    crosses a file system; it is synced before the rename, so a crash leaves the old
    file or the new one, never an empty one; on any failure it is removed again.

    :param mode: permissions of the new file (a temporary file is created 0600).
    :raises OSError: the folder cannot be written, or ``path`` is a folder.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
