"""Evaluation results out over OpenTelemetry: one `gen_ai.evaluation.result` event a judged case.

Each case a run judged becomes a log record of the GenAI semantic conventions' evaluation event
(name, label pass/fail/error, score where a grader scored, explanation, response id), emitted
through the OpenTelemetry Logs API in the context of the span of the model call it judged: the
recording's own trace and span ids when it holds them (imported traces, traffic captured from an
instrumented app), else a `chat {model}` client span emitted for the call in the GenAI span
conventions. Written as OTLP over HTTP (protobuf or JSON) to a collector, or as OTLP JSON lines
to a file. The SDK is the `otel` extra, imported only when a report is exported.
"""
from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import ConfigError
from ..core.files import write_atomic
from ..formats import response_id

EVENT = "gen_ai.evaluation.result"
PROTOCOLS = ("http/protobuf", "http/json")
_LABELS = {"pass": "pass", "fail": "fail", "error": "error"}  # judged statuses; NR and skips are not judged
_EXPLANATION_MAX = 2000


@dataclass(frozen=True)
class Evaluation:
    """One judged case as the evaluation event says it."""

    name: str
    label: str
    case_id: str
    explanation: str | None = None
    score: float | None = None
    response_id: str | None = None
    trace_id: int | None = None
    span_id: int | None = None
    model: str | None = None
    provider: str | None = None
    attributes: dict = field(default_factory=dict)

    def event_attributes(self) -> dict:
        """The event's attributes: the conventions' names, then replayci's own."""
        out: dict[str, Any] = {"gen_ai.evaluation.name": self.name, "gen_ai.evaluation.score.label": self.label}
        if self.score is not None:
            out["gen_ai.evaluation.score.value"] = self.score
        if self.explanation:
            out["gen_ai.evaluation.explanation"] = self.explanation
        if self.response_id:
            out["gen_ai.response.id"] = self.response_id
        if self.label == "error":
            out["error.type"] = self.attributes.get("replayci.reason") or "error"
        return {**out, **self.attributes}


def evaluations(report: Mapping) -> list[Evaluation]:
    """The evaluation of every judged case of a JSON report (non-reproducible and skipped cases
    were not judged and have none)."""
    run = report.get("run") or {}
    return [ev for c in report.get("cases") or () if (ev := _evaluation(c, run)) is not None]


def _evaluation(case: Mapping, run: Mapping) -> Evaluation | None:
    label = _LABELS.get(str(case.get("status")))
    if label is None:
        return None
    meta = _recording_meta(case.get("response_origin"))
    if isinstance(case.get("trace"), Mapping) or case.get("response_id"):  # a live call (check mode)
        meta = {"trace": case.get("trace") or {}, "response_id": case.get("response_id")}
    trace_id, span_id = _trace_context(meta)
    target = case.get("target")
    attributes = {"replayci.pack": case.get("pack"), "replayci.contract": case.get("contract"),
                  "replayci.case": case.get("case"), "replayci.classification": case.get("classification"),
                  "replayci.fingerprint": case.get("fingerprint"), "replayci.source": case.get("source"),
                  "replayci.target": target, "replayci.reason": case.get("reason"),
                  "replayci.expected_error": case.get("expected_error")}
    return Evaluation(
        name=f"replayci/{case.get('pack')}/{case.get('contract')}", label=label,
        case_id=f"{case.get('pack')}/{case.get('contract')}/{case.get('case')}",
        explanation=_explanation(case), score=_number(case.get("score")),
        response_id=_response_id(meta), trace_id=trace_id, span_id=span_id,
        model=_model(case, meta, run), provider=_text(run.get("provider")),
        attributes={k: v for k, v in attributes.items() if isinstance(v, (str, int, float)) and v != ""})


def _explanation(case: Mapping) -> str | None:
    """What failed and where (each failure's message and contract line), or why it passed."""
    lines = []
    for f in case.get("failures") or ():
        if isinstance(f, Mapping):
            where = f" ({f['source']})" if f.get("source") else ""
            lines.append(f"{f.get('kind')}: {f.get('message')}{where}")
    if not lines and case.get("message"):
        lines.append(str(case["message"]))
    if not lines and case.get("status") == "pass" and case.get("expected_error"):
        lines.append(f"caught as expected: {case['expected_error']}")
    text = "\n".join(lines)
    return text[:_EXPLANATION_MAX] or None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _model(case: Mapping, meta: Mapping, run: Mapping) -> str | None:
    response = (meta.get("response") if isinstance(meta.get("response"), Mapping) else None) or {}
    target = _text(case.get("target"))
    return _text(response.get("model")) or (target.partition(":")[2] or None if target else None) \
        or _text(run.get("model"))


def _recording_meta(origin: Any) -> dict:
    """The recording or fixture a case's answer came from, when it is a file here: its `meta`
    and raw `response` (for the response id and the trace context it was captured in)."""
    if not isinstance(origin, str) or not origin.endswith(".json") or not os.path.isfile(origin):
        return {}
    try:
        with open(origin, "rb") as fh:
            doc = json.loads(fh.read(64 << 20))
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(doc, dict):
        return {}
    meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
    return {**meta, "response": doc.get("response")}


def _response_id(meta: Mapping) -> str | None:
    response = meta.get("response")
    if isinstance(response, Mapping) and _text(response.get("response_id")):
        return response["response_id"]
    found = response_id(dict(response) if isinstance(response, Mapping) else response)  # a stream's too
    return found or _text(meta.get("response_id"))


def _trace_context(meta: Mapping) -> tuple[int | None, int | None]:
    """The trace and span ids of the recorded call: a W3C `traceparent` the app sent, or the
    span an imported trace named."""
    trace = meta.get("trace") if isinstance(meta.get("trace"), Mapping) else {}
    imported = meta.get("imported_from") if isinstance(meta.get("imported_from"), Mapping) else {}
    trace_id = _hex_id(trace.get("trace_id") or imported.get("trace_id"), 32)
    span_id = _hex_id(trace.get("span_id") or (imported.get("entry") if trace_id else None), 16)
    return (trace_id, span_id) if trace_id and span_id else (None, None)


def _hex_id(value: Any, digits: int) -> int | None:
    """A trace (32 hex digits) or span (16) id as the SDK takes it; base64 (OTLP/JSON from
    some exporters) is read too. Zero or anything else is no id."""
    if not isinstance(value, str):
        return None
    text = value.strip().lower().removeprefix("0x")
    if len(text) != digits:
        try:
            text = base64.b64decode(value, validate=True).hex()
        except ValueError:
            return None
    try:
        number = int(text, 16)
    except ValueError:
        return None
    return number if len(text) == digits and number else None


# --- the export --------------------------------------------------------------------------------

def write(report: dict, target: str, *, protocol: str | None = None) -> None:
    """Export *report*'s evaluations to *target*: an OTLP/HTTP endpoint (http:// or https://, the
    collector's base URL or its /v1/logs) or a file of OTLP JSON lines."""
    protocol = protocol or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf"
    if protocol not in PROTOCOLS:
        raise ConfigError([f"--otlp-protocol {protocol!r}: expected one of {', '.join(PROTOCOLS)}"])
    sdk = _sdk()
    items = evaluations(report)
    if target.startswith(("http://", "https://")):
        logs, spans = sdk.http_exporters(target, protocol)
        sdk.export(items, logs, spans)
        return
    sink = _JsonLines()
    sdk.export(items, *sdk.json_exporters(sink.add))
    write_atomic(target, "".join(sink.lines))


class _JsonLines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, message: dict) -> None:
        self.lines.append(json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n")


def _sdk():
    try:
        from . import otlp_sdk  # the OpenTelemetry SDK: only when a report is exported
    except ImportError as exc:
        raise ConfigError([f"--otlp needs the OpenTelemetry SDK ({exc.name} is not installed): "
                           "pip install 'replayci[otel]'"]) from None
    return otlp_sdk
