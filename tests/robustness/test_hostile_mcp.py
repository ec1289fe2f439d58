"""MCP servers are untrusted: `replayci pin` never writes tools that would leave a pack that no
longer loads (duplicate names, tool lists nested or grown far past what a fixture may hold), and a
server's answer never crashes a command."""
from __future__ import annotations

import json
import sys
import textwrap
from importlib.util import find_spec
from pathlib import Path

import pytest
from builders import SIMPLE, call, fixture, request, response
from click.testing import CliRunner
from warmed import app_python

from replayci.cli import cli

pytestmark = pytest.mark.skipif(find_spec("mcp") is None, reason="the mcp extra is not installed")

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
    command = [*app_python(), str(project / "server.py"), str(project / "tools.json")]
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


@pytest.mark.parametrize("kind", [pytest.param(k, marks=pytest.mark.slow) if k == "large-list" else k  # (20 MB: a soak)
                                  for k in LISTS])
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


# ------------------------------------------------------------------ servers that break the protocol

# A stdio server speaking JSON-RPC by hand, misbehaving as its first argument says.
RAW_SERVER = textwrap.dedent('''
    import json, os, sys, time
    mode = sys.argv[1]
    def send(obj):
        sys.stdout.write(json.dumps(obj) + "\\n")
        sys.stdout.flush()
    TOOL = {"name": "get_weather", "inputSchema": {"type": "object"}}
    if mode == "garbage-first":
        sys.stdout.write("Starting server v1.0...\\nnot json at all\\n{\\"half\\": \\n")
        sys.stdout.flush()
    for line in sys.stdin:
        msg = json.loads(line)
        method, rid = msg.get("method"), msg.get("id")
        if rid is None:
            continue
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"}}})
        elif method == "tools/list":
            if mode == "wrong-id":
                send({"jsonrpc": "2.0", "id": rid + 1000, "result": {"tools": [TOOL]}})
            elif mode == "exits-mid-listing":
                sys.stdout.write('{"jsonrpc": "2.0", "id": %d, "result": {"tools": [{"name": "get_w' % rid)
                sys.stdout.flush()
                os._exit(1)
            elif mode == "error":
                send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "internal boom"}})
            else:
                send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [TOOL]}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
''')
RAW = {"garbage-first": None, "wrong-id": "did not answer within 500 ms", "exits-mid-listing": "closed its output",
       "error": "internal boom"}


@pytest.mark.parametrize("mode", RAW)
def test_a_server_breaking_the_protocol_is_a_bounded_clear_error(tmp_path, mode):
    import time

    from replayci.pack.model import McpServer
    from replayci.providers.mcp import McpServerError, Sessions

    (tmp_path / "raw.py").write_text(RAW_SERVER, "utf-8")
    server = McpServer("raw", (sys.executable, str(tmp_path / "raw.py"), mode), None, str(tmp_path), 500)
    started = time.monotonic()
    with Sessions() as sessions:
        if RAW[mode] is None:  # lines that are not JSON-RPC before the handshake are passed over
            assert [t["function"]["name"] for t in sessions.tools(server)] == ["get_weather"]
            return
        with pytest.raises(McpServerError) as caught:
            sessions.tools(server)
    assert time.monotonic() - started < 6
    assert "MCP server 'raw'" in str(caught.value) and RAW[mode] in str(caught.value), str(caught.value)


NAMES = ["x" * 300, "../../escape", "a/b", "..", "nul\x00name", "back\\slash", "/absolute", ".hidden", "get_weather"]


def test_tool_names_that_look_like_paths_never_make_files_outside_the_pack(pack, project, monkeypatch):
    monkeypatch.chdir(project)
    path = hostile_pack(pack, project, [tool(name) for name in NAMES])
    res = invoke("pin")
    assert res.exit_code == 0, res.output
    pinned = json.loads(path.read_text("utf-8"))["request"]["tools"]["pinned"]
    assert [t["function"]["name"] for t in pinned] == NAMES
    before = {p for p in project.parent.rglob("*")}
    res = invoke("mutate", "--write-negatives")  # names a negative case's file after a tool
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output and "internal error" not in res.output
    made = {p for p in project.parent.rglob("*")} - before
    negatives = pack.dir / "golden" / "negative"
    assert made and all(p == negatives or p.parent == negatives for p in made), sorted(map(str, made))
    assert all(len(p.name.encode()) <= 200 for p in made)
    assert invoke("validate").exit_code == 0
    res = invoke()
    assert res.exit_code == 0, res.output


def test_a_negative_file_name_is_cut_only_past_its_limit():
    from replayci.tools.mutate.negatives import MAX_FILE_NAME, _names

    fixed = len("c.case.mutant.rename.a-to-.json")
    at_limit = "t" * (MAX_FILE_NAME - fixed)
    case_id, name = _names("c", "case", "rename:a->" + at_limit)
    assert len(name) == MAX_FILE_NAME and case_id == "case.mutant.rename.a-to-" + at_limit
    case_id, name = _names("c", "case", "rename:a->" + at_limit + "t")
    assert len(name) < MAX_FILE_NAME and case_id.startswith("case.mutant.rename.a-to-ttt")
    assert _names("c", "case", "rename:a->" + at_limit + "u") != (case_id, name)  # the digest tells them apart
