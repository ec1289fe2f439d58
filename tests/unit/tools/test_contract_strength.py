"""What generated contracts are worth, measured: a multi-turn agent (OpenAI chat, Anthropic, streams,
several tools, a turn with two calls, a text-only turn, a forced call) runs on the real SDKs under
`replayci proxy` against a fake model; the pack it writes, with no edit, passes offline. Then
regressions written as edits of its fixtures must fail the offline run, and faithful
re-recordings (new ids, usage, key order, a dated model suffix, other words beside a call) must
not. The test prints both figures."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import warmed
import yaml
from fakeserver import FakeServer, Reply
from strength_support import AGENT, HARMLESS, model_script, scenario_edits, sessions, single_edits

from replayci.api import run as run_packs
from replayci.capture.contracts import render_scenario
from replayci.core.files import write_atomic

REPO = Path(__file__).resolve().parents[3]
KEYS = {"OPENAI_API_KEY": "sk-proj-STRENGTH-0a1b2c3d4e5f6a7b", "ANTHROPIC_API_KEY": "sk-ant-api03-STRENGTH-9f8e7d6c"}
CAUGHT_TARGET = 0.95


def capture(app: Path, *flags: str) -> Path:
    """The agent run once under `replayci proxy --mode record`; the pack it wrote."""
    (app / "agent.py").write_text(AGENT, "utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO), **KEYS}
    for var in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
        env.pop(var, None)
    with FakeServer() as server:
        server.set_default(model_script)
        done = subprocess.run([*warmed.cli(env), "proxy", "--pack", "packs/agent", "--mode", "record",
                               "--upstream", f"openai={server.openai_base_url}",
                               "--upstream", f"anthropic={server.anthropic_base_url}", *flags,
                               "--", *warmed.app_python(), "agent.py"],
                              cwd=app, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "Booked TP1234 for two; Lisbon will be 14 degrees and cloudy."
    return app / "packs" / "agent"


def add_sessions(pack: Path) -> list[Path]:
    """Each agent session of the capture as a scenario fixture and its generated contract."""
    written = []
    for n, doc in enumerate(sessions(pack / "golden").values(), 1):
        ref = f"sessions/session-{n}.json"
        fixture = pack / "golden" / ref
        fixture.parent.mkdir(exist_ok=True)
        fixture.write_text(json.dumps(doc), "utf-8")
        scenario = render_scenario(doc, ref)
        write_atomic(str(pack / "contracts" / f"{scenario.name}.yaml"), scenario.text)
        written.append(fixture)
    return written


def failing(pack: Path) -> list[str]:
    result = run_packs([str(pack)], provider="recorded")
    return [f"{c.contract}/{c.case}: {c.status} {c.classification or c.reason or ''}"
            for c in result.cases if c.status != "pass"]


@pytest.fixture(scope="module")
def captured(tmp_path_factory) -> tuple[Path, list[Path], list[Path]]:
    pack = capture(tmp_path_factory.mktemp("agent"))
    # The single exchanges (the proxy writes the sessions it saw as scenario fixtures of their own).
    singles = sorted(p for p in (pack / "golden").rglob("*.json") if "trajectory" not in json.loads(p.read_text()))
    return pack, singles, add_sessions(pack)


def test_the_captured_pack_is_named_for_people_and_passes_as_captured(captured):
    pack, singles, scenarios = captured
    assert len(singles) == 10 and len(scenarios) == 4  # 4 sessions of 2 or 3 model calls, and a text turn
    names = sorted(p.stem for p in (pack / "contracts").iterdir())
    assert "captured_book_flight__get_weather__search_flights__search_hotels" in names
    assert any(n.startswith("session_search_flights_get_weather_book_flight_plan_a_trip_to_lisbon_") for n in names)
    cases = yaml.safe_load((pack / "contracts" / f"{names[0]}.yaml").read_text())["golden_cases"]
    trip = sorted(c["id"].rsplit("-", 2)[0] for c in cases if c["id"].startswith("chat-plan-a-trip-"))
    first = "chat-plan-a-trip-to-lisbon-on-2026-12-03-for"
    assert trip == [first, f"{first}-step2", f"{first}-step3"]
    assert any(c["id"].startswith("messages-check-the-weather-in-rome-") for c in cases)
    assert failing(pack) == []


def test_regressions_are_caught_and_faithful_re_recordings_pass(captured):
    pack, singles, scenarios = captured
    edits = [e for f in singles for e in single_edits(f)] + [e for f in scenarios for e in scenario_edits(f)]
    kinds: Counter = Counter()
    caught: Counter = Counter()
    missed = []
    for edit in edits:
        original = edit.fixture.read_text("utf-8")
        doc = json.loads(original)
        edit.apply(doc)
        edit.fixture.write_text(json.dumps(doc), "utf-8")
        try:
            failed = failing(pack)
        finally:
            edit.fixture.write_text(original, "utf-8")
        kinds[edit.kind] += 1
        if failed:
            caught[edit.kind] += 1
        else:
            missed.append(f"{edit.kind}: {edit.fixture.name} {edit.what}")
    # Faithful re-recordings: each kind applied to every fixture at once.
    fixtures = singles + scenarios
    originals = {f: f.read_text("utf-8") for f in fixtures}
    harmless_failed, harmless_total = [], 0
    for kind, apply in HARMLESS.items():
        changed = 0
        for fixture in fixtures:
            doc = json.loads(originals[fixture])
            apply(doc)
            changed += doc != json.loads(originals[fixture]) or list(doc) != list(json.loads(originals[fixture]))
            fixture.write_text(json.dumps(doc), "utf-8")
        assert changed, f"{kind} changed no fixture"
        try:
            harmless_failed += [f"{kind}: {line}" for line in failing(pack)]
            harmless_total += len(fixtures)
        finally:
            for fixture, text in originals.items():
                fixture.write_text(text, "utf-8")
    rate = sum(caught.values()) / len(edits)
    # The figures, for -s (and shown with a failure); -q output stays dots.
    print(f"\ngenerated contracts: regressions caught {sum(caught.values())}/{len(edits)} ({rate:.1%}); "
          f"faithful re-recordings failing {len(harmless_failed)}/{harmless_total}")
    for kind, n in kinds.items():
        print(f"  {kind}: {caught[kind]}/{n}")
    for line in missed + harmless_failed:
        print(f"  not as expected: {line}")
    assert len(edits) >= 60 and set(kinds) >= {
        "prose instead of calls", "another tool", "required argument dropped", "argument value changed",
        "argument type changed", "extra call", "call added to a text answer", "two trajectory steps swapped",
        "a step's call renamed"}
    assert rate >= CAUGHT_TARGET, missed
    assert harmless_failed == []
    assert failing(pack) == []  # every fixture as it was


ONE_CALL = """
import json, os, urllib.request
body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Weather in Oslo?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]}
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", json.dumps(body).encode(),
                             {"content-type": "application/json", "authorization": "Bearer sk-x"})
print(urllib.request.urlopen(req).read().decode())
"""


def test_draft_contracts_run_and_never_fail(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with FakeServer(default=Reply.tool_call("get_weather", {"city": "Oslo"})) as server:
        done = subprocess.run([*warmed.cli(env), "proxy", "--pack", "p", "--mode", "record", "--draft",
                               "--upstream", f"openai={server.openai_base_url}", "--", sys.executable, "-c", ONE_CALL],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    (contract,) = (tmp_path / "p" / "contracts").iterdir()
    assert yaml.safe_load(contract.read_text())["status"] == "observed"
    (fixture,) = (tmp_path / "p" / "golden").rglob("*.json")
    (edit,) = [e for e in single_edits(fixture) if e.kind == "prose instead of calls"]
    doc = json.loads(fixture.read_text("utf-8"))
    edit.apply(doc)
    fixture.write_text(json.dumps(doc), "utf-8")
    done = subprocess.run([*warmed.cli(env), "--pack", "p", "--provider", "recorded"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    # The draft sees the prose answer, and still lets the run pass.
    assert done.returncode == 0, done.stdout
    assert "FAIL" in done.stdout and "(draft: status observed)" in done.stdout
    assert "  1 draft contract never fails a run (status: observed)" in done.stdout
