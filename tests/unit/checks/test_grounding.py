"""grounded_numbers: the final text's numbers must come from tool results or request messages."""
from __future__ import annotations

import json
from decimal import Decimal

import pytest
from builders import PackBuilder, fixture, request, response

import replayci
from replayci.checks.grounding import numbers_in, stated_numbers
from replayci.core.hashing import args_hash


@pytest.mark.parametrize("text, numbers", [
    ("It costs 1,234.50 EUR", ["1,234.50"]),
    ("Flight TP1351 leaves at 14:30 on 2024-05-01", []),
    ("On May 3rd, 2025 or 3 May 2025 or 05/03/2025, at 9am", []),
    ("You are 2nd of 15 in the queue", ["15"]),
    ("Total: 42. Then 3.5 km.", ["42", "3.5"]),
    ("call_7 and v2 are ids; 5km is a distance", ["5"]),
])
def test_stated_numbers(text, numbers):
    assert [w for w, _ in stated_numbers(text)] == numbers


def test_numbers_compare_as_values():
    assert dict(stated_numbers("1,234.50"))["1,234.50"] == Decimal("1234.5")
    assert Decimal("1234.5") in numbers_in({"price": 1234.5})
    assert Decimal("1234.5") in numbers_in(["total 1234.50 EUR"])  # numbers inside strings count
    assert Decimal(40) in numbers_in({"temp": -40})


def tool_conversation(result: dict) -> dict:
    req = request("How much is the Lisbon hotel for 2 nights?")
    req["messages"] += [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": json.dumps(result)}]
    return req


GROUNDED = """
tool: get_weather
grounded_numbers: true
golden_cases:
  - {id: c, input_ref: c.json}
"""
NO_TOOL = GROUNDED.replace("tool: get_weather\n", "")


def run_text(tmp_path, text: str, contract: str = NO_TOOL):
    pack = PackBuilder(tmp_path)
    pack.contract("answer", contract)
    pack.fixture("c.json", fixture(tool_conversation({"price": 1234.5, "note": "city tax 3 EUR"}),
                                   response(content=text)))
    return replayci.run([str(pack.dir)]).cases[0]


def test_grounded_numbers_pass(tmp_path):
    r = run_text(tmp_path, "The hotel costs 1,234.50 EUR for 2 nights plus 3 EUR tax, booked for May 3rd.")
    assert r.status == "pass", r.failures


def test_an_ungrounded_number_fails_naming_each_number(tmp_path):
    r = run_text(tmp_path, "The hotel costs 1,299 EUR for 2 nights, 4.5 stars, flight TP1351.")
    assert r.status == "fail" and r.classification == "invariant_violation"
    (f,) = r.failures
    assert f.operator == "ungrounded_number" and f.actual == "1,299, 4.5"
    assert "1,299" in f.message and "4.5" in f.message


def test_without_the_setting_numbers_are_not_checked(tmp_path):
    r = run_text(tmp_path, "It costs 1,299 EUR.", contract=NO_TOOL.replace("grounded_numbers: true\n", ""))
    assert r.status == "pass"


def test_grounded_numbers_in_a_scenario_use_its_tool_results(tmp_path):
    pack = PackBuilder(tmp_path)
    pack.contract("trip", """
        scenario: true
        grounded_numbers: true
        tool: get_weather
        golden_cases:
          - {id: c, input_ref: c.json}
        """)
    first = {"id": "call_1", "name": "get_weather", "arguments": {"location": "Lisbon"},
             "arguments_raw": '{"location": "Lisbon"}'}
    steps = [{"response": {"success": True, "tool_calls": [first], "content": None},
              "tool_results": [{"call_id": "call_1", "tool": "get_weather",
                                "args_hash": args_hash(first["arguments"]), "result": {"temp": 21.5}}]},
             {"response": {"success": True, "tool_calls": [], "content": "It is 21.5 C, UV 7."}}]
    doc = fixture(request("Weather in Lisbon?"), None)
    doc["trajectory"] = steps
    pack.fixture("c.json", doc)
    r = replayci.run([str(pack.dir)]).cases[0]
    assert r.classification == "invariant_violation"
    assert [f.actual for f in r.failures] == ["7"]
