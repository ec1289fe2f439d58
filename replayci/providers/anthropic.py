"""The Anthropic messages provider: OpenAI-form requests translated to the Messages API."""

from __future__ import annotations

import inspect
import time

import anthropic as _sdk

from .base import CallResult, RetryDecision
from .errors import InvalidResponseError, classify_sdk_error, decode_payload
from .translate import to_anthropic


class AnthropicProvider:
    """Sends translated requests with the official SDK; one attempt per call, no SDK retries."""

    name = "anthropic"

    def __init__(self, *, api_key: str, base_url: str | None = None) -> None:
        self._api_key = api_key
        # max_retries=0: the engine's retry policy is the only one (SPEC 8).
        self._client = _sdk.Anthropic(api_key=api_key, base_url=base_url, max_retries=0)
        # Whether this SDK's create() takes temperature etc. directly (2.x does not).
        self._accepted = frozenset(inspect.signature(self._client.messages.create).parameters)

    def call(self, request: dict, *, model: str, timeout_s: float) -> CallResult:
        """Send *request* once and return the message as the provider sent it."""
        kwargs = to_anthropic(request, model, accepted=self._accepted)
        start = time.perf_counter()
        try:
            # The raw response, so a non-JSON body is our InvalidResponseError, not an SDK quirk.
            raw = self._client.messages.with_raw_response.create(**kwargs, timeout=timeout_s)
        except _sdk.APITimeoutError as exc:
            exc.replayci_timeout_s = timeout_s  # type: ignore[attr-defined]
            raise
        http = raw.http_response
        payload = decode_payload(
            http.text, status=http.status_code, content_type=http.headers.get("content-type")
        )
        latency_ms = round((time.perf_counter() - start) * 1000)
        if not isinstance(payload.get("content"), list):
            raise InvalidResponseError(
                _not_a_message(payload, http.status_code), status=http.status_code
            )
        return CallResult(payload=payload, latency_ms=latency_ms)

    def classify(self, exc: BaseException) -> RetryDecision:
        """Classify an exception raised by call()."""
        return classify_sdk_error(_sdk, exc, secret=self._api_key)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()


def _not_a_message(payload: dict, status: int) -> str:
    err = payload.get("error")
    if isinstance(err, dict) and err.get("message"):
        return f"the provider answered HTTP {status} with an error: {err['message']}"
    return (
        f"the provider answered HTTP {status} with JSON that is not a message "
        f"(keys: {', '.join(sorted(payload)[:8])})"
    )
