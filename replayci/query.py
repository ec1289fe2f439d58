"""RFC 9535 JSONPath: compiled once, evaluated many times.

Compilation and full evaluation use jsonpath-rfc9535 (passes the whole RFC compliance
suite; jsonpath-ng does not). Plain paths of names and indexes, by far the most common in
contracts, take a direct walk that gives the same answer without the library's node objects.
"""
from __future__ import annotations

import re
from typing import Any, Callable

_SEGMENT = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(-?\d+)\]|\['([^'\\]*)'\]")
_cache: dict[str, "CompiledPath"] = {}


class JSONPathError(ValueError):
    """An invalid JSONPath expression."""


class CompiledPath:
    """A compiled JSONPath; ``find(document)`` returns the matched values in document order."""

    __slots__ = ("text", "find")

    def __init__(self, text: str, find: Callable[[Any], list]):
        self.text = text
        self.find = find

    def __repr__(self) -> str:
        return f"CompiledPath({self.text!r})"


def _simple_steps(text: str) -> list | None:
    """The name/index steps of a plain path like $.a[0].b, or None for anything richer."""
    if not text.startswith("$"):
        return None
    steps: list = []
    pos = 1
    while pos < len(text):
        m = _SEGMENT.match(text, pos)
        if m is None:
            return None
        name, index, quoted = m.groups()
        if index is not None:
            if len(index.lstrip("-")) > 1 and index.lstrip("-").startswith("0"):
                return None  # leading zeros are invalid: let the library refuse them
            steps.append(int(index))
        else:
            steps.append(name if name is not None else quoted)
        pos = m.end()
    return steps


def _walker(steps: list) -> Callable[[Any], list]:
    def find(document: Any) -> list:
        node = document
        for step in steps:
            if isinstance(step, int):
                if type(node) is not list:
                    return []
                n = len(node)
                i = step + n if step < 0 else step
                if not 0 <= i < n:
                    return []
                node = node[i]
            else:
                if type(node) is not dict or step not in node:
                    return []
                node = node[step]
        return [node]

    return find


def compile_path(text: str) -> CompiledPath:
    """Compile a JSONPath once; raises JSONPathError when it is not valid RFC 9535."""
    cached = _cache.get(text)
    if cached is not None:
        return cached
    if not isinstance(text, str):
        raise JSONPathError(f"a JSONPath must be a string, got {type(text).__name__}")
    import jsonpath_rfc9535

    try:
        compiled = jsonpath_rfc9535.compile(text)
    except Exception as exc:  # the library raises its own error classes
        raise JSONPathError(_message(exc)) from None
    steps = _simple_steps(text)
    if steps is not None:
        find = _walker(steps)
    else:
        library_find = compiled.find

        def find(document: Any) -> list:
            return [node.value for node in library_find(document)]

    result = CompiledPath(text, find)
    if len(_cache) < 10_000:
        _cache[text] = result
    return result


def _message(exc: Exception) -> str:
    msg = str(exc).strip() or type(exc).__name__
    return msg.splitlines()[0]


def query(path: str, document: Any) -> list:
    """The values *path* matches in *document*, in document order."""
    return compile_path(path).find(document)
