"""Canonical JSON and hashes."""
from __future__ import annotations

import hashlib
import json
import re

from builders import strict_and_fast
from hypothesis import example, given
from hypothesis import strategies as st

from replayci.core.hashing import boundary_hashes, canonical_json, h, is_pinned
from replayci.core.jsonvalue import encoder

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20)


def spec_h(x):
    return hashlib.sha256(json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                     allow_nan=False).encode("utf-8")).hexdigest()[:16]


@given(json_values)
def test_h_is_the_spec_formula(value):
    assert h(value) == spec_h(value)


@given(st.dictionaries(st.text(max_size=5), st.integers(), max_size=6))
def test_key_order_does_not_matter(d):
    assert canonical_json(dict(reversed(list(d.items())))) == canonical_json(d)


def test_boundary_hashes():
    req = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}], "tools": []}
    b = boundary_hashes(req)
    assert b == {"tool_schema_hash": spec_h([]), "message_hash": spec_h([{"role": "user", "content": "u"}]),
                 "system_hash": spec_h([{"role": "system", "content": "s"}])}
    assert boundary_hashes({})["system_hash"] == spec_h([])


def test_pinned():
    assert is_pinned("0123456789abcdef") and not is_pinned("starter_tool_001") and not is_pinned(None)


any_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20)


def _dumps_or_error(dump, value):
    try:
        return dump(value)
    except (TypeError, ValueError) as exc:
        return type(exc), str(exc)


@given(any_json)
def test_encoder_writes_what_json_dumps_writes(value):
    """The encoder built once gives json.dumps' text, and its errors (NaN under allow_nan=False)."""
    for options in ({}, {"sort_keys": True, "separators": (",", ":"), "allow_nan": False},
                    {"separators": (",", ":")}, {"allow_nan": False}):
        assert _dumps_or_error(encoder(**options), value) == \
            _dumps_or_error(lambda v, o=options: json.dumps(v, ensure_ascii=False, **o), value)


def test_encoder_on_odd_values():
    """Top-level strings (and str subclasses), lone surrogates, tuples and unknown types."""
    encode = encoder(sort_keys=True, separators=(",", ":"), allow_nan=False)
    for value in ("x\ud800y", type("S", (str,), {})("s"), ("a", 1), {"b": (1.5, None)}, {1: 2}, object(),
                  {"a": float("inf")}, [float("nan")]):
        assert _dumps_or_error(encode, value) == _dumps_or_error(
            lambda v: json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                 allow_nan=False), value)


@given(st.one_of(st.text(alphabet="0123456789abcdefABCDEF \n\u0660g", max_size=18), st.text(max_size=18)))
def test_pinned_is_sixteen_lowercase_hex_digits(value):
    assert is_pinned(value) == (re.fullmatch(r"[0-9a-f]{16}", value) is not None)


prompts = st.sampled_from(["", "Be brief.", "Be kind."]) | st.text(max_size=4)
messages = st.lists(st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "user"]), "content": prompts}),
    st.fixed_dictionaries({"role": st.just("system"), "content": json_values}),
    st.fixed_dictionaries({"role": st.just("system"), "content": prompts}, optional={"name": prompts}),
    st.fixed_dictionaries({"role": st.just("system"), "name": prompts})), max_size=3)


@example([[{"role": "system", "content": "Be brief."}], [{"role": "system", "content": "Be brief.", "name": "a"}],
          [{"role": "system", "content": "Be brief."}, {"role": "system", "content": "Be brief."}]])
@given(st.lists(messages, max_size=6))
def test_a_system_prompt_hashed_once_hashes_as_the_spec_says(conversations):
    """system_hash kept by the prompt's text is the hash of the system messages, whatever
    other requests were hashed before."""
    requests = [{"messages": msgs} for msgs in conversations]
    strict, fast = strict_and_fast(lambda: [boundary_hashes(r) for r in requests])
    assert fast == strict
    assert [boundary_hashes(r) for r in requests] == strict  # kept
    assert [s["system_hash"] for s in strict] == [
        spec_h([m for m in msgs if m["role"] == "system"]) for msgs in conversations]
