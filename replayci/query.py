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

    if not _bounded:
        _bounded_regex_functions()
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


_bounded: list = []  # [True] once match() and search() are bounded


def _bounded_regex_functions() -> None:
    """The library's match() and search() filter functions use the regex module with no time
    limit: a catastrophic I-Regexp in a contract's path could hang a run. These apply the
    `regex` operator's limit; a timeout makes the case `error` (CaseError)."""
    import jsonpath_rfc9535
    import regex
    from iregexp_check import check
    from jsonpath_rfc9535.function_extensions import match, search
    from jsonpath_rfc9535.function_extensions._pattern import map_re

    from .errors import CaseError
    from .invariants import REGEX_TIMEOUT_S

    def bounded(name: str, base: type, run: Callable[[str, str], Any]) -> Any:
        class Bounded(base):  # type: ignore[misc, valid-type]
            def __call__(self, string: str, pattern: object) -> bool:
                if not isinstance(pattern, str) or not isinstance(string, str) or not check(pattern):
                    return False
                try:
                    return bool(run(map_re(pattern), string))
                except regex.error:
                    return False
                except TimeoutError:
                    raise CaseError(
                        f"JSONPath {name}() pattern {pattern!r} took longer than "
                        f"{REGEX_TIMEOUT_S:g} s on a {len(string):,}-character string "
                        "(catastrophic backtracking?): simplify the pattern") from None

        return Bounded()

    env = jsonpath_rfc9535.DEFAULT_ENV.function_extensions
    env["match"] = bounded("match", match.Match,
                           lambda p, s: regex.fullmatch(p, s, timeout=REGEX_TIMEOUT_S))
    env["search"] = bounded("search", search.Search,
                            lambda p, s: regex.search(p, s, regex.VERSION1, timeout=REGEX_TIMEOUT_S))
    _bounded.append(True)


def _message(exc: Exception) -> str:
    msg = str(exc).strip() or type(exc).__name__
    return msg.splitlines()[0]


def query(path: str, document: Any) -> list:
    """The values *path* matches in *document*, in document order."""
    return compile_path(path).find(document)
