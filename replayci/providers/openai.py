"""The OpenAI chat-completions provider (also any OpenAI-compatible endpoint via base_url)."""

from __future__ import annotations

import inspect
import time

import openai as _sdk

from .base import CallResult, RetryDecision
from .errors import InvalidResponseError, classify_sdk_error, decode_payload
from .translate import to_openai

# SDK call options that a request document must never set through create()'s kwargs.
_SDK_OPTIONS = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})


class OpenAIProvider:
    """Sends OpenAI-form requests with the official SDK; one attempt per call, no SDK retries."""

    name = "openai"

    def __init__(self, *, api_key: str, base_url: str | None = None) -> None:
        self._api_key = api_key
        # max_retries=0: the engine's retry policy is the only one (SPEC 8).
        self._client = _sdk.OpenAI(api_key=api_key, base_url=base_url, max_retries=0)
        create = self._client.chat.completions.create
        self._accepted = frozenset(inspect.signature(create).parameters) - _SDK_OPTIONS

    def call(self, request: dict, *, model: str, timeout_s: float) -> CallResult:
        """Send *request* once and return the completion as the provider sent it."""
        kwargs = to_openai(request, model, accepted=self._accepted)
        start = time.perf_counter()
        try:
            # The raw response: create() itself raises a bare JSONDecodeError on a non-JSON
            # body, or returns a str when the content type is not JSON.
            raw = self._client.chat.completions.with_raw_response.create(
                **kwargs, timeout=timeout_s
            )
        except _sdk.APITimeoutError as exc:
            exc.replayci_timeout_s = timeout_s  # type: ignore[attr-defined]
            raise
        http = raw.http_response
        payload = decode_payload(
            http.text, status=http.status_code, content_type=http.headers.get("content-type")
        )
        latency_ms = round((time.perf_counter() - start) * 1000)
        if not isinstance(payload.get("choices"), list):
            raise InvalidResponseError(
                _not_a_completion(payload, http.status_code), status=http.status_code
            )
        return CallResult(payload=payload, latency_ms=latency_ms)

    def classify(self, exc: BaseException) -> RetryDecision:
        """Classify an exception raised by call()."""
        return classify_sdk_error(_sdk, exc, secret=self._api_key)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()


def _not_a_completion(payload: dict, status: int) -> str:
    err = payload.get("error")
    if isinstance(err, dict) and err.get("message"):
        # Some OpenAI-compatible gateways report errors inside a 200.
        return f"the provider answered HTTP {status} with an error: {err['message']}"
    return (
        f"the provider answered HTTP {status} with JSON that is not a chat completion "
        f"(keys: {', '.join(sorted(payload)[:8])})"
    )
