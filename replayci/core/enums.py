"""`TextEnum`: a str Enum whose members read, print and encode as their values, on every
Python replayci supports (3.10's str() and format() of a mixed-in Enum differ from 3.12's)."""
from __future__ import annotations

from enum import Enum


class TextEnum(str, Enum):
    """Members equal, hash, print, format and JSON-encode as their string values."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)
