"""Live runs end to end: the real CLI, the real SDKs, the fake server on 127.0.0.1.

Keys, retries and faults at the run level, input invariants on the request as sent,
concurrency and stable order, progress, Ctrl-C, and --repeat.
"""
from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from fakeserver import Fault, Reply
from livecli import (
    ENV_KEY,
    KEYS,
    MODELS,
    PARIS,
    PATHS,
    PROVIDERS,
    Router,
    add_cases,
    cases_by_id,
    invoke,
    model_args,
    report_of,
    requests_for,
)

from replayci import load_pack
from replayci.cli.output import Progress, wants_progress
from replayci.engine.events import Handler
from replayci.engine.runner import Item
from replayci.pack.fixtures import load_fixture

pytestmark = pytest.mark.parametrize("provider", PROVIDERS)


# ----------------------------------------------------------------------------- keys and imports


def test_missing_key_makes_each_case_missing_prerequisites(provider, pack, server):
    add_cases(pack, "weather", ["a", "b", "c"])
    res = invoke(provider, server, "--json", key=False)
    assert res.exit_code == 1  # max_non_reproducible: 0
    cases = report_of(res)["cases"]
    assert [(c["status"], c["reason"]) for c in cases] == [("non_reproducible", "missing_prerequisites")] * 3
    assert all(c["message"] == f"no API key for {provider} (see the warning)" for c in cases)
    assert any(ENV_KEY[provider] in w for w in report_of(res)["warnings"])
    lines = [line for line in res.stderr.splitlines() if ENV_KEY[provider] in line]
    assert lines == [f"replayci: warning: no API key for {provider}: set {ENV_KEY[provider]} (or "
                     "REPLAYCI_PROVIDER_KEY) in the environment; cases that need a live call are "
                     "non_reproducible: missing_prerequisites"]
    assert server.count() == 0


def test_replayci_provider_key_is_used(provider, pack, server):
    add_cases(pack, "weather", ["a"])
    res = invoke(provider, server, key=False, env={"REPLAYCI_PROVIDER_KEY": KEYS[provider]})
    assert res.exit_code == 0, res.output
    assert server.requests[0].api_key == KEYS[provider]


def test_the_live_path_imports_the_sdk(provider, pack, server):
    """The counterpart of test_recorded_path_imports_no_provider_sdk (test_cli.py)."""
    add_cases(pack, "weather", ["a"])
    code = ("import sys\nfrom replayci.cli import cli\n"
            "try:\n    cli.main(args=sys.argv[1:], prog_name='replayci')\nexcept SystemExit as e:\n    code = e.code\n"
            "sdks = sorted(m for m in sys.modules if m in ('openai', 'anthropic'))\n"
            "print('IMPORTED', sdks, code)\n")
    env = {**os.environ, ENV_KEY[provider]: KEYS[provider]}
    argv = ["--provider", provider, "--base-url", server.base_url_for(provider), *model_args(provider, [])]
    proc = subprocess.run([sys.executable, "-c", code, *argv], cwd=pack.root, env=env, capture_output=True,
                          text=True, check=False, timeout=60)
    assert f"IMPORTED ['{provider}'] 0" in proc.stdout, proc.stdout + proc.stderr


# ----------------------------------------------------------------------------- faults at the run level

FAULTS_CONTRACT = """\
tool: get_weather
timeouts: {total_ms: 400}
retries: {max_attempts: 2}
rate_limits: {on_429: {respect_retry_after: true, max_sleep_seconds: 5}}
"""


def test_every_fault_through_the_cli(provider, pack, server):
    ids = ["rate_limited", "e500", "e503", "slow", "dropped", "not_json", "bad_request", "fine"]
    add_cases(pack, "faults", ids, header=FAULTS_CONTRACT)
    server.set_default(Router({
        "rate_limited": [Fault.rate_limit(retry_after=0.3)],
        "e500": [Fault.status(500), Fault.status(500)],
        "e503": [Fault.status(503)],
        "slow": [Fault.slow(2.0, PARIS), Fault.slow(2.0, PARIS)],
        "dropped": [Fault.dropped()],
        "not_json": [Fault.not_json()],
        "bad_request": [Fault.status(400)],
    }))
    res = invoke(provider, server, "--json", "--jobs", "8")
    assert res.exit_code == 1, res.output
    cases = cases_by_id(report_of(res))
    seen = {i: len(requests_for(server, i)) for i in ids}
    assert seen == {"rate_limited": 2, "e500": 2, "e503": 2, "slow": 2, "dropped": 2, "not_json": 1,
                    "bad_request": 1, "fine": 1}
    assert {i: cases[i]["attempts"] for i in ids} == seen
    # Retry-After was waited for.
    first, second = requests_for(server, "rate_limited")
    assert second.time - first.time >= 0.28
    for i in ("rate_limited", "e503", "dropped", "fine"):
        assert cases[i]["status"] == "pass", cases[i]
    for i in ("e500", "slow", "not_json", "bad_request"):
        assert (cases[i]["status"], cases[i]["classification"]) == ("fail", "unexpected_error"), cases[i]
    msg = {i: cases[i]["failures"][0]["message"] for i in ("e500", "slow", "not_json", "bad_request")}
    server_500 = "The server had an error" if provider == "openai" else "Internal server error"
    assert "(HTTP 500)" in msg["e500"] and server_500 in msg["e500"] and "after 2 attempts" in msg["e500"]
    bad_400 = "Invalid value for 'tool_choice'" if provider == "openai" else "tool_choice.type"
    assert "(HTTP 400)" in msg["bad_request"] and bad_400 in msg["bad_request"]
    assert "after 1 attempt)" in msg["bad_request"]
    assert "no response within 0.4 s" in msg["slow"] and "timeout" in msg["slow"]
    assert "not JSON" in msg["not_json"]
    # The terminal shows the provider's status and message too (on stderr with --json).
    assert "unexpected_error" in res.stderr and "HTTP 500" in res.stderr


def test_retry_on_limits_what_is_retried(provider, pack, server):
    add_cases(pack, "w", ["a"], header="tool: get_weather\nretries: {max_attempts: 3, retry_on: ['429']}\n")
    server.set_default(Router({"a": [Fault.status(500)]}))
    res = invoke(provider, server, "--json")
    (case,) = report_of(res)["cases"]
    assert case["classification"] == "unexpected_error" and case["attempts"] == 1
    assert len(requests_for(server, "a")) == 1


# ----------------------------------------------------------------------------- input invariants


def test_input_invariants_see_the_request_as_sent(provider, pack, server):
    add_cases(pack, "w", ["a"], header="""\
tool: get_weather
assertions:
  input_invariants:
    - path: $.model
      equals: model-under-test
    - path: $.messages[0].role
      equals: system
    - path: $.tools[0].function.name
      equals: get_weather
""")
    res = invoke(provider, server, "--json", "--model", "model-under-test")
    assert res.exit_code == 0, res.output
    (received,) = server.requests
    assert received.body["model"] == "model-under-test"
    if provider == "anthropic":  # translated on the wire; the invariants saw the OpenAI form
        assert "system" in received.body and received.body["messages"][0]["role"] == "user"
    res = invoke(provider, server, "--json")  # the provider's default model in the tests: the invariant fails
    (case,) = report_of(res)["cases"]
    assert (case["status"], case["classification"]) == ("fail", "input_violation")
    assert f'got "{MODELS[provider]}"' in case["failures"][0]["message"]


# ----------------------------------------------------------------------------- concurrency


def _by_case(q: str):
    """Different answers per case, with different delays so calls finish out of order."""
    n = int(q.rsplit("c", 1)[-1]) if q.startswith("q:c") else 0
    return Fault.slow(0.03 * ((7 * n) % 5), Reply.tool_call("get_weather", {"location": f"City {n}"}))


def test_jobs_run_concurrently_and_order_is_stable(provider, pack, server):
    ids = [f"c{i}" for i in range(8)]
    add_cases(pack, "w", ids)
    server.set_default(Router(default=_by_case))
    server.latency = 0.05
    par = invoke(provider, server, "--json", "--jobs", "4")
    assert par.exit_code == 0, par.output
    assert server.max_in_flight == 4
    server.reset()
    seq = invoke(provider, server, "--json", "--jobs", "1")
    assert server.max_in_flight == 1
    key = [(c["case"], c["status"], c["fingerprint"]) for c in report_of(seq)["cases"]]
    assert [(c["case"], c["status"], c["fingerprint"]) for c in report_of(par)["cases"]] == key
    assert [k[0] for k in key] == ids and len({k[2] for k in key}) == 8
    # Terminal lines in the same order too.
    lines = [line.split()[1] for line in par.stderr.splitlines() if line.startswith("  demo/w ")]
    assert lines == ids


def test_progress_only_on_a_terminal(provider):
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert wants_progress(provider, False, Tty(), {}) is True
    assert wants_progress(provider, True, Tty(), {}) is False  # --json
    assert wants_progress(provider, False, Tty(), {"CI": "true"}) is False  # CI logs
    assert wants_progress(provider, False, io.StringIO(), {}) is False  # not a terminal
    assert wants_progress("recorded", False, Tty(), {}) is False


def test_progress_bar_output(provider, capsys):
    class R:
        pack, contract, case = "demo", "w", "c1"

    from replayci.engine.events import CaseJudged, RunStarted

    bar = Progress()
    bar.handle(RunStarted(4))
    bar.handle(CaseJudged(R()))
    bar.handle(CaseJudged(R()))
    bar.close()
    err = capsys.readouterr().err
    # (click drops the erase-line escape when stderr is not a terminal, as here)
    assert "\r  [#######-----------------------] 1/4  demo/w/c1" in err
    assert "\r  [###############---------------] 2/4  demo/w/c1" in err
    assert err.endswith("\r")


def test_ctrl_c_reports_finished_cases_and_exits_130(provider, pack, server):
    ids = ["f1", "f2", "s1", "s2", "s3", "s4"]
    add_cases(pack, "w", ids)
    server.set_default(Router(default=lambda q: Fault.slow(30, PARIS) if q.startswith("q:s") else PARIS))
    env = {**os.environ, ENV_KEY[provider]: KEYS[provider], "PYTHONFAULTHANDLER": "1"}
    # A cold interpreter: PYTHONFAULTHANDLER is read at start-up, and SIGABRT must reach this very process.
    proc = subprocess.Popen([sys.executable, "-m", "replayci", "--no-color", "--provider", provider,
                             "--base-url", server.base_url_for(provider), "--jobs", "2",
                             *model_args(provider, [])],
                            cwd=pack.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while len([r for r in server.requests if "q:s" in str(r.body)]) < 2:
            assert time.monotonic() < deadline and proc.poll() is None, "the slow calls never started"
            time.sleep(0.02)
        time.sleep(0.1)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:  # show where it hangs (faulthandler dumps on SIGABRT)
            proc.send_signal(signal.SIGABRT)
            out, err = proc.communicate(timeout=15)
            raise AssertionError(f"no exit 15 s after Ctrl-C:\n{out}\n{err}") from None
        stopped_in = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + err
    assert stopped_in < 5  # did not wait for the calls in flight
    ran = [line.split()[1] for line in out.splitlines() if line.startswith("  demo/w ")]
    assert ran == ["f1", "f2"]
    assert "interrupted" in err
    assert "unexpected_error" not in out
    # Ctrl-C stopped new calls: s3 and s4 never reached the server.
    assert not requests_for(server, "s3") and not requests_for(server, "s4")


def test_a_cancelled_call_is_not_an_unexpected_error(provider, pack, server):
    from replayci.config import resolve
    from replayci.engine.live import INTERRUPTED_REASON, LiveRunner

    add_cases(pack, "w", ["a"])
    loaded = load_pack(pack.dir)
    contract = loaded.contracts[0]
    item = Item(loaded, contract, contract.cases[0])
    fixture = load_fixture(item.case.fixture_path, item.case.fixture_display)
    settings = resolve({"provider": provider, "base_url": server.base_url_for(provider)})
    stop = threading.Event()
    stop.set()
    runner = LiveRunner(settings, Handler(), stop, key=KEYS[provider])
    result = runner.run_once(item, fixture, time.perf_counter())
    assert (result.status, result.reason, result.classification) == ("skipped", INTERRUPTED_REASON, None)
    assert server.count() == 0
    # Stopped during the Retry-After wait of a 429: the outcome is CANCELLED-like, not a failure.
    stop.clear()
    server.set_default(Router({"a": [Fault.rate_limit(retry_after=5)]}))
    stopped_at = server.after(1, stop.set)
    result = runner.run_once(item, fixture, time.perf_counter())
    assert stopped_at and time.perf_counter() - stopped_at[0] < 3
    assert result.status == "skipped" and result.classification is None
    runner.close()


# ----------------------------------------------------------------------------- --repeat


def test_repeat_pass_rate_and_nondeterminism(provider, pack, server):
    add_cases(pack, "w", ["steady", "flaky", "broken"])
    answers = {"flaky": [PARIS, Reply.plain_text("It is sunny."), PARIS]}
    server.set_default(Router(answers, default=lambda q: Reply.plain_text("no") if q == "q:broken" else PARIS))
    res = invoke(provider, server, "--json", "--repeat", "3", "--jobs", "4")
    assert server.count(PATHS[provider]) == 9
    report = report_of(res)
    cases = cases_by_id(report)
    steady, flaky, broken = cases["steady"], cases["flaky"], cases["broken"]
    assert (steady["status"], steady["passes"], steady["case_pass_rate"]) == ("pass", 3, 1.0)
    assert (flaky["status"], flaky["reason"]) == ("non_reproducible", "model_nondeterminism")
    assert (flaky["passes"], flaky["case_pass_rate"], len(set(flaky["fingerprints"]))) == (2, 0.6667, 2)
    assert (broken["status"], broken["classification"], broken["passes"]) == ("fail", "tool_not_invoked", 0)
    assert report["summary"]["repeat"] == {"n": 3, "cases": 3, "pass_all": 0.3333, "pass_rate": 0.5556}
    # one pass rate: over the runs, in the summary, the gate and the terminal alike
    assert report["summary"]["pass_rate"] == report["summary"]["gates"]["pass_rate"]["actual"] == 0.5556
    assert report["summary"]["runs"] == {"passes": 5, "runs": 9, "non_reproducible_runs": 0, "skipped_runs": 0}
    assert flaky["run_counts"] == {"pass": 2, "fail": 1, "non_reproducible": 0, "skipped": 0, "error": 0}
    text = res.stderr
    assert "[3/3 runs passed]" in text and "[2/3 runs passed]" in text and "[0/3 runs passed]" in text
    assert "pass rate 55.6% (5/9 runs) · pass^3 0.33" in text


def test_repeat_identical_answers_pass(provider, pack, server):
    add_cases(pack, "w", ["a"])
    res = invoke(provider, server, "--repeat", "2")
    assert res.exit_code == 0, res.output
    assert "[2/2 runs passed]" in res.stdout and "pass^2 1.00" in res.stdout
    assert server.count() == 2


def test_live_output_lists_cases_in_the_spec_format(provider, pack, server):
    add_cases(pack, "w", ["a"])
    res = invoke(provider, server)
    assert res.exit_code == 0
    assert res.stdout.startswith(f"replayci · {provider} · {MODELS[provider]} · 1 pack · 1 case\n")
    assert "  demo/w   a   pass" in res.stdout
