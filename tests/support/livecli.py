"""Helpers for tests that run the real CLI against tests/fakeserver.py with the real SDKs.

Cases ask the question ``q:<case id>``; a Router answers each case from its own script of
actions (then a default), so concurrent runs stay deterministic per case.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable

import pytest
from builders import fixture, request
from click.testing import CliRunner
from fakeserver import Action, FakeServer, RecordedRequest, Reply

from replayci.cli import cli
from replayci.core.provider_table import foreign_model
from replayci.providers import TABLE

# The providers every CLI behaviour is checked with; tests/test_providers_wire.py runs them all.
PROVIDERS = ("openai", "anthropic")
ALL_PROVIDERS = tuple(TABLE)
KEYS = {"openai": "sk-proj-LIVETEST-4f9a0c1e7b2d4e6f8a0b", "openai-responses": "sk-proj-LIVETEST-4f9a0c1e7b2d4e6f8a0b",
        "anthropic": "sk-ant-api03-LIVETEST-9e8d7c6b5a4f3e2d", "gemini": "AIzaSyLIVETEST-0123456789abcdefghijklmn",
        "bedrock": "LIVETEST/aws+secret0123456789abcdefghijkl"}
# The key variable each provider's key is set in (Bedrock: the AWS secret key).
ENV_KEY = {name: entry.own_keys[0] if entry.own_keys else "AWS_SECRET_ACCESS_KEY" for name, entry in TABLE.items()}
# The wire API each provider's requests reach on the fake server (server.count(PATHS[name])).
PATHS = {name: entry.wire for name, entry in TABLE.items()}
# A model each provider serves, for packs whose default_model (gpt-4o-mini) it does not.
MODELS = {"openai": "gpt-4o-mini", "openai-responses": "gpt-4o-mini", "anthropic": "claude-test-model",
          "gemini": "gemini-test-model", "bedrock": "anthropic.claude-test-v1:0"}
# Bedrock's credentials are fake and its endpoint is the fake server: a stray call must fail fast, never reach AWS.
AWS_ENV = {"AWS_ACCESS_KEY_ID": "AKIALIVETEST00000000", "AWS_SESSION_TOKEN": None, "AWS_PROFILE": None,
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": None, "AWS_EC2_METADATA_DISABLED": "true",
           "AWS_CONFIG_FILE": "/nonexistent/aws-config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-creds",
           "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": None}
PARIS = Reply.tool_call("get_weather", {"location": "Paris"})


def question_of(req: RecordedRequest) -> str | None:
    """The last user message of a request (in any wire API's form), None after tool results."""
    return req.turns.last_user


class Router:
    """Answers each case (by its question ``q:<id>``) from its own script, then a default."""

    def __init__(self, scripts: dict[str, list] | None = None,
                 default: Action | Callable[[str], Action] = PARIS):
        self.scripts = {f"q:{k}": list(v) for k, v in (scripts or {}).items()}
        self.default = default
        self._lock = threading.Lock()

    def __call__(self, req: RecordedRequest) -> Action:
        q = question_of(req) or ""
        with self._lock:
            script = self.scripts.get(q)
            if script:
                return script.pop(0)
        return self.default(q) if callable(self.default) and not isinstance(self.default, Action) else self.default


def requests_for(server: FakeServer, case: str) -> list[RecordedRequest]:
    return [r for r in server.requests if question_of(r) == f"q:{case}"]


def add_cases(pack, contract: str, ids, *, header: str = "tool: get_weather\n", tools=None) -> None:
    """A contract whose cases ask ``q:<id>``, with pinned fixtures and no recorded response."""
    lines = [header.rstrip("\n"), "golden_cases:"]
    for i in ids:
        lines += [f"  - id: {i}", f"    input_ref: {contract}.{i}.json"]
        pack.fixture(f"{contract}.{i}.json", fixture(request(f"q:{i}", tools=tools)))
    pack.contract(contract, "\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def shared_server():
    with FakeServer(default=PARIS) as s:
        yield s


@pytest.fixture
def server(shared_server):
    """The module's server with no script, no recorded requests and no latency."""
    shared_server.reset()
    shared_server.latency = 0.0
    shared_server.set_default(PARIS)
    yield shared_server
    shared_server.reset()


def live_env(provider: str, key: bool = True, **extra) -> dict:
    """The environment of a live run: only *provider*'s key (when *key*), never a real AWS endpoint."""
    env: dict = {v: None for v in (*ENV_KEY.values(), "GOOGLE_API_KEY", "REPLAYCI_PROVIDER_KEY")}
    env.update(AWS_ENV)
    if key and provider:
        env[ENV_KEY[provider]] = KEYS[provider]
    if not (key and provider == "bedrock"):
        env["AWS_ACCESS_KEY_ID"] = None
    env.update(extra)
    return env


def model_args(provider: str, args, base_url: str | None = None) -> list[str]:
    """`--model M` for a provider the packs' default_model (gpt-4o-mini) is not a model of, unless given."""
    if provider in TABLE and "--model" not in args and foreign_model(provider, "gpt-4o-mini", base_url=base_url):
        return ["--model", MODELS[provider]]
    return []


def invoke(provider: str, server: FakeServer | None, *args: str, key: bool = True, env: dict | None = None):
    """`replayci run --provider P --base-url <fake server> ARGS` through click's CliRunner."""
    argv = ["run", "--no-color"]
    if provider:
        argv += ["--provider", provider]
    if server is not None:
        argv += ["--base-url", server.base_url_for(provider)]
    argv += model_args(provider, args, server.base_url_for(provider) if server is not None else None)
    return CliRunner().invoke(cli, argv + list(args), env={**live_env(provider, key), **(env or {})},
                              catch_exceptions=False)


def report_of(res) -> dict:
    """The JSON report a `--json` run printed on stdout."""
    return json.loads(res.stdout)


def cases_by_id(report: dict) -> dict:
    return {c["case"]: c for c in report["cases"]}
