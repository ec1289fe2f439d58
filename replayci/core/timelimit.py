"""The one time limit for regular expressions a pack or a model can make slow, and its message."""
from __future__ import annotations

from .errors import CaseError

REGEX_TIMEOUT_S = 1.0


def too_slow(what: str, pattern: str, length: int) -> CaseError:
    """The error for *what* (e.g. "regex", "JSON Schema pattern") running past the limit."""
    return CaseError(
        f"{what} {pattern!r} took longer than {REGEX_TIMEOUT_S:g} s on a {length:,}-character "
        "string (catastrophic backtracking?): simplify the pattern")
