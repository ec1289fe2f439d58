"""Hostile JSON Schemas and hostile model output: every one gets a verdict or a located pack
error (exit 2), never a case `error`, a fetch of a URL or file, or an unbounded wait."""
from __future__ import annotations

import json
import time

import pytest
from builders import PackBuilder, call, fixture, request, response
from click.testing import CliRunner

from replayci.checks.schemas import SchemaError, check_references, compile_schema
from replayci.cli import cli

CONTRACT = """
tool: get_weather
{extra}
assertions:
  output_invariants:
    - path: "$.tool_calls[0].name"
      equals: get_weather
{invariants}
golden_cases:
  - id: c1
    input_ref: c.json
"""


def tools(parameters) -> list:
    return [{"type": "function", "function": {"name": "get_weather", "parameters": parameters}}]


def run(tmp_path, monkeypatch, *, parameters=None, args=None, raw_args=None, extra="", invariants="",
        command="run"):
    """Run (or validate) a one-case pack; returns (exit code, output)."""
    pb = PackBuilder(tmp_path)
    pb.contract("w", CONTRACT.format(extra=extra, invariants=invariants))
    req = request(tools=tools(parameters) if parameters is not None else None)
    text = raw_args if raw_args is not None else json.dumps(args if args is not None else {"location": "Paris"})
    pb.fixture("c.json", fixture(req, response(call("get_weather", text))))
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(cli, [command, "--no-color"] if command == "run" else [command])
    return res.exit_code, res.output


def located_refusal(code: int, out: str, words: list[str]) -> None:
    assert code == 2, out
    assert "Traceback" not in out
    assert "packs/demo/" in out, out
    for word in words:
        assert word in out, out


REMOTE = ["http://127.0.0.1:9/schema.json", "file:///etc/passwd", "other.json", "/etc/passwd",
          "https://json-schema.org/draft/2020-12/schema"]


@pytest.mark.parametrize("ref", REMOTE)
@pytest.mark.parametrize("command", ["run", "validate"])
def test_tool_schema_with_a_non_local_ref_is_a_located_pack_error(tmp_path, monkeypatch, ref, command):
    params = {"type": "object", "properties": {"location": {"$ref": ref}}}
    code, out = run(tmp_path, monkeypatch, parameters=params, command=command)
    located_refusal(code, out, ["golden/c.json", "not a local reference", "never fetches"])


def test_arguments_schema_and_matches_schema_refuse_non_local_refs(tmp_path, monkeypatch):
    extra = 'arguments_schema:\n  type: object\n  properties:\n    location: {$ref: "http://127.0.0.1:9/x"}\n'
    code, out = run(tmp_path, monkeypatch, extra=extra)
    located_refusal(code, out, ["contracts/w.yaml", "arguments_schema", "not a local reference"])


def test_matches_schema_refuses_a_file_ref(tmp_path, monkeypatch):
    inv = '    - path: "$.tool_calls[0].arguments"\n      matches_schema: {$ref: "file:///etc/passwd"}\n'
    code, out = run(tmp_path, monkeypatch, invariants=inv)
    located_refusal(code, out, ["contracts/w.yaml", "matches_schema", "not a local reference"])


def test_ref_pointing_at_nothing_is_refused(tmp_path, monkeypatch):
    params = {"type": "object", "properties": {"location": {"$ref": "#/$defs/missing"}}}
    code, out = run(tmp_path, monkeypatch, parameters=params)
    located_refusal(code, out, ["refers to nothing"])


LOCAL = {"type": "object", "$defs": {"place": {"type": "string", "minLength": 2}},
         "properties": {"location": {"$ref": "#/$defs/place"}}, "required": ["location"]}


@pytest.mark.parametrize("location, verdict", [("Paris", "pass"), ("P", "FAIL")])
def test_local_refs_work(tmp_path, monkeypatch, location, verdict):
    code, out = run(tmp_path, monkeypatch, parameters=LOCAL, args={"location": location})
    assert verdict in out and "ERROR" not in out, out
    assert code == (0 if verdict == "pass" else 1)


@pytest.mark.parametrize("parameters", [
    {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
    {"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}},
     "properties": {"location": {"$ref": "#/$defs/a"}}},
    {"not": {"$ref": "#"}},
])
def test_a_ref_loop_that_never_descends_is_refused(tmp_path, monkeypatch, parameters):
    code, out = run(tmp_path, monkeypatch, parameters=parameters)
    located_refusal(code, out, ["refers back to itself"])


def test_a_schema_nested_hundreds_deep_is_refused(tmp_path, monkeypatch):
    schema: dict = {"type": "string"}
    for _ in range(200):
        schema = {"type": "object", "properties": {"a": schema}}
    code, out = run(tmp_path, monkeypatch, parameters={"type": "object", "properties": {"location": schema}})
    located_refusal(code, out, ["nested deeper than 128 levels"])


RECURSIVE = {"type": "object", "properties": {"location": {"$ref": "#/$defs/n"}},
             "$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}}


@pytest.mark.parametrize("depth, verdict", [(5, "pass"), (900, "FAIL")])
def test_recursive_schema_on_deep_arguments_gets_a_verdict(tmp_path, monkeypatch, depth, verdict):
    raw = '{"location":' + "[" * depth + "]" * depth + "}"
    code, out = run(tmp_path, monkeypatch, parameters=RECURSIVE, raw_args=raw)
    assert verdict in out and "ERROR" not in out, out
    if verdict == "FAIL":
        assert "nested too deeply to check" in out


def test_check_references_accepts_a_recursive_schema_that_descends():
    check_references(RECURSIVE)
    assert compile_schema(RECURSIVE, check=True).is_valid({"location": [[[]]]})
    with pytest.raises(SchemaError):
        check_references({"$ref": "#/nowhere"})


# ---------------------------------------------------------------- what a model says


@pytest.mark.parametrize("raw, verdict", [
    ('{"location":' + "[" * 100_000 + "]" * 100_000 + "}", "malformed_arguments"),
    ('{"location":' + "{\"a\":" * 100_000 + "1" + "}" * 100_000 + "}", "malformed_arguments"),
    ('{"location":"\\ud800 lone"}', "pass"),
    ('{"location":"\\udfff\\ud800"}', "pass"),
    ('{"location":NaN}', "malformed_arguments"),  # NaN is not JSON: the application's parser refuses it
    ('{"location":Infinity}', "malformed_arguments"),
])
def test_hostile_arguments_get_a_verdict(tmp_path, monkeypatch, raw, verdict):
    code, out = run(tmp_path, monkeypatch, raw_args=raw)
    assert "ERROR" not in out and "Traceback" not in out, out
    assert verdict in out, out


def test_unique_items_on_a_large_array_is_bounded_in_time(tmp_path, monkeypatch):
    params = {"type": "object", "properties": {"location": {"type": "array", "uniqueItems": True}}}
    for items, verdict in ((list(range(30_000)), "pass"), ([{"a": i} for i in range(30_000)] + [{"a": 1.0}], "FAIL")):
        start = time.monotonic()
        code, out = run(tmp_path, monkeypatch, parameters=params, args={"location": items})
        assert time.monotonic() - start < 10, "uniqueItems took too long"
        assert verdict in out and "ERROR" not in out, out[-500:]
        assert len(out) < 2000  # the array is not repeated whole


def test_unique_items_beyond_the_plain_subset_is_bounded_too():
    schema = {"type": "array", "uniqueItems": True, "contains": {"type": "integer"}}
    compiled = compile_schema(schema, check=True)
    start = time.monotonic()
    assert compiled.is_valid(list(range(30_000)))
    assert not compiled.is_valid([[1, {"a": 1}], [1.0, {"a": 1.0}]])
    assert compiled.is_valid([True, 1])
    assert time.monotonic() - start < 5
