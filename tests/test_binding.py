"""What a waiver binds to: content ids, the entry format, pull-request scope (unit level).

The real Codex runs are in ``test_binding_e2e.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_advreview.models import Finding, Location, Severity, Waiver
from pytest_advreview.trust.authority import Authority
from pytest_advreview.trust.commands import parse
from pytest_advreview.trust.decisions import DecisionsError, content_ids, load_decisions

PLAN = (
    "# Plan\n\nIntro.\n\n## Data\nNo backup.\n\n### Detail\nStill data.\n\n"
    "## Rollout\nAll at once.\n"
)


def finding(location: Location | None, fid: str = "AR-000001") -> Finding:
    return Finding(id=fid, severity=Severity.HIGH, title="t", location=location)


def cid(location: Location | None, plan: str = PLAN, **kw: object) -> str:
    return content_ids([finding(location)], plan=plan, root=None, whole=plan)["AR-000001"]


def test_a_plan_findings_content_id_follows_its_lines_then_its_section_then_the_plan() -> None:
    data = Location(section="Data")
    # The section runs to the next heading of its level: its subsection is part of it.
    assert cid(data) != cid(data, PLAN.replace("Still data.", "Changed."))
    assert cid(data) == cid(data, PLAN.replace("All at once.", "Changed."))
    # Headings match whatever their case, spacing and hashes.
    shouted = Location(section="##  DATA")
    assert cid(shouted) != cid(shouted, PLAN.replace("No backup.", "x"))
    assert cid(shouted) == cid(shouted, PLAN.replace("All at once.", "x"))
    lines = Location(section="Data", line_start=6, line_end=6)
    assert cid(lines) == cid(lines, PLAN.replace("Still data.", "Changed."))
    assert cid(lines) != cid(lines, PLAN.replace("No backup.", "A backup."))
    # No such section, or no place: the whole plan.
    assert cid(Location(section="Nowhere")) != cid(
        Location(section="Nowhere"), PLAN.replace("Intro.", "x")
    )
    assert cid(None) != cid(None, PLAN + " ")


def test_a_code_findings_content_id_reads_the_reviewed_tree_and_never_leaves_it(
    tmp_path: Path,
) -> None:
    root = tmp_path / "tree"
    (root / "src").mkdir(parents=True)
    (root / "src/app.py").write_text("a = 1\nb = 2\nc = 3\n")
    (tmp_path / "secret.txt").write_text("outside\n")

    def code(location: Location | None) -> str:
        return content_ids([finding(location)], plan=None, root=root, whole="hash")["AR-000001"]

    line2 = Location(file="src/app.py", line_start=2)
    before, whole = code(line2), code(Location(file="src/app.py"))
    (root / "src/app.py").write_text("a = 9\nb = 2\nc = 3\n")
    assert code(line2) == before  # another line changed
    assert code(Location(file="src/app.py")) != whole
    (root / "src/app.py").write_text("a = 9\nb = 3\nc = 3\n")
    assert code(line2) != before
    # A path out of the tree reads as a marker, never the file it names.
    escape = code(Location(file="../secret.txt"))
    (tmp_path / "secret.txt").write_text("changed\n")
    assert code(Location(file="../secret.txt")) == escape
    assert code(Location(file="missing.py")) != escape
    # No file cited: the whole change.
    assert (
        code(None) == content_ids([finding(None)], plan=None, root=root, whole="hash")["AR-000001"]
    )
    assert (
        code(None) != content_ids([finding(None)], plan=None, root=root, whole="other")["AR-000001"]
    )


def test_a_waive_command_carries_its_content_id() -> None:
    (found,) = parse("/advreview waive AR-1A2B3C@0123456789ABCDEF: fine")
    assert found.command == {
        "verb": "waive",
        "finding": "AR-1a2b3c",
        "content": "0123456789abcdef",
        "reason": "fine",
    }
    (short,) = parse("/advreview waive AR-1a2b3c@0123: fine")
    assert short.command is None


ENTRY = 'target = "code-review"\nfinding = "AR-1a2b3c"\nreason = "r"\n'


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        (
            'action = "waive"\npull = 1\nscope = "repository"\ncontent = "0123456789abcdef"',
            "not both",
        ),
        ('action = "waive"\npull = 0\ncontent = "0123456789abcdef"', "pull = 0 is no pull request"),
        ('action = "waive"\npull = 3\ncontent = "0123"', "must name the code it was decided on"),
        ('action = "reject"\npull = 3', "'pull' belong only to a person's decision"),
    ],
)
def test_a_person_entry_names_what_it_binds_to(tmp_path: Path, extra: str, problem: str) -> None:
    path = tmp_path / "d.toml"
    path.write_text(f"[[decision]]\n{ENTRY}{extra}\n")
    with pytest.raises(DecisionsError, match="decision entry 1: ") as err:
        load_decisions(path)
    assert problem in str(err.value)


def test_a_grant_takes_no_content_and_counts_for_its_pull_request_only(tmp_path: Path) -> None:
    path = tmp_path / "d.toml"
    path.write_text(
        '[[decision]]\ntarget = "code-review"\naction = "more-rounds"\nrounds = 2\n'
        'content = "0123456789abcdef"\npull = 4\nreason = "r"\n'
    )
    with pytest.raises(DecisionsError, match="'content' and 'commit' belong to a waiver"):
        load_decisions(path)
    path.write_text(
        '[[decision]]\ntarget = "code-review"\naction = "more-rounds"\nrounds = 2\n'
        'pull = 4\nreason = "r"\n'
    )
    mine = Authority.of(path, rootdir=tmp_path, gated=False, head=False, base=None, pull=4)
    assert [g.rounds for g in mine.granted("code-review")] == [2]
    assert mine.granted("code-review")[0].scope == "pull request #4"
    other = Authority.of(path, rootdir=tmp_path, gated=False, head=False, base=None, pull=5)
    assert other.granted("code-review") == ()
    (ignored,) = other.ignored_for("code-review", ())
    assert "the entry is for pull request #4, and this run is for pull request #5" in ignored.why


def test_the_first_waiver_that_holds_counts_and_a_stale_one_says_why() -> None:
    old = Waiver(finding="AR-1a2b3c", by="@a", reason="r", source="command", content="0" * 16)
    new = Waiver(finding="AR-1a2b3c", by="@b", reason="r", source="command", content="1" * 16)
    none = Waiver(finding="AR-1a2b3c", by="@c", reason="r", source="command")
    authority = Authority(
        gated=True,
        author=None,
        operator=None,
        where="x",
        waivers=((None, old), (None, new), (None, none)),
    )
    held, stale = authority.bound("code-review", {"AR-1a2b3c": "1" * 16})
    assert held == (new,) and stale == ()
    held, stale = authority.bound("code-review", {"AR-1a2b3c": "2" * 16})
    assert held == ()
    assert [s.by for s in stale] == ["@a", "@b", "@c"]
    assert "the waiver was for earlier code" in stale[0].why
    assert "this one names none" in stale[2].why
    assert f"/advreview waive AR-1a2b3c@{'2' * 16}: reason" in stale[2].why
    # A finding this run does not have: nothing to bind, nothing said.
    assert authority.bound("code-review", {}) == ((), ())
