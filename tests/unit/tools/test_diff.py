"""`replayci diff A B` and `replayci run --against recorded`."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from fakeserver import Reply
from livecli import add_cases, cases_by_id, invoke, report_of

from replayci.cli import cli
from replayci.core.hashing import args_hash
from replayci.tools.diff import diff_case, diff_reports, edit_script

W = {"location": "Paris"}
T = {"timezone": "Europe/Paris"}


def calls(*pairs):
    return [{"name": n, "args_hash": args_hash(a)} for n, a in pairs]


# ----------------------------------------------------------------------------- the edit script


def test_identical_calls_have_no_edits():
    assert edit_script(calls(("w", W), ("t", T)), calls(("w", W), ("t", T))) == []


def test_reordering_is_detected_as_such():
    edits = edit_script(calls(("get_weather", W), ("get_time", T)), calls(("get_time", T), ("get_weather", W)))
    assert edits == [{"op": "reordered", "tool": "get_weather", "args_hash": args_hash(W), "from": 0, "to": 1}]


def test_added_and_removed_with_args_hash():
    edits = edit_script(calls(("get_weather", W)), calls(("get_weather", {"location": "Lyon"}), ("get_time", T)))
    assert edits == [
        {"op": "removed", "tool": "get_weather", "args_hash": args_hash(W), "at": 0},
        {"op": "added", "tool": "get_weather", "args_hash": args_hash({"location": "Lyon"}), "at": 0},
        {"op": "added", "tool": "get_time", "args_hash": args_hash(T), "at": 1},
    ]
    assert len(args_hash(W)) == 16


def test_fewest_moves_and_duplicates():
    a = calls(("a", 1), ("b", 2), ("c", 3), ("d", 4))
    b = calls(("b", 2), ("c", 3), ("d", 4), ("a", 1))  # one call moved to the end
    assert [(e["op"], e["tool"], e["from"], e["to"]) for e in edit_script(a, b)] == [("reordered", "a", 0, 3)]
    dup_a = calls(("w", W), ("w", W))
    dup_b = calls(("w", W), ("w", W), ("w", W))
    assert edit_script(dup_a, dup_b) == [{"op": "added", "tool": "w", "args_hash": args_hash(W), "at": 2}]
    assert edit_script(dup_b, []) == [{"op": "removed", "tool": "w", "args_hash": args_hash(W), "at": i}
                                      for i in range(3)]


# ----------------------------------------------------------------------------- cases and reports


def case(name, status, tool_calls=(), content=None, usage=(10, 5), latency=100, classification=None, **kw):
    from replayci.core.hashing import h

    return {"pack": "p", "contract": "c", "case": name, "status": status, "classification": classification,
            "fingerprint": "f" + name, "draft": False, "latency_ms": latency,
            "output": {"success": True, "tool_calls": list(tool_calls), "content": content,
                       "content_hash": None if content is None else h(content),
                       "usage": {"input_tokens": usage[0], "output_tokens": usage[1]}}, **kw}


def report(*cases, provider="recorded"):
    return {"version": 1, "run": {"provider": provider, "model": "m"}, "summary": {}, "cases": list(cases)}


def test_status_changes_text_tokens_latency():
    a = report(case("reg", "pass", calls(("w", W))), case("fix", "fail", classification="wrong_tool"),
               case("same", "pass", calls(("w", W))), case("text", "pass", content="Sunny"),
               case("gone", "pass"))
    b = report(case("reg", "fail", calls(("t", T)), classification="wrong_tool", usage=(12, 9), latency=150),
               case("fix", "pass"), case("same", "pass", calls(("w", W))),
               case("text", "pass", content="Rainy", latency=90), case("new", "pass"), provider="openai")
    d = diff_reports(a, b, a_label="A", b_label="B")
    by = {c["case"]: c for c in d["cases"]}
    assert [c["case"] for c in d["cases"]] == ["reg", "fix", "same", "text", "new", "gone"]
    assert {k: by[k]["change"] for k in by} == {"reg": "regression", "fix": "fix", "same": "unchanged",
                                                "text": "changed", "new": "added", "gone": "removed"}
    assert by["reg"]["status"] == ["pass", "fail"]
    assert by["reg"]["tool_calls"] == [
        {"op": "removed", "tool": "w", "args_hash": args_hash(W), "at": 0},
        {"op": "added", "tool": "t", "args_hash": args_hash(T), "at": 0}]
    assert by["reg"]["tokens_delta"] == {"input_tokens": 2, "output_tokens": 4}
    assert by["reg"]["latency_delta_ms"] == 50
    assert by["text"]["output_changed"] is True and by["text"]["content"] == ["Sunny", "Rainy"]
    assert by["text"]["latency_delta_ms"] == -10
    assert by["same"]["output_changed"] is False and by["same"]["tool_calls"] == []
    s = d["summary"]
    assert (s["regressions"], s["fixes"], s["changed"], s["unchanged"], s["added"], s["removed"]) == (1, 1, 1, 1, 1, 1)
    assert s["tokens_delta"] == {"input_tokens": 2, "output_tokens": 4}


def test_draft_regressions_are_not_counted():
    a = case("x", "pass")
    b = {**case("x", "fail"), "draft": True}
    d = diff_reports(report(a), report(b))
    assert d["cases"][0]["change"] == "regression" and d["summary"]["regressions"] == 0
    assert d["summary"]["draft_regressions"] == 1


def test_a_side_without_output():
    a = {"pack": "p", "contract": "c", "case": "x", "status": "non_reproducible", "reason": "recording_not_found"}
    entry = diff_case(a, case("x", "pass", calls(("w", W))))
    assert entry["change"] == "changed"
    assert entry["tool_calls"] == [{"op": "added", "tool": "w", "args_hash": args_hash(W), "at": 0}]


# ----------------------------------------------------------------------------- the CLI


def test_a_scenario_is_compared_over_its_whole_trajectory():
    """The same final answer after other tool calls on the way is a change."""
    def steps(*calls_per_step):
        return [{"step": n, "calls": [{"tool": t, "arguments": a, "result": {}} for t, a in cs],
                 "content": None if cs else "Sunny", "error": None}
                for n, cs in enumerate(calls_per_step, 1)]

    a = case("s", "pass", content="Sunny", trajectory=steps([("w", W)], [("t", T)], []))
    b = case("s", "pass", content="Sunny", trajectory=steps([("t", T)], [("w", {"location": "Rome"})], []))
    entry = diff_case(a, b)
    assert entry["change"] == "changed" and not entry["output_changed"]
    assert entry["tool_calls"] == [
        {"op": "removed", "tool": "w", "args_hash": args_hash(W), "at": 0},  # step 1's call
        {"op": "added", "tool": "w", "args_hash": args_hash({"location": "Rome"}), "at": 1}]  # step 2's
    same = diff_case(a, case("s", "pass", content="Sunny", trajectory=steps([("w", W)], [("t", T)], [])))
    assert same["change"] == "unchanged" and same["tool_calls"] == []


def write(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(json.dumps(doc), "utf-8")
    return str(path)


def test_diff_command_terminal_json_and_exit_codes(tmp_path):
    a = write(tmp_path, "a.json", report(case("reg", "pass", calls(("get_weather", W), ("get_time", T))),
                                         case("ok", "pass")))
    b = write(tmp_path, "b.json", report(
        case("reg", "fail", calls(("get_time", T), ("get_weather", W)), classification="argument_mismatch",
             latency=220), case("ok", "pass"), provider="openai"))
    res = CliRunner().invoke(cli, ["diff", a, b, "--no-color"])
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "p/c/reg   pass → FAIL" in out and "regression   argument_mismatch" in out
    assert f"tool calls: reordered get_weather({args_hash(W)[:8]}) 0→1" in out
    assert "latency +120 ms" in out
    assert "1 regression · 0 fixes · 0 changed · 1 unchanged" in out
    assert "p/c/ok" not in out  # unchanged cases only with -v
    assert "p/c/ok" in CliRunner().invoke(cli, ["diff", a, b, "-v"]).stdout
    assert CliRunner().invoke(cli, ["diff", a, b, "--fail-on-regression"]).exit_code == 1
    assert CliRunner().invoke(cli, ["diff", a, a, "--fail-on-regression"]).exit_code == 0
    res = CliRunner().invoke(cli, ["diff", a, b, "--json"])
    doc = json.loads(res.stdout)  # only JSON on stdout
    assert doc["version"] == 1 and doc["summary"]["regressions"] == 1
    assert doc["cases"][0]["tool_calls"][0]["op"] == "reordered"
    assert "regression" in res.stderr


def test_diff_command_refuses_what_is_not_a_report(tmp_path):
    good = write(tmp_path, "a.json", report())
    bad = write(tmp_path, "b.json", {"hello": 1})
    res = CliRunner().invoke(cli, ["diff", good, bad])
    assert res.exit_code == 2 and "not a replayci JSON report" in res.output
    res = CliRunner().invoke(cli, ["diff", good, str(tmp_path / "missing.json")])
    assert res.exit_code == 2 and "cannot read it" in res.output


def test_reports_carry_what_diff_needs(pack):
    from builders import call, fixture, request, response

    pack.contract("w", "tool: get_weather\ngolden_cases:\n  - id: a\n    input_ref: a.json\n")
    pack.fixture("a.json", fixture(request(), {**response(call("get_weather", W), content="On it"),
                                               "usage": {"input_tokens": 7, "output_tokens": 3}}))
    res = invoke("recorded", None, "--json", key=False)
    (c,) = report_of(res)["cases"]
    from replayci.core.hashing import h
    assert c["output"] == {"success": True, "tool_calls": [{"name": "get_weather", "args_hash": args_hash(W)}],
                           "content": "On it", "content_hash": h("On it"),
                           "usage": {"input_tokens": 7, "output_tokens": 3}}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_run_against_recorded(provider, pack, server):
    add_cases(pack, "w", ["same", "drift", "order"], header="tool: get_weather\n")
    two = [("get_weather", W), ("get_time", T)]
    server.set_default(lambda req: Reply.tool_calls(two) if "q:order" in str(req.body) else
                       Reply.tool_call("get_weather", W))
    assert invoke(provider, server, "--record").exit_code == 0
    # The model changes: one case calls another tool, one reorders its calls.
    server.set_default(lambda req: Reply.tool_calls(list(reversed(two))) if "q:order" in str(req.body) else
                       Reply.tool_call("get_time", T) if "q:drift" in str(req.body) else
                       Reply.tool_call("get_weather", W))
    res = invoke(provider, server, "--against", "recorded", "--record")
    assert res.exit_code == 1  # the gate: drift fails now
    out = res.stdout
    assert "demo/w/drift" in out and "pass → FAIL" in out and "regression   wrong_tool" in out
    assert f"tool calls: removed get_weather({args_hash(W)[:8]}) at 0 · added get_time({args_hash(T)[:8]}) at 0" in out
    assert f"reordered get_weather({args_hash(W)[:8]}) 0→1" in out
    assert "1 regression · 0 fixes · 1 changed · 1 unchanged" in out
    # The baseline was taken before --record overwrote the recordings: now they agree.
    again = invoke(provider, server, "--against", "recorded", "--fail-on-regression", "--json")
    doc = report_of(again)
    assert doc["diff"]["summary"]["regressions"] == 0 and doc["diff"]["summary"]["unchanged"] == 3
    assert again.exit_code == 1  # the gate still fails (drift), but no regression
    # Against a report file, with --fail-on-regression.
    server.set_default(Reply.tool_call("get_weather", W))
    baseline = pack.root / "base.json"
    baseline.write_text(json.dumps(doc), "utf-8")
    server.set_default(Reply.plain_text("no"))
    res = invoke(provider, server, "--against", str(baseline), "--fail-on-regression", "--json")
    d = report_of(res)["diff"]
    assert res.exit_code == 1 and d["summary"]["regressions"] == 2  # same and order now fail; drift did already
    assert cases_by_id(report_of(res))["same"]["status"] == "fail"


def test_against_needs_a_live_provider_and_fail_on_regression_needs_against(pack):
    add_cases(pack, "w", ["a"])
    res = invoke("recorded", None, "--against", "recorded", key=False)
    assert res.exit_code == 2 and "--against recorded compares a live run" in res.output
    res = invoke("recorded", None, "--fail-on-regression", key=False)
    assert res.exit_code == 2 and "--fail-on-regression needs --against" in res.output


# ----------------------------------------------------------------------------- changed arguments


def test_a_call_with_other_arguments_shows_the_changed_paths():
    old, new = {"location": "Paris", "unit": "c", "days": [1, 2]}, {"location": "Lyon", "days": [1, 3], "x": True}
    a = case("x", "pass", calls(("w", old), ("t", T)), response={"tool_calls": [{"name": "w", "arguments": old},
                                                                               {"name": "t", "arguments": T}]})
    b = case("x", "pass", calls(("w", new), ("t", T)), response={"tool_calls": [{"name": "w", "arguments": new},
                                                                               {"name": "t", "arguments": T}]})
    entry = diff_case(a, b)
    assert [e["op"] for e in entry["tool_calls"]] == ["removed", "added"]  # the edit script is unchanged
    assert entry["changed_calls"] == [{"tool": "w", "from": 0, "to": 0, "args": [
        {"path": "$.days[1]", "before": 2, "after": 3},
        {"path": "$.location", "before": "Paris", "after": "Lyon"},
        {"path": "$.unit", "before": "c"},
        {"path": "$.x", "after": True}]}]
    assert "changed_calls" not in diff_case(a, a)
    older = {k: v for k, v in a.items() if k != "response"}  # a report without responses
    assert diff_case(older, b)["changed_calls"] == [{"tool": "w", "from": 0, "to": 0}]


def test_diff_command_prints_old_and_new_argument_values(pack, tmp_path):
    from builders import call, fixture, request, response

    pack.contract("w", "tool: get_weather\ngolden_cases:\n  - id: a\n    input_ref: a.json\n")
    reports = []
    for city in ("Paris", "Lyon"):
        pack.fixture("a.json", fixture(request(), response(call("get_weather", {"location": city}))))
        res = invoke("recorded", None, "--json", key=False)
        reports.append(write(tmp_path, f"{city}.json", report_of(res)))
    res = CliRunner().invoke(cli, ["diff", *reports, "--no-color"])
    assert res.exit_code == 0, res.output
    assert '      get_weather arguments: $.location "Paris" → "Lyon"' in res.stdout.splitlines()
    doc = json.loads(CliRunner().invoke(cli, ["diff", *reports, "--json"]).stdout)
    assert doc["cases"][0]["changed_calls"][0]["args"] == [{"path": "$.location", "before": "Paris",
                                                            "after": "Lyon"}]
