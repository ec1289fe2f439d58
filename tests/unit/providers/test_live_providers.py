"""Live providers through the real openai / anthropic SDKs against the fake server on 127.0.0.1.

Every fault the engine's retry loop must handle is injected by tests/fakeserver.py; the
SDKs are never mocked. Waits between attempts go through a recording fake ``sleep`` except
where a test measures a real one (with a Retry-After of a few hundred milliseconds).
"""

from __future__ import annotations

import email.utils
import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from fakeserver import OPENAI_PATH, Fault, FirstTool, Reply
from livecli import PATHS

from replayci import providers
from replayci.formats import normalize
from replayci.providers.base import RetryDecision
from replayci.providers.errors import InvalidResponseError, parse_retry_after
from replayci.providers.retry import CANCELLED, Outcome, RetryPolicy, call_with_policy, failure_document

KEYS = {
    "openai": "sk-proj-TESTKEY-0123456789abcdefDO-NOT-LEAK",
    "anthropic": "sk-ant-api03-TESTKEY-0123456789DO-NOT-LEAK",
}
MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-test-model"}

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
        },
    },
}
REQUEST = {
    "model": "gpt-4o-mini",
    "messages": [
        {"role": "system", "content": "You are a weather assistant. Use tools."},
        {"role": "user", "content": "What's the weather in Paris?"},
    ],
    "tools": [WEATHER],
    "tool_choice": "auto",
    "temperature": 0,
}

_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


@pytest.fixture(scope="module", autouse=True)
def offline():
    """Nothing may leave the machine: no proxies, no SDK env overrides, loopback sockets only."""
    real = socket.create_connection

    def loopback_only(address, *args, **kwargs):
        if address[0] not in _LOOPBACK:
            raise AssertionError(f"a test tried to connect to {address[0]!r}")
        return real(address, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        for var in (
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
            "OPENAI_BASE_URL",
            "ANTHROPIC_BASE_URL",
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "OPENAI_ORG_ID",
            "OPENAI_PROJECT_ID",
        ):
            mp.delenv(var, raising=False)
        mp.setenv("NO_PROXY", "127.0.0.1,localhost")
        mp.setattr(socket, "create_connection", loopback_only)
        yield


@pytest.fixture(scope="module", params=["openai", "anthropic"])
def name(request):
    return request.param


@pytest.fixture(scope="module")
def shared_provider(name, shared_server):
    # SDK clients take ~30 ms to build (TLS context): one per provider for the module.
    p = providers.create(name, api_key=KEYS[name], base_url=shared_server.base_url_for(name))
    yield p
    p.close()


@pytest.fixture
def provider(shared_provider, server):
    return shared_provider


class RecordingSleep:
    """A stand-in for time.sleep that records what it was asked to wait."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def run(
    provider, *, policy: RetryPolicy | None = None, sleep=None, request=REQUEST, **kw
) -> Outcome:
    return call_with_policy(
        provider,
        request,
        model=MODELS[provider.name],
        policy=policy or RetryPolicy(total_ms=2000),
        sleep=sleep or RecordingSleep(),
        **kw,
    )


def assert_paris(outcome: Outcome) -> None:
    assert outcome.error is None, outcome.error
    doc = normalize(outcome.payload)
    assert doc["success"] is True
    assert [(c["name"], c["arguments"]) for c in doc["tool_calls"]] == [
        ("get_weather", {"location": "Paris"})
    ]
    assert doc["stop_reason"] == "tool_calls"


def assert_no_key(provider, outcome: Outcome) -> None:
    key = KEYS[provider.name]
    assert outcome.error is not None
    assert key not in outcome.error.message
    assert key not in json.dumps(failure_document(outcome.error, outcome.attempts))


# ----------------------------------------------------------------------------- success


def test_tool_call_round_trip(provider, server):
    outcome = run(provider)
    assert_paris(outcome)
    assert outcome.attempts == 1 and outcome.sleeps == []
    assert outcome.latency_ms >= 0
    assert server.count(PATHS[provider.name]) == 1


def test_request_on_the_wire(name, provider, server):
    run(provider)
    (received,) = server.requests
    body = received.body
    assert received.api_key == KEYS[name]
    assert body["model"] == MODELS[name]  # the model argument wins over the request's
    assert body["temperature"] == 0
    assert "stream" not in body or body["stream"] is False
    if name == "openai":
        assert received.headers["authorization"] == f"Bearer {KEYS[name]}"
        assert body["messages"] == REQUEST["messages"]
        assert body["tools"] == [WEATHER] and body["tool_choice"] == "auto"
    else:
        # The 2.x SDK sends the key as a Bearer token, not x-api-key.
        assert received.headers["authorization"] == f"Bearer {KEYS[name]}"
        assert body["system"] == "You are a weather assistant. Use tools."
        assert body["messages"] == [{"role": "user", "content": "What's the weather in Paris?"}]
        assert body["tools"] == [
            {
                "name": "get_weather",
                "description": "Current weather for a city",
                "input_schema": WEATHER["function"]["parameters"],
            }
        ]
        assert body["tool_choice"] == {"type": "auto"}
        assert body["max_tokens"] == 1024


def test_sdk_headers_show_no_sdk_retry(provider, server):
    run(provider)
    assert server.requests[0].headers.get("x-stainless-retry-count", "0") == "0"


def test_several_tool_calls_and_text(provider, server):
    server.script(
        [
            Reply.tool_calls(
                [("get_weather", {"location": "Paris"}), ("get_weather", {"location": "Rome"})]
            ),
            Reply.plain_text("It is sunny."),
        ]
    )
    doc = normalize(run(provider).payload)
    assert [c["arguments"]["location"] for c in doc["tool_calls"]] == ["Paris", "Rome"]
    assert len({c["id"] for c in doc["tool_calls"]}) == 2
    doc = normalize(run(provider).payload)
    assert (
        doc["tool_calls"] == []
        and doc["content"] == "It is sunny."
        and doc["stop_reason"] == "stop"
    )
    assert doc["usage"]["input_tokens"] > 0 and doc["usage"]["output_tokens"] > 0


def test_unknown_openai_params_travel_in_the_body(server):
    p = providers.create("openai", api_key=KEYS["openai"], base_url=server.openai_base_url)
    try:
        run(p, request={**REQUEST, "top_k": 5, "seed": 1, "stream": True})
    finally:
        p.close()
    body = server.requests[0].body
    assert body["top_k"] == 5 and body["seed"] == 1 and "stream" not in body


def test_anthropic_tool_results_on_the_wire(server):
    p = providers.create("anthropic", api_key=KEYS["anthropic"], base_url=server.anthropic_base_url)
    follow_up = {
        **REQUEST,
        "messages": REQUEST["messages"]
        + [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "toolu_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"location": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "toolu_1", "content": '{"temp_c": 21}'},
        ],
    }
    try:
        assert run(p, request=follow_up).error is None
    finally:
        p.close()
    messages = server.requests[0].body["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_weather",
                "input": {"location": "Paris"},
            }
        ],
    }
    assert messages[2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"temp_c": 21}'}],
    }


# ----------------------------------------------------------------------------- 429


def test_429_waits_retry_after_then_succeeds(provider, server):
    server.script([Fault.status(429, retry_after=1)])
    sleep = RecordingSleep()
    outcome = run(provider, sleep=sleep)
    assert_paris(outcome)
    assert outcome.attempts == 2 and server.count() == 2
    assert sleep.calls == [1.0] and outcome.sleeps == [1.0]


def test_429_retry_after_is_really_waited(provider, server):
    server.script([Fault.status(429, retry_after_ms=300)])
    started = time.monotonic()
    outcome = run(provider, sleep=time.sleep)
    assert_paris(outcome)
    first, second = server.requests
    assert second.time - first.time >= 0.29
    assert time.monotonic() - started >= 0.29


def test_429_retry_after_is_capped_by_max_sleep_seconds(provider, server):
    server.script([Fault.status(429, retry_after=120)])
    outcome = run(provider, policy=RetryPolicy(max_sleep_seconds=5))
    assert outcome.sleeps == [5.0] and outcome.error is None


def test_429_retry_after_as_http_date(provider, server):
    server.script(
        [Fault.status(429, retry_after=email.utils.formatdate(time.time() + 30, usegmt=True))]
    )
    outcome = run(provider)
    assert len(outcome.sleeps) == 1 and 27 <= outcome.sleeps[0] <= 30.5
    assert outcome.error is None


def test_429_without_retry_after_backs_off(provider, server):
    server.script([Fault.status(429)])
    outcome = run(provider, policy=RetryPolicy(backoff_initial=0.5))
    assert len(outcome.sleeps) == 1 and 0 <= outcome.sleeps[0] <= 0.5
    assert outcome.error is None


def test_429_retry_after_ignored_when_not_respected(provider, server):
    server.script([Fault.status(429, retry_after=30)])
    outcome = run(provider, policy=RetryPolicy(respect_retry_after=False, backoff_initial=0.5))
    assert len(outcome.sleeps) == 1 and outcome.sleeps[0] <= 0.5


def test_429_exhausts_attempts(name, provider, server):
    server.script(
        [
            Fault.status(429, retry_after=1, message="Slow down, please."),
            Fault.status(429, retry_after=1, message="Slow down, please."),
        ]
    )
    outcome = run(provider)
    assert outcome.payload is None and outcome.attempts == 2 and server.count() == 2
    assert outcome.error == RetryDecision(True, "429", 429, 1.0, "Slow down, please.")
    assert outcome.sleeps == [1.0]
    doc = failure_document(outcome.error, outcome.attempts)
    assert doc == normalize(
        {
            "success": False,
            "error": {
                "type": "429",
                "status": 429,
                "message": "Slow down, please. (after 2 attempts)",
            },
        }
    )
    assert doc["success"] is False and doc["tool_calls"] == []


QUOTA_EXHAUSTED = {
    "openai": Fault.status(
        429, code="insufficient_quota", message="You exceeded your current quota."
    ),
    "anthropic": Fault.status(
        429, details={"error_code": "enforced_spend_limit_reached"}, message="Spend limit reached."
    ),
}


def test_quota_429_is_not_retried(provider, server):
    # Out of quota / over the spend limit: waiting does not help, so the 429 is final.
    server.script([QUOTA_EXHAUSTED[provider.name]] * 2)
    outcome = run(provider)
    assert outcome.attempts == 1 and server.count() == 1
    assert (outcome.error.kind, outcome.error.retry, outcome.error.status) == ("429", False, 429)


def test_429_not_in_retry_on_is_not_retried(provider, server):
    server.script([Fault.status(429, retry_after=1)])
    outcome = run(provider, policy=RetryPolicy(retry_on=frozenset({"5xx"})))
    assert outcome.attempts == 1 and outcome.error.kind == "429" and server.count() == 1


# ----------------------------------------------------------------------------- 5xx


@pytest.mark.parametrize("status", [500, 503, 529])
def test_5xx_is_retried_with_backoff(provider, server, status):
    server.script([Fault.status(status)])
    outcome = run(provider, policy=RetryPolicy(backoff_initial=0.5))
    assert_paris(outcome)
    assert outcome.attempts == 2 and server.count() == 2
    assert len(outcome.sleeps) == 1 and 0 <= outcome.sleeps[0] <= 0.5


@pytest.mark.parametrize(
    "status, message",
    [
        (
            500,
            {
                "openai": "The server had an error while processing your request. Sorry about that!",
                "anthropic": "Internal server error",
            },
        ),
        (
            503,
            {
                "openai": "The engine is currently overloaded, please try again later.",
                "anthropic": "Service unavailable",
            },
        ),
        (529, {"openai": "HTTP 529", "anthropic": "Overloaded"}),
    ],
)
def test_5xx_exhausted(name, provider, server, status, message):
    server.script([Fault.status(status)] * 3)
    outcome = run(provider, policy=RetryPolicy(max_attempts=3))
    assert outcome.attempts == 3 and server.count() == 3 and len(outcome.sleeps) == 2
    assert (outcome.error.kind, outcome.error.status, outcome.error.message) == (
        "5xx",
        status,
        message[name],
    )


def test_retry_after_on_503_is_not_a_429_wait(provider, server):
    # Only 429 honours Retry-After (rate_limits.on_429); other retries back off.
    server.script([Fault.status(503, retry_after=30)])
    outcome = run(provider, policy=RetryPolicy(backoff_initial=0.5))
    assert outcome.sleeps[0] <= 0.5 and outcome.error is None


# ----------------------------------------------------------------------------- 4xx


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_not_retried(provider, server, status):
    server.script([Fault.status(status, message="Invalid 'tools[0].function.name'.")] * 2)
    outcome = run(provider, policy=RetryPolicy(max_attempts=3))
    assert outcome.attempts == 1 and server.count() == 1 and outcome.sleeps == []
    assert outcome.error == RetryDecision(
        False, "client", status, None, "Invalid 'tools[0].function.name'."
    )


def test_api_key_echoed_by_the_server_is_redacted(provider, server):
    server.script([Fault.status(401, message="Incorrect API key provided: {api_key}.")])
    outcome = run(provider)
    assert outcome.error.message == "Incorrect API key provided: [REDACTED]."
    assert_no_key(provider, outcome)


@pytest.mark.parametrize(
    "fault",
    [
        Fault.status(400),
        Fault.status(429),
        Fault.status(500),
        Fault.dropped(),
        Fault.slow(2),
        Fault.not_json("text/html"),
        Fault.status(502, message=None),
        Fault.status(401),
    ],
    ids=["400", "429", "500", "drop", "slow", "html", "502", "401"],
)
def test_api_key_never_in_any_message(provider, server, fault):
    server.script([fault])
    outcome = run(provider, policy=RetryPolicy(max_attempts=1, total_ms=300))
    assert_no_key(provider, outcome)


# ----------------------------------------------------------------------------- timeouts


def test_slow_reply_times_out_and_is_retried(provider, server):
    server.script([Fault.slow(2), Fault.slow(2)])
    started = time.monotonic()
    outcome = run(provider, policy=RetryPolicy(total_ms=300, max_attempts=2))
    elapsed = time.monotonic() - started
    assert outcome.attempts == 2 and server.count() == 2
    assert outcome.error == RetryDecision(True, "timeout", None, None, "no response within 0.3 s")
    assert 0.5 <= elapsed < 1.5
    assert failure_document(outcome.error, 2)["error"] == {
        "type": "timeout",
        "status": None,
        "message": "no response within 0.3 s (after 2 attempts)",
    }


def test_slow_reply_then_fast_reply_succeeds(provider, server):
    server.script([Fault.slow(2)])
    outcome = run(provider, policy=RetryPolicy(total_ms=300))
    assert_paris(outcome)
    assert outcome.attempts == 2


def test_slow_reply_within_the_timeout_is_fine(provider, server):
    server.script([Fault.slow(0.1)])
    outcome = run(provider, policy=RetryPolicy(total_ms=2000))
    assert_paris(outcome)
    assert outcome.attempts == 1 and outcome.latency_ms >= 90


# ----------------------------------------------------------------------------- connections


def test_dropped_connection_is_retried(provider, server):
    server.script([Fault.dropped()])
    outcome = run(provider)
    assert_paris(outcome)
    assert outcome.attempts == 2 and server.count() == 2


def test_dropped_connection_exhausted(provider, server):
    server.script([Fault.dropped(), Fault.dropped()])
    outcome = run(provider)
    assert (
        outcome.error.kind == "connection" and outcome.error.retry and outcome.error.status is None
    )
    assert "Server disconnected" in outcome.error.message


def test_refused_connection(name):
    # A port nobody listens on: bind one, then close it.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}" + ("/v1" if name == "openai" else "")
    p = providers.create(name, api_key=KEYS[name], base_url=base)
    try:
        outcome = run(p, policy=RetryPolicy(max_attempts=2))
    finally:
        p.close()
    assert outcome.attempts == 2 and outcome.error.kind == "connection"


# ----------------------------------------------------------------------------- bad bodies


@pytest.mark.parametrize(
    "fault",
    [
        Fault.not_json("application/json"),
        Fault.not_json("text/html"),
        Fault.not_json("text/plain", body=b""),
        Fault.not_json("application/json", body=b"[1, 2, 3]"),
        Fault.not_json("application/json", body=b'{"object": "list", "data": []}'),
    ],
    ids=["json-ct", "html", "empty", "list", "wrong-object"],
)
def test_non_json_or_wrong_body_is_invalid_response(provider, server, fault):
    server.script([fault] * 3)
    outcome = run(provider, policy=RetryPolicy(max_attempts=3))
    assert outcome.attempts == 1 and server.count() == 1
    assert outcome.error.kind == "invalid_response" and outcome.error.retry is False
    assert outcome.error.status == 200
    assert "HTTP 200" in outcome.error.message


def test_html_body_message_names_content_type(provider, server):
    server.script([Fault.not_json("text/html")])
    message = run(provider).error.message
    assert "text/html" in message and "502 Bad Gateway" in message


def test_error_inside_a_200(provider, server):
    # Some OpenAI-compatible gateways report failures inside a 200.
    server.script(
        [
            Fault.not_json(
                "application/json",
                body=b'{"error": {"message": "upstream overloaded", "code": 502}}',
            )
        ]
    )
    error = run(provider).error
    assert error.kind == "invalid_response" and "upstream overloaded" in error.message


# ----------------------------------------------------------------------------- SDK retries are off


@pytest.mark.parametrize(
    "fault",
    [
        Fault.status(429, retry_after=0),
        Fault.status(500),
        Fault.status(503),
        Fault.status(529),
        Fault.status(408),
        Fault.status(409),
        Fault.dropped(),
        Fault.slow(1),
    ],
    ids=["429", "500", "503", "529", "408", "409", "drop", "slow"],
)
def test_sdk_retries_are_off(provider, server, fault):
    server.script([fault] * 3)
    outcome = run(provider, policy=RetryPolicy(max_attempts=1, total_ms=300))
    assert outcome.payload is None and outcome.attempts == 1
    assert server.count() == 1, "the SDK retried on its own"


def test_provider_call_raises_once_without_the_loop(provider, server):
    server.script([Fault.status(500)])
    with pytest.raises(Exception) as info:
        provider.call(REQUEST, model=MODELS[provider.name], timeout_s=2)
    assert provider.classify(info.value).kind == "5xx"
    assert server.count() == 1


# ----------------------------------------------------------------------------- stop event


def test_stop_event_set_before_the_call(provider, server):
    stop = threading.Event()
    stop.set()
    outcome = run(provider, stop_event=stop)
    assert outcome.attempts == 0 and outcome.error == CANCELLED and server.count() == 0


def test_stop_event_set_during_the_wait(provider, server):
    server.script([Fault.status(429, retry_after=1)])
    stop = threading.Event()

    def sleep(seconds):
        stop.set()  # Ctrl-C arrives while waiting

    outcome = run(provider, sleep=sleep, stop_event=stop)
    assert outcome.attempts == 1 and server.count() == 1
    assert outcome.error.kind == "429" and outcome.payload is None


def test_stop_event_interrupts_a_real_wait(provider, server):
    server.script([Fault.status(429, retry_after=30)])
    stop = threading.Event()
    stopped_at = server.after(1, stop.set)
    outcome = run(provider, sleep=time.sleep, stop_event=stop)
    assert stopped_at and time.perf_counter() - stopped_at[0] < 5
    assert outcome.attempts == 1 and outcome.error.kind == "429"


# ----------------------------------------------------------------------------- concurrency


def test_concurrent_calls_share_one_provider(provider, server):
    server.latency = 0.6  # long enough for 16 threads to be in flight together on a busy machine
    started = time.monotonic()
    with ThreadPoolExecutor(16) as pool:
        outcomes = list(pool.map(lambda _: run(provider), range(16)))
    elapsed = time.monotonic() - started
    for outcome in outcomes:
        assert_paris(outcome)
    assert server.count() == 16
    assert server.max_in_flight >= 12  # not serialized (16 x 0.6 s would take 9.6 s)
    assert elapsed < 4.0


# ----------------------------------------------------------------------------- units


def test_parse_retry_after_forms():
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "-3"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None and parse_retry_after(None) is None
    date = email.utils.formatdate(1_000_010, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=1_000_000) == 10.0
    assert parse_retry_after({"retry-after": date}, now=2_000_000) == 0.0


def test_unknown_exceptions_are_client_errors(provider):
    decision = provider.classify(TypeError("create() got an unexpected keyword argument 'x'"))
    assert decision.kind == "client" and decision.retry is False
    assert provider.classify(InvalidResponseError("bad", status=200)) == RetryDecision(
        False, "invalid_response", 200, None, "bad"
    )


def test_keyboard_interrupt_propagates():
    class Interrupting:
        name = "openai"

        def call(self, request, *, model, timeout_s):
            raise KeyboardInterrupt

        def classify(self, exc):  # pragma: no cover - must not be asked
            raise AssertionError("KeyboardInterrupt must not be classified")

    with pytest.raises(KeyboardInterrupt):
        call_with_policy(
            Interrupting(), REQUEST, model="m", policy=RetryPolicy(), sleep=RecordingSleep()
        )


def test_a_broken_classifier_does_not_crash_the_run():
    class Broken:
        name = "openai"

        def call(self, request, *, model, timeout_s):
            raise RuntimeError("boom")

        def classify(self, exc):
            raise ValueError("classifier bug")

    outcome = call_with_policy(
        Broken(), REQUEST, model="m", policy=RetryPolicy(), sleep=RecordingSleep()
    )
    assert (
        outcome.attempts == 1
        and outcome.error.kind == "client"
        and "RuntimeError" in outcome.error.message
    )


def test_failure_document_singular():
    doc = failure_document(RetryDecision(False, "client", 400, None, "Bad tool."), 1)
    assert doc["error"] == {
        "type": "client",
        "status": 400,
        "message": "Bad tool. (after 1 attempt)",
    }


# ----------------------------------------------------------------------------- the fake server


def test_reply_function_chooses_from_the_request(provider, server):
    def by_city(req):
        text = json.dumps(req.body)
        return Reply.tool_call("get_weather", {"location": "Rome" if "Rome" in text else "Paris"})

    server.set_default(by_city)
    rome = {**REQUEST, "messages": [{"role": "user", "content": "Weather in Rome?"}]}
    doc = normalize(run(provider, request=rome).payload)
    assert doc["tool_calls"][0]["arguments"] == {"location": "Rome"}


def test_first_tool_default(provider, server):
    server.set_default(FirstTool({"location": "Oslo"}))
    doc = normalize(run(provider).payload)
    assert [(c["name"], c["arguments"]) for c in doc["tool_calls"]] == [
        ("get_weather", {"location": "Oslo"})
    ]


def test_reset_cuts_short_a_sleeping_reply(server):
    import urllib.request

    server.script([Fault.slow(30)])
    started = time.monotonic()
    threading.Timer(0.2, server.reset).start()
    with pytest.raises(OSError):  # the connection is dropped, not answered
        urllib.request.urlopen(
            urllib.request.Request(server.url + OPENAI_PATH, data=b"{}"), timeout=10
        )
    assert time.monotonic() - started < 5


def test_unknown_path_is_a_404_and_keeps_the_script(server):
    import urllib.error
    import urllib.request

    server.script([Fault.status(500)])
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(
            urllib.request.Request(server.url + "/v1/embeddings", data=b"{}"), timeout=5
        )
    assert info.value.code == 404
    assert json.loads(info.value.read())["error"]["code"] == "unknown_url"
    assert server.pending == 1
