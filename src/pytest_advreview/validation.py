"""A pydantic :class:`~pydantic.ValidationError` as the plugin's messages name it."""

from __future__ import annotations

from pydantic import ValidationError

__all__ = ["first_error"]


def first_error(exc: ValidationError, whole: str, *, more: bool = False) -> str:
    """``where: what`` of the first error (``whole`` names an empty location); ``more``
    adds how many errors follow it."""
    errors = exc.errors(include_url=False)
    where = ".".join(str(part) for part in errors[0]["loc"]) or whole
    rest = f" and {len(errors) - 1} more" if more and len(errors) > 1 else ""
    return f"{where}: {errors[0]['msg']}{rest}"
