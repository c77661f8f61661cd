"""Money per verdict: the ``advreview_prices`` table and what a review's tokens cost.

The table has no built-in prices (they change): each line of the ini key gives one
model's input, cached-input and output price per million tokens
(:func:`~.options.price_line` reads a line).  Codex and Claude Code report input tokens
with the cached part included (``cached_input_tokens``, ``cache_read_input_tokens``), so
the cached part is priced at its own rate and only the rest at the input rate.  Output
tokens include the reasoning tokens, priced as output.

Without a table every amount is ``None`` and the reports show tokens only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from .models import RoundRecord, SampleRecord, TokenUsage, VerificationRecord
from .options import BY_FIELD, PRICE_KEYS, price_line

__all__ = [
    "PriceError",
    "PriceTable",
    "money",
    "per_round",
    "per_turn",
    "run_cost",
    "tokens_text",
]

_KEY = BY_FIELD["prices"].ini_key
#: A round's sample or verification: each is priced at its own backend's model.
_Turn = TypeVar("_Turn", SampleRecord, VerificationRecord)


class PriceError(ValueError):
    """The price table cannot price what the run uses; the text says which line to add."""


@dataclass(frozen=True)
class PriceTable:
    """The models' prices per million tokens, by model name (empty: no prices set)."""

    prices: Mapping[str, Mapping[str, float]]

    @classmethod
    def of(cls, lines: Iterable[str]) -> PriceTable:
        """The table of the (already validated) ``advreview_prices`` lines.

        :raises PriceError: a model given on two lines.
        """
        table: dict[str, Mapping[str, float]] = {}
        for line in lines:
            model, prices = price_line(line)
            if model in table:
                raise PriceError(f"ini {_KEY} prices {model} on two lines; keep one line per model")
            table[model] = prices
        return cls(table)

    def __bool__(self) -> bool:
        return bool(self.prices)

    def require(self, models: Iterable[tuple[str, str]]) -> None:
        """Refuse a table that leaves out a model the run will use.

        :param models: ``(who, model)`` pairs, e.g. ``("the reviewer", "gpt-5.5")``.
        :raises PriceError: the first model without a line, with the line to add.
        """
        if not self:
            return
        for who, model in models:
            if model not in self.prices:
                raise PriceError(
                    f"ini {_KEY} has no line for {model}, the model of {who}, so its "
                    f"money would be unknown; add one, e.g. {model}: "
                    + " ".join(f"{key}=X" for key in PRICE_KEYS)
                    + f" (money per million tokens), or remove {_KEY}"
                )

    def rounds(
        self, rounds: Iterable[RoundRecord], model_of: Callable[[str], str | None], reviewer: str
    ) -> tuple[RoundRecord, ...]:
        """``rounds`` with their money, each sample's and verification's too.

        :param model_of: the model a backend reviews with, as priced.
        :param reviewer: the backend of the rounds themselves.
        """

        def priced(turns: Iterable[_Turn]) -> tuple[_Turn, ...]:
            return tuple(
                t.model_copy(update={"cost": self.cost(t.usage, model_of(t.reviewer))})
                for t in turns
            )

        return tuple(
            r.model_copy(
                update={
                    "cost": self.cost(r.usage, model_of(reviewer)),
                    "samples": priced(r.samples),
                    "verifications": priced(r.verifications),
                }
            )
            for r in rounds
        )

    def cost(self, usage: TokenUsage, model: str | None) -> float | None:
        """What ``usage`` of ``model`` cost; ``None``: no table, or no line for ``model``
        (zero tokens cost nothing whatever the model)."""
        if not self:
            return None
        if usage == TokenUsage():
            return 0.0
        prices = self.prices.get(model) if model is not None else None
        if prices is None:
            return None
        cached = min(usage.cached_input_tokens, usage.input_tokens)
        return (
            (usage.input_tokens - cached) * prices["input"]
            + cached * prices["cached_input"]
            + usage.output_tokens * prices["output"]
        ) / 1_000_000


def money(amount: float | None) -> str:
    """``$0.0123`` (four decimals: a review costs cents); ``""`` for ``None``."""
    return "" if amount is None else f"${amount:.4f}"


def tokens_text(tokens: int, cost: float | None) -> str:
    """``1234 tokens``, with the money when it is known: ``1234 tokens ($0.0123)``."""
    return f"{tokens} tokens" + (f" ({money(cost)})" if cost is not None else "")


def per_round(rounds: Iterable[RoundRecord]) -> str:
    """``round 1 $0.0123, round 2 $0.0040`` for the rounds whose money is known (``""``
    when none is: no prices were set when they ran)."""
    return ", ".join(f"round {r.number} {money(r.cost)}" for r in rounds if r.cost is not None)


def per_turn(rounds: Iterable[RoundRecord]) -> list[str]:
    """What each sample and each verification of ``rounds`` took: ``round 1 sample 2
    (codex) 1200 tokens ($0.0040)``, one entry each (empty: one review, no verification)."""

    def spent(tokens: int, cost: float | None) -> str:
        return f"{tokens} tokens" + (f" ({money(cost)})" if cost is not None else "")

    turns: list[str] = []
    for r in rounds:
        turns += [
            f"round {r.number} sample {s.sample} ({s.reviewer}) {spent(s.usage.total, s.cost)}"
            for s in r.samples
        ]
        turns += [
            f"round {r.number} verification of {v.finding} ({v.reviewer}, {v.result.lower()}) "
            f"{spent(v.usage.total, v.cost)}"
            for v in r.verifications
        ]
    return turns


def run_cost(costs: Iterable[float | None]) -> tuple[float | None, int]:
    """The run's money over its items' and how many items have none (``None``: no item
    has money, no prices were set)."""
    given = list(costs)
    known = [c for c in given if c is not None]
    unknown = len(given) - len(known) if known else 0
    return (sum(known) if known else None), unknown
