"""Scenario contracts replayed offline: trajectories, sequences, limits, invariants."""
from __future__ import annotations

import json

import pytest
from builders import fixture, request
from click.testing import CliRunner

import replayci
from replayci.cli import cli
from replayci.core.hashing import args_hash

TOOLS = [
    {"type": "function", "function": {"name": "search_flights", "parameters": {
        "type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}}},
    {"type": "function", "function": {"name": "book_hotel", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "nights": {"type": "integer", "minimum": 1}},
        "required": ["city", "nights"]}}},
]
REQ = request("Plan Lisbon: a flight and 2 nights.", tools=TOOLS)


def call(name, args, n):
    return {"id": f"call_{n}", "name": name, "arguments": args, "arguments_raw": json.dumps(args)}


def step(*calls, content=None, results=()):
    return {"response": {"success": True, "tool_calls": list(calls), "content": content},
            "tool_results": [{"call_id": c["id"], "tool": c["name"], "args_hash": args_hash(c["arguments"]),
                              "result": r} for c, r in zip(calls, results, strict=True)]}


FLIGHT = call("search_flights", {"to": "LIS"}, 1)
HOTEL = call("book_hotel", {"city": "Lisbon", "nights": 2}, 2)
GOOD = [step(FLIGHT, results=[{"flight": "TP123"}]), step(HOTEL, results=[{"booking": "H9"}]),
        step(content="Booked flight TP123 and hotel H9.")]

CONTRACT = """
scenario: true
max_steps: {max_steps}
tool: multi_tool_call
expect_tools: [search_flights, book_hotel]
trajectory:
  tool_sequence: {{mode: {mode}, tools: {tools}}}
  max_tool_calls: 3
  final_invariants:
    - {{path: "$.content", contains: "Booked"}}
  step_invariants:
    - step: 1
      invariants:
        - {{path: "$.tool_calls[0].name", equals: search_flights}}
golden_cases:
  - {{id: trip, input_ref: trip.json, category: multi_step}}
"""


def scenario_case(pack, steps, mode="strict", tools="[search_flights, book_hotel]", max_steps=8):
    pack.contract("itinerary", CONTRACT.format(mode=mode, tools=tools, max_steps=max_steps))
    doc = fixture(REQ, None)
    doc["trajectory"] = steps
    pack.fixture("trip.json", doc)
    return replayci.run([str(pack.dir)]).cases[0]


def test_passing_trajectory(pack):
    r = scenario_case(pack, GOOD)
    assert r.status == "pass", r.failures
    assert [s["calls"][0]["tool"] for s in r.details["trajectory"][:2]] == ["search_flights", "book_hotel"]


@pytest.mark.parametrize("mode, tools, holds", [
    ("strict", "[search_flights, book_hotel]", True),
    ("strict", "[book_hotel, search_flights]", False),
    ("unordered", "[book_hotel, search_flights]", True),
    ("unordered", "[book_hotel]", False),
    ("subset", "[book_hotel]", True),
    ("subset", "[book_hotel, search_flights]", False),
    ("superset", "[search_flights, book_hotel, get_weather]", True),
    ("superset", "[search_flights]", False),
])
def test_sequence_modes(pack, mode, tools, holds):
    r = scenario_case(pack, GOOD, mode=mode, tools=tools)
    assert (r.status == "pass") is holds
    if not holds:
        assert r.classification == "sequence_violation"


def test_step_limit(pack):
    looping = [step(FLIGHT, results=[{}]), step(FLIGHT, results=[{}])]
    r = scenario_case(pack, looping, max_steps=2)
    kinds = [f.kind for f in r.failures]
    assert "step_limit_exceeded" in kinds
    assert r.classification == "wrong_tool"  # book_hotel never called ranks first


def test_trajectory_invariants(pack):
    no_booking = GOOD[:2] + [step(content="Done.")]
    r = scenario_case(pack, no_booking)
    assert r.classification == "invariant_violation"
    assert "contains" in r.failures[0].message


def test_every_step_is_schema_checked(pack):
    bad = [step(FLIGHT, results=[{}]), step(call("book_hotel", {"city": "Lisbon", "nights": 0}, 2), results=[{}]),
           step(content="Booked.")]
    r = scenario_case(pack, bad)
    assert r.classification == "schema_violation" and r.failures[0].message.startswith("step 2:")


def test_missing_trajectory_is_recording_not_found(pack):
    r = scenario_case(pack, None)
    assert (r.status, r.reason) == ("non_reproducible", "recording_not_found")


def test_failing_case_shows_its_trajectory(pack):
    scenario_case(pack, GOOD, tools="[book_hotel, search_flights]")
    out = CliRunner().invoke(cli, ["--no-color"]).output
    assert "sequence_violation" in out
    assert '1. search_flights({"to": "LIS"}) -> {"flight": "TP123"}' in out
    assert '3. answer: "Booked flight TP123 and hotel H9."' in out


def test_scenario_keys_are_validated(pack):
    pack.contract("itinerary", """
scenario: true
trajectory:
  tool_sequence: {mode: strikt, tools: [a]}
golden_cases:
  - {id: trip, input_ref: trip.json}
""")
    pack.fixture("trip.json", fixture(REQ, None))
    res = CliRunner().invoke(cli, [])
    assert res.exit_code == 2 and "did you mean 'strict'" in res.output and "itinerary.yaml:3:" in res.output
    pack.contract("itinerary", "max_steps: 3\ngolden_cases:\n  - {id: trip, input_ref: trip.json}\n")
    res = CliRunner().invoke(cli, [])
    assert res.exit_code == 2 and "add scenario: true" in res.output


def test_tool_commands_never_see_provider_keys(tmp_path, monkeypatch):
    import sys

    from replayci.engine.agent import run_tool_command

    script = tmp_path / "env.py"
    script.write_text("import json, os, sys\njson.load(sys.stdin)\n"
                      "print(json.dumps(sorted(k for k in os.environ if k.endswith('_KEY'))))\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-planted-secret-0000000000000000")
    monkeypatch.setenv("REPLAYCI_PROVIDER_KEY", "sk-planted-secret-0000000000000000")
    monkeypatch.setenv("HARMLESS_KEY", "x")
    seen = run_tool_command(f"{sys.executable} {script}", {}, 10000)
    assert seen == ["HARMLESS_KEY"]


def _judge(contract, *steps_calls):
    from replayci.checks.trajectory import judge_step

    previous = [{"response": {"success": True, "tool_calls": list(calls)}} for calls in steps_calls[:-1]]
    return judge_step(contract, len(steps_calls), REQ, {"success": True, "tool_calls": list(steps_calls[-1])},
                      previous)


@pytest.mark.parametrize(("mode", "tools", "ok", "bad", "why"), [
    ("strict", "[search_flights, book_hotel]", [[FLIGHT], [HOTEL]], [[HOTEL]], "call 1 is book_hotel, expected "
     "search_flights"),
    ("strict", "[search_flights]", [[FLIGHT]], [[FLIGHT], [FLIGHT]], "call 2 is search_flights, the list has 1"),
    ("unordered", "[book_hotel, search_flights]", [[HOTEL], [FLIGHT]], [[FLIGHT], [FLIGHT]],
     "search_flights called 2 times, listed 1"),
    ("superset", "[search_flights]", [[FLIGHT], [FLIGHT]], [[FLIGHT, HOTEL]], "book_hotel is not listed"),
    ("subset", "[book_hotel]", [[FLIGHT], [FLIGHT]], None, None),
])
def test_judge_step_per_sequence_mode(pack, mode, tools, ok, bad, why):
    from replayci.pack.loader import load_packs

    text = CONTRACT.format(mode=mode, tools=tools, max_steps=8).replace("max_tool_calls: 3", "max_tool_calls: 9")
    pack.contract("itinerary", text[:text.index("  step_invariants:")] + text[text.index("golden_cases:"):])
    pack.fixture("trip.json", fixture(REQ, None))
    contract = load_packs([str(pack.dir)])[0].contracts[0]
    for n in range(1, len(ok) + 1):
        assert _judge(contract, *ok[:n]) == [], (mode, n)
    if bad is None:
        return
    (failure,) = _judge(contract, *bad)
    assert failure.kind == "sequence_violation" and failure.operator == f"tool_sequence:{mode}"
    assert failure.message.startswith(f"step {len(bad)}: tool sequence ") and failure.message.endswith(why)


def test_judge_step_schema_undeclared_limit_and_step_invariants(pack):
    from replayci.pack.loader import load_packs

    pack.contract("itinerary", CONTRACT.format(mode="superset", tools="[search_flights, book_hotel, cancel]",
                                               max_steps=8))
    pack.fixture("trip.json", fixture(REQ, None))
    contract = load_packs([str(pack.dir)])[0].contracts[0]
    kinds = lambda failures: [(f.kind, f.message.split(":")[0]) for f in failures]  # noqa: E731
    assert kinds(_judge(contract, [HOTEL])) == [("invariant_violation", "step 1")]  # step 1 pins search_flights
    assert kinds(_judge(contract, [FLIGHT], [call("cancel", {}, 3)])) == [("wrong_tool", "step 2")]  # not offered
    assert kinds(_judge(contract, [FLIGHT], [call("book_hotel", {"city": "Lisbon"}, 3)])) == [
        ("schema_violation", "step 2")]
    assert kinds(_judge(contract, [FLIGHT], [HOTEL, HOTEL, HOTEL])) == [("invariant_violation", "step 2")]
    assert "4 tool calls, at most 3" in _judge(contract, [FLIGHT], [HOTEL, HOTEL, HOTEL])[0].message
    # A failed call is judged with the rest of the run, not here.
    from replayci.checks.trajectory import judge_step
    assert judge_step(contract, 1, REQ, {"success": False, "error": {"type": "x"}}, []) == []


def test_a_recorded_loop_that_ended_on_an_output_tool_at_max_steps_is_no_step_limit(pack):
    final = call("final_result", {"city": "Lisbon"}, 3)
    tools = [*TOOLS, {"type": "function", "function": {"name": "final_result", "parameters": {"type": "object"}}}]
    ended = {"response": {"success": True, "tool_calls": [final], "content": None}, "tool_results": []}
    steps = [step(FLIGHT, results=[{"flight": "TP123"}]), ended]
    pack.contract("itinerary", "scenario: true\nmax_steps: 2\ngolden_cases:\n  - {id: trip, input_ref: trip.json}\n")
    doc = fixture(request("Plan Lisbon.", tools=tools), None)
    doc["trajectory"] = steps
    pack.fixture("trip.json", doc)
    assert replayci.run([str(pack.dir)]).cases[0].status == "pass"
    steps[-1] = step(final, results=[{}])  # its result came back: the loop was cut by max_steps
    pack.fixture("trip.json", {**doc, "trajectory": steps})
    assert replayci.run([str(pack.dir)]).cases[0].classification == "step_limit_exceeded"
