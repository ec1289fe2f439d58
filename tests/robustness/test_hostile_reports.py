"""Reports given to `merge`, `diff`, `report` and `regrade` are untrusted input.

A report file may be hand-edited, cut, or written by another tool. Each hostile report here is
refused by all four commands with exit 2 and a message naming the file and what is wrong —
never exit 3 (a traceback) and never a silent exit 0 that reads nonsense as a run.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from test_bad_inputs import invoke, make_project


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> tuple[Path, dict]:
    """A project and the JSON report of its run."""
    root = make_project(tmp_path_factory.mktemp("reports"))
    mp = pytest.MonkeyPatch()
    try:
        code, out = invoke(root, ["--report-json", "run.json"], mp)
    finally:
        mp.undo()
    assert code == 0, out
    return root, json.loads((root / "run.json").read_text("utf-8"))


COMMANDS = {
    "merge": lambda f: ["merge", f, "-o", "merged.json"],
    "diff-a": lambda f: ["diff", f, "run.json"],
    "diff-b": lambda f: ["diff", "run.json", f],
    "report": lambda f: ["report", f, "--html", "page.html"],
    "regrade": lambda f: ["regrade", f, "--report-json", "regraded.json"],
}


def refused_everywhere(root: Path, name: str, text: str, monkeypatch, words: list[str]) -> None:
    (root / name).write_text(text, "utf-8")
    for command, args in COMMANDS.items():
        for out_file in ("merged.json", "page.html", "regraded.json"):
            (root / out_file).unlink(missing_ok=True)
        code, out = invoke(root, args(name), monkeypatch)
        assert code == 2, f"{command}: exit {code}\n{out}"
        assert "Traceback" not in out and "internal error" not in out, f"{command}\n{out}"
        for word in [name, *words]:
            assert word in out, f"{command}: {word!r} not in\n{out}"
        assert not any((root / f).exists() for f in ("merged.json", "page.html", "regraded.json")), command


def edited(report: dict, change) -> str:
    doc = copy.deepcopy(report)
    change(doc)
    return json.dumps(doc)


def test_a_case_with_an_unknown_status(good, monkeypatch):
    root, report = good
    text = edited(report, lambda d: d["cases"][0].update(status="passed"))
    refused_everywhere(root, "unknown-status.json", text, monkeypatch, ["cases[0]", "unknown status", '"passed"'])


def test_a_report_without_a_summary(good, monkeypatch):
    root, report = good
    refused_everywhere(root, "no-summary.json", edited(report, lambda d: d.pop("summary")), monkeypatch,
                       ["no 'summary' object"])
    refused_everywhere(root, "no-run.json", edited(report, lambda d: d.pop("run")), monkeypatch,
                       ["no 'run' object"])


@pytest.mark.parametrize("depth", [100_000, 5_000])
def test_json_nested_far_too_deep(good, monkeypatch, depth):
    root, _ = good
    refused_everywhere(root, "deep.json", "[" * depth + "]" * depth, monkeypatch, ["report"])
    nested = '{"version": 1, "run": {}, "summary": {}, "cases": [' + '{"a":' * depth + "1" + "}" * depth + "]}"
    refused_everywhere(root, "deep-case.json", nested, monkeypatch, ["report"])


# Each field a command reads, given a value of the wrong type.
WRONG = [
    ("duration_ms", "slow"), ("tokens", "many"), ("cost_usd", [1]), ("latency_ms", {}),
    ("failures", "x"), ("failures", [5]), ("failures", [{"kind": 5, "message": "m"}]),
    ("failures", [{"kind": "wrong_tool", "message": "m", "extra": 1}]),
    ("tags", "a"), ("tags", [1]), ("order", 3), ("fingerprint", [1]), ("classification", {}),
    ("allowlisted", "no"), ("expect_ok", 1), ("draft", None), ("attempts", "2"), ("source", 5),
    ("response", "text"), ("response", {"tool_calls": "x"}), ("response", {"tool_calls": [5]}),
    ("response", {"tool_calls": [{"name": 5}]}), ("response", {"content": 5}), ("response", {"usage": 5}),
    ("output", [1]), ("output", {"tool_calls": [5]}), ("output", {"tool_calls": [{"name": ["x"]}]}),
    ("steps", "x"), ("steps", [5]), ("steps", [{"response": {"tool_calls": {}}}]), ("judgements", []),
]


@pytest.mark.parametrize(("key", "value"), WRONG, ids=[f"{k}={json.dumps(v)}" for k, v in WRONG])
def test_a_wrong_typed_case_field(good, monkeypatch, key, value):
    root, report = good
    text = edited(report, lambda d: d["cases"][1].update({key: value}))
    refused_everywhere(root, "wrong.json", text, monkeypatch, ["cases[1]", key])


@pytest.mark.parametrize(("where", "value"), [
    ("summary", []), ("run", "x"), ("summary.gates", []), ("summary.gates.pass_rate", 1.0),
    ("summary.total", "6"), ("warnings", "w"), ("version", "1"), ("cases", {}),
    ("run.duration_ms", "x"), ("run.model", {}), ("run.packs", [1]), ("run.started_at", 5),
    ("run.shard", "1/1000000000"), ("run.shard", "x/y"), ("run.shard", {"k": 1}), ("run.merged_from", "2"),
    ("summary.gates_by_pack", {"starter": 5}), ("summary.gates_by_pack", {"starter": {"pass_rate": []}}),
    ("summary.gates_by_pack", {"starter": {"pass_rate": [1]}}), ("summary.gates_by_target", {"a": 5}),
    ("summary.fail", "x"), ("summary.by_category", []), ("summary.by_category.happy_path", {"pass": "1"}),
    ("summary.totals", {"cost_usd": "x"}), ("summary.pass_rate", "1"),
])
def test_a_wrong_typed_report_field(good, monkeypatch, where, value):
    root, report = good

    def change(doc):
        *parents, last = where.split(".")
        for key in parents:
            doc = doc[key]
        doc[last] = value

    refused_everywhere(root, "wrong.json", edited(report, change), monkeypatch, [where.split(".")[-1]])


def test_the_report_as_written_is_read_by_every_command(good, monkeypatch):
    root, _ = good
    for command, args in COMMANDS.items():
        code, out = invoke(root, args("run.json"), monkeypatch)
        assert code == 0, f"{command}\n{out}"
