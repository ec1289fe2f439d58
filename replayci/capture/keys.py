"""The request key: what replay matching, fixture names and correspondence compare a request on.

A request of an agent loop carries the ids the provider minted in earlier answers — tool-call ids
in assistant turns, the ids of the results that answer them, the response an answer is chained
to. A model run again mints new ones, so the key replaces each by its order of appearance
(`id_1`, `id_2`, ...): the same loop captured again is the same request, and a result still
answers the call it answered."""
from __future__ import annotations

import hashlib
from typing import Any

from ..core.hashing import canonical_json, h

# What a fixture's `meta.key_ids` says of its key: made with the minted ids replaced.
KEY_IDS = "in order"
# Fields whose value is always an id the provider minted (or the id of the call answered).
_ID_FIELDS = frozenset(("tool_call_id", "tool_use_id", "call_id", "previous_response_id", "toolUseId"))
# The `type` of an item whose own `id` the provider minted: calls, their outputs, reasoning and
# the assistant's messages of the Responses API, Anthropic's tool uses.
_MINTED_TYPES = frozenset(("function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
                           "tool_use", "server_tool_use", "reasoning", "mcp_call", "web_search_call",
                           "file_search_call", "code_interpreter_call", "computer_call", "local_shell_call"))
# Gemini's parts: a function call and its response may carry an id.
_ID_PARTS = frozenset(("functionCall", "functionResponse"))
# Text that must appear in a request for it to hold any minted id (most first requests hold none).
_MARKERS = ('"tool_call_id"', '"tool_use_id"', '"call_id"', '"previous_response_id"', '"toolUseId"',
            '"tool_calls"', '"function_call"', '"tool_use"', '"reasoning"', '"functionCall"', '"assistant"')


def request_key(match: Any) -> str:
    """The 16-hex key of a request's match document, its minted ids replaced in order."""
    text = canonical_json(match)
    if not _ids_in(text):  # one encoding, not two, for a request that holds none
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return h(_walk(match, {}, False))


def without_minted_ids(value: Any) -> Any:
    """*value* (a request, or the document it is matched on) with every id the provider minted
    replaced by `id_N`, N its order of first appearance; the same id keeps one stand-in."""
    return _walk(value, {}, False) if may_hold_ids(value) else value


def may_hold_ids(value: Any) -> bool:
    """Whether *value* may hold an id the provider minted (False: its key keeps it as it is)."""
    return _ids_in(canonical_json(value))


def _ids_in(text: str) -> bool:
    return any(marker in text for marker in _MARKERS)


def _stand_in(found: Any, order: dict[str, str]) -> Any:
    if not isinstance(found, str) or not found:
        return found
    return order.setdefault(found, f"id_{len(order) + 1}")


def _minted(obj: Any) -> bool:
    """Whether *obj*'s own `id` is one the provider minted (by the kind of item it is)."""
    if not isinstance(obj, dict):
        return False
    kind = obj.get("type")
    return isinstance(kind, str) and (kind in _MINTED_TYPES or (kind == "message" and obj.get("role") == "assistant"))


def _walk(value: Any, order: dict[str, str], minted_id: bool) -> Any:
    if isinstance(value, list):
        return [_walk(v, order, minted_id) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict = {}
    for k in sorted(value, key=str):  # by key, as the canonical form: the order of keys never matters
        v = value[k]
        if k in _ID_FIELDS or (k == "id" and minted_id):
            out[k] = _stand_in(v, order)
        elif k == "tool_calls" and isinstance(v, list):
            out[k] = [_walk(c, order, True) for c in v]
        elif isinstance(v, dict):
            out[k] = _walk(v, order, k in _ID_PARTS or _minted(v))
        elif isinstance(v, list):
            out[k] = [_walk(c, order, _minted(c)) for c in v]
        else:
            out[k] = v
    return out
