"""A model matrix end to end: the real CLI and the real openai and anthropic SDKs against the
fake provider on 127.0.0.1, which answers each model differently; then the same comparison
replayed offline from each target's recordings, with no call."""
from __future__ import annotations

import json

from click.testing import CliRunner
from fakeserver import Reply
from livecli import KEYS, PARIS, add_cases, report_of

from replayci.cli import cli

WRONG = Reply.tool_call("get_weather", {"location": "Lyon"})
GOOD, WEAK = "openai:gpt-good", "anthropic:claude-weak"


def by_model(answers: dict):
    """The fake provider's answer: by the request's model, and for `flip` cases by question."""
    def answer(req):
        model = (req.body or {}).get("model")
        return answers.get(model, PARIS)(req) if callable(answers.get(model)) else answers.get(model, PARIS)
    return answer


def weak_on(*cases):
    """claude-weak answers Lyon to the questions of *cases*, Paris to the others."""
    return lambda req: WRONG if req.turns.last_user in {f"q:{c}" for c in cases} else PARIS


def compare_pack(pack, contracts=(("weather", ("a", "b", "c")), ("time", ("t1", "t2")))):
    header = "tool: get_weather\nexpected_tool_calls:\n  - name: get_weather\n    argument_invariants:\n" \
             "      - {path: $.location, equals: Paris}\n"
    for name, ids in contracts:
        add_cases(pack, name, ids, header=header)


def run_cli(server, *args, env=None):
    environment = {"OPENAI_API_KEY": KEYS["openai"], "ANTHROPIC_API_KEY": KEYS["anthropic"],
                   "OPENAI_BASE_URL": server.openai_base_url, "ANTHROPIC_BASE_URL": server.anthropic_base_url,
                   **(env or {})}
    return CliRunner().invoke(cli, ["run", "--no-color", *args], env=environment, catch_exceptions=False)


def test_each_target_runs_every_case_and_results_name_their_target(pack, server, project):
    compare_pack(pack)
    server.set_default(by_model({"claude-weak": weak_on("a", "b", "c")}))
    res = run_cli(server, "--target", GOOD, "--target", WEAK, "--json")
    report = report_of(res)
    assert res.exit_code == 1, res.output
    # every case against each target, target by target, in the pack's order
    assert [(c["target"], c["case"]) for c in report["cases"]] == [
        (t, c) for t in (GOOD, WEAK) for c in ("t1", "t2", "a", "b", "c")]
    models = [r.body["model"] for r in server.requests]
    assert sorted(models) == ["claude-weak"] * 5 + ["gpt-good"] * 5
    assert server.count("/v1/chat/completions") == 5 and server.count("/v1/messages") == 5
    targets = report["targets"]
    assert targets["labels"] == [GOOD, WEAK]
    assert targets["targets"][GOOD]["pass_rate"] == 1.0 and targets["targets"][WEAK]["pass_rate"] == 0.4
    assert targets["targets"][WEAK]["wilson"] == [0.1176, 0.7693]
    assert targets["matrix"]["demo/weather"][WEAK] == {"passes": 0, "runs": 3, "pass_rate": 0.0}
    assert targets["matrix"]["demo/time"][WEAK] == {"passes": 2, "runs": 2, "pass_rate": 1.0}
    # 3/3 against 0/3 is not significant (p = 0.1): nothing listed without --repeat
    assert targets["significant"] == []
    # gates per target: the weak target fails the run, and the output names it
    gate = report["summary"]["gates"]["pass_rate"]
    assert gate["passed"] is False and gate["failed_targets"] == [WEAK]
    assert report["summary"]["gates_by_target"][GOOD]["pass_rate"]["passed"] is True
    assert f"gate pass_rate failed for target {WEAK}: 0.4 against 1.0" in res.stderr
    assert f"gate pass_rate failed for target {GOOD}" not in res.stderr


def test_repeat_per_target_finds_the_significant_difference(pack, server, project):
    compare_pack(pack, (("weather", ("a",)), ("time", ("t1",))))
    server.set_default(by_model({"claude-weak": weak_on("a")}))
    res = run_cli(server, "--target", GOOD, "--target", WEAK, "--repeat", "5", "--json")
    report = report_of(res)
    assert len(server.requests) == 2 * 2 * 5  # cases x targets x repeats
    sig = report["targets"]["significant"]
    assert sig == [{"contract": "demo/weather", "a": GOOD, "b": WEAK, "pass_rate_a": 1.0, "pass_rate_b": 0.0,
                    "runs_a": 5, "runs_b": 5, "p": 0.007937, "test": "stratified"}]
    assert report["targets"]["targets"][WEAK]["runs"] == 10
    lines = res.stderr.splitlines()
    assert any(line.split() == ["demo/weather", "100.0%", "0.0%"] for line in lines), res.stderr
    assert any("demo/weather" in line and "p = 0.0079" in line for line in lines)
    sentence = f"{GOOD} passes more: 10/10 runs against 5/10; significant on demo/weather, p = 0.0079"
    assert report["targets"]["verdicts"][0]["sentence"] == sentence and f"  {sentence}" in lines
    # the same figure, under the same name, in the summary, the gate and the terminal
    assert report["summary"]["pass_rate"] == report["summary"]["gates"]["pass_rate"]["actual"] == 0.75
    assert "pass rate 75.0% (15/20 runs)" in res.stderr


def test_recorded_targets_replay_the_comparison_offline(pack, server, project):
    compare_pack(pack)
    server.set_default(by_model({"claude-weak": weak_on("a", "c")}))
    live = run_cli(server, "--target", GOOD, "--target", WEAK, "--record", "--json")
    assert live.exit_code == 1, live.output
    for label, folder in ((GOOD, "openai_gpt-good"), (WEAK, "anthropic_claude-weak")):
        doc = json.loads((pack.dir / "recordings" / folder / "weather" / "a.json").read_text())
        assert doc["meta"]["model"] == label.split(":")[1]
    calls = len(server.requests)
    replay = run_cli(server, "--provider", "recorded", "--target", GOOD, "--target", WEAK, "--json",
                     env={"OPENAI_API_KEY": None, "ANTHROPIC_API_KEY": None})
    assert len(server.requests) == calls  # no call
    live_report, offline = report_of(live), report_of(replay)
    assert offline["run"]["provider"] == "recorded"
    assert offline["targets"]["matrix"] == live_report["targets"]["matrix"]
    assert [(c["target"], c["case"], c["status"]) for c in offline["cases"]] == \
        [(c["target"], c["case"], c["status"]) for c in live_report["cases"]]
    folders = {GOOD: "openai_gpt-good", WEAK: "anthropic_claude-weak"}
    assert {c["response_source"] for c in offline["cases"]} == {"recording"}
    assert [c["response_origin"] for c in offline["cases"]] == [
        f"packs/demo/recordings/{folders[c['target']]}/{c['contract']}/{c['case']}.json" for c in offline["cases"]]


def test_a_target_without_its_own_recording_is_not_judged_on_the_fixture(pack, project):
    from builders import call, fixture, request, response

    pack.fixture("c.json", fixture(request(), response(call("get_weather", {"location": "Paris"}))))
    pack.contract("w", "tool: get_weather\ngolden_cases:\n  - id: c\n    input_ref: c.json\n")
    res = CliRunner().invoke(cli, ["run", "--provider", "recorded", "--target", GOOD, "--json"])
    case = report_of(res)["cases"][0]
    assert (case["status"], case["reason"]) == ("non_reproducible", "recording_not_found")
    assert "recordings/openai_gpt-good/w/c.json" in case["message"]
    plain = CliRunner().invoke(cli, ["run", "--json"])
    assert report_of(plain)["cases"][0]["status"] == "pass" and "target" not in report_of(plain)["cases"][0]


def test_targets_from_the_config_file_with_their_own_endpoints(pack, server, project):
    compare_pack(pack, (("weather", ("a",)),))
    server.set_default(by_model({"claude-weak": weak_on("a")}))
    (project / ".replayci.yml").write_text(
        "provider: recorded\ntargets:\n"
        f"  - {{provider: openai, model: gpt-good, base_url: '{server.openai_base_url}', label: good}}\n"
        f"  - {{provider: anthropic, model: claude-weak, base_url: '{server.anthropic_base_url}'}}\n")
    # the config's provider is recorded: its targets replay (nothing recorded yet), no call
    offline = run_cli(server, "--json", env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                                               "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})
    assert len(server.requests) == 0
    assert {c["reason"] for c in report_of(offline)["cases"]} == {"recording_not_found"}
    res = run_cli(server, "--record", "--json", env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                                                     "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})
    report = report_of(res)
    assert [c["target"] for c in report["cases"]] == ["good", WEAK]
    assert [c["status"] for c in report["cases"]] == ["pass", "fail"]
    assert (pack.dir / "recordings" / "good" / "weather" / "a.json").is_file()


def test_flags_that_contradict_a_comparison_are_usage_errors(pack, project):
    add_cases(pack, "weather", ["a"])
    res = CliRunner().invoke(cli, ["run", "--target", GOOD, "--model", "gpt-4o"])
    assert res.exit_code == 2 and "--model gpt-4o does not apply to a comparison" in res.output
    res = CliRunner().invoke(cli, ["run", "--provider", "recorded", "--target", GOOD, "--record"])
    assert res.exit_code == 2 and "--provider recorded replays the targets' recordings" in res.output
    res = CliRunner().invoke(cli, ["run", "--target", "gpt-4o"])
    assert res.exit_code == 2 and "--target 'gpt-4o': expected PROVIDER:MODEL" in res.output


def test_targets_call_side_by_side_each_with_its_own_jobs(pack, server, project):
    import threading

    compare_pack(pack, (("weather", ("a", "b", "c")),))
    arrived = {"gpt-good": threading.Event(), "claude-weak": threading.Event()}

    def answer(req):  # each model's calls wait (20 s at most) until the other model is called too
        model = req.body["model"]
        arrived[model].set()
        arrived["claude-weak" if model == "gpt-good" else "gpt-good"].wait(20)
        return PARIS

    server.set_default(answer)
    res = run_cli(server, "--target", GOOD, "--target", WEAK, "--jobs", "1", "--json")
    assert res.exit_code == 0, res.output
    assert len(server.requests) == 6
    # one call at a time per target (--jobs 1), the two targets at once
    assert server.max_in_flight == 2  # one after the other, the first target's call would wait alone
    assert [(c["target"], c["case"]) for c in report_of(res)["cases"]] == [
        (t, c) for t in (GOOD, WEAK) for c in ("a", "b", "c")]


def test_a_target_whose_model_its_provider_does_not_serve_stops_every_call(pack, server, project):
    compare_pack(pack, (("weather", ("a",)),))
    res = run_cli(server, "--target", GOOD, "--target", "anthropic:gpt-4o")
    assert res.exit_code == 2 and "gpt-4o" in res.output
    assert len(server.requests) == 0


def test_pinned_negatives_a_live_target_cannot_run_are_one_line_not_one_per_target(pack, server, project):
    from builders import fixture, request, response

    compare_pack(pack, (("weather", ("a",)),))
    for neg in ("n1", "n2"):
        pack.fixture(f"negative/{neg}.json", fixture(request(f"q:{neg}"), response(content="no tool")))
    text = (pack.dir / "contracts" / "weather.yaml").read_text()
    (pack.dir / "contracts" / "weather.yaml").write_text(
        text + "".join(f"  - {{id: {n}, input_ref: negative/{n}.json, expect_ok: false}}\n" for n in ("n1", "n2")))
    res = run_cli(server, "--target", GOOD, "--target", WEAK, "--json")
    assert [c["status"] for c in report_of(res)["cases"]].count("skipped") == 4  # 2 cases x 2 targets
    lines = res.stderr.splitlines()
    assert not any("n1" in line or "n2" in line for line in lines), res.stderr
    pinned = [line for line in lines if "pinned negative" in line]
    assert pinned == [f"  2 pinned negative cases skipped on 2 targets ({WEAK}, {GOOD}): each is judged on its "
                      "fixture's response, live only where its provider_modes names the provider (-v lists them)"]
    verbose = run_cli(server, "--target", GOOD, "--target", WEAK, "-v")
    assert sum(1 for line in verbose.output.splitlines() if " n1 " in line) == 2, verbose.output
