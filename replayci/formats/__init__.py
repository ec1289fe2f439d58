"""Wire formats: each provider API's responses, streams, errors and requests, read one way."""
from __future__ import annotations

from typing import Any

from ..core.memo import fast_paths
from . import (
    _common,
    _streams,
    anthropic,
    bedrock,
    canonical,
    errors,
    gemini,
    ollama,
    openai_chat,
    openai_responses,
    unsupported,
)
from ._common import (
    DOCUMENT_KEYS,
    STREAM_INCOMPLETE,
    Document,
    NormalizeError,
    ToolCall,
    TranslationError,
    canonical_json,
    error_document,
    incomplete,
)
from ._streams import rewrite_data as rewrite_stream_data

__all__ = [
    "ALIASES", "BY_NAME", "DOCUMENT_KEYS", "FORMATS", "STREAM_INCOMPLETE", "WIRE_FORMATS", "Document",
    "NormalizeError", "ToolCall", "TranslationError",
    "canonical_json", "detect_format", "format_named", "request_format", "from_neutral", "normalize",
    "normalize_stream", "provider_failure", "read_stream_twice", "rewrite_stream_data", "stream_chunks", "to_neutral",
]

# Wire formats, in response-detection order.
WIRE_FORMATS = (openai_chat, openai_responses, anthropic, gemini, bedrock, ollama)
# Everything a response body can be, in detection order: error bodies and the canonical
# fixture form come after the wire formats (a Responses object carries `error: null`).
FORMATS = (*WIRE_FORMATS, errors, canonical)
BY_NAME = {m.NAME: m for m in WIRE_FORMATS}
_FORMAT_NAMED = {m.NAME: m for m in FORMATS}
ALIASES = {
    "openai": "openai-chat", "chat": "openai-chat", "chat-completions": "openai-chat",
    "responses": "openai-responses", "anthropic-messages": "anthropic", "messages": "anthropic",
    "claude": "anthropic", "google": "gemini", "vertex": "gemini", "google-genai": "gemini",
    "bedrock-converse": "bedrock", "converse": "bedrock", "bedrock-invoke": "bedrock",
    "ollama-chat": "ollama",
}
# Known APIs the product does not check, asked before any format reads the payload.
_REFUSERS = (openai_chat, bedrock, ollama, unsupported)
# Request forms, most specific first: the chat-completions form takes whatever is left.
_REQUEST_ORDER = (openai_responses, gemini, bedrock, anthropic, ollama, openai_chat)
# Stream detection order (each module looks at the parsed events).
_STREAM_ORDER = (anthropic, openai_responses, openai_chat, gemini, bedrock, ollama)

_SUPPORTED = ("OpenAI chat completions (and compatible servers), OpenAI Responses, Anthropic "
              "Messages, Gemini generateContent, Bedrock Converse and Ollama /api/chat")


def format_named(name: str) -> Any:
    """The format module called *name* (or one of its aliases)."""
    key = str(name).strip().lower()
    module = BY_NAME.get(ALIASES.get(key, key))
    if module is None:
        known = ", ".join(sorted(BY_NAME))
        raise NormalizeError(f"unknown format {name!r}: expected one of {known}")
    return module


def _refuse(payload: dict) -> None:
    for module in _REFUSERS:
        name = module.refuse(payload)
        if name:
            raise NormalizeError(
                f"unsupported payload: {name}; replayci checks {_SUPPORTED}, and does not read this "
                "one as an empty chat completion"
            )


def detect_format(payload: Any) -> str:
    """The name of the format a response body is in (refused and unknown shapes raise)."""
    if not isinstance(payload, dict):
        hint = " (a stream? use normalize_stream)" if isinstance(payload, (str, list)) else ""
        raise NormalizeError(f"a response must be a JSON object, got {type(payload).__name__}{hint}")
    _refuse(payload)
    if str(payload.get("object") or "").endswith(".chunk"):
        raise NormalizeError("a single stream chunk, not a response: use normalize_stream for streams")
    for module in FORMATS:
        if module.detect(payload):
            return module.NAME
    raise NormalizeError(
        "unknown response shape: expected a canonical response (success, tool_calls, content), an error "
        "body (error), an OpenAI chat completion (choices), an OpenAI Responses object (object: response), "
        "an Anthropic message (type: message), a Gemini response (candidates), a Bedrock Converse response "
        "(output.message) or an Ollama /api/chat response (message, done)"
    )


def normalize(payload: Any, *, status: int | None = None, headers: Any = None) -> Document:
    """Normalize one response body; an HTTP *status* >= 400 makes it an error document. The
    response's *headers* (a mapping or (name, value) pairs), when known, may type an error:
    Bedrock names it in x-amzn-ErrorType, beside a body of only {"message"}."""
    typed = errors.header_type(headers)
    if typed is not None and errors.typed_by_header(payload):
        return errors.normalize({**payload, "__type": typed}, status if status is not None and status >= 400 else None)
    if status is not None and status >= 400:
        return errors.from_status(payload, status)
    if fast_paths() and _plainly_canonical(payload):
        name = canonical.NAME
    elif _stream_like(payload):
        return normalize_stream(payload)
    else:
        name = detect_format(payload)
    module = _FORMAT_NAMED[name]
    try:
        return module.normalize(payload)
    except NormalizeError:
        raise
    except (AttributeError, TypeError, KeyError, IndexError) as exc:
        raise NormalizeError(f"malformed {name} response: {exc}") from None


# The keys of a successful canonical response that no refusal and no other format's detection
# looks at (usage only without Cohere's billed_units).
_CANONICAL_ONLY = frozenset((*(k for k in DOCUMENT_KEYS if k not in ("error", "latency_ms", "cost_usd")),
                             "function_call"))


def _plainly_canonical(payload: Any) -> bool:
    """Whether detect_format would name *payload* canonical, seen from its keys alone: what a
    golden fixture's response usually is, and detection asks every other format first."""
    if type(payload) is not dict or payload.get("success") is not True or not payload.keys() <= _CANONICAL_ONLY:
        return False
    usage = payload.get("usage")
    return not (isinstance(usage, dict) and "billed_units" in usage)


def _stream_like(payload: Any) -> bool:
    """Whether a payload is a stream recorded as one body (a JSON array of chunks, or text)."""
    if isinstance(payload, list):
        return bool(payload) and all(isinstance(item, dict) for item in payload)
    if isinstance(payload, (str, bytes, bytearray)):
        try:
            _streams.framing_of(payload.decode("utf-8", "replace") if not isinstance(payload, str) else payload)
        except NormalizeError:
            return False
        return True
    return False


def _stream_module(api: str | None, events: list) -> Any:
    """The format of a parsed stream: *api*'s when its events fit, else the one they fit."""
    named = format_named(api) if api else None
    if named is not None and named.detect_stream(events):
        return named
    detected = next((m for m in _STREAM_ORDER if m.detect_stream(events)), None)
    return detected or named


def _events_of(stream: Any) -> tuple[list, bool]:
    """(parsed events, cut) of a stream given as text, bytes or an already-parsed JSON array."""
    if isinstance(stream, (bytes, bytearray)):
        stream = stream.decode("utf-8", errors="replace")
    if isinstance(stream, list):
        return [(None, item) for item in stream], False
    if not isinstance(stream, str):
        raise NormalizeError(f"a stream must be text, got {type(stream).__name__}")
    _, events, cut = _streams.parse(stream)
    return events, cut


def stream_chunks(stream: Any) -> list:
    """A stream's chunks, in order: each event's JSON data (or the end marker, e.g. "[DONE]"), for
    keeping a streamed answer in a readable form; a cut last chunk is left out."""
    try:
        events, _ = _events_of(stream)
    except NormalizeError:
        return [stream]
    return [data for _, data in events]


def response_id(payload: Any) -> str | None:
    """The id the provider gave an answer (chat's `id`, Gemini's `responseId`, a Messages or
    Responses stream's `message.id` / `response.id`), from its body or from its stream's first
    event that names one; None when it names none."""
    if isinstance(payload, dict):
        return _named_id(payload)
    if not _stream_like(payload):
        return None
    try:
        events, _ = _events_of(payload)
    except NormalizeError:
        return None
    return next((rid for _, data in events if isinstance(data, dict) for rid in (_named_id(data),) if rid), None)


def _named_id(body: dict) -> str | None:
    for key in ("id", "responseId"):
        if isinstance(body.get(key), str) and body[key]:
            return body[key]
    for key in ("message", "response"):  # a Messages stream's message_start, a Responses stream's events
        inner = body.get(key)
        if isinstance(inner, dict) and isinstance(inner.get("id"), str) and inner["id"]:
            return inner["id"]
    return None


def normalize_stream(text: Any, api: str | None = None, *, status: int | None = None) -> Document:
    """Reassemble a streamed response (SSE, NDJSON or a JSON array) into one document."""
    if status is not None and status >= 400:
        try:
            body = _streams.parse(text)[1][0][1] if isinstance(text, str) and text.strip() else text
        except (NormalizeError, IndexError, ValueError):
            body = text
        return errors.from_status(body, status)
    events, cut = _events_of(text)
    return _read_events(_stream_module(api, events), events, cut)


def _read_events(module: Any, events: list, cut: bool) -> dict:
    """A parsed stream's document as *module* reads it (None: the format no module fits)."""
    if module is None:
        bodies = [obj for _, obj in events if isinstance(obj, dict)]
        if bodies and errors.detect(bodies[0]):
            return errors.normalize(bodies[0])
        if len(bodies) == 1 and len(events) == 1:
            return normalize(bodies[0])
        if cut and not bodies:
            return incomplete("its first event")
        raise NormalizeError("unknown stream: no format recognizes its events")
    try:
        doc = module.read_stream(events)
    except (AttributeError, TypeError, KeyError, IndexError) as exc:
        raise NormalizeError(f"malformed {module.NAME} stream: {exc}") from None
    if cut and doc["success"]:
        return incomplete(module.STREAM_END)
    return doc


def read_stream_twice(text: str, api: str, *, status: int | None = None,
                      headers: Any = None) -> tuple[dict, dict | None]:
    """A streamed answer read as *api*'s (normalize_stream, whose errors it raises) and as
    normalize reads it, naming no API (what a run of its fixture reads; None when that fails),
    the stream parsed once when both read it as one format."""
    if status is not None and status >= 400:  # (a header types only an answer that is one JSON object)
        as_api = normalize_stream(text, api, status=status)
    else:
        events, cut = _events_of(text)
        named = _stream_module(api, events)
        as_api = _read_events(named, events, cut)
        if _stream_like(text) and _stream_module(None, events) is named:
            return as_api, as_api
    try:
        return as_api, normalize(text, status=status, headers=headers)
    except NormalizeError:
        return as_api, None


def request_format(request: dict) -> str | None:
    """The name of the form a request body is written in, or None when no form fits it."""
    if fast_paths() and _plainly_chat(request):
        return openai_chat.NAME
    return next((m.NAME for m in _REQUEST_ORDER if m.detect_request(request)), None)


# Request keys of the chat-completions form that no other form's detection looks at.
_CHAT_ONLY = frozenset(("model", "messages", "tools", "tool_choice", "temperature", "top_p", "n", "seed", "stop",
                        "stream", "user", "max_tokens", "max_completion_tokens", "parallel_tool_calls",
                        "presence_penalty", "frequency_penalty", "response_format"))


def _plainly_chat(request: Any) -> bool:
    """Whether request_format would name *request* chat completions, seen from its keys, its
    tools ({type: function, function}) and its messages (text content, no other form's
    keys): what a golden fixture's request usually is, and every other form is asked first."""
    if type(request) is not dict or not request.keys() <= _CHAT_ONLY or type(request.get("messages")) is not list:
        return False
    if type(request.get("tool_choice", "")) is not str or type(request.get("tools", ())) not in (list, tuple):
        return False
    for tool in request.get("tools", ()):
        if type(tool) is not dict or tool.get("type") != "function" or "input_schema" in tool:
            return False
    for msg in request["messages"]:
        if type(msg) is not dict or "images" in msg or "tool_name" in msg:
            return False
        content = msg.get("content")
        if content is not None and type(content) is not str:
            return False
        if "tool_calls" in msg and not _text_arguments(msg["tool_calls"]):
            return False
    return True


def _text_arguments(calls: Any) -> bool:
    """Whether a message's tool calls are a list whose arguments are text (not Ollama's objects)."""
    return type(calls) is list and all(
        type(c) is dict and not isinstance(_common.as_dict(c.get("function")).get("arguments"), dict) for c in calls)


def to_neutral(request: Any, api: str | None = None) -> tuple[str, dict]:
    """(format name, neutral request) for a request body in any supported form (or in *api*'s)."""
    if not isinstance(request, dict):
        raise TranslationError(f"a request must be a JSON object, got {type(request).__name__}")
    try:
        name = format_named(api).NAME if api else request_format(request)
    except NormalizeError as exc:
        raise TranslationError(str(exc)) from None
    if name is not None:
        return name, BY_NAME[name].to_neutral(request)
    raise TranslationError(
        "unknown request shape: expected messages (chat completions, Anthropic, Bedrock, Ollama), "
        "input (Responses) or contents (Gemini)"
    )


def from_neutral(neutral: dict, format_name: str) -> dict:
    """A neutral request in the request form of *format_name*."""
    if not isinstance(neutral, dict):
        raise TranslationError(f"a request must be a JSON object, got {type(neutral).__name__}")
    try:
        module = format_named(format_name)
    except NormalizeError as exc:
        raise TranslationError(str(exc)) from None
    return module.from_neutral(neutral)


def provider_failure(status: int | None, message: str, type_: str = "provider_error") -> dict:
    """A normalized response for a provider call that failed."""
    return error_document(type_, status, message)
