"""The eval's parts on their own: the case format, the matcher, the metrics, the report,
and every bundled case (it parses, its repository builds, each defect's place exists)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_advreview.eval import BUILTIN_CORPUS
from pytest_advreview.eval.case import Case, CaseError, load_case, load_corpus
from pytest_advreview.eval.match import catches, score
from pytest_advreview.eval.metrics import CaseResult, DefectLabel, aggregate, wilson
from pytest_advreview.eval.report import Thresholds, check_thresholds, markdown, table_lines
from pytest_advreview.eval.scratch import PLAN_PATH, build, headings
from pytest_advreview.eval.transcripts import TranscriptStore
from pytest_advreview.models import Finding, Location, Severity

PLAN = "# Plan\n\n## Rollout\nShip it.\n\n## Testing\nNone.\n"


def _case(tmp_path: Path, toml: str, plan: str = PLAN, name: str = "c1") -> Path:
    folder = tmp_path / name
    folder.mkdir(parents=True)
    (folder / "case.toml").write_text(toml)
    (folder / "plan.md").write_text(plan)
    return folder


PLAN_CASE = """kind = "plan"
summary = "s"
plan = "plan.md"
[[defect]]
id = "d1"
category = "rollback"
severity = "high"
section = "Rollout"
description = "no way back"
keywords = ["rollback"]
"""


def _finding(
    severity: str = "high",
    title: str = "No rollback",
    *,
    section: str | None = None,
    file: str | None = None,
    lines: tuple[int, int] | None = None,
    fid: str = "AR-1",
) -> Finding:
    loc = Location(
        section=section,
        file=file,
        line_start=lines[0] if lines else None,
        line_end=lines[1] if lines else None,
    )
    return Finding(id=fid, severity=Severity(severity), title=title, location=loc)


# -- the case format ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (
            ('kind = "plan"', 'kind = "doc"'),
            "field `kind`: Input should be 'plan', 'code' or 'code-vs-plan'; fix: set kind",
        ),
        (('severity = "high"', 'severity = "bad"'), "field `defect[0].severity`"),
        (
            ('section = "Rollout"', 'section = "Rollout"\nlines = [1, 2]'),
            "field `lines`: lines belong to a code defect",
        ),
        (('section = "Rollout"\n', ""), "field `section` or `file`: a defect needs a location"),
        (('plan = "plan.md"', 'plan = "../x.md"'), "must be a relative path inside the case"),
        (('plan = "plan.md"', 'plan = "other.md"'), "field `plan`: no file 'other.md'"),
        (
            ('summary = "s"', 'summary = "s"\nclean = true'),
            "field `clean`: a clean case has no [[defect]]",
        ),
        (
            ('id = "d1"', 'id = "d1"\ncolour = 1'),
            "field `defect[0].colour`: Extra inputs are not permitted; fix: remove it",
        ),
        (
            ('keywords = ["rollback"]', 'keywords = [""]'),
            "an empty keyword would match every finding",
        ),
        (('summary = "s"', 'summary = "s"\nbase = "base"'), "field `base`: a plan case has none"),
        (('kind = "plan"', 'kind = "code"'), "field `plan`: a code case has none; remove it"),
        (('kind = "plan"', "kind = [plan"), "is not valid TOML"),
    ],
)
def test_a_bad_case_names_file_field_and_fix(
    tmp_path: Path, change: tuple[str, str], says: str
) -> None:
    folder = _case(tmp_path, PLAN_CASE.replace(*change, 1))
    with pytest.raises(CaseError) as info:
        load_case(folder)
    text = str(info.value)
    assert text.startswith(f"pytest-advreview: eval case {folder / 'case.toml'}")
    assert says in text


def test_a_plan_section_that_is_no_heading_is_a_bad_case(tmp_path: Path) -> None:
    folder = _case(tmp_path, PLAN_CASE.replace('"Rollout"', '"Roll-out"'))
    with pytest.raises(CaseError, match=r"field `defect\[0\]\.section`: 'Roll-out' is no heading"):
        build(load_case(folder), tmp_path / "repo")


def test_a_corpus_without_cases_and_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(CaseError, match="no such folder"):
        load_corpus(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CaseError, match="no case folder in it"):
        load_corpus(tmp_path / "empty")
    (tmp_path / "empty" / "stray").mkdir()
    with pytest.raises(CaseError, match=r"has no case\.toml"):
        load_corpus(tmp_path / "empty")


def test_a_case_folder_is_a_corpus_of_one_and_its_digest_follows_its_files(tmp_path: Path) -> None:
    folder = _case(tmp_path, PLAN_CASE)
    before = load_corpus(folder)
    assert [c.id for c in before.cases] == ["c1"]
    (folder / "plan.md").write_text(PLAN + "\n## More\n")
    assert load_corpus(folder).version != before.version


def test_headings_skip_code_fences() -> None:
    assert headings("# A\n```\n# not\n```\n## B ##\n") == ["A", "B"]


# -- the matcher ------------------------------------------------------------------------


def _plan_case(tmp_path: Path, toml: str = PLAN_CASE) -> Case:
    return load_case(_case(tmp_path, toml))


@pytest.mark.parametrize(
    ("finding", "caught"),
    [
        (_finding(section="Rollout"), True),
        (_finding(section="## 2. Rollout"), True),
        (_finding(section="rollout"), True),
        (_finding(section="Rollout > step 3"), True),
        (_finding(section="Testing"), False),
        (_finding(section="Rollout plan"), False),
        (_finding(severity="medium", section="Rollout"), False),  # below the defect's
        (_finding(severity="critical", section="Rollout"), True),
        (_finding(title="Missing ROLLBACK path", section="Rollout"), True),
        (_finding(title="Something else", section="Rollout"), False),  # no keyword
        (_finding(file="docs/plans/plan.md", lines=(3, 4)), False),  # no section
    ],
)
def test_plan_matching(tmp_path: Path, finding: Finding, caught: bool) -> None:
    (defect,) = _plan_case(tmp_path).spec.defect
    assert catches(finding, defect) is caught


CODE_DEFECT: dict[str, Any] = {
    "id": "d",
    "category": "race",
    "severity": "medium",
    "file": "app/x.py",
    "lines": (10, 12),
    "description": "d",
}


@pytest.mark.parametrize(
    ("file", "lines", "caught"),
    [
        ("app/x.py", (10, 12), True),
        ("./app/x.py", (15, 15), True),  # 3 lines after the range
        ("b/app/x.py", (7, 7), True),  # 3 lines before
        ("app/x.py", (16, 20), False),
        ("app/x.py", (1, 6), False),
        ("app/x.py", (1, 40), True),  # a range around it
        ("app/y.py", (10, 12), False),
        ("app/x.py", None, False),  # no line
    ],
)
def test_code_matching(file: str, lines: tuple[int, int] | None, caught: bool) -> None:
    from pytest_advreview.eval.case import Defect

    defect = Defect.model_validate(CODE_DEFECT)
    assert catches(_finding("medium", "t", file=file, lines=lines), defect) is caught


def test_one_finding_catches_one_defect_and_the_order_never_matters(tmp_path: Path) -> None:
    toml = PLAN_CASE + PLAN_CASE[PLAN_CASE.index("[[defect]]") :].replace('"d1"', '"d2"').replace(
        '["rollback"]', '["rollback", "ship"]'
    )
    case = _plan_case(tmp_path, toml)
    generic = _finding(section="Rollout", title="rollback", fid="AR-a")  # catches d1 or d2
    only_d2 = _finding(section="Rollout", title="ship it later", fid="AR-b")  # d2 only
    for findings in ([generic, only_d2], [only_d2, generic]):
        scored = score(case, findings, Severity.MEDIUM)
        assert scored.caught == {"d1": "AR-a", "d2": "AR-b"}
        assert scored.false_blocks == ()
    single = score(case, [generic], Severity.MEDIUM)
    assert len(single.caught) == 1
    assert len(single.missed) == 1


def test_false_blocks_are_blocking_findings_that_catch_nothing(tmp_path: Path) -> None:
    case = _plan_case(tmp_path)
    findings = [
        _finding(section="Rollout", fid="AR-hit"),
        _finding(section="Testing", fid="AR-wrong"),
        _finding(severity="medium", section="Testing", fid="AR-low"),
    ]
    scored = score(case, findings, Severity.HIGH)
    assert scored.blocking == 2
    assert scored.blocking_matched == 1
    assert scored.false_blocks == ("AR-wrong",)
    assert scored.findings == 3


# -- the metrics ------------------------------------------------------------------------


def test_wilson_interval() -> None:
    assert wilson(0, 0) is None
    low, high = wilson(8, 10) or (0, 0)
    assert low == pytest.approx(0.4902, abs=1e-4)
    assert high == pytest.approx(0.9433, abs=1e-4)
    assert wilson(0, 5) == (0.0, pytest.approx(0.4345, abs=1e-4))
    assert wilson(5, 5) == (pytest.approx(0.5655, abs=1e-4), 1.0)


def _result(
    case: str, epoch: int, *, clean: bool = False, blocked: bool, caught: bool
) -> CaseResult:
    from pytest_advreview.eval.match import CaseScore

    defects = () if clean else (DefectLabel(id="d", category="race", severity="high"),)
    return CaseResult(
        case=case,
        epoch=epoch,
        kind="plan",
        clean=clean,
        defects=defects,
        outcome="passed",
        score=CaseScore(
            caught={"d": "AR-1"} if caught else {},
            missed=() if caught or clean else ("d",),
            blocking=int(blocked),
            blocking_matched=int(blocked and caught),
            false_blocks=("AR-1",) if blocked and not caught else (),
        ),
        tokens=100,
        seconds=2.0,
    )


def _aggregate(results: list[CaseResult], epochs: int = 1) -> Any:
    return aggregate(
        results, corpus="c", corpus_version="v", reviewer={"model": "m"}, epochs=epochs
    )


def test_precision_is_none_when_nothing_blocked_never_one() -> None:
    report = _aggregate([_result("a", 1, blocked=False, caught=False)])
    assert report.precision.value is None
    assert report.recall.value == 0.0
    assert "blocking precision" in markdown(report)
    assert any("None (0/0)" in line for line in table_lines(report))


def test_flip_rate_counts_cases_whose_verdict_changes_across_epochs() -> None:
    results = [
        _result("a", 1, blocked=True, caught=True),
        _result("a", 2, blocked=False, caught=False),
        _result("b", 1, blocked=True, caught=True),
        _result("b", 2, blocked=True, caught=True),
        _result("c", 1, clean=True, blocked=True, caught=False),
        _result("c", 2, clean=True, blocked=False, caught=False),
    ]
    report = _aggregate(results, epochs=2)
    assert (report.flip.successes, report.flip.trials) == (2, 3)
    assert (report.false_block.successes, report.false_block.trials) == (1, 2)
    assert (report.recall.successes, report.recall.trials) == (3, 4)
    assert (report.precision.successes, report.precision.trials) == (3, 4)
    assert report.tokens_per_run == 100
    assert report.recall_by_severity["high"].value == 0.75


def test_an_error_is_never_scored() -> None:
    error = CaseResult(
        case="e",
        epoch=1,
        kind="plan",
        clean=False,
        outcome="error",
        error="x",
        defects=(DefectLabel(id="d", category="race", severity="high"),),
    )
    report = _aggregate([error, _result("a", 1, blocked=True, caught=True)])
    assert report.errors == 1
    assert report.recall.trials == 1


def test_thresholds() -> None:
    report = _aggregate([_result("a", 1, blocked=True, caught=True)])
    assert check_thresholds(report, Thresholds(min_recall=1.0, max_false_block=None)) == []
    assert check_thresholds(report, Thresholds(max_false_block=0.5)) == [
        "advreview_eval_max_false_block = 0.5: not measured (no clean case was scored)"
    ]


def test_a_transcript_with_another_key_is_not_taken(tmp_path: Path) -> None:
    from pytest_advreview.eval.transcripts import Transcript
    from pytest_advreview.models import Review, TokenUsage

    store = TranscriptStore(tmp_path)
    kept = Transcript(
        case="a",
        epoch=1,
        case_digest="d",
        key="k" * 64,
        review=Review(),
        tokens=TokenUsage(),
        seconds=1.0,
    )
    store.put(kept)
    assert store.get("a", 1, "k" * 64) == kept
    assert store.get("a", 1, "k" * 32 + "x" * 32) is None
    assert store.get("a", 2, "k" * 64) is None


# -- the bundled corpus -----------------------------------------------------------------

BUNDLED = load_corpus(BUILTIN_CORPUS).cases


def test_the_bundled_corpus_has_the_cases_the_docs_promise() -> None:
    plans = [c for c in BUNDLED if c.spec.kind == "plan" and not c.spec.clean]
    code = [c for c in BUNDLED if c.spec.kind != "plan" and not c.spec.clean]
    clean = [c for c in BUNDLED if c.spec.clean]
    assert len(plans) >= 12
    assert len(code) >= 12
    assert len(clean) >= 8
    categories = {d.category for c in BUNDLED for d in c.spec.defect}
    assert categories >= {
        "auth",
        "data-integrity",
        "race",
        "rollback",
        "schema-drift",
        "error-handling",
        "observability",
    }


@pytest.mark.parametrize("case", BUNDLED, ids=[c.id for c in BUNDLED])
def test_every_bundled_case_builds_and_its_defects_exist(case: Case, tmp_path: Path) -> None:
    scratch = build(case, tmp_path / "repo")  # raises CaseError on a missing place
    log = subprocess.run(
        ["git", "log", "--format=%s", "main..HEAD"],
        cwd=scratch.root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert log == ["Change"]
    if case.spec.kind == "plan":
        assert scratch.spec.path == scratch.root / PLAN_PATH
        text = scratch.spec.path.read_text()
        for defect in case.spec.defect:
            assert defect.section in headings(text)
    else:
        assert scratch.spec.change is not None
        for defect in case.spec.defect:
            if defect.file is not None:
                assert defect.file in scratch.spec.change.files
                assert defect.lines is not None
                assert defect.lines[1] <= len((scratch.root / defect.file).read_text().splitlines())
    # Small, as the issue asks: under 150 lines of plan, or of patch.
    for name in (case.spec.plan, case.spec.patch):
        if name is not None:
            assert len((case.folder / name).read_text().splitlines()) < 150


def _code_case(tmp_path: Path, defect: str) -> Path:
    folder = tmp_path / "code"
    shutil.copytree(Path(__file__).parent / "data" / "eval-corpus" / "code-counter", folder)
    text = (folder / "case.toml").read_text()
    (folder / "case.toml").write_text(
        text.replace('file = "app/counter.py"\nlines = [10, 13]', defect)
    )
    return folder


@pytest.mark.parametrize(
    ("defect", "says"),
    [
        (
            'file = "app/other.py"\nlines = [1, 2]',
            "field `defect[0].file`: app/other.py is not a file the change touches "
            "(changed: app/counter.py)",
        ),
        (
            'file = "app/counter.py"\nlines = [10, 99]',
            "field `defect[0].lines`: [10, 99] is past the end of app/counter.py (17 lines",
        ),
    ],
)
def test_a_code_defect_must_be_in_the_change(tmp_path: Path, defect: str, says: str) -> None:
    case = load_case(_code_case(tmp_path, defect))
    with pytest.raises(CaseError) as info:
        build(case, tmp_path / "repo")
    assert says in str(info.value)


def test_a_patch_that_changes_nothing_is_a_bad_case(tmp_path: Path) -> None:
    folder = _code_case(tmp_path, 'file = "app/counter.py"\nlines = [10, 13]')
    (folder / "change.patch").write_text("")
    with pytest.raises(CaseError, match="field `patch`"):
        build(load_case(folder), tmp_path / "repo")
