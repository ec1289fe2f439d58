"""Pieces every format shares: the document, arguments, stop reasons, usage, errors."""
from __future__ import annotations

import json
from typing import Any, TypedDict

from ..core.hashing import canonical_json
from ..core.jsonvalue import STRICT_DECODER

_canonical = canonical_json


_decoder = json.JSONDecoder()


def _decode(text: str, decoder: json.JSONDecoder = _decoder) -> Any:
    """json.loads(text): the C scanner straight away when the value fills the text (the
    arguments a model sends, several per case), else the decoder, which skips blanks and
    says what is wrong."""
    try:
        value, end = decoder.scan_once(text, 0)
    except StopIteration:  # a blank first, or no value at all
        return decoder.decode(text)
    return value if end == len(text) else decoder.decode(text)


class Pieces(list):
    """Text a stream sends in pieces, kept as a list and joined once at the end (joining each
    piece onto the text so far costs the square of its length: minutes for megabytes)."""


def add_piece(current: Any, piece: str) -> Pieces:
    """*current* (text so far, Pieces, or nothing) with *piece* after it."""
    if isinstance(current, Pieces):
        current.append(piece)
        return current
    return Pieces((current if isinstance(current, str) else "", piece))


def join_pieces(value: Any, depth: int = 4) -> Any:
    """*value* with every Pieces in it joined into its text, in place, through dicts and lists
    down to *depth* (where a stream's reader keeps them; a provider's nesting below is not walked)."""
    if isinstance(value, Pieces):
        return "".join(value)
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in list(items) if depth > 0 else ():
        if isinstance(item, (dict, list)):
            value[key] = join_pieces(item, depth - 1)
    return value


STOP = "stop"
LENGTH = "length"
CONTENT_FILTER = "content_filter"
TOOL_CALLS = "tool_calls"
STREAM_INCOMPLETE = "stream_incomplete"

# Provider stop reasons (already lower-cased) and their OpenAI names.
_STOP_REASONS = {
    "stop": STOP,
    "end_turn": STOP,
    "stop_sequence": STOP,
    "complete": STOP,
    "completed": STOP,
    "length": LENGTH,
    "max_tokens": LENGTH,
    "max_output_tokens": LENGTH,
    "content_filter": CONTENT_FILTER,
    "content_filtered": CONTENT_FILTER,
    "guardrail_intervened": CONTENT_FILTER,
    "safety": CONTENT_FILTER,
    "recitation": CONTENT_FILTER,
    "blocklist": CONTENT_FILTER,
    "prohibited_content": CONTENT_FILTER,
    "spii": CONTENT_FILTER,
    "image_safety": CONTENT_FILTER,
    "refusal": CONTENT_FILTER,
    "tool_use": TOOL_CALLS,
    "tool_calls": TOOL_CALLS,
    "function_call": TOOL_CALLS,
}


class NormalizeError(ValueError):
    """The payload is of no shape replayci knows, or of one it does not check."""


class TranslationError(ValueError):
    """A request cannot be expressed in the target format."""


def loads(text: str) -> Any:
    """Parse JSON text (raises ValueError)."""
    return _decode(text)


def parse_arguments(raw: Any) -> tuple[Any, str | Any]:
    """(arguments, arguments_raw) for arguments sent as a JSON string, an object or nothing."""
    if raw is None or raw == "":
        return {}, ""
    if isinstance(raw, str):
        try:
            return _decode(raw, STRICT_DECODER), raw
        except (ValueError, RecursionError):
            return raw, raw
    try:
        return raw, _canonical(raw)
    except ValueError:  # an object holding NaN or an infinity: as unparseable as that text
        text = json.dumps(raw, ensure_ascii=False)
        return text, text


def call(id_: Any, name: Any, raw: Any) -> dict:
    """One normalized client tool call."""
    arguments, arguments_raw = parse_arguments(raw)
    return {"id": id_, "name": name, "arguments": arguments, "arguments_raw": arguments_raw}


def server_call(name: Any, raw: Any) -> dict:
    """One tool call the provider ran itself."""
    return {"name": name, "arguments": parse_arguments(raw)[0]}


def text_or_none(parts: list[str]) -> str | None:
    """Text parts joined with nothing between them; None when there is no text."""
    joined = "".join(p for p in parts if isinstance(p, str))
    return joined or None


def map_stop(reason: Any, has_calls: bool) -> Any:
    """A provider's stop reason in OpenAI's names (tool_calls whenever there are client calls)."""
    if has_calls:
        return TOOL_CALLS
    if reason is None:
        return None
    key = str(reason).lower()
    return _STOP_REASONS.get(key, key)


def usage(input_tokens: Any, output_tokens: Any, cached_input_tokens: Any = None) -> dict | None:
    """The usage object, or None when the provider reported neither count. A positive count of
    input tokens read from the cache (part of input_tokens) adds `cached_input_tokens`, which
    is priced lower."""
    if input_tokens is None and output_tokens is None:
        return None
    out = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    if isinstance(cached_input_tokens, int) and not isinstance(cached_input_tokens, bool) and cached_input_tokens > 0:
        out["cached_input_tokens"] = cached_input_tokens
    return out


class ToolCall(TypedDict):
    """One tool call of a normalized response, as every format gives it."""

    id: Any
    name: Any
    arguments: Any  # the parsed JSON, or the text when it is no JSON
    arguments_raw: Any  # the text the model sent


class _Said(TypedDict):
    """What every normalized response holds, whatever its format."""

    success: bool
    tool_calls: list[ToolCall]
    content: Any  # the text, None for none
    stop_reason: Any
    usage: dict | None
    error: dict | None  # {type, status, message} of a failed call
    server_tool_calls: list[dict]
    reasoning: Any
    refusal: Any
    model: Any


class Document(_Said, total=False):
    """The normalized response document: what every check, recording and report reads of a
    model's answer, whatever its format; the metrics are added when it is measured."""

    latency_ms: float | None
    cost_usd: float | None


# Its keys and each tool call's, in order: what an output invariant's path can name.
DOCUMENT_KEYS: tuple[str, ...] = tuple(Document.__annotations__)
CALL_KEYS: tuple[str, ...] = tuple(ToolCall.__annotations__)
# Each key's value when the response had nothing to say there (all but success and tool_calls).
DOCUMENT_DEFAULTS: dict[str, Any] = {k: [] if k == "server_tool_calls" else None
                                     for k in DOCUMENT_KEYS if k not in ("success", "tool_calls")}
# Keys only some formats fill: a document without them reads as one with them empty.
OPTIONAL_KEYS = ("server_tool_calls", "reasoning", "refusal", "model")


def document(
    tool_calls: list[dict],
    content: Any,
    stop_reason: Any,
    usage_: dict | None,
    *,
    reasoning: Any = None,
    refusal: Any = None,
    server_tool_calls: list[dict] | None = None,
    model: Any = None,
) -> Document:
    """A successful normalized response document."""
    return {
        "success": True,
        "tool_calls": tool_calls,
        "content": content if content != "" else None,
        "stop_reason": stop_reason,
        "usage": usage_,
        "error": None,
        "server_tool_calls": server_tool_calls or [],
        "reasoning": reasoning if reasoning != "" else None,
        "refusal": refusal if refusal != "" else None,
        "model": model,
    }


def error_document(type_: Any, status: Any, message: Any, *, model: Any = None) -> Document:
    """A failed normalized response document."""
    return {
        "success": False,
        "tool_calls": [],
        "content": None,
        "stop_reason": None,
        "usage": None,
        "error": {
            "type": type_ or "error",
            "status": status,
            "message": message if isinstance(message, str) else ("" if message is None else str(message)),
        },
        "server_tool_calls": [],
        "reasoning": None,
        "refusal": None,
        "model": model,
    }


def incomplete(marker: str) -> Document:
    """The document of a stream cut before its end marker."""
    return error_document(
        STREAM_INCOMPLETE, None, f"the stream ended before its end marker ({marker})"
    )


def as_dict(value: Any) -> dict:
    """*value* when it is a dict, else an empty dict."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list:
    """*value* when it is a list, else an empty list."""
    return value if isinstance(value, list) else []


def arguments_text(value: Any) -> str:
    """Tool-call arguments as the JSON string the neutral form carries."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return _canonical(value)


def arguments_object(value: Any, where: str) -> Any:
    """Tool-call arguments as the object formats that send objects need."""
    if value is None or value == "":
        return {}
    if not isinstance(value, str):
        return value
    try:
        return _decode(value)
    except ValueError:
        raise TranslationError(f"{where}: arguments are not valid JSON: {value!r:.80}") from None


def content_text(content: Any, where: str) -> str:
    """The text of a string or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text"):
                texts.append(str(part.get("text", "")))
            else:
                raise TranslationError(f"{where}: only text parts can be translated, got {part!r:.80}")
        return "".join(texts)
    raise TranslationError(f"{where}: content must be a string or a list of parts")


def copy_keys(src: dict, dst: dict, pairs: tuple[tuple[str, str], ...]) -> None:
    """Copy src[a] to dst[b] for each (a, b) present and not None in src."""
    for a, b in pairs:
        if src.get(a) is not None:
            dst[b] = src[a]


def image_url(part: dict) -> Any:
    """The url of a neutral `image_url` part: `{"url": ...}` or the bare string."""
    image = part.get("image_url")
    return image.get("url") if isinstance(image, dict) else image


def data_url(url: Any) -> tuple[str, str] | None:
    """(media type, base64 data) of a `data:...;base64,...` URL; None for anything else."""
    if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
        media_type, data = url[5:].split(";base64,", 1)
        return media_type, data
    return None
