"""HAR 1.2 files (browsers, Playwright, Polly.js, mitmproxy): `log.entries[].request` with
`postData.text` and `response.content.text`, `encoding: base64` when the recorder kept bytes."""
from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from ...core.errors import ConfigError, Problem
from . import Reading, read_bytes
from .http import Http, each_entry

NAME = "har"
_HAR_START = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"log"\s*:')


def detect(path: str, head: bytes) -> bool:
    """A HAR file: a JSON object whose first key is `log` (as every recorder writes it)."""
    return _HAR_START.match(head) is not None


def read(path: str, display: str) -> Reading:
    """Every entry of the HAR file at *path*, as model exchanges or passed over."""
    data = read_bytes(path, display)
    try:
        doc = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise ConfigError(Problem(display, None, None, f"not UTF-8 text ({exc})")) from None
    except RecursionError:
        raise ConfigError(Problem(display, None, None, "nested too deeply for replayci to read")) from None
    except ValueError as exc:
        line, col = getattr(exc, "lineno", None), getattr(exc, "colno", None)
        raise ConfigError(Problem(display, line, col,
                                  f"not valid JSON (truncated?): {getattr(exc, 'msg', exc)}")) from None
    log = doc.get("log") if isinstance(doc, dict) else None
    entries = log.get("entries") if isinstance(log, dict) else None
    if not isinstance(entries, list):
        raise ConfigError(Problem(display, None, None, "not a HAR file: expected {\"log\": {\"entries\": [...]}}"))
    return each_entry(Reading(display, NAME), entries, _http, f"{display}: entry")


def _http(n: int, entry: Any, where: str) -> Http:
    request = entry.get("request") if isinstance(entry, dict) else None
    response = entry.get("response") if isinstance(entry, dict) else None
    if not isinstance(request, dict) or not isinstance(response, dict):
        raise ConfigError(Problem(where, None, None, "expected an object with 'request' and 'response'"))
    if not isinstance(request.get("url"), str):
        raise ConfigError(Problem(where, None, None, "the request has no 'url'"))
    status = response.get("status")
    if type(status) is not int:
        raise ConfigError(Problem(where, None, None, "the response has no numeric 'status'"))
    post = request.get("postData") if isinstance(request.get("postData"), dict) else {}
    content = response.get("content") if isinstance(response.get("content"), dict) else {}
    cookies = [("cookie", str(c.get("value"))) for c in request.get("cookies") or ()
               if isinstance(c, dict) and c.get("value")] if isinstance(request.get("cookies"), list) else []
    return Http(n, str(request.get("method") or "GET"), request["url"], _headers(request.get("headers")) + cookies,
                _text(post, where, "request"), status, _headers(response.get("headers")),
                _text(content, where, "response") or b"")


def _headers(headers: Any) -> list[tuple[str, str]]:
    return [(str(h.get("name")), str(h.get("value"))) for h in headers or ()
            if isinstance(h, dict) and h.get("name") is not None] if isinstance(headers, list) else []


def _text(part: dict, where: str, what: str) -> bytes | None:
    """`text` of a postData or content object, base64-decoded when its `encoding` says so."""
    text = part.get("text")
    if text is None:
        return None
    if not isinstance(text, str):
        raise ConfigError(Problem(where, None, None, f"the {what} text is a {type(text).__name__}, expected text"))
    if str(part.get("encoding") or "").lower() == "base64":
        try:
            return base64.b64decode(text, validate=False)
        except (binascii.Error, ValueError) as exc:
            raise ConfigError(Problem(where, None, None, f"the {what} text is not valid base64 ({exc})")) from None
    return text.encode("utf-8", "surrogatepass")
