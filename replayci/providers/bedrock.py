"""The Bedrock provider: Converse (and ConverseStream) with boto3 (`replayci[bedrock]`).

Credentials are AWS's, found by boto3 as always (environment, profile, SSO, instance role);
`--base-url` is the endpoint URL (a VPC endpoint, a proxy, a test server).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import boto3 as _sdk
import httpx2
from botocore import exceptions as _errors
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.parsers import ResponseParserError

from . import http
from .base import CallResult, RetryDecision
from .errors import InvalidResponseError, parse_retry_after, redact
from .translate import to_wire

_DEFAULT_REGION = "us-east-1"


def find_credentials(environ: Mapping[str, str]) -> str | None:
    """The AWS secret access key boto3 would sign with, or None when it finds no credentials."""
    if environ.get("AWS_ACCESS_KEY_ID") and environ.get("AWS_SECRET_ACCESS_KEY"):
        return environ["AWS_SECRET_ACCESS_KEY"]
    credentials = _sdk.session.Session().get_credentials()
    return credentials.get_frozen_credentials().secret_key if credentials is not None else None


class BedrockProvider:
    """Sends Converse requests with boto3; one attempt per call, no SDK retries."""

    name = "bedrock"
    wire = "bedrock"

    def __init__(self, *, api_key: str, base_url: str | None = None, stream: bool = False) -> None:
        self._secret, self._base_url, self.stream = api_key, base_url, stream
        self._session = _sdk.session.Session()
        self._clients: dict[float, Any] = {}  # by timeout: botocore sets timeouts per client
        self._lock = threading.Lock()
        self._sender = _Sender(_CONNECTIONS)

    def client(self, timeout_s: float) -> Any:
        """The bedrock-runtime client with this timeout (made once, shared by threads)."""
        with self._lock:
            if timeout_s not in self._clients:
                # total_max_attempts=1: the engine's retry policy is the only one.
                config = Config(retries={"total_max_attempts": 1, "mode": "standard"}, connect_timeout=timeout_s,
                                read_timeout=timeout_s, max_pool_connections=_CONNECTIONS)
                client = self._session.client(
                    "bedrock-runtime", endpoint_url=self._base_url,
                    region_name=self._session.region_name or _DEFAULT_REGION, config=config)
                client.meta.events.register("before-send.bedrock-runtime", self._sender.for_timeout(timeout_s))
                self._clients[timeout_s] = client
            return self._clients[timeout_s]

    def call(self, request: dict, *, model: str, timeout_s: float) -> CallResult:
        """Send *request* once and return the answer as the provider sent it (a stream: its events)."""
        client = self.client(timeout_s)
        operation = "ConverseStream" if self.stream else "Converse"
        accepted = client.meta.service_model.operation_model(operation).input_shape.members
        kwargs = to_wire(request, self.wire, model)
        kwargs.pop("modelId", None)
        extra = {k: kwargs.pop(k) for k in list(kwargs) if k not in accepted and k not in ("model", "extra_body")}
        extra.update(kwargs.pop("extra_body", {}))
        if extra:  # what Converse does not name goes to the model as it is
            kwargs["additionalModelRequestFields"] = {**kwargs.get("additionalModelRequestFields", {}), **extra}
        kwargs["modelId"] = kwargs.pop("model")
        start = time.perf_counter()
        try:
            if self.stream:
                events = _events(client.converse_stream(**kwargs)["stream"])
                return CallResult(events, round((time.perf_counter() - start) * 1000), streamed=True)
            answer = client.converse(**kwargs)
        except (_errors.ReadTimeoutError, _errors.ConnectTimeoutError, httpx2.TimeoutException) as exc:
            exc.replayci_timeout_s = timeout_s  # type: ignore[attr-defined]
            raise
        answer.pop("ResponseMetadata", None)
        if not isinstance(answer.get("output"), dict):
            raise InvalidResponseError("the provider answered HTTP 200 with JSON that is not a Converse response "
                                       f"(keys: {', '.join(sorted(answer)[:8])})", status=200)
        return CallResult(answer, round((time.perf_counter() - start) * 1000))

    def classify(self, exc: BaseException) -> RetryDecision:
        """Classify an exception raised by call()."""
        d = _classify(exc)
        return RetryDecision(d.retry, d.kind, d.status, d.retry_after, redact(d.message, self._secret))

    def close(self) -> None:
        """Close the clients' connection pools."""
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()
        self._sender.close()


_CONNECTIONS = 64  # connections kept per provider (the engine's jobs share them)


class _Sender:
    """Sends the requests boto3 signed through the guarded transport (botocore's before-send
    event answers them): boto3 still serializes, signs and parses, and the call gets the
    OpenAI transport's rules (a whole-call deadline, no redirect to another host, a bounded
    body) that urllib3's per-read timeouts cannot give."""

    def __init__(self, connections: int) -> None:
        limits = httpx2.Limits(max_connections=connections, max_keepalive_connections=connections)
        # botocore follows no redirect: a 3xx is the answer (one to another host is refused).
        self._client = httpx2.Client(transport=http.GuardedTransport(limits), follow_redirects=False)

    def for_timeout(self, timeout_s: float) -> Any:
        """The before-send handler of a client whose calls have *timeout_s*."""
        def send(request: Any, **_: Any) -> AWSResponse:
            body = request.body
            sent = self._client.build_request(request.method, request.url, headers=list(request.headers.items()),
                                              content=body.read() if hasattr(body, "read") else body,
                                              timeout=timeout_s)
            response = self._client.send(sent, stream=True)
            return AWSResponse(request.url, response.status_code, dict(response.headers), _Body(response))

        return send

    def close(self) -> None:
        self._client.close()


class _Body:
    """An answer's body as botocore reads it (stream() for its content and event streams)."""

    def __init__(self, response: httpx2.Response) -> None:
        self._response = response

    def stream(self, **_: Any) -> Any:
        try:
            yield from self._response.iter_raw()
        finally:
            self._response.close()

    def read(self, amt: int | None = None) -> bytes:
        return b"".join(self.stream())

    def close(self) -> None:
        self._response.close()


def _events(stream: Any) -> list[dict]:
    """ConverseStream's events, as far as they came: a connection cut mid-stream ends them there
    (stream_incomplete), never a retry; an exception event is the call's error."""
    events: list[dict] = []
    try:
        for event in stream:
            events.append(event)
    except Exception as exc:  # noqa: BLE001 - any transport error (urllib3's too) ends the stream there
        if not events or isinstance(exc, _errors.ClientError):
            raise
    return events


def _classify(exc: BaseException) -> RetryDecision:
    if isinstance(exc, InvalidResponseError):
        return RetryDecision(False, "invalid_response", exc.status, None, exc.message)
    if isinstance(exc, _errors.ClientError):
        error, meta = exc.response.get("Error", {}), exc.response.get("ResponseMetadata", {})
        status = meta.get("HTTPStatusCode") or (429 if "hrottl" in str(error.get("Code")) else None)
        message = error.get("Message") or error.get("Code") or str(exc)
        retry_after = parse_retry_after(meta.get("HTTPHeaders"))
        if status == 429:
            return RetryDecision(True, "429", status, retry_after, message)
        if status is not None and status >= 500:
            return RetryDecision(True, "5xx", status, None, message)
        if status == 408:
            return RetryDecision(True, "timeout", status, None, message)
        return RetryDecision(False, "client", status, None, message)
    if isinstance(exc, (_errors.ReadTimeoutError, _errors.ConnectTimeoutError, httpx2.TimeoutException)):
        after = getattr(exc, "replayci_timeout_s", None)
        message = f"no response within {after:g} s" if after is not None else "the request timed out"
        return RetryDecision(True, "timeout", None, None, message)
    if isinstance(exc, (_errors.HTTPClientError, _errors.ConnectionError, httpx2.TransportError)):
        return RetryDecision(True, "connection", None, None, f"connection error: {exc}")
    if isinstance(exc, ResponseParserError):
        return RetryDecision(False, "invalid_response", 200, None, f"the provider's body is not a Converse "
                             f"response: {exc}")
    return RetryDecision(False, "client", None, None, f"{type(exc).__name__}: {exc}")
