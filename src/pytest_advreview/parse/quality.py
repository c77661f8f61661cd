"""Review quality (real, environment failure, content-free) and triage counts."""

from __future__ import annotations

import re
from typing import Literal

from ..models import Finding, Review, ReviewQuality, Severity, Triage

#: Triage covers every critical and high finding but at most this many medium ones.
MAX_COVERED_MEDIUM = 10


def _patterns(*parts: str) -> re.Pattern[str]:
    # Case-sensitive on purpose: the text is lowercased once, which keeps matching fast.
    return re.compile("|".join(f"(?:{p})" for p in parts))


# Error texts an environment failure produces; unlikely in a reviewer's own prose.
_ENV_STRONG = _patterns(
    r"\bbwrap:",
    r"operation not permitted",
    r"read-only file system",
    r"not inside a trusted directory",
    r"--skip-git-repo-check",
    r"\bdo you trust (?:the )?(?:contents|files|this)",
    r"too many requests",
    r"\b429\b",
    r"rate[ -]?limit(?:ed)?[ \t]+(?:reached|exceeded|hit)",
    r"(?:reached|hit|exceeded)[ \t]+(?:the[ \t]+|your[ \t]+)?(?:rate|usage)[ \t]+limit",
    r"\busage limit\b",
    r"quota[ \t]+(?:exceeded|exhausted)",
    r"no such file or directory",
    r"permission denied",
    r"sandbox\w{0,8}[ \t]+(?:\w+[ \t]+){0,3}?(?:failed|failure)\b",
    r"sandbox error:",
    r"failed to (?:set ?up|start|create|initiali[sz]e) (?:the )?sandbox",
    r"sandbox (?:prevented|blocked) (?:me|all|any|every)",
)
# Looser mentions; they only count together with a statement of inability.
_ENV_WEAK = _patterns(
    r"\bbwrap\b",
    r"\bsandbox",
    r"\brate[ -]?limit",
    r"\bquota\b",
    r"\btrusted director",
    r"\bfile not found\b",
)
_INABLE = (
    r"(?:unable to|not able to|could not|couldn't|couldn’t|cannot|can not|can't|can’t"
    r"|failed to|did not manage to)"
)
_MATERIAL = (
    r"(?:(?:the|your|this|that|any|provided|referenced|given)[ \t]+){0,2}"
    r"(?:implementation plan|plan|files?|diffs?|repo|repository|code|changes?|material"
    r"|document|workspace|directory|project|review target)\b"
)
_FIRST_PERSON = r"\b(?:i|we)(?:'m|’m|[ \t]+am|[ \t]+was|[ \t]+were|[ \t]+are)?[ \t]+"
# "I could not read the plan": the reviewer's own inability to see the material.
_SELF_MATERIAL = re.compile(
    _FIRST_PERSON + _INABLE + r"[ \t]+(?:read|access|open|load|view|inspect)[ \t]+" + _MATERIAL
)
# "Unable to access the plan: ..." opening a sentence, without a subject: counts only
# together with an environment error ("the code falls back when the file could not be
# read" is a description, not an inability).
_MATERIAL_INABILITY = re.compile(
    r"(?:^|[.:!][ \t]+)[ \t*_>-]*"
    + _INABLE
    + r"[ \t]+(?:read|access|open|load|view|inspect)[ \t]+"
    + _MATERIAL,
    re.MULTILINE,
)
# "I could not perform the review", "every command failed": an inability to work at all.
# Deliberately not "I could not run the tests" (a caveat of a real review under a
# network-less sandbox) nor "I could not find an issue".
_SELF_GENERIC = re.compile(
    _FIRST_PERSON
    + _INABLE
    + r"[ \t]+(?:(?:read|access|open|load|view|inspect|perform|complete|review)\b"
    r"|(?:run|execute)[ \t]+any[ \t]+(?:commands?|shell|tools?)\b)"
    r"|\b(?:every|all|each)[ \t]+(?:shell[ \t]+|tool[ \t]+)?(?:commands?|tool calls?)"
    r"[ \t]+(?:i[ \t]+(?:ran|tried)[ \t]+)?(?:failed|fails|errored|was rejected|were rejected)"
)
_STUB_CHARS = 600
# Only this much of each end of a text is searched for an environment failure: a
# pseudo-review states its inability up front or next to the verdict, and the bound keeps
# classification cheap on a megabyte review.
_SCAN_CHARS = 16_000


def _window(text: str) -> str:
    if len(text) > 2 * _SCAN_CHARS:
        text = text[:_SCAN_CHARS] + "\n" + text[-_SCAN_CHARS:]
    return text.lower()


def _backed(finding: Finding) -> bool:
    return finding.location is not None or any(finding.answers().values())


def _finding_text(finding: Finding) -> str:
    parts = (finding.title, *finding.answers().values())
    return _window("\n".join(p for p in parts if p))


def _environmental_finding(finding: Finding) -> bool:
    # A finding that is really the reviewer reporting its own broken environment.
    text = _finding_text(finding)
    if _SELF_MATERIAL.search(text):
        return True
    if finding.location is not None:
        return False
    return bool(_SELF_GENERIC.search(text) or _ENV_STRONG.search(text))


def _stub_like(text: str) -> bool:
    # An error message dressed as a review: short, no markdown structure, not JSON.
    stripped = text.strip()
    if len(stripped) > _STUB_CHARS or stripped.startswith("{"):
        return False
    return not any(line.lstrip().startswith("#") for line in stripped.splitlines())


def classify_quality(review: Review) -> ReviewQuality:
    """Whether a review is a real review, an environment failure, or content-free.

    ``degraded_environmental``: no substantive finding, and the text reports the
    reviewer's own inability to work (a sandbox or ``bwrap`` failure, a trust prompt, a
    rate-limit stub, not being able to read the material), even when it carries a verdict.
    A review that merely *discusses* such topics, e.g. a finding "API has no rate
    limiting" with a location, stays ``valid``.

    ``degraded_content``: findings carry severities but none has any backing (no location
    and none of the four finding-bar fields).  When in doubt the answer is ``valid``.

    :returns: ``unknown`` for an empty review, else one of the three above.
    """
    if not review.raw.strip():
        return ReviewQuality.UNKNOWN
    if not any(_backed(f) and not _environmental_finding(f) for f in review.findings):
        raw = _window(review.raw)
        if _SELF_MATERIAL.search(raw):
            return ReviewQuality.DEGRADED_ENVIRONMENTAL
        strong = _ENV_STRONG.search(raw) is not None
        if (strong or _ENV_WEAK.search(raw)) and (
            _SELF_GENERIC.search(raw) or _MATERIAL_INABILITY.search(raw)
        ):
            return ReviewQuality.DEGRADED_ENVIRONMENTAL
        if strong and _stub_like(raw):
            return ReviewQuality.DEGRADED_ENVIRONMENTAL
        if review.findings and not any(_backed(f) for f in review.findings):
            return ReviewQuality.DEGRADED_CONTENT
    return ReviewQuality.VALID


_TRIAGE_SEVERITY: dict[Severity | None, Literal["critical", "high", "medium", "none"]] = {
    Severity.CRITICAL: "critical",
    Severity.HIGH: "high",
    Severity.MEDIUM: "medium",
    None: "none",
}


def _triage(review: Review, *, needs_lead_judgment: bool) -> Triage:
    counts = {s: 0 for s in Severity}
    for finding in review.findings:
        counts[finding.severity] += 1
    medium = counts[Severity.MEDIUM]
    return Triage(
        status="ok",
        finding_count=len(review.findings),
        max_severity=_TRIAGE_SEVERITY[review.max_severity],
        covered_critical=counts[Severity.CRITICAL],
        covered_high=counts[Severity.HIGH],
        covered_medium=min(medium, MAX_COVERED_MEDIUM),
        truncated=medium > MAX_COVERED_MEDIUM,
        needs_lead_judgment=needs_lead_judgment,
    )
