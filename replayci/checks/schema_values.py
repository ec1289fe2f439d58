"""Values as JSON Schema sees them: the one table of type names, equality and uniqueness."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from ..core.jsonvalue import is_number, json_equal


class Outside(Exception):
    """The schema uses something outside the plain subset: jsonschema decides."""


def is_integer(value: Any) -> bool:
    return not isinstance(value, bool) and (isinstance(value, int) or
                                            (isinstance(value, float) and value.is_integer()))


class SchemaType(NamedTuple):
    """A JSON Schema type name: its test in generated code (of `{x}`) and as a function."""

    code: str
    accepts: Callable[[Any], bool]


TYPES = {
    "string": SchemaType("isinstance({x}, str)", lambda v: isinstance(v, str)),
    "object": SchemaType("isinstance({x}, dict)", lambda v: isinstance(v, dict)),
    "array": SchemaType("isinstance({x}, list)", lambda v: isinstance(v, list)),
    "boolean": SchemaType("isinstance({x}, bool)", lambda v: isinstance(v, bool)),
    "null": SchemaType("{x} is None", lambda v: v is None),
    "integer": SchemaType("_integer({x})", is_integer),
    "number": SchemaType("_number({x})", is_number),
}


def is_type(value: Any, name: Any) -> bool:
    """Whether *value* is of the type *name*; an unknown name is Outside (jsonschema refuses it)."""
    kind = TYPES.get(name) if isinstance(name, str) else None
    if kind is None:
        raise Outside
    return kind.accepts(value)


def any_equal(value: Any, allowed: list) -> bool:
    return any(json_equal(value, a) for a in allowed)


def _unique_key(value: Any) -> Any:
    """A hashable key equal for JSON-equal values (1 and 1.0 alike, true and 1 not)."""
    if isinstance(value, bool) or value is None:
        return (0, value)
    if isinstance(value, (int, float)):
        return (1, int(value) if isinstance(value, float) and value.is_integer() else value)
    if isinstance(value, list):
        return (2, tuple(_unique_key(v) for v in value))
    if isinstance(value, dict):
        return (3, frozenset((k, _unique_key(v)) for k, v in value.items()))
    return (4, value)


def unique(items: list) -> bool:
    """`uniqueItems` in linear time (a pairwise comparison takes minutes on a large array)."""
    return len({_unique_key(v) for v in items}) == len(items)


def cut_repr(value: Any, limit: int = 200) -> str:
    """repr(value), cut at *limit* characters (a large array is not repeated whole)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
