"""The plugin's warnings made errors by a warnings filter (``filterwarnings = error``,
``-W error``): one message, wherever they are raised.

A project that turns warnings into errors turns this plugin's warnings into exceptions
raised from the plugin's own code: inside a review item, inside a test that reviews
through the ``adversarial_review`` fixture, during collection, at the session's end.
Left alone, pytest shows such an exception as a dump of the plugin's source (or an
INTERNALERROR); each of those places instead shows the warning's text and the filter
line that keeps it a warning, built here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NoReturn

import pytest

from .outcome import ReviewWarning

__all__ = ["hint", "is_own", "message", "reported", "usage_error"]

_FILTER = "A warnings filter (filterwarnings = error, -W error) made this"


def is_own(exc: BaseException) -> bool:
    """Whether ``exc`` is a warning class of this plugin that a warnings filter turned
    into an exception."""
    return isinstance(exc, Warning) and type(exc).__module__.startswith(f"{__package__}.")


def hint(exc: BaseException) -> str:
    """The fix of a warning made an error: the filter line that keeps it a warning."""
    kind = type(exc)
    line = f"default::{kind.__module__}.{kind.__qualname__}"
    if isinstance(exc, ReviewWarning):
        keeps = "keep a review whose findings are all below fail-on a pass"
    else:
        keeps = "keep it a warning (the review itself is not affected by it)"
    return f"{_FILTER} {kind.__name__} an error; add {line} to filterwarnings to {keeps}"


def message(exc: BaseException) -> str:
    """What happened and the fix: the warning's text, then :func:`hint`."""
    return f"{exc}\n\n{hint(exc)}\n"


@contextmanager
def reported(fail: Callable[[str], NoReturn]) -> Iterator[None]:
    """Run the block; a warning of this plugin made an error in it ends in ``fail``
    called with :func:`message` (``pytest.fail`` in a test, an error of the plugin
    elsewhere), so that it is shown as text, not as the plugin's source."""
    try:
        yield
    except Warning as exc:
        if not is_own(exc):
            raise
        fail(message(exc))


def usage_error(text: str) -> NoReturn:
    """Where the run cannot go on (its header, its collection): pytest's usage error,
    which pytest prints as ``ERROR: text``."""
    raise pytest.UsageError(text)
