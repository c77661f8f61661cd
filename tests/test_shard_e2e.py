"""``--advreview-shard=K/N``: N CI jobs review disjoint shares whose state combines.

The matrix recipe in docs/ci.md relies on three things this file checks, reviewing with
the in-process scripted reviewer (which items a share reviews and where their state goes
are the plugin's, not the reviewer's): the shares are disjoint and together are the
unsharded run; each share's state is its own files, so copying the shares' state folders
into one loses nothing; and an unchanged re-run on the combined state makes no reviewer
call at all.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

# The plugin's modules are imported here, in the outer process, on purpose: this test
# makes several in-process pytester runs, and pytester drops the modules a run imported
# when it ends, while the package keeps its attributes for them; a later run's
# ``from . import targets`` would then get the first run's module and its model classes.
import pytest_advreview.session  # noqa: F401
from conftest import ReviewRepo
from pytest_advreview.shard import share_of
from pytest_advreview.testing import approved_review

PLANS = [f"plan-{n:02d}.md" for n in range(1, 13)]
STATE = Path("d", "advreview", "state")


def _items(report: Path) -> set[str]:
    data = json.loads(report.read_text())
    return {item["nodeid"] for item in data["items"]}


def test_three_shards_cover_the_run_once_and_their_combined_state_needs_no_reviewer(
    scripted_repo: ReviewRepo, tmp_path: Path
) -> None:
    for name in PLANS:
        scripted_repo.plan(name, f"# {name}\n\n1. Do the thing.\n")
    scripted_repo.commit("twelve plans")
    scripted_repo.answer("docs/plans/plan-", {"message": approved_review()})
    common = ("--advreview-diff=none", "-o", "advreview_plan_scope=all")

    unsharded = scripted_repo.pytester.runpytest(
        "--collect-only", "-q", *scripted_repo.args(*common)
    )
    expected = {line for line in unsharded.stdout.lines if "::adversarial-review" in line}
    assert len(expected) == 12

    shares: list[set[str]] = []
    for k in (1, 2, 3):
        cache = tmp_path / f"cache-{k}"
        report = tmp_path / f"shard-{k}.json"
        extra = ["-n", "2"] if k == 1 else []  # one share through xdist: the same split
        args = scripted_repo.args(
            *common,
            f"--advreview-shard={k}/3",
            f"--advreview-json={report}",
            "-o",
            f"cache_dir={cache}",
            *extra,
        )
        run = scripted_repo.pytester.runpytest(*args)
        share = _items(report)
        assert json.loads(report.read_text())["settings"]["shard"] == f"{k}/3"
        wanted = {n for n in expected if share_of(n.split("::")[0], 3) == k}
        assert share == wanted
        if extra:  # xdist's controller does not count its workers' deselections
            run.assert_outcomes(passed=len(share))
            run.stdout.fnmatch_lines(["advreview: *shard=1/3*"])
        else:
            run.assert_outcomes(passed=len(share), deselected=12 - len(share))
        shares.append(share)

    # Disjoint, and together exactly the unsharded run.
    assert sum(len(s) for s in shares) == 12
    assert set().union(*shares) == expected
    calls = len(scripted_repo.server.response_requests)
    assert calls == 12  # one review per plan, none twice

    # The next run restores every job's state into one folder (the matrix recipe's
    # cache restore), then the whole matrix re-runs unchanged: nothing to ask.
    combined = tmp_path / "combined"
    (combined / STATE).mkdir(parents=True)
    for k in (1, 2, 3):
        for entry in (tmp_path / f"cache-{k}" / STATE).iterdir():
            assert not (combined / STATE / entry.name).exists()  # no shared index file
            shutil.copy2(entry, combined / STATE / entry.name)
    assert len(list((combined / STATE).iterdir())) == 12

    scripted_repo.server.clear_requests()
    report = tmp_path / "rerun.json"
    rerun = scripted_repo.run(*common, f"--advreview-json={report}", "-o", f"cache_dir={combined}")
    rerun.assert_outcomes(passed=12)
    assert scripted_repo.server.response_requests == []
    statuses = {i["record"]["status"] for i in json.loads(report.read_text())["items"]}
    assert statuses == {"cached"}
    # So is a re-run of each share on the combined state.
    for k in (1, 2, 3):
        again = scripted_repo.run(
            *common, f"--advreview-shard={k}/3", "-o", f"cache_dir={combined}"
        )
        again.assert_outcomes(passed=len(shares[k - 1]), deselected=12 - len(shares[k - 1]))
    assert scripted_repo.server.response_requests == []


def test_shares_are_a_function_of_the_key_alone() -> None:
    keys = [f"docs/plans/plan-{n:02d}.md" for n in range(200)] + ["code-review"]
    for total in (1, 2, 3, 7):
        shares = [share_of(key, total) for key in keys]
        assert set(shares) == set(range(1, total + 1))  # every share is used at this size
        assert shares == [share_of(key, total) for key in reversed(keys)][::-1]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0/3", "1 <= K <= N"),
        ("4/3", "1 <= K <= N"),
        ("3", "expected K/N"),
        ("a/b", "expected K/N"),
        ("1/0", "1 <= K <= N"),
    ],
)
def test_a_bad_shard_is_a_usage_error_naming_the_option(
    pytester: pytest.Pytester, value: str, message: str
) -> None:
    result = pytester.runpytest("--adversarial-review", f"--advreview-shard={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--advreview-shard={value} is not valid*{message}*"])
    assert "Traceback" not in result.stderr.str()


def test_the_shard_comes_from_the_environment_and_shows_in_the_header(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # pytester's HOME is the repository: Codex's default home would be inside it, which a
    # gate run (CI) refuses.
    monkeypatch.setenv("CODEX_HOME", str(tmp_path_factory.mktemp("codex-home")))
    monkeypatch.setenv("ADVREVIEW_SHARD", "2/5")
    result = pytester.runpytest("--adversarial-review", "--collect-only")
    result.stdout.fnmatch_lines(["advreview: *shard=2/5*"])
    monkeypatch.setenv("ADVREVIEW_SHARD", "6/5")
    result = pytester.runpytest("--adversarial-review", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*environment ADVREVIEW_SHARD=6/5 is not valid*"])


def test_the_matrix_recipe_keeps_every_shares_state() -> None:
    """docs/ci.md's sharded workflow: what makes the combined state reach the next run."""
    import re

    import yaml

    text = (Path(__file__).resolve().parents[1] / "docs" / "ci.md").read_text()
    section = text.split("\n## Sharding across jobs\n", 1)[1]
    (block,) = re.findall(r"^```yaml\n(.*?)^```", section, re.M | re.S)
    workflow = yaml.safe_load(block)
    review, save = workflow["jobs"]["review"], workflow["jobs"]["save-state"]
    shards = review["strategy"]["matrix"]["shard"]
    assert review["strategy"]["fail-fast"] is False  # a red share must not cancel the rest
    steps = review["steps"]
    run = next(s for s in steps if "--adversarial-review" in s.get("run", ""))
    assert run["env"]["ADVREVIEW_SHARD"] == f"${{{{ matrix.shard }}}}/{len(shards)}"
    assert "secrets." not in run["run"]
    restore = next(s for s in steps if s.get("uses", "").startswith("actions/cache/restore@"))
    assert steps.index(restore) < steps.index(run)
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()"  # a failed gate's state is kept too
    assert save["needs"] == "review"
    assert "always()" in save["if"]
    download = next(s for s in save["steps"] if "download-artifact@" in s.get("uses", ""))
    assert download["with"]["merge-multiple"] is True
    saved = next(s for s in save["steps"] if s.get("uses", "").startswith("actions/cache/save@"))
    assert saved["with"]["path"] == restore["with"]["path"] == download["with"]["path"]
    assert "github.run_attempt" in saved["with"]["key"]  # a re-run saves under its own key
    prefix = restore["with"]["restore-keys"].strip()
    assert saved["with"]["key"].startswith(prefix)
    for step in [*steps, *save["steps"]]:
        if "uses" in step:
            assert re.fullmatch(r"[\w./-]+@[0-9a-f]{40}", step["uses"]), step["uses"]


def test_a_shares_markdown_report_says_it_is_one_share() -> None:
    from pytest_advreview.report.markdown import render_markdown
    from pytest_advreview.settings import Settings

    shown = render_markdown(Settings(shard=(2, 3)), [])
    assert "share 2 of 3 (--advreview-shard)" in shown.splitlines()[2]
    assert "share" not in render_markdown(Settings(), [])
