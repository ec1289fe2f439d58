"""Batch runs end to end: the real CLI, the real openai and anthropic SDKs' batch methods, the
fake server's batch APIs on 127.0.0.1 (files, batches, output and error files, results JSONL)."""
from __future__ import annotations

import pytest
from fakeserver import Fault, Reply
from livecli import PROVIDERS, Router, add_cases, cases_by_id, invoke, report_of

byprovider = pytest.mark.parametrize("provider", PROVIDERS)
FAST = {"REPLAYCI_BATCH_POLL_SECONDS": "0.01", "REPLAYCI_BATCH_POLL_MAX_SECONDS": "0.02"}


@byprovider
def test_smoke(provider, pack, server):
    add_cases(pack, "weather", ["a", "b"])
    server.set_default(Router({"b": [Fault.status(400, message="bad tool_choice")]}))
    res = invoke(provider, server, "--batch", "--json", env=FAST)
    print(res.stderr)
    rep = report_of(res)
    print(rep["cases"])
    print([ (r.method, r.path) for r in server.requests])
