"""The one way pytest-advreview runs git: an argv list, captured output, ``-z`` parsing.

Targets (what to review) and mutation snapshots (what the reviewer changed) both ask git
about the work tree.  They do it through :func:`run_git`, so every call gets the same
environment (no optional locks, C messages, no prompts) and every failure becomes one
:class:`GitError` that callers turn into a user-facing message.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "SHOWN_DIFF_OPTIONS",
    "STATUS_V2_ARGS",
    "GitError",
    "StatusEntry",
    "attribute_files",
    "commit",
    "converted_files",
    "escaped_text",
    "literal_pathspec",
    "parse_status_v2_z",
    "plain_diff_globals",
    "quote_path",
    "redirected",
    "run_git",
    "split_z",
    "unpassable_path",
]


class GitError(Exception):
    """A git command could not run or exited non-zero.

    :param argv: the full command that was run, ``git`` included.
    :param cwd: the directory it ran in.
    :param returncode: git's exit code, ``None`` when git could not be started.
    :param stderr: what git said on stderr (decoded, stripped).
    """

    def __init__(self, argv: Sequence[str], cwd: Path, returncode: int | None, stderr: str) -> None:
        self.stderr = stderr
        command = shlex.join(argv)
        if returncode is None:
            super().__init__(f"could not run `{command}` in {cwd}: {stderr}")
        else:
            said = f": {stderr}" if stderr else ""
            super().__init__(f"`{command}` failed in {cwd} (exit code {returncode}){said}")


def _git_env(
    nosystem: bool = False, extra: Mapping[str, str | None] | None = None
) -> dict[str, str]:
    env = dict(os.environ)
    for name, value in (extra or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    if nosystem:
        env["GIT_CONFIG_NOSYSTEM"] = "1"
    # A snapshot must not take index.lock: the reviewer (or another xdist worker) may run
    # git at the same moment, and a refreshed index would look like a mutation.
    env["GIT_OPTIONAL_LOCKS"] = "0"
    # Messages are matched in a few places ("not a git repository"); keep them English.
    env["LC_ALL"] = "C"
    env["LANGUAGE"] = "C"
    # Nothing here may wait for a credential prompt nobody can answer.
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


def run_git(
    cwd: Path,
    *args: str,
    check: bool = True,
    nosystem: bool = False,
    env: Mapping[str, str | None] | None = None,
    error: Callable[[str], Exception] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git <args>`` in ``cwd`` and return the completed process (bytes output).

    Arguments are passed as an argv list, never through a shell, so paths with spaces,
    quotes or ``$`` need no quoting.  Output is raw bytes: parse it with :func:`split_z`
    or :func:`parse_status_v2_z` when the command was given ``-z``.

    :param cwd: the directory git runs in (``git -C`` is not used, so relative paths in
        ``args`` are relative to it).
    :param args: git's arguments, without the leading ``git``.
    :param check: raise :class:`GitError` on a non-zero exit code; with ``False`` the
        caller inspects ``returncode`` itself (``rev-parse --verify --quiet``).
    :param nosystem: without the machine's system git configuration (the base's
        configuration files are read as the commit holds them, whatever the runner set).
    :param env: variables to set for git (``None``: unset), over the process's own.
    :param error: the caller's own error class, raised instead of :class:`GitError` with
        the plugin's prefix and the same text (:class:`~.targets.TargetError`).
    :raises GitError: git is not installed, ``cwd`` does not exist, or git failed.
    """
    argv = ["git", *args]
    try:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=_git_env(nosystem, env),
            check=False,
        )
    except OSError as exc:  # git missing from PATH, cwd gone
        raise _failed(GitError(argv, cwd, None, exc.strerror or str(exc)), error) from None
    if check and proc.returncode != 0:
        raise _failed(GitError(argv, cwd, proc.returncode, _decode(proc.stderr).strip()), error)
    return proc


def _failed(failure: GitError, error: Callable[[str], Exception] | None) -> Exception:
    return failure if error is None else error(f"pytest-advreview: {failure}")


def commit(cwd: Path, ref: str, *, error: Callable[[str], Exception] | None = None) -> str | None:
    """The commit ``ref`` names, or ``None`` when it names none.

    A ``ref`` that starts with ``-`` names none: git would read it as an option.

    :param error: as :func:`run_git`'s.
    :raises GitError: git could not be started.
    """
    if ref.startswith("-"):
        return None
    verify = ("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    proc = run_git(cwd, *verify, check=False, error=error)
    return _decode(proc.stdout).strip() if proc.returncode == 0 else None


#: Variables that redirect git away from the current directory.  Set (inside a git hook,
#: say), they would make git commands meant for a private checkout act on the user's
#: repository.
_REDIRECTING_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR")


def redirected() -> str | None:
    """Which of those variables are set, worded "GIT_DIR is set"; ``None`` when none is."""
    names = [name for name in _REDIRECTING_VARS if os.environ.get(name)]
    if not names:
        return None
    return f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} set"


_C_ESCAPES = {
    0x07: "\\a",
    0x08: "\\b",
    0x09: "\\t",
    0x0A: "\\n",
    0x0B: "\\v",
    0x0C: "\\f",
    0x0D: "\\r",
    0x22: '\\"',
    0x5C: "\\\\",
}


def quote_path(name: str) -> str:
    """``name`` (as :func:`os.fsdecode` read it from git) the way git prints it.

    A name that is UTF-8 text without control characters is returned as it is; any other
    is quoted as git's ``core.quotePath`` does: in double quotes, with C escapes
    (``\\t``, ``\\"``, ``\\\\``) and three-digit octal for every other control byte and
    every byte that is not UTF-8 (``caf\\351.py``).  The result is always UTF-8 text, so it
    can go into a prompt, a report or a node id.
    """
    raw = os.fsencode(name)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and not any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        return name
    out: list[str] = []
    for char in raw.decode("utf-8", "surrogateescape"):
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8
            out.append(f"\\{code - 0xDC00:03o}")
        elif code in _C_ESCAPES:
            out.append(_C_ESCAPES[code])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\{code:03o}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def escaped_text(value: str) -> str:
    """``value`` with every byte that is not UTF-8 (a surrogate escape of
    :func:`os.fsdecode`) written as git writes it, three-digit octal: ``caf\\351.py``.

    For text that names a path inside a longer message (an exception's, a report's),
    where :func:`quote_path`'s quotes would not fit; text that is UTF-8 is returned as it is.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return (
            "".join(
                f"\\{ord(char) - 0xDC00:03o}" if 0xDC80 <= ord(char) <= 0xDCFF else char
                for char in value
            )
            .encode("utf-8", "backslashreplace")
            .decode("utf-8")
        )
    return value


def unpassable_path(name: str, what: str) -> str | None:
    """Why the file ``name`` cannot be handed to the reviewer, or ``None`` when it can.

    A name that is not UTF-8 cannot be written into the prompt (UTF-8 text) as it is,
    and the reviewer, whose commands are text too, could not open it by the escaped name:
    the item errors with the name as git prints it, never passes without the file.
    """
    try:
        os.fsencode(name).decode("utf-8")
    except UnicodeDecodeError:
        return (
            f"pytest-advreview: {what} {quote_path(name)} is not UTF-8 (git stores file "
            "names as bytes): the reviewer's prompt and commands are UTF-8 text, so it "
            "cannot be shown or opened; rename it to a UTF-8 name (git mv)"
        )
    return None


def _decode(data: bytes) -> str:
    # Paths are bytes to git; ``fsdecode`` round-trips undecodable names through
    # surrogateescape instead of failing on them.
    return os.fsdecode(data)


def split_z(data: bytes) -> list[str]:
    """Split NUL-terminated ``-z`` output into decoded paths (empty fields dropped)."""
    return [_decode(part) for part in data.split(b"\0") if part]


@dataclass(frozen=True)
class StatusEntry:
    """One entry of ``git status``, its ``XY`` code as ``--porcelain=v1`` writes it.

    ``path`` is relative to the repository top level (porcelain output always is).
    """

    xy: str
    path: str

    @property
    def untracked(self) -> bool:
        return self.xy == "??"

    @property
    def staged(self) -> bool:
        """True when the index differs from HEAD for this path."""
        return self.xy[0] not in " ?!"

    @property
    def unstaged(self) -> bool:
        """True when the work tree differs from the index for this path."""
        return self.xy[1] not in " ?!"


#: ``git status`` arguments of :func:`parse_status_v2_z`: porcelain v2 with the branch
#: header (``HEAD``'s commit), without the ahead/behind count (a walk of the history).
STATUS_V2_ARGS = (
    "status",
    "--porcelain=v2",
    "-z",
    "--branch",
    "--no-ahead-behind",
    "--untracked-files=all",
    "--no-renames",
    # A branch's .gitmodules can say `ignore = all` for a submodule: git status (and git
    # diff) would then not list the submodule's new commit at all.
    "--ignore-submodules=none",
)

#: Number of space-separated fields before the path, per porcelain v2 record type.
_V2_FIELDS = {b"1": 8, b"2": 9, b"u": 10, b"?": 1, b"!": 1}


def parse_status_v2_z(data: bytes) -> tuple[str | None, list[StatusEntry]]:
    """Parse ``git status --porcelain=v2 -z --branch`` output (see :data:`STATUS_V2_ARGS`).

    Returns ``HEAD``'s commit (``None`` on an unborn branch) and the entries in the form
    ``--porcelain=v1`` would give: v2 writes an unchanged side of
    ``XY`` as ``.`` where v1 writes a space, and an untracked (ignored) file as ``?``
    (``!``) where v1 writes ``??`` (``!!``).  One git call thus answers what
    ``git status --porcelain=v1`` plus ``git rev-parse --verify HEAD`` answer in two.
    """
    fields = data.split(b"\0")
    head: str | None = None
    entries: list[StatusEntry] = []
    i = 0
    while i < len(fields):
        record = fields[i]
        i += 1
        if not record:
            continue
        if record.startswith(b"# branch.oid "):
            oid = record[len(b"# branch.oid ") :].decode("ascii", "replace")
            head = None if oid == "(initial)" else oid
            continue
        if record.startswith(b"#"):
            continue
        kind = record[:1]
        skip = _V2_FIELDS.get(kind)
        if skip is None:
            continue
        parts = record.split(b" ", skip)
        if len(parts) <= skip:
            continue
        if kind in (b"?", b"!"):
            xy = kind.decode() * 2
        else:
            xy = parts[1].decode("ascii", "replace").replace(".", " ")
        if kind == b"2":
            i += 1  # a rename's source path, a field of its own
        entries.append(StatusEntry(xy, _decode(parts[skip])))
    return head, entries


def literal_pathspec(path: str, *, exclude: bool = False) -> str:
    """A pathspec that matches exactly ``path`` (no glob), optionally as an exclusion.

    ``:(top)`` anchors it at the repository top level, whatever directory git runs in.
    """
    magic = "exclude,literal,top" if exclude else "literal,top"
    return f":({magic}){path}"


# -- the diff the reviewer is shown ---------------------------------------------------------

#: ``git diff`` options that print what git stores, whatever the repository asks for.
#: A branch controls its own ``.gitattributes`` and ``.gitmodules``: ``-diff`` or
#: ``binary`` turns a file's diff into "Binary files … differ" (``--text``), ``diff=<driver>``
#: selects a textconv filter or an external diff command configured on the machine that
#: may drop lines (``--no-textconv``, ``--no-ext-diff``, which also ignores
#: ``GIT_EXTERNAL_DIFF`` and ``diff.external``), and ``submodule.<name>.ignore = all``
#: hides a submodule's new commit (``--ignore-submodules=none``).  ``--no-renames`` shows a
#: renamed file whole, as the cache key hashes it; ``--no-color`` keeps escape codes from
#: a ``color.ui = always`` configuration out of the text.
SHOWN_DIFF_OPTIONS = (
    "--text",
    "--no-textconv",
    "--no-ext-diff",
    "--no-color",
    "--no-renames",
    "--ignore-submodules=none",
)

#: Global options before ``diff`` on every git version: no pager (a reviewer's shell with
#: a terminal would wait in ``less``), and no attributes file of the user's configuration
#: (``core.attributesFile``).
_BASE_GLOBALS = ("--no-pager", "-c", f"core.attributesFile={os.devnull}")

_globals_cache: dict[str, tuple[str, ...]] = {}


def plain_diff_globals(cwd: Path) -> tuple[str, ...]:
    """git's global options for a diff that ignores the repository's attributes.

    Always :data:`_BASE_GLOBALS`.  Where git supports ``--attr-source`` (2.40 and later)
    also ``--attr-source=<empty tree>``: git then reads no ``.gitattributes`` at all, so
    neither the diff drivers nor the conversions of the work tree's files (``ident``,
    ``filter``, ``working-tree-encoding``, end of line) apply, and an uncommitted diff
    shows the work tree's own bytes.  Older git has no way to ignore the work tree's
    ``.gitattributes``; :data:`SHOWN_DIFF_OPTIONS` still neutralises every diff-time
    attribute there.  Support is probed once per directory by running the option.

    :raises GitError: git could not be started.
    """
    key = os.fspath(cwd)
    known = _globals_cache.get(key)
    if known is not None:
        return known
    found: tuple[str, ...] = _BASE_GLOBALS
    empty = run_git(cwd, "hash-object", "-t", "tree", os.devnull, check=False)
    tree = _decode(empty.stdout).strip()
    if empty.returncode == 0 and tree:
        probe = run_git(cwd, f"--attr-source={tree}", "check-attr", "diff", "--", "x", check=False)
        if probe.returncode == 0:
            found = (*_BASE_GLOBALS, f"--attr-source={tree}")
    _globals_cache[key] = found
    return found


def attribute_files(paths: Sequence[str]) -> tuple[str, ...]:
    """The ``.gitattributes`` files among ``paths`` (top-level-relative), sorted, each once."""
    return tuple(
        sorted({p for p in paths if p == ".gitattributes" or p.endswith("/.gitattributes")})
    )


#: Attributes under which git rewrites a file's text when it reads it from the work tree,
#: beyond line endings: ``ident`` collapses ``$Id: … $`` to ``$Id$``, a ``filter`` runs
#: its clean command, ``working-tree-encoding`` re-encodes.  (``text``/``eol`` only turn
#: CRLF into LF.)
CONVERTING_ATTRIBUTES = ("ident", "filter", "working-tree-encoding")


def converted_files(top: Path, paths: Sequence[str]) -> tuple[str, ...]:
    """The ``paths`` (top-level-relative) that git rewrites when reading the work tree.

    An uncommitted diff shows such a file's rewritten text, not the bytes that run, on a
    git without ``--attr-source`` (:func:`plain_diff_globals`).

    :raises GitError: git failed.
    """
    if not paths:
        return ()
    out = run_git(top, "check-attr", "-z", *CONVERTING_ATTRIBUTES, "--", *paths).stdout
    # -z output: path, attribute, value, path, ...; a value may be empty (`filter=`), so
    # the fields are not split with split_z, which drops empty ones.
    fields = [_decode(part) for part in out.split(b"\0")]
    found: set[str] = set()
    for i in range(0, len(fields) - 2, 3):
        path, name, value = fields[i : i + 3]
        if value == "unspecified" or value == "unset" or (name == "ident" and value != "set"):
            continue
        found.add(path)
    return tuple(sorted(found))
