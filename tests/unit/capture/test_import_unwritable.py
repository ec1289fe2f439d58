"""An exchange whose fixture the pack would refuse to read — text that is not Unicode (a lone
surrogate escaped in a JSON body), a body over the size replayci reads recordings under, a body
nested deeper than it reads — is listed as not imported with the file, the entry and the reason;
the rest of the file is imported, the pack runs green, and nothing the pack refuses is written."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from cassettes import completion, files_of, first_request, interaction, second_request, write_cassette
from click.testing import CliRunner

from replayci.api import run as run_packs
from replayci.cli import cli
from replayci.engine import recordings
from replayci.pack.sources import DEFAULT_MAX_JSON_BYTES


def _import(source: Path, pack: Path):
    return CliRunner().invoke(cli, ["import", str(source), "--pack", str(pack)], catch_exceptions=False)


def _with_good_second(tmp_path: Path, bad_body: str, *, as_json: bool = False) -> Path:
    good = interaction(second_request(), completion(call=False, id_="chatcmpl-2"))
    return write_cassette(tmp_path / "rec" / "agent.yaml", [interaction(first_request(), bad_body), good],
                          as_json=as_json)


def _check(res, pack: Path, reason: str) -> None:
    assert res.exit_code == 0, res.output
    assert "agent.yaml (cassette): 1 imported" in res.output
    assert f"entry 0: unsupported: not imported: {reason}" in res.output
    fixtures = sorted((pack / "golden").rglob("*.json"))
    assert len(fixtures) == 1 and "chatcmpl-2" in fixtures[0].read_text()
    result = run_packs([str(pack)], provider="recorded")
    assert [c.status for c in result.cases] == ["pass"]


def test_a_lone_surrogate_is_not_imported(tmp_path):
    body = json.dumps(completion(call=False)).replace("It is sunny", "It is \\ud800 sunny")
    pack = tmp_path / "pack"
    res = _import(_with_good_second(tmp_path, body), pack)
    _check(res, pack, "it holds text that is not Unicode (half of a surrogate pair)")
    # A whole surrogate pair is a character: imported.
    fine = json.dumps(completion(call=False)).replace("It is sunny", "It is \\ud83d\\ude00 sunny")
    other = tmp_path / "other"
    assert "2 imported" in _import(_with_good_second(tmp_path / "b", fine), other).output


def test_a_body_over_the_size_limit_is_not_imported(tmp_path):
    answer = completion(call=False)
    answer["choices"][0]["message"]["content"] = "x" * DEFAULT_MAX_JSON_BYTES
    pack = tmp_path / "pack"
    res = _import(_with_good_second(tmp_path, json.dumps(answer), as_json=True), pack)
    _check(res, pack, "it would be ")
    assert f"over the limit of {DEFAULT_MAX_JSON_BYTES:,} bytes" in res.output


def _nested(depth: int) -> str:
    return json.dumps(completion(call=False))[:-1] + ', "extra": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize("depth", [950, 5000])  # refused on writing / refused on reading the cassette
def test_a_body_nested_deeper_than_replayci_reads_is_not_imported(tmp_path, depth):
    pack = tmp_path / "pack"
    res = _import(_with_good_second(tmp_path, _nested(depth)), pack)
    _check(res, pack, "")
    assert "nested too deeply for replayci to read" in res.output


@pytest.mark.parametrize("depth", [200, 600])
def test_a_body_nested_but_readable_is_imported(tmp_path, depth):
    pack = tmp_path / "pack"
    res = _import(_with_good_second(tmp_path, _nested(depth)), pack)
    assert res.exit_code == 0 and "2 imported" in res.output, res.output
    assert [c.status for c in run_packs([str(pack)], provider="recorded").cases] == ["pass", "pass"]


def test_a_cassette_nested_too_deeply_is_a_located_error(tmp_path):
    source = tmp_path / "deep.json"
    source.write_text('{"interactions": ' + "[" * 5000 + "]" * 5000 + "}")
    res = _import(source, tmp_path / "pack")
    assert res.exit_code == 0, res.output
    assert f"{source}: not imported: nested too deeply for replayci to read" in res.output
    assert not (tmp_path / "pack").exists()


def test_the_refusal_is_what_the_recorded_write_refuses(tmp_path):
    """One rule for proxy, --record and import: `refusal` is what `write` raises."""
    doc = {"response": {"content": "a \ud800 b"}}
    why = recordings.refusal(doc, max_bytes=DEFAULT_MAX_JSON_BYTES)
    assert why and "surrogate" in why
    target = tmp_path / "f.json"
    try:
        recordings.write(str(target), doc, max_bytes=DEFAULT_MAX_JSON_BYTES)
    except recordings.NotWritten as exc:
        assert str(exc) == why
    else:
        raise AssertionError("written")
    assert files_of(tmp_path) == {}
