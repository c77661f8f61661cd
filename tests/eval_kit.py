"""Helpers of the eval tests: scripted reviewers that answer each case of a corpus.

Every scratch repository's change commit carries the case's digest
(``advreview-eval-case: <digest>``, :mod:`pytest_advreview.eval.scratch`).  The scripted
reviewer first runs ``git log -1 --format=%B`` in its workspace (the default step); the
request that carries the output is then answered by the rule of the case whose digest
it shows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_advreview.eval.case import Case, Defect, load_corpus
from pytest_advreview.testing import FindingSpec, review_text, run_step, shell_step

CORPUS = Path(__file__).parent / "data" / "eval-corpus"
SHOW_CASE = "git log -1 --format=%B"

Answer = Callable[[Case], Sequence[dict[str, Any]]]


def marker(case: Case) -> str:
    """The text of a case's change commit that names it (its digest)."""
    return f"advreview-eval-case: {case.reviewed[:16]}"


def cases(corpus: Path = CORPUS) -> tuple[Case, ...]:
    return load_corpus(corpus).cases


def script(
    corpus: Path, answer: Answer, *, real: bool, threads_all: bool = False
) -> dict[str, Any]:
    """A script answering every case of ``corpus`` with ``answer(case)``'s steps."""
    first = shell_step(SHOW_CASE) if real else run_step(SHOW_CASE)
    rules = []
    for case in cases(corpus):
        rule: dict[str, Any] = {"match": marker(case), "in": "body", "steps": list(answer(case))}
        if threads_all:
            rule["threads"] = "all"
        rules.append(rule)
    return {"rules": rules, "default": first}


def finding_of(defect: Defect, *, title: str | None = None) -> FindingSpec:
    """A finding that catches ``defect``: its location, severity and first keyword."""
    severity = "medium" if defect.severity.value == "low" else defect.severity.value
    word = defect.keywords[0] if defect.keywords else defect.category
    return FindingSpec(
        severity=severity,
        title=title or f"{word}: {defect.description[:60]}",
        section=defect.section,
        file=defect.file,
        lines=defect.lines,
    )


def oracle(case: Case) -> list[dict[str, Any]]:
    """Exactly the seeded defects (APPROVED for a clean case)."""
    if case.spec.clean:
        return [{"message": review_text("APPROVED")}]
    return [{"message": review_text("REVISE", [finding_of(d) for d in case.spec.defect])}]


def approve(case: Case) -> list[dict[str, Any]]:
    return [{"message": review_text("APPROVED")}]


def wrong_blocker(case: Case) -> FindingSpec:
    """A high finding at a place no defect is (the plan's title, or line 1 of a file)."""
    return FindingSpec(
        severity="high",
        title="Unrelated concern with naming",
        section="Nowhere in this plan" if case.spec.kind == "plan" else None,
        file=None if case.spec.kind == "plan" else "unrelated/elsewhere.py",
        lines=None if case.spec.kind == "plan" else (1, 1),
    )


def oracle_plus_wrong(case: Case) -> list[dict[str, Any]]:
    """The seeded defects and one wrong blocker."""
    found = [finding_of(d) for d in case.spec.defect]
    return [{"message": review_text("REVISE", [*found, wrong_blocker(case)])}]


def alternating(case: Case) -> list[dict[str, Any]]:
    """Epoch one way, epoch the other: the oracle, then an approval (and back)."""
    if case.spec.clean:
        return [
            {"message": review_text("APPROVED")},
            {"message": review_text("REVISE", [wrong_blocker(case)])},
        ]
    return [*oracle(case), {"message": review_text("APPROVED")}]


def decoys(case: Case) -> list[dict[str, Any]]:
    """For each defect, findings that each miss one rule: the wrong place (with a keyword),
    the right place without a keyword, the right place and keyword below its severity."""
    found: list[FindingSpec] = []
    for defect in case.spec.defect:
        right = finding_of(defect)
        if defect.section is not None:
            found.append(replace(right, section="Nowhere in this plan"))
        else:
            assert defect.lines is not None
            far = defect.lines[1] + 40
            found.append(replace(right, lines=(far, far)))
        found.append(
            replace(
                right,
                title="Unrelated concern with naming",
                what="x",
                why="y",
                impact="z",
                recommendation="w",
            )
        )
        if defect.severity.value in ("high", "critical"):
            found.append(replace(right, severity="medium"))
    if not found:
        return [{"message": review_text("APPROVED")}]
    return [{"message": review_text("REVISE", found)}]
