"""Canonical JSON, boundary hashes, args hashes and fingerprints."""
from __future__ import annotations

import hashlib
from typing import Any

from .jsonvalue import encoder
from .memo import Memo, fast_paths

_canonical = encoder(sort_keys=True, separators=(",", ":"), allow_nan=False)


def canonical_json(value: Any) -> str:
    """The canonical JSON text of *value*: sorted keys, no spaces, UTF-8, no NaN."""
    return _canonical(value)


def h(value: Any) -> str:
    """16 hex digits of sha256 over the canonical JSON of *value*."""
    return hashlib.sha256(_canonical(value).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def short_hash(value: Any) -> str:
    """8 hex digits of sha256 over the canonical JSON of *value* (a fingerprint)."""
    return hashlib.sha256(_canonical(value).encode("utf-8", "surrogatepass")).hexdigest()[:8]


def is_pinned(value: Any) -> bool:
    """A boundary hash is pinned when it is exactly 16 lowercase hex digits."""
    return isinstance(value, str) and len(value) == 16 and not value.strip(_HEX_DIGITS)


_HEX_DIGITS = "0123456789abcdef"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


_tools_digests: Memo = Memo()


def _tools_digest(tools_key: str) -> str:
    """tool_schema_hash, once per distinct tools list (a run's cases share a few)."""
    digest = _tools_digests.get(tools_key)
    if digest is None:
        digest = _tools_digests.put(tools_key, _digest(tools_key))
    return digest


def boundary_hashes(request: dict, tools_key: str | None = None) -> dict[str, str]:
    """The three boundary hashes of a request document in OpenAI form.

    *tools_key* is the canonical JSON of the request's tools when the caller has it already.
    """
    messages = request.get("messages") or []
    system, other = [], []
    for m in messages:
        (system if isinstance(m, dict) and m.get("role") == "system" else other).append(m)
    return {
        "tool_schema_hash": _tools_digest(tools_key if tools_key is not None else tools_key_of(request)),
        "message_hash": h(other),
        "system_hash": _system_digest(system),
    }


_system_digests: Memo = Memo(256)
_SYSTEM_KEEP_CHARS = 16_384  # (a longer prompt is hashed each time: the table stays small)


def _system_digest(system: list) -> str:
    """system_hash: the hash of a lone {role, content} message, whose text is all that can
    differ, is kept by that text (a contract's fixtures share their system prompt)."""
    if fast_paths() and len(system) == 1 and len(system[0]) == 2:
        content = system[0].get("content")
        if type(content) is str and len(content) <= _SYSTEM_KEEP_CHARS:
            digest = _system_digests.get(content)
            if digest is None:
                digest = _system_digests.put(content, h(system))
            return digest
    return h(system)


def args_hash(arguments: Any) -> str:
    """The key a tool call is matched by: h(arguments)."""
    return h(arguments)


def tools_key_of(request: dict) -> str:
    """The canonical JSON of a request's tools (the input of tool_schema_hash)."""
    tools = request.get("tools") or []
    return tools_key(tools) if type(tools) is list else _canonical(tools)


class ToolsKey(str):
    """The canonical JSON of a tools list, with `schemas`: the canonical JSON of each tool's
    parameter schema (None for a tool without one), worked out on the way."""

    schemas: tuple = ()


def tools_key(tools: list) -> ToolsKey:
    """canonical_json(tools), each tool's parameter schema encoded once and kept: compiled
    schemas are shared by that text, and a schema is most of a tools list's bytes."""
    if not fast_paths():
        return ToolsKey(_canonical(tools))
    texts, schemas = [], []
    for tool in tools:
        text, schema = _tool_text(tool)
        texts.append(text)
        schemas.append(schema)
    key = ToolsKey("[" + ",".join(texts) + "]")
    key.schemas = tuple(schemas)
    return key


def schema_field(fn: dict) -> str | None:
    """The key of a tool's parameter schema: `parameters`, else `input_schema` (None: neither)."""
    return "parameters" if "parameters" in fn else "input_schema" if "input_schema" in fn else None


def _tool_text(tool: Any) -> tuple[str, str | None]:
    """The canonical JSON of one tool (OpenAI or flat form) and of its parameter schema."""
    if type(tool) is not dict:
        return _canonical(tool), None
    fn = tool.get("function")
    inner = fn if isinstance(fn, dict) else tool
    field = schema_field(inner)
    if field is None or type(inner) is not dict:
        return _canonical(tool), None
    schema = _canonical(inner[field])
    text = _object_text(inner, field, schema)
    return (text if inner is tool else _object_text(tool, "function", text)), schema


def _object_text(obj: dict, known: str, text: str) -> str:
    """The canonical JSON of *obj*, whose value under *known* encodes as *text*: what the
    encoder writes for a dict (keys sorted, `"key":value` joined by commas)."""
    if not all(type(k) is str for k in obj):
        return _canonical(obj)
    return "{" + ",".join(_canonical(k) + ":" + (text if k == known else _canonical(obj[k]))
                          for k in sorted(obj)) + "}"
