"""Stored verdicts cannot be forged, and a cached verdict is only its reviewer's.

A reviewer (through a real Codex tool call), an earlier CI
step or a restored cache that rewrites the plugin's stored state never passes an item,
and a verdict is reused only for the reviewer and the content that produced it.  That a
reviewer's real tool call can reach the stored state, what reaches its tools, the
provider and Codex's home run the real Codex CLI; the others run on the in-process
scripted reviewer, whose run steps stand in for a reviewer's commands.
"""

from __future__ import annotations

import json
import re
import shlex
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ReviewRepo, git, ran_prompts
from pytest_advreview.state import state_key
from pytest_advreview.testing import (
    FindingSpec,
    ScriptedServer,
    approved_review,
    revise_review,
    run_step,
    shell_step,
)

HIGH = FindingSpec("high", "Rollback restores a stale backup", section="Rollback")
PLAN = "# Plan\n\n1. Migrate.\n\n## Rollback\nRestore the backup.\n"
NO_CODE = "--advreview-diff=none"
SECRET = "ci-secret-" + "0123456789abcdef" * 3

#: What an attacker runs: turn every stored round of an entry into an approval.
FORGE = textwrap.dedent(
    """\
    import json, sys
    path = sys.argv[1]
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    state = data.get("state", data)
    for record in state["rounds"]:
        record["review"]["verdict"] = "APPROVED"
        record["review"]["findings"] = []
        record["runner"]["verdict"] = "APPROVED"
    state["status"] = "approved"
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    print("forged", path)
    """
)


def entry(repo: ReviewRepo, key: str) -> Path:
    return repo.path / ".pytest_cache" / "d" / "advreview" / "state" / f"{state_key(key)}.json"


def stored_revise(repo: ReviewRepo, name: str) -> Path:
    """The stored state entry of plan ``name`` after a run that reviewed it: REVISE."""
    repo.plan(name, PLAN)
    repo.answer(name, {"message": revise_review(HIGH)})
    repo.run(NO_CODE).assert_outcomes(failed=1)
    stored = entry(repo, f"docs/plans/{name}")
    assert stored.is_file()
    return stored


def forge_command(repo: ReviewRepo, target: Path) -> str:
    script = repo.path.parent / "forge.py"
    script.write_text(FORGE, encoding="utf-8")
    return f"{sys.executable} {script} {target}"


def wait_until(condition: str) -> str:
    """A shell command that returns once the command ``condition`` succeeds, or after
    60 s (the test then fails on what did not happen, not on a hang)."""
    return f"i=0; until {condition} || [ $i -ge 1200 ]; do i=$((i+1)); sleep 0.05; done"


def exists(path: Path) -> str:
    return f"[ -e {shlex.quote(str(path))} ]"


def forge(repo: ReviewRepo, target: Path) -> None:
    """The same forgery, done by something outside any review (an earlier CI step)."""
    subprocess.run(shlex.split(forge_command(repo, target)), check=True, capture_output=True)


# -- stored verdicts cannot be forged ----------------------------------------------


def test_a_reviewer_that_rewrites_another_plans_verdict_errors_and_that_plan_is_reviewed_again(
    review_repo: ReviewRepo,
) -> None:
    victim = stored_revise(review_repo, "bravo.md")

    # A new plan's reviewer runs a tool call that approves bravo's stored review.
    review_repo.plan("alpha.md", PLAN)
    review_repo.answer(
        "alpha.md",
        shell_step(forge_command(review_repo, victim)),
        {"message": approved_review()},
    )
    # In place: by default the reviewer's worktree leaves the checkout's stored state out
    # of its reach (the write is refused); here it can write it, and the watch must see it.
    second = review_repo.run(NO_CODE, "--advreview-isolation=none")
    second.assert_outcomes(passed=1, failed=1, errors=1)
    outputs = review_repo.tool_outputs()
    assert any("forged" in text for text in outputs)  # the tool call really ran
    out = second.stdout.str()
    section = out.split("ERROR at teardown of [advreview] docs/plans/alpha.md", 1)[1]
    relative = victim.relative_to(review_repo.path).as_posix()
    assert (
        f"{relative} (review state of docs/plans/bravo.md changed outside pytest-advreview"
        in section
    )
    assert not victim.exists()  # the touched entry is discarded

    before = len(ran_prompts(review_repo.server, "bravo.md"))
    third = review_repo.run(NO_CODE, "docs/plans/bravo.md")
    third.assert_outcomes(failed=1)
    assert "cached" not in third.stdout.str().split("adversarial review summary", 1)[1]
    assert len(ran_prompts(review_repo.server, "bravo.md")) == before + 1


def test_a_fixture_reviewer_that_rewrites_a_stored_verdict_fails_and_the_entry_is_discarded(
    scripted_repo: ReviewRepo,
) -> None:
    # The adversarial_review fixture runs reviewers too: the stored verdicts are watched
    # while they run, as they are for review items.
    victim = stored_revise(scripted_repo, "bravo.md")

    scripted_repo.plan("alpha.md", PLAN)
    scripted_repo.answer(
        "alpha.md",
        run_step(forge_command(scripted_repo, victim)),
        {"message": approved_review()},
    )
    scripted_repo.write(
        "test_fixture.py",
        "def test_review(adversarial_review):\n"
        '    adversarial_review.plan("docs/plans/alpha.md")\n',
    )
    result = scripted_repo.pytester.runpytest(
        "test_fixture.py",
        f"--advreview-codex={scripted_repo.codex}",
        "--advreview-model=fake-model",
        *[a for a in scripted_repo.args() if a.startswith("--advreview-codex-config=")],
    )
    result.assert_outcomes(failed=1)
    outputs = scripted_repo.tool_outputs()
    assert any("forged" in text for text in outputs)  # the tool call really ran
    relative = victim.relative_to(scripted_repo.path).as_posix()
    assert f"{relative} (review state of docs/plans/bravo.md changed" in result.stdout.str()
    assert not victim.exists()  # the touched entry is discarded: bravo is reviewed again


@pytest.mark.parametrize("key_source", ["env", "file"])
def test_a_verdict_planted_before_the_run_is_ignored_with_one_warning_and_reviewed_again(
    scripted_repo: ReviewRepo,
    monkeypatch: pytest.MonkeyPatch,
    private_state_key: Path,
    key_source: str,
) -> None:
    if key_source == "env":
        monkeypatch.setenv("ADVREVIEW_STATE_KEY", SECRET)
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer("x.md", {"message": revise_review(HIGH)})
    scripted_repo.run(NO_CODE).assert_outcomes(failed=1)
    key_file = private_state_key / "pytest-advreview" / "state.key"
    if key_source == "env":
        assert not key_file.exists()
    else:
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600

    planted = entry(scripted_repo, "docs/plans/x.md")
    forge(scripted_repo, planted)  # e.g. a test step of the pull request, before the review
    second = scripted_repo.run(NO_CODE, "-W", "always::pytest.PytestWarning")
    second.assert_outcomes(failed=1, warnings=1)
    second.stdout.fnmatch_lines(
        ["*StateWarning*docs/plans/x.md*not written by pytest-advreview under this state key*"]
    )
    assert str(planted) in second.stdout.str()
    second.stdout.fnmatch_lines(["*x.md::adversarial-review: revise (failed)*round 1*"])
    assert len(scripted_repo.server.response_requests) == 2  # reviewed again


def test_the_ci_secret_never_reaches_the_reviewers_tools(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADVREVIEW_STATE_KEY", SECRET)
    review_repo.plan("x.md", PLAN)
    review_repo.answer("x.md", shell_step("env; echo env-done"), {"message": approved_review()})
    review_repo.run(NO_CODE).assert_outcomes(passed=1)
    outputs = review_repo.tool_outputs()
    assert any("env-done" in text for text in outputs)
    assert not any(SECRET in text for text in outputs)
    assert not any(SECRET in json.dumps(r.body) for r in review_repo.server.requests)


def test_entries_other_workers_write_during_a_review_are_not_mutations(
    scripted_repo: ReviewRepo,
) -> None:
    states = scripted_repo.path / ".pytest_cache" / "d" / "advreview" / "state"
    # The long review ends once another worker has stored a verdict (its own is stored
    # after it ends).
    scripted_repo.plan("long.md", PLAN)
    scripted_repo.answer(
        "long.md",
        run_step(wait_until(f"ls {shlex.quote(str(states))}/*.json >/dev/null 2>&1")),
        {"message": approved_review()},
    )
    for name in ("q1.md", "q2.md", "q3.md"):
        scripted_repo.plan(name, PLAN + name)
        scripted_repo.answer(name, {"message": approved_review()})
    result = scripted_repo.run_subprocess(NO_CODE, "-n", "2")
    result.assert_outcomes(passed=4)
    assert len(list(states.glob("*.json"))) == 4
    # Run again: every verdict the workers stored is trusted.
    again = scripted_repo.run_subprocess(NO_CODE, "-n", "2")
    again.assert_outcomes(passed=4)
    assert again.stdout.str().count(": cached (passed)") == 4


def test_under_xdist_a_forged_entry_errors_every_overlapping_review_and_is_discarded(
    scripted_repo: ReviewRepo,
) -> None:
    victim = stored_revise(scripted_repo, "victim.md")

    scripted_repo.plan("writer.md", PLAN + "writer\n")
    scripted_repo.plan("slow.md", PLAN + "slow\n")
    # The slow review is still running when the writer's reviewer forges the entry: each
    # waits for the other (one review per worker).
    started, forged = (
        scripted_repo.path.parent / "slow-started",
        scripted_repo.path.parent / "forged",
    )
    scripted_repo.answer(
        "writer.md",
        run_step(
            f"{wait_until(exists(started))}; {forge_command(scripted_repo, victim)}; "
            f"touch {shlex.quote(str(forged))}"
        ),
        {"message": approved_review()},
    )
    scripted_repo.answer(
        "slow.md",
        run_step(f"touch {shlex.quote(str(started))}; {wait_until(exists(forged))}"),
        {"message": approved_review()},
    )
    result = scripted_repo.run_subprocess(NO_CODE, "-n", "2", "-k", "writer or slow")
    result.assert_outcomes(passed=2, errors=2)
    out = result.stdout.str()
    relative = victim.relative_to(scripted_repo.path).as_posix()
    for name in ("writer.md", "slow.md"):
        section = out.split(f"ERROR at teardown of [advreview] docs/plans/{name}", 1)[1]
        assert relative in section.split("ERROR at teardown", 1)[0]
    assert not victim.exists()

    before = len(ran_prompts(scripted_repo.server, "victim.md"))
    third = scripted_repo.run(NO_CODE, "docs/plans/victim.md")
    third.assert_outcomes(failed=1)
    assert len(ran_prompts(scripted_repo.server, "victim.md")) == before + 1


def test_a_bad_ci_secret_is_a_usage_error(
    scripted_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADVREVIEW_STATE_KEY", "changeme")
    scripted_repo.plan("x.md", PLAN)
    result = scripted_repo.run(NO_CODE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ADVREVIEW_STATE_KEY has 8 characters*at least 32*"])
    assert "Traceback" not in result.stderr.str()
    assert not scripted_repo.server.response_requests


# -- a cached verdict is only its reviewer's and its content's ---------------------


def _approved_then_cached(repo: ReviewRepo, *extra: str) -> None:
    repo.plan("x.md", PLAN)
    repo.answer("x.md", {"message": approved_review()})
    repo.run(NO_CODE, *extra).assert_outcomes(passed=1)
    assert len(repo.server.response_requests) == 1
    unchanged = repo.run(NO_CODE, *extra)
    unchanged.assert_outcomes(passed=1)
    unchanged.stdout.fnmatch_lines(["*x.md::adversarial-review: cached (passed)*"])
    assert len(repo.server.response_requests) == 1  # changing nothing: 0 reviewer calls


@pytest.mark.parametrize(
    "change",
    [
        "--advreview-model=other-model",
        "--advreview-reasoning=medium",
        "--advreview-sandbox=read-only",
        "--advreview-approvals=never",
        "--advreview-language=Deutsch",
        "--advreview-codex-config=model_providers.advreview-fake.request_max_retries=1",
    ],
)
def test_each_reviewer_setting_alone_forces_a_new_review(
    scripted_repo: ReviewRepo, change: str
) -> None:
    _approved_then_cached(scripted_repo)
    changed = scripted_repo.run(NO_CODE, change)
    changed.assert_outcomes(passed=1)
    changed.stdout.fnmatch_lines(["*x.md::adversarial-review: approved (passed)*round 1*"])
    assert len(scripted_repo.server.response_requests) == 2


def test_a_provider_pointed_elsewhere_reviews_again(review_repo: ReviewRepo) -> None:
    _approved_then_cached(review_repo)
    with ScriptedServer() as other:
        other.set_script({"rules": [], "default": {"message": revise_review(HIGH)}})
        moved = review_repo.run(
            NO_CODE, f"--advreview-codex-config=model_providers.advreview-fake.base_url={other.url}"
        )
        moved.assert_outcomes(failed=1)
        assert len(other.response_requests) == 1
    assert len(review_repo.server.response_requests) == 1


def test_a_changed_codex_config_file_reviews_again(
    review_repo: ReviewRepo, codex_home: Path
) -> None:
    _approved_then_cached(review_repo)
    (codex_home / "config.toml").write_text('model_reasoning_summary = "none"\n')
    review_repo.run(NO_CODE).assert_outcomes(passed=1)
    assert len(review_repo.server.response_requests) == 2


def test_a_verdict_of_the_command_backend_does_not_pass_a_codex_review(
    scripted_repo: ReviewRepo,
) -> None:
    reviewer = scripted_repo.path.parent / "approve.py"
    reviewer.write_text(
        f"import sys\nsys.stdin.read()\nprint({approved_review()!r})\n",
        encoding="utf-8",
    )
    scripted_repo.plan("x.md", PLAN)
    command = ("--advreview-reviewer=command", f"--advreview-command={sys.executable} {reviewer}")
    scripted_repo.run(NO_CODE, *command).assert_outcomes(passed=1)
    scripted_repo.run(NO_CODE, *command).stdout.fnmatch_lines(["*cached (passed)*"])
    scripted_repo.answer("x.md", {"message": revise_review(HIGH)})
    switched = scripted_repo.run(NO_CODE)
    switched.assert_outcomes(failed=1)
    assert len(scripted_repo.server.response_requests) == 1
    # Another command line is another reviewer too.
    other = (*command[:1], f"--advreview-command={sys.executable} -I {reviewer}")
    scripted_repo.run(NO_CODE, *other).stdout.fnmatch_lines(["*approved (passed)*round 1*"])


def test_a_new_decision_on_an_approved_review_is_sent(scripted_repo: ReviewRepo) -> None:
    low = FindingSpec("medium", "Pagination order is unspecified", section="Steps")
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer(
        "x.md",
        {"message": revise_review(low).replace("VERDICT: REVISE", "VERDICT: APPROVED")},
        {"message": approved_review()},
        where="body",
    )
    results = scripted_repo.path.parent / "results.json"
    warned = ("--advreview-fail-on=high", "-W", "ignore::pytest_advreview.outcome.ReviewWarning")
    scripted_repo.run(NO_CODE, *warned, f"--advreview-json={results}").assert_outcomes(passed=1)
    (finding,) = set(re.findall(r"AR-[0-9a-f]{6}", results.read_text(encoding="utf-8")))
    scripted_repo.run(NO_CODE, *warned).stdout.fnmatch_lines(["*cached (passed)*"])
    scripted_repo.write(
        ".advreview/decisions.toml",
        f'[[decision]]\ntarget = "docs/plans/x.md"\nfinding = "{finding}"\n'
        'action = "reject"\nreason = "Ordered by id; see step 3."\n',
    )
    scripted_repo.run(NO_CODE, *warned).assert_outcomes(passed=1)
    assert len(scripted_repo.server.response_requests) == 2
    assert "Ordered by id; see step 3." in scripted_repo.server.response_requests[-1].last_user_text


@pytest.fixture
def code_repo(scripted_repo: ReviewRepo, tmp_path: Path) -> ReviewRepo:
    library = tmp_path / "library"
    library.mkdir()
    for args in (
        ("init", "-q", "-b", "main"),
        ("config", "user.email", "t@example.invalid"),
        ("config", "user.name", "T"),
    ):
        git(library, *args)
    (library / "lib.py").write_text("VALUE = 1\n")
    git(library, "add", "-A")
    git(library, "commit", "-qm", "lib")
    git(
        scripted_repo.path,
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        str(library),
        "lib",
    )
    scripted_repo.commit("add the library")
    scripted_repo.answer("Review the code changes", {"message": approved_review()})
    return scripted_repo


@pytest.mark.parametrize("what", ["submodule", "untracked-binary"])
def test_every_changed_byte_of_the_code_change_forces_a_new_review(
    code_repo: ReviewRepo, what: str
) -> None:
    if what == "submodule":
        target = code_repo.path / "lib" / "lib.py"
        first, second = b"VALUE = 2\n", b"VALUE = 3\n"
    else:
        target = code_repo.path / "assets" / "logo.bin"
        first, second = b"\x89PNG\0\1\2", b"\x89PNG\0\1\3"
    code_repo.write(str(target.relative_to(code_repo.path)), first)
    code_repo.run().assert_outcomes(passed=1)
    code_repo.run().stdout.fnmatch_lines(["*code-review: cached (passed)*"])
    assert len(code_repo.server.response_requests) == 1
    code_repo.write(str(target.relative_to(code_repo.path)), second)
    again = code_repo.run()
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(["*code-review: approved (passed)*round 2*"])
    assert len(code_repo.server.response_requests) > 1


def test_a_reviewer_that_writes_the_decisions_file_errors_even_where_git_does_not_look(
    scripted_repo: ReviewRepo,
) -> None:
    # The decisions file in an ignored folder: git status never lists it.
    decisions = scripted_repo.path / ".pytest_cache" / "advreview-decisions.toml"
    scripted_repo.plan("x.md", PLAN)
    scripted_repo.answer(
        "x.md",
        run_step(f"mkdir -p {decisions.parent} && echo '# approved by me' > {decisions}"),
        {"message": approved_review()},
    )
    result = scripted_repo.run(NO_CODE, f"-oadvreview_decisions={decisions}")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown*", "*advreview-decisions.toml*round 1*"])
