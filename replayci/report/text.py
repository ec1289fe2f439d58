"""Text helpers shared by the human-readable renderers."""
from __future__ import annotations

from typing import Any


def plain(text: str, **_: object) -> str:
    """The style of text without colour: the text itself, click.style's options ignored."""
    return text


def signed(value: Any, unit: str = "") -> str:
    """A change with its sign (+3, -0.5 ms); n/a when it is unknown."""
    if value is None:
        return "n/a"
    return (f"{value:+g}" if isinstance(value, float) else f"{value:+d}") + unit
