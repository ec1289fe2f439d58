"""The providers' batch APIs: OpenAI's Batch API (a JSONL file uploaded through the files API,
a batch on /v1/chat/completions or /v1/responses) and Anthropic's Message Batches.

One `BatchClient` per API, over its official SDK (imported only when a batch run starts):
`submit` a list of requests, `poll` a batch, read its `results`, `cancel` it. Everything above
this package sees plain values: `BatchRequest`, `BatchState`, `BatchResult`.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from ...core.errors import ConfigError
from ...core.jsonvalue import strict_loads
from ...core.provider_table import LIVE_PROVIDERS
from ...core.records import record

# wire format -> (the client module, the OpenAI batch endpoint; None for Anthropic)
_APIS = {
    "openai-chat": ("openai", "/v1/chat/completions"),
    "openai-responses": ("openai", "/v1/responses"),
    "anthropic": ("anthropic", None),
}

# A batch output file may hold many answers: it is read under this bound, not a single answer's.
MAX_RESULTS_BYTES = 2 * 1024 * 1024 * 1024


@record
class BatchRequest:
    """One request of a batch: its id, the request in the neutral form and the model it goes to."""

    custom_id: str
    request: dict
    model: str


@record
class BatchState:
    """Where a batch stands: the provider's status, whether it has ended, and its request counts."""

    id: str
    status: str  # the provider's own word (in_progress, finalizing, completed, ended, ...)
    ended: bool  # no request will change any more: the results can be read
    done: int  # requests answered (succeeded or failed)
    failed: int  # of which failed (errored, expired, cancelled)
    total: int
    reason: str | None = None  # why the batch as a whole failed, in the provider's words


@record
class BatchResult:
    """One request's outcome: the answer as the API sends it, or why there is none."""

    custom_id: str
    kind: str  # succeeded | errored | expired | canceled
    payload: dict | None = None  # the answer's body (a chat completion, a Responses object, a message)
    status: int | None = None  # the HTTP status the request got, when it ran
    message: str | None = None  # the provider's reason, when it did not succeed


class BatchClient(Protocol):
    """What the engine asks of a provider's batch API (each call once: no retry loop here)."""

    def submit(self, requests: list[BatchRequest], *, metadata: dict[str, str]) -> BatchState: ...

    def poll(self, batch_id: str) -> BatchState: ...

    def results(self, batch_id: str) -> Iterator[BatchResult]: ...

    def cancel(self, batch_id: str) -> BatchState: ...

    def classify(self, exc: BaseException): ...

    def close(self) -> None: ...


def read_results(lines: Iterable[str | bytes], result_of: Callable[[dict], BatchResult]) -> Iterator[BatchResult]:
    """The results of a results file's *lines*: a line that is blank, not JSON (NaN and nesting
    too deep included), not an object or of a shape *result_of* cannot read is passed over, so
    its request alone gets no answer (a provider's file is data: it never stops the run)."""
    for line in lines:
        if not line.strip():
            continue
        try:
            doc = strict_loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("custom_id"), str):
            continue
        try:
            yield result_of(doc)
        except (TypeError, AttributeError, ValueError):
            continue


def field_of(doc: Any, key: str) -> dict:
    """*doc*[*key*] when both are objects, else {} (a result line's parts, as sent)."""
    value = doc.get(key) if isinstance(doc, dict) else None
    return value if isinstance(value, dict) else {}


def text_of(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def supports_batch(provider: str) -> bool:
    """Whether *provider* has a batch API replayci drives."""
    entry = LIVE_PROVIDERS.get(provider)
    return entry is not None and entry.wire in _APIS


def refusal(provider: str) -> str:
    """Why --batch is refused for *provider*."""
    able = ", ".join(p for p in LIVE_PROVIDERS if supports_batch(p))
    if provider == "recorded":
        return f"--batch sends a live run through a provider's batch API: pass --provider with one of {able}"
    return f"--batch is not available for --provider {provider}: only {able} have a batch API replayci drives"


def batch_client(provider: str, *, api_key: str, base_url: str | None = None) -> BatchClient:
    """The batch client of *provider* (its SDK imported now)."""
    if not supports_batch(provider):
        raise ConfigError(refusal(provider))
    wire = LIVE_PROVIDERS[provider].wire
    module, endpoint = _APIS[wire]
    # why: the SDK is imported only when a batch run of this provider starts
    client_module = importlib.import_module(f"{__name__}.{module}")
    return client_module.client(api_key=api_key, base_url=base_url, wire=wire, endpoint=endpoint)
