"""The live providers beyond chat completions (openai-responses, gemini, bedrock) through their
real SDKs against the fake server, and streaming on every provider: the same retry loop and fault
classification as openai and anthropic (tests/test_live_providers.py), each API's message form on
the wire, and a streamed call judged exactly as the non-streamed one."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from fakeserver import Fault, Reply
from livecli import ALL_PROVIDERS, AWS_ENV, ENV_KEY, KEYS, MODELS, PATHS, add_cases, invoke, live_env, report_of
from test_scenario_live import GOOD, HOTEL, scenario_pack

from replayci import providers
from replayci.formats import normalize
from replayci.formats.canonical import stable_response
from replayci.providers.call import call_once
from replayci.providers.retry import RetryPolicy, call_with_policy

NEW = ("openai-responses", "gemini", "bedrock")
REQUEST = {
    "messages": [{"role": "system", "content": "You are a weather assistant. Use tools."},
                 {"role": "user", "content": "What's the weather in Paris?"}],
    "tools": [{"type": "function", "function": {
        "name": "get_weather", "description": "Current weather for a city",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}}],
    "tool_choice": "auto", "temperature": 0,
}
PARIS = [("get_weather", {"location": "Paris"})]


@pytest.fixture(scope="module", autouse=True)
def aws_credentials():
    """Fake AWS credentials for boto3, which reads them from the environment when signing."""
    with pytest.MonkeyPatch.context() as mp:
        for name, value in {**AWS_ENV, "AWS_SECRET_ACCESS_KEY": KEYS["bedrock"]}.items():
            mp.delenv(name, raising=False) if value is None else mp.setenv(name, value)
        yield


@pytest.fixture(scope="module")
def clients(shared_server):
    """One client per (provider, streaming), built once: SDK clients are slow to make."""
    made: dict = {}

    def get(name: str, stream: bool = False):
        if (name, stream) not in made:
            made[name, stream] = providers.create(name, api_key=KEYS[name], base_url=shared_server.base_url_for(name),
                                                  stream=stream)
        return made[name, stream]

    yield get
    for client in made.values():
        client.close()


class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def run(client, policy=None, sleep=None, request=REQUEST):
    return call_with_policy(client, request, model=MODELS[client.name], policy=policy or RetryPolicy(total_ms=2000),
                            sleep=sleep if sleep is not None else Sleeps())


def calls_of(doc: dict) -> list:
    return [(c["name"], c["arguments"]) for c in doc["tool_calls"]]


# ----------------------------------------------------------------------------- the request on the wire


def test_each_api_gets_the_request_in_its_own_form(clients, server):
    for name in NEW:
        assert calls_of(normalize(run(clients(name)).payload)) == PARIS
    responses, gemini, bedrock = (r.body for r in server.requests)
    assert responses["instructions"] == "You are a weather assistant. Use tools."
    assert responses["input"] == [{"role": "user", "content": "What's the weather in Paris?"}]
    assert responses["tools"][0]["name"] == "get_weather" and responses["model"] == "gpt-4o-mini"
    assert gemini["systemInstruction"]["parts"] == [{"text": "You are a weather assistant. Use tools."}]
    assert gemini["contents"] == [{"role": "user", "parts": [{"text": "What's the weather in Paris?"}]}]
    declaration = gemini["tools"][0]["functionDeclarations"][0]
    assert declaration["name"] == "get_weather" and declaration["parameters"]["type"] == "OBJECT"
    assert gemini["generationConfig"]["temperature"] == 0
    assert gemini["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}
    assert bedrock["system"] == [{"text": "You are a weather assistant. Use tools."}]
    assert bedrock["messages"] == [{"role": "user", "content": [{"text": "What's the weather in Paris?"}]}]
    assert bedrock["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["required"] == ["location"]
    assert bedrock["inferenceConfig"] == {"temperature": 0}
    paths = [r.path for r in server.requests]
    assert paths[1] == f"/v1beta/models/{MODELS['gemini']}:generateContent" or paths[1].endswith(":generateContent")
    assert server.requests[1].api_key == KEYS["gemini"]
    assert server.requests[2].api_key == "AKIALIVETEST00000000"  # SigV4: the key id, never the secret


# ----------------------------------------------------------------------------- faults, one retry loop


@pytest.mark.parametrize("name", NEW)
def test_429_with_retry_after_then_success(name, clients, server):
    server.script([Fault.status(429, retry_after=1)])
    sleeps = Sleeps()
    outcome = run(clients(name), sleep=sleeps)
    assert outcome.error is None and outcome.attempts == 2 and sleeps == [1.0]


def test_gemini_retry_info_is_its_retry_after(clients, server):
    server.script([Fault.status(429, details={"@type": "type.googleapis.com/google.rpc.RetryInfo",
                                              "retryDelay": "7s"})])
    sleeps = Sleeps()
    assert run(clients("gemini"), sleep=sleeps).error is None and sleeps == [7.0]


FAULTS = {
    "503": (Fault.status(503), "5xx", 503, True),
    "400": (Fault.status(400, message="Bad tool."), "client", 400, False),
    "slow": (Fault.slow(2), "timeout", None, True),
    "drop": (Fault.dropped(), "connection", None, True),
    "html": (Fault.not_json("text/html"), "invalid_response", 200, False),
    "wrong": (Fault.not_json(body=b'{"object": "list", "data": []}'), "invalid_response", 200, False),
}


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("name", NEW)
def test_faults_are_classified_and_retried_by_the_one_loop(name, fault, clients, server):
    action, kind, status, retried = FAULTS[fault]
    server.script([action] * 2)
    outcome = run(clients(name), policy=RetryPolicy(max_attempts=2, total_ms=300))
    assert (outcome.error.kind, outcome.error.status) == (kind, status), outcome.error
    assert outcome.attempts == server.count() == (2 if retried else 1), "the SDK retried on its own"
    if fault == "400":
        assert outcome.error.message == "Bad tool."
    if fault == "slow":
        assert outcome.error.message == "no response within 0.3 s"


@pytest.mark.parametrize("name", ["openai-responses", "gemini"])
def test_an_echoed_key_is_scrubbed(name, clients, server):
    server.script([Fault.status(400, message="API key {api_key} not valid.")])
    answer = call_once(clients(name), REQUEST, model=MODELS[name], policy=RetryPolicy(max_attempts=1),
                       key=KEYS[name])
    assert KEYS[name] not in json.dumps(answer.response) and "[REDACTED]" in answer.problem


# ----------------------------------------------------------------------------- streams


@pytest.mark.parametrize("name", ALL_PROVIDERS)
def test_a_streamed_call_reads_as_the_same_document(name, clients, server):
    server.set_default(Reply.tool_calls([("get_weather", {"location": "Paris"}), ("get_weather", {"location": "Oslo"})],
                                        text="Checking."))
    policy = RetryPolicy(max_attempts=1)
    whole = call_once(clients(name), REQUEST, model=MODELS[name], policy=policy, key=KEYS[name])
    streamed = call_once(clients(name, True), REQUEST, model=MODELS[name], policy=policy, key=KEYS[name])
    assert stable_response(streamed.response) == stable_response(whole.response)
    assert streamed.response["usage"] == whole.response["usage"] and streamed.response["content"] == "Checking."
    assert isinstance(streamed.raw, list) and len(streamed.raw) > 2  # the chunks, as they came
    assert server.requests[-1].streaming and not server.requests[-2].streaming


@pytest.mark.parametrize("drop", [False, True], ids=["ended", "dropped"])
@pytest.mark.parametrize("name", ALL_PROVIDERS)
def test_a_cut_stream_is_stream_incomplete(name, drop, clients, server):
    server.script([Reply.tool_call("get_weather", {"location": "Paris"}, text="Checking.").cut(2, drop=drop)])
    answer = call_once(clients(name, True), REQUEST, model=MODELS[name], policy=RetryPolicy(max_attempts=2),
                       key=KEYS[name])
    assert answer.response["error"]["type"] == "stream_incomplete" and answer.attempts == 1


# ----------------------------------------------------------------------------- through the command line


NEGATIVE = ("tool: get_time\ngolden_cases:\n"
            "  - {id: n, input_ref: t.n.json, expect_ok: false, expected_error: wrong_tool}\n")


@pytest.mark.parametrize("provider", ALL_PROVIDERS)
def test_stream_gives_the_verdicts_of_a_plain_call(provider, pack, server):
    add_cases(pack, "w", ["a", "b"])
    add_cases(pack, "t", ["n"])
    pack.contract("t", NEGATIVE)
    plain = report_of(invoke(provider, server, "--json"))
    assert not any(r.streaming for r in server.requests)
    streamed = report_of(res := invoke(provider, server, "--json", "--stream"))
    assert res.exit_code == 0, res.output
    assert all(r.streaming for r in server.requests[3:]) and server.count(PATHS[provider]) == 6

    def verdicts(report):
        return [(c["case"], c["status"], c["classification"], c["fingerprint"]) for c in report["cases"]]

    assert verdicts(streamed) == verdicts(plain)
    assert [c["status"] for c in plain["cases"]] == ["pass", "pass", "pass"]


@pytest.mark.parametrize("provider", ["anthropic", "gemini", "bedrock"])
def test_a_cut_stream_is_an_unexpected_error_of_its_case(provider, pack, server):
    add_cases(pack, "w", ["a"])
    server.set_default(Reply.tool_call("get_weather", {"location": "Paris"}, text="Checking.").cut(2))
    res = invoke(provider, server, "--json", "--stream")
    (case,) = report_of(res)["cases"]
    assert (res.exit_code, case["status"], case["classification"]) == (1, "fail", "unexpected_error")
    assert "stream_incomplete" in json.dumps(case["failures"])


def test_stream_from_the_config_and_a_streamed_recording(pack, server):
    (pack.root / ".replayci.yml").write_text("provider: recorded\nstream: true\n", "utf-8")
    add_cases(pack, "w", ["a"])
    server.set_default(Reply.tool_call("get_weather", {"location": "Paris"}, text="Checking."))
    assert invoke("gemini", server, "--record").exit_code == 0
    plain = json.loads((pack.dir / "recordings" / "w" / "a.json").read_text("utf-8"))
    assert server.requests[-1].streaming
    assert invoke("gemini", server, "--record", "--keep-raw").exit_code == 0
    kept = json.loads((pack.dir / "recordings" / "w" / "a.json").read_text("utf-8"))
    assert kept["response"] == plain["response"] and "raw" not in plain  # the reassembled response
    assert [c["candidates"][0]["content"]["parts"] for c in kept["raw"]][-1][0]["functionCall"]["name"] == "get_weather"


@pytest.mark.parametrize("provider", NEW)
def test_scenarios_speak_each_providers_message_form(provider, pack, server):
    scenario_pack(pack)
    server.set_default(GOOD)
    res = invoke(provider, server, "--json")
    assert res.exit_code == 0, res.output
    last = server.requests[-1].body
    if provider == "openai-responses":
        outputs = [i for i in last["input"] if i.get("type") == "function_call_output"]
        calls = [i for i in last["input"] if i.get("type") == "function_call"]
        assert [o["call_id"] for o in outputs] == [c["call_id"] for c in calls] and len(outputs) == 2
        assert json.loads(outputs[1]["output"])["confirmation"] == "HLX-5521"
    elif provider == "gemini":
        parts = [p for c in last["contents"] for p in c["parts"]]
        responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
        assert [r["name"] for r in responses] == ["search_flights", "book_hotel"]
        assert responses[1]["response"]["confirmation"] == "HLX-5521"
        assert [p["functionCall"]["args"] for p in parts if "functionCall" in p][1] == HOTEL
    else:
        blocks = [b for m in last["messages"] for b in m["content"]]
        uses = [b["toolUse"] for b in blocks if "toolUse" in b]
        results = [b["toolResult"] for b in blocks if "toolResult" in b]
        assert [r["toolUseId"] for r in results] == [u["toolUseId"] for u in uses]
        assert json.loads(results[1]["content"][0]["text"])["confirmation"] == "HLX-5521"


# ----------------------------------------------------------------------------- models, keys, imports


def test_a_model_of_another_vendor_is_a_usage_error_naming_model(pack, server):
    add_cases(pack, "w", ["a"])
    for provider in ("anthropic", "gemini", "bedrock", "openai-responses"):
        model = [] if provider != "openai-responses" else ["--model", "claude-sonnet-4-5"]
        res = invoke(provider, server, *model) if model else invoke(provider, None, "--model", "gpt-4o-mini")
        assert res.exit_code == 2 and "--model" in res.output and "is a model of" in res.output, res.output
    assert server.count() == 0
    # An OpenAI-compatible endpoint may serve any vendor's model.
    assert invoke("openai", server, "--model", "claude-sonnet-4-5").exit_code == 0


@pytest.mark.parametrize("provider, variable", [("gemini", "GEMINI_API_KEY"), ("bedrock", "AWS_ACCESS_KEY_ID")])
def test_no_key_is_missing_prerequisites_naming_the_variable(provider, variable, pack, server):
    add_cases(pack, "w", ["a"])
    res = invoke(provider, server, "--json", key=False)
    (case,) = report_of(res)["cases"]
    assert (case["status"], case["reason"]) == ("non_reproducible", "missing_prerequisites")
    assert variable in res.stderr and server.count() == 0


def test_google_api_key_is_read_too(pack, server):
    add_cases(pack, "w", ["a"])
    res = invoke("gemini", server, key=False, env={"GOOGLE_API_KEY": KEYS["gemini"]})
    assert res.exit_code == 0 and server.requests[0].api_key == KEYS["gemini"]


@pytest.mark.parametrize("provider, sdk", [("gemini", "google.genai"), ("bedrock", "boto3")])
def test_the_live_path_imports_only_its_own_sdk(provider, sdk, pack, server):
    add_cases(pack, "w", ["a"])
    code = ("import sys\nfrom replayci.cli import cli\n"
            "try:\n    cli.main(args=sys.argv[1:], prog_name='replayci')\nexcept SystemExit as e:\n    code = e.code\n"
            "print('IMPORTED', sorted(m for m in sys.modules if m in ('openai', 'anthropic', 'google.genai', "
            "'boto3')), code)\n")
    env = {k: v for k, v in {**os.environ, **live_env(provider)}.items() if v is not None}
    proc = subprocess.run([sys.executable, "-c", code, "--provider", provider, "--model", MODELS[provider],
                           "--base-url", server.base_url_for(provider)], cwd=pack.root, env=env,
                          capture_output=True, text=True, check=False, timeout=60)
    assert f"IMPORTED ['{sdk}'] 0" in proc.stdout, proc.stdout + proc.stderr
    assert ENV_KEY[provider] in env
