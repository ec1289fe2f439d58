"""What every live provider offers the engine."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class RetryDecision:
    """How the engine should treat a failed call.

    kind is one of "429", "5xx", "timeout", "connection", "client" (4xx other than 429,
    never retried) or "invalid_response" (the provider answered something unparseable).
    """

    retry: bool
    kind: str
    status: int | None = None
    retry_after: float | None = None
    message: str = ""


@dataclass(frozen=True)
class CallResult:
    """A successful provider call: the raw payload (a plain dict) and its latency."""

    payload: dict
    latency_ms: int


class Provider(Protocol):
    name: str

    def call(self, request: dict, *, model: str, timeout_s: float) -> CallResult:
        """Send *request* (OpenAI form) once; raise on any failure. Never retries."""

    def classify(self, exc: BaseException) -> RetryDecision:
        """Classify an exception raised by call()."""

    def close(self) -> None: ...


def as_plain(obj: Any) -> Any:
    """An SDK response object as plain JSON-able data."""
    dump = getattr(obj, "model_dump", None)
    if dump is not None:
        return dump(mode="json", exclude_none=False)
    return obj
