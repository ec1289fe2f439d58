"""Shared fixtures: packs written to temporary directories, the way users write them."""
from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from replayci.core.hashing import boundary_hashes

# The fake provider server's fixtures (server, shared_server), for every test module.
pytest_plugins = ("livecli",)

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = REPO / "replayci" / "tools" / "templates"

# No test may reach a real provider: live tests pass base_url explicitly, and these make a
# stray call fail fast instead of hanging.
for _var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "REPLAYCI_PROVIDER_KEY", "REPLAYCI_PROVIDER",
             "REPLAYCI_MODEL", "REPLAYCI_BASE_URL", "REPLAYCI_JOBS", "REPLAYCI_REPLAY", "REPLAYCI_TOOL_REPLAY",
             "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "NO_COLOR", "FORCE_COLOR"):
    os.environ.pop(_var, None)
os.environ["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"
os.environ["ANTHROPIC_BASE_URL"] = "http://127.0.0.1:9"
os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")

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


@pytest.fixture
def project(tmp_path, monkeypatch):
    """An empty project directory, made the working directory."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def pack(project):
    return PackBuilder(project)


@pytest.fixture
def starter(project):
    """A project made from the starter template (what `replayci init` writes)."""
    shutil.copytree(TEMPLATES / "starter", project / "packs" / "starter")
    shutil.copy(TEMPLATES / "replayci.yml", project / ".replayci.yml")
    return project


@pytest.fixture
def recorded_run() -> dict:
    """A JSON report of the example packs' recorded run."""
    from html_support import load_report

    return load_report("recorded_run.json")


@pytest.fixture
def failing_run() -> dict:
    """A JSON report of a run with one fixture broken."""
    from html_support import load_report

    return load_report("failing_run.json")
