"""The OpenTelemetry SDK side of `--otlp`: a span and an evaluation event a case, and the
exporters that carry them (OTLP/HTTP protobuf, OTLP/HTTP JSON, OTLP JSON lines).

Imported only when a report is exported (the `otel` extra). The providers made here are the
run's own, never the process' global ones, so an application under test keeps its telemetry.
"""
from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

from google.protobuf.json_format import MessageToDict  # the OTLP exporter's own dependency
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk import _logs as sdk_logs
from opentelemetry.sdk._logs import export as log_export
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags, set_span_in_context

from ..core.errors import ConfigError
from ..core.version import __version__

# The SDK renamed its log exporter base (LogExporter -> LogRecordExporter); take what it has.
_LogExporter = getattr(log_export, "LogRecordExporter", None) or log_export.LogExporter
_LogResult = getattr(log_export, "LogRecordExportResult", None) or log_export.LogExportResult
_TIMEOUT_S = 10.0
_BATCH = 512


def export(items: Sequence[Any], logs, spans) -> None:
    """Emit each evaluation through the Logs API in its call's span context, then flush both
    signals; an export the receiver refused is a ConfigError naming it."""
    checked_logs, checked_spans = _CheckedLogs(logs), _CheckedSpans(spans)
    resource = Resource.create({"service.name": "replayci", "service.version": __version__})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(
        checked_spans, max_queue_size=len(items) + _BATCH, max_export_batch_size=_BATCH))
    logger_provider = sdk_logs.LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(log_export.BatchLogRecordProcessor(
        checked_logs, max_queue_size=len(items) + _BATCH, max_export_batch_size=_BATCH))
    tracer = tracer_provider.get_tracer("replayci", __version__)
    logger = logger_provider.get_logger("replayci", __version__)
    try:
        for item in items:
            _emit(item, tracer, logger)
        tracer_provider.force_flush(int(_TIMEOUT_S * 3000))
        logger_provider.force_flush(int(_TIMEOUT_S * 3000))
    finally:
        tracer_provider.shutdown()
        logger_provider.shutdown()
    failure = checked_logs.failure or checked_spans.failure
    if failure:
        raise ConfigError([failure])


def _emit(item: Any, tracer, logger) -> None:
    if item.trace_id is not None:
        context = set_span_in_context(NonRecordingSpan(SpanContext(
            item.trace_id, item.span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))))
        _event(item, logger, context)
        return
    span = tracer.start_span(f"chat {item.model}" if item.model else "chat", kind=SpanKind.CLIENT,
                             attributes=_span_attributes(item))
    try:
        _event(item, logger, set_span_in_context(span))
    finally:
        span.end()


def _span_attributes(item: Any) -> dict:
    """The judged call in the GenAI span conventions (the case it belongs to beside them)."""
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": item.provider,
                  "gen_ai.request.model": item.model, "gen_ai.response.id": item.response_id,
                  "replayci.case": item.case_id}
    return {k: v for k, v in attributes.items() if v}


def _event(item: Any, logger, context) -> None:
    failed = item.label != "pass"
    logger.emit(event_name="gen_ai.evaluation.result", context=context, body=item.explanation,
                severity_number=SeverityNumber.WARN if failed else SeverityNumber.INFO,
                severity_text="WARN" if failed else "INFO", attributes=item.event_attributes())


# --- exporters ---------------------------------------------------------------------------------

def http_exporters(target: str, protocol: str):
    """The log and span exporters of an OTLP/HTTP collector at *target* (its base URL, or the
    URL of its /v1/logs)."""
    base = target.rstrip("/").removesuffix("/v1/logs")
    if protocol == "http/protobuf":
        return (OTLPLogExporter(endpoint=f"{base}/v1/logs", timeout=_TIMEOUT_S),
                OTLPSpanExporter(endpoint=f"{base}/v1/traces", timeout=_TIMEOUT_S))
    return json_exporters(_poster(f"{base}/v1/logs"), _poster(f"{base}/v1/traces"))


def json_exporters(send_logs: Callable[[dict], None], send_spans: Callable[[dict], None] | None = None):
    """Exporters that hand each export as an OTLP/JSON message to *send_logs* / *send_spans*."""
    return _JsonLogs(send_logs), _JsonSpans(send_spans or send_logs)


def _poster(url: str) -> Callable[[dict], None]:
    def post(message: dict) -> None:
        body = json.dumps(message, separators=(",", ":")).encode()
        request = urllib.request.Request(url, data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as answer:  # noqa: S310 - the user's collector
            answer.read()
    return post


class _JsonLogs(_LogExporter):
    def __init__(self, send: Callable[[dict], None]) -> None:
        self._send = send

    def export(self, batch):
        self._send(otlp_json(encode_logs(batch)))
        return _LogResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def shutdown(self) -> None:
        pass


class _JsonSpans(SpanExporter):
    def __init__(self, send: Callable[[dict], None]) -> None:
        self._send = send

    def export(self, spans):
        self._send(otlp_json(encode_spans(spans)))
        return SpanExportResult.SUCCESS


def _why(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code}"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return str(exc) or type(exc).__name__


class _CheckedLogs(_LogExporter):
    """An exporter that keeps the first failure, so the run can say the export was refused."""

    def __init__(self, inner) -> None:
        self.inner, self.failure = inner, None

    def export(self, batch):
        try:
            result = self.inner.export(batch)
        except Exception as exc:  # noqa: BLE001 - any transport failure is reported, never raised in the SDK's thread
            self.failure = self.failure or f"--otlp: the logs export failed: {_why(exc)}"
            return _LogResult.FAILURE
        if result != _LogResult.SUCCESS:
            self.failure = self.failure or "--otlp: the collector did not accept the evaluation events"
        return result

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def shutdown(self) -> None:
        self.inner.shutdown()


class _CheckedSpans(SpanExporter):
    def __init__(self, inner) -> None:
        self.inner, self.failure = inner, None

    def export(self, spans):
        try:
            result = self.inner.export(spans)
        except Exception as exc:  # noqa: BLE001 - as _CheckedLogs
            self.failure = self.failure or f"--otlp: the spans export failed: {_why(exc)}"
            return SpanExportResult.FAILURE
        if result != SpanExportResult.SUCCESS:
            self.failure = self.failure or "--otlp: the collector did not accept the spans"
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()


def otlp_json(message: Any) -> dict:
    """A protobuf OTLP message as OTLP/JSON: camelCase keys, trace and span ids as hex (the
    protobuf JSON mapping would give base64), 64-bit integers as strings."""
    return _hex_ids(MessageToDict(message, use_integers_for_enums=True))


_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (base64.b64decode(v).hex() if k in _ID_KEYS and isinstance(v, str) else _hex_ids(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


