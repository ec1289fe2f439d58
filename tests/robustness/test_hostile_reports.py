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


# ------------------------------------------------------------------ the HTML page of a hostile run

XSS = "</script><script>alert(1)</script><img src=x onerror=alert(2)><!--"
HOSTILE_TEXT = XSS + "\u2028\u2029\x00 lone \ud800 and \udfff & <b>bold</b>"


def hostile_report(report: dict) -> dict:
    """The run's report with a model's answers trying to break out of the page: markup, line and
    paragraph separators, NUL and lone surrogates in a tool name, its arguments and the text; a
    5 MB answer; a case id holding markup."""
    doc = copy.deepcopy(report)
    first, second = doc["cases"][0], doc["cases"][1]
    call = first["response"]["tool_calls"][0]
    call.update(name="get_weather" + HOSTILE_TEXT, arguments={"location" + HOSTILE_TEXT: HOSTILE_TEXT},
                arguments_raw=HOSTILE_TEXT)
    first["response"]["content"] = HOSTILE_TEXT
    first["output"]["content"] = HOSTILE_TEXT
    first["case"] = "<img src=x onerror=alert(3)>" + HOSTILE_TEXT
    first["reason"] = HOSTILE_TEXT
    second["response"]["content"] = "big:" + "x" * 5_000_000
    return doc


def test_a_hostile_run_gives_an_inert_valid_page(good, monkeypatch):
    from headless import Browser, require_chromium

    root, report = good
    (root / "hostile.json").write_text(json.dumps(hostile_report(report)), "utf-8")  # surrogates as \ud800
    code, out = invoke(root, ["report", "hostile.json", "--html", "hostile.html"], monkeypatch)
    assert code == 0, out
    data = (root / "hostile.html").read_bytes()
    data.decode("utf-8")  # valid UTF-8: no lone surrogate written raw
    assert b"\x00" not in data and b"<script>alert" not in data and b"<img src=x" not in data
    require_chromium()
    with Browser(width=1200, height=900) as browser:
        browser.open("file://" + str(root / "hostile.html"))
        assert browser.eval("new Promise(r => { const w = () => window.__replayci && window.__replayci.complete"
                            " ? r(true) : setTimeout(w, 10); w(); })")
        assert browser.eval("document.querySelectorAll('#case-rows > tr.case-row').length") == len(report["cases"])
        names = browser.eval("[...document.querySelectorAll('#case-rows .case-name')].map(e => e.textContent)")
        hostile_name = next(n for n in names if n.startswith("<img src=x onerror=alert(3)>"))
        assert "</script>" in hostile_name  # shown as text
        detail = browser.eval("(() => { const row = [...document.querySelectorAll('#case-rows tr.case-row')]"
                              ".find(r => r.querySelector('.case-name').textContent.startsWith('<img'));"
                              " row.click(); return row.nextElementSibling.textContent; })()")
        assert "<b>bold</b>" in detail and "alert(1)" in detail
        assert browser.eval("document.scripts.length") == 2
        assert browser.eval("document.querySelectorAll('img').length") == 0
        assert browser.eval("[...document.querySelectorAll('b')].filter(e => e.textContent === 'bold').length") == 0
        assert browser.console_errors() == []
        assert not [e for e in browser.events if e.get("method") == "Page.javascriptDialogOpening"]
        assert {u.split(":", 1)[0] for u in browser.requested_urls()} == {"file"}


def _unblock(path: Path, done) -> None:
    """A reader that opened the FIFO (the rule broken) gets end of file after a while instead of
    hanging the suite."""
    import os

    while not done.wait(3):
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_a_report_that_is_no_regular_file_is_refused_not_read(good, monkeypatch, kind):
    """A FIFO given as --baseline (or to merge, diff, report, regrade) would block forever, and
    /dev/zero would be read until memory runs out: each is refused naming it (exit 2)."""
    import os
    import threading

    root, _ = good
    path = root / "pipe.json"
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
        name = "pipe.json"
    else:
        name = "/dev/zero"
    done = threading.Event()
    threading.Thread(target=_unblock, args=(path, done), daemon=True).start()
    try:
        code, out = invoke(root, ["--baseline", name], monkeypatch)
        assert code == 2 and name in out and "not a regular file" in out, out
        for command, args in COMMANDS.items():
            code, out = invoke(root, args(name), monkeypatch)
            assert code == 2 and name in out and "not a regular file" in out, (command, out)
    finally:
        done.set()


@pytest.mark.parametrize("summary, case", [
    ({"repeat": {"n": 3}, "sampling": {"max": 20}}, {"repeat": 3, "passes": "all", "stability": ["flaky"]}),
    ({"repeat": [], "sampling": {"max": "twenty"}}, {"repeat": "3", "stability": 7}),
    ({"repeat": {"n": True}, "sampling": None}, {"repeat": -1, "passes": None}),
])
def test_hand_edited_repeat_records_are_merged_not_crashed_on(good, monkeypatch, summary, case):
    root, report = good
    (root / "edited.json").write_text(edited(report, lambda d: (d["summary"].update(summary),
                                                                d["cases"][0].update(case))), "utf-8")
    code, out = invoke(root, ["merge", "edited.json", "-o", "merged.json"], monkeypatch)
    assert code in (0, 1) and "Traceback" not in out and "internal error" not in out, out
    merged = json.loads((root / "merged.json").read_text("utf-8"))["summary"]
    assert isinstance(merged.get("sampling", {}), dict) and isinstance(merged.get("repeat", {}), dict)
