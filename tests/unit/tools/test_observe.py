"""`replayci observe`: call the provider per spec, record, infer
invariants, write a draft pack that passes `replayci --provider recorded` at once."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
import warmed
import yaml
from builders import WEATHER_TOOLS
from click.testing import CliRunner
from fakeserver import Fault, Reply
from livecli import ENV_KEY, KEYS, PROVIDERS, Router, live_env

from replayci.capture.inference import argument_invariants, member_path
from replayci.cli import cli

FLAT_TOOLS = [{"name": "lookup_order", "description": "Find an order.",
               "parameters": {"type": "object", "properties": {
                   "order_id": {"type": "string"}, "status": {"type": "string", "enum": ["open", "closed"]},
                   "limit": {"type": "integer"}, "weird key": {"type": "boolean"}}}}]


def specs(folder):
    folder.mkdir()
    (folder / "weather.json").write_text(json.dumps({
        "description": "The weather question of the onboarding flow.",
        "messages": [{"role": "system", "content": "Use the tools."},
                     {"role": "user", "content": "q:weather"}],
        "tools": WEATHER_TOOLS, "tool_choice": "auto", "temperature": 0}), "utf-8")
    (folder / "orders.yaml").write_text(yaml.safe_dump({
        "messages": [{"role": "user", "content": "q:orders"}], "tools": FLAT_TOOLS}), "utf-8")
    (folder / "chat.json").write_text(json.dumps({
        "messages": [{"role": "user", "content": "q:chat"}]}), "utf-8")
    (folder / "both.json").write_text(json.dumps({
        "messages": [{"role": "user", "content": "q:both"}], "tools": WEATHER_TOOLS}), "utf-8")
    (folder / "notes.txt").write_text("not a spec", "utf-8")


ANSWERS = {
    "weather": [Reply.tool_call("get_weather", {"location": "Paris", "unit": "celsius"})],
    "orders": [Reply.tool_call("lookup_order", {"order_id": "A-17", "status": "open", "limit": 5,
                                                "weird key": True})],
    "chat": [Reply.plain_text("Hello there.")],
    "both": [Reply.tool_calls([("get_weather", {"location": "Rome"}), ("get_time", {"timezone": "CET"})])],
}


def observe(provider, server, *args, key=True):
    argv = ["observe", "--provider", provider, "--model", "model-o", "--base-url", server.base_url_for(provider),
            "--input", "observe", "--output", "packs/observed", "--no-color", *args]
    return CliRunner().invoke(cli, argv, env=live_env(provider, key), catch_exceptions=False)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_observe_writes_a_pack_that_passes_offline(provider, project, server):
    specs(project / "observe")
    server.set_default(Router(ANSWERS))
    res = observe(provider, server)
    assert res.exit_code == 0, res.output
    assert server.count() == 4
    out = res.stdout
    assert f"replayci observe · {provider} · model-o · 4 specs → packs/observed" in out
    assert 'weather   get_weather(location="Paris", unit="celsius")' in out
    assert "chat      no tool call (text answer)" in out
    assert "wrote pack observed to packs/observed: 4 contracts, 4 fixtures" in out
    assert "4/4 passed: the pack passes offline" in out
    pack = project / "packs" / "observed"
    assert yaml.safe_load((pack / "pack.yaml").read_text()) == {
        "pack_id": "observed", "name": f"Observed from {provider} model-o", "version": "0.1.0",
        "schema_version": "v0.1", "default_model": "model-o"}
    # Contracts, not drafts: each case pins its answer.
    weather = yaml.safe_load((pack / "contracts" / "weather.yaml").read_text())
    assert "status" not in weather and weather["tool"] == "get_weather" and "tool_order" not in weather
    assert weather["description"] == "The weather question of the onboarding flow."
    assert weather["golden_cases"] == [{
        "id": "observed", "input_ref": "weather.json", "category": "happy_path", "assertions": {
            "output_invariants": [{"path": "$.tool_calls", "length_eq": 1}],
            "expected_tool_calls": [{"name": "get_weather", "argument_invariants": [
                {"path": "$.location", "equals": "Paris"}, {"path": "$.unit", "equals": "celsius"}]}]}}]
    orders = yaml.safe_load((pack / "contracts" / "orders.yaml").read_text())
    assert orders["golden_cases"][0]["assertions"]["expected_tool_calls"][0]["argument_invariants"] == [
        {"path": "$.limit", "equals": 5},
        {"path": "$.order_id", "equals": "A-17"},
        {"path": "$.status", "equals": "open"},
        {"path": '$["weird key"]', "equals": True}]
    chat = yaml.safe_load((pack / "contracts" / "chat.yaml").read_text())
    assert "tool" not in chat and chat["golden_cases"][0]["assertions"] == {
        "output_invariants": [{"path": "$.tool_calls", "length_eq": 0}]}
    both = yaml.safe_load((pack / "contracts" / "both.yaml").read_text())
    assert both["tool"] == "multi_tool_call" and both["expect_tools"] == ["get_weather", "get_time"]
    assert both["tool_order"] == "strict"
    assert [c["name"] for c in both["golden_cases"][0]["assertions"]["expected_tool_calls"]] == [
        "get_weather", "get_time"]
    # The fixture: the request as sent (flat tools in OpenAI form), boundary pinned.
    fx = json.loads((pack / "golden" / "orders.json").read_text())
    assert fx["request"]["tools"][0] == {"type": "function", "function": FLAT_TOOLS[0]}
    assert fx["request"]["model"] == "model-o" and len(fx["boundary"]["message_hash"]) == 16
    rec = json.loads((pack / "recordings" / "weather" / "observed.json").read_text())
    assert rec["meta"]["provider"] == provider and rec["response"]["tool_calls"][0]["id"] == "call_1"
    # Runnable at once, offline: the contracts count and pass.
    run = CliRunner().invoke(cli, ["--provider", "recorded", "--pack", "packs/observed", "--json"],
                             env=live_env(provider, key=False))
    assert run.exit_code == 0, run.output
    report = json.loads(run.stdout)
    assert [c["status"] for c in report["cases"]] == ["pass"] * 4
    assert not any(c["draft"] for c in report["cases"])
    assert CliRunner().invoke(cli, ["validate", "--pack", "packs/observed"]).exit_code == 0
    # The answer changed (another city): the contract fails the run.
    call = rec["response"]["tool_calls"][0]
    call["arguments"]["location"] = "Lyon"
    call["arguments_raw"] = json.dumps(call["arguments"])
    (pack / "recordings" / "weather" / "observed.json").write_text(json.dumps(rec))
    run = CliRunner().invoke(cli, ["--provider", "recorded", "--pack", "packs/observed"],
                             env=live_env(provider, key=False))
    assert run.exit_code == 1 and "argument_mismatch" in run.output


def test_observe_draft_writes_draft_contracts(project, server):
    specs(project / "observe")
    server.set_default(Router(ANSWERS))
    res = observe("openai", server, "--draft")
    assert res.exit_code == 0, res.output
    assert "weather   get_weather(location: string, unit: string one_of[2])" in res.stdout
    assert "4 draft contracts (status: observed)" in res.stdout
    pack = project / "packs" / "observed"
    weather = yaml.safe_load((pack / "contracts" / "weather.yaml").read_text())
    assert weather["status"] == "observed" and weather["tool"] == "get_weather"
    assert weather["expected_tool_calls"] == [{"name": "get_weather", "argument_invariants": [
        {"path": "$.location", "type": "string"},
        {"path": "$.unit", "type": "string", "one_of": ["celsius", "fahrenheit"]}]}]
    assert weather["golden_cases"] == [{"id": "observed", "input_ref": "weather.json", "category": "happy_path"}]
    chat = yaml.safe_load((pack / "contracts" / "chat.yaml").read_text())
    assert "tool" not in chat and chat["assertions"]["output_invariants"] == [
        {"path": "$.tool_calls", "length_eq": 0}, {"path": "$.content", "type": "string"}]
    both = yaml.safe_load((pack / "contracts" / "both.yaml").read_text())
    assert both["tool"] == "multi_tool_call" and both["expect_tools"] == ["get_weather", "get_time"]
    run = CliRunner().invoke(cli, ["--provider", "recorded", "--pack", "packs/observed", "--json"],
                             env=live_env("openai", key=False))
    assert run.exit_code == 0, run.output
    report = json.loads(run.stdout)
    assert all(c["draft"] for c in report["cases"]) and report["summary"]["draft_contracts"] == 4
    run = CliRunner().invoke(cli, ["--provider", "recorded", "--pack", "packs/observed", "--markdown", "r.md"],
                             env=live_env("openai", key=False))
    assert "  4 draft contracts never fail a run (status: observed)" in run.stdout
    assert "4 draft contracts never fail a run (`status: observed`)." in (project / "r.md").read_text()


def test_observe_refuses_to_overwrite_without_force(project, server):
    specs(project / "observe")
    server.set_default(Router(ANSWERS))
    assert observe("openai", server).exit_code == 0
    res = observe("openai", server)
    assert res.exit_code == 2 and "already holds a pack; pass --force" in res.output
    server.set_default(Router(ANSWERS))  # each question's answers again (the first run used them)
    assert observe("openai", server, "--force").exit_code == 0


def test_observe_over_its_pack_judges_first_and_update_accepts(project, server):
    """Observed again into its pack: an answer that breaks its case is reported as a run reports a
    failure and nothing of its spec is written (exit 1, naming --update); the others are written;
    --update writes it and says per contract what changed."""
    specs(project / "observe")
    server.set_default(Router(ANSWERS))
    assert observe("openai", server).exit_code == 0
    pack = project / "packs" / "observed"
    weather = {p: p.read_bytes() for p in pack.rglob("*") if p.is_file() and "weather" in str(p.relative_to(pack))}
    assert len(weather) == 3  # its contract, fixture and recording
    changed = {**ANSWERS, "weather": [Reply.tool_call("get_weather", {"location": "Lyon", "unit": "celsius"})]}
    server.set_default(Router(changed))
    res = observe("openai", server, "--force")
    assert res.exit_code == 1, res.output
    assert "weather   get_weather(location=\"Lyon\", unit=\"celsius\"): breaks its case, not written" in res.stdout
    assert "argument_mismatch" in res.stderr and "observed/weather   observed   FAIL" in res.stderr
    assert "replayci observe: 1 answer broke its contract and was not saved; `--update` accepts the new " \
        "behaviour" in res.stderr
    assert "3 contracts, 3 fixtures" in res.stdout  # the three others, written again
    assert {p: p.read_bytes() for p in weather} == weather  # nothing of the spec that broke
    server.set_default(Router(changed))
    res = observe("openai", server, "--update")
    assert res.exit_code == 0, res.output
    assert "replayci observe --update: the contracts changed:" in res.stderr
    assert 'weather.yaml: case observed: $.tool_calls[0].arguments.location equals "Paris" -> "Lyon"' in res.stderr
    assert yaml.safe_load((pack / "contracts" / "weather.yaml").read_text())["golden_cases"][0]["assertions"][
        "expected_tool_calls"][0]["argument_invariants"][0] == {"path": "$.location", "equals": "Lyon"}
    # Judged again, the accepted answer keeps to its case.
    server.set_default(Router(changed))
    assert observe("openai", server, "--force").exit_code == 0


def test_observe_over_a_pack_that_does_not_load_calls_nothing(project, server):
    specs(project / "observe")
    server.set_default(Router(ANSWERS))
    assert observe("openai", server).exit_code == 0
    contract = project / "packs" / "observed" / "contracts" / "weather.yaml"
    contract.write_text(contract.read_text() + "golden_casez: []\n")
    calls = server.count()
    res = observe("openai", server, "--force")
    assert res.exit_code == 2 and "weather.yaml" in res.output and "golden_casez" in res.output, res.output
    assert server.count() == calls  # judged against nothing, so asked nothing
    assert "Traceback" not in res.output


def test_observe_needs_a_key_and_calls_nothing_without_it(project, server):
    specs(project / "observe")
    res = observe("anthropic", server, key=False)
    assert res.exit_code == 2 and f"set {ENV_KEY['anthropic']}" in res.output
    assert server.count() == 0 and not (project / "packs").exists()


def test_observe_lists_every_bad_spec_and_calls_nothing(project, server):
    folder = project / "observe"
    folder.mkdir()
    (folder / "a.json").write_text('{"messages": "hi"}', "utf-8")
    (folder / "b.json").write_text('{"messages": [{"role": "user", "content": "x"}], "tools": [{"x": 1}]}', "utf-8")
    (folder / "c.json").write_text('{"messages": [', "utf-8")
    res = observe("openai", server)
    assert res.exit_code == 2, res.output
    assert "3 problems" in res.output and "a.json" in res.output and "b.json" in res.output
    assert "c.json" in res.output and "a tool needs a name" in res.output
    assert server.count() == 0


def test_a_failed_observation_writes_the_others_and_exits_1(project, server):
    specs(project / "observe")
    server.set_default(Router({**ANSWERS, "chat": [Fault.status(500), Fault.status(500)]}))
    res = observe("openai", server, "--timeout-ms", "2000")
    assert res.exit_code == 1
    assert "chat      ERROR provider error 5xx (HTTP 500)" in res.stdout
    assert "1 spec could not be observed" in res.stdout
    contracts = sorted(p.name for p in (project / "packs" / "observed" / "contracts").iterdir())
    assert contracts == ["both.yaml", "orders.yaml", "weather.yaml"]
    run = CliRunner().invoke(cli, ["--provider", "recorded", "--pack", "packs/observed"])
    assert run.exit_code == 0, run.output


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_key_the_provider_echoes_reaches_no_output_and_no_file(provider, project, server):
    folder = project / "observe"
    folder.mkdir()
    for q in ("parrot", "echo"):
        (folder / f"{q}.json").write_text(json.dumps({
            "messages": [{"role": "user", "content": f"q:{q}"}], "tools": WEATHER_TOOLS}), "utf-8")
    # One answer repeats the key (text and arguments), the other quotes it in a 401.
    router = Router({"echo": [Fault.status(401, message="Incorrect API key provided: {api_key}.")]})
    server.set_default(lambda req: Reply.tool_call("get_weather", {"location": req.api_key},
                                                   text=f"Your key is {req.api_key}")
                       if "q:parrot" in str(req.body) else router(req))
    res = observe(provider, server, "--keep-raw")
    assert server.requests[0].api_key == KEYS[provider]  # it was really sent
    assert res.exit_code == 1
    assert "echo     ERROR provider error client (HTTP 401): Incorrect API key provided: [REDACTED]." in res.stdout
    assert KEYS[provider] not in res.output
    written = [p for p in (project / "packs").rglob("*") if p.is_file()]
    assert len(written) == 5
    for path in written:
        assert KEYS[provider] not in path.read_text("utf-8"), path
    rec = json.loads((project / "packs" / "observed" / "recordings" / "parrot" / "observed.json").read_text())
    assert rec["response"]["tool_calls"][0]["arguments"] == {"location": "[REDACTED]"}
    assert rec["response"]["content"] == "Your key is [REDACTED]" and "[REDACTED]" in json.dumps(rec["raw"])


def test_inference_helpers():
    assert member_path("city") == "$.city" and member_path("a-b") == '$["a-b"]'
    assert member_path('q"x') == '$["q\\"x"]'
    schema = {"properties": {"u": {"enum": ["c", "f"]}, "k": {"const": 3}}}
    assert argument_invariants({"u": "c", "k": 3, "n": None, "x": 1.5, "l": [1]}, schema) == [
        {"path": "$.k", "type": "integer", "one_of": [3]},
        {"path": "$.l", "type": "array"},
        {"path": "$.n", "type": "null"},
        {"path": "$.u", "type": "string", "one_of": ["c", "f"]},
        {"path": "$.x", "type": "number"}]
    assert argument_invariants("not an object", None) == []


@pytest.mark.skipif(os.name != "posix", reason="signals")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupt_while_calls_are_in_flight_stops_at_once_and_writes_nothing(project, server, sig):
    """SIGTERM (a cancelled CI job) or Ctrl-C while a call hangs: exit 130 at once, without waiting
    for the calls in flight, no new call started and nothing of the pack written."""
    specs(project / "observe")
    # The first two specs (by file name: both, chat) hang; the others wait for a free worker.
    server.set_default(Router({**ANSWERS, "both": [Fault.slow(30, Reply.plain_text("late"))],
                               "chat": [Fault.slow(30, Reply.plain_text("late"))]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPLAYCI_", "GITHUB_"))}
    env.update({k: v for k, v in live_env("openai").items() if v is not None})
    proc = subprocess.Popen([*warmed.cli(env), "observe", "--provider", "openai", "--model", "m",
                             "--base-url", server.base_url_for("openai"), "--input", "observe", "--output",
                             "packs/observed", "--jobs", "2", "--no-color"],
                            cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while server.count() < 2:  # both workers are in a call that hangs
            assert time.monotonic() < deadline and proc.poll() is None, "the calls never started"
            time.sleep(0.02)
        time.sleep(0.1)
        started = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)
        stopped_in = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + err
    assert stopped_in < 5, stopped_in  # did not wait out the hanging calls
    assert "interrupted" in err and "Traceback" not in err
    assert server.count() == 2  # the specs not yet called never were
    assert not (project / "packs" / "observed").exists()
