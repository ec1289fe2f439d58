"""Test support for `replayci proxy`: a tiny upstream on 127.0.0.1 that answers OpenAI chat
completions and Responses, Anthropic messages and Gemini generateContent, each streamed or not,
from the request's last user text ("weather in X" calls get_weather, anything else is echoed);
and the application script the tests run under the proxy with the real SDKs.

Streams are sent event by event with `gap` seconds between events, so a test can see them arrive
one at a time through the proxy."""
from __future__ import annotations

import itertools
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_WEATHER = re.compile(r"weather in ([A-Za-z ]+)", re.I)
_ids = itertools.count(1)


def last_user_text(body: dict) -> str:
    """The last user text of a request in any of the four forms."""
    for key in ("messages", "contents", "input"):
        items = body.get(key)
        if isinstance(items, str):
            return items
        for item in reversed(items or []):
            if item.get("role") in ("user", None):
                content = item.get("content", item.get("parts"))
                if isinstance(content, str):
                    return content
                for part in content or []:
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        return part["text"]
    return ""


def _answer(body: dict) -> tuple[str | None, dict | None, str | None]:
    """(tool name, arguments, text): a get_weather call when asked about the weather, else an echo."""
    text = last_user_text(body)
    m = _WEATHER.search(text)
    if m and body.get("tools"):
        return "get_weather", {"location": m.group(1).strip()}, None
    return None, None, f"echo: {text}"


def _chat(model: str, body: dict, stream: bool) -> list[Any]:
    name, args, text = _answer(body)
    n = next(_ids)
    if not stream:
        msg: dict = {"role": "assistant", "content": text}
        if name:
            msg["tool_calls"] = [{"id": f"call_{n}", "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(args)}}]
        return [{"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1, "model": model,
                 "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if name else "stop"}],
                 "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}]
    head = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 1, "model": model}

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    if name:
        raw = json.dumps(args)
        out.append(chunk({"tool_calls": [{"index": 0, "id": f"call_{n}", "type": "function",
                                          "function": {"name": name, "arguments": raw[:5]}}]}))
        out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": raw[5:]}}]}))
    else:
        out += [chunk({"content": piece}) for piece in re.findall(r"\S+\s*", text)]
    out.append(chunk({}, "tool_calls" if name else "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):  # a last chunk with the usage, no choices
        out.append({**head, "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}})
    return [*out, "[DONE]"]


def _responses(model: str, body: dict, stream: bool) -> list[Any]:
    name, args, text = _answer(body)
    n = next(_ids)
    if name:
        item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": name,
                "arguments": json.dumps(args), "status": "completed"}
    else:
        item = {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}
    done = {"id": f"resp_{n}", "object": "response", "created_at": 1, "status": "completed", "model": model,
            "output": [item], "usage": {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8}}
    if not stream:
        return [done]
    events = [{"type": "response.created", "response": {**done, "status": "in_progress", "output": []}},
              {"type": "response.output_item.added", "output_index": 0, "item": {**item, "status": "in_progress"}}]
    if not name:
        events += [{"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "item_id": f"msg_{n}",
                    "delta": piece} for piece in re.findall(r"\S+\s*", text)]
    events += [{"type": "response.output_item.done", "output_index": 0, "item": item},
               {"type": "response.completed", "response": done}]
    return [(e["type"], e) for e in events]


def _anthropic(model: str, body: dict, stream: bool) -> list[Any]:
    name, args, text = _answer(body)
    n = next(_ids)
    block = {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": args} if name else \
        {"type": "text", "text": text}
    message = {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": model, "content": [block],
               "stop_reason": "tool_use" if name else "end_turn", "stop_sequence": None,
               "usage": {"input_tokens": 5, "output_tokens": 3}}
    if not stream:
        return [message]
    start = {**block, "input": {}} if name else {"type": "text", "text": ""}
    deltas = [{"type": "input_json_delta", "partial_json": json.dumps(args)}] if name else \
        [{"type": "text_delta", "text": piece} for piece in re.findall(r"\S+\s*", text)]
    events = [{"type": "message_start", "message": {**message, "content": [], "stop_reason": None}},
              {"type": "content_block_start", "index": 0, "content_block": start},
              *({"type": "content_block_delta", "index": 0, "delta": d} for d in deltas),
              {"type": "content_block_stop", "index": 0},
              {"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
               "usage": {"output_tokens": 3}},
              {"type": "message_stop"}]
    return [(e["type"], e) for e in events]


def _gemini(model: str, body: dict, stream: bool) -> list[Any]:
    name, args, text = _answer(body)

    def chunk(parts: list, finish: str | None) -> dict:
        cand: dict = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            cand["finishReason"] = finish
        return {"candidates": [cand], "modelVersion": model,
                "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 3, "totalTokenCount": 8}}

    parts = [{"functionCall": {"name": name, "args": args}}] if name else [{"text": text}]
    if not stream:
        return [chunk(parts, "STOP")]
    if name:
        return [chunk(parts, "STOP")]
    pieces = re.findall(r"\S+\s*", text)
    return [chunk([{"text": p}], "STOP" if i == len(pieces) - 1 else None) for i, p in enumerate(pieces)]


_GEMINI_PATH = re.compile(r"/(v1beta|v1)/models/([^/:]+):(generateContent|streamGenerateContent)\Z")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        path, _, query = self.path.partition("?")
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.loads(raw)
        self.server.upstream.received.append((path, {k.lower(): v for k, v in self.headers.items()}, body, query))
        gm = _GEMINI_PATH.match(path)
        if path == "/v1/chat/completions":
            stream, events = bool(body.get("stream")), _chat(body["model"], body, bool(body.get("stream")))
        elif path == "/v1/responses":
            stream, events = bool(body.get("stream")), _responses(body["model"], body, bool(body.get("stream")))
        elif path == "/v1/messages":
            stream, events = bool(body.get("stream")), _anthropic(body["model"], body, bool(body.get("stream")))
        elif gm:
            stream = gm.group(3) == "streamGenerateContent"
            events = _gemini(gm.group(2), body, stream)
        else:
            self._send(404, {"error": {"message": f"no route {path}"}})
            return
        if self.server.upstream.echo_key_in_body:
            events[0] = {**events[0], "echo": self.headers.get("authorization") or self.headers.get("x-api-key")} \
                if isinstance(events[0], dict) else events[0]
        if not stream:
            self._send(200, events[0])
        else:
            self._stream(events)

    def _send(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("x-request-id", "req_123")
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, events: list[Any]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")  # the body ends when the connection does
        self.end_headers()
        self.close_connection = True
        for i, event in enumerate(events):
            if i:
                time.sleep(self.server.upstream.gap)
            if event == "[DONE]":
                text = "data: [DONE]\n\n"
            elif isinstance(event, tuple):
                text = f"event: {event[0]}\ndata: {json.dumps(event[1])}\n\n"
            else:
                text = f"data: {json.dumps(event)}\n\n"
            self.wfile.write(text.encode())
            self.wfile.flush()
            self.server.upstream.sent_at.append(time.monotonic())
        time.sleep(self.server.upstream.linger)  # a connection held open after the last event


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    upstream: Upstream


class Upstream:
    """The tiny upstream: `with Upstream() as up:` then `up.url`, `up.received`."""

    def __init__(self, gap: float = 0.0, linger: float = 0.0) -> None:
        self.gap = gap
        self.linger = linger
        self.echo_key_in_body = False
        self.received: list[tuple[str, dict, dict, str]] = []
        self.sent_at: list[float] = []
        self._httpd: _Server | None = None

    def __enter__(self) -> Upstream:
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.upstream = self
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def upstream_flags(self) -> list[str]:
        """The proxy's --upstream flags pointing every provider here."""
        return ["--upstream", f"openai={self.url}/v1", "--upstream", f"anthropic={self.url}",
                "--upstream", f"gemini={self.url}"]


# The application the tests run under `replayci proxy -- python app.py STEP...`: it uses the
# real SDKs with their base URLs from the environment, and prints what it got, one line a step.
APP = r'''
import json, os, sys

QUESTION = os.environ.get("APP_QUESTION", "What is the weather in Paris?")
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Current weather.",
          "parameters": {"type": "object", "properties": {"location": {"type": "string"}},
                         "required": ["location"]}}}]


def openai_client():
    import openai
    return openai.OpenAI(api_key=os.environ.get("OPENAI_API_KEY", "sk-app-openai-0123456789"), max_retries=0)


def anthropic_client():
    import anthropic
    return anthropic.Anthropic(api_key=os.environ.get("ANTHROPIC_API_KEY", "sk-ant-app-0123456789"), max_retries=0)


def chat(stream=False):
    kw = dict(model="gpt-4o-mini", messages=[{"role": "user", "content": QUESTION}], tools=TOOLS,
              user="u-" + str(os.getpid()))
    if not stream:
        msg = openai_client().chat.completions.create(**kw).choices[0].message
        calls = [(c.id, c.function.name, c.function.arguments) for c in msg.tool_calls or []]
        return f"chat {calls} {msg.content!r}"
    parts, calls = [], {}
    for chunk in openai_client().chat.completions.create(stream=True, **kw):
        for d in chunk.choices[0].delta.tool_calls or []:
            c = calls.setdefault(d.index, ["", "", ""])
            c[0] += d.id or ""; c[1] += d.function.name or ""; c[2] += d.function.arguments or ""
        parts.append(chunk.choices[0].delta.content or "")
    return f"chat-stream {list(calls.values())} {''.join(parts)!r}"


def chat_text(stream=False):
    kw = dict(model="gpt-4o-mini", messages=[{"role": "user", "content": "Say hello to " + QUESTION}])
    if not stream:
        return "chat-text " + repr(openai_client().chat.completions.create(**kw).choices[0].message.content)
    pieces = [c.choices[0].delta.content or "" for c in openai_client().chat.completions.create(stream=True, **kw)]
    return f"chat-text-stream {len(pieces)} {''.join(pieces)!r}"


def responses(stream=False):
    tools = [{"type": "function", "name": "get_weather", "parameters": TOOLS[0]["function"]["parameters"]}]
    kw = dict(model="gpt-4o-mini", input=QUESTION, tools=tools)
    if not stream:
        r = openai_client().responses.create(**kw)
        return "responses " + json.dumps([item.model_dump(exclude_none=True) for item in r.output], sort_keys=True)
    kinds = [e.type for e in openai_client().responses.create(stream=True, **kw)]
    return "responses-stream " + " ".join(kinds)


def messages(stream=False):
    tools = [{"name": "get_weather", "input_schema": TOOLS[0]["function"]["parameters"]}]
    kw = dict(model="claude-sonnet-4-5", max_tokens=100, messages=[{"role": "user", "content": QUESTION}], tools=tools)
    if not stream:
        m = anthropic_client().messages.create(**kw)
        return "messages " + json.dumps([b.model_dump(exclude_none=True) for b in m.content], sort_keys=True)
    with anthropic_client().messages.stream(**kw) as s:
        kinds = [e.type for e in s]
        final = s.get_final_message()
    blocks = json.dumps([b.model_dump(exclude_none=True) for b in final.content], sort_keys=True)
    return f"messages-stream {' '.join(kinds)} {blocks}"


def gemini(stream=False):
    from google import genai
    from google.genai import types
    client = genai.Client(api_key=os.environ.get("GEMINI_API_KEY", "gemini-app-key-0123456789"))
    fn = types.FunctionDeclaration(name="get_weather", parameters=TOOLS[0]["function"]["parameters"])
    cfg = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[fn])])
    if not stream:
        r = client.models.generate_content(model="gemini-2.0-flash", contents=QUESTION, config=cfg)
        parts = [p.model_dump(exclude_none=True) for p in r.candidates[0].content.parts]
        return "gemini " + json.dumps(parts, sort_keys=True)
    chunks = client.models.generate_content_stream(model="gemini-2.0-flash", contents="Say hi to " + QUESTION)
    texts = [c.text for c in chunks]
    return f"gemini-stream {texts}"


STEPS = {"chat": chat, "chat-stream": lambda: chat(True), "chat-text": chat_text,
         "chat-text-stream": lambda: chat_text(True), "responses": responses,
         "responses-stream": lambda: responses(True), "messages": messages,
         "messages-stream": lambda: messages(True), "gemini": gemini, "gemini-stream": lambda: gemini(True)}

for step in sys.argv[1:]:
    print(STEPS[step](), flush=True)
'''


# The key the proxy tests' clients send (never written anywhere, whatever the scheme).
KEY = "sk-proj-SECRETKEY-0123456789abcdef"


class _RawHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(self.server.raw.body)
        self.close_connection = True


class RawStream:
    """An upstream that answers every request with the bytes in `body` as an event stream, as
    they are: `with RawStream(body) as up:` then `up.url`."""

    def __init__(self, body: bytes = b"") -> None:
        self.body = body
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _RawHandler)
        self._httpd.daemon_threads = True
        self._httpd.raw = self

    def __enter__(self) -> RawStream:
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"


def chat(question: str = "What is the weather in Paris?", **extra) -> dict:
    """A chat completions request offering get_weather."""
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}}]
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": question}], "tools": tools, **extra}


class Proxied:
    """A proxy session over a pack in one mode (in this process), and a client for it."""

    def __init__(self, pack, mode: str, upstream_url: str | None = None, **kw):
        import httpx2

        from replayci.capture.proxy import open_session, parse_upstreams

        flags = [f"openai={upstream_url}/v1", f"anthropic={upstream_url}", f"gemini={upstream_url}"] \
            if upstream_url else []
        self.lines: list[str] = []
        self.session = open_session(str(pack), mode, port=0, upstreams=parse_upstreams(flags),
                                    log=self.lines.append, **kw)
        self.url = self.session.server.url
        self.client = httpx2.Client(base_url=self.url, timeout=30)

    def post(self, path: str, body, headers=None):
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return self.client.post(path, content=content, headers={"authorization": f"Bearer {KEY}", **(headers or {})})

    def __enter__(self) -> Proxied:
        return self

    def __exit__(self, *exc) -> None:
        self.client.close()
        self.session.close()

    @property
    def stats(self):
        return self.session.proxy.stats
