"""Secrets never reach the pack, the terminal or an error message, however a recording carries
them: keys of the environment inside a trace or an eval log, a credential in any header whose
name says so, HAR cookies, a key echoed without its scheme or split over a stream's events, a
form body quoted in an error, a URL's password. The secrets here have no key shape, so only the
rules under test can find them."""
from __future__ import annotations

import json
import os
import zipfile

import pytest
from cassettes import completion, first_request, har, har_entry, interaction, write_cassette
from click.testing import CliRunner

from replayci.cli import cli

SECRET = "corpgw7f3a9c1e5b2d4a68e0"  # no provider's key shape
ENV_SECRET = "envgw5b1d9e3c7a2f4e6d80"


def imported(tmp_path, source, *args, env=None):
    """(the import's output, every byte the pack holds afterwards)."""
    pack = tmp_path / "pack"
    res = CliRunner().invoke(cli, ["import", str(source), "--pack", str(pack), "-v", *args], env=env)
    assert res.exit_code in (0, 2) and "Traceback" not in res.output, res.output
    held = b"".join(p.read_bytes() for p in sorted(pack.rglob("*")) if p.is_file()) if pack.exists() else b""
    names = "\n".join(str(p.relative_to(pack)) for p in pack.rglob("*")) if pack.exists() else ""
    return res, held + names.encode()


def _echo(text: str) -> dict:
    doc = completion(call=False)
    doc["choices"][0]["message"]["content"] = f"Your credential was {text}."
    return doc


def _assert_kept_out(res, held, *secrets):
    for secret in secrets:
        assert secret not in res.output, res.output
        assert secret.encode() not in held


def test_environment_keys_inside_a_trace_never_reach_the_pack(tmp_path):
    span = {"name": "chat", "context": {"trace_id": "t1", "span_id": "s1"}, "attributes": {
        "gen_ai.system": "openai", "logfire.tags": ["LLM"],
        "request_data": {"model": "gpt-4o", "messages": [{"role": "user", "content": f"key {ENV_SECRET}"}]},
        "response_data": {"message": {"role": "assistant", "content": f"echo {ENV_SECRET}"}}}}
    source = tmp_path / "trace.json"
    source.write_text(json.dumps([span]))
    res, held = imported(tmp_path, source, env={"OPENAI_API_KEY": ENV_SECRET})
    assert res.exit_code == 0 and b"golden" in held, res.output
    _assert_kept_out(res, held, ENV_SECRET)


def _eval_log(tmp_path, request: dict, response: dict):
    source = tmp_path / "log.eval"
    event = {"event": "model", "model": "openai/gpt-4o-mini", "call": {"request": request, "response": response}}
    with zipfile.ZipFile(source, "w") as archive:
        archive.writestr("header.json", json.dumps({"version": 2, "eval": {"task": "t"}}))
        archive.writestr("samples/1_epoch_1.json", json.dumps({"id": 1, "epoch": 1, "events": [event]}))
    return source


@pytest.mark.parametrize("header", ["X-Amz-Security-Token", "Cookie", "Ocp-Apim-Subscription-Key",
                                    "X-Goog-Api-Key", "X-Portkey-Api-Key", "Proxy-Authorization"])
def test_a_credential_header_of_an_eval_log_is_kept_out_by_its_name(tmp_path, header):
    request = {**first_request(), "extra_headers": {header: SECRET}}
    res, held = imported(tmp_path, _eval_log(tmp_path, request, _echo(SECRET)))
    assert res.exit_code == 0 and b"golden" in held, res.output
    _assert_kept_out(res, held, SECRET)


def test_environment_keys_inside_an_eval_log_never_reach_the_pack(tmp_path):
    request = first_request()
    request["messages"][1]["content"] = f"my key is {ENV_SECRET}"
    res, held = imported(tmp_path, _eval_log(tmp_path, request, _echo(ENV_SECRET)),
                         env={"ANTHROPIC_API_KEY": ENV_SECRET})
    assert res.exit_code == 0 and b"golden" in held, res.output
    _assert_kept_out(res, held, ENV_SECRET)


@pytest.mark.parametrize("header", ["X-Amz-Security-Token", "Cookie", "Ocp-Apim-Subscription-Key",
                                    "Authorization"])
def test_a_credential_header_of_a_cassette_echoed_bare_is_kept_out(tmp_path, header):
    value = f"Bearer {SECRET}" if header == "Authorization" else SECRET
    source = write_cassette(tmp_path / "c.yaml", [interaction(first_request(), _echo(SECRET),
                                                              request_headers={header: [value]})])
    res, held = imported(tmp_path, source)
    assert res.exit_code == 0 and b"golden" in held, res.output
    _assert_kept_out(res, held, SECRET)


def test_har_request_cookies_are_credentials(tmp_path):
    entry = har_entry(first_request(), _echo(SECRET))
    entry["request"]["cookies"] = [{"name": "session", "value": SECRET}]
    source = tmp_path / "x.har"
    source.write_text(json.dumps(har([entry])))
    res, held = imported(tmp_path, source)
    assert res.exit_code == 0 and b"golden" in held, res.output
    _assert_kept_out(res, held, SECRET)


def test_a_key_split_over_stream_deltas_never_reaches_the_pack(tmp_path):
    half = len(SECRET) // 2
    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini"}
    deltas = ["Your key: ", SECRET[:half], SECRET[half:], "."]
    events = [{**chunk, "choices": [{"index": 0, "delta": {"content": d}, "finish_reason": None}]} for d in deltas]
    events.append({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    stream = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    source = write_cassette(tmp_path / "c.yaml", [interaction(
        {**first_request(), "stream": True}, stream, request_headers={"Authorization": [f"Bearer {SECRET}"]},
        response_headers={"Content-Type": ["text/event-stream"]})])
    res, held = imported(tmp_path, source)
    _assert_kept_out(res, held, SECRET[:half], SECRET[half:])
    assert "1 imported" in res.output, res.output  # written with the key taken out of its pieces
    pack = tmp_path / "pack"
    ran = CliRunner().invoke(cli, ["--pack", str(pack), "--provider", "recorded", "--report-json",
                                   str(tmp_path / "r.json"), "--keep-raw"])
    report = (tmp_path / "r.json").read_text()
    assert SECRET[half:] not in ran.output and SECRET[half:] not in report
    assert "Your key: [REDACTED]." in report, report  # what the pack holds, reassembled


def test_a_form_body_is_never_quoted_with_its_key(tmp_path):
    source = write_cassette(tmp_path / "c.yaml", [interaction(None, completion(call=False))])
    text = source.read_text().replace("body: null", f"body: model=gpt-4o&api_key={SECRET}&q=1")
    source.write_text(text)
    res, held = imported(tmp_path, source)
    _assert_kept_out(res, held, SECRET)


def test_a_url_password_is_never_printed(tmp_path):
    source = write_cassette(tmp_path / "c.yaml", [
        interaction(first_request(), completion(call=False), uri=f"https://user:{SECRET}@api.openai.com/v1/models",
                    method="GET"),
        interaction(first_request(), completion(call=False),
                    uri=f"https://user:{SECRET}@api.openai.com/v1/chat/completions")])
    res, held = imported(tmp_path, source)
    _assert_kept_out(res, held, SECRET)


def test_redacted_text_never_names_a_file_a_folder_or_a_description(tmp_path):
    """Text `redact.fields` blanks in the fixtures (the user's question) is not spelled in the
    names and descriptions the import writes either."""
    word = "zanzibarquux"
    source = write_cassette(tmp_path / "c.yaml", [
        interaction({**first_request(), "messages": [{"role": "user", "content": f"Weather in {word}?"}]},
                    completion(call=True)),
        interaction({**first_request(), "messages": [
            {"role": "user", "content": f"Weather in {word}?"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_abc", "type": "function", "function": {
                "name": "get_weather", "arguments": json.dumps({"location": "Paris"})}}]},
            {"role": "tool", "tool_call_id": "call_abc", "content": "Sunny"}]}, completion(call=False))])
    (tmp_path / ".replayci.yml").write_text("redact:\n  fields: ['$.request.messages[*].content', "
                                            "'$.original_request.messages[*].content']\n")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        res, held = imported(tmp_path, source)
    finally:
        os.chdir(cwd)
    assert res.exit_code == 0 and b"session" in held, res.output
    assert word.encode() not in held
