"""OpenTelemetry trace exports: each model-call span becomes an exchange rebuilt in its
provider's wire form (`fidelity: reconstructed`); other spans are skipped and counted, and a
span whose messages were not captured is listed with the reason."""
from __future__ import annotations

import re
from dataclasses import replace

from ... import formats
from . import Exchange, Passed, Reading
from . import _conventions as conventions
from . import _rebuild as rebuild
from ._spans import Span, spans_of
from ._tracefiles import read_documents

NAME = "otel"

_MARKERS = (b'"gen_ai.', b'"llm.', b'"openinference.span.kind"', b'"request_data"', b'"span_kind"',
            b'"llm": {', b'"gen_ai": {')
# An attribute name of the model-call conventions used as a key (not quoted inside a string).
_ATTRIBUTE_KEY = re.compile(rb'(?<!\\)"(?:gen_ai|llm|openinference)\.[\w.]+"\s*:')


def detect(path: str, head: bytes) -> bool:
    """OTLP JSON, or span objects / a span's attributes in one of the model-call conventions."""
    text = head.lstrip()
    if not text.startswith((b"{", b"[")):
        return False
    if b'"resourceSpans"' in head:
        return True
    if b'"attributes"' in head and any(marker in head for marker in _MARKERS):
        return True
    return text.startswith(b"{") and _ATTRIBUTE_KEY.search(head) is not None  # a span's attribute map


def read(path: str, display: str) -> Reading:
    spans: list[Span] = []
    for line, doc in read_documents(path, display):
        spans.extend(spans_of(doc, display, line, len(spans)))
    spans = _streams_named(spans)
    reading = Reading(file=display, format=NAME)
    imported: dict[str, str] = {}  # canonical request_data -> span id, for streamed duplicates
    waiting: list[tuple[Passed, Span]] = []
    for span in spans:
        try:
            exchange = _exchange(span)
        except (conventions.Passed, *conventions.UNREADABLE) as exc:
            # A span's values are data: a shape no convention foresaw is one span passed over.
            passed = exc if isinstance(exc, conventions.Passed) else conventions.Passed(
                "unsupported", f"its attributes have shapes replayci does not read ({exc})")
            entry = Passed(entry=span.span_id, kind=passed.kind, reason=passed.reason)
        except (AttributeError, TypeError, KeyError, ValueError, IndexError) as exc:
            # Attributes of shapes no convention writes (a list where its text goes, say): this
            # span is not read, the others are.
            entry = Passed(span.span_id, "unreadable", f"its attributes are not of the shapes its convention "
                           f"writes ({type(exc).__name__}: {exc})")
        else:
            entry = None
        if entry is not None:
            reading.passed.append(entry)
            waiting.append((entry, span))
            continue
        reading.exchanges.append(exchange)
        key = _request_key(span)
        if key:
            imported.setdefault(key, span.span_id)
    for entry, span in waiting:  # Logfire records a streamed call twice: the call, then its answer
        key = _request_key(span)
        if entry.kind == "not_captured" and key in imported:
            entry.kind = "skipped"
            entry.reason = f"streamed call: its answer is recorded by span {imported[key]}"
    return reading


def _streams_named(spans: list[Span]) -> list[Span]:
    """Logfire's answer of a streamed call (`streaming response from ...`) named as the call it
    answers, which alone says which API it was (`Responses API with ...`): same request body."""
    calls = {_request_key(s): s.name for s in spans if s.name.startswith("Responses API")}
    return [replace(s, name=calls[key]) if s.name.startswith("streaming response") and (key := _request_key(s))
            and key in calls else s for s in spans]


def _request_key(span: Span) -> str:
    body = span.attributes.get("request_data")
    return formats.canonical_json(body) if isinstance(body, dict) else ""


def _exchange(span: Span) -> Exchange:
    call, inferred = conventions.read_call(span)
    try:
        body = rebuild.request(call)
    except formats.TranslationError as exc:
        reason = f"its request cannot be written in the {call.api} form: {exc}"
        raise conventions.Passed("unsupported", reason) from None
    model = body.get("modelId", body.get("model")) or call.model  # the URL names the model as sent
    return Exchange(
        entry=span.span_id,
        endpoint=rebuild.endpoint(call.api, model),
        request=body,
        response=rebuild.response(call),
        host=call.host,
        fidelity="reconstructed",
        tools_inferred=inferred,
        group=span.trace_id,
    )
