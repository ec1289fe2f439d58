"""Ollama's native /api/chat: object arguments, thinking, NDJSON streams."""
from __future__ import annotations

import pytest
from formats_support import calls_of, ndjson

from replayci.formats import NormalizeError, from_neutral, normalize, normalize_stream, to_neutral


def _line(message: dict, done: bool = False, **extra) -> dict:
    line = {"model": "qwen3:latest", "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": "", **message}, "done": done}
    if done:
        line.update({"done_reason": "stop", "total_duration": 1, "prompt_eval_count": 21, "eval_count": 9})
    return {**line, **extra}


def test_tool_calls_with_object_arguments():
    doc = normalize(_line({"thinking": "Use the tool.", "tool_calls": [
        {"id": "call_2k7", "function": {"index": 0, "name": "add_two_numbers", "arguments": {"a": 2, "b": 3}}}]},
        done=True))
    assert doc["tool_calls"] == [{"id": "call_2k7", "name": "add_two_numbers", "arguments": {"a": 2, "b": 3},
                                  "arguments_raw": '{"a":2,"b":3}'}]
    assert doc["content"] is None and doc["reasoning"] == "Use the tool."
    assert doc["stop_reason"] == "tool_calls" and doc["usage"] == {"input_tokens": 21, "output_tokens": 9}
    assert doc["model"] == "qwen3:latest"


def test_text_and_length():
    doc = normalize(_line({"content": "1\n2\n3"}, done=True, done_reason="length"))
    assert doc["content"] == "1\n2\n3" and doc["stop_reason"] == "length" and doc["tool_calls"] == []


def test_ndjson_stream():
    text = ndjson(_line({"content": "", "thinking": "Count"}), _line({"content": "1\n"}), _line({"content": "2"}),
                  _line({"tool_calls": [{"function": {"name": "done", "arguments": {}}}]}), _line({}, done=True))
    doc = normalize_stream(text)
    assert doc["content"] == "1\n2" and doc["reasoning"] == "Count" and calls_of(doc) == [("done", {})]
    assert doc["tool_calls"][0]["arguments_raw"] == "{}" and doc["stop_reason"] == "tool_calls"


def test_cut_streams():
    lines = ndjson(_line({"content": "1"}), _line({"content": "2"}))
    assert normalize_stream(lines)["error"]["type"] == "stream_incomplete"
    partial = ndjson(_line({"content": "1"}), _line({}, done=True))[:-20]
    assert normalize_stream(partial, "ollama")["error"]["type"] == "stream_incomplete"


def test_errors():
    doc = normalize({"error": "model 'nonexistent-model:latest' not found"}, status=404)
    assert doc["success"] is False
    assert doc["error"] == {"type": "error", "status": 404, "message": "model 'nonexistent-model:latest' not found"}
    in_stream = ndjson(_line({"content": "1"}), {"error": "an error was encountered while running the model"})
    assert normalize_stream(in_stream)["error"]["message"].startswith("an error was encountered")


def test_generate_body_is_refused():
    with pytest.raises(NormalizeError, match="/api/generate"):
        normalize({"model": "llama3", "created_at": "2026-01-01T00:00:00Z", "response": "Hi", "done": True})


NEUTRAL = {
    "model": "qwen3:latest",
    "stream": False,
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "2 + 3?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{\"a\":2,\"b\":3}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "5"},
        {"role": "assistant", "content": "5"},
    ],
    "tools": [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}],
    "temperature": 0,
    "max_tokens": 64,
    "seed": 42,
}


def test_request_round_trip():
    body = from_neutral(NEUTRAL, "ollama")
    assert body["options"] == {"temperature": 0, "num_predict": 64, "seed": 42}
    assert body["messages"][2]["tool_calls"] == [{"function": {"name": "add", "arguments": {"a": 2, "b": 3}},
                                                  "id": "call_1"}]
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "call_1", "content": "5", "tool_name": "add"}
    assert to_neutral(body) == ("ollama", NEUTRAL)


def test_native_request_without_ids():
    request = {"model": "qwen3", "messages": [
        {"role": "user", "content": "2 + 3?"},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "add", "arguments": {"a": 2}}}]},
        {"role": "tool", "tool_name": "add", "content": "5"}], "options": {"num_ctx": 4096}}
    name, neutral = to_neutral(request)
    assert name == "ollama" and neutral["options"] == {"num_ctx": 4096}
    assert neutral["messages"][1]["tool_calls"][0]["id"] == "call_1"
    assert neutral["messages"][2] == {"role": "tool", "content": "5", "tool_call_id": "call_1"}
