"""The JSON contract: the schema the reviewer is given and the check of its answer.

Codex forwards the schema but never validates the answer, so :func:`parse_json` does.
"""

from __future__ import annotations

import copy
import functools
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from ..models import Finding, Location, Review, Severity, Verdict, WireModel, finding_id
from .markdown import _UNTITLED, _location, split_place, split_suggestion


class ReviewFormatError(ValueError):
    """A JSON review that is not valid JSON or does not match :func:`review_schema`."""


class ReviewerFinding(WireModel):
    """One finding as the reviewer writes it under the JSON contract."""

    severity: Literal["critical", "high", "medium"] = Field(
        description="critical (data loss/security) > high (bug in prod) > medium (edge case)"
    )
    title: str = Field(description="Short title of the finding")
    file: str | None = Field(
        default=None, description="Path of the file the finding is about (code reviews)"
    )
    section: str | None = Field(
        default=None, description="Which part of the plan the finding is about (plan reviews)"
    )
    line_start: int | None = Field(default=None, description="First line, if known")
    line_end: int | None = Field(default=None, description="Last line, if known")
    what_can_go_wrong: str = Field(description="Concrete scenario, not hypothetical")
    why_vulnerable: str = Field(description="Why the artifact is vulnerable; cite it")
    impact: str = Field(description="What breaks and how badly")
    recommendation: str = Field(description="Specific change that fixes it")
    suggestion: str | None = Field(
        default=None,
        description="Replacement text for exactly the cited lines (file, line_start to "
        "line_end), if you propose one; else null",
    )
    confidence: float | None = Field(
        default=None,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="How sure you are that the finding is real, 0 to 1, or null; reported "
        "only, it never changes whether the finding blocks",
    )


class ReviewerOutput(WireModel):
    """The whole answer of the reviewer under the JSON contract."""

    summary: str = Field(description="One paragraph: what the artifact does, overall view")
    findings: list[ReviewerFinding] = Field(
        description="Actionable findings; empty when there are none"
    )
    verdict: Literal["APPROVED", "REVISE"] = Field(
        description="APPROVED only if findings is empty; REVISE if it lists any finding"
    )


def review_schema() -> dict[str, Any]:
    """The strict JSON schema for ``codex exec --output-schema``.

    Generated from :class:`ReviewerOutput` and made OpenAI-strict: ``$ref`` inlined,
    every object closed (``additionalProperties: false``) with every property required,
    optional values as ``anyOf [..., {"type": "null"}]`` and no ``default`` anywhere.
    Codex forwards the file unchanged with ``strict: true``; the API rejects anything less.

    :returns: a fresh copy the caller may mutate.
    """
    return copy.deepcopy(_strict_schema())


@functools.lru_cache(maxsize=1)
def _strict_schema() -> dict[str, Any]:
    return strict_schema(ReviewerOutput)


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema made OpenAI-strict (see :func:`review_schema`).

    The built-in lead's decisions schema is made the same way, so Codex accepts both.
    """
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})
    strict = _make_strict(_inline_refs(raw, defs))
    assert isinstance(strict, dict)
    return strict


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    # Inlining keeps the schema free of ``$ref`` siblings, which strict mode rejects.
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = _inline_refs(defs[ref.rsplit("/", 1)[-1]], defs)
            siblings = {k: _inline_refs(v, defs) for k, v in node.items() if k != "$ref"}
            return {**target, **siblings}
        return {k: _inline_refs(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline_refs(v, defs) for v in node]
    return node


def _make_strict(node: Any) -> Any:
    if isinstance(node, dict):
        out = {k: _make_strict(v) for k, v in node.items() if k != "default"}
        if out.get("type") == "object" or "properties" in out:
            props = out.get("properties", {})
            out["properties"] = props
            out["required"] = list(props)
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [_make_strict(v) for v in node]
    return node


def parse_json(text: str) -> Review:
    """Parse a review written under the JSON contract.

    :param text: the content of the ``-o`` file.
    :returns: the review; ``raw`` is ``text`` verbatim.
    :raises ReviewFormatError: the text is empty, not JSON, or does not match the schema;
        the message says which field is wrong.
    """
    if not text.strip():
        raise ReviewFormatError("the JSON review is empty")
    try:
        out = ReviewerOutput.model_validate_json(text)
    except ValidationError as exc:
        raise ReviewFormatError(_explain(exc)) from None
    findings = []
    for item in out.findings:
        title = item.title.strip() or _UNTITLED
        location = _json_location(item)
        recommendation, suggestion = split_suggestion(_blank_to_none(item.recommendation))
        if item.suggestion is not None and item.suggestion.strip():
            suggestion = item.suggestion.strip("\n")
        findings.append(
            Finding(
                id=finding_id(title, location),
                severity=Severity(item.severity),
                title=title,
                location=location,
                what_can_go_wrong=_blank_to_none(item.what_can_go_wrong),
                why_vulnerable=_blank_to_none(item.why_vulnerable),
                impact=_blank_to_none(item.impact),
                recommendation=recommendation,
                suggestion=suggestion,
                confidence=item.confidence,
            )
        )
    return Review(
        summary=out.summary.strip(),
        findings=tuple(findings),
        verdict=Verdict(out.verdict),
        raw=text,
    )


def _json_location(item: ReviewerFinding) -> Location | None:
    """The finding's place: its fields, read like the markdown contract's ``File:``.

    Reviewers put the lines in the path too (``"file": "src/pay.py:3"`` or ``"src/pay.py
    lines 9-10"`` with null lines): the path is cut there and those lines are used when
    the line fields are null.
    """
    file = _blank_to_none(item.file)
    start, end = item.line_start, item.line_end
    if file is not None:
        file, cited_start, cited_end = split_place(file, spaced=True)
        if start is None:
            start, end = cited_start, cited_end
    return _location(file, _blank_to_none(item.section), start, end)


def _explain(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    for err in errors:
        if err.get("type") == "json_invalid":
            return f"the review is not valid JSON: {err.get('msg', '')}"
    parts = []
    for err in errors[:3]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
        parts.append(f"{where}: {err.get('msg', '')}")
    more = f" (+{len(errors) - 3} more)" if len(errors) > 3 else ""
    return "the JSON review does not match the schema: " + "; ".join(parts) + more


def _blank_to_none(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return value or None
