"""Boundaries of review parsing (parse/): the medium count the triage covers, the length
of a stub and of the scanned window, the shown last line of a review without a verdict,
every strong environment-failure phrase, and every severity on each side of fail-on."""

from __future__ import annotations

import pytest

from pytest_advreview.models import (
    Finding,
    Location,
    OutputFormat,
    Review,
    ReviewQuality,
    Severity,
    Verdict,
)
from pytest_advreview.parse import analyse, classify_quality
from pytest_advreview.parse.quality import MAX_COVERED_MEDIUM


def finding(severity: str, n: int) -> str:
    return (
        f"### [severity: {severity}] Problem number {n}\n"
        f"- **Section:** Task {n}\n"
        f"- **What can go wrong:** thing {n} breaks.\n"
    )


def review(findings: str, verdict: str = "VERDICT: REVISE") -> str:
    return f"## Summary\n\nThe plan.\n\n## Findings\n\n{findings}\n## Verdict\n\n{verdict}\n"


def test_the_triage_covers_ten_medium_findings() -> None:
    assert MAX_COVERED_MEDIUM == 10


@pytest.mark.parametrize(("count", "truncated"), [(9, False), (10, False), (11, True)])
def test_the_triage_counts_medium_findings_up_to_the_limit(count: int, truncated: bool) -> None:
    text = review("".join(finding("medium", n) for n in range(count)))
    triage = analyse(text).triage
    assert (triage.covered_medium, triage.truncated) == (min(count, 10), truncated)
    assert triage.finding_count == count
    assert triage.max_severity == "medium"


def test_the_triage_counts_each_severity() -> None:
    text = review(
        finding("critical", 1) + finding("high", 2) + finding("high", 3) + finding("medium", 4)
    )
    triage = analyse(text).triage
    assert (
        triage.status,
        triage.finding_count,
        triage.max_severity,
        triage.covered_critical,
        triage.covered_high,
        triage.covered_medium,
        triage.truncated,
        triage.needs_lead_judgment,
    ) == ("ok", 4, "critical", 1, 2, 1, False, False)
    approved = analyse(review("None.\n", "VERDICT: APPROVED")).triage
    assert (approved.max_severity, approved.finding_count) == ("none", 0)


@pytest.mark.parametrize("fail_on", [Severity.MEDIUM, Severity.HIGH, Severity.CRITICAL])
@pytest.mark.parametrize("severity", ["medium", "high", "critical"])
def test_approved_with_a_finding_is_drift_exactly_at_or_above_fail_on(
    fail_on: Severity, severity: str
) -> None:
    result = analyse(review(finding(severity, 1), "VERDICT: APPROVED"), fail_on=fail_on)
    ranks = {"medium": 1, "high": 2, "critical": 3}
    at_or_above = ranks[severity] >= ranks[fail_on.value]
    assert (result.drift is not None) is at_or_above
    assert result.triage.needs_lead_judgment is at_or_above


def test_the_threshold_may_come_as_a_plain_string() -> None:
    result = analyse(review(finding("medium", 1), "VERDICT: APPROVED"), "markdown", "high")  # type: ignore[arg-type]
    assert result.drift is None
    result = analyse(review(finding("high", 1), "VERDICT: APPROVED"), "markdown", "high")  # type: ignore[arg-type]
    assert result.drift is not None and "fail-on high" in result.drift


def test_the_drift_texts_word_for_word() -> None:
    assert analyse("  \n").drift == "empty review"
    assert analyse(review("None.\n")).drift == (
        "verdict REVISE without any [severity: critical|high|medium] finding"
    )


@pytest.mark.parametrize(("length", "shown"), [(79, None), (80, None), (81, 77)])
def test_the_last_line_of_a_review_without_a_verdict_is_shown_up_to_80_characters(
    length: int, shown: int | None
) -> None:
    last = "x" * length
    drift = analyse(f"## Summary\n\nok\n\n{last}\n\n").drift
    assert drift is not None
    expected = last if shown is None else last[:shown] + "..."
    assert drift.startswith(f"no verdict on the last line (got {expected!r}): ")


def test_json_drift_keeps_the_markdown_reading() -> None:
    result = analyse(review(finding("high", 1)), OutputFormat.JSON)
    assert result.drift is not None
    assert [f.severity for f in result.review.findings] == [Severity.HIGH]
    assert result.triage.needs_lead_judgment


def test_a_valid_json_review_is_judged_like_a_markdown_one() -> None:
    text = '{"summary": "s", "verdict": "REVISE", "findings": []}'
    result = analyse(text, "json")  # type: ignore[arg-type]
    assert result.drift == "verdict REVISE without any [severity: critical|high|medium] finding"


def _stub(text: str) -> Review:
    return Review(summary="", findings=(), verdict=None, raw=text)


@pytest.mark.parametrize(("length", "stub"), [(599, True), (600, True), (601, False)])
def test_an_error_stub_is_at_most_600_characters(length: int, stub: bool) -> None:
    text = "error: too many requests".ljust(length, ".")
    quality = classify_quality(_stub(f"  {text}\n"))
    assert (quality is ReviewQuality.DEGRADED_ENVIRONMENTAL) is stub


def test_a_stub_with_a_heading_or_json_is_not_a_stub() -> None:
    assert (
        classify_quality(_stub("error: too many requests")) is ReviewQuality.DEGRADED_ENVIRONMENTAL
    )
    assert classify_quality(_stub("# Review\nerror: too many requests")) is ReviewQuality.VALID
    assert classify_quality(_stub("x\n  # note\ntoo many requests")) is ReviewQuality.VALID
    assert classify_quality(_stub('{"error": "too many requests"}')) is ReviewQuality.VALID


STRONG = [
    "bwrap: setting up uid map: Permission denied",
    "operation not permitted",
    "read-only file system",
    "not inside a trusted directory",
    "pass --skip-git-repo-check",
    "do you trust the contents of this directory",
    "too many requests",
    "http 429",
    "rate limit reached",
    "you hit your usage limit",
    "usage limit",
    "quota exceeded",
    "no such file or directory",
    "permission denied",
    "sandbox setup failed",
    "sandbox error: x",
    "failed to set up the sandbox",
    "sandbox prevented me",
]


@pytest.mark.parametrize("phrase", STRONG)
def test_every_strong_failure_phrase_makes_a_short_stub_environmental(phrase: str) -> None:
    assert classify_quality(_stub(f"Error: {phrase}.")) is ReviewQuality.DEGRADED_ENVIRONMENTAL
    assert classify_quality(_stub("Error: all is fine.")) is ReviewQuality.VALID


@pytest.mark.parametrize(
    "weak", ["bwrap", "sandbox", "rate-limit", "quota", "trusted directory", "file not found"]
)
def test_a_weak_mention_needs_a_statement_of_inability(weak: str) -> None:
    text = "# Review\n" + "The plan is long. " * 40 + f"Note on {weak}.\n"
    assert classify_quality(_stub(text)) is ReviewQuality.VALID
    unable = text + "I could not perform the review.\n"
    assert classify_quality(_stub(unable)) is ReviewQuality.DEGRADED_ENVIRONMENTAL


@pytest.mark.parametrize(("filler", "found"), [(15_000, True), (40_000, False)])
def test_only_both_ends_of_a_long_review_are_scanned(filler: int, found: bool) -> None:
    middle = "# Review\n" + "a" * filler + "\nI could not read the plan.\n" + "b" * filler
    assert (classify_quality(_stub(middle)) is ReviewQuality.DEGRADED_ENVIRONMENTAL) is found


@pytest.mark.parametrize("at", ["start", "end"])
def test_an_inability_at_either_end_of_a_long_review_is_found(at: str) -> None:
    statement = "I could not read the plan."
    body = "# Review\n" + "a" * 40_000
    text = statement + "\n" + body if at == "start" else body + "\n" + statement
    assert classify_quality(_stub(text)) is ReviewQuality.DEGRADED_ENVIRONMENTAL


def _review_with(f: Finding, raw: str = "# Review\nfine\n") -> Review:
    return Review(summary="", findings=(f,), verdict=Verdict.REVISE, raw=raw)


def test_a_finding_backed_by_a_location_or_an_answer_makes_the_review_valid() -> None:
    bare = Finding(id="AR-000001", severity=Severity.HIGH, title="vague")
    assert classify_quality(_review_with(bare)) is ReviewQuality.DEGRADED_CONTENT
    located = bare.model_copy(update={"location": Location(section="3")})
    assert classify_quality(_review_with(located)) is ReviewQuality.VALID
    for answer in ("what_can_go_wrong", "why_vulnerable", "impact", "recommendation"):
        answered = bare.model_copy(update={answer: "because"})
        assert classify_quality(_review_with(answered)) is ReviewQuality.VALID


def test_a_finding_that_reports_the_reviewers_environment_is_not_backing() -> None:
    env = Finding(
        id="AR-000002",
        severity=Severity.HIGH,
        title="Cannot review",
        recommendation="I could not read the plan: permission denied",
    )
    raw = "# Review\nI could not read the plan: permission denied\n"
    assert classify_quality(_review_with(env, raw)) is ReviewQuality.DEGRADED_ENVIRONMENTAL
    # The same words with a location are a finding about the code, not the environment.
    located = env.model_copy(
        update={"recommendation": "handle permission denied", "location": Location(file="a.py")}
    )
    assert classify_quality(_review_with(located, raw)) is ReviewQuality.VALID
    unlocated = env.model_copy(update={"recommendation": "operation not permitted here"})
    stub = "# Review\nEvery command failed: operation not permitted.\n"
    assert classify_quality(_review_with(unlocated, stub)) is ReviewQuality.DEGRADED_ENVIRONMENTAL
    assert classify_quality(_review_with(located, stub)) is ReviewQuality.VALID


# -- the strict schema, made afresh (the review schema itself is made once per process) ----


def test_a_model_schema_is_made_strict_with_references_inlined() -> None:
    from typing import Literal

    from pydantic import BaseModel, Field

    from pytest_advreview.parse.json import strict_schema

    class Inner(BaseModel):
        name: str = "x"
        size: int | None = None

    class Outer(BaseModel):
        first: Inner = Field(description="the first")
        items: list[Inner] = []
        kind: Literal["a", "b"] = "a"

    inner = {
        "properties": {
            "name": {"title": "Name", "type": "string"},
            "size": {"anyOf": [{"type": "integer"}, {"type": "null"}], "title": "Size"},
        },
        "title": "Inner",
        "type": "object",
        "required": ["name", "size"],
        "additionalProperties": False,
    }
    assert strict_schema(Outer) == {
        "properties": {
            "first": {**inner, "description": "the first"},
            "items": {"items": inner, "title": "Items", "type": "array"},
            "kind": {"enum": ["a", "b"], "title": "Kind", "type": "string"},
        },
        "required": ["first", "items", "kind"],
        "title": "Outer",
        "type": "object",
        "additionalProperties": False,
    }


def test_an_object_without_properties_is_closed_too() -> None:
    from pytest_advreview.parse.json import _make_strict

    assert _make_strict({"type": "object", "default": {}}) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }
    assert _make_strict({"properties": {"a": {"type": "string", "default": "x"}}}) == {
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert _make_strict([{"type": "string", "default": "x"}, 3]) == [{"type": "string"}, 3]


def test_the_failure_patterns_join_their_parts_as_alternatives() -> None:
    from pytest_advreview.parse.quality import _patterns

    pattern = _patterns("ab|c", "d+")
    assert pattern.pattern == "(?:ab|c)|(?:d+)"
    assert pattern.search("xxc") and pattern.search("ddd") and not pattern.search("b")
    assert not _patterns("abc").search("ABC")  # case-sensitive: texts are lowercased first


# -- where a finding is --------------------------------------------------------------------

LOCATIONS = [
    ("- **File:** `src/a.py:10-20`", Location(file="src/a.py", line_start=10, line_end=20)),
    ("- **File:** src/a.py#L5-L7", Location(file="src/a.py", line_start=5, line_end=7)),
    ("- **File:** src/a.py#L5", Location(file="src/a.py", line_start=5)),
    ("- **File:** src/a.py lines 3 to 9", Location(file="src/a.py", line_start=3, line_end=9)),
    ("- **File:** src/a.py line 3", Location(file="src/a.py", line_start=3)),
    ("- **File:** lines 4-6", Location(line_start=4, line_end=6)),
    # A reversed range is no line: the finding points at its file (never a guessed range).
    ("- **File:** src/a.py:20-10", Location(file="src/a.py")),
    ("- **File:** (src/f.py:1),", Location(file="src/f.py", line_start=1)),
    ("- **File:** **src/g.py**", Location(file="src/g.py")),
    ("- **Location:** src/b.py:7", Location(file="src/b.py", line_start=7)),
    ("- **Location:** config:12", Location(file="config", line_start=12)),
    ("- **Location:** Task 3 — migration", Location(section="Task 3 — migration")),
    ("- **Location:** `README.md`", Location(file="README.md")),
    (
        "- **Section:** Task 2\n- **Location:** src/c.py",
        Location(file="src/c.py", section="Task 2"),
    ),
    (
        "- **File:** src/d.py\n- **Location:** Task 9",
        Location(file="src/d.py", section="Task 9"),
    ),
    ("- **File:** src/d.py\n- **Lines:** 8-9", Location(file="src/d.py", line_start=8, line_end=9)),
    ("- **File:** src/d.py:2\n- **Lines:** 8-9", Location(file="src/d.py", line_start=2)),
    ("- **Lines:** 5", Location(line_start=5)),
    ("- **Lines:** none", None),
    ("See src/e.py:33-34 for details.", Location(file="src/e.py", line_start=33, line_end=34)),
    ("See `src/e.py#L3` there.", Location(file="src/e.py", line_start=3)),
    ("A ratio of 3:4 and time 10:30.", None),
    ("See notes:12 and then lib/x.py:4.", Location(file="lib/x.py", line_start=4)),
    ("Nothing located here.", None),
]


@pytest.mark.parametrize(("fields", "location"), LOCATIONS, ids=[f for f, _ in LOCATIONS])
def test_where_a_finding_is(fields: str, location: Location | None) -> None:
    text = review(f"### [severity: high] A problem\n{fields}\n")
    (found,) = analyse(text).review.findings
    assert found.location == location


# -- a bold or numbered line that titles a finding when a severity field follows -----------


def soft(title: str, between: list[str], severity: str = "high") -> list[Finding]:
    body = "\n".join([title, *between, f"- Severity: {severity}", "- Impact: data loss"])
    return list(analyse(review(body + "\n")).review.findings)


@pytest.mark.parametrize(("prose", "opens"), [(0, True), (3, True), (4, False)])
def test_a_severity_field_opens_a_finding_within_four_lines_of_its_title(
    prose: int, opens: bool
) -> None:
    between = [f"line {n} of prose" for n in range(prose)]
    found = soft("**Missing rollback**", between)
    assert [f.title for f in found] == (["Missing rollback"] if opens else [])


def test_empty_and_quoted_lines_do_not_count_towards_the_four() -> None:
    between = ["one", "", "> quoted", "> quoted", "two", "three"]
    assert [f.title for f in soft("**Missing rollback**", between)] == ["Missing rollback"]


def test_a_heading_between_a_soft_title_and_its_severity_closes_it() -> None:
    # The heading titles the finding instead.
    assert [f.title for f in soft("**Missing rollback**", ["#### Other"])] == ["Other"]


@pytest.mark.parametrize("value", ["unknown", "n/a"])
def test_a_severity_field_without_a_severity_opens_nothing(value: str) -> None:
    assert soft("**Missing rollback**", [], severity=value) == []


@pytest.mark.parametrize(
    ("title", "opens"),
    [
        ("**Missing rollback**", True),
        ("__Missing rollback__", True),
        ("**ab**", True),
        ("**a**", True),
        ("****", False),
        ("1. Missing rollback", True),
        ("   **Missing rollback**", True),
        ("    **Missing rollback**", False),
        ("**Missing rollback__", False),
        ("Missing rollback", False),
    ],
)
def test_which_lines_may_title_a_finding(title: str, opens: bool) -> None:
    assert (soft(title, []) != []) is opens


def test_an_optional_reference_is_inlined_inside_its_any_of() -> None:
    from pydantic import BaseModel

    from pytest_advreview.parse.json import strict_schema

    class Inner(BaseModel):
        name: str

    class Outer(BaseModel):
        maybe: Inner | None = None

    (inner, null) = strict_schema(Outer)["properties"]["maybe"]["anyOf"]
    assert inner["properties"] == {"name": {"title": "Name", "type": "string"}}
    assert null == {"type": "null"}
