"""The cassette loader gives what PyYAML's C safe loader gives, document for document, error for error."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from replayci.capture.importers._yamlload import Loader

SAFE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def both(text: str):
    """(what the safe loader gives, what ours gives): a value, or the exception's type and text."""
    out = []
    for loader in (SAFE, Loader):
        try:
            out.append(("value", yaml.load(text, Loader=loader)))  # noqa: S506 - safe loaders
        except yaml.YAMLError as exc:
            out.append(("error", type(exc).__name__, str(exc)))
    return out


@pytest.mark.parametrize("text", [
    "a: &x {b: [1, 2]}\nc: *x\nd: [*x, *x]\n",  # aliases: one object met again
    "base: &b {k: 1}\nmerged: {<<: *b, j: 2}\n",  # a merge key: the constructor's
    "? [1, 2]\n: unhashable\n",  # an unhashable key: the constructor's error
    "body: !!binary aGVsbG8=\nwhen: 2001-12-14\nat: 2001-12-14t21:59:43.10-05:00\n",
    "s: !!set {a, b}\no: !!omap [a: 1, b: 2]\np: !!pairs [a: 1]\n",
    "n: [~, null, Null, '', true, yes, no, on, 0x1F, 0o17, 017, 1_000, 1:30, .inf, -.Inf, .nan, 1e3, 3.]\n",
    "quoted: ['1', \"true\", 'null', \"0x1F\"]\nplain: [a b, 'it''s', \"\\u00e9\\n\"]\n",
    "r: !!python/object/apply:os.system ['true']\n", "t: !!python/name:os.system\n",
    "&a [*a]\n",  # a list that holds itself
    "k: !custom x\n", "- !!str 12\n- !!int '7'\n- !!float '1'\n- !!bool 'true'\n- !!null ''\n",
    "", "just text\n", "[1, {a: }]\n", "a: 1\na: 2\n",
])
def test_the_same_documents_and_errors_as_the_safe_loader(text):
    ours, theirs = both(text)[1], both(text)[0]
    if text == "&a [*a]\n":  # (== cannot compare a list that holds itself)
        assert ours[1][0] is ours[1] and theirs[1][0] is theirs[1]
        return
    assert ours == theirs


def test_an_alias_is_the_same_object_as_its_anchor():
    doc = yaml.load("a: &x {b: [1, 2]}\nc: *x\nd: [*x, *x]\n", Loader=Loader)  # noqa: S506
    assert doc["c"] is doc["a"] and doc["d"][0] is doc["a"] and doc["d"][1] is doc["a"]


VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40)
    | st.sampled_from(["yes", "no", "~", "0x1F", "1:30", "2001-12-14", "<<", "=", ".inf", "- a", "a: b"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(VALUES, st.sampled_from([None, True, False]))
def test_any_document_dumped_is_read_as_the_safe_loader_reads_it(value, flow):
    text = yaml.safe_dump({"interactions": value, "version": 1}, default_flow_style=flow, allow_unicode=True)
    assert both(text)[1] == both(text)[0]


def _traffic() -> Path | None:
    for parent in Path(__file__).resolve().parents:
        if (parent / "shared" / "data" / "traffic-dev").is_dir():
            return parent / "shared" / "data" / "traffic-dev"
    return None


@pytest.mark.skipif(_traffic() is None, reason="the traffic-dev data set is not here")
def test_every_cassette_of_the_traffic_data_reads_the_same():
    paths = sorted(_traffic().rglob("*.yaml"))
    assert len(paths) > 500
    for path in paths:
        text = path.read_text("utf-8")
        assert yaml.load(text, Loader=Loader) == yaml.load(text, Loader=SAFE), path  # noqa: S506
