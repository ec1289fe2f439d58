"""Invariants: a list of mappings {path, <operator>: value} (or any_of / all_of / not) compiled
once, with every problem located."""
from __future__ import annotations

from typing import Any

from ..checks.jsonpath import CompiledPath, JSONPathError, compile_path
from ..checks.operators import COMPOSITES, OPERATORS, Composite, Invariant, operator_hint
from ..checks.schemas import SchemaError, compile_schema
from ..core.errors import did_you_mean
from ..core.jsonvalue import TYPE_NAMES
from . import vocabulary as spec
from .load_problems import Collector, kind_of, shown
from .sources import Located


def compile_invariants(col: Collector, doc: Located, path: tuple, value: Any) -> tuple:
    """A list of invariant mappings -> compiled Invariants (problems collected)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        return ()  # reported by the mapping check of the enclosing table (type: array)
    out = []
    for i, entry in enumerate(value):
        inv = compile_invariant(col, doc, path + (i,), entry)
        if inv is not None:
            out.append(inv)
    return tuple(out)


def compile_invariant(col: Collector, doc: Located, path: tuple, entry: Any) -> Invariant | Composite | None:
    """One invariant mapping -> an Invariant, or None once its problems are collected."""
    if isinstance(entry, dict) and any(k in entry for k in COMPOSITES):
        return _composite(col, doc, path, entry)
    if not isinstance(entry, dict):
        col.at(doc, path, f"expected an invariant {{path: ..., <operator>: ...}}, got {kind_of(entry)}")
        return None
    p = entry.get("path")
    ok, compiled = _invariant_path(col, doc, path, p)
    ops = []
    for key, val in entry.items():
        if key in spec.INVARIANT_BASE_KEYS:
            continue
        op = _invariant_operator(col, doc, path + (key,), key, val)
        if op is None:
            ok = False
        else:
            ops.append(op)
    if ok and not ops:
        col.at(doc, path, "an invariant needs at least one operator; expected one of "
               + ", ".join(sorted(OPERATORS)))
        ok = False
    if_present = entry.get("if_present", False)
    if not isinstance(if_present, bool):
        col.at(doc, path + ("if_present",), f"expected true or false, got {shown(if_present)}")
        ok = False
    scoring = _scoring(col, doc, path, entry)
    if not ok or scoring is None:
        return None
    return Invariant(p, compiled, tuple(ops), doc.source(path), if_present, **scoring)


def _composite(col: Collector, doc: Located, path: tuple, entry: dict) -> Composite | None:
    """{any_of: [...]}, {all_of: [...]} or {not: invariant} -> a Composite (None once its
    problems are collected)."""
    kinds = [k for k in COMPOSITES if k in entry]
    others = [k for k in entry if k not in COMPOSITES and k not in spec.SCORING_KEYS]
    if len(kinds) > 1 or others:
        col.at(doc, path, f"a composite invariant takes one of {', '.join(COMPOSITES)} (with "
               f"{', '.join(spec.SCORING_KEYS)}), got {', '.join(map(str, kinds[1:] + others))}")
        return None
    kind = kinds[0]
    raw = entry[kind]
    if kind == "not":
        members = (compile_invariant(col, doc, path + (kind,), raw),)
    elif isinstance(raw, list) and raw:
        members = tuple(compile_invariant(col, doc, path + (kind, i), m) for i, m in enumerate(raw))
    else:
        col.at(doc, path + (kind,), f"{kind} takes a non-empty list of invariants, got {shown(raw)}")
        return None
    scoring = _scoring(col, doc, path, entry)
    if scoring is None or any(m is None for m in members):
        return None
    return Composite(kind, members, doc.source(path), **scoring)


def _scoring(col: Collector, doc: Located, path: tuple, entry: dict) -> dict | None:
    """An invariant's weight and required (None once a bad value is reported)."""
    out = {}
    for key in ("weight", "required"):
        if key in entry:
            why = spec.check_value(spec.SCORING_KEYS[key], entry[key])
            if why is not None:
                col.at(doc, path + (key,), spec.mismatch(why, shown(entry[key])))
                return None
            out[key] = float(entry[key]) if key == "weight" else entry[key]
    return out


def _invariant_path(col: Collector, doc: Located, path: tuple, p: Any) -> tuple[bool, CompiledPath | None]:
    """(whether it is usable, the compiled path) for an invariant's `path` value."""
    if p is None:
        col.at(doc, path, "missing required key 'path' (an RFC 9535 JSONPath such as $.tool_calls[0].name)")
        return False, None
    if not isinstance(p, str):
        col.at(doc, path + ("path",), f"expected a JSONPath string, got {shown(p)}")
        return False, None
    try:
        return True, compile_path(p)
    except JSONPathError as exc:
        col.at(doc, path + ("path",), f"invalid JSONPath {p!r}: {exc}")
        return False, None


def _invariant_operator(col: Collector, doc: Located, where: tuple, key: str, val: Any) -> tuple | None:
    """(operator, value, prepared value) for one operator key of an invariant, or None once
    its problem is collected."""
    op = OPERATORS.get(key)
    if op is None:
        col.at(doc, where, f"unknown operator '{key}'; expected one of {', '.join(sorted(OPERATORS))}"
               + operator_hint(str(key)))
        return None
    why = op.validate(val)
    if why is not None:
        hint = did_you_mean(str(val), TYPE_NAMES) if op.name == "type" else ""
        col.at(doc, where, f"operator '{key}' takes {why}, got {shown(val)}{hint}")
        return None
    if op.prepare is None:
        return op, val, val
    try:
        if op.name == "matches_schema":
            compile_schema(val, check=True)  # the operator's own prepare does not check
        return op, val, op.prepare(val)
    except SchemaError as exc:
        col.at(doc, where, f"invalid JSON Schema: {exc}")
    except Exception as exc:  # regex.error and friends
        col.at(doc, where, f"invalid regular expression {val!r}: {exc}")
    return None
