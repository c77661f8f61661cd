"""Persisted review state per target, so rounds span CI runs (design.md §2 "Rounds in CI").

One JSON file per target lives under pytest's cache directory::

    .pytest_cache/d/advreview/state/<sha256(key)[:16]>.json

Why not ``config.cache.get`` / ``config.cache.set``: ``Cache.get`` turns a corrupt value
into the default without a word (a silent fresh start, or worse a silent pass if the
caller trusts the default), and ``Cache.set`` writes the file in place, so a reader on
another xdist worker or a killed run can see half a file.  The store therefore uses the
cache's directory API (``config.cache.mkdir``) and does its own reads and atomic writes
(temporary file in the same directory + ``os.replace``).  ``--cache-clear`` still clears
it, because pytest removes ``d/`` together with ``v/``.

Every read or write problem is a :class:`StateWarning` and a fresh review, never a crash
and never a silent cached pass.  Without the cacheprovider (``-p no:cacheprovider``) the
store is a no-op that warns once.

:func:`decide_next` turns the stored state into what this run does with a target, and
:func:`plan_diff` renders the "Applied" section of a plan re-review.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Final, Literal

import pytest
from pydantic import Field, ValidationError

from .constants import CACHE_PREFIX
from .models import (
    Decision,
    Review,
    ReviewStatus,
    RoundRecord,
    Severity,
    Verdict,
    WireModel,
)

__all__ = [
    "STATE_SCHEMA",
    "NextStep",
    "ReviewState",
    "StateStore",
    "StateWarning",
    "decide_next",
    "plan_diff",
    "state_key",
]

#: Version of the on-disk layout of :class:`ReviewState`; bump it on incompatible changes
#: so an entry written by another plugin version is discarded with a warning.
STATE_SCHEMA: Final = 1

#: ``config.cache.mkdir`` takes a single name; the store keeps its files below it.
_CACHE_DIR_NAME = CACHE_PREFIX.strip("/")
_STATE_SUBDIR = "state"

_NO_CACHE_WARNED = pytest.StashKey[bool]()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class StateWarning(pytest.PytestWarning):
    """Stored review state could not be read or written; the review starts afresh."""


class ReviewState(WireModel):
    """Everything remembered about one target between runs."""

    schema_version: Literal[1] = STATE_SCHEMA
    #: ``docs/plans/x.md`` or ``code-review``.
    key: str
    #: :meth:`Settings.settings_hash` (plus the prompt version) the rounds were made with.
    settings_hash: str
    #: Every counted round, in order, over all runs since the last fresh start.
    rounds: tuple[RoundRecord, ...] = ()
    #: The reviewer thread to resume.
    session_id: str | None = None
    #: Content hash of the text last reviewed (plan bytes, or diff + plan).
    last_content_hash: str | None = None
    #: The text last reviewed, so the next round's "Applied" section can show a diff.
    last_content: str | None = None
    #: Final status of the last run that reviewed this target.
    status: ReviewStatus | None = None
    #: When the state was written (ISO 8601, UTC).
    updated_at: str = Field(default_factory=_now)

    @property
    def last_round(self) -> RoundRecord | None:
        """The last counted round, or ``None`` before the first."""
        return self.rounds[-1] if self.rounds else None

    @property
    def rounds_used(self) -> int:
        """Number of the last counted round (numbers continue across runs); 0 without any."""
        last = self.last_round
        return last.number if last is not None else 0

    @property
    def last_review(self) -> Review | None:
        """The review of the last round that has one."""
        for record in reversed(self.rounds):
            if record.review is not None:
                return record.review
        return None

    @property
    def last_verdict(self) -> Verdict | None:
        """The verdict of :attr:`last_review`."""
        review = self.last_review
        return review.verdict if review is not None else None

    @property
    def max_severity(self) -> Severity | None:
        """The worst severity among the findings of :attr:`last_review`."""
        review = self.last_review
        return review.max_severity if review is not None else None

    @property
    def reviewed_hash(self) -> str | None:
        """Content hash the last verdict is about: the last round's, else ``last_content_hash``.

        The round's own hash wins because a run that changed the content but counted no
        round (aborted, NOT VERIFIED) must not make the old verdict look current.
        """
        last = self.last_round
        if last is not None and last.content_hash is not None:
            return last.content_hash
        return self.last_content_hash

    @property
    def decisions_sent(self) -> tuple[Decision, ...]:
        """Every decision sent with any round, first occurrence first."""
        seen: dict[Decision, None] = {}
        for record in self.rounds:
            for decision in record.decisions:
                seen.setdefault(decision, None)
        return tuple(seen)

    @property
    def known_finding_ids(self) -> frozenset[str]:
        """Ids of every finding of every stored round (what a decision may refer to)."""
        return frozenset(
            f.id
            for record in self.rounds
            if record.review is not None
            for f in record.review.findings
        )


def _entry_name(key: str) -> str:
    return f"{state_key(key)}.json"


def state_key(key: str) -> str:
    """The file stem of ``key``'s entry: any target path maps to a safe, fixed-length name."""
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:16]


class StateStore:
    """Reads and writes :class:`ReviewState` entries in pytest's cache directory.

    :param config: the pytest config; ``config.cache`` is absent when the cacheprovider
        plugin is disabled, and the store then does nothing (one warning per config).
    """

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self._cache: pytest.Cache | None = getattr(config, "cache", None)
        self._dir: Path | None = None
        #: Entry names present when the directory was first listed, plus those saved
        #: since: a target without an entry (every target of a first run) then costs no
        #: ``open`` (collection asks for all of them, 5,000 plans in one repository).
        self._present: set[str] | None = None

    @property
    def enabled(self) -> bool:
        """False without the cacheprovider: nothing is stored, every load is ``None``."""
        return self._cache is not None

    def path_for(self, key: str) -> Path | None:
        """Where ``key``'s entry lives (the directory is created), or ``None`` when off."""
        directory = self._directory()
        return directory / _entry_name(key) if directory is not None else None

    def load(self, key: str) -> ReviewState | None:
        """The stored state of ``key``, or ``None`` when there is none or it is unusable.

        A missing entry is silent; an unreadable, corrupt, schema-invalid or mismatched
        entry warns (:class:`StateWarning`) and reads as ``None``, so the target gets a
        fresh review.
        """
        directory = self._directory()
        if directory is None:
            return None
        name = _entry_name(key)
        listing = self._listing(directory)
        if listing is not None and name not in listing:
            return None
        path = directory / name
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            self._warn(key, path, f"it could not be read ({_oserror(exc)})")
            return None
        try:
            data = json.loads(text)
        except ValueError as exc:
            self._warn(key, path, f"it is not valid JSON ({exc})")
            return None
        if isinstance(data, dict) and data.get("schema_version") != STATE_SCHEMA:
            self._warn(
                key,
                path,
                f"it has schema version {data.get('schema_version')!r}, this plugin "
                f"reads version {STATE_SCHEMA} (written by another pytest-advreview version)",
            )
            return None
        try:
            state = ReviewState.model_validate(data)
        except ValidationError as exc:
            self._warn(key, path, f"it does not match the state schema ({_first_error(exc)})")
            return None
        if state.key != key:
            self._warn(key, path, f"it belongs to another target ({state.key!r})")
            return None
        return state

    def save(self, state: ReviewState) -> bool:
        """Write ``state`` atomically; returns False (after a warning) when it could not.

        The JSON goes to a temporary file in the same directory and is renamed over the
        entry, so a concurrent reader (another xdist worker, a second pytest) sees the
        old or the new entry, never a torn one.
        """
        path = self.path_for(state.key)
        if path is None:
            return False
        data = state.model_dump_json(indent=2)
        tmp: str | None = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".tmp", dir=path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
            tmp = None
            listing = self._listing(path.parent)
            if listing is not None:
                listing.add(path.name)
        except OSError as exc:
            self._warn(state.key, path, f"it could not be written ({_oserror(exc)})", verb="saving")
            return False
        finally:
            if tmp is not None:
                _unlink_quietly(Path(tmp))
        return True

    def clear(self, key: str) -> None:
        """Delete ``key``'s entry (nothing happens when there is none)."""
        path = self.path_for(key)
        if path is None:
            return
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            self._warn(key, path, f"it could not be deleted ({_oserror(exc)})", verb="clearing")
            return
        if self._present is not None:
            self._present.discard(path.name)

    # -- internals -------------------------------------------------------------------------

    def _listing(self, directory: Path) -> set[str] | None:
        """Names in the state directory; ``None`` when it cannot be listed (then each
        load tries its own file and reports what it finds)."""
        if self._present is None:
            try:
                self._present = {entry.name for entry in os.scandir(directory)}
            except OSError:
                return None
        return self._present

    def _directory(self) -> Path | None:
        if self._cache is None:
            self._warn_no_cache()
            return None
        if self._dir is None:
            try:
                directory = self._cache.mkdir(_CACHE_DIR_NAME) / _STATE_SUBDIR
                directory.mkdir(exist_ok=True)
            except OSError as exc:
                # Not remembered: a later call may succeed (a transient error), and each
                # failing call must say that this target's state is not available.
                warnings.warn(
                    StateWarning(
                        "pytest-advreview: the review state directory in the pytest cache "
                        f"could not be created ({_oserror(exc)}); reviews start afresh and "
                        "nothing is stored. Fix: make the cache_dir writable or point the "
                        "cache_dir ini option somewhere writable"
                    ),
                    stacklevel=4,
                )
                return None
            self._dir = directory
        return self._dir

    def _warn_no_cache(self) -> None:
        if self._config.stash.get(_NO_CACHE_WARNED, False):
            return
        self._config.stash[_NO_CACHE_WARNED] = True
        warnings.warn(
            StateWarning(
                "pytest-advreview: the cacheprovider plugin is disabled (-p no:cacheprovider), "
                "so rounds across runs are off: every review starts afresh and no verdict is "
                "cached. Fix: drop -p no:cacheprovider to keep review state between runs"
            ),
            stacklevel=4,
        )

    def _warn(self, key: str, path: Path, problem: str, *, verb: str = "loading") -> None:
        if verb == "loading":
            # The next save overwrites the entry, so the problem heals itself; say so.
            tail = (
                "the target is reviewed afresh and its state rewritten. If this repeats, "
                "delete the file or run with --cache-clear"
            )
        else:
            tail = (
                "this run's rounds may be reviewed again next run. Fix: make the pytest "
                "cache directory (cache_dir ini option) writable, or delete the path"
            )
        warnings.warn(
            StateWarning(
                f"pytest-advreview: {verb} the review state of {key!r} failed: {path}: "
                f"{problem}; {tail}"
            ),
            stacklevel=3,
        )


def _oserror(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"]) or "top level"
    more = f" and {len(errors) - 1} more" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"


def _unlink_quietly(path: Path) -> None:
    # The write already failed and warned; a stray temp file is harmless.
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)


# -- the "Applied" diff ----------------------------------------------------------------------


def plan_diff(
    old: str, new: str, *, path: str, max_lines: int = 200, max_chars: int = 20_000
) -> str:
    """A unified diff of a plan from ``old`` to ``new``, for the re-review's "Applied" section.

    Long diffs are cut after ``max_lines`` lines or ``max_chars`` characters, whichever
    comes first, at a line boundary; a last line says how many lines were left out and
    how many lines were added and removed in total, and that the full file is at
    ``path``.  Returns ``""`` when the texts are equal.

    :param old: the text the reviewer saw last.
    :param new: the current text.
    :param path: repo-relative path, used in the ``---``/``+++`` headers.
    :param max_lines: most diff lines shown (at least 1).
    :param max_chars: most characters shown (at least 1).
    """
    if max_lines < 1 or max_chars < 1:
        raise ValueError(
            f"max_lines and max_chars must be at least 1 (got {max_lines}, {max_chars})"
        )
    if old == new:
        return ""
    lines: list[str] = []
    for line in difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
    ):
        if line.endswith("\n"):
            lines.append(line[:-1])
        else:
            # The last line of a file without a final newline: say so like git does, or
            # a diff that only adds the newline would look empty.
            lines.append(line)
            lines.append("\\ No newline at end of file")
    added = sum(1 for ln in lines[2:] if ln.startswith("+"))
    removed = sum(1 for ln in lines[2:] if ln.startswith("-"))
    shown: list[str] = []
    size = 0
    for line in lines:
        if len(shown) >= max_lines or size + len(line) + 1 > max_chars:
            break
        shown.append(line)
        size += len(line) + 1
    if len(shown) < len(lines):
        cut = len(lines) - len(shown)
        shown.append(
            f"[diff truncated: {cut} of {len(lines)} lines not shown; "
            f"+{added} -{removed} lines in total; read {path} for the full text]"
        )
    return "\n".join(shown)


# -- what to do next ---------------------------------------------------------------------------

NextAction = Literal["review", "cached_approved", "cached_revise", "continue", "max_rounds"]


class NextStep(WireModel):
    """What this run does with a target, decided from its stored state."""

    #: ``review``: initial review, no history; ``cached_approved`` / ``cached_revise``:
    #: the stored verdict stands, zero reviewer calls; ``continue``: next round with
    #: ``history``; ``max_rounds``: every round is spent and the verdict is still REVISE.
    action: NextAction
    #: One sentence for the report: why this action.
    reason: str
    #: Rounds to pass to ``run_loop`` as ``history`` (empty for ``review``).
    history: tuple[RoundRecord, ...] = ()
    #: Decisions not sent before, for the re-review prompt (``continue`` only).
    decisions: tuple[Decision, ...] = ()
    #: The stored review the cached and max-rounds outcomes are judged on.
    review: Review | None = None


def decide_next(
    state: ReviewState | None,
    *,
    content_hash: str,
    settings_hash: str,
    decisions: Sequence[Decision],
    max_rounds: int,
    fresh: bool,
) -> NextStep:
    """Decide whether a target is reviewed, continued, or judged from its stored state.

    The rules of design.md §2 "Rounds in CI", in order:

    1. ``fresh``, no state, changed settings, or no counted round → ``review``;
    2. last verdict APPROVED: same content → ``cached_approved``; changed content →
       ``continue`` on the thread while rounds remain, else ``review`` (an approved
       plan that is edited later is not stuck at "max rounds");
    3. last verdict REVISE: rounds used >= ``max_rounds`` → ``max_rounds`` (even when the
       content changed, until ``--advreview-fresh``); same content and no new decision
       → ``cached_revise``; otherwise → ``continue``.

    A decision is new when the same (finding, action, reason) was never sent; editing a
    reason therefore sends it again.

    :param state: the stored state of the target, ``None`` when there is none.
    :param content_hash: hash of the content to review now.
    :param settings_hash: hash of the settings of this run.
    :param decisions: this target's decisions from the decisions file.
    :param max_rounds: the round limit over all runs.
    :param fresh: ``--advreview-fresh``: ignore the state.
    """
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be at least 1, got {max_rounds}")
    if fresh:
        return NextStep(action="review", reason="--advreview-fresh: stored state ignored")
    if state is None:
        return NextStep(action="review", reason="no stored state: initial review")
    if state.settings_hash != settings_hash:
        return NextStep(
            action="review",
            reason=(
                "the review settings changed since the stored rounds (model, reasoning, "
                "sandbox, output format or prompt version): starting over"
            ),
        )
    review = state.last_review
    verdict = review.verdict if review is not None else None
    if not state.rounds or verdict is None:
        return NextStep(action="review", reason="no counted round stored: initial review")

    same = state.reviewed_hash == content_hash
    used = state.rounds_used
    sent = set(state.decisions_sent)
    new = tuple(dict.fromkeys(d for d in decisions if d not in sent))

    if verdict is Verdict.APPROVED:
        if same:
            return NextStep(
                action="cached_approved",
                reason=f"unchanged since round {used} was APPROVED",
                review=review,
            )
        if used < max_rounds:
            return NextStep(
                action="continue",
                reason=f"changed since round {used} was APPROVED: re-review",
                history=state.rounds,
                decisions=new,
            )
        return NextStep(
            action="review",
            reason=(
                f"changed since round {used} was APPROVED and all {max_rounds} rounds are "
                "spent: starting a new review"
            ),
        )

    if used >= max_rounds:
        return NextStep(
            action="max_rounds",
            reason=(
                f"{used} of {max_rounds} rounds used and the last verdict is REVISE; "
                "run with --advreview-fresh to start over"
            ),
            review=review,
        )
    if same and not new:
        return NextStep(
            action="cached_revise",
            reason=(
                f"unchanged since round {used} (REVISE) and no new decisions; edit the "
                "target or add decisions to the decisions file for another round"
            ),
            review=review,
        )
    why = "changed content" if not same else ""
    if new:
        count = f"{len(new)} new decision{'s' if len(new) != 1 else ''}"
        why = f"{why} and {count}" if why else count
    return NextStep(
        action="continue",
        reason=f"{why} since round {used} (REVISE): round {used + 1}",
        history=state.rounds,
        decisions=new,
        review=review,
    )
