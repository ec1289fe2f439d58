"""Spans out of the shapes trace exports take: OTLP JSON (`resourceSpans`, one request or JSON
lines of them), a JSON list (or JSON lines, or `{"data": [...]}`) of span objects with flat
attributes, a single span object, or one span's bare attribute map. Attribute values come as
OTLP `AnyValue`s or plain values; both are read to plain values here."""
from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

from ._tracefiles import fail

# Prefixes of the attribute names the model-call conventions write: a JSON object whose keys
# start so is one span's bare attribute map.
ATTRIBUTE_PREFIXES = ("gen_ai.", "llm.", "openinference.", "input.value", "output.value", "request_data")


@dataclass
class Span:
    """One span, its attributes as plain values."""

    name: str
    span_id: str
    trace_id: str
    attributes: dict
    events: list = field(default_factory=list)  # (name, attributes) pairs
    error: str | None = None  # the status message of a span whose status is ERROR


_SCALARS = ("stringValue", "boolValue", "doubleValue")


def any_value(value: Any) -> Any:
    """An OTLP AnyValue as a plain value (a plain value is returned as it is)."""
    if not isinstance(value, dict) or len(value) > 1 or (value and not next(iter(value)).endswith("Value")):
        return value
    if not value:
        return None
    (kind, inner), = value.items()
    if kind in _SCALARS:
        return inner
    if kind == "intValue":
        try:
            return int(inner)
        except (TypeError, ValueError):
            return inner
    values = inner.get("values") if isinstance(inner, dict) else None
    if kind == "arrayValue":
        return [any_value(v) for v in values] if isinstance(values, list) else []
    if kind == "kvlistValue":
        return key_values(values if isinstance(values, list) else [])
    if kind == "bytesValue":
        try:
            return base64.b64decode(inner or "", validate=True).decode("utf-8", "replace")
        except (binascii.Error, ValueError, TypeError):
            return inner
    return value


def key_values(items: Any) -> dict:
    """OTLP `KeyValue`s (`[{key, value}]`), or an attribute map, as a plain dict."""
    if isinstance(items, dict):
        return {str(k): any_value(v) for k, v in items.items()}
    out = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            out[item["key"]] = any_value(item.get("value"))
    return out


def _text_id(value: Any) -> str:
    return "" if value is None else str(value)


def _status_error(span: dict) -> str | None:
    status = span.get("status")
    if isinstance(status, dict):
        code = status.get("code", status.get("status_code"))
        message = status.get("message") or status.get("description")
    else:
        code, message = span.get("status_code", status), span.get("status_message")
    if code in (2, "2", "ERROR", "STATUS_CODE_ERROR", "error", "Error"):
        return str(message or "status ERROR")
    return None


def _events(span: dict) -> list:
    events = []
    for event in span.get("events") or []:
        if isinstance(event, dict):
            events.append((str(event.get("name") or ""), key_values(event.get("attributes") or {})))
    return events


# Attribute namespaces some exporters write nested ({"llm": {"input_messages": [...]}}) rather
# than flat; they are read flat ("llm.input_messages"), lists kept as values.
_NESTED = ("llm", "gen_ai", "openinference")
_NESTED_VALUES = ("input", "output")  # only as {value, mime_type}


def _flat(attributes: dict) -> dict:
    out: dict = {}
    stack = [(k, v) for k, v in reversed(attributes.items())]
    nested = {k for k, v in attributes.items() if isinstance(v, dict) and (
        k in _NESTED or (k in _NESTED_VALUES and ("value" in v or "mime_type" in v)))}
    while stack:
        key, value = stack.pop()
        if isinstance(value, dict) and key.split(".", 1)[0] in nested:
            stack.extend((f"{key}.{k}", v) for k, v in reversed(value.items()))
        else:
            out[key] = value
    return out


def span_object(span: dict, index: int) -> Span:
    """A span object: OTLP's (`traceId`, `spanId`, KeyValue attributes) or a flat one
    (`context: {trace_id, span_id}`, Phoenix's `context` / `parent_id`, attribute maps)."""
    context = span.get("context") if isinstance(span.get("context"), dict) else {}
    span_id = span.get("spanId", span.get("span_id", context.get("span_id")))
    trace_id = span.get("traceId", span.get("trace_id", context.get("trace_id")))
    return Span(
        name=str(span.get("name") or ""),
        span_id=_text_id(span_id) or str(index),
        trace_id=_text_id(trace_id),
        attributes=_attributes(span),
        events=_events(span),
        error=_status_error(span),
    )


def _objects(value: Any, what: str, display: str, line: int | None) -> list:
    """A list of objects of an OTLP request (absent or null is empty); anything else is refused."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise fail(display, f"{what} must be a list of objects (an OTLP ExportTraceServiceRequest)", line)
    return value


def _attributes(span: dict) -> dict:
    attributes = _flat(key_values(span.get("attributes") or {}))
    kind = span.get("span_kind")  # Phoenix names the OpenInference kind beside the attributes
    if isinstance(kind, str) and "openinference.span.kind" not in attributes:
        attributes["openinference.span.kind"] = kind
    return attributes


def _otlp_spans(request: dict, display: str, line: int | None) -> list[Span]:
    spans: list[Span] = []
    for resource in _objects(request.get("resourceSpans"), "resourceSpans", display, line):
        scopes = resource.get("scopeSpans", resource.get("instrumentationLibrarySpans"))
        for scope in _objects(scopes, "resourceSpans[].scopeSpans", display, line):
            for span in _objects(scope.get("spans"), "scopeSpans[].spans", display, line):
                spans.append(span_object(span, len(spans)))
    return spans


def _is_attribute_map(doc: dict) -> bool:
    return bool(doc) and all(isinstance(k, str) for k in doc) and any(
        k.startswith(ATTRIBUTE_PREFIXES) for k in doc)


def _is_span(doc: Any) -> bool:
    return isinstance(doc, dict) and "attributes" in doc and ("name" in doc or "context" in doc or "spanId" in doc)


def spans_of(doc: Any, display: str, line: int | None, start: int) -> list[Span]:
    """The spans one JSON document holds (*start*: the index of its first span in the file)."""
    if isinstance(doc, dict) and "resourceSpans" in doc:
        return _otlp_spans(doc, display, line)
    if isinstance(doc, dict) and isinstance(doc.get("data"), list):
        doc = doc["data"]  # an API page of spans
    if _is_span(doc):
        return [span_object(doc, start)]
    if isinstance(doc, list) and all(_is_span(item) for item in doc):
        return [span_object(item, start + i) for i, item in enumerate(doc)]
    if isinstance(doc, dict) and _is_attribute_map(doc):
        return [Span(name="", span_id=str(start), trace_id="", attributes=key_values(doc))]
    raise fail(display, "not a trace export: expected OTLP JSON (resourceSpans), a list of span objects "
               "({name, context, attributes}) or a span's attribute map (gen_ai.*, llm.*)", line)
