"""The canonical form fixtures are written in (the normalized document itself, loosely), and the
way back: a normalized document as a fixture response, as conversation turns, and the stable
part a fingerprint hashes."""
from __future__ import annotations

import json
from typing import Any

from ._common import OPTIONAL_KEYS, Document, NormalizeError, as_list, call, document, server_call

NAME = "canonical"

_KEYS = ("success", "tool_calls", "content", "function_call")
# A fixture's stop_reason is kept as written; provider names written by hand get OpenAI's.
_STOP_REASONS = {"tool_use": "tool_calls", "end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
                 "function_call": "tool_calls"}


def detect(p: Any) -> bool:
    """Whether *p* looks like a canonical response document."""
    return isinstance(p, dict) and any(k in p for k in _KEYS)


def _calls(p: dict) -> list[dict]:
    calls = []
    for i, tc in enumerate(as_list(p.get("tool_calls"))):
        if not isinstance(tc, dict):
            raise NormalizeError(f"tool_calls[{i}] must be an object")
        id_ = tc.get("id") or f"call_{i + 1}"
        if "function" in tc:
            fn = tc.get("function") or {}
            calls.append(call(id_, fn.get("name"), fn.get("arguments")))
        else:
            raw = tc["arguments_raw"] if "arguments_raw" in tc else tc.get("arguments")
            calls.append(call(id_, tc.get("name"), raw))
    fc = p.get("function_call")
    if not calls and isinstance(fc, dict) and fc.get("name"):
        calls.append(call("call_1", fc.get("name"), fc.get("arguments")))
    return calls


def _usage(u: Any) -> dict | None:
    if not isinstance(u, dict):
        return None
    out = {"input_tokens": u.get("input_tokens", u.get("prompt_tokens")),
           "output_tokens": u.get("output_tokens", u.get("completion_tokens"))}
    cached = u.get("cached_input_tokens")
    if isinstance(cached, int) and not isinstance(cached, bool) and cached > 0:
        out["cached_input_tokens"] = cached
    return out


def normalize(p: dict) -> Document:
    """The normalized document of a canonical response."""
    calls = _calls(p)
    stop = p.get("stop_reason")
    if stop is None:
        stop = "tool_calls" if calls else ("stop" if p.get("content") is not None else None)
    servers = [
        server_call(s.get("name"), s.get("arguments"))
        for s in as_list(p.get("server_tool_calls"))
        if isinstance(s, dict)
    ]
    doc = document(
        calls,
        p.get("content"),
        _STOP_REASONS.get(stop, stop),
        _usage(p.get("usage")),
        reasoning=p.get("reasoning"),
        refusal=p.get("refusal"),
        server_tool_calls=servers,
        model=p.get("model"),
    )
    doc["content"] = p.get("content")  # as written, "" included
    return doc


# ------------------------------------------------ back from the normalized document


def openai_tool_call(call: dict) -> dict:
    """A normalized tool call in OpenAI form, its arguments the raw text the model sent."""
    return {"id": call.get("id"), "type": "function",
            "function": {"name": call.get("name"), "arguments": call.get("arguments_raw")}}


def fixture_response(document: Document) -> dict:
    """A normalized response in the canonical fixture form that normalizes back to it."""
    if not document.get("success", True):
        return {"success": False, "error": dict(document.get("error") or {})}
    out: dict = {
        "success": True,
        "tool_calls": [openai_tool_call(c) for c in document.get("tool_calls") or []],
        "content": document.get("content"),
    }
    if document.get("stop_reason") is not None:
        out["stop_reason"] = document["stop_reason"]
    if document.get("usage"):
        out["usage"] = document["usage"]
    for key in OPTIONAL_KEYS:  # only where the response had them: older fixtures stay as they were
        if document.get(key):
            out[key] = document[key]
    return out


def assistant_message(response: dict) -> dict:
    """The assistant turn of a response, in OpenAI form, for the conversation."""
    calls = []
    for c in response.get("tool_calls") or []:
        call = openai_tool_call(c)
        if not isinstance(call["function"]["arguments"], str):  # a provider takes text only
            call["function"]["arguments"] = json.dumps(c.get("arguments"))
        calls.append(call)
    return {"role": "assistant", "content": response.get("content"), "tool_calls": calls}


def tool_message(call_id: Any, result: Any) -> dict:
    """The tool-result message for one call, in OpenAI form (translated for Anthropic)."""
    content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    return {"role": "tool", "tool_call_id": call_id, "content": content}


# Keys a document carries only for some formats (OPTIONAL_KEYS): absent and empty hash alike,
# so responses that never had them keep the fingerprints they always had.
_UNSTABLE_KEYS = ("usage", "latency_ms", "cost_usd", "raw", "id")


def stable_response(response: Document | None) -> Any:
    """The response without what changes between identical runs (ids, usage, latency, cost)."""
    if not response:
        return None
    out = dict(response)  # (a copy and a few deletions: quicker than a comprehension over every key)
    for key in _UNSTABLE_KEYS:
        out.pop(key, None)
    for key in OPTIONAL_KEYS:
        if key in out and not out[key]:
            del out[key]
    out["tool_calls"] = [{k: v for k, v in c.items() if k != "id"} for c in response.get("tool_calls") or []]
    return out


def unnamed_call(response: dict) -> tuple[int, Any] | None:
    """(position from 1, name) of the first tool call of a normalized *response* named by
    neither a string nor null (an object, say: what a model may send, and a pack cannot hold);
    None when there is none."""
    for n, c in enumerate(response.get("tool_calls") or (), 1):
        if not isinstance(c.get("name"), (str, type(None))):
            return n, c.get("name")
    return None
