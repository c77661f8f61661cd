"""Tests of ``pytest_advreview.trust.decisions``: the decisions file and each error it raises."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import commit, git, init_repo
from pytest_advreview.models import Decision, DecisionAction
from pytest_advreview.trust.decisions import (
    DecisionsError,
    DecisionsFile,
    check_known,
    check_targets,
    load_at_commit,
    load_decisions,
)
from pytest_advreview.trust.run import gated

GOOD = """\
# Decisions on the last review round.
[[decision]]
target = "docs/plans/x.md"
finding = "AR-1a2b3c"
action = "reject"
reason = "Runs in one transaction; no partial write is possible."

[[decision]]
target = "docs/plans/x.md"
finding = "AR-4d5e6f"
action = "accept"

[[decision]]
target = "code-review"
finding = "AR-777777"
action = "re-scope"
reason = "Retries move to the follow-up plan."
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / ".advreview" / "decisions.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def entry(**fields: str) -> str:
    base = {
        "target": "docs/plans/x.md",
        "finding": "AR-1a2b3c",
        "action": "accept",
        "reason": "done",
    }
    base.update(fields)
    body = "".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in base.items() if v != "<drop>")
    return "[[decision]]\n" + body


def load_error(tmp_path: Path, text: str) -> DecisionsError:
    path = write(tmp_path, text)
    with pytest.raises(DecisionsError) as info:
        load_decisions(path)
    assert str(path) in str(info.value)
    assert str(info.value).startswith("pytest-advreview: decisions file ")
    return info.value


# -- the happy path --------------------------------------------------------------------------


def test_happy_path(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    loaded = load_decisions(path)
    assert loaded.path == path
    assert loaded.for_target("docs/plans/x.md") == (
        Decision(
            finding="AR-1a2b3c",
            action=DecisionAction.REJECT,
            reason="Runs in one transaction; no partial write is possible.",
        ),
        Decision(finding="AR-4d5e6f", action=DecisionAction.ACCEPT, reason=None),
    )
    assert loaded.for_target("code-review") == (
        Decision(
            finding="AR-777777",
            action=DecisionAction.RESCOPE,
            reason="Retries move to the follow-up plan.",
        ),
    )
    assert loaded.for_target("docs/plans/other.md") == ()
    assert loaded.targets == {"docs/plans/x.md", "code-review"}


def test_missing_file_means_no_decisions(tmp_path: Path) -> None:
    loaded = load_decisions(tmp_path / "nope.toml")
    assert loaded == DecisionsFile(path=tmp_path / "nope.toml")
    assert loaded.for_target("code-review") == ()


def test_empty_file_means_no_decisions(tmp_path: Path) -> None:
    assert load_decisions(write(tmp_path, "# nothing decided yet\n")).entries == ()


def test_values_are_normalised(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        entry(target="./docs\\plans\\x.md ", finding=" ar-1A2B3C", reason="  "),
    )
    (only,) = load_decisions(path).entries
    assert only.target == "docs/plans/x.md"
    assert only.finding == "AR-1a2b3c"
    assert only.reason is None  # a blank reason is no reason (fine for accept)


# -- errors ----------------------------------------------------------------------------------


def test_toml_syntax_error_names_the_line(tmp_path: Path) -> None:
    err = load_error(tmp_path, '[[decision]]\ntarget = "docs/plans/x.md"\naction reject\n')
    assert err.entry is None
    assert re.search(r"is not valid TOML: .*line 3", str(err))
    assert "[[decision]]" in str(err)  # shows what an entry looks like


def test_unknown_key(tmp_path: Path) -> None:
    err = load_error(tmp_path, entry() + 'reson = "typo"\n')
    assert err.entry == 1
    assert (
        "decision entry 1: unknown key 'reson'; allowed keys: target, finding, action, reason"
        in (str(err))
    )


def test_unknown_action_lists_the_allowed_ones(tmp_path: Path) -> None:
    err = load_error(tmp_path, entry() + entry(finding="AR-222222", action="rejected"))
    assert err.entry == 2
    assert "decision entry 2: unknown action 'rejected'; use one of: accept, re-scope, reject" in (
        str(err)
    )


def test_reject_without_reason_is_refused(tmp_path: Path) -> None:
    err = load_error(tmp_path, entry(action="reject", reason="<drop>"))
    assert "action 'reject' on AR-1a2b3c has no reason: rejections need reasons" in str(err)
    assert 'add reason = "' in str(err)


def test_reject_with_blank_reason_is_refused(tmp_path: Path) -> None:
    err = load_error(tmp_path, entry(action="reject", reason="   "))
    assert "rejections need reasons" in str(err)


def test_rescope_without_reason_is_refused(tmp_path: Path) -> None:
    err = load_error(tmp_path, entry(action="re-scope", reason="<drop>"))
    assert "action 're-scope' on AR-1a2b3c has no reason" in str(err)


@pytest.mark.parametrize("field", ["target", "finding", "action"])
def test_missing_field(tmp_path: Path, field: str) -> None:
    err = load_error(tmp_path, entry(**{field: "<drop>"}))
    assert f"decision entry 1: missing '{field}'; add {field} = ..." in str(err)


def test_empty_target(tmp_path: Path) -> None:
    err = load_error(tmp_path, entry(target=" "))
    assert "'target' is empty" in str(err)
    assert 'target = "code-review"' in str(err)


def test_empty_finding(tmp_path: Path) -> None:
    err = load_error(tmp_path, entry(finding=""))
    assert "'finding' is empty; copy the id printed in the failure" in str(err)


def test_wrong_type(tmp_path: Path) -> None:
    err = load_error(tmp_path, entry().replace('reason = "done"', "reason = 42"))
    assert "'reason': " in str(err)
    assert "give a string" in str(err)


def test_duplicate_entry(tmp_path: Path) -> None:
    err = load_error(tmp_path, entry() + entry(action="reject", reason="changed my mind"))
    assert err.entry == 2
    assert "repeats the decision on AR-1a2b3c for docs/plans/x.md (entry 1)" in str(err)


def test_unknown_top_level_key(tmp_path: Path) -> None:
    err = load_error(tmp_path, "decisions = []\n" + entry())
    assert "unknown top-level key 'decisions'" in str(err)


def test_single_table_instead_of_array(tmp_path: Path) -> None:
    err = load_error(tmp_path, entry().replace("[[decision]]", "[decision]"))
    assert "write each entry as [[decision]]" in str(err)


def test_array_of_non_tables(tmp_path: Path) -> None:
    err = load_error(tmp_path, "decision = [1]\n")
    assert err.entry == 1
    assert "is not a table" in str(err)


def test_not_utf8(tmp_path: Path) -> None:
    path = write(tmp_path, "")
    path.write_bytes(b"# caf\xe9\n")
    with pytest.raises(DecisionsError, match=r"is not UTF-8 \(at offset 5\)"):
        load_decisions(path)


def test_a_directory_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "decisions.toml"
    path.mkdir()
    with pytest.raises(DecisionsError, match=r"decisions\.toml: is a directory, not a file"):
        load_decisions(path)


def test_other_read_errors(tmp_path: Path) -> None:
    # A path through a regular file: ENOTDIR, unreadable for any user.
    (tmp_path / "file").write_text("", encoding="utf-8")
    with pytest.raises(DecisionsError, match="cannot be read"):
        load_decisions(tmp_path / "file" / "decisions.toml")


# -- check_known -----------------------------------------------------------------------------


def test_check_known_accepts_known_ids(tmp_path: Path) -> None:
    loaded = load_decisions(write(tmp_path, GOOD))
    check_known(loaded, "docs/plans/x.md", {"AR-1a2b3c", "AR-4d5e6f", "AR-999999"})
    # Entries of other targets are not this target's business.
    check_known(loaded, "code-review", {"AR-777777"})


def test_check_known_refuses_an_unknown_id(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    loaded = load_decisions(path)
    with pytest.raises(DecisionsError) as info:
        check_known(loaded, "docs/plans/x.md", ["AR-4d5e6f", "AR-000001"])
    err = info.value
    assert err.entry == 1
    assert str(err).startswith(f"pytest-advreview: decisions file {path}: decision entry 1: ")
    assert "unknown finding id AR-1a2b3c for docs/plans/x.md; known: AR-000001, AR-4d5e6f" in (
        str(err)
    )


def test_check_known_names_the_given_path(tmp_path: Path) -> None:
    loaded = load_decisions(write(tmp_path, GOOD))
    with pytest.raises(DecisionsError, match=r"decisions file shown\.toml: decision entry 3"):
        check_known(loaded, "code-review", {"AR-000000"}, Path("shown.toml"))


def test_check_known_without_stored_rounds_checks_nothing(tmp_path: Path) -> None:
    check_known(load_decisions(write(tmp_path, GOOD)), "docs/plans/x.md", ())


def test_every_problem_of_an_entry_is_named(tmp_path: Path) -> None:
    err = load_error(tmp_path, entry(finding="<drop>", action="acept"))
    assert "missing 'finding'" in str(err)
    assert "; also unknown action 'acept'" in str(err)


# -- check_targets ---------------------------------------------------------------------------


def test_check_targets_accepts_existing_plans_and_the_code_review(tmp_path: Path) -> None:
    check_targets(load_decisions(write(tmp_path, GOOD)), {"docs/plans/x.md"}.__contains__)


def test_check_targets_refuses_a_target_that_is_no_file(tmp_path: Path) -> None:
    text = GOOD + entry(target="docs/plans/typo.md", finding="AR-000001")
    path = write(tmp_path, text)
    with pytest.raises(DecisionsError) as info:
        check_targets(load_decisions(path), {"docs/plans/x.md"}.__contains__)
    message = str(info.value)
    assert message.startswith(f"pytest-advreview: decisions file {path}: decision entry 4: ")
    assert "target 'docs/plans/typo.md' is not a file of the repository" in message
    assert "or delete the entry" in message


# -- under a gate: the base commit's file, from git objects -----------------------------


@pytest.fixture
def based(tmp_path: Path, hermetic_git: None) -> tuple[Path, str]:
    """A repository whose first commit has the decisions file; the working tree differs."""
    root = init_repo(tmp_path / "repo")
    (root / ".advreview").mkdir()
    (root / ".advreview/decisions.toml").write_text(GOOD, encoding="utf-8")
    (root / "linked.toml").symlink_to(".advreview/decisions.toml")
    (root / "folder").mkdir()
    (root / "folder/keep").write_text("x\n")
    commit(root, "base")
    sha = git(root, "rev-parse", "HEAD").strip()
    # What the branch (or an earlier step) leaves in the working tree is never read.
    (root / ".advreview/decisions.toml").write_text("not toml [", encoding="utf-8")
    return root, sha


def test_the_base_commits_file_is_read_from_git_not_the_working_tree(
    based: tuple[Path, str],
) -> None:
    root, sha = based
    found = load_at_commit(root, sha, ".advreview/decisions.toml", shown="main")
    assert [e.finding for e in found.entries] == ["AR-1a2b3c", "AR-4d5e6f", "AR-777777"]
    assert str(found.path) == "main:.advreview/decisions.toml"
    assert load_at_commit(root, sha, "absent.toml", shown="main").entries == ()


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("linked.toml", "is a symbolic link in the base commit"),
        ("folder", "is a tree, not a file, in the base commit"),
    ],
)
def test_a_link_or_a_folder_in_the_base_commit_is_refused(
    based: tuple[Path, str], key: str, problem: str
) -> None:
    root, sha = based
    with pytest.raises(DecisionsError, match=f"main:{key}: {problem}"):
        load_at_commit(root, sha, key, shown="main")


def test_a_base_commits_file_with_errors_names_the_commit_and_the_entry(
    based: tuple[Path, str],
) -> None:
    root, _ = based
    (root / ".advreview/decisions.toml").write_text(
        '[[decision]]\ntarget = "x.md"\nfinding = "AR-1a2b3c"\naction = "reject"\n'
    )
    commit(root, "a reject without a reason")
    sha = git(root, "rev-parse", "HEAD").strip()
    with pytest.raises(DecisionsError, match=r"main:\.advreview/decisions\.toml: decision entry 1"):
        load_at_commit(root, sha, ".advreview/decisions.toml", shown="main")


def test_gated_means_ci_strict_exit_or_head_as_data() -> None:
    assert not gated({}, strict_exit=False, head=None)
    assert gated({"CI": "true"}, strict_exit=False, head=None)
    assert gated({"GITHUB_ACTIONS": "true"}, strict_exit=False, head=None)
    assert gated({}, strict_exit=True, head=None)
    assert gated({}, strict_exit=False, head="abc")
