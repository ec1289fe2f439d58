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
    """A successful provider call: the raw payload and its latency.

    The payload is the body as a plain dict, or for a streamed call the stream as it came: its
    text (server-sent events, NDJSON) or the list of its chunks, for the format's stream reader.
    """

    payload: Any
    latency_ms: int
    streamed: bool = False


class Provider(Protocol):
    name: str
    wire: str  # the format of its payloads and streams (a formats/ module's NAME)

    def call(self, request: dict, *, model: str, timeout_s: float) -> CallResult:
        """Send *request* (the neutral form) once; raise on any failure. Never retries."""

    def classify(self, exc: BaseException) -> RetryDecision:
        """Classify an exception raised by call()."""

    def close(self) -> None: ...


def as_plain(obj: Any) -> Any:
    """An SDK response object as plain JSON-able data."""
    dump = getattr(obj, "model_dump", None)
    if dump is not None:
        return dump(mode="json", exclude_none=False)
    return obj
