"""`replayci pin`: write or refresh every golden fixture's boundary from its request.

Only the boundary's text changes: the rest of the file is kept byte for byte (its layout,
key order and the request as written, a `$ref` tools file included), so pinning is a small,
reviewable diff. A request whose tools are an MCP server's (`{"$mcp": NAME}`) gets the server's
current tools written beside the name first.
"""
from __future__ import annotations

import json
import os
from typing import NamedTuple

from ..api import load_settings_packs
from ..config import Settings
from ..core.errors import ConfigError, Problem
from ..core.files import write_atomic
from ..core.hashing import boundary_hashes
from ..pack.fixtures import load_fixture, mcp_tools
from ..pack.model import Pack
from ..pack.sources import load_json, locate_json
from ..providers.mcp import Sessions, unknown_server

_BOM = b"\xef\xbb\xbf"
_WS = " \t\r\n"


class Pinned(NamedTuple):
    """One fixture: its path as shown, and what pinning did (pinned, refreshed, up to date)."""

    display: str
    action: str


def pin_packs(settings: Settings) -> list[Pinned]:
    """Pin the fixtures of every pack of *settings* (each file once); what was done to each."""
    done: list[Pinned] = []
    seen: set[str] = set()
    packs = load_settings_packs(settings)
    with Sessions(settings.mcp_servers) as servers:
        for pack in packs:
            for contract in pack.contracts:
                for case in contract.cases:
                    if case.fixture_path in seen:
                        continue
                    seen.add(case.fixture_path)
                    done.append(pin_fixture(case.fixture_path, case.fixture_display, pack,
                                            max_bytes=settings.max_fixture_bytes, servers=servers))
    return done


def pin_fixture(path: str, display: str, pack: Pack, *, max_bytes: int,
                servers: Sessions | None = None) -> Pinned:
    """Write the boundary of one fixture from its request (nothing when it already matches),
    and first the tools of the MCP server its request names (fetched from *servers*). A
    fixture is written once, after it was read back as the pack will read it: tools a server
    lists that the pack would refuse are never written."""
    pending = _pin_mcp_tools(path, display, pack, servers, max_bytes) if servers is not None else None
    if pending is None:
        fixture, tools_action = load_fixture(path, display, max_bytes=max_bytes), None
        bom, text = _read(path)
    else:
        tools_action, server, bom, text = pending
        fixture = _checked(path, display, bom + text.encode("utf-8"), max_bytes, server)
    old = fixture.boundary or {}
    model = fixture.request.get("model") or old.get("model") or pack.default_model
    boundary = {"model": model, **boundary_hashes(fixture.request, fixture.tools_key)}
    if old == boundary and pending is None:
        return Pinned(display, "up to date")
    data = bom + (with_boundary(text, boundary, display) if old != boundary else text).encode("utf-8")
    if pending is not None:
        _checked(path, display, data, max_bytes, pending[1])
    write_atomic(path, data)
    return Pinned(display, tools_action or ("refreshed" if fixture.boundary else "pinned"))


def _checked(path: str, display: str, data: bytes, max_bytes: int, server: str):
    """The fixture *data* would be at *path*, read as the pack will read it (from a temp file
    beside it, so a `$ref` resolves the same); ConfigError, naming the server, when the pack
    would refuse it."""
    import tempfile  # why: only a fixture whose MCP tools changed needs it

    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return load_fixture(tmp, display, max_bytes=max_bytes)
    except ConfigError as exc:
        why = "; ".join(p.message for p in exc.problems[:3])
        raise ConfigError(Problem(display, None, None, f"the tools MCP server '{server}' lists now would make "
                                  f"this fixture one replayci refuses ({why}); nothing was written")) from None
    finally:
        os.unlink(tmp)


def _read(path: str) -> tuple[bytes, str]:
    """A fixture's byte-order mark (if any) and its text."""
    with open(path, "rb") as fh:
        data = fh.read()
    bom = _BOM if data.startswith(_BOM) else b""
    return bom, data[len(bom):].decode("utf-8")


def _pin_mcp_tools(path: str, display: str, pack: Pack, servers: Sessions,
                   max_bytes: int) -> tuple[str, str, bytes, str] | None:
    """The fixture with the current tools of the MCP server its `tools: {"$mcp": NAME}` names
    written beside the name: (pinned or refreshed, the server's name, byte-order mark, text);
    None when nothing changed."""
    bom, text = _read(path)
    if '"$mcp"' not in text:
        return None
    raw = load_json(path, display, max_bytes=max_bytes)
    tools = mcp_tools(raw.get("request") if isinstance(raw, dict) else None)
    if tools is None:
        return None
    known = servers.servers(pack)
    if tools["$mcp"] not in known:
        where = ("request", "tools", "$mcp")
        raise ConfigError(locate_json(text, display).problem(where, unknown_server(tools["$mcp"], known)))
    current = servers.tools(known[tools["$mcp"]])
    if tools.get("pinned") == current:
        return None
    value = {"$mcp": tools["$mcp"], "pinned": current}
    try:
        text = with_request_tools(text, value, display)
    except RecursionError:
        raise ConfigError(Problem(display, None, None, f"the tools MCP server '{tools['$mcp']}' lists are nested "
                                  "too deep to write; nothing was written")) from None
    return ("refreshed" if "pinned" in tools else "pinned"), tools["$mcp"], bom, text


def with_request_tools(text: str, tools: dict, display: str) -> str:
    """*text* (a fixture) with its `request.tools` value replaced by *tools*, laid out like the
    request (indented at the key's depth when the request spans lines); the rest kept."""
    start = _skip(text, 0)
    if text[start:start + 1] != "{":
        raise ConfigError(Problem(display, 1, 1, "expected a JSON object"))
    request = _top_level_values(text, start)["request"][0]
    begin, end = _top_level_values(text, request)["tools"]
    if "\n" in text[request:begin]:
        line = text[text.rfind("\n", 0, begin) + 1:begin]
        indent = line[:len(line) - len(line.lstrip(" \t"))]
        value = json.dumps(tools, indent=2, ensure_ascii=False).replace("\n", "\n" + indent)
    else:
        value = json.dumps(tools, ensure_ascii=False)
    return text[:begin] + value + text[end:]


def with_boundary(text: str, boundary: dict, display: str) -> str:
    """*text* (a JSON object) with its top-level `boundary` value replaced by *boundary*, or
    the key added first (indented like the key after it)."""
    value = json.dumps(boundary, ensure_ascii=False)
    start = _skip(text, 0)
    if text[start:start + 1] != "{":
        raise ConfigError(Problem(display, 1, 1, "expected a JSON object"))
    spans = _top_level_values(text, start)
    if "boundary" in spans:
        begin, end = spans["boundary"]
        return text[:begin] + _refreshed(text[begin:end], boundary, value) + text[end:]
    first = _skip(text, start + 1)
    if text[first:first + 1] == "}":
        return text[:first] + f'"boundary": {value}' + text[first:]
    gap = text[start + 1:first]
    return text[:first] + f'"boundary": {value},' + gap + text[first:]


def _refreshed(old: str, boundary: dict, value: str) -> str:
    """An existing boundary's text with its changed values replaced in place (its layout
    kept: the diff shows only the hashes that changed); *value* when its keys differ."""
    if not old.startswith("{"):
        return value
    spans = _top_level_values(old, 0)
    if set(spans) != set(boundary):
        return value
    for key, (begin, end) in sorted(spans.items(), key=lambda kv: -kv[1][0]):
        if _decoder.raw_decode(old, begin)[0] != boundary[key]:
            old = old[:begin] + json.dumps(boundary[key], ensure_ascii=False) + old[end:]
    return old


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


_decoder = json.JSONDecoder()


def _top_level_values(text: str, start: int) -> dict[str, tuple[int, int]]:
    """Where each top-level key's value starts and ends in a JSON object at *start* (the file
    has been parsed already, so it is well formed)."""
    spans = {}
    i = _skip(text, start + 1)
    while text[i:i + 1] == '"':
        key, i = json.decoder.scanstring(text, i + 1)
        i = _skip(text, _skip(text, i) + 1)  # past ':'
        _, end = _decoder.raw_decode(text, i)
        spans[key] = (i, end)
        i = _skip(text, end)
        if text[i:i + 1] != ",":
            break
        i = _skip(text, i + 1)
    return spans


def fixture_count(done: list[Pinned]) -> dict[str, int]:
    """How many fixtures each action touched."""
    counts = {"pinned": 0, "refreshed": 0, "up to date": 0}
    for p in done:
        counts[p.action] += 1
    return counts

