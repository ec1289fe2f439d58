"""Scenario loops driven live: the real CLI and SDKs against the fake server on
127.0.0.1, on both providers: the loop, tool results on the wire, strict and lenient misses,
the step limit, the sequence modes, tool_commands, --record then recorded, `replayci replay`."""
from __future__ import annotations

import json
import sys

import pytest
from builders import fixture, request
from click.testing import CliRunner
from fakeserver import Conversation, Fault, Reply, first_user_text, system_prompt_of, tool_results_of
from livecli import ENV_KEY, KEYS, MODELS, PROVIDERS, invoke, live_env, report_of

import replayci
from replayci.cli import cli
from replayci.core.hashing import args_hash, boundary_hashes
from replayci.engine.events import Handler
from replayci.engine.recordings import dumps

byprovider = pytest.mark.parametrize("provider", PROVIDERS)


def _tool(name: str, properties: dict, required: list[str]) -> dict:
    return {"type": "function", "function": {"name": name, "description": name.replace("_", " "), "parameters": {
        "type": "object", "properties": properties, "required": required, "additionalProperties": False}}}


TOOLS = [
    _tool("search_flights", {"origin": {"type": "string", "pattern": "^[A-Z]{3}$"},
                             "destination": {"type": "string", "pattern": "^[A-Z]{3}$"},
                             "date": {"type": "string"}}, ["origin", "destination", "date"]),
    _tool("book_hotel", {"city": {"type": "string"}, "check_in": {"type": "string"},
                         "nights": {"type": "integer", "minimum": 1}}, ["city", "check_in", "nights"]),
    _tool("get_weather", {"city": {"type": "string"}}, ["city"]),
]
SYSTEM = "You are an itinerary agent: search a flight, then book a hotel, then answer."
FLIGHT = {"origin": "LHR", "destination": "LIS", "date": "2026-12-04"}
FLIGHT_LATER = {"origin": "LHR", "destination": "LIS", "date": "2026-12-05"}
HOTEL = {"city": "Lisbon", "check_in": "2026-12-04", "nights": 2}
WEATHER = {"city": "Lisbon"}
ANSWER = "Booked flight TP1351 and Hotel Alfama, confirmation HLX-5521."


def record(tool: str, arguments: dict, result) -> dict:
    return {"tool": tool, "args_hash": args_hash(arguments), "arguments": arguments, "result": result}


RESULTS = [record("search_flights", FLIGHT, {"flight": "TP1351", "price_eur": 142}),
           record("search_flights", FLIGHT_LATER, {"flight": "TP1353", "price_eur": 99}),
           record("book_hotel", HOTEL, {"confirmation": "HLX-5521", "hotel": "Hotel Alfama"}),
           record("get_weather", WEATHER, {"forecast": "sunny"})]

F, F2, H, W = (Reply.tool_call("search_flights", FLIGHT), Reply.tool_call("search_flights", FLIGHT_LATER),
               Reply.tool_call("book_hotel", HOTEL), Reply.tool_call("get_weather", WEATHER))
DONE = Reply.plain_text(ANSWER)
GOOD = Conversation([F, H, DONE])
HOTEL_FIRST = Conversation([H, F, DONE])
TWO_SEARCHES = Conversation([F, F2, H, DONE])
WEATHER_TOO = Conversation([F, W, H, DONE])


def by_case(conversations: dict, default=GOOD):
    """The fake model: each case (its question q:<id>) gets its own conversation."""
    return lambda req: conversations.get((first_user_text(req) or "")[2:], default)


def contract_text(cases, *, mode="strict", tools="search_flights, book_hotel", max_steps=6,
                  tool_replay="strict", extra="", expect="tool: multi_tool_call\nexpect_tools: "
                  "[search_flights, book_hotel]") -> str:
    lines = [f"scenario: true\nmax_steps: {max_steps}\ntool_replay: {tool_replay}\n{expect}\n{extra}".rstrip(),
             "trajectory:", f"  tool_sequence: {{mode: {mode}, tools: [{tools}]}}",
             "  final_invariants:", '    - {path: "$.content", contains: "HLX-5521"}', "golden_cases:"]
    for case in cases:
        cid, error = case if isinstance(case, tuple) else (case, None)
        entry = f"  - {{id: {cid}, input_ref: {cid}.json, category: multi_step"
        if error:
            entry += f", expect_ok: false, expected_error: {error}"
        lines.append(entry + "}")
    return "\n".join(lines) + "\n"


def add_fixture(pack, cid: str, results=RESULTS) -> None:
    doc = fixture(request(f"q:{cid}", tools=TOOLS, system=SYSTEM))
    doc["tool_results"] = results
    pack.fixture(f"{cid}.json", doc)


def scenario_pack(pack, contract="trip", cases=("c",), *, results=RESULTS, **kw) -> None:
    pack.contract(contract, contract_text(cases, **kw))
    for case in cases:
        add_fixture(pack, case[0] if isinstance(case, tuple) else case, results)


def recording(pack, contract="trip", case="c") -> dict:
    return json.loads((pack.dir / "recordings" / contract / f"{case}.json").read_text("utf-8"))


def only_case(res) -> dict:
    (case,) = report_of(res)["cases"]
    return case


# ----------------------------------------------------------------------------- the loop


@byprovider
def test_a_passing_loop_sends_tool_results_in_the_providers_form(provider, pack, server):
    scenario_pack(pack)
    server.set_default(GOOD)
    res = invoke(provider, server, "--json")
    assert res.exit_code == 0, res.output
    case = only_case(res)
    assert (case["status"], case["attempts"]) == ("pass", 3)
    assert [[(c["tool"], c["result"]) for c in s["calls"]] for s in case["trajectory"]] == [
        [("search_flights", RESULTS[0]["result"])], [("book_hotel", RESULTS[2]["result"])], []]
    assert case["trajectory"][2]["content"] == ANSWER
    _, second, third = server.requests
    assert [len(tool_results_of(r)) for r in server.requests] == [0, 1, 2]
    body = second.body
    if provider == "openai":
        assistant, tool = body["messages"][-2:]
        (call,) = assistant["tool_calls"]
        assert assistant["role"] == "assistant" and call["function"]["name"] == "search_flights"
        assert json.loads(call["function"]["arguments"]) == FLIGHT
        assert tool == {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(RESULTS[0]["result"])}
        assert call["id"].startswith("call_") and len(call["id"]) == 29  # the provider's own id
    else:
        assistant, user = body["messages"][-2:]
        assert assistant["role"] == "assistant" and user["role"] == "user"
        (use,) = assistant["content"]
        assert use["type"] == "tool_use" and use["name"] == "search_flights" and use["input"] == FLIGHT
        assert use["id"].startswith("toolu_01")
        assert user["content"] == [{"type": "tool_result", "tool_use_id": use["id"],
                                    "content": json.dumps(RESULTS[0]["result"])}]
        assert all(m["role"] in ("user", "assistant") for m in third.body["messages"])
        assert body["system"] == SYSTEM
    # The conversation grows: the third request holds both turns and both results.
    assert [t["content"] for t in tool_results_of(third)] == [json.dumps(RESULTS[0]["result"]),
                                                              json.dumps(RESULTS[2]["result"])]
    assert not (pack.dir / "recordings").exists()  # --replay off (the default live) writes nothing


@byprovider
def test_a_strict_miss_is_tool_result_not_recorded(provider, pack, server):
    scenario_pack(pack, results=RESULTS[:2])
    server.set_default(GOOD)
    res = invoke(provider, server, "--json")
    assert res.exit_code == 1
    case = only_case(res)
    assert (case["status"], case["reason"]) == ("non_reproducible", "tool_result_not_recorded")
    assert "no recorded result for book_hotel(" in case["message"]
    assert f"(args_hash {args_hash(HOTEL)})" in case["message"]
    assert "tool_results" in case["message"] and "tool_replay: lenient" in case["message"]
    assert server.count() == 2  # the loop stopped at the miss
    assert "tool_result_not_recorded" in res.stderr and "book_hotel" in res.stderr


@byprovider
def test_a_lenient_miss_answers_no_recording_and_goes_on(provider, pack, server):
    scenario_pack(pack, results=RESULTS[:2], tool_replay="lenient")
    server.set_default(GOOD)
    res = invoke(provider, server, "--json")
    assert res.exit_code == 0, res.output
    case = only_case(res)
    assert case["status"] == "pass"
    assert case["trajectory"][1]["calls"][0]["result"] == {"error": "no recording"}
    assert tool_results_of(server.requests[2])[-1]["content"] == json.dumps({"error": "no recording"})
    assert server.count() == 3


@byprovider
def test_step_limit_and_repeated_calls_in_recorded_order(provider, pack, server):
    results = [record("search_flights", FLIGHT, {"flight": f"TP{n}"}) for n in (1, 2, 3)]
    loop_only = {"expect": "tool: search_flights", "tools": "search_flights", "mode": "superset"}
    scenario_pack(pack, results=results, max_steps=3, cases=[("c", "step_limit_exceeded")], **loop_only)
    server.set_default(Conversation({}, otherwise=F))  # the model never stops searching
    res = invoke(provider, server, "--json")
    assert res.exit_code == 0, res.output
    case = only_case(res)
    assert (case["status"], case["classification"]) == ("pass", "step_limit_exceeded")
    assert server.count() == 3
    # Identical calls get the recorded results in recorded order.
    assert [t["content"] for t in tool_results_of(server.requests[2])] == [json.dumps({"flight": "TP1"}),
                                                                          json.dumps({"flight": "TP2"})]
    assert [s["calls"][0]["result"] for s in case["trajectory"]] == [{"flight": f"TP{n}"} for n in (1, 2, 3)]
    # One more identical call than recorded results is a miss.
    pack.contract("trip", contract_text(["c"], max_steps=5, **loop_only))
    server.reset()
    case = only_case(invoke(provider, server, "--json"))
    assert (case["status"], case["reason"]) == ("non_reproducible", "tool_result_not_recorded")
    assert server.count() == 4


@byprovider
def test_each_sequence_mode_live(provider, pack, server):
    plans = {  # mode: (tools, passing conversation, failing conversation)
        "strict": ("search_flights, book_hotel", GOOD, HOTEL_FIRST),
        "unordered": ("book_hotel, search_flights", HOTEL_FIRST, TWO_SEARCHES),
        "subset": ("search_flights, book_hotel", TWO_SEARCHES, HOTEL_FIRST),
        "superset": ("book_hotel, search_flights", TWO_SEARCHES, WEATHER_TOO),
    }
    conversations = {}
    for mode, (tools, ok, bad) in plans.items():
        pack.contract(mode, contract_text([f"{mode}_ok", (f"{mode}_bad", "sequence_violation")], mode=mode,
                                          tools=tools))
        add_fixture(pack, f"{mode}_ok")
        add_fixture(pack, f"{mode}_bad")
        conversations[f"{mode}_ok"], conversations[f"{mode}_bad"] = ok, bad
    server.set_default(by_case(conversations))
    res = invoke(provider, server, "--json", "--jobs", "4")
    assert res.exit_code == 0, res.output
    cases = {c["case"]: c for c in report_of(res)["cases"]}
    assert len(cases) == 8 and all(c["status"] == "pass" for c in cases.values()), cases
    for mode in plans:
        assert cases[f"{mode}_ok"]["classification"] is None
        bad = cases[f"{mode}_bad"]
        assert bad["classification"] == "sequence_violation"
        assert f"tool_sequence {mode}" in bad["failures"][0]["message"]


@byprovider
def test_a_failed_model_call_ends_the_loop_as_unexpected_error(provider, pack, server):
    scenario_pack(pack)
    server.set_default(Conversation([F, Fault.status(400)]))
    res = invoke(provider, server, "--json", "--record")
    case = only_case(res)
    assert (case["status"], case["classification"]) == ("fail", "unexpected_error")
    assert "step 2: provider error" in case["failures"][0]["message"] and "HTTP 400" in case["failures"][0]["message"]
    assert server.count() == 2
    assert not (pack.dir / "recordings").exists()  # a broken run is not recorded
    assert "trajectory:" in res.stderr and "2. error:" in res.stderr


# ----------------------------------------------------------------------------- recording


@byprovider
def test_record_then_recorded_replays_the_trajectory(provider, pack, server):
    scenario_pack(pack)
    server.set_default(GOOD)
    res = invoke(provider, server, "--record", "--model", "model-x")
    assert res.exit_code == 0, res.output
    path = pack.dir / "recordings" / "trip" / "c.json"
    text = path.read_text("utf-8")
    doc = json.loads(text)
    assert text == dumps(doc)  # sorted keys, 2-space indent, trailing newline
    assert not [p.name for p in path.parent.iterdir() if p.name != "c.json"]  # no temp file left
    assert KEYS[provider] not in text and "raw" not in doc and "response" not in doc
    meta = doc["meta"]
    assert {k: meta[k] for k in ("pack_id", "contract", "case_id", "provider", "model")} == {
        "pack_id": "demo", "contract": "trip", "case_id": "c", "provider": provider, "model": "model-x"}
    assert isinstance(meta["latency_ms"], int) and meta["recorded_at"].endswith("+00:00")
    assert doc["boundary"] == {"model": "model-x", **boundary_hashes(request("q:c", tools=TOOLS, system=SYSTEM))}
    steps = doc["trajectory"]
    assert len(steps) == 3
    # Call ids rewritten over the whole run; each tool result points at its call.
    assert [[c["id"] for c in s["response"]["tool_calls"]] for s in steps] == [["call_1"], ["call_2"], []]
    assert [[r["call_id"] for r in s["tool_results"]] for s in steps] == [["call_1"], ["call_2"], []]
    assert steps[0]["tool_results"][0] == {"call_id": "call_1", "tool": "search_flights",
                                           "args_hash": args_hash(FLIGHT), "result": RESULTS[0]["result"]}
    assert steps[2]["response"]["content"] == ANSWER and steps[2]["response"]["stop_reason"] == "stop"
    assert steps[0]["response"]["usage"]["input_tokens"] > 0
    assert doc["tool_results"] == RESULTS  # every tool result, with its arguments
    # Offline: the recorded provider replays it step by step and passes.
    offline = invoke("recorded", None, "--json", key=False)
    assert offline.exit_code == 0, offline.output
    case = only_case(offline)
    assert case["status"] == "pass" and case["response_origin"].endswith("recordings/trip/c.json")
    assert case["response_source"] == "recording"
    live = only_case(res := invoke(provider, server, "--json", "--model", "model-x"))
    assert res.exit_code == 0 and live["fingerprint"] == case["fingerprint"]  # ids never enter it
    # auto: a matching recording (same provider and model) is replayed without a call...
    server.reset()
    assert invoke(provider, server, "--replay", "auto", "--model", "model-x").exit_code == 0
    assert server.count() == 0
    # ...another model's is not: the loop runs live and is recorded again.
    assert invoke(provider, server, "--replay", "auto", "--model", "model-y").exit_code == 0
    assert server.count() == 3 and recording(pack)["meta"]["model"] == "model-y"


@byprovider
def test_recordings_are_redacted(provider, pack, server):
    (pack.root / ".replayci.yml").write_text(
        "provider: recorded\nredact:\n  fields: ['$.trajectory[*].tool_results[*].result.confirmation',"
        " '$.tool_results[*].result.confirmation']\n", "utf-8")
    scenario_pack(pack)
    server.set_default(GOOD)
    assert invoke(provider, server, "--record", "--keep-raw").exit_code == 0
    text = (pack.dir / "recordings" / "trip" / "c.json").read_text("utf-8")
    assert '"HLX-5521"' not in text and '"[REDACTED]"' in text
    assert recording(pack)["trajectory"][1]["tool_results"][0]["result"]["confirmation"] == "[REDACTED]"
    raw = recording(pack)["raw"]  # --keep-raw: the provider's payload of every step
    assert len(raw) == 3 and all(("choices" if provider == "openai" else "content") in p for p in raw)
    assert KEYS[provider] not in text
    assert invoke("recorded", None, key=False).exit_code == 0


HOTEL_TOOL = """\
import json, os, sys
args = json.load(sys.stdin)
with open("hotel.log", "a") as log:
    log.write(json.dumps(args) + "\\n")
print(json.dumps({"confirmation": "CMD-" + args["city"][:3].upper(), "nights": args["nights"]}))
"""


@byprovider
def test_tool_commands_run_under_record_and_are_replayed_offline(provider, pack, server):
    (pack.dir / "tools").mkdir()
    (pack.dir / "tools" / "hotel.py").write_text(HOTEL_TOOL, "utf-8")
    command = json.dumps(f"{sys.executable} tools/hotel.py")  # run in the pack directory
    scenario_pack(pack, results=RESULTS[:1], extra=f"tool_commands:\n  book_hotel: {command}\n"
                  "timeouts: {tool_ms: 20000}")
    server.set_default(GOOD)
    log = pack.dir / "hotel.log"
    # --tool-replay strict: commands do not run; the miss is reported with the way out.
    case = only_case(invoke(provider, server, "--json", "--tool-replay", "strict"))
    assert (case["status"], case["reason"]) == ("non_reproducible", "tool_result_not_recorded")
    assert "runs only under --tool-replay auto, record or off" in case["message"] and not log.exists()
    # --record: the command runs once (JSON in, JSON out); its result reaches the model and the recording.
    server.reset()
    res = invoke(provider, server, "--json", "--record")
    assert res.exit_code == 0, res.output
    produced = {"confirmation": "CMD-LIS", "nights": 2}
    assert [json.loads(line) for line in log.read_text().splitlines()] == [HOTEL]
    assert tool_results_of(server.requests[2])[-1]["content"] == json.dumps(produced)
    doc = recording(pack)
    assert doc["tool_results"] == [RESULTS[0], record("book_hotel", HOTEL, produced)]
    assert doc["trajectory"][1]["tool_results"][0]["result"] == produced
    # recorded: replayed offline, no call, the command does not run again.
    server.reset()
    offline = invoke("recorded", None, "--json", key=False)
    assert offline.exit_code == 0, offline.output
    assert len(log.read_text().splitlines()) == 1 and server.count() == 0
    # off, live: the recorded result now answers the call, the command stays idle.
    res = invoke(provider, server, "--json")
    assert res.exit_code == 0, res.output
    assert len(log.read_text().splitlines()) == 1 and server.count() == 3


def test_a_failing_tool_command_is_a_result_not_a_crash(tmp_path):
    from replayci.engine.agent import run_tool_command

    assert run_tool_command(f"{sys.executable} -c 'import sys; sys.exit(3)'", {}, 5000)["error"].startswith(
        "tool command exited 3")
    assert "printed no JSON" in run_tool_command(f"{sys.executable} -c 'print(1/1, end=\"x\")'", {}, 5000)["error"]
    assert "timed out after 200 ms" in run_tool_command(
        f"{sys.executable} -c 'import time; time.sleep(5)'", {}, 200)["error"]
    assert "failed to start" in run_tool_command(str(tmp_path / "nope"), {}, 5000)["error"]
    assert "cannot be parsed" in run_tool_command("echo 'unclosed", {}, 5000)["error"]
    assert run_tool_command(f"{sys.executable} -c 'import json,sys; print(json.dumps(json.load(sys.stdin)))'",
                            {"a": [1, "é"]}, 5000) == {"a": [1, "é"]}


# ----------------------------------------------------------------------------- replayci replay

OTHER_PROMPT = "Book the hotel first, then the flight."


def fake_agent(req):
    """A model that books the hotel first when told to, and checks the weather when asked."""
    system = system_prompt_of(req) or ""
    if "weather" in system:
        return WEATHER_TOO
    return HOTEL_FIRST if system == OTHER_PROMPT else GOOD


def replay_cli(provider, server, *args, key=True, base=True):
    argv = ["replay", "demo/trip/c", "--no-color", *args]
    if base:
        argv += ["--base-url", server.base_url_for(provider)]
    return CliRunner().invoke(cli, argv, env=live_env(provider, key), catch_exceptions=False)


@byprovider
def test_replay_identical_with_no_overrides(provider, pack, server):
    scenario_pack(pack)
    server.set_default(fake_agent)
    assert invoke(provider, server, "--record").exit_code == 0
    server.reset()
    res = replay_cli(provider, server, "--json")  # the provider and model: the recorded ones
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["identical"] is True
    assert (doc["steps_delta"], doc["tool_sequence_diff"]) == (0, [])
    assert doc["output_diff"] == {"equal": True, "original": ANSWER, "replay": ANSWER}
    assert isinstance(doc["tokens_delta"], int) and isinstance(doc["duration_delta_ms"], int)
    assert doc["replay"]["provider"] == provider and doc["replay"]["model"] == MODELS[provider]
    assert doc["replay"]["verdict"]["status"] == doc["original"]["verdict"]["status"] == "pass"
    assert server.count() == 3
    assert "identical to the recording" in res.stderr
    assert replay_cli(provider, server, "--fail-on-diff").exit_code == 0
    # Nothing was re-recorded.
    assert recording(pack)["meta"]["model"] == MODELS[provider]


@byprovider
def test_replay_with_a_changed_system_prompt_shows_a_reordered_sequence(provider, pack, server):
    scenario_pack(pack)
    server.set_default(fake_agent)
    assert invoke(provider, server, "--record").exit_code == 0
    before = recording(pack)
    server.reset()
    res = replay_cli(provider, server, "--provider", provider, "--system-prompt", OTHER_PROMPT,
                     "--temperature", "0.7", "--model", "model-z", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["identical"] is False and doc["steps_delta"] == 0
    assert doc["tool_sequence_diff"] == [{"op": "reordered", "tool": "search_flights",
                                          "args_hash": args_hash(FLIGHT), "from": 0, "to": 1}]
    assert doc["output_diff"]["equal"] is True
    assert doc["overrides"] == {"provider": None, "model": "model-z", "system_prompt": OTHER_PROMPT,
                                "temperature": 0.7}
    assert doc["replay"]["verdict"] == {"status": "fail", "classification": "sequence_violation",
                                        "reason": doc["replay"]["verdict"]["reason"]}
    # On the wire: the new system prompt (the old one gone), the temperature, the model.
    for req in server.requests:
        assert system_prompt_of(req) == OTHER_PROMPT
        assert req.body["temperature"] == 0.7 and req.body["model"] == "model-z"
    # The frozen tools answered from the recording.
    assert tool_results_of(server.requests[1])[0]["content"] == json.dumps(RESULTS[2]["result"])
    text = res.stderr
    assert "reordered search_flights(" in text and "differs from the recording" in text
    assert "book_hotel → search_flights → answer" in text and "FAIL sequence_violation" in text
    assert recording(pack) == before  # replay never writes
    assert replay_cli(provider, server, "--system-prompt", OTHER_PROMPT, "--fail-on-diff").exit_code == 1


@byprovider
def test_replay_stops_at_a_call_the_recording_cannot_answer(provider, pack, server):
    scenario_pack(pack, results=RESULTS[:1] + RESULTS[2:3])
    server.set_default(fake_agent)
    assert invoke(provider, server, "--record").exit_code == 0
    server.reset()
    res = replay_cli(provider, server, "--system-prompt", "Also check the weather.")
    assert res.exit_code == 0, res.output
    assert "replay stopped: no recorded result for get_weather(" in res.stdout
    assert "tools are frozen" in res.stdout and "added get_weather(" in res.stdout
    assert server.count() == 2


@byprovider
def test_replay_errors_exit_2(provider, pack, server):
    scenario_pack(pack)
    pack.contract("single", "tool: get_weather\ngolden_cases:\n  - {id: s, input_ref: s.json}\n")
    pack.fixture("s.json", fixture(request("q:s")))
    server.set_default(fake_agent)
    # No recording and no trajectory in the fixture.
    res = replay_cli(provider, server, "--provider", provider)
    assert res.exit_code == 2 and "no recorded trajectory for demo/trip/c" in res.stderr
    assert invoke(provider, server, "--record", "--filter", "trip/*").exit_code == 0
    res = replay_cli(provider, server, key=False)
    assert res.exit_code == 2
    assert f"no API key for {provider}: set {ENV_KEY[provider]} (or REPLAYCI_PROVIDER_KEY)" in res.stderr
    for ref, message in [("demo/trip/x", "no case 'x' in demo/trip"), ("demo/tirp/c", "did you mean 'trip'"),
                         ("deom/trip/c", "did you mean 'demo'"), ("trip/c", "expected PACK/CONTRACT/CASE"),
                         ("demo/single/s", "is not a scenario contract")]:
        res = CliRunner().invoke(cli, ["replay", ref], env=live_env(provider))
        assert res.exit_code == 2 and message in res.stderr, (ref, res.output)
    res = CliRunner().invoke(cli, ["replay", "demo/trip/c", "--provider", "opneai"], env=live_env(provider))
    assert res.exit_code == 2 and "did you mean 'openai'" in res.output
    # A pack directory works as PACK too.
    res = replay_cli(provider, server, key=True)
    assert res.exit_code == 0
    res = CliRunner().invoke(cli, ["replay", "packs/demo/trip/c", "--base-url", server.base_url_for(provider)],
                             env=live_env(provider))
    assert res.exit_code == 0, res.output


# ----------------------------------------------------------------------------- offline extras


def test_expected_tool_calls_and_strict_match_apply_to_the_whole_trajectory(pack):
    def step(name, args, n, content=None):
        call = {"id": f"call_{n}", "name": name, "arguments": args, "arguments_raw": json.dumps(args)}
        calls = [call] if name else []
        return {"response": {"success": True, "tool_calls": calls, "content": content},
                "tool_results": [{"call_id": f"call_{n}", "tool": name, "args_hash": args_hash(args),
                                  "result": {}}] if name else []}

    header = """\
scenario: true
tool: multi_tool_call
expected_tool_calls:
  - name: book_hotel
    argument_invariants:
      - {path: $.nights, equals: 3}
golden_cases:
  - {id: c, input_ref: c.json}
"""
    pack.contract("trip", header)
    doc = fixture(request("q:c", tools=TOOLS, system=SYSTEM))
    doc["trajectory"] = [step("search_flights", FLIGHT, 1), step("book_hotel", HOTEL, 2), step(None, None, 3, ANSWER)]
    pack.fixture("c.json", doc)
    r = replayci.run([str(pack.dir)]).cases[0]
    assert r.classification == "argument_mismatch" and "book_hotel" in r.failures[0].message
    pack.contract("trip", header.replace("equals: 3", "equals: 2") + "tool_call_match_mode: strict\n")
    r = replayci.run([str(pack.dir)]).cases[0]
    assert r.classification == "wrong_tool" and "unexpected call to search_flights" in r.failures[0].message


def test_the_fixture_and_its_recording_never_serve_a_result_twice():
    from replayci.engine.agent import ToolTable

    fixture_records = RESULTS[:1]
    recorded = [RESULTS[0], record("search_flights", FLIGHT, {"flight": "second"})]
    table = ToolTable.merged(fixture_records, recorded)
    assert [table.take("search_flights", FLIGHT)[1] for _ in range(2)] == [RESULTS[0]["result"], {"flight": "second"}]
    assert table.take("search_flights", FLIGHT)[0] is False
    # On a tie the first source (the fixture, edited by hand) wins.
    table = ToolTable.merged([record("book_hotel", HOTEL, "edited")], [record("book_hotel", HOTEL, "old")])
    assert table.take("book_hotel", HOTEL)[1] == "edited"
    assert table.records() == [record("book_hotel", HOTEL, "edited")]


@byprovider
def test_ctrl_c_during_a_loop_skips_the_case(provider, pack, server):
    import threading
    import time

    from replayci import load_pack
    from replayci.config import resolve
    from replayci.engine.live import INTERRUPTED_REASON, LiveRunner
    from replayci.engine.runner import Item
    from replayci.pack.fixtures import load_fixture

    scenario_pack(pack)
    loaded = load_pack(pack.dir)
    contract = loaded.contracts[0]
    item = Item(loaded, contract, contract.cases[0])
    fx = load_fixture(item.case.fixture_path, item.case.fixture_display)
    stop = threading.Event()
    runner = LiveRunner(resolve({"provider": provider, "base_url": server.base_url_for(provider)}), Handler(), stop,
                        key=KEYS[provider])
    server.set_default(Conversation([F, Fault.rate_limit(retry_after=5)]))
    stopped_at = server.after(2, stop.set)  # Ctrl-C while the loop waits 5 s to retry
    result = runner.run_once(item, fx, time.perf_counter())
    runner.close()
    assert stopped_at and time.perf_counter() - stopped_at[0] < 2
    assert (result.status, result.reason, result.classification) == ("skipped", INTERRUPTED_REASON, None)
    assert server.count() == 2


def test_tool_command_output_is_bounded(tmp_path):
    from replayci.engine.agent import MAX_TOOL_OUTPUT, run_tool_command

    flood = tmp_path / "flood.py"  # prints without end: stopped at the limit, not read to the end
    flood.write_text("import sys\nwhile True:\n    sys.stdout.write('[' * 65536)\n")
    got = run_tool_command(f"{sys.executable} {flood}", {}, 20000)
    assert got == {"error": f"tool command printed more than {MAX_TOOL_OUTPUT:,} bytes"}
    noisy = tmp_path / "noisy.py"  # much on stderr, no stdin read, a result on stdout
    noisy.write_text("import sys, json\nsys.stderr.write('x' * 3_000_000)\nprint(json.dumps({'ok': 1}))\n")
    assert run_tool_command(f"{sys.executable} {noisy}", {"big": "y" * 2_000_000}, 20000) == {"ok": 1}
    echo = tmp_path / "echo.py"  # reads its arguments and answers with them
    echo.write_text("import sys, json\nprint(json.dumps(json.load(sys.stdin)))\n")
    arguments = {"city": "Paris", "n": [1, 2.5, None], "text": "é" * 100_000}
    assert run_tool_command(f"{sys.executable} {echo}", arguments, 20000) == arguments
    failing = tmp_path / "failing.py"
    failing.write_text("import sys\nsys.stderr.write('e' * 300_000)\nsys.exit(4)\n")
    error = run_tool_command(f"{sys.executable} {failing}", {}, 20000)["error"]
    assert error.startswith("tool command exited 4: eeee") and len(error) < 300


# ----------------------------------------------------------------------------- divergence

NO_WEATHER = [r for r in RESULTS if r["tool"] != "get_weather"]


@byprovider
def test_a_wrong_tool_mid_loop_fails_at_that_step_and_the_baseline_calls_it_new(provider, pack, server, tmp_path):
    scenario_pack(pack, results=NO_WEATHER)  # (the weather call has no recorded result: it was NR before)
    server.set_default(GOOD)
    base = tmp_path / "main.json"
    assert invoke(provider, server, "--report-json", str(base)).exit_code == 0
    server.reset()
    server.set_default(Conversation([F, W, H, DONE]))
    res = invoke(provider, server, "--json", "--baseline", str(base))
    assert res.exit_code == 1, res.output
    case = only_case(res)
    assert (case["status"], case["classification"]) == ("fail", "sequence_violation")
    first = case["failures"][0]
    assert first["message"].startswith("step 2: tool sequence ['search_flights', 'get_weather'] breaks "
                                       "tool_sequence strict") and "call 2 is get_weather, expected book_hotel" \
        in first["message"]
    assert first["path"] == "step2:$.trajectory[*].tool_calls[*].name"
    assert server.count() == 2  # the loop stopped: no result looked up, no third model call
    assert len(case["trajectory"]) == 2 and case["trajectory"][1]["calls"][0]["tool"] == "get_weather"
    assert case["trajectory"][1]["calls"][0]["result"] is None
    # Nothing of the whole run's end is reported beside it (no "never called", no final invariant).
    assert [f["kind"] for f in case["failures"]] == ["sequence_violation"]
    assert case["baseline"] == "new_failure"
    # `replayci regrade` judges the kept steps as the run stopped them: the same failure, no model call.
    assert case["diverged_at"] == 2
    report = tmp_path / "now.json"
    report.write_text(res.stdout, "utf-8")
    server.reset()
    again = CliRunner().invoke(cli, ["regrade", str(report), "--json"], env=live_env(provider),
                               catch_exceptions=False)
    (regraded,) = json.loads(again.stdout)["cases"]
    assert [(f["kind"], f["message"]) for f in regraded["failures"]] == [
        (f["kind"], f["message"]) for f in case["failures"]] and server.count() == 0


@byprovider
def test_a_dropped_required_argument_mid_loop_is_a_schema_violation_at_its_step(provider, pack, server):
    scenario_pack(pack, tool_replay="lenient")  # even a lenient loop stops at what the contract forbids
    server.set_default(Conversation([F, Reply.tool_call("book_hotel", {"city": "Lisbon", "check_in": "2026-12-04"}),
                                     DONE]))
    res = invoke(provider, server, "--json", "--record")
    assert res.exit_code == 1, res.output
    case = only_case(res)
    assert (case["status"], case["classification"]) == ("fail", "schema_violation")
    assert case["failures"][0]["message"].startswith("step 2: book_hotel: $ 'nights' is a required property")
    assert server.count() == 2
    assert not (pack.dir / "recordings").exists()  # a run stopped midway is never recorded


@byprovider
def test_a_step_invariant_broken_mid_loop_stops_the_loop(provider, pack, server):
    pinned = ("  step_invariants:\n    - step: 2\n      invariants:\n"
              "        - {path: '$.tool_calls[0].arguments.nights', equals: 2}\n")
    text = contract_text(["c"]).replace("golden_cases:", pinned + "golden_cases:")
    pack.contract("trip", text)
    add_fixture(pack, "c", RESULTS + [record("book_hotel", {**HOTEL, "nights": 3}, {"confirmation": "X"})])
    server.set_default(Conversation([F, Reply.tool_call("book_hotel", {**HOTEL, "nights": 3}), DONE]))
    case = only_case(invoke(provider, server, "--json"))
    assert (case["status"], case["classification"]) == ("fail", "invariant_violation")
    assert case["failures"][0]["message"].startswith("step 2: ") and case["failures"][0]["path"].startswith("step2:")
    assert server.count() == 2


@byprovider
def test_more_calls_than_max_tool_calls_stop_the_loop(provider, pack, server):
    scenario_pack(pack, mode="superset", extra="", tools="search_flights, book_hotel")
    text = (pack.dir / "contracts" / "trip.yaml").read_text("utf-8")
    pack.contract("trip", text.replace("trajectory:\n", "trajectory:\n  max_tool_calls: 2\n"))
    server.set_default(TWO_SEARCHES)  # F, F2, H: the third call is one too many
    case = only_case(invoke(provider, server, "--json"))
    assert (case["status"], case["classification"]) == ("fail", "invariant_violation")
    assert case["failures"][0]["message"] == "step 3: 3 tool calls, at most 2 (max_tool_calls)"
    assert server.count() == 3 and len(tool_results_of(server.requests[2])) == 2


@byprovider
def test_a_departure_the_contract_allows_is_still_not_recorded(provider, pack, server):
    scenario_pack(pack, mode="subset", results=[r for r in RESULTS if r["arguments"] != FLIGHT_LATER])
    server.set_default(TWO_SEARCHES)  # subset allows the second search; its result was never recorded
    case = only_case(invoke(provider, server, "--json"))
    assert (case["status"], case["reason"]) == ("non_reproducible", "tool_result_not_recorded")
    assert "no recorded result for search_flights(" in case["message"]
    assert server.count() == 2


FINAL = {"flight": "TP1351", "hotel": "Hotel Alfama"}
FINAL_TOOL = _tool("final_result", {"flight": {"type": "string"}, "hotel": {"type": "string"}}, ["flight", "hotel"])


@byprovider
def test_a_session_that_ended_on_an_output_tool_ends_there_live(provider, pack, server):
    pack.contract("trip", contract_text(["c"], tools="search_flights, final_result", expect="tool: search_flights")
                  .replace('contains: "HLX-5521"', 'exists: true').replace("$.content", "$.tool_calls[0]"))
    doc = fixture(request("q:c", tools=[*TOOLS, FINAL_TOOL], system=SYSTEM))
    doc["tool_results"] = RESULTS
    search = {"id": "call_1", "name": "search_flights", "arguments": FLIGHT, "arguments_raw": json.dumps(FLIGHT)}
    final = {"id": "call_2", "name": "final_result", "arguments": FINAL, "arguments_raw": json.dumps(FINAL)}
    doc["trajectory"] = [
        {"response": {"success": True, "tool_calls": [search], "content": None},
         "tool_results": [{"call_id": "call_1", "tool": "search_flights", "args_hash": args_hash(FLIGHT),
                           "result": RESULTS[0]["result"]}]},
        {"response": {"success": True, "tool_calls": [final], "content": None}, "tool_results": []}]
    pack.fixture("c.json", doc)
    assert invoke("recorded", None, key=False).exit_code == 0
    server.set_default(Conversation([F, Reply.tool_call("final_result", FINAL), DONE]))
    res = invoke(provider, server, "--json")
    assert res.exit_code == 0, res.output
    case = only_case(res)
    assert case["status"] == "pass" and [s["calls"][0]["tool"] for s in case["trajectory"]] == [
        "search_flights", "final_result"]
    assert server.count() == 2  # no result asked for, no further model call
    # The output tool's call is judged like any: a dropped field fails at the end of the loop.
    server.reset()
    server.set_default(Conversation([F, Reply.tool_call("final_result", {"flight": "TP1351"}), DONE]))
    case = only_case(invoke(provider, server, "--json"))
    assert (case["status"], case["classification"]) == ("fail", "schema_violation")
    assert "step 2: final_result: $ 'hotel' is a required property" in case["failures"][0]["message"]
    assert server.count() == 2


def _completion(name: str, arguments: dict, call_id: str) -> dict:
    return {"id": f"chatcmpl-{call_id}", "object": "chat.completion", "created": 1, "model": "gpt-4o-2024-08-06",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, "tool_calls": [
                    {"id": call_id, "type": "function",
                     "function": {"name": name, "arguments": json.dumps(arguments)}}]}}],
            "usage": {"prompt_tokens": 90, "completion_tokens": 20, "total_tokens": 110}}


@byprovider
def test_an_imported_session_ending_on_an_output_tool_is_pinned_and_ends_there_live(provider, pack, server, tmp_path):
    """pydantic-ai's loop: tool_choice required, a tool call, then its final_result output tool,
    whose result is never sent back. Imported, its scenario pins final_result's arguments."""
    from cassettes import interaction, write_cassette

    tools = [TOOLS[0], FINAL_TOOL]
    first = {"model": "gpt-4o", "tool_choice": "required", "tools": tools,
             "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "q:c"}]}
    second = json.loads(json.dumps(first))
    second["messages"] += [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_Ab1", "type": "function", "function": {"name": "search_flights",
                                                               "arguments": json.dumps(FLIGHT)}}]},
        {"role": "tool", "tool_call_id": "call_Ab1", "content": json.dumps(RESULTS[0]["result"])}]
    source = write_cassette(tmp_path / "agent.yaml", [
        interaction(first, _completion("search_flights", FLIGHT, "call_Ab1")),
        interaction(second, _completion("final_result", FINAL, "call_Cd2"))])
    res = CliRunner().invoke(cli, ["import", str(source), "--pack", str(pack.dir)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    (scenario,) = [p for p in (pack.dir / "contracts").glob("session_*.yaml")]
    text = scenario.read_text("utf-8")
    assert "tools:\n    - search_flights\n    - final_result" in text
    assert "path: $.tool_calls[0].arguments.hotel\n      equals: Hotel Alfama" in text
    server.set_default(Conversation([F, Reply.tool_call("final_result", FINAL), DONE]))
    res = invoke(provider, server, "--json", "--filter", f"{scenario.stem}/*")
    assert res.exit_code == 0, res.output
    assert only_case(res)["status"] == "pass" and server.count() == 2
    server.reset()
    server.set_default(Conversation([F, Reply.tool_call("final_result", {**FINAL, "hotel": "Hotel Baixa"}), DONE]))
    case = only_case(invoke(provider, server, "--json", "--filter", f"{scenario.stem}/*"))
    assert (case["status"], case["classification"]) == ("fail", "invariant_violation")
    assert case["failures"][0]["message"].startswith("step 2: $.tool_calls[0].arguments.hotel")
    assert server.count() == 2
