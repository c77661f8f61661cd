from shopflags.client import FlagClient

__all__ = ["FlagClient"]
