"""The capture proxy under hostile input: it answers every request in the provider's shape, never
writes a fixture the pack then refuses, never writes a key, and starts from a pack someone
edited by hand, however wrong."""
from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
import pytest
import warmed
from proxy_support import Proxied, RawStream, Upstream, chat

from replayci.api import load_pack
from replayci.api import run as run_packs
from replayci.core.errors import ConfigError


@pytest.fixture
def upstream():
    with Upstream() as up:
        yield up


def fixtures(pack: Path) -> list[Path]:
    return sorted((pack / "golden").rglob("*.json")) if (pack / "golden").exists() else []


# ------------------------------------------------------------------ request bodies that are not strict JSON

NOT_STRICT = {
    "nan": b'{"model": "m", "messages": [], "temperature": NaN}',
    "infinity": b'{"model": "m", "messages": [], "temperature": Infinity}',
    "minus-infinity": b'{"model": "m", "messages": [], "max_tokens": -Infinity}',
    "overflowing-number": b'{"model": "m", "messages": [], "temperature": 1e999}',
    "deep-100000": b'{"model": "m", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "deep-900": b'{"model": "m", "messages": [], "metadata": ' + b'{"a":' * 900 + b"1" + b"}" * 900 + b"}",
    "not-utf8": b'{"model": "m", "messages": [{"role": "user", "content": "\xff\xfe"}]}',
    "empty": b"",
}
PATHS = {"openai": "/v1/chat/completions", "anthropic": "/anthropic/v1/messages",
         "gemini": "/gemini/v1beta/models/g:generateContent"}


def provider_shaped(upstream: str, answer: httpx2.Response) -> str:
    """The message of a provider-shaped error body."""
    doc = answer.json()
    if upstream == "anthropic":
        assert doc["type"] == "error" and doc["error"]["type"] == "invalid_request_error"
        return doc["error"]["message"]
    if upstream == "gemini":
        assert doc["error"]["status"] == "INVALID_ARGUMENT" and doc["error"]["code"] == 400
        return doc["error"]["message"]
    assert doc["error"]["type"] == "invalid_request_error"
    return doc["error"]["message"]


@pytest.mark.parametrize("mode", ["auto", "off"])
@pytest.mark.parametrize("which", PATHS)
def test_a_body_that_is_not_strict_json_is_a_provider_shaped_400(tmp_path, upstream, which, mode):
    with Proxied(tmp_path / "p", mode, upstream.url) as px:
        for name, raw in NOT_STRICT.items():
            answer = px.post(PATHS[which], raw, headers={"content-type": "application/json"})
            assert answer.status_code == 400, (name, answer.status_code, answer.text[:300])
            message = provider_shaped(which, answer)
            assert "replayci proxy" in message and "Traceback" not in answer.text, (name, message)
        assert px.session.server.alive
        assert px.post(PATHS["openai"], chat()).status_code == 200  # still serving
    assert upstream.received and all(r[0] == "/v1/chat/completions" for r in upstream.received)
    assert len(upstream.received) == 1  # nothing refused went upstream


def test_a_body_over_the_size_limit_is_refused(tmp_path, upstream):
    from replayci.capture.proxy.checks import MAX_REQUEST_BYTES

    with Proxied(tmp_path / "p", "auto", upstream.url) as px:
        big = json.dumps(chat("x" * (MAX_REQUEST_BYTES + 10))).encode()
        answer = px.post(PATHS["openai"], big)
        assert answer.status_code == 413 and "larger than" in provider_shaped("openai", answer)
        assert not upstream.received


# ------------------------------------------------------------------ captures hold what --record holds

def test_a_capture_the_pack_would_refuse_is_not_written(tmp_path, upstream):
    pack = tmp_path / "p"
    with Proxied(pack, "record", upstream.url) as px:
        # The upstream echoes the question: half a surrogate pair comes back in its answer.
        surrogate = px.post(PATHS["openai"], json.dumps(chat("What about \ud800?")).encode())
        assert surrogate.status_code == 200  # the app still gets its answer
        assert px.post(PATHS["openai"], chat("What is the weather in Rome?")).status_code == 200
        px.session.store.flush()
        assert any("not written" in line and "surrogate" in line for line in px.lines), px.lines
    written = fixtures(pack)
    assert len(written) == 1 and "Rome" in written[0].read_text("utf-8")
    load_pack(str(pack))  # every file it wrote loads
    assert run_packs([str(pack)], provider="recorded").ok


def test_a_capture_over_the_fixture_size_limit_is_not_written(tmp_path, upstream):
    pack = tmp_path / "p"
    with Proxied(pack, "record", upstream.url, max_fixture_bytes=4096) as px:
        assert px.post(PATHS["openai"], chat("Tell me " + "about Paris " * 400)).status_code == 200
        assert px.post(PATHS["openai"], chat("What is the weather in Rome?")).status_code == 200
        px.session.store.flush()
        assert any("not written" in line and "4,096 bytes" in line for line in px.lines), px.lines
    assert len(fixtures(pack)) == 1
    assert run_packs([str(pack)], provider="recorded").ok


def test_the_proxy_writes_under_the_projects_own_fixture_limit(tmp_path, upstream):
    """fixtures.max_bytes in .replayci.yml bounds what the proxy writes as it bounds what runs read."""
    (tmp_path / ".replayci.yml").write_text("provider: recorded\nfixtures: {max_bytes: 4096}\n")
    app = tmp_path / "app.py"
    app.write_text(
        "import json, os, urllib.request\n"
        "for q in ('Tell me ' + 'about Paris ' * 400, 'What is the weather in Rome?'):\n"
        "    body = json.dumps({'model': 'gpt-4o-mini', 'messages': [{'role': 'user', 'content': q}]}).encode()\n"
        "    req = urllib.request.Request(os.environ['OPENAI_BASE_URL'] + '/chat/completions', body,\n"
        "                                 {'content-type': 'application/json', 'authorization': 'Bearer k'})\n"
        "    urllib.request.urlopen(req).read()\n")
    done = subprocess.run([*warmed.cli(), "proxy", "--pack", "packs/p", "--mode", "record",
                           "--upstream", f"openai={upstream.url}/v1", "--", sys.executable, str(app)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "not written" in done.stderr and "4,096 bytes" in done.stderr, done.stderr
    written = fixtures(tmp_path / "packs" / "p")
    assert len(written) == 1 and "Rome" in written[0].read_text("utf-8")


# ------------------------------------------------------------------ keys in unusual auth schemes

class _Quiet(BaseHTTPRequestHandler):
    """A test upstream: keep-alive, no request log, the request body read and dropped."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def drop_body(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))


class _Echo(_Quiet):
    """An upstream that says the credential it got back, as a provider's 401 does."""

    def do_POST(self):
        self.drop_body()
        value = self.headers.get("authorization") or ""
        token = value.split()[-1] if value.split() else value
        if value.lower().startswith("basic "):
            token = base64.b64decode(token).decode().split(":", 1)[1]
        if "=" in token:
            token = token.rsplit("=", 1)[1].strip('"')
        data = json.dumps({"error": {"message": f"Incorrect API key provided: {token}.",
                                     "type": "invalid_request_error", "code": "invalid_api_key"}}).encode()
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def echo_upstream():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


SECRET = "Zq7xKEY-live-4f9a0c1e7b2d4e6f8a0b"
SCHEMES = {
    "apikey": f"ApiKey {SECRET}",
    "key": f"Key {SECRET}",
    "bare": SECRET,
    "lower-bearer": f"bearer {SECRET}",
    "two-spaces": f"Bearer  {SECRET}",
    "tab": f"Bearer\t{SECRET}",
    "basic": "Basic " + base64.b64encode(f"user:{SECRET}".encode()).decode(),
    "digest": f'Digest username="app", realm="api", response="{SECRET}"',
    "sso-key": f"sso-key {SECRET}",
}


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_key_in_an_unusual_auth_scheme_echoed_back_never_reaches_the_pack(tmp_path, echo_upstream, scheme):
    pack = tmp_path / "p"
    with Proxied(pack, "record", echo_upstream) as px:
        answer = px.post(PATHS["openai"], chat(), headers={"authorization": SCHEMES[scheme]})
        assert answer.status_code == 401 and SECRET in answer.text  # the app sees what the upstream said
    text = "\n".join(p.read_text("utf-8") for p in pack.rglob("*") if p.is_file())
    assert fixtures(pack) and SECRET not in text and "[REDACTED]" in text


# ------------------------------------------------------------------ hand-edited captures

def _capture(tmp_path, upstream) -> tuple[Path, Path]:
    pack = tmp_path / "p"
    with Proxied(pack, "record", upstream.url) as px:
        assert px.post(PATHS["openai"], chat()).status_code == 200
        assert px.post(PATHS["openai"], chat("What is the weather in Rome?")).status_code == 200
    first, _ = fixtures(pack)
    return pack, first


EDITS = {
    "status-string": lambda d: d.update(status="200"),
    "status-impossible": lambda d: d.update(status=1000),
    "status-negative": lambda d: d.update(status=-1),
    "status-nan": lambda d: d.update(status=float("nan")),
    "status-true": lambda d: d.update(status=True),
    "response-nan": lambda d: d["response"].update(created=float("nan")),
    "response-infinity": lambda d: d.update(response=float("inf")),
    "headers-list": lambda d: d["meta"].update(headers=["retry-after", "1"]),
    "headers-number": lambda d: d["meta"].update(headers={"retry-after": 5}),
    "headers-newline": lambda d: d["meta"].update(headers={"retry-after": "1\r\nx-injected: yes"}),
    "content-type-list": lambda d: d["meta"].update(content_type=["application/json"]),
    "content-type-newline": lambda d: d["meta"].update(content_type="application/json\r\nx-injected: yes"),
    "query-list": lambda d: d["meta"].update(query=[1, 2]),
    "query-number-values": lambda d: d["meta"].update(query={"a": 1}),
    "occurrence-string": lambda d: d["meta"].update(occurrence="1"),
    "occurrence-zero": lambda d: d["meta"].update(occurrence=0),
    "stream-string": lambda d: d["meta"].update(stream="yes"),
    "endpoint-number": lambda d: d["meta"].update(endpoint=5),
    "meta-list": lambda d: d.update(meta=[]),
    "request-string": lambda d: d.update(request="x"),
    "request-tools-string": lambda d: d["request"].update(tools="x"),
    "request-messages-number": lambda d: d["request"].update(messages=5),
    "original-list": lambda d: d.update(original_request=[]),
    "ignore-string": lambda d: d["meta"].update(ignore="user"),
    "key-number": lambda d: d["meta"].update(key=5),
    "captured-at-number": lambda d: d["meta"].update(captured_at=5),
    "whole-list": lambda d: d.clear() or d.update({"__list__": True}),
}


def _write(path: Path, doc) -> None:
    if doc.get("__list__"):
        path.write_text("[1, 2]", "utf-8")
    else:
        path.write_text(json.dumps(doc, indent=2), "utf-8")  # json.dumps writes NaN and Infinity


@pytest.mark.parametrize("edit", EDITS)
@pytest.mark.parametrize("mode", ["replay", "auto"])
def test_a_hand_edited_capture_never_stops_the_proxy(tmp_path, upstream, edit, mode):
    pack, first = _capture(tmp_path, upstream)
    doc = json.loads(first.read_text("utf-8"))
    EDITS[edit](doc)
    _write(first, doc)
    try:
        px = Proxied(pack, mode, upstream.url)
    except ConfigError as exc:  # refused at start, clearly: acceptable, never an internal error
        assert first.name in str(exc)
        return
    with px:
        for question in ("What is the weather in Paris?", "What is the weather in Rome?"):
            try:
                answer = px.post(PATHS["openai"], chat(question))
            except httpx2.HTTPError as exc:  # a dropped connection
                pytest.fail(f"{edit}: the proxy dropped the connection: {exc!r}")
            assert 200 <= answer.status_code < 600 and answer.headers.get("x-injected") is None
            if "Rome" in question or mode == "auto":
                assert answer.status_code == 200, (edit, answer.text)
            answer.json()
        assert px.session.server.alive
    skipped = [line for line in px.lines if first.name in line]
    # (Not a capture at all: a file of the user's own, left alone. Fields the proxy does not serve
    # from are recomputed.)
    assert skipped or edit in ("meta-list", "whole-list", "captured-at-number", "key-number", "ignore-string"), \
        px.lines


def test_a_capture_that_is_not_json_or_too_deep_is_skipped_with_a_message(tmp_path, upstream):
    pack, first = _capture(tmp_path, upstream)
    for text in ("{not json", "[" * 100_000 + "]" * 100_000, "\xff"):
        first.write_bytes(text.encode("latin-1") if text == "\xff" else text.encode())
        with Proxied(pack, "replay") as px:
            assert px.post(PATHS["openai"], chat("What is the weather in Rome?")).status_code == 200
            assert px.post(PATHS["openai"], chat()).status_code == 404
        assert any(first.name in line for line in px.lines), px.lines


def test_the_proxy_only_ever_listens_on_loopback(tmp_path):
    with Proxied(tmp_path / "p", "off") as px:
        assert px.session.server._sock.getsockname()[0] == "127.0.0.1"
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.2", px.session.server.port), timeout=0.5).close()


@pytest.mark.parametrize("path", ["$..*", "$.request", "$.meta", "$.response", "$..content"])
def test_any_accepted_redact_path_leaves_captures_the_pack_reads(tmp_path, upstream, path):
    pack = tmp_path / "p"
    with Proxied(pack, "record", upstream.url, redact_fields=(path,)) as px:
        assert px.post(PATHS["openai"], chat()).status_code == 200
    assert fixtures(pack)
    result = run_packs([str(pack)], provider="recorded")
    assert all(c.status in ("pass", "fail") for c in result.cases), [(c.status, c.reason) for c in result.cases]
    with Proxied(pack, "replay") as px:  # and the proxy still serves what it captured
        assert px.post(PATHS["openai"], chat()).status_code == 200


WEATHER_TOOL = {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "location": {"type": "string"}}, "required": ["location"]}}
STREAMED = {
    "openai-chat": ("/v1/chat/completions", {**chat(), "stream": True}),
    "openai-responses": ("/v1/responses", {"model": "gpt-4o-mini", "input": "What is the weather in Paris?",
                                           "stream": True, "tools": [{"type": "function", **WEATHER_TOOL}]}),
    "anthropic": ("/anthropic/v1/messages", {
        "model": "claude-3-5-haiku-latest", "max_tokens": 100, "stream": True,
        "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
        "tools": [{"name": "get_weather", "input_schema": WEATHER_TOOL["parameters"]}]}),
    "gemini": ("/gemini/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse", {
        "contents": [{"role": "user", "parts": [{"text": "What is the weather in Paris?"}]}],
        "tools": [{"functionDeclarations": [WEATHER_TOOL]}]}),
}


def _events(text: str) -> list[str]:
    """The field names of a stream's lines, in order (its framing)."""
    return [line.split(":", 1)[0] for line in text.splitlines()]


def test_a_redacted_streamed_capture_keeps_its_framing_and_replays(tmp_path, upstream):
    pack = tmp_path / "p"
    sent = {}
    with Proxied(pack, "record", upstream.url, redact_fields=("$..*",)) as px:
        for api, (route, body) in STREAMED.items():  # one capture of each API's stream
            answer = px.post(route, body)
            sent[api] = answer.text  # the stream as the upstream sent it
            assert answer.status_code == 200 and "Paris" in sent[api], api
    written = {json.loads(f.read_text("utf-8"))["meta"]["api"]: f for f in fixtures(pack)}
    assert sorted(written) == sorted(STREAMED)
    for api, path in written.items():
        redacted = json.loads(path.read_text("utf-8"))["response"]
        assert isinstance(redacted, str) and _events(redacted) == _events(sent[api]), (api, redacted)
        assert "Paris" not in redacted and "[REDACTED]" in redacted, api
        for line in redacted.splitlines():  # each event's data is still JSON
            if line.startswith("data:") and line[5:].strip() != "[DONE]":
                json.loads(line[5:])
    result = run_packs([str(pack)], provider="recorded")
    assert len(result.cases) == 4 and all(c.status in ("pass", "fail") for c in result.cases), \
        [(c.status, c.reason) for c in result.cases]
    with Proxied(pack, "replay") as px:  # the proxy serves each redacted stream, framing and all
        for api, (route, body) in STREAMED.items():
            served = px.post(route, body)
            assert served.status_code == 200 and _events(served.text) == _events(sent[api]), api


def test_a_streamed_answer_holding_line_separators_is_captured_as_a_case(tmp_path):
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini"}
    events = [{**chunk, "choices": [{"index": 0, "delta": {"content": "one\u2028two\u2029three\x85"}}]},
              {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
    body = ("".join(f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events) + "data: [DONE]\n\n").encode()
    pack = tmp_path / "p"
    with RawStream(body) as upstream, Proxied(pack, "record", upstream.url) as px:
        assert px.post(PATHS["openai"], {**chat("Say it"), "stream": True}).status_code == 200
    assert len(fixtures(pack)) == 1
    result = run_packs([str(pack)], provider="recorded")
    assert [c.status for c in result.cases] == ["pass"], [(c.status, c.reason) for c in result.cases]
    assert result.cases[0].response["content"] == "one\u2028two\u2029three\x85"


def test_a_streamed_answer_replayci_cannot_read_is_kept_for_replay_and_said(tmp_path):
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini"}
    body = (f"data: {json.dumps({**chunk, 'choices': [{'index': 0, 'delta': {'content': 'Hi'}}]})}\n\n"
            "data: {not json\n\n" + "data: [DONE]\n\n").encode()
    pack = tmp_path / "p"
    with RawStream(body) as upstream, Proxied(pack, "record", upstream.url) as px:
        assert px.post(PATHS["openai"], {**chat("Say hi"), "stream": True}).status_code == 200
    (fixture,) = fixtures(pack)
    said = [line for line in px.lines if "no case lists it" in line]
    assert said and fixture.name in said[0] and "event 2's data is not JSON" in said[0], px.lines
    with Proxied(pack, "replay") as px:  # the proxy still replays it
        assert "{not json" in px.post(PATHS["openai"], {**chat("Say hi"), "stream": True}).text
