"""Builders for wire-format stream fixtures."""
from __future__ import annotations

import json
from typing import Any


def sse(*events: Any, done: bool = False, named: bool = False) -> str:
    """Server-sent events text: each event a dict (data) or a (name, dict) pair."""
    out = []
    for event in events:
        name, data = event if isinstance(event, tuple) else (None, event)
        if named and name is None and isinstance(data, dict):
            name = data.get("type")
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n")
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out)


def ndjson(*lines: dict) -> str:
    """Newline-delimited JSON text."""
    return "".join(json.dumps(line) + "\n" for line in lines)


def calls_of(doc: dict) -> list[tuple[str, Any]]:
    """(name, arguments) of each client tool call of a document."""
    return [(c["name"], c["arguments"]) for c in doc["tool_calls"]]
