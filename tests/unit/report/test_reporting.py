"""JUnit, Markdown, GitHub annotations, gates in reports, shards and merge."""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

from builders import call, fixture, request, response
from click.testing import CliRunner

from replayci.cli import cli

MIXED = """
tool: get_weather
golden_cases:
  - {id: ok, input_ref: ok.json, category: happy_path}
  - {id: bad, input_ref: bad.json, category: edge_case}
  - {id: gone, input_ref: gone.json, category: regression}
  - {id: later, input_ref: ok.json, provider_modes: [openai]}
"""


def mixed(pack):
    pack.contract("weather", MIXED)
    pack.fixture("ok.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    pack.fixture("bad.json", fixture(request(), response(call("get_weather", {"location": "Paris", "unit": "K"}))))
    pack.fixture("gone.json", fixture(request(), None))


def invoke(*args, env=None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_junit(pack, tmp_path):
    mixed(pack)
    out = tmp_path / "junit.xml"
    res = invoke("--junit", str(out))
    assert res.exit_code == 1
    root = ET.parse(out).getroot()
    assert root.tag == "testsuites"
    [suite] = root.findall("testsuite")
    assert suite.get("name") == "demo"
    assert {k: suite.get(k) for k in ("tests", "failures", "errors", "skipped")} == \
        {"tests": "4", "failures": "2", "errors": "0", "skipped": "1"}
    cases = {tc.get("name"): tc for tc in suite.findall("testcase")}
    assert cases["ok"].find("failure") is None and cases["ok"].get("classname") == "demo.weather"
    fail = cases["bad"].find("failure")
    assert fail.get("type") == "schema_violation" and "properties/unit/enum" in fail.text
    assert cases["gone"].find("failure").get("type") == "non_reproducible: recording_not_found"
    assert cases["later"].find("skipped") is not None
    for tc in suite.iter("testcase"):
        float(tc.get("time"))
        assert len([c for c in tc if c.tag in ("failure", "error", "skipped")]) <= 1


def test_markdown_and_step_summary(pack, tmp_path):
    mixed(pack)
    summary = tmp_path / "step.md"
    summary.write_text("previous step\n")
    out = tmp_path / "r.md"
    res = invoke("--markdown", str(out), env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert res.exit_code == 1
    md = out.read_text()
    assert "| demo | 4 | 1 | 1 | 1 | 50.0% |" in md
    assert "| happy_path | 1 | 100.0% |" in md and "| edge_case | 1 | 0.0% |" in md
    assert "| pass_rate | 100.0% | 50.0% | ❌ |" in md
    assert "`demo/weather/bad` | fail | schema_violation |" in md
    assert summary.read_text().startswith("previous step\n") and md in summary.read_text()


def test_github_annotations(pack):
    mixed(pack)
    res = invoke("--no-color", env={"GITHUB_ACTIONS": "true"})
    lines = [line for line in res.output.splitlines() if line.startswith("::error")]
    assert len(lines) == 2
    assert lines[0].startswith("::error file=packs/demo/contracts/weather.yaml,line=")
    assert "title=schema_violation::demo/weather/bad: get_weather: $.unit" in lines[0]
    assert "title=non_reproducible%3A recording_not_found" in lines[1]
    assert not [line for line in invoke().output.splitlines() if line.startswith("::error")]


def test_a_missing_expected_call_is_annotated_at_its_name_line(pack):
    pack.contract("support", """description: refunds, by case
golden_cases:
  - id: damaged_order
    input_ref: c.json
    assertions:
      expected_tool_calls:
        - name: get_time
          argument_invariants:
            - {path: $.timezone, exists: true}
  - id: tool_named_above
    input_ref: c.json
    assertions:
      expected_tool_calls: [{name: get_weather}, {name: get_time}]
""")
    pack.fixture("c.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    res = invoke("--no-color", env={"GITHUB_ACTIONS": "true"})
    lines = [line for line in res.output.splitlines() if line.startswith("::error")]
    assert len(lines) == 2, res.output
    assert lines[0].startswith("::error file=packs/demo/contracts/support.yaml,line=7,title=wrong_tool::"), lines
    assert "expected a call to get_time, got get_weather" in lines[0]
    # the entry of a flow list is at its own line too
    assert lines[1].startswith("::error file=packs/demo/contracts/support.yaml,line=13,title=wrong_tool::")


def test_gates_in_every_report(pack, tmp_path):
    mixed(pack)
    invoke("--report-json", str(tmp_path / "r.json"))
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"]["gates"]["pass_rate"] == {"threshold": 1.0, "actual": 0.5, "passed": False}
    assert report["summary"]["gates"]["max_non_reproducible"] == {"threshold": 0, "actual": 1, "passed": False}
    assert report["summary"]["by_category"]["edge_case"]["pass_rate"] == 0.0
    (pack.root / ".replayci.yml").write_text("gates: {pass_rate: 0.5, max_non_reproducible: 1}\n")
    assert invoke().exit_code == 0


def _strip_timing(report):
    report["run"].pop("started_at"), report["run"].pop("duration_ms")
    for c in report["cases"]:
        c.pop("duration_ms")
    return json.dumps(report, indent=2)


def test_reports_are_byte_identical_but_for_timing(pack, tmp_path):
    mixed(pack)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    invoke("--report-json", str(a))
    invoke("--report-json", str(b))
    assert _strip_timing(json.loads(a.read_text())) == _strip_timing(json.loads(b.read_text()))
    assert a.read_text().count("duration_ms") == b.read_text().count("duration_ms") > 1


def test_shards_union_equals_full_run(pack, tmp_path):
    many = "tool: get_weather\ngolden_cases:\n" + "".join(
        f"  - {{id: case_{i:02d}, input_ref: {'ok' if i % 3 else 'bad'}.json}}\n" for i in range(40))
    pack.contract("weather", many)
    pack.contract("second", many.replace("case_", "other_"))
    pack.fixture("ok.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    pack.fixture("bad.json", fixture(request(), response(content="no")))
    invoke("--report-json", str(tmp_path / "full.json"))
    full = json.loads((tmp_path / "full.json").read_text())
    shards = []
    for k in (1, 2, 3):
        path = tmp_path / f"s{k}.json"
        invoke("--shard", f"{k}/3", "--report-json", str(path))
        shards.append(str(path))
    sizes = [len(json.loads(open(p).read())["cases"]) for p in shards]
    assert sum(sizes) == 80 and all(s > 10 for s in sizes)
    res = invoke("merge", *shards, "-o", str(tmp_path / "merged.json"), "--junit", str(tmp_path / "m.xml"))
    assert res.exit_code == 1  # the bad cases fail the gate, merged or not
    merged = json.loads((tmp_path / "merged.json").read_text())
    key = lambda c: {k: v for k, v in c.items() if k != "duration_ms"}  # noqa: E731
    assert [key(c) for c in merged["cases"]] == [key(c) for c in full["cases"]]
    for field in ("total", "pass", "fail", "pass_rate", "by_category", "gates"):
        assert merged["summary"][field] == full["summary"][field]
    assert ET.parse(tmp_path / "m.xml").getroot().get("tests") == "80"


def test_shard_is_stable_when_cases_are_added(pack, tmp_path):
    body = "tool: get_weather\ngolden_cases:\n" + "".join(
        f"  - {{id: case_{i:02d}, input_ref: ok.json}}\n" for i in range(30))
    pack.contract("weather", body)
    pack.fixture("ok.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    invoke("--shard", "2/4", "--report-json", str(tmp_path / "a.json"))
    pack.contract("weather", body + "".join(f"  - {{id: new_{i}, input_ref: ok.json}}\n" for i in range(10)))
    invoke("--shard", "2/4", "--report-json", str(tmp_path / "b.json"))
    before = {c["case"] for c in json.loads((tmp_path / "a.json").read_text())["cases"]}
    after = {c["case"] for c in json.loads((tmp_path / "b.json").read_text())["cases"]}
    assert before == {c for c in after if c.startswith("case_")}


def test_bad_shard_flag(pack):
    mixed(pack)
    res = CliRunner().invoke(cli, ["--shard", "5/4"])
    assert res.exit_code == 2 and "1 <= K <= N" in res.output


def test_every_report_format_is_a_config_key_and_a_flag_overrides_it(pack, tmp_path):
    from replayci.pack.vocabulary import CONFIG_KEYS
    from replayci.report.writers import WRITERS

    assert set(CONFIG_KEYS["reports"]["properties"]) == set(WRITERS)
    mixed(pack)
    names = {"json": "r.json", "junit": "r.xml", "markdown": "r.md"}
    (pack.root / ".replayci.yml").write_text(
        "reports: {" + ", ".join(f"{k}: {tmp_path / v}" for k, v in names.items()) + "}\n")
    flag = tmp_path / "flag.xml"
    assert invoke("--junit", str(flag)).exit_code == 1
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["total"] == 4
    assert ET.parse(flag).getroot().tag == "testsuites" and not (tmp_path / "r.xml").exists()
    assert (tmp_path / "r.md").read_text().startswith("## replayci ❌")


def test_merge_refuses_an_incomplete_set_of_shards_unless_asked(pack, tmp_path):
    pack.contract("weather", "tool: get_weather\ngolden_cases:\n" + "".join(
        f"  - {{id: case_{i:02d}, input_ref: ok.json}}\n" for i in range(12)))
    pack.fixture("ok.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    paths = []
    for k in (1, 2, 3):
        paths.append(str(tmp_path / f"s{k}.json"))
        invoke("--shard", f"{k}/3", "--report-json", paths[-1])
    res = invoke("merge", paths[0], paths[2], "-o", str(tmp_path / "m.json"))
    assert res.exit_code == 2 and "shard 2/3 missing" in res.output and "--allow-partial" in res.output
    assert not (tmp_path / "m.json").exists()
    res = invoke("merge", paths[0], paths[2], "-o", str(tmp_path / "m.json"), "--allow-partial")
    merged = json.loads((tmp_path / "m.json").read_text())
    assert res.exit_code == 1  # every case passed, but a partial set is no verdict on the run
    assert not any(g["passed"] for g in merged["summary"]["gates"].values())
    assert merged["summary"]["partial"] == {"missing_shards": [2]}
    assert invoke("merge", *paths, "-o", str(tmp_path / "full.json")).exit_code == 0
    other = tmp_path / "other.json"
    invoke("--shard", "1/2", "--report-json", str(other))
    res = invoke("merge", paths[1], paths[2], str(other), "-o", str(tmp_path / "x.json"))
    assert res.exit_code == 2 and "shard reports of one run" in res.output


def test_every_report_says_which_response_a_case_used(pack, tmp_path):
    mixed(pack)
    pack.recording("weather", "bad", {"meta": {"provider": "openai", "model": "gpt-4o-mini"},
                                      "response": response(call("get_weather", {"location": "Rome", "unit": "K"}))})
    res = invoke("--json", "--junit", str(tmp_path / "j.xml"), "--markdown", str(tmp_path / "r.md"))
    kinds = {c["case"]: c.get("response_source") for c in json.loads(res.stdout)["cases"]}
    assert kinds == {"ok": "fixture", "bad": "recording", "gone": None, "later": None}
    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    props = {tc.get("name"): {p.get("name"): p.get("value") for p in tc.iter("property")}
             for tc in suite.findall("testcase")}
    assert props["ok"]["response_source"] == "fixture" and props["bad"]["response_source"] == "recording"
    assert "| `demo/weather/bad` | fail | schema_violation | " in (tmp_path / "r.md").read_text()
    assert "| recording | `" in (tmp_path / "r.md").read_text()
    verbose = invoke("--no-color", "-v").output
    assert "[response: fixture]" in verbose and "[response: recording]" in verbose
    assert "[response:" not in invoke("--no-color").output


LOCATED = """tool: get_weather
assertions:
  output_invariants:
    - path: "$.tool_calls[0].arguments.unit"
      equals: celsius
golden_cases:
  - id: inv
    input_ref: f.json
  - id: own
    input_ref: ok.json
    assertions:
      output_invariants:
        - path: "$.tool_calls[0].arguments.location"
          equals: Lyon
  - id: wrong
    input_ref: wrong.json
  - id: both
    input_ref: f.json
    assertions:
      output_invariants:
        - path: "$.tool_calls[0].arguments.location"
          equals: Lyon
"""


def test_a_failure_is_located_at_the_check_that_failed_in_every_report(pack, tmp_path):
    # contract invariant: line 4; the case's own assertion: line 13; a case-level wrong_tool: the case, line 15
    pack.contract("weather", LOCATED)
    f = response(call("get_weather", {"location": "Paris", "unit": "fahrenheit"}))
    pack.fixture("f.json", fixture(request(), f))
    pack.fixture("ok.json", fixture(request(), response(call("get_weather", {"location": "Paris", "unit": "celsius"}))))
    pack.fixture("wrong.json", fixture(request(), response(call("get_time", {"timezone": "UTC"}))))
    want = {"inv": "4", "own": "13", "wrong": "15", "both": "4"}  # both: the contract's invariant fails first
    file = "packs/demo/contracts/weather.yaml"
    res = invoke("--no-color", "--report-json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "j.xml"),
                 "--markdown", str(tmp_path / "r.md"), env={"GITHUB_ACTIONS": "true"})
    assert res.exit_code == 1
    report = json.loads((tmp_path / "r.json").read_text())
    assert {c["case"]: c["failures"][0]["source"] for c in report["cases"]} == \
        {k: f"{file}:{v}" for k, v in want.items()}
    both = next(c for c in report["cases"] if c["case"] == "both")
    assert [f["source"] for f in both["failures"]] == [f"{file}:4", f"{file}:21"]
    for case, line in want.items():  # the terminal line under each case
        assert re.search(rf"demo/weather +{case} +FAIL .*\n +.*\({re.escape(file)}:{line}\)\n", res.output), case
    annotations = {re.search(r"::demo/weather/(\w+):", a).group(1): re.search(r"line=(\d+)", a).group(1)
                   for a in res.output.splitlines() if a.startswith("::error")}
    assert annotations == want
    junit = {tc.get("name"): (tc.get("file"), tc.get("line"))
             for tc in ET.parse(tmp_path / "j.xml").getroot().iter("testcase")}
    assert junit == {k: (file, v) for k, v in want.items()}
    md = (tmp_path / "r.md").read_text()
    for case, line in want.items():
        assert re.search(rf"`demo/weather/{case}` \| fail \|.*\| `{re.escape(file)}:{line}` \|", md), case
