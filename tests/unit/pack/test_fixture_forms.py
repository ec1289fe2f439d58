"""Fixtures may write their request in any API's form: it is read in the neutral form, so input
invariants and boundary hashes are the same whatever form a fixture was written in."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from builders import WEATHER_TOOLS, call, fixture, request, response
from click.testing import CliRunner

from replayci.cli import cli
from replayci.core.hashing import boundary_hashes
from replayci.formats import from_neutral
from replayci.pack.fixtures import load_fixture

NEUTRAL = request()


def _upper(schema):
    """A JSON Schema with the upper-case type names the Gemini SDK sends."""
    if isinstance(schema, dict):
        return {k: (v.upper() if k == "type" else _upper(v)) for k, v in schema.items()}
    return schema


# Written by hand, as each API's documentation shows a request.
ANTHROPIC = {
    "model": "gpt-4o-mini", "system": "Use the tools.", "temperature": 0,
    "messages": [{"role": "user", "content": "Weather in Paris?"}],
    "tools": [{"name": t["function"]["name"], "description": t["function"]["description"],
               "input_schema": t["function"]["parameters"]} for t in WEATHER_TOOLS],
    "tool_choice": {"type": "auto"},
}
GEMINI = {
    "model": "gpt-4o-mini",
    "systemInstruction": {"parts": [{"text": "Use the tools."}]},
    "contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}],
    "tools": [{"functionDeclarations": [{"name": t["function"]["name"], "description": t["function"]["description"],
                                         "parameters": _upper(t["function"]["parameters"])} for t in WEATHER_TOOLS]}],
    "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
    "generationConfig": {"temperature": 0},
}
FORMS = {"chat": NEUTRAL, "anthropic-by-hand": ANTHROPIC, "gemini-by-hand": GEMINI,
         **{name: from_neutral(NEUTRAL, name) for name in ("openai-responses", "anthropic", "gemini", "bedrock",
                                                           "ollama")}}

CONTRACT = """\
tool: get_weather
assertions:
  input_invariants:
    - path: $.messages[0]
      equals: {role: system, content: Use the tools.}
    - path: $.messages[1].content
      equals: Weather in Paris?
    - path: $.tools[*].function.name
      one_of: [get_weather, get_time]
    - path: $.temperature
      equals: 0
golden_cases:
  - id: c
    input_ref: w.c.json
"""


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_fixture_in_any_form_reads_as_the_neutral_request(form, pack):
    pack.contract("w", CONTRACT)
    boundary = {"model": "gpt-4o-mini", **boundary_hashes(NEUTRAL)}  # pinned from the chat form
    path = pack.fixture("w.c.json", {"boundary": boundary, "request": FORMS[form],
                                     "response": response(call("get_weather", {"location": "Paris"}))})
    loaded = load_fixture(str(path), "w.c.json")
    assert boundary_hashes(loaded.request) == boundary_hashes(NEUTRAL)
    assert loaded.tools_key == json.dumps(WEATHER_TOOLS, sort_keys=True, separators=(",", ":"))
    res = CliRunner().invoke(cli, ["run", "--no-color", "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    (case,) = json.loads(res.stdout)["cases"]
    assert case["status"] == "pass", case


def test_schema_checks_use_the_tools_of_any_form(pack):
    pack.contract("w", CONTRACT)
    pack.fixture("w.c.json", fixture(GEMINI, resp=response(call("get_weather", {"location": 3})), pin=False))
    res = CliRunner().invoke(cli, ["run", "--no-color", "--json"], catch_exceptions=False)
    (case,) = json.loads(res.stdout)["cases"]
    assert (case["status"], case["classification"]) == ("fail", "schema_violation")


def test_a_request_that_cannot_be_converted_is_a_located_pack_error(pack):
    pack.contract("w", CONTRACT)
    bad = {**ANTHROPIC, "system": [{"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}]}
    pack.fixture("w.c.json", {"request": bad, "response": response(content="hi")})
    res = CliRunner().invoke(cli, ["run", "--no-color"], catch_exceptions=False)
    assert res.exit_code == 2
    assert "golden/w.c.json:2:" in res.output and "anthropic form" in res.output
    assert "cannot be converted to the neutral form" in res.output and "only text parts" in res.output
    assert "Traceback" not in res.output
    res = CliRunner().invoke(cli, ["validate"], catch_exceptions=False)
    assert res.exit_code == 2 and "cannot be converted" in res.output


def _docs_examples() -> list[dict]:
    """The example fixture of each format in docs/formats.md."""
    text = (Path(__file__).resolve().parents[3] / "docs" / "formats.md").read_text("utf-8")
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)\n```", text, re.S)]


DOCS_CONTRACT = """\
tool: get_weather
assertions:
  input_invariants:
    - {path: "$.messages[0].content", equals: Use the tools.}
    - {path: "$.messages[1].content", equals: Weather in Paris?}
    - {path: "$.tools[0].function.name", equals: get_weather}
  output_invariants:
    - {path: "$.tool_calls[0].arguments.city", equals: Paris}
golden_cases:
"""


def test_the_docs_example_of_each_format_passes(pack):
    examples = _docs_examples()
    assert len(examples) == 6
    lines = [DOCS_CONTRACT.rstrip("\n")]
    for i, example in enumerate(examples):
        pack.fixture(f"w.f{i}.json", example)
        lines.append(f"  - {{id: f{i}, input_ref: w.f{i}.json}}")
    pack.contract("w", "\n".join(lines) + "\n")
    res = CliRunner().invoke(cli, ["run", "--no-color", "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert [c["status"] for c in json.loads(res.stdout)["cases"]] == ["pass"] * 6


def test_a_chat_request_with_flat_tools_stays_as_written(pack):
    flat = {"messages": [{"role": "system", "content": "Use the tools."},
                         {"role": "assistant", "content": None, "tool_calls": [call("get_time", {"timezone": "CET"})]},
                         {"role": "tool", "tool_call_id": "call_1", "content": "12:00"},
                         {"role": "user", "content": "Weather in Paris?"}],
            "tools": [{"name": t["function"]["name"], "parameters": t["function"]["parameters"]}
                      for t in WEATHER_TOOLS]}
    path = pack.fixture("w.c.json", {"request": flat})
    assert load_fixture(str(path), "w.c.json").request == flat
