"""Boundaries of the decisions file (decisions.py): every action with and without a
reason, every key missing or unknown, the ways people write targets and ids, the first
and second entry of a repeat, and every message word for word (it names the file, the
entry, the problem and the fix)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_advreview.models import Decision, DecisionAction
from pytest_advreview.trust.decisions import (
    CODE_TARGET,
    DecisionsError,
    check_known,
    check_targets,
    load_decisions,
)

EXAMPLE = (
    '[[decision]]\ntarget = "docs/plans/x.md"\nfinding = "AR-1a2b3c"\n'
    'action = "reject"\nreason = "why the finding does not apply"'
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "decisions.toml"
    path.write_text(text, encoding="utf-8")
    return path


def entry(
    target: str = "plan.md", finding: str = "AR-abc123", action: str = "accept", **more: str
) -> str:
    # TOML literal strings: a backslash in a target is written as it is.
    fields = {"target": target, "finding": finding, "action": action, **more}
    lines = [f"{k} = '{v}'" for k, v in fields.items()]
    return "[[decision]]\n" + "\n".join(lines) + "\n"


def error(path: Path) -> str:
    with pytest.raises(DecisionsError) as info:
        load_decisions(path)
    return str(info.value)


def test_the_code_target_is_code_review() -> None:
    assert CODE_TARGET == "code-review"


def test_a_missing_file_is_no_decisions(tmp_path: Path) -> None:
    loaded = load_decisions(tmp_path / "none.toml")
    assert (loaded.entries, loaded.targets) == ((), frozenset())


@pytest.mark.parametrize("action", ["accept", "re-scope", "reject"])
def test_every_action_with_a_reason_is_kept_with_it(tmp_path: Path, action: str) -> None:
    path = write(tmp_path, entry(action=action, reason="  because  "))
    assert load_decisions(path).for_target("plan.md") == (
        Decision(finding="AR-abc123", action=DecisionAction(action), reason="because"),
    )


@pytest.mark.parametrize("reason", [None, "", "   "])
def test_accept_needs_no_reason(tmp_path: Path, reason: str | None) -> None:
    more = {} if reason is None else {"reason": reason}
    path = write(tmp_path, entry(action="accept", **more))
    (decision,) = load_decisions(path).for_target("plan.md")
    assert decision == Decision(finding="AR-abc123", action=DecisionAction.ACCEPT, reason=None)


@pytest.mark.parametrize("reason", [None, "", "  "])
def test_reject_and_rescope_need_a_reason(tmp_path: Path, reason: str | None) -> None:
    more = {} if reason is None else {"reason": reason}
    path = write(tmp_path, entry(action="reject", **more))
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 1: action 'reject' on "
        'AR-abc123 has no reason: rejections need reasons; add reason = "why the finding '
        'does not apply"'
    )
    path = write(tmp_path, entry(action="re-scope", **more))
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 1: action 're-scope' on "
        'AR-abc123 has no reason; add reason = "how the scope changed and why"'
    )


@pytest.mark.parametrize(
    ("written", "key"),
    [
        ("plan.md", "plan.md"),
        ("./plan.md", "plan.md"),
        ("././plan.md", "plan.md"),
        (" docs\\plans\\x.md ", "docs/plans/x.md"),
        (".//plan.md", "/plan.md"),
        ("code-review", "code-review"),
    ],
)
def test_targets_are_repo_relative_posix_paths(tmp_path: Path, written: str, key: str) -> None:
    loaded = load_decisions(write(tmp_path, entry(target=written)))
    assert loaded.targets == frozenset({key})
    assert len(loaded.for_target(key)) == 1


@pytest.mark.parametrize("written", ["", "  ", "./", "././"])
def test_an_empty_target_is_refused(tmp_path: Path, written: str) -> None:
    path = write(tmp_path, entry(target=written))
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 1: 'target' is empty; "
        'give the plan\'s repo-relative path (target = "docs/plans/x.md") or target = '
        '"code-review"'
    )


@pytest.mark.parametrize(
    ("written", "kept"),
    [
        ("AR-abc123", "AR-abc123"),
        ("ar-ABC123", "AR-abc123"),
        (" AR-AbC123 ", "AR-abc123"),
        ("AR-abc12", "AR-abc12"),  # not an id: kept as written (check_known names it)
        ("AR-abc1234", "AR-abc1234"),
        ("XAR-abc123", "XAR-abc123"),
    ],
)
def test_finding_ids_are_normalised_only_when_they_are_ids(
    tmp_path: Path, written: str, kept: str
) -> None:
    (decision,) = load_decisions(write(tmp_path, entry(finding=written))).for_target("plan.md")
    assert decision.finding == kept


def test_an_empty_finding_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, entry(finding="  "))
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 1: 'finding' is empty; "
        'copy the id printed in the failure (finding = "AR-1a2b3c")'
    )


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("target", 'the plan path or "code-review"'),
        ("finding", 'the finding id, e.g. "AR-1a2b3c"'),
        ("action", "accept, re-scope, reject, waive, more-rounds"),
    ],
)
def test_every_missing_key_is_named_with_what_to_write(tmp_path: Path, key: str, hint: str) -> None:
    fields = {"target": "plan.md", "finding": "AR-abc123", "action": "accept"}
    del fields[key]
    text = "[[decision]]\n" + "".join(f"{k} = {v!r}\n" for k, v in fields.items())
    path = write(tmp_path, entry() + text)
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 2: missing {key!r}; add "
        f"{key} = ... ({hint})"
    )


def test_an_unknown_key_names_the_allowed_ones(tmp_path: Path) -> None:
    path = write(tmp_path, entry(note="x"))
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 1: unknown key 'note'; "
        "allowed keys: target, finding, action, reason, rounds, content, commit, "
        "pull, scope"
    )


def test_an_unknown_action_names_the_actions(tmp_path: Path) -> None:
    path = write(tmp_path, entry(action="ignore"))
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 1: unknown action 'ignore'; "
        "use one of: accept, re-scope, reject, waive, more-rounds"
    )


def test_a_value_that_is_not_a_string_says_give_a_string(tmp_path: Path) -> None:
    path = write(tmp_path, '[[decision]]\ntarget = 3\nfinding = "AR-abc123"\naction = "accept"\n')
    message = error(path)
    assert message.startswith(
        f"pytest-advreview: decisions file {path}: decision entry 1: 'target': "
    )
    assert message.endswith("; give a string")


def test_every_problem_of_an_entry_is_named_once(tmp_path: Path) -> None:
    path = write(tmp_path, "[[decision]]\nnote = 1\nother = 2\n")
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 1: missing 'target'; add "
        "target = ... (the plan path or \"code-review\"); also missing 'finding'; add "
        "finding = ... (the finding id, e.g. \"AR-1a2b3c\"); also missing 'action'; add "
        "action = ... (accept, re-scope, reject, waive, more-rounds); also unknown key "
        "'note'; allowed keys: target, finding, action, reason, rounds, content, commit, pull, "
        "scope; also unknown key 'other'; allowed keys: target, finding, action, reason, "
        "rounds, content, commit, pull, scope"
    )


def test_a_repeat_names_both_entries_and_the_same_finding_on_two_targets_is_no_repeat(
    tmp_path: Path,
) -> None:
    text = entry() + entry(target="other.md") + entry(target="./plan.md", finding="AR-ABC123")
    path = write(tmp_path, text)
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 3: repeats the decision on "
        "AR-abc123 for plan.md (entry 1); keep one entry per finding"
    )
    two = load_decisions(write(tmp_path, entry() + entry(finding="AR-abc124")))
    assert [d.finding for d in two.for_target("plan.md")] == ["AR-abc123", "AR-abc124"]


def test_file_level_problems_name_the_file_and_the_fix(tmp_path: Path) -> None:
    path = write(tmp_path, 'title = "x"\nzeta = 1\n')
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: unknown top-level key 'title', 'zeta'; "
        "the file holds only [[decision]] tables"
    )
    path = write(tmp_path, 'decision = "x"\n')
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: 'decision' must be an array of tables; "
        "write each entry as [[decision]]"
    )
    path = write(tmp_path, "decision = [1]\n")
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 1: is not a table; write "
        "each entry as [[decision]]"
    )
    path = write(tmp_path, "[[decision]\n")
    message = error(path)
    assert message.startswith(f"pytest-advreview: decisions file {path}: is not valid TOML: ")
    assert message.endswith(f"; fix the syntax (entries look like:\n{EXAMPLE})")
    assert load_decisions(write(tmp_path, "")).entries == ()


def test_a_file_that_is_not_utf8_names_the_offset(tmp_path: Path) -> None:
    path = tmp_path / "decisions.toml"
    path.write_bytes(b"# ok\n\xff")
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: is not UTF-8 (at offset 5); save it as UTF-8"
    )


def test_a_folder_or_an_unreadable_file_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "dir.toml"
    folder.mkdir()
    assert error(folder) == (
        f"pytest-advreview: decisions file {folder}: is a directory, not a file; point "
        "advreview_decisions at a TOML file"
    )
    loop = tmp_path / "loop.toml"
    loop.symlink_to(loop)
    assert error(loop) == (
        f"pytest-advreview: decisions file {loop}: cannot be read (Too many levels of "
        "symbolic links); fix its permissions"
    )


def test_check_known_accepts_known_ids_and_names_the_first_unknown(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        entry(target="other.md", finding="AR-000000")
        + entry(finding="AR-abc123")
        + entry(finding="AR-def456"),
    )
    loaded = load_decisions(path)
    check_known(loaded, "plan.md", set())  # nothing stored: nothing to check
    check_known(loaded, "plan.md", {"AR-abc123", "AR-def456"})
    check_known(loaded, "nothing.md", {"AR-zzz"})
    with pytest.raises(DecisionsError) as info:
        check_known(loaded, "plan.md", {"AR-def456", "AR-111111"})
    assert str(info.value) == (
        f"pytest-advreview: decisions file {path}: decision entry 2: unknown finding id "
        "AR-abc123 for plan.md; known: AR-111111, AR-def456. Copy the id from the failure "
        "output, or delete the entry if the finding is gone"
    )
    assert info.value.entry == 2
    with pytest.raises(DecisionsError, match=r"^pytest-advreview: decisions file elsewhere: "):
        check_known(loaded, "plan.md", {"AR-def456"}, Path("elsewhere"))


def test_check_targets_refuses_the_first_target_that_is_not_a_file(tmp_path: Path) -> None:
    path = write(
        tmp_path, entry(target=CODE_TARGET) + entry(target="plan.md") + entry(target="gone.md")
    )
    loaded = load_decisions(path)
    seen: list[str] = []

    def exists(target: str) -> bool:
        seen.append(target)
        return target == "plan.md"

    with pytest.raises(DecisionsError) as info:
        check_targets(loaded, exists)
    assert seen == ["plan.md", "gone.md"]  # the code target is never looked up
    assert str(info.value) == (
        f"pytest-advreview: decisions file {path}: decision entry 3: target 'gone.md' is not "
        'a file of the repository (nor "code-review"); give the plan\'s path relative to the '
        'repository top (target = "docs/plans/x.md"), or delete the entry if the plan is gone'
    )
    check_targets(load_decisions(write(tmp_path, entry())), lambda t: True)
