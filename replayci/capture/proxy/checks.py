"""What the proxy takes in is untrusted: a request body an app sends, a capture someone edited by
hand. The checks here refuse a request the proxy cannot read with a 4xx in the provider's shape
(never a 500), and skip a capture it cannot serve with a message naming the file (never a
crash at start or a dropped connection)."""
from __future__ import annotations

import json
import math
import re
from typing import Any

from ...core.jsonvalue import strict_loads

MAX_REQUEST_BYTES = 32 * 1024 * 1024  # a request body; a model call is far smaller
MAX_DEPTH = 128  # nesting of a request body: messages, content parts and tool schemas fit well within
MAX_FIXTURE_BYTES = 16 * 1024 * 1024  # what the pack reads fixtures under (fixtures.max_bytes' default)
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*\Z")  # no CR, LF or other control character


class BadRequest(ValueError):
    """A request the proxy refuses, with the HTTP status it answers."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def read_body(request: Any) -> bytes:
    """The request's body, read up to MAX_REQUEST_BYTES (BadRequest 413 beyond)."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            raise BadRequest(413, f"the request body is larger than {MAX_REQUEST_BYTES // (1024 * 1024)} MiB")
        chunks.append(chunk)
    return b"".join(chunks)


def request_body(raw: bytes) -> dict:
    """The request body as a JSON object; BadRequest (400) when it is not strict JSON (NaN and
    Infinity are not JSON), not an object, or nested deeper than MAX_DEPTH."""
    try:
        body = strict_loads(raw)
    except RecursionError:
        raise BadRequest(400, f"the body is nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # not JSON, not UTF-8, NaN or Infinity
        raise BadRequest(400, f"the body is not a JSON object (not strict JSON: {_short(exc)})") from None
    if not isinstance(body, dict):
        raise BadRequest(400, "the body is not a JSON object")
    if _deeper_than(body, MAX_DEPTH):
        raise BadRequest(400, f"the body is nested deeper than {MAX_DEPTH} levels")
    return body


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether *value* nests objects and arrays more than *limit* levels (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def _short(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 120 else text[:117] + "..."


# ------------------------------------------------------------------ captures edited by hand


def load_capture(path: str) -> Any:
    """A capture file's JSON (strict: NaN and Infinity refused); ValueError says what is wrong."""
    try:
        with open(path, encoding="utf-8") as fh:
            return strict_loads(fh.read())
    except RecursionError:
        raise ValueError("its JSON is nested too deep") from None
    except UnicodeDecodeError:
        raise ValueError("it is not UTF-8 text") from None
    except ValueError as exc:
        raise ValueError(f"it is not strict JSON ({_short(exc)})") from None


def _text_map(value: Any, header: bool) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) and (not header or (_HEADER_VALUE.match(k) and
                                                                     _HEADER_VALUE.match(v) and k.strip()))
        for k, v in value.items())


def capture_problem(doc: dict, *, captured: bool = True) -> str | None:
    """What keeps a capture (the proxy's own fixture, maybe edited by hand) or an imported
    exchange (*captured* false: its place in the file stands for the occurrence, the endpoint is
    the API's) from being served, or None. Only the fields the proxy serves from are checked
    here; the pack's loader checks the rest when the pack runs."""
    meta = doc.get("meta")
    status = doc.get("status", 200)
    if type(status) is not int or not 100 <= status <= 599:
        return f"'status' is {_shown(status)}, expected an HTTP status from 100 to 599"
    checks = (
        ("meta.endpoint", meta.get("endpoint"), lambda v: isinstance(v, str) or not captured, "text"),
        ("meta.query", meta.get("query") or {}, lambda v: _text_map(v, False), "an object of texts"),
        ("meta.headers", meta.get("headers") or {}, lambda v: _text_map(v, True),
         "an object of header texts (no line breaks)"),
        ("meta.content_type", meta.get("content_type") or "application/json",
         lambda v: isinstance(v, str) and bool(_HEADER_VALUE.match(v)), "a header text (no line breaks)"),
        ("meta.stream", meta.get("stream", False), lambda v: isinstance(v, bool), "true or false"),
        ("meta.occurrence", meta.get("occurrence"), lambda v: (type(v) is int and v >= 1) or not captured,
         "a whole number from 1"),
        ("original_request", doc.get("original_request"), lambda v: isinstance(v, dict), "an object"),
        ("request", doc.get("request"), lambda v: isinstance(v, dict), "an object"),
        ("request.tools", (doc.get("request") or {}).get("tools") if isinstance(doc.get("request"), dict) else None,
         lambda v: v is None or isinstance(v, list), "a list"),
        ("request.messages", (doc.get("request") or {}).get("messages") if isinstance(doc.get("request"), dict)
         else None, lambda v: v is None or isinstance(v, list), "a list"),
        ("response", doc.get("response"), _finite, "a JSON value without NaN or Infinity"),
    )
    for where, value, ok, expected in checks:
        if not ok(value):
            return f"'{where}' is {_shown(value)}, expected {expected}"
    return None


def _finite(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return False
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
