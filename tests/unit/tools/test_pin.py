"""`replayci pin` and tools files named by `$ref`."""
from __future__ import annotations

import json
import os
import stat

import pytest
from builders import SIMPLE, WEATHER_TOOLS, call, fixture, request, response
from click.testing import CliRunner

import replayci
from replayci.cli import cli
from replayci.core.errors import ConfigError
from replayci.core.hashing import boundary_hashes

GOOD = response(call("get_weather", {"location": "Paris"}))


def pin(*args):
    return CliRunner().invoke(cli, ["pin", *args], catch_exceptions=False)


def _ref_fixture(pack, ref: str = "tools/weather.json", tools=WEATHER_TOOLS) -> dict:
    (pack.dir / "tools").mkdir(exist_ok=True)
    (pack.dir / "tools" / "weather.json").write_text(json.dumps(tools), "utf-8")
    doc = fixture(request(tools={"$ref": ref}), GOOD, pin=False)
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", doc)
    return doc


# ------------------------------------------------------------------ $ref tools


def test_a_tools_ref_reads_the_pack_file(pack):
    _ref_fixture(pack)
    result = replayci.run([str(pack.dir)])
    assert result.cases[0].status == "pass"
    loaded = replayci.load_pack(str(pack.dir))
    from replayci.pack.fixtures import load_fixture

    fx = load_fixture(loaded.contracts[0].cases[0].fixture_path, "c.json")
    assert fx.request["tools"] == WEATHER_TOOLS
    assert boundary_hashes(fx.request, fx.tools_key) == boundary_hashes(request())


def test_a_tools_ref_checks_arguments_against_the_referenced_schemas(pack):
    _ref_fixture(pack)
    pack.fixture("c.json", fixture(request(tools={"$ref": "tools/weather.json"}),
                                   response(call("get_weather", {"location": "Paris", "unit": "kelvin"})),
                                   pin=False))
    assert replayci.run([str(pack.dir)]).cases[0].classification == "schema_violation"


@pytest.mark.parametrize("ref, words", [
    ("../outside.json", ["leads out of the pack"]),
    ("/etc/passwd", ["leads out of the pack"]),
    ("tools/missing.json", ["no such file", "relative to the pack directory"]),
])
def test_a_bad_tools_ref_is_a_located_pack_error(pack, ref, words):
    (pack.dir.parent / "outside.json").write_text("[]", "utf-8")
    _ref_fixture(pack, ref)
    res = CliRunner().invoke(cli, ["validate"], catch_exceptions=False)
    assert res.exit_code == 2
    assert "packs/demo/golden/c.json:" in res.output
    for word in words:
        assert word in res.output


def test_a_tools_file_of_bad_json_is_located_in_that_file(pack):
    _ref_fixture(pack)
    (pack.dir / "tools" / "weather.json").write_text('[{"type": "function",}]', "utf-8")
    res = CliRunner().invoke(cli, ["validate"], catch_exceptions=False)
    assert res.exit_code == 2 and "packs/demo/tools/weather.json:1:" in res.output
    (pack.dir / "tools" / "weather.json").write_text('{"not": "a list"}', "utf-8")
    with pytest.raises(ConfigError, match="expected a JSON array of tools"):
        replayci.run([str(pack.dir)])


def test_a_symlinked_tools_file_leaving_the_pack_is_refused(pack, tmp_path):
    _ref_fixture(pack)
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps(WEATHER_TOOLS), "utf-8")
    target = pack.dir / "tools" / "weather.json"
    target.unlink()
    os.symlink(outside, target)
    with pytest.raises(ConfigError, match="leads out of the pack"):
        replayci.run([str(pack.dir)])


# ------------------------------------------------------------------ pin


def test_pin_writes_a_missing_boundary_and_keeps_the_rest(pack):
    _ref_fixture(pack)
    path = pack.dir / "golden" / "c.json"
    before = path.read_text("utf-8")
    res = pin()
    assert res.exit_code == 0, res.output
    assert "pinned packs/demo/golden/c.json" in res.output and "ok: 1 pinned" in res.output
    after = path.read_text("utf-8")
    doc = json.loads(after)
    assert doc["boundary"] == {"model": "gpt-4o-mini", **boundary_hashes(request())}
    assert doc["request"]["tools"] == {"$ref": "tools/weather.json"}
    # only the boundary was added: the file's text is otherwise the same
    head = after.index('"boundary"')
    added = after[head:after.index('"request"')]
    assert after.replace(added, "") == before
    again = pin()
    assert "ok: 0 pinned, 0 refreshed, 1 up to date" in again.output and path.read_text("utf-8") == after


def test_pin_refreshes_a_stale_boundary_byte_for_byte(pack):
    pack.contract("weather", SIMPLE)
    doc = fixture(request("Weather in Paris?"), GOOD)
    path = pack.fixture("c.json", doc)
    text = path.read_text("utf-8").replace("Weather in Paris?", "Weather in Rome?")
    text = "\ufeff" + text.replace("\n", "\r\n") + "\r\n"  # a BOM and CRLF lines stay as they are
    path.write_bytes(text.encode("utf-8"))
    os.chmod(path, 0o640)
    case = replayci.run([str(pack.dir)]).cases[0]
    assert (case.status, case.reason) == ("non_reproducible", "context_variance")
    assert "run `replayci pin` if the change was intended" in case.details["message"]
    old_hash = doc["boundary"]["message_hash"]
    new_hash = boundary_hashes(request("Weather in Rome?"))["message_hash"]
    res = pin("--pack", str(pack.dir))
    assert res.exit_code == 0 and "refreshed packs/demo/golden/c.json" in res.output
    assert path.read_bytes() == text.replace(old_hash, new_hash).encode("utf-8")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert replayci.run([str(pack.dir)]).cases[0].status == "pass"


def test_a_recording_that_no_longer_matches_says_re_record(pack):
    from replayci.engine.cases import variance_message
    from replayci.pack.fixtures import Fixture

    fx = Fixture("golden/c.json", request(), None, None, {}, "")
    changed = [("message_hash", "a" * 16, "b" * 16)]
    assert variance_message(changed, "recordings/w/c.json", fx).endswith("; re-record it")
    assert variance_message(changed, "golden/c.json", fx).endswith(
        "; run `replayci pin` if the change was intended")


def test_pin_of_a_broken_pack_is_exit_2_and_writes_nothing(pack):
    _ref_fixture(pack, "tools/missing.json")
    before = (pack.dir / "golden" / "c.json").read_bytes()
    res = pin()
    assert res.exit_code == 2 and "no such file" in res.output
    assert (pack.dir / "golden" / "c.json").read_bytes() == before


def test_the_starter_shows_a_tools_ref_and_pinned_boundaries(starter):
    fixtures = sorted((starter / "packs" / "starter" / "golden").rglob("*.json"))
    ref = {"$ref": "tools/weather.json"}
    refs = [f for f in fixtures if json.loads(f.read_text("utf-8"))["request"].get("tools") == ref]
    assert len(refs) == 1 and (starter / "packs" / "starter" / "tools" / "weather.json").is_file()
    assert all("boundary" in json.loads(f.read_text("utf-8")) for f in fixtures)
    res = pin()
    assert res.exit_code == 0 and f"0 pinned, 0 refreshed, {len(fixtures)} up to date" in res.output
