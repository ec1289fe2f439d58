"""The providers' batch APIs, as tests/fakeserver.py speaks them.

OpenAI's Batch API: ``POST /v1/files`` (multipart, ``purpose=batch``, a JSONL file of
``{custom_id, method, url, body}`` lines), ``POST /v1/batches`` ``{input_file_id, endpoint,
completion_window}``, ``GET /v1/batches/ID``, ``POST /v1/batches/ID/cancel`` and
``GET /v1/files/ID/content`` for the output file (``{id, custom_id, response: {status_code,
request_id, body}, error: null}`` lines) and the error file (failed requests, and requests never
run: ``error: {code: batch_expired | batch_cancelled, message}``).

Anthropic's Message Batches: ``POST /v1/messages/batches`` ``{requests: [{custom_id, params}]}``,
``GET /v1/messages/batches/ID`` (``processing_status``, ``request_counts``, ``results_url`` once
ended), ``POST .../cancel`` and the results, a JSONL stream of ``{custom_id, result: {type:
succeeded | errored | canceled | expired, ...}}``.

Each request of a batch is answered at creation by the server's script or default (the same
actions as live calls, so a Router routes batch requests too) and recorded as a request to its
endpoint with an ``x-fake-batch`` header; the answers are revealed over the polls:
``polls_to_end`` polls see the batch running, the last of them ended. ``hold`` keeps every batch
running (nothing done) until it is cleared; ``expire`` (a function of a request's body) marks
requests the batch never gets to: the batch then ends ``expired``.
"""
from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import default as email_policy
from typing import Any

from fakewire import anthropic_error_body, openai_error_body, rand

_CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_OPENAI_ENDPOINTS = ("/v1/chat/completions", "/v1/responses")
_NOT_RUN = {"expired": ("batch_expired", "This request could not be executed before the completion window expired."),
            "canceled": ("batch_cancelled", "This request was cancelled before it could be executed.")}


def _iso(t: float | None) -> str | None:
    return None if t is None else time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(t))


@dataclass
class Outcome:
    """One request's fate: answered (HTTP status and body), or never run (expired, canceled)."""

    custom_id: str
    status: int | None = None
    model: str | None = None
    body: Any = None
    never: str | None = None  # expired | canceled


@dataclass
class FakeBatch:
    id: str
    api: str  # openai | anthropic
    endpoint: str
    outcomes: list[Outcome]
    input_file_id: str | None = None
    metadata: dict | None = None
    created: float = field(default_factory=time.time)
    polls: int = 0
    cancelled: bool = False
    cancelled_at_poll: int = 0  # the polls before the cancel: the next one sees the batch ended
    ended: float | None = None
    errors: list[dict] = field(default_factory=list)  # OpenAI validation errors: the batch failed
    output_file_id: str | None = None
    error_file_id: str | None = None

    @property
    def total(self) -> int:
        return len(self.outcomes)


class FakeBatches:
    """The batch endpoints of one FakeServer, with the knobs tests turn."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, FakeBatch] = {}
        self.polls_to_end = 2
        self.hold = False
        self.expire: Callable[[dict], bool] | None = None
        self.refuse: tuple[int, str] | None = None  # every create answered with this HTTP error
        self.poll_faults: list[int] = []  # the next polls answered with these HTTP errors, in turn
        self.invalid: str | None = None  # OpenAI: the input file fails validation with this message
        # The result lines as sent (OpenAI's output file, Anthropic's results stream) -> what is sent instead.
        self.mangle: Callable[[list[bytes]], list[bytes]] | None = None

    # ------------------------------------------------------------------ routing
    def handles(self, path: str) -> bool:
        return path in ("/v1/files", "/v1/batches", "/v1/messages/batches") or path.startswith(
            ("/v1/files/", "/v1/batches/", "/v1/messages/batches/"))

    def respond(self, req: Any) -> Any:
        path, method = req.path, req.method
        with self.lock:
            api = "anthropic" if path.startswith("/v1/messages") else "openai"
            if self.refuse is not None and method == "POST" and path in ("/v1/batches", "/v1/messages/batches"):
                return self._error(api, *self.refuse)
            if self.poll_faults and method == "GET" and re.fullmatch(r"/v1/(messages/)?batches/[^/]+", path):
                return self._error(api, self.poll_faults.pop(0), None)
            if path == "/v1/files" and method == "POST":
                return self._upload(req)
            if path == "/v1/batches" and method == "POST":
                return self._create_openai(req)
            if path == "/v1/messages/batches" and method == "POST":
                return self._create_anthropic(req)
            m = re.fullmatch(r"/v1/files/([^/]+)/content", path)
            if m and method == "GET":
                return self._file(m.group(1))
            m = re.fullmatch(r"/v1/(messages/)?batches/([^/]+)(/cancel|/results)?", path)
            if m is None:
                return self._missing("openai", path)
            api = "anthropic" if m.group(1) else "openai"
            batch = self.batches.get(m.group(2))
            if batch is None or batch.api != api:
                return self._missing(api, path)
            if m.group(3) == "/cancel" and method == "POST":
                batch.cancelled = batch.cancelled or batch.ended is None
                batch.cancelled_at_poll = batch.polls
            elif m.group(3) == "/results" and method == "GET" and api == "anthropic":
                return self._results(batch)
            elif m.group(3) is None and method == "GET":
                batch.polls += 1
            else:
                return self._missing(api, path)
            return self._json(self._object(batch))

    # ------------------------------------------------------------------ answers
    def _json(self, obj: Any, status: int = 200) -> Any:
        from fakeserver import Response

        return Response(status, json.dumps(obj).encode())

    def _missing(self, api: str, path: str) -> Any:
        return self._error(api, 404, f"Not found: {path}")

    def _error(self, api: str, status: int, message: str | None) -> Any:
        body = anthropic_error_body(status, message) if api == "anthropic" else openai_error_body(status, message)
        return self._json(body, status)

    def _answer(self, path: str, body: Any, batch_id: str, custom_id: str) -> Outcome:
        """One request of a batch answered as the live endpoint would answer it."""
        from fakeserver import RecordedRequest

        raw = json.dumps(body).encode()
        req = RecordedRequest("POST", path, {"x-fake-batch": batch_id, "x-fake-custom-id": custom_id},
                              body, raw, time.monotonic())
        self.server._record(req)
        try:
            if self.expire is not None and self.expire(body):
                return Outcome(custom_id, model=(body or {}).get("model"), never="expired")
            response = self.server.answer(req)
        finally:
            self.server._done()
        try:
            answer = json.loads(response.body or b"".join(response.chunks or ()))
        except ValueError:
            answer = None
        return Outcome(custom_id, response.status, body=answer, model=(body or {}).get("model"))

    # ------------------------------------------------------------------ progress
    def _done_count(self, b: FakeBatch) -> int:
        """How many requests the batch has processed by now (all once it has ended)."""
        if b.ended is not None:
            return sum(1 for o in b.outcomes if o.never is None)
        if self.hold or b.errors:
            return 0
        ran = [o for o in b.outcomes if o.never is None]
        return min(len(ran), math.ceil(len(ran) * b.polls / max(self.polls_to_end, 1)))

    def _settle(self, b: FakeBatch) -> None:
        """End the batch when it is due: every request run, or cancelled (the rest never run)."""
        if b.ended is not None:
            return
        done = self._done_count(b)
        if b.cancelled and b.polls > b.cancelled_at_poll or b.errors and b.polls >= 1:
            for o in b.outcomes[done:]:
                o.never = o.never or "canceled"
            self._end(b)
        elif not self.hold and b.polls >= self.polls_to_end:
            self._end(b)

    def _end(self, b: FakeBatch) -> None:
        b.ended = time.time()
        if b.api == "openai" and not b.errors:
            ok = [self._line(o) for o in b.outcomes if o.never is None and o.status == 200]
            bad = [self._line(o) for o in b.outcomes if not (o.never is None and o.status == 200)]
            b.output_file_id = self._store(ok) if ok else None
            b.error_file_id = self._store(bad) if bad else None

    def _status(self, b: FakeBatch) -> str:
        if b.api == "anthropic":
            if b.ended is not None:
                return "ended"
            return "canceling" if b.cancelled else "in_progress"
        if b.errors:
            return "failed" if b.ended is not None else "validating"
        if b.ended is None:
            return "cancelling" if b.cancelled else ("in_progress" if b.polls else "validating")
        if b.cancelled:
            return "cancelled"
        return "expired" if any(o.never == "expired" for o in b.outcomes) else "completed"

    def _object(self, b: FakeBatch) -> dict:
        self._settle(b)
        done = self._done_count(b)
        ran = [o for o in b.outcomes if o.never is None][:done]
        ok = sum(1 for o in ran if o.status == 200)
        if b.api == "anthropic":
            never = [o.never for o in b.outcomes if o.never] if b.ended is not None else []
            return {"id": b.id, "type": "message_batch", "processing_status": self._status(b),
                    "request_counts": {"processing": b.total - len(ran) - len(never), "succeeded": ok,
                                       "errored": len(ran) - ok, "canceled": never.count("canceled"),
                                       "expired": never.count("expired")},
                    "ended_at": _iso(b.ended), "created_at": _iso(b.created), "expires_at": _iso(b.created + 86400),
                    "archived_at": None, "cancel_initiated_at": _iso(b.created) if b.cancelled else None,
                    "results_url": f"{self.server.url}/v1/messages/batches/{b.id}/results" if b.ended else None}
        status = self._status(b)
        failed = len(ran) - ok + (sum(1 for o in b.outcomes if o.never) if b.ended is not None else 0)
        return {"id": b.id, "object": "batch", "endpoint": b.endpoint,
                "errors": {"object": "list", "data": b.errors} if b.errors else None,
                "input_file_id": b.input_file_id, "completion_window": "24h", "status": status,
                "output_file_id": b.output_file_id, "error_file_id": b.error_file_id,
                "created_at": int(b.created), "in_progress_at": int(b.created) if b.polls else None,
                "expires_at": int(b.created) + 86400, "finalizing_at": None,
                "completed_at": int(b.ended) if status == "completed" else None,
                "failed_at": int(b.ended) if status == "failed" else None,
                "expired_at": int(b.ended) if status == "expired" else None,
                "cancelling_at": int(b.created) if b.cancelled else None,
                "cancelled_at": int(b.ended) if status == "cancelled" else None,
                "request_counts": {"total": 0 if b.errors else b.total, "completed": ok, "failed": failed},
                "metadata": b.metadata}

    # ------------------------------------------------------------------ OpenAI
    def _upload(self, req: Any) -> Any:
        """POST /v1/files: a multipart form with `file` and `purpose`."""
        head = f"Content-Type: {req.headers.get('content-type', '')}\r\n\r\n".encode()
        form = BytesParser(policy=email_policy).parsebytes(head + req.raw)
        parts = {p.get_param("name", header="content-disposition"): p for p in form.iter_parts()}
        if "file" not in parts or "purpose" not in parts:
            return self._json(openai_error_body(400, "'file' and 'purpose' are required"), 400)
        content = parts["file"].get_payload(decode=True)
        purpose = parts["purpose"].get_payload(decode=True).decode()
        file_id = self._store_bytes(content)
        return self._json({"id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
                           "filename": parts["file"].get_filename(), "purpose": purpose, "status": "processed"})

    def _store_bytes(self, content: bytes) -> str:
        file_id = "file-" + rand(22)
        self.files[file_id] = content
        return file_id

    def _store(self, lines: list[dict]) -> str:
        # UTF-8 as it is, not escaped: a U+2028 in a model's text stays one character of one line.
        return self._store_bytes(b"".join(self._mangled([json.dumps(x, ensure_ascii=False).encode() + b"\n"
                                                         for x in lines])))

    def _mangled(self, lines: list[bytes]) -> list[bytes]:
        return self.mangle(lines) if self.mangle is not None else lines

    def _file(self, file_id: str) -> Any:
        from fakeserver import Response

        if file_id not in self.files:
            return self._missing("openai", f"/v1/files/{file_id}")
        return Response(200, self.files[file_id], "application/octet-stream")

    def _line(self, o: Outcome) -> dict:
        if o.never is not None:
            code, message = _NOT_RUN[o.never]
            return {"id": "batch_req_" + rand(24), "custom_id": o.custom_id, "response": None,
                    "error": {"code": code, "message": message}}
        return {"id": "batch_req_" + rand(24), "custom_id": o.custom_id,
                "response": {"status_code": o.status, "request_id": rand(32), "body": o.body}, "error": None}

    def _create_openai(self, req: Any) -> Any:
        body = req.body if isinstance(req.body, dict) else {}
        endpoint, file_id = body.get("endpoint"), body.get("input_file_id")
        if endpoint not in _OPENAI_ENDPOINTS or body.get("completion_window") != "24h":
            return self._json(openai_error_body(400, f"Invalid endpoint or completion_window: {endpoint!r}"), 400)
        if file_id not in self.files:
            return self._json(openai_error_body(400, f"No such File object: {file_id}"), 400)
        batch_id = "batch_" + rand(24)
        outcomes, errors, seen = [], [], set()
        for n, text in enumerate(self.files[file_id].decode().splitlines(), 1):
            line = json.loads(text)
            cid = line.get("custom_id")
            if line.get("method") != "POST" or line.get("url") != endpoint or not isinstance(line.get("body"), dict):
                errors.append({"code": "invalid_request", "message": "method, url or body is wrong", "line": n,
                               "param": None})
            elif outcomes and line["body"].get("model") != outcomes[0].model:
                errors.append({"code": "mismatched_model", "message": "All requests in a batch must use the same "
                               "model", "line": n, "param": "body.model"})
            elif cid in seen:
                errors.append({"code": "duplicate_custom_id", "message": f"The custom_id {cid} is not unique",
                               "line": n, "param": "custom_id"})
            else:
                seen.add(cid)
                outcomes.append(self._answer(endpoint, line["body"], batch_id, cid))
        if self.invalid is not None:
            errors.append({"code": "invalid_json_line", "message": self.invalid, "line": 1, "param": None})
        batch = FakeBatch(batch_id, "openai", endpoint, outcomes, file_id, body.get("metadata"), errors=errors)
        self.batches[batch_id] = batch
        return self._json(self._object(batch))

    # ------------------------------------------------------------------ Anthropic
    def _create_anthropic(self, req: Any) -> Any:
        requests = (req.body or {}).get("requests") if isinstance(req.body, dict) else None
        if not isinstance(requests, list) or not requests:
            return self._json(anthropic_error_body(400, "requests: Field required"), 400)
        ids = [r.get("custom_id") for r in requests]
        bad = [i for i in ids if not (isinstance(i, str) and _CUSTOM_ID.fullmatch(i))]
        if bad or len(set(ids)) != len(ids):
            why = f"custom_id {bad[0]!r} does not match ^[a-zA-Z0-9_-]{{1,64}}$" if bad else "custom_id must be unique"
            return self._json(anthropic_error_body(400, why), 400)
        batch_id = "msgbatch_" + rand(24)
        outcomes = [self._answer("/v1/messages", r.get("params"), batch_id, r["custom_id"]) for r in requests]
        batch = FakeBatch(batch_id, "anthropic", "/v1/messages", outcomes)
        self.batches[batch_id] = batch
        return self._json(self._object(batch))

    def _results(self, b: FakeBatch) -> Any:
        from fakeserver import Response

        if b.ended is None:
            return self._json(anthropic_error_body(400, f"Batch {b.id} is still in progress"), 400)
        lines = []
        for o in reversed(b.outcomes):  # results are not in request order
            if o.never is not None:
                result: dict = {"type": o.never}
            elif o.status == 200:
                result = {"type": "succeeded", "message": o.body}
            else:
                result = {"type": "errored", "error": o.body}
            lines.append(json.dumps({"custom_id": o.custom_id, "result": result}).encode() + b"\n")
        return Response(200, b"", "application/binary", chunks=tuple(self._mangled(lines)))
