"""A golden case's own assertions, added to its contract's for that case only; if_present."""
from __future__ import annotations

import pytest
from builders import call, fixture, request, response

import replayci
from replayci.core.errors import ConfigError

PER_CASE = """
tool: get_weather
assertions:
  output_invariants:
    - {path: $.tool_calls, length_eq: 1}
golden_cases:
  - id: paris
    input_ref: paris.json
    assertions:
      expected_tool_calls:
        - name: get_weather
          argument_invariants:
            - {path: $.location, equals: Paris}
  - id: berlin
    input_ref: berlin.json
    assertions:
      output_invariants:
        - {path: "$.tool_calls[0].arguments.location", equals: Berlin}
      input_invariants:
        - {path: "$.messages[-1].content", contains: Berlin}
  - id: plain
    input_ref: plain.json
"""


def _weather(city: str) -> dict:
    return response(call("get_weather", {"location": city}))


def _statuses(pack) -> dict:
    return {c.case: (c.status, c.classification) for c in replayci.run([str(pack.dir)]).cases}


def test_case_assertions_apply_to_their_case_only(pack):
    pack.contract("weather", PER_CASE)
    pack.fixture("paris.json", fixture(request("Weather in Paris?"), _weather("Paris")))
    pack.fixture("berlin.json", fixture(request("Weather in Berlin?"), _weather("Berlin")))
    pack.fixture("plain.json", fixture(request("Weather in Rome?"), _weather("Rome")))
    assert _statuses(pack) == {"paris": ("pass", None), "berlin": ("pass", None), "plain": ("pass", None)}


def test_each_kind_of_case_assertion_fails_its_case(pack):
    pack.contract("weather", PER_CASE)
    pack.fixture("paris.json", fixture(request("Weather in Paris?"), _weather("Lyon")))
    pack.fixture("berlin.json", fixture(request("Weather in Bonn?"), _weather("Bonn")))
    pack.fixture("plain.json", fixture(request("Weather in Rome?"), response(
        call("get_weather", {"location": "Rome"}), call("get_weather", {"location": "Rome"}, "call_2"))))
    result = {c.case: c for c in replayci.run([str(pack.dir)]).cases}
    assert result["paris"].classification == "argument_mismatch"
    berlin = result["berlin"]
    assert berlin.classification == "invariant_violation"
    assert {f.kind for f in berlin.failures} == {"invariant_violation", "input_violation"}
    # the contract's own invariant still runs for every case
    assert result["plain"].classification == "invariant_violation"


def test_case_assertions_are_checked_at_load_with_their_line(pack):
    pack.contract("weather", """
        tool: get_weather
        golden_cases:
          - id: c
            input_ref: c.json
            assertions:
              output_invariants:
                - {path: "$.tool_calls[", equals: 1}
              expected_tool_calls:
                - name: get_time
              unknown: 1
    """)
    pack.fixture("c.json", fixture(request(), _weather("Paris")))
    with pytest.raises(ConfigError) as err:
        replayci.load_pack(str(pack.dir))
    text = str(err.value)
    assert "weather.yaml:7:" in text and "invalid JSONPath" in text
    assert "weather.yaml:8:" in text and "expected call 'get_time' differs from tool 'get_weather'" in text
    assert "weather.yaml:10:" in text and "unknown" in text


OPTIONAL = """
tool: get_weather
expected_tool_calls:
  - name: get_weather
    argument_invariants:
      - {path: $.unit, equals: celsius, if_present: IF}
golden_cases:
  - id: c
    input_ref: c.json
"""


@pytest.mark.parametrize("args, if_present, status", [
    ({"location": "Paris"}, "true", "pass"),
    ({"location": "Paris", "unit": "celsius"}, "true", "pass"),
    ({"location": "Paris", "unit": "fahrenheit"}, "true", "fail"),
    ({"location": "Paris"}, "false", "fail"),
])
def test_if_present_makes_an_optional_argument_check_hold_when_absent(pack, args, if_present, status):
    pack.contract("weather", OPTIONAL.replace("IF", if_present))
    pack.fixture("c.json", fixture(request(), response(call("get_weather", args))))
    assert replayci.run([str(pack.dir)]).cases[0].status == status


def test_if_present_takes_a_boolean(pack):
    pack.contract("weather", OPTIONAL.replace("IF", "sometimes"))
    pack.fixture("c.json", fixture(request(), _weather("Paris")))
    with pytest.raises(ConfigError, match=r"weather.yaml:5:.*if_present.*true or false"):
        replayci.load_pack(str(pack.dir))
