"""Agent sessions in recorded calls, and which API a recorded request path is."""
from __future__ import annotations

import json

import pytest

from replayci.capture.endpoints import classify
from replayci.capture.sessions import Call, group, session_key, tool_results, trajectory
from replayci.core.hashing import args_hash

SYSTEM = {"role": "system", "content": "Use the tools."}
USER = {"role": "user", "content": "Weather in Paris, then in Rome?"}


def answer(*calls, text=None) -> dict:
    return {"success": True, "content": text, "stop_reason": "tool_calls" if calls else "stop",
            "tool_calls": [{"id": cid, "name": name, "arguments": args} for cid, name, args in calls]}


def assistant(*calls) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for cid, name, args in calls]}


def tool(cid: str, content: str) -> dict:
    return {"role": "tool", "tool_call_id": cid, "content": content}


PARIS, ROME = ("c1", "weather", {"city": "Paris"}), ("c2", "weather", {"city": "Rome"})


def loop(api: str = "openai-chat") -> list[Call]:
    """Three calls: Paris, then Rome (its result after Paris's), then the answer."""
    m1 = [SYSTEM, USER]
    m2 = [*m1, assistant(PARIS), tool("c1", "sunny")]
    m3 = [*m2, assistant(ROME), tool("c2", "rain")]
    return [Call({"messages": m1}, answer(PARIS), api), Call({"messages": m2}, answer(ROME), api),
            Call({"messages": m3}, answer(text="Sunny, then rain."), api)]


def test_a_loop_of_three_calls_is_one_session_with_its_tool_results():
    calls = loop()
    [session] = group(calls)
    assert session.members == [0, 1, 2]
    steps = trajectory(calls, session)
    assert [s["tool_results"] for s in steps] == [
        [{"call_id": "c1", "tool": "weather", "args_hash": args_hash({"city": "Paris"}), "result": "sunny"}],
        [{"call_id": "c2", "tool": "weather", "args_hash": args_hash({"city": "Rome"}), "result": "rain"}], []]
    assert [r["arguments"] for r in tool_results(session)] == [{"city": "Paris"}, {"city": "Rome"}]


def test_what_breaks_a_loop():
    base = loop()
    # Another API continues no loop of this one.
    assert group([base[0], Call(base[1].neutral, base[1].response, "anthropic")]) == []
    # Arguments other than the answer's.
    other = json.loads(json.dumps(base[1].neutral))
    other["messages"][2]["tool_calls"][0]["function"]["arguments"] = json.dumps({"city": "Lyon"})
    assert group([base[0], Call(other, base[1].response, "openai-chat")]) == []
    # No tool result after the assistant turn.
    cut = {"messages": base[1].neutral["messages"][:-1]}
    assert group([base[0], Call(cut, base[1].response, "openai-chat")]) == []
    # Another assistant turn after the results.
    more = {"messages": [*base[1].neutral["messages"], {"role": "assistant", "content": "hm"}]}
    assert group([base[0], Call(more, base[1].response, "openai-chat")]) == []
    # An error answer ends a loop.
    failed = Call(base[0].neutral, {**base[0].response, "success": False}, "openai-chat")
    assert group([failed, base[1]]) == []
    # An earlier message changed.
    edited = {"messages": [SYSTEM, {"role": "user", "content": "Weather in Oslo?"}, *base[1].neutral["messages"][2:]]}
    assert group([base[0], Call(edited, base[1].response, "openai-chat")]) == []


def test_what_a_loop_may_change():
    base = loop()
    # The agent's follow-up user turn after the results, and a new system prompt.
    follow = {"messages": [{"role": "system", "content": "Use the tools. Artifacts: a.png"},
                           *base[1].neutral["messages"][1:], {"role": "user", "content": "Go on."}],
              "tools": [{"type": "function", "function": {"name": "other"}}]}
    [session] = group([base[0], Call(follow, base[1].response, "openai-chat")])
    assert session.members == [0, 1]


def test_two_interleaved_conversations_are_two_sessions_and_a_lone_call_none():
    a, b = loop(), loop()
    for c in b:  # the same loop with another user question
        c.neutral["messages"][1] = {"role": "user", "content": "Weather in Oslo?"}
    lone = Call({"messages": [{"role": "user", "content": "hi"}]}, answer(text="hello"), "openai-chat")
    sessions = group([a[0], b[0], lone, a[1], b[1], b[2], a[2]])
    assert [s.members for s in sessions] == [[0, 3, 6], [1, 4, 5]]


def test_a_session_key_ignores_minted_ids_only():
    calls = loop()
    [session] = group(calls)
    renamed = json.loads(json.dumps([(c.neutral, c.response) for c in calls]).replace('"c1"', '"call_9"'))
    again = [Call(n, r, "openai-chat") for n, r in renamed]
    assert session_key(again, group(again)[0]) == session_key(calls, session)
    changed = json.loads(json.dumps([(c.neutral, c.response) for c in calls]).replace('"rain"', '"snow"'))
    other = [Call(n, r, "openai-chat") for n, r in changed]
    assert session_key(other, group(other)[0]) != session_key(calls, session)


@pytest.mark.parametrize(("method", "path", "body", "api", "model", "why"), [
    ("POST", "/v1/chat/completions", None, "openai-chat", None, ""),
    ("POST", "/openai/deployments/x/chat/completions", None, "openai-chat", None, ""),
    ("POST", "/v1/responses", None, "openai-responses", None, ""),
    ("POST", "/v1/messages", None, "anthropic", None, ""),
    ("POST", "/v1beta/models/gemini-2.0-flash:generateContent", None, "gemini", "gemini-2.0-flash", ""),
    ("POST", "/v1/projects/p/locations/l/publishers/google/models/gemini-pro:streamGenerateContent", None,
     "gemini", "gemini-pro", ""),
    ("POST", "/model/anthropic.claude-3/invoke", {"anthropic_version": "bedrock-2023-05-31"}, "anthropic",
     "anthropic.claude-3", ""),
    ("POST", "/model/amazon.nova-lite/invoke", {"messages": []}, "bedrock", "amazon.nova-lite", ""),
    ("POST", "/model/amazon.nova-lite/converse", None, "bedrock", "amazon.nova-lite", ""),
    ("POST", "/api/chat", None, "ollama", None, ""),
    ("POST", "/v1/completions", None, None, None, "unsupported"),
    ("POST", "/api/generate", None, None, None, "unsupported"),
    ("POST", "/v2/chat", None, None, None, "unsupported"),
    ("POST", "/v1/embeddings", None, None, None, "skipped"),
    ("POST", "/v1/messages/count_tokens", None, None, None, "skipped"),
    ("POST", "/v1beta/models/text-embedding-004:embedContent", None, None, None, "skipped"),
    ("POST", "/v1/audio/transcriptions", None, None, None, "skipped"),
    ("POST", "/batch/", None, None, None, "skipped"),
    ("GET", "/v1/chat/completions", None, None, None, "skipped"),
])
def test_which_api_a_path_is(method, path, body, api, model, why):
    endpoint = classify(method, path, body)
    assert (endpoint.api, endpoint.model) == (api, model)
    assert bool(endpoint.unsupported) == (why == "unsupported") and bool(endpoint.skipped) == (why == "skipped")
    assert endpoint.streams == path.endswith("streamGenerateContent")
