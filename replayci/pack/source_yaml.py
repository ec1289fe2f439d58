"""YAML read from the C parser's event stream (no recursion, so a 100,000-deep file is
refused rather than crashing the interpreter), with duplicate keys, alias expansion, depth and
size bounded, and YAML 1.2 core-schema scalars; every value located by line and column."""
from __future__ import annotations

import datetime
import json
import math
import re
from typing import Any

from ..core.errors import ConfigError, Problem
from ..core.memo import Memo
from .source_text import (
    MAX_DEPTH,
    MAX_EXPANDED_BYTES,
    MAX_NODES,
    MAX_YAML_BYTES,
    Located,
    Path,
    cut,
    format_path,
    read_text,
)

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
        raise ValueError(f"invalid {name} value {cut(event.value)!r}: {why}"
                         + ("; quote it to keep it a string" if event.implicit[0] else "")) from None
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{event.value!r} is not a number JSON can hold (no NaN or infinity); "
                         "quote it to keep it a string")
    if isinstance(value, (datetime.date, datetime.datetime)):
        value = value.isoformat()
    return value


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
