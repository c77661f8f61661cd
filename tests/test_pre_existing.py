"""Pre-existing findings (``hunks.py``) and a reviewer's confidence, unit by unit.

A finding is pre-existing only when its place lies outside every changed hunk for
certain: each way of citing a place that leaves a doubt (no place, another spelling, a
file not in the diff, a renamed or deleted file, a deleted line cited by its old number,
a line past the end) must leave it an ordinary finding.  The end-to-end run with the
real Codex CLI is ``test_pre_existing_e2e.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import commit, git, init_repo, write
from pytest_advreview import hunks
from pytest_advreview.hunks import FileHunks, Hunk, of_change, pre_existing
from pytest_advreview.interdiff import _ranges
from pytest_advreview.models import (
    ChangeSet,
    Finding,
    Location,
    ReviewStatus,
    Severity,
    Verdict,
    finding_id,
)
from pytest_advreview.outcome import OutcomeKind, decide, failure_summary, warning_message
from pytest_advreview.parse import analyse
from pytest_advreview.parse.json import ReviewFormatError, parse_json
from pytest_advreview.parse.markdown import parse_markdown
from pytest_advreview.report.files import Anchors
from pytest_advreview.report.pr_review import plan_review
from test_outcome import make_result, make_review
from test_reports import _record

APP = "".join(f"line_{n} = {n}\n" for n in range(1, 31))


def _finding(
    file: str | None = "app.py",
    start: int | None = 20,
    end: int | None = None,
    *,
    severity: Severity = Severity.HIGH,
    title: str = "t",
) -> Finding:
    where = Location(file=file, line_start=start, line_end=end) if file or start else None
    return Finding(id=finding_id(title, where), severity=severity, title=title, location=where)


# -- parsing hunks ------------------------------------------------------------------------


def test_parse_reads_both_sides_of_every_hunk_by_new_path() -> None:
    patch = (
        b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n"
        b"@@ -3,2 +3,3 @@\n-x\n-y\n+x\n+y\n+z\n"
        b"@@ -10 +11,0 @@\n-gone\n"
        b"@@ -20,0 +20,2 @@\n+new\n+new\n"
    )
    (found,) = hunks.parse(patch).values()
    assert found == (Hunk(3, 2, 3, 3), Hunk(10, 1, 11, 0), Hunk(20, 0, 20, 2))
    # A side without lines marks the lines on both sides of where it happened.
    assert found[1].sides == ((10, 10), (11, 12))
    assert found[2].sides == ((20, 21), (20, 21))


def test_a_changed_line_that_reads_like_a_header_is_content() -> None:
    # An added line "++ b/other.py" shows as "+++ b/other.py", one "@@ -1 +1 @@" as
    # "+@@ …": counted off the hunk's header, they never start a file or a hunk, so the
    # hunk after them stays b.py's (else its lines would read as unchanged).
    patch = (
        b"diff --git a/b.py b/b.py\n--- a/b.py\n+++ b/b.py\n"
        b"@@ -1,0 +1,2 @@\n+++ b/other.py\n+@@ -1 +1 @@\n"
        b"@@ -50 +52 @@\n-old\n+new\n"
        b"\\ No newline at end of file\n"
    )
    assert hunks.parse(patch) == {"b.py": (Hunk(1, 0, 1, 2), Hunk(50, 1, 52, 1))}
    assert _ranges(patch) == {"b.py": ((1, 2), (52, 52))}


def test_a_deleted_file_and_a_quoted_name_own_no_hunk() -> None:
    patch = (
        b"diff --git a/gone.py b/gone.py\n--- a/gone.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n"
        b'diff --git "a/x\\ty.py" "b/x\\ty.py"\n--- "a/x\\ty.py"\n+++ "b/x\\ty.py"\n'
        b"@@ -1 +1 @@\n-a\n+b\n"
    )
    assert hunks.parse(patch) == {}


# -- the change's hunks, from git --------------------------------------------------------


@pytest.fixture
def branch(tmp_path: Path, hermetic_git: None) -> tuple[Path, ChangeSet]:
    """``main`` has app.py (30 lines), old.py, doc.txt; ``feature`` changes app.py lines
    5 (one line) and deletes line 25, renames old.py, deletes doc.txt, adds new.py and
    a binary file."""
    root = init_repo(tmp_path / "repo")
    write(root, "app.py", APP)
    write(root, "old.py", "a = 1\nb = 2\nc = 3\n")
    write(root, "doc.txt", "x\ny\n")
    write(root, "same.py", "s = 1\n" * 10)
    commit(root, "main")
    git(root, "checkout", "-q", "-b", "feature")
    text = APP.replace("line_5 = 5\n", "line_5 = 50\n").replace("line_25 = 25\n", "")
    write(root, "app.py", text)
    git(root, "mv", "old.py", "renamed.py")
    (root / "doc.txt").unlink()
    write(root, "new.py", "n = 1\n" * 5)
    write(root, "blob.bin", b"\0\1\2\n" * 40)
    commit(root, "feature")
    files = ("app.py", "blob.bin", "doc.txt", "new.py", "old.py", "renamed.py")
    change = ChangeSet(files=files, description="branch", diff_commands=(), base="main")
    return root, change


def test_the_branch_change_gives_each_file_its_hunks_and_length(
    branch: tuple[Path, ChangeSet],
) -> None:
    root, change = branch
    found = of_change(root, change)
    assert found["app.py"] == FileHunks(hunks=(Hunk(5, 1, 5, 1), Hunk(25, 1, 24, 0)), lines=29)
    assert found["new.py"].lines == 5 and found["new.py"].hunks == (Hunk(0, 0, 1, 5),)
    assert found["renamed.py"].hunks == (Hunk(0, 0, 1, 3),)  # renames off: added whole
    assert found["doc.txt"] == FileHunks()  # deleted: no new side, no length
    assert found["old.py"] == FileHunks()
    assert found["blob.bin"].lines is None  # binary: no line count


@pytest.mark.parametrize(
    ("finding", "placed"),
    [
        pytest.param(_finding(start=15), True, id="outside-every-hunk"),
        pytest.param(_finding(start=14, end=16), True, id="range-outside"),
        pytest.param(_finding(start=29), True, id="the-last-line"),
        pytest.param(_finding("./app.py", 15), True, id="dot-slash-is-the-same-path"),
        pytest.param(_finding("app.py", 5), False, id="inside-a-hunk"),
        pytest.param(_finding("app.py", 3, 7), False, id="range-over-a-hunk"),
        pytest.param(_finding("app.py", 6), True, id="the-line-after-a-changed-line"),
        pytest.param(_finding("app.py", 4), True, id="the-line-before-a-changed-line"),
        pytest.param(_finding("app.py", 24), False, id="where-a-line-was-deleted-new-number"),
        pytest.param(_finding("app.py", 25), False, id="a-deleted-line-by-its-old-number"),
        pytest.param(_finding("app.py", 30), False, id="line-past-the-end"),
        pytest.param(_finding("app.py", 900), False, id="line-far-out-of-range"),
        pytest.param(_finding("app.py", None), False, id="no-line"),
        pytest.param(_finding("app.py", 0), False, id="line-zero"),
        pytest.param(_finding("app.py", 20, 18), False, id="range-ending-before-it-starts"),
        pytest.param(_finding(None, None), False, id="no-place"),
        pytest.param(_finding(None, 15), False, id="a-line-without-a-file"),
        pytest.param(_finding("same.py", 3), False, id="a-file-not-in-the-diff"),
        pytest.param(_finding("old.py", 2), False, id="the-old-name-of-a-renamed-file"),
        pytest.param(_finding("renamed.py", 2), False, id="a-renamed-file"),
        pytest.param(_finding("doc.txt", 1), False, id="a-deleted-file"),
        pytest.param(_finding("new.py", 2), False, id="an-added-file"),
        pytest.param(_finding("blob.bin", 30), False, id="a-binary-file"),
        pytest.param(_finding("a/../app.py", 15), False, id="dot-dot-spelling"),
        pytest.param(_finding("/abs/app.py", 15), False, id="absolute-path"),
        pytest.param(_finding(".\\app.py", 15), False, id="backslash"),
        pytest.param(_finding("APP.py", 15), False, id="another-case"),
        pytest.param(_finding("src/app.py", 15), False, id="another-folder"),
    ],
)
def test_only_a_place_certainly_outside_every_hunk_is_pre_existing(
    branch: tuple[Path, ChangeSet], finding: Finding, placed: bool
) -> None:
    root, change = branch
    assert pre_existing([finding], of_change(root, change)) == ((finding.id,) if placed else ())


def test_the_uncommitted_change_reads_the_work_tree(tmp_path: Path, hermetic_git: None) -> None:
    root = init_repo(tmp_path / "repo")
    write(root, "app.py", APP)
    commit(root, "main")
    write(root, "app.py", APP.replace("line_5 = 5\n", "line_5 = 50\n") + "line_31 = 31\n")
    write(root, "fresh.py", "f = 1\n" * 10)  # untracked: not in git diff HEAD
    change = ChangeSet(files=("app.py", "fresh.py"), description="u", diff_commands=())
    found = of_change(root, change)
    assert found["app.py"] == FileHunks(hunks=(Hunk(5, 1, 5, 1), Hunk(30, 0, 31, 1)), lines=31)
    assert pre_existing([_finding(start=15)], found) == (_finding(start=15).id,)
    assert pre_existing([_finding(start=31)], found) == ()  # the added line
    assert pre_existing([_finding("fresh.py", 3)], found) == ()  # untracked: all new


def test_an_unborn_branch_or_a_failing_git_marks_nothing(
    tmp_path: Path, hermetic_git: None
) -> None:
    root = init_repo(tmp_path / "repo")
    write(root, "app.py", APP)
    change = ChangeSet(files=("app.py",), description="u", diff_commands=())
    assert of_change(root, change) == {"app.py": FileHunks()}
    gone = ChangeSet(files=("app.py",), description="b", diff_commands=(), base="no-such-ref")
    commit(root, "main")
    assert of_change(root, gone) == {"app.py": FileHunks()}
    assert of_change(root, ChangeSet(files=(), description="", diff_commands=())) == {}


def test_a_file_name_holding_a_newline_cannot_lend_its_length(
    tmp_path: Path, hermetic_git: None
) -> None:
    # "x\nHEAD:app.py" would print a row "HEAD:app.py\0<its count>" in a naive reading of
    # git grep: app.py would seem 500 lines long and line 400 of it in range.
    root = init_repo(tmp_path / "repo")
    write(root, "app.py", APP)
    commit(root, "main")
    git(root, "checkout", "-q", "-b", "feature")
    write(root, "app.py", APP.replace("line_5 = 5\n", "line_5 = 50\n"))
    write(root, "x\nHEAD:app.py", "y\n" * 500)
    commit(root, "feature")
    change = ChangeSet(
        files=("app.py", "x\nHEAD:app.py"), description="b", diff_commands=(), base="main"
    )
    found = of_change(root, change)
    assert found["app.py"].lines == 30
    assert found["x\nHEAD:app.py"].lines == 500
    assert pre_existing([_finding(start=400)], found) == ()


# -- the outcome ----------------------------------------------------------------------------

INSIDE = _finding(start=5, title="inside")
OUTSIDE = _finding(start=15, title="outside")
BELOW = _finding(start=16, severity=Severity.MEDIUM, title="below")


def test_block_fails_a_pre_existing_finding_like_any_other() -> None:
    result = make_result(ReviewStatus.REVISE, make_review(Verdict.REVISE, OUTSIDE))
    outcome = decide(result, Severity.HIGH, pre_existing=[OUTSIDE.id])
    assert outcome.kind is OutcomeKind.FAILED
    assert outcome.failing == (OUTSIDE,) and outcome.pre_existing == ()
    assert outcome.pre_existing_ids == (OUTSIDE.id,)


def test_warn_passes_a_pre_existing_blocker_with_a_warning_and_fails_the_rest() -> None:
    both = make_result(ReviewStatus.REVISE, make_review(Verdict.REVISE, INSIDE, OUTSIDE))
    outcome = decide(both, Severity.HIGH, pre_existing=[OUTSIDE.id], pre_existing_policy="warn")
    assert outcome.kind is OutcomeKind.FAILED
    assert outcome.failing == (INSIDE,) and outcome.pre_existing == (OUTSIDE,)
    text = failure_summary("code-review", outcome)
    assert f"{OUTSIDE.id} t" not in text  # titles are "inside"/"outside"
    assert f"{OUTSIDE.id} outside (app.py line 15) — pre-existing" in text

    only = make_result(ReviewStatus.REVISE, make_review(Verdict.REVISE, OUTSIDE, BELOW))
    outcome = decide(only, Severity.HIGH, pre_existing=[OUTSIDE.id], pre_existing_policy="warn")
    assert outcome.kind is OutcomeKind.WARNED
    assert outcome.below == (BELOW,)
    assert "1 pre-existing finding at or above high passed with a warning" in outcome.summary
    message = warning_message("code-review", outcome)
    assert f"{OUTSIDE.id} outside (app.py line 15) — pre-existing" in message
    assert BELOW.id in message

    alone = make_result(ReviewStatus.MAX_ROUNDS, make_review(Verdict.REVISE, OUTSIDE))
    outcome = decide(alone, Severity.HIGH, pre_existing=[OUTSIDE.id], pre_existing_policy="warn")
    assert outcome.kind is OutcomeKind.WARNED
    assert outcome.summary.startswith("maximum rounds reached (1), still REVISE: passed with")


def test_warn_never_turns_a_contradiction_or_the_lead_s_open_findings_into_a_pass() -> None:
    approved = make_result(ReviewStatus.APPROVED, make_review(Verdict.APPROVED, OUTSIDE))
    outcome = decide(approved, Severity.HIGH, pre_existing=[OUTSIDE.id], pre_existing_policy="warn")
    assert outcome.kind is OutcomeKind.ERROR
    held = make_result(ReviewStatus.REVISE, make_review(Verdict.REVISE, OUTSIDE))
    held = held.__class__(**{**held.__dict__, "needs_operator": (OUTSIDE.id,)})
    outcome = decide(held, Severity.HIGH, pre_existing=[OUTSIDE.id], pre_existing_policy="warn")
    assert outcome.kind is OutcomeKind.FAILED


def test_a_blocker_with_confidence_zero_still_fails() -> None:
    unsure = INSIDE.model_copy(update={"confidence": 0.0})
    result = make_result(ReviewStatus.REVISE, make_review(Verdict.REVISE, unsure))
    for policy in ("block", "warn"):
        outcome = decide(result, Severity.MEDIUM, pre_existing_policy=policy)
        assert outcome.kind is OutcomeKind.FAILED
        assert outcome.failing == (unsure,)


# -- confidence in the contracts ------------------------------------------------------------

REVIEW = """\
## Summary

One problem.

## Findings

### [severity: high] Token leak
- **File:** app/auth.py lines 3-7
- **What can go wrong:** A token is logged.
- **Recommendation:** Redact it.
- **Confidence:** {value}

## Verdict

VERDICT: REVISE
"""


@pytest.mark.parametrize(
    ("value", "confidence"),
    [
        ("0.8", 0.8),
        ("1", 1.0),
        ("1.0", 1.0),
        ("0", 0.0),
        (".25", 0.25),
        ("**0.5**", 0.5),
        ("1.5", None),
        ("-0.1", None),
        ("80%", None),
        ("0,8", None),
        ("high", None),
        ("0.8 (fairly sure)", None),
        ("nan", None),
        ("", None),
    ],
)
def test_markdown_confidence_is_read_strictly_and_a_bad_one_is_dropped(
    value: str, confidence: float | None
) -> None:
    analysis = analyse(REVIEW.format(value=value))
    (finding,) = analysis.review.findings  # a bad value never drops the finding
    assert finding.confidence == confidence
    assert finding.recommendation == "Redact it."
    assert analysis.drift is None


def test_a_review_without_confidence_has_none() -> None:
    (finding,) = parse_markdown(REVIEW.replace("- **Confidence:** {value}\n", "")).findings
    assert finding.confidence is None


def _json(confidence: object) -> str:
    finding = {
        "severity": "high",
        "title": "Token leak",
        "file": "app/auth.py",
        "section": None,
        "line_start": 3,
        "line_end": 7,
        "what_can_go_wrong": "w",
        "why_vulnerable": "v",
        "impact": "i",
        "recommendation": "r",
        "suggestion": None,
        "confidence": confidence,
    }
    return json.dumps({"summary": "s", "findings": [finding], "verdict": "REVISE"})


def test_json_confidence_is_carried_and_a_value_outside_0_1_is_a_format_error() -> None:
    assert parse_json(_json(0.25)).findings[0].confidence == 0.25
    assert parse_json(_json(None)).findings[0].confidence is None
    for bad in (1.5, -0.5, "high"):
        with pytest.raises(ReviewFormatError, match=r"findings\.0\.confidence"):
            parse_json(_json(bad))


# -- the pull-request review ----------------------------------------------------------------


def test_the_pr_review_lists_pre_existing_findings_apart_with_their_confidence(
    tmp_path: Path,
) -> None:
    on_change = _finding("src/pay.py", 50, title="Retry pays twice")
    older = _finding("src/pay.py", 100, title="Old helper is wrong").model_copy(
        update={"confidence": 0.4}
    )
    record = _record("", ReviewStatus.REVISE, "failed", (on_change, older), kind="code")
    record = record.model_copy(update={"pre_existing": (older.id,)})
    plan = plan_review([record], {}, "a" * 40, [], poster="bot", anchor_of=Anchors(tmp_path).of)
    body = plan.body
    assert "1 elsewhere, 1 pre-existing." in body
    listed = body.split("Findings outside the diff:", 1)[1]
    elsewhere, apart = listed.split("Pre-existing findings (outside every changed hunk", 1)
    assert on_change.id in elsewhere and older.id not in elsewhere
    assert older.id in apart and "confidence 0.4" in apart
    assert "pre-existing (outside every changed hunk)" in apart


def test_an_uncommitted_symlink_or_binary_file_has_no_length(
    tmp_path: Path, hermetic_git: None
) -> None:
    root = init_repo(tmp_path / "repo")
    write(root, "app.py", APP)
    write(root, "data.bin", b"\0" * 10 + b"\n" * 40)
    (root / "link.py").symlink_to("app.py")
    commit(root, "main")
    write(root, "data.bin", b"\0" * 11 + b"\n" * 40)
    (root / "link.py").unlink()
    (root / "link.py").symlink_to("data.bin")
    change = ChangeSet(files=("data.bin", "link.py", "gone.py"), description="u", diff_commands=())
    found = of_change(root, change)
    assert [found[p].lines for p in change.files] == [None, None, None]
    for path in change.files:
        assert pre_existing([_finding(path, 30)], found) == ()
    assert pre_existing([_finding(".", 3), _finding("./", 3)], found) == ()


def test_a_branch_file_edited_in_the_work_tree_has_no_length(
    branch: tuple[Path, ChangeSet],
) -> None:
    # The reviewer reads the work tree: after an edit there (a lead's, the author's) the
    # lines it cites are neither the diff's nor HEAD's.
    root, change = branch
    write(root, "app.py", "inserted = 0\n" + (root / "app.py").read_text())
    found = of_change(root, change)
    assert found["app.py"].lines is None
    assert found["new.py"].lines == 5
    assert pre_existing([_finding(start=15)], found) == ()
