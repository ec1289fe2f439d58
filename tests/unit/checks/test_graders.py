"""Composed invariants (any_of, all_of, not), scored contracts (weight, required, min_score)."""
from __future__ import annotations

import json

import pytest
from builders import PackBuilder, call, fixture, request, response

import replayci
from replayci.core.errors import ConfigError

PARIS = response(call("get_weather", {"location": "Paris", "unit": "celsius"}), content="It is 21 C")


def run_one(tmp_path, contract: str, resp=PARIS, req=None):
    pack = PackBuilder(tmp_path)
    pack.contract("weather", contract)
    pack.fixture("c.json", fixture(req or request(), resp))
    return replayci.run([str(pack.dir)]).cases[0]


COMPOSED = """
tool: get_weather
assertions:
  output_invariants:
    - any_of:
        - {path: "$.tool_calls[0].arguments.location", equals: London}
        - {path: "$.tool_calls[0].arguments.location", equals: %s}
    - all_of:
        - {path: "$.tool_calls[0].arguments.unit", equals: celsius}
        - {path: "$.tool_calls[0].arguments.location", regex: "^%s"}
    - not: {path: "$.tool_calls[0].arguments.unit", equals: fahrenheit}
golden_cases:
  - {id: c, input_ref: c.json}
"""


def test_any_of_all_of_and_not_hold_when_their_members_do(tmp_path):
    assert run_one(tmp_path, COMPOSED % ("Paris", "Par")).status == "pass"


def test_any_of_reports_every_member_when_none_holds(tmp_path):
    r = run_one(tmp_path, COMPOSED % ("Berlin", "Par"))
    assert r.status == "fail" and r.classification == "invariant_violation"
    (f,) = r.failures
    assert f.operator == "any_of"
    assert "London" in f.message and "Berlin" in f.message  # both members evaluated and named


def test_all_of_reports_each_failing_member_without_stopping_at_the_first(tmp_path):
    r = run_one(tmp_path, COMPOSED % ("Paris", "Lon"), resp=response(
        call("get_weather", {"location": "Paris", "unit": "kelvin"})))
    assert [f.operator for f in r.failures if f.kind == "invariant_violation"] == ["equals", "regex"]


def test_not_fails_when_its_member_holds(tmp_path):
    r = run_one(tmp_path, COMPOSED % ("Paris", "Par"), resp=response(
        call("get_weather", {"location": "Paris", "unit": "fahrenheit"})))
    ops = [f.operator for f in r.failures]
    assert "not" in ops and "fahrenheit" in r.failures[ops.index("not")].message


def test_a_composite_with_a_bad_member_or_key_is_a_config_error(tmp_path):
    pack = PackBuilder(tmp_path)
    pack.contract("weather", """
        tool: get_weather
        assertions:
          output_invariants:
            - any_of: [{path: "$.x", equalz: 1}]
            - all_of: []
            - {not: {path: "$.x", exists: true}, path: "$.y"}
        golden_cases:
          - {id: c, input_ref: c.json}
        """)
    pack.fixture("c.json", fixture(request(), PARIS))
    with pytest.raises(ConfigError) as exc:
        replayci.run([str(pack.dir)])
    text = str(exc.value)
    assert "unknown operator 'equalz'" in text
    assert "all_of takes a non-empty list" in text
    assert "a composite invariant takes one of" in text


def test_composites_work_in_input_invariants(tmp_path):
    r = run_one(tmp_path, """
        tool: get_weather
        assertions:
          input_invariants:
            - not: {path: "$.messages[-1].content", contains: Paris}
        golden_cases:
          - {id: c, input_ref: c.json}
        """)
    assert r.classification == "input_violation"


SCORED = """
tool: get_weather
min_score: %s
assertions:
  output_invariants:
    - {path: "$.tool_calls[0].arguments.location", equals: Paris}
    - {path: "$.tool_calls[0].arguments.unit", equals: fahrenheit, weight: 1, required: false}
    - {path: "$.content", contains: sunny, weight: 2, required: false}
golden_cases:
  - {id: c, input_ref: c.json}
"""


def test_a_scored_contract_passes_at_its_min_score_and_reports_the_score(tmp_path):
    r = run_one(tmp_path, SCORED % "0.25")
    assert r.status == "pass" and r.score == 0.25
    assert r.to_dict()["score"] == 0.25


def test_a_scored_contract_fails_below_its_min_score_naming_what_failed(tmp_path):
    r = run_one(tmp_path, SCORED % "0.5")
    assert r.status == "fail" and r.classification == "invariant_violation" and r.score == 0.25
    assert [f.operator for f in r.failures] == ["equals", "contains", "min_score"]
    assert "score 0.25 is below min_score 0.5" in r.failures[-1].message


def test_a_required_invariant_fails_the_case_whatever_the_score(tmp_path):
    resp = response(call("get_weather", {"location": "Rome", "unit": "fahrenheit"}), content="sunny")
    r = run_one(tmp_path, SCORED % "0.1", resp=resp)
    assert r.status == "fail" and r.score == 0.75
    assert [f.operator for f in r.failures] == ["equals"]


def test_without_min_score_every_invariant_must_hold_and_no_score_is_reported(tmp_path):
    r = run_one(tmp_path, (SCORED % "0").replace("min_score: 0\n", ""))
    assert r.status == "fail" and r.score is None and "score" not in r.to_dict()


def test_a_bad_weight_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="weight"):
        run_one(tmp_path, SCORED.replace("weight: 2", "weight: -1") % "0.5")


def test_the_score_is_in_every_report(tmp_path):
    from click.testing import CliRunner

    from replayci.cli.main import cli

    pack = PackBuilder(tmp_path)
    pack.contract("weather", SCORED % "0.25")
    pack.fixture("c.json", fixture(request(), PARIS))
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["run", "--pack", str(pack.dir), "-v", "--report-json", str(out / "r.json"),
                                   "--junit", str(out / "j.xml"), "--markdown", str(out / "r.md")])
    assert res.exit_code == 0, res.output
    assert json.loads((out / "r.json").read_text())["cases"][0]["score"] == 0.25
    assert 'name="score" value="0.25"' in (out / "j.xml").read_text()
    assert "0.25" in (out / "r.md").read_text()
    assert "score 0.25" in res.output


def test_the_published_contract_schema_accepts_composites_and_scoring():
    import jsonschema
    import yaml

    from replayci.pack.schema_gen import build

    validator = jsonschema.Draft202012Validator(build("contract"))
    doc = yaml.safe_load(COMPOSED % ("Paris", "Par"))
    doc["min_score"] = 0.5
    doc["grounded_numbers"] = True
    doc["assertions"]["output_invariants"][0]["weight"] = 2
    assert not list(validator.iter_errors(doc))
    doc["assertions"]["output_invariants"].append({"any_of": [], "weight": 1})
    assert list(validator.iter_errors(doc))
