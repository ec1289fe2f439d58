"""Invariants on a tool's arguments read against the tool's schema, before anything runs: an
argument the schema cannot have (``additionalProperties: false`` and no such property), and a
YAML number or boolean where the schema says the argument is a string."""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..core.errors import did_you_mean
from ..core.jsonvalue import show
from ..formats._common import CALL_KEYS, DOCUMENT_KEYS

# $.tool_calls[0].arguments.x / $.tool_calls[*].arguments['x'] ...: the part after arguments.
_OUTPUT_ARGUMENT = re.compile(r"^\$\.tool_calls\[(?:[0-9]+|\*)\]\.arguments(?=[.\[])")
# The first step of a path relative to the arguments: .name or ['name'].
_FIRST = re.compile(r"(?:\.([A-Za-z_][A-Za-z0-9_]*)|\['([^'\\]*)'\])")
# An output path's first name and, under tool_calls[N], the call's key it names.
_OUTPUT_NAMES = re.compile(r"^\$(?:\.([A-Za-z_][A-Za-z0-9_]*)|\['([^'\\]*)'\])"
                           r"(?:\[(?:-?[0-9]+|\*)\](?:\.([A-Za-z_][A-Za-z0-9_]*)|\['([^'\\]*)'\]))?")
# Operators whose value is compared with the argument itself.
_VALUE_OPERATORS = ("equals", "not_equals", "one_of", "contains", "not_contains")


def argument_invariants(contract: Any, cases: Iterable[Any] = ()) -> list[tuple[str, str, Any]]:
    """(tool, path relative to its arguments, invariant) for every invariant of *contract* and
    of *cases* that reads one tool's arguments: an expected call's argument invariants, and,
    for a contract of one tool, an output invariant on ``$.tool_calls[N].arguments...``."""
    out: list[tuple[str, str, Any]] = []
    calls = list(contract.expected_tool_calls)
    outputs = list(contract.output_invariants)
    for case in cases:
        calls += case.expected_tool_calls
        outputs += case.output_invariants
    for call in calls:
        out += [(call.name, inv.path, inv) for inv in _leaves(call.invariants)]
    single = contract.tool if contract.tool and not contract.multi else None
    for inv in _leaves(outputs) if single else ():
        m = _OUTPUT_ARGUMENT.match(inv.path)
        if m:
            out.append((single, "$" + inv.path[m.end():], inv))
    return out


def _leaves(invariants: Iterable[Any]) -> list[Any]:
    """The plain invariants, those inside any_of / all_of / not included."""
    out = []
    for inv in invariants:
        members = getattr(inv, "members", None)
        out += _leaves(members) if members is not None else [inv]
    return out


def argument_problems(found: list[tuple[str, str, Any]], schemas: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(source, message) for each invariant of *found* that its tool's schema in *schemas*
    (raw JSON Schemas by tool name) shows to be a mistake."""
    out = []
    for tool, relative, inv in found:
        schema = schemas.get(tool)
        m = _FIRST.match(relative, 1) if relative.startswith("$") else None
        if not isinstance(schema, dict) or m is None:
            continue
        name = m.group(1) if m.group(1) is not None else m.group(2)
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        if name not in props:
            if schema.get("additionalProperties") is False:
                allowed = ", ".join(f"'{p}'" for p in props) or "none"
                out.append((inv.source, f"{inv.path}: {tool} has no argument '{name}' (its schema allows "
                                        f"{allowed} and no other)" + did_you_mean(name, list(props))))
            continue
        if m.end() == len(relative) and _is_string(props[name]):  # the argument itself, not inside it
            out += _unquoted(tool, name, inv)
    return out


def _is_string(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "string"


def _unquoted(tool: str, name: str, inv: Any) -> list[tuple[str, str]]:
    """A value YAML read as a number or boolean, compared with a string argument."""
    for op, expected, _ in inv.ops:
        if op.name not in _VALUE_OPERATORS:
            continue
        values = expected if op.name == "one_of" and isinstance(expected, list) else [expected]
        for value in values:
            if isinstance(value, bool) or isinstance(value, (int, float)):
                kind = "a boolean" if isinstance(value, bool) else "a number"
                return [(inv.source, f"{inv.path}: {op.name} {show(value)} reads as {kind} in YAML, but "
                                     f"{tool}'s schema says '{name}' is a string; quote it to keep it "
                                     "a string (\"...\")")]
    return []


def output_path_problems(contract: Any) -> list[tuple[str, str]]:
    """(source, message) for each output invariant of *contract* and its cases (a scenario's
    final and step invariants too) whose path can match nothing in a normalized response."""
    invariants = list(contract.output_invariants) + list(contract.trajectory.final_invariants)
    invariants += [inv for _, step in contract.trajectory.step_invariants for inv in step]
    for case in contract.cases:
        invariants += case.output_invariants
    out, seen = [], set()
    for inv in _leaves(invariants):
        problem = output_path_problem(inv.path)
        if problem is not None and (inv.source, inv.path) not in seen:
            seen.add((inv.source, inv.path))
            out.append((inv.source, problem))
    return out


def output_path_problem(path: str) -> str | None:
    """Why an output invariant's *path* can match nothing in any normalized response (a name
    the document or its tool calls never have, such as an argument named from the root), or None."""
    m = _OUTPUT_NAMES.match(path)
    if m is None:
        return None
    name = m.group(1) if m.group(1) is not None else m.group(2)
    if name not in DOCUMENT_KEYS:
        return (f"{path} can match nothing: a normalized response has no '{name}' (it has "
                f"{', '.join(DOCUMENT_KEYS)})" + (did_you_mean(name, list(DOCUMENT_KEYS)) or _argument_hint(path)))
    key = m.group(3) if m.group(3) is not None else m.group(4)
    if name in ("tool_calls", "server_tool_calls") and key is not None and key not in CALL_KEYS:
        return (f"{path} can match nothing: a tool call has no '{key}' (it has {', '.join(CALL_KEYS)}; its "
                "arguments are under .arguments)" + did_you_mean(key, list(CALL_KEYS)))
    return None


def _argument_hint(path: str) -> str:
    """Where a path written relative to a call's arguments goes."""
    return (f"; a path relative to a call's arguments belongs under expected_tool_calls: [{{name: TOOL, "
            f"argument_invariants: [{{path: {path}, ...}}]}}], or read it from the response as "
            f"$.tool_calls[0].arguments{path[1:]}")
