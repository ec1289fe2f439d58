"""The capture proxy in one process: matching, order, misses, modes, secrets, bad requests,
concurrency, streams as they arrive, contracts kept or appended, and Ctrl-C."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2
import pytest
import warmed
import yaml
from fakeserver import FakeServer, Reply
from proxy_support import KEY, Proxied, Upstream, chat

from replayci.api import run as run_packs
from replayci.capture.proxy import open_session, parse_upstreams

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def upstream():
    with Upstream() as up:
        yield up


def pack_text(pack: Path) -> str:
    return "\n".join(p.read_text("utf-8") for p in sorted(pack.rglob("*")) if p.is_file())


def test_binds_loopback_only(tmp_path):
    with Proxied(tmp_path / "p", "off") as px:
        sock = px.session.server._sock
        assert sock.getsockname()[0] == "127.0.0.1"
        # Named TCP, so asyncio turns Nagle off on its connections (else ~40 ms per answer).
        assert sock.proto == socket.IPPROTO_TCP


def test_bad_requests_get_a_provider_shaped_400(tmp_path):
    with Proxied(tmp_path / "p", "auto") as px:
        not_json = px.post("/v1/chat/completions", b"{not json")
        assert not_json.status_code == 400 and not_json.json()["error"]["type"] == "invalid_request_error"
        assert "not a JSON object" in not_json.json()["error"]["message"]
        listed = px.post("/anthropic/v1/messages", b"[1, 2]")
        assert listed.status_code == 400 and listed.json()["type"] == "error"
        assert listed.json()["error"]["type"] == "invalid_request_error"
        unknown = px.post("/gemini/v1beta/models/g:countTokens", {"contents": []})
        assert unknown.status_code == 400 and unknown.json()["error"]["status"] == "INVALID_ARGUMENT"
        assert "/v1/chat/completions" in unknown.json()["error"]["message"]
        get = px.client.get("/v1/models")
        assert get.status_code == 400 and "does not serve GET /v1/models" in get.json()["error"]["message"]
        assert px.stats.rejected == 4
        # Still serving.
        assert px.post("/v1/nope", {}).status_code == 400


def test_replay_matches_without_ignored_fields_and_serves_identical_requests_in_order(tmp_path):
    pack = tmp_path / "p"
    with FakeServer() as server:
        server.script([Reply.plain_text("first"), Reply.plain_text("second")])
        with Proxied(pack, "record", server.url) as px:
            for user in ("alice", "bob"):
                assert px.post("/v1/chat/completions", chat("hi", user=user, metadata={"k": user})).status_code == 200
    with Proxied(pack, "replay") as px:
        answers = [px.post("/v1/chat/completions", chat("hi", user="carol", service_tier="flex"))
                   for _ in range(3)]
        assert [a.json()["choices"][0]["message"]["content"] for a in answers[:2]] == ["first", "second"]
        third = answers[2]
        assert third.status_code == 404 and third.json()["error"]["code"] == "replay_miss"
        assert "its 2 recorded answers were used already" in third.json()["error"]["message"]
        assert px.stats.replayed == 2 and px.stats.missed == 1
    # --ignore replaces the default list: `user` now counts.
    with Proxied(pack, "replay", ignore=("metadata",)) as px:
        missed = px.post("/v1/chat/completions", chat("hi", user="carol"))
        assert missed.status_code == 404
        assert 'first differs at $.user: recorded "alice", got "carol"' in missed.json()["error"]["message"]


def test_a_miss_in_a_long_text_shows_both_texts_around_their_first_difference(tmp_path, upstream):
    pack = tmp_path / "p"
    prompt = "You are a support agent for Acme. " * 8 + "Apologise for late orders."
    with Proxied(pack, "record", upstream.url) as px:
        assert px.post("/v1/chat/completions", chat(prompt)).status_code == 200
    with Proxied(pack, "replay") as px:
        message = px.post("/v1/chat/completions", chat(prompt + " Be concise.")).json()["error"]["message"]
    # Both texts are cut to the place they part, each quoted to its end.
    assert ('first differs at $.messages[0].content: recorded "…ent for Acme. Apologise for late orders.", '
            'got "…ent for Acme. Apologise for late orders. Be concise."') in message, message


def test_a_miss_names_the_nearest_exchange_in_each_provider_shape(tmp_path, upstream):
    pack = tmp_path / "p"
    anthropic_body = {"model": "claude-x", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}
    gemini_body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    with Proxied(pack, "record", upstream.url) as px:
        assert px.post("/anthropic/v1/messages", anthropic_body).status_code == 200
        assert px.post("/gemini/v1beta/models/gemini-2.0-flash:generateContent", gemini_body).status_code == 200
    with Proxied(pack, "replay") as px:
        miss = px.post("/anthropic/v1/messages", {**anthropic_body, "max_tokens": 60})
        assert miss.status_code == 404 and miss.json()["error"]["type"] == "not_found_error"
        assert "first differs at $.max_tokens: recorded 50, got 60" in miss.json()["error"]["message"]
        assert "golden/captured_no_tools/messages-" in miss.json()["error"]["message"]
        miss = px.post("/gemini/v1/models/gemini-2.0-flash:generateContent", gemini_body)
        assert miss.json()["error"]["status"] == "NOT_FOUND" and miss.json()["error"]["code"] == 404
        assert "first differs at the endpoint" in miss.json()["error"]["message"]
        assert px.lines and px.lines[0].startswith("replayci proxy (replay): no recorded answer")


def test_auto_replays_what_is_recorded_and_records_the_rest(tmp_path, upstream):
    pack = tmp_path / "p"
    with Proxied(pack, "auto", upstream.url) as px:
        first = px.post("/v1/chat/completions", chat("hello"))
        again = px.post("/v1/chat/completions", chat("hello"))
        assert first.json() != again.json()  # a second identical request is a new exchange
    assert len(upstream.received) == 2
    with Proxied(pack, "auto", upstream.url) as px:
        assert px.post("/v1/chat/completions", chat("hello")).json() == first.json()
        assert px.post("/v1/chat/completions", chat("hello")).json() == again.json()
        assert px.post("/v1/chat/completions", chat("other")).status_code == 200
        assert (px.stats.replayed, px.stats.recorded) == (2, 1)
    assert len(upstream.received) == 3


def test_record_overwrites_what_it_records_again(tmp_path):
    pack = tmp_path / "p"
    with FakeServer() as server:
        for text in ("old", "new"):
            server.script([Reply.plain_text(text)])
            with Proxied(pack, "record", server.url) as px:
                px.post("/v1/chat/completions", chat("hi"))
    files = list((pack / "golden").rglob("*.json"))
    assert len(files) == 1
    assert json.loads(files[0].read_text())["response"]["choices"][0]["message"]["content"] == "new"
    with Proxied(pack, "replay") as px:
        assert px.post("/v1/chat/completions", chat("hi")).json()["choices"][0]["message"]["content"] == "new"


def test_off_forwards_and_writes_nothing(tmp_path, upstream):
    with Proxied(tmp_path / "p", "off", upstream.url) as px:
        answer = px.post("/v1/chat/completions", chat())
        assert answer.status_code == 200 and answer.headers["x-request-id"] == "req_123"
        assert px.stats.forwarded == 1
    assert not (tmp_path / "p").exists()


def test_an_unreachable_upstream_is_a_502_without_the_key(tmp_path):
    with Proxied(tmp_path / "p", "record", "http://127.0.0.1:9") as px:
        answer = px.post("/anthropic/v1/messages", {"model": "m", "max_tokens": 1, "messages": []},
                         headers={"x-api-key": KEY})
        assert answer.status_code == 502 and answer.json()["error"]["type"] == "api_error"
        assert KEY not in answer.text and px.stats.failed == 1


def test_no_secret_reaches_the_pack_however_it_is_sent(tmp_path, upstream):
    pack = tmp_path / "p"
    upstream.echo_key_in_body = True  # a provider that echoes the credential back
    secrets = {"authorization": f"Bearer {KEY}", "x-api-key": "sk-ant-XAPIKEY-0123456789",
               "x-goog-api-key": "AIzaGOOGKEY-0123456789", "api-key": "azure-APIKEY-0123456789",
               "X-Custom-Token": "custom-TOKEN-0123456789"}
    with Proxied(pack, "record", upstream.url) as px:
        px.post("/v1/chat/completions", chat(f"my key is {KEY}"), headers=secrets)
        px.post("/anthropic/v1/messages?beta=true", {"model": "m", "max_tokens": 5, "messages": [
            {"role": "user", "content": "hi"}], "stream": True}, headers=secrets)
        px.post("/gemini/v1beta/models/g:generateContent?key=AIzaQUERYKEY-0123456789",
                {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
    received = upstream.received
    assert received[0][1]["authorization"] == f"Bearer {KEY}" and received[0][1]["x-goog-api-key"]
    assert received[2][3] == "key=AIzaQUERYKEY-0123456789"  # forwarded as sent
    text = pack_text(pack)
    for secret in (KEY, "XAPIKEY", "GOOGKEY", "APIKEY-", "TOKEN-0123", "QUERYKEY"):
        assert secret not in text
    assert "[REDACTED]" in text
    with Proxied(pack, "replay") as px:  # the key in the prompt still matches its blanked recording
        assert px.post("/v1/chat/completions", chat(f"my key is {KEY}")).status_code == 200
        assert px.post("/gemini/v1beta/models/g:generateContent?key=OTHERKEY-0123456789",
                       {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}).status_code == 200


def test_redact_fields_blank_what_is_written(tmp_path, upstream):
    pack = tmp_path / "p"
    with Proxied(pack, "record", upstream.url, redact_fields=("$.response.choices[*].message.content",)) as px:
        px.post("/v1/chat/completions", chat("Say hello"))
    assert "echo: Say hello" not in pack_text(pack) and "[REDACTED]" in pack_text(pack)
    (fixture,) = (pack / "golden").rglob("*.json")
    assert fixture.name.startswith("chat-say-hello-")
    # What a redact field blanks never names a file either.
    blanked = tmp_path / "q"
    fields = ("$.request.messages[*].content", "$.original_request.messages[*].content")
    with Proxied(blanked, "record", upstream.url, redact_fields=fields) as px:
        px.post("/v1/chat/completions", chat("My secret plan"))
    (fixture,) = (blanked / "golden").rglob("*.json")
    assert fixture.name.startswith("chat-redacted-")
    assert "secret" not in (blanked / "contracts" / "captured_get_weather.yaml").read_text()


def test_32_concurrent_clients_lose_nothing(tmp_path, upstream):
    pack = tmp_path / "p"
    questions = [f"What is the weather in City{i}?" for i in range(32)]
    with Proxied(pack, "record", upstream.url) as px:
        with ThreadPoolExecutor(32) as pool:
            answers = list(pool.map(lambda q: px.post("/v1/chat/completions", chat(q)).json(), questions))
        assert px.stats.recorded == 32
    assert len(list((pack / "golden").rglob("*.json"))) == 32
    contract = yaml.safe_load((pack / "contracts" / "captured_get_weather.yaml").read_text())
    assert len(contract["golden_cases"]) == 32 and contract["tool"] == "get_weather"
    result = run_packs([str(pack)], provider="recorded")
    assert result.ok and len(result.cases) == 32 and all(c.status == "pass" for c in result.cases)
    with Proxied(pack, "replay") as px:
        with ThreadPoolExecutor(32) as pool:
            replayed = list(pool.map(lambda q: px.post("/v1/chat/completions", chat(q)).json(), questions))
    assert replayed == answers


def test_streams_pass_through_as_they_arrive_and_replay_as_streams(tmp_path):
    pack = tmp_path / "p"
    body = chat("Say one two three four", stream=True)
    body.pop("tools")
    with Upstream(gap=0.15) as slow, Proxied(pack, "record", slow.url) as px:
        arrived, pieces = [], []
        with px.client.stream("POST", "/v1/chat/completions", content=json.dumps(body).encode()) as answer:
            assert answer.headers["content-type"].startswith("text/event-stream")
            for piece in answer.iter_bytes():
                arrived.append(time.monotonic())
                pieces.append(piece)
        sent = slow.sent_at
    # Each event reached the client as the upstream sent it, not all at the end.
    assert len(arrived) >= 6 and arrived[-1] - arrived[0] > 0.6
    assert max(a - s for a, s in zip(arrived, sent, strict=False)) < 0.1
    with Proxied(pack, "replay") as px:
        with px.client.stream("POST", "/v1/chat/completions", content=json.dumps(body).encode()) as answer:
            replayed = list(answer.iter_bytes())
            assert answer.headers["content-type"].startswith("text/event-stream")
    assert b"".join(replayed) == b"".join(pieces) and len(replayed) == len(sent)


def test_a_contract_someone_edited_gets_cases_appended(tmp_path, upstream):
    pack = tmp_path / "p"
    with Proxied(pack, "record", upstream.url) as px:
        px.post("/v1/chat/completions", chat("weather in Paris"))
    path = pack / "contracts" / "captured_get_weather.yaml"
    lines = path.read_text().splitlines(keepends=True)
    assert lines[1].startswith("# replayci: generated")
    edited = "".join([lines[0], "# reviewed by me\n", *lines[2:]])  # the generated marker removed
    path.write_text(edited)
    with Proxied(pack, "record", upstream.url) as px:
        px.post("/v1/chat/completions", chat("weather in Rome"))
    text = path.read_text()
    assert text.startswith(edited) and "# reviewed by me" in text
    cases = yaml.safe_load(text)["golden_cases"]
    assert len(cases) == 2 and cases[1]["id"].startswith("chat-weather-in-rome-")
    assert cases[1]["assertions"]["expected_tool_calls"] == [
        {"name": "get_weather", "argument_invariants": [{"path": "$.location", "equals": "Rome"}]}]
    assert run_packs([str(pack)], provider="recorded").ok


def test_a_generated_contract_is_rewritten_while_its_first_line_and_marker_stay(tmp_path, upstream):
    pack = tmp_path / "p"
    with Proxied(pack, "record", upstream.url) as px:
        px.post("/v1/chat/completions", chat("weather in Paris"))
    path = pack / "contracts" / "captured_get_weather.yaml"
    path.write_text(path.read_text() + "# a note that the next capture replaces\n")
    with Proxied(pack, "record", upstream.url) as px:
        px.post("/v1/chat/completions", chat("weather in Rome"))
    text = path.read_text()
    assert "a note" not in text and len(yaml.safe_load(text)["golden_cases"]) == 2
    # Another first line: the contract is the user's, the next capture is appended.
    path.write_text(text.replace("# Written by `replayci proxy`", "# Mine, once written by replayci", 1))
    with Proxied(pack, "record", upstream.url) as px:
        px.post("/v1/chat/completions", chat("weather in Oslo"))
    assert path.read_text().startswith("# Mine, once written by replayci")
    assert len(yaml.safe_load(path.read_text())["golden_cases"]) == 3


def test_each_captured_answer_is_pinned_by_its_own_case(tmp_path, upstream):
    pack = tmp_path / "p"
    with Proxied(pack, "record", upstream.url) as px:
        px.post("/v1/chat/completions", chat("weather in Paris"))
        px.post("/v1/chat/completions", chat("no weather question"))  # a text answer, same tools
    contract = yaml.safe_load((pack / "contracts" / "captured_get_weather.yaml").read_text())
    # A text answer among the cases: no contract-wide tool; each case says what it expects.
    assert "tool" not in contract and "expected_tool_calls" not in contract and "status" not in contract
    weather, text = sorted(contract["golden_cases"], key=lambda c: c["id"], reverse=True)
    assert weather["id"].startswith("chat-weather-in-paris-") and text["id"].startswith("chat-no-weather-question-")
    assert weather["assertions"] == {"output_invariants": [{"path": "$.tool_calls", "length_eq": 1}],
                                     "expected_tool_calls": [{"name": "get_weather", "argument_invariants": [
                                         {"path": "$.location", "equals": "Paris"}]}]}
    assert text["assertions"] == {"output_invariants": [{"path": "$.tool_calls", "length_eq": 0}]}
    result = run_packs([str(pack)], provider="recorded")
    assert [c.status for c in result.cases] == ["pass", "pass"] and not any(c.draft for c in result.cases)


def test_draft_keeps_what_every_captured_answer_satisfies(tmp_path, upstream):
    pack = tmp_path / "p"
    with Proxied(pack, "record", upstream.url, draft=True) as px:
        px.post("/v1/chat/completions", chat("weather in Paris"))
        px.post("/v1/chat/completions", chat("no weather question"))
    contract = yaml.safe_load((pack / "contracts" / "captured_get_weather.yaml").read_text())
    assert "tool" not in contract and "expected_tool_calls" not in contract
    assert contract["status"] == "observed" and len(contract["golden_cases"]) == 2
    assert not any("assertions" in c for c in contract["golden_cases"])
    result = run_packs([str(pack)], provider="recorded")
    assert [c.status for c in result.cases] == ["pass", "pass"] and all(c.draft for c in result.cases)
    assert result.summary["draft_contracts"] == 1


def test_replay_needs_a_pack_and_ports_are_checked(tmp_path):
    from replayci.core.errors import ConfigError

    with pytest.raises(ConfigError, match="no pack there to replay from"):
        open_session(str(tmp_path / "missing"), "replay", port=0, upstreams=parse_upstreams([]))
    with pytest.raises(ConfigError, match="expected NAME=URL"):
        parse_upstreams(["opnai=http://x"])
    with Proxied(tmp_path / "p", "off") as px, pytest.raises(ConfigError, match="cannot listen"):
        open_session(str(tmp_path / "p"), "off", port=px.session.server.port, upstreams=parse_upstreams([]))


def test_without_a_command_it_serves_until_interrupted(tmp_path, upstream):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([*warmed.cli(env), "proxy", "--pack", "p", "--mode", "record",
                             "--port", "0", "--upstream", f"openai={upstream.url}/v1"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = [proc.stdout.readline() for _ in range(6)]
        assert lines[0].startswith("replayci proxy · record · pack p ")
        exports = dict(ln.strip().removeprefix("export ").split("=", 1) for ln in lines if "export" in ln)
        assert set(exports) == {"OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL"}
        answer = httpx2.post(exports["OPENAI_BASE_URL"] + "/chat/completions", json=chat(), timeout=30)
        assert answer.status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "1 recorded" in err and len(list((tmp_path / "p" / "golden").rglob("*.json"))) == 1


def test_a_capture_in_flight_is_written_before_the_session_ends(tmp_path, upstream):
    pack = tmp_path / "p"
    px = Proxied(pack, "record", upstream.url)
    done = threading.Event()

    def many():
        for i in range(20):
            px.post("/v1/chat/completions", chat(f"q{i}"))
        done.set()

    threading.Thread(target=many).start()
    assert done.wait(30)
    px.__exit__()
    assert len(list((pack / "golden").rglob("*.json"))) == 20


def test_a_stream_the_sdk_closes_right_after_done_is_captured_and_replays(tmp_path):
    # The openai SDK stops reading at `data: [DONE]` and closes the response; the upstream still
    # holds its connection open. The terminal event arrived: the exchange is complete.
    import openai

    pack = tmp_path / "p"
    body = {**chat(), "stream": True, "stream_options": {"include_usage": True}}

    def ask(url: str) -> list:
        client = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
        try:
            return [c.to_dict() for c in client.chat.completions.create(**body)]
        finally:
            client.close()

    with Upstream(linger=3.0) as up, Proxied(pack, "record", up.url) as px:
        recorded = ask(px.url)
        assert recorded[-1]["usage"]["total_tokens"] == 8
        deadline = time.monotonic() + 10
        while px.stats.recorded < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert px.stats.recorded == 1
    [written] = [json.loads(p.read_text()) for p in (pack / "golden").rglob("*.json")]
    assert written["meta"]["stream"] is True
    with Proxied(pack, "replay") as px:
        assert ask(px.url) == recorded
        assert (px.stats.replayed, px.stats.missed) == (1, 0)


def test_a_stream_the_client_leaves_before_its_end_is_not_captured(tmp_path):
    pack = tmp_path / "p"
    body = {**chat("Say one two three four"), "stream": True}
    body.pop("tools")
    with Upstream(gap=0.3) as slow, Proxied(pack, "record", slow.url) as px:
        with px.client.stream("POST", "/v1/chat/completions", content=json.dumps(body).encode()) as answer:
            next(answer.iter_bytes())  # the first piece, then hang up
        time.sleep(1.0)
        assert px.stats.recorded == 0
    assert not list(pack.rglob("golden/**/*.json"))


@pytest.mark.parametrize("mode", ["record", "auto"])
def test_recapturing_a_case_the_user_renamed_and_moved_adds_no_duplicate(tmp_path, upstream, mode):
    pack = tmp_path / "p"
    with Proxied(pack, "record", upstream.url) as px:
        px.post("/v1/chat/completions", chat("weather in Paris"))
    contract = pack / "contracts" / "captured_get_weather.yaml"
    [captured] = (pack / "golden").rglob("*.json")
    # The user moves the fixture to a folder of their own, renames it and its case, and reviews the contract.
    moved = pack / "golden" / "weather" / "paris.json"
    moved.parent.mkdir()
    captured.rename(moved)
    text = contract.read_text().replace("# replayci: generated", "# reviewed", 1)  # taken over
    text = text.replace(f"input_ref: {captured.parent.name}/{captured.name}", "input_ref: weather/paris.json")
    text = text.replace(f"id: {captured.stem}", "id: paris")
    contract.write_text(text)
    assert run_packs([str(pack)], provider="recorded").ok
    with Proxied(pack, mode, upstream.url) as px:
        assert px.post("/v1/chat/completions", chat("weather in Paris")).status_code == 200
        assert px.post("/v1/chat/completions", chat("weather in Rome")).status_code == 200  # new: captured
    files = sorted(str(p.relative_to(pack / "golden")) for p in (pack / "golden").rglob("*.json"))
    assert len(files) == 2 and "weather/paris.json" in files
    cases = yaml.safe_load(contract.read_text())["golden_cases"]
    assert [c["id"] for c in cases][0] == "paris" and len(cases) == 2
    assert run_packs([str(pack)], provider="recorded").ok


def test_replay_serves_recorded_answers_again_only_when_repeats_are_allowed(tmp_path):
    pack = tmp_path / "p"
    with FakeServer() as server:
        server.script([Reply.plain_text("first"), Reply.plain_text("second")])
        with Proxied(pack, "record", server.url) as px:
            for _ in range(2):
                px.post("/v1/chat/completions", chat("hi"))

    def texts(px, n):
        answers = [px.post("/v1/chat/completions", chat("hi")) for _ in range(n)]
        return [a.json()["choices"][0]["message"]["content"] if a.status_code == 200 else a.status_code
                for a in answers]

    with Proxied(pack, "replay") as px:
        assert texts(px, 3) == ["first", "second", 404]
    with Proxied(pack, "replay", allow_playback_repeats=True) as px:
        # in recorded order, then again from the start
        assert texts(px, 5) == ["first", "second", "first", "second", "first"]
        assert (px.stats.replayed, px.stats.missed) == (5, 0)
        other = px.post("/v1/chat/completions", chat("never recorded"))
        assert other.status_code == 404 and px.stats.missed == 1  # a request never recorded still misses


def test_the_playback_repeats_flag_goes_with_replay(tmp_path):
    from click.testing import CliRunner

    from replayci.cli import cli

    res = CliRunner().invoke(cli, ["proxy", "--pack", str(tmp_path / "p"), "--mode", "record",
                                   "--allow-playback-repeats", "--", sys.executable, "-c", "pass"])
    assert res.exit_code == 2 and "--allow-playback-repeats goes with --mode replay" in res.output
    assert not (tmp_path / "p").exists()


def test_an_agent_loop_through_the_proxy_is_written_as_a_scenario(tmp_path, upstream):
    pack = tmp_path / "p"
    first = chat("What is the weather in Paris?")
    with Proxied(pack, "record", upstream.url) as px:
        answer = px.post("/v1/chat/completions", first).json()
        px.post("/v1/chat/completions", chat("Unrelated: say hi"))  # another conversation between
        message = answer["choices"][0]["message"]
        [call] = message["tool_calls"]
        second = {**first, "messages": [*first["messages"], message,
                                         {"role": "tool", "tool_call_id": call["id"], "content": "Sunny"}]}
        px.post("/v1/chat/completions", second)
    [scenario] = list((pack / "golden").rglob("session-*.json"))
    doc = json.loads(scenario.read_text())
    assert len(doc["trajectory"]) == 2 and doc["request"]["messages"] == first["messages"]
    assert doc["trajectory"][0]["tool_results"][0]["result"] == "Sunny"
    assert len(doc["meta"]["session_of"]) == 2
    contract = yaml.safe_load((pack / "contracts" / f"{scenario.parent.name}.yaml").read_text())
    assert contract["scenario"] is True
    result = run_packs([str(pack)], provider="recorded")
    assert [c.status for c in result.cases if c.contract == scenario.parent.name] == ["pass"]
    # Captured again (the provider minting other ids), the session is not written twice.
    before = sorted(p.name for p in (pack / "golden").rglob("*.json"))
    with Proxied(pack, "record", upstream.url) as px:
        answer = px.post("/v1/chat/completions", first).json()
        message = answer["choices"][0]["message"]
        [call] = message["tool_calls"]
        px.post("/v1/chat/completions", {**first, "messages": [
            *first["messages"], message, {"role": "tool", "tool_call_id": call["id"], "content": "Sunny"}]})
    after = sorted(p.name for p in (pack / "golden").rglob("*.json"))
    assert [n for n in after if n.startswith("session-")] == [n for n in before if n.startswith("session-")]


def test_an_imported_cassette_is_served_in_replay(tmp_path):
    from cassettes import ANSWER, completion, first_request, interaction, loop_interactions, write_cassette

    from replayci.capture.importing import import_sources

    pack = tmp_path / "p"
    single = {**first_request(), "messages": [{"role": "user", "content": "Just say hi"}]}
    cassette = write_cassette(tmp_path / "c.yaml", [*loop_interactions(), interaction(single, completion(call=False))])
    import_sources([str(cassette)], str(pack), log=lambda line: None)
    with Proxied(pack, "replay") as px:
        assert px.session.store.exchanges == 3  # the two steps of the session and the single call
        first = px.post("/v1/chat/completions", first_request()).json()
        assert first["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
        assert px.post("/v1/chat/completions", single).json()["choices"][0]["message"]["content"] == ANSWER
        assert px.post("/v1/chat/completions", chat("Something else")).status_code == 404
        assert px.stats.missed == 1


def test_where_the_proxy_serves_an_imported_exchange():
    from replayci.capture.proxy.store import served_path

    assert served_path("gemini", "/v1beta/models/gemini-2.0-flash:streamGenerateContent") == \
        "/gemini/v1beta/models/gemini-2.0-flash:streamGenerateContent"
    assert served_path("gemini", "/v1/models/g:generateContent") == "/gemini/v1/models/g:generateContent"
    assert served_path("gemini", "/v1beta1/projects/p/locations/l/publishers/google/models/g:generateContent") == \
        "/gemini/v1beta/models/g:generateContent"
    assert served_path("anthropic", "/v1/messages") == "/anthropic/v1/messages"
    assert served_path("anthropic", "/model/anthropic.claude/invoke") == ""  # Bedrock: not a path it serves
    assert served_path("openai-responses", "/proxy/openai/responses") == "/v1/responses"
    assert served_path("bedrock", "/model/x/converse") == ""
