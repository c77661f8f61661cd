"""Under CI ``--advreview-diff=auto`` reviews the branch, and every output names it.

A CI checkout's working tree holds nobody's edits: files a checkout renormalised (a
``.gitattributes`` line) and artifacts of earlier steps.  Reviewing those instead of the
branch would let the branch pass unreviewed; the header, the JSON and the markdown report
name the change set so a reader can see which one was reviewed.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conftest import ReviewRepo, git, ran_prompts
from pytest_advreview import targets
from pytest_advreview.testing import approved_review
from pytest_advreview.trust import run as trust_run

PROMPT = "Review the code changes"


def _ci_checkout(review_repo: ReviewRepo) -> None:
    """main with a CRLF file under ``* text``; a feature branch; a tree as CI leaves it."""
    repo = review_repo.path
    # ``* text`` (not ``text=auto``: git 2.10+ leaves a CRLF blob alone under auto) makes
    # every checkout of a CRLF blob show as modified, as a fresh clone does.
    review_repo.write(".gitattributes", "* text\n")
    review_repo.commit("attributes")
    review_repo.write("win.txt", b"first\r\nsecond\r\n")
    blob = git(repo, "hash-object", "-w", "--no-filters", "win.txt").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},win.txt")
    git(repo, "commit", "-qm", "a file with CRLF line endings")
    git(repo, "checkout", "-q", "-b", "feature")
    review_repo.write("src/feature.py", "def feature():\n    return 1\n")
    # Not ``add -A``: that would commit win.txt renormalised.
    git(repo, "add", "src/feature.py")
    git(repo, "commit", "-qm", "the feature")
    # What the checkout and an earlier build step leave behind.
    review_repo.write("build/artifact.txt", "generated\n")
    status = git(repo, "status", "--porcelain", "--untracked-files=all")
    assert " M win.txt" in status, status  # the renormalised file
    assert "?? build/artifact.txt" in status, status  # the stray artifact


@pytest.mark.real_codex
@pytest.mark.parametrize(
    ("variable", "value"), [("CI", "true"), ("GITHUB_ACTIONS", "TRUE")], ids=["CI", "GHA"]
)
def test_auto_under_ci_reviews_the_branch_and_all_outputs_name_it(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    _ci_checkout(review_repo)
    repo = review_repo.path
    monkeypatch.setenv(variable, value)
    # The GitHub integration would append to a step summary; keep it to the files.
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    review_repo.answer(PROMPT, {"message": approved_review()})
    result = review_repo.run(
        "--advreview-base=main",
        "--advreview-github=off",
        "--advreview-json=out.json",
        "--advreview-report=out.md",
    )
    result.assert_outcomes(passed=1)

    # What the real Codex CLI sent the model: the branch, not the working tree.
    (prompt,) = ran_prompts(review_repo.server, PROMPT)
    assert "branch changes vs main" in prompt
    assert "src/feature.py" in prompt
    assert " diff --text --no-textconv --no-ext-diff " in prompt
    assert "main...HEAD` to see the full diffs" in prompt
    assert "win.txt" not in prompt
    assert "artifact" not in prompt

    base = git(repo, "rev-parse", "main").strip()
    head = git(repo, "rev-parse", "HEAD").strip()
    how = "--advreview-diff=auto under CI"
    result.stdout.fnmatch_lines(
        [
            f"advreview: code change: branch main...HEAD: base {base[:12]}, merge base "
            f"{base[:12]}, head {head[:12]}, 1 file ({how})"
        ]
    )

    report = json.loads((repo / "out.json").read_text())
    schema = json.loads(
        (Path(__file__).parents[1] / "docs" / "advreview-results.schema.json").read_text()
    )
    jsonschema.validate(report, schema)
    assert report["change_set"] == {
        "requested": "auto",
        "ci": True,
        "mode": "branch",
        "base": "main",
        "base_commit": base,
        "merge_base": base,
        "head_commit": head,
        "files": 1,
        "description": "branch changes vs main",
        "note": None,
        # .gitattributes is main's, not the branch's: no change to warn about.
        "attributes": [],
        "converted": [],
        "filtered": [],
    }

    markdown = (repo / "out.md").read_text()
    (line,) = [ln for ln in markdown.splitlines() if ln.startswith("**Change set:**")]
    assert "branch main...HEAD" in line
    assert f"base {base[:12]}" in line
    assert f"head {head[:12]}" in line
    assert "1 file " in line


@pytest.mark.real_codex
def test_auto_outside_ci_still_reviews_the_working_tree(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documented laptop default is unchanged: uncommitted changes win."""
    _ci_checkout(review_repo)
    review_repo.answer(PROMPT, {"message": approved_review()})
    result = review_repo.run("--advreview-base=main", "--advreview-json=out.json")
    result.assert_outcomes(passed=1)
    (prompt,) = ran_prompts(review_repo.server, PROMPT)
    assert "build/artifact.txt" in prompt
    assert "src/feature.py" not in prompt
    change = json.loads((review_repo.path / "out.json").read_text())["change_set"]
    assert change["mode"] == "uncommitted"
    assert change["ci"] is False
    assert change["base"] == "HEAD"
    assert change["files"] == 2
    result.stdout.fnmatch_lines(["advreview: code change: uncommitted: *, 2 files (*=auto)"])


def test_auto_under_ci_without_a_base_reviews_no_working_tree(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No base under CI: no code item at all (never the stray files), and the header says why."""
    review_repo.write("build/artifact.txt", "generated\n")
    git(review_repo.path, "branch", "-m", "main", "trunk")  # no main, master or origin/HEAD
    monkeypatch.setenv("CI", "1")
    result = review_repo.run("--collect-only")
    assert "code-review" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        ["advreview: code change: none (under CI --advreview-diff=auto reviews only BASE...HEAD*"]
    )


def test_explicit_uncommitted_under_ci_is_honoured(review_repo: ReviewRepo) -> None:
    review_repo.write("notes.txt", "draft\n")
    change = targets.change_set(review_repo.path, "uncommitted", "main", (), ci=True)
    assert change is not None
    assert change.files == ("notes.txt",)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, False),
        ({"CI": "true"}, True),
        ({"CI": "True"}, True),
        ({"CI": "1"}, True),
        ({"CI": "yes"}, True),
        ({"CI": "false"}, False),
        ({"CI": ""}, False),
        ({"GITHUB_ACTIONS": "true"}, True),
        ({"CI": "0", "GITHUB_ACTIONS": "true"}, True),
    ],
)
def test_in_ci_reads_ci_and_github_actions(env: dict[str, str], expected: bool) -> None:
    assert trust_run.in_ci(env) is expected


@pytest.mark.parametrize(
    ("mode", "ci", "note"),
    [
        ("none", False, "--advreview-diff=none"),
        ("uncommitted", False, "no uncommitted change"),
        ("branch", True, "no code change against main (plans are reviewed as plan items)"),
        ("auto", False, "no code change against main (plans are reviewed as plan items)"),
    ],
)
def test_no_change_set_says_why(review_repo: ReviewRepo, mode: str, ci: bool, note: str) -> None:
    change = targets.change_set(review_repo.path, mode, "main", (), ci=ci)
    assert change is None
    info = targets.change_set_info(review_repo.path, None, mode, "main", ci=ci)
    assert info.mode == "none"
    assert info.summary() == f"none ({note})"
    assert info.head_commit == git(review_repo.path, "rev-parse", "HEAD").strip()
