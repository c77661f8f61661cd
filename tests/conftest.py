"""Shared test configuration: the advreview testing kit's fixtures."""

from __future__ import annotations

pytest_plugins = ["pytest_advreview.testing.fixtures"]
