"""The eval item: one case, one epoch.

Its setup takes the case's result (from the pool, or by reviewing now): a reviewer that
could not run is the setup's error, never a pass and never a miss.  Its call fails when
the case's defects were not all caught, or a clean case was blocked.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .case import Case
from .metrics import CaseResult

__all__ = ["EVAL_ATTR", "EvalError", "EvalItem", "EvalMissed"]

#: The report attribute that carries an item's :class:`CaseResult` (JSON) through xdist.
EVAL_ATTR = "advreview_eval_result"
#: The node id prefix of eval items.
NODE_PREFIX = "advreview-eval::"


class EvalError(Exception):
    """The case could not be reviewed (the reviewer could not run, the case is broken)."""


class EvalMissed(Exception):
    """The review missed a seeded defect, or blocked a clean case."""


class EvalItem(pytest.Item):
    """One case reviewed in one epoch."""

    def __init__(self, *, case: Case, epoch: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.epoch = epoch
        self.result: CaseResult | None = None
        #: Set by the eval plugin: the result of this item (waits for the pool's run).
        self.take: Callable[[EvalItem], CaseResult] | None = None

    @classmethod
    def from_parent(  # type: ignore[override]
        cls, parent: pytest.Session, *, case: Case, epoch: int
    ) -> EvalItem:
        name = f"{case.id}[{epoch}]"
        item: EvalItem = super().from_parent(
            parent, name=name, nodeid=NODE_PREFIX + name, case=case, epoch=epoch
        )
        return item

    @property
    def result_json(self) -> str | None:
        """The result as it travels on the item's reports."""
        return None if self.result is None else self.result.model_dump_json()

    def setup(self) -> None:
        assert self.take is not None, "the eval plugin hands every item its result"
        self.result = self.take(self)
        if self.result.outcome == "error":
            raise EvalError(
                f"eval case {self.case.id} (epoch {self.epoch}) could not be scored: "
                f"{self.result.error}"
            )

    def runtest(self) -> None:
        result = self.result
        assert result is not None and result.score is not None
        if result.outcome == "passed":
            return
        score = result.score
        if self.case.spec.clean:
            raise EvalMissed(
                f"clean case {self.case.id} (epoch {self.epoch}) was blocked by "
                f"{', '.join(score.false_blocks)}: a false block"
            )
        lines = [
            f"case {self.case.id} (epoch {self.epoch}): {len(score.missed)} of "
            f"{len(self.case.spec.defect)} seeded defects missed"
        ]
        by_id = {d.id: d for d in self.case.spec.defect}
        for defect_id in score.missed:
            d = by_id[defect_id]
            where = d.section if d.section is not None else f"{d.file} lines {d.lines}"
            lines.append(
                f"  missed {d.id} [{d.category}, {d.severity.value}] at {where}: {d.description}"
            )
        if score.false_blocks:
            lines.append(
                f"  blocking findings that caught nothing: {', '.join(score.false_blocks)}"
            )
        raise EvalMissed("\n".join(lines))

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | Any:
        if isinstance(excinfo.value, (EvalError, EvalMissed)):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.case.file, 0, f"[advreview-eval] {self.case.id} epoch {self.epoch}"
