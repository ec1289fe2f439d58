"""Trace shapes beyond the common ones: non-text content parts as each convention and
pydantic-ai version records them, messages that arrive as span events (streamed calls whose
instrumentation records the exchange when the stream ends), pydantic-ai's attribute mode in its
format versions, and a recorded request body that left out the tools the span defines."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from replayci import formats
from replayci.capture.importers import otel
from replayci.cli import cli

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
AUDIO = "UklGRiQAAABXQVZFZm10IBAAAAABAAEA"
AUDIO_PART = {"type": "input_audio", "input_audio": {"data": AUDIO, "format": "wav"}}


def _read(tmp_path, spans, name="trace.json"):
    path = tmp_path / name
    path.write_text(json.dumps(spans))
    assert otel.detect(str(path), path.read_bytes()[:65536])
    return otel.read(str(path), name)


def _span(attrs, name="chat gpt-4o", span_id=1, **extra):
    return {"name": name, "context": {"trace_id": 7, "span_id": span_id}, "parent": None, "attributes": attrs,
            **extra}


def _only(reading):
    assert not reading.passed, [(p.kind, p.reason) for p in reading.passed]
    (exchange,) = reading.exchanges
    return exchange


def _neutral(exchange) -> dict:
    return formats.to_neutral(exchange.request)[1]


def _doc(exchange) -> dict:
    return formats.normalize(exchange.response)


def _user_content(exchange) -> list:
    (user,) = [m for m in _neutral(exchange)["messages"] if m["role"] == "user"]
    return user["content"]


# ----------------------------------------------------------------------------- non-text content parts

def _genai(parts: list) -> dict:
    """A GenAI span (pydantic-ai's format versions 2 and later) whose user message has *parts*."""
    return {"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
            "gen_ai.input.messages": json.dumps([{"role": "user", "parts": parts}]),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "finish_reason": "stop",
                                                   "parts": [{"type": "text", "content": "It says hello."}]}])}


def _pydantic_v1(content) -> dict:
    """pydantic-ai's format version 1 in attribute mode: the events as one JSON attribute."""
    events = [{"event.name": "gen_ai.user.message", "role": "user", "content": content, "gen_ai.message.index": 0},
              {"event.name": "gen_ai.choice", "index": 0,
               "message": {"role": "assistant", "content": "It says hello."}}]
    return {"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
            "model_request_parameters": json.dumps({"function_tools": [], "output_tools": []}),
            "events": json.dumps(events)}


def _openinference(kind: str, url: str) -> dict:
    """OpenInference's flattened content parts: `message_content.audio.audio.url` and the image's."""
    part = "llm.input_messages.0.message.contents.1.message_content"
    return {"openinference.span.kind": "LLM", "llm.provider": "openai", "llm.model_name": "gpt-4o",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.contents.0.message_content.type": "text",
            "llm.input_messages.0.message.contents.0.message_content.text": f"What is this {kind}?",
            f"{part}.type": kind, f"{part}.{kind}.{kind}.url": url,
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "It says hello."}


MEDIA = {
    "pydantic-ai-v1-binary-audio": (
        _pydantic_v1(["Transcribe it.", {"kind": "binary", "media_type": "audio/wav", "binary_content": AUDIO}]),
        AUDIO_PART),
    "pydantic-ai-v1-image-url": (
        _pydantic_v1(["What is this?", {"kind": "image-url", "url": "https://example.com/cat.png"}]),
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}),
    "pydantic-ai-v2-binary-audio": (
        _genai([{"type": "text", "content": "What does it say?"},
                {"type": "binary", "media_type": "audio/wav", "content": AUDIO}]), AUDIO_PART),
    "pydantic-ai-v2-audio-url": (
        _genai([{"type": "text", "content": "What does it say?"},
                {"type": "audio-url", "url": "https://example.com/hello.mp3"}]),
        {"type": "file", "file": {"file_id": "https://example.com/hello.mp3"}}),
    "pydantic-ai-v4-file-id": (
        _genai([{"type": "text", "content": "Summarize it."},
                {"type": "file", "modality": "document", "mime_type": "application/pdf", "file_id": "file-abc"}]),
        {"type": "file", "file": {"file_id": "file-abc"}}),
    "openinference-audio-data-url": (
        _openinference("audio", f"data:audio/wav;base64,{AUDIO}"), AUDIO_PART),
    "openinference-image-url": (
        _openinference("image", "https://example.com/cat.png"),
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}),
}


@pytest.mark.parametrize("case", list(MEDIA))
def test_non_text_parts_are_kept_as_content(tmp_path, case):
    attrs, expected = MEDIA[case]
    exchange = _only(_read(tmp_path, [_span(attrs)]))
    content = _user_content(exchange)
    assert isinstance(content, list) and expected in content, content
    assert _doc(exchange)["content"] == "It says hello."


def test_thinking_of_pydantic_ai_v1_is_no_part_of_the_answers_text(tmp_path):
    """Version 1 writes an answer's parts as `{kind, text}` and its events without `event.name`
    in some releases: the text is the answer, the thinking its reasoning."""
    events = [{"role": "user", "content": "Weather in Paris?", "gen_ai.message.index": 0},
              {"index": 0, "message": {"role": "assistant", "content": [
                  {"kind": "thinking", "text": "The user wants weather."}, {"kind": "text", "text": "Sunny."}]}}]
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
             "events": json.dumps(events)}
    exchange = _only(_read(tmp_path, [_span(attrs)]))
    assert _doc(exchange)["content"] == "Sunny." and _doc(exchange)["reasoning"] == "The user wants weather."
    assert _neutral(exchange)["messages"] == [{"role": "user", "content": "Weather in Paris?"}]


def test_pydantic_ai_v2_attribute_mode_session_step(tmp_path):
    """Versions 2 and 3: the messages in `gen_ai.input.messages` / `gen_ai.output.messages`, the
    system prompt as a `system` message, a tool's result as a `tool` message of
    `tool_call_response` parts whose result is JSON text, the tools in `model_request_parameters`."""
    inputs = [{"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
              {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
              {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_weather",
                                               "arguments": {"city": "Paris"}}]},
              {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "name": "get_weather",
                                          "result": json.dumps({"sky": "sunny"})}]}]
    outputs = [{"role": "assistant", "finish_reason": "stop", "parts": [{"type": "text", "content": "Sunny."}]}]
    params = {"function_tools": [{"name": "get_weather", "parameters_json_schema": WEATHER}], "output_tools": []}
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
             "gen_ai.input.messages": json.dumps(inputs), "gen_ai.output.messages": json.dumps(outputs),
             "model_request_parameters": json.dumps(params)}
    exchange = _only(_read(tmp_path, [_span(attrs)]))
    neutral = _neutral(exchange)
    assert [m["role"] for m in neutral["messages"]] == ["system", "user", "assistant", "tool"]
    assert neutral["messages"][3]["tool_call_id"] == "c1" and json.loads(neutral["messages"][3]["content"]) == {
        "sky": "sunny"}
    assert neutral["tools"][0]["function"]["parameters"] == WEATHER and not exchange.tools_inferred


# ----------------------------------------------------------------------------- messages as span events

def test_messages_in_the_inference_details_event(tmp_path):
    """The GenAI conventions' `gen_ai.client.inference.operation.details` event: what a streamed
    call's instrumentation records once the stream has ended, beside a span without content."""
    details = {"gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
                   {"type": "text", "content": "Weather in Paris?"}]}]),
               "gen_ai.output.messages": json.dumps([{"role": "assistant", "finish_reason": "tool_call", "parts": [
                   {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}]}]),
               "gen_ai.tool.definitions": json.dumps([{"type": "function", "name": "get_weather",
                                                       "parameters": WEATHER}])}
    span = _span({"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                  "gen_ai.request.model": "gpt-4o", "gen_ai.request.stream": True},
                 events=[{"name": "gen_ai.client.inference.operation.details", "attributes": details}])
    exchange = _only(_read(tmp_path, [span]))
    assert [(c["name"], c["arguments"]) for c in _doc(exchange)["tool_calls"]] == [("get_weather", {"city": "Paris"})]
    assert _neutral(exchange)["tools"][0]["function"]["parameters"] == WEATHER and not exchange.tools_inferred


def test_prompt_and_completion_events_of_a_streamed_call(tmp_path):
    """`gen_ai.content.prompt` / `gen_ai.content.completion` events (the earlier GenAI conventions,
    kept by instrumentations that record a streamed answer once it is accumulated)."""
    prompt = json.dumps([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}])
    span = _span({"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
                  "gen_ai.request.is_stream": True},
                 events=[{"name": "gen_ai.content.prompt", "attributes": {"gen_ai.prompt": prompt}},
                         {"name": "gen_ai.content.completion", "attributes": {"gen_ai.completion": "Hello."}}])
    exchange = _only(_read(tmp_path, [span]))
    assert _neutral(exchange)["messages"] == [{"role": "system", "content": "Be brief."},
                                              {"role": "user", "content": "Hi?"}]
    assert _doc(exchange)["content"] == "Hello."


def test_completion_event_of_choices_with_tool_calls(tmp_path):
    """The completion event as a JSON list of choices (`{index, finish_reason, message}`), its
    tool calls accumulated from the stream's chunks; the prompt's tool round as chat messages."""
    prompt = [{"role": "user", "content": "Weather in Paris?"},
              {"role": "assistant", "tool_calls": [{"id": "c0", "type": "function", "function": {
                  "name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
              {"role": "tool", "tool_call_id": "c0", "content": "sunny"},
              {"role": "user", "content": "And Rome?"}]
    choices = [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}]}}]
    span = _span({"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o"},
                 events=[{"name": "gen_ai.content.prompt", "attributes": {"gen_ai.prompt": json.dumps(prompt)}},
                         {"name": "gen_ai.content.completion",
                          "attributes": {"gen_ai.completion": json.dumps(choices)}}])
    exchange = _only(_read(tmp_path, [span]))
    assert [(c["name"], c["arguments"]) for c in _doc(exchange)["tool_calls"]] == [("get_weather", {"city": "Rome"})]
    assert [m["role"] for m in _neutral(exchange)["messages"]] == ["user", "assistant", "tool", "user"]
    assert exchange.tools_inferred  # the events carry no tool definitions


# ----------------------------------------------------------------------------- tools beside a kept body

def test_a_recorded_body_without_the_spans_tools_gets_them(tmp_path):
    """litellm's spans keep the request body without its tools, and the tools beside it
    (`llm.tools.N.tool.json_schema`): the request rebuilt carries them."""
    body = {"model": "gpt-4o-mini", "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]}
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}
    attrs = {"openinference.span.kind": "LLM", "llm.provider": "openai", "llm.model_name": "gpt-4o-mini",
             "input.value": json.dumps(body), "input.mime_type": "application/json",
             "llm.tools.0.tool.json_schema": json.dumps(tool),
             "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "Sunny."}
    exchange = _only(_read(tmp_path, [_span(attrs, name="completion")]))
    assert _neutral(exchange)["tools"] == [tool] and not exchange.tools_inferred


def test_media_spans_import_as_a_pack_that_runs(tmp_path, monkeypatch):
    """What import writes from these spans, replayci runs: validate and the recorded run pass."""
    monkeypatch.chdir(tmp_path)
    spans = [_span(attrs, span_id=i) for i, (attrs, _) in enumerate(MEDIA.values(), 1)]
    (tmp_path / "trace.json").write_text(json.dumps(spans))
    runner = CliRunner()
    res = runner.invoke(cli, ["import", "trace.json", "--pack", "pack"], catch_exceptions=False)
    assert res.exit_code == 0 and f"{len(MEDIA)} imported" in res.output, res.output
    res = runner.invoke(cli, ["validate", "--pack", "pack"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["--pack", "pack", "--provider", "recorded", "--no-color"], catch_exceptions=False)
    assert res.exit_code == 0 and f"{len(MEDIA)}/{len(MEDIA)} passed" in res.output, res.output


# ----------------------------------------------------------------------------- tools inferred in a session

def _genai_step(span_id: int, inputs: list, outputs: list) -> dict:
    return _span({"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o",
                  "gen_ai.input.messages": json.dumps(inputs), "gen_ai.output.messages": json.dumps(outputs)},
                 span_id=span_id)


def test_a_session_of_spans_without_tool_definitions_is_flagged(tmp_path, monkeypatch):
    """Two spans of one trace that form an agent session, neither with tool definitions: the
    scenario written from them says its tools were inferred, as each single span's fixture does."""
    monkeypatch.chdir(tmp_path)
    user = {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}
    call = {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_weather",
                                            "arguments": {"city": "Paris"}}]}
    result = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "result": "sunny"}]}
    spans = [_genai_step(1, [user], [call | {"finish_reason": "tool_call"}]),
             _genai_step(2, [user, call, result], [{"role": "assistant", "finish_reason": "stop",
                                                   "parts": [{"type": "text", "content": "Sunny."}]}])]
    (tmp_path / "trace.json").write_text(json.dumps(spans))
    res = CliRunner().invoke(cli, ["import", "trace.json", "--pack", "pack"], catch_exceptions=False)
    assert res.exit_code == 0 and "1 session" in res.output and "2 spans without tool definitions" in res.output, \
        res.output
    docs = [json.loads(p.read_text()) for p in (tmp_path / "pack" / "golden").rglob("*.json")]
    scenarios = [d for d in docs if "trajectory" in d]
    assert len(scenarios) == 1 and scenarios[0]["meta"].get("tools_inferred") is True, [d["meta"] for d in docs]
    res = CliRunner().invoke(cli, ["--pack", "pack", "--provider", "recorded", "--no-color"], catch_exceptions=False)
    assert res.exit_code == 0, res.output


# ----------------------------------------------------------------------------- Logfire's streamed Responses call

def test_a_streamed_responses_call_of_logfire_is_rebuilt_as_responses(tmp_path):
    """Logfire records a streamed call twice: `Responses API with ...` (no answer), then
    `streaming response from ...` with the answer; the request body holds no input (the messages
    are events). The answer's span is the call the first one names: a Responses API call."""
    common = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4.1",
              "request_data": {"model": "gpt-4.1", "stream": True}, "async": True, "logfire.tags": ["LLM"],
              "events": json.dumps([{"event.name": "gen_ai.user.message", "role": "user",
                                     "content": "What is four plus five?"}])}
    answered = json.dumps([{"event.name": "gen_ai.user.message", "role": "user", "content": "What is four plus five?"},
                           {"event.name": "gen_ai.assistant.message", "role": "assistant", "content": "Nine."}])
    spans = [_span(common, name="Responses API with {gen_ai.request.model!r}", span_id=1),
             _span(common | {"events": answered, "duration": 0.5},
                   name="streaming response from {request_data[model]!r} took {duration:.2f}s", span_id=3)]
    reading = _read(tmp_path, spans)
    (exchange,) = reading.exchanges
    assert [(p.entry, p.kind) for p in reading.passed] == [("1", "skipped")]
    assert exchange.endpoint == "/v1/responses" and exchange.response["object"] == "response"
    assert formats.request_format(exchange.request) == "openai-responses"
    assert _doc(exchange)["content"] == "Nine."


@pytest.mark.parametrize("attrs", [
    {"agent_name": "agent", "model_name": "gpt-4o", "all_messages_events": json.dumps([
        {"event.name": "gen_ai.user.message", "role": "user", "content": "Hi?"},
        {"event.name": "gen_ai.assistant.message", "role": "assistant", "content": "Hello."}])},
    {"agent_name": "agent", "gen_ai.agent.name": "agent", "model_name": "gpt-4o",
     "pydantic_ai.all_messages": json.dumps([
        {"role": "user", "parts": [{"type": "text", "content": "Hi?"}]},
        {"role": "assistant", "parts": [{"type": "text", "content": "Hello."}]}])},
], ids=["v1", "v2"])
def test_pydantic_ai_agent_run_span_is_skipped_as_an_agent_span(tmp_path, attrs):
    """The agent run span holds the whole conversation; its model request spans are the calls."""
    reading = _read(tmp_path, [_span(attrs, name="agent run")])
    assert not reading.exchanges and [(p.kind, p.reason) for p in reading.passed] == [("skipped", "an agent span")]


# ----------------------------------------------------------------------------- an answer in audio

@pytest.mark.parametrize("attrs", [
    {"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o-audio-preview",
     "logfire.tags": ["LLM"],
     "request_data": {"model": "gpt-4o-audio-preview", "modalities": ["text", "audio"],
                      "messages": [{"role": "user", "content": "Say hello."}]},
     "response_data": {"message": {"role": "assistant", "content": None, "audio": {
         "id": "audio_1", "data": AUDIO, "transcript": "Hello.", "expires_at": 1}}}},
    _genai([{"type": "text", "content": "Say hello."}]) | {"gen_ai.output.messages": json.dumps([
        {"role": "assistant", "finish_reason": "stop", "parts": [
            {"type": "blob", "modality": "audio", "mime_type": "audio/wav", "content": AUDIO}]}])},
], ids=["logfire-chat-audio", "genai-blob"])
def test_an_answer_in_audio_keeps_its_audio(tmp_path, attrs):
    exchange = _only(_read(tmp_path, [_span(attrs)]))
    message = exchange.response["choices"][0]["message"]
    assert message["audio"]["data"] == AUDIO and not message.get("tool_calls")
    assert _doc(exchange)["tool_calls"] == []
