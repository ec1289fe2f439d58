"""Classification order, verdicts and fingerprints, through the public API."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from builders import WEATHER_TOOLS, call, fixture, request, response

import replayci
from replayci.checks.failure import CLASSIFICATION_ORDER
from replayci.checks.response import STEPS

CONTRACT = """
tool: get_weather
assertions:
  output_invariants:
    - path: "$.tool_calls[0].arguments.location"
      equals: Paris
  input_invariants:
    - path: "$.messages[0].role"
      equals: system
golden_cases:
  - id: c
    input_ref: c.json
"""


def run_one(pack, resp, contract=CONTRACT, req=None, **case):
    pack.contract("weather", contract)
    pack.fixture("c.json", fixture(req or request(), resp))
    result = replayci.run([str(pack.dir)])
    assert len(result.cases) == 1
    return result.cases[0]


def test_clean_pass(pack):
    r = run_one(pack, response(call("get_weather", {"location": "Paris"})))
    assert (r.status, r.classification, r.failures) == ("pass", None, ())


@pytest.mark.parametrize("resp, classification", [
    ({"success": False, "error": {"type": "server_error", "status": 500, "message": "boom"}}, "unexpected_error"),
    (response(content="It is sunny."), "tool_not_invoked"),
    (response(call("get_time", {"timezone": "UTC"})), "wrong_tool"),
    (response(call("get_weather", '{"location": "Par')), "malformed_arguments"),
    (response(call("get_weather", '["Paris"]')), "malformed_arguments"),
    (response(call("get_weather", {"location": "Paris", "unit": "kelvin"})), "schema_violation"),
    (response(call("get_weather", {"location": 7})), "schema_violation"),
    (response(call("get_weather", {"location": "Lyon"})), "invariant_violation"),
])
def test_classification(pack, resp, classification):
    r = run_one(pack, resp)
    assert r.status == "fail"
    assert r.classification == classification
    assert r.failures[0].kind == classification


def test_input_violation_is_last(pack):
    req = request()
    req["messages"] = [m for m in req["messages"] if m["role"] != "system"]
    r = run_one(pack, response(call("get_weather", {"location": "Paris"})), req=req)
    assert r.classification == "input_violation"
    assert r.failures[0].path == "$.messages[0].role"


def test_all_failing_checks_reported_first_classifies(pack):
    # wrong unit (schema) and wrong city (invariant) and missing system message (input)
    req = request()
    req["messages"] = req["messages"][1:]
    r = run_one(pack, response(call("get_weather", {"location": "Lyon", "unit": "kelvin"})), req=req)
    kinds = [f.kind for f in r.failures]
    assert kinds == ["schema_violation", "invariant_violation", "input_violation"]
    assert r.classification == "schema_violation"


def test_after_provider_error_only_input_invariants_run(pack):
    req = request()
    req["messages"] = req["messages"][1:]
    r = run_one(pack, {"success": False, "error": {"type": "rate_limit", "status": 429, "message": "slow"}}, req=req)
    assert [f.kind for f in r.failures] == ["unexpected_error", "input_violation"]
    assert "429" in r.failures[0].message


def test_the_docs_list_the_classifications_in_their_order():
    page = (Path(__file__).resolve().parents[3] / "docs" / "classifications.md").read_text("utf-8")
    table = page.split("\n## ", 1)[0]
    rows = [line.split("|")[1:3] for line in table.splitlines() if re.match(r"\| \d+ \| `", line)]
    assert [int(n) for n, _ in rows] == list(range(1, len(CLASSIFICATION_ORDER) + 1))
    assert tuple(name.strip().strip("`") for _, name in rows) == CLASSIFICATION_ORDER


def test_every_single_response_classification_has_its_check():
    scenario_only = {"sequence_violation", "step_limit_exceeded"}
    judged = {"judge_violation"}  # needs the judge model: the engine adds it (engine/judging.py)
    assert set(STEPS) == set(CLASSIFICATION_ORDER) - scenario_only - judged


def test_no_call_skips_tool_checks_but_runs_invariants(pack):
    r = run_one(pack, response(content="sunny"))
    assert [f.kind for f in r.failures] == ["tool_not_invoked", "invariant_violation"]


def test_schema_failure_names_path_and_validator(pack):
    r = run_one(pack, response(call("get_weather", {"location": "Paris", "unit": "kelvin"})))
    f = r.failures[0]
    assert f.path == "get_weather:$.unit"
    assert f.operator == "enum"
    assert f.schema_path == "properties/unit/enum"


def test_every_declared_tool_call_is_schema_checked(pack):
    contract = CONTRACT.replace("tool: get_weather", "tool: get_weather\ntool_call_match_mode: lenient")
    r = run_one(pack, response(call("get_weather", {"location": "Paris"}), call("get_time", {}, "c2")),
                contract=contract)
    assert r.classification == "schema_violation"
    assert r.failures[0].path.startswith("get_time:")


def test_arguments_schema_overrides_request_schema(pack):
    contract = CONTRACT.replace("tool: get_weather", """tool: get_weather
arguments_schema:
  type: object
  properties: {location: {type: string, minLength: 6}}
  required: [location]""")
    r = run_one(pack, response(call("get_weather", {"location": "Paris"})), contract=contract)
    assert r.classification == "schema_violation"
    assert r.failures[0].operator == "minLength"


NEG = """
tool: get_weather
golden_cases:
  - id: c
    input_ref: c.json
    expect_ok: false
    {extra}
"""


def test_negative_case_detected(pack):
    r = run_one(pack, response(content="no"), contract=NEG.format(extra="expected_error: tool_not_invoked"))
    assert r.status == "pass" and r.classification == "tool_not_invoked"


def test_negative_case_not_detected(pack):
    r = run_one(pack, response(call("get_weather", {"location": "Paris"})),
                contract=NEG.format(extra="expected_error: tool_not_invoked"))
    assert r.status == "fail"
    assert r.reason.startswith("negative case was not detected")


def test_negative_case_other_classification(pack):
    r = run_one(pack, response(call("get_time", {"timezone": "UTC"})),
                contract=NEG.format(extra="expected_error: schema_violation"))
    assert r.status == "fail"
    assert r.reason == "expected schema_violation, got wrong_tool"


def test_negative_without_expected_error_passes_on_any_failure(pack):
    r = run_one(pack, response(call("get_time", {"timezone": "UTC"})), contract=NEG.format(extra=""))
    assert r.status == "pass" and r.classification == "wrong_tool"


MULTI = """
tool: multi_tool_call
expect_tools: [get_weather, get_time]
expected_tool_calls:
  - name: get_weather
    argument_invariants:
      - path: "$.location"
        equals: Paris
  - name: get_time
    argument_invariants:
      - path: "$.timezone"
        equals: Europe/Paris
tool_order: {order}
tool_call_match_mode: {mode}
pass_threshold: {threshold}
golden_cases:
  - id: c
    input_ref: c.json
"""


def multi(order="strict", mode="strict", threshold=1.0):
    return MULTI.format(order=order, mode=mode, threshold=threshold)


W = call("get_weather", {"location": "Paris"}, "a")
T = call("get_time", {"timezone": "Europe/Paris"}, "b")


def test_multi_pass(pack):
    assert run_one(pack, response(W, T), contract=multi()).status == "pass"


def test_multi_strict_order_broken(pack):
    r = run_one(pack, response(T, W), contract=multi())
    assert r.classification == "argument_mismatch"
    assert r.failures[0].operator == "tool_order"


def test_multi_any_order(pack):
    assert run_one(pack, response(T, W), contract=multi(order="any")).status == "pass"


def test_multi_missing_expected_tool(pack):
    r = run_one(pack, response(W), contract=multi())
    assert r.classification == "wrong_tool"
    assert "get_time" in r.failures[0].message


def test_multi_strict_mode_extra_tool(pack):
    tools = WEATHER_TOOLS + [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]
    r = run_one(pack, response(W, T, call("search", {}, "c")), contract=multi(), req=request(tools=tools))
    assert r.classification == "wrong_tool"
    assert "unexpected call to search" in r.failures[0].message


def test_multi_strict_mode_too_many_calls(pack):
    r = run_one(pack, response(W, T, call("get_weather", {"location": "Paris"}, "c")), contract=multi())
    assert r.classification == "wrong_tool"
    assert r.failures[0].operator == "strict_count"


def test_multi_lenient_mode_allows_extra_calls(pack):
    r = run_one(pack, response(W, T, call("get_weather", {"location": "Rome"}, "c")),
                contract=multi(mode="lenient"))
    assert r.status == "pass"


def test_argument_mismatch_and_threshold(pack):
    wrong_t = call("get_time", {"timezone": "UTC"}, "b")
    r = run_one(pack, response(W, wrong_t), contract=multi())
    assert r.classification == "argument_mismatch"
    assert r.failures[0].path == "$.timezone"
    assert 'got "UTC"' in r.failures[0].message
    pack2 = run_one(pack, response(W, wrong_t), contract=multi(threshold=0.5))
    assert pack2.status == "pass"


def test_single_tool_strict_match_mode(pack):
    contract = CONTRACT.replace("tool: get_weather", "tool: get_weather\ntool_call_match_mode: strict")
    r = run_one(pack, response(W, call("get_weather", {"location": "Paris"}, "z")), contract=contract)
    assert r.classification == "wrong_tool"


def test_fingerprint_same_failure_pattern_across_cases(pack):
    pack.contract("weather", """
tool: get_weather
golden_cases:
  - {id: one, input_ref: one.json}
  - {id: two, input_ref: two.json}
  - {id: three, input_ref: three.json}
""")
    kelvin = call("get_weather", {"location": "Paris", "unit": "kelvin"})
    rankine = call("get_weather", {"location": "Oslo", "unit": "rankine"})
    pack.fixture("one.json", fixture(request("Paris?"), response(kelvin)))
    pack.fixture("two.json", fixture(request("Oslo?"), response(rankine)))
    pack.fixture("three.json", fixture(request("Oslo?"), response(content="sunny")))
    a, b, c = replayci.run([str(pack.dir)]).cases
    assert a.fingerprint == b.fingerprint
    assert a.fingerprint != c.fingerprint
    again = replayci.run([str(pack.dir)]).cases
    assert [r.fingerprint for r in again] == [a.fingerprint, b.fingerprint, c.fingerprint]


def test_pass_fingerprint_ignores_call_ids_and_usage(pack):
    pack.contract("weather", """
tool: get_weather
golden_cases:
  - {id: one, input_ref: one.json}
""")
    resp = response(call("get_weather", {"location": "Paris"}, "call_abc"))
    pack.fixture("one.json", fixture(request(), resp))
    first = replayci.run([str(pack.dir)]).cases[0].fingerprint
    resp = response(call("get_weather", {"location": "Paris"}, "call_xyz"))
    resp["usage"] = {"prompt_tokens": 5, "completion_tokens": 3}
    pack.fixture("one.json", fixture(request(), resp))
    assert replayci.run([str(pack.dir)]).cases[0].fingerprint == first
    pack.fixture("one.json", fixture(request(), response(call("get_weather", {"location": "Rome"}))))
    assert replayci.run([str(pack.dir)]).cases[0].fingerprint != first


def test_fingerprint_is_stable_across_machines(pack):
    # The fingerprint is a function of structure only: pinned here so a change is noticed.
    r = run_one(pack, response(content="sunny"))
    assert r.fingerprint == replayci.run([str(pack.dir)]).cases[0].fingerprint
    from replayci.core.hashing import short_hash
    assert r.fingerprint == short_hash({"contract": "weather", "classification": "tool_not_invoked",
                                        "checks": [list(f.key()) for f in r.failures]})


def test_check_response_on_raw_sdk_payloads(pack):
    pack.contract("weather", CONTRACT)
    pack.fixture("c.json", fixture(request(), None))
    contract = replayci.load_pack(pack.dir).contracts[0]
    openai_payload = {"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini", "choices": [
        {"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None,
         "tool_calls": [{"id": "call_9", "type": "function",
                         "function": {"name": "get_weather", "arguments": "{\"location\":\"Paris\"}"}}]}}]}
    ok = replayci.check_response(contract, openai_payload, request=request())
    assert ok.status == "pass"
    anthropic_payload = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
                         "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                      "input": {"location": "Lyon"}}], "stop_reason": "tool_use"}
    bad = replayci.check_response(contract, anthropic_payload, request=request())
    assert bad.status == "fail" and bad.classification == "invariant_violation"
    assert 'got "Lyon"' in bad.failures[0].message


@pytest.mark.parametrize("mode", ["lenient", "strict"])
def test_a_call_to_a_tool_the_request_does_not_declare_is_wrong_tool(pack, mode):
    contract = CONTRACT.replace("tool: get_weather\n", f"tool: get_weather\ntool_call_match_mode: {mode}\n")
    r = run_one(pack, response(call("get_weather", {"location": "Paris"}), call("delete_account", {}, "call_2")),
                contract=contract)
    assert (r.status, r.classification) == ("fail", "wrong_tool")
    invented = [f for f in r.failures if f.operator == "undeclared_tool"]
    assert len(invented) == 1 and "delete_account is not a tool the request declares" in invented[0].message
    assert invented[0].path == "$.tool_calls[1].name"


def test_every_schema_error_is_in_the_json_report_and_the_terminal_shows_a_few(pack):
    from click.testing import CliRunner

    from replayci.cli import cli

    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {k: {"type": "integer"} for k in "abcdef"}}}}]
    pack.contract("weather", "tool: get_weather\ngolden_cases:\n  - {id: c, input_ref: c.json}\n")
    pack.fixture("c.json", fixture(request(tools=tools),
                                   response(call("get_weather", {k: "x" for k in "abcdef"}))))
    res = CliRunner().invoke(cli, ["--json", "--pack", str(pack.dir)])
    import json

    case = json.loads(res.stdout)["cases"][0]
    assert [f["classification"] if "classification" in f else f["kind"] for f in case["failures"]] == \
        ["schema_violation"] * 6
    terminal = CliRunner().invoke(cli, ["--pack", str(pack.dir), "--no-color"]).output
    assert "and 3 more (-v shows all)" in terminal


CASE_CHECKS = """
tool: get_weather
golden_cases:
  - id: paris
    input_ref: c.json
    assertions:
      output_invariants:
        - path: "$.tool_calls[0].arguments.location"
          equals: Paris
  - id: refuses
    input_ref: c.json
    expect_ok: false
    expected_error: wrong_tool
"""


def test_check_response_with_case_applies_that_cases_own_checks(pack):
    pack.contract("weather", CASE_CHECKS)
    pack.fixture("c.json", fixture(request(), None))
    contract = replayci.load_pack(pack.dir).contracts[0]
    lyon = response(call("get_weather", {"location": "Lyon"}))
    # Without case= only the contract's own checks run, and they do not look at the location.
    assert replayci.check_response(contract, lyon, request()).status == "pass"
    bad = replayci.check_response(contract, lyon, request(), case="paris")
    assert (bad.status, bad.classification, bad.case) == ("fail", "invariant_violation", "paris")
    assert bad.source.endswith("weather.yaml:3")  # the case's line in the contract
    paris = response(call("get_weather", {"location": "Paris"}))
    assert replayci.check_response(contract, paris, request(), case="paris").status == "pass"
    # A negative case: its expected_error is what passes, and a right answer fails it.
    wrong = response(call("get_time", {"timezone": "UTC"}))
    caught = replayci.check_response(contract, wrong, request(), case="refuses")
    assert (caught.status, caught.expect_ok, caught.expected_error) == ("pass", False, "wrong_tool")
    assert replayci.check_response(contract, paris, request(), case="refuses").status == "fail"
    # case_id= stays a label and changes no check.
    labelled = replayci.check_response(contract, lyon, request(), case_id="mine")
    assert (labelled.status, labelled.case) == ("pass", "mine")


def test_check_response_with_an_unknown_case_names_the_cases(pack):
    pack.contract("weather", CASE_CHECKS)
    pack.fixture("c.json", fixture(request(), None))
    contract = replayci.load_pack(pack.dir).contracts[0]
    with pytest.raises(ValueError) as err:
        replayci.check_response(contract, response(content="hi"), request(), case="pari")
    text = str(err.value)
    assert "'pari'" in text and "'paris'" in text and "'refuses'" in text
    assert "did you mean 'paris'?" in text


def test_a_tool_declared_without_parameters_is_declared(pack):
    """OpenAI and Gemini let a function omit its parameters: a call to it is a call to a
    declared tool, whatever its arguments (it has no schema to break)."""
    req = request(tools=[*WEATHER_TOOLS, {"type": "function", "function": {"name": "moon_phase",
                                                                          "description": "Tonight's moon."}}])
    r = run_one(pack, response(call("get_weather", {"location": "Paris"}), call("moon_phase", {}, "call_2")),
                req=req)
    assert (r.status, r.classification, r.failures) == ("pass", None, ())
    r = run_one(pack, response(call("get_weather", {"location": "Paris"}), call("sun_phase", {}, "call_2")),
                req=req)
    assert (r.status, r.classification) == ("fail", "wrong_tool")
    assert "sun_phase is not a tool the request declares (declared: get_time, get_weather, moon_phase)" \
        in r.failures[0].message


@pytest.mark.parametrize(("name", "shown"), [({"n": 1}, '{"n": 1}'), (["get_weather"], '["get_weather"]')])
def test_a_tool_name_the_model_sends_as_an_object_is_a_wrong_tool_not_a_crash(pack, name, shown):
    """What a model says is data: a call whose name is an object or an array is compared and
    reported as its JSON text."""
    pack.contract("weather", CONTRACT)
    pack.fixture("c.json", fixture(request(), None))
    contract = replayci.load_pack(pack.dir).contracts[0]
    payload = {"id": "chatcmpl-1", "object": "chat.completion", "choices": [
        {"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None,
         "tool_calls": [{"id": {"odd": True}, "type": "function",
                         "function": {"name": name, "arguments": "{\"location\":\"Paris\"}"}}]}}]}
    r = replayci.check_response(contract, payload, request=request())
    assert (r.status, r.classification) == ("fail", "wrong_tool")
    assert f"{shown} is not a tool the request declares" in " ".join(f.message for f in r.failures)
