"""Every supported payload normalizes to the one response document."""
from __future__ import annotations

import json

import pytest
from builders import strict_and_fast
from hypothesis import example, given, settings
from hypothesis import strategies as st
from properties import examples

from replayci.formats import NormalizeError, normalize, request_format
from replayci.formats._common import loads


def test_canonical():
    doc = normalize({"success": True, "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]})
    assert doc == {"success": True, "tool_calls": [{"id": "call_1", "name": "f", "arguments": {"a": 1},
                   "arguments_raw": "{\"a\": 1}"}], "content": None, "stop_reason": "tool_calls",
                   "usage": None, "error": None, "server_tool_calls": [], "reasoning": None, "refusal": None,
                   "model": None}


def test_openai_chat_completion():
    doc = normalize({"id": "chatcmpl-1", "object": "chat.completion", "choices": [{
        "index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None,
        "tool_calls": [{"id": "call_x", "type": "function",
                        "function": {"name": "get_weather", "arguments": "{\"location\":\"Paris\"}"}}]}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21}})
    assert doc["tool_calls"][0] == {"id": "call_x", "name": "get_weather", "arguments": {"location": "Paris"},
                                    "arguments_raw": "{\"location\":\"Paris\"}"}
    assert doc["usage"] == {"input_tokens": 12, "output_tokens": 9}
    assert doc["stop_reason"] == "tool_calls"


def test_openai_legacy_function_call():
    doc = normalize({"choices": [{"finish_reason": "function_call", "message": {
        "role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}}}]})
    assert doc["tool_calls"][0]["name"] == "f" and doc["tool_calls"][0]["arguments"] == {}
    assert doc["stop_reason"] == "tool_calls"


def test_anthropic_message():
    doc = normalize({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
                     "content": [{"type": "text", "text": "Let me check."},
                                 {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                  "input": {"location": "Paris", "unit": "celsius"}}],
                     "stop_reason": "tool_use", "usage": {"input_tokens": 20, "output_tokens": 7}})
    call = doc["tool_calls"][0]
    assert call["arguments"] == {"location": "Paris", "unit": "celsius"}
    assert call["arguments_raw"] == '{"location":"Paris","unit":"celsius"}'
    assert doc["content"] == "Let me check."
    assert doc["stop_reason"] == "tool_calls"
    assert doc["usage"] == {"input_tokens": 20, "output_tokens": 7}


@pytest.mark.parametrize("reason, expected", [("end_turn", "stop"), ("stop_sequence", "stop"),
                                              ("max_tokens", "length"), ("tool_use", "tool_calls")])
def test_anthropic_stop_reasons(reason, expected):
    doc = normalize({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "x"}],
                     "stop_reason": reason})
    assert doc["stop_reason"] == expected


def test_error_documents():
    doc = normalize({"success": False, "error": {"type": "rate_limit_error", "status": 429, "message": "slow"}})
    assert doc["success"] is False and doc["error"] == {"type": "rate_limit_error", "status": 429, "message": "slow"}
    doc = normalize({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    assert doc["success"] is False and doc["error"]["type"] == "overloaded_error"


def test_unparseable_arguments_keep_the_raw_string():
    doc = normalize({"success": True, "tool_calls": [{"id": "1", "function": {"name": "f", "arguments": "{oops"}}]})
    assert doc["tool_calls"][0]["arguments"] == "{oops"
    assert doc["tool_calls"][0]["arguments_raw"] == "{oops"


def test_unknown_shape_is_refused():
    with pytest.raises(NormalizeError, match="unknown response shape"):
        normalize({"answer": 42})
    with pytest.raises(NormalizeError):
        normalize([1, 2])


# Keys a canonical response has and keys other formats (and refusals) look at.
_KEYS = ("success", "tool_calls", "content", "stop_reason", "usage", "reasoning", "refusal", "model",
         "server_tool_calls", "function_call", "error", "type", "object", "role", "choices", "output",
         "status", "candidates", "message", "done", "stopReason", "completion", "meta", "generation_id",
         "response", "created_at", "__type")
_VALUES = st.sampled_from([True, False, None, "", "x", "message", "response", "error", "completed",
                           "end_turn", [], [{"type": "text", "text": "hi"}], {"billed_units": {}},
                           {"input_tokens": 3, "output_tokens": 4}, {"message": {}},
                           [{"id": "c", "function": {"name": "f", "arguments": "{\"a\": 1}"}}],
                           [{"name": "f", "arguments": {"a": 1}}], {"name": "f", "arguments": "{}"}])


def _outcome(payload):
    try:
        return normalize(payload)
    except (NormalizeError, AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
        return type(exc), str(exc)


_PAYLOADS = st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=6)


@examples(400)
def test_a_canonical_response_known_by_its_keys_normalizes_as_detection_does(examples):
    """The fast path that names a canonical response by its keys gives what detection gives."""
    @settings(max_examples=examples, deadline=None)
    @example({"usage": {"billed_units": {}}, "content": "x"})
    @example({"object": "response", "output": [{"type": "message", "content": []}], "status": "completed"})
    @example({"type": "message", "content": "x", "role": "assistant", "stop_reason": "end_turn"})
    @example({"content": [{"type": "text", "text": "hi"}], "role": "x"})
    @example({"message": {"content": "x"}, "done": True})
    @example({"stop_reason": "x", "completion": "y"})
    @example({"choices": [], "content": "x"})
    @given(_PAYLOADS)
    def same(payload):
        for doc in (payload, {**payload, "success": True}):
            strict, fast = strict_and_fast(lambda: _outcome(doc))  # noqa: B023 (called at once)
            assert fast == strict

    same()


# A plain chat-completions request, and changes that each make some form's detection look twice.
_CHAT = {"model": "m", "tool_choice": "auto", "tools": [{"type": "function", "function": {"name": "f"}}],
         "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                      {"role": "assistant", "content": None,
                       "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                      {"role": "tool", "tool_call_id": "1", "content": "r"}]}
_VALUES = ["auto", {"type": "auto"}, 1, None, [], [{}], {}, [{"type": "text", "text": "x"}], [{"text": "x"}],
           [{"type": "image", "source": {}}], [{"function": {"arguments": {}}}], [3],
           {"name": "f", "input_schema": {}}, {"name": "f", "parameters": {}}, {"type": "function", "input_schema": {}}]
_KEYS = ("temperature", "stream", "tool_choice", "input", "instructions", "contents", "system", "toolConfig",
         "options", "format", "thinking", "top_k", "tools", "messages")


def _change(request: dict, change: tuple) -> None:
    kind, key, value = change
    messages = request["messages"] if isinstance(request.get("messages"), list) else []
    if kind == "request":
        request[key] = value
    elif kind == "anthropic-like":  # no system or tool turns, no tool calls: Anthropic's form is possible
        request["messages"] = [{k: v for k, v in m.items() if k != "tool_calls"} for m in messages
                               if isinstance(m, dict) and m.get("role") in ("user", "assistant")]
    elif kind == "tool" and isinstance(request.get("tools"), list) and request["tools"]:
        request["tools"][0] = value
    elif messages and isinstance(messages[-1], dict):
        messages[-1][{"content": "content", "message": key}.get(kind, kind)] = value


_CHANGES = st.tuples(st.sampled_from(["request", "anthropic-like", "tool", "content", "images", "tool_name",
                                      "tool_calls", "message"]),
                     st.sampled_from(_KEYS), st.sampled_from(_VALUES))


@examples(500)
def test_a_chat_request_known_by_its_shape_gets_the_form_detection_gives(examples):
    """The fast path that names a plain chat-completions request gives what detection gives."""
    @settings(max_examples=examples, deadline=None)
    @example([("anthropic-like", "", None), ("tool", "", {"type": "function", "input_schema": {}})])
    @example([("anthropic-like", "", None), ("tool", "", {"name": "f", "parameters": {}})])
    @example([("anthropic-like", "", None), ("request", "tool_choice", {"type": "auto"})])
    @example([("anthropic-like", "", None), ("content", "", [{"type": "image", "source": {}}])])
    @example([("request", "system", [{}])])
    @given(st.lists(_CHANGES, max_size=3))
    def same(changes):
        request = json.loads(json.dumps(_CHAT))
        for change in changes:
            _change(request, change)
        strict, fast = strict_and_fast(lambda: request_format(request))
        assert fast == strict

    same()


def _loaded(loader, text):
    try:
        return "ok", loader(text)
    except (ValueError, RecursionError) as exc:
        return type(exc), str(exc)


_ARGUMENT_TEXTS = st.one_of(
    st.text(alphabet=" \n{}[]\",:0123456789.-eEtruefalsnNI\\", max_size=14),
    st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
                 lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
                 max_leaves=8).map(json.dumps).flatmap(
                     lambda t: st.sampled_from([t, " " + t, t + "\n", t + "x", t[:-1]])))


@examples(300)
def test_arguments_text_parses_as_json_loads_parses_it(examples):
    """Arguments read by the scanner straight away give json.loads' value, or its error."""
    @settings(max_examples=examples, deadline=None)
    @example("{\"a\": [1, 2.5, null]}")
    @example(" {\"a\": 1} ")
    @example("{\"a\": 1} x")
    @example("[1] [2]")
    @example("")
    @example("NaN")
    @example("\"\\ud800\"")
    @given(_ARGUMENT_TEXTS)
    def same(text):
        assert _loaded(loads, text) == _loaded(json.loads, text)

    same()
