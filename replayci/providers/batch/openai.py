"""OpenAI's Batch API over the official SDK: the requests as a JSONL file uploaded with
`files.create(purpose="batch")`, a batch created on it (`batches.create`), polled
(`batches.retrieve`), its output and error files read (`files.content`), or cancelled."""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai as _sdk

from .. import http
from ..errors import classify_sdk_error
from ..translate import to_wire
from . import MAX_RESULTS_BYTES, BatchRequest, BatchResult, BatchState, field_of, read_results, text_of

_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
# The error codes of requests a batch never ran.
_NOT_RUN = {"batch_expired": "expired", "batch_cancelled": "canceled"}


class OpenAIBatch:
    """One API key's batches on one endpoint (/v1/chat/completions or /v1/responses)."""

    def __init__(self, *, api_key: str, base_url: str | None, wire: str, endpoint: str) -> None:
        self._key, self.wire, self.endpoint = api_key, wire, endpoint
        # max_retries=0: a failed poll is simply asked again at the next poll.
        self._client = _sdk.OpenAI(api_key=api_key, base_url=base_url, max_retries=0,
                                   http_client=http.client(_sdk, max_body_bytes=MAX_RESULTS_BYTES))

    def input_file(self, requests: list[BatchRequest]) -> bytes:
        """The batch input file: one `{custom_id, method, url, body}` line per request."""
        lines = (json.dumps({"custom_id": r.custom_id, "method": "POST", "url": self.endpoint,
                             "body": to_wire(r.request, self.wire, r.model)}, ensure_ascii=False)
                 for r in requests)
        return ("\n".join(lines) + "\n").encode()

    def submit(self, requests: list[BatchRequest], *, metadata: dict[str, str]) -> BatchState:
        uploaded = self._client.files.create(file=("replayci-batch.jsonl", self.input_file(requests)),
                                             purpose="batch")
        batch = self._client.batches.create(input_file_id=uploaded.id, endpoint=self.endpoint,
                                            completion_window="24h", metadata=metadata)
        return state_of(batch)

    def poll(self, batch_id: str) -> BatchState:
        return state_of(self._client.batches.retrieve(batch_id))

    def cancel(self, batch_id: str) -> BatchState:
        return state_of(self._client.batches.cancel(batch_id))

    def results(self, batch_id: str) -> Iterator[BatchResult]:
        """Every line of the batch's output file, then of its error file."""
        batch = self._client.batches.retrieve(batch_id)
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            yield from read_results(self._client.files.content(file_id).content.splitlines(), result_of)

    def classify(self, exc: BaseException):
        return classify_sdk_error(_sdk, exc, secret=self._key)

    def close(self) -> None:
        self._client.close()


def client(**kw: Any) -> OpenAIBatch:
    return OpenAIBatch(**kw)


def state_of(batch: Any) -> BatchState:
    """A Batch object's status and request counts."""
    counts = batch.request_counts
    completed, failed, total = (counts.completed, counts.failed, counts.total) if counts is not None else (0, 0, 0)
    errors = getattr(batch.errors, "data", None) or []
    reason = "; ".join(dict.fromkeys(f"{e.code}: {e.message}" if e.code else str(e.message) for e in errors)) or None
    return BatchState(batch.id, batch.status, batch.status in _ENDED, completed + failed, failed, total, reason)


def result_of(line: dict) -> BatchResult:
    """One line of an output or error file: `{id, custom_id, response: {status_code, body}, error}`."""
    custom_id = str(line.get("custom_id"))
    error = line.get("error")
    response = field_of(line, "response")
    status = response.get("status_code") if type(response.get("status_code")) is int else None
    body = response.get("body")
    if isinstance(error, dict):
        code, text = text_of(error.get("code")), text_of(error.get("message")) or "no reason given"
        message = f"{code}: {text}" if code else text
        return BatchResult(custom_id, _NOT_RUN.get(code or "", "errored"), status=status, message=message)
    if status == 200 and isinstance(body, dict):
        return BatchResult(custom_id, "succeeded", payload=body, status=status)
    message = text_of(field_of(body, "error").get("message"))
    return BatchResult(custom_id, "errored", status=status,
                       message=message or f"the request failed with HTTP {status}")
