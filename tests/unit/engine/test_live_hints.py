"""One-line hints a live run gives before it calls: the missing key, a base_url the SDK would break."""
from __future__ import annotations

from livecli import (
    add_cases,
    invoke,
    report_of,
    server,  # noqa: F401 - a fixture
)

from replayci.providers import base_url_hint


def test_anthropic_base_url_ending_in_v1_is_warned_about_once(pack, server):  # noqa: F811
    add_cases(pack, "weather", ["a", "b"])
    res = invoke("anthropic", None, "--json", "--base-url", server.url + "/v1", "--model", "claude-test-model",
                 key=False)
    lines = [line for line in res.stderr.splitlines() if "adds /v1 itself" in line]
    assert lines == [f"replayci: warning: --base-url {server.url}/v1 ends in /v1, but the Anthropic SDK adds "
                     "/v1 itself (calls go to .../v1/v1/messages): drop the trailing /v1"]
    assert any("adds /v1 itself" in w for w in report_of(res)["warnings"])


def test_base_url_hint_only_for_the_anthropic_sdk():
    assert base_url_hint("anthropic", "https://api.anthropic.com/v1/") is not None
    assert base_url_hint("anthropic", "https://api.anthropic.com") is None
    assert base_url_hint("anthropic", None) is None
    assert base_url_hint("openai", "http://localhost:8000/v1") is None  # the OpenAI SDK wants the /v1
