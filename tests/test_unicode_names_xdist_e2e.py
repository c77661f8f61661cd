"""A plan whose name is not UTF-8, reviewed under pytest-xdist, and internal errors of a
review run (docs/safety.md, "Repository shapes and inputs").

xdist carries UTF-8 text only: a report that held the raw name anywhere (there: the plan
collector's name, a keyword of its item) could not leave the worker, an INTERNALERROR that
xdist prints and goes on from, and the run ended "no tests ran" with exit 0 outside CI.
Not pytester's runner for the runs in a subprocess: it decodes the output as UTF-8 and
fails on the raw name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ReviewRepo
from pytest_advreview.testing import approved_review

RESUME = b"docs/plans/r\xe9sum\xe9.md"  # latin-1: not UTF-8, a name git stores as bytes


def _run(review_repo: ReviewRepo, *extra: str) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *review_repo.args(*extra)],
        cwd=review_repo.path,
        capture_output=True,
        timeout=300,
        check=False,
    )
    out = proc.stdout.decode("utf-8", "replace") + proc.stderr.decode("utf-8", "replace")
    return proc.returncode, out


#: A plan's name, and the same name as git prints it: the file's own name is not UTF-8, or
#: a folder's (a node pytest makes itself when it walks there, its name a keyword too).
PLANS = {
    "file": (RESUME, "docs/plans/r\\351sum\\351.md"),
    "folder": (b"docs/plans/caf\xe9/plan.md", "docs/plans/caf\\351/plan.md"),
}


@pytest.mark.real_codex
@pytest.mark.parametrize("which", sorted(PLANS))
def test_a_plan_not_utf8_under_xdist_errors_its_item(review_repo: ReviewRepo, which: str) -> None:
    """Under ``-n 2`` the plan's item errors naming it as git prints it, as it does in
    one process; the plan beside it is reviewed and every report lists both (no CI
    variable: the run's own exit status, not the gate's account, must say it failed)."""
    assert "CI" not in os.environ
    raw, shown = PLANS[which]
    review_repo.plan("rollout.md")
    plan = review_repo.path / os.fsdecode(raw)
    plan.parent.mkdir(parents=True, exist_ok=True)
    plan.write_bytes(b"# Plan\n\n1. Do it.\n")
    review_repo.answer("docs/plans/", {"message": approved_review()})
    status, out = _run(review_repo, "-n", "2", "--advreview-json=out.json")
    assert status == 1, out
    assert "INTERNALERROR" not in out and "Traceback" not in out, out
    assert f'ERROR "{shown}"::adversarial-review' in out, out
    assert f'{shown}" is not UTF-8 (git stores' in out, out
    report = json.loads((review_repo.path / "out.json").read_text(encoding="utf-8"))
    outcomes = {i["record"]["key"]: i["record"]["outcome"] for i in report["items"]}
    assert outcomes == {
        "docs/plans/rollout.md": "passed",
        f'"{shown}"': "error",
    }, outcomes
    assert report["totals"]["gate"] == "error"
    prompts = [r.last_user_text for r in review_repo.server.response_requests]
    assert len(prompts) == 1 and "docs/plans/rollout.md" in prompts[0], prompts


# A conftest that breaks the run where the worker sends the plan's report: an internal
# error of the worker (the hook raises) or the worker process gone (no report at all).
BREAKS = {
    "internal-error": "raise RuntimeError('BROKEN-IN-WORKER')",
    "worker-crash": "os._exit(9)",
}


@pytest.mark.real_codex
@pytest.mark.parametrize("how", sorted(BREAKS))
def test_a_review_run_whose_worker_breaks_never_exits_0(review_repo: ReviewRepo, how: str) -> None:
    """xdist prints a worker's internal error and goes on; the item never reported, so
    pytest counted nothing and exited 0 ("no tests ran") outside CI: a gate that reviewed
    nothing passed.  Any internal error in a review run is now pytest's exit status 3."""
    review_repo.write(
        "conftest.py",
        # A worker is told by its config (the environment is inherited from this test's
        # own worker when the suite runs under xdist).
        "import os\n\nWORKER = []\n\n\n"
        "def pytest_configure(config):\n"
        "    WORKER.append(hasattr(config, 'workerinput'))\n\n\n"
        "def pytest_runtest_logreport(report):\n"
        "    if WORKER[0] and report.when == 'setup':\n"
        f"        {BREAKS[how]}\n",
    )
    review_repo.commit("a conftest that breaks the worker")
    review_repo.plan("rollout.md")
    review_repo.answer("docs/plans/", {"message": approved_review()})
    status, out = _run(review_repo, "-n", "2")
    assert "INTERNALERROR" in out if how == "internal-error" else "crashed" in out, out
    assert status == (3 if how == "internal-error" else 1), out


def test_every_string_of_a_report_leaves_the_worker_as_text() -> None:
    """The last line before xdist: whichever field still holds a name that is not UTF-8
    (a keyword, an exception's message, captured output) goes out as git prints it."""
    from pytest_advreview.git import escaped_text
    from pytest_advreview.session import _as_text

    raw = os.fsdecode(RESUME)
    assert escaped_text(raw) == "docs/plans/r\\351sum\\351.md"
    assert escaped_text("café \t ok") == "café \t ok"  # UTF-8 text stays as it is
    data = {
        "keywords": {raw: 1, "adversarial-review": 1},
        "longrepr": f"OSError: cannot open {raw}",
        "sections": [("Captured stdout", ("x", raw))],
        "duration": 0.5,
    }
    sent = _as_text(data)
    assert sent == {
        "keywords": {"docs/plans/r\\351sum\\351.md": 1, "adversarial-review": 1},
        "longrepr": "OSError: cannot open docs/plans/r\\351sum\\351.md",
        "sections": [("Captured stdout", ("x", "docs/plans/r\\351sum\\351.md"))],
        "duration": 0.5,
    }
    json.dumps(sent).encode("utf-8")  # text all through


def test_an_internal_error_raises_the_least_exit_status_to_3() -> None:
    """ "Passed" or "nothing collected" becomes pytest's internal error; a failure the
    records already call for is kept (it says more)."""
    from pytest_advreview.exitstatus import final_status, internal_error_status

    for calm in (None, pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        assert internal_error_status(calm) == pytest.ExitCode.INTERNAL_ERROR
    assert internal_error_status(pytest.ExitCode.TESTS_FAILED) == pytest.ExitCode.TESTS_FAILED
    assert final_status(0, internal_error_status(None)) == pytest.ExitCode.INTERNAL_ERROR
    assert final_status(5, internal_error_status(None)) == pytest.ExitCode.INTERNAL_ERROR


@pytest.mark.real_codex
def test_an_error_that_names_a_raw_path_reaches_the_controller(review_repo: ReviewRepo) -> None:
    """Whatever field still holds such a name leaves the worker as text: here a review
    that stops on an exception whose message holds it (pytest's traceback text)."""
    review_repo.write(
        "conftest.py",
        "import os\n\nimport pytest_advreview.prompts as prompts\n\n\n"
        "def boom(*args, **kwargs):\n"
        "    raise RuntimeError('BOOM ' + os.fsdecode(b'caf\\xe9.py'))\n\n\n"
        "prompts.with_marker = boom\n",
    )
    review_repo.commit("a conftest that breaks the plugin with a raw name")
    review_repo.plan("rollout.md")
    status, out = _run(review_repo, "-n", "2", "--advreview-json=out.json")
    assert status == 1, out
    assert "INTERNALERROR" not in out, out
    assert "RuntimeError: BOOM caf\\351.py" in out, out
    report = json.loads((review_repo.path / "out.json").read_text(encoding="utf-8"))
    assert len(report["items"]) == 1, out
    [item] = report["items"]
    assert item["record"]["outcome"] == "error"
    assert "BOOM caf\\351.py" in item["record"]["error"], item
