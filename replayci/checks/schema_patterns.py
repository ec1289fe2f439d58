"""JSON Schema `pattern`: searched under the regex time limit, or by re when it cannot take long."""
from __future__ import annotations

import re

from ..core.memo import Memo
from ..core.timelimit import REGEX_TIMEOUT_S, too_slow


def search(pattern, text: str):
    """A JSON Schema `pattern` search (a string or a compiled regex) under the regex time
    limit: a catastrophic pattern on a long string makes the case `error` (CaseError), it
    never hangs the run."""
    try:
        if isinstance(pattern, str):
            plain = straight_pattern(pattern)
            if plain is not None:
                return plain.search(text)
            import regex  # loaded only when a schema has a pattern that can backtrack

            return regex.search(pattern, text, timeout=REGEX_TIMEOUT_S)
        if isinstance(pattern, re.Pattern):  # straight_pattern's: no time limit needed
            return pattern.search(text)
        return pattern.search(text, timeout=REGEX_TIMEOUT_S)
    except TimeoutError:
        shown = pattern if isinstance(pattern, str) else pattern.pattern
        raise too_slow("JSON Schema pattern", shown, len(text)) from None


# What a straight pattern may hold (re's parsed form): single characters, classes of
# characters and ranges, `.`, digits, the anchors ^ $ \\A \\Z, and counts of these.
_STRAIGHT_ATOMS = {"LITERAL", "NOT_LITERAL", "ANY", "IN"}
_STRAIGHT_IN = {"LITERAL", "RANGE", "NEGATE", "CATEGORY"}
_STRAIGHT_CATEGORIES = {"CATEGORY_DIGIT", "CATEGORY_NOT_DIGIT"}
_STRAIGHT_AT = {"AT_BEGINNING", "AT_END", "AT_BEGINNING_STRING", "AT_END_STRING"}
_straight: Memo = Memo()


def straight_pattern(pattern: str) -> re.Pattern | None:
    """*pattern* compiled by re when its search cannot take long: anchored at the start (^ or
    \\A), with no alternation, group, look-around, back reference, flag or \\w-like class,
    and every repeat one of a single character or class, of a fixed count but for at most one
    (`^[A-Z]{3}$`, `^[A-Z0-9]{10,22}$`, `^\\d{4}-\\d{2}-\\d{2}$`). Its one attempt then
    tries at most 1,000 lengths of a tail of at most 1,000 characters, and re finds what regex
    finds, so such a pattern needs neither regex's time limit nor regex (~13 ms to import).
    None for any other."""
    found = _straight.get(pattern)
    if found is None:
        found = _straight.put(pattern, _straight_compile(pattern) or False)
    return found or None


def _straight_compile(pattern: str) -> re.Pattern | None:
    try:
        try:
            from re import _parser as parser  # why: re's own parse of the pattern (3.11+)
        except ImportError:  # Python 3.10
            import sre_parse as parser
        parsed = parser.parse(pattern)
        items = list(parsed)
        if parsed.state.flags & ~re.UNICODE or not items or str(items[0][0]) != "AT" \
                or str(items[0][1]) not in ("AT_BEGINNING", "AT_BEGINNING_STRING"):
            return None
        kinds = [_straight_item(op, av) for op, av in items]
        length = sum(av[1] if str(op) in ("MAX_REPEAT", "MIN_REPEAT") else 1 for op, av in items)
        if None in kinds or kinds.count("variable") > 1 or length > 1000:
            return None
        return re.compile(pattern)
    except Exception:  # anything re does not parse the same way: regex decides
        return None


def _straight_item(op, av) -> str | None:
    """"fixed" or "variable" (a repeat of a range of counts) for what a straight pattern may
    hold, else None."""
    name = str(op)
    if name == "AT":
        return "fixed" if str(av) in _STRAIGHT_AT else None
    if name in ("MAX_REPEAT", "MIN_REPEAT"):
        low, high, item = av
        if high > 1000 or len(item) != 1 or not _straight_atom(*item[0]):
            return None
        return "fixed" if low == high else "variable"
    return "fixed" if _straight_atom(op, av) else None


def _straight_atom(op, av) -> bool:
    name = str(op)
    if name not in _STRAIGHT_ATOMS:
        return False
    if name != "IN":
        return True
    return all(str(o) in _STRAIGHT_IN and (str(o) != "CATEGORY" or str(a) in _STRAIGHT_CATEGORIES)
               for o, a in av)
