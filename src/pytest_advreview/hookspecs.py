"""Hook specifications of pytest-advreview (all named ``pytest_advreview_*``).

Registered lazily from ``pytest_addhooks``; implement them in a ``conftest.py`` or a
plugin.  New keyword arguments may be added in later versions: implementations may take
fewer arguments than the spec, so existing hooks keep working.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .loop import ReviewTarget
    from .models import Decision, Operation, Review, RoundRecord
    from .runner import Reviewer


@pytest.hookspec(firstresult=True)
def pytest_advreview_make_reviewer(config: pytest.Config, name: str) -> Reviewer | None:
    """Return the reviewer backend called ``name``, or ``None`` if this plugin has none.

    The built-in ``codex`` and ``command`` backends are ``trylast`` implementations, so a
    plugin can replace either by answering the same name.

    :param config: the pytest config.
    :param name: the backend name from ``--advreview-reviewer`` / ``advreview_reviewer``.

    .. versionadded:: 0.1
    """


@pytest.hookspec(firstresult=True)
def pytest_advreview_modify_prompt(
    target: ReviewTarget, operation: Operation, prompt: str
) -> str | None:
    """Return a replacement for the prompt body about to be sent, or ``None`` to keep it.

    To extend a prompt, return ``prompt + extra``.  The session marker is added after this
    hook, so a replacement can never break session-id capture.

    :param target: what is reviewed (key, kind, repository root).
    :param operation: ``initial``, ``resume`` or ``fresh-exec``.
    :param prompt: the body the plugin built.

    .. versionadded:: 0.1
    """


@pytest.hookspec(firstresult=True)
def pytest_advreview_fix(item: pytest.Item, review: Review) -> Sequence[Decision] | None:
    """Apply fixes for a REVISE review and return the decisions taken, or ``None``.

    Returning decisions (accept / re-scope / reject with a reason per finding) makes the
    loop run the next round within this run, as a resume on the same thread.  Without an
    implementation the built-in lead (``--advreview-lead``) fixes, or, without one, there is
    one round per run and rounds continue in the next run.  An implementation wins over
    the built-in lead.

    .. versionadded:: 0.1
    """


@pytest.hookspec
def pytest_advreview_round_done(item: pytest.Item, record: RoundRecord) -> None:
    """Called after every counted round (observers: PR comments, dashboards).

    .. versionadded:: 0.1
    """
