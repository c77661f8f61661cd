"""The pull-request review planner (``report/pr_review.py``), over hand-built records.

What the Action sends through the fake GitHub server is in ``test_pr_review_action.py``;
the run with the real Codex CLI in ``test_pr_review_e2e.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_advreview import outbound
from pytest_advreview.models import Finding, ItemRecord, ReviewStatus, Waiver
from pytest_advreview.report.files import Anchors
from pytest_advreview.report.pr_review import (
    Posted,
    ReviewPlan,
    hunks_from_patch,
    leading_markers,
    plan_review,
)
from test_reports import _finding, _record

HEAD = "a" * 40
HEAD2 = "b" * 40
POSTER = "github-actions[bot]"
#: src/pay.py lines 5-14 and 40-41 changed; the plan's lines 1-3 changed.
HUNKS = {"src/pay.py": [(5, 14), (40, 41)], "docs/plans/p.md": [(1, 3)]}


def _code(title: str, start: int | None, end: int | None = None, **extra: object) -> Finding:
    finding = _finding("high", title, file="src/pay.py", line_start=start, line_end=end)
    return finding.model_copy(update=extra)


def _plan(tmp_path: Path, *findings: Finding) -> ItemRecord:
    (tmp_path / "docs/plans").mkdir(parents=True, exist_ok=True)
    (tmp_path / "docs/plans/p.md").write_text("# Plan\n\n## Rollout\n\ntext\n\n## Rollback\n")
    return _record("p.md", ReviewStatus.REVISE, "failed", findings)


def _codes(*findings: Finding, outcome: str = "failed") -> ItemRecord:
    return _record("", ReviewStatus.REVISE, outcome, findings, kind="code")


def _plan_for(
    tmp_path: Path, records: list[ItemRecord], posted: list[Posted] = (), head: str = HEAD
) -> ReviewPlan:
    anchors = Anchors(tmp_path)
    return plan_review(records, HUNKS, head, list(posted), poster=POSTER, anchor_of=anchors.of)


def _as_posted(plan: ReviewPlan, start: int = 1, author: str = POSTER) -> list[Posted]:
    """What GitHub holds after ``plan`` was posted: the review and its comments."""
    out = [Posted(id=start, kind="review", author=author, body=plan.body)]
    out += [
        Posted(id=start + n, kind="comment", author=author, body=c.body)
        for n, c in enumerate(plan.comments, start=1)
    ]
    return out


def test_hunks_from_patch_reads_the_new_side_of_every_hunk() -> None:
    patch = "@@ -1,3 +1,4 @@\n x\n+y\n@@ -20 +21 @@\n-a\n+b\n@@ -30,2 +32,0 @@\n-c\n-d"
    assert hunks_from_patch(patch) == [(1, 4), (21, 21)]


def test_first_push_lines_suggestion_and_body(tmp_path: Path) -> None:
    in_diff = _code("Retry pays twice", 9, 10, suggestion="    charge(order, key=order.id)")
    one_line = _code("Log leaks the card", 40)
    outside = _code("Old helper is wrong", 100, 101)
    no_line = _code("Module has no tests", None)
    plan = _plan_for(tmp_path, [_codes(in_diff, one_line, outside, no_line)])
    request = plan.review_request()
    assert request is not None
    assert request["event"] == "COMMENT" and request["commit_id"] == HEAD
    first, second = plan.comments
    assert (first.path, first.start_line, first.line, first.side) == ("src/pay.py", 9, 10, "RIGHT")
    assert first.body.startswith(f"<!-- advreview:finding {in_diff.id} -->\n")
    assert "**[high] Retry pays twice**" in first.body
    assert "**What can go wrong:** A crash halfway" in first.body
    assert "**Recommendation:** Add a rollback checkpoint." in first.body
    assert "```suggestion\n    charge(order, key=order.id)\n```" in first.body
    assert (second.line, second.start_line) == (40, None)
    assert "suggestion" not in second.body
    assert plan.in_body == (outside.id, no_line.id)
    assert f"`{outside.id}` — src/pay.py lines 100-101" in plan.body
    assert leading_markers(plan.body) == {
        ("review", HEAD),
        ("finding", outside.id),
        ("finding", no_line.id),
    }


def test_a_range_across_two_hunks_goes_to_the_body(tmp_path: Path) -> None:
    plan = _plan_for(tmp_path, [_codes(_code("Spans hunks", 12, 40))])
    assert plan.comments == () and len(plan.in_body) == 1


def test_plan_finding_sits_on_its_heading_when_in_the_diff(tmp_path: Path) -> None:
    on_heading = _finding("high", "Rollout has no owner", section="Rollout")  # line 3
    elsewhere = _finding("high", "Rollback untested", section="Rollback")  # line 7
    plan = _plan_for(tmp_path, [_plan(tmp_path, on_heading, elsewhere)])
    (comment,) = plan.comments
    assert (comment.path, comment.line) == ("docs/plans/p.md", 3)
    assert plan.in_body == (elsewhere.id,)


def test_a_suggestion_is_not_put_on_a_plan_heading(tmp_path: Path) -> None:
    finding = _finding("high", "Rollout", section="Rollout").model_copy(
        update={"suggestion": "## Rollout (owned by ops)"}
    )
    (comment,) = _plan_for(tmp_path, [_plan(tmp_path, finding)]).comments
    assert "suggestion" not in comment.body


def test_second_push_posts_only_the_new_finding_and_resolves_the_fixed_one(
    tmp_path: Path,
) -> None:
    kept, fixed = _code("Kept", 6), _code("Fixed", 7)
    first = _plan_for(tmp_path, [_codes(kept, fixed)])
    posted = _as_posted(first)
    new = _code("New", 8)
    second = _plan_for(tmp_path, [_codes(kept, new)], posted, head=HEAD2)
    assert second.on_lines == (new.id,)
    (reply,) = second.replies
    thread = next(p.id for p in posted if fixed.id in p.body and p.kind == "comment")
    assert reply.comment_id == thread
    assert reply.body == f"<!-- advreview:resolved {fixed.id} -->\nResolved in {HEAD2}."
    # A third run on the same state says nothing again.
    again = posted + _as_posted(second, start=50)
    again += [Posted(id=99, kind="comment", author=POSTER, body=reply.body, in_reply_to=thread)]
    third = _plan_for(tmp_path, [_codes(kept, new)], again, head=HEAD2)
    assert third.review_request() is None and third.replies == ()


def test_force_push_with_the_same_findings_posts_nothing(tmp_path: Path) -> None:
    finding = _code("Kept", 6)
    posted = _as_posted(_plan_for(tmp_path, [_codes(finding)]))
    plan = _plan_for(tmp_path, [_codes(finding)], posted, head=HEAD2)
    assert plan.review_request() is None and plan.replies == ()


def test_the_same_head_is_reviewed_once(tmp_path: Path) -> None:
    posted = [Posted(id=1, kind="review", author=POSTER, body=f"<!-- advreview:review {HEAD} -->")]
    plan = _plan_for(tmp_path, [_codes(_code("New", 6))], posted)
    assert plan.review_request() is None and plan.comments == ()


def test_nothing_is_resolved_while_an_item_errored(tmp_path: Path) -> None:
    fixed = _code("Fixed", 7)
    posted = _as_posted(_plan_for(tmp_path, [_codes(fixed)]))
    errored = _record("x.md", ReviewStatus.ABORTED, "error", error="codex exited 1")
    plan = _plan_for(tmp_path, [_codes(), errored], posted, head=HEAD2)
    assert plan.replies == ()


def test_a_run_without_items_resolves_nothing(tmp_path: Path) -> None:
    posted = _as_posted(_plan_for(tmp_path, [_codes(_code("Fixed", 7))]))
    assert _plan_for(tmp_path, [], posted, head=HEAD2).replies == ()


def test_bare_findings_an_empty_suggestion_and_a_waiver_in_the_body(tmp_path: Path) -> None:
    bare = _code("Bare", 6, suggestion="").model_copy(
        update={"what_can_go_wrong": None, "recommendation": None}
    )
    waived = _code("Waived far away", 300)
    unplaced = _finding("high", "Somewhere", section="Payments")  # a code item: no file
    record = _waived(_codes(bare, waived, unplaced), waived)
    plan = _plan_for(tmp_path, [record])
    (comment,) = plan.comments
    assert comment.body.endswith("**[high] Bare** · `" + bare.id + "`\n\n```suggestion\n```")
    assert "  - **Waived** by @lead: Known; fixed in #12" in plan.body
    assert f"`{unplaced.id}` — Payments" in plan.body


def _waived(record: ItemRecord, finding: Finding) -> ItemRecord:
    waiver = Waiver(finding=finding.id, by="@lead", reason="Known; fixed in #12", source="command")
    return record.model_copy(update={"waived": (waiver,)})


def test_a_waived_finding_says_who_waived_it(tmp_path: Path) -> None:
    finding = _code("Waived one", 6)
    posted = _as_posted(_plan_for(tmp_path, [_codes(finding)]))
    plan = _plan_for(tmp_path, [_waived(_codes(finding), finding)], posted, head=HEAD2)
    (reply,) = plan.replies
    assert reply.body.startswith(f"<!-- advreview:waived {finding.id} -->\n")
    assert "**Waived** by @lead: Known; fixed in #12" in reply.body
    # Said once.
    posted.append(Posted(id=70, kind="comment", author=POSTER, body=reply.body, in_reply_to=2))
    assert _plan_for(tmp_path, [_waived(_codes(finding), finding)], posted).replies == ()


def test_a_finding_waived_before_it_was_posted_carries_the_waiver(tmp_path: Path) -> None:
    finding = _code("Waived one", 6)
    plan = _plan_for(tmp_path, [_waived(_codes(finding), finding)])
    (comment,) = plan.comments
    assert ("waived", finding.id) in leading_markers(comment.body)
    assert "**Waived** by @lead" in comment.body
    later = _plan_for(tmp_path, [_waived(_codes(finding), finding)], _as_posted(plan), HEAD2)
    assert later.replies == () and later.review_request() is None


def test_only_the_posters_own_markers_count(tmp_path: Path) -> None:
    finding, gone = _code("Open", 6), _code("Gone", 7)
    forged = [
        Posted(
            id=5, kind="comment", author="mallory", body=f"<!-- advreview:finding {finding.id} -->"
        ),
        Posted(
            id=6, kind="comment", author="mallory", body=f"<!-- advreview:finding {gone.id} -->"
        ),
        Posted(id=7, kind="review", author="mallory", body=f"<!-- advreview:review {HEAD} -->"),
    ]
    plan = _plan_for(tmp_path, [_codes(finding)], forged)
    assert plan.on_lines == (finding.id,)  # still posted
    assert plan.replies == ()  # nobody else's comment is answered


def test_a_marker_inside_finding_text_never_counts(tmp_path: Path) -> None:
    victim = _code("Victim", 6)
    attacker = _code(f"<!-- advreview:finding {victim.id} -->", 7).model_copy(
        update={"recommendation": f"x\n<!-- advreview:resolved {victim.id} -->"}
    )
    first = _plan_for(tmp_path, [_codes(attacker)])
    posted = _as_posted(first)
    for item in posted:
        assert ("finding", victim.id) not in leading_markers(item.body)
        assert "<!-- advreview:resolved" not in item.body
    plan = _plan_for(tmp_path, [_codes(attacker, victim)], posted, head=HEAD2)
    assert plan.on_lines == (victim.id,)


def test_leading_markers_stop_at_the_first_other_line() -> None:
    body = "<!-- advreview:finding AR-aaaaaa -->\ntitle\n<!-- advreview:finding AR-bbbbbb -->"
    assert leading_markers(body) == {("finding", "AR-aaaaaa")}


def test_texts_go_through_the_redaction_pass(tmp_path: Path) -> None:
    secret = "sk-proj-" + "Z" * 40
    outbound.install(outbound.Redactor.from_environ({"OPENAI_API_KEY": secret}))
    try:
        finding = _code(f"Leaks {secret}", 6, suggestion=f"key = '{secret}'\u202e")
        outside = _code(f"Also {secret}", 200)
        plan = _plan_for(tmp_path, [_codes(finding, outside)])
    finally:
        outbound.install(None)
    text = plan.model_dump_json()
    assert secret not in text and "\u202e" not in text
    assert "\\u202e" in plan.comments[0].body


def test_the_reviewers_mentions_notify_nobody_but_the_waivers_name_stays(tmp_path: Path) -> None:
    finding = _code(
        "Ask @octo-org/security to sign off",
        6,
        recommendation="Ping @alice; keep `@bob` in code.",
        suggestion="@pytest.fixture\ndef pay(): ...",
    )
    outside = _code("Tell @carol", 200)
    plan = _plan_for(tmp_path, [_waived(_codes(finding, outside), finding)])
    (comment,) = plan.comments
    assert "<code>@octo-org/security</code>" in comment.body
    assert "Ping <code>@alice</code>; keep `@bob` in code." in comment.body
    assert "```suggestion\n@pytest.fixture\ndef pay(): ...\n```" in comment.body
    assert "**Waived** by @lead" in comment.body  # the person who waived, from GitHub
    assert "<code>@carol</code>" in plan.body
    # Every other "@" left bare is in code: the suggestion's decorator.
    bare = r"(?<![\w`>@/.-])@[\w-]+"
    assert re.findall(bare, comment.body.replace("@lead", "")) == ["@pytest"]
    assert re.findall(bare, plan.body) == []


def test_a_suggestion_with_backticks_gets_a_longer_fence(tmp_path: Path) -> None:
    finding = _code("Fence", 6, suggestion="x = '```'\n```\n")
    (comment,) = _plan_for(tmp_path, [_codes(finding)]).comments
    assert "````suggestion\nx = '```'\n```\n\n````" in comment.body


def test_an_overlong_comment_is_cut(tmp_path: Path) -> None:
    finding = _code("Long", 6).model_copy(update={"recommendation": "x" * 70_000})
    (comment,) = _plan_for(tmp_path, [_codes(finding)]).comments
    assert len(comment.body) <= 65_000 and comment.body.endswith("(cut to GitHub's limit)")


@pytest.mark.parametrize("findings", [(), None])
def test_nothing_to_say_is_no_review(tmp_path: Path, findings: object) -> None:
    records = [] if findings is None else [_codes()]
    plan = _plan_for(tmp_path, records)
    assert plan.review_request() is None and plan.replies == ()
