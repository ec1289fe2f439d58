"""The Gemini provider: `generateContent` with the official google-genai SDK (`replayci[gemini]`)."""

from __future__ import annotations

import time
from typing import Any

from google import genai as _sdk
from google.genai import errors as _errors
from google.genai import types as _types

from ..formats import TranslationError
from . import http
from .base import CallResult, RetryDecision
from .errors import InvalidResponseError, check_shape, decode_payload, parse_retry_after, redact, snippet
from .translate import to_wire

# GenerateContentConfig's fields by their REST names (systemInstruction, toolConfig, maxOutputTokens, ...).
_CONFIG_FIELDS = frozenset(
    name for field, info in _types.GenerateContentConfig.model_fields.items()
    for name in (field, info.alias) if name and field not in ("http_options", "should_return_http_response"))


def _exception_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


class GeminiProvider:
    """Sends generateContent requests with the official SDK; one attempt per call, no SDK retries."""

    name = "gemini"
    wire = "gemini"

    def __init__(self, *, api_key: str, base_url: str | None = None, stream: bool = False) -> None:
        self._api_key, self.stream = api_key, stream
        # attempts=1: the engine's retry policy is the only one. The SDK's own client, on the
        # guarded transport (the call's deadline, same-host redirects, a bounded body).
        options = _types.HttpOptions(base_url=base_url, retry_options=_types.HttpRetryOptions(attempts=1),
                                     client_args={"transport": http.GuardedTransport()})
        self._client = _sdk.Client(api_key=api_key, http_options=options)

    def config(self, body: dict, timeout_s: float, *, raw: bool) -> _types.GenerateContentConfig:
        """The SDK's config for a generateContent body (all but its contents); parameters the SDK
        does not name travel in the request body as they are."""
        settings = {**body.pop("generationConfig", {}), **body}
        extra = {k: settings.pop(k) for k in list(settings) if k not in _CONFIG_FIELDS}
        options = _types.HttpOptions(timeout=max(1, round(timeout_s * 1000)), extra_body=extra or None)
        try:
            return _types.GenerateContentConfig.model_validate(
                {**settings, "http_options": options, "should_return_http_response": raw or None})
        except ValueError as exc:  # pydantic's ValidationError: a request the SDK cannot express
            raise TranslationError(f"the request cannot be sent with google-genai: {snippet(str(exc))}") from None

    def call(self, request: dict, *, model: str, timeout_s: float) -> CallResult:
        """Send *request* once and return the answer as the provider sent it (a stream: its chunks)."""
        try:
            return self._call(request, model=model, timeout_s=timeout_s)
        except Exception as exc:
            if "TimeoutException" in _exception_names(exc):
                exc.replayci_timeout_s = timeout_s  # type: ignore[attr-defined]
            raise

    def _call(self, request: dict, *, model: str, timeout_s: float) -> CallResult:
        body = to_wire(request, self.wire, model)
        body.pop("model")
        contents = body.pop("contents")
        start = time.perf_counter()
        models = self._client.models
        if self.stream:
            chunks = self._chunks(models.generate_content_stream(
                model=model, contents=contents, config=self.config(body, timeout_s, raw=False)))
            return CallResult(chunks, round((time.perf_counter() - start) * 1000), streamed=True)
        answer = models.generate_content(model=model, contents=contents, config=self.config(body, timeout_s, raw=True))
        http = answer.sdk_http_response
        text = http.body if isinstance(http.body, str) else ""
        payload = decode_payload(text, status=200, content_type=(http.headers or {}).get("content-type"))
        check_shape(payload, "candidates", "a GenerateContentResponse", 200)
        return CallResult(payload, round((time.perf_counter() - start) * 1000))

    @staticmethod
    def _chunks(stream: Any) -> list[dict]:
        """The stream's chunks as the API sent them (camelCase JSON), as far as it came: a
        connection cut mid-stream ends it there (stream_incomplete), never a retry."""
        chunks: list[dict] = []
        try:
            for chunk in stream:
                chunks.append(chunk.model_dump(mode="json", by_alias=True, exclude_none=True,
                                               exclude={"sdk_http_response", "automatic_function_calling_history"}))
        except Exception as exc:  # noqa: BLE001 - see the docstring
            if not chunks or isinstance(exc, (_errors.APIError, ValueError)):
                raise
        return chunks

    def classify(self, exc: BaseException) -> RetryDecision:
        """Classify an exception raised by call()."""
        d = _classify(exc)
        return RetryDecision(d.retry, d.kind, d.status, d.retry_after, redact(d.message, self._api_key))

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()


def _retry_delay(exc: _errors.APIError) -> float | None:
    """Seconds to wait: Retry-After, else the google.rpc.RetryInfo `retryDelay` ("19s") in the details."""
    response = getattr(exc, "response", None)
    after = parse_retry_after(getattr(response, "headers", None))
    if after is not None:
        return after
    details = exc.details.get("error", {}).get("details") if isinstance(exc.details, dict) else None
    for detail in details if isinstance(details, list) else ():
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(float(delay[:-1]), 0.0)
            except ValueError:
                return None
    return None


def _classify(exc: BaseException) -> RetryDecision:
    if isinstance(exc, InvalidResponseError):
        return RetryDecision(False, "invalid_response", exc.status, None, exc.message)
    if isinstance(exc, _errors.APIError):
        status, message = exc.code, exc.message or f"HTTP {exc.code} {exc.status or ''}".strip()
        if status == 429:
            return RetryDecision(True, "429", status, _retry_delay(exc), message)
        if status >= 500:
            return RetryDecision(True, "5xx", status, None, message)
        if status == 408:
            return RetryDecision(True, "timeout", status, None, message)
        return RetryDecision(False, "client", status, None, message)
    names = _exception_names(exc)
    if "TimeoutException" in names:  # the HTTP client's, whichever httpx the SDK runs on
        after = getattr(exc, "replayci_timeout_s", None)
        message = f"no response within {after:g} s" if after is not None else "the request timed out"
        return RetryDecision(True, "timeout", None, None, message)
    if names & {"TransportError", "NetworkError"}:
        cause = str(exc) or type(exc).__name__
        return RetryDecision(True, "connection", None, None, f"connection error: {cause}")
    if "JSONDecodeError" in names:
        return RetryDecision(False, "invalid_response", 200, None, f"the provider's body is not JSON: {exc}")
    return RetryDecision(False, "client", None, None, f"{type(exc).__name__}: {exc}")
