"""Batch runs: a live run's calls sent through the provider's batch API (half the price,
answers within 24 hours). Every selected case x repeat x target is one request with a stable
custom id; each target's requests go to its own provider and endpoint, in batches of one target
and model, every target's batches waited for together; scenarios run a batch round per step,
all sessions' next calls in one round. The batches are noted (each with where it went) in
`.replayci/batches/` before the wait, so the same command resumes them."""
from __future__ import annotations

import datetime
import functools
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from ..config import Settings
from ..core.errors import ConfigError
from ..core.prices import batch_prices
from ..pack.fixtures import Fixture
from ..providers import api_key_for
from ..providers.batch import BatchClient, BatchRequest, BatchState, batch_client, refusal, supports_batch
from ..providers.call import Answer, answer_of, failed_answer
from .answers import Errored, NotReproducible
from .batch_sessions import BatchIncomplete, Rounds, Sessions
from .batchfile import RunFile, custom_id, run_id, target_label
from .cases import Item, skipped
from .events import BatchProgress, BatchWaiting, Handler, Warned
from .judge import judge
from .live import LiveRunner, combine_repeats, load_fixtures, pinned_skip, require_models, sent_request
from .results import CaseResult
from .sampling import Sampler

# The most requests one batch takes (OpenAI: 50,000 a file; Anthropic: 100,000).
MAX_BATCH_REQUESTS = 50_000
INCOMPLETE = "batch_incomplete"
_sleep = time.sleep  # the wait between polls
UNREACHABLE = "unreachable"  # a batch the provider would not show (its results are not asked for)
# Results kept for an ended batch whose answer is missing, by the batch's final status.
_NO_RESULT = "the batch {id} ended ({status}) without a result for this request"


@dataclass
class Unit:
    """One run of one case: case *i*, repeat *repeat*, of target *lane*, to *model*."""

    i: int
    repeat: int
    model: str
    request: dict
    started: float
    lane: int = 0


@dataclass
class Lane:
    """One target of a batch run: its settings, its runner (key, recordings) and batch prices."""

    settings: Settings
    runner: LiveRunner
    prices: object

    @property
    def endpoint(self) -> tuple[str, str | None]:
        """Where its batches go: (provider, base_url); one batch client each."""
        return self.settings.provider, self.settings.base_url

    def label(self, model: str) -> str:
        """The target as custom ids and the run file name it."""
        target = self.settings.target
        return target.label if target is not None else target_label(self.settings.provider, model)


def batch_streams(items: list[Item], runs: list[Settings], *, environ=None,
                  events: Handler | None = None) -> list[Iterator[CaseResult]]:
    """A batch run of one or more targets (*runs*: each target's settings): every target's
    batches are submitted, and waited for, together when the first stream is read; then each
    stream yields its target's results in the stable order of *items* (*events*: told the
    wait and the warnings)."""
    events = events or Handler()
    environ = os.environ if environ is None else environ
    jobs: list[BatchJob] = []

    def first() -> Iterator[CaseResult]:
        for own in runs:  # every target is checked before anything is submitted
            if not supports_batch(own.provider):
                why = refusal(own.provider)
                raise ConfigError(why if own.target is None else f"target {own.target.label}: {why}")
        fixtures = load_fixtures(items, runs[0])  # (a broken pack: its ConfigError, nothing submitted)
        for own in runs:
            require_models(items, own)
        stop = threading.Event()
        lanes = []
        for own in runs:
            runner = LiveRunner(own, events, stop, key=api_key_for(own.provider, environ), environ=environ)
            lanes.append(Lane(own, runner, batch_prices(runner.recorded.prices)))
        job = BatchJob(items, fixtures, lanes, events)
        try:
            job.run()
            jobs.append(job)
        finally:
            stop.set()
            job.close()
        yield from job.outputs(0)

    def later(lane: int) -> Iterator[CaseResult]:
        for job in jobs:
            yield from job.outputs(lane)

    return [first(), *(later(t) for t in range(1, len(runs)))]


class BatchJob:
    """A batch run's cases: the units settled without a call, the rounds of batches for the rest."""

    def __init__(self, items: list[Item], fixtures: list[Fixture | None], lanes: list[Lane],
                 events: Handler) -> None:
        self.items, self.fixtures, self.lanes = items, fixtures, lanes
        self.settings = lanes[0].settings  # the project, the wait's pace and limit: the same for every target
        self.events = events
        self.repeat = max(self.settings.repeat, 1)
        # --repeat auto: each case in rounds of batches until decided (a scenario's next sessions
        # start in the round after its last one ended)
        self.samplers = [Sampler(lane.settings) for lane in lanes] if self.settings.repeat_auto else None
        self.sessions_of: dict[tuple[int, int], list[Unit]] = {}  # each scenario's sessions so far
        self.labels: dict[tuple[int, int], str | None] = {}
        self.runs: dict[tuple[int, int], list[tuple[int, CaseResult]]] = {}
        self.done: dict[tuple[int, int], CaseResult] = {}
        self.units: list[Unit] = []
        self.lane_of: dict[str, int] = {}  # custom id -> its target
        self.lock = threading.Lock()
        self.clients: dict[tuple[str, str | None], BatchClient] = {}
        self.file: RunFile | None = None
        self.deadline = time.monotonic() + self.settings.batch_timeout_s  # set again when the first round starts
        self.t0 = time.monotonic()
        self.finished = True  # every batch ended: the run's file goes

    def cid(self, unit: Unit, step: int = 0) -> str:
        item = self.items[unit.i]
        out = custom_id(item.pack.pack_id, item.contract.id, item.case.id, repeat=unit.repeat,
                        target=self.lanes[unit.lane].label(unit.model), step=step)
        self.lane_of[out] = unit.lane
        return out

    def keep(self, unit: Unit, result: CaseResult) -> None:
        with self.lock:
            self.runs.setdefault((unit.lane, unit.i), []).append((unit.repeat, result))

    def plan(self) -> None:
        """The cases decided without a call (skipped, replayed, no key) and the units to batch."""
        for t, lane in enumerate(self.lanes):
            provider, runner = lane.settings.provider, lane.runner
            for i, item in enumerate(self.items):
                fixture = self.fixtures[i]
                skip = skipped(item, provider) or pinned_skip(item, fixture, provider)
                if skip is not None:
                    self.done[(t, i)] = judge(item, skip)
                    continue
                model = runner.model_for(item)
                request = sent_request(fixture, model)
                first = self.repeat if self.samplers is None else self.samplers[t].first()
                for r in range(first):
                    unit = Unit(i, r, model, request, time.perf_counter(), t)
                    settled = runner.settled(item, fixture, model, request)
                    if settled is not None:
                        self.keep(unit, judge(item, settled, unit.started))
                    else:
                        self.units.append(unit)

    def run(self) -> None:
        """Plan, then submit and wait for every target's batches (round by round)."""
        self.plan()
        units = self.units
        if not units:
            return
        self.open(units)
        try:
            self.rounds([u for u in units if not self.items[u.i].contract.scenario],
                        [u for u in units if self.items[u.i].contract.scenario])
        except KeyboardInterrupt:
            self.note_pending("the run was interrupted")
            raise
        if self.finished:
            self.file.remove()
        else:
            self.note_pending("--batch-timeout ended the wait")

    def outputs(self, t: int) -> Iterator[CaseResult]:
        """Target *t*'s results, in the order of the items (repeats combined)."""
        for i, item in enumerate(self.items):
            if (t, i) in self.done:
                yield self.done[(t, i)]
                continue
            got = [res for _, res in sorted(self.runs.get((t, i), []), key=lambda pair: pair[0])]
            started = min((u.started for u in self.units if (u.lane, u.i) == (t, i)), default=time.perf_counter())
            label = None
            if self.samplers is not None:  # the label its runs decided (a scenario's: at its first decision)
                label = self.labels.get((t, i)) or self.samplers[t].plan.decide(
                    [r.status == "pass" for r in got if r.status in ("pass", "fail", "error")]) or "undecided"
            yield got[0] if self.repeat == 1 else combine_repeats(item, got, started, label)

    def open(self, units: list[Unit]) -> None:
        """A batch client per endpoint (provider, base_url) that has requests to send, and the
        run's file (an earlier, interrupted run's when there is one)."""
        s = self.settings
        for lane in {u.lane: self.lanes[u.lane] for u in units}.values():
            if lane.endpoint not in self.clients:
                provider, base_url = lane.endpoint
                self.clients[lane.endpoint] = batch_client(provider, api_key=lane.runner.key or "",
                                                           base_url=base_url)
        first = [(self.cid(u), u.request) for u in units]
        ends = [{"provider": lane.settings.provider, "base_url": lane.settings.base_url,
                 "target": lane.settings.target.label if lane.settings.target else None} for lane in self.lanes]
        one = self.lanes[0].settings if len(self.lanes) == 1 else None
        self.file = RunFile(s.project_root, run_id(ends, first), provider=one.provider if one else None,
                            base_url=one.base_url if one else None,
                            targets=sorted({self.lanes[u.lane].label(u.model) for u in units}))
        self.file.check_endpoints(set(self.clients))
        self.deadline = time.monotonic() + s.batch_timeout_s  # the wait's limit: counted once the clients are ready
        started = self.file.started()
        if started is not None:  # resumed: the wait counts from the first submission
            age = (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds()
            self.t0 = time.monotonic() - max(age, 0.0)

    def endpoint_of(self, batch_id: str) -> tuple[str, str | None]:
        """The (provider, base_url) a batch of the run file went to."""
        assert self.file is not None
        doc = self.file.doc
        entry = next(b for b in doc["batches"] if b["id"] == batch_id)
        return entry.get("provider", doc.get("provider")), entry.get("base_url", doc.get("base_url"))

    def client_of(self, batch_id: str) -> BatchClient:
        return self.clients[self.endpoint_of(batch_id)]

    def key_of(self, batch_id: str) -> str | None:
        endpoint = self.endpoint_of(batch_id)
        return next(lane.runner.key for lane in self.lanes if lane.endpoint == endpoint)

    def note_pending(self, why: str) -> None:
        """A warning naming the batches left running at the provider, and how to go on."""
        if self.file is None or not self.file.doc["batches"]:
            return
        ids = ", ".join(b["id"] for b in self.file.doc["batches"])
        where = os.path.relpath(self.file.path, self.settings.project_root)
        self.events.handle(Warned(f"{why}; the batches ({ids}) go on at the provider, noted in {where}: "
                                  "run the same command to wait for them again (nothing is submitted twice), "
                                  "or `replayci batch cancel` to cancel them"))

    def close(self) -> None:
        for client in self.clients.values():
            try:
                client.close()
            except Exception:  # noqa: BLE001 - closing must not hide the run's outcome
                pass
        for lane in self.lanes:
            lane.runner.close()

    def rounds(self, singles: list[Unit], scenarios: list[Unit]) -> None:
        """Round 0: every single-response unit and every scenario's first call; then one
        round per step, while scenarios have calls left."""
        sessions = Sessions()
        for unit in scenarios:
            self.sessions_of.setdefault((unit.lane, unit.i), []).append(unit)
            sessions.start(functools.partial(self.scenario, unit, sessions))
        pending = [BatchRequest(self.cid(u), u.request, u.model) for u in singles]
        round_no = 0
        try:
            while True:
                asked = sessions.due()
                while self.more_sessions(sessions):  # --repeat auto: their first calls join this round
                    asked += sessions.due()
                requests = pending + asked
                if not requests:
                    return
                answers = self.round(round_no, requests)
                sessions.answer({r.custom_id: answers.get(r.custom_id) for r in asked})
                for unit in singles:
                    self.keep(unit, self.single(unit, answers.get(self.cid(unit))))
                singles = self.sampled(singles)  # --repeat auto: the next round of each undecided case
                pending, round_no = [BatchRequest(self.cid(u), u.request, u.model) for u in singles], round_no + 1
        finally:
            sessions.close()

    def sampled(self, ran: list[Unit]) -> list[Unit]:
        """Under --repeat auto, the units of the next round: for each case of *ran*, the fewest
        further runs that could decide it (none once it is decided or at MAX); else none."""
        if self.samplers is None:
            return []
        out: list[Unit] = []
        for lane, i in dict.fromkeys((u.lane, u.i) for u in ran):
            item = self.items[i]
            got = [res for _, res in sorted(self.runs.get((lane, i), []), key=lambda pair: pair[0])]
            more, self.labels[(lane, i)] = self.samplers[lane].more(
                (item.pack.pack_id, item.contract.id, item.case.id), got)
            last = next(u for u in reversed(ran) if (u.lane, u.i) == (lane, i))
            units = [replace(last, repeat=len(got) + k, started=time.perf_counter()) for k in range(more)]
            self.units.extend(units)
            out.extend(units)
        return out

    def more_sessions(self, sessions: Sessions) -> bool:
        """Under --repeat auto, each scenario whose sessions have all ended gets the fewest further
        sessions that could decide it (none once it is decided or at MAX); whether any started."""
        if self.samplers is None:
            return False
        started = False
        for (lane, i), units in self.sessions_of.items():
            got = [res for _, res in sorted(self.runs.get((lane, i), []), key=lambda pair: pair[0])]
            if len(got) < len(units) or self.labels.get((lane, i)) is not None:
                continue  # a session still running, or decided
            item = self.items[i]
            more, label = self.samplers[lane].more((item.pack.pack_id, item.contract.id, item.case.id), got)
            if not more:
                self.labels[(lane, i)] = label or "undecided"
            for k in range(more):
                unit = replace(units[-1], repeat=len(got) + k, started=time.perf_counter())
                units.append(unit)
                self.units.append(unit)
                sessions.start(functools.partial(self.scenario, unit, sessions))
                started = True
        return started

    def single(self, unit: Unit, answer: Answer | None) -> CaseResult:
        """A single-response unit's result from its answer (None: the wait ended first)."""
        item = self.items[unit.i]
        if answer is None:
            return incomplete(item, unit.started)
        try:
            lane = self.lanes[unit.lane]
            result = lane.runner.called(item, self.fixtures[unit.i], unit.model, unit.request, unit.started,
                                        transport=lambda _request: answer, prices=lane.prices)
        except Exception as exc:  # noqa: BLE001 - a bug or the environment: this case's error, the run goes on
            return judge(item, Errored(exc))
        return replace(result, details={**result.details, "batch": True})

    def scenario(self, unit: Unit, sessions: Sessions) -> None:
        """One scenario session, on its own thread: each model call waits for its round."""
        item = self.items[unit.i]
        try:
            lane = self.lanes[unit.lane]
            result = lane.runner.called(item, self.fixtures[unit.i], unit.model, unit.request, unit.started,
                                        transport=Rounds(sessions, unit.model, functools.partial(self.cid, unit)),
                                        prices=lane.prices)
            result = replace(result, details={**result.details, "batch": True})
        except BatchIncomplete:
            result = incomplete(item, unit.started)
        except Exception as exc:  # noqa: BLE001 - as single()
            result = judge(item, Errored(exc))
        self.keep(unit, result)

    def round(self, round_no: int, requests: list[BatchRequest]) -> dict[str, Answer | None]:
        """Submit what this round has not submitted yet, wait for its batches, read their results:
        custom id -> answer (None: not answered before the wait ended)."""
        assert self.file is not None
        known = self.file.submitted(round_no)
        answers: dict[str, Answer | None] = {}
        fresh = [r for r in requests if r.custom_id not in known]
        if fresh and time.monotonic() < self.deadline:
            for group in batches_of(fresh, lambda r: (self.lane_of[r.custom_id], r.model)):
                answers.update(self.submit(round_no, self.lanes[self.lane_of[group[0].custom_id]], group))
            known = self.file.submitted(round_no)
        wanted = {r.custom_id for r in requests}
        batch_ids = sorted({known[c] for c in wanted if c in known})
        states = self.wait(round_no, batch_ids) if batch_ids else {}
        for batch_id, state in states.items():
            if state.ended:
                answers.update(self.results(state, {c for c in wanted if known.get(c) == batch_id}))
            else:
                self.finished = False  # still running at the provider: the same command resumes it
        return answers

    def submit(self, round_no: int, lane: Lane, requests: list[BatchRequest]) -> dict[str, Answer]:
        """Create one batch of *lane*'s and note it (with where it went); a refused submission
        is each request's failed answer."""
        assert self.file is not None
        client = self.clients[lane.endpoint]
        try:
            state = client.submit(requests, metadata={"replayci_run": self.file.doc["run"],
                                                           "replayci_round": str(round_no)})
        except Exception as exc:  # noqa: BLE001 - the provider refused: each request's unexpected_error
            d = client.classify(exc)
            failed = failed_answer(d.status, f"the batch was not accepted: {d.message}", d.kind, lane.runner.key)
            return {r.custom_id: failed for r in requests}
        provider, base_url = lane.endpoint
        self.file.add(state.id, round_no, [r.custom_id for r in requests], provider=provider, base_url=base_url,
                      target=lane.label(requests[0].model))
        return {}

    def wait(self, round_no: int, batch_ids: list[str]) -> dict[str, BatchState]:
        """Poll *batch_ids* (after the first interval, then backing off to MAX_POLL_SECONDS) until
        all have ended or the wait's deadline: their last states."""
        interval = self.settings.batch_poll_s
        states: dict[str, BatchState] = {}
        while True:
            _sleep(max(min(interval, self.deadline - time.monotonic()), 0))
            for batch_id in batch_ids:
                if batch_id not in states or not states[batch_id].ended:
                    states[batch_id] = self.poll(batch_id, states.get(batch_id))
            self.progress(round_no, batch_ids, states)
            if all(s.ended for s in states.values()) or time.monotonic() >= self.deadline:
                return states
            interval = min(interval * 2, max(self.settings.batch_poll_max_s, self.settings.batch_poll_s))

    def poll(self, batch_id: str, last: BatchState | None) -> BatchState:
        """The batch's state; a poll that failed keeps the last one (polled again next time)
        unless retrying cannot help (the batch is unknown, the key refused)."""
        client = self.client_of(batch_id)
        try:
            return client.poll(batch_id)
        except Exception as exc:  # noqa: BLE001 - classified below
            d = client.classify(exc)
            if d.retry:
                return last or BatchState(batch_id, "unknown", False, 0, 0, 0)
            return BatchState(batch_id, UNREACHABLE, True, 0, 0, 0, f"polling the batch failed: {d.message}")

    def progress(self, round_no: int, batch_ids: list[str], states: dict[str, BatchState]) -> None:
        got = [states[b] for b in batch_ids]
        status = ", ".join(sorted({s.status for s in got}))
        self.events.handle(BatchWaiting(BatchProgress(round_no, tuple(batch_ids), sum(s.done for s in got),
                                                      sum(s.failed for s in got), sum(s.total for s in got),
                                                      time.monotonic() - self.t0, status)))

    def results(self, state: BatchState, wanted: set[str]) -> dict[str, Answer]:
        """The answers of an ended batch, by custom id; a request it has no result for (it
        failed as a whole, or left the request out) gets the batch's reason."""
        client, key = self.client_of(state.id), self.key_of(state.id)
        answers: dict[str, Answer] = {}
        try:
            for res in client.results(state.id) if state.status != UNREACHABLE else ():
                if res.custom_id not in wanted:
                    continue
                if res.kind == "succeeded":
                    answers[res.custom_id] = answer_of(res.payload, key)
                else:
                    answers[res.custom_id] = failed_answer(res.status, res.message or res.kind, f"batch_{res.kind}",
                                                           key)
        except Exception as exc:  # noqa: BLE001 - the results could not be read: the requests' errors
            d = client.classify(exc)
            state = replace(state, reason=f"its results could not be read: {d.message}")
        why = _NO_RESULT.format(id=state.id, status=state.status) + (f": {state.reason}" if state.reason else "")
        for cid in wanted - set(answers):
            answers[cid] = failed_answer(None, why, f"batch_{state.status}", key)
        return answers


def batches_of(requests: list[BatchRequest], group_of: Callable[[BatchRequest], object] = lambda r: r.model
               ) -> list[list[BatchRequest]]:
    """*requests* cut into batches: one group each (by default a model: OpenAI's batches take
    one; a run of targets groups by target and model), at most MAX_BATCH_REQUESTS each, in the
    order the requests came."""
    by_model: dict[object, list[BatchRequest]] = {}
    for r in requests:
        by_model.setdefault(group_of(r), []).append(r)
    return [group[k:k + MAX_BATCH_REQUESTS] for group in by_model.values()
            for k in range(0, len(group), MAX_BATCH_REQUESTS)]


def incomplete(item: Item, started: float) -> CaseResult:
    return judge(item, NotReproducible(INCOMPLETE, "no answer from the batch before --batch-timeout ended the "
                                       "wait; the same command resumes the batch while it runs"), started)
