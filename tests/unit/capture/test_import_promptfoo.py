"""promptfoo's eval output into a pack: each result a fixture, its tool-call assertions the
case's checks, the others listed as not translated; on output promptfoo itself wrote."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from replayci.capture.importers import importer, promptfoo
from replayci.capture.importers.promptfoo_asserts import translate
from replayci.cli import cli

DATA = Path(__file__).resolve().parents[2] / "data" / "promptfoo"
REPO = Path(__file__).resolve().parents[3]
PROMPTFOO = REPO / "bench" / "out" / "promptfoo" / "node_modules" / ".bin" / "promptfoo"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".replayci.yml").write_text("provider: recorded\n")
    shutil.copy(DATA / "results.json", tmp_path / "results.json")
    return tmp_path


def _import(*args):
    return CliRunner().invoke(cli, ["import", "results.json", "--pack", "packs/pf", *args])


def _cases(project) -> dict:
    import yaml

    (contract,) = (project / "packs/pf/contracts").glob("*.yaml")
    return {c["description"]: c for c in yaml.safe_load(contract.read_text())["golden_cases"]}


def test_promptfoo_output_is_detected_and_read():
    path = str(DATA / "results.json")
    assert promptfoo.detect(path, Path(path).read_bytes()[:65536])
    assert importer("promptfoo") is promptfoo
    reading = promptfoo.read(path, "results.json")
    assert [e.label for e in reading.exchanges] == [
        "weather in paris", "time in tokyo", "small talk", "wrong tool", "paris in fahrenheit"]
    paris = reading.exchanges[0]
    assert paris.request["model"] == "gpt-4o-mini"
    assert paris.request["messages"][1] == {"role": "user", "content": "Weather in Paris?"}
    assert [t["function"]["name"] for t in paris.request["tools"]] == ["get_weather", "get_time"]
    assert paris.request["temperature"] == 0
    assert paris.fidelity == "reconstructed" and not paris.tools_inferred
    (call,) = paris.response["choices"][0]["message"]["tool_calls"]
    assert call["function"] == {"name": "get_weather", "arguments": '{"city": "Paris", "unit": "celsius"}'}
    assert paris.response["usage"] == {"prompt_tokens": 32, "completion_tokens": 18, "total_tokens": 50}
    assert reading.exchanges[2].response["choices"][0]["message"]["content"] == "Hello! How can I help?"


def test_the_imported_pack_passes_and_lists_what_was_not_translated(project):
    res = _import()
    assert res.exit_code == 0, res.output
    assert "5 imported" in res.output and "3 checks not translated" in res.output
    assert "time in tokyo: javascript: no exact contract form" in res.output
    assert "paris in fahrenheit: equals: it compares promptfoo's output text" in res.output
    cases = _cases(project)
    paris = cases["weather in paris"]["assertions"]["output_invariants"]
    assert {"path": "$.tool_calls[*].name", "one_of": ["get_weather"],
            "description": "no tool besides the expected ones"} in paris
    assert cases["small talk"]["assertions"]["output_invariants"] == [{"path": "$.content", "contains": "Hello"}]
    assert cases["wrong tool"]["expect_ok"] is False  # promptfoo failed it on tool-call-f1, translated
    assert "expect_ok" not in cases["paris in fahrenheit"]  # failed only on an untranslated equals
    assert CliRunner().invoke(cli, ["validate", "--pack", "packs/pf"]).exit_code == 0
    run = CliRunner().invoke(cli, ["--pack", "packs/pf", "--no-color"])
    assert run.exit_code == 0, run.output
    assert "5/5 passed" in run.output


def test_a_changed_answer_fails_at_its_case(project):
    assert _import().exit_code == 0
    ref = _cases(project)["weather in paris"]["input_ref"]
    path = project / "packs/pf/golden" / ref
    doc = json.loads(path.read_text())
    doc["response"]["choices"][0]["message"]["tool_calls"][0]["function"]["name"] = "get_time"
    doc["response"]["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"timezone": "CET"}'
    path.write_text(json.dumps(doc))
    run = CliRunner().invoke(cli, ["--pack", "packs/pf", "--no-color"])
    assert run.exit_code == 1
    assert "4/5 passed" in run.output


def test_a_reimport_keeps_the_translated_checks(project):
    assert _import().exit_code == 0
    first = _cases(project)
    (project / "again.json").write_text((project / "results.json").read_text().replace(
        "Weather in Rome?", "Weather in Roma?"))
    res = CliRunner().invoke(cli, ["import", "again.json", "--pack", "packs/pf"])
    assert res.exit_code == 0, res.output
    after = _cases(project)
    assert after["weather in paris"] == first["weather in paris"]  # rewritten from disk, checks kept


def test_anthropic_results_import_as_messages_calls(project):
    shutil.copy(DATA / "results-anthropic.json", project / "results.json")
    reading = promptfoo.read(str(project / "results.json"), "results.json")
    paris, hello = reading.exchanges
    assert paris.endpoint == "/v1/messages" and paris.request["model"] == "claude-sonnet-4-5"
    assert paris.request["system"] == "You are a weather assistant. Use the tools."
    assert paris.request["messages"] == [{"role": "user", "content": "Weather in Paris?"}]
    assert paris.request["tools"][0]["name"] == "get_weather" and not paris.tools_inferred
    (use,) = paris.response["content"]
    assert (use["type"], use["name"], use["input"]) == ("tool_use", "get_weather", {"city": "Paris"})
    assert hello.response["content"] == [{"type": "text", "text": "Hello! How can I help?"}]
    assert _import().exit_code == 0
    run = CliRunner().invoke(cli, ["--pack", "packs/pf", "--no-color"])
    assert run.exit_code == 0 and "2/2 passed" in run.output, run.output


def test_anthropic_output_joins_text_and_tool_uses_with_blank_lines():
    use = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}
    blocks = promptfoo._blocks("Let me look.\n\nTwo paragraphs.\n\n" + json.dumps(use))
    assert blocks == [{"type": "text", "text": "Let me look.\n\nTwo paragraphs."}, use]
    assert promptfoo._blocks(["not", "text"]) is None
    assert promptfoo._anthropic_model("anthropic:messages:claude-x") == "claude-x"
    assert promptfoo._anthropic_model("anthropic:completion:claude-2") is None


def _kinds(assertions, text=False):
    out = translate(assertions, text)
    return out.assertions(), out.not_translated


def test_tool_assertions_translate_to_exact_checks():
    got, left = _kinds([{"type": "trajectory:tool-args-match",
                         "value": {"name": "get_weather", "args": {"city": "Paris", "unit": "celsius"}}}])
    assert left == []
    assert got == {"expected_tool_calls": [{"name": "get_weather", "argument_invariants": [
        {"path": "$.city", "equals": "Paris"}, {"path": "$.unit", "equals": "celsius"}]}]}
    got, _ = _kinds([{"type": "trajectory:tool-args-match",
                      "value": {"name": "f", "args": {"a-b": 1}, "mode": "exact"}}])
    (call,) = got["expected_tool_calls"]
    assert call["argument_invariants"][0] == {"path": '$["a-b"]', "equals": 1}
    assert call["argument_invariants"][1]["matches_schema"]["additionalProperties"] is False
    got, _ = _kinds([{"type": "trajectory:tool-sequence", "value": {"steps": ["a", "b"], "mode": "exact"}}])
    assert got["output_invariants"] == [{"path": "$.tool_calls", "length_eq": 2},
                                        {"path": "$.tool_calls[0].name", "equals": "a"},
                                        {"path": "$.tool_calls[1].name", "equals": "b"}]
    got, _ = _kinds([{"type": "trajectory:tool-used", "value": ["a", "b"]}])
    assert [i["path"] for i in got["output_invariants"]] == [
        '$.tool_calls[?@.name == "a"]', '$.tool_calls[?@.name == "b"]']
    got, _ = _kinds([{"type": "not-icontains", "value": "sorry"}], text=True)
    assert got["output_invariants"] == [{"path": "$.content", "regex": "^(?!.*(?i)sorry)"}]


@pytest.mark.parametrize(("assertion", "reason"), [
    ({"type": "llm-rubric", "value": "polite"}, "no exact contract form"),
    ({"type": "tool-call-f1", "value": ["a"], "threshold": 0.5}, "threshold of 0.5"),
    ({"type": "trajectory:tool-sequence", "value": {"steps": ["a", "b"]}}, "in-order sequence"),
    ({"type": "trajectory:tool-used", "value": {"name": "a", "min": 2}}, "at least once"),
    ({"type": "contains", "value": "x"}, "this answer is tool calls"),
    ({"type": "is-json"}, "structured output"),
    ({"value": "x"}, "no type"),
])
def test_what_has_no_exact_form_is_named(assertion, reason):
    got, left = _kinds([assertion])
    assert got == {}
    (line,) = left
    assert reason in line


def test_results_that_hold_no_answer_or_another_api_are_listed(tmp_path):
    doc = json.loads((DATA / "results.json").read_text())
    results = doc["results"]["results"]
    results[0]["provider"] = {"id": "bedrock:converse:anthropic.claude-3", "label": ""}
    results[1]["response"] = {"error": "HTTP 500"}
    results[2] = "not an object"
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    reading = promptfoo.read(str(path), "r.json")
    kinds = {p.entry: (p.kind, p.reason) for p in reading.passed if p.kind != "not_translated"}
    assert kinds[0][0] == "unsupported" and "bedrock:converse:anthropic.claude-3" in kinds[0][1]
    assert kinds[1] == ("not_captured", "promptfoo recorded no answer: HTTP 500")
    assert kinds[2][0] == "unreadable"
    assert len(reading.exchanges) == 2


def test_output_that_is_not_promptfoos_is_refused(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"evalId": "x", "results": {"results": 5}}')
    res = CliRunner().invoke(cli, ["import", str(path), "--pack", str(tmp_path / "p"), "--strict"])
    assert res.exit_code == 2
    assert "not promptfoo's eval output" in res.output


@pytest.mark.slow
@pytest.mark.skipif(not PROMPTFOO.exists(), reason="no promptfoo (python bench/vs_promptfoo.py --install)")
def test_fresh_promptfoo_output_imports_the_same(tmp_path):
    from fakeserver import FakeServer, Reply, first_user_text

    def answer(req):
        q = first_user_text(req) or ""
        for word, call in (("Paris", ("get_weather", {"city": "Paris", "unit": "celsius"})),
                           ("Tokyo", ("get_time", {"timezone": "Asia/Tokyo"})),
                           ("Rome", ("get_time", {"timezone": "Europe/Rome"}))):
            if word in q:
                return Reply.tool_call(*call)
        return Reply.plain_text("Hello! How can I help?")

    with FakeServer() as server:
        server.set_default(answer)
        env = {**os.environ, "FAKE_BASE": server.openai_base_url, "OPENAI_API_KEY": "sk-test",
               "PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1", "PROMPTFOO_DISABLE_SHARING": "1",
               "PROMPTFOO_DISABLE_DEBUG_LOG": "1", "PROMPTFOO_CONFIG_DIR": str(tmp_path / "config")}
        done = subprocess.run([str(PROMPTFOO), "eval", "-c", str(DATA / "promptfooconfig.yaml"), "--no-cache",
                               "--no-table", "--no-progress-bar", "-o", str(tmp_path / "results.json")],
                              env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 100, done.stderr  # promptfoo: some tests failed (the wrong tool)
    fresh = promptfoo.read(str(tmp_path / "results.json"), "results.json")
    kept = promptfoo.read(str(DATA / "results.json"), "results.json")
    assert [(e.label, e.checks) for e in fresh.exchanges] == [(e.label, e.checks) for e in kept.exchanges]
