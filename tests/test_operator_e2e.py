"""A finding the lead leaves to a person stays open across runs.

Before: with a lead, a finding marked ``needs-operator`` failed its run, and the
next run started a fresh review that passed once the reviewer approved: rerunning CI
re-rolled the person's decision away.  The open finding now lives in the target's signed
state entry and fails every later run until the decisions file records the operator's
decision, or the reviewer re-reviews changed content with the finding in its prompt.

The lead is a ``command`` lead (a small script that answers ``needs-operator``); the
reviewer is the in-process scripted reviewer, or the real Codex CLI against the scripted
Responses-API server where a test needs Codex's own sessions.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ReviewRepo
from pytest_advreview.models import Location, finding_id
from pytest_advreview.state import state_key
from pytest_advreview.testing import FindingSpec, approved_review, revise_review, run_step

HIGH = FindingSpec(
    "high",
    "The CLI flag changes meaning",
    section="Interface",
    what="Scripts that pass --all now delete instead of list.",
    recommendation="Add a new flag and keep --all as it was.",
)
PLAN = "# Plan\n\n1. Migrate.\n\n## Interface\nRepurpose --all.\n"
KEY = "docs/plans/x.md"
NO_CODE = "--advreview-diff=none"
REREVIEW = "I've evaluated the findings."
LEAD_REASON = "Changes the CLI grammar; a person must sign off."
STILL_OPEN = "still open, needs the operator"


def fid(spec: FindingSpec) -> str:
    return finding_id(spec.title, Location(section=spec.section))


def operator_lead(folder: Path) -> tuple[str, ...]:
    """Lead options for a ``command`` lead that leaves every finding to the operator."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "lead.py"
    script.write_text(
        textwrap.dedent(
            f"""\
            import json, re, sys
            prompt = sys.stdin.read()
            ids = re.findall(r"^- \\[severity: \\w+\\] (AR-[0-9a-f]{{6}})", prompt, re.M)
            decisions = [
                {{"finding": i, "action": "needs-operator", "reason": {LEAD_REASON!r}}}
                for i in dict.fromkeys(ids)
            ]
            sys.stdout.write(json.dumps({{"decisions": decisions}}))
            """
        )
    )
    return ("--advreview-lead=command", f"--advreview-lead-command={sys.executable} {script}")


def entry(repo: ReviewRepo) -> Path:
    return repo.path / ".pytest_cache" / "d" / "advreview" / "state" / f"{state_key(KEY)}.json"


def approve_everything(repo: ReviewRepo) -> None:
    """From now on the reviewer approves whatever it is asked."""
    repo.rules.clear()
    repo.answer("", {"message": approved_review()})


def left_to_the_operator(repo: ReviewRepo, lead: tuple[str, ...]) -> None:
    """Run 1: round 1 REVISE, the lead leaves the finding to a person, round 2 APPROVED."""
    repo.plan("x.md", PLAN)
    repo.answer(REREVIEW, {"message": approved_review()})
    repo.answer("x.md", {"message": revise_review(HIGH)})
    first = repo.run(NO_CODE, *lead)
    first.assert_outcomes(failed=1)
    first.stdout.fnmatch_lines([f"needs the operator: {fid(HIGH)} — a structural fix*"])
    assert len(repo.server.response_requests) == 2


def assert_fails_naming_the_open_finding(result: pytest.RunResult) -> None:
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert f"needs the operator: {fid(HIGH)} — a structural fix the lead did not apply" in out
    assert f"[severity: high] {fid(HIGH)} The CLI flag changes meaning (Interface)" in out
    assert "Recommendation: Add a new flag and keep --all as it was." in out
    assert LEAD_REASON in out
    assert f"record the operator's decision for {fid(HIGH)} in " in out
    assert ".advreview/decisions.toml" in out


def decide(repo: ReviewRepo, action: str = "reject", reason: str = "Nobody scripts --all.") -> None:
    repo.write(
        ".advreview/decisions.toml",
        f'[[decision]]\ntarget = "{KEY}"\nfinding = "{fid(HIGH)}"\n'
        f'action = "{action}"\nreason = "{reason}"\n',
    )


@pytest.fixture
def lead(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ...]:
    return operator_lead(tmp_path_factory.mktemp("lead"))


def test_an_open_finding_fails_every_later_run_until_the_operator_decides(
    scripted_repo: ReviewRepo, lead: tuple[str, ...]
) -> None:
    left_to_the_operator(scripted_repo, lead)

    # Run 2: same repository, same state, a reviewer that now approves anything.  Before,
    # a fresh review ran and passed; the stored approval does not pass either.
    approve_everything(scripted_repo)
    second = scripted_repo.run(NO_CODE)
    assert_fails_naming_the_open_finding(second)
    stored = json.loads(entry(scripted_repo).read_text(encoding="utf-8"))
    assert [o["finding"]["id"] for o in stored["state"]["operator_open"]] == [fid(HIGH)]
    # Again with the lead, and with --advreview-fresh: neither answers for a person.
    assert_fails_naming_the_open_finding(scripted_repo.run(NO_CODE, *lead))
    fresh = scripted_repo.run(NO_CODE, "--advreview-fresh")
    assert_fails_naming_the_open_finding(fresh)

    # Run 3: the operator's decision is recorded; it is sent with the re-review, and
    # the approval that follows passes, and is stored as a pass.
    decide(scripted_repo)
    calls = len(scripted_repo.server.response_requests)
    third = scripted_repo.run(NO_CODE)
    third.assert_outcomes(passed=1)
    assert len(scripted_repo.server.response_requests) == calls + 1
    assert "Nobody scripts --all." in scripted_repo.server.response_requests[-1].last_user_text
    stored = json.loads(entry(scripted_repo).read_text(encoding="utf-8"))
    assert stored["state"]["operator_open"] == []
    scripted_repo.run(NO_CODE).stdout.fnmatch_lines(["*cached (passed)*"])


def test_a_plan_edit_is_re_reviewed_with_the_open_finding_in_the_prompt(
    scripted_repo: ReviewRepo, lead: tuple[str, ...]
) -> None:
    left_to_the_operator(scripted_repo, lead)
    thread = scripted_repo.server.response_requests[0].thread_id

    # One whitespace of an edit: a new content hash, the same target.  The reviewer is
    # told, on its thread, that a person was asked and has not decided.
    scripted_repo.plan("x.md", PLAN + "\n")
    scripted_repo.rules.clear()
    scripted_repo.answer(STILL_OPEN, {"message": revise_review(HIGH)})
    scripted_repo.answer("", {"message": approved_review()})
    again = scripted_repo.run(NO_CODE)
    again.assert_outcomes(failed=1)
    last = scripted_repo.server.response_requests[-1]
    assert last.thread_id == thread
    prompt = last.last_user_text
    assert f"{STILL_OPEN}: after round 1 the lead left this finding to a person" in prompt
    assert LEAD_REASON in prompt
    assert f"[severity: high] {fid(HIGH)} The CLI flag changes meaning (Interface)" in prompt
    assert "Scripts that pass --all now delete instead of list." in prompt
    # It reported the finding again: still the operator's.
    assert_fails_naming_the_open_finding(scripted_repo.run(NO_CODE))

    # Another edit, and this time the reviewer, told the same, no longer reports it: the
    # re-review settled it and the approval passes.
    scripted_repo.plan("x.md", PLAN.replace("Repurpose --all.", "Add --purge; keep --all."))
    approve_everything(scripted_repo)
    settled = scripted_repo.run(NO_CODE)
    settled.assert_outcomes(passed=1)
    assert STILL_OPEN in scripted_repo.server.response_requests[-1].last_user_text


def test_on_a_runner_without_the_thread_the_fresh_review_is_told_of_the_open_finding(
    review_repo: ReviewRepo, lead: tuple[str, ...]
) -> None:
    # A CI runner that kept .pytest_cache but not $CODEX_HOME/sessions: the thread cannot
    # be resumed, and the fresh review that replays the rounds carries the open finding.
    left_to_the_operator(review_repo, lead)
    shutil.rmtree(Path(os.environ["CODEX_HOME"]) / "sessions")
    review_repo.plan("x.md", PLAN + "\n")
    approve_everything(review_repo)
    calls = len(review_repo.server.response_requests)
    review_repo.run(NO_CODE).assert_outcomes(passed=1)
    (fresh,) = review_repo.server.response_requests[calls:]
    assert fresh.thread_id != review_repo.server.response_requests[0].thread_id
    assert "## Previous review rounds" in fresh.last_user_text
    assert f"{fid(HIGH)}: re-scope — {STILL_OPEN}: after round 1" in fresh.last_user_text


def test_a_reviewer_that_deletes_the_entry_does_not_close_the_open_finding(
    scripted_repo: ReviewRepo, lead: tuple[str, ...]
) -> None:
    left_to_the_operator(scripted_repo, lead)
    victim = entry(scripted_repo)

    # A second plan's reviewer deletes the stored state with a command it runs.
    scripted_repo.plan("y.md", "# Other\n\n1. Something else.\n")
    scripted_repo.rules.clear()
    delete = f"import pathlib; pathlib.Path({str(victim)!r}).unlink(); print('deleted')"
    scripted_repo.answer(
        "y.md", run_step(f'{sys.executable} -c "{delete}"'), {"message": approved_review()}
    )
    scripted_repo.answer("", {"message": approved_review()})
    attacked = scripted_repo.run(NO_CODE, "docs/plans/y.md")
    assert any("deleted" in text for text in scripted_repo.tool_outputs())  # it really ran
    attacked.assert_outcomes(errors=1, passed=1)
    attacked.stdout.fnmatch_lines(["*review state of docs/plans/x.md changed outside*"])

    # The verdict went with the entry; the question to a person did not.
    assert victim.is_file()
    approve_everything(scripted_repo)
    assert_fails_naming_the_open_finding(scripted_repo.run(NO_CODE, "docs/plans/x.md"))


def test_renaming_the_plan_does_not_take_the_open_finding_away(
    scripted_repo: ReviewRepo, lead: tuple[str, ...]
) -> None:
    left_to_the_operator(scripted_repo, lead)
    plan = scripted_repo.path / KEY
    plan.rename(plan.with_name("renamed.md"))
    approve_everything(scripted_repo)
    calls = len(scripted_repo.server.response_requests)
    refused = scripted_repo.run(NO_CODE)
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(
        [
            f"*the plan {KEY} no longer exists, but findings the lead left to the operator on "
            f"it are still open: [[]severity: high[]] {fid(HIGH)} The CLI flag changes meaning*"
        ]
    )
    assert len(scripted_repo.server.response_requests) == calls  # nothing was reviewed

    # The operator's decision on the gone plan's finding is accepted, and the run goes on.
    decide(scripted_repo, action="accept", reason="Renamed and reworked; see renamed.md.")
    scripted_repo.run(NO_CODE).assert_outcomes(passed=1)


def test_a_decision_on_a_finding_that_was_never_open_is_refused(
    scripted_repo: ReviewRepo, lead: tuple[str, ...]
) -> None:
    left_to_the_operator(scripted_repo, lead)
    scripted_repo.write(
        ".advreview/decisions.toml",
        f'[[decision]]\ntarget = "{KEY}"\nfinding = "AR-000000"\n'
        'action = "reject"\nreason = "Not a real finding."\n',
    )
    refused = scripted_repo.run(NO_CODE)
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines([f"*unknown finding id AR-000000 for {KEY}; known: {fid(HIGH)}*"])
