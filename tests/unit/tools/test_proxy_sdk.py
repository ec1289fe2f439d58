"""`replayci proxy -- python app.py`: an application using the real openai, anthropic and (when
installed) google-genai SDKs records through the proxy, then replays with its upstream stopped
and prints the same; a changed prompt misses; the captured pack passes offline."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import warmed
from fakeserver import FakeServer, Reply
from proxy_support import APP, Upstream

REPO = Path(__file__).resolve().parents[3]
HAS_GENAI = importlib.util.find_spec("google.genai") is not None
KEYS = {"OPENAI_API_KEY": "sk-proj-PROXYTEST-0a1b2c3d4e5f6a7b", "ANTHROPIC_API_KEY": "sk-ant-api03-PROXYTEST-9f8e7d6c",
        "GEMINI_API_KEY": "AIzaPROXYTEST-1234567890abcdef"}


def replayci(*args, cwd: Path, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    for var in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
        full.pop(var, None)  # the proxy sets them for the app; nothing else may
    return subprocess.run([*warmed.cli(full), *map(str, args)], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture
def app(tmp_path) -> Path:
    (tmp_path / "app.py").write_text(APP, "utf-8")
    return tmp_path


def proxied(app: Path, mode: str, steps, upstream_flags=(), env=None) -> subprocess.CompletedProcess:
    return replayci("proxy", "--pack", "packs/app", "--mode", mode, *upstream_flags, "--", *warmed.app_python(),
                    "app.py", *steps, cwd=app, env=env)


def assert_no_key_on_disk(pack: Path) -> None:
    for path in pack.rglob("*"):
        if path.is_file():
            text = path.read_text("utf-8")
            for key in KEYS.values():
                assert key not in text, f"{key} written to {path}"


def test_record_then_replay_against_the_fake_provider(app):
    steps = ["chat", "messages", "chat-text"]
    with FakeServer(default=Reply.tool_call("get_weather", {"location": "Paris"})) as server:
        server.script([Reply.tool_call("get_weather", {"location": "Paris"}),
                       Reply.tool_call("get_weather", {"location": "Paris"}), Reply.plain_text("Hello!")])
        flags = ["--upstream", f"openai={server.openai_base_url}",
                 "--upstream", f"anthropic={server.anthropic_base_url}"]
        recorded = proxied(app, "record", steps, flags, env=KEYS)
        assert recorded.returncode == 0, recorded.stderr
        sent = server.requests
    # The app's own auth went upstream; the proxy added none of its own.
    assert sent[0].api_key == KEYS["OPENAI_API_KEY"] and sent[1].api_key == KEYS["ANTHROPIC_API_KEY"]
    assert "3 recorded" in recorded.stderr
    pack = app / "packs" / "app"
    assert sorted(p.name for p in (pack / "contracts").iterdir()) == ["captured_get_weather.yaml",
                                                                     "captured_no_tools.yaml"]
    assert_no_key_on_disk(pack)
    # Upstream gone: the same output, call ids included, from the pack alone (no key needed either).
    replayed = proxied(app, "replay", steps)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == recorded.stdout
    assert "3 replayed, 0 recorded, 0 forwarded, 0 missed" in replayed.stderr
    offline = replayci("--pack", "packs/app", "--provider", "recorded", "--json", cwd=app)
    assert offline.returncode == 0, offline.stderr
    assert [c["status"] for c in json.loads(offline.stdout)["cases"]] == ["pass"] * 3


def test_a_changed_prompt_misses_and_fails_the_command(app):
    with FakeServer(default=Reply.tool_call("get_weather", {"location": "Paris"})) as server:
        flags = ["--upstream", f"openai={server.openai_base_url}"]
        assert proxied(app, "record", ["chat"], flags).returncode == 0
    missed = proxied(app, "replay", ["chat"], env={"APP_QUESTION": "What is the weather in Lyon?"})
    assert missed.returncode == 1
    assert "NotFoundError" in missed.stderr  # the SDK's own error type for a 404
    line = next(ln for ln in missed.stderr.splitlines() if ln.startswith("replayci proxy (replay)"))
    assert "golden/captured_get_weather/chat-" in line
    assert ('first differs at $.messages[0].content: recorded "What is the weather in Paris?", '
            'got "What is the weather in Lyon?"') in line
    assert "1 missed" in missed.stderr


def test_a_miss_fails_a_command_that_passed(app):
    (app / "ok.py").write_text("import openai, sys\n"
                               "try:\n    openai.OpenAI(max_retries=0).chat.completions.create(model='m', "
                               "messages=[{'role': 'user', 'content': 'x'}])\nexcept openai.NotFoundError:\n"
                               "    print('handled')\n", "utf-8")
    (app / "packs" / "app").mkdir(parents=True)
    done = replayci("proxy", "--pack", "packs/app", "--mode", "replay", "--", *warmed.app_python(), "ok.py", cwd=app)
    assert done.stdout == "handled\n"
    assert done.returncode == 1, done.stderr


def test_the_command_status_passes_through(app):
    done = replayci("proxy", "--pack", "packs/app", "--mode", "off", "--", sys.executable, "-c",
                    "import os, sys; print(os.environ['OPENAI_BASE_URL'], os.environ['ANTHROPIC_BASE_URL'], "
                    "os.environ['GOOGLE_GEMINI_BASE_URL']); sys.exit(3)", cwd=app)
    assert done.returncode == 3
    openai_url, anthropic_url, gemini_url = done.stdout.split()
    assert openai_url.startswith("http://127.0.0.1:") and openai_url.endswith("/v1")
    assert anthropic_url == openai_url[:-3] + "/anthropic" and gemini_url == openai_url[:-3] + "/gemini"
    assert not (app / "packs").exists()  # off writes nothing
    missing = replayci("proxy", "--pack", "p", "--mode", "off", "--", "no-such-command-xyz", cwd=app)
    assert missing.returncode == 127 and "cannot run no-such-command-xyz" in missing.stderr


def test_streams_responses_and_gemini_record_and_replay(app):
    steps = ["chat-stream", "chat-text-stream", "responses", "responses-stream", "messages-stream"]
    if HAS_GENAI:
        steps += ["gemini", "gemini-stream"]
    with Upstream() as upstream:
        recorded = proxied(app, "record", steps, upstream.upstream_flags(), env=KEYS)
        assert recorded.returncode == 0, recorded.stderr
        paths = [r[0] for r in upstream.received]
    assert recorded.stdout.count("\n") == len(steps)
    assert re.search(r"chat-stream \[\['call_\d+', 'get_weather', '\{\"location\": \"Paris\"\}'\]\]", recorded.stdout)
    # Each streamed piece reached the app as its own chunk: 10 text deltas, the role and the finish.
    assert "chat-text-stream 12 'echo: Say hello to What is the weather in Paris?'" in recorded.stdout
    assert "responses-stream response.created response.output_item.added response.output_item.done " \
           "response.completed" in recorded.stdout
    assert "messages-stream message_start" in recorded.stdout
    if HAS_GENAI:
        assert any(p.endswith("/models/gemini-2.0-flash:streamGenerateContent") for p in paths), paths
        assert "gemini-stream ['echo: ', 'Say ', 'hi '" in recorded.stdout
    replayed = proxied(app, "replay", steps)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == recorded.stdout
    pack = app / "packs" / "app"
    assert_no_key_on_disk(pack)
    fixtures = [json.loads(p.read_text("utf-8")) for p in (pack / "golden").rglob("*.json")]
    assert sum(1 for f in fixtures if f["meta"]["stream"]) == len([s for s in steps if s.endswith("stream")])
    assert {f["meta"]["api"] for f in fixtures} >= {"openai-chat", "openai-responses", "anthropic"}
    offline = replayci("--pack", "packs/app", "--provider", "recorded", "--json", cwd=app)
    assert offline.returncode == 0, offline.stderr
    assert {c["status"] for c in json.loads(offline.stdout)["cases"]} == {"pass"}


@pytest.mark.slow  # runs the proxy benchmark end to end: a soak test
def test_the_benchmark_runs(tmp_path):
    done = subprocess.run([sys.executable, str(REPO / "bench" / "proxy.py"), "--requests", "20", "--bulk", "64",
                           "--clients", "4", "--gap", "0.002", "--json"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["replay_rps"] > 0 and result["record_rps"] > 0
    assert "84 replayed" in result["replay_summary"] and "0 missed" in result["replay_summary"]  # 20 + 64
