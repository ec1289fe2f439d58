"""OpenAI Responses API: output items, `response.*` streams, errors, `input` requests."""
from __future__ import annotations

import copy

from formats_support import calls_of, sse

from replayci.formats import from_neutral, normalize, normalize_stream, to_neutral

USAGE = {"input_tokens": 36, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 54,
         "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 90}


def _response(output: list, status: str = "completed", **extra) -> dict:
    return {"id": "resp_1", "object": "response", "created_at": 1, "status": status, "error": None,
            "incomplete_details": None, "instructions": None, "model": "gpt-4o-2024-08-06",
            "output": output, "parallel_tool_calls": True, "tools": [], "usage": USAGE, **extra}


def _message(*parts: dict) -> dict:
    return {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": list(parts)}


def _text(text: str) -> dict:
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}


def _fc(name: str, arguments: str, call_id: str = "call_1") -> dict:
    return {"id": "fc_" + call_id, "type": "function_call", "status": "completed", "arguments": arguments,
            "call_id": call_id, "name": name}


def test_function_calls_and_text():
    doc = normalize(_response([_fc("get_temperature", "{\"location\":\"SF\"}", "call_a"),
                               _fc("get_humidity", "{\"location\":\"SF\"}", "call_b")]))
    assert calls_of(doc) == [("get_temperature", {"location": "SF"}), ("get_humidity", {"location": "SF"})]
    assert [c["id"] for c in doc["tool_calls"]] == ["call_a", "call_b"]
    assert doc["stop_reason"] == "tool_calls" and doc["usage"] == {"input_tokens": 36, "output_tokens": 54}
    assert doc["content"] is None and doc["model"] == "gpt-4o-2024-08-06"


def test_reasoning_server_tools_and_message():
    output = [
        {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "Look it up."}]},
        {"id": "ws_1", "type": "web_search_call", "status": "completed",
         "action": {"type": "search", "query": "whale news"}},
        {"id": "fs_1", "type": "file_search_call", "status": "completed", "queries": ["q"], "results": None},
        {"id": "mcp_1", "type": "mcp_call", "name": "roll", "arguments": "{\"sides\": 6}", "server_label": "dice",
         "output": "4", "error": None},
        {"id": "ci_1", "type": "code_interpreter_call", "code": "print(1)", "container_id": "c", "outputs": None,
         "status": "completed"},
        _message(_text("Whales are "), _text("back.")),
    ]
    doc = normalize(_response(output))
    assert doc["tool_calls"] == [] and doc["content"] == "Whales are back."
    assert doc["reasoning"] == "Look it up." and doc["stop_reason"] == "stop"
    assert doc["server_tool_calls"] == [
        {"name": "web_search", "arguments": {"type": "search", "query": "whale news"}},
        {"name": "file_search", "arguments": {"queries": ["q"]}},
        {"name": "roll", "arguments": {"sides": 6}},
        {"name": "code_interpreter", "arguments": {"code": "print(1)"}},
    ]


def test_refusal_part():
    doc = normalize(_response([_message({"type": "refusal", "refusal": "I'm sorry, I can't help."})]))
    assert doc["content"] == doc["refusal"] == "I'm sorry, I can't help."


def test_incomplete_is_length():
    doc = normalize(_response([_message(_text("1. Alabama"))], "incomplete",
                              incomplete_details={"reason": "max_output_tokens"}))
    assert doc["stop_reason"] == "length" and doc["content"] == "1. Alabama"
    doc = normalize(_response([], "incomplete", incomplete_details={"reason": "content_filter"}))
    assert doc["stop_reason"] == "content_filter"


def test_custom_tool_call_and_empty_arguments():
    doc = normalize(_response([
        {"id": "ctc_1", "type": "custom_tool_call", "call_id": "call_c", "name": "shell", "input": "ls -la"},
        _fc("random_number", "", "call_d")]))
    assert calls_of(doc) == [("shell", "ls -la"), ("random_number", {})]
    assert doc["tool_calls"][1]["arguments_raw"] == ""


def test_failed_response_is_an_error():
    doc = normalize(_response([], "failed", error={"code": "server_error", "message": "boom"}))
    assert doc["success"] is False and doc["error"] == {"type": "server_error", "status": None, "message": "boom"}


def _events(final: dict, *, with_output: bool = True) -> list:
    item = _fc("get_weather", "", "call_w")
    added = copy.deepcopy(item)
    added["status"] = "in_progress"
    done = _fc("get_weather", "{\"location\":\"Paris\"}", "call_w")
    created = {**final, "status": "in_progress", "output": [], "usage": None}
    last = final if with_output else {**final, "output": []}
    return [
        {"type": "response.created", "sequence_number": 0, "response": created},
        {"type": "response.in_progress", "sequence_number": 1, "response": created},
        {"type": "response.output_item.added", "sequence_number": 2, "output_index": 0, "item": added},
        {"type": "response.function_call_arguments.delta", "sequence_number": 3, "item_id": "fc_call_w",
         "output_index": 0, "delta": "{\"location\":"},
        {"type": "response.function_call_arguments.delta", "sequence_number": 4, "item_id": "fc_call_w",
         "output_index": 0, "delta": "\"Paris\"}"},
        {"type": "response.function_call_arguments.done", "sequence_number": 5, "item_id": "fc_call_w",
         "output_index": 0, "arguments": "{\"location\":\"Paris\"}"},
        {"type": "response.output_item.done", "sequence_number": 6, "output_index": 0, "item": done},
        {"type": "response.completed", "sequence_number": 7, "response": last},
    ]


def test_stream_reassembles_to_the_non_streamed_document():
    final = _response([_fc("get_weather", "{\"location\":\"Paris\"}", "call_w")])
    doc = normalize_stream(sse(*[(e["type"], e) for e in _events(final)]))
    assert doc == normalize(final)
    assert calls_of(doc) == [("get_weather", {"location": "Paris"})]


def test_stream_without_output_in_the_final_event_uses_the_items():
    final = _response([_fc("get_weather", "{\"location\":\"Paris\"}", "call_w")])
    doc = normalize_stream(sse(*_events(final, with_output=False)), "openai-responses")
    assert calls_of(doc) == [("get_weather", {"location": "Paris"})]


def test_stream_text_deltas_without_done_items():
    final = _response([], usage=None)
    events = [
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}},
        {"type": "response.content_part.added", "output_index": 0, "content_index": 0, "part": _text("")},
        {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Hel"},
        {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "lo"},
        {"type": "response.completed", "response": final},
    ]
    assert normalize_stream(sse(*events))["content"] == "Hello"


def test_cut_stream_and_error_events():
    final = _response([_fc("get_weather", "{\"location\":\"Paris\"}", "call_w")])
    cut = normalize_stream(sse(*_events(final)[:-1]))
    assert cut["success"] is False and cut["error"]["type"] == "stream_incomplete"
    error = {"type": "error", "sequence_number": 3, "code": "rate_limit_exceeded", "message": "Slow down",
             "param": None}
    doc = normalize_stream(sse(*_events(final)[:2], ("error", error)))
    assert doc["error"] == {"type": "rate_limit_exceeded", "status": None, "message": "Slow down"}
    failed = {"type": "response.failed", "response": _response([], "failed",
                                                               error={"code": "server_error", "message": "x"})}
    assert normalize_stream(sse(failed))["error"]["type"] == "server_error"


def test_error_body():
    body = {"error": {"message": "The requested model 'x' does not exist.", "type": "invalid_request_error",
                      "param": "model", "code": "model_not_found"}}
    doc = normalize(body, status=400)
    assert doc["error"] == {"type": "invalid_request_error", "status": 400,
                            "message": "The requested model 'x' does not exist."}


NEUTRAL = {
    "model": "gpt-4.1",
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "assistant", "content": "It is sunny."},
        {"role": "user", "content": [{"type": "text", "text": "And this?"},
                                     {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]},
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
                                                "parameters": {"type": "object",
                                                               "properties": {"city": {"type": "string"}}},
                                                "strict": True}},
              {"type": "web_search"}],
    "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
    "max_tokens": 100,
    "temperature": 0.2,
}


def test_request_round_trip():
    body = from_neutral(NEUTRAL, "openai-responses")
    assert body["instructions"] == "Be brief." and body["max_output_tokens"] == 100
    assert body["tools"][0] == {"type": "function", "name": "get_weather", "description": "Weather",
                                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                                "strict": True}
    assert body["tool_choice"] == {"type": "function", "name": "get_weather"}
    kinds = [item.get("type", item.get("role")) for item in body["input"]]
    assert kinds == ["user", "function_call", "function_call_output", "assistant", "user"]
    assert body["input"][4]["content"][1] == {"type": "input_image", "image_url": "https://x/y.png"}
    assert to_neutral(body) == ("openai-responses", NEUTRAL)


def test_request_with_string_input():
    name, neutral = to_neutral({"model": "gpt-5", "input": "Hi", "instructions": "Be nice.",
                                "reasoning": {"effort": "low"}})
    assert name == "openai-responses"
    assert neutral == {"model": "gpt-5", "reasoning": {"effort": "low"},
                       "messages": [{"role": "system", "content": "Be nice."}, {"role": "user", "content": "Hi"}]}


def test_items_only_responses_has_are_kept():
    request = {"model": "gpt-5", "store": False, "input": [
        {"role": "user", "content": "Look it up."},
        {"type": "reasoning", "id": "rs_1", "encrypted_content": "opaque", "summary": []},
        {"type": "function_call", "call_id": "call_1", "name": "db_lookup", "arguments": "{\"key\": \"start\"}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "7"}]}
    name, neutral = to_neutral(request)
    assert neutral["messages"][1] == request["input"][1]
    assert neutral["messages"][2]["tool_calls"][0]["function"]["name"] == "db_lookup"
    assert from_neutral(neutral, name)["input"] == request["input"]
