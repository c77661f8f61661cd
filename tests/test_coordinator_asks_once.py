"""The coordinator asks the authority once per target, and gets one frozen answer.

Before: the coordinator looked the same target up five times per review (the decisions
sent, the waived findings, the rounds granted, the operator's decisions, what did not
count), each a separate call that could see a different authority.  Now
:meth:`~pytest_advreview.trust.authority.Authority.for_target` answers all of it in one
:class:`~pytest_advreview.trust.authority.TargetAuthority`, asked once per target per run.
The spy counts every per-target query of the authority through real reviews (the
in-process scripted reviewer, a real git repository, a real lead command).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from conftest import ReviewRepo
from pytest_advreview.trust.authority import Authority
from test_operator_e2e import (
    KEY,
    NO_CODE,
    approve_everything,
    decide,
    left_to_the_operator,
    operator_lead,
)

#: Every query of the authority about one target (whichever the code has).
QUERIES = ("for_target", "waivers_for", "bound", "granted", "operator_decisions", "ignored_for")


@pytest.fixture
def lead(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ...]:
    return operator_lead(tmp_path_factory.mktemp("lead"))


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts the authority's per-target queries by target (the runs are in process)."""
    calls: Counter[str] = Counter()

    depth = [0]

    def spy(method: Callable[..., Any]) -> Callable[..., Any]:
        def counted(self: Authority, key: str, *args: Any, **kwargs: Any) -> Any:
            # A query the authority makes of itself to answer one is not another query.
            if not depth[0]:
                calls[key] += 1
            depth[0] += 1
            try:
                return method(self, key, *args, **kwargs)
            finally:
                depth[0] -= 1

        return counted

    for name in QUERIES:
        method = getattr(Authority, name, None)
        if method is not None:
            monkeypatch.setattr(Authority, name, spy(method))
    return calls


def test_one_query_per_target_through_reviews_that_use_every_answer(
    scripted_repo: ReviewRepo, lead: tuple[str, ...], asked: Counter[str]
) -> None:
    # Run 1: a review, the lead leaves a finding to the operator (rounds, the round
    # limit, the save, the record's waivers, grants and ignored decisions).
    left_to_the_operator(scripted_repo, lead)
    assert asked == Counter({KEY: 1})

    # Run 2: the stored state has the open finding; the operator decides it in the file,
    # which is sent with the re-review and closes the finding.
    asked.clear()
    approve_everything(scripted_repo)
    decide(scripted_repo)
    scripted_repo.run(NO_CODE).assert_outcomes(passed=1)
    assert asked == Counter({KEY: 1})

    # Run 3: cached.
    asked.clear()
    scripted_repo.run(NO_CODE).stdout.fnmatch_lines(["*cached (passed)*"])
    assert asked == Counter({KEY: 1})


def test_the_answer_is_frozen(scripted_repo: ReviewRepo) -> None:
    path = scripted_repo.path / ".advreview" / "decisions.toml"
    authority = Authority.of(path, rootdir=scripted_repo.path, gated=False, head=False, base=None)
    answer = authority.for_target(KEY)
    with pytest.raises(dataclasses.FrozenInstanceError):
        answer.where = "elsewhere"  # type: ignore[misc]
