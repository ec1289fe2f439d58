"""--repeat auto[:MAX]: each case runs until its label is decided, in rounds, against the fake
provider answering from a script of passing and failing answers."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from fakeserver import Reply
from livecli import KEYS, PARIS, Router, add_cases, cases_by_id, invoke, report_of

from replayci.cli import cli

LYON = Reply.tool_call("get_weather", {"location": "Lyon"})
HEADER = "tool: get_weather\nexpected_tool_calls:\n  - name: get_weather\n    argument_invariants:\n" \
         "      - {path: $.location, equals: Paris}\n"


def scripted(pack, server, scripts: dict) -> None:
    add_cases(pack, "w", list(scripts), header=HEADER)
    server.set_default(Router({case: list(answers) for case, answers in scripts.items()}))


def test_each_case_runs_until_its_label_is_decided(pack, server):
    scripted(pack, server, {"steady": [PARIS] * 20, "broken": [LYON] * 20, "wobbly": [PARIS, LYON] * 10})
    res = invoke("openai", server, "--repeat", "auto", "--jobs", "3", "--json")
    report = report_of(res)
    cases = cases_by_id(report)
    got = {k: (c["stability"], c["repeat"], c["passes"], c["status"]) for k, c in cases.items()}
    assert got == {"steady": ("stable_pass", 9, 9, "pass"), "broken": ("stable_fail", 9, 0, "fail"),
                   "wobbly": ("flaky", 4, 2, "non_reproducible")}
    assert server.count() == 22  # 9 + 9 + 4 calls, where a fixed --repeat 20 makes 60
    sampling = report["summary"]["sampling"]
    assert (sampling["runs"], sampling["fixed_runs"], sampling["share"], sampling["max"]) == (22, 60, 0.3667, 20)
    assert sampling["labels"] == {"stable_pass": 1, "stable_fail": 1, "flaky": 1}
    assert report["summary"]["repeat"]["n"] == "auto:20"
    assert report["summary"]["runs"] == {"passes": 11, "runs": 22, "non_reproducible_runs": 0, "skipped_runs": 0}
    lines = res.stderr.splitlines()
    assert any("steady" in line and "[9/9 runs passed] stable_pass" in line for line in lines), res.stderr
    assert any("wobbly" in line and "[2/4 runs passed] flaky" in line for line in lines)
    assert any(line.startswith("  --repeat auto: 22 runs where a fixed --repeat 20 makes 60 (36.7%)")
               and line.endswith("1 stable_pass · 1 stable_fail · 1 flaky") for line in lines), res.stderr


def test_max_caps_the_runs_and_leaves_a_case_undecided(pack, server):
    scripted(pack, server, {"steady": [PARIS] * 20, "rare_slip": [PARIS] * 7 + [LYON] + [PARIS] * 12})
    res = invoke("openai", server, "--repeat", "auto:6", "--jobs", "1", "--json")
    cases = cases_by_id(report_of(res))
    assert (cases["steady"]["stability"], cases["steady"]["repeat"]) == ("undecided", 6)
    assert report_of(res)["summary"]["sampling"]["fixed_runs"] == 12 and server.count() == 12
    res = invoke("openai", server, "--repeat", "auto:12", "--jobs", "1", "--json")
    cases = cases_by_id(report_of(res))
    # one failure in eight runs: neither stable (p >= 0.95) nor flaky yet when MAX comes
    assert (cases["rare_slip"]["stability"], cases["rare_slip"]["repeat"]) == ("undecided", 12)
    assert (cases["steady"]["stability"], cases["steady"]["repeat"]) == ("stable_pass", 9)


def test_targets_are_sampled_each_on_its_own(pack, server, project):
    add_cases(pack, "w", ["a"], header=HEADER)

    def by_model(req):
        return LYON if req.body.get("model") == "claude-weak" else PARIS

    server.set_default(by_model)
    env = {"OPENAI_API_KEY": KEYS["openai"], "ANTHROPIC_API_KEY": KEYS["anthropic"],
           "OPENAI_BASE_URL": server.openai_base_url, "ANTHROPIC_BASE_URL": server.anthropic_base_url}
    res = CliRunner().invoke(cli, ["run", "--no-color", "--target", "openai:gpt-good", "--target",
                                   "anthropic:claude-weak", "--repeat", "auto", "--json"], env=env,
                             catch_exceptions=False)
    report = report_of(res)
    labels = {c["target"]: (c["stability"], c["repeat"]) for c in report["cases"]}
    assert labels == {"openai:gpt-good": ("stable_pass", 9), "anthropic:claude-weak": ("stable_fail", 9)}
    assert report["targets"]["verdicts"][0]["sentence"].startswith("openai:gpt-good passes more: 9/9 runs against 0/9")


def test_with_a_baseline_a_case_runs_until_its_regression_is_decided(pack, server, project):
    scripted(pack, server, {"drops": [PARIS] * 20})
    main = invoke("openai", server, "--repeat", "5", "--jobs", "1", "--report-json", str(project / "main.json"))
    assert main.exit_code == 0, main.output
    # now the case fails about a third of the time: flaky after 4 runs, but is it a regression?
    server.set_default(Router({"drops": [PARIS, LYON, PARIS, LYON, PARIS, LYON] + [LYON] * 14}))
    res = invoke("openai", server, "--repeat", "auto", "--jobs", "1", "--json", "--baseline",
                 str(project / "main.json"), "--gate-baseline")
    case = cases_by_id(report_of(res))["drops"]
    # 5/5 then: 2/4 now is p = 0.17; the runs go on until the drop is significant (p < 0.05)
    assert case["stability"] == "flaky" and case["repeat"] > 4
    assert case["baseline"] == "regressed" and case["baseline_p"] < 0.05
    assert res.exit_code == 1


def test_a_repeat_that_is_not_a_number_or_auto_is_a_usage_error(pack, server):
    add_cases(pack, "w", ["a"], header=HEADER)
    for bad in ("auto:1", "often", "auto:x", "0"):
        res = invoke("openai", server, "--repeat", bad)
        assert res.exit_code == 2 and "--repeat" in res.output and "auto:MAX" in res.output, (bad, res.output)
    (pack.dir.parent.parent / ".replayci.yml").write_text("stats: {ok: 0.6, bad: 0.7}\n")
    res = invoke("openai", server, "--repeat", "auto")
    assert res.exit_code == 2 and "0.5 < bad < ok < 1" in res.output and "Traceback" not in res.output


def test_flaky_cases_fail_the_run_unless_quarantined(pack, server, project):
    scripted(pack, server, {"steady": [PARIS] * 40, "wobbly": [PARIS, LYON] * 20})
    res = invoke("openai", server, "--repeat", "auto", "--jobs", "1", "--json")
    assert res.exit_code == 1 and "quarantined" not in report_of(res)["summary"]  # flaky: fail, the default
    (project / ".replayci.yml").write_text("gates: {flaky: quarantine}\n")
    res = invoke("openai", server, "--repeat", "auto", "--jobs", "1", "--json", "--markdown", "r.md",
                 "--html", "r.html")
    report = report_of(res)
    assert res.exit_code == 0, res.stderr
    assert report["summary"]["quarantined"] == [{"pack": "demo", "contract": "w", "case": "wobbly", "passes": 2,
                                                 "runs": 4}]
    cases = cases_by_id(report)
    assert cases["wobbly"]["quarantined"] is True and "quarantined" not in cases["steady"]
    assert report["summary"]["gates"]["pass_rate"] == {"threshold": 1.0, "actual": 1.0, "passed": True}
    lines = res.stderr.splitlines()
    assert "    demo/w/wobbly   2/4 runs passed" in lines and any(line.startswith("  quarantined: 1 flaky case")
                                                                  for line in lines)
    assert "### Quarantined: flaky, not failing the run (1)" in (project / "r.md").read_text()
    assert "`demo/w/wobbly` | 2/4 |" in (project / "r.md").read_text()
    page = (project / "r.html").read_text()
    assert 'id="quarantined"' in page and "demo/w/wobbly</td><td>2/4</td>" in page
    # a fixed --repeat: a case passing some runs and failing others is flaky too
    res = invoke("openai", server, "--repeat", "3", "--jobs", "1", "--json")
    assert res.exit_code == 0 and [q["case"] for q in report_of(res)["summary"]["quarantined"]] == ["wobbly"]


def test_a_batch_run_samples_in_a_round_of_batches_per_decision(pack, server):
    scripted(pack, server, {"steady": [PARIS] * 20, "broken": [LYON] * 20, "wobbly": [PARIS, LYON] * 10})
    res = invoke("openai", server, "--batch", "--json", "--repeat", "auto",
                 env={"REPLAYCI_BATCH_POLL_SECONDS": "0.01", "REPLAYCI_BATCH_POLL_MAX_SECONDS": "0.02"})
    report = report_of(res)
    got = {k: (c["stability"], c["repeat"]) for k, c in cases_by_id(report).items()}
    assert got == {"steady": ("stable_pass", 9), "broken": ("stable_fail", 9), "wobbly": ("flaky", 4)}
    creates = [r for r in server.requests if r.method == "POST" and r.path == "/v1/batches"]
    batched = [r for r in server.requests if "x-fake-batch" in r.headers]
    # a round per batch, each the fewest runs that could decide a case: 4 of each (two passes and two
    # failures could say flaky), then 2 more of the two undecided ones (two failures still could), then 3
    assert (len(creates), len(batched)) == (3, 12 + 4 + 6), res.output
    assert report["summary"]["sampling"]["runs"] == 22


def test_regrade_keeps_the_sampling_record(pack, server, project):
    scripted(pack, server, {"steady": [PARIS] * 20, "wobbly": [PARIS, LYON] * 10})
    res = invoke("openai", server, "--repeat", "auto", "--jobs", "1", "--report-json", str(project / "run.json"))
    assert res.exit_code == 1, res.output
    again = CliRunner().invoke(cli, ["regrade", str(project / "run.json"), "--json"], catch_exceptions=False)
    sampling = report_of(again)["summary"]["sampling"]
    assert (sampling["runs"], sampling["fixed_runs"], sampling["labels"]) == (13, 40, {"stable_pass": 1, "flaky": 1})


def test_merged_shards_count_the_sampling_of_every_shard(pack, server, project):
    scripted(pack, server, {"steady": [PARIS] * 20, "broken": [LYON] * 20, "wobbly": [PARIS, LYON] * 10})
    shards = [str(project / f"s{k}.json") for k in (1, 2, 3)]
    for k, path in enumerate(shards, 1):
        invoke("openai", server, "--repeat", "auto", "--jobs", "1", "--shard", f"{k}/3", "--report-json", path)
    alone = [json.loads(Path(p).read_text())["summary"]["sampling"] for p in shards]
    assert [a["runs"] for a in alone] == [18, 0, 4]  # each shard counted only its own cases
    res = CliRunner().invoke(cli, ["merge", *shards, "-o", str(project / "m.json")], catch_exceptions=False)
    assert res.exit_code == 1, res.output  # the broken and the flaky case fail the merged run
    summary = json.loads((project / "m.json").read_text())["summary"]
    cost = {k: round(sum(a[k] or 0 for a in alone), 10) for k in ("cost_usd", "fixed_cost_usd")}
    assert summary["sampling"] == {"max": 20, "runs": 22, "fixed_runs": 60, "share": 0.3667, **cost,
                                   "labels": {"stable_pass": 1, "stable_fail": 1, "flaky": 1}}
    assert summary["repeat"] == {"n": "auto:20", "cases": 3, "pass_all": 0.3333, "pass_rate": 0.5}


def test_a_batch_run_samples_scenarios_a_session_round_at_a_time(pack, server):
    from fakeserver import first_user_text, tool_results_of
    from test_scenario_live import GOOD, F, H, scenario_pack

    from replayci.engine.batchfile import custom_id

    scenario_pack(pack, cases=("steady", "wobbly"))
    # the wobbly scenario's even sessions start right (search_flights), its odd ones with the hotel
    first = {custom_id("demo", "trip", "wobbly", repeat=r, target="openai:gpt-4o-mini"): r for r in range(20)}

    def model(req):
        if first_user_text(req) == "q:wobbly" and not tool_results_of(req):
            return F if first[req.headers["x-fake-custom-id"]] % 2 == 0 else H
        return GOOD

    server.set_default(model)
    res = invoke("openai", server, "--batch", "--json", "--repeat", "auto",
                 env={"REPLAYCI_BATCH_POLL_SECONDS": "0.01", "REPLAYCI_BATCH_POLL_MAX_SECONDS": "0.02"})
    report = report_of(res)
    got = {k: (c["stability"], c["repeat"], c["passes"]) for k, c in cases_by_id(report).items()}
    assert got == {"steady": ("stable_pass", 9, 9), "wobbly": ("flaky", 4, 2)}, res.output
    rounds = [r.headers["x-fake-batch"] for r in server.requests if "x-fake-batch" in r.headers]
    # round 0: four sessions of each (the odd wobbly ones stop at their first step); rounds 1-2: their
    # next steps; then two more steady sessions (3 steps each), then three: a decision per session round
    assert [rounds.count(b) for b in dict.fromkeys(rounds)] == [8, 6, 6, 2, 2, 2, 3, 3, 3]
    assert report["summary"]["sampling"]["runs"] == 13
