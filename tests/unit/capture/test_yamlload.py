"""The cassette loader gives what PyYAML's C safe loader gives, document for document, error for error."""
from __future__ import annotations

from pathlib import Path

import collector
import pytest
import warmed
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from properties import examples

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
    "k: !custom x\n", "- !!str 12\n- !!int '7'\n- !!float '1'\n- !!bool 'true'\n- !!null ''\n",
    "", "just text\n", "[1, {a: }]\n", "a: 1\na: 2\n",
])
def test_the_same_documents_and_errors_as_the_safe_loader(text):
    ours, theirs = both(text)[1], both(text)[0]
    assert ours == theirs


def test_an_alias_is_the_same_object_as_its_anchor():
    doc = yaml.load("a: &x {b: [1, 2]}\nc: *x\nd: [*x, *x]\n", Loader=Loader)  # noqa: S506
    assert doc["c"] is doc["a"] and doc["d"][0] is doc["a"] and doc["d"][1] is doc["a"]


def _laughs(levels: int) -> str:
    """levels of 10 aliases each: 10**levels nodes once expanded, from a few hundred bytes."""
    lines = ["  l0: &l0 lol"] + [f"  l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 10)}]" for n in range(1, levels + 1)]
    return "bombs:\n" + "\n".join(lines) + "\ninteractions: []\nversion: 1\n"


@pytest.mark.parametrize(("text", "line", "why"), [
    (_laughs(9), 8, "expand past 1,000,000 nodes"),
    ("a: &w [" + ", ".join(["1"] * 1000) + "]\nb: [" + ", ".join(["*w"] * 1001) + "]\n", 2, "expand past"),
    ("interactions: &a [*a]\nversion: 1\n", 1, "refers to a node it is inside"),
])
def test_an_alias_bomb_is_refused_where_it_goes_off(text, line, why):
    """The safe loader would hand over a document that stands for 10**9 nodes (or holds
    itself), which a walk over it never finishes: refused before anything is built, at the
    line of the node past the limit."""
    from replayci.capture.importers._yamlload import AliasBomb

    with pytest.raises(AliasBomb, match=why) as caught:
        yaml.load(text, Loader=Loader)  # noqa: S506
    assert caught.value.problem_mark.line + 1 == line


def test_aliases_within_the_limit_and_anchor_like_text_read_as_before():
    text = _laughs(5) + "url: 'http://x?a=1&b=2'\nquoted: 'not &an anchor'\n"
    assert yaml.load(text, Loader=Loader) == yaml.load(text, Loader=SAFE)  # noqa: S506
    assert Loader(text).anchored and not Loader("a: 'x?a=1&b=2'\n").anchored


def test_an_import_of_a_cassette_holding_an_alias_bomb_stops_at_once(tmp_path):
    import subprocess

    path = tmp_path / "bomb.yaml"
    path.write_text(_laughs(9))
    for strict, code in ((["--strict"], 2), ([], 0)):  # listed as not imported, unless --strict
        done = subprocess.run([*warmed.cli(), "import", str(path), "--pack", str(tmp_path / "p"),
                               *strict], capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == code, done.stdout + done.stderr
        assert f"{path}:8:" in done.stdout + done.stderr and "alias bomb" in done.stdout + done.stderr
        assert "Traceback" not in done.stderr and not (tmp_path / "p").exists()


VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40)
    | st.sampled_from(["yes", "no", "~", "0x1F", "1:30", "2001-12-14", "<<", "=", ".inf", "- a", "a: b"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20)


@examples(300)
def test_any_document_dumped_is_read_as_the_safe_loader_reads_it(examples):
    @settings(max_examples=examples, deadline=None)
    @given(VALUES, st.sampled_from([None, True, False]))
    def same(value, flow):
        text = yaml.safe_dump({"interactions": value, "version": 1}, default_flow_style=flow, allow_unicode=True)
        assert both(text)[1] == both(text)[0]

    same()


def _traffic() -> Path | None:
    for parent in Path(__file__).resolve().parents:
        if (parent / "shared" / "data" / "traffic-dev").is_dir():
            return parent / "shared" / "data" / "traffic-dev"
    return None


@pytest.mark.skipif(_traffic() is None, reason="the traffic-dev data set is not here")
def test_every_cassette_of_the_traffic_data_reads_the_same():
    paths = sorted(_traffic().rglob("*.yaml"))
    assert len(paths) > 500
    with collector.paused():  # (each cassette is thousands of objects, none of them garbage)
        for path in paths:
            text = path.read_text("utf-8")
            assert yaml.load(text, Loader=Loader) == yaml.load(text, Loader=SAFE), path  # noqa: S506
