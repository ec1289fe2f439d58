"""The rules users rely on, each pinned so that a one-character slip in it fails a test:
redaction of every match, the key scrub through three levels of JSON quoting, the allowlist's
last day, --fail-on-regression with passing gates, classification precedence (by what the
checks do, not by the order tuple) and the pass-rate denominator."""
from __future__ import annotations

import datetime
import json

import pytest
from builders import call, fixture, request, response
from click.testing import CliRunner

import replayci
from replayci.cli import cli
from replayci.engine.recordings import redact
from replayci.providers.errors import REDACTED, scrub


def invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


# ------------------------------------------------------------------ redaction: every match


@pytest.mark.parametrize("path", [
    "$.response.tool_calls[*].arguments.token",
    "$..token",
    "$.response.tool_calls[?@.name == 'login'].arguments.token",
])
def test_redact_fields_blank_every_value_a_path_matches(path):
    calls = [{"name": "login", "arguments": {"token": f"t{i}", "user": f"u{i}"}} for i in range(4)]
    doc = {"request": {"messages": []}, "response": {"tool_calls": calls, "content": "t0 stays"}}
    out = redact(doc, (path,))
    assert [c["arguments"]["token"] for c in out["response"]["tool_calls"]] == [REDACTED] * 4
    assert [c["arguments"]["user"] for c in out["response"]["tool_calls"]] == ["u0", "u1", "u2", "u3"]
    assert out["response"]["content"] == "t0 stays"
    assert doc["response"]["tool_calls"][3]["arguments"]["token"] == "t3"  # the input is not changed


def test_every_redact_path_applies_not_only_the_first():
    doc = {"a": [{"x": 1}, {"x": 2}], "b": {"y": [3, 4]}}
    out = redact(doc, ("$.a[*].x", "$.b.y[*]"))
    assert out == {"a": [{"x": REDACTED}, {"x": REDACTED}], "b": {"y": [REDACTED, REDACTED]}}


# ------------------------------------------------------------------ the key scrub


# A key with characters JSON escapes, so each level of quoting spells it differently.
KEY = 'sk-Qu"ot\\ed-é-0123456789abcdef'


def _quoted(text: str, levels: int, ascii_only: bool) -> str:
    for _ in range(levels):
        text = json.dumps(text, ensure_ascii=ascii_only)[1:-1]
    return text


@pytest.mark.parametrize("ascii_only", [True, False])
@pytest.mark.parametrize("levels", [0, 1, 2, 3])
def test_a_key_echoed_in_json_quoted_up_to_three_times_is_scrubbed(levels, ascii_only):
    spelled = _quoted(KEY, levels, ascii_only)
    assert levels < 2 or spelled != _quoted(KEY, levels - 1, ascii_only)  # each level differs
    text = f"the model said: {spelled} (that was it)"
    scrubbed = scrub({"content": text, spelled: [text]}, KEY)
    assert scrubbed == {"content": f"the model said: {REDACTED} (that was it)",
                        REDACTED: [f"the model said: {REDACTED} (that was it)"]}


def test_a_json_document_holding_the_key_three_levels_deep_decodes_to_no_key():
    inner = json.dumps({"api_key": KEY})                 # a tool's JSON result
    middle = json.dumps({"arguments": inner})           # inside a call's arguments text
    outer = json.dumps({"content": middle})             # inside a message the model wrote
    cleaned = scrub(outer, KEY)
    decoded = json.loads(json.loads(json.loads(cleaned)["content"])["arguments"])
    assert decoded == {"api_key": REDACTED}


# ------------------------------------------------------------------ the allowlist's last day

ALLOW_CONTRACT = "tool: get_weather\ngolden_cases:\n  - {id: gone, input_ref: gone.json}\n"


@pytest.mark.parametrize("days, allowlisted", [(-1, False), (0, True), (1, True)])
def test_an_allowlist_entry_applies_through_its_expiry_date(pack, days, allowlisted):
    pack.contract("weather", ALLOW_CONTRACT)
    pack.fixture("gone.json", fixture(request(), None))
    expiry = datetime.date.today() + datetime.timedelta(days=days)
    pack.allowlist([{"contract_path": "contracts/weather.yaml", "case_id": "gone",
                     "reason_code": "recording_not_found", "owner": "qa",
                     "expiry_date": expiry.isoformat(), "rationale": "live lane only"}])
    result = replayci.run([str(pack.dir)])
    [case] = result.cases
    assert (case.status, case.allowlisted) == ("non_reproducible", allowlisted)
    assert result.ok is allowlisted
    expired = [w for w in result.warnings if "expired on" in w]
    assert expired == ([] if allowlisted else [expired[0]])
    assert invoke("--no-color").exit_code == (0 if allowlisted else 1)


# ------------------------------------------------------------------ --fail-on-regression


def test_fail_on_regression_fails_a_run_whose_gates_pass(pack, tmp_path):
    pack.contract("weather", "tool: get_weather\ngolden_cases:\n  - {id: a, input_ref: a.json}\n"
                             "  - {id: b, input_ref: b.json}\n")
    good = response(call("get_weather", {"location": "Paris"}))
    pack.fixture("a.json", fixture(request(), good))
    pack.fixture("b.json", fixture(request(), good))
    (pack.root / ".replayci.yml").write_text("gates: {pass_rate: 0.5}\n", "utf-8")
    baseline = tmp_path / "base.json"
    assert invoke("--no-color", "--report-json", str(baseline)).exit_code == 0
    # b now calls the wrong tool: one regression, and the 50% gate still passes
    pack.fixture("b.json", fixture(request(), response(call("get_time", {"timezone": "UTC"}))))
    assert invoke("--no-color").exit_code == 0
    assert invoke("--no-color", "--against", str(baseline)).exit_code == 0
    res = invoke("--no-color", "--against", str(baseline), "--fail-on-regression")
    assert res.exit_code == 1, res.output
    assert "1 regression" in res.output
    # no regression: the flag changes nothing
    assert invoke("--no-color", "--against", str(baseline.parent / "base.json"), "--fail-on-regression",
                  "--filter", "weather/a").exit_code == 0
    now = tmp_path / "now.json"
    invoke("--no-color", "--report-json", str(now))
    assert invoke("diff", str(baseline), str(now), "--fail-on-regression").exit_code == 1
    assert invoke("diff", str(baseline), str(now)).exit_code == 0
    assert invoke("diff", str(now), str(now), "--fail-on-regression").exit_code == 0


# ------------------------------------------------------------------ classification precedence

TOOLS = """
tool: TOOL
tool_call_match_mode: MODE
expected_tool_calls:
  - name: get_weather
    argument_invariants:
      - {path: $.location, equals: Paris}
assertions:
  output_invariants:
    - {path: $.content, equals: null}
golden_cases:
  - {id: c, input_ref: c.json}
"""


@pytest.mark.parametrize("tool, mode, calls, content, first, also", [
    # the provider failing beats an input invariant failing
    ("get_weather", "lenient", None, None, "unexpected_error", "input_violation"),
    # no call beats an output invariant
    ("get_weather", "lenient", [], "sunny", "tool_not_invoked", "invariant_violation"),
    # an extra call under strict matching beats malformed arguments of the expected one
    ("get_weather", "strict", [call("get_weather", '{"location": "Par'), call("get_time", {"timezone": "UTC"}, "c2")],
     None, "wrong_tool", "malformed_arguments"),
    # malformed arguments beat a schema violation of another call
    ("multi_tool_call", "lenient", [call("get_weather", '{"loc'), call("get_time", {"timezone": 7}, "c2")],
     None, "malformed_arguments", "schema_violation"),
    # a schema violation beats an argument mismatch
    ("get_weather", "lenient", [call("get_weather", {"location": "Lyon", "unit": "kelvin"})], None,
     "schema_violation", "argument_mismatch"),
    # an argument mismatch beats an output invariant
    ("get_weather", "lenient", [call("get_weather", {"location": "Lyon"})], "and sunny",
     "argument_mismatch", "invariant_violation"),
    # an output invariant beats an input invariant
    ("get_weather", "lenient", [call("get_weather", {"location": "Paris"})], "and sunny",
     "invariant_violation", "input_violation"),
])
def test_the_earlier_classification_wins_whatever_else_fails(pack, tool, mode, calls, content, first, also):
    contract = TOOLS.replace("TOOL", tool).replace("MODE", mode)
    if tool == "multi_tool_call":
        contract = contract.replace("tool: multi_tool_call\n",
                                    "tool: multi_tool_call\nexpect_tools: [get_weather, get_time]\n")
    if also == "input_violation":
        contract = contract.replace("assertions:\n", "assertions:\n  input_invariants:\n"
                                    "    - {path: \"$.messages[0].role\", equals: developer}\n")
    pack.contract("weather", contract)
    resp = ({"success": False, "error": {"type": "server_error", "status": 500, "message": "boom"}}
            if calls is None else response(*calls, content=content))
    pack.fixture("c.json", fixture(request(), resp))
    [r] = replayci.run([str(pack.dir)]).cases
    kinds = [f.kind for f in r.failures]
    assert also in kinds, kinds  # both fired
    assert (r.status, r.classification, kinds[0]) == ("fail", first, first)


# ------------------------------------------------------------------ the pass-rate denominator


def test_the_pass_rate_counts_error_cases_and_not_skipped_or_non_reproducible(pack, monkeypatch, tmp_path):
    import replayci.checks.operators as mod

    monkeypatch.setattr(mod, "REGEX_TIMEOUT_S", 0.05)
    pack.contract("weather", """
tool: get_weather
golden_cases:
  - {id: p1, input_ref: ok.json}
  - {id: p2, input_ref: ok.json}
  - {id: err, input_ref: slow.json, assertions: {output_invariants: [
      {path: "$.tool_calls[0].arguments.location", regex: "^(a|aa)+$"}]}}
  - {id: gone, input_ref: gone.json}
  - {id: live, input_ref: ok.json, provider_modes: [openai]}
""")
    pack.fixture("ok.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    pack.fixture("slow.json", fixture(request(), response(call("get_weather", {"location": "a" * 60 + "b"}))))
    pack.fixture("gone.json", fixture(request(), None))
    for threshold, ok in ((0.67, False), (0.66, True)):
        (pack.root / ".replayci.yml").write_text(
            f"gates: {{pass_rate: {threshold}, max_non_reproducible: 1}}\n", "utf-8")
        result = replayci.run([str(pack.dir)])
        assert {c.case: c.status for c in result.cases} == {
            "p1": "pass", "p2": "pass", "err": "error", "gone": "non_reproducible", "live": "skipped"}
        s = result.summary
        assert s["pass_rate"] == round(2 / 3, 4)  # pass / (pass + fail + error)
        assert s["gates"]["pass_rate"]["actual"] == round(2 / 3, 4)
        assert s["by_category"]["uncategorized"]["pass_rate"] == round(2 / 3, 4)
        assert s["gates"]["pass_rate"]["passed"] is ok and result.ok is ok
        report = tmp_path / "r.json"
        assert invoke("--no-color", "--report-json", str(report)).exit_code == (0 if ok else 1)
        assert json.loads(report.read_text())["summary"]["pass_rate"] == round(2 / 3, 4)
