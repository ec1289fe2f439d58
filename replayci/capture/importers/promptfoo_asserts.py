"""promptfoo's assertions as a case's checks: each tool-call assertion of a promptfoo test becomes
the contract checks that hold exactly when it holds; any other assertion is named with the reason
it is not translated."""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Translated:
    """A test's assertions as a case's checks."""

    output_invariants: list[dict] = field(default_factory=list)
    expected_tool_calls: list[dict] = field(default_factory=list)
    not_translated: list[str] = field(default_factory=list)  # "<type>: why", one an assertion
    translated: list[Any] = field(default_factory=list)  # the assertions that were translated

    def add(self, invariant: dict) -> None:
        if invariant not in self.output_invariants:  # two assertions may say the same thing
            self.output_invariants.append(invariant)

    def assertions(self) -> dict:
        out: dict[str, Any] = {}
        if self.output_invariants:
            out["output_invariants"] = self.output_invariants
        if self.expected_tool_calls:
            out["expected_tool_calls"] = self.expected_tool_calls
        return out


def _calls_present() -> dict:
    return {"path": "$.tool_calls", "length_gte": 1, "description": "a tool was called"}


def _named(name: str) -> str:
    return "$.tool_calls[?@.name == " + json.dumps(name) + "]"


def _tool_names(value: Any) -> list[str] | None:
    """A list of tool names from an assertion's value: a name, a list of names, or a list of
    {name} / {function: {name}} objects."""
    items = value if isinstance(value, list) else [value]
    names = []
    for item in items:
        if isinstance(item, Mapping):
            fn = item.get("function") if isinstance(item.get("function"), Mapping) else item
            item = fn.get("name")
        if not isinstance(item, str) or not item:
            return None
        names.append(item)
    return names


def _valid_tools_call(_value: Any, out: Translated, _text: bool) -> str | None:
    # Every call's name is a tool the request offers and its arguments keep that tool's schema:
    # replayci checks both on every case; what is left to say is that a tool was called.
    out.add(_calls_present())
    return None


def _tool_call_f1(value: Any, out: Translated, _text: bool, threshold: Any = None) -> str | None:
    if threshold not in (None, 1, 1.0):
        return f"a threshold of {threshold} below 1 has no exact contract form (1 means the same set of tools)"
    names = _tool_names(value)
    if not names:
        return "its value names no tools"
    out.add(_calls_present())
    out.add({"path": "$.tool_calls[*].name", "one_of": sorted(set(names)),
                                  "description": "no tool besides the expected ones"})
    for name in sorted(set(names)):
        out.add({"path": _named(name), "exists": True, "description": f"{name} was called"})
    return None


def _tool_used(value: Any, out: Translated, _text: bool) -> str | None:
    if isinstance(value, Mapping) and set(value) - {"name", "min", "max"}:
        return f"keys {sorted(set(value) - {'name', 'min', 'max'})} have no contract form"
    spec = value if isinstance(value, Mapping) else None
    names = _tool_names(spec["name"] if spec and "name" in spec else value)
    if not names:
        return "its value names no tool"
    if spec and (spec.get("min", 1) not in (0, 1) or spec.get("max") is not None):
        return "a count of one tool's calls other than at least once has no invariant form"
    for name in names:
        out.add({"path": _named(name), "exists": True, "description": f"{name} was called"})
    return None


def _tool_sequence(value: Any, out: Translated, _text: bool) -> str | None:
    spec = value if isinstance(value, Mapping) else {"steps": value}
    names = _tool_names(spec.get("steps", spec.get("tools")))
    mode = spec.get("mode", "in_order")
    if not names:
        return "its value names no steps"
    if mode not in ("exact", "in_order"):
        return f"mode {mode!r} has no contract form"
    if mode == "exact":
        out.add({"path": "$.tool_calls", "length_eq": len(names)})
        for n, name in enumerate(names):
            out.add({"path": f"$.tool_calls[{n}].name", "equals": name})
        return None
    if len(names) > 1:  # in order with others between: a subsequence, which a single answer's paths cannot say
        return "an in-order sequence of several tools with others allowed between has no exact invariant form"
    out.add({"path": _named(names[0]), "exists": True})
    return None


def _tool_args_match(value: Any, out: Translated, _text: bool) -> str | None:
    if not isinstance(value, Mapping) or not isinstance(value.get("name"), str):
        return "its value is not {name, args}"
    args = value.get("args", value.get("arguments"))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return "its args are not JSON"
    if not isinstance(args, Mapping):
        return "its args are not an object"
    mode = value.get("mode", "partial")
    if mode not in ("partial", "exact"):
        return f"mode {mode!r} has no contract form"
    invariants = [{"path": "$." + k if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) else f"$[{json.dumps(k)}]",
                   "equals": v} for k, v in args.items()]
    if mode == "exact":
        invariants.append({"path": "$", "matches_schema": {"type": "object", "required": sorted(args),
                                                           "additionalProperties": False,
                                                           "properties": {k: {} for k in args}}})
    out.expected_tool_calls.append({"name": value["name"], "argument_invariants": invariants})
    return None


def _text_check(operator: str):
    def translate(value: Any, out: Translated, text: bool) -> str | None:
        if not text:
            return "it compares promptfoo's output text, and this answer is tool calls"
        if not isinstance(value, str):
            return "its value is not a string"
        out.add({"path": "$.content", operator: value})
        return None
    return translate


def _icontains(negate: bool):
    def translate(value: Any, out: Translated, text: bool) -> str | None:
        if not text:
            return "it compares promptfoo's output text, and this answer is tool calls"
        if not isinstance(value, str):
            return "its value is not a string"
        pattern = "(?i)" + re.escape(value)
        out.add({"path": "$.content", "regex": f"^(?!.*{pattern})" if negate else pattern})
        return None
    return translate


def _is_json(value: Any, out: Translated, text: bool) -> str | None:
    return ("a JSON answer is checked as structured output ($.output against the request's response "
            "schema); promptfoo's is-json on free text has no exact contract form")


TRANSLATIONS = {
    "is-valid-openai-tools-call": _valid_tools_call,
    "tool-call-f1": _tool_call_f1,
    "trajectory:tool-used": _tool_used,
    "trajectory:tool-sequence": _tool_sequence,
    "trajectory:tool-args-match": _tool_args_match,
    "equals": _text_check("equals"),
    "not-equals": _text_check("not_equals"),
    "contains": _text_check("contains"),
    "not-contains": _text_check("not_contains"),
    "icontains": _icontains(False),
    "not-icontains": _icontains(True),
    "regex": _text_check("regex"),
    "is-json": _is_json,
}


def translate(assertions: Any, text: bool) -> Translated:
    """*assertions* (a promptfoo test's `assert` list, defaultTest's first) as checks of a case
    whose answer is text (*text*) or tool calls."""
    out = Translated()
    for n, a in enumerate(assertions if isinstance(assertions, list) else ()):
        kind = a.get("type") if isinstance(a, Mapping) else None
        if not isinstance(kind, str):
            out.not_translated.append(f"assertion {n + 1}: no type")
            continue
        if kind == "assert-set":
            out.not_translated.append(f"{kind}: a set with a threshold has no contract form")
            continue
        how = TRANSLATIONS.get(kind)
        if how is None:
            out.not_translated.append(f"{kind}: no exact contract form (graded, scripted or not about tool calls)")
            continue
        extra = {"threshold": a.get("threshold")} if kind == "tool-call-f1" else {}
        why = how(a.get("value"), out, text, **extra)
        if why:
            out.not_translated.append(f"{kind}: {why}")
        else:
            out.translated.append(a)
    return out
