"""Stream framings: server-sent events, newline-delimited JSON and JSON arrays."""
from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

from ._common import NormalizeError

DONE = "[DONE]"

_raw_decode = json.JSONDecoder().raw_decode
_SSE_FIELDS = ("data:", "event:", "id:", "retry:", ":")
# A stream's line breaks: CR LF, CR or LF, and nothing else (str.splitlines also breaks at U+2028,
# U+0085 and more, which a model's text inside an event's JSON may hold).
_BREAK = re.compile(r"\r\n|\r|\n")


def _lines(text: str) -> list[str]:
    return _BREAK.split(text)


def framing_of(text: str) -> str:
    """Which framing a stream's text uses: sse, ndjson or json-array."""
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("["):
        return "json-array"
    for line in _lines(stripped):
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
    for line in _lines(text) + [""]:
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
    lines = [line for line in _lines(text) if line.strip()]
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

# Characters str.splitlines breaks at that JSON leaves unescaped: escaped in data written back.
_UNSAFE = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _dumps_line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False).translate(_UNSAFE)


# Keys whose numbers and booleans are a stream's own framing inside an event's data: which block,
# item or part a delta belongs to, and the end of an NDJSON stream.
_FRAMING_KEYS = frozenset(("index", "output_index", "content_index", "summary_index", "contentBlockIndex",
                           "sequence_number", "done"))


def _framing_kept(before: Any, after: Any) -> Any:
    """*after* (a changed copy of *before*) with the numbers and booleans under framing keys put back."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key, value in before.items():
            if key not in after:
                continue
            if key in _FRAMING_KEYS and isinstance(value, (int, float)):  # bool is an int
                after[key] = value
            else:
                after[key] = _framing_kept(value, after[key])
    elif isinstance(before, list) and isinstance(after, list):
        for old, new in zip(before, after, strict=False):
            _framing_kept(old, new)
    return after


def _replaced(data: str, change: Callable[[Any], Any]) -> str:
    """An event's data with *change* applied to its JSON (a payload that is not JSON is changed as
    a string; the terminal [DONE] never is; numbers and booleans of the framing are kept)."""
    if data.strip() == DONE:
        return data
    try:
        value = json.loads(data)
    except ValueError:
        changed = change(data)
        return data if changed == data else changed if isinstance(changed, str) else _dumps_line(changed)
    changed = _framing_kept(value, change(json.loads(data)))
    return data if changed == value else _dumps_line(changed)


def rewrite_data(text: str, change: Callable[[Any], Any]) -> str | None:
    """*text*, a server-sent-event or newline-delimited JSON stream, with *change* applied to
    each event's data and its framing kept byte for byte: event names, ids, comments, blank lines
    and line breaks. None when *text* is not such a stream."""
    try:
        framing = framing_of(text)
    except NormalizeError:
        return None
    if framing == "json-array":
        try:
            events = json.loads(text.lstrip("\ufeff"))
        except ValueError:
            return None
        if not isinstance(events, list):
            return None
        changed = [_framing_kept(e, change(copy.deepcopy(e))) for e in events]
        return text if changed == events else _dumps_line(changed)
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    pieces = _BREAK.split(text[len(bom):])
    ends = [*_BREAK.findall(text), ""]
    if framing == "ndjson":
        return bom + "".join((_replaced(line, change) if line.strip() else line) + end
                             for line, end in zip(pieces, ends, strict=True))
    out: list[str] = []
    event: list[int] = []  # where the data lines of the event being read are in *out*
    for i, (line, end) in enumerate(zip(pieces, ends, strict=True)):
        out.append(line + end)
        if line.startswith("data:"):
            event.append(i)
        if not line.strip() or i == len(pieces) - 1:
            _rewrite_event(out, pieces, ends, event, change)
            event = []
    return bom + "".join(out)


def _rewrite_event(out: list[str], pieces: list[str], ends: list[str], event: list[int],
                   change: Callable[[Any], Any]) -> None:
    """The data lines *event* of *out* replaced by one line holding the changed data."""
    if not event:
        return
    values = [pieces[i][5:] for i in event]
    data = "\n".join(v[1:] if v.startswith(" ") else v for v in values)
    new = _replaced(data, change)
    if new == data:
        return
    first = event[0]
    out[first] = "data:" + (" " if values[0].startswith(" ") else "") + _BREAK.sub(" ", new) + ends[first]
    for i in event[1:]:
        out[i] = ""
