"""A scripted fake of the providers' HTTP APIs on 127.0.0.1, for tests and benchmarks.

It speaks every wire API replayci reads (tests/fakewire.py): OpenAI chat completions
(``/v1/chat/completions``) and Responses (``/v1/responses``), Anthropic Messages
(``/v1/messages``), Gemini ``generateContent`` / ``streamGenerateContent?alt=sse``, Bedrock
Converse (``/model/ID/converse`` and ``converse-stream``, AWS event stream) and Ollama
``/api/chat`` (NDJSON), each with its real success, stream and error formats. It records every
request it receives and answers from a queue of scripted actions (faults or replies), falling
back to a default reply::

    with FakeServer() as server:
        server.script([Fault.status(429, retry_after=1),
                       Reply.tool_call("get_weather", {"location": "Paris"})])
        client = openai.OpenAI(api_key="sk-test", base_url=server.openai_base_url, max_retries=0)
        ...
        assert server.count("/v1/chat/completions") == 2

Actions are endpoint-neutral: ``Reply.tool_call`` answers a chat completion on the OpenAI path,
a ``tool_use`` message on the Anthropic path, a ``functionCall`` part on Gemini's, and so on; a
request that asks for a stream gets the same answer as that API streams it (``Reply.cut(k)``
cuts it after k events). A script entry or the default may also be a function
``(RecordedRequest) -> Action`` that picks the answer from the request.

Multi-turn agent loops: ``Conversation([turn0, turn1, ...])`` answers a conversation that
already holds *n* tool results (OpenAI ``role: tool`` messages, Responses
``function_call_output`` items, Anthropic ``tool_result`` blocks, Gemini ``functionResponse``
parts, Converse ``toolResult`` blocks) with ``turn<n>``, so one action scripts a whole loop
whatever the order requests arrive in::

    server.set_default(Conversation([Reply.tool_call("search_flights", {"to": "LIS"}),
                                     Reply.tool_call("book_hotel", {"city": "Lisbon"}),
                                     Reply.plain_text("Booked.")]))

``tool_results_of(req)``, ``system_prompt_of(req)`` and ``first_user_text(req)`` read a
request in any of these forms (for routing and for assertions on what was sent).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from fakebatch import FakeBatches
from fakewire import WIRES, Answer, ToolCall, Turns, wire_of

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["OPENAI_PATH", "Action", "Conversation", "FakeServer", "Fault", "FirstTool", "RecordedRequest",
           "Reply", "Response", "Slow", "ToolCall", "first_user_text", "system_prompt_of", "tool_results_of"]

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received, recorded before it was answered."""

    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or None when the body was not JSON
    raw: bytes
    time: float  # time.monotonic() at arrival
    query: str = ""

    @property
    def endpoint(self) -> str | None:
        """The wire API of the path ("openai-chat", "anthropic", "gemini", ...), None for an unknown one."""
        wire = wire_of(self.path)
        return wire.name if wire is not None else None

    @property
    def api_key(self) -> str | None:
        """The credential the client sent (Bearer token, x-api-key, x-goog-api-key; AWS: the key id)."""
        auth = self.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:]
        if auth.startswith("AWS4-HMAC-SHA256 Credential="):
            return auth.split("=", 1)[1].split("/", 1)[0]
        return self.headers.get("x-api-key") or self.headers.get("x-goog-api-key")

    @property
    def turns(self) -> Turns:
        """The request's conversation, read in the form of its API."""
        wire = wire_of(self.path)
        body = self.body if isinstance(self.body, dict) else {}
        return wire.turns(body) if wire is not None else Turns()

    @property
    def streaming(self) -> bool:
        """Whether the request asked for a stream."""
        wire = wire_of(self.path)
        return wire is not None and wire.streaming(self.path, self.body if isinstance(self.body, dict) else {})


# --------------------------------------------------------------------------- actions


@dataclass(frozen=True)
class Response:
    """A concrete HTTP answer (or ``drop``: close the socket without answering).

    With *chunks* the body is sent in those pieces (chunked transfer encoding, as streams are);
    *cut* then closes the connection after them, before the body's end.
    """

    status: int = 200
    body: bytes = b""
    content_type: str | None = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0
    drop: bool = False
    chunks: tuple[bytes, ...] | None = None
    cut: bool = False
    drip: float = 0.0  # seconds between two chunks (a body that trickles in)


class Action:
    """Something the server does with one request; subclasses render per endpoint."""

    def render(self, req: RecordedRequest) -> Response:  # pragma: no cover - interface
        raise NotImplementedError


def _json(obj: Any) -> bytes:
    return json.dumps(obj).encode()


_DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-5", "gemini": "gemini-2.5-flash", "ollama": "llama3.2"}


@dataclass(frozen=True)
class Reply(Action):
    """A successful answer in the format of the endpoint hit (streamed when the request asks)."""

    calls: tuple[ToolCall, ...] = ()
    text: str | None = None
    stop_reason: str | None = None  # provider-native finish/stop reason override
    headers: tuple[tuple[str, str], ...] = ()
    cut_after: int | None = None  # a stream: only its first N events, then the body ends
    cut_drop: bool = False  # ... and the connection is closed mid-body

    @classmethod
    def tool_call(cls, name: str, arguments: Any = None, *, text: str | None = None) -> Reply:
        """One tool call (arguments: an object, or a raw string sent as-is where the API sends text)."""
        return cls(calls=(ToolCall(name, {} if arguments is None else arguments),), text=text)

    @classmethod
    def tool_calls(cls, calls: Iterable[tuple[str, Any] | ToolCall], *, text: str | None = None) -> Reply:
        """Several tool calls in one answer, in order."""
        return cls(calls=tuple(c if isinstance(c, ToolCall) else ToolCall(*c) for c in calls), text=text)

    @classmethod
    def plain_text(cls, text: str = "OK") -> Reply:
        """A text answer with no tool call."""
        return cls(text=text)

    def cut(self, after: int, *, drop: bool = False) -> Reply:
        """This reply's stream cut after *after* events (the connection dropped there with *drop*)."""
        return replace(self, cut_after=after, cut_drop=drop)

    def render(self, req: RecordedRequest) -> Response:
        wire = WIRES[req.endpoint or "openai-chat"]
        body = req.body if isinstance(req.body, dict) else {}
        prompt = body.get("messages", body.get("contents", body.get("input")))
        model = wire.model(req.path, body, _DEFAULT_MODELS.get(wire.name, "gpt-4o-mini"))
        answer = Answer(model, self.calls, self.text, self.stop_reason, prompt)
        headers = wire.headers() + self.headers
        if not wire.streaming(req.path, body):
            return Response(200, _json(wire.body(answer)), wire.content_type, headers)
        chunks = wire.stream(answer, body)
        if self.cut_after is not None:
            chunks = chunks[: self.cut_after]
        return Response(200, b"", wire.stream_type, headers, chunks=tuple(chunks), cut=self.cut_drop)


@dataclass(frozen=True)
class FirstTool(Action):
    """Call the first tool the request declares with fixed arguments (text when it has none)."""

    arguments: Any = field(default_factory=dict)

    def render(self, req: RecordedRequest) -> Response:
        tools = req.turns.tools
        if not tools:
            return Reply.plain_text().render(req)
        return Reply.tool_call(tools[0], self.arguments).render(req)


@dataclass(frozen=True)
class Fault(Action):
    """A failure: an HTTP error status, a slow answer, a dropped connection or a bad body."""

    status_code: int = 500
    message: str | None = None  # "{api_key}" is replaced by the key the client sent
    error_type: str | None = None
    code: str | None = None
    retry_after: float | str | None = None
    retry_after_ms: float | None = None
    headers: tuple[tuple[str, str], ...] = ()
    drop: bool = False
    raw_body: bytes | None = None
    content_type: str | None = "application/json"
    details: dict | None = None

    @classmethod
    def status(
        cls,
        status: int,
        *,
        retry_after: float | str | None = None,
        retry_after_ms: float | None = None,
        message: str | None = None,
        type: str | None = None,  # the error body's field name, builtin shadowed on purpose
        code: str | None = None,
        headers: dict[str, str] | None = None,
        details: dict | None = None,
    ) -> Fault:
        """An HTTP error with the endpoint's error JSON (and Retry-After if given)."""
        return cls(
            status_code=status,
            retry_after=retry_after,
            retry_after_ms=retry_after_ms,
            message=message,
            error_type=type,
            code=code,
            headers=tuple((headers or {}).items()),
            details=details,
        )

    @classmethod
    def rate_limit(cls, retry_after: float | str | None = 1, **kw: Any) -> Fault:
        """A 429 with Retry-After."""
        return cls.status(429, retry_after=retry_after, **kw)

    @classmethod
    def overloaded(cls, **kw: Any) -> Fault:
        """Anthropic's 529 overloaded_error."""
        return cls.status(529, **kw)

    @staticmethod
    def slow(seconds: float, then: ActionLike | None = None) -> Slow:
        """Wait *seconds*, then answer *then* (default: the server's default reply)."""
        return Slow(seconds, then)

    @classmethod
    def dropped(cls) -> Fault:
        """Read the request, then close the connection without any response."""
        return cls(drop=True)

    @classmethod
    def not_json(
        cls,
        content_type: str = "application/json",
        body: bytes = b"<html><body><h1>502 Bad Gateway</h1></body></html>",
    ) -> Fault:
        """A 200 whose body is not JSON, with the given content type."""
        return cls(status_code=200, raw_body=body, content_type=content_type)

    def render(self, req: RecordedRequest) -> Response:
        if self.drop:
            return Response(drop=True)
        headers = list(self.headers)
        if self.retry_after is not None:
            value = self.retry_after if isinstance(self.retry_after, str) else f"{self.retry_after:g}"
            headers.append(("retry-after", value))
        if self.retry_after_ms is not None:
            headers.append(("retry-after-ms", f"{self.retry_after_ms:g}"))
        if self.raw_body is not None:
            return Response(self.status_code, self.raw_body, self.content_type, tuple(headers))
        message = self.message
        if message is not None and "{api_key}" in message:
            message = message.replace("{api_key}", req.api_key or "")
        wire = WIRES[req.endpoint or "openai-chat"]
        body, own = wire.error(self.status_code, message, self.error_type, self.code, self.details)
        return Response(self.status_code, _json(body), "application/json", tuple(headers + own))


@dataclass(frozen=True)
class Drip(Action):
    """Send *then*'s body a few bytes at a time, *seconds* apart: each read is quick, the
    whole answer slow."""

    seconds: float
    size: int = 16
    then: ActionLike | None = None  # None: a plain text reply

    def render(self, req: RecordedRequest) -> Response:
        inner = self.then or Reply.plain_text()
        if not isinstance(inner, Action):
            inner = inner(req)
        r = inner.render(req)
        body = r.body or b"".join(r.chunks or ())
        pieces = tuple(body[i:i + self.size] for i in range(0, len(body), self.size))
        return replace(r, body=b"", chunks=pieces, drip=self.seconds)


@dataclass(frozen=True)
class Slow(Action):
    """Answer after *seconds* (e.g. longer than the client's timeout)."""

    seconds: float
    then: ActionLike | None = None  # None: the server's default reply

    def render(self, req: RecordedRequest) -> Response:
        inner = self.then or Reply.plain_text()
        if not isinstance(inner, Action):
            inner = inner(req)
        r = inner.render(req)
        return replace(r, delay=r.delay + self.seconds)


ActionLike = Action | Callable[[RecordedRequest], Action]


# --------------------------------------------------------------------------- conversations


def tool_results_of(req: RecordedRequest) -> list[dict]:
    """The tool results a request's conversation holds, in order, as ``{call_id, content}``."""
    return req.turns.tool_results


def system_prompt_of(req: RecordedRequest) -> str | None:
    """The system prompt of a request (system messages, ``system``, ``instructions``, ``systemInstruction``)."""
    return req.turns.system


def first_user_text(req: RecordedRequest) -> str | None:
    """The text of the first user message (a conversation's question, whatever followed)."""
    users = req.turns.users
    return users[0] if users else None


class Conversation(Action):
    """A scripted agent loop: the reply to a conversation holding *n* tool results is
    ``turns[n]`` (a list, or a mapping from n); *otherwise* answers any other n (default: a
    400 error naming n, so a script that went wrong is visible). Turns may be functions of
    the request."""

    def __init__(self, turns: Iterable[ActionLike] | Mapping[int, ActionLike],
                 otherwise: ActionLike | None = None) -> None:
        self.turns: dict[int, ActionLike] = (dict(turns) if isinstance(turns, Mapping)
                                             else dict(enumerate(turns)))
        self.otherwise = otherwise

    def render(self, req: RecordedRequest) -> Response:
        n = len(tool_results_of(req))
        action = self.turns.get(n, self.otherwise)
        if action is None:
            action = Fault.status(400, message=f"the fake conversation has no turn for {n} tool results")
        if not isinstance(action, Action):
            action = action(req)
        return action.render(req)


# --------------------------------------------------------------------------- server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect
    # Headers and body leave in one segment, without Nagle: otherwise every answer waits out
    # the client's delayed ACK (~40 ms), which would dominate test and benchmark timings.
    wbufsize = 1 << 16
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output clean."""

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._track(self.connection, add=False)

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path, _, query = self.path.partition("?")
        req = RecordedRequest(self.command, path, {k.lower(): v for k, v in self.headers.items()}, body, raw,
                              time.monotonic(), query)
        cancel = fake._record(req)
        try:
            response = fake._respond(req)
            wait = fake.latency + response.delay
            if wait and cancel.wait(wait):
                response = Response(drop=True)  # reset or shutting down: don't keep a thread asleep
            if response.drop:
                self.close_connection = True
                with contextlib.suppress(OSError):  # the client may have gone already
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            self._send(response)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (its timeout fired) before we answered: nothing to do.
            self.close_connection = True
        finally:
            fake._done()


    def _send(self, response: Response) -> None:
        self.send_response(response.status)
        if response.content_type:
            self.send_header("content-type", response.content_type)
        if response.chunks is None:
            self.send_header("content-length", str(len(response.body)))
        else:
            self.send_header("transfer-encoding", "chunked")
        for name, value in response.headers:
            self.send_header(name, value)
        self.end_headers()
        if response.chunks is None:
            self.wfile.write(response.body)
            self.wfile.flush()
            return
        for chunk in response.chunks:  # one write each, as a server streams them
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
            if response.drip:
                time.sleep(response.drip)
        if response.cut:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # The default listen backlog (5) makes a burst of concurrent clients wait for SYN retries.
    request_queue_size = 256
    allow_reuse_address = True
    fake: FakeServer


class FakeServer:
    """The fake API server: start it, script it, point an SDK at it, inspect what it received."""

    def __init__(
        self,
        *,
        default: ActionLike | None = None,
        latency: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.latency = latency
        self._default: ActionLike = default if default is not None else Reply.plain_text()
        self._address = (host, port)
        self._lock = threading.Lock()
        self._queue: deque[ActionLike] = deque()
        self._requests: list[RecordedRequest] = []
        self._connections: set[socket.socket] = set()
        self._in_flight = 0
        self.max_in_flight = 0  # the most requests being answered at once
        self._cancel = threading.Event()  # set by reset()/stop(): wakes replies still sleeping
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.batches = FakeBatches(self)  # the batch APIs (tests/fakebatch.py)

    # lifecycle
    def start(self) -> FakeServer:
        """Bind and serve in a background thread."""
        if self._httpd is not None:
            return self
        httpd = _HTTPServer(self._address, _Handler)
        httpd.fake = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.01},
            name=f"fakeserver:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake sleeping handlers and close open connections."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._cancel_sleepers()
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            conns = list(self._connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # addresses
    @property
    def port(self) -> int:
        """The bound port."""
        if self._httpd is None:
            raise RuntimeError("the fake server is not running")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://{self._address[0]}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """The base_url for ``openai.OpenAI`` (with ``/v1``)."""
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The base_url for ``anthropic.Anthropic`` (the SDK adds ``/v1``)."""
        return self.url

    def base_url_for(self, provider: str) -> str:
        """The base_url (Bedrock: the endpoint URL) for the named live provider."""
        return self.openai_base_url if provider in ("openai", "openai-responses") else self.url

    # scripting
    def script(self, actions: Iterable[ActionLike]) -> FakeServer:
        """Queue actions: the next requests get them in order, then the default reply."""
        with self._lock:
            self._queue.extend(actions)
        return self

    def set_default(self, action: ActionLike) -> None:
        """The answer when the script is empty (an Action or a function of the request)."""
        with self._lock:
            self._default = action

    def reset(self) -> None:
        """Forget the script and the recorded requests; cut short replies still sleeping."""
        self._cancel_sleepers()
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self.max_in_flight = 0
        self.batches.reset()

    def _cancel_sleepers(self) -> None:
        with self._lock:
            old, self._cancel = self._cancel, threading.Event()
        old.set()

    # inspection
    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received, in arrival order."""
        with self._lock:
            return list(self._requests)

    def count(self, path: str | None = None) -> int:
        """How many requests arrived (at *path*, or at the wire API of that name, if given)."""
        with self._lock:
            return sum(1 for r in self._requests if path is None or path in (r.path, r.endpoint))

    def after(self, requests: int, then: Callable[[], object], *, settle: float = 0.1) -> list[float]:
        """Call *then* in a thread once *requests* requests arrived (and *settle* s passed).

        For "Ctrl-C while the client waits to retry": a timer can fire on a loaded machine before
        the first request is even sent. The returned list gets the moment *then* was called.
        """
        called: list[float] = []

        def wait() -> None:
            deadline = time.monotonic() + 30
            while self.count() < requests and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(settle)
            called.append(time.perf_counter())
            then()

        threading.Thread(target=wait, daemon=True).start()
        return called

    @property
    def pending(self) -> int:
        """Scripted actions not yet used."""
        with self._lock:
            return len(self._queue)

    # handler callbacks
    def _record(self, req: RecordedRequest) -> threading.Event:
        with self._lock:
            self._requests.append(req)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            return self._cancel

    def _done(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            (self._connections.add if add else self._connections.discard)(conn)

    def _respond(self, req: RecordedRequest) -> Response:
        if self.batches.handles(req.path):
            return self.batches.respond(req)
        if req.endpoint is None or req.method != "POST":
            # Not an API we fake: answer like OpenAI does and leave the script untouched.
            body, _ = WIRES["openai-chat"].error(404, f"Unknown request URL: {req.method} {req.path}.", None,
                                                 "unknown_url", None)
            return Response(404, _json(body))
        return self.answer(req)

    def answer(self, req: RecordedRequest) -> Response:
        """The next scripted action's (else the default's) answer to *req*."""
        with self._lock:
            action = self._queue.popleft() if self._queue else self._default
            default = self._default
        if not isinstance(action, Action):
            action = action(req)
        if isinstance(action, Slow) and action.then is None:
            action = Slow(action.seconds, default)
        return action.render(req)
