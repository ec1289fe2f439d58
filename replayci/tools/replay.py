"""`replayci replay PACK/CONTRACT/CASE`: re-run a recorded scenario live with overrides (model,
system prompt, temperature, provider) while the tools stay frozen, and diff the new run
against the recording ("replay with overrides").

The diff: ``identical`` (the tool sequence with arguments and the final text are equal; tokens
and durations are not compared), ``steps_delta``, ``tool_sequence_diff`` (the edit script of
`replayci diff` over the step-flattened calls), ``output_diff``, ``tokens_delta`` and
``duration_delta_ms``.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..api import load_settings_packs
from ..config import Settings
from ..core.errors import ConfigError, did_you_mean
from ..core.jsonvalue import show
from ..core.paths import display_path
from ..engine import agent
from ..engine.answers import Trajectory
from ..engine.cases import Item, boundary_change, variance_message
from ..engine.judge import judge
from ..engine.live import Cancelled, ModelCalls, policy_for
from ..engine.recorded import load_trajectory
from ..pack.fixtures import Fixture, Recording, load_fixture, load_recording, recording_path
from ..pack.loader import load_pack
from ..pack.model import Contract, Pack
from ..providers import LIVE_PROVIDERS, api_key_for, close_quietly, create, missing_key_message
from ..providers.call import call_once
from ..report.text import plain, signed
from .diff import edit_script, edit_text, quoted

REPLAY_VERSION = 1


@dataclass
class Target:
    """The recorded scenario to re-run."""

    item: Item
    fixture: Fixture
    recording: Recording | None
    steps: list[dict]  # the recorded trajectory, normalized
    origin: str  # the file the trajectory came from, as shown to the user
    warnings: list[str] = field(default_factory=list)

    @property
    def meta(self) -> dict:
        return self.recording.meta if self.recording is not None else {}


def _packs(settings: Settings, pack_ref: str) -> Pack:
    packs = load_settings_packs(settings) if settings.packs else []
    for p in packs:
        if p.pack_id == pack_ref:
            return p
    if os.path.isfile(os.path.join(pack_ref, "pack.yaml")) or os.path.isfile(os.path.join(pack_ref, "pack.yml")):
        return load_pack(pack_ref, project_root=settings.project_root)
    ids = [p.pack_id for p in packs]
    raise ConfigError(f"no pack '{pack_ref}'" + (f" (packs: {', '.join(ids)})" if ids else "")
                      + did_you_mean(pack_ref, ids))


def find_target(settings: Settings, ref: str) -> Target:
    """PACK/CONTRACT/CASE (PACK: a pack_id, or a pack directory) -> the recorded scenario."""
    parts = [p for p in ref.strip().strip("/").split("/") if p]
    if len(parts) < 3:
        raise ConfigError(f"'{ref}': expected PACK/CONTRACT/CASE, e.g. itinerary/plan_trip/lisbon_weekend")
    pack_ref, contract_id, case_id = "/".join(parts[:-2]), parts[-2], parts[-1]
    pack = _packs(settings, pack_ref)
    contract = next((c for c in pack.contracts if c.id == contract_id), None)
    if contract is None:
        raise ConfigError(f"no contract '{contract_id}' in pack {pack.pack_id}"
                          + did_you_mean(contract_id, [c.id for c in pack.contracts]))
    if not contract.scenario:
        raise ConfigError(f"{contract.display}: '{contract.id}' is not a scenario contract (scenario: true); "
                          "`replayci replay` re-runs recorded agent loops")
    case = next((c for c in contract.cases if c.id == case_id), None)
    if case is None:
        raise ConfigError(f"no case '{case_id}' in {pack.pack_id}/{contract.id}"
                          + did_you_mean(case_id, [c.id for c in contract.cases]))
    fixture = load_fixture(case.fixture_path, case.fixture_display, max_bytes=settings.max_fixture_bytes)
    path = recording_path(pack.recordings_dir, contract.id, case.id)
    recording = None
    if os.path.isfile(path):
        recording = load_recording(path, display_path(path), max_bytes=settings.max_fixture_bytes)
    if recording is not None and recording.raw.get("trajectory"):
        trajectory, origin, boundary = recording.raw["trajectory"], recording.display, recording.boundary
    elif fixture.raw.get("trajectory"):
        trajectory, origin, boundary = fixture.raw["trajectory"], fixture.display, fixture.boundary
        recording = None
    else:
        raise ConfigError(f"no recorded trajectory for {pack.pack_id}/{contract.id}/{case.id}: none at "
                          f"{display_path(path)} and none in {fixture.display}; record one with "
                          f"`replayci --provider {'|'.join(LIVE_PROVIDERS)} --record --filter {contract.id}/{case.id}`")
    target = Target(Item(pack, contract, case), fixture, recording, load_trajectory(trajectory, origin), origin)
    changed = boundary_change(boundary, fixture.request)
    if changed:
        target.warnings.append(variance_message(changed, origin, fixture))
    return target


def overridden_request(request: dict, *, model: str, system_prompt: str | None = None,
                       temperature: float | None = None) -> dict:
    """The request re-sent: the model set; a system prompt replaces the system message(s)
    (or adds one); a temperature is set."""
    out = {**request, "model": model}
    if system_prompt is not None:
        rest = [m for m in out.get("messages") or []
                if not (isinstance(m, dict) and m.get("role") in ("system", "developer"))]
        out["messages"] = [{"role": "system", "content": system_prompt}, *rest]
    if temperature is not None:
        out["temperature"] = temperature
    return out


def frozen_table(target: Target) -> agent.ToolTable:
    """The tool results the replay is answered from: the fixture's and the recording's tool
    tables and every result the recorded trajectory used (nothing runs, nothing is added)."""
    used = [r for s in agent.replay_recorded(target.steps, target.item.contract).steps
            for r in s["tool_results"] if isinstance(r, dict) and r.get("result") != agent.NO_RECORDING]
    return agent.ToolTable.merged(
        target.fixture.raw.get("tool_results"),
        target.recording.raw.get("tool_results") if target.recording is not None else None,
        used, configs=target.item.contract.tool_configs)


# ----------------------------------------------------------------------------- the diff


def flat_calls(steps: list[dict], contract: Contract) -> list[dict]:
    """Every tool call of a trajectory, in order, as {name, args_hash} (edit_script's input;
    a tool's args_hash covers its key paths only)."""
    table = agent.ToolTable(configs=contract.tool_configs)
    return [{"name": c.get("name"), "args_hash": table.key(c.get("name"), c.get("arguments"))}
            for s in steps for c in s["response"].get("tool_calls") or ()]


def tokens_of(steps: list[dict]) -> int | None:
    """input + output tokens over the steps; None when no step reports usage."""
    total, seen = 0, False
    for s in steps:
        usage = s["response"].get("usage") or {}
        for k in ("input_tokens", "output_tokens"):
            v = usage.get(k)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                total += v
                seen = True
    return total if seen else None


def final_text(steps: list[dict]) -> Any:
    return steps[-1]["response"].get("content") if steps else None


def _delta(a: Any, b: Any) -> Any:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return b - a
    return None


def replay_diff(original: list[dict], replay: list[dict], contract: Contract, *, original_ms: Any = None,
                replay_ms: Any = None) -> dict:
    """The replay diff between two trajectories of *contract*."""
    before, after = flat_calls(original, contract), flat_calls(replay, contract)
    text_a, text_b = final_text(original), final_text(replay)
    return {
        "identical": before == after and text_a == text_b,
        "steps_delta": len(replay) - len(original),
        "tool_sequence_diff": edit_script(before, after),
        "output_diff": {"equal": text_a == text_b, "original": text_a, "replay": text_b},
        "tokens_delta": _delta(tokens_of(original), tokens_of(replay)),
        "duration_delta_ms": _delta(original_ms, replay_ms),
    }


# ----------------------------------------------------------------------------- running


def _pick_provider(settings: Settings, meta: Mapping) -> str:
    if settings.sources.get("provider") in ("flag", "env"):
        if settings.provider not in LIVE_PROVIDERS:
            raise ConfigError(f"replay re-runs the scenario live: --provider must be "
                              f"{' or '.join(LIVE_PROVIDERS)}, not {settings.provider}")
        return settings.provider
    if meta.get("provider") in LIVE_PROVIDERS:
        return meta["provider"]
    if settings.provider in LIVE_PROVIDERS:
        return settings.provider
    raise ConfigError("which provider should re-run it? the trajectory names none: pass --provider "
                      + " or ".join(LIVE_PROVIDERS))


def _pick_model(settings: Settings, meta: Mapping, provider: str, pack: Pack) -> str:
    if settings.sources.get("model") in ("flag", "env") and settings.model:
        return settings.model
    if meta.get("model") and meta.get("provider") == provider:
        return meta["model"]  # no override: the model that was recorded
    model = settings.model or pack.default_model
    if not model:
        raise ConfigError(f"no model for provider {provider}: pass --model or set default_model in pack.yaml")
    return model


def _verdict(result) -> dict:
    return {"status": result.status, "classification": result.classification, "reason": result.reason}


def replay(settings: Settings, ref: str, *, system_prompt: str | None = None, temperature: float | None = None,
           environ: Mapping[str, str] | None = None) -> dict:
    """Re-run the recorded scenario *ref* live with the overrides in *settings* (provider,
    model, base_url) and the arguments; return the replay diff document."""
    environ = os.environ if environ is None else environ
    target = find_target(settings, ref)
    item = target.item
    provider_name = _pick_provider(settings, target.meta)
    model = _pick_model(settings, target.meta, provider_name, item.pack)
    key = api_key_for(provider_name, environ)
    if not key:
        raise ConfigError(missing_key_message(provider_name))
    request = overridden_request(target.fixture.request, model=model, system_prompt=system_prompt,
                                 temperature=temperature)
    table = frozen_table(target)
    hint = ("the tools are frozen and the recording has no result for this call "
            "(tool_replay: lenient would answer it with {\"error\": \"no recording\"})")
    provider = create(provider_name, api_key=key, base_url=settings.base_url)
    started = time.perf_counter()
    try:
        policy, stop = policy_for(item), threading.Event()
        calls = ModelCalls(lambda req: call_once(provider, req, model=model, policy=policy, key=key, stop_event=stop))
        try:
            # (the whole loop, for the diff: a departure is shown, not stopped at)
            loop = agent.drive(item.contract, request, calls, table, tool_mode="strict", miss_hint=hint,
                               judged=False, output_tools=agent.output_tools(target.steps))
        except Cancelled:
            raise KeyboardInterrupt from None
    finally:
        close_quietly(provider)
    original = judge(item, Trajectory(target.fixture.request, agent.replay_recorded(target.steps, item.contract)),
                     started)
    if loop.missing is not None:
        verdict = {"status": "non_reproducible", "classification": None, "reason": "tool_result_not_recorded"}
    else:
        verdict = _verdict(judge(item, Trajectory(request, loop), started))
    meta = target.meta
    doc = {
        "version": REPLAY_VERSION,
        "case": f"{item.pack.pack_id}/{item.contract.id}/{item.case.id}",
        "overrides": {"provider": provider_name if provider_name != meta.get("provider") else None,
                      "model": model if model != meta.get("model") else None,
                      "system_prompt": system_prompt, "temperature": temperature},
        "original": {"source": target.origin, "provider": meta.get("provider"), "model": meta.get("model"),
                     "steps": len(target.steps), "tool_sequence": _sequence(target.steps, item.contract),
                     "final_text": final_text(target.steps), "tokens": tokens_of(target.steps),
                     "duration_ms": meta.get("latency_ms"), "verdict": _verdict(original),
                     "trajectory": agent.trajectory_summary(target.steps)},
        "replay": {"provider": provider_name, "model": model, "steps": len(loop.steps),
                   "tool_sequence": _sequence(loop.steps, item.contract), "final_text": final_text(loop.steps),
                   "tokens": tokens_of(loop.steps), "duration_ms": calls.latency_ms, "verdict": verdict,
                   "stopped": str(loop.missing) if loop.missing is not None else None,
                   "trajectory": agent.trajectory_summary(loop.steps)},
        **replay_diff(target.steps, loop.steps, item.contract, original_ms=meta.get("latency_ms"),
                      replay_ms=calls.latency_ms),
        "warnings": list(target.warnings),
    }
    return doc


def _sequence(steps: list[dict], contract: Contract) -> list[dict]:
    return [{"tool": c["name"], "args_hash": c["args_hash"]} for c in flat_calls(steps, contract)]


# ----------------------------------------------------------------------------- terminal


def _text(value: Any) -> str:
    return quoted(value, 70)


def _steps_text(trajectory: list[dict]) -> str:
    parts = []
    for s in trajectory:
        if s.get("error"):
            parts.append("error")
        elif s["calls"]:
            parts.append(" + ".join(str(c["tool"]) for c in s["calls"]))
        else:
            parts.append("answer")
    return " → ".join(parts) or "nothing"


def _verdict_text(v: Mapping) -> str:
    word = {"pass": "pass", "fail": "FAIL", "non_reproducible": "NONREPRO", "error": "ERROR"}.get(
        v["status"], v["status"])
    tail = v.get("classification") or (v.get("reason") if v["status"] != "pass" else None)
    return word + (f" {tail}" if tail and v["status"] != "pass" else "")


def render(doc: Mapping, *, style: Callable[..., str] = plain) -> str:
    """The replay diff for a terminal."""
    o, r = doc["original"], doc["replay"]
    ov = doc["overrides"]
    lines = [f"replayci replay · {doc['case']} · {r['provider']} {r['model']}"]
    changes = []
    if ov.get("provider"):
        changes.append(f"provider {ov['provider']}")
    if ov.get("model"):
        changes.append(f"model {ov['model']}")
    if ov.get("system_prompt") is not None:
        changes.append(f"system prompt {show(ov['system_prompt'], 60)}")
    if ov.get("temperature") is not None:
        changes.append(f"temperature {ov['temperature']:g}")
    lines.append("  overrides: " + (", ".join(changes) if changes else "none (tools frozen)"))
    recorded_by = " ".join(str(x) for x in (o.get("provider"), o.get("model")) if x)
    lines.append(f"  recording: {o['source']}" + (f" ({recorded_by})" if recorded_by else ""))
    lines.append("")
    rows = [("recorded", o), ("replay", r)]
    texts = [f"{side['steps']} step{'s' if side['steps'] != 1 else ''} · {_steps_text(side['trajectory'])}"
             for _, side in rows]
    width = max(len(t) for t in texts)
    for (label, side), text in zip(rows, texts, strict=True):
        lines.append(f"  {label:<9} {text:<{width}}   {_verdict_text(side['verdict'])}")
    if r.get("stopped"):
        lines.append(f"  replay stopped: {r['stopped']}")
    lines.append("")
    edits = doc["tool_sequence_diff"]
    if edits:
        lines.append("  tool sequence: " + " · ".join(edit_text(e) for e in edits))
    else:
        lines.append("  tool sequence: same calls, same arguments")
    out = doc["output_diff"]
    if out["equal"]:
        lines.append("  output: unchanged")
    else:
        lines.append(f"  output: {_text(out['original'])} → {_text(out['replay'])}")
    lines.append(f"  steps {signed(doc['steps_delta'])} · tokens {signed(doc['tokens_delta'])}"
                 f" · duration {signed(doc['duration_delta_ms'], ' ms')}")
    lines.append("")
    if doc["identical"]:
        lines.append(style("  identical to the recording", fg="green"))
    else:
        lines.append(style("  differs from the recording", fg="yellow", bold=True))
    return "\n".join(lines) + "\n"

