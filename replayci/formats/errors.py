"""Error bodies: OpenAI-style {"error": {...}} / {"error": "text"}, Anthropic, Gemini, Bedrock."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._common import Document, canonical_json, error_document

NAME = "error"


def _bedrock(p: dict) -> bool:
    return any(k in p for k in ("message", "Message")) and any(k in p for k in ("__type", "Type"))


def detect(p: Any) -> bool:
    """Whether *p* is an error body of any provider (or a failed canonical document)."""
    if not isinstance(p, dict):
        return False
    if p.get("success") is False or p.get("type") == "error" or p.get("object") == "error":
        return True
    err = p.get("error")
    if p.get("success") is not True and ((isinstance(err, dict) and err) or (isinstance(err, str) and err)):
        return True
    return _bedrock(p)


_TYPE_HEADER = "x-amzn-errortype"


def header_type(headers: Any) -> str | None:
    """The error type a response's headers name (Bedrock's x-amzn-ErrorType), or None."""
    if not headers:
        return None
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    try:
        found = next((v for k, v in pairs if isinstance(k, str) and k.lower() == _TYPE_HEADER), None)
    except (TypeError, ValueError):  # not name-value pairs
        return None
    return found if isinstance(found, str) and found.strip() else None


def typed_by_header(p: Any) -> bool:
    """Whether *p* is an error body whose type is in a header: a message and nothing of an answer."""
    return (isinstance(p, dict) and any(isinstance(p.get(k), str) for k in ("message", "Message"))
            and not any(k in p for k in ("output", "choices", "candidates", "content", "type", "error")))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _fields(p: dict) -> tuple[Any, Any, Any]:
    """(type, status, message) as the body tells them."""
    err = p.get("error")
    if isinstance(err, str):
        return _text(p.get("type")) if p.get("type") != "error" else None, _int(p.get("status")), err
    if isinstance(err, dict):
        type_ = _text(err.get("type")) or _text(err.get("status")) or _text(err.get("code"))
        status = _int(err.get("status")) or _int(err.get("code")) or _int(p.get("status"))
        return type_, status, err.get("message") or err.get("msg") or ""
    if _bedrock(p):
        raw_type = _text(p.get("__type")) or _text(p.get("Type")) or ""
        return raw_type.rsplit("#", 1)[-1].split(":", 1)[0] or None, None, p.get("message") or p.get("Message")
    # Responses stream `error` events, vLLM/Mistral {"object": "error"}, bare bodies.
    type_ = _text(p.get("code")) or (p.get("type") if p.get("type") not in (None, "error") else None)
    return type_, _int(p.get("status")) or _int(p.get("code")), p.get("message") or p.get("detail") or ""


def normalize(p: dict, status: int | None = None) -> Document:
    """The error document of an error body; a recorded HTTP *status* wins over the body's."""
    type_, body_status, message = _fields(p)
    return error_document(type_ or "error", status if status is not None else body_status, message)


def from_status(body: Any, status: int) -> dict:
    """The error document of a response whose HTTP status says it failed."""
    if detect(body):
        return normalize(body, status)
    if isinstance(body, str):
        message = body.strip()[:2000]
    elif body is None:
        message = ""
    elif isinstance(body, dict) and any(isinstance(body.get(k), str) for k in ("message", "Message", "detail")):
        message = next(body[k] for k in ("message", "Message", "detail") if isinstance(body.get(k), str))
    else:
        try:
            message = canonical_json(body)[:2000]
        except (TypeError, ValueError):
            message = str(body)[:2000]
    return error_document("http_error", status, message or f"HTTP {status}")
