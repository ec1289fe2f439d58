"""The Anthropic messages provider: OpenAI-form requests translated to the Messages API."""

from __future__ import annotations

import inspect

import anthropic as _sdk

from .base import CallResult, RetryDecision
from .errors import call_raw, classify_sdk_error
from .translate import to_anthropic


class AnthropicProvider:
    """Sends translated requests with the official SDK; one attempt per call, no SDK retries."""

    name = "anthropic"

    def __init__(self, *, api_key: str, base_url: str | None = None) -> None:
        self._api_key = api_key
        # max_retries=0: the engine's retry policy is the only one.
        self._client = _sdk.Anthropic(api_key=api_key, base_url=base_url, max_retries=0)
        # Whether this SDK's create() takes temperature etc. directly (2.x does not).
        self._accepted = frozenset(inspect.signature(self._client.messages.create).parameters)

    def call(self, request: dict, *, model: str, timeout_s: float) -> CallResult:
        """Send *request* once and return the message as the provider sent it."""
        kwargs = to_anthropic(request, model, accepted=self._accepted)
        return call_raw(_sdk, self._client.messages.with_raw_response.create, kwargs, timeout_s=timeout_s,
                        shape_key="content", what="a message")

    def classify(self, exc: BaseException) -> RetryDecision:
        """Classify an exception raised by call()."""
        return classify_sdk_error(_sdk, exc, secret=self._api_key)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

