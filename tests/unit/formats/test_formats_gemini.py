"""Gemini generateContent: candidates and parts, SSE and JSON-array streams, requests."""
from __future__ import annotations

import json

import pytest
from formats_support import calls_of, sse

from replayci.formats import from_neutral, normalize, normalize_stream, to_neutral
from replayci.formats.gemini import lower_schema, upper_schema

USAGE = {"promptTokenCount": 63, "candidatesTokenCount": 6, "totalTokenCount": 69}


def _response(parts: list, finish: str | None = "STOP", usage: dict | None = USAGE) -> dict:
    candidate = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    body = {"candidates": [candidate], "modelVersion": "gemini-2.5-flash", "responseId": "r1"}
    if usage is not None:
        body["usageMetadata"] = usage
    return body


def test_function_calls():
    doc = normalize(_response([{"functionCall": {"name": "get_weather", "args": {"location": "Boston"}}},
                               {"functionCall": {"name": "get_weather", "args": {"location": "New Delhi"},
                                                 "id": "fc_2"}},
                               {"functionCall": {"name": "pelican_name_generator"}}]))
    assert calls_of(doc) == [("get_weather", {"location": "Boston"}), ("get_weather", {"location": "New Delhi"}),
                             ("pelican_name_generator", {})]
    assert [c["id"] for c in doc["tool_calls"]] == ["call_1", "fc_2", "call_3"]
    assert doc["tool_calls"][0]["arguments_raw"] == '{"location":"Boston"}'
    assert doc["tool_calls"][2]["arguments_raw"] == ""
    assert doc["stop_reason"] == "tool_calls" and doc["content"] is None
    assert doc["usage"] == {"input_tokens": 63, "output_tokens": 6} and doc["model"] == "gemini-2.5-flash"


def test_thoughts_and_code_execution():
    usage = {**USAGE, "thoughtsTokenCount": 10}
    doc = normalize(_response([
        {"text": "**Planning**", "thought": True},
        {"text": "Here is the code:\n"},
        {"executableCode": {"language": "PYTHON", "code": "print(2 + 2)"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "4\n"}},
        {"text": "The answer is 4.", "thoughtSignature": "c2ln"}], usage=usage))
    assert doc["content"] == "Here is the code:\nThe answer is 4." and doc["reasoning"] == "**Planning**"
    assert doc["server_tool_calls"] == [{"name": "code_execution",
                                         "arguments": {"language": "PYTHON", "code": "print(2 + 2)"}}]
    assert doc["tool_calls"] == [] and doc["usage"] == {"input_tokens": 63, "output_tokens": 16}


@pytest.mark.parametrize("reason, expected", [("STOP", "stop"), ("MAX_TOKENS", "length"), ("SAFETY", "content_filter"),
                                              ("RECITATION", "content_filter"), (2, "length"),
                                              ("MALFORMED_FUNCTION_CALL", "malformed_function_call")])
def test_finish_reasons(reason, expected):
    assert normalize(_response([{"text": "x"}], reason))["stop_reason"] == expected


def test_blocked_prompt():
    doc = normalize({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": USAGE})
    assert doc["success"] and doc["content"] is None and doc["stop_reason"] == "content_filter"


def test_sse_stream():
    text = sse(_response([{"text": "The weather"}], None),
               _response([{"text": " is fine."}], None),
               _response([{"functionCall": {"name": "log", "args": {"level": "info"}}}], "STOP"))
    text = text.replace("\n", "\r\n")
    doc = normalize_stream(text)
    assert doc["content"] == "The weather is fine." and calls_of(doc) == [("log", {"level": "info"})]
    assert doc["stop_reason"] == "tool_calls"
    whole = _response([{"text": "The weather is fine."}, {"functionCall": {"name": "log", "args": {"level": "info"}}}])
    assert doc == normalize(whole)


def test_json_array_stream():
    chunks = [_response([{"text": "Thinking", "thought": True}], None), _response([{"text": "4"}], "STOP")]
    text = "[" + ",\r\n".join(json.dumps(c, indent=2) for c in chunks) + "]"
    doc = normalize_stream(text)
    assert doc["content"] == "4" and doc["reasoning"] == "Thinking"
    assert normalize_stream(chunks, "gemini") == doc  # an already-parsed array


def test_cut_streams():
    sse_cut = sse(_response([{"text": "The weather"}], None))
    assert normalize_stream(sse_cut)["error"]["type"] == "stream_incomplete"
    chunks = [_response([{"text": "a"}], None), _response([{"text": "b"}], "STOP")]
    array = json.dumps(chunks)
    doc = normalize_stream(array[: len(array) // 2 + 40])
    assert doc["success"] is False and doc["error"]["type"] == "stream_incomplete"


def test_error_bodies():
    body = {"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                      "status": "INVALID_ARGUMENT", "details": []}}
    doc = normalize(body)
    assert doc["error"] == {"type": "INVALID_ARGUMENT", "status": 400,
                            "message": "API key not valid. Please pass a valid API key."}
    assert normalize(body, status=400)["error"]["status"] == 400
    in_stream = sse(_response([{"text": "a"}], None), {"error": {"code": 503, "status": "UNAVAILABLE",
                                                                  "message": "overloaded"}})
    assert normalize_stream(in_stream)["error"]["type"] == "UNAVAILABLE"


def test_schema_case():
    sdk = {"type": "OBJECT", "properties": {"type": {"type": "STRING", "enum": ["A", "B"]},
                                            "tags": {"type": "ARRAY", "items": {"type": "STRING"}}},
           "required": ["type"]}
    lower = lower_schema(sdk)
    assert lower == {"type": "object", "properties": {"type": {"type": "string", "enum": ["A", "B"]},
                                                      "tags": {"type": "array", "items": {"type": "string"}}},
                     "required": ["type"]}
    assert upper_schema(lower) == sdk


def test_sdk_request_to_neutral():
    request = {
        "contents": [{"parts": [{"text": "Weather in Boston?"}], "role": "user"},
                     {"parts": [{"functionCall": {"args": {"location": "Boston, MA"}, "name": "get_current_weather"}}],
                      "role": "model"},
                     {"parts": [{"functionResponse": {"name": "get_current_weather", "response": {"result": "rainy"}}}],
                      "role": "user"}],
        "systemInstruction": {"parts": [{"text": "Be helpful."}], "role": "user"},
        "tools": [{"functionDeclarations": [{"description": "Returns the current weather.",
                                             "name": "get_current_weather",
                                             "parameters": {"properties": {"location": {"type": "STRING"}},
                                                            "required": ["location"], "type": "OBJECT"}}]}],
        "generationConfig": {"temperature": 0, "maxOutputTokens": 64},
    }
    name, neutral = to_neutral(request)
    assert name == "gemini"
    assert neutral["messages"] == [
        {"role": "system", "content": "Be helpful."},
        {"role": "user", "content": "Weather in Boston?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_current_weather", "arguments": '{"location":"Boston, MA"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "rainy"},
    ]
    assert neutral["tools"][0]["function"]["parameters"] == {
        "properties": {"location": {"type": "string"}}, "required": ["location"], "type": "object"}
    assert neutral["temperature"] == 0 and neutral["max_tokens"] == 64


NEUTRAL = {
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"sky\":\"clear\"}"},
        {"role": "assistant", "content": "Clear skies."},
        {"role": "user", "content": [{"type": "text", "text": "This?"},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}}]},
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
                                                "parameters": {"type": "object",
                                                               "properties": {"city": {"type": "string"}}}}}],
    "tool_choice": "required",
    "temperature": 0.1,
    "max_tokens": 64,
    "stop": ["END"],
}


def test_request_round_trip():
    body = from_neutral(NEUTRAL, "gemini")
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["tools"] == [{"functionDeclarations": [
        {"name": "get_weather", "description": "Weather",
         "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}}}]}]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    assert body["generationConfig"] == {"temperature": 0.1, "maxOutputTokens": 64, "stopSequences": ["END"]}
    assert body["contents"][2] == {"role": "user", "parts": [
        {"functionResponse": {"name": "get_weather", "response": {"sky": "clear"}, "id": "call_1"}}]}
    assert body["contents"][4]["parts"][1] == {"inlineData": {"mimeType": "image/png", "data": "iVBOR"}}
    assert to_neutral(body) == ("gemini", NEUTRAL)


def test_thought_signatures_survive_the_neutral_form():
    request = {"contents": [
        {"role": "user", "parts": [{"text": "Two names for a pelican"}]},
        {"role": "model", "parts": [{"function_call": {"name": "namer", "args": {}, "id": "c1"},
                                     "thoughtSignature": "c2ln"}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "namer", "id": "c1",
                                                         "response": {"output": "Charles"}}}]}]}
    name, neutral = to_neutral(request)
    call = neutral["messages"][1]["tool_calls"][0]
    assert call["extra_content"] == {"google": {"thought_signature": "c2ln"}}
    assert neutral["messages"][2] == {"role": "tool", "tool_call_id": "c1", "content": '{"output":"Charles"}'}
    body = from_neutral(neutral, name)
    assert body["contents"][1]["parts"][0] == {"functionCall": {"name": "namer", "args": {}, "id": "c1"},
                                               "thoughtSignature": "c2ln"}
