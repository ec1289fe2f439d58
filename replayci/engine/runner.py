"""The one runner, for the library, the CLI and the pytest plugin: settings (and packs, when
the caller loaded them) -> every selected case's result, the summary and the gates."""
from __future__ import annotations

import dataclasses
import datetime
import os
import time
from collections.abc import Iterable, Iterator

from ..config import Settings, Target
from ..core.errors import ConfigError, Problem
from ..core.memo import collector_paused
from ..core.version import __version__
from ..pack.loader import OpenPack, load_packs, open_packs
from ..pack.model import Pack
from . import parallel
from .cases import (
    Allowlist,
    Interrupted,
    Item,
    Listener,
    allowlist_misses,
    refuse_empty_selection,
    select,
    unmatched_allowlist,
)
from .compare import baseline_label, case_key
from .events import CaseJudged, Handler, Handlers, RunFinished, RunStarted, Warned, Warnings, handler_of
from .recorded import run_sequential
from .results import CaseResult, RunResult
from .tally import Tally
from .tally import repeat_records as repeat_records  # (check mode adds its records after the run)


def run(settings: Settings, *, packs: list[Pack] | None = None, listener: Handler | Listener | None = None,
        environ=None, handlers: Iterable[Handler] = ()) -> tuple[list[Pack], RunResult]:
    """Load the packs of *settings* (unless *packs* are given) and run their selected cases,
    telling *handlers*, then *listener* (a Handler, or a function of each result), the run's
    events; a per-process handler hears each case first (see `Handler.per_process`)."""
    started_at = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.perf_counter()
    handlers = (*handlers, handler_of(listener)) if listener is not None else tuple(handlers)
    keep = Handlers(h for h in handlers if h.per_process)
    tally = Tally()  # the summary, gates and comparisons: a handler, before the caller's
    told = Handlers((tally, *(h for h in handlers if not h.per_process)))  # after a case is kept
    events = Handlers((*keep.handlers, *told.handlers))
    with collector_paused(settings.provider == "recorded"):
        split = _load_and_run_in_two(settings, keep, told) if packs is None and _loads_in_two(settings) \
            else None
        if split is not None:
            packs = split
            interrupted = False
        else:
            if packs is None:
                packs = load_packs(list(settings.packs), project_root=settings.project_root)
            interrupted = _run_loaded(packs, settings, events, environ)
    try:
        outcome = finish_tally(tally, packs, settings, started_at, t0, interrupted)
    except Interrupted as stop:
        events.handle(RunFinished(stop.result, settings))
        raise
    events.handle(RunFinished(outcome, settings))
    return packs, outcome


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
    # (a comparison labels or tags each case as it finishes, in this process)
    return settings.case_ids is None and not settings.targets and settings.baseline is None \
        and _two_processes(settings, None)


def _run_loaded(packs: list[Pack], settings: Settings, events: Handler, environ) -> bool:
    """Run the selected cases of loaded *packs* (against each target, when the run compares
    targets), telling *events* each result and each warning: whether Ctrl-C cut it short."""
    items = select(packs, settings)
    refuse_empty_selection(settings, items)
    check_baseline(settings, packs)
    runs = [(target_settings(settings, t), t.label) for t in settings.targets] or [(settings, None)]
    events.handle(RunStarted(len(items) * len(runs)))
    for warning in unmatched_allowlist(allowlist_misses(packs)):
        events.handle(Warned(warning))
    label = baseline_labeller(settings)
    by_key = {(it.pack.pack_id, it.contract.id): (it.pack, it.contract) for it in items}
    allowlist = Allowlist(datetime.date.today())
    interrupted = False
    cancel = _nothing
    try:  # a broken pack is a ConfigError from its stream, listing every problem (exit 2)
        streams, cancel = _streams(items, runs, settings, environ, events)
        for (_, target), stream in zip(runs, streams, strict=False):
            try:
                for result in stream:
                    if target is not None:
                        result = dataclasses.replace(result, target=target)
                    pack, contract = by_key[(result.pack, result.contract)]
                    result, warned = allowlist.apply(result, pack, contract)
                    for warning in warned:
                        events.handle(Warned(warning))
                    if label is not None:
                        result = label(result)
                    events.handle(CaseJudged(result))
            except KeyboardInterrupt:
                interrupted = True
            finally:
                stream.close()
            if interrupted:
                break
    finally:
        cancel()
        events.flush()
    return interrupted


def _nothing() -> None:
    """Cancel nothing (the runs were read to their end, or none started)."""


def _streams(items: list[Item], runs: list, settings: Settings,
             environ, events: Handler) -> tuple[list[Iterator[CaseResult]], object]:
    """Each run's results (one run, or one per target), and a function that stops the runs not
    read to their end (*events*: told the warnings, and a batch run's wait). Live targets are
    all started at once, each with its own workers, so they call side by side while their
    results are read target by target."""
    if settings.batch:  # every target's batches submitted together, and waited for together
        from .batch import batch_streams  # batch runs only, as run_live (it refuses the recorded provider)

        return batch_streams(items, [own for own, _ in runs], environ=environ, events=events), _nothing
    if not settings.live_targets:
        return [_stream(items, own, events, environ) for own, _ in runs], _nothing
    from .live import require_models, start_live  # live runs only: the recorded path never loads the SDKs

    for own, _ in runs:  # every target's model is checked before any target calls
        require_models(items, own)
    started: list = []

    def cancel() -> None:
        for run in started:
            run.cancel()

    try:
        for own, _ in runs:
            # (a broken pack: the same for every target, and nothing is called)
            started.append(start_live(items, own, events, environ=environ))
    except BaseException:
        cancel()
        raise
    return [run.results() for run in started], cancel


def _stream(items: list[Item], settings: Settings, events: Handler, environ) -> Iterator[CaseResult]:
    if settings.provider == "recorded":
        return _recorded(items, settings, events)
    from .live import run_live  # live runs only: the recorded path never loads the SDKs

    return run_live(items, settings, events, environ=environ)


def target_settings(settings: Settings, target: Target) -> Settings:
    """The settings of one target's share of a comparison: its provider (or its recordings),
    its model and endpoint."""
    return settings.with_(provider=target.provider if settings.live_targets else "recorded", model=target.model,
                          base_url=target.base_url or settings.base_url, target=target, targets=())


def check_baseline(settings: Settings, packs: list[Pack]) -> None:
    """A baseline must be a report of some of these packs: ConfigError (exit 2) otherwise."""
    if settings.baseline is None:
        return
    report = settings.baseline
    theirs = {c.get("pack") for c in report.get("cases") or () if isinstance(c, dict)}
    theirs |= {p for p in (report.get("run") or {}).get("packs") or () if isinstance(p, str)}
    ours = {p.pack_id for p in packs}
    if not theirs & ours:
        where = settings.baseline_file or "the baseline"
        raise ConfigError(f"{where}: a report of other packs ({', '.join(sorted(map(str, theirs))) or 'none'}); "
                          f"this run's packs are {', '.join(sorted(ours))}: pass --baseline a report of "
                          "the same packs (e.g. main's report.json)")


def baseline_labeller(settings: Settings):
    """A function labelling each result against the baseline, or None without one."""
    if settings.baseline is None:
        return None
    then = {case_key(c): c for c in settings.baseline.get("cases") or () if isinstance(c, dict)}

    def label(r: CaseResult) -> CaseResult:
        entry = baseline_label(r, then.get((r.pack, r.contract, r.case, r.target)))
        return dataclasses.replace(r, details={**r.details, "baseline": entry.pop("label"), **entry})

    return label


def _recorded(items: list[Item], settings: Settings, events: Handler) -> Iterator[CaseResult]:
    """Cases from recordings and fixtures; many cases use a second core (a forked child that
    shares the loaded packs takes runs of cases in turn with this process), in the order a
    sequential run gives, *events* told the warnings; then a ConfigError listing the problems
    of broken fixtures."""
    if not _two_processes(settings, len(items)):
        yield from run_sequential(items, settings, events)
        return
    size = -(-len(items) // parallel.UNITS)
    runs = [items[i:i + size] for i in range(0, len(items), size)]
    done = parallel.by_units(len(runs), lambda taken: ((n, _sequential_share(runs[n], settings)) for n in taken))
    problems = [p for n in range(len(runs)) for p in done[n][1]]
    for n in range(len(runs)):
        for warning in done[n][2]:
            events.handle(Warned(warning))
    for n in range(len(runs)):
        yield from done[n][0]
    if problems:
        raise ConfigError(problems)


def _sequential_share(items: list[Item], settings: Settings) -> tuple[list[CaseResult], list[Problem], list[str]]:
    """One run of cases in whichever process takes it: (results, problems, warnings) as data."""
    heard = Warnings()
    results: list[CaseResult] = []
    try:
        for result in run_sequential(items, settings, heard):
            results.append(result)
    except ConfigError as exc:
        return results, exc.problems, heard.texts
    return results, [], heard.texts


def _load_and_run_in_two(settings: Settings, keep: Handler, events: Handler):
    """A large recorded project: both processes take a few contracts at a time (whichever asks
    first), load and run them, *keep* hearing each case where it is judged; the results,
    problems and warnings merge into what one process would have produced, told to *events*
    (the packs returned carry no contracts; each warning is told once). None when a pack
    itself has problems: loaded in one process, they are listed with those of its contracts."""
    try:
        opened = open_packs(list(settings.packs), project_root=settings.project_root)
    except ConfigError:
        return None
    units = parallel.plan_units([parallel.file_costs(o.files) for o in opened])
    if not units:
        return None
    bare = [o.pack for o in opened]

    def work(taken) -> Iterator[tuple[int, tuple]]:
        for n in taken:
            share = _run_unit(opened, bare, units[n], settings, keep)
            keep.flush()  # what it wrote for these cases is on disk before they are sent
            yield n, share

    done = parallel.by_units(len(units), work)
    shares = [done[n] for n in sorted(done, key=lambda n: (units[n][0][0], units[n][0][1].start))]
    problems = list(dict.fromkeys(p for share in shares for p in share[1]))
    if problems:  # a pack's contracts or fixtures: each problem once
        raise ConfigError(problems)
    results = sorted((r for share in shares for r in share[0]), key=lambda r: r.order)
    refuse_empty_selection(settings, results)
    events.handle(RunStarted(len(results)))
    for r in results:
        events.handle(CaseJudged(r))
    warnings = unmatched_allowlist(*(share[3] for share in shares)) + [w for share in shares for w in share[2]]
    for warning in dict.fromkeys(warnings):
        events.handle(Warned(warning))
    return bare


def _run_unit(opened: list[OpenPack], bare: list[Pack], unit: parallel.Unit, settings: Settings,
              keep: Handler):
    """One unit of a split run: the contracts at its positions of its packs, loaded and run:
    (results, problems, warnings, the allowlist entries they do not match)."""
    packs = list(bare)
    problems: list[Problem] = []
    for k, positions in unit:
        try:
            packs[k] = dataclasses.replace(bare[k], contracts=opened[k].contracts(positions))
        except ConfigError as exc:
            problems.extend(exc.problems)
    if problems:
        return [], problems, [], {}
    items = select(packs, settings)
    heard = Warnings()  # (this process's, or a child's: sent back as data)
    allowlist = Allowlist(datetime.date.today())
    results = []
    try:
        # one result per item, in order (a case that fails to load: the ConfigError at the end)
        for it, r in zip(items, run_sequential(items, settings, heard), strict=False):
            r, warned = allowlist.apply(r, it.pack, it.contract)
            heard.texts.extend(warned)
            keep.handle(CaseJudged(r))
            results.append(r)
    except ConfigError as exc:  # the run is refused: results do not matter
        return [], exc.problems, heard.texts, {}
    return results, problems, heard.texts, allowlist_misses(packs)


def finish(results: list[CaseResult], packs: list[Pack], settings: Settings, warnings: list[str],
           started_at: datetime.datetime, t0: float, interrupted: bool = False) -> RunResult:
    """The run's record, summary and gates around *results* and *warnings* (found elsewhere);
    raises Interrupted after Ctrl-C, carrying them."""
    return finish_tally(Tally(results, warnings), packs, settings, started_at, t0, interrupted)


def finish_tally(tally: Tally, packs: list[Pack], settings: Settings,
                 started_at: datetime.datetime, t0: float, interrupted: bool = False) -> RunResult:
    """The run's record around what *tally* heard: its results, warnings, summary, gates and
    comparisons; raises Interrupted after Ctrl-C, carrying them."""
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
    if settings.batch:
        run_record["batch"] = True
    results, summary, comparisons, gate_warnings = tally.outcome(packs, settings)
    warnings = [*tally.warnings, *gate_warnings]
    if settings.targets:
        run_record["provider"] = "live" if settings.live_targets else "recorded"
        run_record["model"] = None
        run_record["targets"] = [t.label for t in settings.targets]
    if settings.unselected_packs:
        # A pack someone added must never be left out without a word.
        warnings = [f"not selected by {os.path.basename(settings.config_file or '.replayci.yml')}: "
                    f"{', '.join(settings.unselected_packs)} (add them to 'packs', or use 'packs: [packs/*]')",
                    *warnings]
    outcome = RunResult(cases=results, summary=summary, run=run_record, warnings=warnings, comparisons=comparisons)
    if interrupted:
        run_record["interrupted"] = True
        raise Interrupted(outcome)
    return outcome
