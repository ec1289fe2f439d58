"""A provider that echoes the API key back, in any spelling: the key reaches no terminal
output, report, recording or `observe` file. Real CLI, real SDK, fake server."""
from __future__ import annotations

import json

import pytest
from builders import WEATHER_TOOLS
from click.testing import CliRunner
from fakeserver import Fault, RecordedRequest, Reply
from livecli import add_cases, live_env

from replayci.cli import cli

PLAIN = "sk-proj-ECHO-Q7xR2mW9vT4kL8nB"
ODD = 'sk-proj-ECHO"q\\b-Q7xR2mW9vT4kL8nB'  # characters JSON escapes
SHORT = "k9Zq"


def u_escaped(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in text)


def echo_text(spell):
    """The model answers get_weather with the key, spelled by *spell*, in its text and arguments."""
    return lambda req: Reply.tool_call("get_weather", {"location": spell(req.api_key)},
                                       text=f"key: {spell(req.api_key)}")


def raw_body(req: RecordedRequest) -> Fault:
    """A body whose JSON spells every character of the key as a \\u escape (the SDK decodes it)."""
    body = json.dumps({"id": "x", "object": "chat.completion", "model": "m", "choices": [{
        "index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "key: KEY"}}]})
    return Fault(status_code=200, raw_body=body.replace("KEY", u_escaped(req.api_key)).encode())


# spelling -> (the key as set, the server's answer, the secret part that must never appear)
SPELLINGS = {
    "as sent": (PLAIN, echo_text(lambda k: k), "Q7xR2mW9vT4kL8nB"),
    "trailing whitespace": (PLAIN + " \n", echo_text(lambda k: k + " \n\t"), "Q7xR2mW9vT4kL8nB"),
    "JSON-escaped": (ODD, echo_text(lambda k: json.dumps({"k": k})), "Q7xR2mW9vT4kL8nB"),
    "u-escaped in the text": (PLAIN, echo_text(u_escaped), "Q7xR2mW9vT4kL8nB"),
    "u-escaped on the wire": (PLAIN, raw_body, "Q7xR2mW9vT4kL8nB"),
    "property name": (PLAIN, lambda req: Reply.tool_call("get_weather", {req.api_key: 1, "location": "Paris"}),
                      "Q7xR2mW9vT4kL8nB"),
    "SDK error header value": (PLAIN, lambda req: Fault.status(
        401, message="Error code: 401 - headers {'Authorization': 'Bearer {api_key}'}"), "Q7xR2mW9vT4kL8nB"),
    "short key": (SHORT, echo_text(lambda k: f"{k} {k}!"), SHORT),
}


def spellings_of(secret: str) -> list[str]:
    return [secret, json.dumps(secret)[1:-1], u_escaped(secret), u_escaped(secret).upper().replace("\\U", "\\u")]


def assert_absent(where: str, text: str, secret: str) -> None:
    for spelled in spellings_of(secret):
        assert spelled not in text, f"{where}: {spelled!r} in {text[:2000]}"


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_an_echoed_key_reaches_no_output(spelling, pack, project, server):
    key, answer, secret = SPELLINGS[spelling]
    server.set_default(answer)
    add_cases(pack, "w", ["a"])
    reports = {"r.json": "--report-json", "r.xml": "--junit", "r.md": "--markdown", "r.html": "--html"}
    argv = ["run", "--no-color", "--provider", "openai", "--base-url", server.base_url_for("openai"), "-v",
            "--record", "--keep-raw"]
    for name, flag in reports.items():
        argv += [flag, name]
    env = live_env("openai", OPENAI_API_KEY=key)
    res = CliRunner().invoke(cli, argv, env=env, catch_exceptions=False)
    assert res.exit_code in (0, 1), res.output
    assert server.requests and server.requests[0].api_key == key.strip()  # it was really sent
    assert_absent("terminal", res.output + res.stderr, secret)
    assert "Traceback" not in res.output
    for name in reports:
        assert_absent(name, (project / name).read_text("utf-8"), secret)
    written = [p for p in (pack.dir / "recordings").rglob("*") if p.is_file()]
    assert written or spelling == "SDK error header value"
    for path in written:
        assert_absent(str(path), path.read_text("utf-8"), secret)
    # observe: its terminal output and every file it writes.
    (project / "observe").mkdir()
    (project / "observe" / "echo.json").write_text(json.dumps({
        "messages": [{"role": "user", "content": "q:echo"}], "tools": WEATHER_TOOLS}), "utf-8")
    res = CliRunner().invoke(cli, ["observe", "--provider", "openai", "--model", "model-o", "--base-url",
                                   server.base_url_for("openai"), "--input", "observe", "--output",
                                   "packs/observed", "--no-color", "--keep-raw"], env=env, catch_exceptions=False)
    assert res.exit_code in (0, 1) and "Traceback" not in res.output, res.output
    assert_absent("observe", res.output + res.stderr, secret)
    for path in (project / "packs" / "observed").rglob("*"):
        if path.is_file():
            assert_absent(str(path), path.read_text("utf-8"), secret)
