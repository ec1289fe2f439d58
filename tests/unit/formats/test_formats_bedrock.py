"""Bedrock Converse (and Converse-shaped InvokeModel bodies); other InvokeModel bodies refused."""
from __future__ import annotations

import pytest
from formats_support import calls_of, ndjson

from replayci.formats import NormalizeError, from_neutral, normalize, normalize_stream, to_neutral


def _converse(content: list, stop: str = "end_turn") -> dict:
    return {"metrics": {"latencyMs": 377}, "output": {"message": {"content": content, "role": "assistant"}},
            "stopReason": stop, "usage": {"inputTokens": 90, "outputTokens": 14, "totalTokens": 104}}


def test_tool_use_text_and_reasoning():
    doc = normalize(_converse([
        {"reasoningContent": {"reasoningText": {"text": "Need the tool.", "signature": "s"}}},
        {"text": "Let me look."},
        {"toolUse": {"input": {"sign": "Radio XYZ"}, "name": "top_song", "toolUseId": "tooluse_1"}}], "tool_use"))
    assert doc["tool_calls"] == [{"id": "tooluse_1", "name": "top_song", "arguments": {"sign": "Radio XYZ"},
                                  "arguments_raw": '{"sign":"Radio XYZ"}'}]
    assert doc["content"] == "Let me look." and doc["reasoning"] == "Need the tool."
    assert doc["stop_reason"] == "tool_calls" and doc["usage"] == {"input_tokens": 90, "output_tokens": 14}


@pytest.mark.parametrize("reason, expected", [("end_turn", "stop"), ("max_tokens", "length"),
                                              ("guardrail_intervened", "content_filter"),
                                              ("content_filtered", "content_filter")])
def test_stop_reasons(reason, expected):
    assert normalize(_converse([{"text": "x"}], reason))["stop_reason"] == expected


def test_nova_invoke_model_body_reads_as_converse():
    body = {"output": {"message": {"content": [{"text": "4"}], "role": "assistant"}}, "stopReason": "end_turn",
            "usage": {"inputTokens": 13, "outputTokens": 3, "totalTokens": 16, "cacheReadInputTokenCount": 0}}
    doc = normalize(body)
    assert doc["content"] == "4" and doc["stop_reason"] == "stop"


@pytest.mark.parametrize("body, name", [
    ({"inputTextTokenCount": 5, "results": [{"tokenCount": 3, "outputText": "hi", "completionReason": "FINISH"}]},
     "Titan"),
    ({"generation": "hi", "prompt_token_count": 5, "generation_token_count": 1, "stop_reason": "stop"}, "Llama"),
    ({"outputs": [{"text": "hi", "stop_reason": "stop"}]}, "Mistral"),
    ({"completion": " hi", "stop_reason": "stop_sequence", "stop": "\n\nHuman:"}, "text-completion"),
    ({"id": "1", "generations": [{"id": "g", "text": "hi", "finish_reason": "COMPLETE"}], "prompt": "x"}, "Cohere"),
])
def test_other_invoke_model_bodies_are_refused(body, name):
    with pytest.raises(NormalizeError, match=name):
        normalize(body)


def test_error_bodies():
    body = {"message": "The provided model identifier is invalid.",
            "__type": "com.amazon.coral.validate#ValidationException"}
    doc = normalize(body, status=400)
    assert doc["error"] == {"type": "ValidationException", "status": 400,
                            "message": "The provided model identifier is invalid."}
    doc = normalize({"Message": "Too many requests", "Type": "ThrottlingException"})
    assert doc["success"] is False and doc["error"]["type"] == "ThrottlingException"


def _events(end: bool = True) -> str:
    lines = [{"messageStart": {"role": "assistant"}},
             {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "Looking "}}},
             {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "it up."}}},
             {"contentBlockStop": {"contentBlockIndex": 0}},
             {"contentBlockStart": {"contentBlockIndex": 1,
                                    "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "top_song"}}}},
             {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"sign\": "}}}},
             {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": {"input": "\"WZPZ\"}"}}}},
             {"contentBlockStop": {"contentBlockIndex": 1}}]
    if end:
        lines += [{"messageStop": {"stopReason": "tool_use"}},
                  {"metadata": {"usage": {"inputTokens": 9, "outputTokens": 4}, "metrics": {"latencyMs": 5}}}]
    return ndjson(*lines)


def test_converse_stream_events():
    doc = normalize_stream(_events(), "bedrock")
    assert doc["content"] == "Looking it up." and calls_of(doc) == [("top_song", {"sign": "WZPZ"})]
    assert doc["stop_reason"] == "tool_calls" and doc["usage"] == {"input_tokens": 9, "output_tokens": 4}
    cut = normalize_stream(_events(end=False))
    assert cut["success"] is False and cut["error"]["type"] == "stream_incomplete"


NEUTRAL = {
    "model": "amazon.nova-lite-v1:0",
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Top song on WZPZ?"},
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "tooluse_1", "type": "function",
             "function": {"name": "top_song", "arguments": "{\"sign\":\"WZPZ\"}"}}]},
        {"role": "tool", "tool_call_id": "tooluse_1", "content": "Elemental Hotel"},
        {"role": "assistant", "content": "Elemental Hotel."},
    ],
    "tools": [{"type": "function", "function": {"name": "top_song", "description": "Most popular song.",
                                                "parameters": {"type": "object",
                                                               "properties": {"sign": {"type": "string"}}}}}],
    "tool_choice": {"type": "function", "function": {"name": "top_song"}},
    "max_tokens": 128,
    "temperature": 0.5,
    "stop": ["END"],
}


def test_request_round_trip():
    body = from_neutral(NEUTRAL, "bedrock")
    assert body["modelId"] == "amazon.nova-lite-v1:0" and body["system"] == [{"text": "Be brief."}]
    assert body["toolConfig"] == {
        "tools": [{"toolSpec": {"name": "top_song", "description": "Most popular song.",
                                "inputSchema": {"json": {"type": "object",
                                                         "properties": {"sign": {"type": "string"}}}}}}],
        "toolChoice": {"tool": {"name": "top_song"}}}
    assert body["inferenceConfig"] == {"maxTokens": 128, "temperature": 0.5, "stopSequences": ["END"]}
    assert body["messages"][1]["content"][1] == {"toolUse": {"toolUseId": "tooluse_1", "name": "top_song",
                                                             "input": {"sign": "WZPZ"}}}
    assert body["messages"][2] == {"role": "user", "content": [
        {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "Elemental Hotel"}]}}]}
    assert to_neutral(body) == ("bedrock", NEUTRAL)


def test_nova_invoke_request_to_neutral():
    request = {"schemaVersion": "messages-v1", "system": [{"text": "Sys"}],
               "messages": [{"role": "user", "content": [{"text": "Hello!"}]}],
               "inferenceConfig": {"maxTokens": 128, "temperature": 0.5}}
    assert to_neutral(request) == ("bedrock", {
        "messages": [{"role": "system", "content": "Sys"}, {"role": "user", "content": "Hello!"}],
        "max_tokens": 128, "temperature": 0.5})


def test_converse_stream_exception_event():
    text = _events(end=False) + ndjson({"modelStreamErrorException": {"message": "stream failed",
                                                                      "originalStatusCode": 500}})
    doc = normalize_stream(text)
    assert doc["error"] == {"type": "ModelStreamErrorException", "status": None, "message": "stream failed"}


def test_named_api_gives_way_to_what_the_events_are():
    # A Claude stream through InvokeModel, recorded under the Bedrock name, is Anthropic's events.
    text = ndjson({"type": "message_start", "message": {"type": "message", "role": "assistant", "content": []}},
                  {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                  {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
                  {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}, {"type": "message_stop"})
    assert normalize_stream(text, "bedrock-invoke")["content"] == "Hi"
