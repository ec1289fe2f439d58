"""The capture proxy keeps secrets out however an answer carries them: an environment key the
model spells over several stream deltas is written redacted, reassembled; text `redact.fields`
blanks never names a file, a folder, a case or a description."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from proxy_support import Proxied, RawStream, Upstream, chat

from replayci.api import run as run_packs
from replayci.cli import cli

SECRET = "envgw5b1d9e3c7a2f4e6d80"  # no provider's key shape: only the environment names it
CHUNK = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini"}


@pytest.fixture
def upstream():
    with Upstream() as up:
        yield up


@pytest.fixture
def streaming():
    with RawStream() as up:
        yield up


def _sse(deltas: list[str]) -> bytes:
    events = [{**CHUNK, "choices": [{"index": 0, "delta": {"content": d}, "finish_reason": None}]} for d in deltas]
    events.append({**CHUNK, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return ("".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n").encode()


def _anthropic_sse(deltas: list[str]) -> bytes:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
               "stop_reason": None, "usage": {"input_tokens": 5, "output_tokens": 1}}
    events = [("message_start", {"type": "message_start", "message": message}),
              ("content_block_start", {"type": "content_block_start", "index": 0,
                                       "content_block": {"type": "text", "text": ""}}),
              *(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": d}}) for d in deltas),
              ("content_block_stop", {"type": "content_block_stop", "index": 0}),
              ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                 "usage": {"output_tokens": 9}}),
              ("message_stop", {"type": "message_stop"})]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


# Each API's stream of text deltas: (route, its request, the stream of these deltas).
STREAMS = {
    "openai-chat": ("/v1/chat/completions", {**chat("Say my key"), "stream": True}, _sse),
    "anthropic": ("/anthropic/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 50, "stream": True,
                                             "messages": [{"role": "user", "content": "Say my key"}]},
                  _anthropic_sse),
}


def _held(pack: Path) -> str:
    """Every byte the pack holds, its file and folder names included."""
    files = sorted(p for p in pack.rglob("*") if p.is_file())
    return "\n".join([*(str(p.relative_to(pack)) for p in pack.rglob("*")), *(p.read_text("utf-8") for p in files)])


@pytest.mark.parametrize("api", STREAMS)
@pytest.mark.parametrize("cuts", [(11,), (4, 9, 17), tuple(range(1, len(SECRET)))], ids=["two", "four", "by-char"])
def test_a_key_split_over_stream_deltas_is_written_redacted_and_reassembled(tmp_path, streaming, monkeypatch,
                                                                            cuts, api):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    route, body, stream = STREAMS[api]
    bounds = (0, *cuts, len(SECRET))
    pieces = [SECRET[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    streaming.body = stream(["Your key: ", *pieces, ". Keep it safe."])
    pack = tmp_path / "p"
    with Proxied(pack, "record", streaming.url) as px:
        answer = px.post(route, body)
        assert answer.status_code == 200
    held = _held(pack)
    assert (pack / "golden").exists(), px.lines
    longest = max(pieces, key=len) if len(pieces) < 5 else SECRET  # a piece long enough to be told apart
    for text in (held, "\n".join(px.lines)):
        assert SECRET not in text and longest not in text, text
    (case,) = run_packs([str(pack)], provider="recorded").cases
    assert case.status == "pass", (case.status, case.reason)
    assert case.response["content"] == "Your key: [REDACTED]. Keep it safe."  # the pack holds it reassembled
    ran = CliRunner().invoke(cli, ["--pack", str(pack), "--provider", "recorded", "--report-json",
                                   str(tmp_path / "r.json"), "-v"])
    report = (tmp_path / "r.json").read_text("utf-8")
    assert ran.exit_code == 0 and "[REDACTED]" in report, ran.output
    assert longest not in report + ran.output and SECRET not in report + ran.output
    with Proxied(pack, "replay") as px:  # the proxy serves the redacted stream again, framing and all
        served = px.post(route, body)
        assert served.status_code == 200 and SECRET not in served.text and "[REDACTED]" in served.text


def test_a_stream_without_a_key_is_written_as_it_came(tmp_path, streaming, monkeypatch):
    """The reassembly check leaves an answer holding no key byte for byte."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    streaming.body = _sse(["It is ", "sunny ", "in Paris."])
    pack = tmp_path / "p"
    with Proxied(pack, "record", streaming.url) as px:
        assert px.post("/v1/chat/completions", {**chat("Weather?"), "stream": True}).status_code == 200
    (fixture,) = sorted((pack / "golden").rglob("*.json"))
    assert json.loads(fixture.read_text("utf-8"))["response"] == streaming.body.decode()


def _tool_sse(arguments: list[str]) -> bytes:
    """A chat stream calling `save` with its arguments' text in these deltas."""
    start = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "save", "arguments": ""}}
    deltas = [{"tool_calls": [start]}, *({"tool_calls": [{"index": 0, "function": {"arguments": a}}]}
                                         for a in arguments)]
    events = [{**CHUNK, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    events.append({**CHUNK, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return ("".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n").encode()


def test_a_key_no_piece_of_which_spells_it_is_answered_but_never_written(tmp_path, streaming, monkeypatch):
    """A key split over argument deltas with one letter JSON-escaped: no delta, nor any spelling
    of the key, holds it, yet the call read whole does. The client gets its answer; the pack, the
    log and a later replay never see the key, and the log says why nothing was written."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    escaped = SECRET[:9] + f"\\u{ord(SECRET[9]):04x}" + SECRET[10:]  # one letter as \\uXXXX in the arguments
    arguments = '{"note": "' + escaped + '"}'
    streaming.body = _tool_sse([arguments[:14], arguments[14:30], arguments[30:]])
    pack = tmp_path / "p"
    body = {**chat("Save my key"), "stream": True}
    with Proxied(pack, "record", streaming.url) as px:
        answer = px.post("/v1/chat/completions", body)
        assert answer.status_code == 200 and answer.content == streaming.body  # the app is served all the same
    assert any("not written" in line and "spells a credential" in line for line in px.lines), px.lines
    assert not list(pack.rglob("*.json")), _held(pack)  # no fixture holds the answer
    held = _held(pack) if pack.exists() else ""
    assert SECRET not in held and SECRET[:9] not in held, held
    assert SECRET not in "\n".join(px.lines)


def test_text_redaction_removes_never_names_a_file_a_folder_or_a_case(tmp_path, upstream, monkeypatch):
    """What `redact.fields` blanks (the user's words) and the environment's key said by the user
    appear nowhere in the pack: not in fixtures, file or folder names, case ids or descriptions
    of the single calls, the session and their contracts."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    word = "zanzibarquux"
    question = f"{word} {SECRET} what is the weather in Paris?"
    first = chat(question)
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather",
                                                             "arguments": json.dumps({"location": "Paris"})}}
    second = {**first, "messages": [*first["messages"], {"role": "assistant", "content": None, "tool_calls": [call]},
                                    {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"}]}
    pack = tmp_path / "p"
    with Proxied(pack, "record", upstream.url, redact_fields=("$.request.messages[*].content",
                                                              "$.original_request.messages[*].content")) as px:
        assert px.post("/v1/chat/completions", first).status_code == 200
        assert px.post("/v1/chat/completions", second).status_code == 200
        assert px.post("/v1/chat/completions", chat(f"{word} {SECRET} what is the weather in Rome?")).status_code == 200
    held = _held(pack)
    assert "session" in held and "chat-" in held, held  # a session and single calls were written
    assert word not in held and SECRET not in held and word not in "\n".join(px.lines)
    assert [c.status for c in run_packs([str(pack)], provider="recorded").cases] == ["pass"] * 4
