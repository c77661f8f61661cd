"""Boundaries of the decisions file (decisions.py): every action with and without a
reason, every key missing or unknown, the ways people write targets and ids, the first
and second entry of a repeat, and every message word for word (it names the file, the
entry, the problem and the fix)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pytest_advreview.models import Decision, DecisionAction, Finding, Location, Severity
from pytest_advreview.trust.decisions import (
    CODE_TARGET,
    DecisionsError,
    check_known,
    check_targets,
    content_ids,
    load_decisions,
)

EXAMPLE = (
    '[[decision]]\ntarget = "docs/plans/x.md"\nfinding = "AR-1a2b3c"\n'
    'action = "reject"\nreason = "why the finding does not apply"'
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "decisions.toml"
    path.write_text(text, encoding="utf-8")
    return path


def entry(
    target: str = "plan.md", finding: str = "AR-abc123", action: str = "accept", **more: str
) -> str:
    # TOML literal strings: a backslash in a target is written as it is.
    fields = {"target": target, "finding": finding, "action": action, **more}
    lines = [f"{k} = '{v}'" for k, v in fields.items()]
    return "[[decision]]\n" + "\n".join(lines) + "\n"


def error(path: Path) -> str:
    with pytest.raises(DecisionsError) as info:
        load_decisions(path)
    return str(info.value)


def test_the_code_target_is_code_review() -> None:
    assert CODE_TARGET == "code-review"


def test_a_missing_file_is_no_decisions(tmp_path: Path) -> None:
    loaded = load_decisions(tmp_path / "none.toml")
    assert (loaded.entries, loaded.targets) == ((), frozenset())


@pytest.mark.parametrize("action", ["accept", "re-scope", "reject"])
def test_every_action_with_a_reason_is_kept_with_it(tmp_path: Path, action: str) -> None:
    path = write(tmp_path, entry(action=action, reason="  because  "))
    assert load_decisions(path).for_target("plan.md") == (
        Decision(finding="AR-abc123", action=DecisionAction(action), reason="because"),
    )


@pytest.mark.parametrize("reason", [None, "", "   "])
def test_accept_needs_no_reason(tmp_path: Path, reason: str | None) -> None:
    more = {} if reason is None else {"reason": reason}
    path = write(tmp_path, entry(action="accept", **more))
    (decision,) = load_decisions(path).for_target("plan.md")
    assert decision == Decision(finding="AR-abc123", action=DecisionAction.ACCEPT, reason=None)


@pytest.mark.parametrize("reason", [None, "", "  "])
def test_reject_and_rescope_need_a_reason(tmp_path: Path, reason: str | None) -> None:
    more = {} if reason is None else {"reason": reason}
    path = write(tmp_path, entry(action="reject", **more))
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 1: action 'reject' on "
        'AR-abc123 has no reason: rejections need reasons; add reason = "why the finding '
        'does not apply"'
    )
    path = write(tmp_path, entry(action="re-scope", **more))
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 1: action 're-scope' on "
        'AR-abc123 has no reason; add reason = "how the scope changed and why"'
    )


@pytest.mark.parametrize(
    ("written", "key"),
    [
        ("plan.md", "plan.md"),
        ("./plan.md", "plan.md"),
        ("././plan.md", "plan.md"),
        (" docs\\plans\\x.md ", "docs/plans/x.md"),
        (".//plan.md", "/plan.md"),
        ("code-review", "code-review"),
    ],
)
def test_targets_are_repo_relative_posix_paths(tmp_path: Path, written: str, key: str) -> None:
    loaded = load_decisions(write(tmp_path, entry(target=written)))
    assert loaded.targets == frozenset({key})
    assert len(loaded.for_target(key)) == 1


@pytest.mark.parametrize("written", ["", "  ", "./", "././"])
def test_an_empty_target_is_refused(tmp_path: Path, written: str) -> None:
    path = write(tmp_path, entry(target=written))
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 1: 'target' is empty; "
        'give the plan\'s repo-relative path (target = "docs/plans/x.md") or target = '
        '"code-review"'
    )


@pytest.mark.parametrize(
    ("written", "kept"),
    [
        ("AR-abc123", "AR-abc123"),
        ("ar-ABC123", "AR-abc123"),
        (" AR-AbC123 ", "AR-abc123"),
        ("AR-abc12", "AR-abc12"),  # not an id: kept as written (check_known names it)
        ("AR-abc1234", "AR-abc1234"),
        ("XAR-abc123", "XAR-abc123"),
    ],
)
def test_finding_ids_are_normalised_only_when_they_are_ids(
    tmp_path: Path, written: str, kept: str
) -> None:
    (decision,) = load_decisions(write(tmp_path, entry(finding=written))).for_target("plan.md")
    assert decision.finding == kept


def test_an_empty_finding_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, entry(finding="  "))
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 1: 'finding' is empty; "
        'copy the id printed in the failure (finding = "AR-1a2b3c")'
    )


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("target", 'the plan path or "code-review"'),
        ("finding", 'the finding id, e.g. "AR-1a2b3c"'),
        ("action", "accept, re-scope, reject, waive, more-rounds"),
    ],
)
def test_every_missing_key_is_named_with_what_to_write(tmp_path: Path, key: str, hint: str) -> None:
    fields = {"target": "plan.md", "finding": "AR-abc123", "action": "accept"}
    del fields[key]
    text = "[[decision]]\n" + "".join(f"{k} = {v!r}\n" for k, v in fields.items())
    path = write(tmp_path, entry() + text)
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 2: missing {key!r}; add "
        f"{key} = ... ({hint})"
    )


def test_an_unknown_key_names_the_allowed_ones(tmp_path: Path) -> None:
    path = write(tmp_path, entry(note="x"))
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 1: unknown key 'note'; "
        "allowed keys: target, finding, action, reason, rounds, content, commit, "
        "pull, scope"
    )


def test_an_unknown_action_names_the_actions(tmp_path: Path) -> None:
    path = write(tmp_path, entry(action="ignore"))
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 1: unknown action 'ignore'; "
        "use one of: accept, re-scope, reject, waive, more-rounds"
    )


def test_a_value_that_is_not_a_string_says_give_a_string(tmp_path: Path) -> None:
    path = write(tmp_path, '[[decision]]\ntarget = 3\nfinding = "AR-abc123"\naction = "accept"\n')
    message = error(path)
    assert message.startswith(
        f"pytest-advreview: decisions file {path}: decision entry 1: 'target': "
    )
    assert message.endswith("; give a string")


def test_every_problem_of_an_entry_is_named_once(tmp_path: Path) -> None:
    path = write(tmp_path, "[[decision]]\nnote = 1\nother = 2\n")
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 1: missing 'target'; add "
        "target = ... (the plan path or \"code-review\"); also missing 'finding'; add "
        "finding = ... (the finding id, e.g. \"AR-1a2b3c\"); also missing 'action'; add "
        "action = ... (accept, re-scope, reject, waive, more-rounds); also unknown key "
        "'note'; allowed keys: target, finding, action, reason, rounds, content, commit, pull, "
        "scope; also unknown key 'other'; allowed keys: target, finding, action, reason, "
        "rounds, content, commit, pull, scope"
    )


def test_a_repeat_names_both_entries_and_the_same_finding_on_two_targets_is_no_repeat(
    tmp_path: Path,
) -> None:
    text = entry() + entry(target="other.md") + entry(target="./plan.md", finding="AR-ABC123")
    path = write(tmp_path, text)
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 3: repeats the decision on "
        "AR-abc123 for plan.md (entry 1); keep one entry per finding"
    )
    two = load_decisions(write(tmp_path, entry() + entry(finding="AR-abc124")))
    assert [d.finding for d in two.for_target("plan.md")] == ["AR-abc123", "AR-abc124"]


def test_file_level_problems_name_the_file_and_the_fix(tmp_path: Path) -> None:
    path = write(tmp_path, 'title = "x"\nzeta = 1\n')
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: unknown top-level key 'title', 'zeta'; "
        "the file holds only [[decision]] tables"
    )
    path = write(tmp_path, 'decision = "x"\n')
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: 'decision' must be an array of tables; "
        "write each entry as [[decision]]"
    )
    path = write(tmp_path, "decision = [1]\n")
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 1: is not a table; write "
        "each entry as [[decision]]"
    )
    path = write(tmp_path, "[[decision]\n")
    message = error(path)
    assert message.startswith(f"pytest-advreview: decisions file {path}: is not valid TOML: ")
    assert message.endswith(f"; fix the syntax (entries look like:\n{EXAMPLE})")
    assert load_decisions(write(tmp_path, "")).entries == ()


def test_a_file_that_is_not_utf8_names_the_offset(tmp_path: Path) -> None:
    path = tmp_path / "decisions.toml"
    path.write_bytes(b"# ok\n\xff")
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: is not UTF-8 (at offset 5); save it as UTF-8"
    )


def test_a_folder_or_an_unreadable_file_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "dir.toml"
    folder.mkdir()
    assert error(folder) == (
        f"pytest-advreview: decisions file {folder}: is a directory, not a file; point "
        "advreview_decisions at a TOML file"
    )
    loop = tmp_path / "loop.toml"
    loop.symlink_to(loop)
    assert error(loop) == (
        f"pytest-advreview: decisions file {loop}: cannot be read (Too many levels of "
        "symbolic links); fix its permissions"
    )


def test_check_known_accepts_known_ids_and_names_the_first_unknown(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        entry(target="other.md", finding="AR-000000")
        + entry(finding="AR-abc123")
        + entry(finding="AR-def456"),
    )
    loaded = load_decisions(path)
    check_known(loaded, "plan.md", set())  # nothing stored: nothing to check
    check_known(loaded, "plan.md", {"AR-abc123", "AR-def456"})
    check_known(loaded, "nothing.md", {"AR-zzz"})
    with pytest.raises(DecisionsError) as info:
        check_known(loaded, "plan.md", {"AR-def456", "AR-111111"})
    assert str(info.value) == (
        f"pytest-advreview: decisions file {path}: decision entry 2: unknown finding id "
        "AR-abc123 for plan.md; known: AR-111111, AR-def456. Copy the id from the failure "
        "output, or delete the entry if the finding is gone"
    )
    assert info.value.entry == 2
    with pytest.raises(DecisionsError, match=r"^pytest-advreview: decisions file elsewhere: "):
        check_known(loaded, "plan.md", {"AR-def456"}, Path("elsewhere"))


def test_check_targets_refuses_the_first_target_that_is_not_a_file(tmp_path: Path) -> None:
    path = write(
        tmp_path, entry(target=CODE_TARGET) + entry(target="plan.md") + entry(target="gone.md")
    )
    loaded = load_decisions(path)
    seen: list[str] = []

    def exists(target: str) -> bool:
        seen.append(target)
        return target == "plan.md"

    with pytest.raises(DecisionsError) as info:
        check_targets(loaded, exists)
    assert seen == ["plan.md", "gone.md"]  # the code target is never looked up
    assert str(info.value) == (
        f"pytest-advreview: decisions file {path}: decision entry 3: target 'gone.md' is not "
        'a file of the repository (nor "code-review"); give the plan\'s path relative to the '
        'repository top (target = "docs/plans/x.md"), or delete the entry if the plan is gone'
    )
    check_targets(load_decisions(write(tmp_path, entry())), lambda t: True)


# -- a person's decision (waive, more-rounds): each check at its edge, each message whole --

CONTENT = "0123456789abcdef"


def person(action: str, *lines: str, target: str = "code-review") -> str:
    return f'[[decision]]\ntarget = "{target}"\naction = "{action}"\n' + "".join(
        f"{line}\n" for line in lines
    )


def problem(tmp_path: Path, text: str) -> str:
    """The problem of the file's one entry (what follows "decision entry 1: ")."""
    path = write(tmp_path, text)
    prefix = f"pytest-advreview: decisions file {path}: decision entry 1: "
    message = error(path)
    assert message.startswith(prefix)
    return message.removeprefix(prefix)


def test_an_answer_names_every_person_key_it_carries_and_its_own_action(tmp_path: Path) -> None:
    text = person(
        "reject",
        'finding = "AR-1a2b3c"',
        'reason = "r"',
        f'content = "{CONTENT}"',
        'scope = "repository"',
    )
    assert problem(tmp_path, text) == (
        "'content', 'scope' belong only to a person's decision (waive, more-rounds); "
        "delete them from the reject entry"
    )
    text = person("re-scope", 'finding = "AR-1a2b3c"', 'reason = "r"', "pull = 4")
    assert problem(tmp_path, text) == (
        "'pull' belong only to a person's decision (waive, more-rounds); delete them from "
        "the re-scope entry"
    )


@pytest.mark.parametrize(
    ("action", "more"),
    [
        ("accept", ()),
        ("waive", ('reason = "r"', f'content = "{CONTENT}"', 'scope = "repository"')),
    ],
)
def test_rounds_on_another_action_names_that_action(
    tmp_path: Path, action: str, more: tuple[str, ...]
) -> None:
    text = person(action, 'finding = "AR-1a2b3c"', "rounds = 2", *more)
    assert problem(tmp_path, text) == (
        f"'rounds' belongs only to action 'more-rounds'; delete it from the {action} entry"
    )


@pytest.mark.parametrize("reason", [None, "", "  "])
def test_a_waiver_without_a_reason_is_refused_however_well_it_is_bound(
    tmp_path: Path, reason: str | None
) -> None:
    given = () if reason is None else (f'reason = "{reason}"',)
    text = person(
        "waive", 'finding = "AR-1a2b3c"', f'content = "{CONTENT}"', 'scope = "repository"', *given
    )
    assert problem(tmp_path, text) == (
        "action 'waive' on AR-1a2b3c has no reason: a waiver is a record of why the finding "
        'passes; add reason = "why it may pass"'
    )


def test_a_second_grant_for_the_same_target_and_pull_request_is_a_repeat(tmp_path: Path) -> None:
    grant = person("more-rounds", "rounds = 2", 'reason = "r"', "pull = 3")
    other = person("more-rounds", "rounds = 1", 'reason = "r"', "pull = 4")
    path = write(tmp_path, grant + other + grant.replace("rounds = 2", "rounds = 5"))
    assert error(path) == (
        f"pytest-advreview: decisions file {path}: decision entry 3: repeats 'more-rounds' "
        "for code-review (entry 1); keep one entry per target (add the rounds up)"
    )


@pytest.mark.parametrize("rounds", [1, 2, 5])
def test_more_rounds_from_one_round_up_is_kept(tmp_path: Path, rounds: int) -> None:
    text = person("more-rounds", f"rounds = {rounds}", "pull = 1", 'reason = "close"')
    (kept,) = load_decisions(write(tmp_path, text)).entries
    assert (kept.action, kept.finding, kept.rounds, kept.pull, kept.reason) == (
        "more-rounds",
        "",
        rounds,
        1,
        "close",
    )
    assert kept.scoped == "pull request #1"
    assert not kept.answer


@pytest.mark.parametrize("rounds", [None, 0, -1])
def test_more_rounds_without_a_count_of_at_least_one_is_refused(
    tmp_path: Path, rounds: int | None
) -> None:
    given = () if rounds is None else (f"rounds = {rounds}",)
    text = person("more-rounds", *given, 'scope = "repository"', 'reason = "close"')
    assert problem(tmp_path, text) == (
        "action 'more-rounds' needs how many: add rounds = 2 (a whole number, at least 1)"
    )


def test_more_rounds_on_a_finding_is_refused(tmp_path: Path) -> None:
    text = person("more-rounds", 'finding = "AR-1a2b3c"', "rounds = 2", 'reason = "r"')
    assert problem(tmp_path, text) == (
        "action 'more-rounds' is for the whole target; delete finding = ..."
    )


@pytest.mark.parametrize("reason", [None, "", "  "])
def test_more_rounds_without_a_reason_is_refused(tmp_path: Path, reason: str | None) -> None:
    given = () if reason is None else (f'reason = "{reason}"',)
    text = person("more-rounds", "rounds = 2", 'scope = "repository"', *given)
    assert problem(tmp_path, text) == (
        "action 'more-rounds' has no reason; add reason = \"why more rounds are worth it\""
    )


BINDS = (
    "must name what it is for: add pull = 123 (the pull request it was decided for) or "
    'scope = "repository" (every pull request), not both; an entry of the old format has '
    'neither (docs/deciding.md, "What a waiver binds to")'
)


@pytest.mark.parametrize("scope", [(), ("pull = 2", 'scope = "repository"')])
def test_a_person_decision_names_one_pull_request_or_the_repository(
    tmp_path: Path, scope: tuple[str, ...]
) -> None:
    grant = person("more-rounds", "rounds = 2", 'reason = "r"', *scope)
    assert problem(tmp_path, grant) == f"action 'more-rounds' {BINDS}"
    waiver = person("waive", 'finding = "AR-1a2b3c"', 'reason = "r"', f'content = "{CONTENT}"')
    assert problem(tmp_path, waiver + "\n".join(scope) + "\n") == (
        f"action 'waive' on AR-1a2b3c {BINDS}"
    )


@pytest.mark.parametrize("pull", [0, -1])
def test_a_pull_request_number_below_one_is_refused(tmp_path: Path, pull: int) -> None:
    grant = person("more-rounds", "rounds = 2", 'reason = "r"', f"pull = {pull}")
    assert (
        problem(tmp_path, grant) == f"action 'more-rounds': pull = {pull} is no pull request number"
    )
    waiver = person(
        "waive", 'finding = "AR-1a2b3c"', 'reason = "r"', f'content = "{CONTENT}"', f"pull = {pull}"
    )
    assert problem(tmp_path, waiver) == (
        f"action 'waive' on AR-1a2b3c: pull = {pull} is no pull request number"
    )


def test_pull_request_one_is_a_pull_request(tmp_path: Path) -> None:
    waiver = person(
        "waive",
        'finding = "ar-1A2B3C"',
        'reason = " r "',
        f'content = "{CONTENT.upper()}"',
        "pull = 1",
    )
    (kept,) = load_decisions(write(tmp_path, waiver)).entries
    assert (kept.action, kept.finding, kept.reason, kept.content, kept.pull, kept.scope) == (
        "waive",
        "AR-1a2b3c",
        "r",
        CONTENT,
        1,
        None,
    )
    assert kept.scoped == "pull request #1"
    assert not kept.answer
    assert load_decisions(write(tmp_path, waiver)).for_target("code-review") == ()


@pytest.mark.parametrize("extra", ['content = "0123456789abcdef"', 'commit = "1a2b3c"'])
def test_a_grant_names_no_code(tmp_path: Path, extra: str) -> None:
    grant = person("more-rounds", "rounds = 2", 'reason = "r"', 'scope = "repository"', extra)
    assert problem(tmp_path, grant) == (
        "'content' and 'commit' belong to a waiver; delete them from the more-rounds entry"
    )


@pytest.mark.parametrize(
    "content", [None, "", "0123456789abcde", "0123456789abcdef0", "0123456789abcdeg"]
)
def test_a_waiver_names_a_content_id_of_sixteen_hex_digits(
    tmp_path: Path, content: str | None
) -> None:
    given = () if content is None else (f'content = "{content}"',)
    waiver = person(
        "waive", 'finding = "AR-1a2b3c"', 'reason = "r"', 'scope = "repository"', *given
    )
    assert problem(tmp_path, waiver) == (
        "action 'waive' on AR-1a2b3c must name the code it was decided on: add content = "
        '"0123456789abcdef" (the content id the failure prints with the finding: copy its '
        "entry); a waiver holds only while the cited code is unchanged, and an entry of the "
        'old format has no content (docs/deciding.md, "What a waiver binds to")'
    )


def test_a_person_decision_is_never_sent_as_an_answer(tmp_path: Path) -> None:
    waiver = person(
        "waive",
        'finding = "AR-1a2b3c"',
        'reason = "r"',
        f'content = "{CONTENT}"',
        'scope = "repository"',
    )
    (kept,) = load_decisions(write(tmp_path, waiver)).entries
    assert kept.scoped == "the repository"
    with pytest.raises(AssertionError) as info:
        kept.decision()
    # The first line: pytest's assertion rewriting adds its explanation below it.
    assert str(info.value).splitlines()[0] == "a person's decision is no answer"


# -- what a waiver binds to: each finding's content id ---------------------------------------
# docs/deciding.md: "the first 16 hex digits of the SHA-256 of the finding's place and the
# text there".  A waiver committed to the base branch names this value, so it is pinned
# exactly: any other formula would drop every waiver written before it.

PLAN = (
    "# Plan\nIntro.\n\n## Data store\nNo backup.\nOne disk.\n\n### Detail\nStill data.\n\n"
    "## Rollout\nAll at once.\n"
)


def content_id(
    location: Location | None, *, plan: str | None = PLAN, root: Path | None = None
) -> str:
    finding = Finding(id="AR-000001", severity=Severity.HIGH, title="t", location=location)
    return content_ids([finding], plan=plan, root=root, whole="the whole")["AR-000001"]


def digest(place: str, text: str) -> str:
    data = f"{place}\0{text}".encode("utf-8", "surrogateescape")
    return hashlib.sha256(data).hexdigest()[:16]


@pytest.mark.parametrize(
    ("location", "place", "text"),
    [
        (
            Location(section="Data store", line_start=5, line_end=6),
            "Data store lines 5-6",
            "No backup.\nOne disk.\n",
        ),
        (Location(line_start=5), "line 5", "No backup.\n"),
        (Location(line_start=5, line_end=5), "line 5", "No backup.\n"),
        (
            Location(section="Data store"),
            "Data store",
            "## Data store\nNo backup.\nOne disk.\n\n### Detail\nStill data.\n\n",
        ),
        # The last section runs to the end of the plan.
        (Location(section="Rollout"), "Rollout", "## Rollout\nAll at once.\n"),
        (Location(section="Nowhere"), "Nowhere", PLAN),
        (None, "", PLAN),
    ],
)
def test_a_plan_findings_content_id_is_the_digest_of_its_place_and_the_text_there(
    location: Location | None, place: str, text: str
) -> None:
    found = content_id(location)
    assert found == digest(place, text)
    assert len(found) == 16


def test_the_same_text_at_another_place_has_another_content_id() -> None:
    # Both sections are missing: both findings are bound to the whole plan, at their place.
    assert content_id(Location(section="Gone")) != content_id(Location(section="Elsewhere"))


def test_a_section_is_found_by_its_words_whatever_their_case_spacing_and_hashes() -> None:
    plan = "# Plan\n## X-ray  Phase X\nScan.\n## Next\nlater\n"
    for written in (Location(section="##  x-ray PHASE   X"), Location(section="X-ray phase X")):
        found = content_id(written, plan=plan)
        assert found == digest(str(written), "## X-ray  Phase X\nScan.\n")


def test_a_heading_of_the_same_level_right_after_the_heading_ends_its_section() -> None:
    plan = "## A\n## B\nb\n## C\n"
    assert content_id(Location(section="A"), plan=plan) == digest("A", "## A\n")


def test_an_empty_heading_is_a_heading_and_a_bare_hash_line_is_not() -> None:
    # "## " (an empty heading) ends the section above it and starts its own; a line of
    # hashes alone (a shell comment in a plan's code block) is part of the section, so a
    # change below it still reopens the waiver.
    plan = "## A\na\n#\nb\n## \nempty\n## B\nc\n"
    assert content_id(Location(section="A"), plan=plan) == digest("A", "## A\na\n#\nb\n")
    assert content_id(Location(section="##"), plan=plan) == digest("##", "## \nempty\n")
    bare = "## A\na\n#\nb\n"
    assert content_id(Location(section="#"), plan=bare) == digest("#", bare)


def test_a_code_findings_content_id_is_the_digest_of_its_place_and_the_text_there(
    tmp_path: Path,
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src/app.py").write_bytes(b"a = 1\nb = 2\nc = 3\n")

    def code(location: Location | None) -> str:
        return content_id(location, plan=None, root=tmp_path)

    assert code(Location(file="src/app.py", line_start=2, line_end=3)) == digest(
        "src/app.py lines 2-3", "b = 2\nc = 3\n"
    )
    assert code(Location(file="src/app.py", line_start=2)) == digest("src/app.py line 2", "b = 2\n")
    # A line the reviewer cannot have meant (0, or a range that ends before it starts):
    # the whole file.
    whole = "a = 1\nb = 2\nc = 3\n"
    for unusable in (
        Location(file="src/app.py", line_start=0),
        Location(file="src/app.py", line_start=3, line_end=2),
    ):
        assert code(unusable) == digest(str(unusable), whole)
    assert code(None) == digest("", "the whole")


def test_a_code_finding_without_a_reviewed_tree_is_bound_to_the_whole_change() -> None:
    cited = Location(file="src/app.py", line_start=2)
    assert content_id(cited, plan=None, root=None) == digest(str(cited), "the whole")


def test_a_file_that_is_not_utf8_still_has_a_content_id_that_follows_its_bytes(
    tmp_path: Path,
) -> None:
    (tmp_path / "data.bin").write_bytes(b"a\n\xff\xfe\n")
    cited = Location(file="data.bin", line_start=2)
    found = content_id(cited, plan=None, root=tmp_path)
    assert found == digest(str(cited), b"\xff\xfe\n".decode("utf-8", "surrogateescape"))
    (tmp_path / "data.bin").write_bytes(b"a\n\xff\xfd\n")
    assert content_id(cited, plan=None, root=tmp_path) != found
