"""`replayci import` on small recordings written as vcrpy, pydantic-ai and HAR recorders write them:
every body encoding, sessions as scenarios, what is skipped and why, importing twice, renamed cases,
secrets, and bad input refused with a located message before anything is written."""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import brotli
import pytest
import warmed
import yaml
from cassettes import (
    ANSWER,
    ARGS,
    GEMINI_KEY,
    KEY,
    QUESTION,
    RESULT,
    base64_body,
    completion,
    deflated,
    files_of,
    first_request,
    gzipped,
    har,
    har_entry,
    interaction,
    loop_interactions,
    rendered_from_disk,
    second_request,
    write_cassette,
)
from click.testing import CliRunner

from replayci.cli import cli
from replayci.core import files
from replayci.core.hashing import args_hash
from replayci.formats import normalize


def run_import(*args: str):
    return CliRunner().invoke(cli, ["import", *args], catch_exceptions=False)


def fixtures_of(pack: Path) -> dict[str, dict]:
    return {str(p.relative_to(pack / "golden")): json.loads(p.read_text())
            for p in sorted((pack / "golden").rglob("*.json"))}


def only_fixture(pack: Path) -> dict:
    docs = fixtures_of(pack)
    assert len(docs) == 1, list(docs)
    return next(iter(docs.values()))


def recorded_run(pack: Path):
    return CliRunner().invoke(cli, ["--pack", str(pack), "--provider", "recorded", "-v", "--no-color"],
                              catch_exceptions=False)


# ----------------------------------------------------------------------------- body encodings

SSE = ("data: " + json.dumps({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4o-mini", "choices": [
    {"index": 0, "delta": {"role": "assistant", "tool_calls": [{"index": 0, "id": "call_s", "type": "function",
                                                                "function": {"name": "get_weather",
                                                                             "arguments": ""}}]}}]})
       + "\n\ndata: " + json.dumps({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
                                    "choices": [{"index": 0, "delta": {"tool_calls": [
                                        {"index": 0, "function": {"arguments": json.dumps(ARGS)}}]},
                                                 "finish_reason": "tool_calls"}]})
       + "\n\ndata: [DONE]\n\n")
CALL = completion(call=True)
BODY_FORMS = {
    "text": (CALL, None, {}),
    "binary": (CALL, lambda raw: raw, {}),  # bytes: yaml writes !!binary
    "base64": (CALL, base64_body, {}),
    "gzip": (CALL, gzipped, {"Content-Encoding": ["gzip"]}),
    "deflate": (CALL, deflated, {"Content-Encoding": ["deflate"]}),
    "raw-deflate": (CALL, lambda raw: deflated(raw)[2:-4], {"Content-Encoding": ["deflate"]}),
    "brotli": (CALL, brotli.compress, {"Content-Encoding": ["br"]}),
    "gzip-already-decoded": (CALL, None, {"Content-Encoding": ["gzip"]}),
    "stream": (SSE, None, {"Content-Type": ["text/event-stream"]}),
    "gzip-stream": (SSE, gzipped, {"Content-Type": ["text/event-stream"], "Content-Encoding": ["gzip"]}),
}


@pytest.mark.parametrize("form", list(BODY_FORMS))
def test_every_body_encoding_reads_as_the_same_call(tmp_path, form):
    body, encode, headers = BODY_FORMS[form]
    path = write_cassette(tmp_path / "c.yaml", [interaction(first_request(), body, body_form=encode,
                                                            response_headers=headers)])
    if form == "binary":
        assert "!!binary" in path.read_text()
    res = run_import(str(path), "--pack", str(tmp_path / "pack"))
    assert res.exit_code == 0, res.output
    assert "1 imported, 0 skipped, 0 unsupported, 0 sessions" in res.output
    doc = only_fixture(tmp_path / "pack")
    read = normalize(doc["response"])
    assert [(c["name"], c["arguments"]) for c in read["tool_calls"]] == [("get_weather", ARGS)]
    assert doc["meta"]["stream"] is form.endswith("stream")
    if form.endswith("stream"):  # kept whole, as text
        assert doc["response"] == SSE
    assert doc["meta"]["imported_from"] == {"file": os.path.relpath(path), "entry": 0, "format": "cassette"}
    assert doc["meta"]["fidelity"] == "wire"
    assert doc["request"]["messages"][-1] == {"role": "user", "content": QUESTION}


def test_json_cassette_and_pydantic_ai_parsed_body(tmp_path):
    json_path = write_cassette(tmp_path / "a.json", [interaction(first_request(), CALL)], as_json=True)
    parsed = tmp_path / "b.yaml"
    parsed.write_text(yaml.safe_dump({"version": 1, "interactions": [{
        "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                    "headers": {"content-type": ["application/json"]}, "parsed_body": second_request()},
        "response": {"status": {"code": 200, "message": "OK"}, "headers": {"content-type": ["application/json"]},
                     "parsed_body": completion(call=False)}}]}))
    res = run_import(str(json_path), str(parsed), "--pack", str(tmp_path / "pack"))
    assert res.exit_code == 0, res.output
    docs = list(fixtures_of(tmp_path / "pack").values())
    assert sorted(normalize(d["response"])["content"] or "call" for d in docs) == [ANSWER, "call"]


def test_har_plain_and_base64(tmp_path):
    path = tmp_path / "session.har"
    path.write_text(json.dumps(har([har_entry(first_request(), CALL, base64_answer=True),
                                    har_entry(second_request(), completion(call=False))])))
    res = run_import(str(path), "--pack", str(tmp_path / "pack"))
    assert res.exit_code == 0, res.output
    assert "(har): 0 imported, 2 in new sessions, 0 skipped, 0 unsupported, 1 session" in res.output
    scenario = fixtures_of(tmp_path / "pack")
    [main] = [d for d in scenario.values() if "trajectory" in d]
    assert main["meta"]["imported_from"] == {"file": os.path.relpath(path), "entries": [0, 1], "format": "har"}


# ----------------------------------------------------------------------------- sessions


def test_an_agent_loop_becomes_one_scenario_that_runs_offline(tmp_path):
    path = write_cassette(tmp_path / "loop.yaml", loop_interactions())
    pack = tmp_path / "pack"
    res = run_import(str(path), "--pack", str(pack))
    assert res.exit_code == 0, res.output
    docs = fixtures_of(pack)
    [(name, scenario)] = [(k, d) for k, d in docs.items() if "trajectory" in d]
    steps = [k for k in docs if "/steps/" in k]
    assert len(steps) == 2  # the exchanges stay fixtures of the replay store
    assert scenario["request"]["messages"][-1]["content"] == QUESTION
    first, last = scenario["trajectory"]
    assert [(c["name"], c["arguments"]) for c in first["response"]["tool_calls"]] == [("get_weather", ARGS)]
    assert first["tool_results"] == [{"call_id": "call_abc", "tool": "get_weather", "args_hash": args_hash(ARGS),
                                      "result": RESULT}]
    assert last["response"]["content"] == ANSWER and last["tool_results"] == []
    assert scenario["tool_results"] == [{"tool": "get_weather", "args_hash": args_hash(ARGS), "arguments": ARGS,
                                         "result": RESULT}]
    contract = yaml.safe_load((pack / "contracts" / f"{name.split('/')[0]}.yaml").read_text())
    assert contract["scenario"] is True
    assert contract["trajectory"]["tool_sequence"] == {"mode": "strict", "tools": ["get_weather"]}
    assert contract["golden_cases"][0]["input_ref"] == name
    run = recorded_run(pack)
    assert run.exit_code == 0, run.output
    assert "1/1 passed" in run.output
    draft = tmp_path / "draft"
    assert run_import(str(path), "--pack", str(draft), "--draft").exit_code == 0
    assert yaml.safe_load(next((draft / "contracts").glob("session_*.yaml")).read_text())["status"] == "observed"
    assert "status" not in yaml.safe_load(next((pack / "contracts").glob("session_*.yaml")).read_text())


def test_a_call_that_does_not_continue_the_loop_stays_a_case(tmp_path):
    other = second_request()
    other["messages"][1]["content"] = "What is the weather in Rome?"  # another conversation
    path = write_cassette(tmp_path / "c.yaml", [interaction(first_request(), CALL),
                                                interaction(other, completion(call=False))])
    res = run_import(str(path), "--pack", str(tmp_path / "pack"))
    assert "2 imported, 0 skipped, 0 unsupported, 0 sessions" in res.output
    # ... and one whose tool result is missing is no continuation either
    cut = second_request()
    cut["messages"].pop()
    path = write_cassette(tmp_path / "d.yaml", [interaction(first_request(), CALL),
                                                interaction(cut, completion(call=False))])
    res = run_import(str(path), "--pack", str(tmp_path / "pack2"))
    assert "2 imported, 0 skipped, 0 unsupported, 0 sessions" in res.output


def test_the_same_session_with_other_minted_ids_is_not_imported_twice(tmp_path):
    pack = tmp_path / "pack"
    run_import(str(write_cassette(tmp_path / "a.yaml", loop_interactions())), "--pack", str(pack))
    before = files_of(pack)
    again = [interaction(first_request(), completion(call=True, id_="chatcmpl-9", call_id="call_zzz")),
             interaction(second_request("call_zzz"), completion(call=False, id_="chatcmpl-8"))]
    res = run_import(str(write_cassette(tmp_path / "b.yaml", again)), "--pack", str(pack))
    assert "2 already in the pack" in res.output and "1 session" in res.output  # its two calls
    assert files_of(pack) == before


# ----------------------------------------------------------------------------- skipped, unsupported


def test_non_model_traffic_is_skipped_and_unsupported_calls_listed(tmp_path):
    path = write_cassette(tmp_path / "c.yaml", [
        interaction(None, "ok", uri="https://example.com/health", method="GET"),
        interaction({"model": "text-embedding-3-small", "input": "hi"}, {"data": []},
                    uri="https://api.openai.com/v1/embeddings"),
        interaction({"model": "gpt-3.5-turbo-instruct", "prompt": "hi"}, {"choices": [{"text": "yo"}]},
                    uri="https://api.openai.com/v1/completions"),
        interaction(first_request(), CALL),
    ])
    res = run_import(str(path), "--pack", str(tmp_path / "pack"), "-v")
    assert res.exit_code == 0, res.output
    assert "1 imported, 2 skipped, 1 unsupported, 0 sessions" in res.output
    assert "entry 2: unsupported: a legacy text completion" in res.output
    assert "entry 0: skipped: GET example.com/health" in res.output


def test_a_folder_is_read_recursively_and_other_files_left_alone(tmp_path):
    src = tmp_path / "recordings"
    write_cassette(src / "deep" / "a.yaml", [interaction(first_request(), CALL)])
    (src / "b.har").write_text(json.dumps(har([har_entry(second_request(), completion(call=False))])))
    (src / "README.md").write_text("# not a recording\n")
    (src / "conftest.yaml").write_text("foo: bar\n")
    res = run_import(str(src), "--pack", str(tmp_path / "pack"))
    assert res.exit_code == 0, res.output
    assert f"{src}/deep/a.yaml (cassette): 1 imported" in res.output
    assert f"{src}/b.har (har): 1 imported" in res.output
    assert "2 files in the folders given are no recording replayci reads" in res.output
    sources = sorted(d["meta"]["imported_from"]["file"] for d in fixtures_of(tmp_path / "pack").values())
    assert sources == [os.path.relpath(f"{src}/b.har"), os.path.relpath(f"{src}/deep/a.yaml")]


def test_the_source_file_is_named_relative_to_the_current_directory_in_every_checkout(tmp_path, monkeypatch):
    """Two checkouts of one project import their cassettes by absolute path: the packs are the
    same, byte for byte, and no fixture holds a machine path."""
    packs = []
    for checkout in ("one", "elsewhere/two"):
        root = tmp_path / checkout
        write_cassette(root / "tests" / "cassettes" / "loop.yaml", loop_interactions())
        write_cassette(root / "tests" / "cassettes" / "single.yaml", [interaction(first_request(), CALL)])
        monkeypatch.chdir(root)
        res = run_import(str(root / "tests" / "cassettes"), "--pack", str(root / "packs" / "app"))
        assert res.exit_code == 0, res.output
        packs.append(files_of(root / "packs" / "app"))
    assert packs[0] == packs[1]
    text = b"".join(packs[0].values())
    assert str(tmp_path).encode() not in text and b'"file": "tests/cassettes/loop.yaml"' in text


# ----------------------------------------------------------------------------- once, and only once


def test_identical_exchanges_are_imported_once_and_importing_again_changes_nothing(tmp_path):
    path = write_cassette(tmp_path / "c.yaml", [interaction(first_request(), CALL)] * 2)
    pack = tmp_path / "pack"
    res = run_import(str(path), "--pack", str(pack))
    assert "1 imported, 1 duplicates" in res.output
    assert len(fixtures_of(pack)) == 1
    before = files_of(pack)
    res = run_import(str(path), "--pack", str(pack))
    assert res.exit_code == 0 and "0 imported, 2 already in the pack" in res.output
    assert "nothing new" in res.output
    assert files_of(pack) == before


def test_a_case_the_user_renamed_or_moved_is_not_imported_again(tmp_path):
    path = write_cassette(tmp_path / "c.yaml", [interaction(first_request(), CALL)])
    pack = tmp_path / "pack"
    run_import(str(path), "--pack", str(pack))
    [rel] = fixtures_of(pack)
    (pack / "golden" / "mine").mkdir()
    shutil.move(pack / "golden" / rel, pack / "golden" / "mine" / "paris.json")
    before = files_of(pack)
    res = run_import(str(path), "--pack", str(pack))
    assert "1 already in the pack" in res.output
    assert files_of(pack) == before


# ----------------------------------------------------------------------------- secrets


def test_secrets_never_reach_the_pack(tmp_path):
    echo = {"error": {"message": f"Incorrect API key provided: {KEY}.", "type": "invalid_request_error"}}
    gemini = {"contents": [{"role": "user", "parts": [{"text": QUESTION}]}]}
    path = write_cassette(tmp_path / "c.yaml", [
        interaction(first_request(), echo, status=401),
        interaction(gemini, {"candidates": [{"content": {"role": "model", "parts": [{"text": "Sunny."}]},
                                             "finishReason": "STOP"}]},
                    uri=f"https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent"
                        f"?key={GEMINI_KEY}&alt=json",
                    request_headers={"x-goog-api-key": [GEMINI_KEY]}),
    ])
    pack = tmp_path / "pack"
    res = run_import(str(path), "--pack", str(pack))
    assert res.exit_code == 0, res.output
    for name, data in files_of(pack).items():
        assert KEY.encode() not in data and GEMINI_KEY.encode() not in data, name
        assert b"IMPORTSECRET" not in data, name
    gem = [d for d in fixtures_of(pack).values() if d["meta"]["api"] == "gemini"][0]
    # A key the recorder filtered from the headers but the answer echoes is known by its shape.
    bare = interaction(first_request(), {"error": {"message": f"Incorrect API key provided: {KEY}"}}, status=401)
    bare["request"]["headers"] = {}
    res = run_import(str(write_cassette(tmp_path / "d.yaml", [bare])), "--pack", str(tmp_path / "pack2"))
    assert res.exit_code == 0 and b"IMPORTSECRET" not in b"".join(files_of(tmp_path / "pack2").values())
    assert gem["meta"]["query"] == {"alt": "json"} and gem["request"]["model"] == "gemini-2.0-flash"


# ----------------------------------------------------------------------------- bad input


def assert_refused(res, *needles: str) -> None:
    assert res.exit_code == 2, res.output
    for needle in needles:
        assert needle in res.output, res.output
    assert "Traceback" not in res.output


def assert_listed(res, *needles: str) -> None:
    """Exit 0, each needle on a "not imported" line."""
    assert res.exit_code == 0, res.output
    lines = [line for line in res.output.splitlines() if "not imported" in line]
    for needle in needles:
        assert any(needle in line for line in lines), res.output
    assert "Traceback" not in res.output


def test_a_file_that_is_no_recording_is_listed_not_imported(tmp_path):
    path = tmp_path / "notes.yaml"
    path.write_text("foo: bar\n")
    assert_listed(run_import(str(path), "--pack", str(tmp_path / "pack")),
                  f"{path}: not imported: not a recording replayci reads")
    assert_listed(run_import(str(path), "--pack", str(tmp_path / "pack"), "--format", "cassette"),
                  f"{path}: not imported: not a cassette: expected a top-level 'interactions' list")
    assert_refused(run_import(str(path), "--pack", str(tmp_path / "pack"), "--strict"),
                   f"{path}: not a recording replayci reads")
    assert_refused(run_import(str(path), "--pack", str(tmp_path / "pack"), "--format", "hra"),
                   "did you mean 'har'")
    assert_refused(run_import(str(tmp_path / "nope.yaml"), "--pack", str(tmp_path / "pack")), "no such file")
    assert not (tmp_path / "pack").exists()


def test_truncated_yaml_is_listed_with_its_line(tmp_path):
    whole = write_cassette(tmp_path / "whole.yaml", loop_interactions()).read_text()
    cut = tmp_path / "cut.yaml"
    at = whole.index("body: '") + 20  # inside a quoted string
    cut.write_text(whole[:at])
    res = run_import(str(cut), "--pack", str(tmp_path / "pack"))
    assert_listed(res, f"{cut}:", "not valid YAML (truncated?)")
    line = int(res.output.split(f"{cut}:", 1)[1].split(":", 1)[0])
    assert line == whole[:at].count("\n") + 1
    assert_refused(run_import(str(cut), "--pack", str(tmp_path / "pack"), "--strict"),
                   f"{cut}:{line}:", "not valid YAML (truncated?)")
    assert not (tmp_path / "pack").exists()


def test_a_cassette_without_version_is_imported_as_pydantic_ai_writes_them(tmp_path):
    whole = write_cassette(tmp_path / "whole.yaml", loop_interactions()).read_text()
    bare = tmp_path / "bare.yaml"
    bare.write_text(whole.replace("version: 1\n", ""))
    assert "version" not in bare.read_text()
    res = run_import(str(bare), "--pack", str(tmp_path / "pack"), "--strict")
    assert res.exit_code == 0 and "not imported" not in res.output, res.output
    assert "1 session" in res.output, res.output
    assert recorded_run(tmp_path / "pack").exit_code == 0


def test_an_entry_that_cannot_be_read_is_listed_and_the_others_imported(tmp_path):
    bad = interaction(first_request(), CALL)
    bad["request"]["body"] = json.dumps(first_request())[:-1] + ",}"  # a trailing comma, as hand-edited
    path = write_cassette(tmp_path / "c.yaml", [interaction(first_request(), CALL), bad])
    res = run_import(str(path), "--pack", str(tmp_path / "pack"))
    assert_listed(res, "entry 1: not imported: the request body is not JSON")
    assert "1 imported" in res.output and "1 not imported" in res.output, res.output
    assert "not imported: 0 files and 1 entry that cannot be read" in res.output, res.output
    assert len(fixtures_of(tmp_path / "pack")) == 1 and recorded_run(tmp_path / "pack").exit_code == 0
    answer = interaction(first_request(), "<html>oops</html>")
    other = write_cassette(tmp_path / "d.yaml", [answer])
    assert_listed(run_import(str(other), "--pack", str(tmp_path / "pack2")),
                  "entry 0: not imported: the answer is not JSON")
    assert_refused(run_import(str(path), "--pack", str(tmp_path / "pack3"), "--strict"),
                   f"{path}: entry 1: the request body is not JSON")
    assert not (tmp_path / "pack2").exists() and not (tmp_path / "pack3").exists()


def test_a_cassette_with_python_tags_is_never_run_and_the_others_are_imported(tmp_path):
    canary = tmp_path / "ran"
    src = tmp_path / "src"
    path = src / "evil.yaml"
    src.mkdir()
    path.write_text(f"""interactions:
- request: !!python/object/apply:os.system ["touch {canary}"]
  response: {{status: {{code: 200}}}}
version: 1
""")
    write_cassette(src / "good.yaml", [interaction(first_request(), CALL)])
    res = run_import(str(src), "--pack", str(tmp_path / "pack"))
    assert_listed(res, f"{path}:2:", "Python object tag")
    assert "good.yaml (cassette): 1 imported" in res.output, res.output
    assert not canary.exists() and len(fixtures_of(tmp_path / "pack")) == 1
    res = run_import(str(src), "--pack", str(tmp_path / "pack2"), "--strict")
    assert_refused(res, f"{path}:2:", "Python object tag", "refused")
    assert not canary.exists() and not (tmp_path / "pack2").exists()


def test_with_strict_bad_input_leaves_an_existing_pack_as_it_was(tmp_path):
    pack = tmp_path / "pack"
    run_import(str(write_cassette(tmp_path / "good.yaml", [interaction(first_request(), CALL)])), "--pack", str(pack))
    before = files_of(pack)
    src = tmp_path / "more"
    write_cassette(src / "a.yaml", loop_interactions())  # new exchanges...
    (src / "b.har").write_text('{"log": {"entries": [')  # ... beside a broken file
    res = run_import(str(src), "--pack", str(pack), "--strict")
    assert_refused(res, f"{src}/b.har:1:", "not valid JSON")
    assert files_of(pack) == before
    res = run_import(str(src), "--pack", str(pack))
    assert_listed(res, f"{src}/b.har:1:")
    assert "a.yaml (cassette): 0 imported, 2 in new sessions" in res.output, res.output
    assert files_of(pack) != before


# ----------------------------------------------------------------------------- replayed live, tools frozen


def test_an_imported_session_replays_live_with_its_tools_frozen(project, server):
    from fakeserver import Conversation, Reply, tool_results_of
    from livecli import live_env

    pack = project / "packs" / "imported"
    run_import(str(write_cassette(project / "loop.yaml", loop_interactions())), "--pack", str(pack))
    [scenario] = [p for p in (pack / "golden").rglob("session-*.json")]
    target = f"imported/{scenario.parent.name}/{scenario.stem}"
    server.set_default(Conversation([Reply.tool_call("get_weather", ARGS), Reply.plain_text(ANSWER)]))
    res = CliRunner().invoke(cli, ["replay", target, "--provider", "openai", "--base-url",
                                   server.base_url_for("openai"), "--json"],
                             env=live_env("openai"), catch_exceptions=False)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["identical"] is True and doc["tool_sequence_diff"] == []
    assert doc["replay"]["verdict"]["status"] == "pass"
    # The second request carried the recorded tool result, answered from the fixture.
    assert [r["content"] for r in tool_results_of(server.requests[-1])] == [RESULT]
    # A live run with the tools strictly replayed drives the same loop.
    server.reset()
    server.set_default(Conversation([Reply.tool_call("get_weather", ARGS), Reply.plain_text(ANSWER)]))
    run = CliRunner().invoke(cli, ["run", "--pack", str(pack), "--provider", "openai", "--model", "gpt-4o-mini",
                                   "--base-url", server.base_url_for("openai"), "--tool-replay", "strict",
                                   "--no-color"], env=live_env("openai"), catch_exceptions=False)
    assert run.exit_code == 0, run.output
    assert "1/1 passed" in run.output


def test_a_write_that_fails_midway_replaces_nothing(tmp_path):
    from replayci.core.files import write_all_atomic

    (tmp_path / "kept.json").write_text("old")
    (tmp_path / "folder.json").mkdir()
    with pytest.raises(IsADirectoryError):
        write_all_atomic({str(tmp_path / "kept.json"): "new", str(tmp_path / "a" / "b.json"): "x",
                          str(tmp_path / "folder.json"): "y"})
    assert (tmp_path / "kept.json").read_text() == "old" and not (tmp_path / "a" / "b.json").exists()
    assert [p.name for p in tmp_path.rglob("*.tmp")] == []
    write_all_atomic({str(tmp_path / "kept.json"): "new", str(tmp_path / "a" / "b.json"): b"x"})
    assert (tmp_path / "kept.json").read_text() == "new" and (tmp_path / "a" / "b.json").read_bytes() == b"x"


@pytest.mark.parametrize("failing", [None, 0, 37])
def test_many_files_are_written_by_threads_as_one_step(tmp_path, failing):
    """From STAGE_THREADS_FROM files on, folders are staged by threads at once: the same
    files, modes kept, renamed in the order given; one folder's failure leaves every target as
    it was and no temp file anywhere."""
    count = files.STAGE_THREADS_FROM + 16
    targets = {str(tmp_path / f"d{n % 9}" / "sub" / f"{n}.json"): f"{n}\n" for n in range(count)}
    kept = tmp_path / "d3" / "sub" / "3.json"
    kept.parent.mkdir(parents=True)
    kept.write_text("old")
    kept.chmod(0o600)
    if failing is not None:
        (tmp_path / f"d{failing % 9}" / "sub" / f"{failing}.json").mkdir(parents=True)
    renamed = []
    real_replace = os.replace
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "replace", lambda a, b: (renamed.append(b), real_replace(a, b))[1])
        if failing is None:
            files.write_all_atomic(targets)
        else:
            with pytest.raises(IsADirectoryError, match=f"{failing}.json"):
                files.write_all_atomic(targets)
    assert [p.name for p in tmp_path.rglob("*.tmp")] == []
    if failing is not None:
        assert renamed == [] and kept.read_text() == "old"
        assert not any(Path(t).is_file() for t in targets if t != str(kept))
        return
    assert renamed == [os.path.abspath(t) for t in targets]
    assert all(Path(t).read_text() == text for t, text in targets.items())
    assert kept.stat().st_mode & 0o777 == 0o600


def test_a_brotli_body_without_the_brotli_extra_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "brotli", None)  # the extra not installed: its import fails
    path = write_cassette(tmp_path / "c.yaml", [interaction(first_request(), CALL, body_form=brotli.compress,
                                                            response_headers={"Content-Encoding": ["br"]})])
    assert_listed(run_import(str(path), "--pack", str(tmp_path / "pack")),
                  "entry 0: not imported: the body is brotli-encoded: install replayci[brotli]")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="one sync() stands for many fsyncs on Linux only")
@pytest.mark.parametrize("count", [files.SYNC_ALL_FROM - 1, files.SYNC_ALL_FROM])
def test_many_files_are_flushed_by_one_sync_before_the_renames(tmp_path, monkeypatch, count):
    calls = []
    real_sync, real_fsync = os.sync, os.fsync
    monkeypatch.setattr(os, "sync", lambda: (calls.append("sync"), real_sync())[1])
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd))[1])
    targets = {str(tmp_path / "out" / f"{n}.json"): f"{n}\n" for n in range(count)}
    files.write_all_atomic(targets)
    assert all(Path(path).read_text() == text for path, text in targets.items())
    # Below the threshold each file is fsynced, from it on one sync() flushes them all; then the
    # one folder the renames changed is fsynced.
    assert calls == (["fsync"] * count if count < files.SYNC_ALL_FROM else ["sync"]) + ["fsync"]


def test_every_fixture_is_written_as_recordings_write_them(tmp_path):
    """An exchange is encoded once, when it is read; the fixture reuses those texts byte for byte."""
    from replayci.engine.recordings import dumps

    path = write_cassette(tmp_path / "c.yaml", [*loop_interactions(), interaction(first_request(), CALL)])
    res = run_import(str(path), "--pack", str(tmp_path / "pack"))
    assert res.exit_code == 0, res.output
    written = sorted((tmp_path / "pack" / "golden").rglob("*.json"))
    assert len(written) >= 3
    for fixture in written:
        text = fixture.read_text("utf-8")
        assert text == dumps(json.loads(text)), fixture


def test_an_exchange_over_the_projects_fixture_limit_is_listed_not_written(tmp_path, monkeypatch):
    """fixtures.max_bytes in .replayci.yml bounds what import writes as it bounds what runs read."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".replayci.yml").write_text("provider: recorded\nfixtures: {max_bytes: 6000}\n")
    big = first_request()
    big["messages"][1]["content"] = "Tell me about Paris. " * 300
    write_cassette(tmp_path / "c" / "two.yaml", [interaction(big, completion(call=True)),
                                                 interaction(first_request(), completion(call=True))])
    res = run_import("c", "--pack", "packs/p")
    assert res.exit_code == 0, res.output
    assert "1 imported" in res.output and "not imported" in res.output and "6,000 bytes" in res.output, res.output
    assert len(fixtures_of(tmp_path / "packs" / "p")) == 1
    run = CliRunner().invoke(cli, ["--provider", "recorded", "--no-color"], catch_exceptions=False)
    assert run.exit_code == 0, run.output


def _many_sources(root: Path, count: int) -> Path:
    """*count* cassettes and HAR files of distinct exchanges and loops, in a folder."""
    root.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        question = first_request()
        question["messages"][1]["content"] = f"What is the weather in city {n}?"
        if n % 3 == 0:
            (root / f"h{n:03}.har").write_text(json.dumps(har([har_entry(question, completion(call=True))])))
        else:
            write_cassette(root / f"c{n:03}.yaml", [interaction(question, completion(call=True, id_=f"c-{n}"))]
                           + (loop_interactions() if n % 5 == 0 else []))
    return root


_SPLIT_SCRIPT = """
import json, sys
from replayci.engine import parallel
from replayci.capture.importing import import_sources
splits, split = [], parallel.by_units
parallel.by_units = lambda count, work: (splits.append(count), split(count, work))[1]
processes = None if sys.argv[3] == "auto" else int(sys.argv[3])
result = import_sources([sys.argv[1]], sys.argv[2], log=lambda line: None, processes=processes)
print(json.dumps({"splits": splits, "files": [[r.file, r.imported, r.sessions] for r in result.files]}))
"""


def test_an_import_split_over_two_processes_writes_what_one_process_writes(tmp_path):
    """In a process of its own (a test run's server threads keep a split from forking)."""
    import subprocess

    from replayci.capture.importing import SPLIT_MIN_FILES

    src = _many_sources(tmp_path / "src", SPLIT_MIN_FILES + 8)
    runs = {}
    for name in ("1", "2", "auto"):
        done = subprocess.run([sys.executable, "-c", _SPLIT_SCRIPT, str(src), str(tmp_path / name / "p"), name],
                              capture_output=True, text=True, timeout=120, check=True)
        runs[name] = json.loads(done.stdout)
    assert files_of(tmp_path / "1") == files_of(tmp_path / "2") == files_of(tmp_path / "auto")
    assert runs["1"]["files"] == runs["2"]["files"] == runs["auto"]["files"]
    assert sum(imported for _, imported, _ in runs["2"]["files"]) >= SPLIT_MIN_FILES
    assert runs["1"]["splits"] == [] and runs["2"]["splits"][0] > 1 and runs["auto"]["splits"] == runs["2"]["splits"]


@pytest.mark.parametrize("processes", ["1", "2"])
def test_bad_files_are_all_named_in_order_whichever_process_read_them(tmp_path, processes):
    import os
    import subprocess

    from replayci.capture.importing import SPLIT_MIN_FILES

    src = _many_sources(tmp_path / "src", SPLIT_MIN_FILES + 8)
    (src / "c005.yaml").write_text("interactions: [")
    (src / "c031.yaml").write_text("interactions:\n- request: !!python/object/apply:os.system ['true']\n")
    env = {**os.environ, "REPLAYCI_PROCESSES": processes}
    res = subprocess.run([*warmed.cli(env), "import", str(src), "--pack", str(tmp_path / "pack"),
                          "--strict"], capture_output=True, text=True, timeout=120, check=False, env=env)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    assert res.stderr.index("c005.yaml") < res.stderr.index("c031.yaml"), res.stderr
    assert not (tmp_path / "pack").exists()
    res = subprocess.run([*warmed.cli(env), "import", str(src), "--pack", str(tmp_path / "pack")],
                         capture_output=True, text=True, timeout=120, check=False, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.index("c005.yaml:2:") < res.stdout.index("c031.yaml:2:"), res.stdout
    assert "not imported: 2 files and 0 entries" in res.stdout, res.stdout


def test_contracts_written_from_what_reading_worked_out_are_those_the_fixtures_give(tmp_path):
    """An import works out each answer's reading and checks once, as it reads the exchange;
    rendered again from the fixtures alone, every contract is the same, streams included
    (whose fixtures a run reads naming no API) and a pinned failure."""
    chunk = {"object": "chat.completion.chunk", "model": "gpt-4o-mini",
             "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}
    streamed = {**first_request(), "stream": True}
    call = {"object": "chat.completion.chunk", "model": "gpt-4o-mini", "choices": [{"index": 0, "delta": {
        "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                        "function": {"name": "get_weather", "arguments": json.dumps(ARGS)}}]},
        "finish_reason": "tool_calls"}]}
    # A chat stream with an event only Anthropic's reader claims: read as the endpoint's API it
    # holds a call; a run of its fixture (naming no API) reads it otherwise.
    claimed = "".join(f"data: {json.dumps(e)}\n\n" for e in (call, {"type": "message_stop"})) + "data: [DONE]\n\n"
    plain = "".join(f"data: {json.dumps(e)}\n\n" for e in (chunk,)) + "data: [DONE]\n\n"
    bad_args = completion(call=True, id_="c-bad")
    bad_args["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = json.dumps({"location": 7})
    sse = {"Content-Type": ["text/event-stream"]}
    path = write_cassette(tmp_path / "c.yaml", [
        interaction(first_request(), completion(call=True)),
        interaction(first_request() | {"temperature": 0.5}, bad_args),
        interaction(streamed, claimed, response_headers=sse),
        interaction(streamed | {"temperature": 0.1}, plain, response_headers=sse),
        interaction(streamed | {"temperature": 0.2}, plain, response_headers=sse, status=503)])
    pack = tmp_path / "pack"
    res = run_import(str(path), "--pack", str(pack))
    assert res.exit_code == 0, res.output
    written = {p.name: p.read_text("utf-8") for p in (pack / "contracts").glob("*.yaml")}
    again = rendered_from_disk(pack)
    assert again and all(written[name] == text for name, text in again.items())
    listed = "".join(again.values())
    assert "expected_error: schema_violation" in listed and "expected_error: unexpected_error" in listed, listed
    run = recorded_run(pack)
    assert run.exit_code == 0, run.output


def test_an_answer_whose_tool_name_is_no_string_is_listed_not_imported(tmp_path):
    """A pack cannot hold such an answer (its fixture would be refused): listed, the others imported."""
    odd = completion(call=True, id_="c-odd")
    odd["choices"][0]["message"]["tool_calls"][0]["function"]["name"] = {"x": 1}
    path = write_cassette(tmp_path / "c.yaml", [interaction(first_request(), odd),
                                                interaction(second_request(), completion(call=False))])
    res = run_import(str(path), "--pack", str(tmp_path / "pack"))
    assert res.exit_code == 0, res.output
    assert "1 imported" in res.output and "tool call 1 of the answer has a name that is no string (object)" \
        in res.output, res.output
    assert recorded_run(tmp_path / "pack").exit_code == 0


def test_null_where_a_list_or_an_object_goes_is_read_as_absent_and_kept_as_sent(tmp_path):
    """Together's client sends `"tools": null` and `"tool_calls": null`; schema generators write
    `"$defs": null`: the pack reads them as absent, the original request keeps them."""
    bare = first_request() | {"tools": None, "tool_choice": None, "response_format": None}
    bare["messages"].append({"role": "assistant", "content": "Hello", "tool_calls": None})
    bare["messages"].append({"role": "user", "content": "Again?"})
    schema = first_request()
    schema["messages"][1]["content"] = "And in Rome?"
    params = schema["tools"][0]["function"]["parameters"]
    params.update({"$defs": None, "required": ["location"], "additionalProperties": None})
    params["properties"]["unit"] = None
    params["properties"]["location"]["anyOf"] = None
    path = write_cassette(tmp_path / "c.yaml", [interaction(bare, completion(call=False)),
                                                interaction(schema, completion(call=True, id_="c2"))])
    pack = tmp_path / "pack"
    res = run_import(str(path), "--pack", str(pack))
    assert res.exit_code == 0 and "2 imported" in res.output, res.output
    docs = list(fixtures_of(pack).values())
    plain = next(d for d in docs if d["original_request"]["tools"] is None)
    assert "tools" not in plain["request"] and "tool_choice" not in plain["request"]
    assert "tool_calls" not in plain["request"]["messages"][2] and plain["request"]["messages"][2]["content"]
    called = next(d for d in docs if d["original_request"]["tools"] is not None)
    assert called["original_request"]["tools"][0]["function"]["parameters"]["$defs"] is None
    kept = called["request"]["tools"][0]["function"]["parameters"]
    assert kept == {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}
    assert CliRunner().invoke(cli, ["validate", "--pack", str(pack)]).exit_code == 0
    run = recorded_run(pack)
    assert run.exit_code == 0 and "2/2 passed" in run.output, run.output


def test_counts_add_up_for_a_session_recorded_twice(tmp_path):
    """Every call of a file is counted once: a session seen again counts each of its calls."""
    src = tmp_path / "src"
    write_cassette(src / "a.yaml", loop_interactions())
    write_cassette(src / "b.yaml", loop_interactions())  # the same session, another test's cassette
    res = run_import(str(src), "--pack", str(tmp_path / "pack"))
    assert res.exit_code == 0, res.output
    assert f"{src}/a.yaml (cassette): 0 imported, 2 in new sessions, 0 skipped" in res.output, res.output
    assert f"{src}/b.yaml (cassette): 0 imported, 2 duplicates, 0 skipped" in res.output, res.output


def test_imported_cases_get_readable_names_as_the_proxys_do(tmp_path):
    path = write_cassette(tmp_path / "c.yaml", [interaction(first_request(), CALL),
                                                interaction({**first_request(), "stream": True}, SSE,
                                                            response_headers={"Content-Type": ["text/event-stream"]})])
    res = run_import(str(path), "--pack", str(tmp_path / "pack"))
    assert res.exit_code == 0, res.output
    names = sorted(fixtures_of(tmp_path / "pack"))
    assert len(names) == 2 and all(n.startswith("captured_get_weather/chat-what-is-the-weather-in-paris-")
                                   for n in names), names
    contract = (tmp_path / "pack" / "contracts" / "captured_get_weather.yaml").read_text()
    assert "description: POST /v1/chat/completions\n" in contract
    assert "description: POST /v1/chat/completions (streamed)\n" in contract
    assert rendered_from_disk(tmp_path / "pack")["captured_get_weather.yaml"] == contract


def test_a_gzipped_cassette_is_read_and_a_gzip_bomb_is_not(tmp_path):
    import gzip

    src = tmp_path / "cassettes"
    plain = write_cassette(tmp_path / "loop.yaml", loop_interactions())
    src.mkdir()
    (src / "loop.yaml.gz").write_bytes(gzip.compress(plain.read_bytes()))
    (src / "huge.yaml.gz").write_bytes(gzip.compress(b"interactions: []\n" + b"#" * (33 * 1024 * 1024)))
    res = run_import(str(src), "--pack", str(tmp_path / "pack"))
    assert res.exit_code == 0, res.output
    assert f"{src}/loop.yaml.gz (cassette): 0 imported, 2 in new sessions" in res.output, res.output
    assert_listed(res, f"{src}/huge.yaml.gz: not imported: refused: it decompresses past 32 MiB")
    assert recorded_run(tmp_path / "pack").exit_code == 0


def test_an_openai_compatible_chat_at_v1_chat_is_read_and_cohere_named(tmp_path):
    """Writer's /v1/chat takes and answers chat completions; Cohere's v1 and v2 chats are Cohere's."""
    writer = interaction(first_request() | {"model": "palmyra-x-004"}, CALL, uri="https://api.writer.com/v1/chat")
    cohere_v1 = interaction({"message": QUESTION, "chat_history": [], "model": "command-r"},
                            {"text": "Sunny", "generation_id": "g1", "finish_reason": "COMPLETE"},
                            uri="https://api.cohere.com/v1/chat")
    cohere_v2 = interaction({"model": "command-r", "messages": [{"role": "user", "content": QUESTION}]},
                            {"id": "x", "message": {"role": "assistant", "content": [{"type": "text", "text": "Hi"}]},
                             "finish_reason": "COMPLETE"}, uri="https://api.cohere.com/v2/chat")
    path = write_cassette(tmp_path / "c.yaml", [writer, cohere_v1, cohere_v2])
    res = run_import(str(path), "--pack", str(tmp_path / "pack"))
    assert res.exit_code == 0 and "1 imported, 0 skipped, 2 unsupported" in res.output, res.output
    assert "entry 1: unsupported: a Cohere chat call" in res.output and "entry 2: unsupported: a Cohere chat call" \
        in res.output
    assert only_fixture(tmp_path / "pack")["meta"]["api"] == "openai-chat"
    assert recorded_run(tmp_path / "pack").exit_code == 0


def test_ollama_fixtures_hash_as_the_loader_reads_them(tmp_path):
    """Ollama's client sends `"images": []` on its messages: the boundary import writes is the
    one a run computes from the fixture, for a single call and for a session's steps."""
    user = {"role": "user", "content": QUESTION, "images": []}
    call = {"role": "assistant", "content": "", "images": [], "tool_calls": [
        {"function": {"name": "get_weather", "arguments": ARGS}}]}
    first = {"model": "llama3.2", "stream": False, "messages": [user], "tools": first_request()["tools"],
             "options": {"temperature": 0}}
    second = first | {"messages": [user, call, {"role": "tool", "content": RESULT, "images": [],
                                                "tool_name": "get_weather"}]}
    uri = "http://localhost:11434/api/chat"

    def answer(message: dict) -> dict:
        return {"model": "llama3.2", "created_at": "2025-01-01T00:00:00Z", "message": message, "done": True,
                "done_reason": "stop"}

    path = write_cassette(tmp_path / "c.yaml", [
        interaction(first, answer({k: v for k, v in call.items() if k != "images"}), uri=uri),
        interaction(second, answer({"role": "assistant", "content": ANSWER}), uri=uri),
        interaction(first | {"messages": [user | {"content": "And in Rome?"}]},
                    answer({"role": "assistant", "content": "Rainy."}), uri=uri)])
    res = run_import(str(path), "--pack", str(tmp_path / "pack"))
    assert res.exit_code == 0 and "1 imported, 2 in new sessions" in res.output, res.output
    run = recorded_run(tmp_path / "pack")
    assert run.exit_code == 0 and "2/2 passed" in run.output, run.output


PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def _ollama_body(images: dict, *, options: bool, thinking: bool) -> dict:
    """An /api/chat request whose messages carry `images` as *images* says, per role."""
    def msg(role: str, **rest) -> dict:
        found = images.get(role, "absent")
        return {"role": role, **rest, **({} if found == "absent" else {"images": found})}
    call = msg("assistant", content="", tool_calls=[{"function": {"name": "get_weather", "arguments": ARGS}}])
    if thinking:
        call["thinking"] = "The user wants the weather."
    body = {"model": "llava", "stream": False, "tools": first_request()["tools"],
            "messages": [msg("system", content="Be brief."), msg("user", content=QUESTION), call,
                         msg("tool", content=RESULT, tool_name="get_weather")]}
    return body | ({"options": {"temperature": 0, "num_ctx": 2048}} if options else {})


OLLAMA_IMAGES = [{}, {"user": []}, {"user": [PIXEL]}, {"user": None}, {"system": [], "user": [PIXEL]},
                 {"user": [], "assistant": [], "tool": []}, {"user": [PIXEL], "tool": [PIXEL]}]


@pytest.mark.parametrize("images", OLLAMA_IMAGES)
@pytest.mark.parametrize("options", [False, True])
@pytest.mark.parametrize("thinking", [False, True])
def test_an_ollama_fixtures_boundary_is_the_one_the_loader_computes(tmp_path, images, options, thinking):
    """Import hashes the request as the loader reads the fixture it writes (`images` empty, set,
    null or absent on any message), so a run right after import finds no boundary changed."""
    from replayci.capture import writer
    from replayci.engine.cases import boundary_change
    from replayci.pack.fixtures import load_fixture

    body = _ollama_body(images, options=options, thinking=thinking)
    neutral = writer.neutral_request(body, "ollama", None, ())
    doc = writer.fixture_document(neutral, body, {"model": "llava", "created_at": "2025-01-01T00:00:00Z",
                                                  "message": {"role": "assistant", "content": "Sunny."},
                                                  "done": True}, 200, {})
    path = tmp_path / "f.json"
    path.write_text(json.dumps(doc))
    fixture = load_fixture(str(path), "f.json")
    assert boundary_change(fixture.boundary, fixture.request, fixture.tools_key) == []


def test_ollama_images_set_and_empty_import_as_a_pack_that_passes(tmp_path):
    """A vision question (`images` holding a picture) beside messages whose `images` is empty, as
    a single call and as a session: recorded right after import, every case passes."""
    uri = "http://localhost:11434/api/chat"
    single = _ollama_body({"system": [], "user": [PIXEL]}, options=False, thinking=False)
    single["messages"] = single["messages"][:2]
    first = _ollama_body({"user": [PIXEL], "assistant": []}, options=True, thinking=False)
    first["messages"] = first["messages"][:2] + [{"role": "user", "content": "And Rome?", "images": []}]
    second = _ollama_body({"user": [PIXEL], "assistant": [], "tool": []}, options=True, thinking=False)
    second["messages"] = first["messages"] + second["messages"][2:]

    def answer(message: dict) -> dict:
        return {"model": "llava", "created_at": "2025-01-01T00:00:00Z", "message": message, "done": True,
                "done_reason": "stop"}

    call = {"role": "assistant", "content": "",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": ARGS}}]}
    path = write_cassette(tmp_path / "c.yaml", [
        interaction(single, answer({"role": "assistant", "content": "A cat."}), uri=uri),
        interaction(first, answer(call), uri=uri),
        interaction(second, answer({"role": "assistant", "content": ANSWER}), uri=uri)])
    res = run_import(str(path), "--pack", str(tmp_path / "pack"))
    assert res.exit_code == 0 and "1 imported, 2 in new sessions" in res.output, res.output
    run = recorded_run(tmp_path / "pack")
    assert run.exit_code == 0 and "2/2 passed" in run.output, run.output
