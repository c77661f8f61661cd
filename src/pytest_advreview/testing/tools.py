"""The pinned CLIs the real-CLI tests drive: their version check, and Claude Code's install.

Claude Code is about 400 MB and only the few real-Claude lead tests use it, so it is not
installed up front: the ``claude_executable`` fixture installs the pinned version into
``<rootdir>/.tools`` the first time a test asks for it, and ``scripts/setup`` installs it
only under CI (``CI=true``), where every test must run and nothing can wait on a prompt.
Both go through :func:`ensure_claude`, so the npm command and its version pin live here
alone::

    python -m pytest_advreview.testing.tools install-claude .tools

Several processes may ask at once (xdist workers, parallel runs in one checkout): one
installs under a file lock in the prefix, and the others wait for it, then use its result.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ..constants import PINNED_CLAUDE_VERSION

__all__ = [
    "CLAUDE_PACKAGE",
    "CLAUDE_VERSION_LINE",
    "InstallError",
    "NpmMissing",
    "claude_bin",
    "claude_install_command",
    "ensure_claude",
    "version_problem",
]

#: The npm package of Claude Code.
CLAUDE_PACKAGE = "@anthropic-ai/claude-code"
#: What ``claude --version`` prints for the pinned version.
CLAUDE_VERSION_LINE = f"{PINNED_CLAUDE_VERSION} (Claude Code)"
#: The lock file in the prefix that lets one process install at a time.
INSTALL_LOCK = ".claude-install.lock"
#: Seconds one ``npm install`` may take: a slow mirror, not a hang.
INSTALL_TIMEOUT = 1800.0


class InstallError(Exception):
    """``npm install`` ran and did not leave the pinned ``claude`` behind."""


class NpmMissing(InstallError):
    """There is no ``npm`` on PATH to install with."""


def claude_bin(prefix: Path) -> Path:
    """Where ``npm install --prefix PREFIX`` links the ``claude`` executable."""
    return prefix / "node_modules" / ".bin" / "claude"


def claude_install_command(prefix: Path, npm: str = "npm") -> list[str]:
    """The one install command of the pinned Claude Code.

    Never ``--ignore-scripts``: the package's postinstall links its native binary into place.
    """
    return [
        npm,
        "install",
        "--prefix",
        str(prefix),
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        f"{CLAUDE_PACKAGE}@{PINNED_CLAUDE_VERSION}",
    ]


def version_problem(
    executable: Path, expected: str, env: Mapping[str, str] | None = None
) -> str | None:
    """Why ``executable --version`` does not print ``expected``; ``None`` when it does."""
    try:
        proc = subprocess.run(
            [str(executable), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            env=None if env is None else dict(env),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{executable} --version failed: {exc}"
    version = proc.stdout.strip()
    if proc.returncode != 0 or version != expected:
        return (
            f"{executable} --version printed {version!r} (rc {proc.returncode}), "
            f"expected {expected!r}"
        )
    return None


def _pinned_claude(binary: Path) -> str | None:
    return version_problem(binary, CLAUDE_VERSION_LINE)


def ensure_claude(
    prefix: Path, *, problem: Callable[[Path], str | None] = _pinned_claude
) -> tuple[Path, bool]:
    """The pinned ``claude`` under ``prefix``, installed with npm first when it is not there.

    Returns the executable and whether this call installed it.  The check runs again
    after the lock is taken: a caller that waited for another's install uses it.

    :param problem: why a path is not the pinned ``claude`` (``None``: it is).
    :raises NpmMissing: no ``npm`` on PATH and no pinned ``claude`` under ``prefix``.
    :raises InstallError: npm failed, or left something other than the pinned version.
    """
    binary = claude_bin(prefix)
    if binary.exists() and problem(binary) is None:
        return binary, False
    npm = shutil.which("npm")
    if npm is None:
        raise NpmMissing(f"npm is not on PATH, so Claude Code cannot be installed into {prefix}")
    prefix.mkdir(parents=True, exist_ok=True)
    with (prefix / INSTALL_LOCK).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if binary.exists() and problem(binary) is None:
            return binary, False
        command = claude_install_command(prefix, npm)
        shown = " ".join(claude_install_command(prefix))
        try:
            proc = subprocess.run(
                command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InstallError(f"`{shown}` failed: {exc}") from exc
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip()[-500:] or "no output"
            raise InstallError(f"`{shown}` exited {proc.returncode}: {tail}")
        found = problem(binary)
        if found is not None:
            raise InstallError(f"`{shown}` succeeded, but {found}")
    return binary, True


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pytest_advreview.testing install-claude PREFIX``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or args[0] != "install-claude":
        print(
            "usage: python -m pytest_advreview.testing install-claude PREFIX",
            file=sys.stderr,
        )
        return 2
    try:
        binary, installed = ensure_claude(Path(args[1]))
    except InstallError as exc:
        print(f"install-claude: {exc}", file=sys.stderr)
        return 1
    print(f"install-claude: {'installed' if installed else 'already there'}: {binary}")
    return 0
