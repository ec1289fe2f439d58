"""Malformed scenario inputs: recorded trajectories of the wrong shape and tool commands that
misbehave each get a verdict or a located pack error, never a case `error` or a traceback."""
from __future__ import annotations

import json
import sys
import time

import pytest
from builders import fixture, request
from click.testing import CliRunner
from fakeserver import Conversation, Reply
from livecli import invoke

from replayci.cli import cli
from replayci.core.hashing import args_hash

TOOLS = [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
         for name in ("search_flights", "book_hotel")]
FLIGHT, HOTEL = {"to": "LIS"}, {"city": "Lisbon"}
CONTRACT = """\
scenario: true
max_steps: 4
tool_replay: {mode}
tool: multi_tool_call
expect_tools: [search_flights, book_hotel]
{extra}
trajectory:
  tool_sequence: {{mode: strict, tools: [search_flights, book_hotel]}}
  final_invariants:
    - {{path: "$.content", contains: "HLX"}}
golden_cases:
  - {{id: c, input_ref: c.json}}
"""
GOOD = Conversation([Reply.tool_call("search_flights", FLIGHT), Reply.tool_call("book_hotel", HOTEL),
                     Reply.plain_text("Booked: HLX-1.")])


def result(tool: str, arguments: dict, value) -> dict:
    return {"tool": tool, "args_hash": args_hash(arguments), "arguments": arguments, "result": value}


def scenario(pack, *, mode="strict", extra="", results=None) -> None:
    pack.contract("trip", CONTRACT.format(mode=mode, extra=extra))
    doc = fixture(request("q:c", tools=TOOLS))
    doc["tool_results"] = results if results is not None else [
        result("search_flights", FLIGHT, {"flight": "TP1"}), result("book_hotel", HOTEL, {"ok": "HLX-1"})]
    pack.fixture("c.json", doc)


def offline(*args: str):
    res = CliRunner().invoke(cli, ["run", "--no-color", "--provider", "recorded", *args])
    assert "Traceback" not in res.output and "ERROR" not in res.output, res.output
    return res


def trajectory_of(text: str) -> str:
    return json.dumps(json.loads(text)["trajectory"])


# A recorded trajectory, spoiled in each way: (how, the words the run must print).
SPOILED = {
    "steps not a list": (lambda d: {**d, "trajectory": {"0": d["trajectory"][0]}},
                         "'trajectory' must be a list of steps"),
    "a step not an object": (lambda d: {**d, "trajectory": [1, *d["trajectory"][1:]]},
                             "trajectory step 1 must be an object with a 'response'"),
    "a step without its response": (lambda d: {**d, "trajectory": [{"tool_results": []}]},
                                    "trajectory step 1 must be an object with a 'response'"),
    "a response of the wrong shape": (lambda d: {**d, "trajectory": [{"response": {"tool_calls": "x"}}]}, None),
    "a response not an object": (lambda d: {**d, "trajectory": [{"response": [1]}]},
                                 "trajectory step 1 must be an object with a 'response'"),
    "tool results a string": (lambda d: {**d, "trajectory": [{**d["trajectory"][0], "tool_results": "x"},
                                                             *d["trajectory"][1:]]},
                              "trajectory step 1: 'tool_results' must be a list of objects"),
    "tool results of odd types": (lambda d: {**d, "trajectory": [
        {**d["trajectory"][0], "tool_results": [1, None, ["a"], {"call_id": 3, "result": {"x": [1]}}]},
        *d["trajectory"][1:]]}, "trajectory step 1: 'tool_results' must be a list of objects"),
    "a tool result of odd values": (lambda d: {**d, "trajectory": [
        {**d["trajectory"][0], "tool_results": [{"call_id": 3, "tool": [1], "args_hash": {}, "result": {"x": [1]},
                                                 "version": [2]}]}, *d["trajectory"][1:]]}, None),
    "a tool result without its keys": (lambda d: {**d, "trajectory": [
        {**d["trajectory"][0], "tool_results": [{}]}, *d["trajectory"][1:]]}, None),
    "recorded tool results not a list": (lambda d: {**d, "tool_results": {"a": 1}}, None),
}


def test_a_spoiled_recorded_trajectory_gets_a_verdict_or_a_located_error(pack, server):
    scenario(pack)
    server.set_default(GOOD)
    assert invoke("openai", server, "--record").exit_code == 0
    path = pack.dir / "recordings" / "trip" / "c.json"
    good = json.loads(path.read_text("utf-8"))
    assert offline().exit_code == 0
    for how, (spoil, words) in SPOILED.items():
        path.write_text(json.dumps(spoil(good)), "utf-8")
        res = offline()
        assert res.exit_code in (1, 2) if words else res.exit_code in (0, 1), (how, res.output)
        if res.exit_code == 2:
            assert "packs/demo/recordings/trip/c.json" in res.output, (how, res.output)
        if words:
            assert words in res.output, (how, res.output)
    path.write_text(json.dumps(good)[:-40], "utf-8")  # cut short: not JSON
    res = offline()
    assert res.exit_code == 2 and "packs/demo/recordings/trip/c.json" in res.output, res.output


@pytest.mark.parametrize("recorded", [{"a": 1}, "x", [1, None, {"tool": 3}, {"tool": "book_hotel", "result": 1}]])
def test_spoiled_recorded_tool_results_in_a_live_loop(pack, server, recorded):
    scenario(pack, results=[result("search_flights", FLIGHT, {"flight": "TP1"})])
    pack.recording("trip", "c", {"meta": {"schema_version": 1}, "tool_results": recorded})
    server.set_default(GOOD)
    res = invoke("openai", server, "--replay", "auto", "--tool-replay", "auto")
    assert "Traceback" not in res.output and "ERROR" not in res.output, res.output
    assert res.exit_code in (1, 2), res.output


# Tool commands that misbehave: (the command's Python code, words its result must hold).
MISBEHAVING = {
    "not JSON": ("print('hello')", "tool command printed no JSON: hello"),
    "binary": ("import sys; sys.stdout.buffer.write(bytes(range(256)))", "tool command printed no JSON"),
    "huge": ("import sys\nwhile True: sys.stdout.write('x' * 65536)", "tool command printed more than"),
    "non-zero exit": ("import sys; sys.stderr.write('boom'); sys.exit(3)", "tool command exited 3: boom"),
    "hanging": ("import time; time.sleep(30)", "tool command timed out after 1000 ms"),
    "hanging, its child too": ("import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', "
                               "'import time; time.sleep(30)'])\ntime.sleep(30)",
                               "tool command timed out after 1000 ms"),
    "too deep": ("print('[' * 100000 + ']' * 100000)", "tool command printed JSON nested too deeply"),
    "empty": ("pass", "tool command printed no JSON"),
}


@pytest.mark.parametrize("how", list(MISBEHAVING))
def test_a_misbehaving_tool_command_is_a_result(pack, server, how):
    code, words = MISBEHAVING[how]
    (pack.dir / "tool.py").write_text(code + "\n", "utf-8")
    command = json.dumps(f"{sys.executable} -S tool.py")  # -S: the standard library alone starts at once
    scenario(pack, mode="strict", extra=f"tool_commands:\n  book_hotel: {command}\ntimeouts: {{tool_ms: 1000}}",
             results=[result("search_flights", FLIGHT, {"flight": "TP1"})])
    server.set_default(GOOD)
    started = time.monotonic()
    res = invoke("openai", server, "--record", "--tool-replay", "record", "--json")
    assert time.monotonic() - started < 6  # the command's deadline holds, whatever it started
    assert "Traceback" not in res.output and res.exit_code in (0, 1), res.output
    (case,) = json.loads(res.stdout)["cases"]
    assert case["status"] in ("pass", "fail"), case
    sent = server.requests[-1].turns.tool_results[-1]["content"]  # what the model was told
    assert words in sent, sent
    recorded = json.loads((pack.dir / "recordings" / "trip" / "c.json").read_text("utf-8"))
    assert words in json.dumps(recorded["tool_results"])
