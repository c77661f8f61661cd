"""Later rounds of the code change: interdiff, range-diff, file digests, late findings."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import commit, feature_branch, git, write
from pytest_advreview import interdiff, targets
from pytest_advreview.git import GitError
from pytest_advreview.models import (
    Changed,
    ChangedLines,
    ChangeSet,
    Decision,
    DecisionAction,
    Finding,
    Location,
    Operation,
    Review,
    ReviewedChange,
    RoundRecord,
    RunnerResult,
    finding_id,
)
from pytest_advreview.prompts import answered_text

APP = "".join(f"line {n}\n" for n in range(1, 21))


@pytest.fixture
def feature(tmp_path: Path, hermetic_git: None) -> Path:
    """``main`` with a README; ``feature`` adds ``app.py`` (20 lines) and ``lib.py``."""
    files = {"app.py": APP, "lib.py": "def helper():\n    return 1\n"}
    return feature_branch(tmp_path / "repo", files)


def _branch(root: Path) -> tuple[ChangeSet, ReviewedChange]:
    change = targets.change_set(root, "branch", "main")
    assert change is not None
    return change, interdiff.reviewed(root, change)


def _push(root: Path, **files: str) -> tuple[ChangeSet, ReviewedChange, ReviewedChange]:
    """The change before and after a commit that writes ``files`` (``name_py`` for
    ``name.py``): the change set now, its record before and its record now."""
    _, before = _branch(root)
    for name, text in files.items():
        write(root, name.replace("_py", ".py"), text)
    commit(root, "push")
    change, now = _branch(root)
    return change, before, now


def test_a_branch_change_records_its_head_and_merge_base(feature: Path) -> None:
    _, record = _branch(feature)
    assert record.head == git(feature, "rev-parse", "HEAD").strip()
    assert record.base == git(feature, "rev-parse", "main").strip()
    # Each file's object id in HEAD: no history needed to tell which changed later.
    assert record.digests == {
        "app.py": git(feature, "rev-parse", "HEAD:app.py").strip(),
        "lib.py": git(feature, "rev-parse", "HEAD:lib.py").strip(),
    }
    assert record.files == ("app.py", "lib.py")


def test_a_push_shows_only_the_interdiff_with_the_changed_lines(feature: Path) -> None:
    change, before = _branch(feature)
    write(feature, "app.py", APP.replace("line 10\n", "line ten\n"))
    commit(feature, "fix line 10")
    change, now = _branch(feature)
    shown = interdiff.since(feature, before, now, change, round_no=1)
    assert shown.changed.how == "interdiff"
    assert shown.changed.files == (ChangedLines(path="app.py", lines=((10, 10),)),)
    assert shown.changed.before == ("app.py", "lib.py")
    assert "<interdiff>" in shown.text and "+line ten" in shown.text and "-line 10" in shown.text
    assert "<changed_files>\napp.py\n</changed_files>" in shown.text
    assert "def helper" not in shown.text  # lib.py did not change: not shown again
    assert before.head is not None and before.head[:12] in shown.text
    # The whole change stays available, by the change's own read-only command.
    assert change.diff_commands[0] in shown.text


def test_a_merge_of_the_base_shows_only_the_changes_own_files(feature: Path) -> None:
    change, before = _branch(feature)
    git(feature, "checkout", "-q", "main")
    write(feature, "other.py", "x = 1\n")
    commit(feature, "work on main")
    git(feature, "checkout", "-q", "feature")
    git(feature, "merge", "-q", "--no-edit", "main")
    change, now = _branch(feature)
    shown = interdiff.since(feature, before, now, change, round_no=1)
    assert shown.changed.how == "interdiff"
    assert shown.changed.files == ()
    assert "other.py" not in shown.text
    assert "No file of the change changed since then." in shown.text


def test_a_rebase_is_compared_with_range_diff(feature: Path) -> None:
    change, before = _branch(feature)
    write(feature, "app.py", APP + "line 21\n")
    git(feature, "add", "-A")
    git(feature, "commit", "-q", "--amend", "-m", "the feature, amended")
    change, now = _branch(feature)
    shown = interdiff.since(feature, before, now, change, round_no=2)
    assert shown.changed.how == "range-diff"
    assert "<range_diff>" in shown.text and "line 21" in shown.text
    assert f"git range-diff {before.base}..{before.head} {now.base}..{now.head}" in shown.text
    assert "not an ancestor" in shown.text
    assert interdiff.late_findings([_round(1), _round(2, changed=shown.changed)]) == ()


def test_an_old_commit_missing_from_the_clone_lists_the_files_that_changed(
    feature: Path,
) -> None:
    change, before = _branch(feature)
    write(feature, "lib.py", "def helper():\n    return 2\n")
    commit(feature, "push")
    change, now = _branch(feature)
    gone = before.model_copy(update={"head": "f" * 40})
    shown = interdiff.since(feature, gone, now, change, round_no=1)
    assert shown.changed.how == "files"
    assert shown.changed.files == (ChangedLines(path="lib.py"),)
    assert "is not in this clone" in shown.text and "read them whole" in shown.text
    assert "<changed_files>\nlib.py\n</changed_files>" in shown.text
    assert change.diff_commands[0] in shown.text
    # Without the object ids of the earlier round (a state written before they were
    # kept) the change is reviewed whole.
    bare = gone.model_copy(update={"digests": {}})
    whole = interdiff.since(feature, bare, now, change, round_no=1)
    assert whole.changed.how == "whole" and "review the change whole again" in whole.text


def test_a_rebase_without_the_old_base_falls_back_to_the_changed_files(feature: Path) -> None:
    change, before = _branch(feature)
    git(feature, "commit", "-q", "--amend", "-m", "reworded")
    change, now = _branch(feature)
    shown = interdiff.since(
        feature, before.model_copy(update={"base": None}), now, change, round_no=1
    )
    assert shown.changed.how == "files" and shown.changed.files == ()
    assert "old commits are not here" in shown.changed.note


def test_no_comparable_record_is_reviewed_whole(feature: Path) -> None:
    change, now = _branch(feature)
    old = ReviewedChange(description=change.description, files=change.files)
    shown = interdiff.since(feature, old, now, change, round_no=3)
    assert shown.changed.how == "whole"
    assert shown.changed.summary().startswith("the whole change again")


def test_a_long_interdiff_is_cut_and_names_its_command(feature: Path) -> None:
    change, before = _branch(feature)
    write(feature, "app.py", "".join(f"new {n}\n" for n in range(1000)))
    commit(feature, "rewrite")
    change, now = _branch(feature)
    shown = interdiff.since(feature, before, now, change, round_no=1)
    assert "[cut: " in shown.text and "read the rest before you approve]" in shown.text
    assert len(shown.text) < interdiff.MAX_CHARS + 2000


def test_a_working_tree_change_keeps_file_digests(feature: Path) -> None:
    write(feature, "lib.py", "def helper():\n    return 2\n")
    write(feature, "new.py", "y = 1\n")
    change = targets.change_set(feature, "uncommitted", None)
    assert change is not None
    before = interdiff.reviewed(feature, change)
    assert set(before.digests) == {"lib.py", "new.py"}
    assert before.head is None
    (feature / "new.py").unlink()
    write(feature, "lib.py", "def helper():\n    return 3\n")
    change = targets.change_set(feature, "uncommitted", None)
    assert change is not None
    now = interdiff.reviewed(feature, change)
    assert "new.py" not in now.digests  # an untracked file deleted: no longer in the change
    shown = interdiff.since(feature, before, now, change, round_no=1)
    assert shown.changed.how == "files"
    assert [f.path for f in shown.changed.files] == ["lib.py", "new.py"]
    assert all(f.lines is None for f in shown.changed.files)
    assert "<changed_files>\nlib.py\nnew.py\n</changed_files>" in shown.text
    unchanged = interdiff.since(feature, now, now, change, round_no=2)
    assert "No file of it changed since then." in unchanged.text


def test_an_unreadable_entry_always_counts_as_changed(feature: Path) -> None:
    (feature / "sub").mkdir()
    change = ChangeSet(files=("sub",), description="unstaged changes", diff_commands=())
    record = interdiff.reviewed(feature, change)
    assert record.digests == {"sub": "?"}
    shown = interdiff.since(feature, record, record, change, round_no=1)
    assert [f.path for f in shown.changed.files] == ["sub"]


def test_a_symlink_is_digested_by_its_target(feature: Path) -> None:
    (feature / "link").symlink_to("app.py")
    change = ChangeSet(files=("link",), description="untracked files", diff_commands=())
    first = interdiff.reviewed(feature, change).digests["link"]
    (feature / "link").unlink()
    (feature / "link").symlink_to("lib.py")
    assert interdiff.reviewed(feature, change).digests["link"] != first


def test_outside_a_repository_there_are_no_digests(tmp_path: Path, hermetic_git: None) -> None:
    change = ChangeSet(files=("a.py",), description="unstaged changes", diff_commands=())
    assert interdiff.reviewed(tmp_path, change).digests == {}


# -- late findings -------------------------------------------------------------------------


def _finding(title: str, file: str | None, lines: tuple[int, int] | None = None) -> Finding:
    location = Location(
        file=file,
        line_start=lines[0] if lines else None,
        line_end=lines[1] if lines else None,
    )
    return Finding(id=finding_id(title, location), severity="high", title=title, location=location)


def _round(
    number: int,
    *findings: Finding,
    changed: Changed | None = None,
    decisions: tuple[Decision, ...] = (),
) -> RoundRecord:
    return RoundRecord(
        number=number,
        operation=Operation.INITIAL if number == 1 else Operation.RESUME,
        runner=RunnerResult(result="success", attempt_id="a"),
        review=Review(findings=findings, raw="review"),
        changed=changed,
        decisions=decisions,
    )


INTERDIFF = Changed(
    since_round=1,
    how="interdiff",
    before=("app.py", "lib.py"),
    files=(ChangedLines(path="app.py", lines=((10, 12),)),),
)


def test_a_new_finding_on_unchanged_code_is_late() -> None:
    early = _finding("Race in app", "app.py", (10, 11))
    on_lib = _finding("Helper returns a constant", "./lib.py", (1, 2))
    on_other_lines = _finding("Off by one", "app.py", (15, 16))
    on_changed = _finding("New bug in the fix", "app.py", (11, 14))
    no_lines = _finding("Something in app", "app.py")
    new_file = _finding("Bad new file", "new.py", (1, 1))
    no_file = _finding("Overall design", None)
    rounds = [
        _round(1, early),
        _round(
            2,
            early,  # raised before: not late
            on_lib,
            on_other_lines,
            on_changed,
            no_lines,
            new_file,
            no_file,
            changed=INTERDIFF,
        ),
    ]
    assert interdiff.late_findings(rounds) == (on_lib.id, on_other_lines.id)


def test_changed_files_without_lines_and_whole_reviews_mark_nothing_late() -> None:
    finding = _finding("Bug", "app.py", (1, 1))
    files = INTERDIFF.model_copy(update={"how": "files", "files": (ChangedLines(path="app.py"),)})
    assert interdiff.late_findings([_round(1), _round(2, finding, changed=files)]) == ()
    whole = Changed(since_round=1, how="whole", before=("app.py",))
    assert interdiff.late_findings([_round(1), _round(2, finding, changed=whole)]) == ()
    assert interdiff.late_findings([_round(1), _round(2, finding)]) == ()
    lost = _round(2, finding, changed=INTERDIFF).model_copy(update={"review": None})
    assert interdiff.late_findings([_round(1), lost]) == ()


def test_summaries_say_what_the_round_was_shown() -> None:
    assert INTERDIFF.summary() == "the interdiff since round 1 (1 file)"
    ranged = Changed(since_round=2, how="range-diff")
    assert ranged.summary() == "a range-diff of both versions since round 2"
    assert Changed(since_round=1, how="whole").summary() == "the whole change"


def test_answered_findings_list_the_latest_answer_once() -> None:
    a = _finding("Race in app", "app.py", (10, 11))
    b = _finding("Leaks a handle", "lib.py", (1, 1))
    reject = Decision(finding=a.id, action=DecisionAction.REJECT, reason="Runs under a lock.")
    accept = Decision(finding=b.id, action=DecisionAction.ACCEPT, reason="Closed now.")
    again = Decision(finding=a.id, action=DecisionAction.REJECT, reason="The lock is global.")
    rounds = [
        _round(1, a, b),
        _round(2, a, decisions=(reject, accept)),
        _round(3, decisions=(again,)),
    ]
    text = answered_text(rounds)
    assert text.startswith("## Answered in earlier rounds\n<answered>\n")
    assert f"- {b.id} (Leaks a handle), raised in round 1: accept — Closed now." in text
    assert f"- {a.id} (Race in app), raised in round 2: reject — The lock is global." in text
    assert "Runs under a lock." not in text
    assert "Do not raise them again unless you have new evidence" in text
    # A finding answered again now is in the prompt's own sections, not here.
    assert a.id not in answered_text(rounds, (again,))
    assert answered_text(rounds[:1]) == ""


def test_a_deleted_file_counts_as_changed_whole(feature: Path) -> None:
    change, before = _branch(feature)
    git(feature, "rm", "-q", "lib.py")
    commit(feature, "drop lib")
    change, now = _branch(feature)
    shown = interdiff.since(feature, before, now, change, round_no=1)
    assert shown.changed.files == (ChangedLines(path="lib.py", lines=None),)
    assert "-def helper():" in shown.text


def test_a_deleted_working_tree_file_has_the_deleted_digest(feature: Path) -> None:
    change = ChangeSet(files=("gone.py",), description="unstaged changes", diff_commands=())
    assert interdiff.reviewed(feature, change).digests == {"gone.py": "-"}


def test_an_unreadable_head_is_reviewed_whole(feature: Path) -> None:
    change, now = _branch(feature)
    gone = now.model_copy(update={"head": "f" * 40})
    shown = interdiff.since(feature, gone, gone, change, round_no=1)
    assert shown.changed.how == "whole" and "git cannot diff ffffffffffff" in shown.text


def test_too_many_changed_files_are_reviewed_whole(
    feature: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    change, before, now = _push(feature, app_py="changed\n", lib_py="changed\n")
    monkeypatch.setattr(interdiff, "MAX_PATHS", 1)
    shown = interdiff.since(feature, before, now, change, round_no=1)
    assert shown.changed.how == "whole" and "2 files changed since then" in shown.text


def test_a_failing_range_diff_falls_back_to_the_changed_files(feature: Path) -> None:
    change, before = _branch(feature)
    git(feature, "commit", "-q", "--amend", "-m", "reworded")
    change, now = _branch(feature)
    broken = before.model_copy(update={"base": "e" * 40})
    shown = interdiff.since(feature, broken, now, change, round_no=1)
    assert shown.changed.how == "files" and "git range-diff failed" in shown.text


def test_git_that_cannot_start_is_reviewed_whole(
    feature: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    change, before, now = _push(feature, app_py="changed\n")

    def no_git(root: Path) -> tuple[str, ...]:
        raise GitError(["git"], root, None, "git not found")

    monkeypatch.setattr(interdiff, "plain_diff_globals", no_git)
    shown = interdiff.since(feature, before, now, change, round_no=1)
    assert shown.changed.how == "whole" and "git failed" in shown.text


def _test_merge(root: Path) -> None:
    """HEAD as GitHub's pull_request checkout has it: ``feature`` merged into ``main``."""
    git(root, "checkout", "-q", "--detach", "main")
    git(root, "merge", "-q", "--no-ff", "--no-edit", "feature")


def test_a_test_merge_into_the_base_is_compared_by_its_merged_branch(feature: Path) -> None:
    tip = git(feature, "rev-parse", "feature").strip()
    _test_merge(feature)
    change, before = _branch(feature)
    assert change.files == ("app.py", "lib.py")
    assert before.head == tip  # the branch, not the merge made for this run
    assert before.base == git(feature, "rev-parse", "main").strip()
    # A push to the branch while the base moves on: a new test merge, of both.
    git(feature, "checkout", "-q", "main")
    write(feature, "other.py", "x = 1\n")
    commit(feature, "work on main")
    git(feature, "checkout", "-q", "feature")
    write(feature, "app.py", APP.replace("line 10\n", "line ten\n"))
    commit(feature, "fix line 10")
    _test_merge(feature)
    change, now = _branch(feature)
    assert now.head == git(feature, "rev-parse", "feature").strip()
    shown = interdiff.since(feature, before, now, change, round_no=1)
    assert shown.changed.how == "interdiff"
    assert shown.changed.files == (ChangedLines(path="app.py", lines=((10, 10),)),)
    assert "other.py" not in shown.text


def test_a_merge_of_the_base_into_the_branch_stays_the_branch_head(feature: Path) -> None:
    git(feature, "checkout", "-q", "main")
    write(feature, "other.py", "x = 1\n")
    commit(feature, "work on main")
    git(feature, "checkout", "-q", "feature")
    git(feature, "merge", "-q", "--no-edit", "main")
    _, record = _branch(feature)
    assert record.head == git(feature, "rev-parse", "HEAD").strip()


def test_an_edit_inside_the_test_merge_is_listed_even_without_a_branch_commit(
    feature: Path,
) -> None:
    _test_merge(feature)
    change, before = _branch(feature)
    # The same branch tip, merged again with an edit of the merge's own (an "evil merge"):
    # the branch's commits show nothing, the content under review changed.
    git(feature, "checkout", "-q", "--detach", "main")
    git(feature, "merge", "-q", "--no-ff", "--no-commit", "feature")
    write(feature, "lib.py", "def helper():\n    return 666\n")
    git(feature, "add", "-A")
    git(feature, "commit", "-q", "-m", "merge with an edit")
    change, now = _branch(feature)
    assert now.head == before.head  # the merged branch did not move
    shown = interdiff.since(feature, before, now, change, round_no=1)
    assert shown.changed.files == (ChangedLines(path="lib.py"),)
    assert "not in the branch's own commits" in shown.text
    assert "<changed_files>\nlib.py\n</changed_files>" in shown.text
    assert "No file of the change changed" not in shown.text
    late = _finding("Helper is wrong", "lib.py", (2, 2))
    assert interdiff.late_findings([_round(1), _round(2, late, changed=shown.changed)]) == ()
