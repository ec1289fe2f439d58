"""Batch runs end to end: the real CLI, the real openai and anthropic SDKs' batch methods, the
fake server's batch APIs on 127.0.0.1 (files, batches, output and error files, results JSONL)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
import warmed
from click.testing import CliRunner
from fakeserver import Fault, Reply
from livecli import (
    ENV_KEY,
    KEYS,
    MODELS,
    PARIS,
    PROVIDERS,
    Router,
    add_cases,
    cases_by_id,
    invoke,
    live_env,
    model_args,
    report_of,
)

import replayci
from replayci.cli import cli
from replayci.core.errors import ConfigError
from replayci.core.prices import BUILT_IN
from replayci.engine.batchfile import BATCHES_DIR, custom_id
from replayci.engine.cases import Interrupted

byprovider = pytest.mark.parametrize("provider", PROVIDERS)
FAST = {"REPLAYCI_BATCH_POLL_SECONDS": "0.01", "REPLAYCI_BATCH_POLL_MAX_SECONDS": "0.02"}
CREATE = {"openai": "/v1/batches", "anthropic": "/v1/messages/batches"}
LONDON = Reply.tool_call("get_weather", {"location": "London"})
PARIS_ONLY = ('tool: get_weather\nassertions:\n  output_invariants:\n'
              '    - {path: "$.tool_calls[0].arguments.location", equals: Paris}\n')


def creates(server, provider: str) -> list:
    return [r for r in server.requests if r.method == "POST" and r.path == CREATE[provider]]


def batched(server) -> list:
    """The model requests the batches carried (answered by the fake as the live endpoint would)."""
    return [r for r in server.requests if "x-fake-batch" in r.headers]


def run_files(project) -> list:
    folder = project / BATCHES_DIR
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def batch(provider, server, *args, env=None):
    return invoke(provider, server, "--batch", "--json", *args, env={**FAST, **(env or {})})


# ----------------------------------------------------------------------------- requests and results


@byprovider
def test_every_case_and_repeat_is_one_request_with_a_stable_custom_id(provider, pack, server):
    add_cases(pack, "weather", ["a", "b"])
    res = batch(provider, server, "--repeat", "3")
    assert res.exit_code == 0, res.output
    assert len(creates(server, provider)) == 1  # one batch for the whole run
    sent = batched(server)
    model = MODELS[provider]
    expected = {custom_id("demo", "weather", case, repeat=r, target=f"{provider}:{model}")
                for case in "ab" for r in range(3)}
    assert {r.headers["x-fake-custom-id"] for r in sent} == expected  # 6 distinct ids: each case x repeat
    assert all(r.body["model"] == model for r in sent)
    report = report_of(res)
    assert report["run"]["batch"] is True
    assert [(c["case"], c["status"], c["repeat"]) for c in report["cases"]] == [("a", "pass", 3), ("b", "pass", 3)]
    assert run_files(pack.root) == []  # the run is over: nothing is left to resume
    server.reset()
    assert batch(provider, server, "--repeat", "3").exit_code == 0
    assert {r.headers["x-fake-custom-id"] for r in batched(server)} == expected  # the same ids in every run


def test_custom_ids_differ_by_each_part_and_fit_both_apis():
    base = {"repeat": 0, "target": "openai:gpt-4o-mini"}
    ids = {custom_id("p", "c", "k", **base), custom_id("q", "c", "k", **base), custom_id("p", "d", "k", **base),
           custom_id("p", "c", "l", **base), custom_id("p", "c", "k", repeat=1, target=base["target"]),
           custom_id("p", "c", "k", repeat=0, target="anthropic:claude-sonnet-4-5"),
           custom_id("p", "c", "k", **base, step=1)}
    assert len(ids) == 7
    assert custom_id("p", "c", "k", **base) == custom_id("p", "c", "k", **base, step=0)
    import re

    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", i) for i in ids)


def test_openai_batches_carry_jsonl_lines_for_their_endpoint(pack, server):
    add_cases(pack, "weather", ["a"])
    for provider, endpoint in (("openai", "/v1/chat/completions"), ("openai-responses", "/v1/responses")):
        server.reset()
        res = invoke(provider, server, "--batch", "--json", env=FAST)
        assert res.exit_code == 0, res.output
        (create,) = creates(server, "openai")
        assert create.body["endpoint"] == endpoint and create.body["completion_window"] == "24h"
        lines = server.batches.files[create.body["input_file_id"]].decode().splitlines()
        (line,) = [json.loads(x) for x in lines]
        assert set(line) == {"custom_id", "method", "url", "body"}
        assert (line["method"], line["url"]) == ("POST", endpoint)
        assert ("input" if provider == "openai-responses" else "messages") in line["body"]
        assert [r.path for r in batched(server)] == [endpoint]


@byprovider
def test_results_map_back_by_custom_id(provider, pack, server):
    pack.contract("weather", PARIS_ONLY + "golden_cases:\n" + "".join(
        f"  - {{id: {i}, input_ref: weather.{i}.json}}\n" for i in "abcd"))
    for i in "abcd":
        from builders import fixture, request

        pack.fixture(f"weather.{i}.json", fixture(request(f"q:{i}")))
    server.set_default(Router({"b": [LONDON], "d": [LONDON]}))
    res = batch(provider, server)
    # Anthropic's results come in another order than the requests (the fake reverses them).
    assert {c["case"]: c["status"] for c in report_of(res)["cases"]} == {"a": "pass", "b": "fail", "c": "pass",
                                                                           "d": "fail"}
    assert res.exit_code == 1


@byprovider
def test_errored_and_expired_requests_are_unexpected_errors_with_the_providers_reason(provider, pack, server):
    add_cases(pack, "weather", ["ok", "bad", "late"])
    server.set_default(Router({"bad": [Fault.status(400, message="Invalid 'tools[0].name': too long")]}))
    server.batches.expire = lambda body: "q:late" in json.dumps(body)
    res = batch(provider, server)
    cases = cases_by_id(report_of(res))
    assert cases["ok"]["status"] == "pass"
    assert (cases["bad"]["classification"], cases["late"]["classification"]) == ("unexpected_error",) * 2
    assert "Invalid 'tools[0].name': too long" in cases["bad"]["reason"]
    assert cases["bad"]["response"]["error"]["type"] == "batch_errored"
    assert cases["late"]["response"]["error"]["type"] == "batch_expired"
    assert "expired" in cases["late"]["reason"]


@byprovider
def test_a_cancelled_batch_makes_its_requests_unexpected_errors(provider, pack, server):
    add_cases(pack, "weather", ["a", "b"])
    server.batches.hold = True
    cancelled = []

    class Listener:
        def __call__(self, result):
            pass

        def batch_progress(self, p):
            if not cancelled:
                res = CliRunner().invoke(cli, ["batch", "cancel"], env=live_env(provider))
                assert res.exit_code == 0, res.output
                cancelled.append(res.stdout)

    result = replayci.run(pack.root / "packs" / "demo", provider=provider, base_url=server.base_url_for(provider),
                          model=MODELS[provider], batch=True, listener=Listener(),
                          environ={**live_env(provider), **FAST})
    assert "cancel" in cancelled[0]  # the batch's new status (cancelling / canceling)
    assert [(c.case, c.classification, c.response["error"]["type"]) for c in result.cases] == [
        ("a", "unexpected_error", "batch_canceled"), ("b", "unexpected_error", "batch_canceled")]
    assert len(creates(server, provider)) == 1


# ----------------------------------------------------------------------------- prices and recordings


@byprovider
def test_answers_are_priced_at_the_batch_price(provider, pack, server):
    model = "gpt-4o-mini" if provider == "openai" else "claude-haiku-4-5"
    add_cases(pack, "weather", ["a"])
    live = report_of(invoke(provider, server, "--json", "--model", model))["cases"][0]
    price = BUILT_IN[model]
    usage = live["response"]["usage"]
    listed = (usage["input_tokens"] * price.input_per_mtok + usage["output_tokens"] * price.output_per_mtok) / 1e6
    assert live["cost_usd"] == pytest.approx(listed)
    cases = report_of(batch(provider, server, "--model", model))["cases"]
    assert cases[0]["response"]["usage"] == usage
    assert cases[0]["cost_usd"] == pytest.approx(listed / 2)
    (pack.root / ".replayci.yml").write_text(f"pricing:\n  {model}: {{input_per_mtok: {price.input_per_mtok}, "
                                             f"output_per_mtok: {price.output_per_mtok}, batch_discount: 0.2}}\n")
    cases = report_of(batch(provider, server, "--model", model))["cases"]
    assert cases[0]["cost_usd"] == pytest.approx(listed * 0.8)


@byprovider
def test_answers_are_recorded_and_replay_offline(provider, pack, server):
    add_cases(pack, "weather", ["a", "b"])
    res = batch(provider, server, "--record")
    assert res.exit_code == 0, res.output
    for case in "ab":
        doc = json.loads((pack.root / "packs/demo/recordings/weather" / f"{case}.json").read_text())
        assert doc["meta"]["provider"] == provider and doc["meta"]["model"] == MODELS[provider]
        assert doc["response"]["tool_calls"][0]["id"] == "call_1"
        assert KEYS[provider] not in json.dumps(doc)
    offline = CliRunner().invoke(cli, ["--json", "--no-color"], env=live_env(""))
    assert offline.exit_code == 0, offline.output
    assert [c["response_source"] for c in report_of(offline)["cases"]] == ["recording", "recording"]


# ----------------------------------------------------------------------------- waiting, timeout, resume


@byprovider
def test_batch_timeout_leaves_missing_cases_incomplete_and_the_same_command_resumes(provider, pack, server):
    add_cases(pack, "weather", ["a", "b"])
    server.batches.hold = True
    res = batch(provider, server, "--batch-timeout", "0.3s")
    assert res.exit_code == 1
    assert [(c["status"], c["reason"]) for c in report_of(res)["cases"]] == [("non_reproducible",
                                                                             "batch_incomplete")] * 2
    (run_file,) = run_files(pack.root)
    doc = json.loads(run_file.read_text())
    (entry,) = doc["batches"]
    assert entry["round"] == 0 and len(entry["custom_ids"]) == 2
    assert any(entry["id"] in w and "same command" in w for w in report_of(res)["warnings"])

    status = CliRunner().invoke(cli, ["batch", "status"], env=live_env(provider))
    assert status.exit_code == 0, status.output
    assert doc["run"] in status.stdout and entry["id"] in status.stdout and "0/2 done" in status.stdout

    server.batches.hold = False
    res = batch(provider, server)
    assert res.exit_code == 0, res.output
    assert len(creates(server, provider)) == 1  # polled again, never submitted twice
    assert [c["status"] for c in report_of(res)["cases"]] == ["pass", "pass"]
    assert run_files(pack.root) == []


@byprovider
def test_the_run_file_is_written_before_polling(provider, pack, server):
    add_cases(pack, "weather", ["a"])
    seen = []

    class Listener:
        def __call__(self, result):
            pass

        def batch_progress(self, p):
            seen.append(([json.loads(f.read_text()) for f in run_files(pack.root)], p))

    replayci.run(pack.root / "packs" / "demo", provider=provider, base_url=server.base_url_for(provider),
                 model=MODELS[provider], batch=True, listener=Listener(), environ={**live_env(provider), **FAST})
    (docs, first) = seen[0]
    assert [b["id"] for b in docs[0]["batches"]] == list(first.batches)
    assert (first.done, first.failed, first.total) == (0, 0, 1) or first.total == 1
    assert seen[-1][1].done == 1


@byprovider
def test_an_interrupted_run_resumes_and_submits_once(provider, pack, server):
    add_cases(pack, "weather", ["a", "b"])
    server.batches.polls_to_end = 1000

    class Listener:
        def __call__(self, result):
            pass

        def batch_progress(self, p):
            raise KeyboardInterrupt

    with pytest.raises(Interrupted):
        replayci.run(pack.root / "packs" / "demo", provider=provider, base_url=server.base_url_for(provider),
                     model=MODELS[provider], batch=True, listener=Listener(), environ={**live_env(provider), **FAST})
    assert len(run_files(pack.root)) == 1
    server.batches.polls_to_end = 1
    res = batch(provider, server)
    assert res.exit_code == 0, res.output
    assert len(creates(server, provider)) == 1
    assert run_files(pack.root) == []


def test_ctrl_c_while_waiting_exits_130_and_the_same_command_resumes(pack, server):
    provider = "openai"
    add_cases(pack, "weather", ["a", "b"])
    server.batches.hold = True
    env = {**os.environ, ENV_KEY[provider]: KEYS[provider], **FAST}
    argv = [*warmed.cli(env), "--no-color", "--provider", provider, "--base-url",
            server.base_url_for(provider), "--batch", *model_args(provider, [])]
    proc = subprocess.Popen(argv, cwd=pack.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not [r for r in server.requests if r.method == "GET" and r.path.startswith("/v1/batches/")]:
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "same command" in err and "replayci batch cancel" in err
    assert len(run_files(pack.root)) == 1
    server.batches.hold = False
    done = subprocess.run(argv, cwd=pack.root, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert len(creates(server, provider)) == 1
    assert "2/2 passed" in done.stdout


# ----------------------------------------------------------------------------- scenarios


@byprovider
def test_scenarios_run_one_batch_round_per_step(provider, pack, server):
    from fakeserver import first_user_text
    from test_scenario_live import GOOD, scenario_pack

    scenario_pack(pack, cases=("s1", "s2"))
    add_cases(pack, "weather", ["a"])
    server.set_default(lambda req: PARIS if first_user_text(req) == "q:a" else GOOD)
    res = batch(provider, server)
    assert res.exit_code == 0, res.output
    assert [len(c.body.get("requests") or []) if provider == "anthropic" else None
            for c in creates(server, provider)] == ([3, 2, 2] if provider == "anthropic" else [None] * 3)
    rounds = [r.headers["x-fake-batch"] for r in batched(server)]
    assert [rounds.count(b) for b in dict.fromkeys(rounds)] == [3, 2, 2]
    assert [c["status"] for c in report_of(res)["cases"]] == ["pass", "pass", "pass"]


@byprovider
def test_a_batch_scenario_that_departs_stops_at_that_step(provider, pack, server):
    from fakeserver import Conversation, first_user_text
    from test_scenario_live import DONE, GOOD, RESULTS, F, H, W, scenario_pack

    scenario_pack(pack, cases=("s1", "s2"), results=[r for r in RESULTS if r["tool"] != "get_weather"])
    wrong = Conversation([F, W, H, DONE])  # the weather call breaks tool_sequence strict at step 2
    server.set_default(lambda req: wrong if first_user_text(req) == "q:s2" else GOOD)
    res = batch(provider, server)
    assert res.exit_code == 1, res.output
    cases = {c["case"]: c for c in report_of(res)["cases"]}
    assert cases["s1"]["status"] == "pass"
    assert (cases["s2"]["status"], cases["s2"]["classification"]) == ("fail", "sequence_violation")
    assert cases["s2"]["failures"][0]["message"].startswith("step 2: ") and len(cases["s2"]["trajectory"]) == 2
    rounds = [r.headers["x-fake-batch"] for r in batched(server)]
    assert [rounds.count(b) for b in dict.fromkeys(rounds)] == [2, 2, 1]  # s2 asks no third round


# ----------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("provider", ["gemini", "bedrock", "recorded"])
def test_providers_without_a_batch_api_refuse_it(provider, pack, server):
    add_cases(pack, "weather", ["a"])
    res = invoke(provider, server if provider != "recorded" else None, "--batch", key=provider != "recorded")
    assert res.exit_code == 2
    assert "--batch" in res.stderr and "openai, openai-responses, anthropic" in res.stderr
    assert server.count() == 0
    with pytest.raises(ConfigError, match="openai, openai-responses, anthropic"):  # the API refuses it too
        replayci.run(pack.root / "packs" / "demo", provider=provider, batch=True, environ=live_env(""))


@pytest.mark.parametrize("args, message", [
    (["--batch-timeout", "1h"], "add --batch"),
    (["--batch", "--batch-timeout", "soon"], "expected a duration"),
    (["--batch", "--batch-timeout", "0s"], "expected a duration"),
    (["--batch", "--stream"], "never streams"),
])
def test_bad_batch_flags_are_usage_errors(args, message, pack, server):
    add_cases(pack, "weather", ["a"])
    res = invoke("openai", server, *args)
    assert res.exit_code == 2 and message in res.stderr
    assert server.count() == 0


def test_a_damaged_run_file_is_named(pack, server):
    add_cases(pack, "weather", ["a"])
    server.batches.hold = True
    assert batch("openai", server, "--batch-timeout", "0.2").exit_code == 1
    (run_file,) = run_files(pack.root)
    run_file.write_text("{not json")
    res = batch("openai", server)
    assert res.exit_code == 2
    assert run_file.name in res.stderr and "delete it" in res.stderr
    assert run_file.read_text() == "{not json"


def test_batch_commands_name_unknown_runs_and_missing_keys(pack, server):
    add_cases(pack, "weather", ["a"])
    assert CliRunner().invoke(cli, ["batch", "status"]).stdout.startswith("no batch runs pending")
    server.batches.hold = True
    batch("openai", server, "--batch-timeout", "0.2")
    (run_file,) = run_files(pack.root)
    run = json.loads(run_file.read_text())["run"]
    res = CliRunner().invoke(cli, ["batch", "cancel", run[:-1] + "x"], env=live_env("openai"))
    assert res.exit_code == 2 and f"did you mean '{run}'" in res.stderr.lower().replace('"', "'")
    res = CliRunner().invoke(cli, ["batch", "status"], env=live_env("openai", key=False))
    assert res.exit_code == 0 and "no API key for openai" in res.stdout
    res = CliRunner().invoke(cli, ["batch", "cancel", run], env=live_env("openai"))
    assert res.exit_code == 0 and "cancelling" in res.stdout
    res = CliRunner().invoke(cli, ["batch", "status", "--no-color"], env=live_env("openai"))
    assert "cancelled" in res.stdout


# ----------------------------------------------------------------------------- polling, limits, failures


def test_polling_starts_after_the_first_interval_and_backs_off_to_the_limit(pack, server, monkeypatch):
    from replayci.engine import batch as batch_module

    waits = []
    monkeypatch.setattr(batch_module, "_sleep", waits.append)
    add_cases(pack, "weather", ["a"])
    server.batches.polls_to_end = 6
    res = invoke("openai", server, "--batch", "--json", env={"REPLAYCI_BATCH_POLL_SECONDS": "1",
                                                             "REPLAYCI_BATCH_POLL_MAX_SECONDS": "4"})
    assert res.exit_code == 0, res.output
    assert waits == [1, 2, 4, 4, 4, 4]  # six polls: the sixth saw the batch ended


def test_the_default_pace_is_one_second_then_up_to_a_minute(pack, server, monkeypatch):
    from replayci.engine import batch as batch_module

    waits = []
    monkeypatch.setattr(batch_module, "_sleep", waits.append)
    add_cases(pack, "weather", ["a"])
    server.batches.polls_to_end = 9
    assert invoke("openai", server, "--batch", "--json").exit_code == 0
    assert waits == [1, 2, 4, 8, 16, 32, 60, 60, 60]


def test_a_run_larger_than_one_batch_takes_several(pack, server, monkeypatch):
    from replayci.engine import batch as batch_module

    monkeypatch.setattr(batch_module, "MAX_BATCH_REQUESTS", 2)
    add_cases(pack, "weather", ["a", "b", "c", "d", "e"])
    res = batch("anthropic", server)
    assert res.exit_code == 0, res.output
    assert [len(c.body["requests"]) for c in creates(server, "anthropic")] == [2, 2, 1]
    assert [c["status"] for c in report_of(res)["cases"]] == ["pass"] * 5


@byprovider
def test_a_refused_batch_makes_each_request_an_unexpected_error(provider, pack, server):
    add_cases(pack, "weather", ["a", "b"])
    server.batches.refuse = (401, "invalid x-api-key")
    res = batch(provider, server)
    assert res.exit_code == 1
    reasons = [c["reason"] for c in report_of(res)["cases"]]
    assert all("the batch was not accepted: invalid x-api-key" in r for r in reasons), reasons
    assert run_files(pack.root) == []  # nothing was submitted: nothing to resume


@byprovider
def test_a_failed_poll_is_asked_again_unless_retrying_cannot_help(provider, pack, server):
    add_cases(pack, "weather", ["a"])
    server.batches.poll_faults = [500, 429]
    res = batch(provider, server)
    assert res.exit_code == 0, res.output
    server.reset()
    server.batches.poll_faults = [404]
    res = batch(provider, server)
    (case,) = report_of(res)["cases"]
    assert case["classification"] == "unexpected_error" and "polling the batch failed" in case["reason"]


def test_a_batch_that_failed_validation_gives_its_reason(pack, server):
    add_cases(pack, "weather", ["a"])
    server.batches.invalid = "Line 1 is not valid JSON."
    (case,) = report_of(batch("openai", server))["cases"]
    assert case["classification"] == "unexpected_error"
    assert "ended (failed) without a result" in case["reason"] and "Line 1 is not valid JSON." in case["reason"]


# ----------------------------------------------------------------------------- progress


class _P:
    def __init__(self, done, failed=0, total=10, elapsed_s=75.0, status="in_progress"):
        self.done, self.failed, self.total, self.elapsed_s, self.status = done, failed, total, elapsed_s, status


def test_progress_off_a_terminal_is_a_line_a_minute(capsys):
    from replayci.cli.output import BatchWatch
    from replayci.engine.events import BatchWaiting

    now = [0.0]
    watch = BatchWatch(None, every=60, clock=lambda: now[0])
    for t, done in ((0, 1), (30, 2), (59.9, 3), (60, 4), (119, 5), (120, 6)):
        now[0] = t
        watch.handle(BatchWaiting(_P(done, failed=1)))
    watch.close()
    assert capsys.readouterr().err.splitlines() == [
        "replayci: batch: 1/10 requests done, 1 failed, 1m 15s elapsed (in_progress)",
        "replayci: batch: 4/10 requests done, 1 failed, 1m 15s elapsed (in_progress)",
        "replayci: batch: 6/10 requests done, 1 failed, 1m 15s elapsed (in_progress)"]


def test_progress_on_a_terminal_is_redrawn_at_every_poll(capsys):
    from replayci.cli.output import BatchWatch, Progress
    from replayci.engine.events import BatchWaiting

    watch = BatchWatch(Progress(), every=60, clock=lambda: 0.0)
    watch.handle(BatchWaiting(_P(1, elapsed_s=5)))
    watch.handle(BatchWaiting(_P(2, elapsed_s=3725)))
    watch.close()
    err = capsys.readouterr().err
    assert "\r  batch: 1/10 requests done, 0 failed, 5s elapsed (in_progress)" in err
    assert "\r  batch: 2/10 requests done, 0 failed, 1h 02m elapsed (in_progress)" in err
    assert err.endswith("\r")  # the line is cleared before the report


def test_the_progress_line_interval_is_settable(pack, server):
    add_cases(pack, "weather", ["a"])
    server.batches.polls_to_end = 4
    every_poll = batch("openai", server, env={"REPLAYCI_BATCH_PROGRESS_SECONDS": "0.000001"})
    assert len([x for x in every_poll.stderr.splitlines() if x.startswith("replayci: batch:")]) == 4
    server.reset()
    server.batches.polls_to_end = 4
    by_minute = batch("openai", server)
    assert [x for x in by_minute.stderr.splitlines() if x.startswith("replayci: batch:")] == [
        x for x in by_minute.stderr.splitlines() if "0/1 requests done" in x or "1/1" in x][:1]


@pytest.mark.parametrize("value", ["0", "-1", "soon", "inf"])
def test_bad_batch_pace_variables_are_refused(value, pack, server):
    add_cases(pack, "weather", ["a"])
    res = invoke("openai", server, "--batch", env={"REPLAYCI_BATCH_POLL_SECONDS": value})
    assert res.exit_code == 2
    assert f"REPLAYCI_BATCH_POLL_SECONDS={value!r}: expected a number of seconds > 0" in res.stderr


def test_batch_prices_take_the_discount_off_every_price():
    from replayci.core.prices import Price, batch_prices, price_table

    table = batch_prices(price_table({"m": {"input_per_mtok": 4, "output_per_mtok": 8, "cached_input_per_mtok": 2,
                                            "batch_discount": 0.25}}))
    assert table["m"] == Price(3, 6, 1.5, 0.25)
    assert table["gpt-4o"] == Price(1.25, 5, 0.625, 0.5)
    assert batch_prices({"x": Price(2, 4)})["x"] == Price(1, 2, None, 0.5)


def test_each_batch_holds_one_model(pack, server):
    from builders import PackBuilder

    other = PackBuilder(pack.root, "other")
    (other.dir / "pack.yaml").write_text("pack_id: other\nschema_version: v0.1\ndefault_model: gpt-4.1-mini\n")
    add_cases(pack, "weather", ["a", "b"])
    add_cases(other, "weather", ["c"])
    res = batch("openai", server)
    assert res.exit_code == 0, res.output
    files = [server.batches.files[c.body["input_file_id"]].decode().splitlines() for c in creates(server, "openai")]
    assert [sorted({json.loads(line)["body"]["model"] for line in f}) for f in files] == [["gpt-4o-mini"],
                                                                                        ["gpt-4.1-mini"]]
    assert [c["status"] for c in report_of(res)["cases"]] == ["pass"] * 3


@byprovider
def test_a_scenario_run_interrupted_in_a_later_round_resumes_there(provider, pack, server):
    from fakeserver import first_user_text
    from test_scenario_live import GOOD, scenario_pack

    scenario_pack(pack, cases=("s1", "s2"))
    server.set_default(lambda req: GOOD if first_user_text(req) != "q:a" else PARIS)

    class Listener:
        def __call__(self, result):
            pass

        def batch_progress(self, p):
            if p.round == 1:
                raise KeyboardInterrupt

    with pytest.raises(Interrupted):
        replayci.run(pack.root / "packs" / "demo", provider=provider, base_url=server.base_url_for(provider),
                     model=MODELS[provider], batch=True, listener=Listener(), environ={**live_env(provider), **FAST})
    (run_file,) = run_files(pack.root)
    assert [b["round"] for b in json.loads(run_file.read_text())["batches"]] == [0, 1]
    res = batch(provider, server)
    assert res.exit_code == 0, res.output
    assert len(creates(server, provider)) == 3  # rounds 0 and 1 polled again, round 2 submitted
    assert [c["status"] for c in report_of(res)["cases"]] == ["pass", "pass"]


def test_no_session_thread_outlives_an_interrupted_run(pack, server):
    import threading

    from fakeserver import first_user_text
    from test_scenario_live import GOOD, scenario_pack

    scenario_pack(pack, cases=("s1", "s2"))
    server.set_default(lambda req: GOOD if first_user_text(req) != "q:a" else PARIS)

    class Listener:
        def __call__(self, result):
            pass

        def batch_progress(self, p):
            raise KeyboardInterrupt

    with pytest.raises(Interrupted):
        replayci.run(pack.root / "packs" / "demo", provider="openai", base_url=server.base_url_for("openai"),
                     batch=True, listener=Listener(), environ={**live_env("openai"), **FAST})
    assert [t.name for t in threading.enumerate() if t.name == "replayci-batch-session"] == []
