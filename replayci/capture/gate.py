"""Judging captured traffic against the cases it corresponds to: what check mode reports and what
recording over existing contracts judges before it writes. One place calls the engine's judge."""
from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

from ..checks.trajectory import Loop, judge_step
from ..core.jsonvalue import ABSENT, differences
from ..engine.answers import Response, Trajectory
from ..engine.cases import Item
from ..engine.judge import judge
from ..engine.results import CaseResult
from . import sessions

# Which of two results of one case the report keeps: the worse.
_RANK = {"pass": 0, "skipped": 0, "non_reproducible": 1, "error": 2, "fail": 3}
_CUT = 80


def judge_answer(item: Item, request: dict, response: dict, *, origin: str = "check",
                 recorded: dict | None = None, details: dict | None = None) -> CaseResult:
    """One live answer judged by *item*'s checks, with the live *request*'s tool schemas;
    *recorded*: the case's request, to say where the live one changed (None: found by its key,
    so the same); *details*: what the result adds (the call's trace context...)."""
    started = time.perf_counter()
    result = judge(item, Response(request, response, details=_details(origin, request, recorded, details)), started)
    # (a result that is not the answer's verdict, as a judgement not recorded, is noted here)
    return result if "origin" in result.details else _noted(result, origin, request, recorded)


def judge_loop(item: Item, calls: list[sessions.Call], *, origin: str = "check",
               recorded: dict | None = None) -> CaseResult:
    """A live conversation (its model calls in order) judged by *item*'s scenario checks."""
    started = time.perf_counter()
    result = judge(item, Trajectory(calls[0].neutral, diverged(item, calls, live_steps(calls))), started)
    return _noted(result, origin, calls[0].neutral, recorded)


def diverged(item: Item, calls: list[sessions.Call], steps: list[dict]) -> Loop:
    """The live loop judged step by step as a live run judges it (judge_step, with each step's
    live request): it ends at the first step whose calls the contract forbids, the app having
    gone on past it; a last step's calls (an output tool, or the app stopped) wait for the end."""
    contract = item.contract.for_case(item.case)
    for n, step in enumerate(steps[:-1], 1):
        departures = judge_step(contract, n, calls[n - 1].neutral, step["response"], steps[:n - 1])
        if departures:
            return Loop(steps[:n], diverged=tuple(departures))
    return Loop(steps)


def live_steps(calls: list[sessions.Call]) -> list[dict]:
    """Each call's answer and the results of its tool calls, read from the call after it."""
    steps = []
    for n, call in enumerate(calls):
        results = sessions.link(call, calls[n + 1]) if n + 1 < len(calls) else None
        steps.append({"response": call.response, "tool_results": [
            {key: r[key] for key in ("call_id", "tool", "args_hash", "result")} for r in results or ()]})
    return steps


def _noted(result: CaseResult, origin: str, request: dict, recorded: dict | None) -> CaseResult:
    return replace(result, details={**result.details, **_details(origin, request, recorded, None)})


def _details(origin: str, request: dict, recorded: dict | None, extra: dict | None) -> dict:
    details = {"origin": origin, "live_request": request, **(extra or {})}
    changed = request_change(recorded, request) if recorded is not None else None
    if changed:
        details["request_changed"] = changed
    return details


def request_change(recorded: dict, live: dict) -> str | None:
    """Where a live request first differs from the case's recorded one (None: the same)."""
    found = differences(recorded, live, limit=1)
    if not found:
        return None
    where, was, now = found[0]
    return f"{where}: recorded {_cut(was)}, now {_cut(now)}"


def _cut(value: Any) -> str:
    if value is ABSENT:
        return "nothing"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= _CUT else text[: _CUT - 3] + "..."


def worse(a: CaseResult | None, b: CaseResult) -> CaseResult:
    """Of two results of one case, the one the report keeps (the later on a tie)."""
    if a is None:
        return b
    return a if _RANK.get(a.status, 0) > _RANK.get(b.status, 0) else b


def breaks(result: CaseResult) -> bool:
    """Whether a judged answer breaks its case (a draft contract never does)."""
    return not result.draft and result.status in ("fail", "error")
