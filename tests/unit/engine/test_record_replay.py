"""Record and replay end to end: replay modes, stable atomic recordings, redaction,
boundary checks on replay, TTL and --strict-fixtures. Real CLI, real SDKs, fake server."""
from __future__ import annotations

import datetime
import difflib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest
from builders import fixture, request
from fakeserver import Fault, Reply
from livecli import (
    ENV_KEY,
    KEYS,
    PATHS,
    PROVIDERS,
    Router,
    add_cases,
    cases_by_id,
    invoke,
    report_of,
)

from replayci.engine.recordings import dumps

byprovider = pytest.mark.parametrize("provider", PROVIDERS)


def recording(pack, contract: str, case: str) -> dict:
    return json.loads((pack.dir / "recordings" / contract / f"{case}.json").read_text("utf-8"))


def set_recorded_at(pack, contract: str, case: str, days_old: float) -> None:
    path = pack.dir / "recordings" / contract / f"{case}.json"
    doc = json.loads(path.read_text("utf-8"))
    when = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=days_old)
    doc["meta"]["recorded_at"] = when.isoformat(timespec="seconds")
    path.write_text(dumps(doc), "utf-8")


# ----------------------------------------------------------------------------- recordings


@byprovider
def test_record_writes_normalized_recordings(provider, pack, server):
    add_cases(pack, "w", ["a"])
    server.set_default(Reply.tool_calls([("get_weather", {"location": "Paris"}),
                                         ("get_time", {"timezone": "Europe/Paris"})], text="Checking."))
    res = invoke(provider, server, "--record", "--model", "model-x")
    assert res.exit_code == 0, res.output
    path = pack.dir / "recordings" / "w" / "a.json"
    text = path.read_text("utf-8")
    doc = json.loads(text)
    assert text == dumps(doc) and text.endswith("}\n") and '\n  "boundary": {\n' in text  # sorted, 2-space
    meta = doc["meta"]
    assert {k: meta[k] for k in ("schema_version", "pack_id", "contract", "case_id", "provider", "model")} == {
        "schema_version": 1, "pack_id": "demo", "contract": "w", "case_id": "a", "provider": provider,
        "model": "model-x"}
    assert meta["recorded_at"].endswith("+00:00") and isinstance(meta["latency_ms"], int)
    assert meta["replayci_version"]
    assert [c["id"] for c in doc["response"]["tool_calls"]] == ["call_1", "call_2"]
    assert [c["name"] for c in doc["response"]["tool_calls"]] == ["get_weather", "get_time"]
    assert doc["response"]["content"] == "Checking." and doc["response"]["stop_reason"] == "tool_calls"
    assert "raw" not in doc
    from replayci.core.hashing import boundary_hashes
    assert doc["boundary"] == {"model": "model-x", **boundary_hashes(request("q:a"))}
    # ...and the recorded provider replays it at once, offline.
    offline = invoke("recorded", None, key=False)
    assert offline.exit_code == 0, offline.output


@byprovider
def test_rerecording_an_identical_response_changes_only_recorded_at_and_latency(provider, pack, server):
    add_cases(pack, "w", ["a"])
    server.set_default(Reply.tool_calls([("get_weather", {"location": "Paris", "unit": "celsius"})], text="Hi"))
    assert invoke(provider, server, "--record").exit_code == 0
    path = pack.dir / "recordings" / "w" / "a.json"
    before = path.read_text("utf-8")
    time.sleep(1.05)  # recorded_at has a resolution of one second
    assert invoke(provider, server, "--record").exit_code == 0
    after = path.read_text("utf-8")
    changed = [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert {line[1:].split(":")[0].strip() for line in changed} <= {'"recorded_at"', '"latency_ms"'}
    assert any('"recorded_at"' in line for line in changed)


def test_failed_calls_are_not_recorded(pack, server):
    add_cases(pack, "w", ["a"], header="tool: get_weather\nretries: {max_attempts: 1}\n")
    server.set_default(Fault.status(500))
    res = invoke("openai", server, "--record")
    assert res.exit_code == 1
    assert not (pack.dir / "recordings").exists()


# ----------------------------------------------------------------------------- replay modes


@byprovider
def test_auto_records_once_then_replays(provider, pack, server, monkeypatch):
    import replayci.engine.cassette
    import replayci.engine.recorded

    add_cases(pack, "w", ["a", "b"])
    first = invoke(provider, server, "--replay", "auto", "--json")
    assert first.exit_code == 0 and server.count() == 2
    assert all(c["response_source"] == "live" and c["response_origin"] == provider
               for c in report_of(first)["cases"])
    reads = []
    for module in (replayci.engine.recorded, replayci.engine.cassette):
        real = module.load_recording
        monkeypatch.setattr(module, "load_recording",
                            lambda path, *a, real=real, **k: reads.append(path) or real(path, *a, **k))
    second = invoke(provider, server, "--replay", "auto", "--json")
    assert second.exit_code == 0 and server.count() == 2  # nothing called
    assert all(c["response_source"] == "recording"
               and c["response_origin"] == f"packs/demo/recordings/w/{c['case']}.json"
               for c in report_of(second)["cases"])
    assert len(reads) == 2  # each usable recording read once


@byprovider
def test_auto_other_model_or_provider_counts_as_missing(provider, pack, server):
    other = "anthropic" if provider == "openai" else "openai"
    add_cases(pack, "w", ["a"])
    assert invoke(other, server, "--record").exit_code == 0
    server.reset()
    assert invoke(provider, server, "--replay", "auto").exit_code == 0
    assert server.count(PATHS[provider]) == 1  # another provider's recording is not replayed
    assert recording(pack, "w", "a")["meta"]["provider"] == provider  # ...and it was re-recorded
    assert invoke(provider, server, "--replay", "auto", "--model", "model-2").exit_code == 0
    assert server.count(PATHS[provider]) == 2  # another model: called again
    assert recording(pack, "w", "a")["meta"]["model"] == "model-2"
    assert invoke(provider, server, "--replay", "auto", "--model", "model-2").exit_code == 0
    assert server.count(PATHS[provider]) == 2


def test_auto_rerecords_on_context_variance_and_strict_reports_it(pack, server):
    add_cases(pack, "w", ["a"])
    assert invoke("openai", server, "--record").exit_code == 0
    # The case's prompt changes after recording (the fixture is re-pinned by its author).
    pack.fixture("w.a.json", fixture(request("q:a", system="Use the tools. Be brief.")))
    strict = invoke("openai", server, "--replay", "strict", "--json")
    (case,) = report_of(strict)["cases"]
    assert (case["status"], case["reason"]) == ("non_reproducible", "context_variance")
    assert "system_hash changed (system prompt)" in case["message"]
    assert "recordings/w/a.json" in case["message"]
    offline = invoke("recorded", None, "--json", key=False)
    assert cases_by_id(report_of(offline))["a"]["reason"] == "context_variance"
    server.reset()
    auto = invoke("openai", server, "--replay", "auto", "--json")
    assert auto.exit_code == 0 and server.count() == 1  # re-recorded instead
    assert invoke("recorded", None, key=False).exit_code == 0


@byprovider
def test_strict_never_calls_and_needs_no_key(provider, pack, server):
    add_cases(pack, "w", ["a", "b"])
    pack.recording("w", "a", {"meta": {"provider": provider, "model": "gpt-4o-mini"},
                              "boundary": fixture(request("q:a"))["boundary"],
                              "response": {"success": True, "tool_calls": [
                                  {"id": "call_1", "name": "get_weather", "arguments": {"location": "Paris"}}]}})
    res = invoke(provider, server, "--replay", "strict", "--json", key=False)
    assert server.count() == 0
    cases = cases_by_id(report_of(res))
    assert cases["a"]["status"] == "pass"
    assert (cases["b"]["status"], cases["b"]["reason"]) == ("non_reproducible", "recording_not_found")
    assert "no API key" not in res.stderr


def test_off_calls_and_writes_nothing(pack, server):
    add_cases(pack, "w", ["a"])
    res = invoke("openai", server)  # live providers default to --replay off
    assert res.exit_code == 0 and server.count() == 1
    assert report_of(invoke("openai", server, "--json"))["run"]["replay"] == "off"
    assert not (pack.dir / "recordings").exists()


def test_replay_mode_from_config(pack, server):
    (pack.root / ".replayci.yml").write_text("replay: auto\n", "utf-8")
    add_cases(pack, "w", ["a"])
    assert invoke("openai", server).exit_code == 0
    assert invoke("openai", server).exit_code == 0
    assert server.count() == 1
    assert (pack.dir / "recordings" / "w" / "a.json").exists()


def test_recorded_provider_refuses_other_replay_modes(pack):
    add_cases(pack, "w", ["a"])
    res = invoke("recorded", None, "--replay", "auto", key=False)
    assert res.exit_code == 2 and "replays only (strict)" in res.output


# ----------------------------------------------------------------------------- TTL


def test_ttl_warning_names_path_and_age_and_strict_fixtures(pack, server):
    add_cases(pack, "w", ["a"])
    assert invoke("openai", server, "--record").exit_code == 0
    set_recorded_at(pack, "w", "a", days_old=30.2)
    res = invoke("recorded", None, key=False)
    assert res.exit_code == 0
    assert ("replayci: warning: packs/demo/recordings/w/a.json is 30 days old (fixtures.ttl_days: 14); "
            "re-record it") in res.stderr
    strict = invoke("recorded", None, "--strict-fixtures", "--json", key=False)
    (case,) = report_of(strict)["cases"]
    assert (case["status"], case["reason"]) == ("non_reproducible", "stale_recording")
    assert "packs/demo/recordings/w/a.json is 30 days old" in case["message"]
    # The TTL comes from .replayci.yml too.
    (pack.root / ".replayci.yml").write_text("provider: recorded\nfixtures: {ttl_days: 60}\n", "utf-8")
    assert "days old" not in invoke("recorded", None, key=False).stderr
    # In auto mode a stale recording under --strict-fixtures is re-recorded, not reported.
    (pack.root / ".replayci.yml").write_text("provider: recorded\n", "utf-8")
    server.reset()
    auto = invoke("openai", server, "--replay", "auto", "--strict-fixtures")
    assert auto.exit_code == 0 and server.count() == 1
    assert invoke("recorded", None, "--strict-fixtures", key=False).exit_code == 0


# ----------------------------------------------------------------------------- redaction


@byprovider
def test_a_planted_key_reaches_no_file_and_no_output(provider, pack, server, tmp_path):
    planted = f"sk-PLANTED-{provider}-7c1d2e3f4a5b6c7d8e9f"
    (pack.root / ".replayci.yml").write_text(
        "provider: recorded\nredact:\n  fields: ['$.response.content', '$.raw.id', "
        "'$.response.tool_calls[*].arguments.location']\n", "utf-8")
    add_cases(pack, "w", ["ok", "echo", "parrot"], header="tool: get_weather\nretries: {max_attempts: 1}\n")
    router = Router({"echo": [Fault.status(401, message="Incorrect API key provided: {api_key}.")]},
                    default=Reply.tool_call("get_weather", {"location": "Paris"}, text="The secret plan"))
    # A provider that repeats the key in a successful answer (text and arguments).
    server.set_default(lambda req: Reply.tool_call("get_weather", {"location": req.api_key},
                                                   text=f"Your key is {req.api_key}")
                       if "q:parrot" in str(req.body) else router(req))
    reports = tmp_path / "reports"
    res = invoke(provider, server, "--record", "--keep-raw", "--json", "-v",
                 "--report-json", str(reports / "r.json"), "--junit", str(reports / "j.xml"),
                 "--markdown", str(reports / "m.md"), key=False, env={ENV_KEY[provider]: planted})
    assert res.exit_code == 1  # the 401 case
    assert server.requests[0].api_key == planted  # it was really used
    # The provider echoed the key back in its error: the case reports it redacted.
    echo = cases_by_id(report_of(res))["echo"]
    assert "Incorrect API key provided: [REDACTED]" in echo["failures"][0]["message"]
    assert planted not in res.stdout and planted not in res.stderr
    written = [p for p in list(pack.root.rglob("*")) + list(reports.rglob("*")) if p.is_file()]
    assert len(written) > 5
    for p in written:
        assert planted not in p.read_text("utf-8", errors="replace"), p
    doc = recording(pack, "w", "ok")
    text = json.dumps(doc).lower()
    assert "authorization" not in text and "bearer" not in text and "x-api-key" not in text
    assert doc["response"]["content"] == "[REDACTED]"
    assert doc["response"]["tool_calls"][0]["arguments"]["location"] == "[REDACTED]"
    assert doc["raw"]["id"] == "[REDACTED]"  # the raw payload, kept with --keep-raw, redacted too
    assert "content" in doc["raw"] or "choices" in doc["raw"]
    parrot = recording(pack, "w", "parrot")
    assert parrot["raw"] and "[REDACTED]" in json.dumps(parrot)
    # Without --keep-raw the raw payload is dropped.
    res = invoke(provider, server, "--record", "--filter", "w/ok", key=False, env={ENV_KEY[provider]: planted})
    assert "raw" not in recording(pack, "w", "ok")


# ----------------------------------------------------------------------------- atomic writes


def test_sigkill_mid_run_leaves_only_complete_recordings(pack, server):
    ids = [f"c{i:02d}" for i in range(60)]
    add_cases(pack, "w", ids)
    # Big answers make each write take a little while; the latency spreads the writes out.
    server.set_default(Reply.tool_call("get_weather", {"location": "Paris " + "x" * 200_000}))
    server.latency = 0.03
    env = {**os.environ, ENV_KEY["openai"]: KEYS["openai"]}
    # A cold interpreter: the pack is read the moment SIGKILL has ended this very process.
    proc = subprocess.Popen([sys.executable, "-m", "replayci", "--provider", "openai", "--base-url",
                             server.openai_base_url, "--record", "--keep-raw", "--jobs", "4"],
                            cwd=pack.root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    folder = pack.dir / "recordings" / "w"
    try:
        deadline = time.monotonic() + 30
        while not (folder.exists() and len(list(folder.glob("*.json"))) >= 6):
            assert time.monotonic() < deadline and proc.poll() is None, "no recordings appeared"
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    names = sorted(p.name for p in folder.iterdir())
    complete = [n for n in names if n.endswith(".json")]
    assert 6 <= len(complete) < len(ids)  # killed mid-run
    for name in complete:
        doc = json.loads((folder / name).read_text("utf-8"))  # every .json file is whole
        assert doc["meta"]["case_id"] == name[:-5] and doc["response"]["tool_calls"]
    # Anything else is an unfinished temp file, never named *.json.
    assert all(n.startswith(".") and n.endswith(".tmp") for n in names if n not in complete)
    # The recordings that were written replay as they are.
    res = invoke("recorded", None, "--json", key=False)
    assert res.exit_code in (0, 1), res.output
    statuses = {c["case"]: c["status"] for c in report_of(res)["cases"]}
    assert all(statuses[n[:-5]] == "pass" for n in complete)


def test_auto_without_a_key_replays_what_it_can(pack, server):
    add_cases(pack, "w", ["a", "b"])
    assert invoke("openai", server, "--record", "--filter", "w/a").exit_code == 0
    server.reset()
    res = invoke("openai", server, "--replay", "auto", "--json", key=False)
    cases = cases_by_id(report_of(res))
    assert cases["a"]["status"] == "pass"  # replayed: no key needed
    assert (cases["b"]["status"], cases["b"]["reason"]) == ("non_reproducible", "missing_prerequisites")
    assert server.count() == 0 and "set OPENAI_API_KEY" in res.stderr


def test_a_later_write_removes_what_a_killed_write_left(tmp_path, monkeypatch):
    from replayci.core import files
    from replayci.core.memo import clear_caches
    from replayci.engine import recordings

    clear_caches()
    folder = tmp_path / "recordings" / "w"
    folder.mkdir(parents=True)
    stale = folder / ".c01.json.k3x_9qaz.tmp"  # what a SIGKILL mid-write leaves
    fresh = folder / ".c02.json.a1b2c3d4.tmp"  # another run's write in progress
    mine = folder / ".notes.tmp"  # not ours
    for f in (stale, fresh, mine):
        f.write_text("{")
    old = time.time() - files.STALE_TEMP_S - 60
    os.utime(stale, (old, old))
    os.utime(mine, (old, old))
    recordings.write(str(folder / "c03.json"), {"meta": {}}, root=str(tmp_path))
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted([fresh.name, mine.name, "c03.json"])
    # the temp names write_atomic makes are the ones it sweeps
    made = []
    real_mkstemp = tempfile.mkstemp

    def mkstemp(**kwargs):
        fd, name = real_mkstemp(**kwargs)
        made.append(os.path.basename(name))
        return fd, name

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    for name in ("c04.json", "report.xml", "summary.md", "pack.yaml"):
        files.write_atomic(str(folder / name), "{}")
    assert len(made) == 4 and all(files._OUR_TEMP.match(n) for n in made), made


# ----------------------------------------------------------------------------- pinned negatives


def _pinned_negative(pack, modes: str = "") -> None:
    """Case a calls live; case neg is a negative case whose fixture holds its (text) response."""
    from builders import response

    pack.fixture("w.a.json", fixture(request("q:a")))
    pack.fixture("negative/w.neg.json", fixture(request("q:neg"), response(content="no tool")))
    pack.contract("w", "tool: get_weather\ngolden_cases:\n  - {id: a, input_ref: w.a.json}\n"
                       f"  - {{id: neg, input_ref: negative/w.neg.json, expect_ok: false{modes}}}\n")


@pytest.mark.parametrize("mode", ["record", "auto", "off"])
def test_a_pinned_negative_case_is_skipped_live_and_never_recorded(mode, pack, server):
    _pinned_negative(pack)
    res = invoke("openai", server, "--replay", mode, "--json")
    assert res.exit_code == 0, res.output
    cases = cases_by_id(report_of(res))
    assert cases["neg"]["status"] == "skipped" and "provider_modes" in cases["neg"]["reason"]
    assert cases["a"]["response_source"] == "live"
    assert server.count() == 1 and not (pack.dir / "recordings" / "w" / "neg.json").exists()


def test_a_pinned_negative_case_named_by_provider_modes_is_judged_on_its_fixture(pack, server):
    _pinned_negative(pack, ", provider_modes: [openai, recorded]")
    res = invoke("openai", server, "--record", "--json")
    neg = cases_by_id(report_of(res))["neg"]
    assert (neg["status"], neg["classification"], neg["response_source"]) == ("pass", "tool_not_invoked", "fixture")
    assert server.count() == 1 and not (pack.dir / "recordings" / "w" / "neg.json").exists()


def test_a_recording_never_replaces_a_pinned_negative_response(pack):
    _pinned_negative(pack)
    (pack.dir / "recordings" / "w").mkdir(parents=True)
    good = {"meta": {"provider": "openai", "model": "gpt-4o-mini"},
            "response": {"success": True, "content": None, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"location\": \"Paris\"}"}}]}}
    (pack.dir / "recordings" / "w" / "neg.json").write_text(json.dumps(good), "utf-8")
    res = invoke("recorded", None, "--filter", "w/neg", "--json", key=False)
    neg = report_of(res)["cases"][0]
    assert (neg["status"], neg["response_source"]) == ("pass", "fixture"), res.output
    assert neg["response_origin"].endswith("golden/negative/w.neg.json")
