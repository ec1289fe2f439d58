"""`--otlp`: each judged case leaves as a GenAI evaluation event (a log record of the Logs API)
in the context of the span of the call it judged, over OTLP/HTTP (protobuf and JSON) to a
receiver on 127.0.0.1 that decodes what it gets with opentelemetry-proto, or as JSON lines."""
from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from builders import REPO, PackBuilder, call, request
from click.testing import CliRunner

pytest.importorskip("opentelemetry.sdk")
import warmed
from google.protobuf import json_format  # noqa: E402 - with the exporter only
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

from replayci.cli import cli  # noqa: E402
from replayci.report import otlp  # noqa: E402

TRACE = "0af7651916cd43dd8448eb211c80319c"
SPAN = "00f067aa0ba902b7"
ANSWER_ID = "chatcmpl-7QyqpwdfhqwajicIEznoc6Q47XAyW"


class Receiver:
    """An OTLP/HTTP receiver: keeps each export decoded, answers *status*."""

    def __init__(self) -> None:
        self.logs: list = []
        self.traces: list = []
        self.content_types: list[str] = []
        self.status = 200
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the handler's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.content_types.append(self.headers["Content-Type"])
                kind = ExportLogsServiceRequest if self.path == "/v1/logs" else ExportTraceServiceRequest
                message = kind()
                if self.headers["Content-Type"] == "application/json":
                    json_format.Parse(json.dumps(_base64_ids(json.loads(body))), message)
                else:
                    message.ParseFromString(body)
                (receiver.logs if self.path == "/v1/logs" else receiver.traces).append(message)
                self.send_response(receiver.status)
                self.send_header("Content-Type", self.headers["Content-Type"])
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def records(self) -> list:
        return [r for m in self.logs for rl in m.resource_logs for sl in rl.scope_logs for r in sl.log_records]

    def spans(self) -> list:
        return [s for m in self.traces for rs in m.resource_spans for ss in rs.scope_spans for s in ss.spans]


def _base64_ids(value):
    """OTLP/JSON carries ids as hex; the protobuf JSON parser reads bytes as base64."""
    if isinstance(value, dict):
        return {k: (base64.b64encode(bytes.fromhex(v)).decode() if k in ("traceId", "spanId", "parentSpanId")
                    else _base64_ids(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_base64_ids(v) for v in value]
    return value


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.server.shutdown()
    r.server.server_close()


def _attrs(record) -> dict:
    return {kv.key: json_format.MessageToDict(kv.value).popitem()[1] for kv in record.attributes}


PROSE = {"id": ANSWER_ID, "object": "chat.completion", "model": "gpt-4o-mini-2024-07-18",
         "choices": [{"index": 0, "finish_reason": "stop",
                      "message": {"role": "assistant", "content": "It is sunny in Paris."}}]}


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pack = PackBuilder(tmp_path)
    pack.contract("weather", """
        tool: get_weather
        golden_cases:
          - id: calls
            input_ref: calls.json
          - id: prose
            input_ref: prose.json
    """)
    pack.fixture("calls.json", {"request": request(), "response": {
        "success": True, "tool_calls": [call("get_weather", {"location": "Paris"})]}})
    pack.fixture("prose.json", {"request": request(), "response": PROSE})
    return tmp_path


@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json"])
def test_each_case_is_an_evaluation_event_in_its_call_span(project, receiver, monkeypatch, protocol):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    res = CliRunner().invoke(cli, ["--otlp", receiver.url, "--no-color"])
    assert res.exit_code == 1, res.output  # the prose answer fails; the export does not change the verdict
    want = "application/x-protobuf" if protocol == "http/protobuf" else "application/json"
    assert set(receiver.content_types) == {want}
    records = {_attrs(r)["replayci.case"]: r for r in receiver.records()}
    assert set(records) == {"calls", "prose"}
    spans = {s.span_id: s for s in receiver.spans()}
    for case, label in (("calls", "pass"), ("prose", "fail")):
        record = records[case]
        assert record.event_name == "gen_ai.evaluation.result"
        attrs = _attrs(record)
        assert attrs["gen_ai.evaluation.name"] == "replayci/demo/weather"
        assert attrs["gen_ai.evaluation.score.label"] == label
        span = spans[record.span_id]  # the event sits in the span replayci emitted for the call
        assert span.trace_id == record.trace_id
        assert span.name == ("chat gpt-4o-mini" if case == "calls" else "chat gpt-4o-mini-2024-07-18")
        span_attrs = _attrs(span)
        assert span_attrs["gen_ai.operation.name"] == "chat"
        assert span_attrs["replayci.case"] == f"demo/weather/{case}"
    prose = _attrs(records["prose"])
    assert prose["gen_ai.response.id"] == ANSWER_ID
    assert prose["gen_ai.evaluation.explanation"].startswith("tool_not_invoked: ")
    assert "packs/demo/contracts/weather.yaml:" in prose["gen_ai.evaluation.explanation"]
    assert "gen_ai.response.id" not in _attrs(records["calls"])
    assert "gen_ai.evaluation.explanation" not in _attrs(records["calls"])


def test_a_json_lines_file_holds_the_same_events(project):
    res = CliRunner().invoke(cli, ["--otlp", "evals.jsonl", "--no-color"])
    assert res.exit_code == 1, res.output
    lines = [json.loads(line) for line in (project / "evals.jsonl").read_text().splitlines()]
    logs = [m for m in lines if "resourceLogs" in m]
    records = [r for m in logs for rl in m["resourceLogs"] for sl in rl["scopeLogs"] for r in sl["logRecords"]]
    assert sorted(r["eventName"] for r in records) == ["gen_ai.evaluation.result"] * 2
    for r in records:  # OTLP/JSON: hex ids, integer enums
        assert len(r["traceId"]) == 32 and int(r["traceId"], 16)
        assert len(r["spanId"]) == 16 and int(r["spanId"], 16)
        assert isinstance(r["severityNumber"], int)
    message = ExportLogsServiceRequest()
    json_format.Parse(json.dumps(_base64_ids(logs[0])), message)  # valid OTLP


TRACE_ATTRS = [
    ("gen_ai.system", {"stringValue": "openai"}),
    ("gen_ai.request.model", {"stringValue": "gpt-4o"}),
    ("gen_ai.prompt.0.role", {"stringValue": "user"}),
    ("gen_ai.prompt.0.content", {"stringValue": "Weather in Paris?"}),
    ("llm.request.functions.0.name", {"stringValue": "get_weather"}),
    ("llm.request.functions.0.parameters", {"stringValue": json.dumps(
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})}),
    ("gen_ai.completion.0.role", {"stringValue": "assistant"}),
    ("gen_ai.completion.0.finish_reason", {"stringValue": "tool_calls"}),
    ("gen_ai.completion.0.tool_calls.0.id", {"stringValue": "call_1"}),
    ("gen_ai.completion.0.tool_calls.0.name", {"stringValue": "get_weather"}),
    ("gen_ai.completion.0.tool_calls.0.arguments", {"stringValue": '{"city": "Paris"}'}),
]


def test_an_imported_trace_keeps_its_own_trace_and_span(tmp_path, monkeypatch, receiver):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".replayci.yml").write_text("provider: recorded\n")
    trace = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "app"}, "spans": [
        {"traceId": TRACE, "spanId": SPAN, "name": "openai.chat", "kind": 3,
         "attributes": [{"key": k, "value": v} for k, v in TRACE_ATTRS]}]}]}]}
    (tmp_path / "trace.json").write_text(json.dumps(trace))
    res = CliRunner().invoke(cli, ["import", "trace.json", "--pack", "packs/app"])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(cli, ["--pack", "packs/app", "--otlp", receiver.url, "--no-color"])
    assert res.exit_code == 0, res.output
    (record,) = receiver.records()
    assert record.trace_id.hex() == TRACE and record.span_id.hex() == SPAN
    assert _attrs(record)["gen_ai.evaluation.score.label"] == "pass"
    assert receiver.spans() == []  # the call's span is the app's own: none is made up for it


def test_a_collector_that_refuses_is_exit_2_naming_it(project, receiver):
    receiver.status = 400
    res = CliRunner().invoke(cli, ["--otlp", receiver.url, "--no-color"])
    assert res.exit_code == 2, res.output
    assert "--otlp" in res.output and "did not accept" in res.output
    assert "Traceback" not in res.output


def test_an_unknown_protocol_is_a_usage_error(project, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    res = CliRunner().invoke(cli, ["--otlp", "http://127.0.0.1:9", "--no-color"])
    assert res.exit_code == 2
    assert "http/protobuf, http/json" in res.output


def test_scores_labels_and_the_unjudged():
    report = {"run": {"provider": "openai", "model": "gpt-4o"}, "cases": [
        {"pack": "p", "contract": "c", "case": "a", "status": "pass", "score": 0.75},
        {"pack": "p", "contract": "c", "case": "b", "status": "error", "reason": "provider_error",
         "message": "HTTP 500 from the provider"},
        {"pack": "p", "contract": "c", "case": "n", "status": "non_reproducible"},
        {"pack": "p", "contract": "c", "case": "s", "status": "skipped"},
        {"pack": "p", "contract": "c", "case": "x", "status": "pass", "expected_error": "wrong_tool",
         "failures": [{"kind": "wrong_tool", "message": "called get_time", "source": "c.yaml:9"}]},
    ]}
    evs = {e.case_id: e for e in otlp.evaluations(report)}
    assert set(evs) == {"p/c/a", "p/c/b", "p/c/x"}
    assert evs["p/c/a"].event_attributes()["gen_ai.evaluation.score.value"] == 0.75
    error = evs["p/c/b"].event_attributes()
    assert error["gen_ai.evaluation.score.label"] == "error"
    assert error["error.type"] == "provider_error"
    assert error["gen_ai.evaluation.explanation"] == "HTTP 500 from the provider"
    assert evs["p/c/x"].explanation == "wrong_tool: called get_time (c.yaml:9)"
    assert evs["p/c/a"].model == "gpt-4o" and evs["p/c/a"].provider == "openai"


@pytest.mark.parametrize(("value", "digits", "want"), [
    (TRACE, 32, int(TRACE, 16)), (TRACE.upper(), 32, int(TRACE, 16)), (SPAN, 16, int(SPAN, 16)),
    (base64.b64encode(bytes.fromhex(SPAN)).decode(), 16, int(SPAN, 16)),
    ("0" * 32, 32, None), (TRACE[:-1], 32, None), ("zz" * 8, 16, None), (5, 16, None), ("1", 16, None)])
def test_trace_and_span_ids_read_as_hex_or_base64(value, digits, want):
    assert otlp._hex_id(value, digits) == want


def test_traffic_captured_from_an_instrumented_app_keeps_its_span(tmp_path, monkeypatch, receiver):
    """An app whose HTTP client is instrumented sends the call's span as `traceparent`: the proxy
    keeps it, and the evaluation of that call lands in it."""
    import openai
    from proxy_support import KEY, Proxied, Upstream

    monkeypatch.chdir(tmp_path)
    (tmp_path / ".replayci.yml").write_text("provider: recorded\n")
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}}]
    with Upstream() as up, Proxied(tmp_path / "packs" / "app", "record", up.url) as px:
        client = openai.OpenAI(base_url=f"{px.url}/v1", api_key=KEY, max_retries=0,
                               default_headers={"traceparent": f"00-{TRACE}-{SPAN}-01"})
        client.chat.completions.create(model="gpt-4o-mini", tools=tools,
                                       messages=[{"role": "user", "content": "What is the weather in Paris?"}])
        client.with_options(default_headers={"traceparent": "00-" + "0" * 32 + f"-{SPAN}-01"}).chat.completions.create(
            model="gpt-4o-mini", tools=tools, messages=[{"role": "user", "content": "And the weather in Rome?"}])
    fixtures = sorted((tmp_path / "packs" / "app" / "golden").rglob("*.json"))
    traces = [json.loads(f.read_text())["meta"].get("trace") for f in fixtures]
    assert sorted(traces, key=str) == sorted([{"trace_id": TRACE, "span_id": SPAN}, None], key=str)
    res = CliRunner().invoke(cli, ["--pack", "packs/app", "--otlp", receiver.url, "--no-color"])
    assert res.exit_code == 0, res.output
    by_trace = {r.trace_id.hex(): r for r in receiver.records()}
    assert by_trace[TRACE].span_id.hex() == SPAN  # the app's own span
    (made,) = receiver.spans()  # the call sent with an invalid (all-zero) trace gets a span of its own
    assert made.trace_id.hex() in by_trace and made.trace_id.hex() != TRACE


def test_check_mode_puts_each_evaluation_in_the_live_call_span(tmp_path, warm_python):
    """`proxy --mode check --otlp`: an instrumented app's call (its traceparent) gets the verdict on
    its own span, with the live answer's response id."""
    import os
    import subprocess

    from agent_support import AGENT, trip
    from fakeserver import FakeServer

    traced = AGENT.replace("max_retries=0)", 'max_retries=0, default_headers={"traceparent": os.environ["TP"]})', 1)
    assert traced != AGENT
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "traced.py").write_text(traced)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_BASE_URL")}
    env.update(PYTHONPATH=str(REPO), TP=f"00-{TRACE}-{SPAN}-01")

    def proxy(mode, script, *extra):
        return subprocess.run([*warmed.cli(env), "proxy", "--pack", "packs/app", "--mode", mode,
                               "--upstream", f"openai={fake.openai_base_url}", *extra, "--", *warm_python,
                               script, "chat"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)

    with FakeServer(default=trip()) as fake:
        assert proxy("record", "agent.py").returncode == 0
        fake.reset()
        fake.set_default(trip())
        done = proxy("check", "traced.py", "--otlp", "evals.jsonl")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in (tmp_path / "evals.jsonl").read_text().splitlines()]
    records = [r for m in lines if "resourceLogs" in m for rl in m["resourceLogs"] for sl in rl["scopeLogs"]
               for r in sl["logRecords"]]
    assert records and all((r["traceId"], r["spanId"]) == (TRACE, SPAN) for r in records)
    attrs = [{a["key"]: a["value"].get("stringValue") for a in r["attributes"]} for r in records]
    assert all(a["gen_ai.evaluation.score.label"] == "pass" for a in attrs)
    assert all(a["gen_ai.response.id"].startswith("chatcmpl-") for a in attrs)
    assert not [m for m in lines if "resourceSpans" in m]  # no span made up: the app's own are used
