"""Text leaving the process: one redaction pass and one neutralisation, for every output.

A reviewer that got hold of a credential (a tool call that read a file, an environment
it should not have seen) can write it into its review, and the review is copied into the
terminal, the failure text, the JSON, markdown and SARIF reports, the GitHub annotations,
the step summary and the pull-request comment; GitHub masks its logs, not comments posted
through its API.  The review text is also written by whoever talked the reviewer into
writing it, so it may speak as the CI (``::stop-commands::…``, ``::error ::forged``,
``##[error]``) or drive the terminal (escape sequences).  Every sink therefore calls this
module, and only this module decides what a secret is and what a log line may say.

**Redaction** (:func:`redact`, the one pass; :func:`redact_data` applies it to every
string of a JSON-like value).  The secrets are decided once per run, on the controller,
from its environment (:meth:`Redactor.from_environ`) and sent to xdist workers in
``workerinput`` (:data:`WORKERINPUT_KEY`), so every process redacts the same values:

* the value of every environment variable of at least :data:`MIN_SECRET_CHARS`
  characters, fail closed, except the variables named in :data:`NOT_SECRET_NAMES` (the
  tool shell's core set, locale, and the CI metadata reports must show), the plugin's own
  setting variables (whose values the reports print), the user's ``advreview_env_allow``
  globs (the user said they are not secret), and values that are plain numbers or
  existing absolute paths;
* parts of such a value that could leak alone: the password and the credential-named
  query values of a URL (each URL of a list), ``name=value`` pairs whose name looks like
  a credential (``-Dhttp.proxyPassword=…``), and each long line of a multi-line value (a
  PEM key);
* the state key (:mod:`.statekey`): ``ADVREVIEW_STATE_KEY``, or the per-user key file's
  hex text, read (never created) the first time a text is redacted after it exists.

A value is found also when whitespace, a line break, a backslash, an ANSI colour code,
an invisible character (:data:`INVISIBLE_RANGES`), a combining mark or such a character
as this module shows it (``\\u200b``) was inserted between any two of its characters (a
wrapped or re-flowed line, a markdown escape, a credential that looks whole on screen),
when any character is percent-encoded (``quote``, ``quote_plus``), and base64-encoded
(either alphabet, at any offset inside a longer encoding).  It is replaced by
``[redacted:NAME]`` (``[redacted:NAME (base64)]``).

**Neutralisation** (:func:`terminal_text`, :func:`one_line`, :func:`document_text`).
Control characters (C0 except newline and tab, DEL, C1, a lone carriage return, line and
paragraph separators) and invisible characters (Unicode's default-ignorable code points,
bidirectional controls among them, and the interlinear annotation controls) are shown
escaped (``\\x1b``, ``\\u202e``); the data outputs (the record, JSON, SARIF, JUnit
properties), whose formats escape control characters themselves, show the invisible ones
(:func:`redact_data`, :func:`show_invisible`).  An escape is plain ASCII, so every step is
idempotent.  A line whose first
non-blank characters are ``::`` or which contains ``##[`` (the GitHub runner parses
both as workflow commands, ``##[`` anywhere in a line) is defused with a backslash.
Under GitHub Actions the terminal summary, where pytest prints the failure texts, is
also wrapped in ``::stop-commands::TOKEN`` … ``::TOKEN::`` with a per-run random token
(:class:`LogGuard`), so even text this module never saw cannot issue a command there, and
the plugin's own annotations (printed before) and a later step's (after) still work.
Workflow command fields are escaped per GitHub's rules (:func:`annotation_data`,
:func:`annotation_property`).  A plan path with such characters is refused
(:func:`unsafe_name`, :func:`shown`).
"""

from __future__ import annotations

import base64
import fnmatch
import functools
import json
import os
import re
import secrets
import time
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

import pytest
from pydantic import BaseModel

from .options import SPECS
from .runner.environment import looks_like_credential
from .statekey import STATE_KEY_ENV, user_key_path

__all__ = [
    "INVISIBLE_RANGES",
    "MIN_SECRET_CHARS",
    "NOT_SECRET_NAMES",
    "WORKERINPUT_KEY",
    "LogGuard",
    "Redactor",
    "Secret",
    "annotation_data",
    "annotation_property",
    "document_text",
    "environment_secrets",
    "escape_controls",
    "inert_html",
    "install",
    "one_line",
    "quiet_mentions",
    "redact",
    "redact_data",
    "redact_model",
    "show_invisible",
    "shown",
    "terminal_text",
    "unsafe_name",
]

#: Shortest environment value treated as a secret: shorter ones (``true``, ``main``,
#: ``1``) are words every report contains, and no credential is that short.
MIN_SECRET_CHARS: Final = 8
#: Shortest part of a value (a URL's password, a query value) treated as a secret.
_MIN_PART_CHARS: Final = 4
#: Shortest line of a multi-line value (a PEM key's base64 lines) redacted on its own.
_MIN_LINE_CHARS: Final = 16
#: ``workerinput`` key of the controller's secrets (JSON), so workers redact the same.
WORKERINPUT_KEY: Final = "advreview_redact"

#: Variables whose values are not secret and that reports legitimately show.
NOT_SECRET_NAMES: Final = frozenset(
    {
        # The tool shell's core set, and where things are.
        "HOME",
        "LOGNAME",
        "PATH",
        "SHELL",
        "USER",
        "USERNAME",
        "TMPDIR",
        "TEMP",
        "TMP",
        "PWD",
        "OLDPWD",
        "CODEX_HOME",
        "VIRTUAL_ENV",
        # Locale, terminal, proxy exceptions, pytest's own bookkeeping.
        "LANG",
        "LANGUAGE",
        "TERM",
        "COLORTERM",
        "TZ",
        "SHLVL",
        "HOSTNAME",
        "NO_PROXY",
        "CI",
        "PYTEST_CURRENT_TEST",
        "PYTEST_XDIST_WORKER",
        "PYTEST_XDIST_WORKER_COUNT",
        "PYTEST_XDIST_TESTRUNUID",
        # GitHub Actions' default variables (none of them is a credential).
        "GITHUB_ACTION",
        "GITHUB_ACTION_PATH",
        "GITHUB_ACTION_REPOSITORY",
        "GITHUB_ACTIONS",
        "GITHUB_ACTOR",
        "GITHUB_ACTOR_ID",
        "GITHUB_API_URL",
        "GITHUB_BASE_REF",
        "GITHUB_ENV",
        "GITHUB_EVENT_NAME",
        "GITHUB_EVENT_PATH",
        "GITHUB_GRAPHQL_URL",
        "GITHUB_HEAD_REF",
        "GITHUB_JOB",
        "GITHUB_OUTPUT",
        "GITHUB_PATH",
        "GITHUB_REF",
        "GITHUB_REF_NAME",
        "GITHUB_REF_PROTECTED",
        "GITHUB_REF_TYPE",
        "GITHUB_REPOSITORY",
        "GITHUB_REPOSITORY_ID",
        "GITHUB_REPOSITORY_OWNER",
        "GITHUB_REPOSITORY_OWNER_ID",
        "GITHUB_RETENTION_DAYS",
        "GITHUB_RUN_ATTEMPT",
        "GITHUB_RUN_ID",
        "GITHUB_RUN_NUMBER",
        "GITHUB_SERVER_URL",
        "GITHUB_SHA",
        "GITHUB_STEP_SUMMARY",
        "GITHUB_TRIGGERING_ACTOR",
        "GITHUB_WORKFLOW",
        "GITHUB_WORKFLOW_REF",
        "GITHUB_WORKFLOW_SHA",
        "GITHUB_WORKSPACE",
        "RUNNER_ARCH",
        "RUNNER_DEBUG",
        "RUNNER_ENVIRONMENT",
        "RUNNER_NAME",
        "RUNNER_OS",
        "RUNNER_TEMP",
        "RUNNER_TOOL_CACHE",
        # GitLab CI's metadata of the pipeline (not CI_JOB_TOKEN, CI_REGISTRY_PASSWORD).
        "CI_COMMIT_SHA",
        "CI_COMMIT_BEFORE_SHA",
        "CI_COMMIT_BRANCH",
        "CI_COMMIT_REF_NAME",
        "CI_COMMIT_REF_SLUG",
        "CI_DEFAULT_BRANCH",
        "CI_MERGE_REQUEST_DIFF_BASE_SHA",
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME",
        "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME",
        "CI_PIPELINE_ID",
        "CI_PIPELINE_URL",
        "CI_JOB_ID",
        "CI_JOB_URL",
        "CI_PROJECT_DIR",
        "CI_PROJECT_PATH",
        "CI_PROJECT_URL",
        "CI_SERVER_URL",
        # The Action's own inputs and paths (action.yml), which its messages name: the
        # workflow writes them, and none is a credential (the API key and GH_TOKEN are
        # other variables).  Not ADVREVIEW_ACTION_PYTEST_ARGS: a command line may carry
        # anything.
        "ADVREVIEW_ACTION_APPROVAL_LABEL",
        "ADVREVIEW_ACTION_BASE",
        "ADVREVIEW_ACTION_BASE_SHA",
        "ADVREVIEW_ACTION_CODEX",
        "ADVREVIEW_ACTION_FAIL_ON",
        "ADVREVIEW_ACTION_HEAD_SHA",
        "ADVREVIEW_ACTION_MODE",
        "ADVREVIEW_ACTION_MODEL",
        "ADVREVIEW_ACTION_PLANS",
        "ADVREVIEW_ACTION_PR",
        "ADVREVIEW_ACTION_PYTHON",
        "ADVREVIEW_ACTION_REASONING",
        "ADVREVIEW_ACTION_REPORT",
        "ADVREVIEW_ACTION_SANDBOX",
        "ADVREVIEW_ACTION_STATE_KEY",
        "ADVREVIEW_ACTION_TRUSTED_ASSOCIATIONS",
        "ADVREVIEW_ACTION_WORKERS",
        "ADVREVIEW_ACTION_WORK_DIR",
    }
)
_NOT_SECRET_GLOBS: Final = ("LC_*",)
#: The plugin's own setting variables: the header and the reports print their values.
#: Not those that hold a command line (it may carry a token).
_SETTING_NAMES: Final = frozenset(
    spec.env_var for spec in SPECS if spec.env and spec.metavar != "CMD"
)

_Model = TypeVar("_Model", bound=BaseModel)

_NUMBER = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?\Z")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s,;|]+")
_PAIR = re.compile(r"([A-Za-z0-9_.-]+)[=:]([^\s&;,'\"]+)")


@dataclass(frozen=True)
class Secret:
    """A value never to be written out, and the name it is replaced with."""

    name: str
    value: str
    #: Match letters in either case (the state key's hex text).
    ignore_case: bool = False
    #: A form of another secret (its base64): not sent to workers, which derive it again.
    derived: bool = False


def _not_secret(name: str, value: str, allow: Iterable[str]) -> bool:
    upper = name.upper()
    if upper in NOT_SECRET_NAMES or upper in _SETTING_NAMES:
        return True
    globs = (*_NOT_SECRET_GLOBS, *allow)
    if any(fnmatch.fnmatchcase(upper, glob.upper()) for glob in globs):
        return True
    text = value.strip()
    if _NUMBER.match(text):
        return True
    parts = [p for p in text.split(os.pathsep) if p]
    # A plain path (or a list of them, PYTHONPATH) names the machine's files, which the
    # reports name too; an absolute path that does not exist may be anything.
    return bool(parts) and all(os.path.isabs(p) and os.path.exists(p) for p in parts)


def _parts(value: str) -> list[str]:
    """Pieces of a secret value that could leak on their own."""
    found: list[str] = []
    for match in _URL.finditer(value):
        url = match.group(0)
        found.append(url)
        try:
            split = urlsplit(url)
            password = split.password
            query = parse_qsl(split.query, keep_blank_values=False)
        except ValueError:
            continue
        if password:
            found.append(password)
        found.extend(v for k, v in query if looks_like_credential(k))
    found.extend(v for k, v in _PAIR.findall(value) if looks_like_credential(k))
    lines = [line.strip() for line in value.splitlines()]
    if len(lines) > 1:
        found.extend(line for line in lines if len(line) >= _MIN_LINE_CHARS)
    return [p for p in found if len(p) >= _MIN_PART_CHARS and p != value]


def environment_secrets(environ: Mapping[str, str], allow: Iterable[str] = ()) -> list[Secret]:
    """The secrets of ``environ``: every value not known to be harmless, and its parts."""
    allow = tuple(allow)
    found: list[Secret] = []
    for name, value in environ.items():
        if name.upper() == STATE_KEY_ENV:
            continue  # the state key is named by its own rule (always a secret)
        if len(value.strip()) < MIN_SECRET_CHARS or _not_secret(name, value, allow):
            continue
        found.append(Secret(name, value.strip()))
        found.extend(Secret(name, part) for part in _parts(value))
    return found


def _state_key(environ: Mapping[str, str]) -> Secret | None:
    """The state key's text: the variable, else the per-user key file (never created)."""
    value = environ.get(STATE_KEY_ENV, "").strip()
    if value:
        return Secret(STATE_KEY_ENV, value)
    try:
        path = user_key_path(environ)
        text = path.read_text(encoding="ascii", errors="replace").strip()
    except (OSError, RuntimeError):  # no file yet, or no home folder
        return None
    if len(text) < MIN_SECRET_CHARS:
        return None
    return Secret("state key", text, ignore_case=True)


#: Code points that show nothing: Unicode's Default_Ignorable_Code_Point (soft hyphen,
#: zero-width space and joiners, word joiner, bidirectional controls, Hangul fillers,
#: variation selectors, tag characters, ...) and the interlinear annotation controls,
#: which hide the text between them.  Inclusive ranges.
INVISIBLE_RANGES: Final = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFFB),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
#: Combining marks (the combining diacritical blocks): visible, but a secret with one
#: after each character still reads as the secret.  Only skipped when matching.
_COMBINING_RANGES: Final = (
    (0x0300, 0x036F),
    (0x1AB0, 0x1AFF),
    (0x1DC0, 0x1DFF),
    (0x20D0, 0x20FF),
    (0xFE20, 0xFE2F),
)


def _char_class(ranges: Iterable[tuple[int, int]]) -> str:
    parts = (
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
        for a, b in ranges
    )
    return "[" + "".join(parts) + "]"


_INVISIBLE_CLASS: Final = _char_class(INVISIBLE_RANGES)
_INVISIBLE = re.compile(_INVISIBLE_CLASS)
#: What may stand between two characters of a secret: whitespace (a wrapped line), a
#: backslash (a markdown escape), ANSI colour codes, invisible characters and combining
#: marks, and an invisible or control character as this module shows it (``\u200b``).
_PLAIN_FILLER: Final = (
    rf"\s|\x1b\[[0-9;]*[A-Za-z]|{_INVISIBLE_CLASS}|{_char_class(_COMBINING_RANGES)}"
)
_ESCAPE: Final = r"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})"
_FILLER = rf"(?:{_PLAIN_FILLER}|{_ESCAPE}|\\)*"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_ESCAPES = re.compile(_ESCAPE)
#: The single characters of the filler, deleted by ``str.translate`` (a regular
#: expression over every character of a long text is several times slower).
_FILLER_CHARS: Final = dict.fromkeys(
    (
        *(c for c in range(0x3000 + 1) if chr(c).isspace()),
        ord("\\"),
        *(c for a, b in (*INVISIBLE_RANGES, *_COMBINING_RANGES) for c in range(a, b + 1)),
    ),
    None,
)


def _char_pattern(char: str, ignore_case: bool) -> str:
    options = [re.escape(char)]
    if ignore_case and char.lower() != char.upper():
        options = [re.escape(char.lower()), re.escape(char.upper())]
    encoded = "".join(
        "%" + "".join(d if d.isdigit() else f"[{d.lower()}{d.upper()}]" for d in f"{byte:02X}")
        for byte in char.encode("utf-8")
    )
    options.append(encoded)
    if char == " ":
        options.append(r"\+")  # quote_plus
    return "(?:" + "|".join(options) + ")"


def _pattern(secret: Secret) -> re.Pattern[str]:
    chars = [_char_pattern(c, secret.ignore_case) for c in secret.value]
    return re.compile(_FILLER.join(chars))


def _canonical(text: str, *, escapes: bool = True) -> str:
    """``text`` without filler and percent-encoding: a secret's pattern can match ``text``
    only if the secret's canonical form is a substring of this (a cheap first test).

    :param escapes: remove the escapes this module shows (``\\u200b``) as a whole; the
        cheap test compares the forms without too, so a secret that starts like an
        escape's tail (``u200b…``) after a backslash is still tested.
    """
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if escapes and "\\" in text:
        text = _ESCAPES.sub("", text)
    text = _without_filler(text)
    if "%" in text:
        # Percent-encoding can hide filler too (a secret's own space written %20).
        text = _without_filler(unquote(text, errors="replace"))
    return text


def _without_filler(text: str) -> str:
    """``text`` without white space, backslashes and invisible characters."""
    if text.isascii():  # the usual text: white space and backslashes only (faster)
        return "".join(text.split()).replace("\\", "")
    return text.translate(_FILLER_CHARS)


def _base64_forms(value: str) -> set[str]:
    """What ``value`` looks like base64-encoded (standard and URL-safe alphabets), alone or
    inside a longer encoded text: at each of the three byte offsets, the characters that
    only its bytes decide."""
    data = value.encode("utf-8")
    forms: set[str] = set()
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + data).decode("ascii")
        middle = encoded[-(-4 * offset // 3) : 4 * (offset + len(data)) // 3]
        forms.update((middle, middle.translate(str.maketrans("+/", "-_"))))
    return forms


class Redactor:
    """Replaces the run's secrets in text.  Built once per run (see the module doc).

    A text is first tested cheaply (:func:`_canonical`, one substring test per secret);
    the exact pattern of a secret is compiled and run only on a text that may hold it.
    """

    def __init__(
        self, found: Iterable[Secret], *, environ: Mapping[str, str] | None = None
    ) -> None:
        self.secrets: tuple[Secret, ...] = ()
        #: Each secret's canonical forms (without any filler; without the escapes kept),
        #: and whether "+" is left out of them and the text.
        self._canon: list[tuple[Secret, str, str, bool]] = []
        self._compiled: dict[Secret, re.Pattern[str]] = {}
        self._shortest = 0
        self._add(found)
        # The per-user state key may be created after the run starts (by the first review
        # that stores a verdict): looked for again until it is found.
        self._environ = environ
        self._state_key_found = environ is None
        self._next_look = 0.0

    def _add(self, found: Iterable[Secret]) -> None:
        given = [s for s in found if s.value.strip() and not s.derived]
        # A secret base64-encoded is the secret: each (long) one's encoded forms too.
        encoded = [
            Secret(f"{s.name} (base64)", form, derived=True)
            for s in given
            if len(s.value.strip()) >= MIN_SECRET_CHARS
            for form in _base64_forms(s.value.strip())
        ]
        every = (*self.secrets, *given, *encoded)
        unique = {(s.value, s.ignore_case): s for s in every}
        #: Longest first: a secret that contains another is named by itself.
        self.secrets = tuple(sorted(unique.values(), key=lambda s: (-len(s.value), s.name)))
        self._canon = []
        for secret in self.secrets:
            forms = []
            for escapes in (True, False):
                canon = _canonical(secret.value, escapes=escapes)
                # quote_plus writes a space as "+": compared without "+" on both sides.
                canon = canon.replace("+", "") if " " in secret.value else canon
                forms.append(canon.lower() if secret.ignore_case else canon)
            self._canon.append((secret, forms[0], forms[1], " " in secret.value))
        self._shortest = min((len(s.value.strip()) for s in self.secrets), default=0)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], allow: Iterable[str] = ()) -> Redactor:
        """The secrets of ``environ`` (see the module doc), and the state key.

        :param allow: the user's ``advreview_env_allow`` globs: not secret.
        """
        found = environment_secrets(environ, allow)
        return cls(found, environ=dict(environ))

    @classmethod
    def for_run(cls, config: pytest.Config, allow: Iterable[str]) -> Redactor:
        """The controller's redactor (from its environment), or on an xdist worker the
        controller's secrets from ``workerinput``."""
        workerinput = getattr(config, "workerinput", None)
        if isinstance(workerinput, dict) and WORKERINPUT_KEY in workerinput:
            data = json.loads(str(workerinput[WORKERINPUT_KEY]))
            return cls(
                (Secret(str(n), str(v), bool(i)) for n, v, i in data), environ=dict(os.environ)
            )
        return cls.from_environ(os.environ, allow)

    def to_wire(self) -> str:
        """The secrets as ``workerinput`` carries them (a pipe no reviewer can read)."""
        self._refresh_state_key()
        given = (s for s in self.secrets if not s.derived)
        return json.dumps([[s.name, s.value, s.ignore_case] for s in given])

    def _refresh_state_key(self) -> None:
        if self._state_key_found or self._environ is None:
            return
        now = time.monotonic()
        if now < self._next_look:
            return  # one look a second: a file read per redacted string is too many
        self._next_look = now + 1.0
        key = _state_key(self._environ)
        if key is not None:
            self._state_key_found = True
            self._add((key,))

    def _candidates(self, text: str) -> list[Secret]:
        """The secrets that may occur in ``text`` (a superset of those that do)."""
        if len(text) < self._shortest:
            return []
        canon = _canonical(text)
        # Without a backslash both forms are the same text.
        canons = (canon, _canonical(text, escapes=False) if "\\" in text else canon)
        forms: dict[tuple[int, bool, bool], str] = {}

        def form(which: int, ignore_case: bool, plus: bool) -> str:
            found = forms.get((which, ignore_case, plus))
            if found is None:
                found = canons[which].replace("+", "") if plus else canons[which]
                found = forms[which, ignore_case, plus] = found.lower() if ignore_case else found
            return found

        return [
            secret
            for secret, value, plain, plus in self._canon
            if value in form(0, secret.ignore_case, plus)
            or plain in form(1, secret.ignore_case, plus)
        ]

    def _exact(self, secret: Secret) -> re.Pattern[str]:
        pattern = self._compiled.get(secret)
        if pattern is None:
            pattern = self._compiled[secret] = _pattern(secret)
        return pattern

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by ``[redacted:NAME]``."""
        self._refresh_state_key()
        if not text or not self.secrets:
            return text
        spans: list[tuple[int, int, str]] = []
        for secret in self._candidates(text):
            found = self._exact(secret).finditer(text)
            spans.extend((m.start(), m.end(), secret.name) for m in found)
        if not spans:
            return text
        spans.sort(key=lambda s: (s[0], -s[1]))
        out: list[str] = []
        position = 0
        for start, end, name in spans:
            if start < position:  # overlaps one already replaced: extend it
                position = max(position, end)
                continue
            out.append(text[position:start])
            out.append(f"[redacted:{name}]")
            position = end
        out.append(text[position:])
        return "".join(out)

    def may_hold_secrets(self, texts: Iterable[str]) -> bool:
        """Whether any of ``texts`` may hold a secret (the cheap test, over all at once)."""
        self._refresh_state_key()
        return bool(self.secrets) and bool(self._candidates("\x00".join(texts)))


_ACTIVE: Redactor | None = None


def install(redactor: Redactor | None) -> None:
    """Make ``redactor`` the one every sink of this process uses (``None``: the default,
    built from ``os.environ`` on first use)."""
    global _ACTIVE
    _ACTIVE = redactor


def _active() -> Redactor:
    global _ACTIVE
    if _ACTIVE is None:  # outside a run (the action's steps): this process's environment
        _ACTIVE = Redactor.from_environ(os.environ)
    return _ACTIVE


def redact(text: str) -> str:
    """The one redaction pass: ``text`` without any of the run's secrets."""
    return _active().redact(text)


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _redact_tree(value: Any) -> Any:
    if isinstance(value, str):
        return show_invisible(redact(value))
    if isinstance(value, dict):
        return {key: _redact_tree(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact_tree(item) for item in value]
    return value


def redact_data(value: Any) -> Any:
    """``value`` (a JSON-like tree) with :func:`redact` and :func:`show_invisible` applied
    to every string in it: what the data outputs (the record, JSON, SARIF, JUnit
    properties) carry.

    One cheap test over all its strings first: a tree without a secret or an invisible
    character (almost every record) is returned as it is.
    """
    texts = list(_strings(value))
    if not _active().may_hold_secrets(texts) and not any(map(_INVISIBLE.search, texts)):
        return value
    return _redact_tree(value)


def redact_model(model: _Model) -> _Model:
    """``model`` with :func:`redact_data` applied to every string field (the same object
    when none changes)."""
    data = model.model_dump(mode="json")
    cleaned = redact_data(data)
    if cleaned is data:
        return model
    return type(model).model_validate(cleaned)


# -- neutralisation ------------------------------------------------------------------------


def _escaped(char: str) -> str:
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _show_match(match: re.Match[str]) -> str:
    return _escaped(match.group(0))


@functools.lru_cache(maxsize=16)
def _controls(keep: str, ascii_only: bool = False) -> re.Pattern[str]:
    """What :func:`escape_controls` escapes; ``ascii_only``: in a text that is ASCII (most
    are), whose search then need not test each character against the invisible ones."""
    top = 0x80 if ascii_only else 0xA0
    unsafe = [chr(c) for c in range(top) if unicodedata.category(chr(c)) == "Cc"]
    unsafe += [] if ascii_only else ["\u2028", "\u2029"]
    chars = "".join(re.escape(c) for c in unsafe if c not in keep and c != "\r")
    # A carriage return that ends a line (CRLF) moves nothing; a lone one returns the
    # cursor (and, for the GitHub runner, starts a new line).
    carriage = "" if "\r" in keep else ("\r(?!\n)" if "\n" in keep else "\r")
    # Invisible characters (bidirectional controls among them) are never kept.
    invisible = "" if ascii_only else _INVISIBLE_CLASS
    return re.compile("|".join(p for p in (f"[{chars}]", invisible, carriage) if p))


def show_invisible(text: str) -> str:
    """``text`` with every invisible character (:data:`INVISIBLE_RANGES`: zero-width,
    soft hyphen, bidirectional controls, ...) shown escaped (``\\u200b``), nothing else
    changed: for outputs whose format escapes control characters itself (JSON, SARIF,
    JUnit XML) but whose readers render these.  Idempotent (an escape is plain ASCII)."""
    return _INVISIBLE.sub(_show_match, text)


def escape_controls(text: str, keep: str = "\n\t") -> str:
    """``text`` with control and invisible characters shown escaped (``\\x1b``,
    ``\\u200b``), ``keep`` left as is (with a newline kept, so is the carriage return of
    a CRLF line end)."""
    return _controls(keep, text.isascii()).sub(_show_match, text)


def _defuse(line: str) -> str:
    # The runner trims leading white space before looking for "::"; it finds "##[" anywhere.
    stripped = line.lstrip()
    if stripped.startswith("::"):
        line = line[: len(line) - len(stripped)] + "\\" + stripped
    return line.replace("##[", "##\\[")


def terminal_text(text: str) -> str:
    """``text`` as it may be printed: redacted, control characters escaped, and no line
    that the GitHub runner would read as a workflow command (see the module doc)."""
    clean = escape_controls(redact(text))
    return "\n".join(_defuse(line) for line in clean.split("\n"))


def document_text(text: str) -> str:
    """A document that is not a log (the markdown report, the pull-request comment):
    redacted, control and invisible characters shown escaped, lines and tabs kept."""
    return escape_controls(redact(text))


#: A GitHub (or GitLab) mention: ``@login`` or ``@org/team``, not part of a word, an
#: address or a path (``a@b``, ``x/@y``), as GitHub recognises them.
_MENTION = re.compile(
    r"(?<![\w`@/.-])@[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}"
    r"(?:/[A-Za-z0-9][A-Za-z0-9_.-]*)?"
)
_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
#: A code span, or a ``<code>`` element this function wrote (so it is idempotent).
_CODE_SPAN = re.compile(r"(`+)(?:.+?)(?<!`)\1(?!`)|<code>.*?</code>")


#: An HTML code element, not a code span: a stray backtick in the text could pair with a
#: span's backtick and leave the mention outside code.
_CODE = r"<code>\g<0></code>"


def _quiet_line(line: str) -> str:
    out: list[str] = []
    at = 0
    for span in _CODE_SPAN.finditer(line):  # a mention inside code notifies nobody
        out.append(_MENTION.sub(_CODE, line[at : span.start()]))
        out.append(span.group(0))
        at = span.end()
    out.append(_MENTION.sub(_CODE, line[at:]))
    return "".join(out)


def quiet_mentions(text: str) -> str:
    """``text`` for a pull-request comment, with every mention outside code made code
    (``<code>@name</code>``), so reviewer-written text cannot notify a user or a team.

    Fenced code blocks and code spans are left as they are: GitHub finds no mention
    there, and a suggestion's code (``@decorator``) must stay verbatim.  Idempotent.
    """
    lines = text.split("\n")
    fence: str | None = None
    for n, line in enumerate(lines):
        opened = _FENCE_LINE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
        elif fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
        else:
            lines[n] = _quiet_line(line)
    return "\n".join(lines)


#: A code span (a ``<code>`` element of the text is HTML like any other).
_BACKTICK_SPAN = re.compile(r"(`+)(?:.+?)(?<!`)\1(?!`)")


def _inert(text: str) -> str:
    return text.replace("<", "&lt;").replace("![", "!\\[")


def inert_html(text: str, *, strict: bool = False) -> str:
    """``text`` for a pull-request comment with no HTML GitHub would render (a
    ``<details>`` could hide a finding behind a summary of its own, an ``<img>`` loads a
    remote image) and no image (``![x](url)``): ``<`` is ``&lt;`` and ``![`` is ``!\\[``.

    Code spans are left as they are (GitHub renders no HTML there, and ``&lt;`` would
    show as such).  This is the reading of one line; a text placed inside a larger body
    can be read otherwise there, so the body is checked as GitHub parses it
    (:func:`~.rendered.html_and_images`) and built again with ``strict`` (code spans
    escaped too) should HTML remain.
    """
    if strict:
        return _inert(text)
    out: list[str] = []
    for line in text.split("\n"):
        at, parts = 0, []
        for span in _BACKTICK_SPAN.finditer(line):
            parts += [_inert(line[at : span.start()]), span.group(0)]
            at = span.end()
        out.append("".join([*parts, _inert(line[at:])]))
    return "\n".join(out)


def one_line(text: str) -> str:
    """:func:`terminal_text` on one line: line breaks and tabs shown escaped too."""
    return _defuse(escape_controls(redact(text), keep=""))


def annotation_data(text: str) -> str:
    """A workflow command's message: redacted, controls escaped, then GitHub's escaping
    (``%`` → ``%25``, CR → ``%0D``, LF → ``%0A``), so it cannot end its line."""
    clean = escape_controls(redact(text), keep="\n\r\t")
    return clean.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def annotation_property(text: str) -> str:
    """A workflow command's property value: :func:`annotation_data` plus ``:`` → ``%3A``
    and ``,`` → ``%2C``, so it cannot end the property list early."""
    return annotation_data(text).replace(":", "%3A").replace(",", "%2C")


def unsafe_name(name: str) -> bool:
    """Whether a file name has a character that would forge a log or terminal line."""
    return "##[" in name or _controls("").search(name) is not None


def shown(name: str) -> str:
    """``name`` for a message: every control character visibly escaped, quoted."""
    return "'" + escape_controls(name, keep="").replace("##[", "##\\[") + "'"


# -- the run's log guard ---------------------------------------------------------------------


class LogGuard:
    """The controller's plugin that keeps redaction and the log the same across the run.

    * gives each xdist worker the controller's secrets (``workerinput``);
    * under GitHub Actions, wraps the terminal summary (failure texts, warnings, ``-rA``
      sections, the review summary) in ``::stop-commands::TOKEN`` … ``::TOKEN::`` with a
      random token of this run, which no reviewer can know.
    """

    def __init__(self, redactor: Redactor, environ: Mapping[str, str]) -> None:
        self.redactor = redactor
        self.token = secrets.token_hex(16)
        self.active = environ.get("GITHUB_ACTIONS", "").strip().lower() == "true"

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """The controller's secrets for a worker (its environment may have changed)."""
        node.workerinput[WORKERINPUT_KEY] = self.redactor.to_wire()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(
        self, terminalreporter: pytest.TerminalReporter
    ) -> Any:  # a generator (pluggy's new-style wrapper)
        """Pause workflow commands while pytest and the plugin print the summary."""
        if not self.active:
            return (yield)
        _line_start(terminalreporter, f"::stop-commands::{self.token}")
        try:
            return (yield)
        finally:
            _line_start(terminalreporter, f"::{self.token}::")


def _line_start(terminal: pytest.TerminalReporter, text: str) -> None:
    """Print ``text`` at the start of its own line (workflow commands must be)."""
    # Under xdist the progress line ("....  [100%]") is left open and write_line's
    # ensure_newline() does not know it.
    if terminal._tw.width_of_current_line:
        terminal._tw.line()
    terminal.write_line(text)
