"""Ollama's native /api/chat: `message` with object arguments, `done_reason`, NDJSON streams."""
from __future__ import annotations

import copy
from typing import Any

from . import errors
from ._common import (
    Document,
    arguments_object,
    arguments_text,
    as_dict,
    as_list,
    call,
    content_text,
    data_url,
    document,
    incomplete,
    map_stop,
    usage,
)

NAME = "ollama"
STREAM_END = 'a line with "done": true'

_OPTIONS = (("temperature", "temperature"), ("top_p", "top_p"), ("top_k", "top_k"),
            ("max_tokens", "num_predict"), ("seed", "seed"), ("stop", "stop"),
            ("presence_penalty", "presence_penalty"), ("frequency_penalty", "frequency_penalty"))
_DROPPED = ("messages", "options", "tool_choice", "parallel_tool_calls", "max_completion_tokens",
            "n", "stream_options", "user", "logprobs", "top_logprobs", "logit_bias", "response_format")


def refuse(p: Any) -> str | None:
    """The name of an Ollama payload replayci does not check, or None."""
    if isinstance(p, dict) and "response" in p and "created_at" in p and "message" not in p:
        return "an Ollama /api/generate body (a text completion)"
    return None


def detect(p: Any) -> bool:
    """Whether *p* is an /api/chat response (or its final stream line)."""
    if not isinstance(p, dict) or not isinstance(p.get("message"), dict):
        return False
    return any(k in p for k in ("done", "done_reason", "created_at", "eval_count"))


def normalize(p: dict) -> Document:
    """The normalized document of an /api/chat response."""
    msg = as_dict(p.get("message"))
    calls = []
    for i, tc in enumerate(as_list(msg.get("tool_calls"))):
        tc = as_dict(tc)
        fn = as_dict(tc.get("function"))
        calls.append(call(tc.get("id") or f"call_{i + 1}", fn.get("name"), fn.get("arguments")))
    content = msg.get("content")
    thinking = msg.get("thinking")
    return document(
        calls,
        content if isinstance(content, str) else None,
        map_stop(p.get("done_reason"), bool(calls)),
        usage(p.get("prompt_eval_count"), p.get("eval_count")),
        reasoning=thinking if isinstance(thinking, str) else None,
        model=p.get("model"),
    )


def detect_stream(events: list) -> bool:
    """Whether parsed stream events are /api/chat NDJSON lines."""
    return any(detect(obj) for _, obj in events)


def read_stream(events: list) -> Document:
    """Reassemble /api/chat NDJSON lines; the last must say done: true."""
    content: list[str] = []
    thinking: list[str] = []
    calls: list[dict] = []
    final: dict | None = None
    for _, obj in events:
        if not isinstance(obj, dict):
            continue
        if errors.detect(obj):
            return errors.normalize(obj)
        msg = as_dict(obj.get("message"))
        if isinstance(msg.get("content"), str):
            content.append(msg["content"])
        if isinstance(msg.get("thinking"), str):
            thinking.append(msg["thinking"])
        calls.extend(copy.deepcopy(as_list(msg.get("tool_calls"))))
        if obj.get("done") is True:
            final = obj
    if final is None:
        return incomplete(STREAM_END)
    message = {"role": "assistant", "content": "".join(content), "tool_calls": calls}
    if thinking:
        message["thinking"] = "".join(thinking)
    return normalize({**final, "message": message})


# --- requests -------------------------------------------------------------------------------


def detect_request(r: dict) -> bool:
    """Whether a request is in /api/chat form."""
    if any(k in r for k in ("options", "keep_alive", "think", "format")):
        return True
    for msg in as_list(r.get("messages")):
        msg = as_dict(msg)
        if "images" in msg or "tool_name" in msg:
            return True
        if any(isinstance(as_dict(as_dict(tc).get("function")).get("arguments"), dict)
               for tc in as_list(msg.get("tool_calls"))):
            return True
    return False


def _messages_to_neutral(messages: list) -> list[dict]:
    out: list[dict] = []
    pending: dict[Any, list] = {}
    n = 0
    for msg in messages:
        msg = copy.deepcopy(as_dict(msg))
        msg.pop("thinking", None)
        calls = []
        for tc in as_list(msg.get("tool_calls")):
            fn = as_dict(as_dict(tc).get("function"))
            n += 1
            id_ = tc.get("id") or f"call_{n}"
            pending.setdefault(fn.get("name"), []).append(id_)
            calls.append({"id": id_, "type": "function",
                          "function": {"name": fn.get("name"), "arguments": arguments_text(fn.get("arguments"))}})
        if calls:
            msg["tool_calls"] = calls
            msg["content"] = msg.get("content") or None
        if msg.get("role") == "tool":
            queue = pending.get(msg.get("tool_name")) or []
            msg["tool_call_id"] = msg.get("tool_call_id") or (queue[0] if queue else msg.get("tool_name"))
            if msg["tool_call_id"] in queue:
                queue.remove(msg["tool_call_id"])
            msg.pop("tool_name", None)
        out.append(msg)
    return out


def to_neutral(r: dict) -> dict:
    """An /api/chat request as a neutral (chat-completions) request."""
    out: dict[str, Any] = {k: copy.deepcopy(v) for k, v in r.items() if k not in ("messages", "options")}
    out["messages"] = _messages_to_neutral(as_list(r.get("messages")))
    options = dict(as_dict(r.get("options")))
    for neutral, key in _OPTIONS:
        if options.get(key) is not None:
            out[neutral] = options.pop(key)
    if options:
        out["options"] = options
    return out


def _message_from_neutral(msg: dict, names: dict, where: str) -> dict:
    out = {k: copy.deepcopy(v) for k, v in msg.items() if k not in ("tool_calls", "content", "name")}
    content = msg.get("content")
    if isinstance(content, list):
        images = []
        for part in content:
            inline = data_url(as_dict(as_dict(part).get("image_url")).get("url"))
            if inline is not None:
                images.append(inline[1])
        content = content_text([p for p in content if as_dict(p).get("type") != "image_url"], where)
        if images:
            out["images"] = out.get("images", []) + images
    out["content"] = content if isinstance(content, str) else ""
    calls = []
    for i, tc in enumerate(as_list(msg.get("tool_calls"))):
        fn = as_dict(as_dict(tc).get("function"))
        entry: dict[str, Any] = {"function": {"name": fn.get("name"), "arguments": arguments_object(
            fn.get("arguments"), f"{where}.tool_calls[{i}]")}}
        if tc.get("id"):
            entry["id"] = tc["id"]
            names[tc["id"]] = fn.get("name")
        calls.append(entry)
    if calls:
        out["tool_calls"] = calls
    if msg.get("role") == "tool" and msg.get("tool_call_id") in names:
        out["tool_name"] = names[msg["tool_call_id"]]
    return out


def from_neutral(n: dict) -> dict:
    """A neutral request as an /api/chat request."""
    names: dict[str, str] = {}
    body: dict[str, Any] = {k: copy.deepcopy(v) for k, v in n.items() if k not in _DROPPED}
    body["messages"] = [_message_from_neutral(as_dict(m), names, f"messages[{i}]")
                        for i, m in enumerate(as_list(n.get("messages")))]
    options = dict(as_dict(n.get("options")))
    for neutral, key in _OPTIONS:
        body.pop(neutral, None)
        if n.get(neutral) is not None:
            options[key] = n[neutral]
    if n.get("max_tokens") is None and n.get("max_completion_tokens") is not None:
        options["num_predict"] = n["max_completion_tokens"]
    if options:
        body["options"] = options
    return body
