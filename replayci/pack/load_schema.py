"""The published JSON Schemas as the loader's structural check.

Each schema that schema_gen generates from the vocabulary is compiled once, by the compiler the
tools' argument checks use (checks/schema_keywords.compile_predicate), into a Python predicate.
A contract the predicate accepts has nothing for the vocabulary's located checks to report:
the loader marks it (`Located.checked`) and `mapping_problems` leaves it alone; a contract it
refuses gets those checks, which say where and why, word for word as before. The loader asks
it once a process has loaded enough cases for it to pay (WORTH_CASES); pack.yaml, one small
mapping a pack, keeps the located checks. tests/unit/pack/test_schema_agreement.py holds the
two equal on the example packs, the packs the refusal tests write and mutated documents.

The compiled form (`loader_form`) differs from the published file only where Python must:

- no `$id`: the compiler leaves references relative to a base to jsonschema;
- an invariant (`$defs/invariant`, recursive through any_of, all_of and not) is `true`: each
  invariant is checked by its operator's own check in load_invariants, never by the vocabulary;
- a pattern `^X$` is searched as `^X\\Z`: ECMA-262's `$` ends the text, Python's also matches
  before a final newline, and the vocabulary's check matches the whole text.

Two checks of the vocabulary that the compiled form cannot make run beside the predicate, on
the documents it accepts (the residual test `_rewrite` returns): a whole number is no float
(JSON Schema counts 3.0 as an integer; the vocabulary refuses it), and a pattern the compiler
would hand to the regex module even after the rewrite (the case id's look-ahead, an unbounded
repeat) leaves the compiled form and is matched whole by re, as the vocabulary matches it.
"""
from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

from ..checks.schema_keywords import compile_predicate
from ..checks.schema_patterns import straight_pattern

_INVARIANT = "#/$defs/invariant"
_COMBINATIONS = ("allOf", "anyOf", "oneOf")
_checks: dict[str, Callable[[Any], bool]] = {}  # schema name -> its compiled check

# Compiling the contract schema costs ~10 ms once; it saves ~3 us a golden case. A process
# uses it once it has loaded this many cases without it (a large pack: never a small one).
WORTH_CASES = 2000
_seen = [0]  # golden cases the located checks alone have looked at in this process


def contract_fits(value: Any) -> bool:
    """fits("contract", value) once the compiled check pays for itself (see WORTH_CASES);
    until then False, leaving the contract to the located checks."""
    if "contract" not in _checks:
        cases = value.get("golden_cases") if isinstance(value, dict) else None
        _seen[0] += len(cases) if isinstance(cases, list) else 0
        if _seen[0] <= WORTH_CASES:
            return False
    return fits("contract", value)


def fits(name: str, value: Any) -> bool:
    """Whether *value* passes the schema *name* ("pack", "contract"): then the vocabulary's
    checks of its keys and value types find nothing."""
    check = _checks.get(name)
    if check is None:
        check = _checks[name] = _compile(name)
    try:
        return check(value)
    except RecursionError:
        return False  # too deep for the generated code: the located checks say what is wrong


def _compile(name: str) -> Callable[[Any], bool]:
    from . import schema_gen  # only a large pack's load compiles a schema: start-up stays as it was

    form, residual = loader_form(schema_gen.build(name))
    predicate = compile_predicate(form)
    if predicate is None:  # a vocabulary row the compiler does not cover: a bug, caught by the tests
        raise RuntimeError(f"the {name} schema does not compile")
    if residual is None:
        return predicate
    return lambda value: predicate(value) and not residual(value)


def loader_form(schema: dict) -> tuple[dict, Callable[[Any], bool] | None]:
    """The published *schema* as the loader compiles it, and the test of what it cannot say
    (true when a value it accepts fails the vocabulary: see the module's docstring)."""
    form = copy.deepcopy({key: value for key, value in schema.items() if key not in ("$id", "$defs")})
    return form, _rewrite(form)


def _rewrite(schema: Any) -> Callable[[Any], bool] | None:
    """Rewrite *schema* in place (invariants, patterns); the residual test of its values."""
    if not isinstance(schema, dict):
        return None
    tests: list[Callable[[Any], bool]] = []
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds or []
    if "integer" in kinds and "number" not in kinds:
        tests.append(lambda v: v.__class__ is float)
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        tests += _rewrite_pattern(schema, pattern)
    props = schema.get("properties") or {}
    for key, sub in props.items():
        if isinstance(sub, dict) and sub.get("$ref") == _INVARIANT:
            props[key] = True
    inner = {key: test for key, sub in props.items() if (test := _rewrite(sub)) is not None}
    if len(inner) == 1:  # (the common case, once per golden case: no generator)
        (one, test), = inner.items()
        tests.append(lambda v: isinstance(v, dict) and one in v and test(v[one]))
    elif inner:
        tests.append(lambda v: isinstance(v, dict) and any(k in v and t(v[k]) for k, t in inner.items()))
    if isinstance(schema.get("items"), dict) and schema["items"].get("$ref") == _INVARIANT:
        schema["items"] = True
    items = _rewrite(schema.get("items"))
    if items is not None:
        tests.append(lambda v: isinstance(v, list) and any(map(items, v)))
    extra = _rewrite(schema.get("additionalProperties"))
    if extra is not None:
        tests.append(lambda v: isinstance(v, dict) and any(extra(x) for k, x in v.items() if k not in props))
    for key in _COMBINATIONS:
        if any(_rewrite(sub) is not None for sub in schema.get(key) or ()):
            raise RuntimeError(f"{key} holds a check the compiled schema cannot make")
    if not tests:
        return None
    return tests[0] if len(tests) == 1 else (lambda v: any(t(v) for t in tests))


def _rewrite_pattern(schema: dict, pattern: str) -> list[Callable[[Any], bool]]:
    """`^X$` searched as `^X\\Z` when that is a straight pattern (re, no time limit); else the
    pattern leaves the compiled form and is matched by re beside it."""
    if pattern.startswith("^") and pattern.endswith("$") and not pattern.endswith("\\$"):
        whole = pattern[:-1] + "\\Z"
        if straight_pattern(whole) is not None:
            schema["pattern"] = whole
            return []
    del schema["pattern"]
    rx = re.compile(pattern)
    return [lambda v: isinstance(v, str) and rx.fullmatch(v) is None]
