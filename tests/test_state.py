"""Tests of ``pytest_advreview.state``: the store in a real pytest cache, the rules, the diff."""

from __future__ import annotations

import json
import os
import threading
import warnings
from pathlib import Path

import pytest

from pytest_advreview import state as state_module
from pytest_advreview.cachekey import cache_key
from pytest_advreview.models import (
    Decision,
    DecisionAction,
    Finding,
    Operation,
    Review,
    ReviewStatus,
    RoundRecord,
    RunnerResult,
    RunnerStatus,
    Severity,
    TokenUsage,
    Verdict,
)
from pytest_advreview.state import (
    STATE_SCHEMA,
    NextStep,
    ReviewState,
    StateStore,
    StateWarning,
    decide_next,
    state_key,
)

PLAN = "docs/plans/x.md"
SETTINGS = "s" * 64


def finding(fid: str, severity: Severity = Severity.HIGH) -> Finding:
    return Finding(id=fid, severity=severity, title=f"title of {fid}")


def record(
    number: int,
    verdict: Verdict,
    *,
    content: str = "h1",
    findings: tuple[Finding, ...] = (),
    decisions: tuple[Decision, ...] = (),
    operation: Operation = Operation.INITIAL,
) -> RoundRecord:
    return RoundRecord(
        number=number,
        operation=operation,
        runner=RunnerResult(
            result=RunnerStatus.SUCCESS,
            verdict=verdict,
            attempt_id=f"a{number}",
            codex_session_id="thread-1",
        ),
        review=Review(findings=findings, verdict=verdict, raw=f"review {number}"),
        decisions=decisions,
        usage=TokenUsage(input_tokens=10, output_tokens=5),
        content_hash=content,
    )


def state(*rounds: RoundRecord, key: str = PLAN, settings: str = SETTINGS) -> ReviewState:
    return ReviewState(
        key=key,
        reviewer={"model": settings},
        rounds=rounds,
        session_id="thread-1",
        last_content_hash=rounds[-1].content_hash if rounds else None,
        last_content="# Plan\n",
        status=ReviewStatus.REVISE,
    )


REJECT = Decision(finding="AR-aaaaaa", action=DecisionAction.REJECT, reason="not reachable")


@pytest.fixture
def config(pytester: pytest.Pytester) -> pytest.Config:
    """A configured pytest config whose cache lives in pytester's temp dir."""
    return pytester.parseconfigure()


@pytest.fixture
def store(config: pytest.Config) -> StateStore:
    return StateStore(config)


def load(store: StateStore, key: str) -> ReviewState | None:
    """What the coordinator takes from the store: the state, an unusable entry's warning."""
    found, problem = store.read(key)
    if problem is not None:
        warnings.warn(StateWarning(problem), stacklevel=2)
    return found


def entry_path(store: StateStore, key: str) -> Path:
    path = store.path_for(key)
    assert path is not None
    return path


# -- the model -------------------------------------------------------------------------------


def test_helpers_read_the_last_review_and_every_decision_sent() -> None:
    accept = Decision(finding="AR-bbbbbb", action=DecisionAction.ACCEPT)
    s = state(
        record(1, Verdict.REVISE, findings=(finding("AR-aaaaaa"), finding("AR-bbbbbb"))),
        record(
            2,
            Verdict.REVISE,
            findings=(finding("AR-cccccc", Severity.MEDIUM),),
            decisions=(REJECT, accept),
            operation=Operation.RESUME,
        ),
        record(3, Verdict.REVISE, decisions=(REJECT,), operation=Operation.RESUME),
    )
    assert s.last_round is not None and s.last_round.number == 3
    assert s.rounds_used == 3
    assert s.last_verdict is Verdict.REVISE
    assert s.max_severity is None  # round 3 has no findings
    assert s.decisions_sent == (REJECT, accept)
    assert s.known_finding_ids == {"AR-aaaaaa", "AR-bbbbbb", "AR-cccccc"}


def test_empty_state_helpers() -> None:
    s = state()
    assert s.last_round is None
    assert s.last_review is None
    assert s.last_verdict is None
    assert s.max_severity is None
    assert s.rounds_used == 0
    assert s.reviewed_hash is None


# -- the store -------------------------------------------------------------------------------


def test_round_trip(store: StateStore) -> None:
    saved = state(record(1, Verdict.REVISE, findings=(finding("AR-aaaaaa"),)))
    assert store.save(saved) is True
    assert load(store, PLAN) == saved
    path = entry_path(store, PLAN)
    assert path.parent.parts[-3:] == ("d", "advreview", "state")
    assert path.name == f"{state_key(PLAN)}.json"
    assert not [p for p in path.parent.iterdir() if p.suffix == ".tmp"]


def test_missing_entry_is_none_without_warning(store: StateStore) -> None:
    assert load(store, "docs/plans/never.md") is None


def test_clear(store: StateStore) -> None:
    store.save(state(record(1, Verdict.APPROVED)))
    store.clear(PLAN)
    assert load(store, PLAN) is None
    store.clear(PLAN)  # idempotent


def test_state_survives_a_new_config(pytester: pytest.Pytester) -> None:
    saved = state(record(1, Verdict.APPROVED))
    StateStore(pytester.parseconfigure()).save(saved)
    assert load(StateStore(pytester.parseconfigure()), PLAN) == saved


@pytest.mark.parametrize(
    "key",
    [
        "code-review",
        "docs/plans/sp ace 'q' \"dq\" $HOME.md",
        "../../../etc/passwd",
        "/abs/path.md",
        "docs\\win\\path.md",
        "ümlaut/计划.md",
        "x" * 500,
    ],
)
def test_keys_with_odd_characters(store: StateStore, key: str) -> None:
    saved = state(record(1, Verdict.APPROVED), key=key)
    store.save(saved)
    assert load(store, key) == saved
    path = entry_path(store, key)
    assert path.parent.name == "state"
    assert len(path.stem) == 16


def test_distinct_keys_do_not_collide(store: StateStore) -> None:
    store.save(state(record(1, Verdict.APPROVED), key="a.md"))
    store.save(state(record(1, Verdict.REVISE), key="b.md"))
    a, b = load(store, "a.md"), load(store, "b.md")
    assert a is not None and a.last_verdict is Verdict.APPROVED
    assert b is not None and b.last_verdict is Verdict.REVISE


def test_corrupt_json_warns_and_reads_none(store: StateStore) -> None:
    entry_path(store, PLAN).write_text('{"key": "docs/plans/x.md", ', encoding="utf-8")
    with pytest.warns(StateWarning, match=r"docs/plans/x\.md.*not valid JSON.*afresh"):
        assert load(store, PLAN) is None


def write_signed(store: StateStore, state_data: object, **envelope: object) -> None:
    """Write an entry whose MAC is valid for ``state_data`` (whatever it holds)."""
    key = store.state_key()
    assert key is not None
    body = {
        "schema_version": STATE_SCHEMA,
        "mac": key.mac(state_module._canonical(state_data)),
        "run_tag": "0" * 64,
        "state": state_data,
        **envelope,
    }
    entry_path(store, PLAN).write_text(json.dumps(body), encoding="utf-8")


def test_wrong_schema_warns_and_reads_none(store: StateStore) -> None:
    data = json.loads(state(record(1, Verdict.APPROVED)).model_dump_json())
    data["rounds"][0]["number"] = "one"
    write_signed(store, data)
    match = r"does not match the state schema \(state\.rounds\.0\.number"
    with pytest.warns(StateWarning, match=match):
        assert load(store, PLAN) is None


def test_unknown_field_is_a_schema_error(store: StateStore) -> None:
    data = json.loads(state(record(1, Verdict.APPROVED)).model_dump_json())
    data["surprise"] = 1
    write_signed(store, data)
    with pytest.warns(StateWarning, match="surprise"):
        assert load(store, PLAN) is None


def test_other_schema_version_warns(store: StateStore) -> None:
    data = json.loads(state(record(1, Verdict.APPROVED)).model_dump_json())
    write_signed(store, data, schema_version=99)
    with pytest.warns(StateWarning, match="schema version 99"):
        assert load(store, PLAN) is None


def test_entry_of_the_unsigned_layout_of_version_1_warns(store: StateStore) -> None:
    data = json.loads(state(record(1, Verdict.APPROVED)).model_dump_json())
    data["schema_version"] = 1
    entry_path(store, PLAN).write_text(json.dumps(data), encoding="utf-8")
    with pytest.warns(StateWarning, match="schema version 1, this plugin reads version 2"):
        assert load(store, PLAN) is None


def test_json_that_is_not_an_object_warns(store: StateStore) -> None:
    entry_path(store, PLAN).write_text("[1, 2]", encoding="utf-8")
    with pytest.warns(StateWarning, match="does not match the state schema"):
        assert load(store, PLAN) is None


def test_entry_of_another_key_warns(store: StateStore) -> None:
    other = state(record(1, Verdict.APPROVED), key="docs/plans/other.md")
    write_signed(store, json.loads(other.model_dump_json()))
    with pytest.warns(StateWarning, match="belongs to another target"):
        assert load(store, PLAN) is None


def test_not_utf8_warns(store: StateStore) -> None:
    entry_path(store, PLAN).write_bytes(b"\xff\xfe{}")
    with pytest.warns(StateWarning, match="could not be read"):
        assert load(store, PLAN) is None


def test_unreadable_entry_warns(store: StateStore) -> None:
    # A directory where the file should be: unreadable even for root.
    entry_path(store, PLAN).mkdir()
    with pytest.warns(StateWarning, match=r"could not be read \(Is a directory\)"):
        assert load(store, PLAN) is None


def test_write_error_warns_and_returns_false(store: StateStore) -> None:
    entry_path(store, PLAN).mkdir()
    (entry_path(store, PLAN) / "keep").touch()  # os.replace onto a non-empty dir fails
    with pytest.warns(StateWarning, match=r"saving .*could not be written"):
        assert store.save(state(record(1, Verdict.APPROVED))) is False
    assert not [p for p in entry_path(store, PLAN).parent.iterdir() if p.suffix == ".tmp"]


def test_clear_error_warns(store: StateStore) -> None:
    entry_path(store, PLAN).mkdir()
    with pytest.warns(StateWarning, match="could not be deleted"):
        store.clear(PLAN)


def test_unwritable_cache_dir_warns(pytester: pytest.Pytester) -> None:
    # cache_dir pointing below a regular file can never be created, even as root.
    (pytester.path / "blocker").write_text("", encoding="utf-8")
    pytester.makeini("[pytest]\ncache_dir = blocker/cache\n")
    store = StateStore(pytester.parseconfigure())
    with pytest.warns(StateWarning, match="state directory .* could not be created"):
        assert load(store, PLAN) is None
    with pytest.warns(StateWarning, match="could not be created"):
        assert store.save(state(record(1, Verdict.APPROVED))) is False


def test_without_cacheprovider_the_store_is_off_and_warns_once(
    pytester: pytest.Pytester,
) -> None:
    config = pytester.parseconfigure("-p", "no:cacheprovider")
    store = StateStore(config)
    with pytest.warns(StateWarning, match="cacheprovider plugin is disabled.*rounds across runs"):
        assert load(store, PLAN) is None
    assert store.path_for(PLAN) is None
    # filterwarnings=error: any further warning would raise here.
    assert store.save(state(record(1, Verdict.APPROVED))) is False
    store.clear(PLAN)
    assert load(store, PLAN) is None
    # A second store on the same config does not repeat it either.
    assert load(StateStore(config), PLAN) is None


def test_concurrent_saves_never_tear(store: StateStore) -> None:
    """Readers racing writers see a whole entry every time (atomic replace)."""
    big = state(
        *(
            record(i, Verdict.REVISE, findings=tuple(finding(f"AR-{i:06x}") for _ in range(20)))
            for i in range(1, 30)
        )
    )
    small = state(record(1, Verdict.APPROVED))
    store.save(small)
    errors: list[str] = []

    def write() -> None:
        for n in range(20):
            store.save(big if n % 2 else small)

    def read() -> None:
        for _ in range(60):
            loaded = load(store, PLAN)
            if loaded not in (big, small):
                errors.append(repr(loaded)[:80])

    threads = [threading.Thread(target=write), threading.Thread(target=read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# -- decide_next -----------------------------------------------------------------------------


def decide(
    s: ReviewState | None,
    *,
    content: str = "h1",
    settings: str = SETTINGS,
    decisions: tuple[Decision, ...] = (),
    max_rounds: int = 5,
    fresh: bool = False,
) -> NextStep:
    return decide_next(
        s,
        cache_key({"model": settings}, content, decisions),
        max_rounds=max_rounds,
        fresh=fresh,
    )


REVISED = state(record(1, Verdict.REVISE, findings=(finding("AR-aaaaaa"),)))
APPROVED = state(record(1, Verdict.APPROVED))


def test_no_state_is_an_initial_review() -> None:
    step = decide(None)
    assert step.action == "review"
    assert step.history == ()
    assert "no stored state" in step.reason


def test_fresh_ignores_the_state() -> None:
    step = decide(APPROVED, fresh=True)
    assert step.action == "review"
    assert "--advreview-fresh" in step.reason


def test_changed_settings_start_over() -> None:
    step = decide(APPROVED, settings="other")
    assert step.action == "review"
    assert "the reviewer changed since the stored rounds (model)" in step.reason
    assert "starting over" in step.reason


def test_a_new_decision_on_an_approved_review_is_the_next_round() -> None:
    # The decisions are part of the cache key: the reviewer has not seen this one.
    step = decide(APPROVED, decisions=(REJECT,))
    assert step.action == "continue"
    assert step.decisions == (REJECT,)
    assert "new decisions since round 1 was APPROVED" in step.reason


def test_state_without_rounds_is_an_initial_review() -> None:
    assert decide(state()).action == "review"


def test_same_content_approved_is_cached() -> None:
    step = decide(APPROVED)
    assert step.action == "cached_approved"
    assert step.review is not None and step.review.verdict is Verdict.APPROVED


def test_changed_content_after_approval_continues() -> None:
    step = decide(APPROVED, content="h2")
    assert step.action == "continue"
    assert step.history == APPROVED.rounds


def test_changed_content_after_approval_with_no_rounds_left_starts_over() -> None:
    step = decide(APPROVED, content="h2", max_rounds=1)
    assert step.action == "review"
    assert "rounds are spent" in step.reason


def test_same_content_revise_without_new_decisions_is_cached() -> None:
    step = decide(REVISED)
    assert step.action == "cached_revise"
    assert step.review is not None
    assert [f.id for f in step.review.findings] == ["AR-aaaaaa"]


def test_decisions_already_sent_are_not_new() -> None:
    s = state(
        record(1, Verdict.REVISE, findings=(finding("AR-aaaaaa"),)),
        record(2, Verdict.REVISE, decisions=(REJECT,), operation=Operation.RESUME),
    )
    assert decide(s, decisions=(REJECT,)).action == "cached_revise"


def test_new_decision_continues() -> None:
    step = decide(REVISED, decisions=(REJECT,))
    assert step.action == "continue"
    assert step.decisions == (REJECT,)
    assert step.history == REVISED.rounds
    assert "1 new decision" in step.reason
    assert "round 2" in step.reason


def test_changed_reason_is_a_new_decision() -> None:
    s = state(
        record(1, Verdict.REVISE, findings=(finding("AR-aaaaaa"),)),
        record(2, Verdict.REVISE, decisions=(REJECT,), operation=Operation.RESUME),
    )
    edited = REJECT.model_copy(update={"reason": "a better reason"})
    step = decide(s, decisions=(edited,))
    assert step.action == "continue"
    assert step.decisions == (edited,)


def test_changed_content_continues_with_only_new_decisions() -> None:
    s = state(
        record(1, Verdict.REVISE, findings=(finding("AR-aaaaaa"),)),
        record(2, Verdict.REVISE, decisions=(REJECT,), operation=Operation.RESUME),
    )
    step = decide(s, content="h2", decisions=(REJECT,))
    assert step.action == "continue"
    assert step.decisions == ()
    assert "changed content" in step.reason


def test_max_rounds_even_when_changed() -> None:
    s = state(
        *(
            record(i, Verdict.REVISE, findings=(finding("AR-aaaaaa"),), content=f"h{i}")
            for i in range(1, 6)
        )
    )
    for content in ("h5", "h6"):
        step = decide(s, content=content, decisions=(REJECT,))
        assert step.action == "max_rounds"
        assert "5 of 5 rounds" in step.reason
        assert "--advreview-fresh" in step.reason
        assert step.review is not None
    assert decide(s, fresh=True).action == "review"


def test_round_hash_wins_over_last_content_hash() -> None:
    """A later run that counted no round must not make the old verdict look current."""
    s = APPROVED.model_copy(update={"last_content_hash": "h2"})
    assert decide(s, content="h2").action == "continue"
    assert decide(s, content="h1").action == "cached_approved"


# -- authenticity ------------------------------------------------------------------------------


def _entry_json(store: StateStore) -> dict[str, object]:
    data = json.loads(entry_path(store, PLAN).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_an_entry_carries_a_mac_over_its_state_and_this_runs_tag(store: StateStore) -> None:
    store.save(state(record(1, Verdict.APPROVED)))
    data = _entry_json(store)
    assert sorted(data) == ["mac", "run_tag", "schema_version", "state"]
    key = store.state_key()
    assert key is not None
    assert key.verify(state_module._canonical(data["state"]), data["mac"])


def test_an_entry_the_plugin_did_not_write_is_ignored_with_a_warning(store: StateStore) -> None:
    forged = json.loads(state(record(1, Verdict.APPROVED)).model_dump_json())
    entry = {"schema_version": STATE_SCHEMA, "mac": "0" * 64, "run_tag": "0" * 64}
    entry_path(store, PLAN).write_text(json.dumps({**entry, "state": forged}), encoding="utf-8")
    with pytest.warns(StateWarning) as caught:
        assert load(store, PLAN) is None
    (warning,) = caught
    text = str(warning.message)
    assert "docs/plans/x.md" in text and str(entry_path(store, PLAN)) in text
    assert "not written by pytest-advreview under this state key" in text
    assert "reviewed again" in text


def test_a_stored_revise_edited_to_approved_is_ignored(store: StateStore) -> None:
    store.save(state(record(1, Verdict.REVISE, findings=(finding("AR-aaaaaa"),))))
    data = _entry_json(store)
    text = json.dumps(data).replace('"REVISE"', '"APPROVED"')
    entry_path(store, PLAN).write_text(text, encoding="utf-8")
    with pytest.warns(StateWarning, match="not written by pytest-advreview"):
        assert load(store, PLAN) is None


def test_an_entry_written_under_another_key_is_ignored(
    config: pytest.Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADVREVIEW_STATE_KEY", "a" * 40)
    StateStore(config).save(state(record(1, Verdict.APPROVED)))
    monkeypatch.setenv("ADVREVIEW_STATE_KEY", "b" * 40)
    with pytest.warns(StateWarning, match="ADVREVIEW_STATE_KEY"):
        assert load(StateStore(config), PLAN) is None
    monkeypatch.setenv("ADVREVIEW_STATE_KEY", "a" * 40)
    assert load(StateStore(config), PLAN) is not None


def test_a_bad_ci_secret_is_a_usage_error_when_the_store_starts(
    config: pytest.Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADVREVIEW_STATE_KEY", "too-short")
    with pytest.raises(pytest.UsageError, match="ADVREVIEW_STATE_KEY has 9 characters"):
        StateStore(config)


def test_without_a_usable_key_nothing_is_trusted_or_stored(
    config: pytest.Config, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    StateStore(config).save(state(record(1, Verdict.APPROVED)))
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker))
    keyless = StateStore(config)
    with pytest.warns(StateWarning, match="reviewed afresh and nothing is stored") as caught:
        first = load(keyless, PLAN)
    assert first is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per store, not per entry
        assert keyless.save(state(record(2, Verdict.APPROVED))) is False
        assert load(keyless, PLAN) is None
    assert len(caught) == 1


# -- watching the store while a reviewer runs ------------------------------------------------


def test_entries_this_run_writes_are_not_foreign(config: pytest.Config) -> None:
    secret = b"s" * 32
    mine, other_worker = (
        StateStore(config, run_secret=secret),
        StateStore(config, run_secret=secret),
    )
    before = mine.snapshot()
    other_worker.save(state(record(1, Verdict.APPROVED), key="docs/plans/y.md"))
    mine.save(state(record(1, Verdict.APPROVED)))
    assert mine.foreign_changes(before, mine.snapshot()) == []


def test_an_entry_an_earlier_run_wrote_is_foreign_when_it_appears_during_a_review(
    config: pytest.Config, tmp_path: Path
) -> None:
    # A valid MAC is not enough: a reviewer that read the per-user key, or copied an old
    # entry, writes entries that verify; only this run's processes can tag them.
    mine = StateStore(config, run_secret=b"s" * 32)
    earlier = StateStore(config, run_secret=b"e" * 32)
    earlier.save(state(record(1, Verdict.APPROVED), key="docs/plans/y.md"))
    copy = tmp_path / "y.json"
    copy.write_bytes(Path(str(earlier.path_for("docs/plans/y.md"))).read_bytes())
    earlier.clear("docs/plans/y.md")
    before = mine.snapshot()
    target = earlier.path_for("docs/plans/y.md")
    assert target is not None
    target.write_bytes(copy.read_bytes())
    assert mine.foreign_changes(before, mine.snapshot()) == [str(target)]


def test_a_rewritten_or_deleted_entry_is_foreign_and_discarded(store: StateStore) -> None:
    store.save(state(record(1, Verdict.REVISE, findings=(finding("AR-aaaaaa"),))))
    store.save(state(record(1, Verdict.REVISE), key="docs/plans/gone.md"))
    path, gone = entry_path(store, PLAN), entry_path(store, "docs/plans/gone.md")
    before = store.snapshot()
    path.write_text(path.read_text().replace('"REVISE"', '"APPROVED"'))
    gone.unlink()
    changed = store.foreign_changes(before, store.snapshot())
    assert changed == sorted([str(path), str(gone)])
    assert store.target_of(str(path)) == PLAN
    store.discard(changed)
    assert not path.exists()
    assert load(store, PLAN) is None


def test_a_rewrite_that_keeps_size_and_mtime_is_still_seen(store: StateStore) -> None:
    store.save(state(record(1, Verdict.REVISE)))
    path = entry_path(store, PLAN)
    before = store.snapshot()
    info = path.stat()
    path.write_text(path.read_text().replace('"REVISE"', '"REVIZE"'))  # same length
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert path.stat().st_size == info.st_size
    assert store.foreign_changes(before, store.snapshot()) == [str(path)]


def test_a_replaced_key_file_is_foreign(store: StateStore) -> None:
    store.save(state(record(1, Verdict.APPROVED)))
    key = store.state_key()
    assert key is not None and key.source == "file"
    before = store.snapshot()
    Path(key.where).write_text("0" * 64 + "\n")
    assert store.foreign_changes(before, store.snapshot()) == [key.where]
