"""Provider payloads -> the normalized response document."""
from __future__ import annotations

import json
from typing import Any

from ..core.hashing import canonical_json

_STOP_REASONS = {
    "tool_use": "tool_calls",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "function_call": "tool_calls",
}

_decode = json.JSONDecoder().decode


class NormalizeError(ValueError):
    """The payload is of no shape replayci knows."""


def _parse_arguments(raw: Any) -> tuple[Any, Any]:
    """(arguments, arguments_raw): parsed JSON when the raw text parses, else the raw value."""
    if isinstance(raw, str):
        try:
            return _decode(raw), raw
        except (ValueError, RecursionError):
            return raw, raw
    if raw is None:
        return raw, raw
    # Already structured (Anthropic `input`, canonical documents written by hand).
    return raw, canonical_json(raw)


def _call(id_: Any, name: Any, raw: Any) -> dict:
    arguments, arguments_raw = _parse_arguments(raw)
    return {"id": id_, "name": name, "arguments": arguments, "arguments_raw": arguments_raw}


def _usage(usage: Any) -> dict | None:
    if not isinstance(usage, dict):
        return None
    inp = usage.get("input_tokens", usage.get("prompt_tokens"))
    out = usage.get("output_tokens", usage.get("completion_tokens"))
    return {"input_tokens": inp, "output_tokens": out}


def _stop(reason: Any) -> Any:
    return _STOP_REASONS.get(reason, reason)


def detect_kind(payload: Any) -> str:
    """Which shape a response payload has: openai, anthropic, error or canonical."""
    if not isinstance(payload, dict):
        raise NormalizeError(f"a response must be a JSON object, got {type(payload).__name__}")
    if "choices" in payload:
        return "openai"
    if payload.get("type") == "message" or (
        "content" in payload and isinstance(payload.get("content"), list) and "role" in payload
    ):
        return "anthropic"
    if payload.get("type") == "error" or payload.get("success") is False:
        return "error"
    if "success" in payload or "tool_calls" in payload or "content" in payload or "function_call" in payload:
        return "canonical"
    raise NormalizeError(
        "unknown response shape: expected a canonical response (success, tool_calls, content), "
        "an OpenAI chat completion (choices), an Anthropic message (type: message) or an error"
    )


def _openai_message(msg: dict) -> tuple[list[dict], Any]:
    calls = []
    for i, tc in enumerate(msg.get("tool_calls") or []):
        fn = tc.get("function") or {}
        calls.append(_call(tc.get("id") or f"call_{i + 1}", fn.get("name"), fn.get("arguments")))
    fc = msg.get("function_call")
    if fc and not calls:
        calls.append(_call("call_1", fc.get("name"), fc.get("arguments")))
    return calls, msg.get("content")


def _from_openai(p: dict) -> dict:
    choices = p.get("choices") or []
    if not choices:
        raise NormalizeError("an OpenAI chat completion with no choices")
    choice = choices[0] or {}
    calls, content = _openai_message(choice.get("message") or {})
    return {
        "success": True,
        "tool_calls": calls,
        "content": content,
        "stop_reason": _stop(choice.get("finish_reason")),
        "usage": _usage(p.get("usage")),
        "error": None,
    }


def _from_anthropic(p: dict) -> dict:
    calls, texts = [], []
    for block in p.get("content") or []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "tool_use":
            calls.append(_call(block.get("id"), block.get("name"), block.get("input")))
        elif kind == "text":
            texts.append(block.get("text") or "")
    return {
        "success": True,
        "tool_calls": calls,
        "content": "".join(texts) if texts else None,
        "stop_reason": _stop(p.get("stop_reason")),
        "usage": _usage(p.get("usage")),
        "error": None,
    }


def _from_error(p: dict) -> dict:
    err = p.get("error")
    if not isinstance(err, dict):
        err = {"type": "error", "message": str(err) if err is not None else "provider error"}
    return {
        "success": False,
        "tool_calls": [],
        "content": None,
        "stop_reason": None,
        "usage": None,
        "error": {
            "type": err.get("type") or "error",
            "status": err.get("status", p.get("status")),
            "message": err.get("message") or "",
        },
    }


def _from_canonical(p: dict) -> dict:
    raw_calls = p.get("tool_calls") or []
    calls = []
    for i, tc in enumerate(raw_calls):
        if not isinstance(tc, dict):
            raise NormalizeError(f"tool_calls[{i}] must be an object")
        if "function" in tc:
            fn = tc.get("function") or {}
            calls.append(_call(tc.get("id") or f"call_{i + 1}", fn.get("name"), fn.get("arguments")))
        else:
            raw = tc["arguments_raw"] if "arguments_raw" in tc else tc.get("arguments")
            calls.append(_call(tc.get("id") or f"call_{i + 1}", tc.get("name"), raw))
    if not calls and p.get("function_call"):
        fc = p["function_call"]
        calls.append(_call("call_1", fc.get("name"), fc.get("arguments")))
    stop = p.get("stop_reason")
    if stop is None:
        stop = "tool_calls" if calls else ("stop" if p.get("content") is not None else None)
    return {
        "success": True,
        "tool_calls": calls,
        "content": p.get("content"),
        "stop_reason": _stop(stop),
        "usage": _usage(p.get("usage")),
        "error": None,
    }


_NORMALIZERS = {
    "openai": _from_openai,
    "anthropic": _from_anthropic,
    "error": _from_error,
    "canonical": _from_canonical,
}


def normalize(payload: Any) -> dict:
    """Normalize any supported response payload; raises NormalizeError on unknown shapes."""
    kind = detect_kind(payload)
    try:
        return _NORMALIZERS[kind](payload)
    except NormalizeError:
        raise
    except (AttributeError, TypeError, KeyError) as exc:
        raise NormalizeError(f"malformed {kind} response: {exc}") from None


def provider_failure(status: int | None, message: str, type_: str = "provider_error") -> dict:
    """A normalized response for a provider call that failed."""
    return _from_error({"success": False, "error": {"type": type_, "status": status, "message": message}})
