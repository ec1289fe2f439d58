"""Structured output: the schema each wire format asks for, the answer's JSON as `output`,
`malformed_output` and `schema_violation`, a CLI run, and import pinning `$.output`. The
payloads have the shape of real recorded traffic (mirascope's e2e cassettes: "recommend the
most popular book by Patrick Rothfuss", answered by gpt-4o, claude-sonnet-4-5 and
gemini-2.5-flash)."""
from __future__ import annotations

import copy
import json

import pytest
from builders import fixture
from cassettes import interaction, write_cassette
from click.testing import CliRunner

import replayci
from replayci.cli import cli
from replayci.formats import normalize, to_neutral
from replayci.formats.output import output_schema, with_output

QUESTION = "Please recommend the most popular book by Patrick Rothfuss"
BOOK = {"$defs": {"Author": {"type": "object", "description": "The author of a book.", "title": "Author",
                             "properties": {"first_name": {"type": "string", "title": "First Name"},
                                            "last_name": {"type": "string", "title": "Last Name"}},
                             "additionalProperties": False, "required": ["first_name", "last_name"]}},
        "type": "object", "description": "A book with a rating. The title should be in all caps!", "title": "Book",
        "properties": {"title": {"type": "string", "title": "Title"}, "author": {"$ref": "#/$defs/Author"},
                       "rating": {"type": "integer", "title": "Rating"}},
        "additionalProperties": False, "required": ["title", "author", "rating"]}
GEMINI_BOOK = {"description": "A book with a rating.", "title": "Book", "type": "OBJECT",
               "properties": {"title": {"title": "Title", "type": "STRING"},
                              "author": {"type": "OBJECT", "title": "Author", "required": ["first_name", "last_name"],
                                         "properties": {"first_name": {"type": "STRING"},
                                                        "last_name": {"type": "STRING"}},
                                         "property_ordering": ["first_name", "last_name"]},
                              "rating": {"title": "Rating", "type": "INTEGER"}},
               "property_ordering": ["title", "author", "rating"], "required": ["title", "author", "rating"]}
ANSWER = {"title": "THE NAME OF THE WIND", "author": {"first_name": "Patrick", "last_name": "Rothfuss"}, "rating": 7}
DROPPED = {"title": "THE NAME OF THE WIND", "author": {"first_name": "Patrick", "last_name": "Rothfuss"}}
PROSE = "The most popular book by Patrick Rothfuss is The Name of the Wind."


def chat(text):
    return {"id": "chatcmpl-CRl22oSg7FN0jyBZIaDzsYieCsVY1", "object": "chat.completion", "created": 1760731682,
            "model": "gpt-4o-2024-08-06", "choices": [{"index": 0, "message": {
                "role": "assistant", "content": text, "refusal": None, "annotations": []},
                "logprobs": None, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 172, "completion_tokens": 29, "total_tokens": 201}}


def responses(text):
    return {"id": "resp_0e2af4b9d9313f56", "object": "response", "created_at": 1761175256, "status": "completed",
            "error": None, "incomplete_details": None, "model": "gpt-4o-2024-08-06",
            "output": [{"id": "msg_0e2af4b9", "type": "message", "status": "completed", "role": "assistant",
                        "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": text}]}],
            "usage": {"input_tokens": 172, "output_tokens": 29, "total_tokens": 201}}


def gemini(text):
    return {"candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP",
                            "index": 0}],
            "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 29, "totalTokenCount": 267},
            "modelVersion": "gemini-2.5-flash", "responseId": "p5pgaZmuOqHQz7IP0srSwQM"}


def anthropic(text):
    return {"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929", "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 390, "output_tokens": 32}}


USER = [{"role": "user", "content": QUESTION}]
FORMATS = {  # name: (the request as its SDK sends it, the answer's wire form, the schema it asks for)
    "openai-chat": ({"messages": USER, "model": "gpt-4o", "response_format": {"type": "json_schema", "json_schema": {
        "name": "Book", "schema": BOOK, "strict": True}}}, chat, BOOK),
    "openai-responses": ({"input": USER, "model": "gpt-4o", "text": {"format": {
        "type": "json_schema", "name": "Book", "schema": BOOK, "strict": True}}}, responses, BOOK),
    "gemini": ({"contents": [{"parts": [{"text": QUESTION}], "role": "user"}], "generationConfig": {
        "responseMimeType": "application/json", "responseSchema": GEMINI_BOOK}}, gemini, "lowered"),
    "gemini-json-schema": ({"contents": [{"parts": [{"text": QUESTION}], "role": "user"}], "generationConfig": {
        "responseMimeType": "application/json", "responseJsonSchema": BOOK}}, gemini, BOOK),
    "anthropic": ({"max_tokens": 16000, "messages": USER, "model": "claude-sonnet-4-5",
                   "output_format": {"schema": BOOK, "type": "json_schema"}}, anthropic, BOOK),
    "anthropic-output-config": ({"max_tokens": 16000, "messages": USER, "model": "claude-sonnet-4-5",
                                 "output_config": {"format": {"schema": BOOK, "type": "json_schema"}}}, anthropic,
                                BOOK),
    "openai-chat-json-object": ({"messages": USER, "model": "gpt-4o", "response_format": {"type": "json_object"}},
                                chat, {"type": "object"}),
}


@pytest.mark.parametrize("name", list(FORMATS))
def test_each_format_names_its_output_schema_before_and_after_the_neutral_form(name):
    native, _, schema = FORMATS[name]
    _, neutral = to_neutral(copy.deepcopy(native))
    if schema == "lowered":
        schema = output_schema(native)
        assert schema["type"] == "object" and schema["properties"]["author"]["properties"]["last_name"] == {
            "type": "string"}
    assert output_schema(native) == output_schema(neutral) == schema


def test_requests_that_ask_for_text_have_no_output_schema():
    for request in ({"messages": USER}, {"messages": USER, "response_format": {"type": "text"}},
                    {"input": "hi", "text": {"format": {"type": "text"}, "verbosity": "low"}},
                    {"contents": [], "generationConfig": {"temperature": 0.2, "responseMimeType": "text/plain"}},
                    {"messages": USER, "output_format": None}, "not a request", {"response_format": "json"}):
        assert output_schema(request) is None
    # A JSON mime type without a schema: any JSON will do.
    assert output_schema({"contents": [], "generationConfig": {"response_mime_type": "application/json"}}) == {}


def contract(pack, extra=""):
    pack.contract("book", "description: structured answers\n" + extra + "golden_cases:\n"
                  "  - {id: book, input_ref: book.json}\n")
    pack.fixture("book.json", fixture({"messages": USER}, None))
    return replayci.load_pack(pack.dir).contracts[0]


@pytest.mark.parametrize("name", list(FORMATS))
def test_each_format_parses_checks_and_refuses_prose(pack, name):
    native, answer, _ = FORMATS[name]
    _, neutral = to_neutral(copy.deepcopy(native))
    rules = contract(pack, "assertions:\n  output_invariants:\n"
                           "    - {path: $.output.title, equals: THE NAME OF THE WIND}\n")
    good = normalize(answer(json.dumps(ANSWER, separators=(",", ":"))))
    assert with_output(good, neutral)["output"] == ANSWER
    assert replayci.check_response(rules, good, neutral).status == "pass"
    # A required field dropped: the schema catches it (json_object has only "an object" to check).
    dropped = replayci.check_response(rules, normalize(answer(json.dumps(DROPPED))), neutral)
    if name != "openai-chat-json-object":
        assert (dropped.status, dropped.classification) == ("fail", "schema_violation")
        first = dropped.failures[0]
        assert first.message.startswith("output: $ 'rating' is a required property")
        assert (first.path, first.operator) == ("$.output", "required")
    # Prose, or JSON cut short: malformed_output, ranked before any invariant on it.
    for text, why in ((PROSE, "not valid JSON"), (json.dumps(ANSWER)[:40], "not valid JSON"),
                      (json.dumps(ANSWER) * 2, "not valid JSON (Extra data")):
        bad = replayci.check_response(rules, normalize(answer(text)), neutral)
        assert (bad.status, bad.classification) == ("fail", "malformed_output"), (text, bad.failures)
        assert bad.failures[0].message.startswith(f"structured output: {why}") and bad.failures[0].path == "$.output"
        assert [f.kind for f in bad.failures] == ["malformed_output", "invariant_violation"]
    # The same prose to a request that asks for text is no failure of these checks.
    plain = {k: v for k, v in neutral.items() if k not in ("response_format", "generationConfig", "output_format",
                                                            "output_config", "text")}
    assert [f.kind for f in replayci.check_response(rules, normalize(answer(PROSE)), plain).failures] == [
        "invariant_violation"]


def test_a_refusal_or_a_tool_call_gives_no_output(pack):
    native, _, _ = FORMATS["openai-chat"]
    rules = contract(pack)
    refused = chat(None)
    refused["choices"][0]["message"]["refusal"] = "I can't help with that."
    result = replayci.check_response(rules, normalize(refused), native)
    assert result.classification == "malformed_output" and "the model refused" in result.failures[0].message
    called = chat(None)
    called["choices"][0]["message"]["tool_calls"] = [{"id": "call_1", "type": "function", "function": {
        "name": "lookup", "arguments": "{}"}}]
    called["choices"][0]["finish_reason"] = "tool_calls"
    assert "output" not in with_output(normalize(called), native)
    assert replayci.check_response(rules, normalize(called), native).status == "pass"


def test_a_cli_run_per_format(pack, project):
    pack.contract("book", "description: structured answers\ngolden_cases:\n" + "".join(
        f"  - {{id: {name}-{kind}, input_ref: {name}-{kind}.json}}\n" for name in FORMATS for kind in ("ok", "drop")))
    for name, (native, answer, _) in FORMATS.items():
        _, neutral = to_neutral(copy.deepcopy(native))
        for kind, value in (("ok", ANSWER), ("drop", {**ANSWER, "rating": "seven"})):
            pack.fixture(f"{name}-{kind}.json", {"request": neutral, "response": answer(json.dumps(value))})
    res = CliRunner().invoke(cli, ["run", "--no-color", "--json", "--pack", str(pack.dir)], catch_exceptions=False)
    assert res.exit_code == 1, res.output
    cases = {c["case"]: c for c in json.loads(res.stdout)["cases"]}
    for name in FORMATS:
        assert cases[f"{name}-ok"]["status"] == "pass", cases[f"{name}-ok"]
        dropped = cases[f"{name}-drop"]
        if name == "openai-chat-json-object":
            assert dropped["status"] == "pass"  # any object will do
            continue
        assert (dropped["status"], dropped["classification"]) == ("fail", "schema_violation"), dropped
        assert dropped["failures"][0]["path"] == "$.output.rating"


AGENTS_SCHEMA = {"type": "object", "additionalProperties": False, "title": "Forecast",
                 "properties": {"city": {"type": "string"}, "summary": {"type": "string"},
                                "high_c": {"type": "integer"}},
                 "required": ["city", "summary", "high_c"]}
AGENTS_ANSWER = {"city": "Paris", "summary": "Sunny with a light breeze all afternoon, clear evening.", "high_c": 21}


def agents_request():
    """What the OpenAI Agents SDK sends for an agent with an output_type: a Responses request
    whose text.format is the strict schema of its final output."""
    return {"model": "gpt-4o-mini", "instructions": "You forecast the weather.", "include": [],
            "input": [{"content": "What's the weather in Paris tomorrow?", "role": "user"}],
            "tools": [], "stream": False, "text": {"format": {"type": "json_schema", "name": "final_output",
                                                              "schema": AGENTS_SCHEMA, "strict": True}}}


def test_import_pins_a_structured_answer_and_a_dropped_field_then_fails(pack, project, tmp_path):
    url = "https://api.openai.com/v1/responses"
    source = write_cassette(tmp_path / "cassettes" / "forecast.yaml",
                            [interaction(agents_request(), responses(json.dumps(AGENTS_ANSWER)), uri=url)])
    runner = CliRunner()
    res = runner.invoke(cli, ["import", str(source), "--pack", str(pack.dir)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    (written,) = (pack.dir / "contracts").glob("*.yaml")
    text = written.read_text("utf-8")
    for pin in ("path: $.output\n      type: object", "path: $.output.city\n      equals: Paris",
                "path: $.output.high_c\n      equals: 21", "path: $.output.summary\n      type: string"):
        assert pin in text, text
    assert runner.invoke(cli, ["run", "--no-color", "--pack", str(pack.dir)]).exit_code == 0
    # The model's answer loses a field: the pinned contract fails on it.
    (fixture_path,) = (pack.dir / "golden").rglob("*.json")
    doc = json.loads(fixture_path.read_text("utf-8"))
    doc["response"] = responses(json.dumps({k: v for k, v in AGENTS_ANSWER.items() if k != "high_c"}))
    fixture_path.write_text(json.dumps(doc), "utf-8")
    res = runner.invoke(cli, ["run", "--no-color", "--json", "--pack", str(pack.dir)], catch_exceptions=False)
    assert res.exit_code == 1
    (case,) = json.loads(res.stdout)["cases"]
    assert case["classification"] == "schema_violation"
    assert any(f["path"] == "$.output.high_c" and f["operator"] == "equals" for f in case["failures"])
    # The pin of $.output.high_c fires beside the schema.
    assert "invariant_violation" in {f["kind"] for f in case["failures"]}


def test_import_pins_a_malformed_structured_answer_as_a_negative_case(pack, project, tmp_path):
    url = "https://api.openai.com/v1/responses"
    source = write_cassette(tmp_path / "c.yaml", [interaction(agents_request(), responses(PROSE), uri=url)])
    res = CliRunner().invoke(cli, ["import", str(source), "--pack", str(pack.dir)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    (written,) = (pack.dir / "contracts").glob("*.yaml")
    assert "expected_error: malformed_output" in written.read_text("utf-8")
    assert CliRunner().invoke(cli, ["run", "--no-color", "--pack", str(pack.dir)]).exit_code == 0


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_live_structured_answer_is_checked_against_its_schema(provider, pack, server):
    """The real SDK sends the request's output schema and reads the fake model's text answer;
    the answer's JSON is checked as recorded answers are."""
    from fakeserver import Conversation, Reply
    from livecli import invoke, report_of

    if provider == "openai":
        request = {"messages": USER, "response_format": {"type": "json_schema", "json_schema": {
            "name": "Book", "schema": BOOK, "strict": True}}}
    else:
        request = {"messages": USER, "max_tokens": 1000, "output_format": {"type": "json_schema", "schema": BOOK}}
    pack.contract("book", "description: structured answers\ngolden_cases:\n"
                  "  - {id: ok, input_ref: ok.json}\n  - {id: drop, input_ref: drop.json}\n"
                  "  - {id: prose, input_ref: prose.json}\n")
    for case in ("ok", "drop", "prose"):
        asked = [{"role": "user", "content": f"{QUESTION} ({case})"}]
        pack.fixture(f"{case}.json", fixture({**request, "messages": asked}, None))
    texts = {"ok": json.dumps(ANSWER), "drop": json.dumps(DROPPED), "prose": PROSE}
    server.set_default(lambda req: Conversation([Reply.plain_text(
        next(t for c, t in texts.items() if f"({c})" in json.dumps(req.body)))]))
    res = invoke(provider, server, "--json")
    assert res.exit_code == 1, res.output
    cases = {c["case"]: c for c in report_of(res)["cases"]}
    assert cases["ok"]["status"] == "pass", cases["ok"]
    assert (cases["drop"]["classification"], cases["prose"]["classification"]) == ("schema_violation",
                                                                                    "malformed_output")
    sent = [r.body for r in server.requests]
    key = "response_format" if provider == "openai" else "output_format"
    assert all(body[key] == request[key] for body in sent)  # the schema went out as the request gave it
