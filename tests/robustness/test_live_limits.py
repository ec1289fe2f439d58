"""A live call is bounded: one deadline for the whole answer, no redirect to another host, a
bounded body (decompressed), and timeouts the socket layer can hold."""
from __future__ import annotations

import gzip
import json
import time

import pytest
from fakeserver import Drip, Fault, Reply
from livecli import AWS_ENV, KEYS, MODELS

from replayci import providers
from replayci.providers.http import MAX_BODY_BYTES
from replayci.providers.retry import RetryPolicy, call_with_policy

REQUEST = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Weather in Paris?"}],
           "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {
               "type": "object", "properties": {"location": {"type": "string"}}}}}]}


@pytest.fixture(params=["openai", "anthropic", "gemini", "bedrock"])
def provider(request, shared_server, monkeypatch):
    if request.param == "bedrock":  # boto3 signs with the credentials it finds
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_ENV["AWS_ACCESS_KEY_ID"])
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", KEYS["bedrock"])
    p = providers.create(request.param, api_key=KEYS[request.param],
                         base_url=shared_server.base_url_for(request.param))
    yield p
    p.close()


def call(provider, total_ms: int = 2000):
    return call_with_policy(provider, REQUEST, model=MODELS[provider.name],
                            policy=RetryPolicy(total_ms=total_ms, max_attempts=1), sleep=lambda s: None)


def test_a_dripping_body_meets_the_whole_call_deadline(provider, server):
    server.script([Drip(0.1, size=4)])  # every read is quick; the whole answer takes many seconds
    started = time.monotonic()
    outcome = call(provider, total_ms=700)
    assert time.monotonic() - started < 2.5
    assert outcome.error is not None and outcome.error.kind == "timeout", outcome.error


@pytest.mark.parametrize("name", ["gemini", "bedrock"])  # (OpenAI's and Anthropic's: stream_incomplete)
def test_a_dripping_stream_meets_the_whole_call_deadline(name, server, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_ENV["AWS_ACCESS_KEY_ID"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", KEYS["bedrock"])
    streaming = providers.create(name, api_key=KEYS[name], base_url=server.base_url_for(name), stream=True)
    server.script([Drip(0.1, size=4, then=Reply.plain_text("a long answer " * 20))])
    started = time.monotonic()
    try:
        outcome = call(streaming, total_ms=700)
    finally:
        streaming.close()
    assert time.monotonic() - started < 2.5
    assert outcome.error is not None and outcome.error.kind == "timeout", outcome.error


def test_a_body_within_the_deadline_still_arrives(provider, server):
    server.script([Drip(0.001, size=64)])
    outcome = call(provider)
    assert outcome.error is None, outcome.error


def test_a_redirect_to_another_host_is_not_followed(provider, server):
    server.script([Fault.status(307, headers={"location": "http://127.0.0.2:9/v1/elsewhere"})])
    outcome = call(provider)
    assert outcome.error is not None and not outcome.error.retry
    assert "redirected (HTTP 307) to another host (http://127.0.0.2)" in outcome.error.message
    assert server.count() == 1 and KEYS[provider.name] not in outcome.error.message


def test_a_gzip_bomb_is_refused(provider, server):
    bomb = gzip.compress(b'{"choices": "' + b" " * (MAX_BODY_BYTES + 1024), compresslevel=9)
    assert len(bomb) < MAX_BODY_BYTES // 100
    server.script([Fault(status_code=200, raw_body=bomb, headers=(("content-encoding", "gzip"),))])
    outcome = call(provider)
    assert outcome.error is not None and outcome.error.kind == "invalid_response"
    assert "larger than 32 MiB" in outcome.error.message


def test_a_plain_body_over_the_bound_is_refused(provider, server):
    server.script([Fault(status_code=200, raw_body=b" " * (MAX_BODY_BYTES + 1))])
    outcome = call(provider)
    assert outcome.error is not None and "larger than 32 MiB" in outcome.error.message


def test_a_gzipped_answer_is_read(provider, server):
    answer = {"openai": {"id": "x", "object": "chat.completion", "model": "m", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}]},
        "anthropic": {"id": "x", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
                      "content": [{"type": "text", "text": "hi"}], "usage": {"input_tokens": 1, "output_tokens": 1}},
        "bedrock": {"output": {"message": {"role": "assistant", "content": [{"text": "hi"}]}}, "stopReason": "end_turn",
                    "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 1}},
        "gemini": {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}}
    body = gzip.compress(json.dumps(answer[provider.name]).encode())
    server.script([Fault(status_code=200, raw_body=body, headers=(("content-encoding", "gzip"),))])
    outcome = call(provider)
    assert outcome.error is None, outcome.error


@pytest.mark.parametrize("value, ok", [("1e23", False), ("100000000000000000000000", False), ("86400000", True)])
def test_timeouts_the_loader_accepts_are_usable(starter, value, ok):
    from click.testing import CliRunner

    from replayci.cli import cli

    contract = starter / "packs" / "starter" / "contracts" / "get_weather.yaml"
    contract.write_text(contract.read_text("utf-8").replace(
        "tool: get_weather\n", f"tool: get_weather\ntimeouts:\n  total_ms: {value}\n", 1), "utf-8")
    done = CliRunner().invoke(cli, ["validate"])
    assert done.exit_code == (0 if ok else 2), done.output
    if not ok:
        assert "timeouts.total_ms: expected a whole number of milliseconds > 0 (at most 86400000" in done.output
