"""Imported agent sessions as real agents record them: a step whose call broke its tool's schema
and was retried, and parallel tool calls whose results came back in another order."""
from __future__ import annotations

import json
from pathlib import Path

import yaml
from cassettes import TOOLS, first_request, interaction, write_cassette
from click.testing import CliRunner

from replayci.api import run as run_packs
from replayci.cli import cli
from replayci.core.memo import clear_caches


def _chat(*calls: tuple[str, str, dict], id_: str = "chatcmpl-1", text: str | None = None) -> dict:
    """A chat completion answering with *calls* ((id, name, arguments)), or *text*."""
    message: dict = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [{"id": cid, "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(args)}}
                                 for cid, name, args in calls]
    return {"id": id_, "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}}


def _asked(answer: dict) -> dict:
    return answer["choices"][0]["message"]


def _result(call_id: str, content: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def _import(tmp_path: Path, interactions: list[dict]) -> Path:
    path = write_cassette(tmp_path / "agent.yaml", interactions)
    pack = tmp_path / "pack"
    res = CliRunner().invoke(cli, ["import", str(path), "--pack", str(pack)], catch_exceptions=False)
    assert res.exit_code == 0 and "1 session" in res.output, res.output
    return pack


def _run(pack: Path) -> list:
    clear_caches()
    return run_packs([str(pack)], provider="recorded", processes=1).cases


def _scenario(pack: Path) -> tuple[Path, dict]:
    path = next(p for p in (pack / "golden").rglob("session-*.json"))
    return path, json.loads(path.read_text())


# ----------------------------------------------------------------------------- a retried step


def _retried_session() -> list[dict]:
    """get_weather called with a number (the schema wants a string), the tool says so, the model
    calls again as the schema asks, then answers."""
    first = first_request()
    bad = _chat(("call_1", "get_weather", {"location": 7}))
    second = first_request()
    second["messages"] += [_asked(bad), _result("call_1", "error: location must be a string")]
    good = _chat(("call_2", "get_weather", {"location": "Paris"}), id_="chatcmpl-2")
    third = json.loads(json.dumps(second))
    third["messages"] += [_asked(good), _result("call_2", "Sunny, 21 C")]
    done = _chat(id_="chatcmpl-3", text="It is sunny in Paris.")
    return [interaction(first, bad), interaction(second, good), interaction(third, done)]


def test_a_session_with_a_step_that_broke_its_schema_and_was_retried_passes_at_once(tmp_path):
    pack = _import(tmp_path, _retried_session())
    contract = next((pack / "contracts").glob("session_*.yaml"))
    checks = yaml.safe_load(contract.read_text())["trajectory"]
    assert checks["retried_steps"] == [{"step": 1, "expected_error": "schema_violation"}]
    assert [c.status for c in _run(pack)] == ["pass"]
    res = CliRunner().invoke(cli, ["validate", "--pack", str(pack)])
    assert res.exit_code == 0, res.output


def _edited(pack: Path, edit) -> str:
    """The run's classification of the session after *edit* of its recorded trajectory."""
    path, doc = _scenario(pack)
    before = path.read_text()
    edit(doc["trajectory"])
    path.write_text(json.dumps(doc))
    try:
        (case,) = _run(pack)
        return case.classification if case.status == "fail" else case.status
    finally:
        path.write_text(before)


def _step_args(step: dict, args: dict) -> None:
    call = step["response"]["tool_calls"][0]
    call["arguments"] = args
    if "arguments_raw" in call:
        call["arguments_raw"] = json.dumps(args)


def test_the_retried_session_still_catches_a_regression(tmp_path):
    pack = _import(tmp_path, _retried_session())
    # The retry breaks the schema too: no longer the recorded session.
    assert _edited(pack, lambda t: _step_args(t[1], {"location": 8})) == "schema_violation"
    # The broken step breaks it otherwise (another value): its recorded arguments are pinned.
    assert _edited(pack, lambda t: _step_args(t[0], {"location": 9})) not in ("pass", "error")
    # The model gives up after the broken step: the tool sequence changes.
    assert _edited(pack, lambda t: t.pop(1) and t.pop(1)) not in ("pass", "error")
    assert [c.status for c in _run(pack)] == ["pass"]


# ----------------------------------------------------------------------------- parallel calls


WEATHER_AND_TIME = TOOLS + [{"type": "function", "function": {
    "name": "get_time", "description": "The time in a city.",
    "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}}]


def _parallel_session() -> list[dict]:
    """Two parallel calls; their results come back in the other order, each naming its call."""
    first = first_request() | {"tools": WEATHER_AND_TIME}
    asked = _chat(("call_w", "get_weather", {"location": "Paris"}), ("call_t", "get_time", {"location": "Paris"}))
    second = json.loads(json.dumps(first))
    second["messages"] += [_asked(asked), _result("call_t", "14:05"), _result("call_w", "Sunny, 21 C")]
    done = _chat(id_="chatcmpl-2", text="Sunny, and it is 14:05.")
    return [interaction(first, asked), interaction(second, done)]


def test_results_of_parallel_calls_are_matched_by_call_id_not_position(tmp_path):
    pack = _import(tmp_path, _parallel_session())
    _, doc = _scenario(pack)
    by_call = {r["call_id"]: (r["tool"], r["result"]) for r in doc["trajectory"][0]["tool_results"]}
    assert by_call == {"call_w": ("get_weather", "Sunny, 21 C"), "call_t": ("get_time", "14:05")}
    table = {r["tool"]: r["result"] for r in doc["tool_results"]}
    assert table == {"get_weather": "Sunny, 21 C", "get_time": "14:05"}
    assert [c.status for c in _run(pack)] == ["pass"]
