"""MCP servers are untrusted: `replayci pin` never writes tools that would leave a pack that no
longer loads (duplicate names, tool lists nested or grown far past what a fixture may hold), and a
server's answer never crashes a command."""
from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from builders import SIMPLE, call, fixture, request, response
from click.testing import CliRunner

from replayci.cli import cli

pytest.importorskip("mcp")

# A stdio MCP server (the SDK's low-level server) whose tools/list answers what TOOLS_FILE holds.
SERVER = textwrap.dedent('''
    import json, sys
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel.server import Server
    from mcp.server.stdio import stdio_server

    TOOLS = json.load(open(sys.argv[1]))

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=[types.Tool(**t) for t in TOOLS])

    async def main():
        server = Server("hostile", on_list_tools=list_tools)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
''')


def tool(name: str, schema: dict | None = None, description: str = "A tool") -> dict:
    return {"name": name, "description": description,
            "inputSchema": schema or {"type": "object", "properties": {"city": {"type": "string"}}}}


def deep(levels: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def hostile_pack(pack, project: Path, tools: list[dict]) -> Path:
    (project / "server.py").write_text(SERVER, "utf-8")
    (project / "tools.json").write_text(json.dumps(tools), "utf-8")
    command = [sys.executable, str(project / "server.py"), str(project / "tools.json")]
    (project / ".replayci.yml").write_text(f"mcp_servers:\n  weather: {{command: {json.dumps(command)}}}\n",
                                           "utf-8")
    pack.contract("weather", SIMPLE)
    return pack.fixture("c.json", fixture(request(tools={"$mcp": "weather"}),
                                          response(call("get_weather", {"city": "Paris"})), pin=False))


def invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


LISTS = {
    "duplicate-names": ([tool("get_weather"), tool("get_weather", description="again")], ["get_weather", "twice"]),
    "deep-schema": ([tool("get_weather", deep(70))], ["nest"]),
    "large-list": ([tool(f"tool_{i}", description="d" * 4000) for i in range(5000)], ["bytes"]),
}


@pytest.mark.parametrize("kind", LISTS)
def test_pin_never_writes_tools_the_pack_would_refuse(pack, project, monkeypatch, kind):
    monkeypatch.chdir(project)
    path = hostile_pack(pack, project, LISTS[kind][0])
    before = path.read_bytes()
    res = invoke("pin")
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and "internal error" not in res.output
    assert "c.json" in res.output and "weather" in res.output, res.output
    for word in LISTS[kind][1]:
        assert word in res.output, res.output
    assert path.read_bytes() == before  # nothing written
    assert invoke("validate").exit_code in (0, 2)  # the pack is as it was: its own state, not broken by pin
    assert not list(path.parent.glob(".*.tmp"))


def test_pin_writes_a_good_list_from_the_same_server(pack, project, monkeypatch):
    monkeypatch.chdir(project)
    path = hostile_pack(pack, project, [tool("get_weather"), tool("get_time")])
    res = invoke("pin")
    assert res.exit_code == 0, res.output
    pinned = json.loads(path.read_text("utf-8"))["request"]["tools"]["pinned"]
    assert [t["function"]["name"] for t in pinned] == ["get_weather", "get_time"]
    assert invoke("validate").exit_code == 0
