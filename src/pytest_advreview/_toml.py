"""``tomllib``, or its backport ``tomli`` on Python 3.10: one import for every TOML reader."""

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["tomllib"]
