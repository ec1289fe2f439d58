"""`mcp_servers:` of pack.yaml and .replayci.yml: the MCP servers tools come from."""
from __future__ import annotations

from typing import Any

from ..core.errors import Problem
from .model import McpServer
from .sources import Located
from .vocabulary import TIMEOUT_MS

COMMAND_PREFIX = "mcp:"  # a tool_commands entry that names a server instead of a command line


def mcp_servers(doc: Located, value: Any, cwd: str) -> tuple[tuple[tuple[str, McpServer], ...], list[Problem]]:
    """The servers an `mcp_servers` mapping names (each command runs in *cwd*), and what is
    wrong with them beyond the table's key and type checks."""
    if not isinstance(value, dict):
        return (), []
    servers, problems = [], []
    for name, entry in value.items():
        if not isinstance(entry, dict):
            continue
        where = ("mcp_servers", name)
        command, url = entry.get("command"), entry.get("url")
        if (command is None) == (url is None):
            problems.append(doc.problem(where, "expected either command (a stdio server) or url "
                                        "(streamable HTTP)" + (", not both" if command is not None else "")))
            continue
        if command is not None and not (isinstance(command, list) and command
                                        and all(isinstance(a, str) and a for a in command)):
            problems.append(doc.problem(where + ("command",), "expected a command line as a non-empty "
                                        "list of strings ([python, server.py])"))
            continue
        if not isinstance(url, (str, type(None))) or not isinstance(entry.get("timeout_ms", 1), int):
            continue  # reported by the table check
        servers.append((str(name), McpServer(
            name=str(name), command=tuple(command) if command else None, url=url, cwd=cwd,
            timeout_ms=entry.get("timeout_ms", TIMEOUT_MS), source=doc.source(where))))
    return tuple(servers), problems
