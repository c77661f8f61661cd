"""Money per verdict: the price table's arithmetic and how the reports write it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_advreview.models import (
    LeadRecord,
    Operation,
    RoundRecord,
    RunnerResult,
    RunnerStatus,
    TokenUsage,
)
from pytest_advreview.options import Invalid, price_line
from pytest_advreview.pricing import PriceError, PriceTable, money, per_round, run_cost, tokens_text
from pytest_advreview.record import priced
from pytest_advreview.runner.claude import result_model as _model
from pytest_advreview.settings import Settings

TABLE = PriceTable.of(["m: input=2 cached_input=0.5 output=10"])


def test_cached_input_is_priced_at_its_own_rate_and_output_at_the_output_rate() -> None:
    usage = TokenUsage(input_tokens=800_000, cached_input_tokens=200_000, output_tokens=100_000)
    assert TABLE.cost(usage, "m") == pytest.approx(1.2 + 0.1 + 1.0)


def test_more_cached_than_input_never_prices_negative_input() -> None:
    usage = TokenUsage(input_tokens=100, cached_input_tokens=1_000_000, output_tokens=0)
    assert TABLE.cost(usage, "m") == pytest.approx(100 * 0.5 / 1e6)


def test_no_table_no_model_line_and_no_tokens() -> None:
    usage = TokenUsage(input_tokens=10, output_tokens=10)
    assert PriceTable.of([]).cost(usage, "m") is None
    assert TABLE.cost(usage, "other") is None
    assert TABLE.cost(usage, None) is None
    assert TABLE.cost(TokenUsage(), "other") == 0.0  # nothing spent costs nothing


def test_a_model_on_two_lines_and_a_missing_model_are_refused() -> None:
    with pytest.raises(PriceError, match="prices m on two lines"):
        PriceTable.of(["m: input=1 cached_input=1 output=1", "m: input=2 cached_input=1 output=1"])
    with pytest.raises(PriceError, match="no line for x, the model of the lead"):
        TABLE.require([("the reviewer", "m"), ("the lead", "x")])
    PriceTable.of([]).require([("the reviewer", "x")])  # no table: nothing is required


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("", "expected a model name first"),
        ("input=1 cached_input=1 output=1", "expected a model name first"),
        (":", "expected a model name first"),
        ("m: input=1 input=2 cached_input=1 output=1", "input is given twice"),
        ("m: input=nan cached_input=1 output=1", "not a price per million tokens"),
        ("m: input=2e6 cached_input=1 output=1", "not a price per million tokens"),
        ("m: input=1 output=1", "m has no cached_input price"),
        ("m: input=1 cached=1 output=1", "'cached=1' is not a price"),
    ],
)
def test_a_bad_line_says_what_is_wrong_and_shows_a_good_one(line: str, why: str) -> None:
    with pytest.raises(Invalid, match=why) as caught:
        price_line(line)
    assert "e.g. gpt-5.5: input=1.25 cached_input=0.125 output=10" in str(caught.value)


def test_a_model_name_may_hold_a_colon() -> None:
    assert price_line("llama3:8b: input=0 cached_input=0 output=0")[0] == "llama3:8b"


def test_what_the_reports_write() -> None:
    assert money(0.0123) == "$0.0123"
    assert money(None) == ""
    assert tokens_text(5, None) == "5 tokens"
    assert tokens_text(5, 1.5) == "5 tokens ($1.5000)"
    runner = RunnerResult(result=RunnerStatus.SUCCESS, attempt_id="a")
    rounds = [
        RoundRecord(number=1, operation=Operation.INITIAL, runner=runner),
        RoundRecord(number=2, operation=Operation.RESUME, runner=runner, cost=0.25),
    ]
    assert per_round(rounds) == "round 2 $0.2500"
    assert run_cost([1.0, None, 2.0]) == (3.0, 1)
    assert run_cost([None, None]) == (None, 0)
    assert run_cost([]) == (None, 0)


def test_claude_names_its_model_only_when_it_used_one() -> None:
    assert _model({"modelUsage": {"claude-opus-5-5": {}}}) == "claude-opus-5-5"
    assert _model({"modelUsage": {"a": {}, "b": {}}}) is None
    assert _model({"modelUsage": "x"}) is None
    assert _model({}) is None


def _run(settings: Settings, *turns: LeadRecord) -> Any:
    """The parts of a review :func:`~pytest_advreview.record.priced` reads."""
    return SimpleNamespace(settings=settings, lead=SimpleNamespace(records=list(turns)))


def test_an_item_with_a_lead_model_without_a_price_has_no_money_and_says_why() -> None:
    settings = Settings(model="m", prices=("m: input=2 cached_input=0.5 output=10",))
    turn = LeadRecord(
        round=1, backend="claude", tokens=TokenUsage(input_tokens=10), model="claude-x"
    )
    usage = TokenUsage(input_tokens=1_000_010)
    turns, cost, unknown = priced(_run(settings, turn), usage)
    assert cost is None
    assert turns[0].cost is None
    assert unknown is not None and "no line for claude-x" in unknown


def test_an_item_is_the_reviewers_money_plus_the_leads() -> None:
    settings = Settings(
        model="m",
        prices=("m: input=2 cached_input=0.5 output=10", "l: input=1 cached_input=1 output=1"),
    )
    turn = LeadRecord(
        round=1, backend="codex", tokens=TokenUsage(input_tokens=1_000_000), model="l"
    )
    usage = TokenUsage(input_tokens=2_000_000)  # the reviewer's 1,000,000 and the lead's
    turns, cost, unknown = priced(_run(settings, turn), usage)
    assert (cost, unknown) == (pytest.approx(2.0 + 1.0), None)
    assert turns[0].cost == pytest.approx(1.0)
    assert priced(_run(Settings()), usage) == ((), None, None)
