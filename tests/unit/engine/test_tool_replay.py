"""Tool replay as teams need it: key paths that ignore unstable arguments, tool versions,
sanitized recordings and the tools' own replay mode (--tool-replay, tool_replay_mode:). The
real CLI and SDKs against the fake server, and a real tool command (a Python script)."""
from __future__ import annotations

import json
import sys

import jsonschema
import pytest
import yaml
from builders import REPO, fixture, request
from click.testing import CliRunner
from fakeserver import Conversation, Reply, tool_results_of
from livecli import PROVIDERS, invoke, live_env, report_of

import replayci
from replayci.cli import cli
from replayci.core.hashing import args_hash
from replayci.pack import schema_gen

byprovider = pytest.mark.parametrize("provider", PROVIDERS)

SEARCH = {"type": "function", "function": {"name": "search_docs", "description": "Search the docs.", "parameters": {
    "type": "object", "properties": {"query": {"type": "string"}, "country": {"type": "string"},
                                     "requested_at": {"type": "string"}},
    "required": ["query"], "additionalProperties": False}}}
SYSTEM = "Search the docs, then answer."
ASK = {"query": "visa rules", "country": "PT", "requested_at": "2026-01-05T10:00:00Z"}
ASK_LATER = {**ASK, "requested_at": "2026-01-06T17:30:12Z"}  # the same call by its key
KEY = {"$.query": "visa rules", "$.country": "PT"}  # what a keyed call is hashed over
HITS = [{"title": "Schengen visas", "url": "https://docs.example/visa", "score": 0.93}]
SECRET = "tok_live_5f1e9c0d7a2b44e1"
ANSWER = "Portugal follows the Schengen visa rules."

# A real search tool: logs each call, answers with hits, a secret token and a call counter.
SEARCH_PY = f"""\
import json, sys
args = json.load(sys.stdin)
with open("search.log", "a") as log:
    log.write(json.dumps(args) + "\\n")
with open("search.log") as log:
    n = len(log.readlines())
print(json.dumps({{"hits": {HITS!r}, "api_token": {SECRET!r}, "call": n}}))
"""
PRODUCED = {"hits": HITS, "api_token": SECRET}  # + "call": n


def contract_text(*, key="[$.query, $.country]", version='"2"', sanitize="{drop: [$.api_token]}",
                  command=True, scenario=True) -> str:
    lines = ["scenario: true" if scenario else "", "tool: search_docs", "max_steps: 4"]
    if command:
        lines.append("tool_commands:\n  search_docs: " + json.dumps(f"{sys.executable} tools/search.py"))
    config = [f"    {name}: {value}" for name, value in (("key", key), ("version", version),
                                                          ("sanitize", sanitize)) if value]
    if config:
        lines += ["tool_replay_config:", "  search_docs:", *config]
    lines += ["trajectory:" if scenario else "", "  final_invariants:" if scenario else "",
              '    - {path: "$.content", contains: "Schengen"}' if scenario else "",
              "golden_cases:", "  - {id: c, input_ref: c.json}"]
    return "\n".join(line for line in lines if line) + "\n"


def setup(pack, results=None, **kw) -> None:
    """The search scenario: its contract, its fixture (with *results* as tool_results), its tool."""
    (pack.dir / "tools").mkdir(exist_ok=True)
    (pack.dir / "tools" / "search.py").write_text(SEARCH_PY, "utf-8")
    pack.contract("search", contract_text(**kw))
    doc = fixture(request("q:c", tools=[SEARCH], system=SYSTEM))
    if results is not None:
        doc["tool_results"] = results
    pack.fixture("c.json", doc)


def agent(arguments=ASK) -> Conversation:
    """The fake model: one search with *arguments*, then the answer."""
    return Conversation([Reply.tool_call("search_docs", arguments), Reply.plain_text(ANSWER)])


def run(provider, server, *args, arguments=ASK, env=None):
    server.reset()
    server.set_default(agent(arguments))
    return invoke(provider, server, "--json", *args, env=env)


def only(res) -> dict:
    (case,) = report_of(res)["cases"]
    return case


def calls_logged(pack) -> list[dict]:
    log = pack.dir / "search.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def recording_path(pack):
    return pack.dir / "recordings" / "search" / "c.json"


def recording(pack) -> dict:
    return json.loads(recording_path(pack).read_text("utf-8"))


def seen_by_model(server) -> list:
    """The tool results the model was sent, parsed, in order."""
    return [json.loads(t["content"]) for t in tool_results_of(server.requests[-1])]


def result_record(arguments, result, version=None, *, hashed=None) -> dict:
    out = {"tool": "search_docs", "arguments": arguments, "result": result,
           "args_hash": args_hash(arguments if hashed is None else hashed)}
    if version is not None:
        out["version"] = version
    return out


# ----------------------------------------------------------------------------- the contract


def validate(pack) -> tuple[int, str]:
    res = CliRunner().invoke(cli, ["validate", "--pack", str(pack.dir)])
    return res.exit_code, res.output


def test_tool_replay_config_is_loaded(pack):
    setup(pack, key="['$.query', $.country]", version="3", sanitize="{keep: ['$.hits[*].title']}")
    (contract,) = replayci.load_pack(pack.dir).contracts
    config = contract.tool_configs["search_docs"]
    assert (config.key, config.version, config.keep, config.drop) == (("$.query", "$.country"), "3",
                                                                      ("$.hits[*].title",), ())
    assert validate(pack)[0] == 0


@pytest.mark.parametrize("config, line, message", [
    ("    verison: '2'", 11, "unknown key 'verison'; expected one of key, sanitize, version; did you mean 'version'?"),
    ("    sanitize: {keep: [$.a], drop: [$.b]}", 11, "give either keep or drop, not both"),
    ("    sanitize: {keeep: [$.a]}", 11, "unknown key 'keeep'; expected one of drop, keep; did you mean 'keep'?"),
    ("    key: ['$.query[']", 11, "invalid JSONPath '$.query['"),
    ("    key: $.query", 11, 'expected a list of argument paths that identify a call ($.country), got "$.query"'),
    ("    version: [2]", 11, "expected a version string, got [2]"),
])
def test_a_bad_tool_replay_config_is_a_located_error(pack, config, line, message):
    setup(pack, key=None, version=None, sanitize=None)
    path = pack.dir / "contracts" / "search.yaml"
    path.write_text(path.read_text().replace("golden_cases:", f"tool_replay_config:\n  search_docs:\n{config}\n"
                                             "golden_cases:"), "utf-8")
    code, output = validate(pack)
    assert code == 2, output
    assert f"search.yaml:{line}:" in output and message in output, output


def test_tool_replay_config_is_for_scenarios_and_the_mode_is_checked(pack):
    setup(pack, scenario=False, command=False)
    code, output = validate(pack)
    assert code == 2 and "tool_replay_config is for scenario contracts: add scenario: true" in output
    setup(pack)
    (pack.root / ".replayci.yml").write_text("provider: recorded\ntool_replay_mode: atuo\n", "utf-8")
    res = CliRunner().invoke(cli, ["run"])
    assert res.exit_code == 2 and ".replayci.yml:2:" in res.output and "did you mean 'auto'?" in res.output
    (pack.root / ".replayci.yml").write_text("provider: recorded\n", "utf-8")
    res = CliRunner().invoke(cli, ["run", "--tool-replay", "recrod"])
    assert res.exit_code == 2 and "--tool-replay 'recrod' is not one of" in res.output
    assert "did you mean 'record'?" in res.output


def test_the_published_schema_knows_tool_replay_config(pack):
    setup(pack)
    schema = schema_gen.build("contract")
    contract = yaml.safe_load((pack.dir / "contracts" / "search.yaml").read_text())
    jsonschema.validate(contract, schema)
    for bad in ({"sanitize": {"keep": ["$.a"], "drop": ["$.b"]}}, {"verison": "2"}, {"key": "$.a"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**contract, "tool_replay_config": {"search_docs": bad}}, schema)
    assert schema_gen.build("config")["properties"]["tool_replay_mode"]["enum"] == ["auto", "record", "off", "strict"]


# ----------------------------------------------------------------------------- keys


@byprovider
def test_a_call_identical_by_its_key_is_served_the_recorded_result(provider, pack, server):
    recorded = {"hits": HITS, "call": 0}
    setup(pack, results=[result_record(ASK, recorded, "2")], command=False)
    res = run(provider, server, "--tool-replay", "strict", arguments=ASK_LATER)
    assert res.exit_code == 0, res.output
    case = only(res)
    assert case["status"] == "pass"
    assert seen_by_model(server) == [recorded]
    # Without the key, the timestamp makes it another call: a miss.
    setup(pack, results=[result_record(ASK, recorded, "2")], command=False, key=None)
    case = only(run(provider, server, "--tool-replay", "strict", arguments=ASK_LATER))
    assert (case["status"], case["reason"]) == ("non_reproducible", "tool_result_not_recorded")
    assert f"(args_hash {args_hash(ASK_LATER)})" in case["message"]


def test_keyed_hashes_in_recordings_and_absent_paths(pack, server):
    setup(pack)
    assert run("openai", server, "--record").exit_code == 0
    doc = recording(pack)
    (entry,) = doc["tool_results"]
    assert entry["args_hash"] == args_hash(KEY) and entry["arguments"] == ASK
    assert doc["trajectory"][0]["tool_results"][0]["args_hash"] == args_hash(KEY)
    # A key path that matches nothing is left out of the hash (not hashed as null).
    recording_path(pack).unlink()
    no_country = {"query": "visa rules", "requested_at": "2026-01-07T08:00:00Z"}
    assert run("openai", server, "--record", arguments=no_country).exit_code == 0
    (entry,) = recording(pack)["tool_results"]
    assert entry["args_hash"] == args_hash({"$.query": "visa rules"})
    assert entry["args_hash"] != args_hash({"$.query": "visa rules", "$.country": None})


def test_recorded_replays_hash_by_key(pack, server):
    """A recording made before the key was configured replays with the keyed hashes: the
    same outcome (fingerprint) as the live run under the key."""
    setup(pack)
    assert run("openai", server, "--record").exit_code == 0
    doc = recording(pack)
    doc["trajectory"][0]["tool_results"][0]["args_hash"] = args_hash(ASK)  # as hashed without a key
    recording_path(pack).write_text(json.dumps(doc), "utf-8")
    offline = only(invoke("recorded", None, "--json", key=False))
    live = only(run("openai", server, "--tool-replay", "strict", arguments=ASK_LATER))
    assert offline["status"] == live["status"] == "pass"
    assert offline["fingerprint"] == only(run("openai", server, "--tool-replay", "strict"))["fingerprint"]


@byprovider
def test_replay_with_overrides_serves_and_compares_calls_by_key(provider, pack, server):
    setup(pack)
    assert run(provider, server, "--record").exit_code == 0
    server.reset()
    server.set_default(agent(ASK_LATER))  # the replayed model sends another timestamp
    res = CliRunner().invoke(cli, ["replay", "demo/search/c", "--json", "--base-url", server.base_url_for(provider)],
                             env=live_env(provider), catch_exceptions=False)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["replay"]["stopped"] is None and doc["identical"] is True and doc["tool_sequence_diff"] == []
    assert doc["replay"]["tool_sequence"] == [{"tool": "search_docs", "args_hash": args_hash(KEY)}]
    assert seen_by_model(server) == [{"hits": HITS, "call": 1}]  # the frozen, sanitized result
    assert len(calls_logged(pack)) == 1  # replay never runs a tool


# ----------------------------------------------------------------------------- versions


@byprovider
def test_a_result_of_another_version_is_missing_under_strict(provider, pack, server):
    setup(pack, results=[result_record(ASK, {"hits": []}, "1", hashed=KEY)])
    case = only(run(provider, server, "--tool-replay", "strict"))
    assert (case["status"], case["reason"]) == ("non_reproducible", "tool_result_not_recorded")
    assert 'the recorded result is of version "1", the tool now has version "2"' in case["message"]
    assert calls_logged(pack) == []


def test_a_result_without_a_version_matches_only_a_tool_without_one(pack, server):
    served = {"hits": [], "unversioned": True}
    setup(pack, results=[result_record(ASK, served, hashed=KEY)], command=False)
    case = only(run("openai", server))
    assert case["reason"] == "tool_result_not_recorded"
    assert 'the recorded result is of no version, the tool now has version "2"' in case["message"]
    setup(pack, results=[result_record(ASK, served, hashed=KEY)], command=False, version=None)
    assert only(run("openai", server))["status"] == "pass" and seen_by_model(server) == [served]
    setup(pack, results=[result_record(ASK, served, "1", hashed=KEY)], command=False, version=None)
    case = only(run("openai", server))
    assert 'the recorded result is of version "1", the tool now has no version' in case["message"]
    setup(pack, results=[], command=False)  # nothing recorded at all: the wanted version is named
    assert 'no result of version "2" is recorded' in only(run("openai", server))["message"]


@byprovider
def test_auto_runs_a_new_version_and_replaces_the_old_entry(provider, pack, server):
    old = result_record(ASK, {"hits": [], "old": True}, "1", hashed=KEY)
    other = result_record({"query": "taxes", "country": "PT"}, {"hits": []}, "1",
                          hashed={"$.query": "taxes", "$.country": "PT"})
    setup(pack, results=[old, other])
    res = run(provider, server)  # live, tool_commands: auto by default
    assert res.exit_code == 0, res.output
    assert calls_logged(pack) == [ASK]
    entries = recording(pack)["tool_results"]
    assert [e for e in entries if e["args_hash"] == args_hash(KEY)] == [
        {"tool": "search_docs", "args_hash": args_hash(KEY), "arguments": ASK, "version": "2",
         "result": {"hits": HITS, "call": 1}}]
    assert other in entries  # another call's old entry stays until a new one replaces it
    # Now the recording answers at version 2: no command runs.
    assert only(run(provider, server))["status"] == "pass" and len(calls_logged(pack)) == 1


def test_a_trajectory_recorded_at_another_version_is_not_replayed(pack, server):
    setup(pack)
    assert run("openai", server, "--record").exit_code == 0
    assert only(invoke("recorded", None, "--json", key=False))["status"] == "pass"
    setup(pack, version='"3"')
    case = only(invoke("recorded", None, "--json", key=False))
    assert (case["status"], case["reason"]) == ("non_reproducible", "tool_result_not_recorded")
    assert 'the recorded trajectory used version "2", the tool now has version "3"' in case["message"]
    # --replay auto does not replay it either: the loop runs live, the tool runs again.
    res = run("openai", server, "--replay", "auto")
    assert res.exit_code == 0, res.output
    assert server.count() == 2 and len(calls_logged(pack)) == 2
    assert only(invoke("recorded", None, "--json", key=False))["status"] == "pass"


# ----------------------------------------------------------------------------- sanitizing


@byprovider
def test_a_secret_in_a_tool_result_never_reaches_the_recording(provider, pack, server):
    setup(pack)
    res = run(provider, server, "--record")
    assert res.exit_code == 0, res.output
    assert seen_by_model(server) == [{**PRODUCED, "call": 1}]  # the model got the full answer
    text = recording_path(pack).read_text("utf-8")
    assert SECRET not in text and "api_token" not in text
    doc = recording(pack)
    assert doc["tool_results"][0]["result"] == {"hits": HITS, "call": 1}
    assert doc["trajectory"][0]["tool_results"][0]["result"] == {"hits": HITS, "call": 1}
    # A replayed run (the model live, the tool answered from the recording) gets the sanitized one.
    case = only(run(provider, server, "--tool-replay", "strict", arguments=ASK_LATER))
    assert case["status"] == "pass" and seen_by_model(server) == [{"hits": HITS, "call": 1}]
    assert case["trajectory"][0]["calls"][0]["result"] == {"hits": HITS, "call": 1}


def test_keep_records_only_the_kept_paths(pack, server):
    setup(pack, sanitize="{keep: ['$.hits[*].title', $.call]}")
    res = run("openai", server)  # the model's responses are not recorded; the tool's result is
    assert res.exit_code == 0, res.output
    assert seen_by_model(server)[0]["api_token"] == SECRET
    doc = recording(pack)
    assert "trajectory" not in doc and "response" not in doc
    assert doc["tool_results"][0]["result"] == {"hits": [{"title": "Schengen visas"}], "call": 1}
    assert SECRET not in recording_path(pack).read_text("utf-8")


# ----------------------------------------------------------------------------- the tools' mode


@byprovider
def test_live_tools_are_recorded_as_first_needed_by_default(provider, pack, server):
    setup(pack, sanitize=None)
    res = run(provider, server)  # --replay off (the model is not recorded), tools auto
    assert res.exit_code == 0, res.output
    assert calls_logged(pack) == [ASK]
    doc = recording(pack)
    assert set(doc) == {"meta", "boundary", "tool_results"}
    assert doc["meta"]["provider"] == provider
    assert doc["tool_results"] == [{"tool": "search_docs", "args_hash": args_hash(KEY), "arguments": ASK,
                                    "version": "2", "result": {**PRODUCED, "call": 1}}]
    # The next run is answered from it; the offline run still replays the fixture (no trajectory).
    assert only(run(provider, server, arguments=ASK_LATER))["status"] == "pass"
    assert len(calls_logged(pack)) == 1
    offline = only(invoke("recorded", None, "--json", key=False))
    assert offline["reason"] == "recording_not_found" and "no recorded trajectory" in offline["message"]


def test_record_always_runs_and_overwrites_off_records_nothing(pack, server):
    setup(pack)
    assert run("openai", server).exit_code == 0  # auto: the first result is recorded
    first = recording(pack)
    assert run("openai", server, "--tool-replay", "record").exit_code == 0
    (entry,) = recording(pack)["tool_results"]
    assert entry["result"]["call"] == 2 and len(calls_logged(pack)) == 2
    before = recording_path(pack).read_text("utf-8")
    assert run("openai", server, "--tool-replay", "off").exit_code == 0
    assert len(calls_logged(pack)) == 3 and seen_by_model(server)[0]["call"] == 3
    assert recording_path(pack).read_text("utf-8") == before  # off writes nothing
    assert first["tool_results"][0]["result"]["call"] == 1
    # --record with tools off: the trajectory is recorded, the tool table keeps what it had.
    assert run("openai", server, "--record", "--tool-replay", "off").exit_code == 0
    doc = recording(pack)
    assert doc["trajectory"][0]["tool_results"][0]["result"]["call"] == 4
    assert [e["result"]["call"] for e in doc["tool_results"]] == [2]


def test_strict_never_runs_a_command_and_the_config_file_sets_the_mode(pack, server):
    setup(pack)
    case = only(run("openai", server, "--tool-replay", "strict"))
    assert case["reason"] == "tool_result_not_recorded"
    assert "runs only under --tool-replay auto, record or off" in case["message"]
    assert calls_logged(pack) == [] and not recording_path(pack).exists()
    (pack.root / ".replayci.yml").write_text("provider: recorded\ntool_replay_mode: strict\n", "utf-8")
    assert only(run("openai", server))["reason"] == "tool_result_not_recorded" and calls_logged(pack) == []
    assert only(run("openai", server, env={"REPLAYCI_TOOL_REPLAY": "auto"}))["status"] == "pass"
    assert only(run("openai", server, "--tool-replay", "record"))["status"] == "pass"  # the flag wins
    assert len(calls_logged(pack)) == 2
    result = replayci.run([str(pack.dir)], provider="openai", base_url=server.base_url_for("openai"),
                          tool_replay_mode="off", environ=live_env("openai"))
    assert result.cases[0].status == "pass" and len(calls_logged(pack)) == 3


@pytest.mark.parametrize("mode", ["auto", "record", "off"])
def test_a_recorded_run_never_runs_a_command(pack, server, mode):
    setup(pack)
    assert run("openai", server, "--record").exit_code == 0
    setup(pack, version='"3"')  # even when every recorded result is of an older version
    assert invoke("recorded", None, "--tool-replay", mode, key=False).exit_code == 1
    server.reset()
    res = invoke("openai", server, "--replay", "strict", "--tool-replay", mode)
    assert res.exit_code == 1 and server.count() == 0
    assert len(calls_logged(pack)) == 1


def test_the_docs_example_runs_as_written(pack, server):
    """The worked example of docs/scenarios.md: its contract, a search tool of that shape, two
    live runs with different timestamps, and the recording it shows."""
    text = (REPO / "docs" / "scenarios.md").read_text("utf-8")
    block = text.split("# packs/support/contracts/visa_answer.yaml\n", 1)[1].split("```", 1)[0]
    pack.contract("visa_answer", block.replace("python3 ", f"{sys.executable} "))
    (pack.dir / "tools").mkdir()
    (pack.dir / "tools" / "search_docs.py").write_text(SEARCH_PY, "utf-8")
    pack.fixture("visa_portugal.json", fixture(request("q:portugal", tools=[SEARCH], system=SYSTEM)))
    assert run("openai", server).exit_code == 0
    assert only(run("openai", server, arguments=ASK_LATER))["status"] == "pass"
    assert len(calls_logged(pack)) == 1
    (shown,) = json.loads(text.split('```json\n"tool_results": ', 1)[1].split("```", 1)[0])
    (entry,) = json.loads((pack.dir / "recordings" / "visa_answer" / "portugal.json").read_text())["tool_results"]
    assert {**entry, "result": {"hits": entry["result"]["hits"]}} == shown  # (the page omits "call")
