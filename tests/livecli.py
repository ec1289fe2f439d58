"""Helpers for tests that run the real CLI against tests/fakeserver.py with the real SDKs.

Cases ask the question ``q:<case id>``; a Router answers each case from its own script of
actions (then a default), so concurrent runs stay deterministic per case.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable

import pytest
from click.testing import CliRunner
from conftest import fixture, request
from fakeserver import WIRE_PATHS, Action, FakeServer, RecordedRequest, Reply

from replayci.cli import cli
from replayci.providers import TABLE

PROVIDERS = tuple(TABLE)
KEYS = {"openai": "sk-proj-LIVETEST-4f9a0c1e7b2d4e6f8a0b", "anthropic": "sk-ant-api03-LIVETEST-9e8d7c6b5a4f3e2d"}
ENV_KEY = {name: entry.key_variable for name, entry in TABLE.items()}
PATHS = {name: WIRE_PATHS[entry.wire] for name, entry in TABLE.items()}
PARIS = Reply.tool_call("get_weather", {"location": "Paris"})


def question_of(req: RecordedRequest) -> str | None:
    """The last user message of a request (either wire format)."""
    body = req.body if isinstance(req.body, dict) else {}
    messages = body.get("messages") or []
    if not messages:
        return None
    content = messages[-1].get("content")
    if isinstance(content, list):
        content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return content


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
    env = {v: None for v in ENV_KEY.values()}
    env["REPLAYCI_PROVIDER_KEY"] = None
    if key:
        env[ENV_KEY[provider]] = KEYS[provider]
    env.update(extra)
    return env


def invoke(provider: str, server: FakeServer | None, *args: str, key: bool = True, env: dict | None = None):
    """`replayci run --provider P --base-url <fake server> ARGS` through click's CliRunner."""
    argv = ["run", "--no-color"]
    if provider:
        argv += ["--provider", provider]
    if server is not None:
        argv += ["--base-url", server.base_url_for(provider)]
    return CliRunner().invoke(cli, argv + list(args), env={**live_env(provider, key), **(env or {})},
                              catch_exceptions=False)


def report_of(res) -> dict:
    """The JSON report a `--json` run printed on stdout."""
    return json.loads(res.stdout)


def cases_by_id(report: dict) -> dict:
    return {c["case"]: c for c in report["cases"]}
