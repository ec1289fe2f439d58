"""The one retry loop for live provider calls, built on tenacity.

Providers make exactly one attempt per ``call()`` and only *classify* failures; this module
decides whether and when to try again: Retry-After on 429 (capped), exponential backoff with
full jitter otherwise, a per-call timeout, and a stop event for Ctrl-C.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tenacity import RetryCallState, Retrying, wait_random_exponential

from ..formats import provider_failure
from ..pack.vocabulary import TIMEOUT_MS
from .base import CallResult, Provider, RetryDecision

DEFAULT_RETRY_ON = frozenset({"429", "5xx", "timeout", "connection"})


@dataclass(frozen=True)
class RetryPolicy:
    """A contract's retries, timeouts and rate_limits, as the loop applies them."""

    max_attempts: int = 2
    retry_on: frozenset[str] = DEFAULT_RETRY_ON
    total_ms: int = TIMEOUT_MS  # timeout per call
    respect_retry_after: bool = True
    max_sleep_seconds: float = 60.0
    backoff_initial: float = 0.5
    backoff_max: float = 8.0


@dataclass
class Outcome:
    """What a policy-driven call produced."""

    payload: Any  # the successful raw payload (a stream: its text or chunks), else None
    attempts: int
    latency_ms: int  # of the successful call (or the total when failed)
    error: RetryDecision | None  # the last failure when attempts ran out / not retryable
    sleeps: list[float] = field(default_factory=list)  # waits between attempts, in seconds
    streamed: bool = False  # the payload is a stream, for the format's stream reader

    @property
    def ok(self) -> bool:
        """Whether a call succeeded."""
        return self.payload is not None


class _StoppedError(Exception):
    """The stop event was set before an attempt could start."""


CANCELLED = RetryDecision(False, "cancelled", None, None, "stopped before the call was made")


def _safe_classify(provider: Provider, exc: BaseException) -> RetryDecision:
    """provider.classify, never raising: a classifier bug must not crash the run."""
    try:
        return provider.classify(exc)
    except Exception as bug:  # noqa: BLE001 - reported as the call's error instead
        return RetryDecision(
            False,
            "client",
            None,
            None,
            f"{type(exc).__name__} (unclassifiable: {type(bug).__name__})",
        )


def call_with_policy(
    provider: Provider,
    request: dict,
    *,
    model: str,
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
    stop_event: threading.Event | None = None,
) -> Outcome:
    """Call *provider* under *policy*; never raises for provider failures (see Outcome.error)."""
    timeout_s = policy.total_ms / 1000.0
    backoff = wait_random_exponential(multiplier=policy.backoff_initial, max=policy.backoff_max)
    decisions: dict[int, RetryDecision] = {}
    sleeps: list[float] = []
    attempts = 0
    started = time.perf_counter()

    def attempt() -> CallResult:
        nonlocal attempts
        if stop_event is not None and stop_event.is_set():
            raise _StoppedError
        attempts += 1
        return provider.call(request, model=model, timeout_s=timeout_s)

    def decision(state: RetryCallState) -> RetryDecision | None:
        exc = state.outcome.exception() if state.outcome is not None else None
        if exc is None or isinstance(exc, _StoppedError) or not isinstance(exc, Exception):
            return None  # success, stop, or KeyboardInterrupt & co (never retried)
        if state.attempt_number not in decisions:
            decisions[state.attempt_number] = _safe_classify(provider, exc)
        return decisions[state.attempt_number]

    def should_retry(state: RetryCallState) -> bool:
        d = decision(state)
        return d is not None and d.retry and d.kind in policy.retry_on

    def wait(state: RetryCallState) -> float:
        d = decision(state)
        if (
            d is not None
            and d.kind == "429"
            and policy.respect_retry_after
            and d.retry_after is not None
        ):
            return min(d.retry_after, policy.max_sleep_seconds)
        return backoff(state)

    def stop(state: RetryCallState) -> bool:
        return state.attempt_number >= max(policy.max_attempts, 1) or (
            stop_event is not None and stop_event.is_set()
        )

    def do_sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if stop_event is not None and sleep is time.sleep:
            stop_event.wait(seconds)  # Ctrl-C should not wait out a long Retry-After
        else:
            sleep(seconds)

    retrying = Retrying(stop=stop, wait=wait, retry=should_retry, sleep=do_sleep, reraise=True)
    try:
        result = retrying(attempt)
    except _StoppedError:
        last = decisions.get(attempts)
        return Outcome(None, attempts, _elapsed_ms(started), last or CANCELLED, sleeps)
    except Exception as exc:  # noqa: BLE001 - every provider failure becomes a value
        error = decisions.get(attempts) or _safe_classify(provider, exc)
        return Outcome(None, attempts, _elapsed_ms(started), error, sleeps)
    return Outcome(result.payload, attempts, result.latency_ms, None, sleeps, result.streamed)


def _elapsed_ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


def failure_document(error: RetryDecision, attempts: int) -> dict:
    """The normalized response document for a call that failed under the policy."""
    noun = "attempt" if attempts == 1 else "attempts"
    return provider_failure(error.status, f"{error.message} (after {attempts} {noun})", error.kind)
