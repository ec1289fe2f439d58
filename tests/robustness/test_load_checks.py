"""What is refused at load is refused whatever the project's size, and what is written stays
readable whatever the ids hold."""
from __future__ import annotations

import json
import shutil
import subprocess
import xml.dom.minidom

import pytest
import warmed

import replayci
from replayci.core.errors import ConfigError
from replayci.report import junit

CONTRACTS = "packs/starter/contracts"


def cli(args: list[str], cwd) -> subprocess.CompletedProcess:
    return subprocess.run([*warmed.cli(), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def refused(done: subprocess.CompletedProcess, *words: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    for w in words:
        assert w in done.stderr, done.stderr


@pytest.mark.parametrize("processes", [1, 2])
def test_a_duplicate_contract_id_is_refused_in_a_split_run(starter, processes):
    """Positions 0 and 11 are loaded by different processes of a split load."""
    contracts = starter / CONTRACTS
    (contracts / "sub").mkdir()
    shutil.copy(contracts / "get_weather.yaml", contracts / "sub" / "get_weather.yaml")
    names = ["get_weather.yaml"]
    for i in range(1, 11):
        shutil.copy(contracts / "get_weather.yaml", contracts / f"c{i}.yaml")
        names.append(f"c{i}.yaml")
    names.append("sub/get_weather.yaml")
    pack_yaml = starter / "packs" / "starter" / "pack.yaml"
    pack_yaml.write_text(pack_yaml.read_text("utf-8") + f"contracts: {json.dumps(names)}\n", "utf-8")
    with pytest.raises(ConfigError) as caught:
        replayci.run(["packs/starter"], processes=processes)
    problems = [str(p) for p in caught.value.problems]
    assert len(problems) == 1 and "contracts[11]: contract 'get_weather' listed twice" in problems[0]


def test_an_invalid_redact_path_is_refused_at_load(starter):
    config = starter / ".replayci.yml"
    config.write_text(config.read_text("utf-8") + 'redact:\n  fields: ["$.request.user", "$[?bad"]\n', "utf-8")
    for args in ([], ["validate"]):
        refused(cli(args, starter), ".replayci.yml:", "redact.fields[1]", "invalid JSONPath '$[?bad'")


def test_a_case_id_too_long_for_a_file_name(starter):
    contract = starter / CONTRACTS / "get_weather.yaml"
    contract.write_text(contract.read_text("utf-8").replace("id: tool_call_success", "id: " + "é" * 101), "utf-8")
    refused(cli(["validate"], starter), "get_weather.yaml:", "case id is 202 bytes long; at most 200")
    contract.write_text(contract.read_text("utf-8").replace("é" * 101, "é" * 100), "utf-8")
    assert cli(["validate"], starter).returncode == 0  # 200 bytes: still a file name


@pytest.mark.parametrize("step", ["[]", "{}"])
def test_a_retried_step_that_is_no_number_is_refused_where_it_is(starter, step):
    """A list or a mapping as a retried step's number is a located problem, not an internal error."""
    contract = starter / CONTRACTS / "get_weather.yaml"
    contract.write_text(contract.read_text("utf-8") + "scenario: true\ntrajectory:\n  retried_steps:\n"
                        f"    - {{step: {step}, expected_error: schema_violation}}\n", "utf-8")
    line = contract.read_text("utf-8").count("\n")
    refused(cli(["validate"], starter), f"get_weather.yaml:{line}:", "trajectory.retried_steps[0].step",
            "expected a step number >= 1")


def test_duplicate_tool_names_in_a_request(starter):
    fixture = starter / "packs" / "starter" / "golden" / "get_weather.success.json"
    doc = json.loads(fixture.read_text("utf-8"))
    doc["request"]["tools"].append(doc["request"]["tools"][0])
    fixture.write_text(json.dumps(doc, indent=2), "utf-8")
    for args in ([], ["validate"]):
        refused(cli(args, starter), "get_weather.success.json:", "tool 'get_weather' is offered twice")


def test_junit_stays_well_formed_with_control_characters():
    report = {"cases": [{"pack": "p\x01", "contract": "c\udcff", "case": "x\x1b[31m", "status": "fail",
                         "reason": "bad\x00\x0b", "source": "f\x02.yaml:3",
                         "failures": [{"kind": "wrong_tool", "message": "m\x07"}]},
                        {"pack": "p\x01", "contract": "c", "case": "e", "status": "error", "reason": "\x1f"}]}
    document = junit.build(report)
    tree = xml.dom.minidom.parseString(document.encode("utf-8"))
    cases = tree.getElementsByTagName("testcase")
    assert cases[0].getAttribute("name") == "x\\x1b[31m"
    assert cases[0].getAttribute("classname") == "p\\x01.c\\udcff"
    assert "m\\x07" in cases[0].getElementsByTagName("failure")[0].firstChild.data
