"""What a section's constructor returns (its value and its problems, reported together by the
pack), and the check of a mapping's keys and value types against its table in the vocabulary
(the tables the published schemas are generated from)."""
from __future__ import annotations

from typing import Any, Generic, TypeVar

from ..core.errors import Problem
from ..core.jsonvalue import json_type, show
from . import vocabulary as spec
from .sources import Located


def utf8_name(name: str) -> bool:
    """Whether a file name read from disk is valid UTF-8 (not surrogate-escaped bytes)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


T = TypeVar("T")


class Built(Generic[T]):
    """What a section's constructor returns: its value (None when it cannot be built) and the
    problems it found, for the caller to report with the others. (A plain class: a large pack
    builds several a case, and a frozen dataclass's __init__ costs three times as much.)"""

    __slots__ = ("problems", "value")

    def __init__(self, value: T | None, problems: tuple[Problem, ...] | list[Problem] = ()) -> None:
        self.value = value
        self.problems = problems

    def __repr__(self) -> str:
        return f"Built({self.value!r}, {self.problems!r})"

    @staticmethod
    def refused(doc: Located, path: tuple, message: str) -> Built[Any]:
        """No value, for one located problem."""
        return Built(None, (doc.problem(path, message),))


def mapping_problems(doc: Located, path: tuple, value: Any, table: dict, required: tuple = ()) -> list[Problem]:
    """The problems of a mapping's keys and flat value types against its table in the vocabulary;
    none in a document its schema accepted (doc.checked: the schema says all this and more)."""
    if doc.checked:
        return []
    if not isinstance(value, dict):
        return [doc.problem(path, f"expected a mapping, got {kind_of(value)}")]
    out = []
    for key, item in value.items():
        if key not in table:
            out.append(doc.problem(path + (key,), spec.unknown_key_message(key, table)))
            continue
        fragment = table[key]
        why = spec.check_value(fragment, item)
        if why is not None:
            out.append(doc.problem(path + (key,), spec.mismatch(why, shown(item))))
        elif isinstance(item, dict) and "properties" in fragment:
            out += mapping_problems(doc, path + (key,), item, fragment["properties"])
        elif isinstance(item, dict) and "properties" in (fragment.get("additionalProperties") or {}):
            entry = fragment["additionalProperties"]  # a mapping of names to tables (mcp_servers)
            for name, sub in item.items():
                why = spec.check_value(entry, sub)
                if why is not None:
                    out.append(doc.problem(path + (key, name), spec.mismatch(why, shown(sub))))
                else:
                    out += mapping_problems(doc, path + (key, name), sub, entry["properties"])
    for key in required:
        if key not in value:
            out.append(doc.problem(path, f"missing required key '{key}'"))
    return out


def kind_of(value: Any) -> str:
    """A value's type as a message names it: "a mapping", "a list", "a string", "nothing"."""
    return {"object": "a mapping", "array": "a list"}.get(json_type(value), f"a {json_type(value)}") \
        if value is not None else "nothing"


def shown(value: Any) -> str:
    return show(value, 60)
