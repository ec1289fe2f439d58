"""Bad packs, configs and flags are refused with exit code 2 and a located message.

Every test starts from a copy of the starter pack that passes (exit 0), breaks one thing,
runs the real CLI (`run` and `validate`), and checks: exit code 2, no traceback, the
offending file's `path:LINE`, and the key words of the message ("did you mean" included).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import warmed
from click.testing import CliRunner

import replayci
from replayci.cli import cli

TEMPLATES = Path(replayci.__file__).parent / "tools" / "templates"
PACK = "packs/starter"
CONTRACT = f"{PACK}/contracts/get_weather.yaml"
SUCCESS = f"{PACK}/golden/get_weather.success.json"
WRONG_TOOL = f"{PACK}/golden/negative/get_weather.wrong_tool.json"
ALLOWLIST = f"{PACK}/nr-allowlist.json"
PACK_YAML = f"{PACK}/pack.yaml"
CONFIG = ".replayci.yml"


# ------------------------------------------------------------------ helpers


def make_project(root: Path) -> Path:
    """A project with the starter pack and a .replayci.yml: `replayci` exits 0 here."""
    shutil.copytree(TEMPLATES / "starter", root / PACK)
    shutil.copy(TEMPLATES / "replayci.yml", root / CONFIG)
    return root


def edit(root: Path, rel: str, old: str, new: str, count: int = 1) -> None:
    """Replace *old* (which must be there) by *new* in a project file."""
    path = root / rel
    text = path.read_text("utf-8")
    assert old in text, f"{old!r} not in {rel}"
    path.write_text(text.replace(old, new, count), "utf-8")


def append(root: Path, rel: str, text: str) -> None:
    with open(root / rel, "a", encoding="utf-8") as fh:
        fh.write(text)


def line_of(root: Path, rel: str, needle: str, nth: int = 1) -> int:
    """The 1-based line of the *nth* line of a project file that contains *needle*."""
    seen = 0
    with open(root / rel, "rb") as fh:
        for number, line in enumerate(fh, 1):
            if needle.encode("utf-8") in line:
                seen += 1
                if seen == nth:
                    return number
    raise AssertionError(f"{needle!r} not found {nth} time(s) in {rel}")


def at(root: Path, rel: str, needle: str, nth: int = 1) -> str:
    """'file:LINE:' for the line holding *needle* (what the message must name)."""
    return f"{rel}:{line_of(root, rel, needle, nth)}:"


def invoke(root: Path, args: list[str], monkeypatch, env: dict | None = None) -> tuple[int, str]:
    monkeypatch.chdir(root)
    for var in ("REPLAYCI_PROVIDER", "REPLAYCI_MODEL", "REPLAYCI_REPLAY", "REPLAYCI_JOBS",
                "REPLAYCI_BASE_URL", "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(var, raising=False)
    for var, value in (env or {}).items():
        monkeypatch.setenv(var, value)
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.output


def run_subprocess(root: Path, args: list[str]) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("REPLAYCI_", "GITHUB_"))}
    proc = subprocess.run([*warmed.cli(env), *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=60)
    return proc.returncode, proc.stdout + proc.stderr


@dataclass
class Expect:
    """What a refused run must print."""

    where: list[str]                    # 'file:LINE:' (or a bare file / flag) that must appear
    words: list[str]                    # key words of the message(s)
    args: list[str] = field(default_factory=list)   # extra `run` flags
    validate: bool = True               # `replayci validate` must refuse it the same way
    run: bool = True                    # `replayci run` must refuse it
    absent: list[str] = field(default_factory=list)  # must NOT appear (e.g. a secret)


def check_refused(code: int, out: str, expect: Expect, what: str) -> None:
    assert code == 2, f"{what}: exit {code}, expected 2\n{out}"
    assert "Traceback" not in out, f"{what}: traceback\n{out}"
    assert "internal error" not in out, f"{what}: internal error\n{out}"
    for where in expect.where:
        assert where in out, f"{what}: {where!r} not in output\n{out}"
    for word in expect.words:
        assert word in out, f"{what}: {word!r} not in output\n{out}"
    for word in expect.absent:
        assert word not in out, f"{what}: {word!r} must not be printed\n{out}"


CASES: dict[str, Callable[[Path], Expect]] = {}


def case(fn: Callable[[Path], Expect]) -> Callable[[Path], Expect]:
    CASES[fn.__name__] = fn
    return fn


# ------------------------------------------------------------------ contracts


@case
def unknown_contract_key(root):
    edit(root, CONTRACT, "assertions:", "asertions:")
    return Expect([at(root, CONTRACT, "asertions:")],
                  ["unknown key 'asertions'", "did you mean 'assertions'?"])


@case
def unknown_case_key(root):
    edit(root, CONTRACT, "    expected_error: wrong_tool", "    expected_eror: wrong_tool")
    return Expect([at(root, CONTRACT, "expected_eror")],
                  ["unknown key 'expected_eror'", "did you mean 'expected_error'?"])


@case
def unknown_operator(root):
    edit(root, CONTRACT, "      equals: get_weather", "      equal: get_weather")
    return Expect([at(root, CONTRACT, "equal: get_weather")],
                  ["unknown operator 'equal'", "did you mean 'equals'?"])


@case
def unknown_type_name(root):
    edit(root, CONTRACT, "      type: string", "      type: strng")
    return Expect([at(root, CONTRACT, "type: strng")],
                  ["operator 'type' takes a JSON type name", "did you mean 'string'?"])


@case
def unknown_expected_error(root):
    edit(root, CONTRACT, "expected_error: tool_not_invoked", "expected_error: tool_not_invokd")
    return Expect([at(root, CONTRACT, "tool_not_invokd")],
                  ["expected a classification", "did you mean 'tool_not_invoked'?"])


@case
def unknown_category(root):
    edit(root, CONTRACT, "category: happy_path", "category: happy-path")
    return Expect([at(root, CONTRACT, "happy-path")],
                  ["'happy_path', 'edge_case'", "did you mean 'happy_path'?"])


@case
def unknown_provider_mode(root):
    edit(root, CONTRACT, "provider_modes: [recorded]", "provider_modes: [recoded]")
    return Expect([at(root, CONTRACT, "[recoded]")],
                  ["a list of providers ('recoded' is not allowed)", "did you mean 'recorded'?"])


@case
def unknown_tool_order(root):
    edit(root, CONTRACT, "tool: get_weather\n", "tool: get_weather\ntool_order: strikt\n")
    return Expect([at(root, CONTRACT, "tool_order: strikt")],
                  ["'any' or 'strict'", "did you mean 'strict'?"])


@case
def gte_given_a_string(root):
    edit(root, CONTRACT, "      type: string", '      type: string\n      length_gte: 1\n'
         '    - path: "$.usage.input_tokens"\n      gte: "5"')
    return Expect([at(root, CONTRACT, 'gte: "5"')], ["operator 'gte' takes a number", '"5"'])


@case
def exists_given_yes(root):
    edit(root, CONTRACT, "      exists: true", '      exists: "yes"')
    return Expect([at(root, CONTRACT, 'exists: "yes"')], ["operator 'exists' takes true or false"])


@case
def negative_length(root):
    edit(root, CONTRACT, "      type: string", "      type: string\n      length_eq: -1")
    return Expect([at(root, CONTRACT, "length_eq: -1")],
                  ["operator 'length_eq' takes a whole number >= 0", "-1"])


@case
def one_of_given_a_number(root):
    edit(root, CONTRACT, "      equals: get_weather", "      one_of: 3")
    return Expect([at(root, CONTRACT, "one_of: 3")], ["operator 'one_of' takes a list"])


@case
def invalid_jsonpath(root):
    edit(root, CONTRACT, '"$.tool_calls[0].name"', '"$.tool_calls["')
    return Expect([at(root, CONTRACT, '"$.tool_calls["')], ["invalid JSONPath", "$.tool_calls["])


@case
def invalid_regex(root):
    edit(root, CONTRACT, "      type: string", '      regex: "(["')
    return Expect([at(root, CONTRACT, 'regex: "(["')], ["invalid regular expression", "(["])


@case
def invalid_matches_schema(root):
    edit(root, CONTRACT, "      type: string", "      matches_schema: {type: strin}")
    return Expect([at(root, CONTRACT, "matches_schema:")], ["invalid JSON Schema", "strin"])


@case
def invalid_arguments_schema(root):
    edit(root, CONTRACT, "tool: get_weather\n",
         "tool: get_weather\narguments_schema:\n  type: object\n  required: location\n")
    return Expect([at(root, CONTRACT, "arguments_schema:")],
                  ["invalid JSON Schema", "(at /required)"])  # where in the schema; the rest is jsonschema's wording


@case
def invariant_without_operator(root):
    edit(root, CONTRACT, '    - path: "$.tool_calls[0].name"\n      equals: get_weather\n',
         '    - path: "$.tool_calls[0].name"\n')
    return Expect([at(root, CONTRACT, '- path: "$.tool_calls[0].name"')],
                  ["an invariant needs at least one operator", "equals"])


@case
def invariant_without_path(root):
    edit(root, CONTRACT, '    - path: "$.tool_calls[0].name"\n      equals: get_weather\n',
         '    - equals: get_weather\n')
    return Expect([at(root, CONTRACT, "- equals: get_weather")],
                  ["missing required key 'path'", "JSONPath"])


@case
def empty_tool_name(root):
    edit(root, CONTRACT, "tool: get_weather", 'tool: ""')
    return Expect([at(root, CONTRACT, 'tool: ""')], ["expected a tool name", '""'])


@case
def unknown_tool_name(root):
    # Only `validate` reads every fixture's declared tools before running; `run` reports
    # the cases as wrong_tool failures (exit 1) instead (see the report to the lead).
    edit(root, CONTRACT, "tool: get_weather", "tool: get_wether")
    return Expect([at(root, CONTRACT, "tool: get_wether")],
                  ["1 problem,", "tool 'get_wether' is not declared", "(and 5 more fixtures)",
                   "did you mean 'get_weather'?"], run=False)


@case
def multi_tool_call_without_expect_tools(root):
    edit(root, CONTRACT, "tool: get_weather", "tool: multi_tool_call")
    return Expect([at(root, CONTRACT, "tool: multi_tool_call")],
                  ["multi_tool_call needs expect_tools", "or expected_tool_calls"])


@case
def duplicate_yaml_key(root):
    edit(root, CONTRACT, "description: The", "tool: get_time\ndescription: The")
    return Expect([at(root, CONTRACT, "tool: get_time")],
                  ["duplicate key 'tool'",
                   f"first given at line {line_of(root, CONTRACT, 'tool: get_weather')}"])


@case
def duplicate_case_id(root):
    edit(root, CONTRACT, "  - id: wrong_tool", "  - id: tool_not_invoked")
    return Expect([at(root, CONTRACT, "id: tool_not_invoked", nth=2)],
                  ["duplicate case id 'tool_not_invoked'",
                   f"first at line {line_of(root, CONTRACT, 'id: tool_not_invoked')}"])


@case
def pass_threshold_out_of_range(root):
    edit(root, CONTRACT, "tool: get_weather\n", "tool: get_weather\npass_threshold: 1.5\n")
    return Expect([at(root, CONTRACT, "pass_threshold")], ["a number from 0 to 1", "1.5"])


@case
def retry_on_unknown_kind(root):
    append(root, CONTRACT, "retries:\n  retry_on: [\"429\", timout]\n")
    return Expect([at(root, CONTRACT, "retry_on:")], ["'timeout'", "did you mean 'timeout'?"])


@case
def yaml_syntax_error(root):
    edit(root, CONTRACT, "tool: get_weather", "tool: get_weather: now")
    return Expect([at(root, CONTRACT, "tool: get_weather: now")],
                  ["invalid YAML", "mapping values are not allowed"])


@case
def yaml_tab_indentation(root):
    edit(root, CONTRACT, "  output_invariants:", "\toutput_invariants:")
    return Expect([at(root, CONTRACT, "\toutput_invariants:")], ["invalid YAML"])


@case
def second_yaml_document(root):
    append(root, CONTRACT, "---\ntool: get_time\n")
    return Expect([at(root, CONTRACT, "---")], ["one YAML document per file", "second"])


@case
def yaml_control_character(root):
    path = root / CONTRACT
    path.write_bytes(path.read_bytes().replace(b"answers weather", b"answers\x00weather", 1))
    return Expect([at(root, CONTRACT, "answers\x00")],
                  ["invalid YAML", "control characters are not allowed", "U+0000"])


@case
def unsupported_yaml_tag(root):
    edit(root, CONTRACT, "description: The assistant",
         "description: !!python/object/apply:os.system [echo pwned]\nx: The assistant")
    return Expect([at(root, CONTRACT, "!!python/object")], ["unsupported YAML tag"])


@case
def unknown_yaml_alias(root):
    edit(root, CONTRACT, "tool: get_weather", "tool: *nowhere")
    return Expect([at(root, CONTRACT, "tool: *nowhere")], ["nowhere"])


@case
def yaml_alias_bomb(root):
    lines = ["lol0: &l0 lol"]
    for level in range(1, 10):
        refs = ", ".join([f"*l{level - 1}"] * 10)
        lines.append(f"lol{level}: &l{level} [{refs}]")
    append(root, CONTRACT, "\n".join(lines) + "\n")
    return Expect([at(root, CONTRACT, "lol6:")], ["alias expansion exceeds", "alias bomb"])


@case
def yaml_deep_flow_sequence(root):
    edit(root, CONTRACT, "tool: get_weather", "tool: " + "[" * 10_000 + "]" * 10_000)
    return Expect([at(root, CONTRACT, "tool: [[[")], ["nesting deeper than"])


@case
def non_utf8_contract(root):
    path = root / CONTRACT
    data = path.read_bytes().replace(b"answers weather", b"answers w\xe9ather", 1)
    path.write_bytes(data)
    return Expect([at(root, CONTRACT, "answers w")], ["not valid UTF-8", "0xe9"])


@case
def empty_contract(root):
    (root / CONTRACT).write_text("# nothing yet\n", "utf-8")
    return Expect([f"{CONTRACT}:1:"], ["the contract is empty", "golden_cases"])


@case
def contract_not_a_mapping(root):
    (root / CONTRACT).write_text("- tool: get_weather\n", "utf-8")
    return Expect([f"{CONTRACT}:1:"], ["expected a mapping", "got a list"])


@case
def case_id_not_a_string(root):
    edit(root, CONTRACT, "  - id: wrong_tool", "  - id: [wrong_tool]")
    return Expect([at(root, CONTRACT, "id: [wrong_tool]")],
                  ["expected a case id", '["wrong_tool"]'])


@case
def case_id_is_a_path(root):
    # a case id names its recording file (recordings/<contract>/<id>.json): no escaping
    edit(root, CONTRACT, "  - id: wrong_tool", "  - id: ../../../../outside")
    return Expect([at(root, CONTRACT, "id: ../../../../outside")],
                  ["expected a case id", "no '/'", '"../../../../outside"'])


@case
def expect_ok_not_a_bool(root):
    edit(root, CONTRACT, "    expect_ok: false", '    expect_ok: "no"')
    return Expect([at(root, CONTRACT, 'expect_ok: "no"')], ["expected true or false", '"no"'])


@case
def golden_cases_not_a_list(root):
    text = (root / CONTRACT).read_text("utf-8")
    (root / CONTRACT).write_text(text.split("golden_cases:")[0]
                                 + "golden_cases: get_weather.success.json\n", "utf-8")
    return Expect([at(root, CONTRACT, "golden_cases:")], ["expected a list of golden cases"])


@case
def invariants_not_a_list(root):
    edit(root, CONTRACT, '  output_invariants:\n    - path: "$.tool_calls[0].name"\n'
         '      equals: get_weather\n',
         '  output_invariants:\n    path: "$.tool_calls[0].name"\n    equals: get_weather\n')
    # the next list item no longer belongs: keep the file valid YAML by dropping it
    edit(root, CONTRACT,
         '    - path: "$.tool_calls[0].arguments.location"\n      type: string\n', "")
    return Expect([at(root, CONTRACT, "output_invariants:")],
                  ["1 problem,", "expected a list of invariants"])


@case
def timeout_not_a_number(root):
    append(root, CONTRACT, "timeouts:\n  total_ms: 30s\n")
    return Expect([at(root, CONTRACT, "total_ms:")], ["a whole number of milliseconds", '"30s"'])


@case
def argument_invariant_unknown_operator(root):
    edit(root, CONTRACT, "tool: get_weather\n", "tool: get_weather\n"
         "expected_tool_calls:\n  - name: get_weather\n    argument_invariants:\n"
         '      - path: "$.location"\n        contain: Francisco\n')
    return Expect([at(root, CONTRACT, "contain: Francisco")],
                  ["expected_tool_calls[0].argument_invariants[0].contain",
                   "unknown operator 'contain'", "did you mean 'contains'?"])


@case
def expected_call_differs_from_tool(root):
    edit(root, CONTRACT, "tool: get_weather\n",
         "tool: get_weather\nexpected_tool_calls:\n  - name: get_time\n")
    return Expect([at(root, CONTRACT, "expected_tool_calls:")],
                  ["expected call 'get_time' differs from tool 'get_weather'", "multi_tool_call"])


@case
def expect_tools_without_multi(root):
    edit(root, CONTRACT, "tool: get_weather\n", "tool: get_weather\nexpect_tools: [get_weather]\n")
    return Expect([at(root, CONTRACT, "expect_tools:")],
                  ["expect_tools goes with tool: multi_tool_call"])


@case
def expect_tools_a_number(root):
    edit(root, CONTRACT, "tool: get_weather\n", "tool: multi_tool_call\nexpect_tools: 5\n")
    return Expect([at(root, CONTRACT, "expect_tools:")], ["expect_tools: expected a list of strings, got 5"])


@case
def expected_error_on_ok_case(root):
    edit(root, CONTRACT, "    category: happy_path",
         "    category: happy_path\n    expected_error: wrong_tool")
    return Expect([at(root, CONTRACT, "expected_error: wrong_tool")],
                  ["expected_error is for expect_ok: false cases"])


# ------------------------------------------------------------------ input_ref


@case
def input_ref_escapes(root):
    edit(root, CONTRACT, "input_ref: get_weather.success.json",
         "input_ref: ../../../secrets.json")
    (root / "secrets.json").write_text("{}", "utf-8")
    return Expect([at(root, CONTRACT, "../../../secrets.json")],
                  ["input_ref '../../../secrets.json' leaves the pack directory"])


@case
def input_ref_dotdot_inside(root):
    # `..` is refused even when the resolved file would stay inside the pack.
    edit(root, CONTRACT, "input_ref: get_weather.success.json",
         "input_ref: negative/../get_weather.success.json")
    return Expect([at(root, CONTRACT, "negative/../")], ["leaves the pack directory"])


@case
def input_ref_absolute(root):
    target = (root / SUCCESS).resolve()
    edit(root, CONTRACT, "input_ref: get_weather.success.json", f"input_ref: {target}")
    return Expect([at(root, CONTRACT, f"input_ref: {target}")],
                  ["must be relative to the golden directory"])


@case
def input_ref_symlink_outside(root):
    outside = root / "elsewhere.json"
    shutil.copy(root / SUCCESS, outside)
    (root / SUCCESS).unlink()
    os.symlink(outside, root / SUCCESS)
    return Expect([at(root, CONTRACT, "input_ref: get_weather.success.json")],
                  ["is a link that leaves the pack"])


@case
def missing_fixture(root):
    edit(root, CONTRACT, "input_ref: get_weather.success.json",
         "input_ref: get_weather.sucess.json")
    return Expect([at(root, CONTRACT, "get_weather.sucess.json")],
                  ["does not exist", "did you mean 'get_weather.success.json'?"])


# ------------------------------------------------------------------ fixtures


@case
def duplicate_json_key(root):
    edit(root, SUCCESS, '"tool_choice": "auto",', '"tool_choice": "auto",\n    "temperature": 1,')
    first = line_of(root, SUCCESS, '"temperature": 1')
    return Expect([at(root, SUCCESS, '"temperature"', nth=2)],
                  ["duplicate key 'temperature'", f"first given at line {first}"])


@case
def fixture_not_json(root):
    edit(root, SUCCESS, '"tool_choice": "auto",', '"tool_choice": auto,')
    return Expect([at(root, SUCCESS, '"tool_choice": auto')], ["invalid JSON", "Expecting value"])


@case
def fixture_trailing_comma(root):
    edit(root, SUCCESS, '"temperature": 0\n', '"temperature": 0,\n')
    # the comma is named, not the closing brace on the next line that `json` complains about
    return Expect([at(root, SUCCESS, '"temperature": 0,')], ["invalid JSON", "trailing comma"])


@case
def fixture_nan(root):
    edit(root, SUCCESS, '"temperature": 0', '"temperature": NaN')
    return Expect([at(root, SUCCESS, '"temperature": NaN')],
                  ["invalid JSON", "NaN is not a JSON number"])


@case
def fixture_unknown_response_shape(root):
    data = json.loads((root / SUCCESS).read_text("utf-8"))
    data["response"] = {"result": "sunny", "tools_called": ["get_weather"]}
    (root / SUCCESS).write_text(json.dumps(data, indent=2), "utf-8")
    return Expect([at(root, SUCCESS, '"response"')], ["unknown response shape", "choices"])


@case
def fixture_unknown_top_key(root):
    edit(root, SUCCESS, '"request": {', '"reqest": {')
    return Expect([at(root, SUCCESS, '"reqest"')],
                  ["unknown key 'reqest'", "did you mean 'request'?"])


@case
def fixture_messages_not_a_list(root):
    data = json.loads((root / SUCCESS).read_text("utf-8"))
    data["request"]["messages"] = "What is the weather in Paris?"
    (root / SUCCESS).write_text(json.dumps(data, indent=2), "utf-8")
    return Expect([at(root, SUCCESS, '"messages"')], ["'messages' must be a list"])


@case
def fixture_deep_json(root):
    depth = 100_000
    edit(root, WRONG_TOOL, '"temperature": 0', '"temperature": 0,\n    "x": '
         + "[" * depth + "]" * depth)
    return Expect([at(root, WRONG_TOOL, '"x": [[[')], ["nesting", "deep"])


@case
def fixture_non_utf8(root):
    path = root / SUCCESS
    path.write_bytes(path.read_bytes().replace(b"San Francisco?", b"San Francisco\xff?", 1))
    return Expect([at(root, SUCCESS, "San Francisco")], ["not valid UTF-8", "0xff"])


@case
def fixture_not_an_object(root):
    (root / SUCCESS).write_text('\n["request", "response"]\n', "utf-8")
    return Expect([f"{SUCCESS}:1:"], ["expected a JSON object with request and response"])


@case
def fixture_empty_file(root):
    (root / SUCCESS).write_text("", "utf-8")
    return Expect([f"{SUCCESS}:1:"], ["invalid JSON", "Expecting value"])


@case
def fixture_unknown_boundary_key(root):
    edit(root, SUCCESS, '"message_hash"', '"messages_hash"')
    return Expect([at(root, SUCCESS, '"messages_hash"')],
                  ["unknown key 'messages_hash'", "did you mean 'message_hash'?"])


@case
def recording_bad_shape(root):
    rel = f"{PACK}/recordings/get_weather/tool_call_success.json"
    (root / rel).parent.mkdir(parents=True)
    (root / rel).write_text('{\n  "meta": {"recorded_at": "2099-01-01T00:00:00Z"},\n'
                            '  "respons": {}\n}\n', "utf-8")
    return Expect([at(root, rel, '"respons"')],
                  ["unknown key 'respons'", "did you mean 'response'?"])


# ------------------------------------------------------------------ pack.yaml


@case
def pack_without_pack_id(root):
    edit(root, PACK_YAML, "pack_id: starter\n", "")
    return Expect([f"{PACK_YAML}:1:"], ["missing required key 'pack_id'"])


@case
def bad_pack_id(root):
    edit(root, PACK_YAML, "pack_id: starter", "pack_id: Starter Pack")
    return Expect([at(root, PACK_YAML, "pack_id:")],
                  ["pack_id", "lowercase letters", "Starter Pack"])


@case
def unknown_pack_key(root):
    edit(root, PACK_YAML, "default_model:", "defualt_model:")
    return Expect([at(root, PACK_YAML, "defualt_model")],
                  ["unknown key 'defualt_model'", "did you mean 'default_model'?"])


@case
def pack_provider_unknown(root):
    edit(root, PACK_YAML, "provider: recorded", "provider: antropic")
    return Expect([at(root, PACK_YAML, "provider: antropic")],
                  ["'recorded', 'openai', 'openai-responses', 'anthropic', 'gemini' or 'bedrock'",
                   "did you mean 'anthropic'?"])


@case
def listed_contract_missing(root):
    append(root, PACK_YAML, "contracts:\n  - get_weathr.yaml\n")
    return Expect([at(root, PACK_YAML, "get_weathr.yaml")],
                  ["contract file 'get_weathr.yaml' not found",
                   "did you mean 'get_weather.yaml'?"])


@case
def paths_leave_pack(root):
    (root / "shared-golden").mkdir()
    append(root, PACK_YAML, "paths:\n  golden_dir: ../../shared-golden\n")
    return Expect([at(root, PACK_YAML, "golden_dir:")], ["1 problem,", "golden_dir",
                                                         "leaves the pack directory"])


@case
def empty_pack_yaml(root):
    (root / PACK_YAML).write_text("", "utf-8")
    return Expect([f"{PACK_YAML}:1:"], ["missing required key 'pack_id'"])


@case
def contracts_dir_missing(root):
    append(root, PACK_YAML, "paths:\n  contracts_dir: contract\n")
    return Expect([at(root, PACK_YAML, "contracts_dir:")],
                  ["contracts directory", "does not exist"])


@case
def duplicate_pack_id(root):
    shutil.copytree(root / PACK, root / "packs" / "copy")
    edit(root, CONFIG, "provider: recorded", "packs: [packs/starter, packs/copy]\nprovider: recorded")
    return Expect([at(root, "packs/copy/pack.yaml", "pack_id:")],
                  ["pack_id 'starter' is also used by packs/starter"])


# ------------------------------------------------------------------ nr-allowlist.json


def _allow(root, **override) -> None:
    entry = {"contract_path": "contracts/get_weather.yaml", "case_id": "tool_call_success",
             "reason_code": "model_nondeterminism", "owner": "qa", "expiry_date": "2099-01-01",
             "rationale": "provider flakiness"}
    entry.update(override)
    (root / ALLOWLIST).write_text(json.dumps([entry], indent=2), "utf-8")


@case
def allowlist_bad_date(root):
    _allow(root, expiry_date="2026-13-45")
    return Expect([at(root, ALLOWLIST, '"expiry_date"')], ["expected a date YYYY-MM-DD"])


@case
def allowlist_unknown_reason(root):
    _allow(root, reason_code="model_nondeterminsm")
    return Expect([at(root, ALLOWLIST, '"reason_code"')],
                  ["unknown reason_code 'model_nondeterminsm'",
                   "did you mean 'model_nondeterminism'?"])


@case
def allowlist_not_a_list(root):
    (root / ALLOWLIST).write_text('{"entries": []}\n', "utf-8")
    return Expect([f"{ALLOWLIST}:1:"], ["expected a list of allowlist entries"])


# ------------------------------------------------------------------ .replayci.yml


@case
def config_api_key(root):
    secret = "sk-" + "A1b2C3d4" * 4
    append(root, CONFIG, f"api_key: {secret}\n")
    return Expect([at(root, CONFIG, "api_key:")], ["API keys never live in files",
                                                    "REPLAYCI_PROVIDER_KEY"], absent=[secret])


@case
def config_value_looks_like_key(root):
    secret = "sk-proj-" + "Zz9Yy8Xx7" * 3
    append(root, CONFIG, f"model: {secret}\n")
    return Expect([at(root, CONFIG, "model:")], ["looks like an API key", "environment"],
                  absent=[secret])


@case
def config_unknown_key(root):
    edit(root, CONFIG, "provider: recorded", "provder: recorded")
    return Expect([at(root, CONFIG, "provder")],
                  ["unknown key 'provder'", "did you mean 'provider'?"])


@case
def config_unknown_provider(root):
    edit(root, CONFIG, "provider: recorded", "provider: opnai")
    return Expect([at(root, CONFIG, "provider: opnai")],
                  ["'recorded', 'openai', 'openai-responses', 'anthropic', 'gemini' or 'bedrock'",
                   "did you mean 'openai'?"])


@case
def config_unknown_replay_mode(root):
    append(root, CONFIG, "replay: strikt\n")
    return Expect([at(root, CONFIG, "replay:")], ["'auto', 'record', 'off' or 'strict'",
                                                   "did you mean 'strict'?"])


@case
def config_bad_gate(root):
    append(root, CONFIG, "gates:\n  pass_rate: 95\n")
    return Expect([at(root, CONFIG, "pass_rate")], ["a number from 0 to 1", "95"])


@case
def config_jobs_zero(root):
    append(root, CONFIG, "jobs: 0\n")
    return Expect([at(root, CONFIG, "jobs:")], ["a whole number >= 1"])


@case
def config_yaml_error(root):
    append(root, CONFIG, "reports: {json: out.json\n")
    # libyaml notices at the end of the file; the message also names where the mapping began
    return Expect([f"{CONFIG}:6:"], ["invalid YAML", "flow mapping started at line 5"])


@case
def config_pack_missing(root):
    edit(root, CONFIG, "provider: recorded", "pack: packs/startr\nprovider: recorded")
    return Expect([at(root, CONFIG, "pack: packs/startr")],
                  ["packs/startr", "no pack.yaml", "did you mean 'packs/starter'?"])


# ------------------------------------------------------------------ flags (run only)


@case
def config_not_utf8(root):
    with open(root / CONFIG, "ab") as fh:
        fh.write(b"model: gpt-4o-m\xefni\n")
    return Expect([f"{CONFIG}:5:"], ["not valid UTF-8"])


@case
def config_not_a_mapping(root):
    (root / CONFIG).write_text("- pack: packs/starter\n", "utf-8")
    return Expect([f"{CONFIG}:1:"], ["expected a mapping of settings"])


@case
def config_pack_and_packs(root):
    append(root, CONFIG, "pack: packs/starter\npacks: [packs/starter]\n")
    return Expect([at(root, CONFIG, "packs:")], ["either 'pack' or 'packs', not both"])


@case
def provider_flag_unknown(root):
    return Expect(["--provider"], ["'opnai'", "did you mean 'openai'?"],
                  args=["--provider", "opnai"], validate=False)


@case
def category_flag_unknown(root):
    return Expect(["--category"], ["'happy-path'", "did you mean 'happy_path'?"],
                  args=["--category", "happy-path"], validate=False)


@case
def filter_matches_nothing(root):
    return Expect(["--filter nothing/*"], ["no case matches"],
                  args=["--filter", "nothing/*"], validate=False)


@case
def pack_flag_missing(root):
    return Expect(["packs/startr"], ["no pack.yaml", "did you mean 'packs/starter'?"],
                  args=["--pack", "packs/startr"])


@case
def pack_flag_is_a_contract(root):
    return Expect([CONTRACT], ["not a pack", "did you mean 'packs/starter'?"],
                  args=["--pack", CONTRACT])


# ------------------------------------------------------------------ the tests


def test_starter_project_passes(tmp_path, monkeypatch):
    root = make_project(tmp_path)
    code, out = invoke(root, [], monkeypatch)
    assert code == 0, out
    code, out = invoke(root, ["validate"], monkeypatch)
    assert code == 0, out


def test_enough_distinct_bad_inputs():
    assert len(CASES) >= 30


@pytest.mark.parametrize("name", list(CASES))
def test_refused(name, tmp_path, monkeypatch):
    root = make_project(tmp_path)
    expect = CASES[name](root)
    if expect.run:
        code, out = invoke(root, ["run", *expect.args], monkeypatch)
        check_refused(code, out, expect, "run")
    if expect.validate:
        code, vout = invoke(root, ["validate", *expect.args], monkeypatch)
        check_refused(code, vout, expect, "validate")
        if expect.run:
            assert _problem_lines(vout) == _problem_lines(out), (out, vout)


def _problem_lines(out: str) -> list[str]:
    return sorted(line.strip() for line in out.splitlines() if line.startswith("  "))


SUBPROCESS_CASES = ["unknown_operator", "duplicate_json_key", "yaml_alias_bomb",
                    "fixture_deep_json", "config_api_key", "provider_flag_unknown",
                    "input_ref_symlink_outside"]


@pytest.mark.parametrize("name", SUBPROCESS_CASES)
def test_refused_subprocess(name, tmp_path):
    root = make_project(tmp_path)
    expect = CASES[name](root)
    code, out = run_subprocess(root, expect.args)
    check_refused(code, out, expect, "python -m replayci")


def test_all_problems_listed_in_one_run(tmp_path, monkeypatch):
    root = make_project(tmp_path)
    # a second contract, so two contract files can be broken independently
    shutil.copy(root / CONTRACT, root / PACK / "contracts" / "get_time.yaml")
    second = f"{PACK}/contracts/get_time.yaml"
    edit(root, PACK_YAML, "default_model:", "defualt_model:")
    edit(root, CONTRACT, "      equals: get_weather", "      equal: get_weather")
    edit(root, CONTRACT, "category: happy_path", "category: happy-path")
    edit(root, second, "input_ref: negative/get_weather.wrong_tool.json",
         "input_ref: negative/get_weather.wrongtool.json")
    edit(root, SUCCESS, '"tool_choice": "auto",', '"tool_choice": "auto",\n    "temperature": 1,')
    _allow(root, expiry_date="someday")
    expect = Expect(
        [at(root, PACK_YAML, "defualt_model"),
         at(root, CONTRACT, "equal: get_weather"),
         at(root, CONTRACT, "happy-path"),
         at(root, second, "get_weather.wrongtool.json"),
         at(root, SUCCESS, '"temperature"', nth=2),
         at(root, ALLOWLIST, '"expiry_date"')],
        ["did you mean 'default_model'?", "did you mean 'equals'?", "did you mean 'happy_path'?",
         "did you mean 'get_weather.wrong_tool.json'?", "duplicate key 'temperature'",
         "expected a date YYYY-MM-DD", "problems, nothing was run"])
    for command in (["run"], ["validate"]):
        code, out = invoke(root, command, monkeypatch)
        check_refused(code, out, expect, command[0])
        # the fixture is used by both contracts: its problem is listed once per file, not per use
        assert out.count("duplicate key 'temperature'") == 1, out


def test_shared_fixture_problem_listed_once(tmp_path, monkeypatch):
    # two contracts use the same (broken) fixture; the pack itself loads
    root = make_project(tmp_path)
    shutil.copy(root / CONTRACT, root / PACK / "contracts" / "get_time.yaml")
    edit(root, SUCCESS, '"tool_choice": "auto",', '"tool_choice": "auto",\n    "temperature": 1,')
    expect = Expect([at(root, SUCCESS, '"temperature"', nth=2)], ["duplicate key 'temperature'"])
    code, out = invoke(root, ["validate"], monkeypatch)
    check_refused(code, out, expect, "validate")
    assert out.count("duplicate key 'temperature'") == 1, out
    code, out = invoke(root, ["run"], monkeypatch)
    check_refused(code, out, expect, "run")
    assert out.count("duplicate key 'temperature'") == 1, out


def test_problems_of_every_pack_are_listed(tmp_path, monkeypatch):
    root = make_project(tmp_path)
    shutil.copytree(root / PACK, root / "packs" / "other")
    other = "packs/other"
    edit(root, f"{other}/pack.yaml", "pack_id: starter", "pack_id: other")
    edit(root, CONFIG, "provider: recorded", "packs: [packs/starter, packs/other]\nprovider: recorded")
    edit(root, f"{other}/contracts/get_weather.yaml", "      type: string", "      type: strng")
    edit(root, SUCCESS, '"tool_choice": "auto",', '"tool_choice": auto,')
    expect = Expect([at(root, f"{other}/contracts/get_weather.yaml", "type: strng"),
                     at(root, SUCCESS, '"tool_choice": auto')],
                    ["did you mean 'string'?", "invalid JSON"])
    for command in (["run"], ["validate"]):
        code, out = invoke(root, command, monkeypatch)
        check_refused(code, out, expect, command[0])


def _snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            st = p.lstat()
            data = b"" if p.is_symlink() else p.read_bytes()
            out[str(p.relative_to(root))] = (st.st_mtime_ns, data)
    return out


def test_refused_run_changes_nothing_on_disk(tmp_path, monkeypatch):
    root = make_project(tmp_path)
    report = root / "report.json"
    report.write_text('{"previous": "report"}\n', "utf-8")
    (root / "step-summary.md").write_text("# earlier step\n", "utf-8")
    github = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(root / "step-summary.md")}
    append(root, CONFIG, "reports: {junit: junit.xml, markdown: summary.md}\n")
    edit(root, CONTRACT, "      equals: get_weather", "      equal: get_weather")
    edit(root, WRONG_TOOL, '"tool_choice": "auto",',
         '"tool_choice": "auto",\n    "tool_choice": "none",')
    before = _snapshot(root)
    for args in (["--report-json", "report.json"], ["--json", "--report-json", "report.json"],
                 ["--provider", "recorded", "--report-json", "report.json"]):
        code, out = invoke(root, ["run", *args], monkeypatch, env=github)
        assert code == 2, out
        assert '"version"' not in out, out  # --json printed no report
    code, out = invoke(root, ["validate"], monkeypatch)
    assert code == 2, out
    assert _snapshot(root) == before
    assert not (root / "packs" / "starter" / "recordings").exists()


def test_fixture_problem_alone_changes_nothing_on_disk(tmp_path, monkeypatch):
    # the pack loads, the fixture is only read during the run: still nothing is written
    root = make_project(tmp_path)
    report = root / "report.json"
    report.write_text('{"previous": "report"}\n', "utf-8")
    edit(root, WRONG_TOOL, '"tool_choice": "auto",',
         '"tool_choice": "auto",\n    "tool_choice": "none",')
    before = _snapshot(root)
    code, out = invoke(root, ["run", "--report-json", "report.json"], monkeypatch)
    assert code == 2, out
    assert at(root, WRONG_TOOL, '"tool_choice"', nth=2) in out
    assert _snapshot(root) == before


def test_same_pack_twice_is_loaded_once(tmp_path, monkeypatch):
    root = make_project(tmp_path)
    code, out = invoke(root, ["run", "--pack", PACK, "--pack", PACK + "/"], monkeypatch)
    assert code == 0, out
    assert "6 cases" in out


def test_shard_malformed(tmp_path, monkeypatch):
    root = make_project(tmp_path)
    code, help_text = invoke(root, ["run", "--help"], monkeypatch)
    if "--shard" not in help_text:
        pytest.skip("run has no --shard flag yet")
    for bad in ("1of4", "0/4", "5/4", "1/0", "a/b", "1/2/3"):
        code, out = invoke(root, ["run", "--shard", bad], monkeypatch)
        check_refused(code, out, Expect(["--shard"], [repr(bad), "K"], validate=False), bad)


def test_oversize_contract_is_refused_quickly(tmp_path, monkeypatch):
    root = make_project(tmp_path)
    append(root, CONTRACT, "# " + "x" * (5 * 1024 * 1024) + "\n")
    expect = Expect([CONTRACT], ["bytes, over the limit"])
    for command in (["run"], ["validate"]):
        code, out = invoke(root, command, monkeypatch)
        check_refused(code, out, expect, command[0])
