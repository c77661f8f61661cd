"""Several first-round samples of one target: their merge, and what later rounds owe them.

With ``advreview_samples`` K > 1 the first round draws K independent reviews
(docs/confirmation.md).  :func:`merge` folds them into the one review the loop, the
outcome and every report see: findings at the same place with the same severity, from
different samples, become one finding that records each sample's report
(:class:`~.models.SampleMention`); every other finding is kept as it is.  More samples
can only add findings: the merge says REVISE when any sample did.

Later rounds resume one thread (sample 1's), which never saw what the other samples
said.  :func:`owed` names the findings it must answer (reported by no sample of its
own thread), the re-review prompt lists them (:func:`~.prompts.owed_findings`), and
:func:`settle` keeps every one it did not answer in its review: an approval that
ignores a finding only another sample reported still blocks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .models import Finding, Review, SampleMention, Severity, Verdict

__all__ = ["Sampled", "merge", "owed", "settle"]


@dataclass(frozen=True)
class Sampled:
    """One sample's review: its number (1 to K), its reviewer's name, what it said."""

    sample: int
    reviewer: str
    review: Review


def _place(finding: Finding) -> str | None:
    """Where a finding points, normalised; ``None``: nowhere (it merges with nothing)."""
    if finding.location is None:
        return None
    where = " ".join(str(finding.location).split()).lower()
    return where or None


def merge(samples: Sequence[Sampled]) -> Review:
    """The one review of K samples (see the module's docstring).

    A finding of a sample merges into an earlier sample's finding at the same place with
    the same severity that no finding of its own sample has merged into yet; the merged
    finding keeps the first sample's wording as its own and every sample's in
    ``samples``.  A finding without a place is never merged: two such findings may be
    about different things.
    """
    merged: list[tuple[Finding, list[SampleMention]]] = []
    for sample in samples:
        taken: set[int] = set()
        for finding in sample.review.findings:
            place = _place(finding)
            index = next(
                (
                    i
                    for i, (first, mentions) in enumerate(merged)
                    if place is not None
                    and i not in taken
                    and _place(first) == place
                    and first.severity is finding.severity
                    and all(m.sample != sample.sample for m in mentions)
                ),
                None,
            )
            if index is None:
                merged.append((finding, []))
                index = len(merged) - 1
            merged[index][1].append(
                SampleMention(
                    sample=sample.sample,
                    reviewer=sample.reviewer,
                    id=finding.id,
                    title=finding.title,
                    what_can_go_wrong=finding.what_can_go_wrong,
                )
            )
            taken.add(index)
    verdicts = [s.review.verdict for s in samples]
    verdict = (
        Verdict.APPROVED
        if verdicts and all(v is Verdict.APPROVED for v in verdicts)
        else Verdict.REVISE
    )
    raw = "\n\n".join(
        f"## Sample {s.sample} ({s.reviewer})\n\n{s.review.raw.strip()}" for s in samples
    )
    return Review(
        summary=samples[0].review.summary if samples else "",
        findings=tuple(f.model_copy(update={"samples": tuple(m)}) for f, m in merged),
        verdict=verdict,
        raw=raw + "\n",
    )


def owed(review: Review | None) -> tuple[Finding, ...]:
    """The findings of ``review`` that sample 1's thread must still answer: reported by
    samples, none of them sample 1 (its thread said the others itself)."""
    if review is None:
        return ()
    return tuple(f for f in review.findings if f.samples and all(m.sample != 1 for m in f.samples))


def _resolved(finding_id: str, raw: str) -> bool:
    """Whether ``raw`` has the line ``RESOLVED <id>: why`` the prompt asks for."""
    line = re.compile(rf"^[\s*>-]*RESOLVED[\s*]+{re.escape(finding_id)}\b\S*\s*:\s*\S", re.M)
    return line.search(raw) is not None


def settle(
    review: Review, debts: Sequence[Finding], fail_on: Severity
) -> tuple[Review, str | None]:
    """``review`` (a later round of sample 1's thread) with every finding it owed and did
    not answer kept in it, and the warning that says so (``None``: it answered all).

    Answered: a ``RESOLVED <id>: why`` line, or a finding of its own with that id or at
    that place and severity.  A kept finding at or above ``fail_on`` makes an approval
    REVISE: nobody judged it, so nothing approved leaving it out.
    """
    places = {(_place(f), f.severity) for f in review.findings if _place(f) is not None}
    ids = {f.id for f in review.findings}
    left = tuple(
        debt
        for debt in debts
        if debt.id not in ids
        and (_place(debt), debt.severity) not in places
        and not _resolved(debt.id, review.raw)
    )
    if not left:
        return review, None
    blocking = any(f.severity.at_least(fail_on) for f in left)
    verdict = Verdict.REVISE if blocking else review.verdict
    kept = review.model_copy(update={"findings": (*review.findings, *left), "verdict": verdict})
    names = ", ".join(f"{f.id} ({f.reported_by()})" for f in left)
    return kept, (
        f"the resumed thread (sample 1's) did not answer {names}; "
        + ("it stays open and blocks" if blocking else "it stays open")
        + " until a round reports it again or answers RESOLVED <id>: why"
    )
