"""Live runs: keys, replay modes, concurrency, retries and recording (SPEC 8, 9)."""
from __future__ import annotations

import os
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import Iterator

from . import recordings
from .config import Settings
from .engine import (Item, RecordedSource, boundary_change, case_result, evaluate_response,
                     non_reproducible, skipped)
from .errors import ConfigError, Problem
from .fixtures import Fixture, load_fixture, recording_path
from .hashing import short_hash
from .normalize import NormalizeError, normalize, provider_failure
from .providers import KEY_VARIABLES, api_key_for, create
from .results import CaseResult
from .retry import RetryPolicy, call_with_policy, failure_document


def policy_for(item: Item) -> RetryPolicy:
    r = item.contract.retry
    return RetryPolicy(max_attempts=r.max_attempts, retry_on=frozenset(r.retry_on), total_ms=r.total_ms,
                       respect_retry_after=r.respect_retry_after, max_sleep_seconds=r.max_sleep_seconds)


def sent_request(fixture: Fixture, model: str) -> dict:
    """The request as it is sent, in the pack's neutral (OpenAI) form."""
    return {**fixture.request, "model": model}


class LiveRunner:
    """Runs one case against a live provider under the run's replay mode."""

    def __init__(self, settings: Settings, provider, warnings: list[str], stop: threading.Event):
        self.settings = settings
        self.provider = provider
        self.mode = settings.replay or "off"
        self.recorded = RecordedSource(settings, warnings)
        self.stop = stop
        self._lock = threading.Lock()

    def model_for(self, item: Item) -> str:
        return self.settings.model or item.pack.default_model or ""

    def replayable(self, item: Item, fixture: Fixture, model: str) -> bool:
        """In auto mode: a recording of this provider and model whose boundary still matches."""
        path = self.recorded.recording_for(item.pack, item.contract.id, item.case.id)
        if path is None:
            return False
        from .fixtures import load_recording

        try:
            rec = load_recording(path, path, max_bytes=self.settings.max_fixture_bytes)
        except ConfigError:
            return False
        meta = rec.meta
        if meta.get("provider") != self.settings.provider or meta.get("model") != model:
            return False
        return not boundary_change(rec.boundary, fixture.request) and rec.response is not None

    def run_once(self, item: Item, fixture: Fixture, started: float) -> CaseResult:
        model = self.model_for(item)
        if self.mode == "strict" or (self.mode == "auto" and self.replayable(item, fixture, model)):
            return self.recorded.run(item, fixture, started)
        request = sent_request(fixture, model)
        outcome = call_with_policy(self.provider, request, model=model, policy=policy_for(item),
                                   stop_event=self.stop)
        raw = outcome.payload
        if raw is None:
            response = failure_document(outcome.error, outcome.attempts)
        else:
            try:
                response = normalize(raw)
            except NormalizeError as exc:
                response = provider_failure(None, f"unparseable provider payload: {exc}", "invalid_response")
        extra = {"attempts": outcome.attempts,
                 "details": {"latency_ms": outcome.latency_ms, "response_source": self.settings.provider}}
        result = evaluate_response(item, request, response, started, **extra)
        if self.mode in ("record", "auto") and raw is not None:
            path = recording_path(item.pack.recordings_dir, item.contract.id, item.case.id)
            doc = recordings.build(
                pack_id=item.pack.pack_id, contract=item.contract.id, case=item.case.id,
                provider=self.settings.provider, model=model, request=fixture.request,
                response=response, latency_ms=outcome.latency_ms, raw=raw,
                keep_raw=self.settings.keep_raw, redact_fields=self.settings.redact_fields)
            recordings.write(path, doc)
        return result

    def run(self, item: Item, fixture: Fixture) -> CaseResult:
        started = time.perf_counter()
        n = max(self.settings.repeat, 1)
        if n == 1:
            return self.run_once(item, fixture, started)
        runs = [self.run_once(item, fixture, time.perf_counter()) for _ in range(n)]
        return combine_repeats(item, runs, started)


def combine_repeats(item: Item, runs: list[CaseResult], started: float) -> CaseResult:
    """pass^N: the case passes only when every run passed; differing fingerprints are
    model nondeterminism."""
    passes = sum(1 for r in runs if r.status == "pass")
    fingerprints = [r.fingerprint for r in runs]
    details = {"repeat": len(runs), "passes": passes, "case_pass_rate": round(passes / len(runs), 4),
               "fingerprints": fingerprints}
    first = runs[0]
    duration = (time.perf_counter() - started) * 1000
    if len(set(fingerprints)) > 1:
        nr = non_reproducible(item, "model_nondeterminism",
                              f"{len(set(fingerprints))} different outcomes in {len(runs)} runs "
                              f"({passes}/{len(runs)} passed): {', '.join(fingerprints)}", started)
        return replace(nr, details={**nr.details, **details}, duration_ms=duration,
                       attempts=sum(r.attempts for r in runs))
    worst = next((r for r in runs if r.status != "pass"), first)
    return replace(worst, details={**worst.details, **details}, duration_ms=duration,
                   attempts=sum(r.attempts for r in runs))


def run_live(items: list[Item], settings: Settings, problems: list[Problem], warnings: list[str], *,
             environ=None) -> Iterator[CaseResult]:
    """Run cases against a live provider, up to settings.jobs at once, yielding in stable order."""
    environ = os.environ if environ is None else environ
    fixtures: list[Fixture | None] = []
    for item in items:
        try:
            fixtures.append(load_fixture(item.case.fixture_path, item.case.fixture_display,
                                         max_bytes=settings.max_fixture_bytes))
        except ConfigError as exc:
            problems.extend(exc.problems)
            fixtures.append(None)
    if problems:
        return  # nothing is called when a pack is broken
    for item in items:
        if not (settings.model or item.pack.default_model):
            raise ConfigError(Problem(item.pack.source.rsplit(":", 1)[0], None, None,
                                      f"no model for provider {settings.provider}: pass --model or set "
                                      "default_model in pack.yaml"))
    needs_key = (settings.replay or "off") != "strict"
    key = api_key_for(settings.provider, environ)
    if needs_key and not key:
        var = KEY_VARIABLES[settings.provider]
        warnings.append(f"no API key for {settings.provider}: set {var} (or REPLAYCI_PROVIDER_KEY); "
                        "every live case is non_reproducible: missing_prerequisites")
        for item in items:
            started = time.perf_counter()
            yield skipped(item, settings.provider, started) or non_reproducible(
                item, "missing_prerequisites", f"{var} is not set", started)
        return
    provider = create(settings.provider, api_key=key or "unused", base_url=settings.base_url)
    stop = threading.Event()
    runner = LiveRunner(settings, provider, warnings, stop)
    jobs = max(settings.jobs, 1)
    done: dict[int, CaseResult] = {}
    next_out = 0
    pending: dict[Future, int] = {}
    queue = iter(range(len(items)))
    executor = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="replayci-live")

    def submit_more() -> None:
        while len(pending) < jobs and not stop.is_set():
            i = next(queue, None)
            if i is None:
                return
            item = items[i]
            skip = skipped(item, settings.provider, time.perf_counter())
            if skip is not None:
                done[i] = skip
                continue
            pending[executor.submit(runner.run, item, fixtures[i])] = i

    try:
        submit_more()
        while pending or next_out in done:
            while next_out in done:
                yield done.pop(next_out)
                next_out += 1
            if not pending:
                submit_more()
                if not pending and next_out not in done:
                    break
                continue
            finished, _ = wait(list(pending), timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in finished:
                i = pending.pop(fut)
                try:
                    done[i] = fut.result()
                except Exception as exc:  # a bug or an environment problem: `error`, run goes on
                    done[i] = case_result(
                        items[i], "error", reason=f"could not evaluate: {type(exc).__name__}: {exc}",
                        fp=short_hash({"contract": items[i].contract.id, "error": type(exc).__name__}),
                        started=time.perf_counter())
            submit_more()
    except KeyboardInterrupt:
        stop.set()
        for fut in pending:
            fut.cancel()
        executor.shutdown(wait=False, cancel_futures=True)
        # What finished is kept; the caller reports it and exits 130.
        for i in sorted(done):
            if i >= next_out:
                yield done[i]
        raise
    finally:
        stop.set()
        executor.shutdown(wait=False, cancel_futures=True)
        try:
            provider.close()
        except Exception:
            pass
