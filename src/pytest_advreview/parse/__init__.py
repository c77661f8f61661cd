"""Review text -> :class:`~pytest_advreview.models.Review`, plus drift, quality and triage.

Two contracts are understood:

* **markdown** (the default): ``Summary`` / ``Findings`` / ``Verdict`` sections, one
  sub-header per finding carrying ``[severity: critical|high|medium]``, and the verdict on
  the *last non-empty line*, exactly ``VERDICT: APPROVED`` or ``VERDICT: REVISE``.
* **json**: a single object matching :func:`review_schema`, generated from
  :class:`ReviewerOutput` (Codex forwards the schema but never validates the answer, so
  :func:`parse_json` does).

Parsing never raises on markdown: anything the reviewer writes becomes a best-effort
:class:`Review` whose ``raw`` is the text verbatim.  Whether the text honours the contract
is a separate question answered by :func:`analyse` (``drift``), because the runner retries
on drift instead of failing the item.

Decisions made here, conservatively:

* The verdict line must be *exactly* one of the two literals after stripping surrounding
  whitespace.  ``**VERDICT: APPROVED**``, a backticked verdict, a quoted one (``> …``) or
  one inside a fenced block is no verdict: drift means a retry, never a false pass.
* ``[severity: low]`` findings are dropped: the prompts tell the reviewer to approve when
  everything is low, so a low finding is not actionable and must not fail an item.
* Severity tokens inside fenced code blocks and block quotes are ignored: that is where a
  reviewer quotes the plan or the code, which may carry such tokens itself.
* Every pattern is either anchored on a literal or free of adjacent unbounded quantifiers
  that can match the same character, so a hostile 1 MB review parses in linear time.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models import OutputFormat, Review, ReviewQuality, Severity, Triage, Verdict
from .json import ReviewerFinding, ReviewerOutput, ReviewFormatError, parse_json, review_schema
from .json import strict_schema as strict_schema
from .markdown import _why_no_verdict, parse_markdown
from .quality import MAX_COVERED_MEDIUM, _triage, classify_quality

__all__ = [
    "MAX_COVERED_MEDIUM",
    "Analysis",
    "ReviewFormatError",
    "ReviewerFinding",
    "ReviewerOutput",
    "analyse",
    "classify_quality",
    "parse_json",
    "parse_markdown",
    "review_schema",
    "strict_schema",
]


@dataclass(frozen=True)
class Analysis:
    """Everything the runner needs from one review text.

    ``review`` is always present (``raw`` verbatim, findings best-effort); ``drift`` is
    ``None`` when the text honours the contract and otherwise a short reason, on which the
    runner retries.
    """

    review: Review
    drift: str | None
    quality: ReviewQuality
    triage: Triage


def _drift(review: Review, fail_on: Severity = Severity.MEDIUM) -> str | None:
    if not review.raw.strip():
        return "empty review"
    if review.verdict is None:
        last = next(line.strip() for line in reversed(review.raw.splitlines()) if line.strip())
        shown = last if len(last) <= 80 else last[:77] + "..."
        return f"no verdict on the last line (got {shown!r}): {_why_no_verdict(review.raw)}"
    if review.verdict is Verdict.REVISE and not review.findings:
        return "verdict REVISE without any [severity: critical|high|medium] finding"
    # APPROVED with a finding that would fail the item: drift, retried once, never a pass.
    return review.contradiction(fail_on)


def analyse(
    text: str,
    output_format: OutputFormat = OutputFormat.MARKDOWN,
    fail_on: Severity = Severity.MEDIUM,
) -> Analysis:
    """Parse a review and judge it: drift, quality and triage in one go; never raises.

    Under the JSON contract a text that fails validation is still parsed as markdown, best
    effort, so the raw text and any findings stay available; the drift names the error.

    :param text: the review text (the ``-o`` file).
    :param output_format: the contract the reviewer was asked to follow.
    :param fail_on: the run's threshold: ``APPROVED`` with a finding at or above it is
        drift (see :meth:`~pytest_advreview.models.Review.contradiction`).
    """
    drift: str | None
    fail_on = Severity(fail_on)  # plugin backends may pass the plain string
    if OutputFormat(output_format) is OutputFormat.JSON:
        try:
            review = parse_json(text)
        except ReviewFormatError as exc:
            review = parse_markdown(text)
            drift = str(exc)
        else:
            drift = _drift(review, fail_on)
    else:
        review = parse_markdown(text)
        drift = _drift(review, fail_on)
    quality = classify_quality(review)
    needs = drift is not None or quality is not ReviewQuality.VALID
    return Analysis(
        review=review,
        drift=drift,
        quality=quality,
        triage=_triage(review, needs_lead_judgment=needs),
    )
