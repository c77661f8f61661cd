"""Kept transcripts: each scored review of a case, so a rerun re-scores without a model.

A transcript is kept per reviewer identity (:func:`~..cachekey.reviewer_identity`: the
model, reasoning, sandbox, prompt version, Codex's configuration...), fail-on, what the
case shows the reviewer (its plan, base tree and patch; not its labels) and epoch.  A
rerun with all of them the same takes the transcript instead of asking the reviewer; a
changed label, matcher or metric scores the same findings again.  A review that errored
is never kept (the next run asks again), nor one whose reviewer changed files.

The folder is ``--advreview-eval-transcripts`` (ini ``advreview_eval_transcripts``),
else ``advreview-eval`` in pytest's cache folder; it may be committed, as the transcripts
are what a published figure was computed from.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from ..atomic import write_atomic
from ..models import Review, TokenUsage, WireModel

__all__ = ["Transcript", "TranscriptStore", "transcript_key"]


class Transcript(WireModel):
    """One kept review of one case and epoch."""

    case: str
    epoch: int
    case_digest: str
    key: str
    review: Review
    tokens: TokenUsage
    seconds: float


def transcript_key(identity: Mapping[str, str], fail_on: str, case_digest: str, epoch: int) -> str:
    """The key a transcript is kept and found under."""
    data = json.dumps(
        {"identity": dict(identity), "fail_on": fail_on, "case": case_digest, "epoch": epoch},
        sort_keys=True,
    )
    return hashlib.sha256(data.encode()).hexdigest()


class TranscriptStore:
    """Transcripts in one folder: ``<case id>/<epoch>-<key>.json``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, case: str, epoch: int, key: str) -> Path:
        return self.folder / case / f"{epoch}-{key[:32]}.json"

    def get(self, case: str, epoch: int, key: str) -> Transcript | None:
        """The kept transcript, ``None`` when there is none (or it is unreadable)."""
        path = self._path(case, epoch, key)
        try:
            found = Transcript.model_validate_json(path.read_bytes())
        except (OSError, ValidationError):
            return None
        # The file's name is a prefix of the key: the whole key must agree.
        return found if found.key == key and found.case == case and found.epoch == epoch else None

    def put(self, transcript: Transcript) -> None:
        """Keep ``transcript`` (atomically: workers and threads write side by side)."""
        path = self._path(transcript.case, transcript.epoch, transcript.key)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, transcript.model_dump_json(indent=1))
