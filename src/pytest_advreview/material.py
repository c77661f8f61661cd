"""What one review reviews, built once: the target, the plan's text, the prompt body
(framed as untrusted data for a head reviewed as data), the content hash and the code
change as reviewed.  The code target itself is built by :func:`.selection.code_change`
for the item and the fixture alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from . import cachekey, hunks, interdiff, prompts
from .hunks import FileHunks
from .models import ChangeSet, ReviewedChange

if TYPE_CHECKING:
    from .settings import Settings

__all__ = [
    "ReviewInputError",
    "ReviewMaterial",
    "TargetSpec",
    "build_material",
    "current_text",
    "read_plan",
    "repo_relative",
]


class ReviewInputError(Exception):
    """The material to review is unusable (not UTF-8, empty, missing): the user must fix it."""


@dataclass(frozen=True)
class TargetSpec:
    """What one item reviews (never leaves the process: each worker collects its own)."""

    kind: Literal["plan", "code"]
    #: ``docs/plans/x.md`` (repo-relative) or ``code-review``.
    key: str
    #: The plan file (plan items).
    path: Path | None = None
    #: The change set (code items).
    change: ChangeSet | None = None
    #: The plan a code change is reviewed against (code-vs-plan).
    against_plan: Path | None = None
    #: Why the target cannot be reviewed (the code item of a run whose base cannot be
    #: diffed): the item errors with it, never passes.
    error: str | None = None


def read_plan(path: Path) -> str:
    """The plan's text, or a :class:`ReviewInputError` that names the file and the fix."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ReviewInputError(f"plan file {path} does not exist") from None
    except OSError as exc:
        raise ReviewInputError(f"cannot read plan file {path}: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReviewInputError(
            f"plan file {path} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start}); save it as UTF-8 to have it reviewed"
        ) from None
    if not text.strip():
        raise ReviewInputError(
            f"plan file {path} is empty; write the plan or remove it from advreview_plans"
        )
    return text


def repo_relative(path: Path, root: Path, resolve: Callable[[Path], Path] = Path.resolve) -> str:
    """``path`` relative to ``root`` (posix), or as given when it is outside ``root``."""
    try:
        return resolve(path).relative_to(resolve(root)).as_posix()
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class ReviewMaterial:
    """What one review is about, read once per review.

    :param prompt_body: the round-1 prompt body, without the session marker.
    :param content: the artifact's current text (the plan; the changed files and plan).
    :param content_hash: the content part of its cache key (:mod:`.cachekey`).
    :param reviewed: the code change as reviewed: its head commit or file digests
        (:func:`.interdiff.reviewed`); ``None`` for a plan.
    """

    prompt_body: str
    content: str
    content_hash: str
    reviewed: ReviewedChange | None = None
    #: The code change's changed hunks by file (:func:`.hunks.of_change`): which findings
    #: are pre-existing; ``None`` for a plan, which has no hunks.
    hunks: Mapping[str, FileHunks] | None = None


def build_material(
    spec: TargetSpec,
    settings: Settings,
    repo_root: Path,
    resolve: Callable[[Path], Path],
    *,
    with_hunks: bool = True,
) -> ReviewMaterial:
    """What ``spec`` reviews, read once: prompt body, current text and content hash.

    A head reviewed as data gets its prompt body framed as untrusted text before the
    cache key is taken from it, so a verdict given without the frame is never reused
    for a head.

    :param resolve: resolves paths (the run's shared lookups).
    :param with_hunks: compute the code change's hunks (one more ``git diff``); the run's
        look at its stored verdicts before the items needs only the content hash.
    :raises ReviewInputError: the plan is missing, not UTF-8 or empty.
    """

    def framed(body: str) -> str:
        return prompts.untrusted_head(body) if settings.head is not None else body

    if spec.error is not None:
        raise ReviewInputError(spec.error)
    fmt = settings.output_format
    reviewed: ReviewedChange | None = None
    changed: Mapping[str, FileHunks] | None = None
    if spec.kind == "plan":
        assert spec.path is not None
        text = read_plan(spec.path)
        body = framed(
            prompts.plan_prompt(
                repo_relative(spec.path, repo_root, resolve),
                language=settings.language,
                output_format=fmt,
            )
        )
        content = text
        digest = cachekey.plan_digest(spec.path, body)
    else:
        assert spec.change is not None
        plan_rel = None
        plan_text = ""
        if spec.against_plan is not None:
            plan_text = read_plan(spec.against_plan)
            plan_rel = repo_relative(spec.against_plan, repo_root, resolve)
        body = framed(
            prompts.code_prompt(
                spec.change, against_plan=plan_rel, language=settings.language, output_format=fmt
            )
        )
        content = (
            "Changed files:\n"
            + "\n".join(f"- {f}" for f in spec.change.files)
            + ("\n\nPlan:\n" + plan_text if plan_text else "")
        )
        # Every changed byte (not just the names) decides whether a code review is stale.
        try:
            digest = cachekey.code_digest(repo_root, spec.change, body, plan_text)
        except cachekey.CacheKeyError as exc:
            raise ReviewInputError(str(exc)) from None
        reviewed = interdiff.reviewed(repo_root, spec.change)
        changed = hunks.of_change(repo_root, spec.change) if with_hunks else None
    return ReviewMaterial(
        prompt_body=body, content=content, content_hash=digest, reviewed=reviewed, hunks=changed
    )


def current_text(spec: TargetSpec) -> str | None:
    """The plan's text as it is now (``None`` for the code item, or when unreadable).

    A fixer edits the plan between rounds: a fresh exec must see the edited text.
    """
    if spec.kind == "plan" and spec.path is not None:
        try:
            return read_plan(spec.path)
        except ReviewInputError:
            return None
    return None
