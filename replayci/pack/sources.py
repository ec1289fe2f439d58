"""Reading YAML and JSON safely, keeping where every value came from.

YAML is built from the C parser's event stream (no recursion, so a 100,000-deep file is
refused rather than crashing the interpreter), with duplicate keys, alias expansion, depth
and size bounded. JSON takes the C decoder's fast path; positions are worked out only when
a problem must be reported.
"""
from __future__ import annotations

import datetime
import json
import math
import os
import re
import stat
import threading
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import ConfigError, Problem
from ..core.hashing import canonical_json
from ..core.memo import Memo, on_clear

MAX_DEPTH = 64
MAX_NODES = 200_000
MAX_YAML_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_JSON_BYTES = 16 * 1024 * 1024

Path = tuple  # a key path: ("assertions", "output_invariants", 0)


@dataclass
class Located:
    """A parsed document and the (line, column) of every value in it, both 1-based."""

    file: str
    value: Any
    marks: dict[Path, tuple[int, int]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def at(self, path: Path) -> tuple[int | None, int | None]:
        """The position of *path*, or of its nearest located ancestor."""
        path = tuple(path)
        while True:
            mark = self.marks.get(path)
            if mark is not None:
                return mark
            if not path:
                return (1, 1) if self.marks is not None else (None, None)
            path = path[:-1]

    def problem(self, path: Path, message: str) -> Problem:
        line, col = self.at(path)
        return Problem(self.file, line, col, message, key=format_path(path))

    def source(self, path: Path) -> str:
        return f"{self.file}:{self.at(path)[0]}"


def format_path(path: Path) -> str:
    """("a", 0, "b") -> "a[0].b"."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def read_text(path: str, display: str, *, max_bytes: int) -> str:
    """The UTF-8 text of a file, refusing oversize files, other encodings and anything that
    is not a regular file (a FIFO would block, /dev/zero would never end)."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer (no effect on regular files).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise ConfigError(Problem(display, None, None, f"cannot read: {exc.strerror}")) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise ConfigError(Problem(display, None, None, "not a regular file (a directory, device, "
                                  "pipe or socket); replayci reads only regular files"))
    with open(fd, "rb", closefd=True) as fh:
        size = st.st_size
        data = b""
        if size <= max_bytes:
            data = fh.read(size + 1)
            if len(data) > size:  # it grew meanwhile: never read more than the limit
                data += fh.read(max_bytes + 1 - len(data))
                size = len(data)
    if size > max_bytes:
        raise ConfigError(
            Problem(display, None, None,
                    f"file is {size:,} bytes, over the limit of {max_bytes:,} bytes")
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(
            Problem(display, line, col,
                    f"not valid UTF-8 (byte 0x{data[exc.start]:02x}); save the file as UTF-8")
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


# ---------------------------------------------------------------- YAML

_yaml = None


def _yaml_parts():
    global _yaml
    if _yaml is None:
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        constructor = yaml.constructor.SafeConstructor()
        resolver = yaml.resolver.Resolver()
        _yaml = (yaml, loader, constructor, resolver)
    return _yaml


_MISSING = object()
# Tags a mapping or sequence may carry: none, or the plain ones (`!!python/...` is refused).
_COLLECTION_TAGS = (None, "!", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")


_STR_TAG = "tag:yaml.org,2002:str"


def _scalar(event, yaml, constructor, resolver):
    tag = event.tag
    if tag is None and event.style in ("'", '"', "|", ">"):
        return event.value  # quoted and block scalars are strings (the common case)
    if tag is None or tag == "!":
        tag = resolver.resolve(yaml.ScalarNode, event.value, event.implicit)
    if tag == _STR_TAG:
        return event.value
    if tag == "tag:yaml.org,2002:merge":
        return "<<"
    handler = constructor.yaml_constructors.get(tag)
    if handler is None or tag in (
        "tag:yaml.org,2002:binary", "tag:yaml.org,2002:set", "tag:yaml.org,2002:omap",
        "tag:yaml.org,2002:pairs",
    ):
        raise ValueError(f"unsupported YAML tag {tag!r}")
    node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
    try:
        value = handler(constructor, node)
    except Exception as exc:  # `!!bool maybe`, `2001-13-45`, an int of 5,000 digits, ...
        name = tag.replace("tag:yaml.org,2002:", "!!")
        if "integer string conversion" in str(exc):
            why = f"an integer of {len(event.value):,} digits (the limit is 4,300)"
        elif isinstance(exc, KeyError):
            why = "true or false expected" if name == "!!bool" else "not a valid value"
        else:
            why = str(exc) or type(exc).__name__
        raise ValueError(f"invalid {name} value {_cut(event.value)!r}: {why}"
                         + ("; quote it to keep it a string" if event.implicit[0] else "")) from None
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{event.value!r} is not a number JSON can hold (no NaN or infinity); "
                         "quote it to keep it a string")
    if isinstance(value, (datetime.date, datetime.datetime)):
        value = value.isoformat()
    return value


def _cut(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _size(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(_size(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_size(v) for v in value)
    return 1


def parse_yaml(text: str, display: str, *, max_depth: int = MAX_DEPTH,
               max_nodes: int = MAX_NODES) -> Located:
    """Parse one YAML document into plain values with positions; problems are collected."""
    yaml, loader, constructor, resolver = _yaml_parts()
    doc = Located(display, None)
    marks = doc.marks
    # Each frame: [container, path, pending_key, key_mark, anchor, size]
    stack: list[list] = []
    anchors: dict[str, tuple[Any, int]] = {}
    documents = 0
    nodes = 0
    root = _MISSING

    def fail(mark, message: str) -> ConfigError:
        return ConfigError(doc.problems + [Problem(display, mark.line + 1, mark.column + 1, message)])

    def place(value: Any, mark, anchor: str | None, size: int) -> None:
        nonlocal root
        if anchor is not None:
            anchors[anchor] = (value, size)
        if not stack:
            root = value
            marks[()] = (mark.line + 1, mark.column + 1)
            return
        frame = stack[-1]
        frame[5] += size
        container = frame[0]
        if isinstance(container, list):
            path = frame[1] + (len(container),)
            container.append(value)
            marks[path] = (mark.line + 1, mark.column + 1)
        elif frame[2] is _MISSING:
            if isinstance(value, (dict, list)):
                raise fail(mark, "a mapping key must be a plain value")
            frame[2] = value
            frame[3] = mark
        else:
            key, key_mark = frame[2], frame[3]
            frame[2] = _MISSING
            if key == "<<" and isinstance(value, (dict, list)):
                for src in value if isinstance(value, list) else [value]:
                    if isinstance(src, dict):
                        for k, v in src.items():
                            container.setdefault(k, v)
                return
            path = frame[1] + (key,)
            if key in container:
                first = marks.get(path, (None, None))[0]
                doc.problems.append(Problem(
                    display, key_mark.line + 1, key_mark.column + 1,
                    f"duplicate key '{key}' (first given at line {first}); "
                    "a key may appear once in a mapping", key=format_path(path)))
                return
            container[key] = value
            marks[path] = (key_mark.line + 1, key_mark.column + 1)

    try:
        for event in yaml.parse(text, Loader=loader):
            cls = type(event).__name__
            if cls == "ScalarEvent":
                nodes += 1
                try:
                    value = _scalar(event, yaml, constructor, resolver)
                except ValueError as exc:
                    raise fail(event.start_mark, str(exc)) from None
                place(value, event.start_mark, event.anchor, 1)
            elif cls in ("MappingStartEvent", "SequenceStartEvent"):
                nodes += 1
                if event.tag not in _COLLECTION_TAGS:
                    raise fail(event.start_mark, f"unsupported YAML tag {event.tag!r}")
                if len(stack) >= max_depth:
                    raise fail(event.start_mark, f"nesting deeper than {max_depth} levels")
                container: Any = {} if cls == "MappingStartEvent" else []
                path: Path = ()
                if stack:
                    parent = stack[-1]
                    if isinstance(parent[0], list):
                        path = parent[1] + (len(parent[0]),)
                    elif parent[2] is not _MISSING:
                        path = parent[1] + (parent[2],)
                stack.append([container, path, _MISSING, None, event.anchor, 1, event.start_mark])
            elif cls in ("MappingEndEvent", "SequenceEndEvent"):
                frame = stack.pop()
                place(frame[0], frame[6], frame[4], frame[5])
            elif cls == "AliasEvent":
                if event.anchor not in anchors:
                    raise fail(event.start_mark, f"unknown alias *{event.anchor}")
                value, size = anchors[event.anchor]
                nodes += size
                if nodes > max_nodes:
                    raise fail(event.start_mark,
                               f"alias expansion exceeds {max_nodes:,} nodes (an alias bomb?)")
                place(value, event.start_mark, None, size)
            elif cls == "DocumentStartEvent":
                documents += 1
                if documents > 1:
                    raise fail(event.start_mark, "one YAML document per file, found a second ('---')")
            if nodes > max_nodes:
                raise fail(event.start_mark, f"more than {max_nodes:,} nodes")
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow: no marks, a position
        pos = exc.position
        line = text.count("\n", 0, pos) + 1
        col = pos - (text.rfind("\n", 0, pos) + 1) + 1
        raise ConfigError(doc.problems + [Problem(
            display, line, col, f"invalid YAML: {exc.reason} (U+{exc.character:04X})")]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        context_mark = getattr(exc, "context_mark", None)
        if context and context_mark is not None and mark is not None and context_mark.line != mark.line:
            context += f" started at line {context_mark.line + 1}"
        msg = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
        if mark is not None:
            raise ConfigError(doc.problems + [Problem(display, mark.line + 1, mark.column + 1, msg)]) from None
        raise ConfigError(doc.problems + [Problem(display, None, None, msg)]) from None
    doc.value = None if root is _MISSING else root
    return doc


def load_yaml(path: str, display: str) -> Located:
    """Read and parse a YAML file."""
    return parse_yaml(read_text(path, display, max_bytes=MAX_YAML_BYTES), display)


# ---------------------------------------------------------------- JSON


class _DuplicateKey(ValueError):
    pass


class _NotJSON(ValueError):
    """NaN / Infinity: Python's json accepts them, JSON does not."""


def _constant(name: str):
    raise _NotJSON(name)


def _pairs(pairs):
    d = dict(pairs)
    if len(d) != len(pairs):
        raise _DuplicateKey()
    return d


def _finite(text: str) -> float:
    """A float that JSON can hold: 1e999 would become an infinity."""
    value = float(text)
    if not math.isfinite(value):
        raise _NotJSON(text)
    return value


_fast_decode = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_constant,
                                parse_float=_finite).decode


def parse_json(text: str, display: str) -> Any:
    """Parse JSON, refusing duplicate keys and excessive nesting, with located errors."""
    try:
        value = _fast_decode(text)
    except (_DuplicateKey, _NotJSON):
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
        if "\\u" not in text or _SURROGATE_ESCAPE.search(text) is None:
            return value
        located = locate_json(text, display)  # raises on what it finds
        if not located.problems:
            return value
        raise ConfigError(located.problems)
    located = locate_json(text, display)
    raise ConfigError(located.problems or [Problem(display, None, None, "invalid JSON")])


# ---------------------------------------------------------------- request.tools seen before

# Golden fixtures of one contract repeat the same tools array (most of a fixture's bytes)
# character for character. Its parse and canonical JSON are kept by its exact text; a fixture
# that contains a known text at request.tools has only the rest of it parsed.
_tools_seen: dict[str, tuple[list, str]] = {}  # raw text -> (parsed value, canonical JSON)
_tools_lengths: list[int] = []  # the lengths of the known texts, most recent first
_TOOLS_KEEP_BYTES = 32 * 1024 * 1024
_tools_bytes = [0]
_tools_lock = threading.Lock()
_tools_once: Memo = Memo()  # canonical JSON of tools lists seen once (not kept yet)


@on_clear
def _forget_tools() -> None:
    with _tools_lock:
        _tools_seen.clear()
        _tools_lengths.clear()
        _tools_bytes[0] = 0


class _Hole:
    __slots__ = ()


_HOLE = _Hole()


def _hole_constant(name: str):
    if name == "NaN":
        return _HOLE
    raise _NotJSON(name)


_hole_decode = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_hole_constant,
                                parse_float=_finite).decode
_raw_decode = json.JSONDecoder().raw_decode


_TOOLS_CANDIDATES = 8


def _tools_starts(text: str):
    """Where a value after a "tools" key could start (a candidate: the caller verifies); the
    first few only (request.tools comes early; a file of many "tools" keys gets a full parse)."""
    i = text.find('"tools"')
    left = _TOOLS_CANDIDATES
    while i >= 0 and left:
        left -= 1
        j = i + 7
        while text[j:j + 1] in _WS_CHARS:
            j += 1
        if text[j:j + 1] == ":":
            j += 1
            while text[j:j + 1] in _WS_CHARS:
                j += 1
            if text[j:j + 1] == "[":
                yield j
        i = text.find('"tools"', i + 7)


def _reuse_tools(text: str) -> tuple[Any, str] | None:
    """(document, canonical JSON of its request.tools) when request.tools is a known text and
    the rest parses cleanly, else None (the caller parses the whole text)."""
    for start in _tools_starts(text):
        for length in _tools_lengths:
            known = _tools_seen.get(text[start:start + length])
            if known is None:
                continue
            rest = text[:start] + "NaN" + text[start + length:]
            if rest.count("NaN") != 1:  # the text has a NaN of its own: the full parse says so
                return None
            try:
                doc = _hole_decode(rest)
            except (ValueError, RecursionError):
                return None
            if "\\u" in rest and _SURROGATE_ESCAPE.search(rest) is not None:
                return None
            request = doc.get("request") if type(doc) is dict else None
            if type(request) is not dict or request.get("tools") is not _HOLE:
                return None  # the known text was somewhere else
            request["tools"] = known[0]
            return doc, known[1]
    return None


def _learn_tools(text: str, tools: list, key: str, display: str) -> None:
    """Keep the text of a document's request.tools (found again by its canonical JSON)."""
    if _tools_bytes[0] > _TOOLS_KEEP_BYTES:
        return
    for start in _tools_starts(text):
        try:
            _, end = _raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        raw = text[start:end]
        try:
            if canonical_json(parse_json(raw, display)) != key:
                continue
        except (ConfigError, TypeError, ValueError):
            continue
        with _tools_lock:  # (readers only iterate: a list changed meanwhile is harmless there)
            _tools_seen[raw] = (tools, key)
            _tools_bytes[0] += len(raw)
            if len(raw) in _tools_lengths:
                _tools_lengths.remove(len(raw))
            _tools_lengths.insert(0, len(raw))
            del _tools_lengths[8:]
        return


def parse_request_json(text: str, display: str) -> tuple[Any, str | None]:
    """parse_json for a document with a request (a golden fixture), and the canonical JSON of
    its request.tools (None when that is not a list of JSON values)."""
    if _tools_seen:
        reused = _reuse_tools(text)
        if reused is not None:
            return reused
    doc = parse_json(text, display)
    request = doc.get("request") if type(doc) is dict else None
    tools = request.get("tools") if type(request) is dict else None
    if type(tools) is not list:
        return doc, None
    try:
        key = canonical_json(tools)
    except (TypeError, ValueError):
        return doc, None
    if '"tools"' in text and (len(tools) > 1 or len(key) > 200):
        # Kept from its second sighting: a tools list that only one fixture holds costs
        # nothing extra (a contract's fixtures share theirs).
        if key in _tools_once:
            _learn_tools(text, tools, key, display)
        else:
            _tools_once.put(key, True)
    return doc, key


def load_json(path: str, display: str, *, max_bytes: int = DEFAULT_MAX_JSON_BYTES) -> Any:
    """Read and parse a JSON file."""
    return parse_json(read_text(path, display, max_bytes=max_bytes), display)


_WS = " \t\n\r"
_WS_CHARS = tuple(_WS)  # not a str: "" is in every str
# The C decoder accepts escaped lone surrogates ("\ud800": text that is not Unicode and cannot
# be written as UTF-8). A text with a surrogate escape gets the slow, located parse, which
# decides (a proper pair is fine).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_scanstring = json.decoder.scanstring
_number = json.scanner.NUMBER_RE


def locate_json(text: str, display: str, *, max_depth: int = 512) -> Located:
    """A slow, position-keeping JSON parse: used only to say where a problem is."""
    doc = Located(display, None)
    marks = doc.marks
    line_starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            line_starts.append(i + 1)

    import bisect

    def pos(i: int) -> tuple[int, int]:
        ln = bisect.bisect_right(line_starts, i) - 1
        return ln + 1, i - line_starts[ln] + 1

    def skip(i: int) -> int:
        while i < len(text) and text[i] in _WS:
            i += 1
        return i

    def string(i: int) -> tuple[str, int]:
        """The string whose opening quote is at *i*; a lone surrogate is refused."""
        s, end = _scanstring(text, i + 1)
        lone = _LONE_SURROGATE.search(s)
        if lone:
            raise ConfigError(Problem(display, *pos(i), f"invalid JSON: \\u{ord(lone.group()):04x} "
                                      "is half of a surrogate pair, not a character "
                                      "(text that cannot be saved as UTF-8)"))
        return s, end

    def value(i: int, path: Path, depth: int) -> tuple[Any, int]:
        if depth > max_depth:
            raise ConfigError(Problem(display, *pos(i), f"nesting deeper than {max_depth} levels"))
        i = skip(i)
        marks.setdefault(path, pos(i))
        ch = text[i:i + 1]
        if ch == "{":
            obj: dict = {}
            i = skip(i + 1)
            if text[i:i + 1] == "}":
                return obj, i + 1
            while True:
                i = skip(i)
                kpos = pos(i)
                key, i = string(i)
                i = skip(i)
                i += 1  # ':'
                sub = path + (key,)
                if key in obj:
                    first = marks.get(sub, (None,))[0]
                    doc.problems.append(Problem(display, *kpos,
                                                f"duplicate key '{key}' (first given at line {first}); "
                                                "a key may appear once in an object",
                                                key=format_path(sub)))
                    _, i = value(i, path + (key, "#dup"), depth + 1)
                else:
                    marks[sub] = kpos
                    obj[key], i = value(i, sub, depth + 1)
                i = skip(i)
                if text[i:i + 1] == ",":
                    i += 1
                    continue
                return obj, i + 1
        if ch == "[":
            arr: list = []
            i = skip(i + 1)
            if text[i:i + 1] == "]":
                return arr, i + 1
            while True:
                item, i = value(i, path + (len(arr),), depth + 1)
                arr.append(item)
                i = skip(i)
                if text[i:i + 1] == ",":
                    i += 1
                    continue
                return arr, i + 1
        if ch == '"':
            return string(i)
        for word, val in (("true", True), ("false", False), ("null", None)):
            if text.startswith(word, i):
                return val, i + len(word)
        for word in ("NaN", "Infinity", "-Infinity"):
            if text.startswith(word, i):
                raise ConfigError(Problem(display, *pos(i), f"invalid JSON: {word} is not a JSON "
                                          "number (use null or a string)"))
        m = _number.match(text, i)
        if m:
            integer, frac, exp = m.groups()
            if not (frac or exp):
                try:
                    return int(integer), m.end()
                except ValueError:  # over int()'s limit of digits (4,300 by default)
                    raise ConfigError(Problem(display, *pos(i), f"invalid JSON: a number of "
                                              f"{len(integer.lstrip('-')):,} digits (the limit "
                                              "is 4,300)")) from None
            number = float(integer + (frac or "") + (exp or ""))
            if not math.isfinite(number):
                raise ConfigError(Problem(display, *pos(i), f"invalid JSON: {_cut(m.group())} is "
                                          "out of range (a JSON number must fit a double)"))
            return number, m.end()
        raise ConfigError(Problem(display, *pos(i), "invalid JSON"))

    try:
        doc.value, _ = value(0, (), 0)
    except (ValueError, IndexError) as exc:
        doc.problems.append(Problem(display, None, None, f"invalid JSON: {exc}"))
    return doc
