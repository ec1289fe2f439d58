"""Invariants: a list of mappings {path, <operator>: value} (or any_of / all_of / not) compiled
once; each constructor returns its value and every problem it found, located."""
from __future__ import annotations

from typing import Any

from ..checks.jsonpath import CompiledPath, JSONPathError, compile_path
from ..checks.operators import COMPOSITES, OPERATORS, Composite, Invariant, operator_hint
from ..checks.schemas import SchemaError, compile_schema
from ..core.errors import Problem, did_you_mean
from ..core.jsonvalue import TYPE_NAMES
from . import vocabulary as spec
from .load_problems import Built, kind_of, shown
from .sources import Located


def compile_invariants(doc: Located, path: tuple, value: Any) -> Built[tuple]:
    """A list of invariant mappings -> compiled Invariants, and the problems of the others."""
    if not isinstance(value, list):
        return Built(())  # (not a list: reported by the mapping check of the enclosing table)
    out = []
    problems: list[Problem] = []
    for i, entry in enumerate(value):
        inv = compile_invariant(doc, path + (i,), entry)
        problems += inv.problems
        if inv.value is not None:
            out.append(inv.value)
    return Built(tuple(out), tuple(problems))


def compile_invariant(doc: Located, path: tuple, entry: Any) -> Built[Invariant | Composite]:
    """One invariant mapping -> an Invariant, or its problems."""
    if isinstance(entry, dict) and any(k in entry for k in COMPOSITES):
        return _composite(doc, path, entry)
    if not isinstance(entry, dict):
        return Built.refused(doc, path, f"expected an invariant {{path: ..., <operator>: ...}}, got {kind_of(entry)}")
    p = entry.get("path")
    compiled = _invariant_path(doc, path, p)
    problems = list(compiled.problems)
    ops = []
    for key, val in entry.items():
        if key in spec.INVARIANT_BASE_KEYS:
            continue
        op = _invariant_operator(doc, path + (key,), key, val)
        problems += op.problems
        if op.value is not None:
            ops.append(op.value)
    if not problems and not ops:
        problems.append(doc.problem(path, "an invariant needs at least one operator; expected one of "
                                    + ", ".join(sorted(OPERATORS))))
    if_present = entry.get("if_present", False)
    if not isinstance(if_present, bool):
        problems.append(doc.problem(path + ("if_present",), f"expected true or false, got {shown(if_present)}"))
    scoring = _scoring(doc, path, entry)
    problems += scoring.problems
    if problems or scoring.value is None:
        return Built(None, tuple(problems))
    return Built(Invariant(p, compiled.value, tuple(ops), doc.source(path), if_present, **scoring.value))


def _composite(doc: Located, path: tuple, entry: dict) -> Built[Composite]:
    """{any_of: [...]}, {all_of: [...]} or {not: invariant} -> a Composite, or its problems."""
    kinds = [k for k in COMPOSITES if k in entry]
    others = [k for k in entry if k not in COMPOSITES and k not in spec.SCORING_KEYS]
    if len(kinds) > 1 or others:
        return Built.refused(doc, path, f"a composite invariant takes one of {', '.join(COMPOSITES)} (with "
                             f"{', '.join(spec.SCORING_KEYS)}), got {', '.join(map(str, kinds[1:] + others))}")
    kind = kinds[0]
    raw = entry[kind]
    if kind == "not":
        members = (compile_invariant(doc, path + (kind,), raw),)
    elif isinstance(raw, list) and raw:
        members = tuple(compile_invariant(doc, path + (kind, i), m) for i, m in enumerate(raw))
    else:
        return Built.refused(doc, path + (kind,), f"{kind} takes a non-empty list of invariants, got {shown(raw)}")
    scoring = _scoring(doc, path, entry)
    problems = tuple(p for m in members for p in m.problems) + scoring.problems
    if scoring.value is None or any(m.value is None for m in members):
        return Built(None, problems)
    return Built(Composite(kind, tuple(m.value for m in members), doc.source(path), **scoring.value), problems)


def _scoring(doc: Located, path: tuple, entry: dict) -> Built[dict]:
    """An invariant's weight and required, or the problem of a bad value."""
    out = {}
    for key in ("weight", "required"):
        if key in entry:
            why = spec.check_value(spec.SCORING_KEYS[key], entry[key])
            if why is not None:
                return Built.refused(doc, path + (key,), spec.mismatch(why, shown(entry[key])))
            out[key] = float(entry[key]) if key == "weight" else entry[key]
    return Built(out)


def _invariant_path(doc: Located, path: tuple, p: Any) -> Built[CompiledPath]:
    """An invariant's `path` value compiled, or its problem."""
    if p is None:
        return Built.refused(doc, path, "missing required key 'path' (an RFC 9535 JSONPath such as "
                             "$.tool_calls[0].name)")
    if not isinstance(p, str):
        return Built.refused(doc, path + ("path",), f"expected a JSONPath string, got {shown(p)}")
    try:
        return Built(compile_path(p))
    except JSONPathError as exc:
        return Built.refused(doc, path + ("path",), f"invalid JSONPath {p!r}: {exc}")


def _invariant_operator(doc: Located, where: tuple, key: str, val: Any) -> Built[tuple]:
    """(operator, value, prepared value) for one operator key of an invariant, or its problem."""
    op = OPERATORS.get(key)
    if op is None:
        return Built.refused(doc, where, f"unknown operator '{key}'; expected one of {', '.join(sorted(OPERATORS))}"
                             + operator_hint(str(key)))
    why = op.validate(val)
    if why is not None:
        hint = did_you_mean(str(val), TYPE_NAMES) if op.name == "type" else ""
        return Built.refused(doc, where, f"operator '{key}' takes {why}, got {shown(val)}{hint}")
    if op.prepare is None:
        return Built((op, val, val))
    try:
        if op.name == "matches_schema":
            compile_schema(val, check=True)  # the operator's own prepare does not check
        return Built((op, val, op.prepare(val)))
    except SchemaError as exc:
        return Built.refused(doc, where, f"invalid JSON Schema: {exc}")
    except Exception as exc:  # regex.error and friends
        return Built.refused(doc, where, f"invalid regular expression {val!r}: {exc}")
