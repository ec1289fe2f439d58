"""OpenAI Responses API: `object: response` with `output[]` items; `input` / `instructions` requests."""
from __future__ import annotations

import copy
from typing import Any

from . import errors
from ._common import (
    Document,
    add_piece,
    as_dict,
    as_list,
    call,
    content_text,
    document,
    error_document,
    incomplete,
    join_pieces,
    map_stop,
    server_call,
    text_or_none,
    usage,
)

NAME = "openai-responses"
STREAM_END = "response.completed"

# Output items the application executes: (item type, tool name when the item has none, arguments key).
_CLIENT_ITEMS = {
    "function_call": (None, "arguments"),
    "custom_tool_call": (None, "input"),
    "computer_call": ("computer", "action"),
    "local_shell_call": ("local_shell", "action"),
    "shell_call": ("shell", "action"),
    "apply_patch_call": ("apply_patch", "operation"),
}
_STATUSES = ("completed", "incomplete", "failed", "in_progress", "queued", "cancelled")
_TERMINAL = ("response.completed", "response.incomplete", "response.failed", "response.cancelled")
_CHAT_ONLY = ("stop", "n", "logprobs", "top_logprobs", "frequency_penalty", "presence_penalty",
              "seed", "stream_options", "logit_bias", "functions", "function_call", "modalities",
              "audio", "prediction", "web_search_options")


def detect(p: Any) -> bool:
    """Whether *p* is a Responses API response object."""
    if not isinstance(p, dict):
        return False
    if p.get("object") == "response":
        return True
    output = p.get("output")
    return (isinstance(output, list) and (isinstance(p.get("status"), str) and p["status"] in _STATUSES)
            and all(isinstance(item, dict) and "type" in item for item in output))


def _server_call(item: dict) -> dict | None:
    """A provider-run tool call from an output item, or None for other items."""
    kind = item.get("type")
    if kind == "web_search_call":
        return server_call("web_search", item.get("action") or {})
    if kind == "file_search_call":
        return server_call("file_search", {"queries": item.get("queries") or []})
    if kind == "mcp_call":
        return server_call(item.get("name"), item.get("arguments"))
    if kind == "code_interpreter_call":
        return server_call("code_interpreter", {"code": item.get("code")})
    if kind == "image_generation_call":
        return server_call("image_generation", {})
    return None


def _read_item(item: dict, acc: dict) -> None:
    """Sort one output item into the accumulators."""
    kind = item.get("type")
    if kind in _CLIENT_ITEMS:
        default_name, key = _CLIENT_ITEMS[kind]
        id_ = item.get("call_id") or item.get("id") or f"call_{len(acc['calls']) + 1}"
        acc["calls"].append(call(id_, item.get("name") or default_name, item.get(key)))
    elif kind == "message":
        for part in as_list(item.get("content")):
            part = as_dict(part)
            if part.get("type") in ("output_text", "text"):
                acc["texts"].append(part.get("text") or "")
            elif part.get("type") == "refusal":
                acc["texts"].append(part.get("refusal") or "")
                acc["refusals"].append(part.get("refusal") or "")
    elif kind == "reasoning":
        for part in as_list(item.get("summary")) + as_list(item.get("content")):
            acc["reasoning"].append(as_dict(part).get("text") or "")
    else:
        server = _server_call(item)
        if server is not None:
            acc["servers"].append(server)


def _stop(p: dict, has_calls: bool) -> Any:
    status = p.get("status")
    if status == "incomplete":
        reason = as_dict(p.get("incomplete_details")).get("reason")
        return map_stop(reason or "incomplete", has_calls)
    return map_stop(status, has_calls)


def normalize(p: dict) -> Document:
    """The normalized document of a Responses API response."""
    err = p.get("error")
    if p.get("status") == "failed" or (isinstance(err, dict) and err):
        err = as_dict(err)
        return error_document(err.get("code") or err.get("type") or "response_failed", None,
                              err.get("message") or "the response failed", model=p.get("model"))
    acc: dict[str, list] = {"calls": [], "texts": [], "refusals": [], "reasoning": [], "servers": []}
    for item in as_list(p.get("output")):
        _read_item(as_dict(item), acc)
    u = as_dict(p.get("usage"))
    return document(
        acc["calls"],
        text_or_none(acc["texts"]),
        _stop(p, bool(acc["calls"])),
        usage(u.get("input_tokens"), u.get("output_tokens"),
              as_dict(u.get("input_tokens_details")).get("cached_tokens")) if u else None,
        reasoning=text_or_none(acc["reasoning"]),
        refusal=text_or_none(acc["refusals"]),
        server_tool_calls=acc["servers"],
        model=p.get("model"),
    )


def detect_stream(events: list) -> bool:
    """Whether parsed stream events are Responses `response.*` events."""
    for name, obj in events:
        kind = as_dict(obj).get("type") or name
        if isinstance(kind, str) and kind.startswith("response."):
            return True
    return False


def _part(item: dict, index: Any, kind: str) -> dict:
    """The content part *index* of a message item, created when missing."""
    content = item.setdefault("content", [])
    i = index if isinstance(index, int) else max(len(content) - 1, 0)
    while len(content) <= i:
        content.append({"type": kind, kind.replace("output_", ""): ""})
    return content[i]


def _apply_event(kind: str, obj: dict, items: dict, done: set) -> None:
    """Fold one `response.*` event into the output items being assembled."""
    index = obj.get("output_index")
    if kind == "response.output_item.added" and index not in done:
        items[index] = copy.deepcopy(as_dict(obj.get("item")))
        return
    if kind == "response.output_item.done":
        items[index] = as_dict(obj.get("item"))
        done.add(index)
        return
    if index in done or index not in items:
        return
    item = items[index]
    delta = obj.get("delta") if isinstance(obj.get("delta"), str) else ""
    if kind == "response.function_call_arguments.delta":
        item["arguments"] = add_piece(item.get("arguments"), delta)
    elif kind == "response.function_call_arguments.done":
        item["arguments"] = obj.get("arguments", item.get("arguments"))
    elif kind == "response.custom_tool_call_input.delta":
        item["input"] = add_piece(item.get("input"), delta)
    elif kind == "response.output_text.delta":
        part = _part(item, obj.get("content_index"), "output_text")
        part["text"] = add_piece(part.get("text"), delta)
    elif kind == "response.refusal.delta":
        part = _part(item, obj.get("content_index"), "refusal")
        part["refusal"] = add_piece(part.get("refusal"), delta)


def read_stream(events: list) -> Document:
    """Reassemble `response.*` events into the non-streamed document."""
    items: dict[Any, dict] = {}
    done: set = set()
    final: dict | None = None
    for name, obj in events:
        if not isinstance(obj, dict):
            continue
        kind = obj.get("type") or name
        if kind == "error" or (kind is None and errors.detect(obj)):
            return errors.normalize(obj)
        if kind in _TERMINAL:
            final = as_dict(obj.get("response"))
            continue
        _apply_event(kind or "", obj, items, done)
    if final is None:
        return incomplete(STREAM_END)
    join_pieces(items)
    if not as_list(final.get("output")) and items:
        keys = sorted(items, key=lambda k: k if isinstance(k, int) else 0)
        final = {**final, "output": [items[k] for k in keys]}
    return normalize(final)


def detect_request(r: dict) -> bool:
    """Whether a request is in Responses form (`input` / `instructions`)."""
    return "input" in r or ("instructions" in r and "messages" not in r)


def _part_to_neutral(part: Any) -> Any:
    part = as_dict(part) if not isinstance(part, str) else {"type": "input_text", "text": part}
    kind = part.get("type")
    if kind in ("input_text", "output_text", "text"):
        return {"type": "text", "text": part.get("text", "")}
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        image = {"url": part["image_url"]}
        if part.get("detail"):
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    return part


def _part_from_neutral(part: Any, role: str) -> Any:
    part = as_dict(part) if not isinstance(part, str) else {"type": "text", "text": part}
    kind = part.get("type")
    if kind == "text":
        return {"type": "output_text" if role == "assistant" else "input_text", "text": part.get("text", "")}
    if kind == "image_url":
        image = part.get("image_url")
        image = image if isinstance(image, dict) else {"url": image}
        out = {"type": "input_image", "image_url": image.get("url")}
        if image.get("detail"):
            out["detail"] = image["detail"]
        return out
    return part


def _tool_call_to_neutral(item: dict) -> dict:
    if item.get("type") == "custom_tool_call":
        return {"id": item.get("call_id"), "type": "custom",
                "custom": {"name": item.get("name"), "input": item.get("input", "")}}
    return {"id": item.get("call_id"), "type": "function",
            "function": {"name": item.get("name"), "arguments": item.get("arguments", "")}}


def _items_to_messages(items: list) -> list[dict]:
    """Responses input items as neutral messages."""
    messages: list[dict] = []
    for item in items:
        item = as_dict(item) if not isinstance(item, str) else {"role": "user", "content": item}
        kind = item.get("type", "message")
        if kind == "message" and item.get("role"):
            content = item.get("content")
            if isinstance(content, list):
                content = [_part_to_neutral(p) for p in content]
            messages.append({"role": item["role"], "content": content})
        elif kind in ("function_call", "custom_tool_call"):
            if not (messages and messages[-1].get("role") == "assistant"):
                messages.append({"role": "assistant", "content": None})
            messages[-1].setdefault("tool_calls", []).append(_tool_call_to_neutral(item))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output")})
        else:  # reasoning, item_reference, built-in tool calls: kept as sent, for Responses only
            messages.append(copy.deepcopy(item))
    return messages


def _tool_to_neutral(tool: Any) -> Any:
    tool = as_dict(tool)
    if tool.get("type") != "function":
        return tool
    fn = {k: tool[k] for k in ("name", "description", "parameters", "strict") if k in tool}
    return {"type": "function", "function": fn}


def _choice_to_neutral(choice: Any) -> Any:
    if isinstance(choice, dict) and choice.get("type") == "function" and "name" in choice:
        return {"type": "function", "function": {"name": choice["name"]}}
    return choice


def _text_to_neutral(text: Any, out: dict) -> None:
    """`text.format` as `response_format`; other `text` settings stay as they are."""
    text = dict(as_dict(text))
    fmt = as_dict(text.pop("format", None))
    if fmt.get("type") == "json_schema":
        out["response_format"] = {"type": "json_schema",
                                  "json_schema": {k: v for k, v in fmt.items() if k != "type"}}
    elif fmt:
        out["response_format"] = dict(fmt)
    if text:
        out["text"] = text


def _text_from_neutral(n: dict, out: dict) -> None:
    """`response_format` as `text.format`, beside any other `text` settings."""
    text = dict(as_dict(n.get("text")))
    fmt = as_dict(n.get("response_format"))
    if fmt.get("type") == "json_schema":
        text["format"] = {"type": "json_schema", **as_dict(fmt.get("json_schema"))}
    elif fmt:
        text["format"] = dict(fmt)
    if text:
        out["text"] = text


def to_neutral(r: dict) -> dict:
    """A Responses request as a neutral (chat-completions) request."""
    out: dict[str, Any] = {}
    messages: list[dict] = []
    if isinstance(r.get("instructions"), str):
        messages.append({"role": "system", "content": r["instructions"]})
    source = r.get("input")
    messages.extend(_items_to_messages([source] if isinstance(source, str) else as_list(source)))
    for key, value in r.items():
        if key in ("instructions", "input"):
            continue
        if key == "tools":
            out["tools"] = [_tool_to_neutral(t) for t in as_list(value)]
        elif key == "tool_choice":
            out["tool_choice"] = _choice_to_neutral(value)
        elif key == "max_output_tokens":
            out["max_tokens"] = value
        elif key == "text":
            _text_to_neutral(value, out)
        else:
            out[key] = copy.deepcopy(value)
    out["messages"] = messages
    return out


def _message_items(msg: dict, where: str) -> list[dict]:
    """One neutral message as Responses input items."""
    role = msg.get("role")
    if role is None and msg.get("type"):
        return [copy.deepcopy(msg)]  # an input item only Responses has, kept as sent
    if role == "tool":
        content = msg.get("content")
        output = content if isinstance(content, str) else content_text(content, where)
        return [{"type": "function_call_output", "call_id": msg.get("tool_call_id"), "output": output}]
    items: list[dict] = []
    content = msg.get("content")
    if isinstance(content, list):
        items.append({"role": role, "content": [_part_from_neutral(p, role) for p in content]})
    elif content or role != "assistant":
        items.append({"role": role, "content": content if content is not None else ""})
    for tc in as_list(msg.get("tool_calls")):
        tc = as_dict(tc)
        if tc.get("type") == "custom":
            custom = as_dict(tc.get("custom"))
            items.append({"type": "custom_tool_call", "call_id": tc.get("id"),
                          "name": custom.get("name"), "input": custom.get("input", "")})
        else:
            fn = as_dict(tc.get("function"))
            items.append({"type": "function_call", "call_id": tc.get("id"),
                          "name": fn.get("name"), "arguments": fn.get("arguments") or ""})
    return items


def _tool_from_neutral(tool: Any) -> Any:
    tool = as_dict(tool)
    if tool.get("type") != "function" or not isinstance(tool.get("function"), dict):
        return tool
    return {"type": "function", **tool["function"]}


def _choice_from_neutral(choice: Any) -> Any:
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        return {"type": "function", "name": choice["function"].get("name")}
    return choice


def from_neutral(n: dict) -> dict:
    """A neutral request as a Responses request."""
    messages = as_list(n.get("messages"))
    out: dict[str, Any] = {}
    if messages and as_dict(messages[0]).get("role") == "system" and isinstance(messages[0].get("content"), str):
        out["instructions"] = messages[0]["content"]
        messages = messages[1:]
    out["input"] = [it for i, m in enumerate(messages) for it in _message_items(as_dict(m), f"messages[{i}]")]
    for key, value in n.items():
        if key == "messages" or key in _CHAT_ONLY:
            continue
        if key == "tools":
            out["tools"] = [_tool_from_neutral(t) for t in as_list(value)]
        elif key == "tool_choice":
            out["tool_choice"] = _choice_from_neutral(value)
        elif key in ("max_tokens", "max_completion_tokens"):
            out["max_output_tokens"] = value
        elif key in ("text", "response_format"):
            _text_from_neutral(n, out)
        else:
            out[key] = copy.deepcopy(value)
    return out
