"""Anthropic's Message Batches over the official SDK: `messages.batches.create` with one
`{custom_id, params}` per request, `retrieve` until `processing_status` is `ended`, the results
read as the JSONL stream of `results`, or `cancel`."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic as _sdk

from .. import http
from ..errors import classify_sdk_error
from ..translate import to_wire
from . import MAX_RESULTS_BYTES, BatchRequest, BatchResult, BatchState, field_of, read_results, text_of

_NOT_RUN = {"canceled": "the request was canceled before it ran",
            "expired": "the batch expired (24 hours) before the request ran"}


class AnthropicBatch:
    """One API key's Message Batches."""

    def __init__(self, *, api_key: str, base_url: str | None, wire: str, endpoint: None = None) -> None:
        self._key, self.wire = api_key, wire
        # max_retries=0: a failed poll is simply asked again at the next poll.
        self._client = _sdk.Anthropic(api_key=api_key, base_url=base_url, max_retries=0,
                                      http_client=http.client(_sdk, max_body_bytes=MAX_RESULTS_BYTES))

    def submit(self, requests: list[BatchRequest], *, metadata: dict[str, str]) -> BatchState:
        entries = [{"custom_id": r.custom_id, "params": to_wire(r.request, self.wire, r.model)} for r in requests]
        return state_of(self._client.messages.batches.create(requests=entries))

    def poll(self, batch_id: str) -> BatchState:
        return state_of(self._client.messages.batches.retrieve(batch_id))

    def cancel(self, batch_id: str) -> BatchState:
        return state_of(self._client.messages.batches.cancel(batch_id))

    def results(self, batch_id: str) -> Iterator[BatchResult]:
        """The batch's result lines, as the SDK streams them."""
        # Read line by line here, not by the SDK's decoder: one line it cannot read would end the rest.
        with self._client.messages.batches.with_streaming_response.results(batch_id) as response:
            yield from read_results(response.iter_lines(), result_of)

    def classify(self, exc: BaseException):
        return classify_sdk_error(_sdk, exc, secret=self._key)

    def close(self) -> None:
        self._client.close()


def client(**kw: Any) -> AnthropicBatch:
    return AnthropicBatch(**kw)


def state_of(batch: Any) -> BatchState:
    """A MessageBatch's processing status and request counts."""
    c = batch.request_counts
    failed = c.errored + c.canceled + c.expired
    total = c.processing + c.succeeded + failed
    return BatchState(batch.id, batch.processing_status, batch.processing_status == "ended",
                      total - c.processing, failed, total)


def result_of(line: dict) -> BatchResult:
    """One result line: `{custom_id, result: {type: succeeded|errored|canceled|expired, ...}}`."""
    custom_id = str(line.get("custom_id"))
    result = field_of(line, "result")
    kind = text_of(result.get("type"))
    if kind == "succeeded" and isinstance(result.get("message"), dict):
        return BatchResult(custom_id, "succeeded", payload=result["message"], status=200)
    if kind in _NOT_RUN:
        return BatchResult(custom_id, kind, message=_NOT_RUN[kind])
    body = field_of(result, "error")
    err = field_of(body, "error") or body
    etype, message = text_of(err.get("type")), text_of(err.get("message"))
    text = f"{etype}: {message}" if etype and message else (message or etype or f"the result was {kind!r}")
    return BatchResult(custom_id, "errored", message=text)
