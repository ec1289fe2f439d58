"""The inference that writes generated contracts: what each argument value is pinned by, a case's
own checks, a session's scenario contract, readable names, and which contract files capture still
owns."""
from __future__ import annotations

import functools
import json

import pytest
import yaml

from replayci.api import run as run_packs
from replayci.capture.contracts import (
    HEADER,
    MARKER,
    Case,
    case_name,
    contract_name,
    entry_fields,
    header,
    owned,
    render,
    render_scenario,
    save,
    scenario_name,
)
from replayci.capture.inference import (
    call_invariants,
    case_expectations,
    contract_fields,
    generated_shape,
    message_text,
    slug_words,
    step_invariants,
)
from replayci.capture.yamledit import InsertError, append_golden_cases
from replayci.core.errors import ConfigError
from replayci.core.hashing import h
from replayci.engine.summary import summarize

SCHEMA = {"type": "object", "properties": {
    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    "filters": {"type": "object", "properties": {
        "mode": {"enum": ["strict-and-very-long-mode-name-beyond-forty-chars"]}}},
}}


def request(user: str = "Book it for 2026-12-03, order 550e8400-e29b-41d4-a716-446655440000", **extra) -> dict:
    return {"model": "m", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": user},
                                       {"role": "tool", "tool_call_id": "call_zzzzzzzz9", "content": '{"ref": "R-1"}'}],
            "tools": [{"type": "function", "function": {"name": "book", "parameters": SCHEMA}},
                      {"type": "function", "function": {"name": "cancel"}}], **extra}


def response(*calls: tuple[str, object], content: str | None = None, success: bool = True) -> dict:
    return {"success": success, "content": content, "stop_reason": "tool_calls" if calls else "stop",
            "tool_calls": [{"id": f"call_{i}", "name": n, "arguments": a} for i, (n, a) in enumerate(calls)]}


def test_each_kind_of_value_is_pinned_as_a_faithful_answer_keeps_it():
    said = message_text(request())
    forty, forty_one = "x" * 40, "y" * 41
    args = {"flag": False, "n": 0, "ratio": 1.5, "nothing": None, "short": forty, "long": forty_one,
            "unit": "fahrenheit", "typed_date": "2026-12-03", "minted_date": "2026-11-30",
            "order": "550e8400-e29b-41d4-a716-446655440000", "uuid": "123e4567-e89b-12d3-a456-426614174000",
            "at": "2026-11-26T22:41:20.123Z", "id": "req_8fJ2kq01", "digest": "0123456789abcdef0123",
            "quoted": "order 550e8400-e29b-41d4-a716-446655440000 and more words so it is long",
            "tags": ["a", "b"], "mixed": [1, "a"], "empty": [],
            "filters": {"mode": "strict-and-very-long-mode-name-beyond-forty-chars", "deep": {"k": 3}}}
    assert call_invariants(args, SCHEMA, said) == [  # by key, nested keys after their object
        {"path": "$.at", "regex": r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$"},
        {"path": "$.digest", "regex": "^[0-9a-fA-F]{16,}$"},
        {"path": "$.empty", "type": "array", "length_eq": 0},
        {"path": "$.filters", "type": "object"},
        {"path": "$.filters.deep", "type": "object"},
        {"path": "$.filters.deep.k", "equals": 3},
        {"path": "$.filters.mode", "equals": "strict-and-very-long-mode-name-beyond-forty-chars"},  # enum member
        {"path": "$.flag", "equals": False},
        {"path": "$.id", "regex": "^req_[A-Za-z0-9]+$"},
        {"path": "$.long", "type": "string", "length_gte": 1},
        {"path": "$.minted_date", "regex": r"^\d{4}-\d{2}-\d{2}$"},
        {"path": "$.mixed", "type": "array", "length_eq": 2},
        {"path": "$.mixed[0]", "type": "integer"},
        {"path": "$.mixed[1]", "type": "string"},
        {"path": "$.n", "equals": 0},
        {"path": "$.nothing", "type": "null"},
        {"path": "$.order", "equals": "550e8400-e29b-41d4-a716-446655440000"},
        {"path": "$.quoted", "type": "string", "length_gte": 1},
        {"path": "$.ratio", "equals": 1.5},
        {"path": "$.short", "equals": forty},
        {"path": "$.tags", "type": "array", "length_eq": 2},
        {"path": "$.tags[*]", "type": "string"},
        {"path": "$.typed_date", "equals": "2026-12-03"},  # the user's words win over the shape
        {"path": "$.unit", "equals": "fahrenheit"},
        {"path": "$.uuid", "regex": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"}]
    # A value an earlier tool result holds is said too; odd keys get bracketed paths.
    assert call_invariants({"ref": "R-1", "a b": True}, None, said) == [
        {"path": '$["a b"]', "equals": True}, {"path": "$.ref", "equals": "R-1"}]
    assert call_invariants("not an object", SCHEMA, said) == []


@pytest.mark.parametrize(("value", "minted"), [
    ("call_8fJ2kq", True), ("call_8fJ2k", False),  # a tail of 6 or more
    ("call_abcdefgh", False),  # no digit: a word, not an id
    ("toolu_01AbCdEf", True), ("x_1234567", False), ("abcdefghijklm_1234567", False),  # a prefix of 2 to 12
    ("0123456789abcdef", True), ("0123456789abcde", False),  # 16 hex or more
    ("2026-11-26 22:41", True), ("2026-11-26", True), ("2026-11-2", False),
    ("550e8400-e29b-41d4-a716-44665544000", False),
])
def test_minted_shapes(value, minted):
    assert (generated_shape(value) is not None) is minted


def test_a_case_pins_its_answer_text_answers_and_errors():
    req = request()
    two = case_expectations(response(("book", {"unit": "celsius"}), ("cancel", {})), req)
    assert two == {"assertions": {"output_invariants": [{"path": "$.tool_calls", "length_eq": 2}],
                                  "expected_tool_calls": [
                                      {"name": "book",
                                       "argument_invariants": [{"path": "$.unit", "equals": "celsius"}]},
                                      {"name": "cancel"}]}}
    assert case_expectations(response(content="Hello"), req) == {
        "assertions": {"output_invariants": [{"path": "$.tool_calls", "length_eq": 0}]}}
    assert case_expectations(response(success=False), req) == {"expect_ok": False, "expected_error": "unexpected_error"}
    assert case_expectations(None, req)["expected_error"] == "unexpected_error"
    assert case_expectations(response(("invented", {})), req) == {"expect_ok": False, "expected_error": "wrong_tool"}
    assert case_expectations(response(("book", "{not json")), req) == {
        "expect_ok": False, "expected_error": "malformed_arguments"}
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    typed = {"messages": [], "tools": [{"type": "function", "function": {"name": "count", "parameters": schema}}]}
    assert case_expectations(response(("count", {"n": "2"})), typed) == {
        "expect_ok": False, "expected_error": "schema_violation"}
    assert "assertions" in case_expectations(response(("count", {"n": 2})), typed)
    broken = {"messages": [], "tools": [{"type": "function", "function": {"name": "count",
                                                                          "parameters": {"type": 12}}}]}
    assert "assertions" in case_expectations(response(("count", {"n": "2"})), broken)  # the loader says why
    # No tools declared: any name is fine.
    assert "assertions" in case_expectations(response(("anything", {})), {"messages": []})


def test_contract_wide_fields_hold_for_every_answer():
    one, two = response(("book", {})), response(("book", {}), ("cancel", {}))
    assert contract_fields([one, one]) == {"tool": "book"}
    assert contract_fields([one, two]) == {"tool_order": "strict"}  # another tool in one answer: no tool
    assert contract_fields([two, two]) == {"tool": "multi_tool_call", "expect_tools": ["book", "cancel"],
                                           "tool_order": "strict"}
    assert contract_fields([one, response(content="hi")]) == {}  # a text answer: no tool
    assert contract_fields([one, response(success=False)]) == {"tool": "book"}  # errors say nothing
    assert contract_fields([]) == {}


def test_names_are_readable_stable_and_safe():
    neutral = request("  What's the WEATHER in São Paulo?? / ../etc")
    words = "what-s-the-weather-in-sao-paulo-etc"
    assert case_name("chat", neutral, "0123456789abcdef", 2) == f"chat-{words}-01234567-2"
    later = {**neutral, "messages": [*neutral["messages"], {"role": "assistant", "content": "x"}]}
    assert case_name("chat", later, "0123456789abcdef", 1) == f"chat-{words}-step2-01234567-1"
    assert case_name("messages", {"messages": []}, "ab" * 8, 1) == "messages-abababab-1"
    assert slug_words("one two three", 7) == "one-two" and slug_words("x" * 50, 40) == "x" * 40
    assert slug_words("a b", 3) == "a-b" and slug_words("", 10) == ""
    assert contract_name(["get_weather"]) == "captured_get_weather"
    assert contract_name([], "imported") == "imported_no_tools"
    tools = ["search_flights", "book_flight"]
    name = scenario_name(neutral, tools)
    assert name == scenario_name(json.loads(json.dumps(neutral)), tools)
    digest = h({"messages": neutral["messages"], "tools": neutral["tools"]})[:6]
    assert name == f"session_search_flights_book_flight_what_s_the_weather_in_sao_{digest}"  # words: 30 characters
    assert all(ch.isalnum() or ch in "_-" for ch in name)


def _session(steps: int = 3, error: bool = False) -> dict:
    trajectory = []
    for n in range(steps - 1):
        trajectory.append({"response": response(("book", {"unit": "celsius", "ref": "R-2" if n else "R-1"}),
                                                content="Working on it."),
                           "tool_results": [{"call_id": "call_0", "tool": "book", "args_hash": "0" * 16,
                                             "result": {"next": "R-2"}}]})
    last = response(success=False) if error else response(content="Done.")
    trajectory.append({"response": last, "tool_results": []})
    return {"request": request("Book twice please"), "trajectory": trajectory, "tool_results": []}


def test_a_session_becomes_a_scenario_contract(tmp_path):
    scenario = render_scenario(_session(), "sessions/s.json")
    assert scenario.text.startswith(header(scenario=True))
    doc = yaml.safe_load(scenario.text)
    assert doc["scenario"] is True and "max_steps" not in doc
    assert doc["trajectory"]["tool_sequence"] == {"mode": "strict", "tools": ["book", "book"]}
    assert doc["trajectory"]["max_tool_calls"] == 2
    steps = doc["trajectory"]["step_invariants"]
    assert [s["step"] for s in steps] == [1, 2, 3]
    assert steps[0]["invariants"] == [
        {"path": "$.tool_calls", "length_eq": 1}, {"path": "$.tool_calls[0].name", "equals": "book"},
        {"path": "$.tool_calls[0].arguments.ref", "equals": "R-1"},
        {"path": "$.tool_calls[0].arguments.unit", "equals": "celsius"}]
    assert steps[2]["invariants"] == [{"path": "$.tool_calls", "length_eq": 0}]
    assert doc["golden_cases"] == [{"id": "session", "input_ref": "sessions/s.json", "category": "multi_step",
                                    "description": '"Book twice please" (3 model calls)'}]
    assert scenario.name.startswith("session_book_book_twice_please_")
    # Nine steps: more than a scenario's default limit of model calls.
    assert yaml.safe_load(render_scenario(_session(9), "s.json").text)["max_steps"] == 9
    assert "max_steps" not in yaml.safe_load(render_scenario(_session(8), "s.json").text)
    failed = yaml.safe_load(render_scenario(_session(2, error=True), "s.json").text)
    assert failed["golden_cases"][0]["expect_ok"] is False and "step_invariants" not in failed["trajectory"]
    assert render_scenario(_session(), "s.json", name="mine").name == "mine"
    drafted = yaml.safe_load(render_scenario(_session(), "s.json", case_id="session-1", draft=True).text)
    assert drafted["status"] == "observed" and drafted["golden_cases"][0]["id"] == "session-1"
    assert doc["description"] == "Agent session captured by replayci proxy: book -> book."
    imported = {**_session(), "meta": {"imported_from": {"file": "cassettes/a.yaml", "entries": [0, 1]}}}
    assert yaml.safe_load(render_scenario(imported, "s.json", writer="replayci import").text)["description"] == \
        "Agent session imported from cassettes/a.yaml: book -> book."
    with pytest.raises(ConfigError, match="s.json: a scenario fixture needs"):
        render_scenario({"request": {}, "trajectory": []}, "s.json")
    with pytest.raises(ConfigError, match="s.json: trajectory step 1 must be an object"):
        render_scenario({"request": {}, "trajectory": [{"nope": 1}]}, "s.json")


def test_a_scenario_contract_passes_its_own_session_and_catches_a_changed_step(tmp_path):
    pack = tmp_path / "p"
    (pack / "golden").mkdir(parents=True)
    (pack / "contracts").mkdir()
    (pack / "pack.yaml").write_text("pack_id: p\n")
    session = _session()
    (pack / "golden" / "s.json").write_text(json.dumps(session))
    scenario = render_scenario(session, "s.json")
    (pack / "contracts" / f"{scenario.name}.yaml").write_text(scenario.text)
    assert run_packs([str(pack)], provider="recorded").ok
    session["trajectory"][1]["response"]["tool_calls"][0]["arguments"]["ref"] = "R-3"
    (pack / "golden" / "s.json").write_text(json.dumps(session))
    (case,) = run_packs([str(pack)], provider="recorded").cases
    assert case.status == "fail" and case.classification == "invariant_violation"


def test_step_invariants_root_each_call():
    invs = step_invariants(response(("book", {"a b": 1}), ("cancel", {})), request())
    assert invs == [{"path": "$.tool_calls", "length_eq": 2}, {"path": "$.tool_calls[0].name", "equals": "book"},
                    {"path": '$.tool_calls[0].arguments["a b"]', "equals": 1},
                    {"path": "$.tool_calls[1].name", "equals": "cancel"}]


def test_capture_owns_a_contract_while_its_first_line_and_marker_stay():
    case = Case("c1", "x/c1.json", "POST /v1/chat/completions", "t", "openai", request(),
                {"choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}, 200)
    text = render(["book", "cancel"], [case])
    assert text.startswith(HEADER) and owned(text)
    lines = text.splitlines(keepends=True)
    assert not owned("".join([lines[0], *lines[2:]]))  # the marker removed
    assert not owned("".join(lines[1:]))  # the first line removed
    assert not owned(text.replace("replayci proxy", "someone", 1))
    assert owned(text.replace("replayci proxy", "replayci import", 1))
    assert not owned(text + "golden_cases: [\n")  # no longer YAML: not rewritten
    draft = render(["book", "cancel"], [case], draft=True)
    assert owned(draft) and yaml.safe_load(draft)["status"] == "observed"


def test_a_case_appended_to_a_contract_the_user_keeps_reads_back_as_written():
    answer = {"choices": [{"message": {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function",
              "function": {"name": "book",
                           "arguments": json.dumps({"at": "2026-11-26T22:41:20Z", "note": "é \\ \""})}}]},
              "finish_reason": "tool_calls"}]}
    case = Case("c2", "x/c2.json", "POST /v1/chat/completions", "t", "openai", request(), answer, 200)
    kept = "# mine\ngolden_cases:\n  - id: c1\n    input_ref: x/c1.json\n"
    text = append_golden_cases(kept, [entry_fields(case)], "x.yaml")
    assert text.startswith(kept)
    assert yaml.safe_load(text)["golden_cases"][1] == case.entry()
    assert case.entry()["assertions"]["expected_tool_calls"][0]["argument_invariants"][0]["regex"].startswith("^\\d{4}")


def test_the_summary_counts_draft_contracts_not_cases():
    def entry(pack, contract, draft):
        return {"pack": pack, "contract": contract, "status": "pass", "draft": draft}
    cases = [entry("a", "x", True), entry("a", "x", True), entry("b", "x", True), entry("a", "y", False)]
    summary = summarize(cases, {})
    assert summary["draft"] == 3 and summary["draft_contracts"] == 2
    assert summarize([entry("a", "y", False)], {})["draft_contracts"] == 0


def test_a_pack_of_odd_answers_is_green_as_generated(tmp_path):
    """Answers that fail whatever is checked become negative cases their run agrees with."""
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    neutral = {"model": "m", "messages": [{"role": "user", "content": "count"}],
               "tools": [{"type": "function", "function": {"name": "count", "parameters": schema}}]}

    def chat(name, arguments):
        return {"choices": [{"message": {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": name, "arguments": arguments}}]}, "finish_reason": "tool_calls"}]}
    answers = {"ok": (chat("count", '{"n": 2}'), 200), "typed": (chat("count", '{"n": "2"}'), 200),
               "invented": (chat("guess", "{}"), 200), "broken": (chat("count", "{oops"), 200),
               "error": ({"error": {"type": "server_error", "message": "boom"}}, 500)}
    pack = tmp_path / "p"
    (pack / "golden" / "c").mkdir(parents=True)
    (pack / "contracts").mkdir()
    (pack / "pack.yaml").write_text("pack_id: p\n")
    cases = []
    for name, (answer, status) in answers.items():
        (pack / "golden" / "c" / f"{name}.json").write_text(json.dumps(
            {"request": neutral, "response": answer, "status": status}))
        cases.append(Case(name, f"c/{name}.json", "", name, "openai", neutral, answer, status))
    text = render(["count"], cases)
    (pack / "contracts" / "c.yaml").write_text(text)
    doc = yaml.safe_load(text)
    assert doc["tool"] == "count"  # from the one answer no check fails
    assert {c["id"]: c.get("expected_error") for c in doc["golden_cases"]} == {
        "ok": None, "typed": "schema_violation", "invented": "wrong_tool", "broken": "malformed_arguments",
        "error": "unexpected_error"}
    result = run_packs([str(pack)], provider="recorded")
    assert result.ok, [(c.case, c.status, c.classification, c.message) for c in result.cases]


def test_save_rewrites_what_capture_owns_and_appends_to_what_the_user_took_over(tmp_path):
    from replayci.capture.contracts import render_parts

    path = str(tmp_path / "c.yaml")
    case = Case("c1", "x/c1.json", "", "t", "openai", request(), {"choices": [
        {"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}, 200)
    text = render(["book"], [case])
    every = functools.partial(render_parts, ["book"])
    assert save(path, every, [case], [case]) == [path]
    assert (tmp_path / "c.yaml").read_text() == text
    assert save(path, every, [case], [case]) == []  # still capture's, and as it would be written
    taken = text.replace(MARKER, "# mine:", 1)
    (tmp_path / "c.yaml").write_text(taken)
    assert save(path, every, [case], [case]) == []
    assert (tmp_path / "c.yaml").read_text() == taken
    other = Case("c2", "x/c2.json", "", "t", "openai", request(), case.response, 200)
    assert save(path, every, [case, other], [case, other]) == [path]
    assert [c["id"] for c in yaml.safe_load((tmp_path / "c.yaml").read_text())["golden_cases"]] == ["c1", "c2"]
    (tmp_path / "c.yaml").write_text("# mine\ngolden_cases: []\nx: [\n")
    third = Case("c3", "x/c3.json", "", "t", "openai", request(), case.response, 200)
    with pytest.raises(InsertError):
        save(path, every, [third], [third])


def test_a_captured_answer_whose_tool_name_is_no_string_gets_no_case():
    """A pack refuses a fixture whose answer calls a tool by an object: capture lists no case for
    it (the proxy says why) rather than a contract its run would refuse."""
    from replayci.capture.contracts import Case, render

    def case(name):
        answer = {"success": True, "content": None,
                  "tool_calls": [{"id": "call_1", "name": name, "arguments": {"location": "Paris"}}]}
        return Case("c", "w/c.json", "-", "2026-11-27", "openai", request("Book it"), answer, 200)

    assert case({"odd": 1}).normalized is None and case(["x"]).normalized is None
    assert case("book").normalized is not None
    text = render(["book", "cancel"], [case({"odd": 1}), case("book")])
    assert text.count("- id: c") == 1
