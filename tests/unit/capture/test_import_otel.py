"""Trace exports, convention by convention and shape by shape: each model-call span becomes an
exchange in its provider's wire form that replayci's formats read back to the same calls and
text; what is no model call, or recorded no content, is listed with the reason."""
from __future__ import annotations

import json

import pytest

from replayci import formats
from replayci.capture.importers import importer, otel
from replayci.capture.importers._tracefiles import MAX_DEPTH, check_depth
from replayci.core.errors import ConfigError

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def _read(tmp_path, doc, name="trace.json", *, lines=False):
    path = tmp_path / name
    if lines:
        path.write_text("\n".join(json.dumps(d) for d in doc) + "\n")
    elif isinstance(doc, str):
        path.write_text(doc)
    else:
        path.write_text(json.dumps(doc))
    assert otel.detect(str(path), path.read_bytes()[:65536])
    return otel.read(str(path), name)


def _doc(exchange) -> dict:
    return formats.normalize(exchange.response)


def _calls(exchange) -> list:
    return [(c["name"], c["arguments"]) for c in _doc(exchange)["tool_calls"]]


def _form(exchange) -> str:
    ep = exchange.endpoint
    if ep.endswith(":generateContent"):
        return "gemini"
    if ep.endswith("/converse"):
        return "bedrock"
    return {"/v1/chat/completions": "openai-chat", "/v1/responses": "openai-responses", "/v1/messages": "anthropic"}[ep]


def _neutral(exchange) -> dict:
    return formats.to_neutral(exchange.request, _form(exchange))[1]


def _kv(key, value):
    return {"key": key, "value": value}


def _otlp(*spans, trace="0af7651916cd43dd8448eb211c80319c"):
    return {"resourceSpans": [{"resource": {"attributes": [_kv("service.name", {"stringValue": "app"})]},
                               "scopeSpans": [{"scope": {"name": "x"}, "spans": [
                                   {"traceId": trace, "spanId": f"{i:016x}", "name": name, "kind": 3,
                                    "attributes": attrs, **extra}
                                   for i, (name, attrs, extra) in enumerate(spans, 1)]}]}]}


OPENLLMETRY = [
    _kv("llm.request.type", {"stringValue": "chat"}),
    _kv("gen_ai.system", {"stringValue": "openai"}),
    _kv("gen_ai.request.model", {"stringValue": "gpt-4o"}),
    _kv("gen_ai.request.max_tokens", {"intValue": "200"}),
    _kv("gen_ai.request.temperature", {"doubleValue": 0.5}),
    _kv("llm.is_streaming", {"boolValue": False}),
    _kv("gen_ai.openai.api_base", {"stringValue": "https://api.openai.com/v1/"}),
    _kv("gen_ai.prompt.0.role", {"stringValue": "system"}),
    _kv("gen_ai.prompt.0.content", {"stringValue": "Be brief."}),
    _kv("gen_ai.prompt.1.role", {"stringValue": "user"}),
    _kv("gen_ai.prompt.1.content", {"stringValue": "Weather in Paris and Rome?"}),
    _kv("llm.request.functions.0.name", {"stringValue": "get_weather"}),
    _kv("llm.request.functions.0.description", {"stringValue": "Weather now"}),
    _kv("llm.request.functions.0.parameters", {"stringValue": json.dumps(WEATHER)}),
    _kv("gen_ai.completion.0.role", {"stringValue": "assistant"}),
    _kv("gen_ai.completion.0.finish_reason", {"stringValue": "tool_calls"}),
    _kv("gen_ai.completion.0.tool_calls.0.id", {"stringValue": "call_1"}),
    _kv("gen_ai.completion.0.tool_calls.0.name", {"stringValue": "get_weather"}),
    _kv("gen_ai.completion.0.tool_calls.0.arguments", {"stringValue": '{"city": "Paris"}'}),
    _kv("gen_ai.completion.0.tool_calls.1.id", {"stringValue": "call_2"}),
    _kv("gen_ai.completion.0.tool_calls.1.name", {"stringValue": "get_weather"}),
    _kv("gen_ai.completion.0.tool_calls.1.arguments", {"stringValue": '{"city": "Rome"}'}),
]


def test_openllmetry_otlp_json(tmp_path):
    reading = _read(tmp_path, _otlp(("openai.chat", OPENLLMETRY, {})))
    assert reading.format == "otel" and reading.passed == []
    (exchange,) = reading.exchanges
    assert _calls(exchange) == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})]
    assert exchange.endpoint == "/v1/chat/completions" and exchange.host == "api.openai.com"
    assert exchange.fidelity == "reconstructed" and not exchange.tools_inferred
    assert exchange.entry == f"{1:016x}" and exchange.group == "0af7651916cd43dd8448eb211c80319c"
    neutral = _neutral(exchange)
    assert neutral["messages"] == [{"role": "system", "content": "Be brief."},
                                   {"role": "user", "content": "Weather in Paris and Rome?"}]
    assert neutral["tools"] == [{"type": "function", "function": {"name": "get_weather", "description": "Weather now",
                                                                  "parameters": WEATHER}}]
    assert neutral["max_tokens"] == 200 and neutral["temperature"] == 0.5


def test_otlp_json_lines_each_request_a_line(tmp_path):
    first = _otlp(("openai.chat", OPENLLMETRY, {}), trace="a" * 32)
    second = _otlp(("openai.chat", OPENLLMETRY, {}), trace="b" * 32)
    reading = _read(tmp_path, [first, second], "traces.jsonl", lines=True)
    assert [e.group for e in reading.exchanges] == ["a" * 32, "b" * 32]


def test_otlp_any_values_of_every_kind():
    assert otel.__name__  # the decoder is the span reader's; its kinds, one by one:
    from replayci.capture.importers._spans import any_value
    assert any_value({"intValue": "7"}) == 7
    assert any_value({"doubleValue": 0.5}) == 0.5
    assert any_value({"boolValue": True}) is True
    assert any_value({"bytesValue": "aGk="}) == "hi"
    assert any_value({"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "1"}]}}) == ["a", 1]
    assert any_value({"kvlistValue": {"values": [_kv("k", {"stringValue": "v"})]}}) == {"k": "v"}
    assert any_value({"arrayValue": {}}) == [] and any_value({}) is None
    assert any_value("plain") == "plain" and any_value({"a": 1}) == {"a": 1}


def _genai_attrs(provider="anthropic", **extra):
    return {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": provider, "gen_ai.request.model": "m-1",
        "gen_ai.system_instructions": [{"type": "text", "content": "Be brief."}],
        "gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}],
        "gen_ai.output.messages": [{"role": "assistant", "finish_reason": "tool_call", "parts": [
            {"type": "text", "content": "Checking."},
            {"type": "tool_call", "id": "t1", "name": "get_weather", "arguments": {"city": "Paris"}}]}],
        "gen_ai.tool.definitions": [{"type": "function", "name": "get_weather", "parameters": WEATHER}],
        **extra,
    }


def _span(attrs, name="chat m-1", span_id=1, trace_id=7, **extra):
    return {"name": name, "context": {"trace_id": trace_id, "span_id": span_id}, "parent": None,
            "attributes": attrs, **extra}


@pytest.mark.parametrize("provider, form", [("anthropic", "anthropic"), ("openai", "openai-chat"),
                                            ("gcp.gemini", "gemini"), ("aws.bedrock", "bedrock"),
                                            ("groq", "openai-chat")])
def test_genai_span_rebuilt_in_its_providers_form(tmp_path, provider, form):
    reading = _read(tmp_path, [_span(_genai_attrs(provider))])
    (exchange,) = reading.exchanges
    assert _form(exchange) == form
    assert formats.request_format(exchange.request) in (form, "openai-chat")
    doc = _doc(exchange)
    assert _calls(exchange) == [("get_weather", {"city": "Paris"})]
    assert doc["content"] == "Checking." and doc["stop_reason"] == "tool_calls"
    neutral = _neutral(exchange)
    assert neutral["messages"][0] == {"role": "system", "content": "Be brief."}
    assert neutral["messages"][-1]["content"] in ("Weather in Paris?", [{"type": "text", "text": "Weather in Paris?"}])
    assert [t["function"]["name"] for t in neutral["tools"]] == ["get_weather"]
    assert exchange.group == "7" and exchange.entry == "1"


@pytest.mark.parametrize("form", ["otlp", "plain", "json_string"])
def test_attribute_value_forms_read_alike(tmp_path, form):
    """An attribute as an OTLP AnyValue, a plain value or a JSON string: the same exchange."""
    attrs = _genai_attrs("openai")
    if form == "plain":
        doc = [_span(attrs)]
    elif form == "json_string":
        doc = [_span({k: json.dumps(v) if isinstance(v, list) else v for k, v in attrs.items()})]
    else:
        def value(v):
            return {"stringValue": v if isinstance(v, str) else json.dumps(v)}
        doc = _otlp(("chat m-1", [_kv(k, value(v)) for k, v in attrs.items()], {}), trace="7")
    (exchange,) = _read(tmp_path, doc).exchanges
    assert _calls(exchange) == [("get_weather", {"city": "Paris"})]
    assert _neutral(exchange)["tools"][0]["function"]["parameters"] == WEATHER
    assert _doc(exchange)["content"] == "Checking."


def test_genai_message_events(tmp_path):
    """The older GenAI conventions: messages as span events, the answer a gen_ai.choice."""
    events = [
        {"name": "gen_ai.system.message", "attributes": [_kv("content", {"stringValue": "Be brief."})]},
        {"name": "gen_ai.user.message", "attributes": [_kv("content", {"stringValue": "Rome?"})]},
        {"name": "gen_ai.choice", "attributes": [
            _kv("index", {"intValue": "0"}), _kv("finish_reason", {"stringValue": "tool_calls"}),
            _kv("message", {"kvlistValue": {"values": [
                _kv("role", {"stringValue": "assistant"}),
                _kv("tool_calls", {"arrayValue": {"values": [{"kvlistValue": {"values": [
                    _kv("id", {"stringValue": "c1"}),
                    _kv("function", {"kvlistValue": {"values": [
                        _kv("name", {"stringValue": "get_weather"}),
                        _kv("arguments", {"stringValue": '{"city": "Rome"}'})]}})]}}]}})]}})]},
    ]
    attrs = [_kv("gen_ai.system", {"stringValue": "openai"}), _kv("gen_ai.operation.name", {"stringValue": "chat"}),
             _kv("gen_ai.request.model", {"stringValue": "gpt-4o"})]
    (exchange,) = _read(tmp_path, _otlp(("chat gpt-4o", attrs, {"events": events}))).exchanges
    assert _calls(exchange) == [("get_weather", {"city": "Rome"})]
    assert _neutral(exchange)["messages"] == [{"role": "system", "content": "Be brief."},
                                              {"role": "user", "content": "Rome?"}]
    assert exchange.tools_inferred  # the events carry no definitions


OPENINFERENCE = {
    "openinference.span.kind": "LLM", "llm.provider": "openai", "llm.system": "openai", "llm.model_name": "gpt-4o",
    "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "Rome?",
    "llm.input_messages.1.message.role": "assistant",
    "llm.input_messages.1.message.tool_calls.0.tool_call.id": "c0",
    "llm.input_messages.1.message.tool_calls.0.tool_call.function.name": "get_weather",
    "llm.input_messages.1.message.tool_calls.0.tool_call.function.arguments": '{"city": "Milan"}',
    "llm.input_messages.2.message.role": "tool", "llm.input_messages.2.message.tool_call_id": "c0",
    "llm.input_messages.2.message.content": "sunny",
    "llm.output_messages.0.message.role": "assistant",
    "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"city": "Rome"}',
    "llm.tools.0.tool.json_schema": json.dumps({"type": "function", "function": {"name": "get_weather",
                                                                                 "parameters": WEATHER}}),
}


def test_openinference_attribute_map(tmp_path):
    (exchange,) = _read(tmp_path, OPENINFERENCE).exchanges
    assert _calls(exchange) == [("get_weather", {"city": "Rome"})]
    messages = _neutral(exchange)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[1]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert messages[2] == {"role": "tool", "tool_call_id": "c0", "content": "sunny"}
    assert not exchange.tools_inferred and exchange.group == ""


def test_openinference_chain_and_tool_spans_skipped(tmp_path):
    spans = [_span(OPENINFERENCE, "llm", 1), _span({"openinference.span.kind": "CHAIN", "input.value": "x"}, "c", 2),
             _span({"openinference.span.kind": "TOOL"}, "t", 3)]
    reading = _read(tmp_path, spans)
    assert len(reading.exchanges) == 1
    assert [(p.entry, p.kind, p.reason) for p in reading.passed] == [("2", "skipped", "a chain span"),
                                                                     ("3", "skipped", "a tool span")]


def test_logfire_request_and_response_data(tmp_path):
    body = {"model": "gpt-4.1", "stream": True, "messages": [{"role": "user", "content": "4+5?"}],
            "tools": [{"type": "function", "function": {"name": "add", "parameters": WEATHER}}]}
    attrs = {"request_data": body, "logfire.tags": ["LLM"], "gen_ai.system": "openai",
             "response_data": {"message": {"role": "assistant", "content": None, "tool_calls": [
                 {"id": "c", "type": "function", "function": {"name": "add", "arguments": '{"a": 4}'}}]}}}
    (exchange,) = _read(tmp_path, [_span(attrs, "Chat Completion with 'gpt-4.1'")]).exchanges
    assert exchange.request == {k: v for k, v in body.items() if k != "stream"}  # the recorded body, unstreamed
    assert _calls(exchange) == [("add", {"a": 4})]


def test_logfire_streamed_call_counted_once(tmp_path):
    body = {"model": "gpt-4.1", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    first = _span({"request_data": body, "logfire.tags": ["LLM"], "gen_ai.system": "openai"}, "Chat", 1, 1)
    log = _span({"request_data": body, "logfire.tags": ["LLM"], "gen_ai.system": "openai",
                 "response_data": {"combined_chunk_content": "hello", "chunk_count": 2}}, "streaming response", 3, 2)
    reading = _read(tmp_path, [first, log])
    assert [e.entry for e in reading.exchanges] == ["3"] and _doc(reading.exchanges[0])["content"] == "hello"
    assert [(p.entry, p.kind, p.reason) for p in reading.passed] == [
        ("1", "skipped", "streamed call: its answer is recorded by span 3")]


def test_tool_calls_without_definitions_declared_by_name(tmp_path):
    attrs = _genai_attrs("openai")
    del attrs["gen_ai.tool.definitions"]
    (exchange,) = _read(tmp_path, [_span(attrs)]).exchanges
    assert exchange.tools_inferred
    assert _neutral(exchange)["tools"] == [{"type": "function", "function": {"name": "get_weather",
                                                                             "parameters": {"type": "object"}}}]


def test_text_answer_without_tools_infers_nothing(tmp_path):
    attrs = _genai_attrs("openai", **{"gen_ai.output.messages": [
        {"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}]}]})
    del attrs["gen_ai.tool.definitions"]
    (exchange,) = _read(tmp_path, [_span(attrs)]).exchanges
    assert not exchange.tools_inferred and "tools" not in _neutral(exchange)
    assert _doc(exchange)["content"] == "Sunny." and _calls(exchange) == []


@pytest.mark.parametrize("attrs, reason", [
    ({"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o"},
     "content not captured"),
    (_genai_attrs("openai", **{"gen_ai.input.messages": [{"role": "user", "parts": [
        {"type": "text", "content": "<elided>"}]}]}), "content not captured"),
    ({"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
      "gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]},
     "its answer was not captured"),
])
def test_spans_without_content_listed(tmp_path, attrs, reason):
    reading = _read(tmp_path, [_span(attrs)])
    assert reading.exchanges == []
    assert [(p.kind, p.reason) for p in reading.passed] == [("not_captured", reason)]


def test_failed_call_listed_with_its_error(tmp_path):
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
             "gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]}
    reading = _read(tmp_path, [_span(attrs, status={"status_code": "ERROR", "description": "rate limited"})])
    assert [(p.kind, p.reason) for p in reading.passed] == [
        ("not_captured", "the call failed (rate limited) and its answer was not captured")]


@pytest.mark.parametrize("attrs, reason", [
    ({"http.method": "GET", "http.url": "https://example.com"}, "not a model call"),
    ({"db.system": "postgresql", "db.statement": "select 1"}, "not a model call"),
    ({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather"}, "a tool span"),
    ({"gen_ai.operation.name": "invoke_agent", "gen_ai.input.messages": []}, "an agent span"),
    ({"gen_ai.operation.name": "embeddings", "gen_ai.request.model": "e"}, "embeddings, not a model call"),
])
def test_non_model_spans_skipped(tmp_path, attrs, reason):
    reading = _read(tmp_path, [_span(_genai_attrs()), _span(attrs, "other", 2)])
    assert len(reading.exchanges) == 1
    assert [(p.entry, p.kind, p.reason) for p in reading.passed] == [("2", "skipped", reason)]


def test_responses_api_span(tmp_path):
    attrs = [_kv("gen_ai.system", {"stringValue": "openai"}), _kv("gen_ai.request.model", {"stringValue": "gpt-4.1"}),
             _kv("gen_ai.prompt.0.role", {"stringValue": "user"}), _kv("gen_ai.prompt.0.content", {"stringValue": "x"}),
             _kv("gen_ai.completion.0.role", {"stringValue": "assistant"}),
             _kv("gen_ai.completion.0.content", {"stringValue": "done"})]
    (exchange,) = _read(tmp_path, _otlp(("openai.response", attrs, {}))).exchanges
    assert exchange.endpoint == "/v1/responses" and exchange.response["object"] == "response"
    assert formats.request_format(exchange.request) == "openai-responses"
    assert _doc(exchange)["content"] == "done"


def test_reasoning_kept_apart_from_text(tmp_path):
    attrs = _genai_attrs(**{"gen_ai.output.messages": [{"role": "assistant", "parts": [
        {"type": "reasoning", "content": "Think."}, {"type": "text", "content": "Answer."}]}]})
    (exchange,) = _read(tmp_path, [_span(attrs)]).exchanges
    doc = _doc(exchange)
    assert doc["content"] == "Answer." and doc["reasoning"] == "Think."


def test_legacy_text_completion_unsupported(tmp_path):
    attrs = {"gen_ai.operation.name": "text_completion", "gen_ai.system": "openai", "logfire.tags": ["LLM"],
             "request_data": {"model": "gpt-3.5-turbo-instruct", "prompt": "x"},
             "gen_ai.output.messages": [{"role": "assistant", "parts": [{"type": "text", "content": "y"}]}]}
    reading = _read(tmp_path, [_span(attrs, "Completion")])
    assert [(p.kind, p.reason) for p in reading.passed] == [
        ("unsupported", "OpenAI legacy text completions (/v1/completions); replayci reads chat APIs")]


def test_bedrock_invoke_model_of_another_vendor_unsupported(tmp_path):
    attrs = {**OPENINFERENCE, "llm.provider": "aws", "llm.system": "amazon", "llm.model_name": "titan-text-express-v1",
             "input.value": json.dumps({"inputText": "hi", "textGenerationConfig": {}})}
    reading = _read(tmp_path, attrs)
    assert reading.passed[0].kind == "unsupported" and "non-Claude" in reading.passed[0].reason


def test_bedrock_claude_body_kept_in_anthropic_form(tmp_path):
    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 100,
            "messages": [{"role": "user", "content": "Rome?"}]}
    attrs = {**OPENINFERENCE, "llm.provider": "aws", "llm.system": "anthropic", "input.value": json.dumps(body)}
    (exchange,) = _read(tmp_path, attrs).exchanges
    # The body as recorded, with the tools the span defines beside it in the body's form.
    assert exchange.endpoint == "/v1/messages" and exchange.request == body | {"tools": [
        {"name": "get_weather", "input_schema": WEATHER}]}
    assert exchange.response["type"] == "message" and _calls(exchange) == [("get_weather", {"city": "Rome"})]


def test_detect_by_content():
    def head(value) -> bytes:
        return json.dumps(value).encode()
    assert otel.detect("x", head(_otlp()))
    assert otel.detect("x", head([_span(_genai_attrs())]))
    assert otel.detect("x", head(OPENINFERENCE))
    assert not otel.detect("x", head({"interactions": [{"request": {"body": '{"gen_ai.x": 1}'}}]}))
    assert not otel.detect("x", head({"log": {"entries": []}}))
    assert not otel.detect("x", b"interactions:\n- request: {}\n")
    assert not importer("inspect").detect("x", head(_otlp()))


@pytest.mark.parametrize("shape", ["lines", "data", "single"])
def test_span_object_shapes(tmp_path, shape):
    spans = [_span(_genai_attrs(), span_id=1), _span(_genai_attrs(), span_id=2)]
    if shape == "lines":
        reading = _read(tmp_path, spans, "spans.jsonl", lines=True)
    elif shape == "data":
        reading = _read(tmp_path, {"data": spans})
    else:
        reading = _read(tmp_path, spans[0])
        spans = spans[:1]
    assert [e.entry for e in reading.exchanges] == [str(i) for i in range(1, len(spans) + 1)]


def test_otlp_error_status(tmp_path):
    attrs = [_kv("gen_ai.operation.name", {"stringValue": "chat"}), _kv("gen_ai.system", {"stringValue": "openai"}),
             _kv("gen_ai.prompt.0.role", {"stringValue": "user"}), _kv("gen_ai.prompt.0.content", {"stringValue": "x"})]
    doc = _otlp(("openai.chat", attrs, {"status": {"code": 2, "message": "timeout"}}))
    assert [p.reason for p in _read(tmp_path, doc).passed] == [
        "the call failed (timeout) and its answer was not captured"]


# ------------------------------------------------------------ bad input


def _refused(tmp_path, text: str | bytes, name="bad.json"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ConfigError) as exc:
        otel.read(str(path), name)
    return str(exc.value)


def test_not_json_refused(tmp_path):
    message = _refused(tmp_path, "this is not json")
    assert message.startswith("bad.json:1:1: invalid JSON")


def test_truncated_json_lines_refused_at_the_line(tmp_path):
    good = json.dumps(_otlp(("openai.chat", OPENLLMETRY, {})))
    message = _refused(tmp_path, good + "\n" + good[: len(good) // 2] + "\n", "t.jsonl")
    assert message.startswith("t.jsonl:2: invalid JSON")


def test_json_that_is_no_trace_refused(tmp_path):
    assert "not a trace export" in _refused(tmp_path, json.dumps({"hello": 1}))
    assert "not a trace export" in _refused(tmp_path, json.dumps([1, 2]))
    assert "resourceSpans must be a list of objects" in _refused(tmp_path, json.dumps({"resourceSpans": {}}))
    assert "empty file" in _refused(tmp_path, "  \n")
    assert "not valid UTF-8" in _refused(tmp_path, b'{"a": "\xff"}')


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5_000, 100_000])
def test_deeply_nested_json_refused(tmp_path, depth):
    message = _refused(tmp_path, "[" * depth + "]" * depth)
    assert message.startswith("bad.json") and "nesting" in message


def test_nesting_limit_boundary():
    def nested(n):
        value: list = []
        for _ in range(n - 1):
            value = [value]
        return value
    check_depth(nested(MAX_DEPTH), "f")
    with pytest.raises(ConfigError, match=f"nesting deeper than {MAX_DEPTH} levels"):
        check_depth(nested(MAX_DEPTH + 1), "f")


@pytest.mark.parametrize("key, junk", [
    ("gen_ai.operation.name", ["chat"]), ("gen_ai.operation.name", {"a": 1}),
    ("gen_ai.input.messages", {"role": "user"}), ("gen_ai.input.messages", [None, 3, {"parts": 5}]),
    ("gen_ai.output.messages", [{"parts": [{"type": "tool_call", "arguments": [1]}]}]),
    ("gen_ai.output.messages", "{broken json"), ("gen_ai.tool.definitions", [{"name": 3}, "x", None]),
    ("events", [{"event.name": {"x": 1}, "role": ["user"]}, 7]), ("gen_ai.provider.name", 12),
    ("request_data", {"messages": "no list"}), ("response_data", {"message": [1]}),
])
def test_what_a_span_holds_is_data(tmp_path, key, junk):
    """Whatever shape a span's values take, it is read or listed: never a crash."""
    reading = _read(tmp_path, [_span({**_genai_attrs(), key: junk})])
    assert len(reading.exchanges) + len(reading.passed) == 1
    for exchange in reading.exchanges:
        formats.normalize(exchange.response)


@pytest.mark.parametrize("doc", [
    {"resourceSpans": [{"scopeSpans": [{"spans": 1.5}]}]},
    {"resourceSpans": [{"scopeSpans": True}]},
    {"resourceSpans": [3]},
])
def test_otlp_structure_refused(tmp_path, doc):
    assert "must be a list of objects" in _refused(tmp_path, json.dumps(doc))


def test_otlp_junk_any_values_read():
    from replayci.capture.importers._spans import any_value
    assert any_value({"arrayValue": 3}) == [] and any_value({"kvlistValue": {"values": [1]}}) == {}
    assert any_value({"intValue": "x"}) == "x" and any_value({"bytesValue": "%%%"}) == "%%%"


def test_json_looking_text_kept_as_text(tmp_path):
    """A tool result or a user message that happens to be JSON stays the text it was; a JSON
    string of content blocks (openllmetry's Anthropic prompts) is read as blocks."""
    blocks = json.dumps([{"type": "text", "text": "Hi"}, {"type": "tool_use", "id": "u", "name": "f", "input": {}}])
    attrs = {"gen_ai.system": "anthropic", "llm.request.type": "completion",
             "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": '{"ask": "json"}',
             "gen_ai.prompt.1.role": "assistant", "gen_ai.prompt.1.content": blocks,
             "gen_ai.prompt.2.role": "tool", "gen_ai.prompt.2.tool_call_id": "u",
             "gen_ai.prompt.2.content": '{"assistant": "agent2"}',
             "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "ok"}
    (exchange,) = _read(tmp_path, [_span(attrs)]).exchanges
    messages = _neutral(exchange)["messages"]
    assert messages[0]["content"] in ('{"ask": "json"}', [{"type": "text", "text": '{"ask": "json"}'}])
    assert messages[1]["tool_calls"][0]["function"]["name"] == "f"
    assert messages[2]["content"] in ('{"assistant": "agent2"}', [{"type": "text", "text": '{"assistant": "agent2"}'}])


def test_response_id_kept_when_recorded(tmp_path):
    (kept,) = _read(tmp_path, [_span(_genai_attrs("openai", **{"gen_ai.response.id": "chatcmpl-9"}))]).exchanges
    (minted,) = _read(tmp_path, [_span(_genai_attrs("openai"))]).exchanges
    assert kept.response["id"] == "chatcmpl-9" and minted.response["id"] == "chatcmpl-imported"


@pytest.mark.parametrize("body, kept", [
    ({"model": "claude-x", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}, True),
    ({"model": "claude-x", "messages": [{"role": "user", "content": "hi"}]}, False),  # no Anthropic body
    ({"model": "claude-x", "max_tokens": 10, "system": "s", "messages": [{"role": "user", "content": "hi"}]}, True),
])
def test_recorded_anthropic_body_kept(tmp_path, body, kept):
    attrs = {"request_data": body, "logfire.tags": ["LLM"], "gen_ai.system": "anthropic",
             "response_data": {"message": {"role": "assistant", "content": "hello"}}}
    (exchange,) = _read(tmp_path, [_span(attrs)]).exchanges
    assert exchange.endpoint == "/v1/messages" and _doc(exchange)["content"] == "hello"
    assert (exchange.request == body) is kept
    assert formats.to_neutral(exchange.request, "anthropic")[1]["messages"][-1]["content"] == "hi"


def test_body_form_decides_without_a_provider(tmp_path):
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    attrs = {"openinference.span.kind": "LLM", "input.value": json.dumps(body), "llm.model_name": "gemini-2.0",
             "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "yo"}
    (exchange,) = _read(tmp_path, attrs).exchanges
    assert exchange.endpoint == "/v1beta/models/gemini-2.0:generateContent" and exchange.request == body


def test_phoenix_span_with_nested_attributes(tmp_path):
    """Phoenix's span API: span_kind beside the attributes, status_code, namespaces nested."""
    span = {"name": "ChatCompletion", "context": {"trace_id": "t1", "span_id": "s1"}, "span_kind": "LLM",
            "parent_id": None, "status_code": "OK",
            "attributes": {"llm": {"provider": "openai", "model_name": "gpt-4o",
                                   "input_messages": [{"message": {"role": "user", "content": "Rome?"}}],
                                   "output_messages": [{"message": {"role": "assistant", "tool_calls": [
                                       {"tool_call": {"id": "c1", "function": {"name": "get_weather",
                                                                               "arguments": '{"city": "Rome"}'}}}]}}],
                                   "tools": [{"tool": {"json_schema": json.dumps(
                                       {"type": "function", "function": {"name": "get_weather",
                                                                         "parameters": WEATHER}})}}]},
                           "input": {"value": "Rome?", "mime_type": "text/plain"}}}
    reading = _read(tmp_path, {"data": [span], "next_cursor": None})
    (exchange,) = reading.exchanges
    assert (exchange.entry, exchange.group) == ("s1", "t1")
    assert _calls(exchange) == [("get_weather", {"city": "Rome"})] and not exchange.tools_inferred
    assert _neutral(exchange)["messages"] == [{"role": "user", "content": "Rome?"}]
    assert _neutral(exchange)["tools"][0]["function"]["parameters"] == WEATHER


def test_phoenix_error_status_and_other_kinds(tmp_path):
    spans = [{"name": "c", "context": {"trace_id": "t", "span_id": "a"}, "span_kind": "CHAIN", "attributes": {}},
             {"name": "l", "context": {"trace_id": "t", "span_id": "b"}, "span_kind": "LLM", "status_code": "ERROR",
              "status_message": "boom", "attributes": {"llm": {"input_messages": [
                  {"message": {"role": "user", "content": "x"}}]}}}]
    reading = _read(tmp_path, {"data": spans})
    assert [(p.entry, p.kind, p.reason) for p in reading.passed] == [
        ("a", "skipped", "a chain span"),
        ("b", "not_captured", "the call failed (boom) and its answer was not captured")]


# ----------------------------------------------------------------------------- audio, pydantic-ai, partial tools

AUDIO = "UklGRiQAAABXQVZFZm10IBAAAAABAAEA"


@pytest.mark.parametrize("attrs", [
    _genai_attrs("openai", **{"gen_ai.input.messages": [{"role": "user", "parts": [
        {"type": "blob", "modality": "audio", "mime_type": "audio/wav", "content": AUDIO}]}]}),
    {**{k: v for k, v in _genai_attrs("openai").items() if k != "gen_ai.input.messages"},
     "gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": "Where is this?"},
                                                          {"type": "blob", "modality": "audio",
                                                           "mime_type": "audio/wav", "content": AUDIO}]}]},
    {"gen_ai.system": "openai", "llm.request.type": "chat", "gen_ai.request.model": "gpt-4o-audio-preview",
     "gen_ai.prompt.0.role": "user",
     "gen_ai.prompt.0.content": json.dumps([{"type": "input_audio", "input_audio": {"data": AUDIO, "format": "wav"}}]),
     "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "It says hello.",
     "gen_ai.completion.0.finish_reason": "stop"},
], ids=["genai-audio-only", "genai-text-and-audio", "openllmetry-input-audio"])
def test_a_question_in_audio_is_imported_with_its_audio(tmp_path, attrs):
    reading = _read(tmp_path, [_span(attrs)])
    assert not reading.passed, reading.passed
    (exchange,) = reading.exchanges
    user = [m for m in _neutral(exchange)["messages"] if m["role"] == "user"]
    assert {"type": "input_audio", "input_audio": {"data": AUDIO, "format": "wav"}} in user[0]["content"]


def _pydantic_ai_span(called: str = "get_weather") -> dict:
    """A pydantic-ai model request span in its attribute mode: the message events as one `events`
    attribute, the tools in `model_request_parameters`."""
    events = [
        {"event.name": "gen_ai.system.message", "role": "system", "content": "Be brief.", "gen_ai.message.index": 0},
        {"event.name": "gen_ai.user.message", "role": "user", "content": "Weather in Paris?",
         "gen_ai.message.index": 0},
        {"event.name": "gen_ai.choice", "index": 0, "message": {"role": "assistant", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": called, "arguments": '{"city": "Paris"}'}}]}}]
    params = {"function_tools": [{"name": "get_weather", "description": "Weather now",
                                  "parameters_json_schema": WEATHER, "outer_typed_dict_key": None, "strict": None}],
              "output_tools": [], "allow_text_output": True}
    return _span({"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
                  "model_request_parameters": json.dumps(params), "events": json.dumps(events),
                  "logfire.msg": "chat gpt-4o"}, name="chat gpt-4o")


def test_pydantic_ai_attribute_mode_with_its_tool_definitions(tmp_path):
    (exchange,) = _read(tmp_path, [_pydantic_ai_span()]).exchanges
    assert not exchange.tools_inferred
    assert _neutral(exchange)["tools"] == [{"type": "function", "function": {
        "name": "get_weather", "description": "Weather now", "parameters": WEATHER}}]
    assert _calls(exchange) == [("get_weather", {"city": "Paris"})]


def test_a_tool_called_without_its_definition_is_flagged_even_beside_defined_ones(tmp_path):
    (exchange,) = _read(tmp_path, [_pydantic_ai_span(called="final_result")]).exchanges
    assert exchange.tools_inferred
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in _neutral(exchange)["tools"]}
    assert tools == {"get_weather": WEATHER, "final_result": {"type": "object"}}


def test_a_span_listing_its_tools_by_name_alone_is_flagged(tmp_path):
    """openllmetry's `llm.request.functions.N.name` recorded without its parameters: the span holds
    no definition a call's arguments can be checked against."""
    attrs = {a["key"]: a["value"] for a in OPENLLMETRY if a["key"] != "llm.request.functions.0.parameters"}
    values = {k: next(iter(v.values())) for k, v in attrs.items()}
    (exchange,) = _read(tmp_path, [_span(values, name="openai.chat")]).exchanges
    assert exchange.tools_inferred
    (with_schema,) = _read(tmp_path, [_span({**values, "llm.request.functions.0.parameters": json.dumps(WEATHER)},
                                            name="openai.chat")], "t2.json").exchanges
    assert not with_schema.tools_inferred
