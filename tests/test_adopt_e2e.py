"""A new user's first runs: a missing or old Codex, and options written with a space.

Both end-to-end through the real Codex CLI (a repository under pytester, the scripted
server): the run either works or stops at its start with one message that names the fix,
never one error per item and never a silent pass.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ReviewRepo
from pytest_advreview.constants import PINNED_CODEX_VERSION
from pytest_advreview.testing import approved_review, revise_review

#: The install command every message about a missing or old Codex names: the pinned one.
CODEX_INSTALL_COMMAND = f"npm install -g @openai/codex@{PINNED_CODEX_VERSION}"

# -- a missing or wrong codex: one usage error at the start --------------------------------


def _bare_path(tmp_path: Path) -> str:
    """A PATH with git and Python but no ``codex``."""
    bin_dir = tmp_path / "bin-without-codex"
    bin_dir.mkdir()
    for tool in ("git", "bash", "sh", "env"):
        found = subprocess.run(["which", tool], capture_output=True, text=True, check=False)
        if found.returncode == 0:
            (bin_dir / tool).symlink_to(found.stdout.strip())
    return os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent)])


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_a_missing_codex_is_one_usage_error_before_any_review(
    review_repo: ReviewRepo,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    xdist: tuple[str, ...],
) -> None:
    for name in ("a.md", "b.md", "c.md"):
        review_repo.plan(name)
    review_repo.answer("Review", {"message": approved_review()})
    monkeypatch.setenv("PATH", _bare_path(tmp_path))
    temp = Path(os.environ["TMPDIR"])
    before = sorted(temp.iterdir())
    args = [a for a in review_repo.args() if not a.startswith("--advreview-codex=")]
    result = review_repo.pytester.runpytest_subprocess(*args, "--advreview-codex=codex", *xdist)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert out.count("the Codex CLI 'codex' is not on PATH") == 1, out
    assert CODEX_INSTALL_COMMAND in out
    assert "::adversarial-review" not in result.stdout.str()  # no item ran
    assert review_repo.server.response_requests == []
    # Nothing left behind: no folder per item in the temporary folder.
    assert sorted(temp.iterdir()) == before


def test_a_codex_older_than_the_pinned_version_is_refused_at_the_start(
    review_repo: ReviewRepo, tmp_path: Path
) -> None:
    review_repo.plan("a.md")
    review_repo.answer("Review", {"message": approved_review()})
    old = tmp_path / "old-codex"
    old.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = --version ]; then echo "codex-cli 0.170.9"; exit 0; fi\n'
        f'exec "{review_repo.codex}" "$@"\n'
    )
    old.chmod(0o755)
    result = review_repo.pytester.runpytest_subprocess(
        *review_repo.args(f"--advreview-codex={old}")
    )
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert f"is version 0.170.9, older than {PINNED_CODEX_VERSION}" in out
    assert CODEX_INSTALL_COMMAND in out
    assert review_repo.server.response_requests == []


def test_the_pinned_codex_passes_the_check_and_reviews(review_repo: ReviewRepo) -> None:
    review_repo.plan("a.md")
    review_repo.answer("a.md", {"message": revise_review(("high", "No rollback"))})
    result = review_repo.run("--advreview-diff=none")
    result.assert_outcomes(failed=1)
    assert len(review_repo.server.response_requests) == 1


def test_reviewers_that_are_not_codex_are_not_refused_for_a_missing_codex(
    scripted_repo: ReviewRepo, tmp_path: Path
) -> None:
    """The check belongs to the Codex backend: the in-process scripted reviewer (plugged
    in through pytest_advreview_make_reviewer in place of ``codex``) and the command
    backend run whatever --advreview-codex names."""
    scripted_repo.plan("a.md")
    scripted_repo.answer("a.md", {"message": approved_review()})
    missing = f"--advreview-codex={tmp_path / 'no-such-codex'}"
    scripted_repo.run("--advreview-diff=none", missing).assert_outcomes(passed=1)
    reviewer = tmp_path / "reviewer.py"
    reviewer.write_text(f"import sys\nsys.stdin.read()\nprint({approved_review()!r})\n")
    command = f"--advreview-command={sys.executable} {reviewer}"
    result = scripted_repo.pytester.runpytest(
        "--adversarial-review",
        "--advreview-diff=none",
        "--advreview-reviewer=command",
        command,
        missing,
    )
    result.assert_outcomes(passed=1)


def test_the_doctor_names_the_pinned_install_command_for_a_missing_codex(
    tmp_path: Path,
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_advreview", "doctor", f"--codex={tmp_path / 'nope'}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stdout.count(CODEX_INSTALL_COMMAND) == 1, proc.stdout  # once, after the rows
    assert "FAIL version" in proc.stdout


# -- value options written with a space -------------------------------------------------


def test_a_codex_path_written_with_a_space_is_a_usage_error_not_a_silent_pass(
    review_repo: ReviewRepo,
) -> None:
    """On b1b99cb the run took the codex's folder for its rootdir, found no plan and
    exited 0 with "1 passed" (the project's own test)."""
    review_repo.write("test_app.py", "def test_app():\n    pass\n")
    review_repo.commit("app")
    review_repo.plan("a.md")
    review_repo.answer("a.md", {"message": revise_review(("high", "No rollback"))})
    args = [a for a in review_repo.args() if not a.startswith("--advreview-codex=")]
    result = review_repo.pytester.runpytest_subprocess(
        *args, "--advreview-diff=none", "--advreview-codex", str(review_repo.codex)
    )
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert f"write --advreview-codex={review_repo.codex}" in out
    assert f"instead of {review_repo.path}" in out
    assert review_repo.server.response_requests == []


def test_the_same_mistake_in_pytest_addopts_is_caught_too(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    review_repo.plan("a.md")
    monkeypatch.setenv("PYTEST_ADDOPTS", f"--advreview-codex {review_repo.codex}")
    args = [a for a in review_repo.args() if not a.startswith("--advreview-codex=")]
    result = review_repo.pytester.runpytest_subprocess(*args, "--advreview-diff=none")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"write --advreview-codex={review_repo.codex}" in result.stderr.str()


def test_a_value_with_a_space_that_leaves_the_rootdir_alone_works(
    review_repo: ReviewRepo,
) -> None:
    """A path inside the project (here a link to the codex, and a report that already
    exists) leaves pytest's choice as it was: nothing to refuse, and the review runs."""
    link = review_repo.path / "tools" / "codex"
    link.parent.mkdir()
    link.symlink_to(review_repo.codex)
    report = review_repo.write("review.md", "old report\n")
    review_repo.write(
        ".gitignore", "/tools/\n/review.md\n" + (review_repo.path / ".gitignore").read_text()
    )
    review_repo.commit("ignore")
    review_repo.plan("a.md")
    review_repo.answer("a.md", {"message": approved_review()})
    args = [a for a in review_repo.args() if not a.startswith("--advreview-codex=")]
    result = review_repo.pytester.runpytest_subprocess(
        *args,
        "--advreview-diff=none",
        "--advreview-codex",
        str(link),
        "--advreview-report",
        str(report),
    )
    result.assert_outcomes(passed=1)
    assert "approved" in report.read_text()


# -- the folders kept after an error ------------------------------------------------------


def test_a_kept_folder_never_moves_into_the_workspace(
    scripted_repo: ReviewRepo,
) -> None:
    """With ``--basetemp`` inside the repository the kept folder stays in the temporary
    folder: moved into the workspace, it would show as a change to every other review."""
    scripted_repo.write(".gitignore", "/base/\n" + (scripted_repo.path / ".gitignore").read_text())
    scripted_repo.commit("ignore")
    scripted_repo.plan("a.md")
    scripted_repo.answer("a.md", {"http_status": 400})
    base = scripted_repo.path / "base"
    result = scripted_repo.run("--advreview-diff=none", f"--basetemp={base}")
    result.assert_outcomes(errors=1)
    (kept,) = re.findall(r"reviewer files kept in (/\S+)", result.stdout.str())
    assert Path(kept).parent == Path(os.environ["TMPDIR"]).resolve()
    assert not list(base.glob("**/advreview-*"))
