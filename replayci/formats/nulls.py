"""Null where a request or a tool's JSON Schema holds a list or an object, read as absent: clients
send `"tools": null` (Together's), `"tool_calls": null` on an assistant message, and schema
generators write `"$defs": null`. Checking reads such a request as the same request without
them; the wire request is kept as it was sent."""
from __future__ import annotations

from typing import Any

# Schema keywords whose value is a schema, a map of schemas, a list of schemas or a list of values:
# null there is no schema and no list (JSON Schema has no meaning for it). `const`, `default` and
# `examples` hold data, where null is a value.
_SCHEMA_MAPS = ("$defs", "definitions", "properties", "patternProperties", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMAS = ("items", "additionalProperties", "additionalItems", "unevaluatedProperties", "unevaluatedItems",
            "contains", "propertyNames", "not", "if", "then", "else")
_LISTS = ("required", "enum", "dependentRequired", "dependencies")
_HOLDERS = frozenset(_SCHEMA_MAPS + _SCHEMA_LISTS + _SCHEMAS + _LISTS)
# Message keys where null is a value of its own (no text), not an absent list or object.
_MESSAGE_VALUES = frozenset({"content"})


def request_without_nulls(request: Any) -> Any:
    """*request* without its top-level nulls (a parameter left to its default) and its messages'
    null lists and objects (`tool_calls: null`); the same object when it has none."""
    if not isinstance(request, dict):
        return request
    out = {k: v for k, v in request.items() if v is not None}
    messages = out.get("messages")
    if isinstance(messages, list):
        cleaned = [_message(m) for m in messages]
        if any(a is not b for a, b in zip(cleaned, messages, strict=True)):
            out["messages"] = cleaned
    if len(out) == len(request) and out.get("messages") is request.get("messages"):
        return request
    return out


def _message(message: Any) -> Any:
    if isinstance(message, dict) and any(v is None and k not in _MESSAGE_VALUES for k, v in message.items()):
        return {k: v for k, v in message.items() if v is not None or k in _MESSAGE_VALUES}
    return message


def neutral_without_nulls(neutral: dict) -> dict:
    """A neutral request whose tools' parameter schemas hold no null list or object keyword."""
    tools = neutral.get("tools")
    if not isinstance(tools, list):
        return neutral
    cleaned = [_tool(t) for t in tools]
    if all(a is b for a, b in zip(cleaned, tools, strict=True)):
        return neutral
    return {**neutral, "tools": cleaned}


def _tool(tool: Any) -> Any:
    fn = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("parameters"), dict):
        return tool
    params = schema_without_nulls(fn["parameters"])
    return tool if params is fn["parameters"] else {**tool, "function": {**fn, "parameters": params}}


def schema_without_nulls(schema: Any, depth: int = 0) -> Any:
    """*schema* without null where a keyword holds a schema or a list, at any depth (the same
    object when it has none)."""
    if not isinstance(schema, dict) or depth > 128:
        return schema
    out: dict = {}
    changed = False
    for key, value in schema.items():
        if value is None and key in _HOLDERS:
            changed = True
            continue
        new = _sub(key, value, depth + 1)
        changed = changed or new is not value
        out[key] = new
    return out if changed else schema


def _sub(key: str, value: Any, depth: int) -> Any:
    """A keyword's value with its subschemas cleaned."""
    if key in _SCHEMA_MAPS and isinstance(value, dict):  # a null subschema is none: dropped
        new = {k: schema_without_nulls(v, depth) for k, v in value.items() if v is not None}
        return value if len(new) == len(value) and all(new[k] is value[k] for k in value) else new
    if (key in _SCHEMA_LISTS or key == "items") and isinstance(value, list):
        new_list = [schema_without_nulls(v, depth) for v in value if v is not None]
        same = len(new_list) == len(value) and all(a is b for a, b in zip(new_list, value, strict=True))
        return value if same else new_list
    if key in _SCHEMAS:
        return schema_without_nulls(value, depth)
    return value
