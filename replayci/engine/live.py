"""Live runs: keys, concurrency, retries and --repeat; what is played or recorded is the
cassette's (`cassette.py`), how the model is asked a transport under the call (one live call
each here, a batch's round in `batch.py`)."""
from __future__ import annotations

import functools
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace

from ..checks.failure import Status
from ..config import Settings
from ..core.errors import ConfigError, Problem
from ..core.provider_table import foreign_model
from ..pack.fixtures import Fixture, load_fixture
from ..providers import api_key_for, base_url_hint, close_quietly, create, missing_key_message
from ..providers.call import Answer, call_once
from ..providers.mcp import Sessions
from ..providers.retry import RetryPolicy
from . import agent
from .answers import Errored, NotReproducible, Response, Skip, Trajectory
from .cases import Item, check_arguments, pinned, skipped, source_details, tool_result_missing
from .cassette import Cassette, noted
from .events import Handler, Warned
from .judge import judge
from .judge_model import JudgeModel
from .metrics import measure, measure_steps, repeated_metrics
from .recorded import RecordedSource
from .results import CaseResult
from .sampling import Sampler
from .summary import STATUSES, repeat_statistics

INTERRUPTED_REASON = "not run: the run was interrupted"

# How a model is asked one request: the answer (its response None when the run stopped first).
Transport = Callable[[dict], Answer]


def policy_for(item: Item) -> RetryPolicy:
    r = item.contract.retry
    return RetryPolicy(max_attempts=r.max_attempts, retry_on=frozenset(r.retry_on), total_ms=r.total_ms,
                       respect_retry_after=r.respect_retry_after, max_sleep_seconds=r.max_sleep_seconds)


def sent_request(fixture: Fixture, model: str) -> dict:
    """The request as it is sent, in the pack's neutral (OpenAI) form: the run's model wins."""
    return {**fixture.request, "model": model}


class LiveRunner:
    """Runs one case against a live provider under the run's replay mode (thread-safe)."""

    def __init__(self, settings: Settings, events: Handler, stop: threading.Event, *,
                 key: str | None, environ=os.environ):
        self.settings = settings
        self.judge = JudgeModel(settings, environ, stop)
        self.recorded = RecordedSource(settings, events)
        self.cassette = Cassette(settings, self.recorded, key=key)
        self.events = events  # told the run's warnings (from the worker that finds them)
        self.stop = stop
        self.key = key
        self._provider = None
        self._lock = threading.Lock()
        self._warned_key = False
        self._warned_judge = False
        self.mcp = Sessions(settings.mcp_servers)  # scenario tools on MCP servers: started on first use

    # -- the provider, created on first need: a run that only replays never imports an SDK
    def provider(self):
        if self._provider is None:
            with self._lock:
                if self._provider is None:
                    self._provider = create(self.settings.provider, api_key=self.key or "",
                                            base_url=self.settings.base_url, stream=self.settings.stream)
        return self._provider

    def warm_up(self) -> None:
        """When every case calls: build the client (and import the SDK) before timing them."""
        if self.key and self.cassette.calls_every_case:
            try:
                self.provider()
            except Exception:  # noqa: BLE001 - reported per case by the first call that needs it
                pass

    def close(self) -> None:
        if self._provider is not None:
            close_quietly(self._provider)
        self.judge.close()
        self.mcp.close()

    def model_for(self, item: Item) -> str:
        return self.settings.model or item.pack.default_model or ""

    def transport(self, item: Item, model: str) -> Transport:
        """One live call per request, under the contract's retry policy."""
        policy = policy_for(item)
        return lambda request: call_once(self.provider(), request, model=model, policy=policy, key=self.key,
                                         stop_event=self.stop)

    def missing_key(self) -> NotReproducible:
        with self._lock:
            if not self._warned_key:
                self._warned_key = True
                self.warn(missing_key_message(self.settings.provider) + "; cases that need a "
                          "live call are non_reproducible: missing_prerequisites")
        # The variable is named once, in the run's warning, not on every case.
        return NotReproducible("missing_prerequisites", f"no API key for {self.settings.provider} (see the warning)")

    def run_once(self, item: Item, fixture: Fixture, started: float) -> CaseResult:
        model = self.model_for(item)
        request = sent_request(fixture, model)
        settled = self.settled(item, fixture, model, request)
        if settled is not None:
            return judge(item, settled, started)
        return self.called(item, fixture, model, request, started)

    def settled(self, item: Item, fixture: Fixture, model: str, request: dict) -> Answer | None:
        """The case's answer when it needs no live call (played back, pinned, no key, interrupted), else None."""
        played = self.cassette.play(item, fixture, request, model)
        if played is not None:
            return played
        if not self.key:
            return self.missing_key()
        if self.stop.is_set():
            return Skip(INTERRUPTED_REASON)
        return None

    def called(self, item: Item, fixture: Fixture, model: str, request: dict, started: float, *,
               transport: Transport | None = None, prices=None) -> CaseResult:
        """The case's result from the model, asked through *transport* (by default one live call
        a request), its answers measured at *prices* (by default the listed ones) and recorded
        under the replay mode."""
        ask = self.transport(item, model) if transport is None else transport
        prices = self.recorded.prices if prices is None else prices
        if item.contract.scenario:
            return self.run_scenario(item, fixture, model, request, started, ModelCalls(ask), prices)
        answer = ask(request)
        if answer.response is None:
            return judge(item, Skip(INTERRUPTED_REASON, answer.attempts), started)
        response = measure(answer.response, latency_ms=answer.latency_ms, model=model, prices=prices)
        self.warn_self_judging(model)
        judgements = self.judge.judgements()
        result = judge(item, Response(request, response, judgements=judgements, attempts=answer.attempts,
                                      details=source_details("live", self.settings.provider)), started)
        if answer.raw is not None and self.cassette.records([answer.response]):
            result = noted(result, self.cassette.record(item, fixture, model, answer.response, answer.raw,
                                                        answer.latency_ms, judgements=judgements.all()))
        return result

    def run_scenario(self, item: Item, fixture: Fixture, model: str, request: dict,
                     started: float, calls: ModelCalls, prices) -> CaseResult:
        """Drive a scenario's loop live, its tools under the tools' replay mode: answered from
        the fixture's and the recording's tool results, or by their commands. Results obtained
        are recorded, with the trajectory when the model's responses are recorded too."""
        rec = self.cassette.recording(item)
        table = agent.ToolTable.merged(fixture.raw.get("tool_results"),
                                       rec.raw.get("tool_results") if rec is not None else None,
                                       configs=item.contract.tool_configs)
        try:
            loop = agent.drive(item.contract.for_case(item.case), request, calls, table, cwd=item.pack.dir,
                               tool_mode=agent.tool_mode(self.settings.tool_replay_mode, item.contract),
                               call_server=functools.partial(self.mcp.run_command, pack=item.pack),
                               output_tools=agent.output_tools(rec.raw.get("trajectory") if rec is not None else None,
                                                               fixture.raw.get("trajectory")))
        except Cancelled:
            return judge(item, Skip(INTERRUPTED_REASON, calls.attempts), started)
        details = source_details("live", self.settings.provider)
        judgements = self.judge.judgements()
        if loop.missing is None:  # judged before it is recorded: the recording keeps the judgements
            self.warn_self_judging(model)
            judged = replace(loop, steps=measure_steps(loop.steps, latencies=calls.latencies, model=model,
                                                       prices=prices))
            result = judge(item, Trajectory(request, judged, judgements=judgements, details=details,
                                            attempts=calls.attempts), started)
        note = None
        if loop.missing is None and not loop.diverged and self.cassette.records([s["response"] for s in loop.steps]):
            note = self.cassette.record_scenario(item, fixture, model, loop.steps, table, calls, judgements.all())
        elif table.new:
            note = self.cassette.record_tool_results(item, fixture, model, table, rec, calls)
        if loop.missing is not None:
            missing = tool_result_missing(loop.missing)
            details["trajectory"] = agent.trajectory_summary(loop.steps)
            result = judge(item, replace(missing, details=details, attempts=calls.attempts), started)
        return noted(result, note)

    def warn_self_judging(self, model: str) -> None:
        """Once per run: a judge that is the model under test grades its own answers."""
        with self._lock:
            if self.judge.model and self.judge.model == model and not self._warned_judge:
                self._warned_judge = True
                self.warn(f"the judge model {model} is the model under test: it grades its own "
                          "answers; prefer another model in judge: of .replayci.yml")

    def warn(self, text: str) -> None:
        """Tell the run a warning."""
        self.events.handle(Warned(text))


class Cancelled(Exception):
    """Ctrl-C stopped a scenario's model call: the case is not run, never an error."""


class ModelCalls:
    """``call_model`` for scenario.drive: each request asked through a transport; a failed call is
    that step's unexpected_error document."""

    def __init__(self, transport: Transport):
        self.transport = transport
        self.attempts = 0
        self.latency_ms: int | None = 0  # the sum over the model calls (what a recording's meta holds)
        self.latencies: list[int | None] = []  # each call's (None: not timed, a batch's answer)
        self.raw: list[dict] = []

    def __call__(self, request: dict) -> dict:
        answer = self.transport(request)
        self.attempts += answer.attempts
        if answer.response is None:
            raise Cancelled
        self.latencies.append(answer.latency_ms)
        self.latency_ms = None if self.latency_ms is None or answer.latency_ms is None \
            else self.latency_ms + answer.latency_ms
        if answer.raw is not None:
            self.raw.append(answer.raw)
        return answer.response


def pinned_skip(item: Item, fixture: Fixture | None, provider: str) -> Skip | None:
    """A pinned negative case is skipped live unless its provider_modes names the provider
    (then it runs against its fixture's response, never a live call)."""
    if fixture is None or not pinned(item, fixture) or provider in (item.case.provider_modes or ()):
        return None
    return Skip(f"negative case pinned to {fixture.display}'s response; "
                f"add {provider} to its provider_modes to judge that response in {provider} runs",
                details={"pinned_negative": True})


def combine_repeats(item: Item, runs: list[CaseResult], started: float, stability: str | None = None) -> CaseResult:
    """pass^N: the case passes only when every run passed; differing fingerprints are
    model nondeterminism (under --repeat auto, *stability* is its label: a stable_pass case
    passes, a flaky one is flaky and nothing else)."""
    passes = sum(1 for r in runs if r.status == Status.PASS)
    fingerprints = [r.fingerprint for r in runs]
    run_counts = {status: 0 for status in STATUSES}
    for r in runs:
        run_counts[r.status] += 1
    counted = passes + run_counts["fail"] + run_counts["error"]
    details = {"repeat": len(runs), "passes": passes, "run_counts": run_counts,
               "case_pass_rate": round(passes / counted, 4) if counted else None,
               **repeat_statistics(passes, counted), "fingerprints": fingerprints}
    if stability is not None:
        details.update(stability=stability, labels=["flaky"] if stability == "flaky" else [])
    first = runs[0]
    extra = {"duration_ms": (time.perf_counter() - started) * 1000, "attempts": sum(r.attempts for r in runs),
             **repeated_metrics(runs)}
    if stability == "stable_pass":
        passed = next(r for r in runs if r.status == "pass")
        return replace(passed, details={**passed.details, **details}, **extra)
    if len(set(fingerprints)) > 1:
        nr = judge(item, NotReproducible("model_nondeterminism",
                                         f"{len(set(fingerprints))} different outcomes in {len(runs)} runs "
                                         f"({passes}/{len(runs)} passed): {', '.join(fingerprints)}"), started)
        return replace(nr, details={**nr.details, **details}, response=first.response, **extra)
    worst = next((r for r in runs if r.status != Status.PASS), first)
    return replace(worst, details={**worst.details, **details}, **extra)


def load_fixtures(items: list[Item], settings: Settings) -> list[Fixture | None]:
    """Each item's fixture, its arguments checked; ConfigError listing every problem."""
    fixtures: list[Fixture | None] = []
    problems: list[Problem] = []
    for item in items:
        try:
            fixture = load_fixture(item.case.fixture_path, item.case.fixture_display,
                                   max_bytes=settings.max_fixture_bytes)
            check_arguments(item, fixture)
            fixtures.append(fixture)
        except ConfigError as exc:
            problems.extend(exc.problems)
            fixtures.append(None)
    if problems:
        raise ConfigError(problems)
    return fixtures


def require_models(items: list[Item], settings: Settings) -> None:
    """ConfigError when a pack has no model for the live provider, or one only another vendor serves."""
    for item in items:
        model = settings.model or item.pack.default_model
        where = item.pack.source.rsplit(":", 1)[0]
        if not model:
            raise ConfigError(Problem(where, None, None, f"no model for provider {settings.provider}: pass "
                                      "--model or set default_model in pack.yaml"))
        vendor = foreign_model(settings.provider, model, base_url=settings.base_url)
        if vendor is not None:
            origin = "--model" if settings.model else "the pack's default_model"
            raise ConfigError(Problem(where, None, None, f"no model for provider {settings.provider}: {model} "
                                      f"({origin}) is a model of {vendor}; pass --model with a "
                                      f"model {settings.provider} serves"))


class _Schedule:
    """The units of a live run (each case, times --repeat) handed to worker threads, and
    their results put back in the stable order of the items."""

    def __init__(self, items: list[Item], fixtures: list[Fixture | None], runner: LiveRunner, repeat: int,
                 sampler: Sampler | None = None):
        self.items, self.fixtures, self.runner, self.repeat = items, fixtures, runner, repeat
        self.sampler = sampler  # --repeat auto: each case's runs come in rounds until it is decided
        self.wanted: dict[int, int] = {}  # runs asked of each case so far
        self.drained = False
        self.stop = runner.stop
        self.done: dict[int, CaseResult] = {}  # finished, not yet yielded
        self.units: queue.SimpleQueue = queue.SimpleQueue()
        self.finished: queue.SimpleQueue = queue.SimpleQueue()
        self.started: dict[int, float] = {}
        self.runs: dict[int, list[tuple[int, CaseResult]]] = {}  # repeats received so far
        self.n_units = self.received = self.next_out = 0
        for i, item in enumerate(items):
            skip = skipped(item, runner.settings.provider) or pinned_skip(item, fixtures[i], runner.settings.provider)
            if skip is not None:
                self.done[i] = judge(item, skip)
                continue
            self.ask(i, repeat if sampler is None else sampler.first())

    def ask(self, i: int, k: int) -> None:
        """*k* more runs of case *i*."""
        start = self.wanted.get(i, 0)
        self.wanted[i] = start + k
        for r in range(start, start + k):
            self.units.put((i, r))
            self.n_units += 1

    def run_unit(self, i: int) -> CaseResult:
        """One run of case *i*; a bug or an environment problem is its `error`, the run goes on."""
        t0 = self.started.setdefault(i, time.perf_counter())
        item = self.items[i]
        try:
            return self.runner.run_once(item, self.fixtures[i], time.perf_counter() if self.repeat > 1 else t0)
        except Exception as exc:  # noqa: BLE001 - see the docstring
            return judge(item, Errored(exc))

    def work(self) -> None:
        """A worker: take units until none is left or the run stops."""
        while not self.stop.is_set():
            try:
                i, r = self.units.get(timeout=0.05) if self.sampler is not None else self.units.get_nowait()
            except queue.Empty:
                if self.sampler is not None and not self.drained:
                    continue  # a case's next round may come
                return
            self.finished.put((i, r, self.run_unit(i)))

    def start_workers(self, jobs: int) -> None:
        # Daemon threads, not a ThreadPoolExecutor: after Ctrl-C the interpreter must not wait
        # (joining executor threads at exit) for calls still in flight.
        for k in range(min(max(jobs, 1), self.n_units)):
            threading.Thread(target=self.work, daemon=True, name=f"replayci-live-{k}").start()

    def receive(self, i: int, r: int, res: CaseResult) -> None:
        """Keep run *r* of case *i*; the case is done when all its repeats are."""
        self.received += 1
        got = self.runs.setdefault(i, [])
        got.append((r, res))
        if len(got) < self.wanted[i]:
            return
        # Repeats may finish out of order; combine them in run order.
        ordered = [x for _, x in sorted(got, key=lambda pair: pair[0])]
        label = None
        if self.sampler is not None:
            item = self.items[i]
            more, label = self.sampler.more((item.pack.pack_id, item.contract.id, item.case.id), ordered)
            if more and not self.stop.is_set():
                self.ask(i, more)
                return
        del self.runs[i]
        if self.repeat == 1:
            self.done[i] = res
        else:
            self.done[i] = combine_repeats(self.items[i], ordered, self.started.get(i, time.perf_counter()), label)

    def ready(self) -> Iterator[CaseResult]:
        """The finished results that are next in order."""
        while self.next_out in self.done:
            yield self.done.pop(self.next_out)
            self.next_out += 1

    def in_order(self) -> Iterator[CaseResult]:
        """Every result, in the order of the items, as the workers finish them."""
        while True:
            yield from self.ready()
            if self.next_out >= len(self.items) or self.received >= self.n_units:
                break
            try:
                i, r, res = self.finished.get(timeout=0.25)
            except queue.Empty:
                continue
            self.receive(i, r, res)
        self.drained = True
        yield from self.ready()


def run_live(items: list[Item], settings: Settings, events: Handler, *,
             environ=None) -> Iterator[CaseResult]:
    """Run cases against a live provider, up to settings.jobs calls at once, yielding in the
    stable order of *items* whatever order the calls finish in (*events*: told the warnings)."""
    yield from start_live(items, settings, events, environ=environ).results()


class LiveRun:
    """A live run whose workers are calling: its results in order, or its cancellation (a
    comparison starts every target's run before it reads the first one's results)."""

    def __init__(self, runner: LiveRunner, schedule: _Schedule):
        self.runner, self.schedule = runner, schedule

    def cancel(self) -> None:
        """No new call (what is in flight finishes); for a run whose results are not read."""
        self.runner.stop.set()

    def results(self) -> Iterator[CaseResult]:
        runner, schedule = self.runner, self.schedule
        try:
            yield from schedule.in_order()
        except KeyboardInterrupt:
            runner.stop.set()
            # What finished is kept (in stable order); the caller reports it and exits 130.
            for i in sorted(schedule.done):
                if i >= schedule.next_out:
                    yield schedule.done[i]
            raise
        finally:
            runner.stop.set()
            if schedule.received >= schedule.n_units:
                runner.close()


def start_live(items: list[Item], settings: Settings, events: Handler, *,
               environ=None) -> LiveRun:
    """Load the fixtures, check the models and start the workers of a live run; a ConfigError
    listing every problem, and nothing called, when a pack is broken."""
    environ = os.environ if environ is None else environ
    fixtures = load_fixtures(items, settings)
    require_models(items, settings)
    hint = base_url_hint(settings.provider, settings.base_url)
    if hint is not None:
        events.handle(Warned(hint))
    runner = LiveRunner(settings, events, threading.Event(), key=api_key_for(settings.provider, environ),
                        environ=environ)
    schedule = _Schedule(items, fixtures, runner, max(settings.repeat, 1),
                         Sampler(settings) if settings.repeat_auto else None)
    if schedule.n_units:
        runner.warm_up()
    schedule.start_workers(settings.jobs)
    return LiveRun(runner, schedule)
