"""The one runner, for the library, the CLI and the pytest plugin: settings (and packs, when
the caller loaded them) -> every selected case's result, the summary and the gates."""
from __future__ import annotations

import contextlib
import dataclasses
import datetime
import gc
import os
import time
from collections.abc import Iterator

from ..config import Settings
from ..core.errors import ConfigError, Problem
from ..core.version import __version__
from ..pack.loader import load_packs
from ..pack.model import Pack
from . import parallel
from .cases import (
    Interrupted,
    Item,
    Keeper,
    Listener,
    allowlist_misses,
    apply_allowlist,
    refuse_empty_selection,
    select,
    unmatched_allowlist,
)
from .recorded import run_sequential
from .results import CaseResult, RunResult
from .summary import repeat_summary
from .summary import summarize as summarize_cases


@contextlib.contextmanager
def collector_paused(pause: bool = True):
    """The cyclic garbage collector off while the block runs (a run allocates many small,
    short-lived containers and no cycles). Afterwards it resumes (for callers in the same
    process) without rescanning what the run built."""
    was = gc.isenabled()
    if pause:
        gc.disable()
    try:
        yield
    finally:
        if pause and was:
            gc.freeze()
            gc.enable()


def run(settings: Settings, *, packs: list[Pack] | None = None, listener: Listener | None = None,
        environ=None, keep: Keeper | None = None) -> tuple[list[Pack], RunResult]:
    """Load the packs of *settings* (unless *packs* are given) and run their selected cases
    (*keep*: what to hold of each finished case, by default all of it)."""
    started_at = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.perf_counter()
    with collector_paused(settings.provider == "recorded"):
        if packs is None and _loads_in_two(settings):
            packs, results, warnings = _load_and_run_in_two(settings, listener, keep)
            interrupted = False
        else:
            if packs is None:
                packs = load_packs(list(settings.packs), project_root=settings.project_root)
            results, warnings, interrupted = _run_loaded(packs, settings, listener, environ, keep)
    return packs, finish(results, packs, settings, warnings, started_at, t0, interrupted)


def _two_processes(settings: Settings, cases: int | None) -> bool:
    """Whether a recorded run uses a second core: as set, else by the project's size (*cases*
    when the packs are loaded already, else the number of files)."""
    if settings.provider != "recorded" or not parallel.fork_safe():
        return False
    if settings.processes is not None:
        return settings.processes >= 2
    if cases is None:
        return settings.case_ids is None and parallel.project_is_large(settings.packs)
    return cases >= parallel.SPLIT_MIN_CASES


def _loads_in_two(settings: Settings) -> bool:
    return settings.case_ids is None and _two_processes(settings, None)


def _run_loaded(packs: list[Pack], settings: Settings, listener: Listener | None,
                environ, keep: Keeper | None = None) -> tuple[list[CaseResult], list[str], bool]:
    """Run the selected cases of loaded *packs*: (results, warnings, interrupted)."""
    items = select(packs, settings)
    refuse_empty_selection(settings, items)
    problems: list[Problem] = []
    warnings = unmatched_allowlist(allowlist_misses(packs))
    if settings.provider == "recorded":
        stream = _recorded(items, settings, problems, warnings)
    else:
        from .live import run_live  # live runs only: the recorded path never loads the SDKs

        stream = run_live(items, settings, problems, warnings, environ=environ)
    if listener is not None and hasattr(listener, "start"):
        listener.start(len(items))
    today = datetime.date.today()
    warned: set = set()
    by_key = {(it.pack.pack_id, it.contract.id): (it.pack, it.contract) for it in items}
    results: list[CaseResult] = []
    interrupted = False
    try:
        for result in stream:
            pack, contract = by_key[(result.pack, result.contract)]
            result = apply_allowlist(result, pack, contract, today, warnings, warned)
            if keep is not None:
                result = keep(result)
            results.append(result)
            if listener is not None:
                listener(result)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        stream.close()
        if keep is not None:
            keep.flush()
    if problems:
        raise ConfigError(problems)
    return results, warnings, interrupted


def _recorded(items: list[Item], settings: Settings, problems: list[Problem],
              warnings: list[str]) -> Iterator[CaseResult]:
    """Cases from recordings and fixtures; many cases use a second core (the last 45% in a
    forked child that shares the loaded packs), in the order a sequential run gives."""
    if not _two_processes(settings, len(items)):
        yield from run_sequential(items, settings, problems, warnings)
        return
    half = len(items) * 11 // 20

    def share(part: list[Item]):
        return lambda: _sequential_share(part, settings)

    (mine, p1, w1), (theirs, p2, w2) = parallel.in_two(share(items[:half]), share(items[half:]))
    problems.extend(p1 + p2)
    warnings.extend(w1 + w2)
    yield from mine
    yield from theirs


def _sequential_share(items: list[Item], settings: Settings):
    problems: list[Problem] = []
    warnings: list[str] = []
    return list(run_sequential(items, settings, problems, warnings)), problems, warnings


def _load_and_run_in_two(settings: Settings, listener: Listener | None, keep: Keeper | None):
    """A large recorded project: each process loads and runs its share of the contracts;
    the results, problems and warnings merge into what one process would have produced (the
    packs returned carry no contracts: each process loaded only its share)."""
    def child():
        kind, problems, warnings, results, _, misses = _load_share(settings, parallel.child_share, keep)
        return kind, problems, warnings, results, None, misses  # the parent has its own packs

    def parent():
        kind, problems, warnings, results, packs, misses = _load_share(settings, parallel.parent_share, keep)
        # The packs' contracts are done with: free them before the child's results arrive.
        return kind, problems, warnings, results, [dataclasses.replace(p, contracts=()) for p in packs], misses

    mine, theirs = parallel.in_two(parent, child)
    kind, problems, warnings, results, packs, misses = mine
    kind2, problems2, warnings2, results2, _, misses2 = theirs
    if kind == "config" or kind2 == "config" or problems or problems2:
        # a pack file's own problems are found by both processes: each is reported once
        raise ConfigError(list(dict.fromkeys([*problems, *problems2])))
    results = sorted(results + results2, key=lambda r: r.order)
    refuse_empty_selection(settings, results)
    if listener is not None:
        if hasattr(listener, "start"):
            listener.start(len(results))
        for r in results:
            listener(r)
    seen: set = set()
    warnings = unmatched_allowlist(misses, misses2) + warnings + warnings2
    return packs, results, [w for w in warnings if not (w in seen or seen.add(w))]


def _load_share(settings: Settings, part, keep: Keeper | None = None):
    """Load this process's share of the contracts and run their cases: (kind, problems, warnings,
    results, packs, the allowlist entries this share does not match)."""
    try:
        packs = load_packs(list(settings.packs), project_root=settings.project_root, part=part)
    except ConfigError as exc:
        return "config", exc.problems, [], [], [], {}
    items = select(packs, settings)
    problems: list[Problem] = []
    warnings: list[str] = []
    today = datetime.date.today()
    warned: set = set()
    results = []
    # one result per item, in order (a case that fails to load adds a problem instead)
    for it, r in zip(items, run_sequential(items, settings, problems, warnings), strict=False):
        r = apply_allowlist(r, it.pack, it.contract, today, warnings, warned)
        results.append(r if keep is None else keep(r))
    if keep is not None:
        keep.flush()
    if problems:  # the run is refused: results do not matter
        return "ok", problems, warnings, [], packs, {}
    return "ok", problems, warnings, results, packs, allowlist_misses(packs)


def summarize(results: list[CaseResult], packs: list[Pack], settings: Settings,
              other_gates: dict | None = None) -> dict:
    """The run's summary; gates per pack: .replayci.yml over pack.yaml over the defaults
    (*other_gates*: those of packs not loaded, by pack id)."""
    gates = {**(other_gates or {}), **{p.pack_id: {**p.gates, **settings.gates} for p in packs}}
    cases = [{"pack": r.pack, "status": r.status, "category": r.category, "draft": r.draft,
              "allowlisted": r.allowlisted, "cost_usd": r.cost_usd, "tokens": r.tokens,
              "latency_ms": r.latency_ms, "wilson": r.details.get("wilson")} for r in results]
    return summarize_cases(cases, gates)


def finish(results: list[CaseResult], packs: list[Pack], settings: Settings, warnings: list[str],
           started_at: datetime.datetime, t0: float, interrupted: bool = False) -> RunResult:
    """The run's record, summary and gates around its results; raises Interrupted after
    Ctrl-C, carrying them."""
    run_record = {
        "provider": settings.provider,
        "model": settings.model or (", ".join(sorted({p.default_model for p in packs if p.default_model}))
                                    or None),
        "packs": [p.pack_id for p in packs],
        "replay": settings.replay or ("strict" if settings.provider == "recorded" else "off"),
        "filters": list(settings.filters),
        "categories": list(settings.categories),
        "tags": list(settings.tags),
        "shard": f"{settings.shard[0]}/{settings.shard[1]}" if settings.shard else None,
        "replayci_version": __version__,
        "started_at": started_at.isoformat(timespec="seconds"),
        "duration_ms": round((time.perf_counter() - t0) * 1000, 3),
    }
    summary = summarize(results, packs, settings)
    if settings.unselected_packs:
        # A pack someone added must never be left out without a word.
        warnings = [f"not selected by {os.path.basename(settings.config_file or '.replayci.yml')}: "
                    f"{', '.join(settings.unselected_packs)} (add them to 'packs', or use 'packs: [packs/*]')",
                    *warnings]
    if settings.repeat > 1 and settings.provider != "recorded":
        summary["repeat"] = repeat_summary([{"draft": r.draft, **r.details} for r in results], settings.repeat)
    outcome = RunResult(cases=results, summary=summary, run=run_record, warnings=warnings)
    if interrupted:
        run_record["interrupted"] = True
        raise Interrupted(outcome)
    return outcome
