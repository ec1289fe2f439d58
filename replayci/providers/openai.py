"""The OpenAI chat-completions provider (also any OpenAI-compatible endpoint via base_url)."""

from __future__ import annotations

import inspect

import openai as _sdk

from .base import CallResult, RetryDecision
from .errors import call_raw, classify_sdk_error
from .translate import to_openai

# SDK call options that a request document must never set through create()'s kwargs.
_SDK_OPTIONS = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})


class OpenAIProvider:
    """Sends OpenAI-form requests with the official SDK; one attempt per call, no SDK retries."""

    name = "openai"

    def __init__(self, *, api_key: str, base_url: str | None = None) -> None:
        self._api_key = api_key
        # max_retries=0: the engine's retry policy is the only one.
        self._client = _sdk.OpenAI(api_key=api_key, base_url=base_url, max_retries=0)
        create = self._client.chat.completions.create
        self._accepted = frozenset(inspect.signature(create).parameters) - _SDK_OPTIONS

    def call(self, request: dict, *, model: str, timeout_s: float) -> CallResult:
        """Send *request* once and return the completion as the provider sent it."""
        kwargs = to_openai(request, model, accepted=self._accepted)
        return call_raw(_sdk, self._client.chat.completions.with_raw_response.create, kwargs, timeout_s=timeout_s,
                        shape_key="choices", what="a chat completion")

    def classify(self, exc: BaseException) -> RetryDecision:
        """Classify an exception raised by call()."""
        return classify_sdk_error(_sdk, exc, secret=self._api_key)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

