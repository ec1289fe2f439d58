"""Grounded numbers: every number a final answer states must come from what the model was given
(tool results, request messages), compared as values."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .failure import Classification, Failure

if TYPE_CHECKING:
    from decimal import Decimal

# A number standing on its own: not glued to a word or id (TP1351, call_7, v2), with optional
# thousands separators and decimals (1,234.50). The patterns are compiled (and cached by re) on
# first use: most packs never ground numbers.
_NUMBER = r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d]|[A-Za-z_]*\d)"
_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
          r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_ORD = r"(?:st|nd|rd|th)"
# Dates, times and ordinals need not be grounded: the model may restate them in its own words.
_EXEMPT = "(?i)" + "|".join((
    r"\b\d{4}-\d{1,2}-\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b",
    r"\b\d{1,4}[/.]\d{1,2}[/.]\d{1,4}\b",
    r"\b\d{1,2}:\d{2}(?::\d{2})?(?:\s*[ap]\.?m\.?)?",
    r"\b\d{1,2}\s*[ap]\.?m\.?(?!\w)",
    rf"\b{_MONTH}\s+\d{{1,2}}{_ORD}?(?:,?\s+\d{{4}})?\b",
    rf"\b\d{{1,2}}{_ORD}?\s+(?:of\s+)?{_MONTH}(?:,?\s+\d{{4}})?\b",
    rf"\b\d+{_ORD}\b",
))


def _value(text: str) -> Decimal | None:
    from decimal import Decimal, InvalidOperation  # why: only packs that ground numbers load decimal

    try:
        return Decimal(text.replace(",", "")).normalize()
    except InvalidOperation:
        return None


def stated_numbers(text: str) -> list[tuple[str, Decimal]]:
    """The numbers *text* states (as written, as a value), dates, times and ordinals left out."""
    plain = re.sub(_EXEMPT, " ", text)
    out = []
    for m in re.finditer(_NUMBER, plain):
        value = _value(m.group())
        if value is not None:
            out.append((m.group(), value))
    return out


def numbers_in(value: Any, into: set[Decimal] | None = None) -> set[Decimal]:
    """Every number in a JSON value: its numbers and the numbers written in its strings."""
    found = set() if into is None else into
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, bool) or v is None:
            continue
        if isinstance(v, (int, float)):
            number = _value(repr(v)) if v == v and abs(v) != float("inf") else None
            if number is not None:
                found.add(abs(number))
        elif isinstance(v, str):
            # Dates and ids in a result still ground the numbers written in them.
            found.update(n for n in map(_value, re.findall(_NUMBER, v)) if n is not None)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return found


def ungrounded_numbers(final: dict | None, request: dict, tool_results: list, source: str) -> list[Failure]:
    """invariant_violation (check ungrounded_number): numbers in the final text that appear in
    none of the tool results or request messages."""
    text = (final or {}).get("content")
    if not isinstance(text, str) or not (final or {}).get("success", True):
        return []
    stated = stated_numbers(text)
    if not stated:
        return []
    grounded = numbers_in([request.get("messages"), request.get("system"), request.get("input"),
                           request.get("instructions"), tool_results])
    missing = list(dict.fromkeys(written for written, value in stated if abs(value) not in grounded))
    if not missing:
        return []
    return [Failure(Classification.INVARIANT_VIOLATION,
                    f"the final text states {', '.join(missing)}, found in no tool result or request "
                    "message (grounded_numbers)", path="$.content", operator="ungrounded_number",
                    expected=None, actual=", ".join(missing), source=source)]
