"""Gemini generateContent (AI Studio and Vertex): candidates, parts, functionCall."""
from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from ..core.hashing import canonical_json
from . import _common, errors
from ._common import (
    Document,
    TranslationError,
    as_dict,
    as_list,
    call,
    content_text,
    document,
    image_url,
    text_or_none,
    usage,
)

NAME = "gemini"
STREAM_END = "a chunk with finishReason"

_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SCHEMA_ONE = ("items", "additionalProperties", "not", "contains", "propertyNames")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
# finishReason as a number (protobuf clients such as Vertex's): the values both APIs share.
_FINISH_NUMBERS = {0: "FINISH_REASON_UNSPECIFIED", 1: "STOP", 2: "MAX_TOKENS", 3: "SAFETY", 4: "RECITATION",
                   5: "OTHER"}
_MODES_IN = {"AUTO": "auto", "ANY": "required", "NONE": "none", "VALIDATED": "auto"}
_MODES_OUT = {"auto": "AUTO", "required": "ANY", "none": "NONE"}
_GENERATION = (("temperature", "temperature"), ("top_p", "topP"), ("top_k", "topK"),
               ("max_tokens", "maxOutputTokens"), ("n", "candidateCount"), ("seed", "seed"),
               ("presence_penalty", "presencePenalty"), ("frequency_penalty", "frequencyPenalty"))
_DROPPED = ("messages", "tools", "tool_choice", "stream", "stream_options", "parallel_tool_calls",
            "user", "stop", "max_completion_tokens", "generationConfig", "logprobs", "top_logprobs",
            "response_format", "logit_bias")


def detect(p: Any) -> bool:
    """Whether *p* is a GenerateContentResponse."""
    if not isinstance(p, dict):
        return False
    return "candidates" in p or "promptFeedback" in p or ("usageMetadata" in p and "modelVersion" in p)


def _usage(u: Any) -> dict | None:
    u = as_dict(u)
    if not u:
        return None
    out = u.get("candidatesTokenCount")
    if u.get("thoughtsTokenCount") is not None:
        out = (out or 0) + u["thoughtsTokenCount"]
    return usage(u.get("promptTokenCount"), out, u.get("cachedContentTokenCount"))


def normalize(p: dict) -> Document:
    """The normalized document of a GenerateContentResponse."""
    candidates = as_list(p.get("candidates"))
    cand = as_dict(candidates[0]) if candidates else {}
    calls, texts, thoughts, servers = [], [], [], []
    for part in as_list(as_dict(cand.get("content")).get("parts")):
        part = as_dict(part)
        if isinstance(part.get("functionCall"), dict):
            fc = part["functionCall"]
            calls.append(call(fc.get("id") or f"call_{len(calls) + 1}", fc.get("name"), fc.get("args")))
        elif isinstance(part.get("text"), str):
            (thoughts if part.get("thought") else texts).append(part["text"])
        elif isinstance(part.get("executableCode"), dict):
            servers.append(_common.server_call("code_execution", part["executableCode"]))
    reason = cand.get("finishReason")
    if isinstance(reason, int) and not isinstance(reason, bool):
        reason = _FINISH_NUMBERS.get(reason, str(reason))
    if not candidates and as_dict(p.get("promptFeedback")).get("blockReason"):
        reason = "content_filter"
    doc = document(
        calls,
        "".join(texts) if texts else None,
        _common.map_stop(reason, bool(calls)),
        _usage(p.get("usageMetadata")),
        reasoning=text_or_none(thoughts),
        server_tool_calls=servers,
        model=p.get("modelVersion"),
    )
    if texts:  # an empty text part (a stream's last chunk beside its finishReason) is still text
        doc["content"] = "".join(texts)
    return doc


def detect_stream(events: list) -> bool:
    """Whether parsed stream events are GenerateContentResponse chunks."""
    return any(detect(obj) for _, obj in events)


def _merge_part(parts: list[dict], part: dict) -> None:
    """Append a streamed part, joining text onto the previous text part of the same kind."""
    last = parts[-1] if parts else None
    if (last is not None and set(part) <= {"text", "thought", "thoughtSignature"}
            and isinstance(part.get("text"), str) and isinstance(last.get("text"), (str, _common.Pieces))
            and set(last) <= {"text", "thought", "thoughtSignature"}
            and bool(part.get("thought")) == bool(last.get("thought"))):
        last["text"] = _common.add_piece(last["text"], part["text"])
        if part.get("thoughtSignature") and not last.get("thoughtSignature"):
            last["thoughtSignature"] = part["thoughtSignature"]
        return
    parts.append(copy.deepcopy(part))


def read_stream(events: list) -> Document:
    """Reassemble GenerateContentResponse chunks into the non-streamed document."""
    parts: list[dict] = []
    merged: dict[str, Any] = {}
    finish = None
    for _, obj in events:
        if not isinstance(obj, dict):
            continue
        if errors.detect(obj):
            return errors.normalize(obj)
        for key in ("usageMetadata", "modelVersion", "promptFeedback", "responseId"):
            if obj.get(key) is not None:
                merged[key] = obj[key]
        candidates = as_list(obj.get("candidates"))
        cand = as_dict(candidates[0]) if candidates else {}
        for part in as_list(as_dict(cand.get("content")).get("parts")):
            _merge_part(parts, as_dict(part))
        finish = cand.get("finishReason") or finish
    if finish is None and not as_dict(merged.get("promptFeedback")).get("blockReason"):
        return _common.incomplete(STREAM_END)
    _common.join_pieces(parts)
    if finish is not None or parts:
        merged["candidates"] = [{"content": {"role": "model", "parts": parts}, "finishReason": finish}]
    return normalize(merged)


# --- requests -------------------------------------------------------------------------------


def _walk_schema(schema: Any, fix: Callable[[str], str]) -> Any:
    """A copy of a schema with every `type` name passed through *fix*."""
    if not isinstance(schema, dict):
        return copy.deepcopy(schema)
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            out[key] = fix(value)
        elif key == "type" and isinstance(value, list):
            out[key] = [fix(v) if isinstance(v, str) else v for v in value]
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {k: _walk_schema(v, fix) for k, v in value.items()}
        elif key in _SCHEMA_ONE:
            out[key] = _walk_schema(value, fix)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_walk_schema(v, fix) for v in value]
        else:
            out[key] = copy.deepcopy(value)
    return out


def lower_schema(schema: Any) -> Any:
    """A Gemini schema (OBJECT, STRING, ...) with JSON Schema's lower-case type names."""
    return _walk_schema(schema, str.lower)


def upper_schema(schema: Any) -> Any:
    """A JSON Schema with the upper-case type names the Gemini SDK sends."""
    return _walk_schema(schema, str.upper)


def detect_request(r: dict) -> bool:
    """Whether a request is in generateContent form (`contents`)."""
    return "contents" in r


def _get(d: dict, camel: str, snake: str) -> Any:
    return d[camel] if camel in d else d.get(snake)


def _part_to_neutral(part: dict) -> Any:
    inline = _get(part, "inlineData", "inline_data")
    if isinstance(inline, dict):
        url = f"data:{_get(inline, 'mimeType', 'mime_type')};base64,{inline.get('data')}"
        return {"type": "image_url", "image_url": {"url": url}}
    file_data = _get(part, "fileData", "file_data")
    if isinstance(file_data, dict):
        return {"type": "image_url", "image_url": {"url": _get(file_data, "fileUri", "file_uri")}}
    return {"type": "text", "text": part.get("text") or ""}


def _response_text(response: Any) -> Any:
    """A functionResponse's response as neutral tool content."""
    if isinstance(response, dict) and set(response) == {"result"} and isinstance(response["result"], str):
        return response["result"]
    return canonical_json(response)


def _model_to_neutral(parts: list, state: dict) -> dict:
    """A model turn; a call's thought signature rides along as Google's OpenAI-compatible API carries it."""
    texts, calls = [], []
    for part in parts:
        part = as_dict(part)
        fc = _get(part, "functionCall", "function_call")
        if isinstance(fc, dict):
            state["n"] += 1
            id_ = fc.get("id") or f"call_{state['n']}"
            state["pending"].setdefault(fc.get("name"), []).append(id_)
            arguments = _common.arguments_text(fc.get("args") or {})
            calls.append({"id": id_, "type": "function", "function": {"name": fc.get("name"), "arguments": arguments}})
            signature = _get(part, "thoughtSignature", "thought_signature")
            if signature:
                calls[-1]["extra_content"] = {"google": {"thought_signature": signature}}
        elif isinstance(part.get("text"), str) and not part.get("thought"):
            texts.append(part["text"])
    msg: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if calls:
        msg["tool_calls"] = calls
    return msg


def _user_to_neutral(parts: list, state: dict) -> list[dict]:
    out: list[dict] = []
    run: list = []
    for part in parts:
        part = as_dict(part)
        fr = _get(part, "functionResponse", "function_response")
        if not isinstance(fr, dict):
            run.append(_part_to_neutral(part))
            continue
        if run:
            out.append({"role": "user", "content": run})
            run = []
        pending = state["pending"].get(fr.get("name")) or []
        id_ = fr.get("id") or (pending.pop(0) if pending else f"call_{fr.get('name')}")
        if fr.get("id") and fr["id"] in pending:
            pending.remove(fr["id"])
        out.append({"role": "tool", "tool_call_id": id_, "content": _response_text(fr.get("response"))})
    if run:
        only_text = len(run) == 1 and run[0]["type"] == "text"
        out.append({"role": "user", "content": run[0]["text"] if only_text else run})
    return out


def _tools_to_neutral(tools: list) -> list:
    out = []
    for tool in tools:
        tool = as_dict(tool)
        decls = _get(tool, "functionDeclarations", "function_declarations")
        if not isinstance(decls, list):
            out.append(copy.deepcopy(tool))
            continue
        for decl in decls:
            decl = as_dict(decl)
            fn: dict[str, Any] = {"name": decl.get("name")}
            if decl.get("description"):
                fn["description"] = decl["description"]
            params = decl.get("parameters", _get(decl, "parametersJsonSchema", "parameters_json_schema"))
            if params is not None:
                fn["parameters"] = lower_schema(params)
            out.append({"type": "function", "function": fn})
    return out


def _config_to_neutral(r: dict, out: dict) -> None:
    """tool_choice and sampling parameters from toolConfig and generationConfig."""
    fcc = as_dict(_get(as_dict(_get(r, "toolConfig", "tool_config")), "functionCallingConfig",
                       "function_calling_config"))
    names = as_list(_get(fcc, "allowedFunctionNames", "allowed_function_names"))
    if fcc.get("mode") == "ANY" and len(names) == 1:
        out["tool_choice"] = {"type": "function", "function": {"name": names[0]}}
    elif isinstance(fcc.get("mode"), str) and fcc["mode"] in _MODES_IN:
        out["tool_choice"] = _MODES_IN[fcc["mode"]]
    config = dict(as_dict(_get(r, "generationConfig", "generation_config")))
    for neutral, key in _GENERATION:
        snake = "".join("_" + c.lower() if c.isupper() else c for c in key)
        value = config.pop(key, config.pop(snake, None))
        if value is not None:
            out[neutral] = value
    stops = config.pop("stopSequences", config.pop("stop_sequences", None))
    if stops:
        out["stop"] = list(stops)
    if config:
        out["generationConfig"] = config


def to_neutral(r: dict) -> dict:
    """A generateContent request as a neutral (chat-completions) request."""
    messages: list[dict] = []
    system = _get(r, "systemInstruction", "system_instruction")
    if isinstance(system, str):
        messages.append({"role": "system", "content": system})
    elif isinstance(system, dict):
        texts = [as_dict(p).get("text") or "" for p in as_list(system.get("parts"))]
        messages.append({"role": "system", "content": "".join(texts)})
    state: dict[str, Any] = {"n": 0, "pending": {}}
    for content in as_list(r.get("contents")):
        content = as_dict(content)
        if content.get("role") == "model":
            messages.append(_model_to_neutral(as_list(content.get("parts")), state))
        else:
            messages.extend(_user_to_neutral(as_list(content.get("parts")), state))
    out: dict[str, Any] = {}
    skip = ("contents", "systemInstruction", "system_instruction", "tools", "toolConfig", "tool_config",
            "generationConfig", "generation_config")
    out.update({k: copy.deepcopy(v) for k, v in r.items() if k not in skip})
    out["messages"] = messages
    if as_list(r.get("tools")):
        out["tools"] = _tools_to_neutral(as_list(r.get("tools")))
    _config_to_neutral(r, out)
    return out


def _part_from_neutral(part: Any, where: str) -> dict:
    if isinstance(part, str):
        return {"text": part}
    part = as_dict(part)
    if part.get("type") in ("text", "input_text"):
        return {"text": part.get("text", "")}
    if part.get("type") == "image_url":
        url = image_url(part)
        inline = _common.data_url(url)
        if inline is not None:
            return {"inlineData": {"mimeType": inline[0], "data": inline[1]}}
        return {"fileData": {"fileUri": url}}
    raise TranslationError(f"{where}: cannot translate content part {part!r:.80}")


def _user_parts(content: Any, where: str) -> list[dict]:
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"text": content}]
    return [_part_from_neutral(p, where) for p in as_list(content)]


def _tool_response(msg: dict, names: dict, where: str) -> dict:
    content = msg.get("content")
    text = content if isinstance(content, str) else content_text(content, where)
    try:
        parsed = _common.loads(text)
    except ValueError:
        parsed = None
    response = parsed if isinstance(parsed, dict) else {"result": text}
    id_ = msg.get("tool_call_id")
    fr: dict[str, Any] = {"name": names.get(id_, id_), "response": response}
    if id_:
        fr["id"] = id_
    return {"functionResponse": fr}


def _model_parts(msg: dict, names: dict, where: str) -> list[dict]:
    parts = _user_parts(msg.get("content"), where)
    for i, tc in enumerate(as_list(msg.get("tool_calls"))):
        fn = as_dict(as_dict(tc).get("function"))
        fc: dict[str, Any] = {"name": fn.get("name"),
                              "args": _common.arguments_object(fn.get("arguments"), f"{where}.tool_calls[{i}]")}
        if tc.get("id"):
            fc["id"] = tc["id"]
            names[tc["id"]] = fn.get("name")
        part: dict[str, Any] = {"functionCall": fc}
        signature = as_dict(as_dict(tc.get("extra_content")).get("google")).get("thought_signature")
        if signature:
            part["thoughtSignature"] = signature
        parts.append(part)
    return parts


def _contents(messages: list) -> tuple[list[str], list[dict]]:
    """(system texts, contents) of neutral messages."""
    system: list[str] = []
    contents: list[dict] = []
    names: dict[str, str] = {}
    tool_turn = False
    for i, msg in enumerate(messages):
        msg, where = as_dict(msg), f"messages[{i}]"
        role = msg.get("role")
        if role in ("system", "developer"):
            system.append(content_text(msg.get("content"), where))
        elif role == "tool":
            part = _tool_response(msg, names, where)
            if tool_turn:
                contents[-1]["parts"].append(part)
            else:
                contents.append({"role": "user", "parts": [part]})
        elif role == "assistant":
            contents.append({"role": "model", "parts": _model_parts(msg, names, where)})
        elif role == "user":
            contents.append({"role": "user", "parts": _user_parts(msg.get("content"), where)})
        else:
            raise TranslationError(f"{where}: role {role!r} cannot be translated")
        tool_turn = role == "tool"
    return system, contents


def _tools_from_neutral(tools: list) -> list[dict]:
    decls, others = [], []
    for tool in tools:
        tool = as_dict(tool)
        fn = tool.get("function")
        if not isinstance(fn, dict):
            others.append(copy.deepcopy(tool))
            continue
        decl: dict[str, Any] = {"name": fn.get("name")}
        if fn.get("description"):
            decl["description"] = fn["description"]
        if fn.get("parameters") is not None:
            decl["parameters"] = upper_schema(fn["parameters"])
        decls.append(decl)
    return ([{"functionDeclarations": decls}] if decls else []) + others


def _config_from_neutral(n: dict, body: dict) -> None:
    choice = n.get("tool_choice")
    if isinstance(choice, str) and choice in _MODES_OUT:
        body["toolConfig"] = {"functionCallingConfig": {"mode": _MODES_OUT[choice]}}
    elif isinstance(choice, dict) and as_dict(choice.get("function")).get("name"):
        body["toolConfig"] = {"functionCallingConfig": {"mode": "ANY",
                                                        "allowedFunctionNames": [choice["function"]["name"]]}}
    config = dict(as_dict(n.get("generationConfig")))
    source = dict(n)
    if source.get("max_tokens") is None and source.get("max_completion_tokens") is not None:
        source["max_tokens"] = source["max_completion_tokens"]
    for neutral, key in _GENERATION:
        if source.get(neutral) is not None:
            config[key] = source[neutral]
    stop = n.get("stop")
    if stop:
        config["stopSequences"] = [stop] if isinstance(stop, str) else list(stop)
    if config:
        body["generationConfig"] = config


def from_neutral(n: dict) -> dict:
    """A neutral request as a generateContent request body."""
    messages = n.get("messages")
    if not isinstance(messages, list):
        raise TranslationError("the request has no 'messages' list")
    system, contents = _contents(messages)
    body: dict[str, Any] = {"contents": contents}
    joined = "\n\n".join(s for s in system if s)
    if joined:
        body["systemInstruction"] = {"parts": [{"text": joined}]}
    if as_list(n.get("tools")):
        body["tools"] = _tools_from_neutral(as_list(n.get("tools")))
    _config_from_neutral(n, body)
    generation = {neutral for neutral, _ in _GENERATION}
    for key, value in n.items():
        if key not in _DROPPED and key not in generation:
            body[key] = copy.deepcopy(value)
    return body
