"""The reviewer's workspace by default, through the real Codex CLI: a worktree of its own
outside the checkout for each review that may write, and reviews side by side.

Observed on main b1b99cb: a ``.venv`` in the checkout (uv's default) refused the gate
under CI ("the gate's own code lies inside", exit 4); ``--advreview-isolation=worktree``
gave every review that could not run a teardown traceback of about 680 lines
(``MutationError: … cannot snapshot the workspace``); and reviews ran one at a time
unless ``--advreview-jobs`` said otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import pytest_advreview
from conftest import ReviewRepo, git
from pytest_advreview.testing import approved_review, revise_review, shell_step
from pytest_advreview.testing.reviews import FindingSpec

pytestmark = pytest.mark.real_codex

NO_CODE = "--advreview-diff=none"

TAMPER = """
# Appended by the reviewer: the gate's exit status, decided here from now on.
def exit_status(*args, **kwargs):
    print("TAMPERED-EXIT-STATUS")
    return 0
"""


def _checkout_venv(repo: Path) -> tuple[Path, Path]:
    """A ``.venv`` in the checkout, as ``python -m venv .venv`` makes it, with this
    plugin copied into its site-packages (no ``.pth`` and no editable finder: the gate's
    code lies inside the checkout).  pytest and the other dependencies come from the
    development environment through a ``.pth`` (they are not the gate's own code).

    :returns: the venv's python and the plugin package inside it.
    """
    venv = repo / ".venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    site = Path(purelib)
    package = site / "pytest_advreview"
    shutil.copytree(
        Path(pytest_advreview.__file__).parent,
        package,
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    dist = site / "pytest_advreview-0+checkout.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: pytest-advreview\nVersion: 0+checkout\n"
    )
    (dist / "entry_points.txt").write_text(
        "[pytest11]\nadvreview = pytest_advreview.plugin\n"
        "pytest_advreview.doctorplugin = pytest_advreview.doctorplugin\n"
    )
    (site / "_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return python, package


def _run_in_venv(review_repo: ReviewRepo, python: Path, *extra: str) -> pytest.RunResult:
    return review_repo.pytester.run(
        str(python), "-m", "pytest", *review_repo.args(*extra), timeout=300
    )


def test_a_venv_in_the_checkout_runs_under_ci_and_the_reviewer_cannot_change_it(
    review_repo: ReviewRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = review_repo.path
    python, package = _checkout_venv(repo)
    (repo / ".gitignore").write_text((repo / ".gitignore").read_text() + "/.venv/\n")
    review_repo.write("tamper.py", TAMPER)
    review_repo.commit("the project's venv lives in the checkout, ignored")
    target = package / "report" / "publish.py"
    before = target.read_bytes()
    startup = package.parent / "sitecustomize.py"  # would run at every Python start
    review_repo.plan("x.md")
    critical = revise_review(FindingSpec(severity="critical", title="Backdoor in the plan"))
    review_repo.answer(
        "x.md",
        shell_step(
            f"pwd; cat tamper.py >> {target}; echo 'print(\"TAMPERED-START\")' > {startup}; "
            "echo WRITES-DONE"
        ),
        {"message": critical},
    )
    monkeypatch.setenv("CI", "true")

    result = _run_in_venv(review_repo, python, NO_CODE)

    out = result.stdout.str() + result.stderr.str()
    assert "the gate's own code lies inside" not in out, out
    [output] = review_repo.tool_outputs()
    assert "WRITES-DONE" in output, output  # the tool call ran
    # It ran in a worktree of its own, outside the checkout...
    [cwd] = [Path(line) for line in output.splitlines() if line.startswith("/") and " " not in line]
    assert cwd.parent.name.startswith("advreview-wt-"), output
    assert not str(cwd).startswith(str(repo) + os.sep)
    # ...where the checkout's venv is read-only: neither write landed.
    assert output.count("Read-only file system") == 2, output
    assert target.read_bytes() == before
    assert not startup.exists()
    # The gate's verdict stands: the critical finding fails the run.
    assert "TAMPERED" not in out
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    result.stdout.fnmatch_lines(["*x.md::adversarial-review*revise (failed)*"])
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    # Locally this layout is safe too: no containment warning in the header.
    monkeypatch.delenv("CI")
    local = _run_in_venv(review_repo, python, NO_CODE, "--collect-only")
    assert local.ret == pytest.ExitCode.OK, local.stdout.str()
    assert "the reviewer may write" not in local.stdout.str() + local.stderr.str()


@pytest.mark.parametrize("isolation", [(), ("--advreview-isolation=worktree",)])
def test_a_review_that_cannot_run_in_its_worktree_is_one_clear_error(
    review_repo: ReviewRepo, isolation: tuple[str, ...]
) -> None:
    review_repo.plan("x.md")
    review_repo.answer("x.md", {"http_status": 400})  # the model refuses every request

    result = review_repo.run(NO_CODE, "--advreview-timeout=30", *isolation)

    out = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(errors=1)
    assert "MutationError" not in out and "cannot snapshot" not in out, out
    assert "Traceback" not in out, out
    assert out.count("ERROR at ") == 1, out  # setup only: teardown has nothing to say
    assert git(review_repo.path, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_reviews_overlap_by_default(review_repo: ReviewRepo) -> None:
    # Each answer waits until three reviews are being answered at once (at most 30 s).
    hold = {"answering": 3, "at_most": 30}
    for name in ("a", "b", "c"):
        review_repo.plan(f"{name}.md")
        review_repo.answer(f"{name}.md", {"message": approved_review(), "hold": hold})

    result = review_repo.run(NO_CODE, "-p", "no:randomly", "--advreview-progress=0")

    requests = review_repo.server.response_requests
    assert len(requests) == 3
    # All three were in flight at once: each arrived while the others were answered.
    assert max(r.answering for r in requests) == 2, [r.answering for r in requests]
    result.assert_outcomes(passed=3)
    assert "jobs=" not in result.stdout.str()  # no setting asked for it
