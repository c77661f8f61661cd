"""The lead's contract (docs/lead.md, "The built-in lead"): its prompt, its answer, the checks.

The lead gets the reviewer's REVISE review and returns one decision per finding:
``accept``, ``re-scope``, ``reject`` (always with reasoning) or ``needs-operator`` (a
structural fix, such as a change of invocation grammar, output format or security
guarantee, which it must not apply: a person decides those).  The answer is
JSON that :class:`LeadAnswer` validates; :func:`check_answer` then holds it against the
review and against what the lead really changed, so a lead that skips a finding, invents
one, claims a fix it never made or edits without saying why is an error, never a pass.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import Field, ValidationError

from ..models import LeadAction, Review, WireModel
from ..parse import strict_schema
from ..validation import first_error

__all__ = [
    "LEAD_MARKER",
    "LeadAnswer",
    "LeadDecision",
    "LeadError",
    "answer_schema",
    "check_answer",
    "lead_prompt",
    "parse_answer",
]

#: First line of every lead prompt: tells a scripted server (and a person reading a
#: transcript) that this is the lead's turn, not the reviewer's.
LEAD_MARKER = "<!-- ADVREVIEW-LEAD: {key} round {round} -->"


class LeadError(Exception):
    """The lead could not run, timed out, or answered something unusable.

    :param mutations: paths the lead changed that it must not touch (a mutation error).
    """

    def __init__(self, message: str, *, mutations: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.mutations = tuple(mutations)


class LeadDecision(WireModel):
    """One decision of the lead on one finding, validated from the lead's JSON answer."""

    finding: str = Field(description="The finding id, e.g. AR-1a2b3c")
    action: LeadAction
    reason: str = Field(
        description="Why: what was applied, how the scope changed, or why the finding is wrong"
    )
    changed: str = Field(
        default="", description="What you changed in the file for this finding ('' if nothing)"
    )


class LeadAnswer(WireModel):
    """The lead's whole answer: one decision per finding of the review."""

    decisions: tuple[LeadDecision, ...]


def answer_schema() -> dict[str, Any]:
    """The strict JSON schema of :class:`LeadAnswer` (Codex ``--output-schema``, Claude
    ``--json-schema``)."""
    return strict_schema(LeadAnswer)


_PROMPT = """\
{marker}
<role>
You are the lead of an adversarial review. A reviewer attacked {what} and asked for
revision. You own the decisions: the reviewer's findings are suggestions to evaluate,
not orders to follow.
</role>

<task>
Evaluate every finding listed in <findings>. For each one choose exactly one action:
- accept: the finding is right. Fix it in the file.
- re-scope: the finding is partly right. Apply a narrower fix and say how the scope changed.
- reject: the finding is wrong. Say why; the reviewer reads your reasoning verbatim.
- needs-operator: the fix would be structural. Do NOT apply it; a person decides.
  Structural means: invocation grammar or argument semantics; output formats or parsed
  literals; workflow steps, fallback semantics or terminal states; sandbox, approval or
  security guarantees; public configuration semantics; schema, migration or data format
  changes; broad architectural rewrites; any fix whose scope you are unsure of.

Verify in proportion to severity: critical and high findings need real scrutiny (read
the file, check the claim); medium findings can be accepted, narrowed or rejected on
local reasoning. {level}
</task>

<rules>
- You may edit only: {allowed}. Changing, creating or deleting any other file is an
  error that stops the review.
- Apply only accepted and re-scoped fixes. Do not commit, do not run anything that
  changes the repository.
- Make every edit first, then give your answer.
</rules>

<review>
{review}
</review>

<findings>
{findings}
</findings>

<answer>
Answer with one JSON object and nothing else:
{{"decisions": [{{"finding": "AR-…", "action": "accept|re-scope|reject|needs-operator",
"reason": "…", "changed": "…"}}]}}
One entry per finding above; "reason" is never empty; "changed" says what you changed
for that finding ("" when you changed nothing).
</answer>
"""

_PLAN_LEVEL = (
    "Judge the plan at its declared level of abstraction: missing implementation details "
    "are findings only when their absence blocks feasibility, safety, rollback, "
    "verification, or a public contract."
)


def lead_prompt(
    *,
    key: str,
    round_no: int,
    kind: str,
    review: Review,
    allowed: Sequence[str],
) -> str:
    """The prompt of one lead turn.

    :param key: the target (``docs/plans/x.md`` or ``code-review``).
    :param round_no: the review round whose findings are evaluated.
    :param kind: ``plan`` or ``code``.
    :param review: the REVISE review, inserted verbatim.
    :param allowed: the repository-relative paths the lead may edit.
    """
    what = f"the implementation plan {key}" if kind == "plan" else "the current code change"
    findings = "\n".join(f"- {f.line()}" for f in review.findings) or "- (none)"
    return _PROMPT.format(
        marker=LEAD_MARKER.format(key=key, round=round_no),
        what=what,
        level=_PLAN_LEVEL if kind == "plan" else "",
        allowed=", ".join(allowed),
        review=review.raw.strip("\n"),
        findings=findings,
    )


_FENCE = re.compile(r"```(?:json)?\s*\n(.*?)\n```", re.DOTALL)


def parse_answer(text: str | None, *, who: str) -> LeadAnswer:
    """The lead's answer from its raw output: a JSON object, alone or in one code fence.

    :raises LeadError: no output, not JSON, or not the decisions shape (the message names
        the field).
    """
    if text is None or not text.strip():
        raise LeadError(f"{who} returned no decisions (empty answer)")
    candidates = [text.strip(), *(m.group(1) for m in _FENCE.finditer(text))]
    problem = ""
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except ValueError as exc:
            problem = f"not JSON ({exc})"
            continue
        return validate_answer(data, who=who)
    raise LeadError(f"{who} returned invalid decisions: {problem}; answer was: {_clip(text)}")


def validate_answer(data: object, *, who: str) -> LeadAnswer:
    """:class:`LeadAnswer` from decoded JSON, or a :class:`LeadError` naming the field."""
    try:
        return LeadAnswer.model_validate(data)
    except ValidationError as exc:
        problem = first_error(exc, "the answer")
        raise LeadError(f"{who} returned invalid decisions: {problem}") from None


def _clip(text: str, limit: int = 300) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_answer(answer: LeadAnswer, review: Review, *, edited: bool, who: str) -> None:
    """Hold the answer against the review and against what the lead really changed.

    :param edited: whether the lead changed any file it may edit.
    :raises LeadError: a finding without a decision, a decision on an unknown or repeated
        finding, an empty reason, a claimed fix without an edit, or an edit that no
        accepted or re-scoped finding explains.
    """
    known = [f.id for f in review.findings]
    seen: set[str] = set()
    for decision in answer.decisions:
        if decision.finding not in known:
            raise LeadError(
                f"{who} decided on {decision.finding}, which is not a finding of this review "
                f"(the findings are {', '.join(known)})"
            )
        if decision.finding in seen:
            raise LeadError(f"{who} decided twice on {decision.finding}")
        seen.add(decision.finding)
        if not decision.reason.strip():
            raise LeadError(
                f"{who} gave no reason for {decision.action.value} {decision.finding}; "
                "every decision needs one (rejections need reasons)"
            )
    missing = [f for f in known if f not in seen]
    if missing:
        raise LeadError(f"{who} returned no decision for {', '.join(missing)}")
    fixes = [
        d.finding for d in answer.decisions if d.action in (LeadAction.ACCEPT, LeadAction.RESCOPE)
    ]
    if fixes and not edited:
        raise LeadError(
            f"{who} accepted or re-scoped {', '.join(fixes)} but changed nothing (was its "
            "edit denied?); a fix that was never applied must not be re-reviewed as applied"
        )
    if edited and not fixes:
        raise LeadError(
            f"{who} changed the file although it accepted and re-scoped nothing; only "
            "accepted and re-scoped fixes may be applied"
        )
