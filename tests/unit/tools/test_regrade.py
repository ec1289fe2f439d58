"""`replayci regrade REPORT.json`: the responses a report kept, judged by the current contracts."""
from __future__ import annotations

import json

from builders import call, fixture, request, response
from click.testing import CliRunner

from replayci.cli.main import cli

WEATHER = """
tool: get_weather
golden_cases:
  - {id: paris, input_ref: paris.json}
  - {id: lyon, input_ref: lyon.json}
  - {id: missing, input_ref: missing.json}
"""
TIGHTER = WEATHER + """
assertions:
  output_invariants:
    - {path: "$.tool_calls[0].arguments.location", equals: Paris}
"""


def run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def weather_pack(pack):
    pack.contract("weather", WEATHER)
    pack.fixture("paris.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    pack.fixture("lyon.json", fixture(request("Weather in Lyon?"),
                                      response(call("get_weather", {"location": "Lyon"}))))
    pack.fixture("missing.json", fixture(request("Weather in Nice?"), None))
    (pack.dir / "nr-allowlist.json").write_text(json.dumps([{
        "contract_path": "contracts/weather.yaml", "case_id": "missing", "reason_code": "recording_not_found",
        "owner": "qa", "expiry_date": "2999-01-01", "rationale": "live only"}]))


def test_json_reports_keep_each_response(pack, project):
    weather_pack(pack)
    assert run("--report-json", "run.json").exit_code == 0
    cases = {c["case"]: c for c in json.loads((project / "run.json").read_text())["cases"]}
    assert cases["paris"]["response"]["tool_calls"][0]["arguments"] == {"location": "Paris"}
    assert "response" not in cases["missing"]


def test_regrade_applies_the_current_contract_without_a_model_call(pack, project):
    weather_pack(pack)
    assert run("--report-json", "run.json").exit_code == 0
    before = (project / "run.json").read_text()
    # The fixtures' responses change too: regrade judges what the report kept, not the files.
    pack.fixture("lyon.json", fixture(request("Weather in Lyon?"),
                                      response(call("get_weather", {"location": "Paris"}))))
    pack.contract("weather", TIGHTER)
    res = run("regrade", "run.json")
    assert res.exit_code == 1, res.output  # the tightened contract fails lyon: the gate fails
    assert (project / "run.json").read_text() == before  # never overwritten
    regraded = json.loads((project / "run.regraded.json").read_text())
    cases = {c["case"]: c for c in regraded["cases"]}
    assert (cases["paris"]["status"], cases["lyon"]["status"]) == ("pass", "fail")
    assert cases["lyon"]["classification"] == "invariant_violation"
    assert cases["lyon"]["failures"][0]["actual"] == '"Lyon"'
    assert (cases["missing"]["status"], cases["missing"]["allowlisted"]) == ("non_reproducible", True)
    assert regraded["summary"]["fail"] == 1 and regraded["summary"]["gates"]["pass_rate"]["passed"] is False
    assert regraded["run"]["regraded"]["from"] == "run.json" and regraded["run"]["regraded"]["cases"] == 2
    assert "demo/weather   lyon      FAIL" in res.stdout and "$.tool_calls[0].arguments.location" in res.stdout
    assert "re-graded 2 cases -> run.regraded.json" in res.stderr


def test_regrade_takes_the_report_flags(pack, project):
    weather_pack(pack)
    run("--report-json", "run.json")
    res = run("regrade", "run.json", "--json", "--junit", "r.xml", "--markdown", "r.md")
    assert res.exit_code == 0
    assert json.loads(res.stdout)["summary"]["pass"] == 2
    assert (project / "r.xml").exists() and (project / "r.md").exists()
    assert not (project / "run.regraded.json").exists()  # a report flag says where it goes
    res = run("regrade", "run.json", "--report-json", "new.json")
    assert res.exit_code == 0 and (project / "new.json").exists()


def test_regrade_never_overwrites_its_input(pack, project):
    weather_pack(pack)
    run("--report-json", "run.json")
    res = CliRunner().invoke(cli, ["regrade", "run.json", "--report-json", "./run.json"])
    assert res.exit_code == 2 and "never overwrites" in res.output


def test_a_file_that_is_not_a_report_is_a_usage_error(pack, project):
    weather_pack(pack)
    (project / "notes.json").write_text('{"hello": 1}')
    (project / "text.json").write_text("not json")
    for name, message in (("notes.json", "not a replayci JSON report"), ("text.json", "not JSON"),
                          ("nowhere.json", "cannot read it")):
        res = CliRunner().invoke(cli, ["regrade", name])
        assert res.exit_code == 2 and message in res.output, res.output
        assert "Traceback" not in res.output


def test_cases_that_are_gone_keep_their_outcome(pack, project):
    weather_pack(pack)
    run("--report-json", "run.json")
    pack.contract("weather", WEATHER.replace("  - {id: lyon, input_ref: lyon.json}\n", ""))
    res = run("regrade", "run.json", "--json")
    assert res.exit_code == 0
    assert "1 case of the report no longer exist in the packs" in res.stderr
    assert [c["case"] for c in json.loads(res.stdout)["cases"]] == ["paris", "lyon", "missing"]


def test_a_scenario_is_regraded_from_its_steps(project):
    """The example itinerary pack: its scenario cases judged again from the report alone."""
    import shutil
    from pathlib import Path

    shutil.copytree(Path(__file__).resolve().parents[3] / "packs" / "itinerary", project / "packs" / "itinerary")
    (project / ".replayci.yml").write_text("provider: recorded\n")
    assert run("--report-json", "run.json").exit_code == 0
    report = json.loads((project / "run.json").read_text())
    lisbon = next(c for c in report["cases"] if c["case"] == "lisbon_weekend")
    assert lisbon["steps"][0]["response"]["tool_calls"] and lisbon["steps"][0]["tool_results"]
    # The recordings go away: regrade needs only the report.
    shutil.rmtree(project / "packs" / "itinerary" / "recordings")
    contract = project / "packs" / "itinerary" / "contracts" / "plan_trip.yaml"
    contract.write_text(contract.read_text().replace("max_tool_calls: 3", "max_tool_calls: 1"))
    res = run("regrade", "run.json", "--json")
    cases = {c["case"]: c for c in json.loads(res.stdout)["cases"]}
    assert cases["lisbon_weekend"]["status"] == "fail", res.output
    assert cases["lisbon_weekend"]["latency_ms"] == lisbon["latency_ms"]


def test_a_report_keeps_responses_compactly_and_losslessly(project):
    """Keys at their default and an arguments_raw that is the compact JSON of the arguments are
    left out of the report; regrade restores them exactly."""
    from replayci.engine.results import compact_response, full_response
    from replayci.formats import normalize

    payloads = [
        {"choices": [{"message": {"tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"x":1,"é":"ü"}'}},
            {"id": "b", "type": "function", "function": {"name": "g", "arguments": '{"x": 1}'}},
            {"id": "c", "type": "function", "function": {"name": "h", "arguments": '{"x":'}},
            {"id": "d", "type": "function", "function": {"name": "i", "arguments": ""}}]},
            "finish_reason": "tool_calls"}], "model": "gpt-4o-mini"},
        {"type": "message", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {"b": 1, "a": 2}},
                                        {"type": "text", "text": "hi"}], "stop_reason": "tool_use"},
        {"success": False, "error": {"type": "rate_limit", "status": 429, "message": "slow down"}},
    ]
    for payload in payloads:
        doc = {**normalize(payload), "latency_ms": None, "cost_usd": 0.5}
        small = compact_response(doc)
        assert full_response(small) == doc
        assert json.loads(json.dumps(small)) == small
    kept = compact_response({**normalize(payloads[0]), "latency_ms": None, "cost_usd": None})
    assert [("arguments_raw" in c) for c in kept["tool_calls"]] == [False, True, True, True]
    assert "refusal" not in kept and "latency_ms" not in kept


def test_a_response_too_large_for_a_report_is_left_out(pack, project):
    weather_pack(pack)
    huge = response(call("get_weather", {"location": "Paris " * 20_000}))
    pack.fixture("paris.json", fixture(request(), huge))
    run("--report-json", "run.json")
    paris = json.loads((project / "run.json").read_text())["cases"][0]
    assert "response" not in paris and paris["response_omitted"] == "larger than 65,536 characters"
    assert (project / "run.json").stat().st_size < 20_000
    res = run("regrade", "run.json", "--json")
    assert res.exit_code == 0 and "1 passed or failed case carry no response (too large" in res.stderr
