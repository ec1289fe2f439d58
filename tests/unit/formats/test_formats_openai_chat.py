"""OpenAI chat completions (and compatible servers): responses, streams, errors, requests."""
from __future__ import annotations

import pytest
from formats_support import calls_of, sse

from replayci.formats import NormalizeError, from_neutral, normalize, normalize_stream, to_neutral


def _completion(message: dict, finish: str | None = "stop", **extra) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-2024-08-06",
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "logprobs": None,
                         "finish_reason": finish}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21}, **extra}


def _chunk(delta: dict, finish: str | None = None, **extra) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}], **extra}


def test_tool_call_document():
    doc = normalize(_completion({"content": None, "refusal": None, "tool_calls": [
        {"id": "call_x", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"location\":\"Paris\"}"}}]}, "tool_calls"))
    assert doc == {
        "success": True,
        "tool_calls": [{"id": "call_x", "name": "get_weather", "arguments": {"location": "Paris"},
                        "arguments_raw": "{\"location\":\"Paris\"}"}],
        "content": None, "stop_reason": "tool_calls", "usage": {"input_tokens": 12, "output_tokens": 9},
        "error": None, "server_tool_calls": [], "reasoning": None, "refusal": None,
        "model": "gpt-4o-2024-08-06",
    }


def test_list_content_parts_are_joined():
    doc = normalize(_completion({"content": [{"type": "text", "text": "Hello, "},
                                             {"type": "text", "text": "world"}]}))
    assert doc["content"] == "Hello, world" and doc["stop_reason"] == "stop"


def test_refusal_is_the_content_too():
    doc = normalize(_completion({"content": None, "refusal": "I can't help with that."}))
    assert doc["content"] == "I can't help with that." and doc["refusal"] == "I can't help with that."


def test_reasoning_content_stays_out_of_content():
    doc = normalize(_completion({"content": "42", "reasoning_content": "Let me think."}))
    assert doc["content"] == "42" and doc["reasoning"] == "Let me think."


def test_legacy_function_call():
    doc = normalize(_completion({"content": None, "function_call": {"name": "f", "arguments": "{}"}},
                                "function_call"))
    assert calls_of(doc) == [("f", {})] and doc["stop_reason"] == "tool_calls"


def test_legacy_function_call_with_empty_name_is_no_call():
    doc = normalize(_completion({"content": "hi", "function_call": {"name": "", "arguments": ""}}))
    assert doc["tool_calls"] == [] and doc["content"] == "hi" and doc["stop_reason"] == "stop"


@pytest.mark.parametrize("arguments", [None, "", "MISSING"])
def test_no_arguments_are_an_empty_object(arguments):
    function = {"name": "ping"} if arguments == "MISSING" else {"name": "ping", "arguments": arguments}
    doc = normalize(_completion({"tool_calls": [{"id": "c1", "type": "function", "function": function}]},
                                "tool_calls"))
    assert doc["tool_calls"][0]["arguments"] == {} and doc["tool_calls"][0]["arguments_raw"] == ""


def test_object_and_unparseable_arguments():
    doc = normalize(_completion({"tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "a", "arguments": {"b": 1, "a": [2]}}},
        {"id": "c2", "type": "function", "function": {"name": "b", "arguments": "{\"x\": "}}]}, "tool_calls"))
    first, second = doc["tool_calls"]
    assert first["arguments"] == {"b": 1, "a": [2]} and first["arguments_raw"] == '{"a":[2],"b":1}'
    assert second["arguments"] == "{\"x\": " and second["arguments_raw"] == "{\"x\": "


def test_client_calls_make_the_stop_reason_tool_calls():
    # Some compatible servers say "stop" next to tool calls.
    doc = normalize(_completion({"content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, "stop"))
    assert doc["stop_reason"] == "tool_calls" and doc["content"] is None


def test_custom_tool_call():
    doc = normalize(_completion({"tool_calls": [
        {"id": "c1", "type": "custom", "custom": {"name": "run_sql", "input": "SELECT 1"}}]}, "tool_calls"))
    assert calls_of(doc) == [("run_sql", "SELECT 1")]


def test_stream_reassembles_text_and_parallel_calls():
    text = sse(
        _chunk({"role": "assistant", "content": "", "refusal": None}),
        _chunk({"content": "Checking"}),
        _chunk({"content": " both."}),
        _chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                                "function": {"name": "get_weather", "arguments": ""}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\": "}}]}),
        _chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                                "function": {"name": "get_time", "arguments": "{}"}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "\"Paris\"}"}}]}),
        _chunk({}, "tool_calls"),
        {**_chunk({}), "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 7}},
        done=True,
    )
    doc = normalize_stream(text)
    assert doc["success"] and doc["content"] == "Checking both."
    assert calls_of(doc) == [("get_weather", {"city": "Paris"}), ("get_time", {})]
    assert [c["id"] for c in doc["tool_calls"]] == ["call_a", "call_b"]
    assert doc["stop_reason"] == "tool_calls" and doc["usage"] == {"input_tokens": 5, "output_tokens": 7}
    assert doc["model"] == "gpt-4o-mini"


def test_stream_gives_the_non_streamed_document():
    stream = sse(_chunk({"role": "assistant", "content": "Hi"}), _chunk({}, "stop"), done=True)
    whole = _completion({"content": "Hi"}, model="gpt-4o-mini")
    whole.pop("usage")
    assert normalize_stream(stream) == normalize(whole)


def test_stream_refusal_and_repeated_names():
    refusal = sse(_chunk({"role": "assistant", "content": None, "refusal": ""}),
                  _chunk({"refusal": "I'm sorry"}), _chunk({}, "stop"), done=True)
    doc = normalize_stream(refusal)
    assert doc["content"] == doc["refusal"] == "I'm sorry"
    # Some servers repeat the name (and id) on every delta of a call.
    repeated = sse(*[_chunk({"tool_calls": [{"index": 0, "id": "0", "type": "function",
                                             "function": {"name": "llm_version", "arguments": a}}]})
                     for a in ("", "{}")], _chunk({}, "tool_calls"), done=True)
    assert calls_of(normalize_stream(repeated, "openai-chat")) == [("llm_version", {})]


def test_cut_stream_is_incomplete():
    text = sse(_chunk({"role": "assistant", "content": "Hel"}), _chunk({"content": "lo"}))
    doc = normalize_stream(text)
    assert doc["success"] is False and doc["error"]["type"] == "stream_incomplete"
    half = sse(_chunk({"content": "Hel"}), done=True)[:-25]
    assert normalize_stream(half)["error"]["type"] == "stream_incomplete"


def test_unclosed_arguments_in_a_finished_stream_stay_raw():
    text = sse(_chunk({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                       "function": {"name": "f", "arguments": "{\"a\": 1"}}]}),
               _chunk({}, "tool_calls"), done=True)
    call = normalize_stream(text)["tool_calls"][0]
    assert call["arguments"] == "{\"a\": 1" and call["arguments_raw"] == "{\"a\": 1"


def test_error_event_in_a_stream():
    text = sse(_chunk({"content": "Hi"}), {"error": {"message": "overloaded", "type": "server_error",
                                                      "code": None}})
    doc = normalize_stream(text)
    assert doc["success"] is False and doc["error"] == {"type": "server_error", "status": None,
                                                        "message": "overloaded"}


def test_error_bodies():
    body = {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                      "param": None, "code": "invalid_api_key"}}
    doc = normalize(body, status=401)
    assert doc["success"] is False
    assert doc["error"] == {"type": "invalid_request_error", "status": 401, "message": "Incorrect API key provided"}
    assert normalize({"error": "model not loaded"})["error"]["message"] == "model not loaded"


def test_legacy_text_completion_is_refused():
    body = {"id": "cmpl-1", "object": "text_completion", "model": "gpt-3.5-turbo-instruct",
            "choices": [{"text": "Hello", "index": 0, "logprobs": None, "finish_reason": "stop"}]}
    with pytest.raises(NormalizeError, match="text completion"):
        normalize(body)
    body.pop("object")
    with pytest.raises(NormalizeError, match="text completion"):
        normalize(body)


def test_request_is_already_neutral():
    request = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}],
               "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]}
    name, neutral = to_neutral(request)
    assert name == "openai-chat" and neutral == request and neutral is not request
    assert to_neutral(from_neutral(neutral, "openai-chat")) == ("openai-chat", request)
