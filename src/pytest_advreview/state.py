"""Persisted review state per target, so rounds span CI runs.

The rules for users: docs/rounds.md, "Rounds across runs (CI)".

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

The cache folder is inside the repository, where a reviewer, an earlier CI step of a pull
request or a restored CI cache can write, so an entry is trusted only when the plugin
wrote it: each carries an HMAC under the state key (:mod:`.statekey`), and an entry that
does not verify is ignored with a warning.  Each entry also carries a *run tag*, an HMAC
under a secret of this run that only the run's own processes hold (the controller hands it
to the xdist workers): while a reviewer runs, :meth:`StateStore.snapshot` and
:meth:`StateStore.foreign_changes` tell the entries other workers of this run wrote from
anything else that changed, which is that review's workspace mutation (and is discarded).

:func:`decide_next` turns the stored state into what this run does with a target.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Final, Literal

import pytest
from pydantic import Field, ValidationError

from .atomic import write_atomic
from .cachekey import CacheKey
from .constants import CACHE_PREFIX
from .models import (
    Decision,
    OpenFinding,
    Review,
    ReviewedChange,
    ReviewStatus,
    RoundRecord,
    Severity,
    Verdict,
    WireModel,
)
from .statekey import (
    STATE_KEY_ENV,
    StateKey,
    StateKeyError,
    StateKeyUsageError,
    load_state_key,
)
from .validation import first_error

__all__ = [
    "STATE_SCHEMA",
    "NextStep",
    "ReviewState",
    "Spend",
    "StateStore",
    "StateWarning",
    "StoredEntry",
    "decide_next",
    "state_key",
]

#: Version of the on-disk layout of :class:`StoredEntry`; bump it on incompatible changes
#: so an entry written by another plugin version is discarded with a warning.
STATE_SCHEMA: Final = 2

#: ``config.cache.mkdir`` takes a single name; the store keeps its files below it.
_CACHE_DIR_NAME = CACHE_PREFIX.strip("/")
_STATE_SUBDIR = "state"

_NO_CACHE_WARNED = pytest.StashKey[bool]()


class StateWarning(pytest.PytestWarning):
    """Stored review state could not be read or written; the review starts afresh."""


class Spend(WireModel):
    """What the reviews of one target cost in one run (``advreview_budget_scope =
    pull-request`` adds them up over the runs): every dispatch, retries, samples and the
    lead's turns included."""

    #: :attr:`StateStore.run_id` of the run that spent it.
    run: str
    tokens: int = 0
    #: Money under that run's ``advreview_prices`` (``None``: none were set).
    cost: float | None = None


class ReviewState(WireModel):
    """Everything remembered about one target between runs (inside a state entry file)."""

    #: ``docs/plans/x.md`` or ``code-review``.
    key: str
    #: :func:`~.cachekey.reviewer_identity` of the reviewer the rounds were made with.
    reviewer: dict[str, str]
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
    #: Findings the lead left to a person that nobody has decided yet: every run of the
    #: target fails while one is open, whatever the stored or the new verdict says.
    operator_open: tuple[OpenFinding, ...] = ()
    #: The code change the rounds reviewed (code targets; ``None`` before it was kept).
    change: ReviewedChange | None = None
    #: What reviewing the target cost, per run (kept across fresh starts: a new thread
    #: does not make the tokens already spent free).
    spend: tuple[Spend, ...] = ()
    #: When the state was written (ISO 8601, UTC).
    updated_at: str = Field(
        default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds")
    )

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
        return tuple(dict.fromkeys(d for record in self.rounds for d in record.decisions))

    @property
    def known_finding_ids(self) -> frozenset[str]:
        """Ids of every finding of every stored round and of every finding still open for
        the operator (what a decision may refer to)."""
        return frozenset(
            f.id
            for record in self.rounds
            if record.review is not None
            for f in record.review.findings
        ) | {o.finding.id for o in self.operator_open}


def state_key(key: str) -> str:
    """The file stem of ``key``'s entry: any target path maps to a safe, fixed-length name."""
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:16]


class StoredEntry(WireModel):
    """One entry file on disk: the state, its MAC under the state key and this run's tag."""

    schema_version: Literal[2] = STATE_SCHEMA
    #: HMAC-SHA256 of :func:`_canonical` of ``state`` under the state key.
    mac: str
    #: HMAC of ``mac`` under the secret of the run that wrote the entry.
    run_tag: str
    state: ReviewState


def _canonical(state_data: object) -> bytes:
    """The bytes an entry's MAC covers: the state as compact, key-sorted, ASCII JSON.

    Computed from the parsed JSON on both sides, so whitespace and key order in the file
    do not matter, and every value does.
    """
    text = json.dumps(state_data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return text.encode("ascii")


def _key_fingerprint(path: Path) -> str:
    """The key file by what it holds, not by its inode times.

    Another process creating the key (xdist workers race to make it: a temporary file
    hard-linked into place, then unlinked) changes the file's ctime after this process
    has read it, with the same key inside; a reviewer that writes another key, a link
    or another mode still shows.
    """
    try:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            return f"link:{os.readlink(path)}"
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable:{exc.errno}"
    return f"key:{info.st_ino}:{stat.S_IMODE(info.st_mode):o}:{info.st_uid}:{digest}"


#: Pseudo names of :meth:`StateStore.snapshot` for the folder itself and the key file.
_DIR_ENTRY = "<state folder>"
_KEY_ENTRY = "<state key>"


def _fingerprint(path: Path | os.DirEntry[str]) -> str:
    """What changes whenever a file is written, replaced or removed (no read needed).

    The inode change time cannot be set from user space, so a rewrite that restores size
    and modification time still shows.  A directory entry from ``os.scandir`` saves
    building its path.
    """
    try:
        info = path.stat(follow_symlinks=False) if isinstance(path, os.DirEntry) else path.lstat()
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable:{exc.errno}"
    kind = "link" if stat.S_ISLNK(info.st_mode) else "file"
    return f"{kind}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"


class StateStore:
    """Reads and writes :class:`ReviewState` entries in pytest's cache directory.

    :param config: the pytest config; ``config.cache`` is absent when the cacheprovider
        plugin is disabled, and the store then does nothing (one warning per config).
    :param run_secret: the secret of this run's tags (the controller's, on an xdist
        worker); a new one when omitted.
    :raises pytest.UsageError: ``ADVREVIEW_STATE_KEY`` is set to an unusable value.
    """

    def __init__(self, config: pytest.Config, *, run_secret: bytes | None = None) -> None:
        self._config = config
        self._cache: pytest.Cache | None = getattr(config, "cache", None)
        self._dir: Path | None = None
        #: Entry names present when the directory was first listed, plus those saved
        #: since: a target without an entry (every target of a first run) then costs no
        #: ``open`` (collection asks for all of them, 5,000 plans in one repository).
        self._present: set[str] | None = None
        self._run_secret = run_secret if run_secret is not None else secrets.token_bytes(32)
        #: Loaded on first use (:func:`~.statekey.load_state_key`).
        self._key: StateKey | None = None
        #: The last trusted state (read or saved) of each target with findings open for
        #: the operator: when its entry must go (a reviewer touched it, a late mutation),
        #: those findings are written back, so deleting an entry never closes them.
        self._open: dict[str, ReviewState] = {}
        #: Entry files read so far, and whether the others were searched for open findings
        #: (once, before the first reviewer of this process runs: see :meth:`snapshot`).
        self._read_names: set[str] = set()
        self._searched = False
        self._key_problem: str | None = None
        if self._cache is not None and os.environ.get(STATE_KEY_ENV, "").strip():
            # A bad ADVREVIEW_STATE_KEY is the user's to fix: a usage error before any
            # collection, not an error in the middle of it.
            self.state_key()

    def path_for(self, key: str) -> Path | None:
        """Where ``key``'s entry lives (the directory is created), or ``None`` when off."""
        directory = self._directory()
        return directory / f"{state_key(key)}.json" if directory is not None else None

    def state_key(self) -> StateKey | None:
        """The key entries are authenticated with; ``None`` (after one warning) without one.

        :raises pytest.UsageError: ``ADVREVIEW_STATE_KEY`` is set to an unusable value.
        """
        if self._key is None and self._key_problem is None:
            try:
                self._key = load_state_key()
            except StateKeyUsageError as exc:
                raise pytest.UsageError(str(exc)) from None
            except StateKeyError as exc:
                self._key_problem = str(exc)
                warnings.warn(
                    StateWarning(
                        f"pytest-advreview: {exc}. Until then no stored verdict can be "
                        "checked, so every target is reviewed afresh and nothing is stored"
                    ),
                    stacklevel=3,
                )
        return self._key

    def read(self, key: str) -> tuple[ReviewState | None, str | None]:
        """The stored state of ``key`` and, when it is unusable, why (no warning).

        :returns: ``(state, None)``; ``(None, None)`` when there is no entry (or no
            store); ``(None, problem)`` for an entry that is unreadable, corrupt, of
            another schema or target, or not written by this plugin under this key.
        """
        directory = self._directory()
        if directory is None:
            return None, None
        listing = self._listing(directory)
        if listing is not None and not listing:
            return None, None  # an empty store (a first run): no name to hash per target
        name = f"{state_key(key)}.json"
        if listing is not None and name not in listing:
            return None, None
        path = directory / name
        self._read_names.add(name)

        def unusable(problem: str, tail: str | None = None) -> tuple[None, str]:
            return None, self._problem(key, path, problem, tail=tail)

        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None, None
        except (OSError, UnicodeDecodeError) as exc:
            return unusable(f"it could not be read ({_oserror(exc)})")
        try:
            data = json.loads(text)
        except ValueError as exc:
            return unusable(f"it is not valid JSON ({exc})")
        if not isinstance(data, dict):
            return unusable("it does not match the state schema (top level: not a JSON object)")
        if data.get("schema_version") != STATE_SCHEMA:
            return unusable(
                f"it has schema version {data.get('schema_version')!r}, this plugin "
                f"reads version {STATE_SCHEMA} (written by another pytest-advreview version)"
            )
        mac_key = self.state_key()
        if mac_key is None:
            return None, None  # warned once already: nothing can be checked
        if not mac_key.verify(_canonical(data.get("state")), data.get("mac")):
            return unusable(
                "it was not written by pytest-advreview under this state key "
                f"({mac_key.where}): a forged or copied entry, or one written with another "
                "key (a CI job with another ADVREVIEW_STATE_KEY, another user's machine)",
                tail=(
                    "it is ignored and the target is reviewed again. If the key changed on "
                    "purpose this warning goes away after this run; otherwise find out who "
                    "wrote the file"
                ),
            )
        try:
            entry = StoredEntry.model_validate(data)
        except ValidationError as exc:
            problem = first_error(exc, "top level", more=True)
            return unusable(f"it does not match the state schema ({problem})")
        if entry.state.key != key:
            return unusable(f"it belongs to another target ({entry.state.key!r})")
        self._remember(entry.state)
        return entry.state, None

    def save(self, state: ReviewState) -> bool:
        """Write ``state`` atomically; returns False (after a warning) when it could not.

        The JSON goes to a temporary file in the same directory and is renamed over the
        entry, so a concurrent reader (another xdist worker, a second pytest) sees the
        old or the new entry, never a torn one.
        """
        path = self.path_for(state.key)
        if path is None:
            return False
        state_key = self.state_key()
        if state_key is None:
            return False  # an entry nobody can check would be reviewed again anyway
        state_data = state.model_dump(mode="json")
        mac = state_key.mac(_canonical(state_data))
        envelope = {
            "schema_version": STATE_SCHEMA,
            "mac": mac,
            "run_tag": self._run_tag(mac),
            "state": state_data,
        }
        try:
            write_atomic(path, json.dumps(envelope, indent=2, ensure_ascii=True))
            listing = self._listing(path.parent)
            if listing is not None:
                listing.add(path.name)
        except OSError as exc:
            self._warn(state.key, path, f"it could not be written ({_oserror(exc)})", verb="saving")
            return False
        self._remember(state)
        return True

    def clear(self, key: str) -> None:
        """Drop ``key``'s stored verdict (nothing happens when there is none).

        Findings open for the operator survive: the entry is rewritten with them alone.
        """
        path = self.path_for(key)
        if path is None:
            return
        problem = self._delete(path)
        if problem is not None:
            self._warn(key, path, f"it could not be deleted ({problem})", verb="clearing")
        self._restore_open(key)

    @property
    def run_id(self) -> str:
        """This run's name in :class:`Spend` records (every xdist worker has the same)."""
        return hashlib.sha256(b"run\0" + self._run_secret).hexdigest()[:16]

    def spent(self) -> tuple[int, float]:
        """Tokens and money every other run spent on the targets of this store.

        Only entries that verify under the state key count (the same trust as a stored
        verdict); an entry that does not is warned about by the item that reads it.
        """
        directory = self._directory()
        key = self.state_key()
        listing = self._listing(directory) if directory is not None else None
        tokens, cost = 0, 0.0
        if directory is None or key is None or not listing:
            return tokens, cost
        for name in sorted(listing):
            if not name.endswith(".json") or name.startswith("."):
                continue
            entry = _verified(_read_json(directory / name), key)
            for spend in entry.state.spend if entry is not None else ():
                if spend.run != self.run_id:
                    tokens += spend.tokens
                    cost += spend.cost or 0.0
        return tokens, cost

    def open_states(self) -> dict[str, ReviewState]:
        """Every trusted entry with findings open for the operator, by target."""
        directory = self._directory()
        if directory is not None:
            self._search_open(directory)
        return dict(self._open)

    def _search_open(self, directory: Path) -> None:
        """Learn the open findings of every entry this process has not read, once.

        A reviewer may delete the entry of a target this run never collected; its open
        findings can be written back only if they were known before that reviewer ran.
        Entries without open findings cost one JSON parse, no check.
        """
        if self._searched:
            return
        self._searched = True
        key = self.state_key()
        listing = self._listing(directory)
        if key is None or not listing:
            return
        for name in sorted(listing - self._read_names):
            if not name.endswith(".json") or name.startswith("."):
                continue
            data = _read_json(directory / name)
            state = data.get("state") if isinstance(data, dict) else None
            if not isinstance(state, dict) or not state.get("operator_open"):
                continue
            entry = _verified(data, key)  # not trusted: the item that reads it warns
            if entry is not None and f"{state_key(entry.state.key)}.json" == name:
                self._remember(entry.state)

    def _remember(self, state: ReviewState) -> None:
        if state.operator_open:
            self._open[state.key] = state
        else:
            self._open.pop(state.key, None)

    def _restore_open(self, key: str) -> None:
        """Write back the findings open for the operator of ``key``, without its verdict.

        What goes is the verdict a reviewer may have touched; a question put to a person
        is not the reviewer's to withdraw, and an entry that vanished must not close it.
        """
        known = self._open.get(key)
        if known is not None:
            self.save(
                ReviewState(key=key, reviewer=known.reviewer, operator_open=known.operator_open)
            )

    def _delete(self, path: Path) -> str | None:
        """Delete an entry file; why it could not be deleted, ``None`` when it is gone."""
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            return _oserror(exc)
        if self._present is not None:
            self._present.discard(path.name)
        return None

    # -- watching the store while a reviewer runs ----------------------------------------

    def snapshot(self) -> dict[str, str]:
        """Path -> fingerprint of every entry, the folder and the per-user key file.

        Stats only (no reads), so a review of one plan among thousands stays cheap.
        Empty when the store is off.
        """
        directory = self._directory()
        if directory is None:
            return {}
        self._search_open(directory)
        try:
            # The folder's inode only: its times change with every entry saved.
            found = {_DIR_ENTRY: f"dir:{directory.lstat().st_ino}"}
        except OSError as exc:
            found = {_DIR_ENTRY: f"unreadable:{exc.errno}"}
        key = self.state_key()
        if key is not None and key.source == "file":
            found[_KEY_ENTRY] = _key_fingerprint(Path(key.where))
        prefix = os.path.join(directory, "")
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    name = entry.name
                    if name.endswith(".json") and not name.startswith("."):
                        found[prefix + name] = _fingerprint(entry)
        except OSError as exc:
            return {**found, _DIR_ENTRY: f"unlistable:{exc.errno}"}
        return found

    def foreign_changes(self, before: dict[str, str], after: dict[str, str]) -> list[str]:
        """What changed from ``before`` to ``after`` that this run's plugin did not write.

        An entry written by this run (any xdist worker) carries a valid run tag and is
        not reported; an entry created, changed or removed by anyone else is, and so is a
        replaced state folder or key file.  Returns paths, sorted.
        """
        changed: list[str] = []
        for name in sorted(before.keys() | after.keys()):
            if before.get(name) == after.get(name):
                continue
            if name == _DIR_ENTRY:
                changed.append(str(self._dir))
            elif name == _KEY_ENTRY:
                changed.append(self._key.where if self._key is not None else name)
            elif not self._written_by_this_run(Path(name)):
                changed.append(name)
        return changed

    def discard(self, paths: Sequence[str]) -> None:
        """Delete the entry files among ``paths`` (entries a reviewer touched).

        A target with findings open for the operator keeps them: its entry is written
        back with those findings alone (see :meth:`clear`).
        """
        directory = self._dir
        by_name = {f"{state_key(key)}.json": key for key in self._open}
        for text in paths:
            path = Path(text)
            if directory is None or path.parent != directory or not path.name.endswith(".json"):
                continue  # the folder or the key file: reported, never deleted here
            problem = self._delete(path)
            if problem is not None:
                warnings.warn(
                    StateWarning(
                        f"pytest-advreview: {path} was changed by a reviewer and could not be "
                        f"deleted ({problem}); the state key still keeps a forged entry "
                        "from passing. Fix: delete the file"
                    ),
                    stacklevel=2,
                )
            key = by_name.get(path.name)
            if key is not None:
                self._restore_open(key)

    def target_of(self, path: str) -> str | None:
        """The target an entry file names (for messages); ``None`` when unknown.

        A deleted entry of a target with open findings is still named (from memory).
        """
        data = _read_json(Path(path))
        state = data.get("state") if isinstance(data, dict) else None
        key = state.get("key") if isinstance(state, dict) else None
        if isinstance(key, str):
            return key
        name = Path(path).name
        return next((k for k in self._open if f"{state_key(k)}.json" == name), None)

    def _run_tag(self, mac: str) -> str:
        return hmac.new(self._run_secret, mac.encode("ascii"), hashlib.sha256).hexdigest()

    def _written_by_this_run(self, path: Path) -> bool:
        data = _read_json(path)
        if not isinstance(data, dict):
            return False
        mac, tag = data.get("mac"), data.get("run_tag")
        if not isinstance(mac, str) or not isinstance(tag, str) or not mac.isascii():
            return False
        # The tag vouches for the MAC, and the MAC for the content: an entry of this run
        # edited in place keeps its tag but no longer verifies.
        key = self.state_key()
        return (
            key is not None
            and key.verify(_canonical(data.get("state")), mac)
            and hmac.compare_digest(self._run_tag(mac), tag)
        )

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
                        f"nothing is stored. Fix: {_folder_fix(exc)}"
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

    @staticmethod
    def _problem(
        key: str, path: Path, problem: str, *, verb: str = "loading", tail: str | None = None
    ) -> str:
        """The text of a :class:`StateWarning` about an entry that cannot be used."""
        # The next save overwrites the entry, so the problem heals itself; say so.
        tail = tail or (
            "the target is reviewed afresh and its state rewritten. If this repeats, "
            "delete the file or run with --cache-clear"
        )
        return (
            f"pytest-advreview: {verb} the review state of {key!r} failed: {path}: "
            f"{problem}; {tail}"
        )

    def _warn(self, key: str, path: Path, problem: str, *, verb: str) -> None:
        tail = (
            "this run's rounds may be reviewed again next run. Fix: make the pytest "
            "cache directory (cache_dir ini option) writable, or delete the path"
        )
        warnings.warn(
            StateWarning(self._problem(key, path, problem, verb=verb, tail=tail)), stacklevel=3
        )


def _oserror(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _read_json(path: Path) -> object:
    """The JSON in ``path``; ``None`` when it cannot be read or parsed."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _verified(data: object, key: StateKey) -> StoredEntry | None:
    """The entry ``data`` holds when it is of this schema and verifies under ``key``."""
    if not isinstance(data, dict) or data.get("schema_version") != STATE_SCHEMA:
        return None
    if not key.verify(_canonical(data.get("state")), data.get("mac")):
        return None
    try:
        return StoredEntry.model_validate(data)
    except ValidationError:
        return None


# -- what to do next ---------------------------------------------------------------------------

NextAction = Literal["review", "cached_approved", "cached_revise", "continue", "max_rounds"]


@dataclass(frozen=True)
class NextStep:
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
    key: CacheKey,
    *,
    max_rounds: int,
    fresh: bool,
) -> NextStep:
    """Decide whether a target is reviewed, continued, or judged from its stored state.

    The rules (docs/rounds.md, "Rounds across runs (CI)"), in order:

    1. ``fresh``, no state, another reviewer (any component of the cache key's reviewer
       identity), or no counted round → ``review``;
    2. last verdict APPROVED: same content and no new decision → ``cached_approved``;
       otherwise → ``continue`` on the thread while rounds remain, else ``review`` (an
       approved plan that is edited later is not stuck at "max rounds");
    3. last verdict REVISE: rounds used >= ``max_rounds`` → ``max_rounds`` (even when the
       content changed, until ``--advreview-fresh``); same content and no new decision
       → ``cached_revise``; otherwise → ``continue``.

    A decision is new when the same (finding, action, reason) was never sent; editing a
    reason therefore sends it again.

    :param state: the stored state of the target, ``None`` when there is none.
    :param key: the target's cache key in this run (:func:`~.cachekey.cache_key`).
    :param max_rounds: the round limit over all runs (the option bounds it to at least 1).
    :param fresh: ``--advreview-fresh``: ignore the state.
    """
    if fresh:
        return NextStep(action="review", reason="--advreview-fresh: stored state ignored")
    if state is None:
        return NextStep(action="review", reason="no stored state: initial review")
    if state.reviewer != key.reviewer:
        changed = sorted(
            name
            for name in state.reviewer.keys() | key.reviewer.keys()
            if state.reviewer.get(name) != key.reviewer.get(name)
        )
        return NextStep(
            action="review",
            reason=(
                f"the reviewer changed since the stored rounds ({', '.join(changed)}): "
                "its verdict is not this reviewer's, starting over"
            ),
        )
    review = state.last_review
    verdict = review.verdict if review is not None else None
    if not state.rounds or verdict is None:
        return NextStep(action="review", reason="no counted round stored: initial review")

    content_hash = key.content
    decisions = key.decisions
    same = state.reviewed_hash == content_hash
    used = state.rounds_used
    sent = set(state.decisions_sent)
    new = tuple(dict.fromkeys(d for d in decisions if d not in sent))

    if verdict is Verdict.APPROVED:
        what = "new decisions" if same else "changed"
        if same and not new:
            return NextStep(
                action="cached_approved",
                reason=f"unchanged since round {used} was APPROVED",
                review=review,
            )
        if used < max_rounds:
            return NextStep(
                action="continue",
                reason=f"{what} since round {used} was APPROVED: re-review",
                history=state.rounds,
                decisions=new,
            )
        return NextStep(
            action="review",
            reason=(
                f"{what} since round {used} was APPROVED and all {max_rounds} rounds are "
                "spent: starting a new review"
            ),
        )

    if used >= max_rounds:
        return NextStep(
            action="max_rounds",
            reason=(
                f"{used} of {max_rounds} rounds used and the last verdict is REVISE; a "
                "person may waive the findings or grant more rounds (docs/deciding.md), or "
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


def _folder_fix(exc: OSError) -> str:
    """The fix of a folder that could not be made: a file in its way, or permissions."""
    if isinstance(exc, (FileExistsError, NotADirectoryError)) and exc.filename:
        path = Path(os.fsdecode(exc.filename))
        for candidate in (path, *path.parents):
            if candidate.exists() or candidate.is_symlink():
                if not candidate.is_dir():
                    return (
                        f"a file stands where a folder should be ({candidate}); remove or rename it"
                    )
                break
    return "make the cache_dir writable or point the cache_dir ini option somewhere writable"
