"""`replayci validate --check-tools`: every fixture's tools against the current tools of the MCP
servers they come from, so a tool schema that moved under a pack is found before the model
is blamed."""
from __future__ import annotations

from typing import Any

from ..config import Settings
from ..core.errors import ConfigError, Problem
from ..core.jsonvalue import ABSENT, differences, show
from ..pack.fixtures import load_fixture, mcp_tools
from ..pack.model import McpServer, Pack
from ..pack.sources import Located, locate_json, read_text
from ..providers.mcp import Sessions, unknown_server


def tool_drift(settings: Settings, packs: list[Pack]) -> list[Problem]:
    """One problem per drift: a tool added on a server, removed from it, or whose description
    or schema changed (with the JSON path of the first difference)."""
    problems: list[Problem] = []
    seen: set[str] = set()
    with Sessions(settings.mcp_servers) as servers:
        for pack in packs:
            known = servers.servers(pack)
            for contract in pack.contracts:
                for case in contract.cases:
                    if case.fixture_path not in seen:
                        seen.add(case.fixture_path)
                        problems += _fixture_drift(case.fixture_path, case.fixture_display, known, servers,
                                                   settings.max_fixture_bytes)
    return problems


def _fixture_drift(path: str, display: str, known: dict[str, McpServer], servers: Sessions,
                   max_bytes: int) -> list[Problem]:
    """The drift of one fixture's tools: all of a `{"$mcp": NAME}` request's pinned tools
    against its server's; of other requests, each tool a server of the pack defines."""
    doc = locate_json(read_text(path, display, max_bytes=max_bytes), display)
    request = doc.value.get("request") if isinstance(doc.value, dict) else None
    pinned = mcp_tools(request)
    if pinned is not None:
        name = pinned["$mcp"]
        if name not in known:  # a mistake in the pack, not a drift
            raise ConfigError(doc.problem(("request", "tools", "$mcp"), unknown_server(name, known)))
        if not isinstance(pinned.get("pinned"), list):
            return []  # the fixture's own problem ("run `replayci pin`") is reported by validate
        current = {_name(t): (known[name], t) for t in servers.tools(known[name])}
        return _drift(doc, ("request", "tools", "pinned"), pinned["pinned"], current, source=name)
    if not known:
        return []
    try:
        tools = load_fixture(path, display, max_bytes=max_bytes).request.get("tools")
    except ConfigError:
        return []  # reported by validate
    current = {}
    for server in reversed(list(known.values())):  # the first server that defines a tool wins
        current.update({_name(t): (server, t) for t in servers.tools(server)})
    inline = isinstance(request, dict) and isinstance(request.get("tools"), list)
    where = ("request", "tools") if inline else ("request", "tools", "$ref")
    return _drift(doc, where, tools if isinstance(tools, list) else [], current)


def _name(tool: Any) -> Any:
    """A neutral tool's name."""
    fn = tool.get("function") if isinstance(tool, dict) else None
    return fn.get("name") if isinstance(fn, dict) else None


def _drift(doc: Located, where: tuple, tools: list, current: dict[str, tuple[McpServer, dict]], *,
           source: str | None = None) -> list[Problem]:
    """Drift of *tools* (located at *where* in *doc*) from the servers' *current* tools; when
    they are all pinned from the server named *source*, tools it no longer has or has added too."""
    out = []
    mine = set()
    for i, tool in enumerate(tools):
        name = _name(tool)
        mine.add(name)
        at = where + (i,) if where[-1] != "$ref" else where
        if name not in current:
            if source is not None:
                out.append(doc.problem(at, f"tool '{name}' was removed from MCP server '{source}': "
                                       "run `replayci pin` to refresh"))
            continue
        server, now = current[name]
        changed = _changed(tool["function"], now["function"])
        if changed:
            out.append(doc.problem(at, f"tool '{name}' changed on MCP server '{server.name}': {changed}"))
    if source is not None:
        out += [doc.problem(where, f"tool '{name}' was added on MCP server '{source}': run "
                            "`replayci pin` to refresh") for name in current if name not in mine]
    return out


def _changed(pinned: dict, now: dict) -> str | None:
    """How a tool's description or schema changed, or None."""
    if pinned.get("description") != now.get("description"):
        return (f"its description differs (pinned: {show(pinned.get('description'), 80)}, "
                f"now: {show(now.get('description'), 80)})")
    found = differences(pinned.get("parameters"), now.get("parameters"), limit=1)
    if not found:
        return None
    path, was, new = found[0]
    return f"its schema differs at {path} (pinned: {_shown(was)}, now: {_shown(new)})"


def _shown(value: Any) -> str:
    return "absent" if value is ABSENT else show(value, 80)
