"""Real traffic of other projects, and streams a hostile or quirky server sends, read right.

Shapes seen in other projects' recorded traffic (Azure's content-filter chunk, Bedrock's error
bodies and provider-run tools, an empty legacy function_call) and framings (a byte-order mark,
CRLF, a gzip-encoded answer) each read as the non-streamed, plain answer would."""
from __future__ import annotations

import gzip
import json
import zlib

import pytest
from fakeserver import FakeServer, Fault, RecordedRequest, Reply
from livecli import KEYS, MODELS

from replayci import providers
from replayci.formats import normalize, normalize_stream
from replayci.providers.retry import RetryPolicy, call_with_policy


def sse(events: list, done: bool = True) -> str:
    text = "".join(f"data: {json.dumps(e)}\n\n" for e in events)
    return text + ("data: [DONE]\n\n" if done else "")


def calls(doc: dict) -> list[tuple]:
    return [(c["name"], c["arguments"]) for c in doc["tool_calls"]]


CHUNK = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-2024-08-06"}
PARIS_CHUNKS = [
    {**CHUNK, "choices": [{"index": 0, "finish_reason": None, "delta": {"role": "assistant", "content": None,
     "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": ""}}]}}]},
    {**CHUNK, "choices": [{"index": 0, "finish_reason": None, "delta": {"tool_calls": [
        {"index": 0, "function": {"arguments": '{"location": "Paris"}'}}]}}]},
    {**CHUNK, "choices": [{"index": 0, "finish_reason": "tool_calls", "delta": {}}]},
]
# Azure OpenAI's first chunk: the prompt's content-filter results, no choice, no model, no object.
AZURE_FILTER = {"choices": [], "created": 0, "id": "", "model": "", "object": "",
                "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {
                    "hate": {"filtered": False, "severity": "safe"}, "jailbreak": {"filtered": False,
                                                                                 "detected": False}}}]}


def test_an_azure_stream_opening_with_its_content_filter_chunk():
    doc = normalize_stream(sse([AZURE_FILTER, *PARIS_CHUNKS]))
    assert doc["success"] and calls(doc) == [("get_weather", {"location": "Paris"})]
    assert doc["model"] == "gpt-4o-2024-08-06" and doc["stop_reason"] == "tool_calls"
    # Azure also sends a content-filter chunk for the answer, after the last delta.
    tail = {**CHUNK, "model": "", "choices": [{"index": 0, "finish_reason": None, "delta": {},
                                               "content_filter_results": {"hate": {"filtered": False}}}]}
    doc = normalize_stream(sse([AZURE_FILTER, *PARIS_CHUNKS, tail]))
    assert calls(doc) == [("get_weather", {"location": "Paris"})] and doc["model"] == "gpt-4o-2024-08-06"
    # Cut after the filter chunk: still a chat-completions stream, cut.
    cut = normalize_stream(sse([AZURE_FILTER, PARIS_CHUNKS[0]], done=False))
    assert not cut["success"] and cut["error"]["type"] == "stream_incomplete"


def test_a_stream_of_only_filter_chunks_is_not_read_as_something_else():
    doc = normalize_stream(sse([AZURE_FILTER, {**CHUNK, "choices": [{"index": 0, "finish_reason": "stop",
                                                                     "delta": {"content": "Hi"}}]}]))
    assert doc["success"] and doc["content"] == "Hi"


@pytest.mark.parametrize("header, expected", [
    ("ValidationException", "ValidationException"),
    ("ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/", "ThrottlingException"),
    ("com.amazon.coral.service#AccessDeniedException", "AccessDeniedException"),
])
@pytest.mark.parametrize("status", [None, 200, 400])
def test_a_bedrock_error_body_typed_by_its_header(header, expected, status):
    body = {"message": "The provided model identifier is invalid."}
    for headers in ({"x-amzn-ErrorType": header}, {"X-Amzn-Errortype": header}, [("x-amzn-errortype", header)]):
        doc = normalize(body, status=status, headers=headers)
        assert not doc["success"], doc
        assert doc["error"]["type"] == expected and doc["error"]["message"] == body["message"]
        assert doc["error"]["status"] == status if status != 200 else True
    # Without the header, a 400 is still an error (of the HTTP status), a bare {"message"} at 200 is no answer.
    assert normalize(body, status=400)["error"]["type"] == "http_error"


def test_an_imported_bedrock_error_keeps_the_type_its_header_gives(tmp_path):
    """A recording's kept x-amzn-ErrorType types the error at import and in every later run."""
    from cassettes import interaction, write_cassette
    from click.testing import CliRunner

    from replayci.cli import cli
    request = {"messages": [{"role": "user", "content": [{"text": "Weather in Paris?"}]}],
               "toolConfig": {"tools": [{"toolSpec": {"name": "get_weather", "inputSchema": {"json": {
                   "type": "object", "properties": {"location": {"type": "string"}}}}}}]}}
    url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse"
    header = "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"
    write_cassette(tmp_path / "c" / "bedrock.yaml", [interaction(
        request, {"message": "Too many requests."}, uri=url, status=429,
        response_headers={"x-amzn-ErrorType": [header]})])
    pack = tmp_path / "pack"
    assert CliRunner().invoke(cli, ["import", str(tmp_path / "c"), "--pack", str(pack)]).exit_code == 0
    (fixture,) = (pack / "golden").rglob("*.json")
    assert json.loads(fixture.read_text())["meta"]["headers"] == {"x-amzn-errortype": header}
    report = tmp_path / "r.json"
    run = CliRunner().invoke(cli, ["--pack", str(pack), "--provider", "recorded", "--report-json", str(report)])
    assert run.exit_code == 0, run.output
    (case,) = json.loads(report.read_text())["cases"]
    assert case["status"] == "pass" and case["expected_error"] == "unexpected_error"
    assert case["response"]["error"] == {"type": "ThrottlingException", "status": 429,
                                         "message": "Too many requests."}


def test_bedrock_converse_provider_run_tools_are_not_client_calls():
    body = {"output": {"message": {"role": "assistant", "content": [
        {"text": "Let me look that up."},
        {"toolUse": {"toolUseId": "srvtoolu_1", "name": "web_search", "input": {"query": "weather Paris"},
                     "type": "server_tool_use"}},
        {"toolResult": {"toolUseId": "srvtoolu_1", "content": [{"text": "Sunny"}], "status": "success",
                        "type": "web_search_tool_result"}},
        {"toolUse": {"toolUseId": "tooluse_2", "name": "get_weather", "input": {"location": "Paris"}}}]}},
        "stopReason": "tool_use", "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}}
    doc = normalize(body)
    assert calls(doc) == [("get_weather", {"location": "Paris"})]
    assert [s["name"] for s in doc["server_tool_calls"]] == ["web_search"]
    assert doc["content"] == "Let me look that up."
    only = {**body, "output": {"message": {"role": "assistant", "content": body["output"]["message"]["content"][:3]}},
            "stopReason": "end_turn"}
    doc = normalize(only)
    assert doc["tool_calls"] == [] and doc["stop_reason"] == "stop" and len(doc["server_tool_calls"]) == 1


def test_bedrock_converse_stream_provider_run_tools_are_not_client_calls():
    events = [{"messageStart": {"role": "assistant"}},
              {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {
                  "toolUseId": "srvtoolu_1", "name": "web_search", "type": "server_tool_use"}}}},
              {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"query": "x"}'}}}},
              {"contentBlockStop": {"contentBlockIndex": 0}},
              {"contentBlockStart": {"contentBlockIndex": 1, "start": {"toolUse": {
                  "toolUseId": "tooluse_2", "name": "get_weather"}}}},
              {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '{"location": "Paris"}'}}}},
              {"contentBlockStop": {"contentBlockIndex": 1}},
              {"messageStop": {"stopReason": "tool_use"}}]
    doc = normalize_stream("\n".join(json.dumps(e) for e in events) + "\n", "bedrock")
    assert calls(doc) == [("get_weather", {"location": "Paris"})]
    assert [s["name"] for s in doc["server_tool_calls"]] == ["web_search"]


EMPTY_LEGACY = {"name": "", "arguments": ""}


def test_an_empty_legacy_function_call_beside_tool_calls():
    message = {"role": "assistant", "content": None, "function_call": EMPTY_LEGACY, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"location":"Paris"}'}}]}
    body = {"id": "x", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}]}
    assert calls(normalize(body)) == [("get_weather", {"location": "Paris"})]
    # Alone, with a text answer: no call, and the stop reason says so.
    alone = {**body, "choices": [{"index": 0, "finish_reason": "function_call", "message": {
        "role": "assistant", "content": "Hello", "function_call": EMPTY_LEGACY, "tool_calls": None}}]}
    doc = normalize(alone)
    assert doc["tool_calls"] == [] and doc["content"] == "Hello"
    # Streamed: each delta carries the empty legacy call beside the tool-call delta.
    chunks = [{**c, "choices": [{**c["choices"][0], "delta": {**c["choices"][0]["delta"],
                                                              "function_call": EMPTY_LEGACY}}]} for c in PARIS_CHUNKS]
    doc = normalize_stream(sse(chunks))
    assert calls(doc) == [("get_weather", {"location": "Paris"})]


# ------------------------------------------------------------------ framings

ANTHROPIC_EVENTS = [
    ("message_start", {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
                                                            "model": "claude", "content": [], "usage": {
                                                                "input_tokens": 5, "output_tokens": 1}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
        "type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
        "type": "input_json_delta", "partial_json": '{"location": "Paris"}'}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
    ("message_stop", {"type": "message_stop"}),
]
RESPONSES_EVENTS = [
    ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": {
        "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": ""}}),
    ("response.function_call_arguments.delta", {"type": "response.function_call_arguments.delta",
                                                 "output_index": 0, "item_id": "fc_1",
                                                 "delta": '{"location": "Paris"}'}),
    ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": {
        "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
        "arguments": '{"location": "Paris"}', "status": "completed"}}),
    ("response.completed", {"type": "response.completed", "response": {
        "object": "response", "status": "completed", "model": "gpt-4o", "output": [{
            "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
            "arguments": '{"location": "Paris"}', "status": "completed"}]}}),
]
GEMINI_CHUNKS = [{"candidates": [{"content": {"role": "model", "parts": [
    {"functionCall": {"name": "get_weather", "args": {"location": "Paris"}}}]}, "finishReason": "STOP"}]}]


def _named(events) -> str:
    return "".join(f"event: {n}\ndata: {json.dumps(e)}\n\n" for n, e in events)


STREAMS = {
    "openai-chat": sse(PARIS_CHUNKS),
    "azure": sse([AZURE_FILTER, *PARIS_CHUNKS]),
    "anthropic": _named(ANTHROPIC_EVENTS),
    "openai-responses": _named(RESPONSES_EVENTS),
    "gemini-sse": sse(GEMINI_CHUNKS, done=False),
    "gemini-array": json.dumps(GEMINI_CHUNKS),
    "ollama": json.dumps({"model": "llama", "message": {"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": "get_weather", "arguments": {"location": "Paris"}}}]}, "done": False}) + "\n"
        + json.dumps({"model": "llama", "message": {"role": "assistant", "content": ""}, "done": True,
                      "done_reason": "stop"}) + "\n",
}
FRAMINGS = {
    "bom": lambda t: "\ufeff" + t,
    "bom-crlf": lambda t: "\ufeff" + t.replace("\n", "\r\n"),
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "cr": lambda t: t.replace("\n", "\r"),
    "leading-blank-lines": lambda t: "\n\n" + t,
    "bom-bytes": lambda t: ("\ufeff" + t).encode("utf-8"),
    "comment-first": lambda t: ": keep-alive\n\n" + t if not t.startswith(("[", "{")) else t,
}


@pytest.mark.parametrize("framing", FRAMINGS)
@pytest.mark.parametrize("stream", STREAMS)
def test_a_stream_keeps_its_tool_name_whatever_its_framing(stream, framing):
    plain = normalize_stream(STREAMS[stream])
    assert calls(plain) == [("get_weather", {"location": "Paris"})], plain
    doc = normalize_stream(FRAMINGS[framing](STREAMS[stream]))
    assert doc["success"] and calls(doc) == calls(plain), doc


# ------------------------------------------------------------------ compressed answers

REQUEST = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Weather in Paris?"}],
           "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {
               "type": "object", "properties": {"location": {"type": "string"}}}}}]}
PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
ENCODERS = {"gzip": gzip.compress, "x-gzip": gzip.compress, "deflate": zlib.compress, "GZip": gzip.compress}


@pytest.mark.parametrize("encoding", ENCODERS)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_a_compressed_answer_is_read_alike_by_both_providers(name, stream, encoding):
    with FakeServer() as server:
        seen = RecordedRequest("POST", PATHS[name], {}, {"model": "m", "messages": [], "stream": stream}, b"", 0.0)
        answer = Reply.tool_call("get_weather", {"location": "Paris"}).render(seen)
        body = answer.body if answer.chunks is None else b"".join(answer.chunks)
        server.script([Fault(status_code=200, raw_body=ENCODERS[encoding](body), content_type=answer.content_type,
                             headers=(("content-encoding", encoding),))])
        provider = providers.create(name, api_key=KEYS[name], base_url=server.base_url_for(name), stream=stream)
        try:
            outcome = call_with_policy(provider, REQUEST, model=MODELS[name],
                                       policy=RetryPolicy(total_ms=5000, max_attempts=1), sleep=lambda s: None)
        finally:
            provider.close()
    assert outcome.error is None, outcome.error
    payload = outcome.payload
    doc = normalize_stream(payload) if stream and isinstance(payload, (str, bytes, list)) else normalize(payload)
    assert calls(doc) == [("get_weather", {"location": "Paris"})]


# ------------------------------------------------------------------ redacted streams

# Where each stream carries a call's arguments.
ARGUMENTS = {"openai-chat": ("$..arguments",), "azure": ("$..arguments",),
             "openai-responses": ("$..arguments", "$..delta"), "anthropic": ("$..partial_json",),
             "gemini-sse": ("$..args",), "gemini-array": ("$..args",), "ollama": ("$..arguments",)}


@pytest.mark.parametrize("stream", STREAMS)
def test_a_path_into_a_streams_events_redacts_the_arguments_in_them(stream):
    from replayci.engine.recordings import redact

    doc = redact({"response": STREAMS[stream]}, ARGUMENTS[stream])
    assert "Paris" in STREAMS[stream] and "Paris" not in doc["response"] and "[REDACTED]" in doc["response"]
    assert normalize_stream(doc["response"])["success"]


@pytest.mark.parametrize("framing", [f for f in FRAMINGS if f != "bom-bytes"])
@pytest.mark.parametrize("stream", STREAMS)
def test_a_redacted_stream_keeps_its_framing_and_its_calls(stream, framing):
    from replayci.engine.recordings import redact

    text = FRAMINGS[framing](STREAMS[stream])
    for path in ("$..*", "$.response", "$.raw..*"):
        doc = redact({"response": text, "raw": text, "meta": {}}, (path,))
        for key in ("response", "raw"):
            if key not in path and path != "$..*":
                assert doc[key] == text, (path, key)  # a path naming the other stream leaves this one alone
                continue
            assert "Paris" not in doc[key] and "[REDACTED]" in doc[key], (path, key, doc[key])
            read = normalize_stream(doc[key])
            assert read["success"] and len(read["tool_calls"]) == 1, (path, key, read)
            if stream != "gemini-array":  # the framing is kept, line break for line break
                assert [c for c in doc[key] if c in "\r\n\ufeff"] == [c for c in text if c in "\r\n\ufeff"]


def test_a_redacted_stream_keeps_what_is_framing_and_redacts_what_is_not():
    from replayci.engine.recordings import redact

    text = ("\ufeff: keep-alive\r\nid: 7\r\nevent: message\r\ndata: {\"a\":\r\ndata:  \"Paris\"}\r\n\r\n"
            "data: Paris is not JSON\r\n\r\ndata: {\"b\": \"tab\u2028Paris\"}\r\n\r\ndata: [DONE]\r\n\r\n")
    doc = redact({"response": text}, ("$..*",))
    assert doc["response"] == ("\ufeff: keep-alive\r\nid: 7\r\nevent: message\r\ndata: {\"a\": \"[REDACTED]\"}\r\n"
                               "\r\ndata: [REDACTED]\r\n\r\ndata: {\"b\": \"[REDACTED]\"}\r\n\r\ndata: [DONE]\r\n\r\n")
    # An event the paths leave alone is kept byte for byte; one they change has its text escaped
    # where a line reader would break it.
    assert redact({"response": text}, ("$..c",))["response"] == text
    changed = redact({"response": text.replace('{"b"', '{"c": 1, "b"')}, ("$..c",))["response"]
    assert 'data:  "Paris"}\r\n' in changed and "data: Paris is not JSON" in changed
    assert 'data: {"c": "[REDACTED]", "b": "tab\\u2028Paris"}\r\n' in changed


def _two_blocks() -> dict[str, str]:
    """A stream of each format holding two blocks, items or calls told apart by their index."""
    text_block = [("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
        "type": "text", "text": ""}}), ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
            "type": "text_delta", "text": "Checking Paris."}}), ("content_block_stop", {"type": "content_block_stop",
                                                                                      "index": 0})]
    shifted = [(n, {**e, "index": 1}) if "index" in e else (n, e) for n, e in ANTHROPIC_EVENTS]
    second = [{**c, "choices": [{**c["choices"][0], "delta": {"tool_calls": [
        {**t, "index": 1, **({"id": "call_2"} if "id" in t else {})}
        for t in c["choices"][0]["delta"]["tool_calls"]]}}]} for c in PARIS_CHUNKS[:2]]
    bedrock = [{"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "Checking Paris."}}},
               {"contentBlockStop": {"contentBlockIndex": 0}},
               {"contentBlockStart": {"contentBlockIndex": 1, "start": {"toolUse": {
                   "toolUseId": "t1", "name": "get_weather"}}}},
               {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": {
                   "input": '{"location": "Paris"}'}}}},
               {"contentBlockStop": {"contentBlockIndex": 1}}, {"messageStop": {"stopReason": "tool_use"}}]
    return {"anthropic": _named([ANTHROPIC_EVENTS[0], *text_block, *shifted[1:]]),
            "openai-chat": sse([*PARIS_CHUNKS[:2], *second, PARIS_CHUNKS[2]]),
            "bedrock": "\n".join(json.dumps(e) for e in bedrock) + "\n"}


@pytest.mark.parametrize("stream", ["anthropic", "openai-chat", "bedrock"])
def test_a_redacted_stream_keeps_its_blocks_apart(stream):
    from replayci.engine.recordings import redact

    text = _two_blocks()[stream]
    plain = normalize_stream(text, "bedrock" if stream == "bedrock" else None)
    doc = redact({"response": text}, ("$..*",))
    read = normalize_stream(doc["response"], "bedrock" if stream == "bedrock" else None)
    assert "Paris" not in doc["response"] and read["success"], read
    assert len(read["tool_calls"]) == len(plain["tool_calls"]) == (2 if stream == "openai-chat" else 1)
    assert read["content"] if plain["content"] else True


# ------------------------------------------------------------------ hostile streams

SEPARATORS = "line\u2028para\u2029next\x85end"


def _raw(events, named: bool = False) -> str:
    """SSE text whose JSON keeps non-ASCII characters as they are (as many servers send it)."""
    out = []
    for e in events:
        data = json.dumps(e[1] if named else e, ensure_ascii=False)
        out.append((f"event: {e[0]}\n" if named else "") + f"data: {data}\n\n")
    return "".join(out)


def _separator_streams() -> dict[str, tuple[str, str | None]]:
    text = {**CHUNK, "choices": [{"index": 0, "finish_reason": None, "delta": {"content": SEPARATORS}}]}
    args = {**CHUNK, "choices": [{"index": 0, "finish_reason": None, "delta": {"tool_calls": [
        {"index": 0, "function": {"arguments": json.dumps({"note": SEPARATORS}, ensure_ascii=False)}}]}}]}
    anthropic_text = [ANTHROPIC_EVENTS[0], ("content_block_start", {"type": "content_block_start", "index": 0,
                                                                    "content_block": {"type": "text", "text": ""}}),
                      ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
                          "type": "text_delta", "text": SEPARATORS}}), *ANTHROPIC_EVENTS[3:]]
    responses_text = [("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                                      "item": {"type": "message", "id": "m", "content": []}}),
                      ("response.output_text.delta", {"type": "response.output_text.delta", "output_index": 0,
                                                      "content_index": 0, "delta": SEPARATORS}),
                      ("response.completed", {"type": "response.completed", "response": {
                          "object": "response", "status": "completed", "model": "m", "output": []}})]
    ollama = [{"model": "l", "message": {"role": "assistant", "content": SEPARATORS}, "done": False},
              {"model": "l", "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"}]
    bedrock = [{"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": SEPARATORS}}},
               {"messageStop": {"stopReason": "end_turn"}}]
    lines = lambda events: "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events)  # noqa: E731
    return {
        "openai-chat-text": (_raw([text, PARIS_CHUNKS[2]]) + "data: [DONE]\n\n", None),
        "openai-chat-arguments": (_raw([PARIS_CHUNKS[0], args, PARIS_CHUNKS[2]]) + "data: [DONE]\n\n", None),
        "anthropic": (_raw(anthropic_text, named=True), None),
        "openai-responses": (_raw(responses_text, named=True), None),
        "gemini": (_raw([{"candidates": [{"content": {"role": "model", "parts": [{"text": SEPARATORS}]},
                                          "finishReason": "STOP"}]}]), None),
        "ollama": (lines(ollama), None),
        "bedrock": (lines(bedrock), "bedrock"),
    }


@pytest.mark.parametrize("stream", list(_separator_streams()))
def test_line_separators_in_a_models_text_are_text_not_line_breaks(stream):
    text, api = _separator_streams()[stream]
    assert "\u2028" in text  # as the server sent it, unescaped
    doc = normalize_stream(text, api)
    assert doc["success"], doc
    if stream == "openai-chat-arguments":
        assert doc["tool_calls"][0]["arguments"] == {"note": SEPARATORS}
    else:
        assert doc["content"] == SEPARATORS


PIECED = {  # (api, what the pieces build)
    "openai-chat-arguments": (None, "arguments"), "openai-chat-legacy": (None, "arguments"),
    "gemini": (None, "content"),
    "openai-responses-arguments": (None, "arguments"), "openai-responses-text": (None, "content"),
    "bedrock": ("bedrock", "content"),
}


def _pieced(stream: str, n: int, piece: str) -> str:
    """A stream of *n* deltas of *piece* each, in the format *stream* names."""
    delta = lambda d: {**CHUNK, "choices": [{"index": 0, "finish_reason": None, "delta": d}]}  # noqa: E731
    completed = ("response.completed", {"type": "response.completed", "response": {
        "object": "response", "status": "completed", "model": "m", "output": []}})
    if stream == "openai-chat-arguments":
        return sse([PARIS_CHUNKS[0], *[delta({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})] * n,
                    PARIS_CHUNKS[2]])
    if stream == "openai-chat-legacy":
        return sse([*[delta({"function_call": {"name": "f", "arguments": piece}})] * n, PARIS_CHUNKS[2]])
    if stream == "gemini":
        return sse([*[{"candidates": [{"content": {"role": "model", "parts": [{"text": piece}]}}]}] * n,
                    *GEMINI_CHUNKS], done=False)
    if stream == "openai-responses-arguments":
        return _named([RESPONSES_EVENTS[0], *[("response.function_call_arguments.delta", {
            "type": "response.function_call_arguments.delta", "output_index": 0, "delta": piece})] * n, completed])
    if stream == "openai-responses-text":
        return _named([("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                                       "item": {"type": "message", "id": "m", "content": []}}),
                       *[("response.output_text.delta", {"type": "response.output_text.delta", "output_index": 0,
                                                         "content_index": 0, "delta": piece})] * n, completed])
    events = [{"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": piece}}}] * n
    return "\n".join(json.dumps(e) for e in [*events, {"messageStop": {"stopReason": "end_turn"}}])


@pytest.mark.parametrize("stream", PIECED)
def test_a_long_answer_in_many_pieces_is_read_in_linear_time(stream):
    import time

    n, piece = 6_000, "y" * 2000  # 12 MB: joining piece by piece copies about 36 GB
    text = _pieced(stream, n, piece)
    api, key = PIECED[stream]
    started = time.process_time()  # CPU time: a busy machine slows the wall clock, not the work
    doc = normalize_stream(text, api)
    took = time.process_time() - started
    built = doc["content"] if key == "content" else doc["tool_calls"][0]["arguments_raw"]
    assert built.count(piece) == n and len(built) >= n * len(piece), (stream, len(built))
    assert took < 1.5, f"{stream}: {took:.2f} s"


def _index(value) -> dict[str, str]:
    """A tool call at block/item/call *value*, in each format that numbers them."""
    chat = [{**CHUNK, "choices": [{"index": 0, "finish_reason": None, "delta": {"tool_calls": [
        {"index": value, "id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"location": "Paris"}'}}]}}]}, PARIS_CHUNKS[2]]
    anthropic = [(n, {**e, "index": value}) if "index" in e else (n, e) for n, e in ANTHROPIC_EVENTS]
    responses = [(n, {**e, "output_index": value}) if "output_index" in e else (n, e) for n, e in RESPONSES_EVENTS]
    bedrock = [{"contentBlockStart": {"contentBlockIndex": value, "start": {"toolUse": {
        "toolUseId": "t1", "name": "get_weather"}}}},
        {"contentBlockDelta": {"contentBlockIndex": value, "delta": {"toolUse": {"input": '{"location": "Paris"}'}}}},
        {"messageStop": {"stopReason": "tool_use"}}]
    return {"openai-chat": sse(chat), "anthropic": _named(anthropic), "openai-responses": _named(responses),
            "bedrock": "\n".join(json.dumps(e) for e in bedrock)}


@pytest.mark.parametrize("value", [10**9, 2**63, -1, 1.5, "0", None])
@pytest.mark.parametrize("stream", list(_index(0)))
def test_an_odd_index_allocates_nothing_and_keeps_the_call(stream, value):
    import tracemalloc

    tracemalloc.start()
    try:
        doc = normalize_stream(_index(value)[stream], "bedrock" if stream == "bedrock" else None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000, peak
    assert calls(doc) == [("get_weather", {"location": "Paris"})], doc


def test_duplicate_call_ids_stay_two_calls():
    second = {**CHUNK, "choices": [{"index": 0, "finish_reason": None, "delta": {"tool_calls": [
        {"index": 1, "id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"location": "Rome"}'}}]}}]}
    doc = normalize_stream(sse([*PARIS_CHUNKS[:2], second, PARIS_CHUNKS[2]]))
    assert calls(doc) == [("get_weather", {"location": "Paris"}), ("get_weather", {"location": "Rome"})]


CUTS = {name: text for name, text in STREAMS.items() if name not in ("gemini-sse", "gemini-array", "ollama")}


@pytest.mark.parametrize("stream", CUTS)
def test_a_stream_without_its_terminal_event_is_incomplete_never_an_answer(stream):
    text = CUTS[stream]
    for cut in (text.replace("data: [DONE]\n\n", ""),
                text.replace('event: message_stop\ndata: {"type": "message_stop"}\n\n', ""),
                text[: text.rindex("event:") if "event:" in text else text.rindex("data:")]):
        if cut == text:
            continue
        doc = normalize_stream(cut)
        assert not doc["success"] and doc["error"]["type"] == "stream_incomplete", (stream, doc)


@pytest.mark.parametrize("stream", ["openai-chat", "anthropic", "openai-responses"])
def test_an_error_event_mid_stream_is_the_providers_error(stream):
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    text = STREAMS[stream]
    head = text[: text.index("\n\n", text.index("\n\n") + 2) + 2]  # the first two events
    doc = normalize_stream(head + f"event: error\ndata: {json.dumps(error)}\n\n")
    assert not doc["success"] and doc["error"]["message"] == "Overloaded", doc


def test_a_comment_flood_and_data_that_is_not_json():
    import time

    started = time.perf_counter()
    doc = normalize_stream(": keep-alive\n" * 200_000 + sse(PARIS_CHUNKS))
    assert calls(doc) == [("get_weather", {"location": "Paris"})] and time.perf_counter() - started < 2
    from replayci.formats import NormalizeError

    with pytest.raises(NormalizeError, match=r"event 2's data is not JSON: '\{oops'"):
        normalize_stream(sse(PARIS_CHUNKS[:1], done=False) + "data: {oops\n\n" + sse(PARIS_CHUNKS[1:]))
    # A NaN in a chunk's arguments is the model's malformed text, kept as sent; one elsewhere is read.
    nan = PARIS_CHUNKS[1]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].replace('"Paris"', "NaN")
    text = sse(PARIS_CHUNKS).replace('\\"Paris\\"', "NaN").replace('"created": 1', '"created": NaN')
    assert normalize_stream(text)["tool_calls"][0]["arguments_raw"] == nan


def test_a_batch_result_holding_line_separators_is_one_result(pack, server):
    from livecli import add_cases, invoke, report_of

    provider = "openai"  # (Anthropic's SDK reads its results file itself)

    add_cases(pack, "w", ["a"])
    server.set_default(Reply.plain_text(SEPARATORS))  # the result file holds it unescaped, as UTF-8
    res = invoke(provider, server, "--batch", "--json", env={"REPLAYCI_BATCH_POLL_SECONDS": "0.01",
                                                            "REPLAYCI_BATCH_POLL_MAX_SECONDS": "0.02"})
    assert res.exit_code in (0, 1), res.output
    (case,) = report_of(res)["cases"]
    assert (case["status"], case["classification"]) == ("fail", "tool_not_invoked"), case  # an answer, read
    assert case["response"]["content"] == SEPARATORS
