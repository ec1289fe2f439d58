"""`replayci diff` and `replayci regrade` on a comparison's report: a case is a case of one
target, never merged with the same case of another (live runs through the real SDKs against the
fake provider, which answers each model differently)."""
from __future__ import annotations

import json

from click.testing import CliRunner
from fakeserver import Reply
from livecli import KEYS, PARIS, add_cases

from replayci.cli import cli

GOOD, WEAK = "openai:gpt-good", "anthropic:claude-weak"
LYON = Reply.tool_call("get_weather", {"location": "Lyon"})
PARIS_CHECK = "tool: get_weather\nexpected_tool_calls:\n  - name: get_weather\n    argument_invariants:\n" \
              "      - {path: $.location, equals: Paris}\n"
LYON_CHECK = PARIS_CHECK.replace("Paris", "Lyon")


def lyon_for(wrong: dict):
    """The fake's answer: Lyon from a model to the questions of its cases in *wrong*, else Paris."""
    def answer(req):
        cases = wrong.get(req.body["model"], ())
        return LYON if req.turns.last_user in {f"q:{c}" for c in cases} else PARIS
    return answer


def compare(server, project, name: str, wrong: dict) -> dict:
    server.set_default(lyon_for(wrong))
    env = {"OPENAI_API_KEY": KEYS["openai"], "ANTHROPIC_API_KEY": KEYS["anthropic"],
           "OPENAI_BASE_URL": server.openai_base_url, "ANTHROPIC_BASE_URL": server.anthropic_base_url}
    res = CliRunner().invoke(cli, ["run", "--no-color", "--target", GOOD, "--target", WEAK, "--report-json",
                                   name], env=env, catch_exceptions=False)
    assert res.exit_code in (0, 1), res.output
    return json.loads((project / name).read_text())


def keyed(cases) -> dict:
    return {(c["case"], c.get("target")): c for c in cases}


def test_diff_pairs_each_case_with_the_same_target(pack, server, project):
    add_cases(pack, "weather", ["a", "b"], header=PARIS_CHECK)
    compare(server, project, "main.json", {"claude-weak": ("a",)})
    compare(server, project, "pr.json", {"gpt-good": ("b",)})
    res = CliRunner().invoke(cli, ["diff", "main.json", "pr.json", "--json", "--no-color"])
    drift = json.loads(res.stdout)
    changes = {k: c["change"] for k, c in keyed(drift["cases"]).items()}
    assert changes == {("a", GOOD): "unchanged", ("b", GOOD): "regression",
                       ("a", WEAK): "fix", ("b", WEAK): "unchanged"}
    assert drift["summary"]["cases"] == 4
    assert (drift["summary"]["regressions"], drift["summary"]["fixes"]) == (1, 1)
    text = CliRunner().invoke(cli, ["diff", "main.json", "pr.json", "--no-color"]).output
    assert any(f"demo/weather/b@{GOOD}" in line and "regression" in line for line in text.splitlines()), text
    assert any(f"demo/weather/a@{WEAK}" in line and "fix" in line for line in text.splitlines()), text
    # a target only one side compared is added or removed, never paired with another target's run
    (project / "one.json").write_text(json.dumps({**json.loads((project / "pr.json").read_text()), "cases": [
        c for c in json.loads((project / "pr.json").read_text())["cases"] if c["target"] == GOOD]}))
    drift = json.loads(CliRunner().invoke(cli, ["diff", "main.json", "one.json", "--json"]).stdout)
    assert {k: c["change"] for k, c in keyed(drift["cases"]).items() if k[1] == WEAK} == {
        ("a", WEAK): "removed", ("b", WEAK): "removed"}


def test_regrade_judges_each_targets_answers_and_compares_again(pack, server, project):
    add_cases(pack, "weather", ["a", "b"], header=PARIS_CHECK)
    before = compare(server, project, "main.json", {"claude-weak": ("a",)})
    assert before["targets"]["targets"][WEAK]["pass_rate"] == 0.5
    calls = len(server.requests)
    pack.contract("weather", (pack.dir / "contracts" / "weather.yaml").read_text().replace("Paris", "Lyon"))
    res = CliRunner().invoke(cli, ["regrade", "main.json", "--json", "--no-color"])
    assert len(server.requests) == calls  # no model call
    after = json.loads(res.stdout)
    assert res.exit_code == 1, res.output
    statuses = {k: c["status"] for k, c in keyed(after["cases"]).items()}
    assert statuses == {("a", GOOD): "fail", ("b", GOOD): "fail", ("a", WEAK): "pass", ("b", WEAK): "fail"}
    assert after["run"]["targets"] == [GOOD, WEAK]
    targets = after["targets"]
    assert targets["labels"] == [GOOD, WEAK]
    assert (targets["targets"][GOOD]["pass_rate"], targets["targets"][WEAK]["pass_rate"]) == (0.0, 0.5)
    assert targets["matrix"]["demo/weather"][WEAK] == {"passes": 1, "runs": 2, "pass_rate": 0.5}
    assert targets["by_target"] == before["targets"]["by_target"]
    assert sorted(after["summary"]["gates_by_target"]) == sorted([GOOD, WEAK])
    assert after["summary"]["gates"]["pass_rate"]["failed_targets"] == [GOOD, WEAK]


def test_regrade_checks_each_targets_request_with_its_own_model(pack, server, project):
    add_cases(pack, "weather", ["a"], header=PARIS_CHECK)
    compare(server, project, "main.json", {})
    pack.contract("weather", (pack.dir / "contracts" / "weather.yaml").read_text().replace(
        "golden_cases:", 'assertions:\n  input_invariants:\n    - {path: "$.model", equals: gpt-good}\n'
        "golden_cases:"))
    after = json.loads(CliRunner().invoke(cli, ["regrade", "main.json", "--json", "--no-color"]).stdout)
    statuses = {k: c["status"] for k, c in keyed(after["cases"]).items()}
    assert statuses[("a", GOOD)] == "pass" and statuses[("a", WEAK)] != "pass", after["cases"]
