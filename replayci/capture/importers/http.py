"""One recorded HTTP exchange (a cassette's interaction, a HAR entry) read as a model call: bodies
decoded (base64 by the caller, then gzip / deflate / brotli as the headers say), the endpoint
classified, the request and a JSON answer parsed, the credentials the entry carries collected."""
from __future__ import annotations

import json
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from ...core.errors import ConfigError, Problem
from ..endpoints import classify
from ..proxy.routes import credential_name, kept_query, secrets_of
from ..writer import REDACTED, scrub_all
from . import Exchange, Passed, Reading

# Answer headers a fixture keeps (the proxy keeps the same): what an SDK reads from an error.
_KEPT_HEADERS = ("retry-after", "retry-after-ms", "x-amzn-errortype")


@dataclass
class Http:
    """One recorded request and its answer, bodies as the recording holds them (content-encoded)."""

    entry: int
    method: str
    url: str
    request_headers: list[tuple[str, str]]
    request_body: bytes | None
    status: int
    response_headers: list[tuple[str, str]]
    response_body: bytes


def header(headers: list[tuple[str, str]], name: str) -> str:
    """The first value of header *name* (any case), or ""."""
    name = name.lower()
    return next((v for k, v in headers if k.lower() == name), "")


def decoded(body: bytes, encoding: str, where: str) -> bytes:
    """*body* with its Content-Encoding undone. A body that already reads as text was decoded by
    its recorder (vcrpy's decode_compressed_response keeps the header): it is kept as it is."""
    steps = [e.strip().lower() for e in encoding.split(",") if e.strip() and e.strip().lower() != "identity"]
    for step in reversed(steps):
        if _textual(body):
            break
        if step in ("gzip", "x-gzip"):
            body = _inflate(body, (16 + zlib.MAX_WBITS,), where)
        elif step == "deflate":  # zlib-wrapped as the RFC says, or raw as some servers send it
            body = _inflate(body, (zlib.MAX_WBITS, -zlib.MAX_WBITS), where)
        elif step == "br":
            body = _unbrotli(body, where)
    return body


# A recorded body inflated past this is not read: the limit a live answer has once decompressed
# (providers.http.MAX_BODY_BYTES), so a recorded gzip bomb cannot fill the memory.
MAX_INFLATED_BYTES = 32 * 1024 * 1024


class InflateLimit(ValueError):
    """Compressed data that inflates past the limit it was read under."""


def inflate(data: bytes, wbits: int, *, limit: int = MAX_INFLATED_BYTES) -> bytes:
    """*data* decompressed (zlib's *wbits*: gzip, zlib or raw deflate), never more than *limit*
    bytes held: InflateLimit past it, zlib.error for data that is not whole and valid."""
    inflater = zlib.decompressobj(wbits)
    out = inflater.decompress(data, limit + 1)
    if len(out) > limit or inflater.unconsumed_tail:
        raise InflateLimit(f"it inflates past {limit // (1024 * 1024)} MiB, the limit a live answer has")
    if not inflater.eof:
        raise zlib.error("incomplete or truncated stream")
    return out


def _inflate(body: bytes, wbits: tuple[int, ...], where: str) -> bytes:
    error: Exception | None = None
    for bits in wbits:
        try:
            return inflate(body, bits)
        except InflateLimit as exc:
            raise ConfigError(Problem(where, None, None, f"the body is not read: {exc}")) from None
        except zlib.error as exc:
            error = exc
    raise ConfigError(Problem(where, None, None, f"the body is not valid compressed data ({error})"))


def _textual(body: bytes) -> bool:
    """Whether *body* reads as UTF-8 text (compressed data practically never does)."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\x00" not in body


def _unbrotli(body: bytes, where: str) -> bytes:
    try:
        import brotli  # why: only brotli-encoded bodies need it, and it is an optional extra
    except ImportError:
        raise ConfigError(Problem(where, None, None, "the body is brotli-encoded: install replayci[brotli] "
                                  "(the brotli package) to read it")) from None
    try:
        decompressor = brotli.Decompressor()
        try:
            out = decompressor.process(body, output_buffer_limit=MAX_INFLATED_BYTES + 1)
        except TypeError:  # a brotli without the output limit (before 1.1): the size is checked after
            out = brotli.decompress(body)
        else:
            if len(out) <= MAX_INFLATED_BYTES and not decompressor.is_finished():
                raise brotli.error("truncated data")
    except brotli.error as exc:
        raise ConfigError(Problem(where, None, None, f"the body is not valid brotli data ({exc})")) from None
    if len(out) > MAX_INFLATED_BYTES:
        raise ConfigError(Problem(where, None, None, f"the body is not read: it inflates past "
                                  f"{MAX_INFLATED_BYTES // (1024 * 1024)} MiB, the limit a live answer has"))
    return out


# A form field (`api_key=...`), in a body quoted in a message.
_FIELD = re.compile(r"([\w.\-\[\]]+)=([^&\s]*)")


def _quoted(body: bytes, secrets: tuple[str, ...]) -> str:
    """The start of a body, for a message: the values of fields named as credentials, the
    entry's credentials and anything shaped like a key left out."""
    text = _FIELD.sub(lambda m: f"{m[1]}={REDACTED}" if credential_name(m[1]) else m[0],
                      body[:4096].decode("utf-8", "replace"))
    return scrub_all(text, secrets)[:60]


def _json_body(body: bytes, where: str, what: str, secrets: tuple[str, ...] = ()) -> Any:
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        start = _quoted(body, secrets)
        raise ConfigError(Problem(where, None, None, f"{what} is not JSON ({exc}); it starts {start!r}")) from None


_TOO_DEEP = "%s is nested too deeply for replayci to read"


def _answer(body: bytes, content_type: str, where: str, status: int, secrets: tuple[str, ...]) -> Any:
    """The answer as a fixture holds it: JSON as JSON, a stream as its text."""
    text = body.decode("utf-8", errors="replace")
    stripped = text.lstrip()
    if "event-stream" in content_type or "ndjson" in content_type or stripped.startswith(("data:", "event:")):
        return text
    if stripped.startswith(("{", "[")) or "json" in content_type:
        try:
            return json.loads(text)
        except ValueError:
            if "\n{" in text.strip():  # JSON lines (a stream recorded without its content type)
                return text
            if status >= 400:
                return text
            return _json_body(body, where, "the answer", secrets)
    return text


def each_entry(reading: Reading, entries: list, http_of: Callable[[int, Any, str], Http], where: str) -> Reading:
    """*reading* with every entry of *entries* read as a model call (`http_of(n, entry, where)`
    gives its HTTP exchange): an entry that cannot be read is passed over as unreadable, with the
    reason, and the others are read all the same."""
    for n, entry in enumerate(entries):
        at = f"{where} {n}"
        try:
            got = model_call(http_of(n, entry, at), at)
        except ConfigError as exc:
            got = Passed(n, "unreadable", "; ".join(p.message for p in exc.problems))
        (reading.passed if isinstance(got, Passed) else reading.exchanges).append(got)
    return reading


def model_call(http: Http, where: str) -> Exchange | Passed:
    """*http* as a model exchange, or passed over with the reason. *where* locates the entry in
    messages ("cassette.yaml: interaction 3")."""
    try:
        parts = urlsplit(http.url)
    except ValueError as exc:  # "https://[zz/...": no host a request went to
        return Passed(http.entry, "skipped", f"the request's URL is not a URL ({exc})")
    query = parse_qsl(parts.query, keep_blank_values=True)
    host = parts.netloc.rsplit("@", 1)[-1]  # never a user or password the URL carries
    secrets = secrets_of(http.request_headers, query)
    body_bytes = decoded(http.request_body or b"", header(http.request_headers, "content-encoding"), where)
    probe = classify(http.method, parts.path)
    if probe.skipped and not probe.api:
        return Passed(http.entry, "skipped", f"{http.method.upper()} {host}{parts.path}: {probe.skipped}")
    if not body_bytes.strip():
        if probe.unsupported:
            return Passed(http.entry, "unsupported", probe.unsupported)
        return Passed(http.entry, "skipped", f"{parts.path}: no request body recorded")
    try:
        request = _json_body(body_bytes, where, "the request body", secrets)
    except RecursionError:
        return Passed(http.entry, "unsupported", f"not imported: {_TOO_DEEP % 'the request body'}")
    endpoint = classify(http.method, parts.path, request)
    if endpoint.unsupported:
        return Passed(http.entry, "unsupported", endpoint.unsupported)
    if not isinstance(request, dict):
        raise ConfigError(Problem(where, None, None, f"the request body is a JSON {type(request).__name__}, "
                                  "expected an object"))
    content_type = header(http.response_headers, "content-type").lower()
    answer = decoded(http.response_body, header(http.response_headers, "content-encoding"), where)
    if not answer.strip():
        return Passed(http.entry, "skipped", f"{parts.path}: no answer recorded (empty body)")
    kept = {k.lower(): v for k, v in http.response_headers if k.lower() in _KEPT_HEADERS}
    try:
        response = _answer(answer, content_type, where, http.status, secrets)
    except RecursionError:
        return Passed(http.entry, "unsupported", f"not imported: {_TOO_DEEP % 'the answer'}")
    return Exchange(entry=http.entry, endpoint=parts.path, request=request,
                    response=response, status=http.status,
                    host=host, query=kept_query(query),
                    content_type=content_type or "application/json", headers=kept, secrets=secrets)
