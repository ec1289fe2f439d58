"""MCP servers through the real CLI: `replayci pin` fetching a server's tools, `validate
--check-tools` finding drift, scenarios calling tools on a server; servers that crash or hang."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import mcp_servers
import pytest
from builders import SIMPLE, call, fixture, request, response
from click.testing import CliRunner
from fakeserver import Conversation, Reply, tool_results_of
from livecli import invoke as live

import replayci
from replayci.cli import cli

GOOD = response(call("get_weather", {"city": "Paris"}))


def invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def servers_yaml(**servers) -> str:
    return "mcp_servers:\n" + "".join(f"  {name}: {json.dumps(entry)}\n" for name, entry in servers.items())


@pytest.fixture(scope="module")
def http_server():
    url, stop = mcp_servers.serve_http(mcp_servers.weather_app())
    yield url
    stop()


def mcp_pack(pack, project, server: dict, name: str = "weather"):
    (project / ".replayci.yml").write_text(servers_yaml(**{name: server}))
    pack.contract("weather", SIMPLE)
    doc = fixture(request(tools={"$mcp": "weather"}), GOOD, pin=False)
    return pack.fixture("c.json", doc)


@pytest.fixture
def changing_server():
    """A server of its own for a test that changes its tools: (app, url)."""
    app = mcp_servers.weather_app()
    url, stop = mcp_servers.serve_http(app)
    yield app, url
    stop()


def test_pin_writes_the_servers_tools_pin_again_refreshes_them_and_check_tools_finds_drift(
        pack, project, changing_server):
    app, url = changing_server
    path = mcp_pack(pack, project, {"url": url})
    before = path.read_text()
    res = invoke("pin")
    assert res.exit_code == 0, res.output
    assert "pinned packs/demo/golden/c.json" in res.output
    tools = json.loads(path.read_text())["request"]["tools"]
    assert tools["$mcp"] == "weather"
    assert [t["function"]["name"] for t in tools["pinned"]] == ["get_weather", "echo", "population", "fail"]
    weather = tools["pinned"][0]["function"]
    assert weather["description"] == "Current weather for a city"
    assert weather["parameters"]["required"] == ["city"]
    head, tail = before.split('"tools": ')
    after = re.sub(r'\n  "boundary": .*,\n', "\n", path.read_text())  # pin adds the boundary
    assert after.startswith(head + '"tools": {\n      "$mcp": "weather",\n      "pinned": [\n')
    assert after.endswith(tail[tail.index("}") + 1:])  # what follows the tools: untouched
    assert replayci.run([str(pack.dir)]).cases[0].status == "pass"

    mcp_servers.change_tools(app)
    res = invoke("validate", "--check-tools", "--json")
    assert res.exit_code == 1, res.output
    drift = json.loads(res.output)["problems"]
    messages = "\n".join(p["message"] for p in drift)
    assert all(p["file"] == "packs/demo/golden/c.json" and p["line"] for p in drift)
    assert "tool 'get_forecast' was added on MCP server 'weather'" in messages
    assert "tool 'echo' was removed from MCP server 'weather'" in messages
    assert "tool 'get_weather' changed on MCP server 'weather': its schema differs at " \
           "$.properties.days (pinned: absent, now: {\"title\": \"Days\", \"type\": \"integer\"})" in messages
    res = invoke("pin")
    assert res.exit_code == 0 and "refreshed packs/demo/golden/c.json" in res.output
    names = [t["function"]["name"] for t in json.loads(path.read_text())["request"]["tools"]["pinned"]]
    assert names == ["population", "fail", "get_weather", "get_forecast"]


def test_a_server_that_crashes_is_a_clear_error(pack, project):
    mcp_pack(pack, project, {"command": mcp_servers.command("crash")})
    res = invoke("pin")
    assert res.exit_code == 2
    assert ".replayci.yml:2: MCP server 'weather'" in res.output and "crashed" in res.output  # where it is named
    assert "cannot open weather.db" in res.output  # what it said on stderr


def test_a_server_that_hangs_times_out(pack, project):
    mcp_pack(pack, project, {"command": mcp_servers.command("hang"), "timeout_ms": 300})
    res = invoke("pin")
    assert res.exit_code == 2
    assert "MCP server 'weather'" in res.output and "did not answer within 300 ms" in res.output


def test_a_server_that_does_not_start_is_a_clear_error(pack, project):
    mcp_pack(pack, project, {"command": ["./no-such-server"]})
    res = invoke("pin")
    assert res.exit_code == 2
    assert "MCP server 'weather' (./no-such-server) did not start" in res.output


def test_an_unknown_server_name_is_located(pack, project):
    mcp_pack(pack, project, {"command": ["./no-such-server"]}, name="other")
    res = invoke("pin")
    assert res.exit_code == 2
    assert "golden/c.json:" in res.output and "no MCP server named 'weather'" in res.output


def test_pin_over_streamable_http_and_no_drift_right_after(pack, project, http_server):
    path = mcp_pack(pack, project, {"url": http_server})
    assert invoke("pin").exit_code == 0
    assert len(json.loads(path.read_text())["request"]["tools"]["pinned"]) == 4
    res = invoke("validate", "--check-tools")
    assert res.exit_code == 0, res.output
    assert res.output.startswith("ok: ") and "tools compared with their MCP servers" in res.output
    assert invoke("pin").output.endswith("0 pinned, 0 refreshed, 1 up to date\n")


def test_check_tools_compares_inline_tools_a_server_defines(pack, project, http_server):
    (project / ".replayci.yml").write_text(servers_yaml(weather={"url": http_server}))
    pack.contract("weather", SIMPLE)
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city",
                                               "parameters": {"type": "object", "properties": {}}}},
             {"type": "function", "function": {"name": "local_only", "parameters": {"type": "object"}}}]
    pack.fixture("c.json", fixture(request(tools=tools), GOOD))
    res = invoke("validate", "--check-tools")
    assert res.exit_code == 1
    assert "packs/demo/golden/c.json:" in res.output
    assert "tool 'get_weather' changed on MCP server 'weather': its schema differs at $.properties.city" in res.output
    assert "local_only" not in res.output and "1 tool drift:" in res.output


def test_without_the_extra_the_message_says_what_to_install(pack, project):
    mcp_pack(pack, project, {"command": mcp_servers.command("weather")})
    code = "import sys; sys.modules['mcp'] = None; from replayci.cli import main; sys.argv[1:] = ['pin']; main()"
    env = {**os.environ, "PYTHONPATH": str(Path(replayci.__file__).parents[1])}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=project, env=env)
    assert res.returncode == 2
    assert "pip install 'replayci[mcp]'" in res.stderr + res.stdout


SCENARIO = """
scenario: true
max_steps: 7
tool: multi_tool_call
expect_tools: [get_weather]
tool_commands:
  get_weather: "mcp:weather"
  echo: "mcp:weather"
  population: "mcp:weather"
  fail: "mcp:weather"
  get_time: "mcp:nowhere"
golden_cases:
  - id: c
    input_ref: c.json
"""


def test_a_scenario_calls_its_tools_on_the_server_and_records_their_results(pack, project, server):
    mcp_pack(pack, project, {"command": ["./no-such-server"]})  # the pack's server of that name wins
    weather = servers_yaml(weather={"command": mcp_servers.command("weather")})
    (pack.dir / "pack.yaml").write_text("pack_id: demo\ndefault_model: gpt-4o-mini\n" + weather)
    pack.contract("weather", SCENARIO)
    assert invoke("pin").exit_code == 0
    # get_time is offered beside the server's tools (a tool the model may call) and routed to a
    # server the pack does not have: its result is that error, and the loop goes on.
    fixture_path = pack.dir / "golden" / "c.json"
    doc = json.loads(fixture_path.read_text())
    doc["request"]["tools"]["pinned"].append({"type": "function", "function": {
        "name": "get_time", "parameters": {"type": "object", "properties": {"timezone": {"type": "string"}}}}})
    doc.pop("boundary", None)
    fixture_path.write_text(json.dumps(doc, indent=2))
    server.set_default(Conversation([
        Reply.tool_call("get_weather", {"city": "Paris"}), Reply.tool_call("echo", {"text": "plain words"}),
        Reply.tool_call("echo", {"text": "[1, 2]"}), Reply.tool_call("population", {"city": "Paris"}),
        Reply.tool_call("fail", {"reason": "no"}), Reply.tool_call("get_time", {"timezone": "UTC"}),
        Reply.plain_text("Sunny, 21 degrees.")]))
    res = live("openai", server, "--json", "--record", "--tool-replay", "auto")
    assert res.exit_code == 0, res.output
    results = [t["content"] for t in tool_results_of(server.requests[-1])]
    assert json.loads(results[0]) == {"city": "Paris", "temp": 21, "unit": "c"}  # JSON text, parsed
    assert results[1] == "plain words"  # text that is no JSON: the text
    assert json.loads(results[2]) == [1, 2]  # text that is JSON
    assert json.loads(results[3]) == {"result": 2100000}  # structured content
    assert json.loads(results[4]) == {"error": "Error executing tool fail"}
    assert "no MCP server named 'nowhere'" in json.loads(results[5])["error"]
    recorded = json.loads((pack.dir / "recordings" / "weather" / "c.json").read_text())["tool_results"]
    assert {r["tool"]: r["result"] for r in recorded}["population"] == {"result": 2100000}
    # Started in the pack directory: once to pin, then once for the six calls of the run.
    assert (pack.dir / "starts.log").read_text() == "weather\nweather\n"
    assert replayci.run([str(pack.dir)]).cases[0].status == "pass"  # replayed: no server needed


def test_a_tool_call_on_a_server_that_crashes_is_an_error_result(project):
    from replayci.pack.model import McpServer
    from replayci.providers.mcp import Sessions

    crash = McpServer("weather", tuple(mcp_servers.command("crash")), None, str(project), 5000)
    with Sessions() as sessions:
        result = sessions.call_tool(crash, "get_weather", {"city": "Paris"})
    assert result["error"].startswith("MCP server 'weather'") and "cannot open weather.db" in result["error"]


def test_check_tools_with_a_name_no_server_has_is_a_located_error(pack, project):
    mcp_pack(pack, project, {"command": ["./no-such-server"]}, name="other")
    pack.fixture("c.json", fixture(request(tools={"$mcp": "weather", "pinned": []}), GOOD))
    res = invoke("validate", "--check-tools", "--json")
    assert res.exit_code == 2
    (problem,) = json.loads(res.output)["problems"]
    assert problem["file"] == "packs/demo/golden/c.json" and problem["line"] == 15
    assert problem["message"].startswith("no MCP server named 'weather'")
