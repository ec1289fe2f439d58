"""JSON Schema references and depth: what could not be evaluated safely is refused."""
from __future__ import annotations

from typing import Any


class SchemaError(ValueError):
    """A JSON Schema that is not itself valid."""


MAX_SCHEMA_DEPTH = 128  # JSON levels: far beyond any real tool schema, well within the interpreter's stack
_REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")
_DATA_KEYS = frozenset({"enum", "const", "default", "examples"})  # values, not schemas: a "$ref" there is data
_IN_PLACE = ("not", "if", "then", "else")  # subschemas applied to the same value
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")


def _refs_and_anchors(schema: Any) -> tuple[list[tuple[str, str]], set[str]]:
    """Every (reference, where) in *schema* and its anchor names; deeper than MAX_SCHEMA_DEPTH
    is a SchemaError."""
    refs, anchors = [], set()
    stack = [(schema, 0, "")]
    while stack:
        node, depth, where = stack.pop()
        if depth > MAX_SCHEMA_DEPTH:
            raise SchemaError(f"nested deeper than {MAX_SCHEMA_DEPTH} levels (at {where[:60]}...)")
        if isinstance(node, list):
            stack.extend((v, depth + 1, f"{where}/{i}") for i, v in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        for k, v in node.items():
            if k in _REF_KEYS and isinstance(v, str):
                refs.append((v, f"{where}/{k}"))
            elif k in ("$anchor", "$dynamicAnchor") and isinstance(v, str):
                anchors.add(v)
            elif k not in _DATA_KEYS:
                stack.append((v, depth + 1, f"{where}/{k}"))
    return refs, anchors


def target(schema: Any, ref: str) -> Any:
    """The subschema a local JSON-pointer reference names, or MISSING."""
    import urllib.parse  # why: only schemas with a $ref load it (with ipaddress)

    node = schema
    for part in urllib.parse.unquote(ref[1:]).split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return MISSING
    return node


MISSING = object()


def _in_place_refs(node: Any) -> list[str]:
    """The references applied to the same value as *node* (without descending into it)."""
    out, todo, seen = [], [node], set()
    while todo:
        n = todo.pop()
        if not isinstance(n, dict) or id(n) in seen:
            continue
        seen.add(id(n))
        out.extend(n[k] for k in _REF_KEYS if isinstance(n.get(k), str))
        todo.extend(n.get(k) for k in _IN_PLACE)
        todo.extend(sub for k in _IN_PLACE_LISTS if isinstance(n.get(k), list) for sub in n[k])
        if isinstance(n.get("dependentSchemas"), dict):
            todo.extend(n["dependentSchemas"].values())
    return out


def _loop_from(schema: Any, start: str) -> bool:
    """True when following *start* leads back to it without ever descending into the value."""
    seen, todo = set(), [start]
    while todo:
        ref = todo.pop()
        node = target(schema, ref) if ref.startswith("#/") or ref == "#" else MISSING
        for nxt in _in_place_refs(node) if node is not MISSING else ():
            if nxt == start:
                return True
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


def check_references(schema: Any) -> None:
    """Refuse (SchemaError) what could not be evaluated safely: a reference that is not local
    to the schema (replayci never fetches one from a URL or a file), a local one that points
    at nothing, a loop of references that never descends into the value, and nesting deeper
    than MAX_SCHEMA_DEPTH."""
    refs, anchors = _refs_and_anchors(schema)
    for ref, where in refs:
        if not ref.startswith("#"):
            raise SchemaError(f"{ref!r} is not a local reference (#/...): replayci never fetches a "
                              f"schema from a URL or a file (at {where})")
        pointer = ref == "#" or ref.startswith("#/")
        if (target(schema, ref) is MISSING) if pointer else ref[1:] not in anchors:
            raise SchemaError(f"{ref!r} refers to nothing in this schema (at {where})")
    for ref in {r for r, _ in refs}:
        if _loop_from(schema, ref):
            raise SchemaError(f"{ref!r} refers back to itself without descending into the value")


def has_id(schema: Any) -> bool:
    """Whether "$id" is a key anywhere in *schema* (a reference may then be relative to it)."""
    todo = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if "$id" in node:
                return True
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return False
