"""What a generated contract may hold: well inside the loader's node and size limits
(`pack.sources.MAX_NODES`, `MAX_YAML_BYTES`). Past them a contract pins less — the cases holding
the most argument invariants keep only their calls' names, a session's largest steps only their
calls' number and names —, then a tool set's contract is split over more files, and a session
too large for any contract is not written."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.jsonvalue import encoder
from ..pack.sources import MAX_NODES, MAX_YAML_BYTES

NODE_BUDGET = MAX_NODES // 2
# Measured on compact JSON: the YAML written of the same values (keys on lines of their own,
# indented) is about as long, and half the limit leaves room for that and for the header.
BYTE_BUDGET = MAX_YAML_BYTES // 2
_compact = encoder(separators=(",", ":"))


class TooLarge(Exception):
    """A contract that cannot be written within the loader's limits, however little it pins."""


def nodes(value: Any) -> int:
    """The YAML nodes *value* is written as (each key, value and collection one)."""
    count, stack = 0, [value]
    while stack:
        node = stack.pop()
        count += 1
        if isinstance(node, dict):
            count += len(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return count


def size(value: Any) -> int:
    """The bytes of *value* as compact JSON (about those of its YAML)."""
    return len(_compact(value).encode("utf-8", "surrogatepass"))


def fits(value: Any, used_nodes: int = 0, used_bytes: int = 0) -> bool:
    """Whether *value* fits beside what is used already."""
    return used_nodes + nodes(value) <= NODE_BUDGET and used_bytes + size(value) <= BYTE_BUDGET


def names_only(entry: dict) -> dict:
    """A case *entry* with its expected calls pinned by name alone."""
    assertions = entry.get("assertions")
    calls = assertions.get("expected_tool_calls") if isinstance(assertions, dict) else None
    if not calls:
        return entry
    slim = [{k: v for k, v in call.items() if k != "argument_invariants"} for call in calls]
    return {**entry, "assertions": {**assertions, "expected_tool_calls": slim}}


def within_budget(entries: list[dict], budget: int | None = None) -> list[dict]:
    """Case *entries* written within *budget* nodes (default NODE_BUDGET): the largest pin less
    until they fit (they may still not, when the cases are many)."""
    budget = NODE_BUDGET if budget is None else budget
    _cut_largest(entries, sum(nodes(e) for e in entries), budget, names_only)
    return entries


def _cut_largest(items: list, total: int, budget: int, cut: Callable[[Any], Any]) -> None:
    """Replace the largest of *items* by what *cut* keeps of them, largest first, until *total*
    nodes fit *budget* (in place)."""
    sizes = [nodes(item) for item in items]
    for i in sorted(range(len(items)), key=lambda i: -sizes[i]):
        if total <= budget:
            return
        items[i] = cut(items[i])
        total -= sizes[i] - nodes(items[i])


def split(entries: list[dict], head: Any) -> list[list[dict]]:
    """Case *entries* in parts, each fitting one contract file beside *head* (what every part
    repeats): pinning less first, then as many files as it takes (one part at least)."""
    head_nodes, head_bytes = nodes(head), size(head)
    entries = within_budget(entries, NODE_BUDGET - head_nodes)
    parts: list[list[dict]] = [[]]
    used_nodes, used_bytes = head_nodes, head_bytes
    for entry in entries:
        n, b = nodes(entry), size(entry)
        if parts[-1] and (used_nodes + n > NODE_BUDGET or used_bytes + b > BYTE_BUDGET):
            parts.append([])
            used_nodes, used_bytes = head_nodes, head_bytes
        parts[-1].append(entry)
        used_nodes, used_bytes = used_nodes + n, used_bytes + b
    return parts


def _step_names_only(step: dict) -> dict:
    """A scenario step's invariants cut to its calls' number and names."""
    kept = [inv for inv in step["invariants"] if inv.get("path") == "$.tool_calls" or (
        isinstance(inv.get("path"), str) and inv["path"].startswith("$.tool_calls[") and inv["path"].endswith(
            "].name") and inv["path"].count(".") == 2)]
    return {**step, "invariants": kept}


def scenario_within_budget(contract: dict) -> dict:
    """A scenario *contract* within the limits: its largest steps pinned by their calls' number
    and names, then its steps' invariants left out (its tool sequence still checked);
    TooLarge when even that does not fit."""
    if fits(contract):
        return contract
    trajectory = contract["trajectory"]
    steps = list(trajectory.get("step_invariants") or ())
    _cut_largest(steps, nodes(contract), NODE_BUDGET, _step_names_only)
    out = {**contract, "trajectory": {**trajectory, "step_invariants": steps}} if steps else contract
    if fits(out):
        return out
    out = {**contract, "trajectory": {k: v for k, v in trajectory.items() if k != "step_invariants"}}
    if fits(out):
        return out
    raise TooLarge(f"its {len(trajectory['tool_sequence']['tools']):,} tool calls make a scenario contract "
                   "larger than a pack can read")
