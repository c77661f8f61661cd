"""A verifier's answer -> :class:`Verification` (docs/confirmation.md).

The strict format (:data:`~pytest_advreview.prompts.VERIFY_FORMAT` tells the verifier)::

    VERIFICATION: CONFIRMED          (or REFUTED)
    EVIDENCE: the lines read or the command run
    REASON: why the finding holds, or why it does not
    VERDICT: APPROVED

Each of the first three lines exactly once, outside fenced blocks and quotes (where the
verifier quotes the material, which a pull request writes).  ``VERDICT: APPROVED`` is
the envelope every backend's contract check needs; it carries no meaning.  Anything else
is no answer: :class:`VerificationFormatError`, the item's error, never a refutation.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, ValidationError

from ..models import WireModel

__all__ = ["Verification", "VerificationFormatError", "parse_verification"]

_LINE = re.compile(r"^(VERIFICATION|EVIDENCE|REASON):[ \t]*(.*?)[ \t]*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


class VerificationFormatError(ValueError):
    """The verifier's answer is neither CONFIRMED nor REFUTED in the strict format."""


class Verification(WireModel):
    """What a verifier said of one finding: its answer, its evidence, its reason."""

    result: Literal["CONFIRMED", "REFUTED"]
    evidence: str = Field(min_length=1, max_length=4000)
    reason: str = Field(min_length=1, max_length=4000)


def parse_verification(text: str) -> Verification:
    """The verification in ``text``.

    :raises VerificationFormatError: a line missing, given twice, or empty; an answer
        other than ``CONFIRMED`` or ``REFUTED``.
    """
    found: dict[str, list[str]] = {}
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        match = _LINE.match(line)
        if match is not None:
            found.setdefault(match.group(1), []).append(match.group(2))
    for key in ("VERIFICATION", "EVIDENCE", "REASON"):
        values = found.get(key, [])
        if len(values) != 1:
            said = "no" if not values else f"{len(values)}"
            raise VerificationFormatError(
                f"{said} {key}: line{'s' if len(values) > 1 else ''} in the verifier's "
                "answer (exactly one of each of VERIFICATION, EVIDENCE and REASON)"
            )
    try:
        return Verification(
            result=found["VERIFICATION"][0],  # type: ignore[arg-type]
            evidence=found["EVIDENCE"][0],
            reason=found["REASON"][0],
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise VerificationFormatError(
            f"the verifier's answer is not CONFIRMED or REFUTED with evidence and a reason "
            f"({where}: {first['msg']})"
        ) from None
