"""Hints that teach: a misplaced key, a path that matches nothing, an argument the tool cannot
have, a YAML scalar that is not the string the tool's schema wants."""
from __future__ import annotations

import json

import pytest
from builders import WEATHER_TOOLS, call, fixture, request, response, strict_and_fast
from click.testing import CliRunner

import replayci
from replayci.checks.failure import CLASSIFICATION_ORDER
from replayci.cli import cli
from replayci.core.errors import ConfigError


def _problems(pack) -> str:
    with pytest.raises(ConfigError) as err:
        replayci.load_pack(str(pack.dir))
    return str(err.value)


@pytest.mark.parametrize("key", ["output_invariants", "input_invariants", "expected_tool_calls"])
def test_a_case_assertion_directly_under_the_case_says_where_it_goes(pack, key):
    pack.contract("weather", f"""tool: get_weather
golden_cases:
  - id: c
    input_ref: c.json
    {key}: []
""")
    pack.fixture("c.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    text = _problems(pack)
    assert "weather.yaml:5:" in text and f"unknown key '{key}'" in text
    assert "put it under `assertions:`" in text
    assert "did you mean" not in text


def test_a_misspelt_key_still_gets_its_did_you_mean(pack):
    pack.contract("weather", "tool: get_weather\ngolden_cases:\n  - {id: c, input_ref: c.json, expect_okk: true}\n")
    pack.fixture("c.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    text = _problems(pack)
    assert "did you mean 'expect_ok'?" in text and "assertions:" not in text.split("unknown key")[1]


@pytest.mark.parametrize("path, hint", [
    ("$.toolcalls", "$.tool_calls"),
    ("$.tool_calls[0].nmae", "$.tool_calls[0].name"),
    ("$.tool_calls[0].argument.location", "$.tool_calls[0].arguments.location"),
    ("$['toolcalls'][0]", "$.tool_calls[0]"),
    ("$.tool_calls[-1].nmae", "$.tool_calls[-1].name"),
])
def test_a_path_that_matches_nothing_gets_a_did_you_mean(pack, path, hint):
    pack.contract("weather", f"""tool: get_weather
assertions:
  output_invariants:
    - path: "{path}"
      exists: true
    - path: "{path}"
      equals: 1
golden_cases:
  - {{id: c, input_ref: c.json}}
""")
    pack.fixture("c.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    [case] = replayci.run([str(pack.dir)]).cases
    assert len(case.failures) == 2
    for f in case.failures:
        assert f"did you mean '{hint}'?" in f.message


@pytest.mark.parametrize("path", ["$.zzz", "$.tool_calls[1].nmae", "$.tool_calls[-2].nmae",
                                  "$.tool_calls[0].name.nmae", "$.tool_calls[*].nmae"])
def test_no_did_you_mean_when_nothing_is_close_or_the_path_leaves_the_document(pack, path):
    pack.contract("weather", f"""tool: get_weather
assertions:
  output_invariants:
    - {{path: "{path}", exists: true}}
golden_cases:
  - {{id: c, input_ref: c.json}}
""")
    pack.fixture("c.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    [case] = replayci.run([str(pack.dir)]).cases
    assert case.status == "fail" and "did you mean" not in case.failures[0].message


ARGUMENT = """tool: get_weather
SCHEMA
expected_tool_calls:
  - name: get_weather
    argument_invariants:
      - {path: PATH, equals: VALUE, if_present: IF}
golden_cases:
  - {id: c, input_ref: c.json}
"""
OWN_SCHEMA = """arguments_schema:
  type: object
  additionalProperties: false
  properties: {location: {type: string}, unit: {type: string}}"""


def _argument_contract(pack, path, value="Paris", if_present="false", schema=""):
    pack.contract("weather", ARGUMENT.replace("SCHEMA", schema).replace("PATH", path)
                  .replace("VALUE", value).replace("IF", if_present))
    pack.fixture("c.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))


def _cli(*args):
    return CliRunner().invoke(cli, ["--no-color", *args] if args and args[0] != "validate" else [*args],
                              catch_exceptions=False)


@pytest.mark.parametrize("if_present", ["false", "true"])
def test_an_argument_the_contracts_schema_cannot_have_is_a_load_problem(pack, if_present):
    _argument_contract(pack, "$.locaton", if_present=if_present, schema=OWN_SCHEMA)
    text = _problems(pack)
    assert "weather.yaml:9:" in text
    assert "'locaton'" in text and "did you mean 'location'?" in text


@pytest.mark.parametrize("if_present", ["false", "true"])
def test_an_argument_the_requests_tool_cannot_have_is_a_problem_of_validate_and_run(pack, if_present):
    # the tool's schema is the one the fixture's request declares (additionalProperties: false)
    _argument_contract(pack, "$.locaton", if_present=if_present)
    for args in (["validate"], []):
        res = _cli(*args)
        assert res.exit_code == 2, res.output
        assert "weather.yaml:6:" in res.output and "'locaton'" in res.output
        assert "did you mean 'location'?" in res.output


def test_an_argument_the_schema_allows_is_no_problem(pack):
    _argument_contract(pack, "$.location", if_present="true")
    assert _cli("validate").exit_code == 0
    assert _cli().exit_code == 0
    # a schema that lets other arguments in (get_time's has no additionalProperties: false)
    pack.contract("weather", """tool: get_time
expected_tool_calls:
  - name: get_time
    argument_invariants:
      - {path: $.other, equals: x, if_present: true}
golden_cases:
  - {id: c, input_ref: c.json}
""")
    pack.fixture("c.json", fixture(request(), response(call("get_time", {"timezone": "UTC"}))))
    assert _cli("validate").exit_code == 0


def test_an_output_invariant_on_an_argument_is_checked_too(pack):
    pack.contract("weather", """tool: get_weather
assertions:
  output_invariants:
    - {path: "$.tool_calls[0].arguments.locaton", equals: Paris, if_present: true}
golden_cases:
  - {id: c, input_ref: c.json}
""")
    pack.fixture("c.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    res = _cli("validate")
    assert res.exit_code == 2 and "weather.yaml:4:" in res.output and "did you mean 'location'?" in res.output


@pytest.mark.parametrize("value, shown", [("6E123", "6e+123"), ("true", "true"), ("12", "12"),
                                          ("0.5", "0.5")])
def test_a_yaml_scalar_that_is_not_the_string_the_schema_wants_says_to_quote_it(pack, value, shown):
    _argument_contract(pack, "$.location", value=value, schema=OWN_SCHEMA)
    text = _problems(pack)
    assert "weather.yaml:9:" in text and "quote it" in text and "'location'" in text
    assert f"equals {shown} reads as a" in text
    # quoted, it is a string and no problem
    _argument_contract(pack, "$.location", value=f'"{value}"', schema=OWN_SCHEMA)
    replayci.load_pack(str(pack.dir))


def test_a_yaml_number_against_the_requests_string_argument_says_to_quote_it(pack):
    _argument_contract(pack, "$.location", value="6E123")
    res = _cli("validate")
    assert res.exit_code == 2 and "weather.yaml:6:" in res.output and "quote it" in res.output


@pytest.mark.parametrize("invariant, problem", [
    ("{path: $.location, one_of: [Paris, 12]}", True),  # any member of the list
    ("{path: $.location, not_equals: 12}", True),
    ("{path: $.location, contains: 12}", True),
    ("{path: $.location, one_of: [Paris, Lyon]}", False),
    ("{path: $.location, length_gte: 2}", False),  # not a value the argument is compared with
    ("{path: $.unit, equals: 12}", False),  # unit has no type in this schema
    ("{path: $.location.inner, equals: 12}", False),  # inside the argument, not the argument
])
def test_which_values_are_read_against_a_string_argument(pack, invariant, problem):
    schema = OWN_SCHEMA.replace("unit: {type: string}", "unit: {}")
    pack.contract("weather", f"""tool: get_weather
{schema}
expected_tool_calls:
  - name: get_weather
    argument_invariants:
      - {invariant}
golden_cases:
  - {{id: c, input_ref: c.json}}
""")
    pack.fixture("c.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    if problem:
        assert "quote it" in _problems(pack)
    else:
        replayci.load_pack(str(pack.dir))


def test_each_case_is_checked_against_its_own_fixtures_tools_with_and_without_the_fast_paths(pack):
    # Cases of one contract share the answer for the same tools; a case whose fixture declares
    # other tools, or that has invariants of its own, is checked for itself.
    loose = [{**t, "function": {**t["function"], "parameters": {
        **t["function"]["parameters"], "additionalProperties": True}}} for t in WEATHER_TOOLS]
    pack.contract("weather", """tool: get_weather
expected_tool_calls:
  - name: get_weather
    argument_invariants:
      - {path: $.locaton, equals: Paris, if_present: true}
golden_cases:
  - {id: c, input_ref: c.json}
  - {id: a, input_ref: a.json}
  - {id: b, input_ref: b.json}
  - {id: e, input_ref: e.json}
  - id: d
    input_ref: d.json
    assertions:
      expected_tool_calls:
        - name: get_weather
          argument_invariants:
            - {path: $.location, equals: 12, if_present: true}
""")
    for name, tools in (("a", None), ("b", None), ("c", loose), ("d", loose), ("e", loose)):
        pack.fixture(f"{name}.json", fixture(request(tools=tools), response(call("get_weather", {"location": "P"}))))

    def problems():
        with pytest.raises(ConfigError) as err:
            replayci.run([str(pack.dir)])
        return str(err.value)

    strict, fast = strict_and_fast(problems)
    assert fast == strict
    # a and b allow no other argument (c, d and e do); d's own invariant wants a quoted 12
    assert "'locaton'" in fast and "quote it" in fast


@pytest.mark.parametrize("path, says", [
    ("$.unit", "belongs under expected_tool_calls"),
    ("$.toolcalls", "did you mean 'tool_calls'?"),
    ("$.tool_calls[0].unit", "a tool call has no 'unit'"),
    ("$['unit']", "$.tool_calls[0].arguments['unit']"),
])
def test_validate_notes_an_output_path_no_normalized_response_can_match(pack, path, says):
    pack.contract("weather", f"""tool: get_weather
assertions:
  output_invariants:
    - {{path: "$.content", equals: null}}
    - {{path: "{path}", equals: celsius, if_present: true}}
golden_cases:
  - id: c
    input_ref: c.json
    assertions:
      output_invariants:
        - any_of: [{{path: "{path}", exists: true}}, {{path: "$.tool_calls[0].arguments.unit", exists: true}}]
""")
    pack.fixture("c.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    res = _cli("validate")
    assert res.exit_code == 0, res.output  # a note, not a problem
    notes = [line for line in res.output.splitlines() if line.startswith("  note:")]
    assert len(notes) == 2, res.output  # the contract's, and the case's inside any_of
    assert "weather.yaml:5: " in notes[0] and f"{path} can match nothing" in notes[0] and says in notes[0]
    assert "weather.yaml:11: " in notes[1]


def test_validate_notes_nothing_for_paths_a_response_can_have(pack):
    pack.contract("weather", """tool: get_weather
assertions:
  output_invariants:
    - {path: "$.tool_calls[0].arguments.unit", equals: celsius, if_present: true}
    - {path: "$['content']", equals: null}
    - {path: "$.tool_calls[*].name", equals: get_weather}
    - {path: "$.cost_usd", lte: 1, if_present: true}
    - {path: "$..unit", equals: celsius, if_present: true}
golden_cases:
  - {id: c, input_ref: c.json}
""")
    pack.fixture("c.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    res = _cli("validate")
    assert res.exit_code == 0 and "note:" not in res.output, res.output


def test_an_unknown_expected_error_lists_the_classifications_and_says_which_was_meant(pack):
    pack.contract("weather", """tool: get_weather
golden_cases:
  - {id: c, input_ref: c.json, expect_ok: false, expected_error: schema_error}
""")
    pack.fixture("c.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    text = _problems(pack)
    assert "weather.yaml:3:" in text and 'got "schema_error"' in text
    assert "expected a classification (" + ", ".join(CLASSIFICATION_ORDER) + ")" in text
    assert text.rstrip().endswith("did you mean 'schema_violation'?")


@pytest.mark.parametrize("written, meant", [("less_than", "lt"), ("greater_than_or_equal", "gte"),
                                            ("max_length", "length_lte"), ("pattern", "regex"),
                                            ("equal", "equals")])
def test_an_operator_named_as_other_tools_name_it_gets_a_did_you_mean(pack, written, meant):
    pack.contract("weather", f"""tool: get_weather
assertions:
  output_invariants:
    - {{path: $.cost_usd, {written}: 3}}
golden_cases:
  - {{id: c, input_ref: c.json}}
""")
    pack.fixture("c.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    text = _problems(pack)
    assert f"unknown operator '{written}'" in text and "expected one of contains, equals" in text
    assert text.rstrip().endswith(f"did you mean '{meant}'?")


@pytest.mark.parametrize("path", ["$.tool_calls[0].name", "$.tool_calls[?@.name == 'get_weather'].name"])
def test_an_unquoted_path_with_brackets_in_a_flow_mapping_says_to_quote_it(pack, path):
    pack.contract("weather", f"""tool: get_weather
assertions:
  output_invariants:
    - {{path: {path}, equals: get_weather}}
golden_cases:
  - {{id: c, input_ref: c.json}}
""")
    pack.fixture("c.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    text = _problems(pack)
    assert "weather.yaml:4:" in text and "invalid YAML" in text
    assert f"must be quoted: path: {json.dumps(path)}" in text
    # quoted as the hint says, it loads
    pack.contract("weather", f"""tool: get_weather
assertions:
  output_invariants:
    - {{path: {json.dumps(path)}, equals: get_weather}}
golden_cases:
  - {{id: c, input_ref: c.json}}
""")
    replayci.load_pack(str(pack.dir))


def test_a_schema_failure_names_the_rule_and_the_schema_it_breaks(pack):
    pack.contract("weather", """tool: get_weather
arguments_schema: {type: object, required: [location, unit]}
golden_cases:
  - {id: c, input_ref: c.json}
""")
    pack.fixture("c.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    [case] = replayci.run([str(pack.dir)]).cases
    assert case.failures[0].message == ("get_weather: $ 'unit' is a required property "
                                        "(rule #/required of the contract's arguments_schema)")
    pack.contract("weather", "tool: get_weather\ngolden_cases:\n  - {id: c, input_ref: c.json}\n")
    pack.fixture("c.json", fixture(request(), response(call("get_weather", {"location": "Paris", "unit": "K"}))))
    [case] = replayci.run([str(pack.dir)]).cases
    assert case.failures[0].message.endswith("(rule #/properties/unit/enum of get_weather's schema in the request)")
