"""Amazon Bedrock Converse (and Converse-shaped InvokeModel bodies such as Amazon Nova)."""
from __future__ import annotations

import copy
from typing import Any

from ..core.hashing import canonical_json
from . import errors
from ._common import (
    Document,
    TranslationError,
    add_piece,
    arguments_object,
    arguments_text,
    as_dict,
    as_list,
    call,
    content_text,
    data_url,
    document,
    error_document,
    image_url,
    incomplete,
    join_pieces,
    loads,
    map_stop,
    server_call,
    text_or_none,
    usage,
)

NAME = "bedrock"
STREAM_END = "messageStop"

_INFERENCE = (("max_tokens", "maxTokens"), ("temperature", "temperature"), ("top_p", "topP"))
_CHOICES_IN = {"auto": "auto", "any": "required"}
_DROPPED = ("messages", "tools", "tool_choice", "model", "stop", "max_completion_tokens", "n", "seed",
            "stream", "stream_options", "parallel_tool_calls", "user", "response_format", "logprobs",
            "top_logprobs", "frequency_penalty", "presence_penalty", "logit_bias")
_STREAM_KEYS = ("messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop",
                "messageStop", "metadata")


def refuse(p: Any) -> str | None:
    """The name of a non-Claude, non-Converse InvokeModel body, or None."""
    if not isinstance(p, dict):
        return None
    if "inputTextTokenCount" in p or any("outputText" in as_dict(r) for r in as_list(p.get("results"))):
        return "an Amazon Titan text body (Bedrock InvokeModel)"
    if "embedding" in p or ("embeddings" in p and "id" not in p):
        return "an embeddings body (Bedrock InvokeModel)"
    if "generation" in p and ("generation_token_count" in p or "prompt_token_count" in p):
        return "a Meta Llama body (Bedrock InvokeModel)"
    if any("text" in as_dict(o) for o in as_list(p.get("outputs"))):
        return "a Mistral body (Bedrock InvokeModel)"
    if any("data" in as_dict(c) for c in as_list(p.get("completions"))):
        return "an AI21 Jurassic body (Bedrock InvokeModel)"
    if "completion" in p and "stop_reason" in p:
        return "a legacy Claude text-completion body (Bedrock InvokeModel)"
    if "artifacts" in p or ("images" in p and "seeds" in p):
        return "an image-model body (Bedrock InvokeModel)"
    return None


def detect(p: Any) -> bool:
    """Whether *p* is a Converse response (or a Converse-shaped InvokeModel body)."""
    if not isinstance(p, dict):
        return False
    return "message" in as_dict(p.get("output")) or ("stopReason" in p and ("usage" in p or "output" in p))


def normalize(p: dict) -> Document:
    """The normalized document of a Converse response."""
    message = as_dict(as_dict(p.get("output")).get("message"))
    calls, servers, texts, reasoning = [], [], [], []
    for block in as_list(message.get("content")):
        block = as_dict(block)
        if isinstance(block.get("toolUse"), dict):
            tu = block["toolUse"]
            if tu.get("type") == "server_tool_use":  # run by the provider, not by the application
                servers.append(server_call(tu.get("name"), tu.get("input")))
            else:
                calls.append(call(tu.get("toolUseId"), tu.get("name"), tu.get("input")))
        elif isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(block.get("reasoningContent"), dict):
            text = as_dict(block["reasoningContent"].get("reasoningText")).get("text")
            if isinstance(text, str):
                reasoning.append(text)
    u = as_dict(p.get("usage"))
    return document(
        calls,
        text_or_none(texts),
        map_stop(p.get("stopReason"), bool(calls)),
        usage(u.get("inputTokens"), u.get("outputTokens")) if u else None,
        reasoning=text_or_none(reasoning),
        model=p.get("modelId"),
        server_tool_calls=servers,
    )


def detect_stream(events: list) -> bool:
    """Whether parsed stream events are ConverseStream events (as JSON objects)."""
    return any(isinstance(obj, dict) and any(k in obj for k in _STREAM_KEYS) for _, obj in events)


def _stream_delta(blocks: dict, obj: dict) -> None:
    index = obj.get("contentBlockIndex", 0)
    delta = as_dict(obj.get("delta"))
    block = blocks.setdefault(index, {})
    if isinstance(delta.get("text"), str):
        block["text"] = add_piece(block.get("text", ""), delta["text"])
    elif isinstance(delta.get("toolUse"), dict):
        tu = block.setdefault("toolUse", {})
        tu["input"] = add_piece(tu.get("input"), delta["toolUse"].get("input") or "")
    elif isinstance(delta.get("reasoningContent"), dict):
        rc = block.setdefault("reasoningContent", {}).setdefault("reasoningText", {})
        rc["text"] = add_piece(rc.get("text", ""), delta["reasoningContent"].get("text") or "")


def read_stream(events: list) -> Document:
    """Reassemble ConverseStream events (messageStart ... messageStop, metadata)."""
    blocks: dict[int, dict] = {}
    body: dict[str, Any] = {}
    stopped = False
    for _, obj in events:
        obj = as_dict(obj)
        if errors.detect(obj):
            return errors.normalize(obj)
        exception = next((k for k in obj if k.endswith("Exception")), None)
        if exception:  # internalServerException, throttlingException, modelStreamErrorException, ...
            return error_document(exception[0].upper() + exception[1:], None,
                                  as_dict(obj[exception]).get("message"))
        if "contentBlockStart" in obj:
            start = as_dict(obj["contentBlockStart"])
            tu = as_dict(as_dict(start.get("start")).get("toolUse"))
            blocks[start.get("contentBlockIndex", len(blocks))] = {"toolUse": {**tu, "input": ""}}
        elif "contentBlockDelta" in obj:
            _stream_delta(blocks, as_dict(obj["contentBlockDelta"]))
        elif "messageStop" in obj:
            body["stopReason"] = as_dict(obj["messageStop"]).get("stopReason")
            stopped = True
        elif "metadata" in obj:
            body["usage"] = as_dict(obj["metadata"]).get("usage")
    if not stopped:
        return incomplete(STREAM_END)
    join_pieces(blocks)
    for block in blocks.values():
        tu = block.get("toolUse")
        if isinstance(tu, dict) and isinstance(tu.get("input"), str) and tu["input"].strip():
            try:
                tu["input"] = loads(tu["input"])
            except ValueError:
                pass  # never closed: malformed arguments, as sent
    body["output"] = {"message": {"role": "assistant", "content": [blocks[i] for i in sorted(blocks)]}}
    return normalize(body)


# --- requests -------------------------------------------------------------------------------


def _untyped_blocks(r: dict) -> bool:
    for msg in as_list(r.get("messages")):
        for block in as_list(as_dict(msg).get("content")):
            if isinstance(block, dict) and "type" not in block and any(
                k in block for k in ("text", "toolUse", "toolResult", "image", "document")
            ):
                return True
    return False


def detect_request(r: dict) -> bool:
    """Whether a request is in Converse form."""
    if any(k in r for k in ("toolConfig", "inferenceConfig", "schemaVersion", "modelId")):
        return True
    system = r.get("system")
    if isinstance(system, list) and system and all(isinstance(s, dict) and "type" not in s for s in system):
        return True
    return _untyped_blocks(r)


def _block_to_part(block: dict) -> Any:
    if isinstance(block.get("text"), str):
        return {"type": "text", "text": block["text"]}
    image = as_dict(block.get("image"))
    data = as_dict(image.get("source")).get("bytes")
    if isinstance(data, str):
        return {"type": "image_url", "image_url": {"url": f"data:image/{image.get('format')};base64,{data}"}}
    return block


def _result_content(result: dict) -> Any:
    texts = []
    for item in as_list(result.get("content")):
        item = as_dict(item)
        if isinstance(item.get("text"), str):
            texts.append(item["text"])
        elif "json" in item:
            texts.append(canonical_json(item["json"]))
    return "".join(texts)


def _user_to_neutral(content: list) -> list[dict]:
    out: list[dict] = []
    run: list = []
    for block in content:
        block = as_dict(block)
        if isinstance(block.get("toolResult"), dict):
            if run:
                out.append({"role": "user", "content": run})
                run = []
            result = block["toolResult"]
            out.append({"role": "tool", "tool_call_id": result.get("toolUseId"), "content": _result_content(result)})
        elif "cachePoint" not in block:
            run.append(_block_to_part(block))
    if run:
        only_text = len(run) == 1 and as_dict(run[0]).get("type") == "text"
        out.append({"role": "user", "content": run[0]["text"] if only_text else run})
    return out


def _assistant_to_neutral(content: list) -> dict:
    texts, calls = [], []
    for block in content:
        block = as_dict(block)
        if isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(block.get("toolUse"), dict):
            tu = block["toolUse"]
            calls.append({"id": tu.get("toolUseId"), "type": "function",
                          "function": {"name": tu.get("name"), "arguments": arguments_text(tu.get("input"))}})
    msg: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if calls:
        msg["tool_calls"] = calls
    return msg


def _tool_config_to_neutral(config: dict, out: dict) -> None:
    tools = []
    for tool in as_list(config.get("tools")):
        spec = as_dict(as_dict(tool).get("toolSpec"))
        if not spec:
            continue
        fn: dict[str, Any] = {"name": spec.get("name")}
        if spec.get("description"):
            fn["description"] = spec["description"]
        if "json" in as_dict(spec.get("inputSchema")):
            fn["parameters"] = copy.deepcopy(spec["inputSchema"]["json"])
        tools.append({"type": "function", "function": fn})
    if tools:
        out["tools"] = tools
    choice = as_dict(config.get("toolChoice"))
    if "tool" in choice:
        out["tool_choice"] = {"type": "function", "function": {"name": as_dict(choice["tool"]).get("name")}}
    for key, value in _CHOICES_IN.items():
        if key in choice:
            out["tool_choice"] = value


def to_neutral(r: dict) -> dict:
    """A Converse request as a neutral (chat-completions) request."""
    messages: list[dict] = []
    system = [as_dict(s).get("text") for s in as_list(r.get("system"))]
    if any(isinstance(s, str) for s in system):
        messages.append({"role": "system", "content": "".join(s for s in system if isinstance(s, str))})
    for msg in as_list(r.get("messages")):
        msg = as_dict(msg)
        content = msg.get("content")
        content = [{"text": content}] if isinstance(content, str) else as_list(content)
        if msg.get("role") == "assistant":
            messages.append(_assistant_to_neutral(content))
        else:
            messages.extend(_user_to_neutral(content))
    out: dict[str, Any] = {}
    if r.get("modelId") is not None:
        out["model"] = r["modelId"]
    skip = ("system", "messages", "toolConfig", "inferenceConfig", "modelId", "schemaVersion")
    out.update({k: copy.deepcopy(v) for k, v in r.items() if k not in skip})
    out["messages"] = messages
    _tool_config_to_neutral(as_dict(r.get("toolConfig")), out)
    inference = as_dict(r.get("inferenceConfig"))
    for neutral, key in _INFERENCE:
        if inference.get(key) is not None:
            out[neutral] = inference[key]
    if inference.get("stopSequences"):
        out["stop"] = list(inference["stopSequences"])
    return out


def _part_to_block(part: Any, where: str) -> dict:
    if isinstance(part, str):
        return {"text": part}
    part = as_dict(part)
    if part.get("type") in ("text", "input_text"):
        return {"text": part.get("text", "")}
    if part.get("type") == "image_url":
        inline = data_url(image_url(part))
        if inline is not None and inline[0].startswith("image/"):
            mime, data = inline
            return {"image": {"format": mime.split("/", 1)[1], "source": {"bytes": data}}}
        raise TranslationError(f"{where}: Bedrock takes images as data: URLs only")
    raise TranslationError(f"{where}: cannot translate content part {part!r:.80}")


def _blocks(content: Any, where: str) -> list[dict]:
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"text": content}]
    return [_part_to_block(p, where) for p in as_list(content)]


def _assistant_blocks(msg: dict, where: str) -> list[dict]:
    blocks = _blocks(msg.get("content"), where)
    for i, tc in enumerate(as_list(msg.get("tool_calls"))):
        fn = as_dict(as_dict(tc).get("function"))
        args = arguments_object(fn.get("arguments"), f"{where}.tool_calls[{i}]")
        blocks.append({"toolUse": {"toolUseId": tc.get("id") or f"call_{i + 1}", "name": fn.get("name"),
                                   "input": args}})
    return blocks


def _messages(messages: list) -> tuple[list[dict], list[dict]]:
    """(system blocks, Converse messages) of neutral messages."""
    system: list[dict] = []
    out: list[dict] = []
    tool_turn = False
    for i, msg in enumerate(messages):
        msg, where = as_dict(msg), f"messages[{i}]"
        role = msg.get("role")
        if role in ("system", "developer"):
            system.append({"text": content_text(msg.get("content"), where)})
        elif role == "tool":
            content = msg.get("content")
            text = content if isinstance(content, str) else content_text(content, where)
            block = {"toolResult": {"toolUseId": msg.get("tool_call_id"), "content": [{"text": text}]}}
            if tool_turn:
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif role == "user" and tool_turn:
            out[-1]["content"].extend(_blocks(msg.get("content"), where))
        elif role in ("user", "assistant"):
            blocks = _assistant_blocks(msg, where) if role == "assistant" else _blocks(msg.get("content"), where)
            out.append({"role": role, "content": blocks})
        else:
            raise TranslationError(f"{where}: role {role!r} cannot be translated")
        tool_turn = role == "tool"
    return system, out


def _tool_config(n: dict) -> dict | None:
    specs = []
    for i, tool in enumerate(as_list(n.get("tools"))):
        fn = as_dict(tool).get("function")
        if not isinstance(fn, dict) or not fn.get("name"):
            raise TranslationError(f"tools[{i}]: Bedrock Converse takes function tools only")
        spec: dict[str, Any] = {"name": fn["name"]}
        if fn.get("description"):
            spec["description"] = fn["description"]
        spec["inputSchema"] = {"json": fn.get("parameters") or {"type": "object", "properties": {}}}
        specs.append({"toolSpec": spec})
    if not specs:
        return None
    config: dict[str, Any] = {"tools": specs}
    choice = n.get("tool_choice")
    if choice == "auto":
        config["toolChoice"] = {"auto": {}}
    elif choice == "required":
        config["toolChoice"] = {"any": {}}
    elif isinstance(choice, dict) and as_dict(choice.get("function")).get("name"):
        config["toolChoice"] = {"tool": {"name": choice["function"]["name"]}}
    return config


def from_neutral(n: dict) -> dict:
    """A neutral request as Converse arguments (`modelId` carries the model)."""
    if not isinstance(n.get("messages"), list):
        raise TranslationError("the request has no 'messages' list")
    system, messages = _messages(n["messages"])
    body: dict[str, Any] = {}
    if n.get("model") is not None:
        body["modelId"] = n["model"]
    body["messages"] = messages
    if system:
        body["system"] = system
    config = _tool_config(n)
    if config:
        body["toolConfig"] = config
    inference = {key: n[neutral] for neutral, key in _INFERENCE if n.get(neutral) is not None}
    if "maxTokens" not in inference and n.get("max_completion_tokens") is not None:
        inference["maxTokens"] = n["max_completion_tokens"]
    if n.get("stop"):
        inference["stopSequences"] = [n["stop"]] if isinstance(n["stop"], str) else list(n["stop"])
    if inference:
        body["inferenceConfig"] = inference
    body.update({k: copy.deepcopy(v) for k, v in n.items() if k not in _DROPPED and k not in body
                 and k not in {neutral for neutral, _ in _INFERENCE}})
    return body
