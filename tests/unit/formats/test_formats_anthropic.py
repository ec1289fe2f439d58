"""Anthropic Messages (and Claude bodies through Bedrock InvokeModel)."""
from __future__ import annotations

import pytest
from formats_support import calls_of, sse

from replayci.formats import from_neutral, normalize, normalize_stream, to_neutral


def _message(content: list, stop: str = "end_turn", **extra) -> dict:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 20, "output_tokens": 7}, **extra}


def test_text_and_tool_use():
    doc = normalize(_message([{"type": "text", "text": "Let me check."},
                              {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                               "input": {"location": "Paris", "unit": "celsius"}}], "tool_use"))
    assert doc["tool_calls"] == [{"id": "toolu_1", "name": "get_weather",
                                  "arguments": {"location": "Paris", "unit": "celsius"},
                                  "arguments_raw": '{"location":"Paris","unit":"celsius"}'}]
    assert doc["content"] == "Let me check." and doc["stop_reason"] == "tool_calls"
    assert doc["usage"] == {"input_tokens": 20, "output_tokens": 7} and doc["model"] == "claude-sonnet-4-5"


@pytest.mark.parametrize("reason, expected", [("end_turn", "stop"), ("stop_sequence", "stop"),
                                              ("max_tokens", "length"), ("refusal", "content_filter"),
                                              ("pause_turn", "pause_turn")])
def test_stop_reasons(reason, expected):
    assert normalize(_message([{"type": "text", "text": "x"}], reason))["stop_reason"] == expected


def test_thinking_is_reasoning_not_content():
    doc = normalize(_message([{"type": "thinking", "thinking": "2 and 2 make 4.", "signature": "sig"},
                              {"type": "redacted_thinking", "data": "opaque"},
                              {"type": "text", "text": "4"}]))
    assert doc["content"] == "4" and doc["reasoning"] == "2 and 2 make 4."


def test_server_tools_are_not_client_calls():
    doc = normalize(_message([
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "btc price"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
        {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "echo", "server_name": "s", "input": {}},
        {"type": "text", "text": "Bitcoin is "}, {"type": "text", "text": "up."}]))
    assert doc["tool_calls"] == [] and doc["content"] == "Bitcoin is up."
    assert doc["server_tool_calls"] == [{"name": "web_search", "arguments": {"query": "btc price"}},
                                        {"name": "echo", "arguments": {}}]


def test_claude_body_through_bedrock_invoke_model():
    body = _message([{"type": "tool_use", "id": "toolu_bdrk_1", "name": "f", "input": {}}], "tool_use",
                    id="msg_bdrk_1", model="claude-3-5-sonnet-20241022")
    doc = normalize(body)
    assert calls_of(doc) == [("f", {})] and doc["tool_calls"][0]["arguments_raw"] == "{}"


def _stream(*blocks: tuple[dict, list[dict]], stop: str = "end_turn", end: bool = True) -> str:
    events = [{"type": "message_start", "message": {**_message([], None), "usage": {"input_tokens": 21,
                                                                                   "output_tokens": 1}}}]
    for i, (start, deltas) in enumerate(blocks):
        events.append({"type": "content_block_start", "index": i, "content_block": start})
        if i == 0:
            events.append({"type": "ping"})
        events += [{"type": "content_block_delta", "index": i, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": i})
    events.append({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                   "usage": {"output_tokens": 13}})
    if end:
        events.append({"type": "message_stop"})
    return sse(*events, named=True)


def test_stream_reassembles_text_thinking_and_tools():
    text = _stream(
        ({"type": "thinking", "thinking": "", "signature": ""},
         [{"type": "thinking_delta", "thinking": "Two "}, {"type": "thinking_delta", "thinking": "calls."},
          {"type": "signature_delta", "signature": "abc"}]),
        ({"type": "text", "text": ""}, [{"type": "text_delta", "text": "On "}, {"type": "text_delta", "text": "it."}]),
        ({"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
         [{"type": "input_json_delta", "partial_json": ""}, {"type": "input_json_delta", "partial_json": "{\"city\": "},
          {"type": "input_json_delta", "partial_json": "\"Paris\"}"}]),
        ({"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}}, []),
        stop="tool_use")
    doc = normalize_stream(text)
    assert doc["reasoning"] == "Two calls." and doc["content"] == "On it."
    assert calls_of(doc) == [("get_weather", {"city": "Paris"}), ("get_time", {})]
    assert doc["tool_calls"][0]["arguments_raw"] == '{"city":"Paris"}'
    assert doc["stop_reason"] == "tool_calls" and doc["usage"] == {"input_tokens": 21, "output_tokens": 13}


def test_stream_equals_the_non_streamed_document():
    text = _stream(({"type": "text", "text": ""}, [{"type": "text_delta", "text": "Four."}]))
    whole = _message([{"type": "text", "text": "Four."}], usage={"input_tokens": 21, "output_tokens": 13})
    assert normalize_stream(text) == normalize(whole)


def test_stream_server_tool_use():
    text = _stream(({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
                    [{"type": "input_json_delta", "partial_json": "{\"query\": \"x\"}"}]),
                   ({"type": "text", "text": ""}, [{"type": "text_delta", "text": "Found."}]))
    doc = normalize_stream(text)
    assert doc["tool_calls"] == [] and doc["server_tool_calls"] == [{"name": "web_search", "arguments": {"query": "x"}}]


def test_cut_stream_and_unclosed_arguments():
    cut = _stream(({"type": "text", "text": ""}, [{"type": "text_delta", "text": "Hi"}]), end=False)
    doc = normalize_stream(cut)
    assert doc["success"] is False and doc["error"]["type"] == "stream_incomplete"
    unclosed = _stream(({"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
                        [{"type": "input_json_delta", "partial_json": "{\"a\": [1, "}]), stop="tool_use")
    call = normalize_stream(unclosed, "anthropic")["tool_calls"][0]
    assert call["arguments"] == "{\"a\": [1, " and call["arguments_raw"] == "{\"a\": [1, "


def test_error_event_in_a_stream_and_error_bodies():
    head = _stream(({"type": "text", "text": ""}, [{"type": "text_delta", "text": "Hi"}]), end=False)
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    doc = normalize_stream(head + sse(error, named=True))
    assert doc["error"] == {"type": "overloaded_error", "status": None, "message": "Overloaded"}
    body = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"},
            "request_id": "req_1"}
    doc = normalize(body, status=401)
    assert doc["success"] is False
    assert doc["error"] == {"type": "authentication_error", "status": 401, "message": "invalid x-api-key"}


NEUTRAL = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 512,
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "toolu_1", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
            {"id": "toolu_2", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\":\"Rome\"}"}}]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "toolu_2", "content": "rainy"},
        {"role": "user", "content": "Thanks. And this picture?"},
        {"role": "assistant", "content": "A cat."},
        {"role": "user", "content": [{"type": "text", "text": "Sure?"},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}}]},
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
                                                "parameters": {"type": "object",
                                                               "properties": {"city": {"type": "string"}}}}}],
    "tool_choice": "required",
    "parallel_tool_calls": False,
    "stop": ["END"],
    "temperature": 0.5,
}


def test_request_round_trip():
    body = from_neutral(NEUTRAL, "anthropic")
    assert body["system"] == "Be brief." and body["stop_sequences"] == ["END"]
    assert body["tools"] == [{"name": "get_weather", "description": "Weather",
                              "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    assert body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    turn = body["messages"][2]["content"]
    assert [b["type"] for b in turn] == ["tool_result", "tool_result", "text"]
    assert body["messages"][1]["content"][1]["input"] == {"city": "Paris"}
    assert body["messages"][4]["content"][1]["source"] == {"type": "base64", "media_type": "image/png",
                                                           "data": "iVBOR"}
    assert to_neutral(body) == ("anthropic", NEUTRAL)


def test_request_with_thinking_blocks_keeps_them():
    request = {"model": "claude-sonnet-4-5", "max_tokens": 100, "thinking": {"type": "enabled", "budget_tokens": 50},
               "system": [{"type": "text", "text": "Sys"}],
               "messages": [{"role": "user", "content": "hi"},
                            {"role": "assistant", "content": [
                                {"type": "thinking", "thinking": "hmm", "signature": "s"},
                                {"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
                            {"role": "user", "content": [
                                {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]}
    name, neutral = to_neutral(request)
    assert name == "anthropic"
    assert neutral["messages"][0] == {"role": "system", "content": "Sys"}
    assert neutral["messages"][2]["tool_calls"][0]["function"] == {"name": "f", "arguments": "{}"}
    assert neutral["messages"][3] == {"role": "tool", "tool_call_id": "t1", "content": "ok"}
    again = from_neutral(neutral, "anthropic")
    assert again["messages"][1]["content"][0]["type"] == "thinking"
    assert again["thinking"] == request["thinking"]
