"""The HTTP transport every live SDK sends through (OpenAI and Anthropic as their client's,
google-genai as its client's too, boto3 through its before-send event): one deadline for the
whole call (a body that drips in byte by byte included), no redirect to another host, a
bounded body."""
from __future__ import annotations

import math
import time
import zlib
from collections.abc import Iterator
from typing import Any

import httpx2

from .errors import InvalidResponseError

# An answer (a stream's whole text included) larger than this, once decompressed, is refused:
# a tool-calling answer is a few kilobytes, and a gzip bomb must not fill the memory.
MAX_BODY_BYTES = 32 * 1024 * 1024

# Bodies are asked for in the encodings decoded here (under the bound above), no other.
_ENCODINGS = {"gzip", "deflate", "x-gzip"}


class _Body(httpx2.SyncByteStream):
    """A response body read under the call's deadline and the size bound, decompressed here."""

    def __init__(self, inner: Any, deadline: float, seconds: float, compressed: bool,
                 limit: int = MAX_BODY_BYTES) -> None:
        self._inner, self._deadline, self._seconds, self._limit = inner, deadline, seconds, limit
        self._decoder = zlib.decompressobj(wbits=47) if compressed else None  # 47: gzip or zlib header

    def __iter__(self) -> Iterator[bytes]:
        size = 0
        for chunk in self._inner:
            if time.monotonic() > self._deadline:
                raise httpx2.ReadTimeout(f"the answer was not complete within the call's deadline "
                                         f"({self._seconds:g} s, timeouts.total_ms)")
            if self._decoder is not None:
                chunk = self._decoded(chunk, self._limit + 1 - size)
            size += len(chunk)
            if size > self._limit:
                raise InvalidResponseError(f"the answer is larger than {self._limit // (1024 * 1024)} MiB "
                                      "(decompressed); refused")
            yield chunk

    def _decoded(self, chunk: bytes, room: int) -> bytes:
        try:
            out = self._decoder.decompress(chunk, max(room, 1))
        except zlib.error as exc:
            raise InvalidResponseError(f"the answer's compressed body is corrupt ({exc})") from None
        if self._decoder.unconsumed_tail:
            raise InvalidResponseError(f"the answer is larger than {self._limit // (1024 * 1024)} MiB "
                                  "(decompressed); refused")
        return out

    def close(self) -> None:
        self._inner.close()


class GuardedTransport(httpx2.BaseTransport):
    """The SDK client's transport, with the deadline, redirect and size rules above."""

    def __init__(self, limits: httpx2.Limits | None = None, *, max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self._inner = httpx2.HTTPTransport(**({"limits": limits} if limits is not None else {}))
        self._limit = max_body_bytes

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        timeout = request.extensions.get("timeout") or {}
        seconds = max((v for v in timeout.values() if v), default=math.inf)
        deadline = time.monotonic() + seconds
        request.headers["accept-encoding"] = "gzip, deflate"
        response = self._inner.handle_request(request)
        if response.status_code in (301, 302, 303, 307, 308):
            _refuse_other_host(request, response)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in _ENCODINGS | {"identity", ""}:
            response.close()
            raise InvalidResponseError(f"the answer came in the {encoding!r} encoding, which was not asked for")
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() != "content-encoding"]
        return httpx2.Response(response.status_code, headers=headers, extensions=response.extensions,
                               stream=_Body(response.stream, deadline, seconds, encoding in _ENCODINGS,
                                            self._limit))

    def close(self) -> None:
        self._inner.close()


def _refuse_other_host(request: httpx2.Request, response: httpx2.Response) -> None:
    """A redirect leaves the endpoint only to the same scheme, host and port: the request
    carries the API key, which another host must never receive."""
    location = response.headers.get("location")
    if not location:
        return
    target = request.url.join(location)
    if (target.scheme, target.host, target.port) != (request.url.scheme, request.url.host, request.url.port):
        response.close()
        raise InvalidResponseError(f"the endpoint redirected (HTTP {response.status_code}) to another host "
                              f"({target.scheme}://{target.host}); not followed: the request carries the "
                              "API key", status=response.status_code)


def client(sdk: Any, *, max_body_bytes: int = MAX_BODY_BYTES) -> Any:
    """The SDK's own default HTTP client, on the guarded transport (a body bound above one
    answer's for a batch's result files)."""
    return sdk.DefaultHttpxClient(transport=GuardedTransport(sdk.DEFAULT_CONNECTION_LIMITS,
                                                             max_body_bytes=max_body_bytes))
