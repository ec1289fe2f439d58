"""A call read from a trace, rebuilt as the request and the response of its provider's wire API,
so the formats read it back as any recorded exchange: OpenAI chat completions and Responses,
Anthropic Messages, Gemini generateContent, Bedrock Converse."""
from __future__ import annotations

import copy
import json
from typing import Any
from urllib.parse import quote

from ... import formats
from ._conventions import Call
from ._messages import Answer, chat_call

# SDK keyword arguments that are not part of the body (and may carry credentials).
SDK_ONLY = ("extra_headers", "extra_query", "extra_body", "timeout")
# A rebuilt answer is one JSON document: the request asks for no stream.
_STREAM_KEYS = ("stream", "stream_options")


def endpoint(api: str, model: Any) -> str:
    """The URL path a request of *api* goes to."""
    name = quote(str(model or "model"), safe="")
    return {
        "openai-chat": "/v1/chat/completions",
        "openai-responses": "/v1/responses",
        "anthropic": "/v1/messages",
        "gemini": f"/v1beta/models/{name}:generateContent",
        "bedrock": f"/model/{name}/converse",
    }.get(api, "/v1/chat/completions")


def request(call: Call) -> dict:
    """The request body: the one the span recorded when it is in the call's form, else the
    neutral request rebuilt in that form. Raises formats.TranslationError."""
    if call.body is not None:
        body = {k: copy.deepcopy(v) for k, v in call.body.items() if k not in SDK_ONLY + _STREAM_KEYS}
        if call.tools and not formats.to_neutral(body, call.api)[1].get("tools"):
            body.update(_tool_keys(call))  # litellm records the tools beside the body, not in it
        return body
    neutral: dict = {"model": call.model, "messages": call.messages, **call.params}
    if call.model is None:
        del neutral["model"]
    if call.tools:
        neutral["tools"] = call.tools
    body = formats.from_neutral(neutral, call.api)
    if call.api == "gemini":
        body.pop("model", None)  # Gemini names the model in the URL
    return body


def _tool_keys(call: Call) -> dict:
    """The body keys that declare the call's tools in its API's form (`tools`, `toolConfig`)."""
    bare = {"model": call.model or "model", "messages": [{"role": "user", "content": "-"}]}
    plain = formats.from_neutral(bare, call.api)
    declared = formats.from_neutral({**bare, "tools": call.tools}, call.api)
    return {k: v for k, v in declared.items() if plain.get(k) != v}


def _finish(answer: Answer) -> str:
    """The finish reason in OpenAI's names: tool_calls, length, content_filter or stop."""
    reason = str(answer.finish or "").lower()
    if reason in ("length", "max_tokens", "max_output_tokens"):
        return "length"  # an answer cut off at its token limit, calls or not
    if answer.calls:
        return "tool_calls"
    if reason in ("content_filter", "safety", "refusal", "guardrail_intervened"):
        return "content_filter"
    return "stop"


def _object_args(arguments: Any) -> Any:
    """Arguments as the object Anthropic, Gemini and Bedrock send (text that is no JSON object
    stays text, for the formats to report)."""
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except (ValueError, RecursionError):
            return arguments
        return parsed if isinstance(parsed, dict) else arguments
    return arguments


def _openai_chat(call: Call) -> dict:
    a = call.answer
    message: dict = {"role": "assistant", "content": a.content}
    if a.calls:
        message["tool_calls"] = [chat_call(c) for c in a.calls]
    if a.reasoning:
        message["reasoning_content"] = a.reasoning
    if a.audio:
        message["audio"] = {"id": "audio_imported", **a.audio}
    return {"id": call.response_id or "chatcmpl-imported", "object": "chat.completion", "model": call.model,
            "choices": [{"index": 0, "message": message, "finish_reason": _finish(a)}]}


def _openai_responses(call: Call) -> dict:
    a = call.answer
    output: list = []
    if a.reasoning:
        output.append({"type": "reasoning", "summary": [{"type": "summary_text", "text": a.reasoning}]})
    if a.content is not None:
        output.append({"type": "message", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": a.content, "annotations": []}]})
    for c in a.calls:
        text = chat_call(c)["function"]["arguments"]
        output.append({"type": "function_call", "call_id": c["id"] or "", "name": c["name"],
                       "arguments": text, "status": "completed"})
    doc: dict = {"id": call.response_id or "resp_imported", "object": "response", "model": call.model, "output": output,
                 "status": "completed"}
    if _finish(a) == "length":
        doc.update(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    return doc


_ANTHROPIC_STOP = {"tool_calls": "tool_use", "length": "max_tokens", "content_filter": "refusal", "stop": "end_turn"}


def _anthropic(call: Call) -> dict:
    a = call.answer
    content: list = []
    if a.reasoning:
        content.append({"type": "thinking", "thinking": a.reasoning, "signature": ""})
    if a.content is not None:
        content.append({"type": "text", "text": a.content})
    content += [{"type": "tool_use", "id": c["id"] or f"toolu_{i}", "name": c["name"],
                 "input": _object_args(c["arguments"])} for i, c in enumerate(a.calls)]
    return {"id": call.response_id or "msg_imported", "type": "message", "role": "assistant", "model": call.model,
            "content": content, "stop_reason": _ANTHROPIC_STOP[_finish(a)]}


_GEMINI_STOP = {"tool_calls": "STOP", "length": "MAX_TOKENS", "content_filter": "SAFETY", "stop": "STOP"}


def _gemini(call: Call) -> dict:
    a = call.answer
    parts: list = []
    if a.reasoning:
        parts.append({"text": a.reasoning, "thought": True})
    if a.content is not None:
        parts.append({"text": a.content})
    for c in a.calls:
        fn: dict = {"name": c["name"], "args": _object_args(c["arguments"])}
        if c["id"]:
            fn["id"] = c["id"]
        parts.append({"functionCall": fn})
    doc = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": _GEMINI_STOP[_finish(a)],
                           "index": 0}], "modelVersion": call.model}
    if call.response_id:
        doc["responseId"] = call.response_id
    return doc


_BEDROCK_STOP = {"tool_calls": "tool_use", "length": "max_tokens", "content_filter": "content_filtered",
                 "stop": "end_turn"}


def _bedrock(call: Call) -> dict:
    a = call.answer
    content: list = []
    if a.reasoning:
        content.append({"reasoningContent": {"reasoningText": {"text": a.reasoning}}})
    if a.content is not None:
        content.append({"text": a.content})
    content += [{"toolUse": {"toolUseId": c["id"] or f"tooluse_{i}", "name": c["name"],
                             "input": _object_args(c["arguments"])}} for i, c in enumerate(a.calls)]
    return {"output": {"message": {"role": "assistant", "content": content}},
            "stopReason": _BEDROCK_STOP[_finish(a)]}


_RESPONSES = {"openai-chat": _openai_chat, "openai-responses": _openai_responses, "anthropic": _anthropic,
              "gemini": _gemini, "bedrock": _bedrock}


def response(call: Call) -> dict:
    """The answer as the response body of the call's wire API."""
    return _RESPONSES[call.api](call)
