"""pytest-advreview: adversarial AI reviews of plans and code changes as pytest items."""

from __future__ import annotations

from .models import Finding, Review, RunnerResult, Severity, Verdict

__all__ = ["Finding", "Review", "RunnerResult", "Severity", "Verdict"]
__version__ = "0.1.0.dev0"
