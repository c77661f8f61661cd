"""Builders of review texts in the markdown contract, for scripted reviewers.

A review in the contract looks like::

    ## Summary

    <one paragraph>

    ## Findings

    ### [severity: high] Title
    - **Section:** Rollout            (plans)   or   - **File:** app.py lines 3-7 (code)
    - **What can go wrong:** …
    - **Why vulnerable:** …
    - **Impact:** …
    - **Recommendation:** …

    ## Verdict

    VERDICT: REVISE

With no findings the Findings section reads ``No actionable findings.``.  The verdict line
is always the last line, without a trailing newline (Codex writes ``-o`` that way).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["FindingSpec", "approved_review", "review_text", "revise_review"]

#: Finding header styles: ``bracket`` is the contract; ``bold`` is a drift real reviewers
#: produce (``**Severity:** High`` instead of ``[severity: high]``); ``none`` omits severity.
STYLES = ("bracket", "bold", "none")


@dataclass(frozen=True)
class FindingSpec:
    """One finding to render.

    :param severity: ``critical``, ``high`` or ``medium`` (any string is rendered as given).
    :param title: the sub-header text after the severity tag.
    :param section: plan section (renders ``- **Section:** …``).
    :param file: file path (renders ``- **File:** path lines N-M``; wins over ``section``).
    :param lines: ``(start, end)`` line range of ``file``; a single line repeats ``start``.
    :param what: text of *What can go wrong* (a generic sentence by default).
    :param why: text of *Why vulnerable*.
    :param impact: text of *Impact*.
    :param recommendation: text of *Recommendation*.
    :param confidence: text of *Confidence* (``"0.8"``; ``None``: no such field).
    """

    severity: str
    title: str
    section: str | None = None
    file: str | None = None
    lines: tuple[int, int] | None = None
    what: str = "A concrete input makes this step fail."
    why: str = "Nothing guards against it."
    impact: str = "The change breaks for that input."
    recommendation: str = "Add the missing guard."
    confidence: str | None = None


def _as_spec(finding: FindingSpec | tuple[str, str]) -> FindingSpec:
    if isinstance(finding, FindingSpec):
        return finding
    severity, title = finding
    return FindingSpec(severity=severity, title=title)


def _render_finding(spec: FindingSpec, style: str) -> list[str]:
    if style == "bracket":
        lines = [f"### [severity: {spec.severity.lower()}] {spec.title}"]
    elif style == "bold":
        lines = [f"### {spec.title}", f"- **Severity:** {spec.severity.capitalize()}"]
    else:
        lines = [f"### {spec.title}"]
    if spec.file is not None:
        where = spec.file
        if spec.lines is not None:
            where += f" lines {spec.lines[0]}-{spec.lines[1]}"
        lines.append(f"- **File:** {where}")
    elif spec.section is not None:
        lines.append(f"- **Section:** {spec.section}")
    lines += [
        f"- **What can go wrong:** {spec.what}",
        f"- **Why vulnerable:** {spec.why}",
        f"- **Impact:** {spec.impact}",
        f"- **Recommendation:** {spec.recommendation}",
    ]
    if spec.confidence is not None:
        lines.append(f"- **Confidence:** {spec.confidence}")
    return lines


def review_text(
    verdict: str,
    findings: Sequence[FindingSpec | tuple[str, str]] = (),
    *,
    summary: str = "The artifact was reviewed against the attack surface.",
    style: str = "bracket",
) -> str:
    """A full review in the markdown contract (:mod:`pytest_advreview.parse`).

    :param verdict: ``APPROVED`` or ``REVISE`` (rendered as ``VERDICT: <verdict>``, so a
        malformed value can be used to test format drift).
    :param findings: :class:`FindingSpec` objects or ``(severity, title)`` pairs.
    :param summary: the Summary paragraph.
    :param style: how finding headers carry the severity, one of :data:`STYLES`.
    :returns: the text, whose last line is the verdict line (no trailing newline).
    """
    if style not in STYLES:
        raise ValueError(f"review_text: style must be one of {STYLES}, got {style!r}")
    lines = ["## Summary", "", summary, "", "## Findings", ""]
    specs = [_as_spec(finding) for finding in findings]
    if specs:
        for spec in specs:
            lines += [*_render_finding(spec, style), ""]
    else:
        lines += ["No actionable findings.", ""]
    lines += ["## Verdict", "", f"VERDICT: {verdict}"]
    return "\n".join(lines)


def approved_review(summary: str = "The artifact is sound.") -> str:
    """``review_text("APPROVED")`` with no findings."""
    return review_text("APPROVED", summary=summary)


def revise_review(
    *findings: FindingSpec | tuple[str, str],
    summary: str = "The artifact has problems that must be fixed.",
) -> str:
    """``review_text("REVISE", findings)``; one high finding when none is given."""
    specs = findings or (("high", "Missing rollback step"),)
    return review_text("REVISE", specs, summary=summary)
