"""Check mode: each answer the proxy forwards is judged against the case it corresponds to, and
each conversation against its recorded session's trajectory checks; nothing is written. Answers
are judged on a thread of their own, so the application gets each one as soon as it arrives."""
from __future__ import annotations

import datetime
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ...config import Settings
from ...engine import runner
from ...engine.cases import Item, allowlist_misses, apply_allowlist, unmatched_allowlist
from ...engine.results import CaseResult, RunResult
from ...formats import TranslationError
from ...pack.model import Pack
from .. import gate, sessions, writer
from ..contracts import Case
from ..correspond import Index, Recorded, Shape
from .routes import Route


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

    def __init__(self, packs: list[Pack], ignore: tuple[str, ...] = (), log: Callable[[str], None] = print) -> None:
        self.index = Index.of(packs, ignore)
        self.ignore, self.log = ignore, log
        self._results: dict[str, CaseResult] = {}
        self._items: dict[str, Item] = {}
        self._exchanges: list[Exchange] = []
        self._conversations: list[tuple[str, Conversation]] = []  # (first request's key, conversation)
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="replayci-check", daemon=True)
        self._thread.start()

    def observe(self, route: Route, body: dict, secrets: tuple[str, ...], status: int, response: object,
                headers: dict | None, trace: dict | None = None) -> None:
        """Take one forwarded exchange (judged on the checker's thread); *trace*: the W3C trace
        context the application sent it in."""
        self._queue.put((route, body, secrets, status, response, headers, trace))

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            try:
                if job is None:
                    return
                self._judge(*job)
            except Exception as exc:  # what a model says is data: it never takes the proxy down
                self.log(f"replayci proxy (check): could not judge an exchange: {type(exc).__name__}: {exc}")
            finally:
                self._queue.task_done()

    def _judge(self, route: Route, body: dict, secrets: tuple[str, ...], status: int, response: object,
               headers: dict | None, trace: dict | None = None) -> None:
        n = len(self._exchanges) + 1
        seen = _seen(trace, response)
        response = writer.scrub_answer(response, secrets)  # the report holds it: no credential in it
        try:
            neutral = writer.neutral_request(body, route.api, route.model, secrets)
        except TranslationError as exc:
            self._exchanges.append(Exchange(n, route, None, None, f"its request does not read as {route.api}: {exc}"))
            return
        normalized = Case("", "", "", "", route.upstream, neutral, response, status, headers).normalized
        if writer.spells_secret(normalized, secrets):  # read whole, it spells a key the stream split
            normalized = writer.scrub_all(normalized, secrets)
        shape = Shape(route.api, neutral, self.ignore)
        if normalized is None:
            self._exchanges.append(Exchange(n, route, shape, None, "replayci cannot read its answer"))
            return
        ex = Exchange(n, route, shape, sessions.Call(neutral, normalized, route.api), seen=seen)
        self._exchanges.append(ex)
        self._follow(ex)
        found = self.index.single(shape)
        if found.case is not None:
            ex.matched = True
            self._keep(found.case, _with(gate.judge_answer(found.case.item, neutral, normalized,
                                                           recorded=found.case.shape.request), seen))

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

    def finish(self) -> Outcome:
        """Judge the conversations against their sessions; the results, unmatched and not exercised."""
        self._queue.join()
        self._queue.put(None)
        self._thread.join()
        for _head, conversation in self._conversations:
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
        return Outcome(list(self._results.values()), self._unmatched(), self._not_exercised())

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
    rid = response.get("id", response.get("responseId")) if isinstance(response, dict) else None
    if isinstance(rid, str) and rid:
        out["response_id"] = rid
    return out


def _with(result: CaseResult, seen: dict) -> CaseResult:
    return replace(result, details={**result.details, **seen}) if seen else result


def run_result(outcome: Outcome, packs: list[Pack], settings: Settings, started_at: datetime.datetime,
               t0: float) -> RunResult:
    """A run report of what check mode judged: allowlist, baseline labels, summary and gates as a
    run's, cases in the packs' order."""
    runner.check_baseline(settings, packs)
    warnings = unmatched_allowlist(allowlist_misses(packs))
    label = runner.baseline_labeller(settings)
    by_key = {(p.pack_id, c.id): (p, c) for p in packs for c in p.contracts}
    today, warned = datetime.date.today(), set()
    results = []
    for result in sorted(outcome.results, key=lambda r: r.order):
        pack, contract = by_key[(result.pack, result.contract)]
        result = apply_allowlist(result, pack, contract, today, warnings, warned)
        results.append(label(result) if label is not None else result)
    result = runner.finish(results, packs, settings, warnings, started_at, t0)
    result.run.update(provider="check", replay="off")  # live answers, through the proxy
    return result
