"""Replacement text the reviewer proposes: the ```suggestion block and the JSON field.

It reaches the pull-request review (``test_pr_review.py``) and rdjson's ``suggestions``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pytest_advreview.models import ReviewStatus
from pytest_advreview.parse import parse_json
from pytest_advreview.parse.markdown import parse_markdown, split_suggestion
from pytest_advreview.report.collect import ItemResult
from pytest_advreview.report.files import Anchors
from pytest_advreview.report.rdjson import render_rdjson
from test_reports import _finding, _record

MARKDOWN = """\
## Summary

Pays twice.

## Findings

### [severity: high] Retry pays twice
- **File:** src/pay.py lines 9-10
- **What can go wrong:** a retry after a timeout charges again.
- **Why vulnerable:** no idempotency key.
- **Impact:** double charges.
- **Recommendation:** Send an idempotency key.
  ```suggestion
      charge(order, key=order.id)
      log.info("charged")
  ```

VERDICT: REVISE
"""


def test_split_suggestion_takes_the_first_closed_suggestion_block() -> None:
    text = "Fix it.\n```suggestion\n    x = 1\n```\nThen test.\n```suggestion\ny\n```"
    assert split_suggestion(text) == ("Fix it.\nThen test.\n```suggestion\ny\n```", "    x = 1")


def test_split_suggestion_leaves_other_blocks_and_unclosed_ones_alone() -> None:
    for text in ("```python\nx = 1\n```", "Fix:\n```suggestion\nx = 1", "plain", "", None):
        assert split_suggestion(text) == (text, None)


def test_an_empty_suggestion_block_deletes_the_lines() -> None:
    assert split_suggestion("Remove them.\n```suggestion\n```") == ("Remove them.", "")
    assert split_suggestion("```suggestion\nx\n```") == (None, "x")


def test_markdown_recommendation_with_a_suggestion_block() -> None:
    (finding,) = parse_markdown(MARKDOWN).findings
    assert finding.recommendation == "Send an idempotency key."
    assert finding.suggestion == '    charge(order, key=order.id)\n    log.info("charged")'
    assert finding.location is not None and finding.location.line_start == 9


def _json(**extra: object) -> str:
    finding = {
        "severity": "high",
        "title": "Retry pays twice",
        "file": "src/pay.py",
        "section": None,
        "line_start": 9,
        "line_end": 10,
        "what_can_go_wrong": "w",
        "why_vulnerable": "v",
        "impact": "i",
        "recommendation": "Send an idempotency key.",
        **extra,
    }
    return json.dumps({"summary": "s", "findings": [finding], "verdict": "REVISE"})


def test_json_suggestion_field() -> None:
    (finding,) = parse_json(_json(suggestion="    charge(order, key=order.id)\n")).findings
    assert finding.suggestion == "    charge(order, key=order.id)"
    (finding,) = parse_json(_json(suggestion=None)).findings
    assert finding.suggestion is None
    (finding,) = parse_json(_json()).findings  # an older answer without the key
    assert finding.suggestion is None


def test_json_recommendation_block_is_split_too_and_the_field_wins() -> None:
    rec = "Use a key.\n```suggestion\nfrom_block()\n```"
    (finding,) = parse_json(_json(recommendation=rec)).findings
    assert (finding.recommendation, finding.suggestion) == ("Use a key.", "from_block()")
    (finding,) = parse_json(_json(recommendation=rec, suggestion="from_field()")).findings
    assert finding.suggestion == "from_field()"


def _rdjson(tmp_path: Path, **loc: object) -> list[dict[str, object]]:
    finding = _finding("high", "Retry pays twice", **loc).model_copy(
        update={"suggestion": "charge(order, key=order.id)"}
    )
    record = _record("", ReviewStatus.REVISE, "failed", (finding,), kind="code")
    text = render_rdjson([ItemResult(record, "failed")], Anchors(tmp_path))
    (tmp_path / "advreview.rdjson").write_text(text)
    diagnostics: list[dict[str, object]] = json.loads(text)["diagnostics"]
    return diagnostics


def test_rdjson_suggestion_replaces_the_cited_lines(
    tmp_path: Path, rdformat_validator: Callable[[Path], None]
) -> None:
    (diagnostic,) = _rdjson(tmp_path, file="src/pay.py", line_start=9, line_end=10)
    assert diagnostic["suggestions"] == [
        {
            "range": {"start": {"line": 9}, "end": {"line": 10}},
            "text": "charge(order, key=order.id)",
        }
    ]
    rdformat_validator(tmp_path / "advreview.rdjson")


def test_rdjson_leaves_out_a_suggestion_without_cited_lines(tmp_path: Path) -> None:
    (diagnostic,) = _rdjson(tmp_path, file="src/pay.py")
    assert "suggestions" not in diagnostic
