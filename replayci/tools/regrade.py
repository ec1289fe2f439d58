"""`replayci regrade REPORT.json`: judge the responses a JSON report kept against the current
contracts, without calling the model under test.

Each case entry of a report carries its normalized response (and, for a scenario, its
steps). Regrading runs the current checks of that case on them: a contract tightened or
loosened since the run is applied to the answers the model gave then. Cases the report has
no response for (non-reproducible, skipped, errors), and cases whose contract is gone, keep
the outcome they had.
"""
from __future__ import annotations

import datetime
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..checks.schemas import tool_table
from ..checks.trajectory import Loop, judge_step
from ..config import Settings, Target
from ..core.errors import ConfigError
from ..engine.agent import replay_recorded
from ..engine.answers import Response, Trajectory
from ..engine.cases import Item
from ..engine.judge import judge
from ..engine.judge_model import JudgeModel
from ..engine.results import CaseResult, RunResult, full_response
from ..engine.sampling import sampling_summary
from ..engine.summary import repeat_summary
from ..engine.tally import summarize, target_comparison
from ..pack.fixtures import load_fixture
from ..pack.model import Pack
from .diff import ReportError, load_report


def read(path: str) -> dict:
    """The JSON report at *path*; one that is not a report is a usage error (exit 2)."""
    try:
        return load_report(path)
    except ReportError as exc:
        raise ConfigError(str(exc)) from None


def default_output(path: str) -> str:
    """Where the re-graded report goes when no report flag says: REPORT.regraded.json."""
    stem = path[:-len(".json")] if path.endswith(".json") else path
    return stem + ".regraded.json"


def _request(fixture_request: dict, run: Mapping, pack: Pack, target: Target | None = None) -> dict:
    """The request as the run sent it: a live run's model (its target's, in a comparison) wins
    over the fixture's."""
    if target is not None:
        return {**fixture_request, "model": target.model} if run.get("provider") != "recorded" else fixture_request
    if run.get("provider") in (None, "recorded"):
        return fixture_request
    named = run.get("model")
    model = named if isinstance(named, str) and ", " not in named else pack.default_model
    return {**fixture_request, "model": model} if model else fixture_request


def regrade_case(entry: dict, item: Item, run: Mapping, settings: Settings, judge_model: JudgeModel, *,
                 target: Target | None = None) -> CaseResult:
    """One case entry (of *target*, in a comparison) judged again by the current contract of
    *item*: the report's judgements reused, a new judge prompt asked of *judge_model* (never of the
    model under test)."""
    judgements = judge_model.judgements(entry.get("judgements"))
    fixture = load_fixture(item.case.fixture_path, item.case.fixture_display,
                           max_bytes=settings.max_fixture_bytes)
    request = _request(fixture.request, run, item.pack, target)
    details = {k: entry[k] for k in ("response_source", "response_origin") if k in entry}
    started = time.perf_counter()
    if item.contract.scenario:
        steps = [{**s, "response": full_response(s.get("response") or {})} for s in entry["steps"]]
        loop = diverged_again(replay_recorded(steps, item.contract), entry.get("diverged_at"), item, request)
        result = judge(item, Trajectory(request, loop, entry.get("latency_ms"), judgements, details), started)
    else:
        tools = tool_table(fixture.tools_key, request.get("tools"))
        answer = Response(request, full_response(entry["response"]), tools, judgements, details)
        result = judge(item, answer, started)
    return replace(result, duration_ms=entry.get("duration_ms") or 0.0, attempts=entry.get("attempts") or 0,
                   allowlisted=False, target=entry.get("target"))


def diverged_again(loop: Loop, at: Any, item: Item, request: dict) -> Loop:
    """A kept loop that stopped at step *at* (a step its contract forbade): that step judged
    again by the current contract, so the loop is judged as the run stopped it."""
    if not isinstance(at, int) or isinstance(at, bool) or not 1 <= at <= len(loop.steps):
        return loop
    departures = judge_step(item.contract.for_case(item.case), at, request, loop.steps[at - 1]["response"],
                            loop.steps[:at - 1])
    return replace(loop, diverged=tuple(departures))


def _items(packs: list[Pack]) -> dict[tuple, Item]:
    return {(p.pack_id, c.id, k.id): Item(p, c, k) for p in packs for c in p.contracts for k in c.cases}


def _judgeable(entry: dict, item: Item) -> bool:
    """A case whose answer the report kept (a scenario's steps), judged once (a repeated case's
    runs are not all kept)."""
    kept = entry.get("steps") if item.contract.scenario else entry.get("response")
    return isinstance(kept, list if item.contract.scenario else dict) and not entry.get("repeat")


def _kept(entry: dict, source: str) -> CaseResult:
    """A case the report keeps as it was; one missing what every report case has is a usage error."""
    try:
        return CaseResult.from_dict(entry)
    except TypeError as exc:  # a hand-edited report: missing or unknown keys
        raise ConfigError(f"{source}: not a replayci JSON report: case "
                          f"{entry.get('pack')}/{entry.get('contract')}/{entry.get('case')}: {exc}") from None


def regrade(report: dict, packs: list[Pack], settings: Settings, *, source: str) -> RunResult:
    """The report's cases judged again by the current contracts of *packs*."""
    items = _items(packs)
    results: list[CaseResult] = []
    left: dict[str, list] = {"gone": [], "kept": [], "repeated": []}
    judged = 0
    judge_model = JudgeModel(settings, os.environ, threading.Event())
    targets = report_targets(report)
    by_label = {t.label: t for t in targets}
    for entry in report["cases"]:
        key = (entry.get("pack"), entry.get("contract"), entry.get("case"))
        item = items.get(key)
        if item is None or not _judgeable(entry, item):
            why = "gone" if item is None else "repeated" if entry.get("repeat") else "kept"
            if why != "kept" or entry.get("status") in ("pass", "fail"):  # those had a response
                left[why].append("/".join(map(str, key)) + (f"@{entry['target']}" if entry.get("target") else ""))
            results.append(_kept(entry, source))
            continue
        judged += 1
        results.append(regrade_case(entry, replace(item, order=tuple(entry.get("order") or ())),
                                    report.get("run") or {}, settings, judge_model,
                                    target=by_label.get(entry.get("target"))))
    judge_model.close()
    settings = settings.with_(targets=targets)  # a comparison's gates: per target
    before = report.get("summary") or {}
    in_report = {r.pack for r in results}
    loaded = {p.pack_id for p in packs}
    summary = summarize(results, [p for p in packs if p.pack_id in in_report], settings,
                        {k: v for k, v in (before.get("gates_by_pack") or {}).items() if k not in loaded})
    if isinstance(before.get("repeat"), dict):
        summary["repeat"] = repeat_summary([{"draft": r.draft, **r.details} for r in results],
                                           before["repeat"].get("n"))
    if isinstance(before.get("sampling"), dict) and isinstance(before["sampling"].get("max"), int):
        summary["sampling"] = sampling_summary([{"draft": r.draft, "cost_usd": r.cost_usd, **r.details}
                                                for r in results], before["sampling"]["max"])
    run = {**(report.get("run") or {}),
           "regraded": {"from": source, "cases": judged,
                        "at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}}
    comparisons = {"targets": target_comparison(results, targets)} if targets else {}
    return RunResult(cases=results, summary=summary, run=run, warnings=_warnings(**left), comparisons=comparisons)


def report_targets(report: Mapping) -> tuple[Target, ...]:
    """The targets a comparison's report compared (none: not a comparison), in its order."""
    record = report.get("targets")
    if not isinstance(record, Mapping):
        return ()
    by_target = record.get("by_target") if isinstance(record.get("by_target"), Mapping) else {}
    out = []
    for label in record.get("labels") or ():
        own = by_target.get(label) if isinstance(by_target.get(label), Mapping) else {}
        provider, _, model = str(label).partition(":")
        out.append(Target(provider=str(own.get("provider") or provider), model=str(own.get("model") or model),
                          label=str(label)))
    return tuple(out)


def _warnings(gone: list[str], kept: list[str], repeated: list[str]) -> list[str]:
    """What a re-graded report says about the cases it could not judge again."""
    out = []
    kept_n, repeated_n = len(kept), len(repeated)
    if gone:
        shown = ", ".join(gone[:5]) + (f" and {len(gone) - 5} more" if len(gone) > 5 else "")
        out.append(f"{len(gone)} case{'s' if len(gone) != 1 else ''} of the report no longer exist in "
                   f"the packs and keep their outcome: {shown}")
    if kept:
        out.append(f"{kept_n} passed or failed case{'s' if kept_n != 1 else ''} carry no response (too large "
                   "for a report, or a report written before reports kept them) and keep their outcome")
    if repeated:
        out.append(f"{repeated_n} case{'s' if repeated_n != 1 else ''} ran under --repeat and keep their "
                   "outcome (the report keeps one response of their runs)")
    return out


def same_file(a: str, b: str) -> bool:
    """Whether two paths name one file (the input must never be overwritten)."""
    if os.path.exists(a) and os.path.exists(b):
        return os.path.samefile(a, b)
    return os.path.abspath(a) == os.path.abspath(b)
