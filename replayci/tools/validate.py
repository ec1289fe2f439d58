"""`replayci validate`: load every pack, contract, fixture and recording; run nothing."""
from __future__ import annotations

import os

from ..api import load_settings_packs
from ..checks.arguments import output_path_problems
from ..checks.response import tool_schemas
from ..config import Settings
from ..core.errors import ConfigError, Problem, did_you_mean
from ..core.hashing import is_pinned
from ..core.paths import display_path
from ..engine.cases import Item, allowlist_misses, check_arguments, unmatched_allowlist
from ..pack.fixtures import load_fixture, load_recording
from ..pack.sources import load_yaml, locate_json, read_text
from ..providers.mcp import servers_for, unknown_server
from .check_tools import tool_drift


def _undeclared_tools(contract, undeclared: dict) -> list[Problem]:
    """One problem per expected tool that some fixtures' requests do not declare, located
    where the contract names the tool."""
    if not undeclared:
        return []
    try:
        doc = load_yaml(contract.file, contract.display)
    except ConfigError:
        doc = None
    raw = doc.value if doc is not None and isinstance(doc.value, dict) else {}
    out = []
    for name, where in undeclared.items():
        key: tuple = ("tool",)
        if name != raw.get("tool"):
            tools = raw.get("expect_tools") if isinstance(raw.get("expect_tools"), list) else []
            calls = raw.get("expected_tool_calls") if isinstance(raw.get("expected_tool_calls"), list) else []
            if name in tools:
                key = ("expect_tools", tools.index(name))
            else:
                key = next((("expected_tool_calls", i, "name") for i, c in enumerate(calls)
                            if isinstance(c, dict) and c.get("name") == name), ())
        first, declared = where[0]
        more = f" (and {len(where) - 1} more fixture{'s' if len(where) > 2 else ''})" if len(where) > 1 else ""
        message = (f"tool '{name}' is not declared in the request's tools of {first}{more}"
                   + did_you_mean(name, declared))
        out.append(doc.problem(key, message) if doc is not None
                   else Problem(contract.display, None, None, message))
    return out


def _unknown_server(case, name: str, servers: dict, settings: Settings) -> Problem:
    """A fixture's `{"$mcp": NAME}` that no mcp_servers entry names, located at the name."""
    doc = locate_json(read_text(case.fixture_path, case.fixture_display, max_bytes=settings.max_fixture_bytes),
                      case.fixture_display)
    return doc.problem(("request", "tools", "$mcp"), unknown_server(name, servers))


def validate_packs(settings: Settings, *, check_tools: bool = False) -> tuple[list[str], dict, list[Problem]]:
    """Notes (placeholder hashes, allowlist entries that match nothing), counts and, with
    *check_tools*, the fixtures' tools that drifted from their MCP servers'; raises
    ConfigError listing every problem."""
    packs = load_settings_packs(settings)
    problems: list[Problem] = []
    notes = unmatched_allowlist(allowlist_misses(packs))
    counts = {"packs": len(packs), "contracts": 0, "cases": 0, "fixtures": 0}
    failed: set = set()  # fixtures shared by several cases: their problems are listed once
    noted: set = set()
    for pack in packs:
        servers = servers_for(pack, settings.mcp_servers)
        for contract in pack.contracts:
            counts["contracts"] += 1
            notes += [f"{source}: {message}" for source, message in output_path_problems(contract)]
            undeclared: dict[str, list] = {}  # tool -> [(fixture display, declared names)]
            for case in contract.cases:
                counts["cases"] += 1
                if case.fixture_path in failed:
                    continue
                try:
                    fixture = load_fixture(case.fixture_path, case.fixture_display,
                                           max_bytes=settings.max_fixture_bytes)
                except ConfigError as exc:
                    failed.add(case.fixture_path)
                    problems.extend(exc.problems)
                    continue
                counts["fixtures"] += 1
                try:
                    check_arguments(Item(pack, contract, case), fixture)
                except ConfigError as exc:
                    problems.extend(exc.problems)
                if fixture.mcp_server is not None and fixture.mcp_server not in servers:
                    problems.append(_unknown_server(case, fixture.mcp_server, servers, settings))
                declared = tool_schemas(fixture.request)
                if declared:
                    for name in contract.expected_names:
                        if name not in declared:
                            undeclared.setdefault(name, []).append((case.fixture_display, declared))
                placeholders = [k for k, v in (fixture.boundary or {}).items()
                                if k != "model" and v is not None and not is_pinned(v)]
                if placeholders and case.fixture_path not in noted:
                    noted.add(case.fixture_path)
                    notes.append(f"{case.fixture_display}: boundary {', '.join(placeholders)} "
                                 "not pinned (placeholder, not 16 hex digits)")
                rec = os.path.join(pack.recordings_dir, contract.id, f"{case.id}.json")
                if os.path.lexists(rec):  # a FIFO, a device or a dangling link too: refused by name
                    try:
                        load_recording(rec, display_path(rec), max_bytes=settings.max_fixture_bytes)
                    except ConfigError as exc:
                        problems.extend(exc.problems)
            problems.extend(_undeclared_tools(contract, undeclared))
    if problems:
        raise ConfigError(problems)
    if check_tools and not settings.mcp_servers and not any(p.mcp_servers for p in packs):
        notes.append("--check-tools: no mcp_servers in pack.yaml or .replayci.yml, nothing to compare")
    return notes, counts, tool_drift(settings, packs) if check_tools else []
