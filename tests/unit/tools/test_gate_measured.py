"""The regression gate, measured: an agent of our own (openai SDK, chat completions) and one on
the OpenAI Agents SDK (Responses API, structured output) are captured through the proxy from a
scripted fake model; then the fake's *answers* change. Each regression must be caught by
check mode and never saved by `record` without `--update`; each benign change must never fail.
The figures are printed (pytest -s -m slow) and quoted in the README."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import warmed
from agent_support import AGENT, AGENTS_SDK
from fakeserver import Action, Conversation, FakeServer, Reply

# Looked up, not imported: collecting this soak test should not cost every test process the SDK's import.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("agents") is None, reason="needs openai-agents")
REPO = Path(__file__).resolve().parents[3]
FLIGHTS = Reply.tool_call("search_flights", {"to": "LIS", "passengers": 2}, text="I will look for flights first.")
HOTEL = Reply.tool_call("book_hotel", {"city": "Lisbon", "nights": 3})
FINAL = {"own": Reply.plain_text("Booked: flights to LIS and 3 nights in Lisbon."),
         "agents-sdk": Reply.plain_text(json.dumps({"destination": "Lisbon", "nights": 3}))}


@dataclass(frozen=True)
class Rewritten(Action):
    """Another action's JSON answer changed by *change* (the usage, the order of keys, the model)."""

    inner: Action
    change: Any

    def render(self, req):
        r = self.inner.render(req)
        return replace(r, body=json.dumps(self.change(json.loads(r.body))).encode())


def _reversed_keys(value):
    if isinstance(value, dict):
        return {k: _reversed_keys(value[k]) for k in reversed(list(value))}
    return [_reversed_keys(v) for v in value] if isinstance(value, list) else value


def _usage(body):
    for key in ("usage",):
        if isinstance(body.get(key), dict):
            body[key] = {k: (v * 7 + 11 if isinstance(v, int) else v) for k, v in body[key].items()}
    return body


def _dated(body):
    body["model"] = str(body.get("model")) + "-2024-07-18"
    return body


def loop(agent: str, turns: list | None = None) -> Conversation:
    return Conversation(turns or [FLIGHTS, HOTEL, FINAL[agent]])


def regressions(agent: str) -> dict[str, Conversation]:
    final = FINAL[agent]
    out = {
        "prose instead of calls": loop(agent, [Reply.plain_text("I cannot book trips.") if agent == "own"
                                               else Reply.plain_text(json.dumps({"destination": "Lisbon",
                                                                                 "nights": 3}))]),
        "another tool": loop(agent, [FLIGHTS, Reply.tool_call("get_weather", {"location": "Lisbon"}), final]),
        "a required argument dropped": loop(agent, [FLIGHTS, Reply.tool_call("book_hotel", {"city": "Lisbon"}),
                                                    final]),
        "a value changed": loop(agent, [FLIGHTS, Reply.tool_call("book_hotel", {"city": "Lisbon", "nights": 4}),
                                        final]),
        "a type changed": loop(agent, [FLIGHTS, Reply.tool_call("book_hotel", {"city": "Lisbon", "nights": "3"}),
                                       final]),
        "an extra call": loop(agent, [FLIGHTS, Reply.tool_calls([("book_hotel", {"city": "Lisbon", "nights": 3}),
                                                                ("get_weather", {"location": "Lisbon"})]), final]),
        "two steps swapped": loop(agent, [HOTEL, FLIGHTS, final]),
    }
    if agent == "agents-sdk":
        out["a structured field dropped"] = loop(agent, [FLIGHTS, HOTEL,
                                                         Reply.plain_text(json.dumps({"destination": "Lisbon"}))])
    return out


def benign(agent: str) -> dict[str, tuple[Action, dict]]:
    base = loop(agent)
    reworded = replace(FLIGHTS, text="Let me check which flights there are.")
    return {
        "new ids": (base, {}),
        "usage": (Rewritten(base, _usage), {}),
        "key order": (Rewritten(base, _reversed_keys), {}),
        "a dated model suffix": (Rewritten(base, _dated), {}),
        "reworded text beside a call": (loop(agent, [reworded, HOTEL, FINAL[agent]]), {}),
        "a changed system prompt, the same calls": (base, {"AGENT_SYSTEM": "You plan trips. Call the tools."}),
    }


def proxied(root: Path, server, mode: str, agent: str, env: dict | None = None) -> subprocess.CompletedProcess:
    script = ("agent.py", "chat") if agent == "own" else ("sdk_agent.py",)
    full = {**os.environ, "PYTHONPATH": str(REPO), "OPENAI_API_KEY": "sk-measure-0123456789abcdef", **(env or {})}
    for var in ("OPENAI_BASE_URL", "GITHUB_ACTIONS"):
        full.pop(var, None)
    return subprocess.run([*warmed.cli(full), "proxy", "--pack", "packs/app", "--mode", mode,
                           "--upstream", f"openai={server.openai_base_url}", "--", sys.executable, *script],
                          cwd=root, env=full, capture_output=True, text=True, timeout=300, check=False)


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["own", "agents-sdk"])
def test_regressions_are_caught_and_never_saved_benign_changes_never_fail(tmp_path, agent):
    base = tmp_path / "base"
    base.mkdir()
    (base / "agent.py").write_text(AGENT, "utf-8")
    (base / "sdk_agent.py").write_text(AGENTS_SDK, "utf-8")
    figures = {"caught": [], "saved": [], "benign_failed": []}
    with FakeServer(default=loop(agent)) as server:
        assert proxied(base, server, "record", agent).returncode == 0
        for n, (name, script) in enumerate(regressions(agent).items()):
            root = tmp_path / f"r{n}"
            shutil.copytree(base, root)
            server.set_default(script)
            checked = proxied(root, server, "check", agent)
            before = files(root / "packs")
            recorded = proxied(root, server, "record", agent)
            if checked.returncode == 1 and "FAIL" in checked.stdout:
                figures["caught"].append(name)
            if files(root / "packs") != before:
                figures["saved"].append(name)
            assert recorded.returncode == 1 or files(root / "packs") == before, recorded.stderr
        for n, (name, (script, env)) in enumerate(benign(agent).items()):
            root = tmp_path / f"b{n}"
            shutil.copytree(base, root)
            server.set_default(script)
            checked = proxied(root, server, "check", agent, env)
            recorded = proxied(root, server, "record", agent, env)
            if checked.returncode != 0 or recorded.returncode != 0:
                figures["benign_failed"].append(name)
    regressed, kind = len(regressions(agent)), len(benign(agent))
    print(f"\n{agent}: regressions caught by check {len(figures['caught'])}/{regressed}, saved by record "
          f"{len(figures['saved'])}/{regressed}; benign changes failed {len(figures['benign_failed'])}/{kind}"
          f"\n  {json.dumps(figures)}")
    assert len(figures["caught"]) >= 0.95 * regressed, figures
    assert figures["saved"] == [] and figures["benign_failed"] == [], figures
