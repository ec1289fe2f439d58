"""The shape each keyword of the plain subset must have: what the generated checks and the
explanations rely on. Each function is the shape check of one row of the keyword table
(schema_keywords.KEYWORDS): (value, depth, walk) -> bool, where *walk* follows subschemas
(`walk.plain(sub, depth)`) and knows the root a `$ref` points into."""
from __future__ import annotations

import re
from typing import Any

from .schema_refs import MISSING, target
from .schema_values import TYPES

_INF = float("inf")
_DRAFT_2020_12 = ("https://json-schema.org/draft/2020-12/schema",
                  "https://json-schema.org/draft/2020-12/schema#")


def not_plain(value: Any, depth: int, walk) -> bool:
    """A keyword the plain subset leaves to jsonschema's metaschema check."""
    return False


def draft(value: Any, depth: int, walk) -> bool:
    """`$schema`: the default draft, named, is still plain."""
    return value in _DRAFT_2020_12


def type_names(value: Any, depth: int, walk) -> bool:
    if value.__class__ is str:
        return value in TYPES
    return value.__class__ is list and all(t.__class__ is str and t in TYPES for t in value)


def names(value: Any, depth: int, walk) -> bool:
    return value.__class__ is list and all(n.__class__ is str for n in value)


def a_list(value: Any, depth: int, walk) -> bool:
    return value.__class__ is list


def a_bool(value: Any, depth: int, walk) -> bool:
    return value.__class__ is bool


def count(value: Any, depth: int, walk) -> bool:
    return value.__class__ is int and value >= 0


def bound(value: Any, depth: int, walk) -> bool:
    return value.__class__ in (int, float) and value == value and value not in (_INF, -_INF)


def subschema(value: Any, depth: int, walk) -> bool:
    return walk.plain(value, depth + 1)


def subschemas(value: Any, depth: int, walk) -> bool:
    return value.__class__ is dict and all(walk.plain(sub, depth + 1) for sub in value.values())


def subschema_list(value: Any, depth: int, walk) -> bool:
    return value.__class__ is list and len(value) > 0 and all(walk.plain(sub, depth + 1) for sub in value)


def ref(value: Any, depth: int, walk) -> bool:
    """A reference to a plain subschema of the same schema by JSON pointer (the generated check
    writes it out in place); one that loops back through itself is left to jsonschema."""
    if value.__class__ is not str or not (value == "#" or value.startswith("#/")):
        return False
    found = target(walk.root, value)
    return found is not MISSING and walk.plain(found, depth + 1)


def regex(value: Any, depth: int, walk) -> bool:
    if value.__class__ is not str:
        return False
    try:
        re.compile(value)  # (cached by re)
    except re.error:
        return False
    return True
