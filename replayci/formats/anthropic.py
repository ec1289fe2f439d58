"""Anthropic Messages (also Claude bodies through Bedrock InvokeModel)."""
from __future__ import annotations

import copy
import json
from typing import Any

from . import errors
from ._common import (
    Document,
    TranslationError,
    arguments_object,
    arguments_text,
    as_dict,
    as_list,
    call,
    content_text,
    data_url,
    document,
    image_url,
    incomplete,
    loads,
    map_stop,
    server_call,
    text_or_none,
    usage,
)

NAME = "anthropic"
STREAM_END = "message_stop"
DEFAULT_MAX_TOKENS = 1024

_STREAM_TYPES = ("message_start", "content_block_start", "content_block_delta", "content_block_stop",
                 "message_delta", "message_stop", "ping")
_CALL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")
# Content blocks only Anthropic has: kept as sent in the neutral form, and sent back unchanged.
_NATIVE_BLOCKS = frozenset({
    "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use",
    "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
    "bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "mcp_tool_use",
    "mcp_tool_result", "container_upload", "search_result", "tool_search_tool_result",
})
_CHAT_ONLY = ("n", "seed", "response_format", "frequency_penalty", "presence_penalty", "logprobs",
              "top_logprobs", "stream_options", "logit_bias", "user", "parallel_tool_calls",
              "tool_choice", "tools", "stop", "max_completion_tokens", "messages", "functions",
              "function_call", "modalities", "audio", "prediction", "reasoning_effort")


def detect(p: Any) -> bool:
    """Whether *p* is an Anthropic message."""
    if not isinstance(p, dict):
        return False
    return p.get("type") == "message" or (isinstance(p.get("content"), list) and "role" in p)


def normalize(p: dict) -> Document:
    """The normalized document of an Anthropic message."""
    calls, texts, thinking, servers = [], [], [], []
    for block in as_list(p.get("content")):
        block = as_dict(block)
        kind = block.get("type")
        if kind == "tool_use":
            calls.append(call(block.get("id"), block.get("name"), block.get("input")))
        elif kind == "text":
            texts.append(block.get("text") or "")
        elif kind == "thinking":
            thinking.append(block.get("thinking") or "")
        elif kind in ("server_tool_use", "mcp_tool_use"):
            servers.append(server_call(block.get("name"), block.get("input")))
    u = as_dict(p.get("usage"))
    return document(
        calls,
        text_or_none(texts),
        map_stop(p.get("stop_reason"), bool(calls)),
        usage(u.get("input_tokens"), u.get("output_tokens")) if u else None,
        reasoning=text_or_none(thinking),
        server_tool_calls=servers,
        model=p.get("model"),
    )


def detect_stream(events: list) -> bool:
    """Whether parsed stream events are Anthropic message events."""
    for name, obj in events:
        kind = as_dict(obj).get("type") or name
        if kind in _STREAM_TYPES:
            return True
    return False


def _apply_delta(block: dict, delta: dict, partial: list[str]) -> None:
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] = (block.get("text") or "") + (delta.get("text") or "")
    elif kind == "input_json_delta":
        partial.append(delta.get("partial_json") or "")
    elif kind == "thinking_delta":
        block["thinking"] = (block.get("thinking") or "") + (delta.get("thinking") or "")


def _finish_block(block: dict, partial: list[str]) -> dict:
    """A streamed block as the non-streamed message would hold it."""
    if isinstance(block.get("type"), str) and block["type"] in _CALL_BLOCKS:
        text = "".join(partial)
        if text.strip():
            try:
                block["input"] = loads(text)
            except ValueError:
                block["input"] = text  # never closed: malformed arguments, as sent
    return block


def read_stream(events: list) -> Document:
    """Reassemble message_start ... message_stop events into the non-streamed document."""
    message: dict[str, Any] = {"type": "message", "role": "assistant"}
    blocks: dict[int, dict] = {}
    partial: dict[int, list[str]] = {}
    stopped = False
    for name, obj in events:
        obj = as_dict(obj)
        kind = obj.get("type") or name
        if kind == "error" or (kind is None and errors.detect(obj)):
            return errors.normalize(obj)
        if kind == "message_start":
            message.update(copy.deepcopy(as_dict(obj.get("message"))))
        elif kind == "content_block_start":
            blocks[obj.get("index", len(blocks))] = copy.deepcopy(as_dict(obj.get("content_block")))
        elif kind == "content_block_delta":
            index = obj.get("index", 0)
            _apply_delta(blocks.setdefault(index, {}), as_dict(obj.get("delta")), partial.setdefault(index, []))
        elif kind == "message_delta":
            message.update({k: v for k, v in as_dict(obj.get("delta")).items() if v is not None})
            message["usage"] = {**as_dict(message.get("usage")), **as_dict(obj.get("usage"))}
        elif kind == "message_stop":
            stopped = True
    if not stopped:
        return incomplete(STREAM_END)
    message["content"] = [_finish_block(blocks[i], partial.get(i, [])) for i in sorted(blocks)]
    return normalize(message)


# --- requests -------------------------------------------------------------------------------


def _chat_only(r: dict) -> bool:
    """Whether a request's messages have what only the chat form has (system or tool roles, tool_calls)."""
    for msg in as_list(r.get("messages")):
        msg = as_dict(msg)
        if msg.get("role") in ("system", "developer", "tool") or "tool_calls" in msg or "function_call" in msg:
            return True
    return False


def detect_request(r: dict) -> bool:
    """Whether a request is in Anthropic Messages form."""
    if _chat_only(r):
        return False  # e.g. chat messages with flat tools ({name, parameters})
    if any(k in r for k in ("anthropic_version", "anthropic_beta", "stop_sequences", "top_k", "output_config",
                            "output_format")):
        return True
    if ("system" in r and isinstance(r.get("messages"), list)) or isinstance(r.get("thinking"), dict):
        return True
    if as_dict(r.get("tool_choice")).get("type") in ("auto", "any", "tool", "none"):
        return True
    for tool in as_list(r.get("tools")):
        tool = as_dict(tool)
        if "input_schema" in tool or (tool.get("name") and "function" not in tool and tool.get("type") != "function"):
            return True
    for msg in as_list(r.get("messages")):
        for block in as_list(as_dict(msg).get("content")):
            block = as_dict(block)
            kind = block.get("type")
            if isinstance(kind, str) and kind in _NATIVE_BLOCKS and (kind != "image" or "source" in block):
                return True
    return False


def _block_to_part(block: dict) -> Any:
    """An Anthropic content block as a neutral content part."""
    if block.get("type") == "text":
        return {"type": "text", "text": block.get("text", "")}
    source = as_dict(block.get("source"))
    if block.get("type") == "image" and source.get("type") == "base64":
        url = f"data:{source.get('media_type')};base64,{source.get('data')}"
        return {"type": "image_url", "image_url": {"url": url}}
    if block.get("type") == "image" and source.get("type") == "url":
        return {"type": "image_url", "image_url": {"url": source.get("url")}}
    return block


def _parts_content(parts: list, after_results: bool) -> Any:
    """Neutral content for a run of parts: a string for one text part after tool results."""
    if after_results and len(parts) == 1 and as_dict(parts[0]).get("type") == "text" and len(parts[0]) == 2:
        return parts[0]["text"]
    return parts


def _tool_result_content(content: Any) -> Any:
    if isinstance(content, list):
        parts = [_block_to_part(as_dict(b)) for b in content]
        if all(as_dict(p).get("type") == "text" for p in parts):
            return "".join(p["text"] for p in parts)
        return parts
    return "" if content is None else content


def _user_to_neutral(content: Any) -> list[dict]:
    """One Anthropic user turn as neutral tool and user messages, in order."""
    if not isinstance(content, list):
        return [{"role": "user", "content": content}]
    out: list[dict] = []
    run: list = []
    for block in content:
        block = as_dict(block) if not isinstance(block, str) else {"type": "text", "text": block}
        if block.get("type") == "tool_result":
            if run:
                out.append({"role": "user", "content": _parts_content(run, bool(out))})
                run = []
            out.append({"role": "tool", "tool_call_id": block.get("tool_use_id"),
                        "content": _tool_result_content(block.get("content"))})
        else:
            run.append(_block_to_part(block))
    if run:
        out.append({"role": "user", "content": _parts_content(run, bool(out))})
    return out


def _assistant_to_neutral(content: Any) -> dict:
    """An assistant turn: text as content, tool_use as tool_calls, native blocks kept as sent."""
    if not isinstance(content, list):
        return {"role": "assistant", "content": content}
    parts, calls = [], []
    for block in content:
        block = as_dict(block) if not isinstance(block, str) else {"type": "text", "text": block}
        if block.get("type") == "tool_use":
            calls.append({"id": block.get("id"), "type": "function",
                          "function": {"name": block.get("name"), "arguments": arguments_text(block.get("input"))}})
        else:
            parts.append(_block_to_part(block))
    if any(p.get("type") != "text" for p in parts):
        text: Any = parts
    else:
        text = "".join(p.get("text") or "" for p in parts) if parts else None
    msg: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        msg["tool_calls"] = calls
    return msg


def _tool_to_neutral(tool: Any) -> Any:
    tool = as_dict(tool)
    if "input_schema" not in tool:
        return tool  # a server tool (web search, code execution, ...), as sent
    fn = {"name": tool.get("name")}
    if tool.get("description") is not None:
        fn["description"] = tool["description"]
    fn["parameters"] = tool["input_schema"]
    if isinstance(tool.get("strict"), bool):
        fn["strict"] = tool["strict"]
    return {"type": "function", "function": fn}


def _choice_to_neutral(choice: dict, out: dict) -> None:
    kind = choice.get("type")
    if choice.get("disable_parallel_tool_use"):
        out["parallel_tool_calls"] = False
    if kind == "tool":
        out["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
    elif kind in ("auto", "any", "none"):
        out["tool_choice"] = {"auto": "auto", "any": "required", "none": "none"}[kind]


def to_neutral(r: dict) -> dict:
    """An Anthropic Messages request as a neutral (chat-completions) request."""
    out: dict[str, Any] = {}
    messages: list[dict] = []
    system = r.get("system")
    if system:
        messages.append({"role": "system", "content": content_text(system, "system")})
    for msg in as_list(r.get("messages")):
        msg = as_dict(msg)
        if msg.get("role") == "assistant":
            messages.append(_assistant_to_neutral(msg.get("content")))
        else:
            messages.extend(_user_to_neutral(msg.get("content")))
    for key, value in r.items():
        if key in ("system", "messages", "anthropic_version"):
            continue
        if key == "tools":
            out["tools"] = [_tool_to_neutral(t) for t in as_list(value)]
        elif key == "tool_choice":
            _choice_to_neutral(as_dict(value), out)
        elif key == "stop_sequences":
            out["stop"] = list(as_list(value))
        else:
            out[key] = copy.deepcopy(value)
    out["messages"] = messages
    return out


def _image_block(part: dict, where: str) -> dict:
    url = image_url(part)
    if not isinstance(url, str):
        raise TranslationError(f"{where}: image_url needs a url")
    inline = data_url(url)
    if inline is not None:
        media_type, data = inline
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _blocks(content: Any, where: str) -> list[dict]:
    """Neutral user/assistant content as Anthropic content blocks."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list):
        raise TranslationError(f"{where}: content must be a string or a list of parts")
    blocks = []
    for part in content:
        kind = as_dict(part).get("type")
        if isinstance(part, str):
            blocks.append({"type": "text", "text": part})
        elif kind == "text":
            blocks.append(dict(part))
        elif kind == "input_text":
            blocks.append({"type": "text", "text": str(part.get("text", ""))})
        elif kind == "image_url":
            blocks.append(_image_block(part, where))
        elif kind in _NATIVE_BLOCKS:
            blocks.append(part)  # already Anthropic-shaped
        else:
            raise TranslationError(f"{where}: cannot translate content part {part!r:.80}")
    return blocks


def _assistant(msg: dict, where: str) -> dict:
    content = msg.get("content")
    tool_calls = as_list(msg.get("tool_calls"))
    if not tool_calls and isinstance(msg.get("function_call"), dict):
        tool_calls = [{"id": "call_1", "function": msg["function_call"]}]
    if not tool_calls and isinstance(content, str):
        return {"role": "assistant", "content": content}
    blocks = _blocks(content, where)
    for i, tc in enumerate(tool_calls):
        fn = as_dict(as_dict(tc).get("function"))
        name = fn.get("name") or tc.get("name")
        if not name:
            raise TranslationError(f"{where}.tool_calls[{i}]: a tool call needs a function name")
        args = arguments_object(fn.get("arguments", tc.get("arguments")), f"{where}.tool_calls[{i}]")
        if not isinstance(args, dict):
            raise TranslationError(f"{where}.tool_calls[{i}]: arguments must be a JSON object")
        blocks.append({"type": "tool_use", "id": tc.get("id") or f"call_{i + 1}", "name": name, "input": args})
    return {"role": "assistant", "content": blocks}


def _tool_result(msg: dict, where: str) -> dict:
    if not msg.get("tool_call_id"):
        raise TranslationError(f"{where}: a tool message needs a tool_call_id")
    content = msg.get("content")
    if content is None:
        content = ""
    elif isinstance(content, list):
        content = _blocks(content, where)
    elif not isinstance(content, str):
        content = json.dumps(content)  # a structured result: the model sees its JSON text
    return {"type": "tool_result", "tool_use_id": msg["tool_call_id"], "content": content}


def _messages(messages: list) -> tuple[list[str], list[dict]]:
    """(system texts, Anthropic messages) of neutral messages."""
    system: list[str] = []
    out: list[dict] = []
    tool_turn = False  # the last user message holds tool results and may take more
    for i, msg in enumerate(messages):
        where = f"messages[{i}]"
        msg = as_dict(msg)
        role = msg.get("role")
        if role in ("system", "developer"):
            system.append(content_text(msg.get("content"), where))
        elif role == "tool":
            if tool_turn:
                out[-1]["content"].append(_tool_result(msg, where))
            else:
                out.append({"role": "user", "content": [_tool_result(msg, where)]})
            tool_turn = True
        elif role == "user" and tool_turn:
            out[-1]["content"].extend(_blocks(msg.get("content"), where))
            tool_turn = False
        elif role == "user":
            content = msg.get("content")
            out.append({"role": "user", "content": content if isinstance(content, str) else _blocks(content, where)})
        elif role == "assistant":
            out.append(_assistant(msg, where))
            tool_turn = False
        else:
            raise TranslationError(f"{where}: role {role!r} cannot be translated "
                                   "(system, developer, user, assistant, tool)")
    return system, out


def _tool(tool: Any, i: int) -> dict:
    if not isinstance(tool, dict):
        raise TranslationError(f"tools[{i}]: a tool must be an object")
    if "input_schema" in tool or (tool.get("type") not in (None, "function") and "function" not in tool):
        return dict(tool)  # already Anthropic-shaped
    fn = tool.get("function") if "function" in tool else tool
    if not isinstance(fn, dict) or not fn.get("name"):
        raise TranslationError(f"tools[{i}]: only function tools translate to Anthropic, got {tool!r:.80}")
    out: dict[str, Any] = {"name": fn["name"]}
    if fn.get("description") is not None:
        out["description"] = fn["description"]
    out["input_schema"] = fn.get("parameters") or {"type": "object", "properties": {}}
    if isinstance(fn.get("strict"), bool):
        out["strict"] = fn["strict"]
    return out


def _tool_choice(choice: Any) -> dict | None:
    if choice is None:
        return None
    if isinstance(choice, str):
        mapped = {"auto": "auto", "required": "any", "any": "any", "none": "none"}.get(choice)
        if mapped is None:
            raise TranslationError(f"tool_choice {choice!r} must be auto, required, none or a function")
        return {"type": mapped}
    if isinstance(choice, dict):
        if choice.get("type") == "function" or "function" in choice:
            name = as_dict(choice.get("function")).get("name") or choice.get("name")
            if not name:
                raise TranslationError("tool_choice: a function choice needs function.name")
            return {"type": "tool", "name": name}
        if choice.get("type") in ("auto", "any", "none", "tool"):
            return dict(choice)
    raise TranslationError(f"tool_choice {choice!r:.80} cannot be translated")


def _tools_into(n: dict, body: dict) -> None:
    tools = as_list(n.get("tools"))
    if not tools:
        return
    body["tools"] = [_tool(t, i) for i, t in enumerate(tools)]
    choice = _tool_choice(n.get("tool_choice"))
    if n.get("parallel_tool_calls") is False:
        choice = choice or {"type": "auto"}
        if choice["type"] != "none":
            choice["disable_parallel_tool_use"] = True
    if choice is not None:
        body["tool_choice"] = choice


def from_neutral(n: dict) -> dict:
    """A neutral request as an Anthropic Messages request body."""
    messages = n.get("messages")
    if not isinstance(messages, list):
        raise TranslationError("the request has no 'messages' list")
    system, out = _messages(messages)
    body: dict[str, Any] = {}
    if n.get("model") is not None:
        body["model"] = n["model"]
    max_tokens = n.get("max_tokens", n.get("max_completion_tokens"))
    body["max_tokens"] = DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens
    joined = "\n\n".join(s for s in system if s)
    if joined:
        body["system"] = joined
    body["messages"] = out
    _tools_into(n, body)
    stop = n.get("stop")
    if stop:
        body["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    if isinstance(n.get("user"), str) and n["user"] and "metadata" not in n:
        body["metadata"] = {"user_id": n["user"]}
    for key, value in n.items():
        if key not in body and key not in _CHAT_ONLY and key not in ("model", "max_tokens"):
            body[key] = copy.deepcopy(value)
    return body
