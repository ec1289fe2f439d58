"""The mutation operators: one generator per kind of mutant, in one table.

Each generator yields drafts of one kind for a normalized response; mutants_of runs them in
table order and keeps the drafts that change the response.
"""
from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ...checks.response import tool_schemas
from ...core.jsonvalue import json_type, show
from ...formats import provider_failure
from ...formats.canonical import stable_response
from ...pack.model import Contract
from .model import Mutant
from .values import ArgumentSchemas, changed_value, outside_enum, retyped

TEXT_ANSWER = "I can answer that without calling a tool."


class Draft(NamedTuple):
    """A would-be mutant: its id's detail, the change in words, the survivor hint, the document."""

    detail: str | None
    what: str
    hint: str
    document: dict


@dataclass(frozen=True)
class Argument:
    """One argument of one call whose arguments are an object."""

    index: int  # of the call
    call: dict
    schemas: ArgumentSchemas
    key: str
    value: Any
    path: str  # the argument as a JSONPath, for hints
    detail: str  # "<call label>.<key>", for mutant ids
    named_by_expected_calls: bool  # the contract's expected_tool_calls may name this call's tool

    @property
    def arguments(self) -> dict:
        return self.call["arguments"]

    @property
    def tool(self) -> str:
        return name_of(self.call)

    def check_form(self, operator: str, value: Any, *, per_case: bool = False) -> str:
        """The invariant that checks this argument, as YAML with the keys it goes under: in the
        contract, or with *per_case* (a value of this case's response) in the case. An optional
        argument's has `if_present: true` (a plain one would fail every response that leaves it out)."""
        optional = self.key not in self.schemas.required
        shown = json.dumps(value, ensure_ascii=False)
        rest = f"{operator}: {shown}" + (", if_present: true" if optional else "")
        if self.named_by_expected_calls:
            what = (f"expected_tool_calls: [{{name: {_yaml_name(self.tool)}, argument_invariants: "
                    f"[{{path: {json.dumps(self.path)}, {rest}}}]}}]")
        else:
            quoted = "'" + self.tool.replace("\\", "\\\\").replace("'", "\\'") + "'"
            filtered = f"$.tool_calls[?@.name == {quoted}].arguments{self.path[1:]}"
            what = f"output_invariants: [{{path: {json.dumps(filtered, ensure_ascii=False)}, {rest}}}]"
        where = "in this case: assertions: {" + what + "}" if per_case else (
            "in the contract: " + (what if self.named_by_expected_calls else "assertions: {" + what + "}"))
        return ("; it is optional: check it " if optional else "; check it ") + where


def _yaml_name(name: str) -> str:
    """A tool name as a YAML flow scalar: plain when it is a plain name, else quoted."""
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", name) else json.dumps(name, ensure_ascii=False)


@dataclass
class Base:
    """The normalized response being mutated, with what every generator reads."""

    contract: Contract
    response: dict
    declared: dict[str, Any]
    calls: list[dict] = field(init=False)
    labels: list[str] = field(init=False)
    _arguments: list[Argument] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.calls = list(self.response.get("tool_calls") or [])
        self.labels = _labels(self.calls)

    def doc(self, **changes) -> dict:
        """A deep copy of the response with *changes*."""
        new = copy.deepcopy(self.response)
        new.update(copy.deepcopy(changes))
        return new

    def with_call(self, i: int, call: dict) -> dict:
        """A copy of the response with call *i* replaced."""
        new = self.doc()
        new["tool_calls"][i] = call
        return new

    def with_arguments(self, arg: Argument, arguments: dict) -> dict:
        """A copy of the response with *arguments* for *arg*'s call."""
        return self.with_call(arg.index, {**copy.deepcopy(arg.call), "arguments": arguments,
                                          "arguments_raw": _raw(arguments)})

    def changed(self, arg: Argument, value: Any) -> dict:
        """A copy of the response with *value* for *arg*."""
        return self.with_arguments(arg, {**arg.arguments, arg.key: value})

    def dropped(self, arg: Argument) -> dict:
        """A copy of the response without *arg*."""
        return self.with_arguments(arg, {k: v for k, v in arg.arguments.items() if k != arg.key})

    def arguments(self) -> list[Argument]:
        """Every argument of every call with object arguments, in call then key order."""
        if self._arguments is None:
            self._arguments = []
            for i, call in enumerate(self.calls):
                args = call.get("arguments")
                if not isinstance(args, dict):
                    continue
                schemas = ArgumentSchemas(self.contract, self.declared, call.get("name"), args)
                named = self.contract.tool in (None, "multi_tool_call", call.get("name"))
                self._arguments += [Argument(i, call, schemas, key, value, _arg_path(key), f"{self.labels[i]}.{key}",
                                             named) for key, value in args.items()]
        return self._arguments


def name_of(call: dict) -> str:
    return str(call.get("name"))


def _arg_path(name: str) -> str:
    """An argument as a JSONPath rooted at the parsed arguments: $.unit, $['first-name']."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return f"$.{name}"
    return "$['" + name.replace("\\", "\\\\").replace("'", "\\'") + "']"


def _shown(value: Any) -> str:
    return show(value, 40)


def _raw(arguments: Any) -> str:
    return json.dumps(arguments, ensure_ascii=False)


def _labels(calls: list[dict]) -> list[str]:
    """How each call is named in mutant ids: its tool, with [i] when the tool is called twice."""
    names = [str(c.get("name")) for c in calls]
    return [n if names.count(n) == 1 else f"{n}[{i}]" for i, n in enumerate(names)]


# ------------------------------------------------------------------ the calls


def text_instead_of_call(base: Base) -> Iterator[Draft]:
    """A text answer instead of the calls."""
    if base.calls:
        expected = ", ".join(base.contract.expected_names) or ", ".join(base.labels) or "a tool"
        yield Draft(None, "a text answer instead of the call",
                    f"nothing requires a tool call: a text answer instead of calling {expected} went unnoticed",
                    base.doc(tool_calls=[], content=base.response.get("content") or TEXT_ANSWER,
                             stop_reason="stop"))


def rename(base: Base) -> Iterator[Draft]:
    """Each call to each other declared tool."""
    for i, call in enumerate(base.calls):
        name = call.get("name")
        for other in base.declared:
            if other != name:
                yield Draft(f"{base.labels[i]}->{other}", f"{other} instead of {name}",
                            f"nothing checks which tool is called: {other} instead of {name} went unnoticed",
                            base.with_call(i, {**copy.deepcopy(call), "name": other}))


def rename_undeclared(base: Base) -> Iterator[Draft]:
    """Each call to a tool the request does not declare."""
    for i, call in enumerate(base.calls):
        name = call.get("name")
        undeclared = f"{name}_undeclared"
        while undeclared in base.declared:
            undeclared += "_"
        yield Draft(f"{base.labels[i]}->{undeclared}", f"undeclared tool {undeclared}",
                    f"nothing checks the tool name: the undeclared {undeclared} instead of {name} went unnoticed",
                    base.with_call(i, {**copy.deepcopy(call), "name": undeclared}))


def invalid_json(base: Base) -> Iterator[Draft]:
    """Each call's arguments cut into invalid JSON."""
    for i, call in enumerate(base.calls):
        raw = call.get("arguments_raw")
        text = raw if isinstance(raw, str) else _raw(call.get("arguments"))
        broken = text.rstrip()[:-1] if text.rstrip() else "{"
        try:
            json.loads(broken)
            broken = "{" + text  # a cut that still parsed (a bare number): break it for sure
        except ValueError:
            pass
        yield Draft(base.labels[i], "truncated, invalid JSON arguments",
                    f"nothing checks that the arguments of {name_of(call)} parse: invalid JSON went unnoticed",
                    base.with_call(i, {**copy.deepcopy(call), "arguments": broken, "arguments_raw": broken}))


# ------------------------------------------------------------------ the arguments


def drop_required(base: Base) -> Iterator[Draft]:
    """Each required argument dropped."""
    for a in base.arguments():
        if a.key in a.schemas.required:
            yield Draft(a.detail, f"{a.path} of {a.tool} dropped",
                        f"nothing checks {a.path} of {a.tool}: dropping it (required) went unnoticed"
                        + a.check_form("exists", True),
                        base.dropped(a))


def drop_optional(base: Base) -> Iterator[Draft]:
    """Each optional argument dropped."""
    for a in base.arguments():
        if a.key not in a.schemas.required:
            yield Draft(a.detail, f"{a.path} of {a.tool} dropped",
                        f"nothing checks {a.path} of {a.tool}: dropping it went unnoticed",
                        base.dropped(a))


def enum_outside(base: Base) -> Iterator[Draft]:
    """Each enum argument given a value its enum does not allow."""
    for a in base.arguments():
        enum = a.schemas.prop(a.key, "enum")
        bad = outside_enum(a.value, enum) if isinstance(enum, list) and enum else None
        if bad is not None:
            yield Draft(a.detail, f"{a.path} of {a.tool} = {_shown(bad)}, outside its enum",
                        f"nothing checks {a.path} of {a.tool} against its enum: {_shown(bad)} went unnoticed"
                        + a.check_form("one_of", enum),
                        base.changed(a, bad))


def type_change(base: Base) -> Iterator[Draft]:
    """Each argument as another JSON type."""
    for a in base.arguments():
        other = retyped(a.value)
        yield Draft(a.detail, f"{a.path} of {a.tool} as {json_type(other)} {_shown(other)}",
                    (f"nothing checks the type of {a.path} of {a.tool}: {_shown(other)} ({json_type(other)}) "
                     f"instead of {_shown(a.value)} ({json_type(a.value)}) went unnoticed"
                     + a.check_form("type", json_type(a.value))),
                    base.changed(a, other))


def value_change(base: Base) -> Iterator[Draft]:
    """Each string or number argument changed to another value the schemas allow."""
    for a in base.arguments():
        value = a.value
        if not (isinstance(value, str) or (isinstance(value, (int, float)) and not isinstance(value, bool))):
            continue
        new = changed_value(a.key, value, a.arguments, a.schemas)
        if new is not None:
            yield Draft(a.detail, f"{a.path} of {a.tool} = {_shown(new)} instead of {_shown(value)}",
                        (f"nothing checks the value of {a.path} of {a.tool}: {_shown(new)} instead of "
                         f"{_shown(value)} went unnoticed" + a.check_form("equals", value, per_case=True)),
                        base.changed(a, new))


# ------------------------------------------------------------------ the response


def extra_call(base: Base) -> Iterator[Draft]:
    """A second call to the first tool called (a call to a declared tool when none was)."""
    calls = base.calls
    if calls:
        extra = copy.deepcopy(calls[0])
        first_id = extra.get("id")
        extra["id"] = f"{first_id}_extra" if isinstance(first_id, str) else "call_extra"
        yield Draft(base.labels[0], f"a second {name_of(calls[0])} call",
                    f"nothing limits the calls: a second {name_of(calls[0])} call went unnoticed",
                    base.doc(tool_calls=calls + [extra]))
    elif base.declared:
        tool = next(iter(base.declared))
        yield Draft(tool, f"a call to {tool}", f"nothing forbids a tool call: a call to {tool} went unnoticed",
                    base.doc(tool_calls=[{"id": "call_extra", "name": tool, "arguments": {}, "arguments_raw": "{}"}],
                             stop_reason="tool_calls"))


def reorder(base: Base) -> Iterator[Draft]:
    """The calls in reverse order."""
    if len(base.calls) > 1:
        reordered = list(reversed(base.calls))
        yield Draft(None, "the calls in reverse order",
                    "nothing checks the order of the calls: "
                    f"{', '.join(name_of(c) for c in reordered)} (reversed) went unnoticed",
                    base.doc(tool_calls=reordered))


def provider_error(base: Base) -> Iterator[Draft]:
    """A provider error instead of the response."""
    yield Draft(None, "a provider error (HTTP 500)", "nothing checks success: a provider error went unnoticed",
                provider_failure(500, "The server had an error (a replayci mutant)", "server_error"))


# The mutation operators, in the order their mutants are generated and reported.
GENERATORS: dict[str, Callable[[Base], Iterator[Draft]]] = {
    "text_instead_of_call": text_instead_of_call,
    "rename": rename,
    "rename_undeclared": rename_undeclared,
    "invalid_json": invalid_json,
    "drop_required": drop_required,
    "drop_optional": drop_optional,
    "enum_outside": enum_outside,
    "type_change": type_change,
    "value_change": value_change,
    "extra_call": extra_call,
    "reorder": reorder,
    "provider_error": provider_error,
}
KINDS = tuple(GENERATORS)


def mutants_of(contract: Contract, request: dict | None, response: dict) -> list[Mutant]:
    """Every mutant of one normalized response, in a fixed order (no randomness)."""
    base = Base(contract, response, tool_schemas(request))
    unchanged = stable_response(response)
    return [Mutant(kind, f"{kind}:{d.detail}" if d.detail else kind, d.what, d.hint, d.document)
            for kind, generate in GENERATORS.items() for d in generate(base)
            if stable_response(d.document) != unchanged]  # else not a mutant: nothing changed
