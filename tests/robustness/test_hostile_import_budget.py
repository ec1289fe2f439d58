"""What import and the capture proxy write stay within what the contract loader reads (its node and size limits):
a session of 800 calls of a 60-argument tool, cases appended to a contract the user took over,
and many imports into one generated contract are written pinning less, or over more contract
files; never as a contract the pack refuses."""
from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml
from cassettes import completion, first_request, interaction, write_cassette
from click.testing import CliRunner

from replayci.capture import budget
from replayci.cli import cli

WIDE = {f"a{k}": {"type": "integer"} for k in range(60)}
TOOLS = [{"type": "function", "function": {"name": "wide", "parameters": {"type": "object", "properties": WIDE}}}]


def _calls(n: int, shift: int = 0) -> list[dict]:
    return [{"id": f"call_{k}", "type": "function", "function": {
        "name": "wide", "arguments": json.dumps({f"a{a}": a + k + shift for a in range(60)})}} for k in range(n)]


def _answer(calls: list[dict]) -> dict:
    doc = completion(call=True)
    doc["choices"][0]["message"]["tool_calls"] = calls
    return doc


def _asking(question: str) -> dict:
    return {**first_request(), "tools": TOOLS, "messages": [{"role": "user", "content": question}]}


def _import(tmp_path, source) -> str:
    res = CliRunner().invoke(cli, ["import", str(source), "--pack", str(tmp_path / "pack")])
    assert res.exit_code == 0 and "Traceback" not in res.output, res.output
    return res.output


def _accepted(tmp_path) -> dict:
    """The pack validates and its recorded run has no `error`; the run's report."""
    pack, report = str(tmp_path / "pack"), tmp_path / "r.json"
    valid = CliRunner().invoke(cli, ["validate", "--pack", pack])
    assert valid.exit_code == 0, valid.output
    ran = CliRunner().invoke(cli, ["--pack", pack, "--provider", "recorded", "--report-json", str(report)])
    assert ran.exit_code in (0, 1), ran.output
    doc = json.loads(report.read_text())
    assert doc["cases"] and all(c["status"] != "error" for c in doc["cases"]), ran.output
    return doc


def _session(n: int) -> list[dict]:
    """An agent loop: one answer of *n* calls of the 60-argument tool, their results, the answer."""
    first = _asking("Fill the wide form")
    calls = _calls(n)
    second = {**first, "messages": [*first["messages"], {"role": "assistant", "content": None, "tool_calls": calls},
                                    *({"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls)]}
    return [interaction(first, _answer(calls)), interaction(second, completion(call=False, id_="chatcmpl-2"))]


@pytest.mark.slow  # 48,000 arguments read and pinned: past the loader's own limit, as a user meets it
def test_a_session_of_800_calls_of_a_60_argument_tool_is_a_scenario_the_pack_reads(tmp_path):
    out = _import(tmp_path, write_cassette(tmp_path / "c.json", _session(800), as_json=True))
    assert "1 session" in out and "2 in new sessions" in out, out
    (contract,) = (tmp_path / "pack" / "contracts").glob("session_*.yaml")
    doc = yaml.safe_load(contract.read_text())
    assert len(doc["trajectory"]["tool_sequence"]["tools"]) == 800  # the sequence still checked whole
    assert budget.nodes(doc) <= budget.NODE_BUDGET and len(doc["description"]) < 300
    report = _accepted(tmp_path)
    assert [c["status"] for c in report["cases"]] == ["pass"]


def test_a_session_no_contract_can_hold_is_listed_as_not_imported(tmp_path, monkeypatch):
    """When even its tool sequence passes the budget, the session is listed with the reason and
    none of its steps written."""
    monkeypatch.setattr(budget, "NODE_BUDGET", 100)
    out = _import(tmp_path, write_cassette(tmp_path / "c.json", _session(120), as_json=True))
    assert "1 unsupported" in out and "larger than a pack can read" in out, out
    assert not list((tmp_path / "pack").rglob("*.json")), out


def _one_exchange(k: int, calls: int = 1) -> list[dict]:
    return [interaction(_asking(f"question {k}"), _answer(_calls(calls, k)))]


def test_many_imports_into_one_generated_contract_split_it_over_more_files(tmp_path, monkeypatch):
    monkeypatch.setattr(budget, "NODE_BUDGET", 200)
    for k in range(12):
        _import(tmp_path, write_cassette(tmp_path / f"c{k}.json", _one_exchange(k), as_json=True))
    files = sorted((tmp_path / "pack" / "contracts").glob("captured_wide*.yaml"))
    assert [f.name for f in files][:2] == ["captured_wide.part2.yaml", "captured_wide.yaml"], files
    listed = []
    for path in files:
        doc = yaml.safe_load(path.read_text())
        assert budget.nodes(doc) <= 200, path
        listed += [c["id"] for c in doc["golden_cases"]]
    assert len(listed) == len(set(listed)) == 12  # each case once, in one of the files
    report = _accepted(tmp_path)
    assert len(report["cases"]) == 12


def _taken_over(tmp_path) -> None:
    """A first import, and its contract taken over by the user (the generated marker removed)."""
    _import(tmp_path, write_cassette(tmp_path / "c0.json", _one_exchange(0), as_json=True))
    path = tmp_path / "pack" / "contracts" / "captured_wide.yaml"
    path.write_text("".join(line for line in path.read_text().splitlines(keepends=True)
                            if not line.startswith("# replayci: generated")))


def test_cases_appended_to_a_contract_the_user_took_over_stay_within_the_loader_limit(tmp_path):
    _taken_over(tmp_path)
    _import(tmp_path, write_cassette(tmp_path / "c1.json", _one_exchange(1, calls=800), as_json=True))
    doc = yaml.safe_load((tmp_path / "pack" / "contracts" / "captured_wide.yaml").read_text())
    assert len(doc["golden_cases"]) == 2 and budget.nodes(doc) <= budget.NODE_BUDGET
    assert len(doc["golden_cases"][1]["assertions"]["expected_tool_calls"]) == 800  # pinned by name
    _accepted(tmp_path)


def test_cases_past_a_taken_over_contract_go_to_generated_part_files(tmp_path, monkeypatch):
    monkeypatch.setattr(budget, "NODE_BUDGET", 200)
    _taken_over(tmp_path)
    mine = (tmp_path / "pack" / "contracts" / "captured_wide.yaml").read_text()
    for k in range(1, 10):
        _import(tmp_path, write_cassette(tmp_path / f"c{k}.json", _one_exchange(k), as_json=True))
    contracts = tmp_path / "pack" / "contracts"
    assert (contracts / "captured_wide.yaml").read_text().startswith(mine)  # the user's bytes kept
    assert (contracts / "captured_wide.part2.yaml").exists()
    listed = [c["id"] for p in sorted(contracts.glob("captured_wide*.yaml"))
              for c in yaml.safe_load(p.read_text())["golden_cases"]]
    assert len(listed) == len(set(listed)) == 10, listed
    assert len(_accepted(tmp_path)["cases"]) == 10


@pytest.mark.parametrize("tools", [["x.part2"], ["x", "y.part3"]])
def test_no_tool_set_is_named_as_another_contracts_part(tools):
    from replayci.capture.contracts import contract_name

    assert not re.search(r"\.part\d+\Z", contract_name(tools)), contract_name(tools)


class _Wide(BaseHTTPRequestHandler):
    """An upstream answering a first request with the server's `calls` calls of the wide tool,
    and a request that returns their results with a text."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        answered = any(m.get("role") == "tool" for m in body["messages"])
        doc = completion(call=False, id_="chatcmpl-2") if answered else _answer(_calls(self.server.calls))
        raw = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.mark.parametrize("room, written", [(4000, True), (100, False)], ids=["pins-less", "too-large"])
def test_a_session_through_the_proxy_is_written_within_the_budget_or_said(tmp_path, monkeypatch, room, written):
    from proxy_support import Proxied

    monkeypatch.setattr(budget, "NODE_BUDGET", room)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Wide)
    server.daemon_threads, server.calls = True, 120
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    first, second = (json.loads(i["request"]["body"]) for i in _session(120))
    pack = tmp_path / "pack"
    try:
        with Proxied(pack, "record", f"http://127.0.0.1:{server.server_address[1]}") as px:
            assert px.post("/v1/chat/completions", first).status_code == 200
            assert px.post("/v1/chat/completions", second).status_code == 200
    finally:
        server.shutdown()
        server.server_close()
    scenarios = list((pack / "contracts").glob("session_*.yaml"))
    assert bool(scenarios) is written, px.lines
    if not written:
        assert any("not written" in line and "larger than a pack can read" in line for line in px.lines), px.lines
    for path in scenarios:
        doc = yaml.safe_load(path.read_text())
        assert budget.nodes(doc) <= room and len(doc["trajectory"]["tool_sequence"]["tools"]) == 120, path
    _accepted(tmp_path)


def test_generated_part_files_no_case_is_left_for_are_removed(tmp_path, monkeypatch):
    """The user deletes most of a split contract's fixtures; the next import writes the cases
    left in fewer files and removes the generated parts past them, so the pack still loads."""
    monkeypatch.setattr(budget, "NODE_BUDGET", 200)
    for k in range(12):
        _import(tmp_path, write_cassette(tmp_path / f"c{k}.json", _one_exchange(k), as_json=True))
    contracts = tmp_path / "pack" / "contracts"
    before = sorted(p.name for p in contracts.glob("captured_wide*.yaml"))
    assert len(before) >= 2, before
    fixtures = sorted((tmp_path / "pack" / "golden" / "captured_wide").glob("*.json"))
    for fixture in fixtures[1:]:
        fixture.unlink()
    _import(tmp_path, write_cassette(tmp_path / "c12.json", _one_exchange(12), as_json=True))
    after = sorted(p.name for p in contracts.glob("captured_wide*.yaml"))
    assert after == ["captured_wide.yaml"], after
    assert len(_accepted(tmp_path)["cases"]) == 2
