"""Readers of recorded traffic: one module per source format behind one registry, each turning a
file into the model exchanges it holds (and what it passed over, with the reason). Adding a format
is a module here and a row in `IMPORTERS`.

An importer module has:
- `NAME`: the `--format` value;
- `detect(path: str, head: bytes) -> bool`: whether the file (its first 64 KiB in `head`) is of
  this format, by content, never by executing anything;
- `read(path: str, display: str) -> Reading`: every exchange of the file, in the file's order;
  a file that is not of the format, or is broken, is a `ConfigError` naming the file (and line
  where there is one); an entry that cannot be read is passed over as `unreadable` with the
  reason, and the others are read. Import lists both as not imported; neither stops it.
Nothing in a file is ever executed: YAML is read with the safe loader, no custom tags.
"""
from __future__ import annotations

import importlib
import zlib
from dataclasses import dataclass, field
from typing import Any

from ...core.errors import ConfigError, Problem

# name -> module under replayci.capture.importers; `auto` asks each in this order.
IMPORTERS: dict[str, str] = {
    "cassette": "cassette",
    "har": "har",
    "otel": "otel",
    "inspect": "inspect_log",
    "promptfoo": "promptfoo",
}


@dataclass
class Exchange:
    """One model call as recorded: the request the application sent and the answer it got."""

    entry: int | str  # 0-based index of the interaction / HAR entry, or the span id
    endpoint: str  # the URL path the request went to ("/v1/chat/completions"), or the path the
    #                provider's wire form implies for a reconstructed exchange
    request: dict  # the request body, in its provider's wire form
    response: Any  # the answer body: a JSON document, or the text of a stream (SSE / NDJSON)
    status: int = 200
    host: str = ""
    query: dict = field(default_factory=dict)  # the URL's query, credentials left out
    content_type: str = "application/json"
    headers: dict = field(default_factory=dict)  # answer headers worth keeping (retry-after, x-amzn-errortype)
    fidelity: str = "wire"  # "wire": the bytes as sent; "reconstructed": rebuilt from a trace
    tools_inferred: bool = False  # tools declared by name only: the trace held no definitions
    group: str = ""  # the trace id (traces), "" for a file's single stream of calls
    secrets: tuple[str, ...] = ()  # credential values seen in the entry (headers, query): never written
    checks: dict | None = None  # the case's own checks, as the source stated them (promptfoo's assertions)
    label: str = ""  # what the source calls this exchange (a test's description), for its case


@dataclass
class Passed:
    """An entry that is not imported, and why."""

    entry: int | str
    kind: str  # "skipped" (not a model call), "unsupported" (a model call replayci does not read),
    #            "not_translated" (a check of the source's that no contract check says exactly),
    #            "not_captured" (a span without its messages), "unreadable" (an entry that cannot be read)
    reason: str


@dataclass
class Reading:
    """What one source file holds."""

    file: str  # as displayed
    format: str
    exchanges: list[Exchange] = field(default_factory=list)
    passed: list[Passed] = field(default_factory=list)


# A gzipped recording (LangChain's partner packages keep `*.yaml.gz` cassettes) is read through
# its decompression, never past this many bytes: a small file cannot fill the memory.
MAX_GUNZIPPED = 32 * 1024 * 1024
_GZIP_MAGIC = b"\x1f\x8b"


def gzipped(path: str, head: bytes) -> bool:
    """Whether the file at *path* (starting with *head*) is gzip-compressed."""
    return head[:2] == _GZIP_MAGIC


def gunzip(data: bytes, display: str, limit: int = MAX_GUNZIPPED) -> bytes:
    """*data* decompressed, at most *limit* bytes (ConfigError past it, or on broken data)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, limit)
    except zlib.error as exc:
        raise ConfigError(Problem(display, None, None, f"not valid gzip data ({exc})")) from None
    if inflater.unconsumed_tail:
        raise ConfigError(Problem(display, None, None, f"refused: it decompresses past {limit // (1024 * 1024)} MiB, "
                                  "the most replayci reads of a compressed recording"))
    return out


def head_of(path: str, size: int) -> bytes:
    """The first *size* bytes of the file at *path*, decompressed when it is gzipped (b"" when
    it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(size)
    except OSError:
        return b""
    if not gzipped(path, head):
        return head
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        return inflater.decompress(head, size)
    except zlib.error:
        return b""


def read_bytes(path: str, display: str) -> bytes:
    """The bytes of the recording at *path*, decompressed when it is gzipped (within MAX_GUNZIPPED)."""
    with open(path, "rb") as fh:
        data = fh.read()
    return gunzip(data, display) if gzipped(path, data[:2]) else data


def importer(name: str):
    """The module of the source format *name*."""
    return importlib.import_module(f"{__name__}.{IMPORTERS[name]}")
