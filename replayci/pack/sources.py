"""Reading YAML and JSON safely, keeping where every value came from.

YAML is built from the C parser's event stream (no recursion, so a 100,000-deep file is
refused rather than crashing the interpreter), with duplicate keys, alias expansion, depth
and size bounded. JSON takes the C decoder's fast path; positions are worked out only when
a problem must be reported.
"""
from __future__ import annotations

import bisect
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
from ..core.hashing import canonical_json, tools_key
from ..core.memo import Memo, fast_paths, on_clear

MAX_DEPTH = 64
MAX_NODES = 200_000
# What a document's aliases may expand to, counted in bytes of scalar text (and one per node):
# an alias repeats a value without copying it, but every reader after the loader (hashing,
# JSON, a report) sees the copies.
MAX_EXPANDED_BYTES = 16 * 1024 * 1024
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
                return (1, 1)
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


def _read_upto(fd: int, n: int) -> bytes:
    """Up to *n* bytes from *fd* (fewer only at the end of the file)."""
    parts = []
    while n > 0:
        chunk = os.read(fd, n)
        if not chunk:
            break
        parts.append(chunk)
        n -= len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def read_text(path: str, display: str, *, max_bytes: int) -> str:
    """The UTF-8 text of a file, refusing oversize files, other encodings and anything that
    is not a regular file (a FIFO would block, /dev/zero would never end)."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer (no effect on regular files).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise ConfigError(Problem(display, None, None, f"cannot read: {exc.strerror}")) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(Problem(display, None, None, "not a regular file (a directory, device, "
                                      "pipe or socket); replayci reads only regular files"))
        size = st.st_size
        data = b""
        if size <= max_bytes:
            data = _read_upto(fd, size + 1)  # (no file object: a fixture is one read)
            if len(data) > size:  # it grew meanwhile: never read more than the limit
                data += _read_upto(fd, max_bytes + 1 - len(data))
                size = len(data)
    finally:
        os.close(fd)
    if size > max_bytes:
        raise ConfigError(
            Problem(display, None, None,
                    f"file is {size:,} bytes, over the limit of {max_bytes:,} bytes")
        )
    wide = _wide_encoding(data)
    if wide:
        raise ConfigError(Problem(display, None, None, f"the file is {wide}, not UTF-8; save it as UTF-8"))
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


def _wide_encoding(data: bytes) -> str | None:
    """"UTF-16" or "UTF-32" when *data* is text in one (by its byte-order mark, or a NUL beside
    every character of its first line), else None."""
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16"
    head = data[:64]
    if len(head) >= 4 and len(head) % 2 == 0 and (not any(head[1::2]) or not any(head[0::2])):
        return "UTF-16"
    return None


# ---------------------------------------------------------------- YAML

_yaml = None


def _yaml_parts():
    """PyYAML's module, loader and constructor, imported on first use."""
    global _yaml
    if _yaml is None:
        import yaml  # a run that reads no YAML (replayci --version) never pays for it

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        constructor = yaml.constructor.SafeConstructor()
        _yaml = (yaml, loader, constructor)
    return _yaml


_MISSING = object()
# Tags a mapping or sequence may carry: none, or the plain ones (`!!python/...` is refused).
_COLLECTION_TAGS = (None, "!", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")


_STR_TAG = "tag:yaml.org,2002:str"

# Plain scalars resolve by the YAML 1.2 core schema, not PyYAML's YAML 1.1 resolver: `NO`,
# `yes`, `on`, `off`, `y` stay strings (a country code, `replay: off`), and 1.1's octal `017`,
# sexagesimal `1:30`, `1_000` and bare timestamps are text, never silently numbers or dates.
# A leading-zero integer is kept as text too (1.2 would read `017` as 17, 1.1 as 15: neither
# guess is safe).
_CORE_TAGS = (
    ("tag:yaml.org,2002:null", re.compile(r"~|null|Null|NULL|")),
    ("tag:yaml.org,2002:bool", re.compile(r"true|True|TRUE|false|False|FALSE")),
    ("tag:yaml.org,2002:int", re.compile(r"[-+]?(?:0|[1-9][0-9]*)|0o[0-7]+|0x[0-9a-fA-F]+")),
    ("tag:yaml.org,2002:float", re.compile(
        r"[-+]?(?:\.[0-9]+|(?:0|[1-9][0-9]*)(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")),
    ("tag:yaml.org,2002:merge", re.compile(r"<<")),
)


def _core_tag(text: str) -> str:
    """The YAML 1.2 core-schema tag of a plain scalar's text."""
    if text and text[0] not in "~nNtTfF-+.0123456789<":
        return _STR_TAG  # most plain scalars are words: no pattern can match
    for tag, pattern in _CORE_TAGS:
        if pattern.fullmatch(text):
            return tag
    return _STR_TAG


_plain_tags: Memo = Memo()  # the text of a short plain scalar -> its resolved tag
_PLAIN_TAG_TEXT = 100  # longer texts are resolved each time (the memo holds little)


def _scalar(event, yaml, constructor):
    tag = event.tag
    if tag is None and event.style in ("'", '"', "|", ">"):
        return event.value  # quoted and block scalars are strings (the common case)
    if tag is None or tag == "!":
        # A plain scalar's tag depends on its text alone: kept, as keys and enum-like values repeat.
        tag = _plain_tags.get(event.value) if event.implicit[0] else None
        if tag is None:
            tag = _core_tag(event.value) if event.implicit[0] else _STR_TAG
            if event.implicit[0] and len(event.value) <= _PLAIN_TAG_TEXT:
                _plain_tags.put(event.value, tag)
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


class _YamlBuilder:
    """The plain values of one YAML document, built from its events, with their marks."""

    __slots__ = ("doc", "marks", "max_depth", "max_nodes", "yaml", "constructor", "stack",
                 "anchors", "documents", "nodes", "root", "weight")

    def __init__(self, doc: Located, max_depth: int, max_nodes: int, parts: tuple) -> None:
        self.doc = doc
        self.marks = doc.marks
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self.yaml, _, self.constructor = parts
        # Each frame: [container, path, pending_key, key_mark, anchor, size, start_mark, weight]
        self.stack: list[list] = []
        self.anchors: dict[str, tuple[Any, int, int]] = {}
        self.documents = 0
        self.nodes = 0
        self.weight = 0  # the expanded document's size: scalar text bytes, and one per node
        self.root: Any = _MISSING

    def handlers(self) -> dict:
        """The step for each kind of event (the others need none)."""
        events = self.yaml.events
        return {
            events.ScalarEvent: self.scalar,
            events.MappingStartEvent: self.collection_start,
            events.SequenceStartEvent: self.collection_start,
            events.MappingEndEvent: self.collection_end,
            events.SequenceEndEvent: self.collection_end,
            events.AliasEvent: self.alias,
            events.DocumentStartEvent: self.document_start,
        }

    def fail(self, mark, message: str) -> ConfigError:
        """The problems so far and *message* at *mark*: the parse stops here."""
        return ConfigError(self.doc.problems + [Problem(self.doc.file, mark.line + 1, mark.column + 1, message)])

    def place(self, value: Any, mark, anchor: str | None, size: int, weight: int) -> None:
        """Put a finished value into the collection being built (or make it the document)."""
        if anchor is not None:
            self.anchors[anchor] = (value, size, weight)
        stack = self.stack
        if not stack:
            self.root = value
            self.marks[()] = (mark.line + 1, mark.column + 1)
            return
        frame = stack[-1]
        frame[5] += size
        frame[7] += weight
        container = frame[0]
        if isinstance(container, list):
            path = frame[1] + (len(container),)
            container.append(value)
            self.marks[path] = (mark.line + 1, mark.column + 1)
        elif frame[2] is _MISSING:
            if isinstance(value, (dict, list)):
                raise self.fail(mark, "a mapping key must be a plain value")
            frame[2] = value
            frame[3] = mark
        else:
            key, key_mark = frame[2], frame[3]
            frame[2] = _MISSING
            if key == "<<" and isinstance(value, (dict, list)):
                _merge(container, value)
                return
            path = frame[1] + (key,)
            if key in container:
                first = self.marks.get(path, (None, None))[0]
                self.doc.problems.append(Problem(
                    self.doc.file, key_mark.line + 1, key_mark.column + 1,
                    f"duplicate key '{key}' (first given at line {first}); "
                    "a key may appear once in a mapping", key=format_path(path)))
                return
            container[key] = value
            self.marks[path] = (key_mark.line + 1, key_mark.column + 1)

    def scalar(self, event) -> None:
        self.nodes += 1
        try:
            value = _scalar(event, self.yaml, self.constructor)
        except ValueError as exc:
            raise self.fail(event.start_mark, str(exc)) from None
        weight = 1 + len(event.value)
        self.weight += weight
        self.place(value, event.start_mark, event.anchor, 1, weight)

    def collection_start(self, event) -> None:
        self.nodes += 1
        if event.tag not in _COLLECTION_TAGS:
            raise self.fail(event.start_mark, f"unsupported YAML tag {event.tag!r}")
        stack = self.stack
        if len(stack) >= self.max_depth:
            raise self.fail(event.start_mark, f"nesting deeper than {self.max_depth} levels")
        container: Any = {} if isinstance(event, self.yaml.events.MappingStartEvent) else []
        path: Path = ()
        if stack:
            parent = stack[-1]
            if isinstance(parent[0], list):
                path = parent[1] + (len(parent[0]),)
            elif parent[2] is not _MISSING:
                path = parent[1] + (parent[2],)
        self.weight += 1
        stack.append([container, path, _MISSING, None, event.anchor, 1, event.start_mark, 1])

    def collection_end(self, event) -> None:
        frame = self.stack.pop()
        self.place(frame[0], frame[6], frame[4], frame[5], frame[7])

    def alias(self, event) -> None:
        if event.anchor not in self.anchors:
            raise self.fail(event.start_mark, f"unknown alias *{event.anchor}")
        value, size, weight = self.anchors[event.anchor]
        self.nodes += size
        if self.nodes > self.max_nodes:
            raise self.fail(event.start_mark, f"alias expansion exceeds {self.max_nodes:,} nodes (an alias bomb?)")
        self.weight += weight
        if self.weight > MAX_EXPANDED_BYTES:
            raise self.fail(event.start_mark, f"alias expansion exceeds {MAX_EXPANDED_BYTES:,} bytes "
                            "(an alias bomb?)")
        self.place(value, event.start_mark, None, size, weight)

    def document_start(self, event) -> None:
        self.documents += 1
        if self.documents > 1:
            raise self.fail(event.start_mark, "one YAML document per file, found a second ('---')")


def _merge(container: dict, value: dict | list) -> None:
    """A `<<: *anchor` merge key: the keys of the merged mapping(s) the mapping lacks."""
    for src in value if isinstance(value, list) else [value]:
        if isinstance(src, dict):
            for k, v in src.items():
                container.setdefault(k, v)


# An unquoted JSONPath value with brackets in a flow mapping: `{path: $.tool_calls[0].name, ...}`.
_UNQUOTED_PATH = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):[ \t]+(\$[^{}\n]*?\[[^{}\n]*?)"
                            r"(?=[ \t]*(?:,[ \t]*[A-Za-z_][A-Za-z0-9_]*:|\}))")


def _reader_error(exc, text: str, doc: Located) -> ConfigError:
    """A character YAML does not allow: the reader gives no marks, a position."""
    pos = exc.position
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return ConfigError(doc.problems + [Problem(
        doc.file, line, col, f"invalid YAML: {exc.reason} (U+{exc.character:04X})")])


def _syntax_error(exc, doc: Located, max_depth: int, text: str = "") -> ConfigError:
    """The parser's own error, located where it found the problem. PyYAML 6.0.4 and later refuse
    deep flow collections in the scanner, before any event reaches the builder's depth limit:
    that refusal is the same problem, said in replayci's words."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if "nesting depth" in problem:
        return ConfigError(doc.problems + [Problem(
            doc.file, mark.line + 1 if mark else None, mark.column + 1 if mark else None,
            f"nesting deeper than {max_depth} levels")])
    context = getattr(exc, "context", None)
    context_mark = getattr(exc, "context_mark", None)
    if context and context_mark is not None and mark is not None and context_mark.line != mark.line:
        context += f" started at line {context_mark.line + 1}"
    msg = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
    if mark is not None and _char_at(text, mark.line, mark.column) == "\t":
        msg += "; a tab here: YAML indents with spaces, never tabs"
    elif mark is not None:
        msg += _quote_hint(text, mark.line)
    if mark is not None:
        return ConfigError(doc.problems + [Problem(doc.file, mark.line + 1, mark.column + 1, msg)])
    return ConfigError(doc.problems + [Problem(doc.file, None, None, msg)])


def _quote_hint(text: str, line: int) -> str:
    """Inside `{...}` or `[...]` a plain value ends at its first `[`, `]`, `{`, `}` or `,`: a
    JSONPath such as $.tool_calls[0].name must be quoted there."""
    start = 0
    for _ in range(line):
        start = text.find("\n", start) + 1
    end = text.find("\n", start)
    found = _UNQUOTED_PATH.search(text[start:end if end >= 0 else len(text)])
    if found is None:
        return ""
    return (f"; inside {{...}} or [...] a path with brackets must be quoted: "
            f"{found.group(1)}: {json.dumps(found.group(2).strip(), ensure_ascii=False)}")


def _char_at(text: str, line: int, column: int) -> str:
    """The character at 0-based *line* and *column* of *text* ("" past its end)."""
    start = 0
    for _ in range(line):
        start = text.find("\n", start) + 1
        if start == 0:
            return ""
    return text[start + column:start + column + 1]


def parse_yaml(text: str, display: str, *, max_depth: int = MAX_DEPTH,
               max_nodes: int = MAX_NODES) -> Located:
    """Parse one YAML document into plain values with positions; problems are collected."""
    parts = _yaml_parts()
    yaml, loader = parts[0], parts[1]
    doc = Located(display, None)
    build = _YamlBuilder(doc, max_depth, max_nodes, parts)
    handlers = build.handlers()
    try:
        parser = loader(text)
        try:
            # get_event() until None: yaml.parse's loop, without its generator and check_event()
            while (event := parser.get_event()) is not None:
                handler = handlers.get(event.__class__)
                if handler is not None:
                    handler(event)
                if build.nodes > max_nodes:
                    raise build.fail(event.start_mark, f"more than {max_nodes:,} nodes")
        finally:
            parser.dispose()
    except yaml.reader.ReaderError as exc:
        raise _reader_error(exc, text, doc) from None
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, doc, max_depth, text) from None
    doc.value = None if build.root is _MISSING else build.root
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
    fast = fast_paths()
    if fast and _tools_seen:
        reused = _reuse_tools(text)
        if reused is not None:
            return reused
    doc = parse_json(text, display)
    request = doc.get("request") if type(doc) is dict else None
    tools = request.get("tools") if type(request) is dict else None
    if type(tools) is not list:
        return doc, None
    try:
        key = tools_key(tools)
    except (TypeError, ValueError):
        return doc, None
    if fast and '"tools"' in text and (len(tools) > 1 or len(key) > 200):
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
            raise self.fail(i, f"invalid JSON: {_cut(m.group())} is out of range (a JSON number must "
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
