"""What the reviewer's tools see of the environment: an allow-list, never a guess.

Codex 0.171 hands its whole environment to the shell of every tool call by default
(``shell_environment_policy.inherit = "all"`` with its default excludes switched off), and
each tool's output goes back to the model in the next request.  A reviewer talked into
running ``env`` by the plan under review would send every API key, token and password of
the CI job to the model service (measured: docs/codex-compat.md, "Tool-shell
environment").  A filter by *name* misses most of them (a ``*_PAT``, a webhook URL, a
JWT, a PEM key, a mnemonic, a password in a URL query or in the second URL of a list, a
``-D…password=`` option string, ``GIT_CONFIG_VALUE_0``), so the tool shell gets an
allow-list instead:

* :data:`CORE_NAMES`, what Codex's own ``inherit = "core"`` keeps on Unix (measured on
  0.171: ``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``, ``USER``, ``TMPDIR``, ``TEMP``,
  ``TMP``; not ``USERNAME``, which is Windows-only there);
* the variables the user names in the ini key ``advreview_env_allow`` (case-insensitive
  globs, matched here and passed to Codex as exact names).

The runner passes, on every ``exec`` and ``resume`` (and the ``codex`` lead on each
turn), after the user's ``--advreview-codex-config`` pairs so that they win:

* ``shell_environment_policy.inherit="all"``, ``ignore_default_excludes=true`` and
  ``exclude=[]``: the starting set does not depend on a ``config.toml`` (an allowed
  ``NPM_TOKEN`` is not dropped by Codex's ``*TOKEN*`` default exclude);
* ``shell_environment_policy.include_only=[…]``: every core name plus the allowed names
  present, by exact name.  Codex applies it last (after ``set``), so nothing else of its
  environment reaches the tool shell, whatever its name or value.  The list is never
  empty (Codex reads an empty list as "no filter") and holds no glob character (a name
  with ``*``, ``?`` or ``[`` is never passed: as an entry it would match others);
* ``allow_login_shell=false``: a login shell (``bash -lc``, Codex's default) would read
  ``~/.profile`` and export whatever it exports, after the policy.

Codex matches ``include_only`` entries case-insensitively (and its ``core`` set too), so
listing ``PATH`` would also pass a variable called ``Path`` or ``path``.  Such a case
variant of a core name is removed from the Codex process altogether
(:func:`reviewer_process_env`); allowed globs are case-insensitive anyway.

Codex adds variables of its own after the policy (``CODEX_THREAD_ID`` and other
``CODEX_*`` ids, and constants such as ``LANG=C.UTF-8``, ``TERM=dumb``, ``PAGER=cat``);
bash sets ``PWD``, ``SHLVL`` and ``_``.  None of them comes from the job's environment.

Codex itself keeps its environment: the provider's ``env_key`` (``OPENAI_API_KEY`` …) is
read by the Codex process, not by the tool shell, so authentication still works.
Variables the Codex process never needs (:data:`NEVER_PASSED`, the key that signs the
plugin's stored verdicts) are removed from its environment altogether.

What this cannot do: a reviewer that *reads files* (``~/.codex/auth.json``,
``~/.aws/credentials``, ``/proc/<pid>/environ`` of a process it may read, a ``~/.bashrc``
that bash sources when its stdin is a socket) is limited by the sandbox, not by the
environment.  A credential the user allows through reaches the model: the header names
every allowed variable that looks like one (:func:`allow_warnings`).
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterable, Mapping

from ..statekey import STATE_KEY_ENV

__all__ = [
    "CORE_NAMES",
    "CREDENTIAL_PATTERNS",
    "NEVER_PASSED",
    "allow_warnings",
    "looks_like_credential",
    "reviewer_process_env",
    "tool_shell_args",
    "tool_shell_names",
]

#: What Codex's ``shell_environment_policy.inherit = "core"`` keeps on Unix, measured on
#: 0.171.0 (``env`` in a tool call): the only variables of the job that reach the
#: reviewer's tool shell unless ``advreview_env_allow`` names more.
CORE_NAMES: tuple[str, ...] = ("HOME", "LOGNAME", "PATH", "SHELL", "USER", "TMPDIR", "TEMP", "TMP")

#: Case-insensitive globs of variable names that look like credentials.  No longer a
#: filter (the allow-list is): used to warn when ``advreview_env_allow`` lets one through.
CREDENTIAL_PATTERNS: tuple[str, ...] = (
    "*KEY*",
    "*TOKEN*",
    "*SECRET*",
    "*PASS*",  # PASSWORD, PASSWD, PASSPHRASE, PGPASS
    "*PWD*",  # MYSQL_PWD
    "*CRED*",  # CREDENTIALS, CREDS
    "*AUTH*",  # AUTHORIZATION, OAUTH, NPM_CONFIG__AUTH
    "*PRIVATE*",
    "*COOKIE*",
    "*SESSION*",
    "*SIGNATURE*",
    "*DSN*",  # SENTRY_DSN and other connection strings with a password
    "*CONN_STR*",
    "*CONNECTION_STRING*",
    "*_PAT",  # personal access tokens
    "*WEBHOOK*",
    "*JWT*",
    "*PEM*",
    "*MNEMONIC*",
    "*SEED*",
    "GIT_CONFIG_VALUE_*",
)

#: Variables the Codex process itself has no use for: removed before Codex starts, so no
#: policy (or a user's ``-c`` override of it) can hand them to a tool.
NEVER_PASSED: tuple[str, ...] = (STATE_KEY_ENV,)

#: A value that carries a credential whatever the variable is called: a URL with a
#: password anywhere in it, a query parameter named like one, a PEM block, a JWT.
_CREDENTIAL_VALUE = re.compile(
    r"[A-Za-z][A-Za-z0-9+.-]*://[^/@\s:]*:[^/@\s]+@"
    r"|[?&](?:[A-Za-z_-]*(?:pass|pwd|token|secret|key|sig|auth)[A-Za-z_-]*)="
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ",
    re.IGNORECASE,
)
#: Only plain names are listed: Codex matches ``include_only`` entries as globs, so a
#: name with ``*``, ``?`` or ``[`` in it would let other variables through.
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: Names compared as Codex might, and then some: ``casefold`` also equates the Kelvin
#: sign with ``k`` and the long s with ``s``, which a Unicode-aware matcher may do.
_CORE_FOLDED = frozenset(name.casefold() for name in CORE_NAMES)


def _matches(name: str, patterns: Iterable[str]) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern.upper()) for pattern in patterns)


def looks_like_credential(name: str, value: str = "") -> bool:
    """Whether a variable looks like it holds a credential (by its name or its value).

    A heuristic for warnings only: what reaches the tool shell is decided by the
    allow-list, never by this.
    """
    return _matches(name, CREDENTIAL_PATTERNS) or bool(_CREDENTIAL_VALUE.search(value))


def reviewer_process_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment to start a reviewer (Codex, a command) with.

    Without :data:`NEVER_PASSED`, and without a case variant of a core name (``Path``,
    ``home``): Codex would hand it to the tool shell as if it were the core name, and no
    program on Unix reads it.
    """
    return {
        k: v
        for k, v in environ.items()
        if k.upper() not in NEVER_PASSED and (k.casefold() not in _CORE_FOLDED or k in CORE_NAMES)
    }


def _include_only(env: Mapping[str, str], allow: Iterable[str]) -> list[str]:
    """The ``include_only`` entries: every core name, then the allowed names present."""
    patterns = tuple(allow)
    allowed = {
        name
        for name in env
        if _PLAIN_NAME.match(name)
        and name.upper() not in NEVER_PASSED
        and name.casefold() not in _CORE_FOLDED
        and _matches(name, patterns)
    }
    return [*CORE_NAMES, *sorted(allowed)]


def tool_shell_names(env: Mapping[str, str], allow: Iterable[str] = ()) -> list[str]:
    """The variables of ``env`` whose values the tool shell sees, sorted.

    What Codex keeps of ``env`` under :func:`tool_shell_args`: the names that equal an
    ``include_only`` entry ignoring case, as Codex matches them (case-folded, so it errs
    on the side of naming one more).  Output redaction may treat every other variable's
    value as something the tools never saw.

    :param env: the environment of the Codex process (after :func:`reviewer_process_env`).
    :param allow: the user's ``advreview_env_allow`` globs (case-insensitive).
    """
    entries = {entry.casefold() for entry in _include_only(env, allow)}
    return sorted(name for name in env if name.casefold() in entries)


def allow_warnings(env: Mapping[str, str], allow: Iterable[str]) -> list[str]:
    """Header lines about what ``advreview_env_allow`` passes (names only, never values).

    One line naming the allowed variables present, and a warning for those that look
    like credentials: the allow-list is the user's decision, the header makes it visible
    (a glob such as ``*_URL`` passes more than its author may think).
    """
    patterns = tuple(allow)
    if not patterns:
        return []
    core = set(CORE_NAMES)
    names = [n for n in tool_shell_names(env, patterns) if n not in core]
    if not names:
        return [f"advreview_env_allow passes no variable of this environment ({_globs(patterns)})"]
    lines = [f"the reviewer's tool shell also sees (advreview_env_allow): {_some(names)}"]
    risky = [n for n in names if looks_like_credential(n, env[n])]
    if risky:
        lines.append(
            "WARNING: advreview_env_allow passes credential-looking variables to the "
            f"reviewer's tool shell: {_some(risky)}; a tool call can send their values to "
            "the model, so narrow the globs unless the reviewer's tests need them"
        )
    return lines


def _globs(patterns: tuple[str, ...]) -> str:
    return ", ".join(patterns)


def _some(names: list[str], limit: int = 12) -> str:
    more = len(names) - limit
    return ", ".join(names[:limit]) + (f" and {more} more" if more > 0 else "")


def tool_shell_args(env: Mapping[str, str], allow: Iterable[str] = ()) -> list[str]:
    """The ``-c`` arguments that give the reviewer's tool shell only the allow-list.

    They go on every ``exec`` and ``resume`` (Codex does not keep them in the thread),
    after the user's ``--advreview-codex-config`` pairs so that they win.

    :param env: the environment the Codex process is started with.
    :param allow: the user's ``advreview_env_allow`` globs.
    """
    # A JSON array of plain strings is also a TOML array.
    include_only = json.dumps(_include_only(env, allow))
    return [
        "-c",
        'shell_environment_policy.inherit="all"',
        "-c",
        "shell_environment_policy.ignore_default_excludes=true",
        "-c",
        "shell_environment_policy.exclude=[]",
        "-c",
        "shell_environment_policy.include_only=" + include_only,
        "-c",
        "allow_login_shell=false",
    ]
