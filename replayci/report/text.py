"""Text helpers shared by the human-readable renderers."""
from __future__ import annotations

import math
from typing import Any


def plain(text: str, **_: object) -> str:
    """The style of text without colour: the text itself, click.style's options ignored."""
    return text


def printable(text: str) -> str:
    """*text* as a stream can write it: half of a surrogate pair (a model or a tool may send one as
    a JSON escape, and it is no character) shown as its escape, \\ud800."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def signed(value: Any, unit: str = "") -> str:
    """A change with its sign (+3, -0.5 ms); n/a when it is unknown."""
    if value is None:
        return "n/a"
    return (f"{value:+g}" if isinstance(value, float) else f"{value:+d}") + unit


def is_number(value: Any) -> bool:
    """A finite int or float (booleans are not numbers here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def rate(value: Any) -> str:
    """A share as a percentage (97.5%); — when unknown."""
    return f"{value * 100:.1f}%" if is_number(value) else "—"


def usd(value: Any) -> str:
    """US dollars: under a tenth of a cent six decimals ($0.000136), or more for two significant
    digits ($0.0000012), four under a dollar ($0.0042), else two; — when unknown."""
    if not is_number(value):
        return "—"
    if 0 < abs(value) < 0.001:
        return f"${value:.{min(12, max(6, 1 - math.floor(math.log10(abs(value)))))}f}"
    if abs(value) < 0.001:
        return f"${value:.6f}"
    return f"${value:,.4f}" if abs(value) < 1 else f"${value:,.2f}"


def ms(value: Any) -> str:
    """A duration: 2.31 s, 840 ms, 4.5 ms; — when unknown."""
    if not is_number(value):
        return "—"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms" if value >= 10 else f"{value:.1f} ms"


def count(value: Any) -> str:
    """A whole number with thousands separators; — when unknown."""
    return f"{value:,.0f}" if is_number(value) else "—"


def location(case: dict) -> str:
    """Where a case of the report points a reader, the same in every report: a failed case's
    first failure's check (an assertion, an invariant, the case), else the case's line."""
    failures = case.get("failures") or ()
    if case.get("status") == "fail" and failures and failures[0].get("source"):
        return failures[0]["source"]
    return case.get("source") or ""


def sampling_text(sampling) -> str:
    """--repeat auto's spending: '130 runs where a fixed --repeat 20 makes 400 (32.5%) · $0.13 against
    $0.40 · 12 stable_pass · 3 flaky'."""
    text = (f"--repeat auto: {count(sampling.get('runs'))} runs where a fixed --repeat {sampling.get('max')} makes "
            f"{count(sampling.get('fixed_runs'))} ({rate(sampling.get('share'))})")
    if is_number(sampling.get("cost_usd")):
        text += f" · {usd(sampling['cost_usd'])} against {usd(sampling.get('fixed_cost_usd'))}"
    if is_number(sampling.get("command_runs")):  # check mode: the command ran in rounds
        text += (f" · the command ran {count(sampling['command_runs'])} times, "
                 f"{count(sampling.get('calls'))} calls against {count(sampling.get('fixed_calls'))}")
    labels = sampling.get("labels") or {}
    order = ("stable_pass", "stable_fail", "flaky", "undecided")
    parts = [f"{labels[k]} {k}" for k in (*order, *sorted(set(labels) - set(order))) if labels.get(k)]
    return " · ".join([text, *parts])
