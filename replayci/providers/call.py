"""One live call as every command makes it: under the retry policy, the API key scrubbed
from whatever came back, the payload normalized or the failure document built."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from ..core.jsonvalue import unicode_only
from ..formats import NormalizeError, normalize, normalize_stream, provider_failure, stream_chunks
from .base import Provider
from .errors import scrub
from .retry import RetryPolicy, call_with_policy, failure_document


@dataclass(frozen=True)
class Answer:
    """What one policy-driven call gave, with no trace of the API key."""

    response: dict | None  # normalized, or the failure document; None when stopped before an answer
    raw: Any  # the provider's payload, when it answered (a streamed call: the list of its chunks)
    attempts: int
    latency_ms: int | None
    problem: str | None = None  # why there is no usable response: the provider's error or an unparseable payload


def call_once(provider: Provider, request: dict, *, model: str, policy: RetryPolicy, key: str | None,
              stop_event: threading.Event | None = None) -> Answer:
    """Call *provider* under *policy*; a provider echoing *key* (in a body or an error) gets it
    scrubbed before anything reads the answer."""
    # A model's or a tool's half of a surrogate pair, sent back in a later step, is no text an SDK
    # can encode: U+FFFD in its place.
    outcome = call_with_policy(provider, unicode_only(request), model=model, policy=policy, stop_event=stop_event)
    if outcome.payload is None:
        stopped = stop_event is not None and stop_event.is_set()
        if outcome.error is None or outcome.error.kind == "cancelled" or stopped:
            # Ctrl-C, not the provider: never an error of the call.
            return Answer(None, None, outcome.attempts, outcome.latency_ms)
        response = scrub(failure_document(outcome.error, outcome.attempts), key)
        err = response["error"]
        status = f" (HTTP {err['status']})" if err.get("status") is not None else ""
        return Answer(response, None, outcome.attempts, outcome.latency_ms,
                      f"provider error {err['type']}{status}: {err['message']}")
    if not outcome.streamed:
        return answer_of(outcome.payload, key, attempts=outcome.attempts, latency_ms=outcome.latency_ms)
    raw = scrub(outcome.payload, key)
    try:
        # Reassembled by the provider's format, as a non-streamed call's payload would be read.
        response = normalize_stream(raw, provider.wire)
        raw = stream_chunks(raw)
    except NormalizeError as exc:
        return _unparseable(exc, raw, key, outcome.attempts, outcome.latency_ms)
    return Answer(response, raw, outcome.attempts, outcome.latency_ms)


def answer_of(payload: Any, key: str | None, *, attempts: int = 1, latency_ms: int | None = None) -> Answer:
    """The answer a provider's (non-streamed) *payload* gives: *key* scrubbed, normalized (a
    live call's, or one request's of a batch)."""
    raw = scrub(payload, key)
    try:
        response = normalize(raw)
    except NormalizeError as exc:
        return _unparseable(exc, raw, key, attempts, latency_ms)
    return Answer(response, raw, attempts, latency_ms)


def failed_answer(status: int | None, message: str, kind: str, key: str | None) -> Answer:
    """The answer of a request that got no usable response (the provider's *message*, scrubbed)."""
    response = scrub(provider_failure(status, message, kind), key)
    return Answer(response, None, 1, None, response["error"]["message"])


def _unparseable(exc: Exception, raw: Any, key: str | None, attempts: int, latency_ms: int | None) -> Answer:
    response = scrub(provider_failure(None, f"unparseable provider payload: {exc}", "invalid_response"), key)
    return Answer(response, raw, attempts, latency_ms, response["error"]["message"])
