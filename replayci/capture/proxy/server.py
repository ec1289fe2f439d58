"""The proxy's HTTP side: an ASGI app (Starlette) that replays, records or forwards each request
(upstream calls through httpx, the SDKs' own HTTP client), served by uvicorn on 127.0.0.1 from a
thread of its own so a command can run beside it."""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx2
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route as Mount

from ...core.errors import ConfigError
from ...core.jsonvalue import ABSENT
from ...formats import STREAM_INCOMPLETE, NormalizeError, normalize_stream
from ..keys import request_key
from . import checks, routes
from .store import Capture, Exchange, Store, match_document, scrub_all

if TYPE_CHECKING:  # check mode's judge is loaded only when a check runs
    from .check import Checker

MODES = ("record", "replay", "auto", "check", "off")
# What a replayed 429 needs and what types an error (Bedrock's); nothing private.
_KEPT_RESPONSE_HEADERS = ("retry-after", "retry-after-ms", "x-amzn-errortype")
_CUT = 80
_STARTUP_S = 10.0
_SETTLE_S = 10.0  # the most a round of check mode waits for answers still passing through


@dataclass
class Stats:
    """What the proxy did, counted."""

    replayed: int = 0
    recorded: int = 0
    forwarded: int = 0
    missed: int = 0
    checked: int = 0  # forwarded and judged (check mode)
    rejected: int = 0  # bad requests: unknown endpoint, not JSON
    failed: int = 0  # the upstream did not answer
    misses: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Pending:
    """A request on its way upstream whose answer is to be captured."""

    key: str
    occurrence: int
    match: dict
    query: dict
    secrets: tuple[str, ...]
    trace: dict | None = None  # the W3C trace context the app sent the call in


class Proxy:
    """Answers requests in one mode from one pack; `app` is the ASGI application."""

    def __init__(self, store: Store | None, mode: str, upstreams: dict[str, str],
                 log: Callable[[str], None] = print, verbose: int = 0, *,
                 allow_playback_repeats: bool = False, checker: Checker | None = None) -> None:
        self.store, self.mode, self.upstreams = store, mode, upstreams
        self.checker = checker  # check mode: each answer judged against its recorded case
        # replay: a request repeated beyond its recorded answers gets them again, in recorded order
        self.allow_playback_repeats = allow_playback_repeats
        self.log, self.verbose = log, verbose
        self.stats = Stats()
        self._busy = 0  # check mode: exchanges not yet handed to the checker
        self._idle = threading.Condition()
        self._http: httpx2.AsyncClient | None = None
        self.app = Starlette(routes=[Mount("/{path:path}", self.handle, methods=["GET", "POST", "PUT", "PATCH",
                                                                                 "DELETE"])],
                             lifespan=self._lifespan)

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        yield
        if self._http is not None:
            await self._http.aclose()

    def _client(self) -> httpx2.AsyncClient:
        # Made on the server's own event loop, at the first request that goes upstream.
        if self._http is None:
            self._http = httpx2.AsyncClient(timeout=httpx2.Timeout(600.0, connect=30.0),
                                            limits=httpx2.Limits(max_connections=256, max_keepalive_connections=64))
        return self._http

    async def handle(self, request: Request) -> Response:
        """One request: refused, replayed, missed, or sent upstream (and captured). In check
        mode it is counted until its answer has been handed to the checker (a stream: at its end)."""
        if self.checker is None:
            return await self._answer(request)
        with self._idle:
            self._busy += 1
        response = None
        try:
            response = await self._answer(request)
            return response
        finally:
            if not isinstance(response, StreamingResponse):  # a stream's relay says when it is done
                self._left()

    def _left(self) -> None:
        with self._idle:
            self._busy -= 1
            self._idle.notify_all()

    def settle(self, timeout: float = _SETTLE_S) -> bool:
        """Wait until no forwarded exchange is still on its way to the checker (a command ended:
        a stream's last piece may still be passing); whether none is left."""
        with self._idle:
            return self._idle.wait_for(lambda: self._busy <= 0, timeout)

    async def _answer(self, request: Request) -> Response:
        path = request.url.path
        route = routes.resolve(path)
        if route is None or request.method != "POST":
            return self._rejected(routes.upstream_of_path(path), f"replayci proxy does not serve {request.method} "
                                  f"{path}; it serves {'; '.join(routes.ENDPOINTS)}")
        try:
            raw = await checks.read_body(request)
            body = checks.request_body(raw)
        except checks.BadRequest as exc:
            return self._rejected(route.upstream, f"replayci proxy: the body of POST {path}: {exc}", exc.status)
        query_items = request.query_params.multi_items()
        secrets = routes.secrets_of(request.headers.items(), query_items)
        trace = routes.trace_context(request.headers.get("traceparent"))
        if self.checker is not None:
            return await self._forward(route, request, raw, body, _Pending("", 0, {}, {}, secrets, trace), secrets)
        if self.mode == "off" or self.store is None:
            return await self._forward(route, request, raw, body, None, secrets)
        query = dict(query_items)
        match = match_document(route.path, query, body, self.store.ignore, secrets)
        key = request_key(match)
        occurrence = self.store.next_occurrence(key)
        if self.mode in ("replay", "auto"):
            exchange = self.store.lookup(key, occurrence)
            if exchange is None and self.mode == "replay" and self.allow_playback_repeats:
                exchange = self._repeated(key, occurrence)
            if exchange is not None:
                self.stats.replayed += 1
                return _replayed(exchange)
            if self.mode == "replay":
                return self._missed(route, match, key)
        return await self._forward(route, request, raw, body, _Pending(key, occurrence, match, query, secrets, trace),
                                   secrets)

    def _repeated(self, key: str, occurrence: int) -> Exchange | None:
        """The recorded answer the *occurrence*-th request gets once they are all used: the
        recorded ones again, in order."""
        assert self.store is not None
        recorded = self.store.recorded(key)
        return self.store.lookup(key, (occurrence - 1) % recorded + 1) if recorded else None

    def _rejected(self, upstream: str, message: str, status: int = 400) -> Response:
        self.stats.rejected += 1
        self.log(message)
        return _error(upstream, status, message)

    def _missed(self, route: routes.Route, match: dict, key: str) -> Response:
        """A replay miss: a 404 in the provider's shape naming the nearest captured exchange."""
        message = f"replayci proxy (replay): no recorded answer for POST {route.path}: {self._why_missed(match, key)}"
        self.stats.missed += 1
        self.stats.misses.append(message)
        self.log(message)
        return _error(route.upstream, 404, message, code="replay_miss")

    def _why_missed(self, match: dict, key: str) -> str:
        assert self.store is not None
        used = self.store.recorded(key)
        if used:
            exchange = self.store.lookup(key, used)
            return (f"its {used} recorded answer{'s were' if used != 1 else ' was'} used already (each is served "
                    f"once, in recorded order; --allow-playback-repeats serves them again): {self._shown(exchange)}")
        near = self.store.nearest(match)
        if near is None:
            return f"the pack {self.store.pack_dir} holds no captured exchange"
        exchange, diffs = near
        where, recorded, got = diffs[0]
        shown_recorded, shown_got = _apart(recorded, got)
        return (f"the nearest recorded exchange, {self._shown(exchange)}, first differs at {_request_path(where)}: "
                f"recorded {shown_recorded}, got {shown_got}")

    def _shown(self, exchange: Exchange | None) -> str:
        if exchange is None or not exchange.file:
            return "(captured this session, not written yet)"
        assert self.store is not None
        return _relative(exchange.file, self.store.pack_dir)

    async def _forward(self, route: routes.Route, request: Request, raw: bytes, body: dict,
                       pending: _Pending | None, secrets: tuple[str, ...]) -> Response:
        """Send the request upstream with the app's own headers; hand the answer back as it comes."""
        base = self.upstreams[route.upstream].rstrip("/")
        url = base + route.upstream_path + (f"?{request.url.query}" if request.url.query else "")
        client = self._client()
        started = time.monotonic()
        try:
            upstream = await client.send(client.build_request(
                "POST", url, content=raw, headers=routes.forwarded_headers(request.headers.items())), stream=True)
        except httpx2.HTTPError as exc:
            return self._unreachable(route, base, exc, secrets)
        headers = routes.returned_headers(upstream.headers.multi_items())
        content_type = upstream.headers.get("content-type", "application/json")
        if not route.streams(body):
            try:
                payload = await upstream.aread()
            except httpx2.HTTPError as exc:
                return self._unreachable(route, base, exc, secrets)
            finally:
                await upstream.aclose()
            self._done(route, body, pending, upstream, content_type, payload, started)
            return Response(payload, status_code=upstream.status_code, headers=headers)
        relay = self._relay(route, body, pending, upstream, content_type, started)
        return StreamingResponse(relay, status_code=upstream.status_code, headers=headers)

    async def _relay(self, route: routes.Route, body: dict, pending: _Pending | None, upstream: httpx2.Response,
                     content_type: str, started: float) -> AsyncIterator[bytes]:
        """A streamed answer, each piece passed on as it arrives; captured once it is complete: the
        upstream ended it (a stream it cut is captured as cut), or its terminal event arrived
        before the app hung up (the openai SDK closes at `data: [DONE]`). A stream the app left
        before its end is not captured."""
        chunks: list[bytes] = []
        ended = False
        try:
            async for chunk in upstream.aiter_bytes():
                chunks.append(chunk)
                yield chunk
            ended = True
        except httpx2.HTTPError:
            ended = True
            raise
        finally:
            payload = b"".join(chunks)
            try:
                if ended or _finished(route, payload):
                    self._done(route, body, pending, upstream, content_type, payload, started)
                await upstream.aclose()
            finally:
                if self.checker is not None:
                    self._left()

    def _done(self, route: routes.Route, body: dict, pending: _Pending | None, upstream: httpx2.Response,
              content_type: str, payload: bytes, started: float) -> None:
        """Count a forwarded exchange and, unless the mode is off, capture it (check it, in check mode)."""
        if pending is not None and self.checker is not None:
            kept = {k: upstream.headers[k] for k in _KEPT_RESPONSE_HEADERS if k in upstream.headers}
            self.checker.observe(route, body, pending.secrets, upstream.status_code, payload, content_type,
                                 kept or None, pending.trace)
            self.stats.checked += 1
            return
        if pending is None or self.store is None:
            self.stats.forwarded += 1
            return
        kept = {k: upstream.headers[k] for k in _KEPT_RESPONSE_HEADERS if k in upstream.headers}
        self.store.capture(Capture(route, pending.key, pending.occurrence, pending.match, pending.query, body,
                                   pending.secrets, upstream.status_code, content_type, payload, kept,
                                   int((time.monotonic() - started) * 1000), pending.trace))
        self.stats.recorded += 1
        if self.verbose:
            self.log(f"replayci proxy: recorded POST {route.path} ({upstream.status_code})")

    def _unreachable(self, route: routes.Route, base: str, exc: Exception, secrets: tuple[str, ...]) -> Response:
        self.stats.failed += 1
        message = scrub_all(f"replayci proxy: the {route.upstream} upstream {base} did not answer: "
                            f"{type(exc).__name__}: {exc}", secrets)
        self.log(message)
        return _error(route.upstream, 502, message)


def _finished(route: routes.Route, payload: bytes) -> bool:
    """Whether a stream's terminal event (its format's end marker) is in *payload*."""
    try:
        doc = normalize_stream(payload, route.api)
    except NormalizeError:
        return False
    return (doc.get("error") or {}).get("type") != STREAM_INCOMPLETE


def _error(upstream: str, status: int, message: str, code: str | None = None) -> Response:
    body = json.dumps(routes.error_body(upstream, status, message, code)).encode()
    return Response(body, status_code=status, media_type="application/json")


def _replayed(exchange: Exchange) -> Response:
    headers = {"content-type": exchange.content_type, **exchange.headers}
    if not exchange.stream:
        return Response(exchange.chunks[0], status_code=exchange.status, headers=headers)

    async def pieces() -> AsyncIterator[bytes]:
        for chunk in exchange.chunks:
            yield chunk

    return StreamingResponse(pieces(), status_code=exchange.status, headers=headers)


def _request_path(path: str) -> str:
    """A difference's place as the app would name it: in the body, the endpoint or the query."""
    if path.startswith("$.body"):
        return "$" + path[len("$.body"):] if path != "$.body" else "the body"
    if path.startswith("$.endpoint"):
        return "the endpoint"
    return "query parameter " + path[len("$.query."):] if path.startswith("$.query.") else path


def _cut(value: object) -> str:
    if value is ABSENT:
        return "nothing"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _CUT else text[: _CUT - 3] + "..."


def _apart(recorded: object, got: object) -> tuple[str, str]:
    """Two values as a miss shows them: two long texts from a little before the place they part,
    each quoted to its end (or cut after it), so the difference shows however late it comes."""
    if not (isinstance(recorded, str) and isinstance(got, str)) or max(len(recorded), len(got)) + 2 <= _CUT:
        return _cut(recorded), _cut(got)
    same = len(os.path.commonprefix([recorded, got]))
    start = max(0, same - _CUT // 2)
    return _window(recorded, start), _window(got, start)


def _window(text: str, start: int) -> str:
    """*text* from *start*, at most about _CUT characters, quoted, with … where it was cut."""
    end = start + _CUT
    return json.dumps(("…" if start else "") + text[start:end] + ("…" if end < len(text) else ""),
                      ensure_ascii=False)


def _relative(path: str, root: str) -> str:
    rel = os.path.relpath(path, root)
    return rel if not rel.startswith("..") else path


class _Uvicorn(uvicorn.Server):
    """uvicorn's server, stopped at once when asked: its own loop looks for the request every
    0.1 s, and its shutdown pauses 0.1 s for open connections to close even when there are none;
    an application run under the proxy would wait out both on every exit."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._woken: asyncio.Event | None = None

    async def main_loop(self) -> None:
        self._loop, self._woken = asyncio.get_running_loop(), asyncio.Event()
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 1) % 864000
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._woken.wait(), 0.1)  # uvicorn's tick, or sooner when woken
            should_exit = await self.on_tick(counter)

    def wake(self) -> None:
        """Ask the server to stop, from any thread: its loop sees it now, not at its next tick."""
        self.should_exit = True
        loop, woken = self._loop, self._woken
        if loop is not None and woken is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed already: nothing to wake
                loop.call_soon_threadsafe(woken.set)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.server_state.connections or self.server_state.tasks or self.force_exit:
            await super().shutdown(sockets)  # answers in progress: uvicorn lets them finish
            return
        for server in self.servers:  # nothing open: close and end, without the pause
            server.close()
        for sock in sockets or []:
            sock.close()
        for server in self.servers:
            await server.wait_closed()
        await self.lifespan.shutdown()


class Server:
    """The proxy's HTTP server on 127.0.0.1 (never another interface), on its own thread."""

    def __init__(self, proxy: Proxy, port: int = 0) -> None:
        self.proxy = proxy
        # IPPROTO_TCP named: asyncio turns Nagle off only on sockets that say they are TCP, and
        # with Nagle every answer waits out the client's delayed ACK (~40 ms).
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            self._sock.bind(("127.0.0.1", port))
        except OSError as exc:
            self._sock.close()
            raise ConfigError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}; pass another --port "
                              "(0: any free port)") from None
        self.port = self._sock.getsockname()[1]
        config = uvicorn.Config(proxy.app, host="127.0.0.1", port=self.port, log_level="warning", access_log=False,
                                lifespan="on", timeout_graceful_shutdown=5)
        self._server = _Uvicorn(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]},
                                        name="replayci-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def alive(self) -> bool:
        """Whether the server's thread is still serving."""
        return self._thread.is_alive()

    def start(self) -> Server:
        """Serve; return once the server accepts connections."""
        self._thread.start()
        deadline = time.monotonic() + _STARTUP_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the proxy's HTTP server did not start")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        """Stop accepting, let answers in progress finish (a few seconds at most), close."""
        self._server.wake()
        if self._thread.ident is not None and self._thread.is_alive():
            self._thread.join(timeout=10)
        self._sock.close()
