"""MCP servers, reached through the official `mcp` SDK: their tools in the neutral form, and
tools called on them. Nothing here runs in a recorded run: only pin, validate --check-tools and
a live scenario's `tool_commands: {TOOL: "mcp:NAME"}` contact a server."""
from __future__ import annotations

import json
import logging
import math
import tempfile
import threading
from collections.abc import Mapping
from contextlib import asynccontextmanager
from typing import Any

from ..core.errors import ConfigError, Problem, did_you_mean
from ..core.jsonvalue import unicode_only
from ..pack.model import McpServer, Pack
from ..pack.servers import COMMAND_PREFIX

INSTALL = "pip install 'replayci[mcp]'"


class McpServerError(ConfigError):
    """A server did not start, crashed, or did not answer in time (exit 2)."""

    def __init__(self, server: McpServer, why: str):
        file, _, line = server.source.rpartition(":")  # located where the server is named
        super().__init__(Problem(file or "replayci", int(line) if line.isdigit() else None, None,
                                 f"{server.shown} {why}"))


def servers_for(pack: Pack | None, configured: tuple[tuple[str, McpServer], ...]) -> dict[str, McpServer]:
    """The servers a pack can use: .replayci.yml's (*configured*), its own pack.yaml's winning."""
    return {**dict(configured), **dict(pack.mcp_servers if pack is not None else ())}


def unknown_server(name: Any, servers: Mapping[str, McpServer]) -> str:
    """The message for a name no `mcp_servers` entry has."""
    known = ", ".join(sorted(servers)) or "none"
    return (f"no MCP server named {name!r} (mcp_servers of pack.yaml or .replayci.yml name: {known})"
            + did_you_mean(str(name), servers))


def neutral_tool(tool: Mapping[str, Any]) -> dict:
    """An MCP tool ({name, description, inputSchema}) in the neutral form fixtures use."""
    function: dict[str, Any] = {"name": tool.get("name")}
    if tool.get("description"):
        function["description"] = tool["description"]
    function["parameters"] = tool.get("inputSchema") or {"type": "object", "properties": {}}
    return {"type": "function", "function": function}


def tool_result(result: Mapping[str, Any], tool: str, server: McpServer) -> Any:
    """An MCP tool result as a recorded tool result: the structured content when there is
    some, else the text content parsed as JSON when it parses, else the text; an error
    result is {"error": its text}."""
    text = "\n".join(c.get("text", "") for c in result.get("content") or () if c.get("type") == "text")
    if result.get("isError"):
        return unicode_only({"error": text or f"tool '{tool}' failed on {server.shown}"})
    if result.get("structuredContent") is not None:
        return unicode_only(result["structuredContent"])
    try:
        return unicode_only(json.loads(text))
    except ValueError:
        return unicode_only(text)


class Sessions:
    """The MCP servers one command or live run uses: each server started (or reached) once, at
    its first use, its session kept open until close(), its tools listed once. Thread-safe."""

    def __init__(self, configured: tuple[tuple[str, McpServer], ...] = ()):
        self.configured = configured
        self._lock = threading.Lock()
        self._portal: Any = None  # an event loop in a thread of its own, where sessions live
        self._open: dict[McpServer, tuple[Any, Any, Any]] = {}  # server -> (client, its context, stderr)
        self._tools: dict[McpServer, list[dict]] = {}

    def __enter__(self) -> Sessions:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def servers(self, pack: Pack | None) -> dict[str, McpServer]:
        return servers_for(pack, self.configured)

    def tools(self, server: McpServer) -> list[dict]:
        """The server's current tools (every page) in the neutral form; McpServerError when
        it cannot be reached."""
        if server not in self._tools:
            page, tools = None, []
            for _ in range(1000):  # a server whose pages never end must not hang a pin
                page = self._ask(server, "list_tools", cursor=page.next_cursor if page else None)
                tools += [neutral_tool(t.model_dump(by_alias=True, exclude_none=True)) for t in page.tools]
                if page.next_cursor is None:
                    break
            self._tools[server] = tools
        return self._tools[server]

    def call_tool(self, server: McpServer, tool: str, arguments: Any) -> Any:
        """One tool call's result as recorded (tool_result); a failed call is {"error": ...}."""
        try:
            result = self._ask(server, "call_tool", tool, arguments if isinstance(arguments, dict) else {})
        except McpServerError as exc:
            return {"error": exc.problems[0].message}
        return tool_result(result.model_dump(by_alias=True, exclude_none=True), tool, server)

    def run_command(self, command: str, tool: str, arguments: Any, pack: Pack | None) -> Any:
        """A `tool_commands` entry "mcp:NAME" answered: *tool* called on the pack's server of
        that name; a name no server has is an error result."""
        name, servers = command[len(COMMAND_PREFIX):].strip(), self.servers(pack)
        if name not in servers:
            return {"error": unknown_server(name, servers)}
        return self.call_tool(servers[name], tool, arguments)

    def close(self) -> None:
        """End every session (a stdio server is stopped) and the event loop."""
        with self._lock:
            for server in list(self._open):
                self._drop(server)
            if self._portal is not None:
                self._portal[0].__exit__(None, None, None)
                self._portal = None

    def _ask(self, server: McpServer, method: str, *args: Any, **kwargs: Any) -> Any:
        """*method* of the server's client, within its timeout; McpServerError naming the server
        and what happened when it fails (the session is then ended: the next use starts anew)."""
        client, _, errlog = self._session(server)
        try:
            return self._portal[1].call(_within, server.timeout_ms / 1000, getattr(client, method), args, kwargs)
        except Exception as exc:  # whatever the SDK raises: said in the message
            why = _what_happened(exc, server, errlog)
            with self._lock:
                self._drop(server)
            raise McpServerError(server, why) from None

    def _session(self, server: McpServer) -> tuple[Any, Any, Any]:
        """The open session of *server*, started now if it has none."""
        with self._lock:
            if server in self._open:
                return self._open[server]
            if self._portal is None:
                self._portal = _start_portal(server)
            errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
            context = self._portal[1].wrap_async_context_manager(_connected(server, errlog))
            try:
                client = context.__enter__()
            except Exception as exc:  # whatever the SDK raises: said in the message
                why = _what_happened(exc, server, errlog)
                errlog.close()
                raise McpServerError(server, why) from None
            self._open[server] = (client, context, errlog)
            return self._open[server]

    def _drop(self, server: McpServer) -> None:
        """End one session, whatever state its server is in (the caller holds the lock)."""
        _, context, errlog = self._open.pop(server, (None, None, None))
        if context is None:
            return
        try:
            context.__exit__(None, None, None)
        except Exception:  # a server that already failed: its failure was reported
            pass
        errlog.close()


def _start_portal(server: McpServer) -> tuple[Any, Any]:
    """(its context, the portal): the event loop thread sessions live in."""
    logger = logging.getLogger("mcp")
    if not logger.handlers:  # the SDK logs a server's bad lines; our message says what went wrong
        logger.addHandler(logging.NullHandler())
    try:
        # why: the SDK (and its HTTP stack) is imported only when a server is really contacted
        import mcp  # noqa: F401
        from anyio.from_thread import start_blocking_portal
    except ImportError as exc:
        # not an McpServerError: a missing package is no tool result to record
        raise ConfigError(f"{server.shown} needs the mcp package ({exc.name} is missing): {INSTALL}") from None
    context = start_blocking_portal()
    return context, context.__enter__()


@asynccontextmanager
async def _connected(server: McpServer, errlog: Any):
    """A client connected to *server* (its handshake within the server's timeout; its stderr
    kept in *errlog*)."""
    # why: the SDK is imported only when a server is contacted (_start_portal checked it is there)
    import anyio
    from mcp import Client, StdioServerParameters, stdio_client

    seconds = server.timeout_ms / 1000
    if server.command:
        params = StdioServerParameters(command=server.command[0], args=list(server.command[1:]), cwd=server.cwd)
        target: Any = stdio_client(params, errlog=errlog)
    else:
        target = server.url
    with anyio.fail_after(seconds) as scope:
        async with Client(target, read_timeout_seconds=seconds) as client:
            scope.deadline = math.inf  # connected: from now on each request has its own deadline
            yield client


async def _within(seconds: float, method: Any, args: tuple, kwargs: dict) -> Any:
    """*method* awaited, within *seconds*."""
    import anyio  # why: comes with the SDK, imported only when a server is contacted

    with anyio.fail_after(seconds):
        return await method(*args, **kwargs)


def _what_happened(exc: BaseException, server: McpServer, errlog: Any) -> str:
    """Why a session failed, for a message that starts with the server's name."""
    while getattr(exc, "exceptions", ()):  # an exception group: its first failure says why
        exc = exc.exceptions[0]
    try:
        errlog.seek(0, 2)
        errlog.seek(max(0, errlog.tell() - 4096))  # its last lines: a long session may have logged much
        lines = [line.strip() for line in errlog.read().splitlines() if line.strip()]
    except ValueError:  # closed: another thread's call on the same session failed first
        lines = []
    said = f" (its stderr: {lines[-1][:300]})" if lines else ""
    if isinstance(exc, TimeoutError):
        return f"did not answer within {server.timeout_ms} ms{said}"
    if isinstance(exc, (FileNotFoundError, PermissionError)):
        return f"did not start: {exc.strerror}: {exc.filename or server.command[0]}"
    why = str(exc) or type(exc).__name__
    if server.command:
        return f"crashed or closed its output before answering: {why}{said}"
    return f"could not be reached: {why}"
