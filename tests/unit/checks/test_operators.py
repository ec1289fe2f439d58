"""Operators of the registry, JSON equality, JSONPath behaviour."""
from __future__ import annotations

import pytest

from replayci.checks.jsonpath import compile_path
from replayci.checks.operators import OPERATORS, Invariant, evaluate
from replayci.core.errors import CaseError
from replayci.core.jsonvalue import json_equal

DOC = {"name": "get_weather", "n": 3, "f": 2.5, "flag": True, "items": [1, 2, 3], "s": "Paris, France",
       "obj": {"a": 1}, "none": None, "calls": [{"name": "a", "x": 1}, {"name": "b", "x": 2}]}


def inv(path, **ops):
    prepared = []
    for name, value in ops.items():
        op = OPERATORS[name]
        prepared.append((op, value, op.prepare(value) if op.prepare else value))
    return Invariant(path, compile_path(path), tuple(prepared), "c.yaml:1")


@pytest.mark.parametrize("path, ops, holds", [
    ("$.name", {"exists": True}, True),
    ("$.missing", {"exists": True}, False),
    ("$.missing", {"exists": False}, True),
    ("$.name", {"exists": False}, False),
    ("$.n", {"equals": 3.0}, True),
    ("$.flag", {"equals": 1}, False),
    ("$.n", {"equals": "3"}, False),
    ("$.obj", {"equals": {"a": 1.0}}, True),
    ("$.n", {"not_equals": 4}, True),
    ("$.n", {"type": "integer"}, True),
    ("$.n", {"type": "number"}, True),
    ("$.f", {"type": "integer"}, False),
    ("$.flag", {"type": "integer"}, False),
    ("$.none", {"type": "null"}, True),
    ("$.items", {"type": "array"}, True),
    ("$.n", {"one_of": [1, 2, 3]}, True),
    ("$.flag", {"one_of": [1]}, False),
    ("$.s", {"regex": "^Par"}, True),
    ("$.s", {"regex": "France$"}, True),
    ("$.s", {"regex": "^France"}, False),
    ("$.n", {"regex": "3"}, False),
    ("$.s", {"contains": "Paris"}, True),
    ("$.items", {"contains": 2.0}, True),
    ("$.items", {"contains": 9}, False),
    ("$.s", {"not_contains": "Lyon"}, True),
    ("$.items", {"not_contains": 1}, False),
    ("$.none", {"not_contains": "x"}, True),
    ("$.n", {"gte": 3, "lte": 3}, True),
    ("$.n", {"gt": 3}, False),
    ("$.n", {"lt": 3.5}, True),
    ("$.flag", {"gte": 0}, False),
    ("$.items", {"length_eq": 3}, True),
    ("$.s", {"length_gte": 20}, False),
    ("$.obj", {"length_lte": 1}, True),
    ("$.n", {"length_eq": 1}, False),
    ("$.obj", {"matches_schema": {"type": "object", "required": ["a"]}}, True),
    ("$.obj", {"matches_schema": {"type": "object", "required": ["b"]}}, False),
    ("$.calls[*].x", {"gte": 1}, True),
    ("$.calls[*].x", {"gte": 2}, False),
    ("$.calls[?@.name == 'b'].x", {"equals": 2}, True),
    ("$.calls[?@.name == 'c'].x", {"equals": 2}, False),
    ("$.calls[?@.name == 'c'].x", {"exists": False}, True),
])
def test_operator(path, ops, holds):
    assert (evaluate(inv(path, **ops), DOC) == []) is holds


def test_failure_message_cuts_actual_at_200():
    doc = {"s": "x" * 1000}
    [f] = evaluate(inv("$.s", equals="y"), doc)
    assert len(f.actual) == 200 and f.actual.endswith("…")
    assert f.source == "c.yaml:1" and f.operator == "equals"


def test_catastrophic_regex_times_out_as_case_error(monkeypatch):
    import replayci.checks.operators as mod

    monkeypatch.setattr(mod, "REGEX_TIMEOUT_S", 0.05)
    with pytest.raises(CaseError, match="catastrophic"):
        evaluate(inv("$.s", regex="^(a|aa)+$"), {"s": "a" * 60 + "b"})


def test_json_equal():
    assert json_equal(1, 1.0) and not json_equal(True, 1) and not json_equal("1", 1)
    assert json_equal([1, {"a": 2}], [1.0, {"a": 2.0}]) and not json_equal({"a": 1}, {"a": 1, "b": 2})


def test_registry_refuses_duplicates():
    from replayci.checks.operators import register

    with pytest.raises(ValueError):
        register(OPERATORS["equals"])


@pytest.mark.parametrize("path, ops, holds", [
    ("$.missing", {"equals": "x"}, True),
    ("$.missing", {"exists": True}, True),
    ("$.n", {"equals": 3}, True),
    ("$.n", {"equals": 4}, False),
    ("$.calls[*].x", {"gte": 2}, False),
])
def test_if_present_holds_when_the_path_matches_nothing(path, ops, holds):
    optional = inv(path, **ops)
    optional = Invariant(optional.path, optional.compiled, optional.ops, optional.source, if_present=True)
    assert (evaluate(optional, DOC) == []) is holds
    if path == "$.missing":
        assert evaluate(inv(path, **ops), DOC)  # without it, a missing value fails
