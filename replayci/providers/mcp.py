"""MCP servers, reached through the official `mcp` SDK: their tools in the neutral form, and a
tool called on one. Nothing here runs in a recorded run: only pin, validate --check-tools and a
live scenario's `tool_commands: {TOOL: "mcp:NAME"}` contact a server."""
from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..core.errors import ConfigError, did_you_mean
from ..pack.model import McpServer, Pack

COMMAND_PREFIX = "mcp:"  # a tool_commands entry that names a server instead of a command line
INSTALL = "pip install 'replayci[mcp]'"


class McpServerError(ConfigError):
    """A server did not start, crashed, or did not answer in time (exit 2)."""


def servers_for(pack: Pack | None, configured: tuple[tuple[str, McpServer], ...]) -> dict[str, McpServer]:
    """The servers a pack can use: .replayci.yml's (*configured*), its own pack.yaml's winning."""
    return {**dict(configured), **dict(pack.mcp_servers if pack is not None else ())}


def unknown_server(name: Any, servers: Mapping[str, McpServer]) -> str:
    """The message for a name no `mcp_servers` entry has."""
    known = ", ".join(sorted(servers)) or "none"
    return (f"no MCP server named {name!r} (mcp_servers of pack.yaml or .replayci.yml name: {known})"
            + did_you_mean(str(name), servers))


class ServerTools:
    """The current tools of the servers one command contacts, each server asked once."""

    def __init__(self, configured: tuple[tuple[str, McpServer], ...]):
        self.configured = configured
        self._tools: dict[McpServer, list[dict]] = {}

    def servers(self, pack: Pack) -> dict[str, McpServer]:
        return servers_for(pack, self.configured)

    def tools(self, server: McpServer) -> list[dict]:
        if server not in self._tools:
            self._tools[server] = list_tools(server)
        return self._tools[server]


def neutral_tool(tool: Mapping[str, Any]) -> dict:
    """An MCP tool ({name, description, inputSchema}) in the neutral form fixtures use."""
    function: dict[str, Any] = {"name": tool.get("name")}
    if tool.get("description"):
        function["description"] = tool["description"]
    function["parameters"] = tool.get("inputSchema") or {"type": "object", "properties": {}}
    return {"type": "function", "function": function}


def list_tools(server: McpServer) -> list[dict]:
    """The server's current tools (every page), in the neutral form; McpServerError when it
    cannot be reached."""
    async def work(client: Any) -> list[dict]:
        tools, cursor = [], None
        for _ in range(1000):  # a server whose pages never end must not hang a pin
            page = await client.list_tools(cursor=cursor)  # a new client each time: nothing cached
            tools += [neutral_tool(t.model_dump(by_alias=True, exclude_none=True)) for t in page.tools]
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    return _session(server, work)


def call_tool(server: McpServer, name: str, arguments: Any) -> Any:
    """The result of one tool call, as a recorded tool result: the structured content when
    there is some, else the text content parsed as JSON when it parses, else the text; an
    error result or a failed call is {"error": ...}, never an exception."""
    async def work(client: Any) -> Any:
        return await client.call_tool(name, arguments if isinstance(arguments, dict) else {})

    try:
        result = _session(server, work).model_dump(by_alias=True, exclude_none=True)
    except McpServerError as exc:
        return {"error": str(exc.problems[0].message)}
    text = "\n".join(c.get("text", "") for c in result.get("content") or () if c.get("type") == "text")
    if result.get("isError"):
        return {"error": text or f"tool '{name}' failed on {server.shown}"}
    if result.get("structuredContent") is not None:
        return result["structuredContent"]
    try:
        return json.loads(text)
    except ValueError:
        return text


def run_server_tool(command: str, tool: str, arguments: Any, servers: Mapping[str, McpServer]) -> Any:
    """A `tool_commands` entry "mcp:NAME" answered: *tool* called on that server (call_tool);
    a name no server has is an error result."""
    name = command[len(COMMAND_PREFIX):].strip()
    if name not in servers:
        return {"error": unknown_server(name, servers)}
    return call_tool(servers[name], tool, arguments)


def _session(server: McpServer, work: Callable[[Any], Awaitable[Any]]) -> Any:
    """*work* on a client connected to *server*, within the server's timeout (connecting
    included); the server's stderr is kept to say why it failed."""
    logger = logging.getLogger("mcp")
    if not logger.handlers:  # the SDK logs a server's bad lines; our message says what went wrong
        logger.addHandler(logging.NullHandler())
    try:
        # why: the SDK (and its HTTP stack) is imported only when a server is really contacted
        import anyio
        from mcp import Client, StdioServerParameters, stdio_client
    except ImportError as exc:
        raise McpServerError(f"{server.shown} needs the mcp package ({exc.name} is missing): {INSTALL}") from None
    seconds = server.timeout_ms / 1000
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        if server.command:
            params = StdioServerParameters(command=server.command[0], args=list(server.command[1:]), cwd=server.cwd)
            target: Any = stdio_client(params, errlog=errlog)
        else:
            target = server.url

        async def main() -> Any:
            with anyio.fail_after(seconds):
                async with Client(target, read_timeout_seconds=seconds) as client:
                    return await work(client)

        try:
            return anyio.run(main)
        except BaseException as exc:  # noqa: B036 (an SDK failure arrives as an exception group)
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise McpServerError(f"{server.shown} {_what_happened(exc, server, errlog)}") from None


def _what_happened(exc: BaseException, server: McpServer, errlog: Any) -> str:
    """Why a session failed, for a message that starts with the server's name."""
    while getattr(exc, "exceptions", ()):  # an exception group: its first failure says why
        exc = exc.exceptions[0]
    errlog.seek(0)
    lines = [line.strip() for line in errlog.read().splitlines() if line.strip()]
    said = f" (its stderr: {lines[-1][:300]})" if lines else ""
    if isinstance(exc, TimeoutError):
        return f"did not answer within {server.timeout_ms} ms{said}"
    if isinstance(exc, (FileNotFoundError, PermissionError)):
        return f"did not start: {exc.strerror}: {exc.filename or server.command[0]}"
    why = str(exc) or type(exc).__name__
    if server.command:
        return f"crashed or closed its output before answering: {why}{said}"
    return f"could not be reached: {why}"
