"""Reading trace exports and eval logs as JSON: one document, or JSON lines of documents, with
every problem a located `ConfigError` naming the file. Nothing is executed; nesting is bounded."""
from __future__ import annotations

import json
from typing import Any

from ...core.errors import ConfigError, Problem
from ...pack.sources import parse_json, read_text

MAX_BYTES = 512 * 1024 * 1024
MAX_DEPTH = 128  # far deeper than any exporter writes, and well inside the interpreter's stack


def fail(display: str, message: str, line: int | None = None) -> ConfigError:
    return ConfigError(Problem(display, line, None, message))


def check_depth(value: Any, display: str, line: int | None = None) -> None:
    """Refuse a document nested deeper than MAX_DEPTH (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise fail(display, f"nesting deeper than {MAX_DEPTH} levels: not a trace export or eval log", line)
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, (dict, list)))


def parse_text(text: str, display: str, line: int | None = None) -> Any:
    """One JSON document, its depth checked; a JSON line's errors carry its line number."""
    try:
        value = parse_json(text, display)
    except ConfigError as exc:
        if line is None:
            raise
        first = exc.problems[0]
        raise fail(display, first.message, line) from None
    check_depth(value, display, line)
    return value


def _is_lines(text: str) -> bool:
    """Whether *text* is JSON lines: its first line is a whole JSON value and more follows."""
    stripped = text.strip()
    if "\n" not in stripped:
        return False
    first = stripped.split("\n", 1)[0].strip()
    try:
        json.loads(first)
    except (ValueError, RecursionError):
        return False
    return True


def read_documents(path: str, display: str) -> list[tuple[int | None, Any]]:
    """The JSON documents of a file, each with its line (None for a single document)."""
    text = read_text(path, display, max_bytes=MAX_BYTES)
    if not text.strip():
        raise fail(display, "empty file: expected JSON (a trace export or an eval log)")
    if not _is_lines(text):
        return [(None, parse_text(text, display))]
    docs = []
    for number, raw in enumerate(text.split("\n"), 1):
        if raw.strip():
            docs.append((number, parse_text(raw, display, number)))
    return docs
