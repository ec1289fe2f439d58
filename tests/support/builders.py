"""Builders for tests: requests, responses and fixtures in the shapes users write, and packs
written to a project directory."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

from replayci.core.hashing import boundary_hashes

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = REPO / "replayci" / "tools" / "templates"

WEATHER_TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather.",
        "parameters": {"type": "object", "properties": {
            "location": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["location"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "get_time", "description": "Local time.",
        "parameters": {"type": "object", "properties": {"timezone": {"type": "string"}},
                       "required": ["timezone"]}}},
]


# A contract with one golden case, c, on the fixture c.json.
SIMPLE = """
tool: get_weather
golden_cases:
  - id: c
    input_ref: c.json
"""


def request(question: str = "Weather in Paris?", tools=None, system: str = "Use the tools.") -> dict:
    return {"model": "gpt-4o-mini",
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": question}],
            "tools": WEATHER_TOOLS if tools is None else tools, "tool_choice": "auto", "temperature": 0}


def call(name: str, args, id_: str = "call_1") -> dict:
    raw = args if isinstance(args, str) else json.dumps(args)
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": raw}}


def response(*calls, content=None) -> dict:
    return {"success": True, "tool_calls": list(calls), "content": content}


def fixture(req: dict | None = None, resp: dict | None = None, *, pin: bool = True) -> dict:
    req = req or request()
    out = {"request": req}
    if pin:
        out["boundary"] = {"model": "gpt-4o-mini", **boundary_hashes(req)}
    if resp is not None:
        out["response"] = resp
    return out


class PackBuilder:
    """Writes a pack under a project directory: pack.yaml, contracts, fixtures."""

    def __init__(self, root: Path, pack_id: str = "demo"):
        self.root = root
        self.dir = root / "packs" / pack_id
        (self.dir / "contracts").mkdir(parents=True, exist_ok=True)
        (self.dir / "golden" / "negative").mkdir(parents=True, exist_ok=True)
        (self.dir / "pack.yaml").write_text(
            f"pack_id: {pack_id}\nschema_version: v0.1\ndefault_model: gpt-4o-mini\n", "utf-8")
        (self.dir / "nr-allowlist.json").write_text("[]\n", "utf-8")
        if not (root / ".replayci.yml").exists():
            (root / ".replayci.yml").write_text("provider: recorded\n", "utf-8")

    def contract(self, name: str, text: str) -> Path:
        path = self.dir / "contracts" / f"{name}.yaml"
        path.write_text(textwrap.dedent(text).lstrip("\n"), "utf-8")
        return path

    def fixture(self, ref: str, doc: dict) -> Path:
        base = self.dir / "golden"
        path = base / ref
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2), "utf-8")
        return path

    def recording(self, contract: str, case: str, doc: dict) -> Path:
        path = self.dir / "recordings" / contract / f"{case}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2, sort_keys=True), "utf-8")
        return path

    def allowlist(self, entries: list) -> None:
        (self.dir / "nr-allowlist.json").write_text(json.dumps(entries, indent=2), "utf-8")


def strict_and_fast(compute):
    """compute() with the per-case fast paths off, then on (core.memo.use_fast_paths), for
    tests that compare the two; the fast paths are on again afterwards, whatever happens."""
    from replayci.core.memo import use_fast_paths

    try:
        use_fast_paths(False)
        strict = compute()
        use_fast_paths(True)
        return strict, compute()
    finally:
        use_fast_paths(True)
