"""A scripted fake of the OpenAI and Anthropic HTTP APIs on 127.0.0.1, for tests and benchmarks.

It speaks ``POST /v1/chat/completions`` (OpenAI) and ``POST /v1/messages`` (Anthropic) with
each provider's real success and error JSON shapes, records every request it receives, and
answers from a queue of scripted actions (faults or replies), falling back to a default reply::

    with FakeServer() as server:
        server.script([Fault.status(429, retry_after=1),
                       Reply.tool_call("get_weather", {"location": "Paris"})])
        client = openai.OpenAI(api_key="sk-test", base_url=server.openai_base_url, max_retries=0)
        ...
        assert server.count("/v1/chat/completions") == 2

Actions are endpoint-neutral: ``Reply.tool_call`` answers a chat completion on the OpenAI path
and a ``tool_use`` message on the Anthropic path. A script entry or the default may also be a
function ``(RecordedRequest) -> Action`` that picks the answer from the request.

Multi-turn agent loops: ``Conversation([turn0, turn1, ...])`` answers a conversation that
already holds *n* tool results (OpenAI ``role: tool`` messages, Anthropic ``tool_result``
blocks) with ``turn<n>``, so one action scripts a whole loop whatever the order requests
arrive in::

    server.set_default(Conversation([Reply.tool_call("search_flights", {"to": "LIS"}),
                                     Reply.tool_call("book_hotel", {"city": "Lisbon"}),
                                     Reply.plain_text("Booked.")]))

``tool_results_of(req)``, ``system_prompt_of(req)`` and ``first_user_text(req)`` read a
request in either wire format (for routing and for assertions on what was sent).
"""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import string
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing_extensions import Self

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
WIRE_PATHS = {"openai": OPENAI_PATH, "anthropic": ANTHROPIC_PATH}  # by wire format
_ENDPOINTS = {path: wire for wire, path in WIRE_PATHS.items()}

_ALNUM = string.ascii_letters + string.digits


def _rand(n: int) -> str:
    return "".join(secrets.choice(_ALNUM) for _ in range(n))


def openai_call_id() -> str:
    """An id shaped like OpenAI's tool-call ids (``call_`` + 24 characters)."""
    return "call_" + _rand(24)


def anthropic_call_id() -> str:
    """An id shaped like Anthropic's tool_use ids (``toolu_01`` + 22 characters)."""
    return "toolu_01" + _rand(22)


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received, recorded before it was answered."""

    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or None when the body was not JSON
    raw: bytes
    time: float  # time.monotonic() at arrival

    @property
    def endpoint(self) -> str | None:
        """ "openai", "anthropic" or None for an unknown path."""
        return _ENDPOINTS.get(self.path)

    @property
    def api_key(self) -> str | None:
        """The credential the client sent (Bearer token or x-api-key)."""
        auth = self.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:]
        return self.headers.get("x-api-key")


# --------------------------------------------------------------------------- wire formats

_OPENAI_ERRORS = {
    400: ("invalid_request_error", "Invalid value for 'tool_choice': 'sometimes'.", None),
    401: ("invalid_request_error", "Incorrect API key provided.", "invalid_api_key"),
    403: ("invalid_request_error", "Project does not have access to model.", "model_not_found"),
    404: (
        "invalid_request_error",
        "The model does not exist or you do not have access to it.",
        "model_not_found",
    ),
    429: (
        "requests",
        (
            "Rate limit reached for requests per min (RPM): Limit 3, Used 3, "
            "Requested 1. Please try again in 1s."
        ),
        "rate_limit_exceeded",
    ),
    500: (
        "server_error",
        "The server had an error while processing your request. Sorry about that!",
        None,
    ),
    503: ("server_error", "The engine is currently overloaded, please try again later.", None),
}

_ANTHROPIC_ERRORS = {
    400: (
        "invalid_request_error",
        "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'",
    ),
    401: ("authentication_error", "invalid x-api-key"),
    403: (
        "permission_error",
        "Your API key does not have permission to use the specified resource.",
    ),
    404: ("not_found_error", "The requested resource could not be found."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."),
    500: ("api_error", "Internal server error"),
    503: ("api_error", "Service unavailable"),
    529: ("overloaded_error", "Overloaded"),
}


def openai_error_body(
    status: int,
    message: str | None = None,
    type_: str | None = None,
    code: str | None = None,
    param: str | None = None,
) -> dict:
    """An OpenAI error body: ``{"error": {"message", "type", "param", "code"}}``."""
    d_type, d_message, d_code = _OPENAI_ERRORS.get(
        status,
        ("server_error" if status >= 500 else "invalid_request_error", f"HTTP {status}", None),
    )
    return {
        "error": {
            "message": message if message is not None else d_message,
            "type": type_ or d_type,
            "param": param,
            "code": code if code is not None else d_code,
        }
    }


def anthropic_error_body(
    status: int, message: str | None = None, type_: str | None = None, details: dict | None = None
) -> dict:
    """An Anthropic error body: ``{"type": "error", "error": {type, message}, "request_id"}``."""
    d_type, d_message = _ANTHROPIC_ERRORS.get(
        status, ("api_error" if status >= 500 else "invalid_request_error", f"HTTP {status}")
    )
    error: dict[str, Any] = {
        "type": type_ or d_type,
        "message": message if message is not None else d_message,
    }
    if details is not None:
        error["details"] = details
    return {"type": "error", "error": error, "request_id": "req_011C" + _rand(20)}


def _tokens(value: Any) -> int:
    """A rough token count (4 characters a token), so usage numbers look plausible."""
    return max(1, len(json.dumps(value, ensure_ascii=False)) // 4)


@dataclass(frozen=True)
class ToolCall:
    """A tool call a reply will contain; a str *arguments* is sent verbatim (may be malformed)."""

    name: str
    arguments: Any = field(default_factory=dict)


def openai_completion(
    model: str,
    *,
    calls: Iterable[ToolCall] = (),
    text: str | None = None,
    finish_reason: str | None = None,
    prompt: Any = None,
) -> dict:
    """An OpenAI ``chat.completion`` object."""
    tool_calls = [
        {
            "id": openai_call_id(),
            "type": "function",
            "function": {
                "name": c.name,
                "arguments": c.arguments
                if isinstance(c.arguments, str)
                else json.dumps(c.arguments),
            },
        }
        for c in calls
    ]
    message: dict[str, Any] = {
        "role": "assistant",
        "content": text,
        "refusal": None,
        "annotations": [],
    }
    if tool_calls:
        message["tool_calls"] = tool_calls
    prompt_tokens = _tokens(prompt)
    completion_tokens = _tokens([text, [t["function"] for t in tool_calls]])
    return {
        "id": "chatcmpl-" + _rand(29),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
        "system_fingerprint": "fp_" + secrets.token_hex(5),
    }


def anthropic_message(
    model: str,
    *,
    calls: Iterable[ToolCall] = (),
    text: str | None = None,
    stop_reason: str | None = None,
    prompt: Any = None,
) -> dict:
    """An Anthropic ``message`` object with text and ``tool_use`` blocks."""
    content: list[dict] = []
    if text is not None:
        content.append({"type": "text", "text": text})
    n_calls = 0
    for c in calls:
        n_calls += 1
        args = c.arguments
        if isinstance(args, str):
            # Anthropic always sends an object; keep unparseable text visible, don't invent one.
            with contextlib.suppress(ValueError):
                args = json.loads(args)
        content.append(
            {"type": "tool_use", "id": anthropic_call_id(), "name": c.name, "input": args}
        )
    return {
        "id": "msg_01" + _rand(22),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason or ("tool_use" if n_calls else "end_turn"),
        "stop_sequence": None,
        "usage": {
            "input_tokens": _tokens(prompt),
            "output_tokens": _tokens(content),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "service_tier": "standard",
        },
    }


# --------------------------------------------------------------------------- actions


@dataclass(frozen=True)
class Response:
    """A concrete HTTP answer (or ``drop``: close the socket without answering)."""

    status: int = 200
    body: bytes = b""
    content_type: str | None = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0
    drop: bool = False


class Action:
    """Something the server does with one request; subclasses render per endpoint."""

    def render(self, req: RecordedRequest) -> Response:  # pragma: no cover - interface
        raise NotImplementedError


def _json(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def _model_of(req: RecordedRequest, fallback: str) -> str:
    body = req.body if isinstance(req.body, dict) else {}
    return str(body.get("model") or fallback)


@dataclass(frozen=True)
class Reply(Action):
    """A successful answer in the format of the endpoint hit."""

    calls: tuple[ToolCall, ...] = ()
    text: str | None = None
    stop_reason: str | None = None  # provider-native finish/stop reason override
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def tool_call(cls, name: str, arguments: Any = None, *, text: str | None = None) -> Reply:
        """One tool call (arguments: an object, or a raw string sent as-is on OpenAI)."""
        return cls(calls=(ToolCall(name, {} if arguments is None else arguments),), text=text)

    @classmethod
    def tool_calls(
        cls, calls: Iterable[tuple[str, Any] | ToolCall], *, text: str | None = None
    ) -> Reply:
        """Several tool calls in one answer, in order."""
        return cls(
            calls=tuple(c if isinstance(c, ToolCall) else ToolCall(*c) for c in calls), text=text
        )

    @classmethod
    def plain_text(cls, text: str = "OK") -> Reply:
        """A text answer with no tool call."""
        return cls(text=text)

    def render(self, req: RecordedRequest) -> Response:
        prompt = req.body.get("messages") if isinstance(req.body, dict) else None
        if req.endpoint == "anthropic":
            payload = anthropic_message(
                _model_of(req, "claude-sonnet-4-5"),
                calls=self.calls,
                text=self.text,
                stop_reason=self.stop_reason,
                prompt=prompt,
            )
            headers = (("request-id", "req_011C" + _rand(20)),)
        else:
            payload = openai_completion(
                _model_of(req, "gpt-4o-mini"),
                calls=self.calls,
                text=self.text,
                finish_reason=self.stop_reason,
                prompt=prompt,
            )
            headers = (
                ("x-request-id", "req_" + secrets.token_hex(16)),
                ("openai-processing-ms", "12"),
            )
        return Response(200, _json(payload), headers=headers + self.headers)


@dataclass(frozen=True)
class FirstTool(Action):
    """Call the first tool the request declares with fixed arguments (text when it has none)."""

    arguments: Any = field(default_factory=dict)

    def render(self, req: RecordedRequest) -> Response:
        tools = req.body.get("tools") if isinstance(req.body, dict) else None
        if not tools:
            return Reply.plain_text().render(req)
        first = tools[0]
        name = (first.get("function") or {}).get("name") or first.get("name")
        return Reply.tool_call(name, self.arguments).render(req)


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
            headers.append(
                (
                    "retry-after",
                    self.retry_after
                    if isinstance(self.retry_after, str)
                    else f"{self.retry_after:g}",
                )
            )
        if self.retry_after_ms is not None:
            headers.append(("retry-after-ms", f"{self.retry_after_ms:g}"))
        if self.raw_body is not None:
            return Response(self.status_code, self.raw_body, self.content_type, tuple(headers))
        message = self.message
        if message is not None and "{api_key}" in message:
            message = message.replace("{api_key}", req.api_key or "")
        if req.endpoint == "anthropic":
            body = anthropic_error_body(self.status_code, message, self.error_type, self.details)
            headers.append(("request-id", body["request_id"]))
            # The real API says whether a retry can help; the SDK must still not act on it.
            headers.append(
                ("x-should-retry", "true" if self.status_code in (429, 500, 503, 529) else "false")
            )
        else:
            body = openai_error_body(self.status_code, message, self.error_type, self.code)
            headers.append(("x-request-id", "req_" + secrets.token_hex(16)))
            if self.status_code == 429:
                headers += [
                    ("x-ratelimit-limit-requests", "3"),
                    ("x-ratelimit-remaining-requests", "0"),
                ]
        return Response(self.status_code, _json(body), "application/json", tuple(headers))


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
        return Response(r.status, r.body, r.content_type, r.headers, r.delay + self.seconds, r.drop)


ActionLike = Action | Callable[[RecordedRequest], Action]


# --------------------------------------------------------------------------- conversations


def _text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return None


def tool_results_of(req: RecordedRequest) -> list[dict]:
    """The tool results a request's conversation holds, in order, as ``{call_id, content}``:
    OpenAI ``role: tool`` messages or Anthropic ``tool_result`` blocks."""
    body = req.body if isinstance(req.body, dict) else {}
    out: list[dict] = []
    for m in body.get("messages") or []:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "tool":
            out.append({"call_id": m.get("tool_call_id"), "content": m.get("content")})
        elif isinstance(m.get("content"), list):
            for block in m["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    out.append({"call_id": block.get("tool_use_id"), "content": block.get("content")})
    return out


def system_prompt_of(req: RecordedRequest) -> str | None:
    """The system prompt of a request (OpenAI system messages or Anthropic ``system``)."""
    body = req.body if isinstance(req.body, dict) else {}
    if req.endpoint == "anthropic" or "system" in body:
        return _text(body.get("system"))
    texts = [_text(m.get("content")) or "" for m in body.get("messages") or []
             if isinstance(m, dict) and m.get("role") in ("system", "developer")]
    return "\n\n".join(texts) if texts else None


def first_user_text(req: RecordedRequest) -> str | None:
    """The text of the first user message (a conversation's question, whatever followed)."""
    body = req.body if isinstance(req.body, dict) else {}
    for m in body.get("messages") or []:
        if isinstance(m, dict) and m.get("role") == "user":
            return _text(m.get("content"))
    return None


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
        req = RecordedRequest(
            self.command,
            self.path.split("?", 1)[0],
            {k.lower(): v for k, v in self.headers.items()},
            body,
            raw,
            time.monotonic(),
        )
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
            self.send_response(response.status)
            if response.content_type:
                self.send_header("content-type", response.content_type)
            self.send_header("content-length", str(len(response.body)))
            for name, value in response.headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(response.body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (its timeout fired) before we answered: nothing to do.
            self.close_connection = True
        finally:
            fake._done()


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
        """The base_url for the named provider ("openai" or "anthropic")."""
        return self.openai_base_url if provider == "openai" else self.anthropic_base_url

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
        """How many requests arrived (at *path*, if given)."""
        with self._lock:
            return sum(1 for r in self._requests if path is None or r.path == path)

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
        if req.endpoint is None or req.method != "POST":
            # Not an API we fake: answer like OpenAI does and leave the script untouched.
            body = openai_error_body(
                404, f"Unknown request URL: {req.method} {req.path}.", code="unknown_url"
            )
            return Response(404, _json(body))
        with self._lock:
            action = self._queue.popleft() if self._queue else self._default
            default = self._default
        if not isinstance(action, Action):
            action = action(req)
        if isinstance(action, Slow) and action.then is None:
            action = Slow(action.seconds, default)
        return action.render(req)
