"""RFC 9535 JSONPath: compiled once, evaluated many times.

Compilation and full evaluation use jsonpath-rfc9535 (passes the whole RFC compliance
suite; jsonpath-ng does not). Plain paths of names, indexes and simple equality filters, by
far the most common in contracts, are parsed here and take a direct walk that gives the same
answer without the library (not even imported for them).
"""
from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ..core.memo import Memo
from ..core.timelimit import REGEX_TIMEOUT_S, too_slow

# The plain subset of RFC 9535: everything these accept is valid JSONPath (tested against the
# library and the compliance suite), so such a path needs no library at all. Quoted names and
# strings here have no escapes and no control characters; indexes are ASCII digits in the
# I-JSON range, without leading zeros or "-0".
# (No surrogate by a lookahead rather than in the class: a class of these ranges compiles to a
# 64K-character table, ~0.4 ms at every start-up for the three below.)
_NO_SURROGATE = "(?![\ud800-\udfff])"
_NAME_CHARS = "(?:" + _NO_SURROGATE + "[^'\\\\\x00-\x1f])*"
_SEGMENT = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(-?[0-9]+)\]|\['(" + _NAME_CHARS + r")'\]")
_cache: Memo = Memo(10_000)


# A `..` segment visits every value under the node it starts from, and each further `..` starts
# again from every value the one before it selected: on arguments a model made deep or huge that
# is unbounded work. One evaluation visits at most this many values in its `..` segments, none
# deeper than this below where the segment starts; past them it stops with DescentLimit.
MAX_DESCENT_NODES = 250_000
MAX_DESCENT_DEPTH = 100


class JSONPathError(ValueError):
    """An invalid JSONPath expression."""


class DescentLimit(ValueError):
    """A `..` segment went past MAX_DESCENT_NODES or MAX_DESCENT_DEPTH: no answer."""


_budget = threading.local()  # the values the current evaluation (of this thread) may still visit


class CompiledPath:
    """A compiled JSONPath; ``find(document)`` returns the matched values in document order."""

    __slots__ = ("find", "text")

    def __init__(self, text: str, find: Callable[[Any], list]):
        self.text = text
        self.find = find

    def __repr__(self) -> str:
        return f"CompiledPath({self.text!r})"


_FILTER = re.compile(
    r"\[\?[ \t\n\r]*@((?:\.[A-Za-z_][A-Za-z0-9_]*|\['" + _NAME_CHARS + r"'\]|\[-?[0-9]+\])+)"
    r"[ \t\n\r]*(==|!=)[ \t\n\r]*"
    r"(?:'(" + _NAME_CHARS + r")'|\"((?:" + _NO_SURROGATE + r"[^\"\\\x00-\x1f])*)\"|(-?(?:0|[1-9][0-9]{0,14}))"
    r"|(true|false|null))[ \t\n\r]*\]")
_LITERALS = {"true": True, "false": False, "null": None}


class _All:
    """The wildcard selector (`[*]` or `.*`): every element or member value."""

    __slots__ = ()


_ALL = _All()
_MAX_INDEX = 2**53 - 1


class _Filter:
    """[?@<singular query> == <literal>] (or !=): the one filter form the fast walk takes."""

    __slots__ = ("literal", "negate", "steps")

    def __init__(self, steps: list, negate: bool, literal: Any):
        self.steps, self.negate, self.literal = steps, negate, literal

    def holds(self, node: Any) -> bool:
        for step in self.steps:  # the singular query: one value or Nothing
            if type(step) is int:
                if type(node) is not list:
                    return self.negate
                i = step + len(node) if step < 0 else step
                if not 0 <= i < len(node):
                    return self.negate
                node = node[i]
            else:
                if type(node) is not dict or step not in node:
                    return self.negate
                node = node[step]
        lit = self.literal
        if type(lit) is str:
            equal = type(node) is str and node == lit
        elif type(lit) is int:
            equal = type(node) in (int, float) and node == lit
        else:  # true, false, null
            equal = node is lit
        return equal != self.negate


def _steps(text: str, pos: int, *, filters: bool) -> list | None:
    """The name / index (/ filter) steps of *text* from *pos*, or None for anything richer."""
    steps: list = []
    while pos < len(text):
        m = _SEGMENT.match(text, pos)
        if m is not None:
            name, index, quoted = m.groups()
            if index is not None:
                digits = index.lstrip("-")
                if (digits.startswith("0") and index != "0") or len(digits) > 16 \
                        or abs(int(index)) > _MAX_INDEX:
                    return None  # leading zeros, -0, out of range: the library says why
                steps.append(int(index))
            else:
                steps.append(name if name is not None else quoted)
            pos = m.end()
            continue
        if filters and text.startswith((".*", "[*]"), pos):  # (not in a singular query)
            steps.append(_ALL)
            pos += 2 if text[pos] == "." else 3
            continue
        m = _FILTER.match(text, pos) if filters else None
        if m is None:
            return None
        relative = _steps(m.group(1), 0, filters=False)
        if relative is None:
            return None
        single, double, number, word = m.group(3, 4, 5, 6)
        literal = (single if single is not None else double if double is not None
                   else int(number) if number is not None else _LITERALS[word])
        if number is not None and number.startswith("-0"):
            return None
        steps.append(_Filter(relative, m.group(2) == "!=", literal))
        pos = m.end()
    return steps


def _simple_steps(text: str) -> list | None:
    """The steps of a plain path like $.a[0].b, $.calls[*].name or $.calls[?@.name == 'x'].args,
    or None for anything richer (the library walks those)."""
    if not text.startswith("$"):
        return None
    return _steps(text, 1, filters=True)


def _walker(steps: list) -> Callable[[Any], list]:
    if any(type(step) is _Filter or step is _ALL for step in steps):
        return _filter_walker(steps)

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


def _filter_walker(steps: list) -> Callable[[Any], list]:
    """find() for a path with wildcards or filters: each selector picks from the nodes the one
    before it picked."""
    selectors = _selectors(steps)

    def find(document: Any) -> list:
        nodes = [document]
        for select in selectors:
            nodes = select(nodes)
            if not nodes:
                break
        return nodes

    return find


def _selectors(steps: list) -> list[Callable[[list], list]]:
    """One selector per step, but consecutive names share one (a walk down from each node)."""
    groups: list = []
    for step in steps:
        if type(step) is str and groups and type(groups[-1]) is list:
            groups[-1].append(step)
        else:
            groups.append([step] if type(step) is str else step)
    return [_names_selector(tuple(group)) if type(group) is list else _selector(group) for group in groups]


def _selector(step: Any) -> Callable[[list], list]:
    """The selector of a wildcard, a filter or an index."""
    if step is _ALL:
        return _select_all
    if type(step) is _Filter:
        return _filter_selector(step)
    return _index_selector(step)


def _select_all(nodes: list) -> list:
    """`[*]`: every element or member value of each node."""
    out: list = []
    for node in nodes:
        if type(node) is list:
            out += node
        elif type(node) is dict:
            out += node.values()
    return out


def _filter_selector(step: _Filter) -> Callable[[list], list]:
    """`[?...]`: the elements or member values of each node that the filter holds for."""
    holds = step.holds

    def select(nodes: list) -> list:
        out: list = []
        for node in nodes:
            if type(node) is list:
                out += [child for child in node if holds(child)]
            elif type(node) is dict:
                out += [child for child in node.values() if holds(child)]
        return out

    return select


def _index_selector(step: int) -> Callable[[list], list]:
    """`[i]`: each list node's element at *step* (negative: from the end)."""
    def select(nodes: list) -> list:
        out = []
        for node in nodes:
            if type(node) is list:
                i = step + len(node) if step < 0 else step
                if 0 <= i < len(node):
                    out.append(node[i])
        return out

    return select


def _names_selector(names: tuple) -> Callable[[list], list]:
    """Each node's member at *names*, walked down one name after another."""
    if len(names) == 1:
        name = names[0]

        def select_one(nodes: list) -> list:
            out = []
            for node in nodes:
                if type(node) is dict and name in node:
                    out.append(node[name])
            return out

        return select_one

    def select(nodes: list) -> list:
        out = []
        for node in nodes:
            for step in names:
                if type(node) is not dict or step not in node:
                    break
                node = node[step]
            else:
                out.append(node)
        return out

    return select


def compile_path(text: str) -> CompiledPath:
    """Compile a JSONPath once; raises JSONPathError when it is not valid RFC 9535."""
    cached = _cache.get(text)
    if cached is not None:
        return cached
    if not isinstance(text, str):
        raise JSONPathError(f"a JSONPath must be a string, got {type(text).__name__}")
    steps = _simple_steps(text)
    if steps is not None:  # valid by construction: no need to load the library
        find = _walker(steps)
    else:
        try:
            compiled = _library().compile(text)
        except Exception as exc:  # the library raises its own error classes
            raise JSONPathError(_message(exc)) from None
        library_find = compiled.finditer

        def find(document: Any) -> list:
            _budget.left = MAX_DESCENT_NODES
            return [node.value for node in library_find(document)]

    return _cache.put(text, CompiledPath(text, find))


_env: list = []  # [the library's environment], made on first use


def _library() -> Any:
    """The library's environment for every path replayci evaluates: `..` segments walk within
    the bounds above, and match() and search() have the `regex` operator's time limit."""
    if not _env:
        _env.append(_make_environment())
    return _env[0]


def _make_environment() -> Any:
    """The library's environment with a bounded `..` and bounded match() and search()."""
    import jsonpath_rfc9535  # why: the library loads only for paths the direct walk does not take
    from jsonpath_rfc9535.parse import Parser
    from jsonpath_rfc9535.segments import JSONPathRecursiveDescentSegment

    class Descent(JSONPathRecursiveDescentSegment):
        __slots__ = ()

        def _visit(self, node: Any, depth: int = 1) -> Iterator[Any]:
            return _descendants(node)

    class BoundedParser(Parser):
        def parse_query(self, stream: Any, *, in_filter: bool = False) -> Iterator[Any]:
            for segment in super().parse_query(stream, in_filter=in_filter):
                if type(segment) is JSONPathRecursiveDescentSegment:
                    segment = Descent(env=segment.env, token=segment.token, selectors=segment.selectors)
                yield segment

    class Environment(jsonpath_rfc9535.JSONPathEnvironment):
        parser_class = BoundedParser

    env = Environment()
    _bound_regex_functions(env.function_extensions)
    return env


def _descendants(start: Any) -> Iterator[Any]:
    """*start* and every container under it, in document order (depth first, pre-order, as
    RFC 9535 orders them), within the evaluation's budget; iterative, so depth costs no stack."""
    stack = [(start, 1)]
    while stack:
        node, depth = stack.pop()
        _budget.left = left = getattr(_budget, "left", MAX_DESCENT_NODES) - 1
        if left < 0:
            raise DescentLimit(f"a `..` segment would visit more than {MAX_DESCENT_NODES:,} values")
        yield node
        value = node.value
        items = value.items() if type(value) is dict else enumerate(value) if type(value) is list else ()
        children = [(node.new_child(v, k, node), depth + 1) for k, v in items if isinstance(v, (dict, list))]
        if children and depth >= MAX_DESCENT_DEPTH:
            raise DescentLimit(f"a `..` segment met values nested deeper than {MAX_DESCENT_DEPTH} levels")
        stack.extend(reversed(children))


def _bound_regex_functions(functions: dict) -> None:
    """The library's match() and search() filter functions use the regex module with no time
    limit: a catastrophic I-Regexp in a contract's path could hang a run. These apply the
    `regex` operator's limit; a timeout makes the case `error` (CaseError)."""
    import regex  # why: (the three) loaded with the library, see _make_environment
    from iregexp_check import check
    from jsonpath_rfc9535.function_extensions import match, search
    from jsonpath_rfc9535.function_extensions._pattern import map_re

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
                    raise too_slow(f"JSONPath {name}() pattern", pattern, len(string)) from None

        return Bounded()

    functions["match"] = bounded("match", match.Match,
                                 lambda p, s: regex.fullmatch(p, s, timeout=REGEX_TIMEOUT_S))
    functions["search"] = bounded("search", search.Search,
                                  lambda p, s: regex.search(p, s, regex.VERSION1, timeout=REGEX_TIMEOUT_S))


def _message(exc: Exception) -> str:
    msg = str(exc).strip() or type(exc).__name__
    return msg.splitlines()[0]


def locations(path: str, document: Any) -> list[tuple]:
    """Where a valid JSONPath matches in *document*: each match's keys and indexes from the
    root, in document order."""
    _budget.left = MAX_DESCENT_NODES
    return [tuple(node.location) for node in _library().compile(path).finditer(document)]


def query(path: str, document: Any) -> list:
    """The values *path* matches in *document*, in document order."""
    return compile_path(path).find(document)


def near_miss(path: str, document: Any) -> str | None:
    """For a plain path (names and indexes) that matches nothing in *document*: the same path
    with its first missing name replaced by the closest key where it was looked for
    (``$.toolcalls[0]`` -> ``$.tool_calls[0]``), or None when nothing is close."""
    steps = _steps(path, 1, filters=False) if path.startswith("$") else None
    node = document
    for n, step in enumerate(steps or ()):
        if type(step) is int:
            if not isinstance(node, list) or not -len(node) <= step < len(node):
                return None
            node = node[step]
            continue
        if not isinstance(node, dict):
            return None
        if step not in node:
            import difflib  # why: asked only when a name is missing where it was looked for

            close = difflib.get_close_matches(step, [k for k in node if isinstance(k, str)], n=1, cutoff=0.6)
            return _path_text(steps[:n] + [close[0]] + steps[n + 1:]) if close else None
        node = node[step]
    return None


def _path_text(steps: list) -> str:
    """Name and index steps written back as a path."""
    out = ["$"]
    for step in steps:
        if type(step) is int:
            out.append(f"[{step}]")
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", step):
            out.append(f".{step}")
        else:
            out.append("['" + step + "']")
    return "".join(out)
