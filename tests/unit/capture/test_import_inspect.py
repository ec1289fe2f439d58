"""inspect_ai eval logs: each model event's call is the exact provider request and response,
from a `.json` log or an `.eval` zip read in memory; broken input is a message naming the file."""
from __future__ import annotations

import json
import zipfile

import pytest

from replayci import formats
from replayci.capture.importers import inspect_log, otel
from replayci.core.errors import ConfigError

REQUEST = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "attachment://a1"}],
           "tools": [{"type": "function", "function": {"name": "go", "description": "attachment://a2",
                                                       "parameters": {"type": "object"}}}],
           "tool_choice": "auto", "extra_headers": {"x-irid": "abc", "Authorization": "Bearer sk-secret-1"}}
RESPONSE = {"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini", "choices": [
    {"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "go", "arguments": '{"url": "https://x.test"}'}}]}}]}
ANTHROPIC_REQUEST = {"model": "claude-x", "max_tokens": 50, "system": "s",
                     "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
ANTHROPIC_RESPONSE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
                      "content": [{"type": "text", "text": "hello"}], "stop_reason": "end_turn"}


def _sample(events, sample_id=1):
    return {"id": sample_id, "epoch": 1, "events": events,
            "attachments": {"a1": "Open the page", "a2": "Navigate to a URL"}}


def _events():
    return [
        {"event": "sample_init"},
        {"event": "model", "model": "openai/gpt-4o-mini", "call": {"request": REQUEST, "response": RESPONSE}},
        {"event": "tool", "function": "go"},
        {"event": "model", "model": "anthropic/claude-x",
         "call": {"request": ANTHROPIC_REQUEST, "response": ANTHROPIC_RESPONSE}},
        {"event": "model", "model": "mockllm/model", "call": None},
    ]


def _json_log(tmp_path, samples, name="log.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"version": 2, "status": "success", "eval": {"task": "t"}, "samples": samples}))
    return path


def _eval_log(tmp_path, samples, name="log.eval", header=True):
    path = tmp_path / name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("_journal/start.json", json.dumps({"version": 2, "eval": {"task": "t"}}))
        for sample in samples:
            archive.writestr(f"samples/{sample['id']}_epoch_1.json", json.dumps(sample))
        if header:
            archive.writestr("header.json", json.dumps({"version": 2, "status": "success", "eval": {"task": "t"}}))
    return path


@pytest.mark.parametrize("write", [_json_log, _eval_log])
def test_model_calls_imported_as_sent(tmp_path, write):
    path = write(tmp_path, [_sample(_events())])
    assert inspect_log.detect(str(path), path.read_bytes()[:65536])
    assert not otel.detect(str(path), path.read_bytes()[:65536])
    reading = inspect_log.read(str(path), path.name)
    assert reading.format == "inspect" and reading.file == path.name
    first, second = reading.exchanges
    assert (first.entry, first.group, first.fidelity) == ("1/1/1", "1/1", "wire")
    assert first.endpoint == "/v1/chat/completions"
    assert first.response == RESPONSE
    assert first.request["messages"][0]["content"] == "Open the page"  # attachments resolved
    assert first.request["tools"][0]["function"]["description"] == "Navigate to a URL"
    assert "extra_headers" not in first.request and first.secrets == ("Bearer sk-secret-1", "sk-secret-1")
    assert [c["name"] for c in formats.normalize(first.response)["tool_calls"]] == ["go"]
    assert (second.entry, second.endpoint, second.request) == ("1/1/3", "/v1/messages", ANTHROPIC_REQUEST)
    assert formats.normalize(second.response)["content"] == "hello"
    assert [(p.entry, p.kind) for p in reading.passed] == [("1/1/4", "not_captured")]
    assert "mockllm/model" in reading.passed[0].reason


def test_samples_and_epochs_group_their_calls(tmp_path):
    samples = [_sample(_events()[:2], 1), _sample(_events()[:2], 2)]
    reading = inspect_log.read(str(_json_log(tmp_path, samples)), "log.json")
    assert [e.group for e in reading.exchanges] == ["1/1", "2/1"]


def test_unreadable_calls_listed(tmp_path):
    events = [{"event": "model", "model": "x/y", "call": {"request": {"prompt": 1}, "response": {"a": 1}}},
              {"event": "model", "model": "x/y", "call": {"request": REQUEST, "response": None}},
              {"event": "model", "model": "x/y", "call": {"request": REQUEST, "response": {"foo": 1}}}]
    reading = inspect_log.read(str(_json_log(tmp_path, [_sample(events)])), "log.json")
    assert reading.exchanges == []
    assert [p.kind for p in reading.passed] == ["unsupported", "not_captured", "unsupported"]
    assert "does not read" in reading.passed[0].reason and "no response" in reading.passed[1].reason


def _refused(path, display):
    with pytest.raises(ConfigError) as exc:
        inspect_log.read(str(path), display)
    return str(exc.value)


def test_a_zip_that_is_not_an_eval_log(tmp_path):
    path = tmp_path / "other.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hello")
    assert not inspect_log.detect(str(path), path.read_bytes())
    assert _refused(path, "other.eval").startswith("other.eval: a zip that is not an inspect_ai eval log")


def test_a_broken_member_named(tmp_path):
    path = _eval_log(tmp_path, [])
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("samples/9_epoch_1.json", '{"id": 9, "events": [')
    message = _refused(path, "log.eval")
    assert message.startswith("log.eval (member samples/9_epoch_1.json):") and "invalid JSON" in message


def test_a_truncated_zip(tmp_path):
    path = _eval_log(tmp_path, [_sample(_events())])
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    message = _refused(path, "cut.eval")
    assert message.startswith("cut.eval")


def test_json_that_is_no_eval_log(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"version": 2, "samples": []}))
    assert "not an inspect_ai eval log" in _refused(path, "x.json")
    path.write_text("not json")
    assert _refused(path, "x.json").startswith("x.json:1:1: invalid JSON")
    path.write_text(json.dumps({"version": 2, "eval": {}, "samples": [3]}))
    assert _refused(path, "x.json") == "x.json: samples[0]: a sample must be a JSON object"


def test_deep_nesting_refused(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"version": 2, "eval": ' + "[" * 3000 + "]" * 3000 + "}")
    assert _refused(path, "deep.json").startswith("deep.json")
