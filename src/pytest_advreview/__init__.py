"""pytest-advreview: adversarial AI reviews of plans and code changes as pytest items."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .models import Finding, Review, RunnerResult, Severity, Verdict

__all__ = ["Finding", "Review", "RunnerResult", "Severity", "Verdict"]
__version__ = "0.1.0.dev0"


def __getattr__(name: str) -> Any:
    # The models load pydantic; every pytest start imports this package (the pytest11
    # entry point), so they are imported on first use, not here (PEP 562).
    if name in __all__:
        from . import models

        return getattr(models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
