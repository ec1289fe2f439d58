"""`..` segments over deep or huge values: bounded time and a verdict (the invariant fails and
says why), never a case `error`, a hang or a crash."""
from __future__ import annotations

import json
import time

import pytest
from builders import PackBuilder, call, fixture, request, response
from click.testing import CliRunner

from replayci import api
from replayci.checks.jsonpath import MAX_DESCENT_DEPTH, MAX_DESCENT_NODES, DescentLimit
from replayci.cli import cli

CONTRACT = """
tool: get_weather
assertions:
  output_invariants:
{invariant}
golden_cases:
  - id: c1
    input_ref: c.json
"""
EXISTS = '    - path: "$.tool_calls[0].arguments..a"\n      exists: true\n'
NOT_EXISTS = '    - not:\n        path: "$.tool_calls[0].arguments..a"\n        exists: true\n'
# Any arguments are valid for the tool: only the `..` invariant judges them.
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
FAN_OUT = '    - path: "$.tool_calls[0].arguments..*..*..*..*"\n      exists: true\n'


def nested(depth: int) -> str:
    return '{"location":"Paris","deep":' + '{"a":' * depth + "1" + "}" * depth + "}"


def wide(width: int) -> str:
    return json.dumps({"location": "Paris", "wide": {f"k{i}": {"a": i} for i in range(width)}})


def chain(depth: int) -> str:
    return json.dumps({"location": "Paris", "chain": json.loads('{"a":' * depth + "[1,[2]]" + "}" * depth)})


def run(tmp_path, monkeypatch, invariant: str, raw: str) -> str:
    pb = PackBuilder(tmp_path)
    pb.contract("w", CONTRACT.format(invariant=invariant))
    pb.fixture("c.json", fixture(request(tools=TOOLS), response(call("get_weather", raw))))
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    res = CliRunner().invoke(cli, ["run", "--no-color", "-v"])
    assert time.monotonic() - started < 15, "the `..` walk took too long"
    assert res.exit_code in (0, 1) and "ERROR" not in res.output and "Traceback" not in res.output, res.output
    return res.output


@pytest.mark.parametrize("invariant", [EXISTS, NOT_EXISTS], ids=["exists", "inside-not"])
def test_arguments_nested_past_the_depth_bound_fail_the_invariant(tmp_path, monkeypatch, invariant):
    out = run(tmp_path, monkeypatch, invariant, nested(900))
    assert "FAIL" in out, out
    assert (f"$.tool_calls[0].arguments..a: a `..` segment met values nested deeper than {MAX_DESCENT_DEPTH} "
            "levels: not evaluated, so the invariant fails") in out


def test_arguments_too_deep_to_parse_are_malformed(tmp_path, monkeypatch):
    out = run(tmp_path, monkeypatch, EXISTS, nested(100_000))
    assert "malformed_arguments" in out


def test_very_wide_arguments_get_a_verdict(tmp_path, monkeypatch):
    out = run(tmp_path, monkeypatch, EXISTS, wide(100_000))
    assert "pass" in out and "FAIL" not in out, out[-2000:]


def test_a_path_that_fans_out_meets_the_node_budget(tmp_path, monkeypatch):
    out = run(tmp_path, monkeypatch, FAN_OUT, chain(90))
    assert "FAIL" in out and f"would visit more than {MAX_DESCENT_NODES:,} values" in out, out[-2000:]


def test_the_python_api_stops_on_deep_documents_without_recursion():
    deep = leaf = {}
    for _ in range(100_000):
        leaf["a"] = {}
        leaf = leaf["a"]
    for path in ("$..a", "$[?@..a]", "$..a..b"):
        with pytest.raises(DescentLimit):
            api.query(path, [deep])
    shallow = json.loads('{"a":' * MAX_DESCENT_DEPTH + "1" + "}" * MAX_DESCENT_DEPTH)
    assert len(api.query("$..a", shallow)) == MAX_DESCENT_DEPTH  # within the bound: every match


def test_the_query_command_says_why(tmp_path, monkeypatch):
    path = tmp_path / "f.json"
    path.write_text(json.dumps(fixture(request(), response(call("get_weather", nested(300))))), "utf-8")
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(cli, ["query", "$..a", "f.json"])
    assert res.exit_code == 2 and "nested deeper than 100 levels" in res.output, res.output


def test_tool_replay_and_redaction_paths_on_deep_values_say_so():
    from replayci.engine import agent, recordings
    from replayci.pack.model import ToolReplay

    deep = json.loads(nested(300))
    assert agent.key_arguments(deep, ("$..a",)) == {"$..a": "(not evaluated: a `..` segment met values nested "
                                                             "deeper than 100 levels)"}
    for config in (ToolReplay(keep=("$..a",)), ToolReplay(drop=("$..secret",))):
        assert agent.sanitize(deep, config).startswith("(not recorded: a `..` segment")  # never unsanitized
    with pytest.raises(recordings.NotWritten, match=r"recording not written: redact.fields \$..secret: "):
        recordings.redact({"response": deep}, ("$..secret",))
