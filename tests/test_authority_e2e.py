"""Authority over findings: under a gate only the base branch speaks for the operator.

Before: a finding the lead left to a person (``needs-operator``) was closed by an entry in
the decisions file of the checkout, under CI too, so a pull request that committed a
``reject`` for it answered for the operator and the next run passed.  Now the branch's
entries are the author's answers (sent to the reviewer as data), and under a gate (CI,
``--advreview-strict-exit``, ``--advreview-head``) only the decisions file as the base
commit holds it, read from git objects, decides the finding.  Each route by which the
branch could supply that file is tried here; the Action's own run is in
``test_authority_action.py``.
"""

from __future__ import annotations

import os

import pytest

from conftest import ReviewRepo, git
from test_operator_e2e import (
    HIGH,
    KEY,
    NO_CODE,
    PLAN,
    approve_everything,
    decide,
    fid,
    left_to_the_operator,
    operator_lead,
)

REASON = "Nobody scripts --all."
OPEN = f"needs the operator: {fid(HIGH)} — a structural fix the lead did not apply"


@pytest.fixture
def lead(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ...]:
    return operator_lead(tmp_path_factory.mktemp("lead"))


def pull_request(repo: ReviewRepo) -> ReviewRepo:
    """A pull request: the plan committed on ``feature``, ``main`` its base."""
    git(repo.path, "checkout", "-q", "-b", "feature")
    repo.plan("x.md", PLAN)
    repo.commit("the plan")
    return repo


@pytest.fixture
def branch(scripted_repo: ReviewRepo) -> ReviewRepo:
    return pull_request(scripted_repo)


@pytest.fixture
def real_branch(review_repo: ReviewRepo) -> ReviewRepo:
    """:func:`branch`, reviewed by the real Codex CLI."""
    return pull_request(review_repo)


def on_main(repo: ReviewRepo, relpath: str, text: str) -> None:
    """The operator commits ``relpath`` on the base branch; the checkout stays the branch's."""
    git(repo.path, "checkout", "-q", "main")
    repo.write(relpath, text)
    git(repo.path, "add", relpath)
    git(repo.path, "commit", "-qm", "the operator decides")
    git(repo.path, "checkout", "-q", "feature")


def decision(action: str = "reject", reason: str = REASON) -> str:
    return (
        f'[[decision]]\ntarget = "{KEY}"\nfinding = "{fid(HIGH)}"\n'
        f'action = "{action}"\nreason = "{reason}"\n'
    )


def assert_still_open(result: pytest.RunResult) -> None:
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert OPEN in out
    assert "in .advreview/decisions.toml on the base branch (main (" in out


@pytest.mark.real_codex
def test_under_ci_the_branchs_reject_is_the_authors_answer_not_the_operators(
    real_branch: ReviewRepo, lead: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    branch = real_branch
    monkeypatch.setenv("CI", "true")
    left_to_the_operator(branch, lead)

    # The pull request commits a reject for the finding left to a person.
    approve_everything(branch)
    decide(branch, reason=REASON)
    branch.commit("the branch answers for the operator")
    calls = len(branch.server.response_requests)
    second = branch.run(NO_CODE)
    assert_still_open(second)
    second.stdout.fnmatch_lines(
        ["advreview: findings left to the operator are decided only by .advreview/decisions*"]
    )
    # Still the author's answer: it reached the reviewer as data, in the next round.
    assert len(branch.server.response_requests) == calls + 1
    assert REASON in branch.server.response_requests[-1].last_user_text

    # --advreview-strict-exit is a gate as well.
    monkeypatch.delenv("CI")
    assert_still_open(branch.run(NO_CODE, "--advreview-strict-exit"))
    # In a local run the person running it decides: the same file closes it.
    branch.run(NO_CODE).assert_outcomes(passed=1)

    # The operator records the decision on the base branch: under CI that decides it.
    monkeypatch.setenv("CI", "true")
    on_main(branch, ".advreview/decisions.toml", decision())
    branch.run(NO_CODE).assert_outcomes(passed=1)


@pytest.mark.parametrize("route", ["working-tree", "linked-folder", "ini-path", "linked-file"])
def test_no_route_of_the_branch_answers_for_the_operator_under_ci(
    branch: ReviewRepo, lead: tuple[str, ...], monkeypatch: pytest.MonkeyPatch, route: str
) -> None:
    monkeypatch.setenv("CI", "true")
    left_to_the_operator(branch, lead)
    approve_everything(branch)
    if route == "working-tree":
        # An earlier step of the job writes the file into the checkout.
        branch.write(".advreview/decisions.toml", decision())
    elif route == "linked-folder":
        # The base has the decisions folder; the branch makes it a link to its own.
        on_main(branch, ".advreview/README", "decisions live here\n")
        git(branch.path, "merge", "-q", "main")
        git(branch.path, "rm", "-rq", ".advreview")
        branch.write("notes/decisions.toml", decision())
        os.symlink("notes", branch.path / ".advreview")
        branch.commit("decisions through a link")
    elif route == "ini-path":
        # The branch's ini points the setting at a file only the branch has.
        branch.write("pytest.ini", "[pytest]\nadvreview_decisions = notes/answers.toml\n")
        branch.write("notes/answers.toml", decision())
        branch.commit("our own decisions file")
    else:
        branch.write("notes/answers.toml", decision())
        os.makedirs(branch.path / ".advreview", exist_ok=True)
        os.symlink("../notes/answers.toml", branch.path / ".advreview/decisions.toml")
        branch.commit("decisions file as a link")
    result = branch.run(NO_CODE)
    result.assert_outcomes(failed=1)
    assert OPEN in result.stdout.str()
    assert "on the base branch (main (" in result.stdout.str()


def test_a_link_in_the_base_commit_or_a_file_outside_the_repository_is_refused(
    branch: ReviewRepo, monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setenv("CI", "true")
    git(branch.path, "checkout", "-q", "main")
    os.makedirs(branch.path / ".advreview")
    os.symlink("/etc/hostname", branch.path / ".advreview/decisions.toml")
    branch.commit("a link where the decisions file belongs")
    git(branch.path, "checkout", "-q", "feature")
    refused = branch.run(NO_CODE)
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(
        ["*decisions file main (*):.advreview/decisions.toml: is a symbolic link in the base*"]
    )

    # Under a gate the checkout's own ini key is not used (test_gate_config_e2e.py): the
    # workflow's command line names the file outside the repository.
    elsewhere = ("-o", "advreview_decisions=../elsewhere.toml")
    outside = branch.run(NO_CODE, *elsewhere)
    assert outside.ret == pytest.ExitCode.USAGE_ERROR
    outside.stderr.fnmatch_lines(
        ["*elsewhere.toml: lies outside the repository *, but under a gate*"]
    )
    # Locally the same settings are the user's own choice.
    monkeypatch.delenv("CI")
    assert branch.run(NO_CODE, *elsewhere).ret != pytest.ExitCode.USAGE_ERROR


def test_head_mode_reads_the_operators_decisions_from_the_base_commit(
    branch: ReviewRepo, lead: tuple[str, ...]
) -> None:
    # A local run of the branch leaves the finding to a person (the state is the base
    # checkout's .pytest_cache, kept across the checkouts below).
    left_to_the_operator(branch, lead)
    git(branch.path, "checkout", "-q", "main")
    approve_everything(branch)
    head = ("--advreview-head=feature", "--advreview-base=main")
    # An earlier step writes the decisions file into the base checkout: not the base's.
    branch.write(".advreview/decisions.toml", decision())
    result = branch.run(NO_CODE, *head)
    result.assert_outcomes(failed=1)
    assert OPEN in result.stdout.str()
    assert "on the base branch (main (" in result.stdout.str()
    # Committed on the base, it is the operator's.
    branch.commit("the operator decides")
    branch.run(NO_CODE, *head).assert_outcomes(passed=1)


def test_the_base_branchs_decisions_on_other_findings_are_not_this_branchs_answers(
    branch: ReviewRepo, lead: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    left_to_the_operator(branch, lead)
    # The operator decided another pull request's finding on the same plan on main; the
    # branch merges main, so its checkout carries that entry too.
    other = decision().replace(fid(HIGH), "AR-000000").replace(REASON, "Decided on #6.")
    on_main(branch, ".advreview/decisions.toml", other)
    git(branch.path, "merge", "-q", "main")
    approve_everything(branch)
    # Not a usage error ("unknown finding id AR-000000"): the entry is the base's, not
    # an answer of this branch; and the finding left open here stays open.
    assert_still_open(branch.run(NO_CODE))
    # The branch adds its own answer below the base's: checked and sent, not deciding.
    (branch.path / ".advreview/decisions.toml").write_text(other + "\n" + decision())
    branch.commit("our answer")
    assert_still_open(branch.run(NO_CODE))
    assert REASON in branch.server.response_requests[-1].last_user_text
