"""Check mode: each answer the proxy forwards is judged against the case it corresponds to, and
each conversation against its recorded session's trajectory checks; nothing is written. Answers
are judged on a thread of their own, so the application gets each one as soon as it arrives."""
from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from ...config import Settings
from ...core.prices import Price
from ...engine import runner
from ...engine.cases import Allowlist, Item, allowlist_misses, unmatched_allowlist
from ...engine.live import combine_repeats
from ...engine.metrics import measure
from ...engine.results import CaseResult, RunResult
from ...engine.sampling import Sampler
from ...formats import TranslationError, response_id
from ...pack.model import Pack
from .. import gate, sessions, writer
from ..contracts import Case
from ..correspond import Index, Recorded, Shape
from .routes import Route
from .store import stored_response
from .worker import Worker

# What every case check mode reports carries (its origin, the live request it was judged on).
_CHECK_DETAILS = ("origin", "live_request", "request_changed")


@dataclass
class Exchange:
    """One forwarded exchange, as check mode keeps it."""

    n: int  # its place in the run (from 1)
    route: Route
    shape: Shape | None
    call: sessions.Call | None
    why: str = ""  # why it could not be judged (no readable request or answer)
    matched: bool = False
    seen: dict = field(default_factory=dict)  # the call's trace context and response id, for --otlp


@dataclass
class Conversation:
    """A live agent loop: its exchanges, in order."""

    exchanges: list[Exchange] = field(default_factory=list)


@dataclass
class Outcome:
    """What check mode found: a result per case reached, and the two lists."""

    results: list[CaseResult]
    unmatched: list[dict]
    not_exercised: list[dict]


class Checker:
    """Judges forwarded exchanges against the packs' recorded cases."""

    def __init__(self, packs: list[Pack], ignore: tuple[str, ...] = (), log: Callable[[str], None] = print,
                 prices: Mapping[str, Price] | None = None) -> None:
        self.index = Index.of(packs, ignore)
        self.ignore, self.log = ignore, log
        self.prices = prices  # each answer's cost, as a live run prices it (None: not priced)
        self._results: dict[str, CaseResult] = {}  # the worse result of each case (a fixed --repeat)
        self._runs: dict[str, list[CaseResult]] = {}  # every result of each case, in order (--repeat auto)
        self._started: dict[str, float] = {}
        self._items: dict[str, Item] = {}
        self._exchanges: list[Exchange] = []
        self._conversations: list[tuple[str, Conversation]] = []  # (first request's key, conversation)
        # What a model says is data: an answer no check expected is logged, never takes the proxy down.
        self._worker = Worker("replayci-check", log, "replayci proxy (check): could not judge an exchange")

    def observe(self, route: Route, body: dict, secrets: tuple[str, ...], status: int, payload: bytes,
                content_type: str, headers: dict | None, trace: dict | None = None) -> None:
        """Take one forwarded exchange, its answer's bytes as they came (read and judged on the
        checker's thread, off the path back to the application); *trace*: the W3C trace context
        the application sent it in."""
        self._worker.submit(lambda: self._judge(route, body, secrets, status, stored_response(payload, content_type),
                                                headers, trace))

    def _judge(self, route: Route, body: dict, secrets: tuple[str, ...], status: int, response: object,
               headers: dict | None, trace: dict | None = None) -> None:
        n = len(self._exchanges) + 1
        seen = _seen(trace, response)
        response = writer.scrub_all(response, secrets)  # the report holds it: no credential in it
        try:
            neutral = writer.neutral_request(body, route.api, route.model, secrets)
        except TranslationError as exc:
            self._exchanges.append(Exchange(n, route, None, None, f"its request does not read as {route.api}: {exc}"))
            return
        response, normalized = writer.scrub_answer(  # a key split over a stream's events too
            response, secrets, lambda answer: Case("", "", "", "", route.upstream, neutral, answer, status,
                                                   headers).normalized)
        if writer.spells_secret(normalized, secrets):  # one it could not take apart: never in the report
            normalized = writer.scrub_all(normalized, secrets)
        shape = Shape(route.api, neutral, self.ignore)
        if normalized is None:
            self._exchanges.append(Exchange(n, route, shape, None, "replayci cannot read its answer"))
            return
        if self.prices is not None:
            normalized = measure(normalized, latency_ms=normalized.get("latency_ms"), model=route.model,
                                 prices=self.prices)
        ex = Exchange(n, route, shape, sessions.Call(neutral, normalized, route.api), seen=seen)
        self._exchanges.append(ex)
        self._follow(ex)
        found = self.index.single(shape)
        if found.case is not None:
            ex.matched = True
            recorded = found.case.shape.request if found.rule != "key" else None  # (by its key: unchanged)
            self._keep(found.case, gate.judge_answer(found.case.item, neutral, normalized, details=seen,
                                                     recorded=recorded))

    def _follow(self, ex: Exchange) -> None:
        """Put the exchange in its conversation: a first request opens one; step k continues the
        latest open one of the same first request that has k - 1 steps."""
        assert ex.shape is not None
        head = ex.shape.head_key
        if ex.shape.step == 1:
            self._conversations.append((head, Conversation([ex])))
            return
        for key, conversation in reversed(self._conversations):
            if key == head and len(conversation.exchanges) == ex.shape.step - 1:
                conversation.exchanges.append(ex)
                return
        self._conversations.append((head, Conversation([ex])))  # its start was not seen: judged alone

    def _keep(self, recorded: Recorded, result: CaseResult) -> None:
        recorded.reached += 1
        key = recorded.item.key + "@" + recorded.item.pack.pack_id
        self._items[key] = recorded.item
        self._results[key] = gate.worse(self._results.get(key), result)
        self._runs.setdefault(key, []).append(result)
        self._started.setdefault(key, time.perf_counter())

    def open_cases(self, sampler: Sampler) -> tuple[int, int]:
        """After a run of the command (its exchanges all handed over): its conversations judged
        against their sessions; (the cases reached so far that *sampler* would run again, those
        whose label is not decided)."""
        self._worker.flush()
        self._judge_conversations()
        again = undecided = 0
        for key, runs in self._runs.items():
            more, label = sampler.more(self._case(key), runs)
            again, undecided = again + (more > 0), undecided + (label in (None, "undecided"))
        return again, undecided

    def finish(self, sampler: Sampler | None = None) -> Outcome:
        """Judge the conversations against their sessions; the results (under --repeat auto,
        *sampler*: each case's runs combined, with its label), unmatched and not exercised."""
        self._worker.close()
        self._judge_conversations()
        results = list(self._results.values()) if sampler is None else [
            self._combined(key, runs, sampler.more(self._case(key), runs)[1] or "undecided")
            for key, runs in self._runs.items()]
        return Outcome(results, self._unmatched(), self._not_exercised())

    def _combined(self, key: str, runs: list[CaseResult], label: str) -> CaseResult:
        """A case's runs as one result with its label, as a live run's; still a check's (a flaky
        case's result is made anew: it keeps the last run's live request)."""
        out = combine_repeats(self._items[key], runs, self._started[key], label)
        kept = {k: runs[-1].details[k] for k in _CHECK_DETAILS if k in runs[-1].details and k not in out.details}
        return replace(out, details={**out.details, **kept}) if kept else out

    def _case(self, key: str) -> tuple[str, str, str]:
        item = self._items[key]
        return item.pack.pack_id, item.contract.id, item.case.id

    def _judge_conversations(self) -> None:
        """The conversations seen since the last call, each judged against its recorded session
        (a command's run ends its conversations: the next run's start new ones)."""
        conversations, self._conversations = self._conversations, []
        for _head, conversation in conversations:
            first = conversation.exchanges[0]
            if first.shape is None or first.shape.step != 1:
                continue
            found = self.index.session(first.shape)
            if found.case is None:
                continue
            for ex in conversation.exchanges:
                ex.matched = True
            calls = [ex.call for ex in conversation.exchanges if ex.call is not None]
            judged = gate.judge_loop(found.case.item, calls, recorded=found.case.shape.request)
            self._keep(found.case, _with(judged, conversation.exchanges[-1].seen))  # the loop's last call

    def _unmatched(self) -> list[dict]:
        out = []
        for ex in self._exchanges:
            if ex.matched:
                continue
            entry: dict = {"exchange": ex.n, "endpoint": f"POST {ex.route.path}"}
            if ex.shape is None or ex.call is None:
                entry["why"] = ex.why
            else:
                found = self.index.single(ex.shape)
                near = found.nearest
                entry["step"] = ex.shape.step
                entry["first_user_message"] = sessions.first_user_text(ex.shape.request)[:200]
                entry["why"] = found.why or "no recorded case corresponds"
                if near is not None:
                    entry["nearest"] = f"{near.item.contract.id}/{near.item.case.id}"
            out.append(entry)
        return out

    def _not_exercised(self) -> list[dict]:
        return [{"pack": r.item.pack.pack_id, "contract": r.item.contract.id, "case": r.item.case.id,
                 "source": r.item.case.source} for r in self.index.every if not r.reached]


def _seen(trace: dict | None, response: object) -> dict:
    """What a report keeps of a live call beside its verdict: its trace context, its response id."""
    out: dict = {"trace": trace} if trace else {}
    rid = response_id(response)  # a streamed answer's too, from its events
    if rid:
        out["response_id"] = rid
    return out


def _with(result: CaseResult, seen: dict) -> CaseResult:
    return replace(result, details={**result.details, **seen}) if seen else result


def run_result(outcome: Outcome, packs: list[Pack], settings: Settings, started_at: datetime.datetime,
               t0: float, rounds: Rounds | None = None) -> RunResult:
    """A run report of what check mode judged: allowlist, baseline labels, summary and gates as a
    run's, cases in the packs' order; under --repeat auto (*rounds*: the command's runs and the
    calls they made) the runs and labels, and the calls beside a fixed --repeat MAX."""
    runner.check_baseline(settings, packs)
    warnings = unmatched_allowlist(allowlist_misses(packs))
    label = runner.baseline_labeller(settings)
    by_key = {(p.pack_id, c.id): (p, c) for p in packs for c in p.contracts}
    allowlist = Allowlist(datetime.date.today())
    results = []
    for result in sorted(outcome.results, key=lambda r: r.order):
        pack, contract = by_key[(result.pack, result.contract)]
        result, warned = allowlist.apply(result, pack, contract)
        warnings.extend(warned)
        results.append(label(result) if label is not None else result)
    result = runner.finish(results, packs, settings, warnings, started_at, t0)
    result.run.update(provider="check", replay="off")  # live answers, through the proxy
    if settings.repeat_auto and rounds is not None:
        result.summary.update(runner.repeat_records(result.cases, settings))
        result.summary["sampling"].update(rounds.record(settings.repeat))
    return result


@dataclass
class Rounds:
    """The runs of the command under --repeat auto: how many, and the upstream calls they made."""

    runs: int = 0
    calls: int = 0

    def record(self, most: int) -> dict:
        """The command's runs and calls, beside what a fixed --repeat MAX (*most*) would have made
        (its calls: the mean calls of a run, times MAX)."""
        return {"command_runs": self.runs, "fixed_command_runs": most, "calls": self.calls,
                "fixed_calls": round(self.calls / self.runs * most) if self.runs else 0}
