"""The places reviewers cite, read at their boundaries: the lines a report can put a
comment on.

``parse.markdown.split_place`` is the one parser of a cited place, for both contracts:
``path:12``, ``path:12-14``, ``path lines 9-10``, ``path line 9``, ``path#L9-L10``,
``path#L9``, a backquoted path with spaces, and the JSON contract's fields.  Line 1 is a
line; a line 0 and a range that ends before it starts (``10-9``) are no line, never a
crash and never a guess.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_advreview.models import Location, ReviewStatus
from pytest_advreview.parse import markdown
from pytest_advreview.parse.json import parse_json
from pytest_advreview.report.files import Anchors
from pytest_advreview.testing import FindingSpec, revise_review
from test_reports import _finding, _record

PLACES = [
    # (as written, path, first line, last line)
    ("src/pay.py:12", "src/pay.py", 12, None),
    ("src/pay.py:1", "src/pay.py", 1, None),
    ("src/pay.py:12-14", "src/pay.py", 12, 14),
    ("src/pay.py lines 9-10", "src/pay.py", 9, 10),
    ("src/pay.py line 9", "src/pay.py", 9, None),
    ("src/pay.py#L9-L10", "src/pay.py", 9, 10),
    ("src/pay.py#L9", "src/pay.py", 9, None),
    ("`src/pay.py` (lines 9–10)", "src/pay.py", 9, 10),
    ("src/pay.py", "src/pay.py", None, None),
    ("`my dir/pay file.py` lines 3-4", "my dir/pay file.py", 3, 4),
    ("`my dir/pay file.py:7`", "my dir/pay file.py", 7, None),
    # No line: a range that ends before it starts, a line 0.
    ("src/pay.py:10-9", "src/pay.py", None, None),
    ("src/pay.py lines 10-9", "src/pay.py", None, None),
    ("src/pay.py#L10-L9", "src/pay.py", None, None),
    ("src/pay.py:0", "src/pay.py", None, None),
]


def _markdown_location(value: str) -> Location | None:
    text = revise_review(FindingSpec("high", "Bug", file=value))
    (finding,) = markdown.parse_markdown(text).findings
    return finding.location


@pytest.mark.parametrize(("value", "path", "start", "end"), PLACES)
def test_every_cited_place_parses_in_the_markdown_contract(
    value: str, path: str, start: int | None, end: int | None
) -> None:
    assert _markdown_location(value) == Location(file=path, line_start=start, line_end=end)


def test_a_place_in_the_location_field_parses_like_the_file_field() -> None:
    text = revise_review(FindingSpec("high", "Bug")).replace(
        "- **What can go wrong:**", "- **Location:** src/pay.py#L9-L10\n- **What can go wrong:**"
    )
    (finding,) = markdown.parse_markdown(text).findings
    assert finding.location == Location(file="src/pay.py", line_start=9, line_end=10)


def _json_review(**place: Any) -> str:
    finding = {
        "severity": "high",
        "title": "Bug",
        "file": None,
        "section": None,
        "line_start": None,
        "line_end": None,
        "what_can_go_wrong": "w",
        "why_vulnerable": "v",
        "impact": "i",
        "recommendation": "r",
        **place,
    }
    return json.dumps({"summary": "s", "findings": [finding], "verdict": "REVISE"})


@pytest.mark.parametrize(("value", "path", "start", "end"), PLACES)
def test_every_cited_place_in_the_json_file_field_parses_when_the_line_fields_are_null(
    value: str, path: str, start: int | None, end: int | None
) -> None:
    (finding,) = parse_json(_json_review(file=value)).findings
    assert finding.location == Location(file=path, line_start=start, line_end=end)


@pytest.mark.parametrize(
    ("place", "expected"),
    [
        ({"file": "src/pay.py", "line_start": 9, "line_end": 10}, ("src/pay.py", 9, 10)),
        ({"file": "src/pay.py", "line_start": 1}, ("src/pay.py", 1, None)),
        # Spaces in a JSON path are the path's: no backticks needed.
        ({"file": "my dir/pay file.py", "line_start": 2}, ("my dir/pay file.py", 2, None)),
        ({"file": "my dir/pay file.py:3"}, ("my dir/pay file.py", 3, None)),
        # The line fields win over lines in the path.
        ({"file": "src/pay.py:3", "line_start": 5, "line_end": 6}, ("src/pay.py", 5, 6)),
        ({"file": "src/pay.py", "line_start": 10, "line_end": 9}, ("src/pay.py", None, None)),
        ({"file": "src/pay.py", "line_start": 0}, ("src/pay.py", None, None)),
        ({"file": "src/pay.py", "line_start": -3, "line_end": 4}, ("src/pay.py", None, None)),
        ({"file": "src/pay.py", "line_end": 4}, ("src/pay.py", None, None)),
    ],
)
def test_the_json_line_fields_are_used_and_a_bad_range_is_no_line(
    place: dict[str, Any], expected: tuple[str, int | None, int | None]
) -> None:
    (finding,) = parse_json(_json_review(**place)).findings
    path, start, end = expected
    assert finding.location == Location(file=path, line_start=start, line_end=end)


def test_a_plan_section_with_lines_in_json_keeps_its_lines() -> None:
    (finding,) = parse_json(_json_review(section="Rollout", line_start=4)).findings
    assert finding.location == Location(section="Rollout", line_start=4)


def test_a_stored_record_with_a_reversed_range_anchors_at_the_file(tmp_path: Path) -> None:
    # Records stored before the parser dropped such ranges may still hold one.
    bad = _finding("high", "Old", file="src/pay.py", line_start=10, line_end=9)
    record = _record("", ReviewStatus.REVISE, "failed", (bad,), kind="code")
    anchor = Anchors(tmp_path).of(record, bad)
    assert (anchor.path, anchor.line_start, anchor.line_end) == ("src/pay.py", None, None)
