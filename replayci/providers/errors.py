"""Errors and classification shared by the live providers (no SDK imports here)."""

from __future__ import annotations

import email.utils
import inspect
import json
import math
import time
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from ..core.memo import Memo
from .base import CallResult, RetryDecision
from .translate import to_wire

REDACTED = "[REDACTED]"
_SNIPPET = 200


class InvalidResponseError(Exception):
    """The provider answered something that is not a JSON object of the expected kind."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


# Shorter keys are not searched for: they would match ordinary text.
MIN_SCRUBBED_KEY = 4


# A key quoted in JSON that is itself quoted (a model's JSON text in a string argument, whose
# arguments text quotes it again) is escaped once per level: this many levels are searched for.
_JSON_LEVELS = 3


# secret -> its spellings, and the same as JSON escapes them: a capture scrubs every exchange
# with the same few credentials.
_spelled: Memo = Memo(256)
_escaped: Memo = Memo(256)


def spellings(secret: str | None) -> tuple[str, ...]:
    """The ways *secret* can appear in text (none for one too short to be a key), longest first."""
    return _spellings(secret)


def _spellings(secret: str | None) -> tuple[str, ...]:
    got = _spelled.get(secret)
    return got if got is not None else _spelled.put(secret, _spell(secret))


def _spell(secret: str | None) -> tuple[str, ...]:
    """The ways *secret* can appear in text: as set (trailing whitespace or a newline removed,
    as a header carries it), JSON-escaped (quoted up to _JSON_LEVELS times), and \\u-escaped
    (lower- and upper-case hex)."""
    key = (secret or "").strip()
    if len(key) < MIN_SCRUBBED_KEY:
        return ()
    forms = {key, "".join(f"\\u{ord(c):04x}" for c in key), "".join(f"\\u{ord(c):04X}" for c in key)}
    for ascii_only in (True, False):
        quoted = key
        for _ in range(_JSON_LEVELS):
            quoted = json.dumps(quoted, ensure_ascii=ascii_only)[1:-1]
            forms.add(quoted)
    if secret is not None and secret != key:
        forms.add(secret)
    return tuple(sorted(forms, key=len, reverse=True))  # the longest first: no partial leftovers


def appears_in(text: str, secret: str | None) -> bool:
    """Whether `scrub` could find *secret* in a value whose JSON (ensure_ascii=False) is *text*:
    JSON escapes a string character by character, so a spelling inside one of the value's
    strings or property names is in *text* escaped."""
    forms = _escaped.get(secret)
    if forms is None:
        forms = _escaped.put(secret, tuple(json.encoder.encode_basestring(f)[1:-1] for f in _spellings(secret)))
    return any(form in text for form in forms)


def _scrub_text(text: str, forms: tuple[str, ...]) -> str:
    for form in forms:
        if form in text:
            text = text.replace(form, REDACTED)
    return text


def scrub(value: Any, secret: str | None) -> Any:
    """*value* with every spelling of *secret* replaced in its strings and property names
    (the one scrub: messages, answers, recordings, reports and captures all go through it)."""
    forms = _spellings(secret)
    if not forms:
        return value
    return _scrub_with(value, forms)


def _scrub_with(value: Any, forms: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return _scrub_text(value, forms)
    if isinstance(value, list):
        return [_scrub_with(v, forms) for v in value]
    if isinstance(value, dict):
        return {(_scrub_text(k, forms) if isinstance(k, str) else k): _scrub_with(v, forms)
                for k, v in value.items()}
    return value


def redact(text: str, secret: str | None) -> str:
    """*text* with every spelling of *secret* replaced (API keys never reach a message)."""
    return scrub(text, secret)


def snippet(text: str, limit: int = _SNIPPET) -> str:
    """A one-line, bounded excerpt of a response body for an error message."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def parse_retry_after(
    headers: Mapping[str, str] | None, *, now: float | None = None
) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP-date)."""
    if headers is None:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue
        if math.isnan(seconds):
            continue
        return max(seconds, 0.0)
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        parsed = email.utils.parsedate_tz(value)
        if parsed is None:
            return None
        when = email.utils.mktime_tz(parsed)
    except (TypeError, ValueError, OverflowError):
        return None
    return max(when - (time.time() if now is None else now), 0.0)


def decode_payload(text: str, *, status: int, content_type: str | None) -> dict:
    """The JSON object in a successful response body, or InvalidResponseError."""
    try:
        payload = json.loads(text)
    except ValueError:
        ct = content_type or "no content type"
        raise InvalidResponseError(
            f"the provider answered HTTP {status} with a body that is not JSON ({ct}): "
            f"{snippet(text)!r}",
            status=status,
        ) from None
    if not isinstance(payload, dict):
        raise InvalidResponseError(
            f"the provider answered HTTP {status} with JSON that is not an object: "
            f"{snippet(text)!r}",
            status=status,
        )
    return payload


def provider_message(exc: Any) -> str:
    """The provider's own error message from an SDK status error's body, else a short excerpt."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        # openai keeps body["error"]'s content; anthropic keeps the whole
        # {"type": "error", "error": {...}}.
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str) and err["message"]:
            return err["message"]
    if isinstance(body, str) and body.strip():
        return snippet(body)
    status = getattr(exc, "status_code", None)
    return f"HTTP {status}" if status is not None else type(exc).__name__


def _error_codes(exc: Any) -> set[str]:
    """Machine-readable codes in an error body (OpenAI code, Anthropic details.error_code)."""
    body = getattr(exc, "body", None)
    err = body.get("error", body) if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return set()
    details = err.get("details")
    candidates = (err.get("code"), details.get("error_code") if isinstance(details, dict) else None)
    return {c for c in candidates if isinstance(c, str)}


# A 429 that no amount of waiting fixes: the account is out of quota / over its spend limit.
_QUOTA_CODES = frozenset({"insufficient_quota", "enforced_spend_limit_reached"})


def classify_sdk_error(sdk: ModuleType, exc: BaseException, *, secret: str | None) -> RetryDecision:
    """Classify an exception raised by an openai or anthropic SDK call (same class names)."""
    decision = _classify(sdk, exc)
    return RetryDecision(
        decision.retry,
        decision.kind,
        decision.status,
        decision.retry_after,
        redact(decision.message, secret),
    )


def _classify(sdk: ModuleType, exc: BaseException) -> RetryDecision:
    if isinstance(exc, sdk.APIConnectionError) and isinstance(exc.__cause__, InvalidResponseError):
        exc = exc.__cause__  # refused while it was received (providers/http.py): not the network's fault
    if isinstance(exc, InvalidResponseError):
        return RetryDecision(False, "invalid_response", exc.status, None, exc.message)
    if isinstance(exc, json.JSONDecodeError):
        # Only reachable if a future code path lets the SDK parse a body itself.
        return RetryDecision(
            False, "invalid_response", None, None, f"the provider's body is not JSON: {exc}"
        )
    # APITimeoutError subclasses APIConnectionError: test it first.
    if isinstance(exc, sdk.APITimeoutError):
        after = getattr(exc, "replayci_timeout_s", None)
        message = (
            f"no response within {after:g} s" if after is not None else "the request timed out"
        )
        return RetryDecision(True, "timeout", None, None, message)
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        detail = f": {cause}" if cause is not None and str(cause) else ""
        return RetryDecision(True, "connection", None, None, f"connection error{detail}")
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        message = provider_message(exc)
        retry_after = parse_retry_after(exc.response.headers)
        if status == 429:
            return RetryDecision(
                not (_error_codes(exc) & _QUOTA_CODES), "429", status, retry_after, message
            )
        if status >= 500:
            return RetryDecision(True, "5xx", status, retry_after, message)
        if status == 408:
            return RetryDecision(True, "timeout", status, retry_after, message)
        return RetryDecision(False, "client", status, None, message)
    if isinstance(exc, sdk.APIResponseValidationError):
        return RetryDecision(False, "invalid_response", exc.status_code, None, str(exc))
    # Anything else (a translation error, a bad parameter the SDK refused) is ours, not the
    # network's: retrying cannot help.
    return RetryDecision(False, "client", None, None, f"{type(exc).__name__}: {exc}")


def read_stream(http: Any) -> str:
    """The text of a streamed HTTP body, as far as it came: a connection cut mid-stream ends it
    there (the format's reader then finds no end marker: stream_incomplete), never a retry."""
    parts: list[str] = []
    try:
        for text in http.iter_text():
            parts.append(text)
    except Exception:  # noqa: BLE001 - any transport error ends the stream where it stands
        if not parts:
            raise
    finally:
        http.close()
    return "".join(parts)


def call_raw(sdk: ModuleType, create: Any, kwargs: dict, *, timeout_s: float, shape_key: str,
             what: str, stream: dict | None = None) -> CallResult:
    """One SDK call through `with_raw_response`, the body parsed here.

    Parsing the raw body ourselves turns a non-JSON body into InvalidResponseError, where the
    SDKs would raise a bare JSONDecodeError or even return a str. *shape_key* is the list a
    valid answer has (choices, content, output); *what* names that answer in messages. With
    *stream* (the SDK's stream arguments) the call streams and returns the stream's text, for the
    format's stream reader.
    """
    start = time.perf_counter()
    try:
        raw = create(**kwargs, timeout=timeout_s, **(stream or {}))
    except sdk.APITimeoutError as exc:
        exc.replayci_timeout_s = timeout_s  # type: ignore[attr-defined]
        raise
    http = raw.http_response
    if stream is not None:
        text = read_stream(http)
        return CallResult(text, round((time.perf_counter() - start) * 1000), streamed=True)
    payload = decode_payload(http.text, status=http.status_code,
                             content_type=http.headers.get("content-type"))
    latency_ms = round((time.perf_counter() - start) * 1000)
    check_shape(payload, shape_key, what, http.status_code)
    return CallResult(payload=payload, latency_ms=latency_ms)


def check_shape(payload: dict, shape_key: str, what: str, status: int) -> None:
    """InvalidResponseError unless *payload* holds the list *shape_key* a valid answer has."""
    if isinstance(payload.get(shape_key), list):
        return
    err = payload.get("error")
    if isinstance(err, dict) and err.get("message"):
        # Some OpenAI-compatible gateways report errors inside a 200.
        message = f"the provider answered HTTP {status} with an error: {err['message']}"
    else:
        message = (f"the provider answered HTTP {status} with JSON that is not {what} "
                   f"(keys: {', '.join(sorted(payload)[:8])})")
    raise InvalidResponseError(message, status=status)


# SDK call options that a request document must never set through create()'s kwargs.
SDK_OPTIONS = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})


class StainlessProvider:
    """A provider on an OpenAI-style SDK (openai, anthropic: the same client and error classes):
    one attempt per call, the SDK's retries off, the body read raw."""

    name = ""
    wire = ""
    shape_key = ""  # the list a valid answer has
    what = ""  # the answer, in messages
    stream_kwargs: dict = {"stream": True}  # what create() takes to stream

    def __init__(self, sdk: ModuleType, client: Any, create: Any, *, api_key: str, stream: bool) -> None:
        self._sdk, self._client, self._api_key, self.stream = sdk, client, api_key, stream
        self._create = create.with_raw_response.create
        # The parameters this SDK's create() names (the rest travel in extra_body).
        self._accepted = frozenset(inspect.signature(create.create).parameters) - SDK_OPTIONS

    def call(self, request: dict, *, model: str, timeout_s: float) -> CallResult:
        """Send *request* once and return the answer as the provider sent it."""
        kwargs = to_wire(request, self.wire, model, accepted=self._accepted)
        return call_raw(self._sdk, self._create, kwargs, timeout_s=timeout_s, shape_key=self.shape_key,
                        what=self.what, stream=self.stream_kwargs if self.stream else None)

    def classify(self, exc: BaseException) -> RetryDecision:
        """Classify an exception raised by call()."""
        return classify_sdk_error(self._sdk, exc, secret=self._api_key)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()
