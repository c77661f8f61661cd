"""What the reviewer's tools see of the environment: no credential, whatever pytest had.

Codex 0.171 hands its whole environment to the shell of every tool call by default
(``shell_environment_policy.inherit = "all"`` with its default excludes switched off), and
each tool's output goes back to the model in the next request.  A reviewer talked into
running ``env`` by the plan under review would send every API key, token and password of
the CI job to the model service (measured: docs/codex-compat.md, "Tool-shell
environment").

The runner therefore passes, on every ``exec`` and ``resume``:

* ``shell_environment_policy.include_only`` listing, by exact name, the variables of the
  Codex process that do not look like a credential (plus the user's
  ``advreview_env_allow`` globs).  Codex applies ``include_only`` last, after ``set``, so
  nothing else reaches the tool shell.  Codex itself keeps its full environment: the
  provider's ``env_key`` (``OPENAI_API_KEY`` …) is read by the Codex process, not by
  the tool shell, so authentication still works.
* ``allow_login_shell=false``: a login shell (``bash -lc``, Codex's default) would read
  ``~/.profile`` and ``~/.bashrc`` and export whatever they export, after the policy.

Variables the Codex process never needs (:data:`NEVER_PASSED`, the key that signs the
plugin's stored verdicts) are removed from its environment altogether.

What this cannot do: a reviewer that *reads files* (``~/.codex/auth.json``,
``~/.aws/credentials``, ``/proc/<pid>/environ`` of a process it may read) is limited by
the sandbox, not by the environment.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import re
from collections.abc import Iterable, Mapping

from ..statekey import STATE_KEY_ENV

__all__ = [
    "CREDENTIAL_PATTERNS",
    "NEVER_PASSED",
    "looks_like_credential",
    "reviewer_process_env",
    "tool_shell_args",
    "tool_shell_names",
]

#: Case-insensitive globs of variable names that look like credentials.  Broad on purpose:
#: hiding a harmless variable costs a reviewer little (``advreview_env_allow`` lets it
#: through), passing a secret costs the secret.
CREDENTIAL_PATTERNS: tuple[str, ...] = (
    "*KEY*",
    "*TOKEN*",
    "*SECRET*",
    "*PASS*",  # PASSWORD, PASSWD, PASSPHRASE, PGPASS
    "*PWD*",  # MYSQL_PWD (and PWD itself, which bash sets again)
    "*CRED*",  # CREDENTIALS, CREDS
    "*AUTH*",  # AUTHORIZATION, OAUTH, NPM_CONFIG__AUTH
    "*PRIVATE*",
    "*COOKIE*",
    "*SESSION*",
    "*SIGNATURE*",
    "*DSN*",  # SENTRY_DSN and other connection strings with a password
    "*CONN_STR*",
    "*CONNECTION_STRING*",
)

#: Variables the Codex process itself has no use for: removed before Codex starts, so no
#: policy (or a user's ``-c`` override of it) can hand them to a tool.
NEVER_PASSED: tuple[str, ...] = (STATE_KEY_ENV,)

#: A value that carries a password in a URL (``postgres://user:pw@host``,
#: ``https://user:pw@proxy``): a credential whatever the variable is called.
_URL_WITH_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/@\s:]*:[^/@\s]+@")
#: Only plain names are listed: Codex matches ``include_only`` entries as globs, so a
#: name with ``*``, ``?`` or ``[`` in it would let other variables through.
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: Always listed, so the list is never empty: Codex reads an empty ``include_only`` as
#: "no filter" and would pass everything.
_ALWAYS = "PATH"


def _matches(name: str, patterns: Iterable[str]) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern.upper()) for pattern in patterns)


def looks_like_credential(name: str, value: str = "") -> bool:
    """Whether a variable looks like it holds a credential (its name, or a URL password)."""
    return _matches(name, CREDENTIAL_PATTERNS) or bool(_URL_WITH_PASSWORD.match(value))


def reviewer_process_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment to start a reviewer (Codex, a command) with: no :data:`NEVER_PASSED`."""
    return {k: v for k, v in environ.items() if k.upper() not in NEVER_PASSED}


def tool_shell_names(env: Mapping[str, str], allow: Iterable[str] = ()) -> list[str]:
    """The variables of ``env`` that the tool shell may see, sorted (``PATH`` first).

    :param env: the environment of the Codex process.
    :param allow: the user's ``advreview_env_allow`` globs (case-insensitive); a variable
        they match is passed even if it looks like a credential.
    """
    return list(_tool_shell_names(tuple(env.items()), tuple(allow)))


@functools.lru_cache(maxsize=8)
def _tool_shell_names(
    items: tuple[tuple[str, str], ...], allow: tuple[str, ...]
) -> tuple[str, ...]:
    """:func:`tool_shell_names` for one environment, computed once per run.

    Every launch asks (about 60 variables against 14 patterns, some milliseconds of the
    plugin's CPU per review); the environment rarely changes within a run, and a changed
    one is a different key.
    """
    env = dict(items)
    names = {
        name
        for name, value in env.items()
        if _PLAIN_NAME.match(name)
        and name.upper() not in NEVER_PASSED
        and (not looks_like_credential(name, value) or _matches(name, allow))
    }
    names.discard(_ALWAYS)
    return (_ALWAYS, *sorted(names))


def tool_shell_args(env: Mapping[str, str], allow: Iterable[str] = ()) -> list[str]:
    """The ``-c`` arguments that keep credentials out of the reviewer's tool shell.

    They go on every ``exec`` and ``resume`` (Codex does not keep them in the thread),
    after the user's ``--advreview-codex-config`` pairs so that they win.

    :param env: the environment the Codex process is started with.
    :param allow: the user's ``advreview_env_allow`` globs.
    """
    names = tool_shell_names(env, allow)
    # A JSON array of plain strings is also a TOML array.
    return [
        "-c",
        "shell_environment_policy.include_only=" + json.dumps(names),
        "-c",
        "allow_login_shell=false",
    ]
