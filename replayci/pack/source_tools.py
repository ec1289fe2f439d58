"""Golden fixtures parsed with the request.tools texts seen before reused (parse_request_json)."""
from __future__ import annotations

import json
import threading
from typing import Any

from ..core.errors import ConfigError
from ..core.hashing import canonical_json, tools_key
from ..core.memo import Memo, fast_paths, on_clear
from .source_json import SURROGATE_ESCAPE, WS_CHARS, NotJSON, finite, parse_json, unique_pairs

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
    raise NotJSON(name)


_hole_decode = json.JSONDecoder(object_pairs_hook=unique_pairs, parse_constant=_hole_constant,
                                parse_float=finite).decode
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
        while text[j:j + 1] in WS_CHARS:
            j += 1
        if text[j:j + 1] == ":":
            j += 1
            while text[j:j + 1] in WS_CHARS:
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
            if "\\u" in rest and SURROGATE_ESCAPE.search(rest) is not None:
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
