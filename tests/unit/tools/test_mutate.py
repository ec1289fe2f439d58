"""`replayci mutate`: mutants of passing responses, kill rates, survivor hints, negatives."""
from __future__ import annotations

import json
import re

import pytest
import yaml
from builders import WEATHER_TOOLS, call, fixture, request, response
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import replayci
from replayci.checks.schemas import validator_for
from replayci.cli import cli
from replayci.formats import normalize
from replayci.formats.canonical import fixture_response
from replayci.pack.model import Contract
from replayci.tools.mutate import KINDS, append_golden_cases, mutants_of


def invoke(*args):
    return CliRunner().invoke(cli, ["mutate", *args], catch_exceptions=False)


def mutate_json(*args) -> tuple[int, dict]:
    res = invoke("--json", *args)
    return res.exit_code, json.loads(res.stdout)


PARIS = response(call("get_weather", {"location": "Paris", "unit": "celsius"}))
PARIS_AND_TIME = response(call("get_weather", {"location": "Paris", "unit": "celsius"}),
                          call("get_time", {"timezone": "Europe/Paris"}, "call_2"))

WEAK = """
# A deliberately weak contract: it checks the tool name and nothing else.
tool: get_weather
arguments_schema: {type: object}   # any object will do

golden_cases:
  # one call
  - id: paris
    input_ref: paris.json

  # two calls, in the order the user asked
  - id: paris_and_time
    input_ref: paris_and_time.json

# trailing comment, must survive --write-negatives
timeouts:
  total_ms: 20000   # kept as is
"""

STRONG = """
tool: get_weather
tool_call_match_mode: strict
arguments_schema:
  type: object
  required: [location, unit]
  additionalProperties: false
  properties:
    location: {type: string, minLength: 2}
    unit: {type: string, enum: [celsius, fahrenheit]}
expected_tool_calls:
  - name: get_weather
    argument_invariants:
      - path: $.location
        equals: Paris
      - path: $.unit
        equals: celsius
golden_cases:
  - id: paris
    input_ref: paris.json
"""


@pytest.fixture
def weak(pack):
    pack.contract("weak", WEAK)
    pack.fixture("paris.json", fixture(request(), PARIS))
    pack.fixture("paris_and_time.json", fixture(request("Weather and time in Paris?"), PARIS_AND_TIME))
    return pack


@pytest.fixture
def strong(pack):
    pack.contract("strong", STRONG)
    pack.fixture("paris.json", fixture(request(), PARIS))
    return pack


def _survivors(report: dict, case: str | None = None) -> dict[str, str]:
    (c,) = report["contracts"]
    return {s["mutant"]: s["hint"] for s in c["survivors"] if case is None or s["case"] == case}


def test_weak_contract_survivors_and_hints(weak):
    code, report = mutate_json()
    assert code == 0
    (c,) = report["contracts"]
    assert (c["pack"], c["contract"]) == ("demo", "weak")
    assert 0 < c["killed"] < c["mutants"]
    hints = _survivors(report, "paris")
    assert hints["drop_optional:get_weather.unit"] == \
        "nothing checks $.unit of get_weather: dropping it went unnoticed"
    assert hints["drop_required:get_weather.location"] == \
        ("nothing checks $.location of get_weather: dropping it (required) went unnoticed; check it in the "
         'contract: expected_tool_calls: [{name: get_weather, argument_invariants: [{path: "$.location", '
         "exists: true}]}]")
    # a value of this response is checked in its case
    assert hints["value_change:get_weather.location"] == \
        ('nothing checks the value of $.location of get_weather: "Parit" instead of "Paris" went unnoticed'
         '; check it in this case: assertions: {expected_tool_calls: [{name: get_weather, argument_invariants: '
         '[{path: "$.location", equals: "Paris"}]}]}')
    # a value change stays inside the enum
    assert hints["value_change:get_weather.unit"] == \
        ('nothing checks the value of $.unit of get_weather: "fahrenheit" instead of "celsius" went unnoticed'
         '; it is optional: check it in this case: assertions: {expected_tool_calls: [{name: get_weather, '
         'argument_invariants: [{path: "$.unit", equals: "celsius", if_present: true}]}]}')
    assert hints["enum_outside:get_weather.unit"] == \
        ('nothing checks $.unit of get_weather against its enum: "CELSIUS" went unnoticed'
         '; it is optional: check it in the contract: expected_tool_calls: [{name: get_weather, '
         'argument_invariants: [{path: "$.unit", one_of: ["celsius", "fahrenheit"], if_present: true}]}]')
    assert hints["type_change:get_weather.location"].startswith(
        'nothing checks the type of $.location of get_weather: ["Paris"] (array) instead of "Paris" (string) '
        'went unnoticed; check it in the contract: expected_tool_calls: [{name: get_weather, ')
    assert hints["extra_call:get_weather"] == \
        "nothing limits the calls: a second get_weather call went unnoticed"
    assert hints["type_change:get_weather.unit"].endswith(
        '[{path: "$.unit", type: "string", if_present: true}]}]')
    # What the tool name check does catch never survives.
    for killed in ("text_instead_of_call", "rename:get_weather->get_time",
                   "rename_undeclared:get_weather->get_weather_undeclared", "invalid_json:get_weather",
                   "provider_error"):
        assert killed not in hints
    two = _survivors(report, "paris_and_time")
    assert two["reorder"] == \
        "nothing checks the order of the calls: get_time, get_weather (reversed) went unnoticed"
    assert "value_change:get_time.timezone" in two


def _paste(contract: dict, case: str, hint: str) -> None:
    """A survivor's hint pasted where it says it goes: the contract, or the case's assertions."""
    m = re.search(r"; (?:it is optional: )?check it in (the contract|this case): (.*)$", hint)
    assert m, hint
    where = contract if m[1] == "the contract" else next(c for c in contract["golden_cases"] if c["id"] == case)
    for key, value in yaml.safe_load(m[2]).items():
        if isinstance(value, dict):  # assertions: {output_invariants: [...]}
            for inner, entries in value.items():
                where.setdefault(key, {}).setdefault(inner, []).extend(entries)
        else:
            where.setdefault(key, []).extend(value)


def test_each_survivor_hint_says_where_it_goes_and_pasted_there_kills_its_mutant(weak):
    _, report = mutate_json()
    (c,) = report["contracts"]
    hinted = [(s["case"], s["mutant"], s["hint"]) for s in c["survivors"] if "check it in" in s["hint"]]
    kinds = {mutant.split(":")[0] for _, mutant, _ in hinted}
    assert {"drop_required", "enum_outside", "type_change", "value_change"} <= kinds, hinted
    # get_time is not the contract's tool: its hints read the call from the response
    assert any("get_time" in mutant and "$.tool_calls[?@.name == 'get_time'].arguments" in hint
               for _, mutant, hint in hinted), hinted
    contract = yaml.safe_load(WEAK)
    for case, _, hint in hinted:
        _paste(contract, case, hint)
    weak.contract("weak", yaml.safe_dump(contract, sort_keys=False))
    assert invoke("--no-color").exit_code == 0
    _, after = mutate_json()
    left = {(s["case"], s["mutant"]) for s in after["contracts"][0]["survivors"]}
    assert not left & {(case, mutant) for case, mutant, _ in hinted}, left


def test_weak_contract_terminal_output(weak):
    res = invoke("--no-color")
    assert res.exit_code == 0
    lines = res.stdout.splitlines()
    assert lines[0] == "replayci mutate · 1 pack · 1 contract · 2 passing cases mutated"
    head = next(line for line in lines if line.startswith("  demo/weak"))
    m = re.fullmatch(r"  demo/weak   (\d+) mutants   (\d+) killed +(\d+(\.\d)?)%", head)
    assert m and 0 < int(m[2]) < int(m[1]), head
    # a survivor of both cases is one line, naming the first case and how many more
    assert any(line.split()[:3] == ["paris", "+1", "drop_optional:get_weather.unit"] for line in lines)
    assert "nothing checks $.unit of get_weather: dropping it went unnoticed" in res.stdout
    assert lines[-1].startswith("  ") and "survived · kill rate" in lines[-1]
    verbose = invoke("--no-color", "-v")
    assert "paris_and_time  drop_optional:get_weather.unit" in verbose.stdout.replace("  +", "")
    assert "killed: wrong_tool" in verbose.stdout


def test_strong_contract_kills_every_mutant(strong):
    code, report = mutate_json("--min-kill-rate", "1")
    (c,) = report["contracts"]
    assert code == 0, c["survivors"]
    assert c["survivors"] == [] and c["killed"] == c["mutants"] > 10 and c["kill_rate"] == 1


def test_every_kind_is_generated_and_the_documents_stay_consistent():
    contract = Contract(id="c", file="", display="", rel_path="", tool="get_weather")
    req = request(tools=WEATHER_TOOLS)
    base = normalize(PARIS_AND_TIME)
    mutants = mutants_of(contract, req, base)
    assert {m.kind for m in mutants} == set(KINDS)
    assert [m.kind for m in mutants] == sorted((m.kind for m in mutants), key=KINDS.index)
    assert len({m.name for m in mutants}) == len(mutants)
    assert base == normalize(PARIS_AND_TIME)  # the base is never modified
    for m in mutants:
        for c in m.response["tool_calls"]:
            try:
                parsed = json.loads(c["arguments_raw"])
            except ValueError:
                assert m.kind == "invalid_json" and c["arguments"] == c["arguments_raw"]
            else:
                assert parsed == c["arguments"]
        # what --write-negatives writes normalizes back to the mutant
        assert normalize(fixture_response(m.response)) == m.response, m.name
    assert mutants_of(contract, req, base) == mutants  # deterministic


def _value_change(schema: dict, args: dict, key: str):
    tools = [{"type": "function", "function": {"name": "t", "parameters": schema}}]
    contract = Contract(id="c", file="", display="", rel_path="", tool="t")
    doc = normalize(response(call("t", args)))
    found = [m for m in mutants_of(contract, request(tools=tools), doc)
             if m.name == f"value_change:t.{key}"]
    if not found:
        return None
    new = found[0].response["tool_calls"][0]["arguments"]
    assert validator_for(schema).is_valid(new)
    return new[key]


def test_value_changes_stay_schema_valid():
    def obj(props: dict) -> dict:
        return {"type": "object", "properties": props}

    assert _value_change(obj({"c": {"type": "string", "pattern": "^[A-Z]{3}$"}}), {"c": "LHR"}, "c") == "LHS"
    assert _value_change(obj({"d": {"type": "string", "pattern": r"^20\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$"}}),
                         {"d": "2025-12-31"}, "d") == "2025-12-30"
    assert _value_change(obj({"n": {"type": "integer", "minimum": 1, "maximum": 9}}), {"n": 9}, "n") == 8
    assert _value_change(obj({"x": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}}), {"x": 1}, "x") == 0.5
    assert _value_change(obj({"s": {"type": "string", "minLength": 2, "maxLength": 2}}), {"s": "ab"}, "s") == "ac"
    assert _value_change(obj({"e": {"enum": ["a", "b"]}}), {"e": "b"}, "e") == "a"
    # no schema-valid change: no mutant
    assert _value_change(obj({"k": {"const": "only"}}), {"k": "only"}, "k") is None
    assert _value_change(obj({"e": {"enum": [3]}}), {"e": 3}, "e") is None


def test_write_negatives_pass_at_once_and_keep_the_contract_text(weak):
    path = weak.dir / "contracts" / "weak.yaml"
    before = path.read_text("utf-8")
    res = invoke("--no-color", "--write-negatives")
    assert res.exit_code == 0, res.output
    after = path.read_text("utf-8")
    # Only an insertion, at the end of golden_cases (before the comment that follows it).
    k = before.index("# trailing comment")
    assert after.startswith(before[:k]) and after.endswith(before[k:])  # every other byte unchanged
    inserted = after[k:len(after) - len(before) + k]
    assert before[:k].endswith("    input_ref: paris_and_time.json\n\n")
    assert "# trailing comment, must survive --write-negatives" in after
    assert "arguments_schema: {type: object}   # any object will do" in after
    assert inserted.startswith("  - id: paris.mutant.")
    assert "\n\n  - id: paris.mutant." in inserted  # blank lines between entries, like the others
    written = sorted(p.name for p in (weak.dir / "golden" / "negative").iterdir())
    assert written and all(n.startswith(("weak.paris.mutant.", "weak.paris_and_time.mutant.")) for n in written)
    assert "  packs/demo/contracts/weak.yaml: 5 negative cases added" in res.stdout
    assert re.search(r"\n      paris\.mutant\.provider_error +unexpected_error +"
                     r"packs/demo/golden/negative/weak\.paris\.mutant\.provider_error\.json\n", res.stdout)
    # one per classification caught (invalid JSON for get_time, a tool the contract does not
    # expect, is a schema_violation of get_time's declared schema)
    cases = yaml.safe_load(after)["golden_cases"]
    assert cases[:2] == yaml.safe_load(before)["golden_cases"]
    new = cases[2:]
    assert [c["expected_error"] for c in new] == \
        ["tool_not_invoked", "wrong_tool", "malformed_arguments", "unexpected_error", "schema_violation"]
    assert all(c["expect_ok"] is False and c["provider_modes"] == ["recorded"] for c in new)
    assert len(new) == len(written)
    expected = {c["expected_error"] for c in new}
    run = CliRunner().invoke(cli, ["--no-color"], catch_exceptions=False)
    assert run.exit_code == 0, run.output
    for cls in expected:
        assert f"(expected {cls})" in run.stdout
    # Again: nothing new, nothing overwritten.
    again = invoke("--no-color", "--write-negatives")
    assert again.exit_code == 0
    assert "no new negative case" in again.stdout
    assert path.read_text("utf-8") == after
    assert sorted(p.name for p in (weak.dir / "golden" / "negative").iterdir()) == written


def test_write_negatives_never_overwrites_a_fixture(weak):
    taken = weak.dir / "golden" / "negative" / "weak.paris.mutant.text_instead_of_call.json"
    taken.write_text("{}", "utf-8")
    res = invoke("--no-color", "--write-negatives")
    assert res.exit_code == 0
    assert taken.read_text("utf-8") == "{}"
    assert re.search(r"\n      paris\.mutant\.text_instead_of_call +tool_not_invoked +skipped: "
                     r"packs/demo/golden/negative/weak\.paris\.mutant\.text_instead_of_call\.json "
                     r"exists; not overwritten\n", res.stdout)
    assert "weak.yaml: 4 negative cases added" in res.stdout


@pytest.mark.parametrize("cases, newline", [
    ("golden_cases: [{id: paris, input_ref: paris.json}]\n", "\n"),
    ("golden_cases:\n- id: paris\n  input_ref: paris.json\n", "\n"),
    (("golden_cases:\n    -   id: paris\n        input_ref: paris.json\n        description: >-\n"
      "          folded\n          text\n\n\n"), "\n"),
    ("golden_cases:\r\n  - id: paris\r\n    input_ref: paris.json\r\n", "\r\n"),
])
def test_write_negatives_follows_the_list_style(pack, cases, newline):
    text = f"tool: get_weather{newline}{cases}"
    path = pack.contract("c", "")
    path.write_bytes(text.encode("utf-8"))
    pack.fixture("paris.json", fixture(request(), PARIS))
    res = invoke("--no-color", "--write-negatives")
    assert res.exit_code == 0, res.output
    after = path.read_bytes().decode("utf-8")
    assert after != text and after.startswith(text.split("paris.json")[0])
    if newline == "\r\n":
        assert "\n" not in after.replace("\r\n", "")
    run = CliRunner().invoke(cli, ["--no-color"], catch_exceptions=False)
    assert run.exit_code == 0, run.output
    assert "(expected wrong_tool)" in run.stdout


def test_append_golden_cases_to_an_empty_flow_list():
    entry = [("id", "x"), ("input_ref", "negative/x.json")]
    assert append_golden_cases("golden_cases: []  # none yet\nx: 1\n", [entry], "c.yaml") == \
        "golden_cases: [{id: x, input_ref: negative/x.json}]  # none yet\nx: 1\n"


def test_min_kill_rate_exit_code(weak):
    assert invoke("--no-color", "--min-kill-rate", "0.99").exit_code == 1
    assert invoke("--no-color", "--min-kill-rate", "0.1").exit_code == 0
    res = invoke("--no-color", "--min-kill-rate", "0.99")
    assert "below --min-kill-rate 0.99" in res.stdout and "1 contract below 0.99" in res.stdout
    bad = CliRunner().invoke(cli, ["mutate", "--min-kill-rate", "90"])
    assert bad.exit_code == 2


def test_json_shape_and_determinism(weak):
    code, first = mutate_json()
    assert code == 0
    assert set(first) == {"version", "contracts"} and first["version"] == 1
    for c in first["contracts"]:
        assert set(c) == {"pack", "contract", "mutants", "killed", "kill_rate", "survivors"}
        assert 0 <= c["kill_rate"] <= 1 and c["kill_rate"] == round(c["killed"] / c["mutants"], 4)
        assert len(c["survivors"]) == c["mutants"] - c["killed"]
        for s in c["survivors"]:
            assert set(s) == {"case", "mutant", "hint"} and "\n" not in s["hint"]
    assert invoke("--json").stdout == invoke("--json").stdout


def test_only_passing_positive_cases_are_mutated(pack):
    pack.contract("c", """
tool: get_weather
golden_cases:
  - id: ok
    input_ref: ok.json
  - id: broken
    input_ref: lyon.json
  - id: negative
    input_ref: negative/text.json
    expect_ok: false
""")
    pack.fixture("ok.json", fixture(request(), PARIS))
    pack.fixture("lyon.json", fixture(request(), response(content="sunny")))
    pack.fixture("negative/text.json", fixture(request(), response(content="sunny")))
    res = invoke("--no-color")
    assert res.exit_code == 0
    assert "broken: not mutated, the case is fail" in res.stdout
    _, report = mutate_json()
    assert {s["case"] for s in report["contracts"][0]["survivors"]} == {"ok"}


def test_recording_is_mutated_when_present(pack):
    pack.contract("c", "tool: get_weather\ngolden_cases:\n  - id: ok\n    input_ref: ok.json\n")
    pack.fixture("ok.json", fixture(request(), PARIS))
    pack.recording("c", "ok", {"meta": {}, **fixture(request(), response(call("get_weather", {"location": "Rome"})))})
    _, report = mutate_json()
    assert "drop_optional:get_weather.unit" not in _survivors(report)  # Rome has no unit
    assert '"Romf" instead of "Rome"' in _survivors(report)["value_change:get_weather.location"]


def test_config_errors_exit_2(weak):
    assert invoke("--pack", "packs/nope").exit_code == 2
    res = invoke("--filter", "nothing/*")
    assert res.exit_code == 2 and "no case matches --filter nothing/*" in res.stderr


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(-1e6, 1e6, allow_nan=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8)
prop_schemas = st.sampled_from([
    True, {}, {"type": "string"}, {"type": "string", "pattern": "^[a-z]*$"}, {"type": "integer", "minimum": 0},
    {"type": "number", "exclusiveMaximum": 5}, {"enum": ["a", "b", 1]}, {"const": 3}, {"type": "array"},
])


@settings(max_examples=80, deadline=None)
@given(args=st.dictionaries(st.text(min_size=1, max_size=6), json_values, max_size=4),
       props=st.dictionaries(st.text(min_size=1, max_size=6), prop_schemas, max_size=4),
       required=st.lists(st.text(min_size=1, max_size=6), max_size=2, unique=True))
def test_mutants_of_any_arguments_stay_consistent(args, props, required):
    schema = {"type": "object", "properties": props, "required": required}
    tools = [{"type": "function", "function": {"name": "t", "parameters": schema}},
             {"type": "function", "function": {"name": "u", "parameters": {"type": "object"}}}]
    contract = Contract(id="c", file="", display="", rel_path="", tool="t")
    base = normalize(response(call("t", args), call("u", {"k": 1}, "call_2")))
    mutants = mutants_of(contract, request(tools=tools), base)
    assert len({m.name for m in mutants}) == len(mutants)
    valid = validator_for(schema)
    for m in mutants:
        assert normalize(fixture_response(m.response)) == m.response, m.name
        if m.kind == "value_change" and valid.is_valid(args):
            assert valid.is_valid(m.response["tool_calls"][0]["arguments"]), m.name


def test_the_suggested_if_present_form_kills_and_lets_the_argument_be_left_out(pack):
    """The optional argument's hint, pasted into the contract, kills its mutants and still
    passes a response that leaves the argument out."""
    pack.contract("weak", WEAK)
    pack.fixture("paris.json", fixture(request(), PARIS))
    pack.fixture("paris_and_time.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    _, report = mutate_json()
    hint = _survivors(report, "paris")["enum_outside:get_weather.unit"]
    form = hint.split("; it is optional: check it in the contract: ", 1)[1]
    pack.contract("weak", WEAK.replace("golden_cases:", f"{form}\ngolden_cases:"))
    code, report = mutate_json()
    assert code == 0
    survivors = _survivors(report)
    assert "enum_outside:get_weather.unit" not in survivors
    assert [c.status for c in replayci.run([str(pack.dir)]).cases] == ["pass", "pass"]


CASE_CHECKED = """
tool: get_weather
arguments_schema: {type: object}
golden_cases:
  - id: paris
    input_ref: paris.json
    assertions:
      output_invariants:
        - path: $.tool_calls[0].arguments.location
          equals: Paris
        - path: $.tool_calls[0].arguments.unit
          one_of: [celsius, "6E123"]
      expected_tool_calls:
        - name: get_weather
          argument_invariants:
            - {path: $.unit, equals: celsius}
"""


def test_write_negatives_carry_their_parent_cases_assertions(pack):
    # The checks live in the case: a negative caught by them must carry them, or the next run fails.
    pack.contract("checked", CASE_CHECKED)
    pack.fixture("paris.json", fixture(request(), PARIS))
    res = invoke("--no-color", "--write-negatives")
    assert res.exit_code == 0, res.output
    cases = yaml.safe_load((pack.dir / "contracts" / "checked.yaml").read_text("utf-8"))["golden_cases"]
    parent = cases[0]
    new = cases[1:]
    assert "invariant_violation" in {c["expected_error"] for c in new}
    assert all(c["assertions"] == parent["assertions"] for c in new)
    run = CliRunner().invoke(cli, ["--no-color"], catch_exceptions=False)
    assert run.exit_code == 0, run.output
    result = replayci.run([str(pack.dir)])
    assert [c.status for c in result.cases] == ["pass"] * len(cases)


SCENARIO = """
scenario: true
tool: multi_tool_call
expect_tools: [get_weather]
trajectory:
  tool_sequence: {mode: strict, tools: [get_weather]}
golden_cases:
  - {id: loop, input_ref: loop.json, category: multi_step}
"""
PINNED = """  step_invariants:
    - step: 1
      invariants:
        - {path: "$.tool_calls[0].arguments.location", equals: Paris}
"""


def _loop_pack(pack, contract: str) -> None:
    from replayci.core.hashing import args_hash

    args = {"location": "Paris", "unit": "celsius"}
    doc = fixture(request())
    doc["trajectory"] = [
        {"response": response(call("get_weather", args)),
         "tool_results": [{"call_id": "call_1", "tool": "get_weather", "args_hash": args_hash(args),
                           "result": {"temp": 21}}]},
        {"response": response(content="It is 21 C in Paris."), "tool_results": []}]
    pack.contract("loop", contract)
    pack.fixture("loop.json", doc)


@pytest.mark.parametrize("pinned", [False, True])
def test_a_scenario_is_mutated_step_by_step(pack, pinned):
    """Each recorded step's answer is replaced by each of its mutants, the rest of the loop as
    recorded: the tool sequence kills a dropped or added call; only a step invariant kills a
    changed argument."""
    from replayci import config
    from replayci.tools.mutate import mutate

    _loop_pack(pack, SCENARIO.replace("golden_cases:", PINNED + "golden_cases:") if pinned else SCENARIO)
    (c,) = mutate(config.resolve({"packs": [str(pack.dir)], "filters": []})).contracts
    status = {o.mutant.name: o.status for o in c.outcomes}
    for name in ("step1.text_instead_of_call", "step1.extra_call:get_weather", "step1.provider_error",
                 "step2.extra_call:get_weather", "step2.provider_error"):
        assert status[name] == "killed", (name, status)
    changed = "step1.value_change:get_weather.location"
    assert status[changed] == ("killed" if pinned else "survived")
    assert {n for n, s in status.items() if s == "survived"} <= {changed, "step1.value_change:get_weather.unit",
                                                                   "step1.drop_optional:get_weather.unit"}
    assert [o.mutant.what for o in c.outcomes if o.mutant.name == changed][0].endswith("at step 1")
    # No negative case is written for a scenario (its fixture is the whole loop).
    res = invoke("--write-negatives")
    assert res.exit_code == 0, res.output
    assert "a scenario's negative cases are not written" in res.output
    assert not list((pack.dir / "golden").rglob("*mutant*"))
    assert replayci.run([str(pack.dir)]).ok


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda t: t[0]["response"]["tool_calls"][0].update(id={"odd": 1}), "pass"),
    (lambda t: t[0]["response"]["tool_calls"][0].update(id=["odd"]), "pass"),
    (lambda t: t[0]["tool_results"][0].update(call_id={"odd": 1}), "pass"),
    (lambda t: t[0]["response"]["tool_calls"][0]["function"].update(name={"odd": 1}),
     "trajectory step 1: tool call 1: the tool name must be a string, got object"),
])
def test_odd_ids_and_names_in_a_recorded_loop_never_make_a_case_an_error(pack, edit, expected):
    """A call id, or a result's call_id, that is no string is only an id (it answers no call); a
    call's name that is none is a pack error naming the step (as a fixture's own answer); never a
    case `error`."""
    _loop_pack(pack, SCENARIO)
    path = pack.dir / "golden" / "loop.json"
    doc = json.loads(path.read_text("utf-8"))
    edit(doc["trajectory"])
    path.write_text(json.dumps(doc), "utf-8")
    res = CliRunner().invoke(cli, ["--pack", str(pack.dir), "--no-color"], catch_exceptions=False)
    if expected == "pass":
        assert res.exit_code == 0 and "1/1 passed" in res.output, res.output
    else:
        assert res.exit_code == 2 and expected in res.output, res.output
