"""The floor of benchmark 4: pytest's own cost for one file node + one item per plan.

The smallest non-Python collector (the pattern of pytest's "Working with non-python
tests" example), loaded with ``-p bench_floor -p no:advreview``: it collects every
``.md`` file below a ``plans`` folder as one file node holding one item, and does nothing
else.  Whatever ``--collect-only`` costs with it is what pytest itself spends on that
many nodes; the plugin cannot go below it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


class MarkdownFile(pytest.File):
    """One plan file."""

    def collect(self) -> Iterator[pytest.Item]:
        """One item per file."""
        yield MarkdownItem.from_parent(self, name="adversarial-review")


class MarkdownItem(pytest.Item):
    """An item that does nothing."""

    def runtest(self) -> None:
        """Nothing to run."""


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> MarkdownFile | None:
    """Collect ``**/plans/**/*.md``."""
    if file_path.suffix == ".md" and "plans" in file_path.parts:
        node: MarkdownFile = MarkdownFile.from_parent(parent, path=file_path)
        return node
    return None
