"""Invariants: a registry of operators, compiled once at load, evaluated per document."""
from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.errors import did_you_mean
from ..core.jsonvalue import TYPE_NAMES, is_number, json_equal, json_type, show
from ..core.records import record
from ..core.timelimit import REGEX_TIMEOUT_S, too_slow
from .jsonpath import CompiledPath, DescentLimit, near_miss
from .schemas import compile_schema

# ------------------------------------------------------------ value checks at load time


def _v_bool(v: Any) -> str | None:
    return None if isinstance(v, bool) else "true or false"


def _v_any(v: Any) -> str | None:
    return None


def _v_list(v: Any) -> str | None:
    return None if isinstance(v, list) else "a list of values"


def _v_number(v: Any) -> str | None:
    return None if is_number(v) else "a number"


def _v_length(v: Any) -> str | None:
    return None if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else "a whole number >= 0"


def _v_type(v: Any) -> str | None:
    return None if v in TYPE_NAMES else "a JSON type name"


def _v_str(v: Any) -> str | None:
    return None if isinstance(v, str) else "a string (a regular expression)"


def _v_schema(v: Any) -> str | None:
    return None if isinstance(v, (dict, bool)) else "a JSON Schema (a mapping)"


# ------------------------------------------------------------ checks at run time
# Each returns None when the actual value satisfies the operator, else what was wrong.


def _c_equals(actual: Any, expected: Any) -> str | None:
    return None if json_equal(actual, expected) else ""


def _c_not_equals(actual: Any, expected: Any) -> str | None:
    return "" if json_equal(actual, expected) else None


def _c_type(actual: Any, expected: str) -> str | None:
    t = json_type(actual)
    if t == expected:
        return None
    if expected == "number" and t == "integer":
        return None
    if expected == "integer" and t == "number" and float(actual).is_integer():
        return None
    return f"a {t}"


def _c_one_of(actual: Any, expected: list) -> str | None:
    for e in expected:  # (a loop, not any() over a generator: one of the commonest checks)
        if json_equal(actual, e):
            return None
    return ""


def _c_regex(actual: Any, compiled: Any) -> str | None:
    if not isinstance(actual, str):
        return f"a {json_type(actual)}, not a string"
    try:
        return None if compiled.search(actual, timeout=REGEX_TIMEOUT_S) else ""
    except TimeoutError:
        raise too_slow("regex", compiled.pattern, len(actual)) from None


def _c_contains(actual: Any, expected: Any) -> str | None:
    if isinstance(actual, str):
        if not isinstance(expected, str):
            return "a string (substring needs a string)"
        return None if expected in actual else ""
    if isinstance(actual, list):
        return None if any(json_equal(x, expected) for x in actual) else ""
    return f"a {json_type(actual)}, not a string or array"


def _c_not_contains(actual: Any, expected: Any) -> str | None:
    if actual is None:
        return None  # null contains nothing (e.g. content when the model only called tools)
    if isinstance(actual, str):
        return "" if isinstance(expected, str) and expected in actual else None
    if isinstance(actual, list):
        return "" if any(json_equal(x, expected) for x in actual) else None
    return f"a {json_type(actual)}, not a string or array"


def _compare(test: Callable[[Any, Any], bool]):
    def check(actual: Any, expected: Any) -> str | None:
        if not isinstance(actual, (int, float)) or isinstance(actual, bool):  # (is_number, inlined)
            return f"a {json_type(actual)}, not a number"
        return None if test(actual, expected) else ""

    return check


def _length(test: Callable[[int, int], bool]):
    def check(actual: Any, expected: int) -> str | None:
        if not isinstance(actual, (str, list, dict)):
            return f"a {json_type(actual)}, which has no length"
        return None if test(len(actual), expected) else f"length {len(actual)}"

    return check


def _c_schema(actual: Any, compiled: Any) -> str | None:
    error = compiled.first_error(actual)
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"schema: {error.message}" + (f" at /{where}" if where else "")


@record
class Operator:
    """One invariant operator: its name, the value it takes, how it checks and what it says."""

    name: str
    value: str  # description of the value it takes, used in messages and generated schemas
    validate: Callable[[Any], str | None]
    check: Callable[[Any, Any], str | None]
    verb: str  # "$.x <verb> <expected>"
    json_schema: dict
    prepare: Callable[[Any], Any] | None = None  # compile the value once at load


def _compile_regex(pattern: str):
    import regex  # only packs with a regex operator pay for loading it

    return regex.compile(pattern)


def _compile_schema(schema: Any):
    return compile_schema(schema)


OPERATORS: dict[str, Operator] = {}


def register(op: Operator) -> Operator:
    if op.name in OPERATORS:
        raise ValueError(f"operator {op.name!r} is already registered")
    OPERATORS[op.name] = op
    return op


_NUM = {"type": "number"}
_LEN = {"type": "integer", "minimum": 0}
for _op in (
    Operator("exists", "true or false", _v_bool, lambda a, e: None, "exists", {"type": "boolean"}),
    Operator("equals", "any JSON value", _v_any, _c_equals, "equals", {}),
    Operator("not_equals", "any JSON value", _v_any, _c_not_equals, "not_equals", {}),
    Operator("type", "one of " + ", ".join(TYPE_NAMES), _v_type, _c_type, "type",
             {"enum": list(TYPE_NAMES)}),
    Operator("one_of", "a list of values", _v_list, _c_one_of, "one_of", {"type": "array"}),
    Operator("regex", "a regular expression (Python syntax, search)", _v_str, _c_regex, "regex",
             {"type": "string"}, prepare=_compile_regex),
    Operator("contains", "a substring or an array member", _v_any, _c_contains, "contains", {}),
    Operator("not_contains", "a substring or an array member", _v_any, _c_not_contains,
             "not_contains", {}),
    Operator("gte", "a number", _v_number, _compare(operator.ge), ">=", _NUM),
    Operator("lte", "a number", _v_number, _compare(operator.le), "<=", _NUM),
    Operator("gt", "a number", _v_number, _compare(operator.gt), ">", _NUM),
    Operator("lt", "a number", _v_number, _compare(operator.lt), "<", _NUM),
    Operator("length_eq", "a whole number >= 0", _v_length, _length(operator.eq),
             "length ==", _LEN),
    Operator("length_gte", "a whole number >= 0", _v_length, _length(operator.ge),
             "length >=", _LEN),
    Operator("length_lte", "a whole number >= 0", _v_length, _length(operator.le),
             "length <=", _LEN),
    Operator("matches_schema", "a JSON Schema", _v_schema, _c_schema, "matches_schema",
             {"type": ["object", "boolean"]}, prepare=_compile_schema),
):
    register(_op)

# Other names an operator goes by elsewhere (other test tools, JSON Schema, SQL), for "did you
# mean": difflib finds 'equal' for 'equals' but not 'lt' for 'less_than'.
OTHER_NAMES = {
    "less_than": "lt", "lessthan": "lt", "less": "lt", "below": "lt", "max": "lte", "maximum": "lte",
    "less_than_or_equal": "lte", "less_or_equal": "lte", "at_most": "lte", "le": "lte",
    "greater_than": "gt", "greaterthan": "gt", "greater": "gt", "above": "gt", "min": "gte", "minimum": "gte",
    "greater_than_or_equal": "gte", "greater_or_equal": "gte", "at_least": "gte", "ge": "gte",
    "eq": "equals", "is": "equals", "const": "equals", "ne": "not_equals", "neq": "not_equals",
    "in": "one_of", "enum": "one_of", "any_of_values": "one_of",
    "pattern": "regex", "match": "regex", "matches": "regex", "regexp": "regex",
    "includes": "contains", "has": "contains", "not_includes": "not_contains",
    "length": "length_eq", "len": "length_eq", "min_length": "length_gte", "minlength": "length_gte",
    "max_length": "length_lte", "maxlength": "length_lte", "schema": "matches_schema",
    "present": "exists",
}


def operator_hint(name: str) -> str:
    """A "did you mean" for an unknown operator *name*: another name of an operator, else the
    closest operator."""
    known = OTHER_NAMES.get(name.lower().replace("-", "_").replace(" ", "_"))
    return f"; did you mean '{known}'?" if known in OPERATORS else did_you_mean(name, OPERATORS)


@dataclass(frozen=True)
class Invariant:
    """A path and the operators that must hold on every value it matches."""

    path: str
    compiled: CompiledPath
    ops: tuple  # ((Operator, expected, prepared), ...)
    source: str  # "file:line"
    if_present: bool = False  # holds when the path matches nothing (an optional argument)
    weight: float = 1.0  # its share of a contract's score
    required: bool = True  # under min_score: must hold whatever the score


COMPOSITES = ("any_of", "all_of", "not")


@record
class Composite:
    """any_of, all_of or not over member invariants; every member is evaluated."""

    kind: str  # one of COMPOSITES
    members: tuple  # (Invariant | Composite, ...); one member for not
    source: str
    weight: float = 1.0
    required: bool = True

    @property
    def path(self) -> str:
        return ", ".join(dict.fromkeys(m.path for m in self.members))


def describe(inv: Invariant | Composite) -> str:
    """What the invariant asserts, in one line."""
    if isinstance(inv, Composite):
        return f"{inv.kind}({'; '.join(describe(m) for m in inv.members)})"
    return " and ".join(f"{inv.path} {op.verb} {show(expected)}" for op, expected, _ in inv.ops)


def _near_miss_hint(path: str, document: Any) -> str:
    """'; did you mean PATH?' when a path that matched nothing is one key away from matching."""
    fixed = near_miss(path, document)
    return f"; did you mean '{fixed}'?" if fixed else ""


@dataclass(frozen=True)
class InvariantFailure:
    path: str
    operator: str
    expected: Any
    actual: str  # shown, cut at 200 characters
    message: str
    source: str


def _evaluate_composite(inv: Composite, document: Any) -> list[InvariantFailure]:
    """Every member on *document* (none skipped, so each is reported); the composite's failures."""
    results = [_evaluate(m, document) for m in inv.members]
    if inv.kind == "all_of":
        return [f for r in results for f in r]
    if inv.kind == "any_of":
        if any(not r for r in results):
            return []
        why = "; ".join(r[0].message for r in results)
        return [InvariantFailure(inv.path, "any_of", None, "none held",
                                 f"any_of: none of {len(results)} held ({why})", inv.source)]
    if results[0]:
        return []
    return [InvariantFailure(inv.path, "not", None, "it held",
                             f"not: {describe(inv.members[0])} held", inv.source)]


def evaluate(inv: Invariant | Composite, document: Any) -> list[InvariantFailure]:
    """Every operator of *inv* on every match; failures (empty when it holds). A path that
    cannot be walked within the JSONPath bounds (hostile arguments) fails the whole invariant:
    a `not` around it must not turn that into a pass."""
    try:
        return _evaluate(inv, document)
    except DescentLimit as exc:
        return [InvariantFailure(inv.path, "path_limit", None, "not evaluated",
                                 f"{exc}: not evaluated, so the invariant fails", inv.source)]


def _evaluate(inv: Invariant | Composite, document: Any) -> list[InvariantFailure]:
    """evaluate() without the bounds' verdict: DescentLimit names the path that met them."""
    if isinstance(inv, Composite):
        return _evaluate_composite(inv, document)
    try:
        matches = inv.compiled.find(document)
    except DescentLimit as exc:
        raise DescentLimit(f"{inv.path}: {exc}") from None
    if not matches and inv.if_present:
        return []
    failures: list[InvariantFailure] = []
    hint = ""  # a did-you-mean for a path that matched nothing, worked out once it is needed
    for op, expected, prepared in inv.ops:
        if op.name == "exists":
            if bool(matches) != expected:
                actual = "no match" if not matches else show(matches[0])
                want = "to exist" if expected else "not to exist"
                if expected:
                    hint = _near_miss_hint(inv.path, document)
                failures.append(InvariantFailure(
                    inv.path, "exists", expected, actual, f"{inv.path} expected {want}, got {actual}{hint}",
                    inv.source))
            continue
        if not matches:
            hint = hint or _near_miss_hint(inv.path, document)
            failures.append(InvariantFailure(
                inv.path, op.name, expected, "no match",
                f"{inv.path} {op.verb} {show(expected)}, but the path matched nothing{hint}", inv.source))
            continue
        for actual in matches:
            why = op.check(actual, prepared)
            if why is not None:
                shown = show(actual)
                detail = f"got {shown}" + (f" ({why})" if why else "")
                failures.append(InvariantFailure(
                    inv.path, op.name, expected, shown,
                    f"{inv.path} {op.verb} {show(expected)}, {detail}", inv.source))
                break
    return failures
