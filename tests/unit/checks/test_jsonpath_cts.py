"""replayci.checks.jsonpath against the RFC 9535 JSONPath compliance test suite (all 703 tests), and
its fast walk against the library."""
from __future__ import annotations

import json
from pathlib import Path

import jsonpath_rfc9535
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replayci.checks.jsonpath import JSONPathError, _simple_steps, compile_path, query

CTS = json.loads((Path(__file__).resolve().parents[2] / "data" / "jsonpath-cts.json").read_text("utf-8"))["tests"]


def test_suite_is_complete():
    assert len(CTS) == 703


@pytest.mark.parametrize("case", CTS, ids=[c["name"] for c in CTS])
def test_compliance(case):
    if case.get("invalid_selector"):
        with pytest.raises(JSONPathError):
            query(case["selector"], case.get("document", {}))
        return
    got = query(case["selector"], case["document"])
    if "result" in case:
        assert got == case["result"]
    else:
        assert got in case["results"]


# ---------------------------------------------------------------- the fast walk


def _library(path, document):
    return [node.value for node in jsonpath_rfc9535.compile(path).find(document)]


def _exact(values):
    """Values as typed JSON text: 1, 1.0 and true differ here (they are == in Python)."""
    return json.dumps(values, sort_keys=True)


FAST_CTS = [c for c in CTS if not c.get("invalid_selector") and _simple_steps(c["selector"]) is not None]


def test_the_fast_walk_takes_filters_of_the_suite():
    assert sum("?" in c["selector"] for c in FAST_CTS) >= 10
    assert sum("*" in c["selector"] for c in FAST_CTS) >= 4


@pytest.mark.parametrize("case", FAST_CTS, ids=[c["name"] for c in FAST_CTS])
def test_fast_walk_agrees_with_the_library_on_the_suite(case):
    assert _exact(compile_path(case["selector"]).find(case["document"])) == \
        _exact(_library(case["selector"], case["document"]))


FAST_PATHS = [
    "$.calls[?@.name == 'a'].args.x", "$.calls[?@.name != 'a'].args", "$.calls[?@.n == 1].name",
    "$.calls[?@.n == 0]", "$.calls[?@.n != -1].n", "$.calls[?@.ok == true]", "$.calls[?@.ok == false].n",
    "$.calls[?@.ok == null]", "$.calls[?@.ok != null]", "$[?@.name == 'b']", "$.calls[?@[0] == 'a']",
    "$.calls[?@.args.x == 1].args", "$.calls[?@['name'] == \"a\"][0]", "$.calls[0][?@ == 1]",
    "$.calls[?@.name == 'a'][?@ == 1]", "$.calls[-1].name", "$..name", "$.calls[*].name", "$.*",
    "$.calls.*.args.x", "$[*][*]", "$.calls[*][?@ == 1]", "$.calls[?@.n == 1].*", "$.calls[ * ]",
]
names = st.sampled_from(["a", "b", "1"])
scalars = st.none() | st.booleans() | st.sampled_from([0, 1, -1, 1.0, 0.0, 2.5]) | names
docs = st.recursive(scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(
    st.sampled_from(["name", "n", "ok", "args", "x", "calls"]), c, max_size=4), max_leaves=20)


@pytest.mark.slow  # hundreds of random documents: a soak of the fast walk
@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.dictionaries(st.sampled_from(["calls", "name", "n"]), docs, max_size=3))
def test_fast_walk_agrees_with_the_library_on_random_documents(document):
    for path in FAST_PATHS:
        assert _exact(compile_path(path).find(document)) == _exact(_library(path, document)), path


def test_the_fast_parse_accepts_no_invalid_selector_of_the_suite():
    invalid = [c["selector"] for c in CTS if c.get("invalid_selector")]
    assert len(invalid) > 100
    assert [s for s in invalid if _simple_steps(s) is not None] == []


PIECES = [".*", "[*]", "[ * ]", "*", ".a", "._b1", "['x']", "['']", "[0]", "[-1]", "[01]", "[-0]", "[9007199254740991]",
          "[9007199254740992]", "[٣]", "['\\'']", "['\x01']", "['é']", ".é", "[?@.a == 'x']",
          "[?@['b'] != \"y\"]", "[?@[0]==1]", "[? @.a == -0]", "[?@.a == 1.5]", "[?@.a==true]",
          "[?@ == null]", "[?@.a == 007]", "[?@.a == 'x\x01']", "[?@.a=='\ud800']", "[?@.a == x]",
          "[?$.a == 1]", "[?@.a === 1]", "[ 0]", "[0 ]", "[*]", "..a", ".", "[", "]", "'", " ", "\t",
          "?", "@", "==", "1", "a", "\\", "\n"]


@pytest.mark.slow  # 4,000 generated paths
@settings(max_examples=4000, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(PIECES), max_size=5).map(lambda parts: "$" + "".join(parts)))
def test_what_the_fast_parse_accepts_the_library_accepts(text):
    if _simple_steps(text) is not None:
        jsonpath_rfc9535.compile(text)  # raises if the fast parse let an invalid path through
