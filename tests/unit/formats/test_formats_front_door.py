"""The front door: detection, refusals, canonical documents, error shapes, stream framing."""
from __future__ import annotations

import pytest
from formats_support import sse

from replayci.formats import (
    FORMATS,
    NormalizeError,
    TranslationError,
    canonical_json,
    detect_format,
    from_neutral,
    normalize,
    normalize_stream,
    provider_failure,
    read_stream_twice,
    to_neutral,
)

KEYS = ["success", "tool_calls", "content", "stop_reason", "usage", "error", "server_tool_calls", "reasoning",
        "refusal", "model"]


def test_canonical_document():
    doc = normalize({"success": True, "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]})
    assert doc == {"success": True, "tool_calls": [{"id": "call_1", "name": "f", "arguments": {"a": 1},
                   "arguments_raw": "{\"a\": 1}"}], "content": None, "stop_reason": "tool_calls",
                   "usage": None, "error": None, "server_tool_calls": [], "reasoning": None, "refusal": None,
                   "model": None}


def test_canonical_flat_calls_and_extras():
    doc = normalize({"tool_calls": [{"name": "f", "arguments": {"b": 2}}, {"name": "g", "arguments": None}],
                     "content": "x", "reasoning": "because", "server_tool_calls": [{"name": "web_search"}],
                     "usage": {"prompt_tokens": 1, "completion_tokens": 2}})
    assert [c["arguments_raw"] for c in doc["tool_calls"]] == ['{"b":2}', ""]
    assert [c["id"] for c in doc["tool_calls"]] == ["call_1", "call_2"]
    assert doc["tool_calls"][1]["arguments"] == {}
    assert doc["reasoning"] == "because" and doc["server_tool_calls"] == [{"name": "web_search", "arguments": {}}]
    assert doc["usage"] == {"input_tokens": 1, "output_tokens": 2}
    assert normalize({"content": "hi"})["stop_reason"] == "stop"
    assert normalize({"success": True, "content": None})["stop_reason"] is None


def test_unparseable_arguments_keep_the_raw_string():
    doc = normalize({"success": True, "tool_calls": [{"id": "1", "function": {"name": "f", "arguments": "{oops"}}]})
    assert doc["tool_calls"][0]["arguments"] == "{oops" and doc["tool_calls"][0]["arguments_raw"] == "{oops"


def test_error_documents():
    doc = normalize({"success": False, "error": {"type": "rate_limit_error", "status": 429, "message": "slow"}})
    assert doc["success"] is False and doc["error"] == {"type": "rate_limit_error", "status": 429, "message": "slow"}
    assert list(doc) == KEYS and doc["tool_calls"] == [] and doc["content"] is None
    doc = normalize({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    assert doc["success"] is False and doc["error"]["type"] == "overloaded_error"
    doc = normalize({"object": "error", "message": "bad model", "type": "NotFoundError", "param": None, "code": 404})
    assert doc["error"] == {"type": "NotFoundError", "status": 404, "message": "bad model"}


def test_an_http_failure_is_an_error_whatever_the_body():
    doc = normalize("<html>Bad Gateway</html>", status=502)
    assert doc["success"] is False and doc["error"] == {"type": "http_error", "status": 502,
                                                        "message": "<html>Bad Gateway</html>"}
    assert normalize(None, status=500)["error"]["message"] == "HTTP 500"
    assert normalize_stream("upstream timed out", status=504)["error"]["status"] == 504


def test_provider_failure():
    doc = provider_failure(503, "unavailable")
    assert doc["error"] == {"type": "provider_error", "status": 503, "message": "unavailable"}
    assert list(doc) == KEYS


def test_every_document_has_the_same_keys():
    bodies = [{"choices": [{"message": {"content": "x"}, "finish_reason": "stop"}]},
              {"type": "message", "content": [], "stop_reason": "end_turn"},
              {"object": "response", "status": "completed", "output": []},
              {"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": "STOP"}]},
              {"output": {"message": {"content": [{"text": "x"}]}}, "stopReason": "end_turn"},
              {"model": "m", "message": {"role": "assistant", "content": "x"}, "done": True},
              {"error": "x"}, {"content": "x"}]
    for body in bodies:
        assert list(normalize(body)) == KEYS, body
    assert sorted(detect_format(b) for b in bodies) == sorted(m.NAME for m in FORMATS)


def test_unknown_shapes_are_refused():
    with pytest.raises(NormalizeError, match="unknown response shape"):
        normalize({"answer": 42})
    with pytest.raises(NormalizeError):
        normalize([1, 2])
    with pytest.raises(NormalizeError, match="normalize_stream"):
        normalize("hello")
    with pytest.raises(NormalizeError, match="stream chunk"):
        normalize({"object": "chat.completion.chunk", "choices": [{"delta": {}, "index": 0}]})
    with pytest.raises(NormalizeError, match="no choices"):
        normalize({"object": "chat.completion", "choices": []})


@pytest.mark.parametrize("body, name", [
    ({"response_id": "r", "text": "Hi", "generation_id": "g", "chat_history": [], "finish_reason": "COMPLETE"},
     "Cohere"),
    ({"id": "c", "finish_reason": "COMPLETE",
      "message": {"role": "assistant", "content": [{"type": "text", "text": "Hi"}]},
      "usage": {"billed_units": {"input_tokens": 1}}}, "Cohere"),
    ({"object": "text_completion", "choices": [{"text": "Hi", "index": 0}]}, "text completion"),
])
def test_known_but_unsupported_apis_are_refused_by_name(body, name):
    with pytest.raises(NormalizeError, match=name):
        normalize(body)


def test_stream_framing_and_api_names():
    with pytest.raises(NormalizeError, match="unknown format"):
        normalize_stream("data: {}\n\n", "cohere")
    with pytest.raises(NormalizeError, match="framing"):
        normalize_stream("hello")
    with pytest.raises(NormalizeError, match="unknown stream"):
        normalize_stream(sse({"a": 1}, {"b": 2}))
    only_error = sse(("error", {"type": "error", "error": {"type": "api_error", "message": "x"}}))
    assert normalize_stream(only_error)["error"]["type"] == "api_error"
    assert normalize_stream('{"error": "boom"}')["error"]["message"] == "boom"
    body = '{"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]}'
    assert normalize_stream(body)["content"] == "hi"  # a non-streamed body handed over as a stream


def test_a_stream_recorded_as_one_body_is_reassembled():
    chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "hi"},
                                                             "finish_reason": "stop"}]}
    assert normalize(sse(chunk, done=True))["content"] == "hi"
    gemini = [{"candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}]
    assert normalize(gemini)["content"] == "hi"


_CHUNK = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "hi"},
                                                          "finish_reason": "stop"}]}


def _as_run(text, status=None, headers=None):
    try:
        return normalize(text, status=status, headers=headers)
    except NormalizeError:
        return None


@pytest.mark.parametrize(("text", "api", "status", "headers"), [
    (sse(_CHUNK, done=True), "openai-chat", 200, None),
    # An event only Anthropic's reader claims: the API named reads it as chat, a run (naming no
    # API, Anthropic asked first) as Anthropic's.
    (sse(_CHUNK, {"type": "message_stop"}, done=True), "openai-chat", 200, None),
    (sse(("error", {"type": "error", "error": {"type": "overloaded_error", "message": "x"}})), "anthropic", 529,
     None),
    (sse({"message": "slow down"}), "bedrock", 400, {"x-amzn-ErrorType": "ThrottlingException:http://x"}),
    ('{"model": "m", "message": {"role": "assistant", "content": "hi"}, "done": true}\n', "ollama", None, None),
], ids=["same-format", "formats-differ", "error-status", "typed-by-header", "ndjson"])
def test_a_stream_read_twice_is_read_as_each_reader_alone_reads_it(text, api, status, headers):
    as_api, as_run = read_stream_twice(text, api, status=status, headers=headers)
    assert as_api == normalize_stream(text, api, status=status)
    assert as_run == _as_run(text, status, headers)


def test_a_stream_read_twice_differs_where_the_named_api_decides():
    text = sse(_CHUNK, {"type": "message_stop"}, done=True)
    as_api, as_run = read_stream_twice(text, "openai-chat", status=200)
    assert as_api["content"] == "hi" and as_api != as_run  # the shortcut is taken only when both agree
    with pytest.raises(NormalizeError, match="framing"):
        read_stream_twice("hello", "openai-chat")


def test_errors_inside_choices_and_bare_http_bodies():
    body = {"id": "gen-1", "choices": [{"index": 0, "finish_reason": "error", "message": {"content": ""},
                                        "error": {"code": 502, "message": "upstream failed"}}]}
    assert normalize(body)["error"] == {"type": "error", "status": 502, "message": "upstream failed"}
    assert normalize({"message": "Internal server error"}, status=500)["error"]["message"] == "Internal server error"
    replicate = {"id": "p1", "status": "succeeded", "output": ["hi"], "input": {}}
    with pytest.raises(NormalizeError, match="unknown response shape"):
        normalize(replicate)


def test_request_errors():
    with pytest.raises(TranslationError, match="unknown request shape"):
        to_neutral({"prompt": "hi"})
    with pytest.raises(TranslationError, match="unknown format"):
        from_neutral({"messages": []}, "cohere")
    with pytest.raises(TranslationError, match="not valid JSON"):
        from_neutral({"messages": [{"role": "assistant", "tool_calls": [
            {"id": "1", "function": {"name": "f", "arguments": "{bad"}}]}]}, "anthropic")
    with pytest.raises(TranslationError, match="function tools only"):
        from_neutral({"messages": [], "tools": [{"type": "web_search"}]}, "bedrock")


def test_to_neutral_with_a_named_format():
    request = {"model": "claude-x", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    assert to_neutral(request)[0] == "openai-chat"
    assert to_neutral(request, "anthropic-messages")[0] == "anthropic"


def test_canonical_json_settings():
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'
    with pytest.raises(ValueError):
        canonical_json(float("nan"))
