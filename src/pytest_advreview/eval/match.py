"""Model-free matching of a review's findings to a case's seeded defects.

A finding *catches* a defect when all of these hold:

* it locates it: a code defect's file (the same path) with the finding's lines within
  :data:`LINE_SLACK` lines of the defect's range; a plan defect's section (the same
  heading text, ``#``, numbering and case aside, or a heading path that ends with it);
* its severity is at least the defect's;
* it names the defect, when the case gives keywords: one of them occurs in its title or
  its four answers (case-insensitive).

One finding catches at most one defect and one defect is caught by at most one finding:
the pairs are a maximum matching, so the order of findings never changes the score.
A blocking finding (at or above fail-on) that catches nothing is a false block.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence

from pydantic import Field

from ..models import Finding, Severity, WireModel
from ..outcome import demoted
from .case import Case, Defect

__all__ = ["LINE_SLACK", "CaseScore", "catches", "score"]

#: How many lines a finding may be off a code defect's range and still locate it.
LINE_SLACK = 3


class CaseScore(WireModel):
    """How one review of one case scored."""

    #: Defect id -> the id of the finding that caught it (caught defects only).
    caught: dict[str, str] = Field(default_factory=dict)
    #: Defect ids no finding caught.
    missed: tuple[str, ...] = ()
    #: Findings at or above fail-on.
    blocking: int = 0
    #: Blocking findings that caught a defect.
    blocking_matched: int = 0
    #: Ids of blocking findings that caught nothing.
    false_blocks: tuple[str, ...] = ()
    #: Findings in all.
    findings: int = 0

    @property
    def blocked(self) -> bool:
        """Whether the review blocked (a finding at or above fail-on)."""
        return self.blocking > 0


_NUMBERING = re.compile(r"^(?:step\s+)?(?:\d+[.)]?|[ivx]+[.)])\s+", re.IGNORECASE)


def _section(text: str) -> str:
    text = text.strip().strip("#").strip().strip("*_`").strip()
    text = _NUMBERING.sub("", text)
    return re.sub(r"\s+", " ", text).rstrip(" .:").lower()


def _path(text: str) -> str:
    text = text.strip().replace("\\", "/")
    for prefix in ("./", "a/", "b/"):
        text = text.removeprefix(prefix)
    return text


def _locates(finding: Finding, defect: Defect) -> bool:
    where = finding.location
    if where is None:
        return False
    if defect.section is not None:
        if where.section is None:
            return False
        want, got = _section(defect.section), _section(where.section)
        # "Rollout > Step 3" or "Rollout / Migration" name the heading as a path.
        parts = [_section(p) for p in re.split(r"\s*(?:>|/|›|»)\s*", where.section)]
        return bool(want) and (got == want or want in parts)
    assert defect.file is not None and defect.lines is not None
    if where.file is None or _path(where.file) != _path(defect.file) or not where.has_line:
        return False
    assert where.line_start is not None
    start, end = where.line_start, where.line_end or where.line_start
    first, last = defect.lines
    return start <= last + LINE_SLACK and end >= first - LINE_SLACK


def _names(finding: Finding, defect: Defect) -> bool:
    if not defect.keywords:
        return True
    parts = [finding.title, *(v for v in finding.answers().values() if v)]
    text = " ".join(parts).lower()
    return any(word.lower() in text for word in defect.keywords)


def catches(finding: Finding, defect: Defect) -> bool:
    """Whether ``finding`` catches ``defect`` (see the module docstring)."""
    return (
        finding.severity.rank >= defect.severity.rank
        and _locates(finding, defect)
        and _names(finding, defect)
    )


def _matching(
    findings: Sequence[Finding], defects: Sequence[Defect], pair: Callable[[Finding, Defect], bool]
) -> dict[int, int]:
    """A maximum matching defect index -> finding index (Kuhn's augmenting paths)."""
    edges = [[f for f, finding in enumerate(findings) if pair(finding, d)] for d in defects]
    owner: dict[int, int] = {}  # finding -> defect

    def augment(d: int, seen: set[int]) -> bool:
        for f in edges[d]:
            if f in seen:
                continue
            seen.add(f)
            if f not in owner or augment(owner[f], seen):
                owner[f] = d
                return True
        return False

    for d in range(len(defects)):
        augment(d, set())
    return {d: f for f, d in owner.items()}


def score(
    case: Case, findings: Sequence[Finding], fail_on: Severity, demotes: Collection[str] = ()
) -> CaseScore:
    """Score one review's ``findings`` of ``case`` at the ``fail_on`` threshold.

    A finding a verifier refuted below fail-on (:func:`~..outcome.demoted`) neither
    blocks nor catches: the gate would not fail on it.
    """
    findings = [f for f in findings if not demoted(f, demotes)]
    defects = case.spec.defect
    pairs = _matching(findings, defects, catches)
    matched = set(pairs.values())
    blocking = [n for n, f in enumerate(findings) if f.severity.at_least(fail_on)]
    return CaseScore(
        caught={defects[d].id: findings[f].id for d, f in sorted(pairs.items())},
        missed=tuple(d.id for n, d in enumerate(defects) if n not in pairs),
        blocking=len(blocking),
        blocking_matched=sum(1 for n in blocking if n in matched),
        false_blocks=tuple(findings[n].id for n in blocking if n not in matched),
        findings=len(findings),
    )
