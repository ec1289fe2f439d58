"""Normalized responses back in replayci's canonical (OpenAI-shaped) forms: the fixture form
that normalizes back to the same document, the conversation turns of an agent loop, and the
stable part a fingerprint hashes."""
from __future__ import annotations

import json
from typing import Any


def openai_tool_call(call: dict) -> dict:
    """A normalized tool call in OpenAI form, its arguments the raw text the model sent."""
    return {"id": call.get("id"), "type": "function",
            "function": {"name": call.get("name"), "arguments": call.get("arguments_raw")}}


def fixture_response(document: dict) -> dict:
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


def stable_response(response: dict | None) -> Any:
    """The response without what changes between identical runs (ids, usage, latency)."""
    if not response:
        return None
    out = {k: v for k, v in response.items() if k not in ("usage", "latency_ms", "raw", "id")}
    out["tool_calls"] = [{k: v for k, v in c.items() if k != "id"} for c in response.get("tool_calls") or []]
    return out
