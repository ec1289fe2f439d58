"""The fake server speaks each wire API as the provider does: its real SDK parses what it sends
(bodies, streams, errors), and replayci reads a stream into the same document as the body."""
from __future__ import annotations

import json
import urllib.request

import pytest
from fakeserver import Fault, Reply
from livecli import AWS_ENV

from replayci.formats import normalize, normalize_stream
from replayci.formats.canonical import stable_response

TWO_CALLS = Reply.tool_calls([("get_weather", {"location": "Paris"}), ("get_time", {"timezone": "CET"})],
                             text="Checking both.")
USER = [{"role": "user", "content": "Weather and time in Paris?"}]
CALLS = [("get_weather", {"location": "Paris"}), ("get_time", {"timezone": "CET"})]


@pytest.fixture(scope="module")
def aws(shared_server):
    import boto3  # each SDK imported by its own tests: collecting this file imports none
    from botocore.config import Config

    with pytest.MonkeyPatch.context() as mp:
        for name, value in {**AWS_ENV, "AWS_SECRET_ACCESS_KEY": "fake-secret"}.items():
            mp.delenv(name, raising=False) if value is None else mp.setenv(name, value)
        mp.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKE")
        yield boto3.client("bedrock-runtime", endpoint_url=shared_server.url, region_name="us-east-1",
                           config=Config(retries={"total_max_attempts": 1}))


def test_openai_chat_sdk_reads_body_stream_and_error(server):
    import openai

    client = openai.OpenAI(api_key="sk-test", base_url=server.openai_base_url, max_retries=0)
    server.set_default(TWO_CALLS)
    done = client.chat.completions.create(model="gpt-4o-mini", messages=USER)
    assert [(c.function.name, json.loads(c.function.arguments)) for c in done.choices[0].message.tool_calls] == CALLS
    assert done.choices[0].finish_reason == "tool_calls" and done.usage.total_tokens > 0
    chunks = list(client.chat.completions.create(model="gpt-4o-mini", messages=USER, stream=True,
                                                 stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Checking both." and chunks[-1].usage.total_tokens > 0
    server.script([Fault.status(429, retry_after=2)])
    with pytest.raises(openai.RateLimitError) as info:
        client.chat.completions.create(model="gpt-4o-mini", messages=USER)
    assert info.value.response.headers["retry-after"] == "2" and info.value.body["code"] == "rate_limit_exceeded"


def test_openai_responses_sdk_reads_body_stream_and_error(server):
    import openai

    client = openai.OpenAI(api_key="sk-test", base_url=server.openai_base_url, max_retries=0)
    server.set_default(TWO_CALLS)
    done = client.responses.create(model="gpt-4o-mini", input="Weather and time in Paris?")
    calls = [(i.name, json.loads(i.arguments)) for i in done.output if i.type == "function_call"]
    assert calls == CALLS and done.output_text == "Checking both." and done.status == "completed"
    with client.responses.stream(model="gpt-4o-mini", input="Weather and time in Paris?") as stream:
        final = stream.get_final_response()  # the SDK's own accumulator checks the event sequence
    assert [(i.name, json.loads(i.arguments)) for i in final.output if i.type == "function_call"] == CALLS
    server.script([Fault.status(500)])
    with pytest.raises(openai.InternalServerError):
        client.responses.create(model="gpt-4o-mini", input="x")


def test_anthropic_sdk_reads_body_stream_and_error(server):
    import anthropic

    client = anthropic.Anthropic(api_key="sk-ant-test", base_url=server.anthropic_base_url, max_retries=0)
    server.set_default(TWO_CALLS)
    done = client.messages.create(model="claude-x", max_tokens=100, messages=USER)
    assert [(b.name, b.input) for b in done.content if b.type == "tool_use"] == CALLS
    with client.messages.stream(model="claude-x", max_tokens=100, messages=USER) as stream:
        final = stream.get_final_message()  # the SDK's own accumulator checks the event sequence
    assert [(b.name, b.input) for b in final.content if b.type == "tool_use"] == CALLS
    assert final.stop_reason == "tool_use" and final.content[0].text == "Checking both."
    server.script([Fault.overloaded()])
    with pytest.raises(anthropic.APIStatusError) as info:
        client.messages.create(model="claude-x", max_tokens=100, messages=USER)
    assert info.value.status_code == 529 and info.value.body["error"]["type"] == "overloaded_error"


def test_gemini_sdk_reads_body_stream_and_error(server):
    from google import genai
    from google.genai import errors as genai_errors
    from google.genai import types as genai_types

    client = genai.Client(api_key="AIza-test", http_options=genai_types.HttpOptions(
        base_url=server.url, retry_options=genai_types.HttpRetryOptions(attempts=1)))
    server.set_default(TWO_CALLS)
    done = client.models.generate_content(model="gemini-2.5-flash", contents="Weather and time in Paris?")
    assert [(c.name, c.args) for c in done.function_calls] == CALLS and done.text == "Checking both."
    assert done.candidates[0].finish_reason == genai_types.FinishReason.STOP
    chunks = list(client.models.generate_content_stream(model="gemini-2.5-flash", contents="Weather?"))
    assert len(chunks) > 1 and chunks[-1].usage_metadata.total_token_count > 0
    assert [(c.name, c.args) for ch in chunks for c in ch.function_calls or []] == CALLS
    server.script([Fault.status(429, details={"@type": "type.googleapis.com/google.rpc.RetryInfo",
                                              "retryDelay": "7s"})])
    with pytest.raises(genai_errors.ClientError) as info:
        client.models.generate_content(model="gemini-2.5-flash", contents="x")
    assert (info.value.code, info.value.status) == (429, "RESOURCE_EXHAUSTED")


def test_bedrock_boto3_reads_body_stream_and_error(server, aws):
    from botocore.exceptions import ClientError

    server.set_default(TWO_CALLS)
    messages = [{"role": "user", "content": [{"text": "Weather and time in Paris?"}]}]
    done = aws.converse(modelId="anthropic.claude-x-v1:0", messages=messages)
    blocks = done["output"]["message"]["content"]
    assert [(b["toolUse"]["name"], b["toolUse"]["input"]) for b in blocks if "toolUse" in b] == CALLS
    assert done["stopReason"] == "tool_use" and done["usage"]["totalTokens"] > 0
    events = list(aws.converse_stream(modelId="anthropic.claude-x-v1:0", messages=messages)["stream"])
    assert next(iter(events[0])) == "messageStart" and events[-1]["metadata"]["usage"]["totalTokens"] > 0
    server.script([Fault.status(429)])
    with pytest.raises(ClientError) as info:
        aws.converse(modelId="anthropic.claude-x-v1:0", messages=messages)
    assert info.value.response["Error"]["Code"] == "ThrottlingException"
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 429


def _post(server, path: str, body: dict) -> tuple[int, str]:
    req = urllib.request.Request(server.url + path, data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as res:
            return res.status, res.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


BODIES = {  # the wire API's path and a request in its form
    "openai-chat": ("/v1/chat/completions", {"model": "m", "messages": USER}, {"stream": True}),
    "openai-responses": ("/v1/responses", {"model": "m", "input": "Weather?"}, {"stream": True}),
    "anthropic": ("/v1/messages", {"model": "m", "max_tokens": 9, "messages": USER}, {"stream": True}),
    "gemini": ("/v1beta/models/g:generateContent", {"contents": [{"role": "user", "parts": [{"text": "W?"}]}]},
               ":stream"),
    "bedrock": ("/model/m/converse", {"messages": [{"role": "user", "content": [{"text": "W?"}]}]}, "-stream"),
    "ollama": ("/api/chat", {"model": "m", "messages": USER, "stream": False}, {"stream": True}),
}


def _stream_path(path: str, how) -> tuple[str, dict]:
    if how == ":stream":
        return path.replace(":generateContent", ":streamGenerateContent") + "?alt=sse", {}
    if how == "-stream":
        return path + "-stream", {}
    return path, how


@pytest.mark.parametrize("wire", [w for w in BODIES if w != "bedrock"])  # boto3 reads Bedrock's (above)
def test_each_stream_reads_as_its_body(wire, server):
    """replayci reassembles each fake stream into the document the fake body gives."""
    path, body, how = BODIES[wire]
    server.set_default(TWO_CALLS)
    status, text = _post(server, path, body)
    assert status == 200
    spath, extra = _stream_path(path, how)
    status, stream = _post(server, spath, {**body, **extra})
    assert status == 200
    whole, streamed = normalize(json.loads(text)), normalize_stream(stream, wire)
    assert streamed["success"] and stable_response(streamed) == stable_response(whole)
    assert [(c["name"], c["arguments"]) for c in whole["tool_calls"]] == CALLS


@pytest.mark.parametrize("wire", list(BODIES))
def test_each_error_body_reads_as_an_error(wire, server):
    path, body, _ = BODIES[wire]
    server.script([Fault.status(503)])
    status, text = _post(server, path, body)
    doc = normalize(json.loads(text), status=status)
    assert (status, doc["success"], doc["error"]["status"]) == (503, False, 503) and doc["error"]["message"]


@pytest.mark.parametrize("wire", [w for w in BODIES if w != "bedrock"])
def test_a_cut_stream_is_stream_incomplete(wire, server):
    path, body, how = BODIES[wire]
    server.set_default(TWO_CALLS.cut(3))
    spath, extra = _stream_path(path, how)
    status, stream = _post(server, spath, {**body, **extra})
    assert status == 200 and normalize_stream(stream, wire)["error"]["type"] == "stream_incomplete"
