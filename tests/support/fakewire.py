"""The wire APIs tests/fakeserver.py speaks, each as its provider really sends it.

One ``Wire`` per API: which paths it answers, its success body, its stream (the events, framed
as the API frames them), its error body and headers, and how to read the conversation of a
request written in its form (for routing and for assertions on what was sent). Nothing here
imports replayci: the bodies are written from the providers' own documentation and checked by
their real SDKs (tests/test_fakeserver_wires.py).
"""
from __future__ import annotations

import contextlib
import json
import re
import secrets
import string
import struct
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

_ALNUM = string.ascii_letters + string.digits


def rand(n: int) -> str:
    return "".join(secrets.choice(_ALNUM) for _ in range(n))


def tokens(value: Any) -> int:
    """A rough token count (4 characters a token), so usage numbers look plausible."""
    return max(1, len(json.dumps(value, ensure_ascii=False)) // 4)


def halves(text: str) -> list[str]:
    """*text* in two pieces (one when it is too short to split), as a stream sends it."""
    mid = len(text) // 2
    return [text[:mid], text[mid:]] if mid else [text]


@dataclass(frozen=True)
class ToolCall:
    """A tool call a reply will contain; a str *arguments* is sent verbatim (may be malformed)."""

    name: str
    arguments: Any = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)

    @property
    def obj(self) -> Any:
        """The arguments as an object, for the APIs that send objects (unparseable text stays text)."""
        if isinstance(self.arguments, str):
            with contextlib.suppress(ValueError):
                return json.loads(self.arguments)
        return self.arguments


@dataclass(frozen=True)
class Answer:
    """What a reply says, whatever the API: calls, text, a native stop reason override."""

    model: str
    calls: tuple[ToolCall, ...] = ()
    text: str | None = None
    stop: str | None = None
    prompt: Any = None


def sse(events: Iterable[tuple[str | None, Any]]) -> list[bytes]:
    """Server-sent events, one chunk each (`event:` line when named)."""
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        body = data if isinstance(data, str) else json.dumps(data)
        out.append(f"{head}data: {body}\n\n".encode())
    return out


# --------------------------------------------------------------------------- conversations


def _text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content
                       if isinstance(b, dict) and b.get("type") in (None, "text", "input_text", "output_text"))
    return None


@dataclass
class Turns:
    """A request's conversation, read independently of replayci: user texts, tool results, system."""

    users: list[str] = field(default_factory=list)
    tool_results: list[dict] = field(default_factory=list)  # {call_id, content}
    system: str | None = None
    tools: list[str] = field(default_factory=list)  # declared tool names, in order
    last_user: str | None = None  # the last message's text when it is a user's


class Wire:
    """One wire API: override what differs."""

    name = ""
    path = re.compile("$^")
    content_type = "application/json"
    stream_type = "text/event-stream; charset=utf-8"

    def matches(self, path: str) -> bool:
        return bool(self.path.fullmatch(path))

    def streaming(self, path: str, body: dict) -> bool:
        return body.get("stream") is True

    def model(self, path: str, body: dict, fallback: str) -> str:
        return str(body.get("model") or fallback)

    def body(self, a: Answer) -> dict:  # pragma: no cover - interface
        raise NotImplementedError

    def stream(self, a: Answer, body: dict) -> list[bytes]:  # pragma: no cover - interface
        raise NotImplementedError

    def headers(self) -> tuple[tuple[str, str], ...]:
        return ()

    def error(self, status: int, message: str | None, type_: str | None, code: str | None,
              details: dict | None) -> tuple[dict, list[tuple[str, str]]]:  # pragma: no cover
        raise NotImplementedError

    def turns(self, body: dict) -> Turns:  # pragma: no cover - interface
        raise NotImplementedError


# --------------------------------------------------------------------------- OpenAI chat

_OPENAI_ERRORS = {
    400: ("invalid_request_error", "Invalid value for 'tool_choice': 'sometimes'.", None),
    401: ("invalid_request_error", "Incorrect API key provided.", "invalid_api_key"),
    403: ("invalid_request_error", "Project does not have access to model.", "model_not_found"),
    404: ("invalid_request_error", "The model does not exist or you do not have access to it.", "model_not_found"),
    429: ("requests", "Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1. "
          "Please try again in 1s.", "rate_limit_exceeded"),
    500: ("server_error", "The server had an error while processing your request. Sorry about that!", None),
    503: ("server_error", "The engine is currently overloaded, please try again later.", None),
}


def openai_error_body(status: int, message: str | None = None, type_: str | None = None,
                      code: str | None = None, param: str | None = None) -> dict:
    """An OpenAI error body: ``{"error": {"message", "type", "param", "code"}}``."""
    d_type, d_message, d_code = _OPENAI_ERRORS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", f"HTTP {status}", None))
    return {"error": {"message": message if message is not None else d_message, "type": type_ or d_type,
                      "param": param, "code": code if code is not None else d_code}}


def openai_call_id() -> str:
    """An id shaped like OpenAI's tool-call ids (``call_`` + 24 characters)."""
    return "call_" + rand(24)


def _chat_messages_turns(messages: list, t: Turns) -> Turns:
    for m in messages:
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        if role == "tool":
            t.tool_results.append({"call_id": m.get("tool_call_id") or m.get("tool_name"), "content": m.get("content")})
        elif role in ("system", "developer"):
            t.system = "\n\n".join(x for x in (t.system, _text(m.get("content"))) if x)
        elif role == "user":
            t.users.append(_text(m.get("content")) or "")
        t.last_user = _text(m.get("content")) if role == "user" else None
    return t


class OpenAIChat(Wire):
    name = "openai-chat"
    path = re.compile(r"/v1/chat/completions")

    def body(self, a: Answer) -> dict:
        calls = [{"id": openai_call_id(), "type": "function", "function": {"name": c.name, "arguments": c.text}}
                 for c in a.calls]
        message: dict[str, Any] = {"role": "assistant", "content": a.text, "refusal": None, "annotations": []}
        if calls:
            message["tool_calls"] = calls
        return {"id": "chatcmpl-" + rand(29), "object": "chat.completion", "created": int(time.time()),
                "model": a.model,
                "choices": [{"index": 0, "message": message, "logprobs": None,
                             "finish_reason": a.stop or ("tool_calls" if calls else "stop")}],
                "usage": self.usage(a), "service_tier": "default", "system_fingerprint": "fp_" + secrets.token_hex(5)}

    def usage(self, a: Answer) -> dict:
        p, c = tokens(a.prompt), tokens([a.text, [(x.name, x.text) for x in a.calls]])
        return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c,
                "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                              "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}

    def stream(self, a: Answer, body: dict) -> list[bytes]:
        head = {"id": "chatcmpl-" + rand(29), "object": "chat.completion.chunk", "created": int(time.time()),
                "model": a.model, "service_tier": "default", "system_fingerprint": "fp_" + secrets.token_hex(5)}

        def chunk(delta: dict, finish: str | None = None) -> tuple[None, dict]:
            return None, {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

        events = [chunk({"role": "assistant", "content": "" if a.text is not None else None, "refusal": None})]
        events += [chunk({"content": piece}) for piece in halves(a.text or "") if piece]
        for i, c in enumerate(a.calls):
            events.append(chunk({"tool_calls": [{"index": i, "id": openai_call_id(), "type": "function",
                                                 "function": {"name": c.name, "arguments": ""}}]}))
            events += [chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
                       for piece in halves(c.text)]
        events.append(chunk({}, a.stop or ("tool_calls" if a.calls else "stop")))
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append((None, {**head, "choices": [], "usage": self.usage(a)}))
        events.append((None, "[DONE]"))
        return sse(events)

    def headers(self) -> tuple[tuple[str, str], ...]:
        return (("x-request-id", "req_" + secrets.token_hex(16)), ("openai-processing-ms", "12"))

    def error(self, status, message, type_, code, details):
        headers = [("x-request-id", "req_" + secrets.token_hex(16))]
        if status == 429:
            headers += [("x-ratelimit-limit-requests", "3"), ("x-ratelimit-remaining-requests", "0")]
        return openai_error_body(status, message, type_, code), headers

    def turns(self, body: dict) -> Turns:
        t = _chat_messages_turns(body.get("messages") or [], Turns())
        t.tools = [(x.get("function") or {}).get("name") or x.get("name") for x in body.get("tools") or []
                   if isinstance(x, dict)]
        return t


# --------------------------------------------------------------------------- OpenAI Responses


class OpenAIResponses(OpenAIChat):
    name = "openai-responses"
    path = re.compile(r"/v1/responses")

    def output(self, a: Answer) -> list[dict]:
        items: list[dict] = []
        if a.text is not None:
            items.append({"id": "msg_" + rand(40), "type": "message", "status": "completed", "role": "assistant",
                          "content": [{"type": "output_text", "text": a.text, "annotations": [], "logprobs": []}]})
        for c in a.calls:
            items.append({"id": "fc_" + rand(40), "type": "function_call", "status": "completed",
                          "call_id": openai_call_id(), "name": c.name, "arguments": c.text})
        return items

    def response(self, a: Answer, output: list[dict], status: str = "completed") -> dict:
        p, c = tokens(a.prompt), tokens(output)
        incomplete = {"reason": "max_output_tokens"} if a.stop == "max_output_tokens" else None
        return {"id": "resp_" + rand(40), "object": "response", "created_at": int(time.time()),
                "status": "incomplete" if incomplete else status, "background": False, "error": None,
                "incomplete_details": incomplete, "instructions": None, "max_output_tokens": None,
                "model": a.model, "output": output, "parallel_tool_calls": True, "previous_response_id": None,
                "reasoning": {"effort": None, "summary": None}, "service_tier": "default", "store": True,
                "temperature": 1.0, "text": {"format": {"type": "text"}, "verbosity": "medium"},
                "tool_choice": "auto", "tools": [], "top_p": 1.0, "truncation": "disabled",
                "usage": {"input_tokens": p, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": c,
                          "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": p + c},
                "user": None, "metadata": {}}

    def body(self, a: Answer) -> dict:
        return self.response(a, self.output(a))

    def stream(self, a: Answer, body: dict) -> list[bytes]:
        output = self.output(a)
        final = self.response(a, output)
        events: list[tuple[str, dict]] = []

        def emit(kind: str, **data: Any) -> None:
            events.append((kind, {"type": kind, "sequence_number": len(events), **data}))

        emit("response.created", response={**final, "status": "in_progress", "output": [], "usage": None})
        emit("response.in_progress", response={**final, "status": "in_progress", "output": [], "usage": None})
        for i, item in enumerate(output):
            if item["type"] == "message":
                emit("response.output_item.added", output_index=i,
                     item={**item, "status": "in_progress", "content": []})
                part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
                emit("response.content_part.added", item_id=item["id"], output_index=i, content_index=0, part=part)
                for piece in halves(item["content"][0]["text"]):
                    emit("response.output_text.delta", item_id=item["id"], output_index=i, content_index=0,
                         delta=piece, logprobs=[])
                emit("response.output_text.done", item_id=item["id"], output_index=i, content_index=0,
                     text=item["content"][0]["text"], logprobs=[])
                emit("response.content_part.done", item_id=item["id"], output_index=i, content_index=0,
                     part=item["content"][0])
            else:
                emit("response.output_item.added", output_index=i,
                     item={**item, "status": "in_progress", "arguments": ""})
                for piece in halves(item["arguments"]):
                    emit("response.function_call_arguments.delta", item_id=item["id"], output_index=i, delta=piece)
                emit("response.function_call_arguments.done", item_id=item["id"], output_index=i,
                     arguments=item["arguments"])
            emit("response.output_item.done", output_index=i, item=item)
        emit("response.incomplete" if final["status"] == "incomplete" else "response.completed", response=final)
        return sse(events)

    def turns(self, body: dict) -> Turns:
        t = Turns(system=body.get("instructions"))
        items = body.get("input")
        items = [{"role": "user", "content": items}] if isinstance(items, str) else items or []
        for item in items:
            kind = item.get("type", "message")
            if kind in ("function_call_output", "custom_tool_call_output"):
                t.tool_results.append({"call_id": item.get("call_id"), "content": item.get("output")})
                t.last_user = None
            elif kind == "message":
                _chat_messages_turns([item], t)
        t.tools = [x.get("name") for x in body.get("tools") or [] if isinstance(x, dict)]
        return t


# --------------------------------------------------------------------------- Anthropic

_ANTHROPIC_ERRORS = {
    400: ("invalid_request_error", "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'"),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "The requested resource could not be found."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."),
    500: ("api_error", "Internal server error"),
    503: ("api_error", "Service unavailable"),
    529: ("overloaded_error", "Overloaded"),
}


def anthropic_call_id() -> str:
    """An id shaped like Anthropic's tool_use ids (``toolu_01`` + 22 characters)."""
    return "toolu_01" + rand(22)


def anthropic_error_body(status: int, message: str | None = None, type_: str | None = None,
                         details: dict | None = None) -> dict:
    """An Anthropic error body: ``{"type": "error", "error": {type, message}, "request_id"}``."""
    d_type, d_message = _ANTHROPIC_ERRORS.get(
        status, ("api_error" if status >= 500 else "invalid_request_error", f"HTTP {status}"))
    error: dict[str, Any] = {"type": type_ or d_type, "message": message if message is not None else d_message}
    if details is not None:
        error["details"] = details
    return {"type": "error", "error": error, "request_id": "req_011C" + rand(20)}


class Anthropic(Wire):
    name = "anthropic"
    path = re.compile(r"/v1/messages")

    def content(self, a: Answer) -> list[dict]:
        content: list[dict] = [{"type": "text", "text": a.text}] if a.text is not None else []
        # Anthropic always sends an object; unparseable text stays visible, not invented.
        content += [{"type": "tool_use", "id": anthropic_call_id(), "name": c.name, "input": c.obj} for c in a.calls]
        return content

    def message(self, a: Answer, content: list[dict]) -> dict:
        return {"id": "msg_01" + rand(22), "type": "message", "role": "assistant", "model": a.model,
                "content": content, "stop_reason": a.stop or ("tool_use" if a.calls else "end_turn"),
                "stop_sequence": None,
                "usage": {"input_tokens": tokens(a.prompt), "output_tokens": tokens(content),
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                          "service_tier": "standard"}}

    def body(self, a: Answer) -> dict:
        return self.message(a, self.content(a))

    def stream(self, a: Answer, body: dict) -> list[bytes]:
        content = self.content(a)
        final = self.message(a, content)
        start = {**final, "content": [], "stop_reason": None,
                 "usage": {**final["usage"], "output_tokens": 1}}
        events: list[tuple[str, dict]] = [("message_start", {"type": "message_start", "message": start})]
        for i, block in enumerate(content):
            if block["type"] == "text":
                first, deltas = {"type": "text", "text": ""}, [{"type": "text_delta", "text": p}
                                                                for p in halves(block["text"])]
            else:
                first = {**block, "input": {}}
                raw = block["input"] if isinstance(block["input"], str) else json.dumps(block["input"])
                deltas = [{"type": "input_json_delta", "partial_json": p} for p in ["", *halves(raw)]]
            events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": first}))
            if i == 0:
                events.append(("ping", {"type": "ping"}))
            events += [("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d})
                       for d in deltas]
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        events.append(("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": final["stop_reason"], "stop_sequence": None},
                                         "usage": {"output_tokens": final["usage"]["output_tokens"]}}))
        events.append(("message_stop", {"type": "message_stop"}))
        return sse(events)

    def headers(self) -> tuple[tuple[str, str], ...]:
        return (("request-id", "req_011C" + rand(20)),)

    def error(self, status, message, type_, code, details):
        body = anthropic_error_body(status, message, type_, details)
        # The real API says whether a retry can help; the SDK must still not act on it.
        return body, [("request-id", body["request_id"]),
                      ("x-should-retry", "true" if status in (429, 500, 503, 529) else "false")]

    def turns(self, body: dict) -> Turns:
        t = Turns(system=_text(body.get("system")))
        for m in body.get("messages") or []:
            content = m.get("content")
            blocks = content if isinstance(content, list) else []
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    t.tool_results.append({"call_id": block.get("tool_use_id"), "content": block.get("content")})
            if m.get("role") == "user" and _text(content):
                t.users.append(_text(content) or "")
            t.last_user = _text(content) if m.get("role") == "user" else None
        t.tools = [x.get("name") for x in body.get("tools") or [] if isinstance(x, dict)]
        return t


# --------------------------------------------------------------------------- Gemini

_GEMINI_ERRORS = {
    400: ("INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."),
    403: ("PERMISSION_DENIED", "Permission denied: Consumer does not have access to the model."),
    404: ("NOT_FOUND", "models/unknown is not found for API version v1beta, or is not supported."),
    429: ("RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and billing details."),
    500: ("INTERNAL", "An internal error has occurred. Please retry or report in "
          "https://developers.generativeai.google/guide/troubleshooting"),
    503: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
    504: ("DEADLINE_EXCEEDED", "Deadline expired before operation could complete."),
}


class Gemini(Wire):
    name = "gemini"
    path = re.compile(r"/v1(beta)?/models/[^/:]+:(generateContent|streamGenerateContent)")

    def streaming(self, path: str, body: dict) -> bool:
        return path.endswith(":streamGenerateContent")

    def model(self, path: str, body: dict, fallback: str) -> str:
        return path.rsplit("/", 1)[-1].split(":", 1)[0]

    def usage(self, a: Answer, parts: list) -> dict:
        p, c = tokens(a.prompt), tokens(parts)
        return {"promptTokenCount": p, "candidatesTokenCount": c, "totalTokenCount": p + c,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": p}]}

    def parts(self, a: Answer) -> list[dict]:
        parts: list[dict] = [{"text": a.text}] if a.text is not None else []
        return parts + [{"functionCall": {"name": c.name, "args": c.obj}} for c in a.calls]

    def chunk(self, a: Answer, parts: list, finish: str | None, usage: dict, rid: str) -> dict:
        cand: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            cand["finishReason"] = finish
        return {"candidates": [cand], "usageMetadata": usage, "modelVersion": a.model, "responseId": rid}

    def body(self, a: Answer) -> dict:
        parts = self.parts(a)
        # Gemini says STOP after a function call too.
        return self.chunk(a, parts, a.stop or "STOP", self.usage(a, parts), rand(22))

    def stream(self, a: Answer, body: dict) -> list[bytes]:
        parts, rid = self.parts(a), rand(22)
        usage = self.usage(a, parts)
        head = {"promptTokenCount": usage["promptTokenCount"], "totalTokenCount": usage["promptTokenCount"]}
        pieces = [[{"text": t}] for t in halves(a.text)] if a.text else []
        pieces += [[p] for p in parts if "functionCall" in p]
        pieces = pieces or [[]]
        chunks = [self.chunk(a, p, None, head, rid) for p in pieces[:-1]]
        chunks.append(self.chunk(a, pieces[-1], a.stop or "STOP", usage, rid))
        # The API ends each event with CRLF pairs.
        return [f"data: {json.dumps(c)}\r\n\r\n".encode() for c in chunks]

    def error(self, status, message, type_, code, details):
        d_status, d_message = _GEMINI_ERRORS.get(status, ("INTERNAL" if status >= 500 else "FAILED_PRECONDITION",
                                                          f"HTTP {status}"))
        error: dict[str, Any] = {"code": status, "message": message if message is not None else d_message,
                                 "status": type_ or d_status}
        if details is not None:
            error["details"] = [details]
        return {"error": error}, []

    def turns(self, body: dict) -> Turns:
        system = body.get("systemInstruction") or body.get("system_instruction") or {}
        t = Turns(system="".join(p.get("text", "") for p in system.get("parts") or []) or None)
        for content in body.get("contents") or []:
            texts = []
            for part in content.get("parts") or []:
                fr = part.get("functionResponse")
                if isinstance(fr, dict):
                    t.tool_results.append({"call_id": fr.get("id") or fr.get("name"), "content": fr.get("response")})
                elif isinstance(part.get("text"), str):
                    texts.append(part["text"])
            if content.get("role") != "model" and texts:
                t.users.append("".join(texts))
            t.last_user = "".join(texts) if content.get("role") != "model" and texts else None
        t.tools = [d.get("name") for tool in body.get("tools") or [] for d in tool.get("functionDeclarations") or []]
        return t


# --------------------------------------------------------------------------- Bedrock Converse

_BEDROCK_ERRORS = {
    400: ("ValidationException", "The provided request is not valid"),
    403: ("AccessDeniedException", "You don't have access to the model with the specified model ID."),
    404: ("ResourceNotFoundException", "The requested resource could not be found."),
    408: ("ModelTimeoutException", "The request took too long to process. Processing time exceeded the model "
          "timeout length."),
    424: ("ModelErrorException", "The request failed due to an error while processing the model."),
    429: ("ThrottlingException", "Too many requests, please wait before trying again."),
    500: ("InternalServerException", "The server encountered an internal error."),
    503: ("ServiceUnavailableException", "The service isn't currently available. Try again later."),
}


def event_stream_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One message of the AWS event stream encoding (application/vnd.amazon.eventstream)."""
    head = b"".join(struct.pack("!B", len(k)) + k.encode() + b"\x07" + struct.pack("!H", len(v)) + v.encode()
                    for k, v in headers.items())
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack("!II", total, len(head))
    prelude += struct.pack("!I", zlib.crc32(prelude))
    message = prelude + head + payload
    return message + struct.pack("!I", zlib.crc32(message))


class Bedrock(Wire):
    name = "bedrock"
    path = re.compile(r"/model/[^/]+/(converse|converse-stream)")
    stream_type = "application/vnd.amazon.eventstream"

    def streaming(self, path: str, body: dict) -> bool:
        return path.endswith("/converse-stream")

    def model(self, path: str, body: dict, fallback: str) -> str:
        from urllib.parse import unquote

        return unquote(path.split("/")[2])

    def content(self, a: Answer) -> list[dict]:
        content: list[dict] = [{"text": a.text}] if a.text is not None else []
        return content + [{"toolUse": {"toolUseId": "tooluse_" + rand(22), "name": c.name, "input": c.obj}}
                          for c in a.calls]

    def usage(self, a: Answer, content: list) -> dict:
        p, c = tokens(a.prompt), tokens(content)
        return {"inputTokens": p, "outputTokens": c, "totalTokens": p + c}

    def body(self, a: Answer) -> dict:
        content = self.content(a)
        return {"output": {"message": {"role": "assistant", "content": content}},
                "stopReason": a.stop or ("tool_use" if a.calls else "end_turn"),
                "usage": self.usage(a, content), "metrics": {"latencyMs": 12}}

    def stream(self, a: Answer, body: dict) -> list[bytes]:
        content = self.content(a)
        events: list[tuple[str, dict]] = [("messageStart", {"role": "assistant"})]
        for i, block in enumerate(content):
            if "toolUse" in block:
                tu = block["toolUse"]
                events.append(("contentBlockStart", {"contentBlockIndex": i, "start": {
                    "toolUse": {"toolUseId": tu["toolUseId"], "name": tu["name"]}}}))
                raw = tu["input"] if isinstance(tu["input"], str) else json.dumps(tu["input"])
                events += [("contentBlockDelta", {"contentBlockIndex": i, "delta": {"toolUse": {"input": p}}})
                           for p in halves(raw)]
            else:
                events += [("contentBlockDelta", {"contentBlockIndex": i, "delta": {"text": p}})
                           for p in halves(block["text"])]
            events.append(("contentBlockStop", {"contentBlockIndex": i}))
        events.append(("messageStop", {"stopReason": a.stop or ("tool_use" if a.calls else "end_turn")}))
        events.append(("metadata", {"usage": self.usage(a, content), "metrics": {"latencyMs": 12}}))
        return [event_stream_message({":event-type": kind, ":content-type": "application/json",
                                      ":message-type": "event"}, json.dumps(data).encode())
                for kind, data in events]

    def headers(self) -> tuple[tuple[str, str], ...]:
        return (("x-amzn-requestid", secrets.token_hex(16)),)

    def error(self, status, message, type_, code, details):
        d_type, d_message = _BEDROCK_ERRORS.get(
            status, ("InternalServerException" if status >= 500 else "ValidationException", f"HTTP {status}"))
        kind = type_ or d_type
        return ({"message": message if message is not None else d_message},
                [("x-amzn-requestid", secrets.token_hex(16)), ("x-amzn-errortype", f"{kind}:http://internal.amazon."
                                                                                     "com/coral/com.amazon.bedrock/")])

    def turns(self, body: dict) -> Turns:
        t = Turns(system="".join(s.get("text", "") for s in body.get("system") or []) or None)
        for m in body.get("messages") or []:
            texts = []
            for block in m.get("content") or []:
                if isinstance(block.get("toolResult"), dict):
                    r = block["toolResult"]
                    t.tool_results.append({"call_id": r.get("toolUseId"), "content": r.get("content")})
                elif isinstance(block.get("text"), str):
                    texts.append(block["text"])
            if m.get("role") == "user" and texts:
                t.users.append("".join(texts))
            t.last_user = "".join(texts) if m.get("role") == "user" and texts else None
        t.tools = [(x.get("toolSpec") or {}).get("name") for x in (body.get("toolConfig") or {}).get("tools") or []]
        return t


# --------------------------------------------------------------------------- Ollama


class Ollama(OpenAIChat):
    name = "ollama"
    path = re.compile(r"/api/chat")
    stream_type = "application/x-ndjson"

    def streaming(self, path: str, body: dict) -> bool:
        return body.get("stream") is not False  # Ollama streams unless told not to

    def message(self, a: Answer) -> dict:
        message: dict[str, Any] = {"role": "assistant", "content": a.text or ""}
        if a.calls:
            message["tool_calls"] = [{"function": {"name": c.name, "arguments": c.obj}} for c in a.calls]
        return message

    def final(self, a: Answer, message: dict) -> dict:
        return {"model": a.model, "created_at": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime()),
                "message": message, "done_reason": a.stop or "stop", "done": True, "total_duration": 812345678,
                "load_duration": 12345678, "prompt_eval_count": tokens(a.prompt), "prompt_eval_duration": 123456,
                "eval_count": tokens(message), "eval_duration": 654321}

    def body(self, a: Answer) -> dict:
        return self.final(a, self.message(a))

    def stream(self, a: Answer, body: dict) -> list[bytes]:
        when = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        lines = [{"model": a.model, "created_at": when, "message": {"role": "assistant", "content": p}, "done": False}
                 for p in halves(a.text or "") if p]
        if a.calls:
            lines.append({"model": a.model, "created_at": when, "done": False,
                          "message": {"role": "assistant", "content": "", "tool_calls": self.message(a)["tool_calls"]}})
        lines.append(self.final(a, {"role": "assistant", "content": ""}))
        return [json.dumps(line).encode() + b"\n" for line in lines]

    def headers(self) -> tuple[tuple[str, str], ...]:
        return ()

    def error(self, status, message, type_, code, details):
        default = {404: 'model "unknown" not found, try pulling it first'}.get(status, f"HTTP {status}")
        return {"error": message if message is not None else default}, []


WIRES: dict[str, Wire] = {w.name: w for w in (OpenAIChat(), OpenAIResponses(), Anthropic(), Gemini(), Bedrock(),
                                              Ollama())}


def wire_of(path: str) -> Wire | None:
    """The wire API a request path belongs to."""
    return next((w for w in WIRES.values() if w.matches(path)), None)
