"""OpenAI-form request documents -> provider SDK call arguments (pure functions, no SDK imports)."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

DEFAULT_MAX_TOKENS = 1024

# Sampling parameters the Anthropic API accepts in the body; the 2.x SDK's messages.create
# has no argument for them, so unless the installed SDK takes them they go in extra_body.
_ANTHROPIC_SAMPLING = ("temperature", "top_p", "top_k")

# OpenAI parameters replayci never forwards: we always want one complete, non-streamed answer.
_OPENAI_NEVER = frozenset({"model", "stream", "stream_options"})


class TranslationError(ValueError):
    """The request cannot be expressed for the target provider."""


def to_openai(request: dict, model: str, *, accepted: Collection[str] | None = None) -> dict:
    """kwargs for ``chat.completions.create``: the request's params, *model* overriding its own.

    Parameters the installed SDK does not name (*accepted*, from its signature) travel in
    ``extra_body``, so OpenAI-compatible servers still get e.g. vLLM's ``top_k``.
    """
    kwargs: dict[str, Any] = {"model": model}
    extra: dict[str, Any] = {}
    for key, value in request.items():
        if key in _OPENAI_NEVER:
            continue
        if accepted is None or key in accepted:
            kwargs[key] = value
        else:
            extra[key] = value
    if "messages" not in kwargs:
        raise TranslationError("the request has no 'messages'")
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


def _text_of(content: Any, where: str) -> str:
    """The text of a string or a list of text parts (system prompts, tool results)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type") in ("text", "input_text"):
                texts.append(str(part.get("text", "")))
            else:
                raise TranslationError(
                    f"{where}: only text parts can be translated, got {part!r:.80}"
                )
        return "".join(texts)
    raise TranslationError(f"{where}: content must be a string or a list of parts")


def _image_block(part: dict, where: str) -> dict:
    url = (
        (part.get("image_url") or {}).get("url")
        if isinstance(part.get("image_url"), dict)
        else part.get("image_url")
    )
    if not isinstance(url, str):
        raise TranslationError(f"{where}: image_url needs a url")
    if url.startswith("data:") and ";base64," in url:
        media_type, data = url[5:].split(";base64,", 1)
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }
    return {"type": "image", "source": {"type": "url", "url": url}}


def _blocks(content: Any, where: str) -> list[dict]:
    """User/assistant content as Anthropic content blocks."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list):
        raise TranslationError(f"{where}: content must be a string or a list of parts")
    blocks = []
    for part in content:
        if isinstance(part, str):
            blocks.append({"type": "text", "text": part})
        elif isinstance(part, dict) and part.get("type") in ("text", "input_text"):
            blocks.append({"type": "text", "text": str(part.get("text", ""))})
        elif isinstance(part, dict) and part.get("type") == "image_url":
            blocks.append(_image_block(part, where))
        elif isinstance(part, dict) and part.get("type") in (
            "image",
            "tool_use",
            "tool_result",
            "document",
        ):
            blocks.append(part)  # already Anthropic-shaped
        else:
            raise TranslationError(f"{where}: cannot translate content part {part!r:.80}")
    return blocks


def _tool_input(arguments: Any, where: str) -> dict:
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            raise TranslationError(
                f"{where}: arguments are not valid JSON: {arguments!r:.80}"
            ) from None
        if isinstance(parsed, dict):
            return parsed
    raise TranslationError(f"{where}: arguments must be a JSON object, got {arguments!r:.80}")


def _assistant(msg: dict, where: str) -> dict:
    content = msg.get("content")
    tool_calls = msg.get("tool_calls") or []
    if not tool_calls and msg.get("function_call"):
        tool_calls = [{"id": "call_1", "function": msg["function_call"]}]
    if not tool_calls and isinstance(content, str):
        return {"role": "assistant", "content": content}
    blocks = _blocks(content, where)
    for i, call in enumerate(tool_calls):
        fn = call.get("function") or {}
        name = fn.get("name") or call.get("name")
        if not name:
            raise TranslationError(f"{where}.tool_calls[{i}]: a tool call needs a function name")
        blocks.append(
            {
                "type": "tool_use",
                "id": call.get("id") or f"call_{i + 1}",
                "name": name,
                "input": _tool_input(
                    fn.get("arguments", call.get("arguments")), f"{where}.tool_calls[{i}]"
                ),
            }
        )
    return {"role": "assistant", "content": blocks}


def _tool_result(msg: dict, where: str) -> dict:
    tool_use_id = msg.get("tool_call_id")
    if not tool_use_id:
        raise TranslationError(f"{where}: a tool message needs a tool_call_id")
    content = msg.get("content")
    if content is None:
        content = ""
    elif isinstance(content, list):
        content = _blocks(content, where)
    elif not isinstance(content, str):
        # A structured result the pack wrote as JSON: the model sees its JSON text.
        content = json.dumps(content)
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}


def _messages(messages: list) -> tuple[list[str], list[dict]]:
    """(system texts, Anthropic messages)."""
    system: list[str] = []
    out: list[dict] = []
    for i, msg in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(msg, dict):
            raise TranslationError(f"{where}: a message must be an object")
        role = msg.get("role")
        if role in ("system", "developer"):
            system.append(_text_of(msg.get("content"), where))
            continue
        if role == "tool":
            block = _tool_result(msg, where)
            # Consecutive tool results answer one assistant turn: one user message.
            if out and out[-1]["role"] == "user" and out[-1].get("_tool_results"):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block], "_tool_results": True})
            continue
        if role == "user":
            if out and out[-1].get("_tool_results"):
                # Text after tool results belongs in the same user turn, after the results.
                out[-1]["content"].extend(_blocks(msg.get("content"), where))
                out[-1]["_tool_results"] = False
                continue
            content = msg.get("content")
            out.append(
                {
                    "role": "user",
                    "content": content if isinstance(content, str) else _blocks(content, where),
                }
            )
            continue
        if role == "assistant":
            out.append(_assistant(msg, where))
            continue
        raise TranslationError(
            f"{where}: role {role!r} cannot be translated "
            "(system, developer, user, assistant, tool)"
        )
    for m in out:
        m.pop("_tool_results", None)
    return system, out


def _tool(tool: Any, i: int) -> dict:
    if not isinstance(tool, dict):
        raise TranslationError(f"tools[{i}]: a tool must be an object")
    if "input_schema" in tool:
        return dict(tool)  # already Anthropic-shaped
    fn = tool.get("function") if tool.get("type") == "function" or "function" in tool else tool
    if not isinstance(fn, dict) or not fn.get("name"):
        raise TranslationError(f"tools[{i}]: a tool needs a name")
    out: dict[str, Any] = {"name": fn["name"]}
    if fn.get("description"):
        out["description"] = fn["description"]
    out["input_schema"] = fn.get("parameters") or {"type": "object", "properties": {}}
    return out


def _tool_choice(choice: Any) -> dict | None:
    if choice is None:
        return None
    if isinstance(choice, str):
        mapped = {"auto": "auto", "required": "any", "any": "any", "none": "none"}.get(choice)
        if mapped is None:
            raise TranslationError(
                f"tool_choice {choice!r} must be auto, required, none or a function"
            )
        return {"type": mapped}
    if isinstance(choice, dict):
        if choice.get("type") == "function" or "function" in choice:
            name = (choice.get("function") or {}).get("name")
            if not name:
                raise TranslationError("tool_choice: a function choice needs function.name")
            return {"type": "tool", "name": name}
        if choice.get("type") in ("auto", "any", "none", "tool"):
            return dict(choice)  # already Anthropic-shaped
    raise TranslationError(f"tool_choice {choice!r:.80} cannot be translated")


def to_anthropic(request: dict, model: str, *, accepted: Collection[str] | None = None) -> dict:
    """kwargs for Anthropic ``messages.create`` from an OpenAI-form request.

    *accepted* names the parameters the installed ``messages.create`` takes; sampling
    parameters it does not take (the 2.x SDK takes none) are sent through ``extra_body``.
    """
    messages = request.get("messages")
    if not isinstance(messages, list):
        raise TranslationError("the request has no 'messages' list")
    system, out = _messages(messages)
    kwargs: dict[str, Any] = {"model": model}
    max_tokens = request.get("max_tokens", request.get("max_completion_tokens"))
    kwargs["max_tokens"] = DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens
    kwargs["messages"] = out
    joined = "\n\n".join(s for s in system if s)
    if joined:
        kwargs["system"] = joined
    tools = request.get("tools") or []
    if tools:
        kwargs["tools"] = [_tool(t, i) for i, t in enumerate(tools)]
        choice = _tool_choice(request.get("tool_choice"))
        if request.get("parallel_tool_calls") is False:
            choice = choice or {"type": "auto"}
            if choice["type"] != "none":
                choice["disable_parallel_tool_use"] = True
        if choice is not None:
            kwargs["tool_choice"] = choice
    # Without tools Anthropic refuses tool_choice; OpenAI's "none" means the same as no tools.
    stop = request.get("stop")
    if stop:
        kwargs["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    user = request.get("user")
    metadata = request.get("metadata")
    if isinstance(metadata, dict) and "user_id" in metadata:
        kwargs["metadata"] = {"user_id": metadata["user_id"]}
    elif isinstance(user, str) and user:
        kwargs["metadata"] = {"user_id": user}
    extra: dict[str, Any] = {}
    for name in _ANTHROPIC_SAMPLING:
        if request.get(name) is None:
            continue
        if accepted is not None and name in accepted:
            kwargs[name] = request[name]
        else:
            extra[name] = request[name]
    if extra:
        kwargs["extra_body"] = extra
    # Other OpenAI parameters (seed, n, response_format, penalties, logprobs) have no
    # Anthropic equivalent and are dropped: the boundary hashes still cover the request.
    return kwargs
