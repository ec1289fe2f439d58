"""Canonical JSON, boundary hashes, args hashes and fingerprints."""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from .memo import Memo

_canonical = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode

HASH_RE = re.compile(r"[0-9a-f]{16}\Z")


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
    return isinstance(value, str) and HASH_RE.match(value) is not None


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
        "system_hash": h(system),
    }


def args_hash(arguments: Any) -> str:
    """The key a tool call is matched by: h(arguments)."""
    return h(arguments)


def tools_key_of(request: dict) -> str:
    """The canonical JSON of a request's tools (the input of tool_schema_hash)."""
    return _canonical(request.get("tools") or [])
