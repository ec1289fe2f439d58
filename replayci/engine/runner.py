"""Runs cases: selection, response sources, boundary checks, evaluation, gates (SPEC 6-9, 11)."""
from __future__ import annotations

import datetime
import fnmatch
import gc
import os
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable, Iterator

from .. import __version__
from ..config import Settings
from ..core.errors import CaseError, ConfigError, Problem
from ..checks.response import check, fingerprint, verdict
from ..pack.fixtures import Fixture, Recording, load_fixture, load_recording, recording_path
from ..core.hashing import boundary_hashes, is_pinned, short_hash
from ..pack.model import Case, Contract, Pack
from .results import CaseResult, RunResult, output_summary
from ..checks.schemas import tool_table
from ..checks import trajectory as scenario_mod

HASH_NAMES = ("tool_schema_hash", "message_hash", "system_hash")
HASH_WHAT = {"tool_schema_hash": "tools", "message_hash": "messages", "system_hash": "system prompt"}

Listener = Callable[[CaseResult], None]


@dataclass(frozen=True)
class Item:
    """One case to run, with what it belongs to."""

    pack: Pack
    contract: Contract
    case: Case
    order: tuple = ()

    @property
    def key(self) -> str:
        return f"{self.contract.id}/{self.case.id}"


def select(packs: list[Pack], settings: Settings) -> list[Item]:
    """The cases to run, in stable order, after --filter and --category."""
    items = []
    for pi, pack in enumerate(packs):
        for contract in pack.contracts:
            for ci, case in enumerate(contract.cases):
                item = Item(pack, contract, case, (pi, contract.order, ci))
                if settings.case_ids is not None and (pack.pack_id, contract.id, case.id) not in settings.case_ids:
                    continue
                if settings.filters and not any(
                    fnmatch.fnmatchcase(item.key, pat) or fnmatch.fnmatchcase(f"{pack.pack_id}/{item.key}", pat)
                    for pat in settings.filters
                ):
                    continue
                if settings.categories and case.category not in settings.categories:
                    continue
                items.append(item)
    if settings.shard:
        from ..core.hashing import h

        k, n = settings.shard
        items = [it for it in items if int(h(f"{it.pack.pack_id}/{it.key}"), 16) % n == k - 1]
    return items


def _refuse_empty_selection(settings: Settings, selected: list) -> None:
    """--filter or --category that matches no case is a usage error, not an empty pass."""
    if (settings.filters or settings.categories) and not selected:
        what = " ".join([f"--filter {f}" for f in settings.filters]
                        + [f"--category {c}" for c in settings.categories])
        raise ConfigError(f"no case matches {what}")


def case_result(item: Item, status: str, *, classification=None, reason=None, fp=None, failures=(),
            started: float, response=None, **extra) -> CaseResult:
    return CaseResult(
        pack=item.pack.pack_id,
        contract=item.contract.id,
        case=item.case.id,
        status=status,
        classification=classification,
        reason=reason,
        fingerprint=fp,
        failures=tuple(failures),
        duration_ms=(time.perf_counter() - started) * 1000,
        source=item.case.source,
        category=item.case.category,
        expect_ok=item.case.expect_ok,
        expected_error=item.case.expected_error,
        draft=item.contract.draft,
        response=response,
        order=item.order,
        **extra,
    )


def non_reproducible(item: Item, reason: str, message: str, started: float, detail: str = "") -> CaseResult:
    fp = short_hash({"contract": item.contract.id, "non_reproducible": reason, "detail": detail})
    return case_result(item, "non_reproducible", reason=reason, fp=fp, started=started,
                   details={"message": message})


def boundary_change(boundary: dict | None, request: dict,
                    tools_key: str | None = None) -> list[tuple[str, str, str]]:
    """The pinned boundary hashes that no longer match the request: (name, pinned, now)."""
    if not boundary:
        return []
    current = None
    changed = []
    for name in HASH_NAMES:
        pinned = boundary.get(name)
        if not is_pinned(pinned):
            continue
        if current is None:
            current = boundary_hashes(request, tools_key)
        if current[name] != pinned:
            changed.append((name, pinned, current[name]))
    return changed


def variance_message(changed: list[tuple[str, str, str]], origin: str) -> str:
    parts = [f"{name} changed ({HASH_WHAT[name]}): recorded {old}, request now {new}"
             for name, old, new in changed]
    return "; ".join(parts) + f" — {origin} no longer matches its request; re-record it"


def evaluate_response(item: Item, request: dict, response: dict, started: float, *,
                      tools=None, **extra) -> CaseResult:
    """Checks, verdict and fingerprint for one response."""
    contract, case = item.contract, item.case
    try:
        failures = check(contract, request, response, tools)
    except CaseError as exc:
        return case_result(item, "error", reason=str(exc), started=started,
                       fp=short_hash({"contract": contract.id, "error": "case_error"}), **extra)
    status, classification, reason = verdict(case.expect_ok, case.expected_error, failures)
    fp = fingerprint(contract.id, case.id, failures, response)
    return case_result(item, status, classification=classification, reason=reason, fp=fp,
                   failures=failures, started=started, response=response, **extra)


class Interrupted(Exception):
    """Ctrl-C during a run: carries the result of the cases that finished."""

    def __init__(self, result: RunResult):
        super().__init__("interrupted")
        self.result = result


class RecordedSource:
    """Responses from recordings/<contract>/<case>.json, else the fixture's own response."""

    def __init__(self, settings: Settings, warnings: list[str]):
        self.settings = settings
        self.warnings = warnings
        self._listing: dict[str, frozenset] = {}
        self.now = datetime.datetime.now(datetime.timezone.utc)

    def recording_for(self, pack: Pack, contract: str, case: str) -> str | None:
        folder = os.path.join(pack.recordings_dir, contract)
        names = self._listing.get(folder)
        if names is None:
            try:
                names = frozenset(os.listdir(folder))
            except OSError:
                names = frozenset()
            self._listing[folder] = names
        name = f"{case}.json"
        return os.path.join(folder, name) if name in names else None

    def run(self, item: Item, fixture: Fixture, started: float, *,
            recording: Recording | None = None) -> CaseResult:
        """The case from its recording (*recording* when the caller has read it already),
        else from the fixture's own response."""
        from ..pack.loader import display_path

        path = self.recording_for(item.pack, item.contract.id, item.case.id) if recording is None \
            else recording.path
        response, boundary, origin = fixture.response, fixture.boundary, fixture.display
        latency = None  # the recorded call's, for `replayci diff`
        if path is not None:
            rec = recording if recording is not None else \
                load_recording(path, display_path(path), max_bytes=self.settings.max_fixture_bytes)
            age = _age_days(rec.meta.get("recorded_at"), self.now)
            if age is not None and age > self.settings.ttl_days:
                if self.settings.strict_fixtures:
                    return non_reproducible(
                        item, "stale_recording",
                        f"{rec.display} is {age:.0f} days old, over fixtures.ttl_days "
                        f"({self.settings.ttl_days:g}) under --strict-fixtures; re-record it",
                        started)
                self.warnings.append(f"{rec.display} is {age:.0f} days old "
                                     f"(fixtures.ttl_days: {self.settings.ttl_days:g}); re-record it")
            response, boundary, origin = rec.response, rec.boundary, rec.display
            latency = rec.meta.get("latency_ms")
            if item.contract.scenario:
                return self.scenario(item, fixture, rec.raw.get("trajectory"), boundary, origin, started)
        elif item.contract.scenario:
            return self.scenario(item, fixture, fixture.raw.get("trajectory"), boundary, origin, started)
        if response is None:
            where = recording_path(item.pack.recordings_dir, item.contract.id, item.case.id)
            return non_reproducible(
                item, "recording_not_found",
                f"no recording at {display_path(where)} and {fixture.display} has no response "
                f"(replay mode strict); record one with --provider openai|anthropic --record",
                started)
        tools_key = fixture.tools_key
        changed = boundary_change(boundary, fixture.request, tools_key)
        if changed:
            return non_reproducible(item, "context_variance", variance_message(changed, origin), started,
                                    detail=",".join(c[0] for c in changed))
        tools = tool_table(tools_key, fixture.request.get("tools"))
        details = {"response_source": origin}
        if latency is not None:
            details["latency_ms"] = latency
        return evaluate_response(item, fixture.request, response, started, tools=tools,
                                 details=details)


    def scenario(self, item: Item, fixture: Fixture, trajectory, boundary, origin: str,
                 started: float) -> CaseResult:
        """Replay a recorded trajectory step by step (SPEC 14)."""
        from ..pack.loader import display_path

        if not trajectory:
            where = recording_path(item.pack.recordings_dir, item.contract.id, item.case.id)
            return non_reproducible(
                item, "recording_not_found",
                f"no recorded trajectory at {display_path(where)} or in {fixture.display} "
                "(replay mode strict); record one with --provider openai|anthropic --record", started)
        changed = boundary_change(boundary, fixture.request)
        if changed:
            return non_reproducible(item, "context_variance", variance_message(changed, origin), started,
                                    detail=",".join(c[0] for c in changed))
        steps = load_trajectory(trajectory, origin)
        return evaluate_trajectory(item, fixture.request, scenario_mod.replay_recorded(steps, item.contract),
                                   started, details={"response_source": origin})


def load_trajectory(trajectory, origin: str) -> list[dict]:
    """Recorded steps with each response normalized; a malformed one is a pack error."""
    from ..formats import NormalizeError, normalize

    if not isinstance(trajectory, list):
        raise ConfigError(Problem(origin, None, None, "'trajectory' must be a list of steps"))
    steps = []
    for n, step in enumerate(trajectory, 1):
        if not isinstance(step, dict) or not isinstance(step.get("response"), dict):
            raise ConfigError(Problem(origin, None, None,
                                      f"trajectory step {n} must be an object with a 'response'"))
        try:
            response = normalize(step["response"])
        except NormalizeError as exc:
            raise ConfigError(Problem(origin, None, None, f"trajectory step {n}: {exc}")) from None
        steps.append({"response": response, "tool_results": step.get("tool_results") or []})
    return steps


def evaluate_trajectory(item: Item, request: dict, loop, started: float, **extra) -> CaseResult:
    """Checks, verdict and fingerprint for a scenario run."""
    contract, case = item.contract, item.case
    try:
        failures = scenario_mod.check_trajectory(contract, request, loop)
    except CaseError as exc:
        return case_result(item, "error", reason=str(exc), started=started,
                           fp=short_hash({"contract": contract.id, "error": "case_error"}), **extra)
    status, classification, reason = verdict(case.expect_ok, case.expected_error, failures)
    fp = scenario_mod.trajectory_fingerprint(contract.id, case.id, failures, loop.steps)
    details = {**extra.pop("details", {}), "trajectory": scenario_mod.trajectory_summary(loop.steps)}
    final = loop.steps[-1]["response"] if loop.steps else None
    return case_result(item, status, classification=classification, reason=reason, fp=fp,
                       failures=failures, started=started, response=final, details=details, **extra)


def _age_days(recorded_at, now: datetime.datetime) -> float | None:
    if not isinstance(recorded_at, str):
        return None
    try:
        when = datetime.datetime.fromisoformat(recorded_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return (now - when).total_seconds() / 86400


def skipped(item: Item, provider: str, started: float) -> CaseResult | None:
    modes = item.case.provider_modes
    if modes is not None and provider not in modes:
        return case_result(item, "skipped", reason=f"provider_modes {list(modes)} excludes {provider}",
                       started=started)
    return None


PARALLEL_MIN_CASES = 2000


def run_recorded(items: list[Item], settings: Settings, problems: list[Problem],
                 warnings: list[str]) -> Iterator[CaseResult]:
    """Evaluate cases from recordings and fixtures; large runs use a second core."""
    if len(items) >= PARALLEL_MIN_CASES and _fork_safe():
        yield from _run_forked(items, settings, problems, warnings)
    else:
        yield from _run_sequential(items, settings, problems, warnings)


class _Forked:
    """work() run in a forked process (sharing everything loaded so far); result() is what
    it returned, sent back pickled. The child leaves without any cleanup of its own."""

    def __init__(self, work: Callable[[], object]):
        import pickle

        self._read, write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            code = 0
            try:
                os.close(self._read)
                data = pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(write, "wb") as out:
                    out.write(data)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(write)

    def result(self):
        """What work() returned; None when the child failed (killed, out of memory, a bug)."""
        import pickle

        with os.fdopen(self._read, "rb") as inp:
            data = inp.read()
        _, status = os.waitpid(self.pid, 0)
        self.pid = 0
        return pickle.loads(data) if status == 0 and data else None

    def kill(self) -> None:
        if self.pid:
            try:
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            self.pid = 0


def _run_forked(items: list[Item], settings: Settings, problems: list[Problem],
                warnings: list[str]) -> Iterator[CaseResult]:
    """The last 45% of the cases in a forked child, the rest here, in parallel.

    The child shares the loaded packs (fork, no re-parsing) and sends back its results,
    problems and warnings; the order of results is the same as a sequential run's.
    """
    # The child starts later and pays for copy-on-write pages: it takes the smaller share.
    half = len(items) * 11 // 20

    def work():
        child_problems: list[Problem] = []
        child_warnings: list[str] = []
        results = list(_run_sequential(items[half:], settings, child_problems, child_warnings))
        return results, child_problems, child_warnings

    child = _Forked(work)
    try:
        yield from _run_sequential(items[:half], settings, problems, warnings)
        sent = child.result()
        if sent is None:  # the child failed: do its share here instead
            yield from _run_sequential(items[half:], settings, problems, warnings)
            return
        results, child_problems, child_warnings = sent
        problems.extend(child_problems)
        warnings.extend(child_warnings)
        yield from results
    finally:
        child.kill()


def _run_sequential(items: list[Item], settings: Settings, problems: list[Problem],
                    warnings: list[str]) -> Iterator[CaseResult]:
    source = RecordedSource(settings, warnings)
    for item in items:
        started = time.perf_counter()
        skip = skipped(item, "recorded", started)
        if skip is not None:
            yield skip
            continue
        try:
            fixture = load_fixture(item.case.fixture_path, item.case.fixture_display,
                                   max_bytes=settings.max_fixture_bytes)
            yield source.run(item, fixture, started)
        except ConfigError as exc:
            problems.extend(exc.problems)
        except Exception as exc:  # an environment problem or a bug: the case is `error`
            yield case_result(item, "error", reason=f"could not evaluate: {type(exc).__name__}: {exc}",
                          started=started)


def apply_allowlist(result: CaseResult, pack: Pack, contract: Contract, today: datetime.date,
                    warnings: list[str], warned: set) -> CaseResult:
    if result.status != "non_reproducible":
        return result
    for entry in pack.allowlist:
        if entry.contract_path != contract.rel_path:
            continue
        if entry.case_id not in (None, result.case) or entry.reason_code != result.reason:
            continue
        if entry.expiry_date < today:
            if entry.source not in warned:
                warned.add(entry.source)
                warnings.append(f"{entry.source}: allowlist entry for {entry.contract_path}"
                                f"{' ' + entry.case_id if entry.case_id else ''} expired on "
                                f"{entry.expiry_date.isoformat()}; it is ignored")
            continue
        from dataclasses import replace

        return replace(result, allowlisted=True)
    return result


def summarize(results: list[CaseResult], packs: list[Pack], settings: Settings) -> dict:
    """The run's summary; gates per pack: .replayci.yml over pack.yaml over the defaults."""
    from .summary import summarize as from_cases

    gates = {p.pack_id: {**p.gates, **settings.gates} for p in packs}
    cases = [{"pack": r.pack, "status": r.status, "category": r.category, "draft": r.draft,
              "allowlisted": r.allowlisted} for r in results]
    return from_cases(cases, gates)


def run_items(packs: list[Pack], settings: Settings, *, listener: Listener | None = None,
              environ=None) -> RunResult:
    """Run the selected cases of *packs* and return every result with the summary."""
    items = select(packs, settings)
    _refuse_empty_selection(settings, items)
    problems: list[Problem] = []
    warnings: list[str] = []
    started_at = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.perf_counter()
    if settings.provider == "recorded":
        stream = run_recorded(items, settings, problems, warnings)
    else:
        from .live import run_live

        stream = run_live(items, settings, problems, warnings, environ=environ)
    results: list[CaseResult] = []
    if listener is not None and hasattr(listener, "start"):
        listener.start(len(items))
    today = datetime.date.today()
    warned: set = set()
    by_key = {(it.pack.pack_id, it.contract.id): (it.pack, it.contract) for it in items}
    gc_was = gc.isenabled()
    gc.disable()  # the run allocates many small, short-lived containers and no cycles
    interrupted = False
    try:
        for result in stream:
            pack, contract = by_key[(result.pack, result.contract)]
            result = apply_allowlist(result, pack, contract, today, warnings, warned)
            results.append(result)
            if listener is not None:
                listener(result)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        stream.close()
        if gc_was:
            gc.enable()
    if problems:
        raise ConfigError(problems)
    return finish(results, packs, settings, warnings, started_at, t0, interrupted)


def finish(results: list[CaseResult], packs: list[Pack], settings: Settings, warnings: list[str],
           started_at: datetime.datetime, t0: float, interrupted: bool = False) -> RunResult:
    """The run's record, summary and gates around its results."""
    run = {
        "provider": settings.provider,
        "model": settings.model or (", ".join(sorted({p.default_model for p in packs if p.default_model}))
                                    or None),
        "packs": [p.pack_id for p in packs],
        "replay": settings.replay or ("strict" if settings.provider == "recorded" else "off"),
        "filters": list(settings.filters),
        "categories": list(settings.categories),
        "shard": f"{settings.shard[0]}/{settings.shard[1]}" if settings.shard else None,
        "replayci_version": __version__,
        "started_at": started_at.isoformat(timespec="seconds"),
        "duration_ms": round((time.perf_counter() - t0) * 1000, 3),
    }
    summary = summarize(results, packs, settings)
    if settings.repeat > 1 and settings.provider != "recorded":
        from .live import repeat_summary

        summary["repeat"] = repeat_summary(results, settings.repeat)
    outcome = RunResult(cases=results, summary=summary, run=run, warnings=warnings)
    if interrupted:
        run["interrupted"] = True
        raise Interrupted(outcome)
    return outcome


# ---------------------------------------------------------------- large recorded runs

SPLIT_MIN_FILES = 100


def _fork_safe() -> bool:
    """Two cores, fork, and no other thread (a forked child inherits locks held by threads
    that do not exist in it: a lock held at fork time would never be released there)."""
    return (os.cpu_count() or 1) >= 2 and hasattr(os, "fork") and threading.active_count() == 1


def split_worthwhile(settings: Settings) -> bool:
    """A recorded run of many contracts or cases: load and run in two processes (a cheap
    estimate: the JSON and YAML files in the packs; each contract costs as much to load as
    a few dozen cases)."""
    if settings.provider != "recorded" or settings.case_ids is not None or not _fork_safe():
        return False
    count = 0
    for pack in settings.packs:
        for _, _, files in os.walk(pack):
            count += sum(1 for f in files if f.endswith((".json", ".yaml", ".yml")))
            if count >= SPLIT_MIN_FILES:
                return True
    return False


def _parent_share(i: int) -> bool:
    # The child starts later and pays for copy-on-write pages: it takes 9 contracts in 20.
    return i % 20 < 11


def _child_share(i: int) -> bool:
    return not _parent_share(i)


def _share(settings: Settings, part):
    """Load this process's share of the contracts and run their cases."""
    from ..pack.loader import load_packs

    try:
        packs = load_packs(list(settings.packs), project_root=settings.project_root, part=part)
    except ConfigError as exc:
        return "config", exc.problems, [], [], []
    items = select(packs, settings)
    problems: list[Problem] = []
    warnings: list[str] = []
    today = datetime.date.today()
    warned: set = set()
    results = list(_run_sequential(items, settings, problems, warnings))
    if problems:  # the run is refused: results do not matter
        return "ok", problems, warnings, [], packs
    # one result per item, in order (a case that fails to load adds a problem instead)
    results = [apply_allowlist(r, it.pack, it.contract, today, warnings, warned)
               for it, r in zip(items, results)]
    return "ok", problems, warnings, results, packs


def run_split(settings: Settings, *, listener: Listener | None = None) -> tuple[list[Pack], RunResult]:
    """A large recorded run on two cores: each process loads and runs every other contract.

    The results, problems and warnings of both are merged into what one process would
    have produced, in the same order.
    """
    started_at = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.perf_counter()
    gc_was = gc.isenabled()
    gc.disable()

    def work():
        kind, problems, warnings, results, _ = _share(settings, _child_share)
        # The report needs only a summary of each response: send that, not the response.
        results = [replace(r, response=None, details={**r.details, "output": output_summary(r.response)})
                   if r.response is not None else r for r in results]
        return kind, problems, warnings, results

    child = _Forked(work)
    try:
        kind, problems, warnings, results, packs = _share(settings, _parent_share)
        sent = child.result()
        if sent is None:  # the child failed (killed, out of memory): do its share here
            sent = _share(settings, _child_share)[:4]
        kind2, problems2, warnings2, results2 = sent
    finally:
        child.kill()
        if gc_was:
            gc.enable()
    if kind == "config" or kind2 == "config" or problems or problems2:
        raise ConfigError(list(problems) + list(problems2))
    results = sorted(results + results2, key=lambda r: r.order)
    _refuse_empty_selection(settings, results)
    if listener is not None:
        if hasattr(listener, "start"):
            listener.start(len(results))
        for r in results:
            listener(r)
    seen: set = set()
    merged_warnings = [w for w in warnings + warnings2 if not (w in seen or seen.add(w))]
    return packs, finish(results, packs, settings, merged_warnings, started_at, t0)
