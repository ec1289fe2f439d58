"""The indenting JSON encoder writes json.dumps's bytes (indent=2, sorted keys, UTF-8 text, no
NaN), and fails where it fails."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from properties import examples

from replayci.core.jsonvalue import indented


def reference(value):
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)


SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                                         max_size=4), max_leaves=30)


@examples(400)
def test_the_same_bytes_as_json_dumps(examples):
    @settings(max_examples=examples, deadline=None)
    @given(VALUES)
    def same(value):
        assert indented(value) == reference(value)

    same()


@pytest.mark.parametrize("value", [
    {"b": [1, {"c": "x,\n  \"y\""}], "a": {}, "é": [], "": [[], [[1.5e-7, 10**30, True, None]]]},
    [{"z": 1, "a": 2}, "😀 \u2028 \x01"],
    "text", 3, None, -0.0,
    (1, [2]), {"a": (1, {"b": 2})},  # tuples, written as lists
    {3: [2], 1: {"x": 1}}, {2.5: [1], 0.5: {"a": 1}}, {True: 4, False: [5]},  # keys written as strings
])
def test_containers_keys_and_scalars_json_writes_in_its_own_way(value):
    assert indented(value) == reference(value)


@pytest.mark.parametrize(("value", "error"), [
    ({"a": [float("nan")]}, ValueError), ({"a": [1, [float("inf")]]}, ValueError), ({"a": {1}}, TypeError),
    ([{"a": object()}, [1]], TypeError), ({"b": 1, 2: [3]}, TypeError),
])
def test_what_json_refuses_is_refused(value, error):
    with pytest.raises(error):
        reference(value)
    with pytest.raises(error):
        indented(value)


def test_as_deep_as_json_dumps_goes():
    deep: list = [1]
    for _ in range(700):  # deeper than two frames a level allow
        deep = [deep]
    assert indented(deep) == reference(deep)


@examples(200)
def test_an_object_put_together_from_its_members_texts_is_the_same(examples):
    from replayci.core.jsonvalue import indented_members, member_text

    @settings(max_examples=examples, deadline=None)
    @given(st.dictionaries(st.text(max_size=6), VALUES, max_size=5))
    def same(doc):
        if doc:
            assert indented_members({key: member_text(value) for key, value in doc.items()}) == reference(doc)

    same()
