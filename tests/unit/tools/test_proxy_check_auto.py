"""`replayci proxy --mode check --repeat auto[:MAX] -- COMMAND`: the command runs again, a round at
a time, until every case it reaches is decided by the live runs' sequential test (or MAX runs);
the fake provider on 127.0.0.1 answers some questions the same way every time and one in turn
right and wrong."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import warmed
from fakeserver import FakeServer, Reply
from livecli import Router

REPO = Path(__file__).resolve().parents[3]
PARIS = Reply.tool_call("get_weather", {"location": "Paris"})
WRONG = Reply.tool_call("get_time", {"zone": "Europe/Paris"})  # a tool the request does not offer

# An application of its own (no SDK: plain HTTP, as any language's app would send): one chat
# completion per question it is given, through the base URL the proxy sets.
APP = r'''
import json, os, sys, urllib.request

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}}]
for question in sys.argv[1:]:
    body = {"model": "gpt-4o-mini", "tools": TOOLS, "messages": [{"role": "user", "content": question}]}
    if os.environ.get("APP_STREAM"):
        body["stream"] = True
    request = urllib.request.Request(os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json",
                                              "authorization": "Bearer sk-app-test-0123456789abcdef"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        answer.read()
'''
QUESTIONS = ("q:steady", "q:broken", "q:wobbly")


def replayci(*args, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "GITHUB_ACTIONS",
                                                             "GITHUB_STEP_SUMMARY", "APP_STREAM")}
    full = {**full, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([*warmed.cli(full), *map(str, args)], cwd=cwd, env=full, capture_output=True, text=True,
                          timeout=180, check=False)


@pytest.fixture(scope="module")
def server():
    with FakeServer(default=PARIS) as fake:
        yield fake


@pytest.fixture
def app(tmp_path, server) -> Path:
    """A pack captured from the good model: each question answered get_weather(Paris)."""
    server.reset()
    server.set_default(PARIS)
    (tmp_path / "app.py").write_text(APP, "utf-8")
    done = replayci("proxy", "--pack", "packs/app", "--mode", "record", "--upstream",
                    f"openai={server.openai_base_url}", "--", sys.executable, "app.py", *QUESTIONS, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    server.reset()
    return tmp_path


def check(app: Path, server, *extra, questions=QUESTIONS, env=None) -> tuple[subprocess.CompletedProcess, dict]:
    (app / "report.json").unlink(missing_ok=True)
    done = replayci("proxy", "--pack", "packs/app", "--mode", "check", "--upstream",
                    f"openai={server.openai_base_url}", "--report-json", "report.json", *extra, "--",
                    sys.executable, "app.py", *questions, cwd=app, env=env)
    report = json.loads((app / "report.json").read_text("utf-8")) if (app / "report.json").exists() else {}
    return done, report


def by_question(report: dict) -> dict:
    out = {}
    for c in report["cases"]:
        assert c["origin"] == "check"
        out[c["live_request"]["messages"][0]["content"].removeprefix("q:")] = c
    return out


def test_the_command_runs_again_until_every_case_is_decided(app, server):
    server.set_default(Router({"steady": [PARIS] * 20, "broken": [WRONG] * 20, "wobbly": [PARIS, WRONG] * 10}))
    done, report = check(app, server, "--repeat", "auto", "--markdown", "summary.md")
    assert done.returncode == 1, done.stderr  # a broken and a flaky case fail the run
    cases = by_question(report)
    got = {q: (c["stability"], c["repeat"], c["passes"]) for q, c in cases.items()}
    # The runs stop at the ninth: nine passes in a row are the fewest that decide stable_pass
    # (and nine failures stable_fail); the wobbly case was flaky after four, its label kept.
    assert got == {"steady": ("stable_pass", 9, 9), "broken": ("stable_fail", 9, 0), "wobbly": ("flaky", 9, 5)}
    assert (cases["steady"]["status"], cases["broken"]["status"]) == ("pass", "fail")
    assert {c["origin"] for c in report["cases"]} == {"check"}
    assert server.count() == 27
    sampling = report["summary"]["sampling"]
    assert sampling == {**sampling, "max": 20, "runs": 27, "fixed_runs": 60, "command_runs": 9,
                        "fixed_command_runs": 20, "calls": 27, "fixed_calls": 60,
                        "labels": {"stable_pass": 1, "stable_fail": 1, "flaky": 1}}
    assert report["summary"]["repeat"]["n"] == "auto:20"
    # priced as a live run prices its answers: 27 paid, against the 60 of a fixed --repeat 20
    assert 0 < sampling["cost_usd"] and sampling["fixed_cost_usd"] == pytest.approx(sampling["cost_usd"] / 27 * 60)
    assert "run 8: 2 cases undecided, running the command again" in done.stderr
    assert "run 9: every case decided" in done.stderr
    line = next(ln for ln in done.stdout.splitlines() if "--repeat auto:" in ln)
    assert line.startswith("  --repeat auto: 27 runs where a fixed --repeat 20 makes 60 (45.0%) · $"), line
    assert line.endswith(" · the command ran 9 times, 27 calls against 60 · 1 stable_pass · 1 stable_fail · 1 flaky")
    assert "the command ran 9 times" in (app / "summary.md").read_text("utf-8")


def test_max_ends_the_rounds_and_leaves_the_rest_undecided(app, server):
    server.set_default(Router({"steady": [PARIS] * 20, "broken": [WRONG] * 20, "wobbly": [PARIS, WRONG] * 10}))
    done, report = check(app, server, "--repeat", "auto:5")
    got = {q: (c["stability"], c["repeat"]) for q, c in by_question(report).items()}
    assert got == {"steady": ("undecided", 5), "broken": ("undecided", 5), "wobbly": ("flaky", 5)}
    assert server.count() == 15 and report["summary"]["sampling"]["command_runs"] == 5
    assert "run 5: 2 cases undecided; --repeat auto:5 reached" in done.stderr


def test_stable_cases_need_no_more_runs_than_their_decision(app, server):
    server.set_default(PARIS)  # every case passes every time
    done, report = check(app, server, "--repeat", "auto:12")
    assert done.returncode == 0, done.stderr
    assert {c["stability"] for c in report["cases"]} == {"stable_pass"} and server.count() == 27
    assert report["summary"]["sampling"]["command_runs"] == 9


def test_a_repeat_that_is_neither_a_number_nor_auto_is_refused(app, server):
    done, report = check(app, server, "--repeat", "auto:1")
    assert done.returncode == 2 and "auto:MAX with MAX >= 2" in done.stderr and "Traceback" not in done.stderr
    assert server.count() == 0 and report == {}


def test_with_a_baseline_the_runs_go_on_until_the_regression_is_decided(app, server):
    server.set_default(PARIS)
    done, main = check(app, server, "--repeat", "auto", questions=("q:wobbly",))
    assert done.returncode == 0 and by_question(main)["wobbly"]["passes"] == 9, done.stderr
    (app / "main.json").write_text(json.dumps(main), "utf-8")
    server.set_default(Router({"wobbly": [PARIS, WRONG] * 10}))
    _, alone = check(app, server, "--repeat", "auto", questions=("q:wobbly",))
    assert (by_question(alone)["wobbly"]["stability"], by_question(alone)["wobbly"]["repeat"]) == ("flaky", 4)
    server.reset()
    server.set_default(Router({"wobbly": [PARIS, WRONG] * 10}))
    done, now = check(app, server, "--repeat", "auto", "--baseline", "main.json", "--gate-baseline",
                      questions=("q:wobbly",))
    case = by_question(now)["wobbly"]
    # flaky after 4 runs (2/4), but against 9/9 the drop is significant only after 6 (3/6: p = 0.044)
    assert (case["stability"], case["repeat"], case["passes"]) == ("flaky", 6, 3)
    assert case["baseline"] == "regressed" and case["baseline_p"] < 0.05
    assert server.count() == 6 and done.returncode == 1


def test_a_streamed_answer_is_counted_in_the_run_of_the_command_that_asked_it(app, server):
    server.set_default(Router({"wobbly": [PARIS, WRONG] * 10}))
    done, report = check(app, server, "--repeat", "auto", questions=("q:wobbly",), env={"APP_STREAM": "1"})
    case = by_question(report)["wobbly"]
    # each run's streamed answer is judged before the next run is decided on: flaky after 4
    assert (case["stability"], case["repeat"], case["passes"]) == ("flaky", 4, 2), done.stderr
    assert all(r.body["stream"] is True for r in server.requests) and server.count() == 4
    assert "still streaming" not in done.stderr  # each stream's end was counted: no run waited for one
