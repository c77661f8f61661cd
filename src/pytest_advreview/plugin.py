"""The ``pytest11`` entry point: options, hookspecs and sub-plugin registration only."""

from __future__ import annotations
