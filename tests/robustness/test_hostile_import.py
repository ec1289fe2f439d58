"""What `replayci import` reads is data: a recording of any shape — a URL that is no URL, tools
that are no tools, a trace whose attributes hold the wrong types, an encrypted eval log — is
imported, listed as not imported with the reason, or refused naming the file (exit 2): never a
traceback or exit 3. And what it writes, `replayci` runs."""
from __future__ import annotations

import json
import re
import zipfile

import pytest
from cassettes import completion, first_request, interaction, second_request, write_cassette
from click.testing import CliRunner

from replayci.cli import cli


def imported(tmp_path, source):
    """Import *source* into a new pack, then run the pack when something was written."""
    pack = tmp_path / "pack"
    res = CliRunner().invoke(cli, ["import", str(source), "--pack", str(pack)])
    assert res.exit_code in (0, 2), (res.exit_code, res.output)
    assert "Traceback" not in res.output and "internal error" not in res.output, res.output
    if res.exit_code == 0 and (pack / "pack.yaml").exists():
        ran = CliRunner().invoke(cli, ["--pack", str(pack), "--provider", "recorded", "--no-color"])
        assert ran.exit_code in (0, 1), ran.output  # a pack import wrote loads and runs
    return res


def _with_tools(tools):
    request = first_request()
    request["tools"] = tools
    return [interaction(request, completion(call=True))]


def _earlier_turn(calls):
    request = second_request()
    request["messages"][2]["tool_calls"] = calls
    return [interaction(first_request(), completion(call=True)), interaction(request, completion(call=False))]


CASSETTES = {
    "a URI that is no URL": lambda: [interaction(first_request(), completion(call=True),
                                                 uri="https://[zz/v1/chat/completions")],
    "tools that are strings": lambda: _with_tools(["get_weather", "lookup"]),
    "tools that are an object": lambda: _with_tools({"get_weather": {}}),
    "tools that are a string": lambda: _with_tools("get_weather"),
    "tools holding null": lambda: _with_tools([None]),
    "a function without a name": lambda: _with_tools([{"type": "function", "function": {"parameters": {}}}]),
    "a tool with a name that is a number": lambda: _with_tools([{"type": "function", "function": {"name": 5}}]),
    "tool calls that are a number in an earlier turn": lambda: _earlier_turn(5),
    "tool calls that are an object in an earlier turn": lambda: _earlier_turn({"id": "x"}),
    "a tool result answering a list id": lambda: [
        interaction(first_request(), completion(call=True)),
        interaction({**second_request(), "messages": [*second_request()["messages"][:3],
                                                      {"role": "tool", "tool_call_id": ["x"], "content": "ok"}]},
                    completion(call=False))],
}


@pytest.mark.parametrize("name", list(CASSETTES), ids=list(CASSETTES))
def test_a_cassette_of_any_shape_is_imported_or_listed(tmp_path, name):
    res = imported(tmp_path, write_cassette(tmp_path / "c.yaml", CASSETTES[name]()))
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("name", ["tools that are strings", "tools holding null", "a function without a name",
                                  "tools that are an object"])
def test_tools_no_provider_accepts_are_listed_with_the_reason(tmp_path, name):
    res = imported(tmp_path, write_cassette(tmp_path / "c.yaml", CASSETTES[name]()))
    assert "0 imported" in res.output and "1 unsupported" in res.output and "tools" in res.output, res.output


def _span(attributes):
    return {"name": "chat", "context": {"trace_id": "t1", "span_id": "s1"},
            "attributes": {"gen_ai.system": "openai", "logfire.tags": ["LLM"], **attributes}}


SPANS = {
    "messages of mixed types": {"request_data": {"model": "gpt-4o", "messages": ["{}", 5, {"role": "user",
                                                                                             "content": "hi"}]},
                                "response_data": {"message": {"role": "assistant", "content": "x"}}},
    "a message that is a list": {"request_data": {"model": "gpt-4o", "messages": [[{"role": "user"}]]},
                                 "response_data": {"message": {"role": "assistant", "content": "x"}}},
    "tools that are a string": {"request_data": {"model": "gpt-4o", "tools": "x",
                                                 "messages": [{"role": "user", "content": "hi"}]},
                                "response_data": {"message": {"role": "assistant", "content": "x"}}},
}


@pytest.mark.parametrize("name", list(SPANS), ids=list(SPANS))
def test_trace_attributes_of_unexpected_types_are_data(tmp_path, name):
    source = tmp_path / "trace.json"
    source.write_text(json.dumps([_span(SPANS[name])]))
    assert imported(tmp_path, source).exit_code == 0


def test_an_eval_log_with_an_encrypted_member_is_named(tmp_path):
    source = tmp_path / "log.eval"
    with zipfile.ZipFile(source, "w") as archive:
        archive.writestr("header.json", json.dumps({"version": 2, "eval": {"task": "t"}}))
        archive.writestr("samples/1_epoch_1.json", json.dumps({"id": 1, "epoch": 1, "events": []}))
    data = bytearray(source.read_bytes())
    for signature, flags in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # the "encrypted" bit of each header
        at = data.find(signature)
        while at >= 0:
            data[at + flags] |= 1
            at = data.find(signature, at + 4)
    source.write_bytes(bytes(data))
    res = imported(tmp_path, source)
    assert "log.eval" in res.output and "encrypted" in res.output, res.output  # listed as not read, or refused


def test_grouping_sessions_asks_a_bounded_number_of_pairs(monkeypatch):
    """Grouping 2,000 lone calls, each answered with a tool call (every one an open loop), and
    then their follow-ups compares each call with a bounded number of earlier ones: never every
    pair (a 10,000-call cassette took minutes)."""
    from replayci.capture import sessions

    asked = []
    real = sessions.link
    monkeypatch.setattr(sessions, "link", lambda prev, nxt: asked.append(1) or real(prev, nxt))
    answer = {"success": True, "tool_calls": [{"id": "c", "name": "get_weather", "arguments": {"location": "P"}}]}
    calls = []
    for n in range(2000):
        asked_first = [{"role": "user", "content": f"question {n}"}]
        calls.append(sessions.Call({"messages": asked_first}, answer, "openai-chat"))
    for n in range(0, 2000, 2):  # half the loops go on
        messages = [{"role": "user", "content": f"question {n}"},
                    {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {
                        "name": "get_weather", "arguments": '{"location": "P"}'}}]},
                    {"role": "tool", "tool_call_id": "c", "content": "sunny"}]
        calls.append(sessions.Call({"messages": messages}, {"success": True, "content": "ok"}, "openai-chat"))
    found = sessions.group(calls)
    assert [s.members for s in found] == [[n, 2000 + n // 2] for n in range(0, 2000, 2)]
    assert len(asked) <= 2 * len(calls), len(asked)


def test_a_fifo_among_the_sources_is_passed_over_never_opened(tmp_path):
    """A FIFO in a source folder would block the import forever: it is listed as a file no
    format reads; named on the command line, it is refused (exit 2)."""
    import os
    import threading

    folder = tmp_path / "recordings"
    write_cassette(folder / "c.yaml", [interaction(first_request(), completion(call=True))])
    os.mkfifo(folder / "pipe.yaml")
    done = threading.Event()
    threading.Thread(target=_unblock, args=(folder / "pipe.yaml", done), daemon=True).start()
    try:
        res = imported(tmp_path, folder)
        assert res.exit_code == 0 and "1 imported" in res.output, res.output
        res = CliRunner().invoke(cli, ["import", str(folder / "pipe.yaml"), "--pack", str(tmp_path / "p2")])
        assert res.exit_code == 2 and "pipe.yaml" in res.output and "not a regular file" in res.output, res.output
    finally:
        done.set()


def _unblock(path, done) -> None:
    """A reader that opened the FIFO (the rule broken) gets end of file after a while instead of
    hanging the suite."""
    import os

    while not done.wait(3):
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br"])
def test_a_body_inflating_past_32_mib_is_not_read(tmp_path, encoding):
    """A small compressed body that inflates past the limit a live answer has (32 MiB) is listed
    as not read (inflated no further than the limit), and the rest is imported."""
    import base64
    import gzip
    import zlib

    from replayci.capture.importers.http import MAX_INFLATED_BYTES
    from replayci.providers.http import MAX_BODY_BYTES

    assert MAX_INFLATED_BYTES == MAX_BODY_BYTES
    raw = b"{" + b" " * MAX_INFLATED_BYTES + b"}"
    if encoding == "br":
        brotli = pytest.importorskip("brotli")
        packed = brotli.compress(raw, quality=1)
    else:
        packed = gzip.compress(raw, 1) if encoding == "gzip" else zlib.compress(raw, 1)
    del raw
    source = write_cassette(tmp_path / "c.yaml", [interaction(
        first_request(), packed, body_form=lambda b: {"base64_string": base64.b64encode(b).decode()},
        response_headers={"Content-Encoding": [encoding]}),
        interaction(first_request(), completion(call=False))])
    res = imported(tmp_path, source)
    assert res.exit_code == 0 and "1 imported" in res.output and "past 32 MiB" in res.output, res.output


# ----------------------------------------------------------------------------- what import writes, replayci runs

def _answer_calling(name: str, arguments: dict, n: int = 1) -> dict:
    doc = completion(call=True)
    doc["choices"][0]["message"]["tool_calls"] = [
        {"id": f"call_{k}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        for k in range(n)]
    return doc


def _tool(name: str, properties: dict) -> list:
    return [{"type": "function", "function": {"name": name, "parameters": {"type": "object",
                                                                         "properties": properties}}}]


def _offered(tools: list, answer: dict, status: int = 200) -> list:
    request = first_request()
    request["tools"] = tools
    return [interaction(request, answer, status=status)]


WIDE = {f"a{k}": {"type": "integer"} for k in range(60)}
RUNNABLE = {
    "a status of 99": lambda: [interaction(first_request(), completion(call=True), status=99)],
    "a status of 600": lambda: [interaction(first_request(), completion(call=True), status=600)],
    "a status of 0": lambda: [interaction(first_request(), completion(call=True), status=0)],
    "a tool named multi_tool_call": lambda: _offered(_tool("multi_tool_call", {"x": {"type": "string"}}),
                                                     _answer_calling("multi_tool_call", {"x": "y"})),
    "U+0085 in a value": lambda: _offered(_tool("get_weather", {"location": {"type": "string"}}),
                                          _answer_calling("get_weather", {"location": "Paris\x85Nord"})),
    "U+2028 in a value": lambda: _offered(_tool("get_weather", {"location": {"type": "string"}}),
                                          _answer_calling("get_weather", {"location": "Paris\u2028Nord"})),
    "U+0085 in an argument name": lambda: _offered(_tool("get_weather", {"loc\x85ation": {"type": "string"}}),
                                                   _answer_calling("get_weather", {"loc\x85ation": "Paris"})),
    "a BOM and U+FEFF in an argument name": lambda: _offered(
        _tool("get_weather", {"\ufefflocation": {"type": "string"}}),
        _answer_calling("get_weather", {"\ufefflocation": "Paris"})),
    "U+007F in a value": lambda: _offered(_tool("get_weather", {"location": {"type": "string"}}),
                                          _answer_calling("get_weather", {"location": "Paris\x7f"})),
    "60,000 arguments": lambda: _offered(_tool("wide", {}), _answer_calling("wide", {
        f"a{k}": k for k in range(60_000)})),
    "800 calls of a 60-argument tool": lambda: _offered(_tool("wide", WIDE), _answer_calling(
        "wide", {f"a{k}": k for k in range(60)}, 800)),
    "a schema the provider rejected": lambda: _offered(
        [{"type": "function", "function": {"name": "f", "parameters": {"type": "objekt"}}}],
        {"error": {"message": "Invalid schema for function 'f'", "type": "invalid_request_error"}}, status=400),
    "a schema $ref to a URL": lambda: _offered(
        [{"type": "function", "function": {"name": "f", "parameters": {
            "$ref": "https://example.com/schema.json"}}}], _answer_calling("f", {})),
    "one tool offered twice": lambda: _offered(_tool("get_weather", {}) + _tool("get_weather", {}),
                                               _answer_calling("get_weather", {})),
}


def _many_wide(n: int) -> list:
    return [interaction({**first_request(), "tools": _tool("wide", WIDE), "messages": [
        {"role": "user", "content": f"question {k}"}]}, _answer_calling("wide", {
            f"a{a}": a + k for a in range(60)})) for k in range(n)]


def test_a_generated_contract_pins_less_past_its_node_budget(tmp_path, monkeypatch):
    """The same rule, on a budget small enough to reach with a few cases: the contract is within
    it, each case still pins its calls by name, and the smaller cases keep their arguments."""
    from replayci.capture import budget

    monkeypatch.setattr(budget, "NODE_BUDGET", 3000)
    exchanges = _many_wide(8) + [interaction(first_request(), completion(call=True))]
    res = imported(tmp_path, write_cassette(tmp_path / "c.yaml", exchanges, as_json=True))
    assert "9 imported" in res.output, res.output
    import yaml

    for path in (tmp_path / "pack" / "contracts").glob("*.yaml"):
        doc = yaml.safe_load(path.read_text())
        assert budget.nodes(doc["golden_cases"]) <= 3000
        for case in doc["golden_cases"]:
            assert case["assertions"]["expected_tool_calls"][0]["name"] in ("wide", "get_weather")
    weather = yaml.safe_load((tmp_path / "pack" / "contracts" / "captured_get_weather.yaml").read_text())
    assert weather["golden_cases"][0]["assertions"]["expected_tool_calls"][0]["argument_invariants"]


@pytest.mark.parametrize("name", list(RUNNABLE), ids=list(RUNNABLE))
def test_what_import_writes_replayci_runs(tmp_path, name):
    """Each exchange is imported in a form the pack accepts (the pack runs, exit 0 or 1), or
    listed as not imported with the reason."""
    res = imported(tmp_path, write_cassette(tmp_path / "c.yaml", RUNNABLE[name](), as_json=True))
    assert res.exit_code == 0, res.output
    assert re.search(r"\b[1-9]\d* imported,", res.output) or "1 unsupported" in res.output, res.output


# ----------------------------------------------------------------------------- messages name the right thing

def test_a_latin1_byte_in_a_yaml_cassette_is_named_by_line_and_byte(tmp_path):
    source = write_cassette(tmp_path / "c.yaml", [interaction(first_request(), completion(call=True))])
    text = source.read_bytes()
    line = text[: text.index(b"What is the weather")].count(b"\n") + 1
    source.write_bytes(text.replace(b"What is the weather", b"Caf\xe9 weather"))
    res = imported(tmp_path, source)
    assert f"c.yaml:{line}:" in res.output and "byte 0xe9 is not UTF-8" in res.output, res.output


def test_a_source_file_whose_name_is_not_utf8_is_named_and_imported(tmp_path):
    import os

    folder = tmp_path / "recordings"
    write_cassette(folder / "ok.yaml", [interaction(first_request(), completion(call=True))])
    os.rename(folder / "ok.yaml", os.fsencode(folder) + b"/caf\xe9.yaml")
    res = imported(tmp_path, folder)
    assert res.exit_code == 0 and "caf\\xe9.yaml" in res.output and "1 imported" in res.output, res.output
