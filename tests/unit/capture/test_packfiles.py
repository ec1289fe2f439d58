"""Pack YAML is written with libyaml's emitter only where it writes the Python emitter's bytes."""
from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from properties import examples

from replayci.capture import packfiles


def python_emitter(doc):
    return yaml.dump(doc, Dumper=packfiles._Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False,
                     width=100)


TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=150) | st.sampled_from(
    ["1e3", "0o17", "0x1F", "yes", "null", "~", "- a", "a: b", "#x", "'q'", '"q"', "2001-12-14", ".inf"])
VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                      max_leaves=12)


@examples(400)
def test_the_same_bytes_as_the_python_emitter(examples):
    @settings(max_examples=examples, deadline=None)
    @given(st.dictionaries(TEXT, VALUES, min_size=1, max_size=4))
    def same(doc):
        assert packfiles.yaml_text(doc) == python_emitter(doc)

    same()


@pytest.mark.parametrize("text", ["\t" + "x " * 60, "😀", "a\x85b", "a\u2028b", "a\u2029b", "\ufeffa", "a\x7f",
                                  "a\x9f", "a\ufffe", "line\nbreak " * 12])
def test_text_the_emitters_write_differently_goes_to_the_python_one(text):
    doc = {"description": text, "cases": [{"id": text, "equals": [text]}], text: 1, "k" * 61: text[:1]}
    assert packfiles.yaml_text(doc) == python_emitter(doc)


@pytest.mark.skipif(packfiles._CDumper is None, reason="PyYAML without libyaml")
@pytest.mark.parametrize(("doc", "libyaml"), [
    ({"a": "plain text, é 中文 \xa0 \ud7ff \ue000 \ufefe \uff00 \ufffd", "b": [1, 2.5, None, True]}, True),
    ({"k" * 60: 1}, True), ({"k" * 61: 1}, False), ({"k": 1}, True), ({"": 1}, False),
    ({"a": "\x7e"}, True), ({"a": "\x7f"}, False),
    ({"a": "\u2027"}, True), ({"a": "\u2028"}, False), ({"a": "\u202a"}, True), ({"a": "\ufeff"}, False),
    ({"a": "\t"}, False), ({"a": "😀"}, False), ({"a": ("x",)}, False), ({1: "a"}, False),
])
def test_which_documents_libyaml_writes(doc, libyaml):
    assert packfiles._same_in_libyaml(doc) is libyaml


SHARED = {"path": "$.a", "equals": 1}


@pytest.mark.parametrize("doc", [
    {"first": SHARED, "again": [SHARED, SHARED]},  # one object twice: an anchor and its aliases
    {"list": (shared := [1, 2]), "again": shared},
    {"floats": [float("nan"), float("inf"), -float("inf"), 1e17, -0.0, 2.5e-8, 1.0]},
    {"tuple": ("a", 1), "nested": [{"t": ()}]},
    {2: "int key", None: "null key", True: "bool key", "": [], "e": {}},
])
def test_documents_built_as_nodes_are_what_the_representer_writes(doc):
    assert packfiles.yaml_text(doc) == python_emitter(doc)
