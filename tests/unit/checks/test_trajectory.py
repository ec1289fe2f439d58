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
