"""Stream framings: server-sent events, newline-delimited JSON and JSON arrays."""
from __future__ import annotations

import json
from typing import Any

from ._common import NormalizeError

DONE = "[DONE]"

_raw_decode = json.JSONDecoder().raw_decode
_SSE_FIELDS = ("data:", "event:", "id:", "retry:", ":")


def framing_of(text: str) -> str:
    """Which framing a stream's text uses: sse, ndjson or json-array."""
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("["):
        return "json-array"
    for line in stripped.splitlines():
        if line.strip():
            if line.startswith(_SSE_FIELDS):
                return "sse"
            break
    if stripped.startswith("{"):
        return "ndjson"
    raise NormalizeError(
        "unknown stream framing: expected server-sent events (data: lines), "
        "newline-delimited JSON or a JSON array"
    )


def _decode(data: str, last: bool, where: str) -> tuple[Any, bool]:
    """(parsed data, cut): unparseable data is a cut stream only at the very end."""
    try:
        return json.loads(data), False
    except ValueError:
        if last:
            return None, True
        raise NormalizeError(f"{where} is not JSON: {data[:80]!r}") from None


def _sse_blocks(text: str) -> list[tuple[str | None, str]]:
    """Raw (event name, data) pairs, in order."""
    blocks: list[tuple[str | None, str]] = []
    name: str | None = None
    data: list[str] = []
    for line in text.splitlines() + [""]:
        if not line.strip():
            if data:
                blocks.append((name, "\n".join(data)))
            name, data = None, []
        elif line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)
        elif line.startswith("event:"):
            name = line[6:].strip()
    return blocks


def parse_sse(text: str) -> tuple[list[tuple[str | None, Any]], bool]:
    """(events as (name, parsed data or DONE), cut) for server-sent events."""
    blocks = _sse_blocks(text)
    events: list[tuple[str | None, Any]] = []
    for i, (name, data) in enumerate(blocks):
        if data.strip() == DONE:
            events.append((name, DONE))
            continue
        obj, cut = _decode(data, i == len(blocks) - 1, f"event {i + 1}'s data")
        if cut:
            return events, True
        events.append((name, obj))
    return events, False


def parse_ndjson(text: str) -> tuple[list[tuple[str | None, Any]], bool]:
    """(events as (None, parsed line), cut) for newline-delimited JSON."""
    lines = [line for line in text.splitlines() if line.strip()]
    events: list[tuple[str | None, Any]] = []
    for i, line in enumerate(lines):
        obj, cut = _decode(line, i == len(lines) - 1, f"line {i + 1}")
        if cut:
            return events, True
        events.append((None, obj))
    return events, False


def parse_json_array(text: str) -> tuple[list[tuple[str | None, Any]], bool]:
    """(events as (None, element), cut) for a JSON array, read element by element."""
    pos = text.index("[") + 1
    events: list[tuple[str | None, Any]] = []
    n = len(text)
    while True:
        while pos < n and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= n:
            return events, True
        if text[pos] == "]":
            return events, False
        try:
            obj, pos = _raw_decode(text, pos)
        except ValueError:
            return events, True
        events.append((None, obj))


def parse(text: str) -> tuple[str, list[tuple[str | None, Any]], bool]:
    """(framing, events, cut) for a stream's text (a byte-order mark before it is no part of
    its first event)."""
    text = text.lstrip("\ufeff")
    framing = framing_of(text)
    if framing == "sse":
        return (framing, *parse_sse(text))
    if framing == "ndjson":
        return (framing, *parse_ndjson(text))
    return (framing, *parse_json_array(text))
