"""`mcp_servers:` in pack.yaml and .replayci.yml, and fixtures whose tools are an MCP server's
(`{"$mcp": NAME}`) in recorded runs: read without starting any server."""
from __future__ import annotations

import json

from builders import SIMPLE, WEATHER_TOOLS, call, fixture, request, response
from click.testing import CliRunner

import replayci
from replayci import config
from replayci.cli import cli
from replayci.providers.mcp import neutral_tool, servers_for

GOOD = response(call("get_weather", {"location": "Paris"}))


def invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_servers_come_from_both_files_the_pack_winning_each_run_where_it_is_named(pack, project):
    (project / ".replayci.yml").write_text(
        "mcp_servers:\n  weather: {command: [python, old.py]}\n  docs: {url: 'http://127.0.0.1:9/mcp'}\n")
    (pack.dir / "pack.yaml").write_text(
        "pack_id: demo\nmcp_servers:\n  weather: {command: [python, server.py], timeout_ms: 500}\n")
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", fixture(request(), GOOD))
    settings = config.resolve({})
    servers = servers_for(replayci.load_pack(str(pack.dir)), settings.mcp_servers)
    assert servers["weather"].command == ("python", "server.py")
    assert servers["weather"].cwd == str(pack.dir) and servers["weather"].timeout_ms == 500
    assert servers["docs"].url == "http://127.0.0.1:9/mcp" and servers["docs"].cwd == str(project)
    assert servers["weather"].source.endswith("pack.yaml:3")


def test_bad_server_entries_are_located_problems(pack, project):
    (project / ".replayci.yml").write_text(
        "mcp_servers:\n  a: {command: [python], url: 'http://x'}\n  b: {timeout_ms: 5}\n  c: {command: []}\n")
    (pack.dir / "pack.yaml").write_text("pack_id: demo\nmcp_servers:\n  d: {command: python}\n"
                                        "  e: {url: 'http://127.0.0.1/mcp', tiemout_ms: 5}\n")
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", fixture(request(), GOOD))
    res = invoke("validate")
    assert res.exit_code == 2
    assert ".replayci.yml:2:" in res.output and "not both" in res.output
    assert ".replayci.yml:3:" in res.output and "expected either command" in res.output
    assert ".replayci.yml:4:" in res.output and "non-empty list" in res.output
    (project / ".replayci.yml").write_text("provider: recorded\n")
    res = invoke("validate")
    assert res.exit_code == 2
    assert "pack.yaml:3:" in res.output and "a command line as a list of strings" in res.output
    assert "pack.yaml:4:" in res.output and "did you mean 'timeout_ms'" in res.output


def test_an_unpinned_mcp_tools_request_is_a_located_error_saying_run_pin(pack):
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", fixture(request(tools={"$mcp": "weather"}), GOOD, pin=False))
    res = invoke("run")
    assert res.exit_code == 2
    assert "golden/c.json:" in res.output and "not pinned: run `replayci pin`" in res.output


def _pinned_to(pack, server: str) -> dict:
    """A pack whose one server never starts, and a fixture whose tools are pinned as *server*'s
    (the request, for more fixtures)."""
    (pack.dir / "pack.yaml").write_text(
        "pack_id: demo\nmcp_servers:\n  weather: {command: [/nonexistent/server]}\n")
    pack.contract("weather", SIMPLE)
    req = request(tools={"$mcp": server, "pinned": WEATHER_TOOLS})
    pack.fixture("c.json", {**fixture(request(), GOOD), "request": req})
    return req


def test_a_pinned_mcp_tools_request_runs_on_its_pinned_tools_without_a_server(pack):
    req = _pinned_to(pack, "weather")
    result = replayci.run([str(pack.dir)])
    assert result.cases[0].status == "pass"
    bad = response(call("get_weather", {"location": "Paris", "unit": "kelvin"}))
    pack.fixture("c.json", {**fixture(request(), bad), "request": req})
    assert replayci.run([str(pack.dir)]).cases[0].classification == "schema_violation"


def test_validate_finds_a_pinned_mcp_name_no_server_has(pack):
    req = _pinned_to(pack, "wether")
    assert replayci.run([str(pack.dir)]).cases[0].status == "pass"  # a run needs only the pinned tools
    res = invoke("validate")  # no server is started to find it
    assert res.exit_code == 2, res.output
    assert "golden/c.json:" in res.output and "no MCP server named 'wether'" in res.output
    assert "did you mean 'weather'" in res.output
    req["tools"]["$mcp"] = "weather"
    pack.fixture("c.json", {**fixture(request(), GOOD), "request": req})
    assert invoke("validate").exit_code == 0


def test_pinned_must_be_a_list(pack):
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", fixture(request(tools={"$mcp": "weather", "pinned": {}}), GOOD, pin=False))
    res = invoke("validate")
    assert res.exit_code == 2 and "'pinned' must be a list" in res.output


def test_an_mcp_tool_in_the_neutral_form():
    tool = {"name": "get_weather", "description": "Now.", "inputSchema": {"type": "object"}, "title": "W"}
    assert neutral_tool(tool) == {"type": "function", "function": {
        "name": "get_weather", "description": "Now.", "parameters": {"type": "object"}}}
    assert neutral_tool({"name": "x", "description": ""}) == {"type": "function", "function": {
        "name": "x", "parameters": {"type": "object", "properties": {}}}}
    assert json.dumps(neutral_tool({"name": "x"}))


def test_a_tool_command_naming_no_server_is_a_located_problem(pack):
    pack.contract("weather", SIMPLE.replace("tool: get_weather", 'scenario: true\ntool: get_weather\n'
                                            'tool_commands: {get_weather: "mcp: "}'))
    pack.fixture("c.json", fixture(request(), GOOD))
    res = invoke("validate")
    assert res.exit_code == 2 and "weather.yaml:3:" in res.output and "expected mcp:SERVER" in res.output


def test_check_tools_without_servers_says_there_is_nothing_to_compare(pack):
    pack.contract("weather", SIMPLE)
    pack.fixture("c.json", fixture(request(), GOOD))
    res = invoke("validate", "--check-tools")
    assert res.exit_code == 0
    assert "note: --check-tools: no mcp_servers in pack.yaml or .replayci.yml" in res.output


def test_pinned_tools_stay_in_the_neutral_form_in_a_request_of_another_form(pack):
    from replayci.pack.fixtures import load_fixture

    pack.contract("weather", SIMPLE)
    req = {"model": "gpt-4.1", "instructions": "Use the tools.", "input": "Weather in Paris?",
           "tools": {"$mcp": "weather", "pinned": WEATHER_TOOLS}}
    path = pack.fixture("c.json", {"request": req, "response": GOOD})
    assert load_fixture(str(path), "c.json").request["tools"] == WEATHER_TOOLS
    assert replayci.run([str(pack.dir)]).cases[0].status == "pass"
