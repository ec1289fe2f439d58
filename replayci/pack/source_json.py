"""JSON with duplicate-key and NaN checks: the C decoder's fast path, and positions worked out
only when a problem must be reported."""
from __future__ import annotations

import bisect
import json
import math
import re
from typing import Any

from ..core.errors import ConfigError, Problem
from .source_text import DEFAULT_MAX_JSON_BYTES, Located, Path, cut, format_path, read_text


class _DuplicateKey(ValueError):
    pass


class NotJSON(ValueError):
    """NaN / Infinity: Python's json accepts them, JSON does not."""


def _constant(name: str):
    raise NotJSON(name)


def unique_pairs(pairs):
    d = dict(pairs)
    if len(d) != len(pairs):
        raise _DuplicateKey()
    return d


def finite(text: str) -> float:
    """A float that JSON can hold: 1e999 would become an infinity."""
    value = float(text)
    if not math.isfinite(value):
        raise NotJSON(text)
    return value


_fast_decode = json.JSONDecoder(object_pairs_hook=unique_pairs, parse_constant=_constant,
                                parse_float=finite).decode


def parse_json(text: str, display: str) -> Any:
    """Parse JSON, refusing duplicate keys and excessive nesting, with located errors."""
    try:
        value = _fast_decode(text)
    except (_DuplicateKey, NotJSON):
        pass  # the located parse below says where
    except RecursionError:
        # The located parse stops at its own depth limit and says where.
        try:
            locate_json(text, display)
        except RecursionError:
            pass
        raise ConfigError(Problem(display, None, None,
                                  "nesting too deep (the limit is the interpreter's recursion limit)")) from None
    except json.JSONDecodeError as exc:
        before = text[:exc.pos].rstrip(_WS)
        if before.endswith(",") and text[exc.pos:exc.pos + 1] in ("}", "]"):
            # a trailing comma: name the comma, not the bracket after it
            pos = len(before) - 1
            line = text.count("\n", 0, pos) + 1
            col = pos - (text.rfind("\n", 0, pos) + 1) + 1
            raise ConfigError(Problem(display, line, col, "invalid JSON: trailing comma before "
                                      f"'{text[exc.pos]}' (JSON allows none)")) from None
        raise ConfigError(Problem(display, exc.lineno, exc.colno, f"invalid JSON: {exc.msg}")) from None
    except ValueError:
        pass  # an integer too long for int(): the located parse below says where
    else:
        if "\\u" not in text or SURROGATE_ESCAPE.search(text) is None:
            return value
        located = locate_json(text, display)  # raises on what it finds
        if not located.problems:
            return value
        raise ConfigError(located.problems)
    located = locate_json(text, display)
    raise ConfigError(located.problems or [Problem(display, None, None, "invalid JSON")])


def load_json(path: str, display: str, *, max_bytes: int = DEFAULT_MAX_JSON_BYTES) -> Any:
    """Read and parse a JSON file."""
    return parse_json(read_text(path, display, max_bytes=max_bytes), display)


_WS = " \t\n\r"
WS_CHARS = tuple(_WS)  # not a str: "" is in every str


# The C decoder accepts escaped lone surrogates ("\ud800": text that is not Unicode and cannot
# be written as UTF-8). A text with a surrogate escape gets the slow, located parse, which
# decides (a proper pair is fine).
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_scanstring = json.decoder.scanstring
_number = json.scanner.NUMBER_RE


class _JsonLocator:
    """One locate_json call: the text, where its lines start and the marks found so far."""

    def __init__(self, text: str, doc: Located, max_depth: int) -> None:
        self.text = text
        self.doc = doc
        self.marks = doc.marks
        self.max_depth = max_depth
        self.line_starts = [0]
        for i, ch in enumerate(text):
            if ch == "\n":
                self.line_starts.append(i + 1)

    def pos(self, i: int) -> tuple[int, int]:
        ln = bisect.bisect_right(self.line_starts, i) - 1
        return ln + 1, i - self.line_starts[ln] + 1

    def fail(self, i: int, message: str) -> ConfigError:
        return ConfigError(Problem(self.doc.file, *self.pos(i), message))

    def skip(self, i: int) -> int:
        text = self.text
        while i < len(text) and text[i] in _WS:
            i += 1
        return i

    def string(self, i: int) -> tuple[str, int]:
        """The string whose opening quote is at *i*; a lone surrogate is refused."""
        s, end = _scanstring(self.text, i + 1)
        lone = _LONE_SURROGATE.search(s)
        if lone:
            raise self.fail(i, f"invalid JSON: \\u{ord(lone.group()):04x} is half of a surrogate pair, "
                            "not a character (text that cannot be saved as UTF-8)")
        return s, end

    def value(self, i: int, path: Path, depth: int) -> tuple[Any, int]:
        """The value starting at *i* (after blanks) and where it ends; containers recurse here
        directly, one frame per level, so the depth limit is met before the interpreter's."""
        if depth > self.max_depth:
            raise self.fail(i, f"nesting deeper than {self.max_depth} levels")
        text = self.text
        i = self.skip(i)
        self.marks.setdefault(path, self.pos(i))
        ch = text[i:i + 1]
        if ch == "{":
            obj: dict = {}
            i = self.skip(i + 1)
            if text[i:i + 1] == "}":
                return obj, i + 1
            while True:
                i = self.skip(i)
                kpos = self.pos(i)
                key, i = self.string(i)
                i = self.skip(i) + 1  # ':'
                sub = path + (key,)
                if key in obj:
                    self.duplicate(key, kpos, sub)
                    _, i = self.value(i, path + (key, "#dup"), depth + 1)
                else:
                    self.marks[sub] = kpos
                    obj[key], i = self.value(i, sub, depth + 1)
                i = self.skip(i)
                if text[i:i + 1] != ",":
                    return obj, i + 1
                i += 1
        if ch == "[":
            arr: list = []
            i = self.skip(i + 1)
            if text[i:i + 1] == "]":
                return arr, i + 1
            while True:
                item, i = self.value(i, path + (len(arr),), depth + 1)
                arr.append(item)
                i = self.skip(i)
                if text[i:i + 1] != ",":
                    return arr, i + 1
                i += 1
        if ch == '"':
            return self.string(i)
        return self.literal(i)

    def duplicate(self, key: str, kpos: tuple[int, int], sub: Path) -> None:
        first = self.marks.get(sub, (None,))[0]
        self.doc.problems.append(Problem(self.doc.file, *kpos,
                                         f"duplicate key '{key}' (first given at line {first}); "
                                         "a key may appear once in an object", key=format_path(sub)))

    def literal(self, i: int) -> tuple[Any, int]:
        """true, false, null or a number at *i*, and where it ends."""
        text = self.text
        for word, val in (("true", True), ("false", False), ("null", None)):
            if text.startswith(word, i):
                return val, i + len(word)
        for word in ("NaN", "Infinity", "-Infinity"):
            if text.startswith(word, i):
                raise self.fail(i, f"invalid JSON: {word} is not a JSON number (use null or a string)")
        m = _number.match(text, i)
        if not m:
            raise self.fail(i, "invalid JSON")
        integer, frac, exp = m.groups()
        if not (frac or exp):
            try:
                return int(integer), m.end()
            except ValueError:  # over int()'s limit of digits (4,300 by default)
                raise self.fail(i, f"invalid JSON: a number of {len(integer.lstrip('-')):,} digits "
                                "(the limit is 4,300)") from None
        number = float(integer + (frac or "") + (exp or ""))
        if not math.isfinite(number):
            raise self.fail(i, f"invalid JSON: {cut(m.group())} is out of range (a JSON number must "
                            "fit a double)")
        return number, m.end()


def locate_json(text: str, display: str, *, max_depth: int = 512) -> Located:
    """A slow, position-keeping JSON parse: used only to say where a problem is."""
    doc = Located(display, None)
    try:
        doc.value, _ = _JsonLocator(text, doc, max_depth).value(0, (), 0)
    except (ValueError, IndexError) as exc:
        doc.problems.append(Problem(display, None, None, f"invalid JSON: {exc}"))
    return doc
