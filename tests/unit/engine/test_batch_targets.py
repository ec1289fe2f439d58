"""A model matrix through the batch APIs: the real CLI, the real openai and anthropic SDKs'
batch methods against the fake provider on 127.0.0.1, which answers each model differently."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from fakeserver import Reply
from livecli import KEYS, PARIS, add_cases, report_of

import replayci
from replayci.cli import cli
from replayci.core.errors import ConfigError
from replayci.core.prices import BUILT_IN
from replayci.engine.batchfile import BATCHES_DIR, custom_id
from replayci.engine.cases import Interrupted

GOOD, WEAK = "openai:gpt-4o-mini", "anthropic:claude-haiku-4-5"
FOLDERS = {GOOD: "openai_gpt-4o-mini", WEAK: "anthropic_claude-haiku-4-5"}
FAST = {"REPLAYCI_BATCH_POLL_SECONDS": "0.01", "REPLAYCI_BATCH_POLL_MAX_SECONDS": "0.02"}
CREATE = {"openai": "/v1/batches", "anthropic": "/v1/messages/batches"}
HEADER = "tool: get_weather\nexpected_tool_calls:\n  - name: get_weather\n    argument_invariants:\n" \
         "      - {path: $.location, equals: Paris}\n"
DEAD = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}


def weak_on(*cases):
    """claude-haiku-4-5 answers Lyon to the questions of *cases*; every other answer is Paris."""
    lyon = Reply.tool_call("get_weather", {"location": "Lyon"})

    def answer(req):
        weak = (req.body or {}).get("model") == "claude-haiku-4-5" and req.turns.last_user in {f"q:{c}" for c in cases}
        return lyon if weak else PARIS
    return answer


def env_of(server, **extra) -> dict:
    return {"OPENAI_API_KEY": KEYS["openai"], "ANTHROPIC_API_KEY": KEYS["anthropic"],
            "OPENAI_BASE_URL": server.openai_base_url, "ANTHROPIC_BASE_URL": server.anthropic_base_url,
            "GOOGLE_API_KEY": None, "GEMINI_API_KEY": None, **FAST, **extra}


def run_cli(server, *args, env=None):
    return CliRunner().invoke(cli, ["run", "--no-color", *args], env=env_of(server, **(env or {})),
                              catch_exceptions=False)


def creates(server, api: str) -> list:
    return [r for r in server.requests if r.method == "POST" and r.path == CREATE[api]]


def batched(server) -> list:
    return [r for r in server.requests if "x-fake-batch" in r.headers]


def run_files(project) -> list:
    folder = project / BATCHES_DIR
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def config_targets(project, server) -> None:
    """Two targets with their own endpoints (the environment's point nowhere)."""
    (project / ".replayci.yml").write_text(
        "targets:\n"
        f"  - {{provider: openai, model: gpt-4o-mini, base_url: '{server.openai_base_url}'}}\n"
        f"  - {{provider: anthropic, model: claude-haiku-4-5, base_url: '{server.anthropic_base_url}'}}\n")


def test_a_batch_comparison_sends_each_case_repeat_and_target_once_and_compares(pack, server, project):
    add_cases(pack, "weather", ["a", "b"], header=HEADER)
    add_cases(pack, "time", ["t1"], header=HEADER)
    server.set_default(weak_on("a", "b"))
    res = run_cli(server, "--batch", "--target", GOOD, "--target", WEAK, "--repeat", "3", "--record", "--json")
    assert res.exit_code == 1, res.output
    # one batch per target, each holding its own model's requests, each request one case x repeat
    assert len(creates(server, "openai")) == 1 and len(creates(server, "anthropic")) == 1
    sent = batched(server)
    expected = {(custom_id("demo", contract, case, repeat=r, target=t), t.split(":")[1])
                for t in (GOOD, WEAK) for contract, case in (("weather", "a"), ("weather", "b"), ("time", "t1"))
                for r in range(3)}
    assert len(sent) == 18 and {(r.headers["x-fake-custom-id"], r.body["model"]) for r in sent} == expected
    report = report_of(res)
    assert report["run"]["batch"] is True and report["run"]["targets"] == [GOOD, WEAK]
    assert [(c["target"], c["case"], c["status"], c["repeat"]) for c in report["cases"]] == [
        (GOOD, "t1", "pass", 3), (GOOD, "a", "pass", 3), (GOOD, "b", "pass", 3),
        (WEAK, "t1", "pass", 3), (WEAK, "a", "fail", 3), (WEAK, "b", "fail", 3)]
    targets = report["targets"]
    assert targets["targets"][GOOD]["pass_rate"] == 1.0 and targets["targets"][WEAK]["runs"] == 9
    assert round(targets["targets"][WEAK]["pass_rate"], 4) == 0.3333
    assert targets["matrix"]["demo/weather"][WEAK] == {"passes": 0, "runs": 6, "pass_rate": 0.0}
    (sig,) = targets["significant"]  # 6/6 against 0/6 over the repeats
    assert (sig["contract"], sig["a"], sig["b"]) == ("demo/weather", GOOD, WEAK)
    assert report["summary"]["gates"]["pass_rate"]["failed_targets"] == [WEAK]
    assert run_files(project) == []  # every batch ended: nothing is left to resume
    # recorded per target: the same targets replay the comparison offline, with no call
    for label, folder in FOLDERS.items():
        doc = json.loads((pack.dir / "recordings" / folder / "weather" / "a.json").read_text())
        assert doc["meta"]["provider"] == label.split(":")[0] and doc["meta"]["model"] == label.split(":")[1]
    calls = len(server.requests)
    offline = run_cli(server, "--provider", "recorded", "--target", GOOD, "--target", WEAK, "--json",
                      env={"OPENAI_API_KEY": None, "ANTHROPIC_API_KEY": None})
    assert len(server.requests) == calls
    assert [(c["target"], c["case"], c["status"]) for c in report_of(offline)["cases"]] == \
        [(c["target"], c["case"], c["status"]) for c in report["cases"]]


def test_each_target_is_priced_at_its_batch_price(pack, server, project):
    add_cases(pack, "weather", ["a"], header=HEADER)
    live = report_of(run_cli(server, "--target", GOOD, "--target", WEAK, "--json"))
    batch = report_of(run_cli(server, "--batch", "--target", GOOD, "--target", WEAK, "--json"))
    for now, then in zip(batch["cases"], live["cases"], strict=True):
        price = BUILT_IN[now["target"].split(":")[1]]
        usage = now["response"]["usage"]
        listed = (usage["input_tokens"] * price.input_per_mtok + usage["output_tokens"] * price.output_per_mtok) / 1e6
        assert then["cost_usd"] == pytest.approx(listed) and now["cost_usd"] == pytest.approx(listed / 2)
    assert batch["targets"]["targets"][WEAK]["cost_usd"] == pytest.approx(
        live["targets"]["targets"][WEAK]["cost_usd"] / 2)


def test_batches_are_grouped_by_target_and_model(pack, server, project):
    add_cases(pack, "weather", ["a", "b"], header=HEADER)
    res = run_cli(server, "--batch", "--target", GOOD, "--target", "openai:gpt-4o", "--json")
    assert res.exit_code == 0, res.output
    made = creates(server, "openai")
    assert len(made) == 2  # one provider, two models: a batch each
    for create in made:
        lines = server.batches.files[create.body["input_file_id"]].decode().splitlines()
        assert len({json.loads(line)["body"]["model"] for line in lines}) == 1 and len(lines) == 2


@pytest.mark.parametrize("order", [(GOOD, "gemini:gemini-2.5-flash"), ("gemini:gemini-2.5-flash", GOOD),
                                   (GOOD, WEAK, "gemini:gemini-2.5-flash")])
def test_a_target_without_a_batch_api_stops_the_run_before_any_call(order, pack, server, project):
    add_cases(pack, "weather", ["a"], header=HEADER)
    res = run_cli(server, "--batch", *[a for t in order for a in ("--target", t)],
                  env={"GEMINI_API_KEY": KEYS["gemini"]})
    assert res.exit_code == 2
    assert "target gemini:gemini-2.5-flash" in res.output and "--batch is not available" in res.output
    assert "Traceback" not in res.output and len(server.requests) == 0
    assert run_files(project) == []


def test_the_library_refuses_a_target_without_a_batch_api_too(pack, server, project):
    add_cases(pack, "weather", ["a"], header=HEADER)
    with pytest.raises(ConfigError, match="target gemini:gemini-2.5-flash: --batch is not available"):
        replayci.run(pack.root / "packs" / "demo", batch=True, targets=[GOOD, "gemini:gemini-2.5-flash"],
                     environ={**env_of(server), "GEMINI_API_KEY": KEYS["gemini"]})
    assert len(server.requests) == 0


def test_a_target_without_its_key_is_not_submitted_the_others_are(pack, server, project):
    add_cases(pack, "weather", ["a"], header=HEADER)
    res = run_cli(server, "--batch", "--target", GOOD, "--target", WEAK, "--json",
                  env={"ANTHROPIC_API_KEY": None})
    assert len(creates(server, "openai")) == 1 and creates(server, "anthropic") == []
    assert [(c["target"], c["status"], c.get("reason")) for c in report_of(res)["cases"]] == [
        (GOOD, "pass", None), (WEAK, "non_reproducible", "missing_prerequisites")]


def test_an_interrupted_comparison_resumes_each_targets_batches_and_submits_once(pack, server, project):
    add_cases(pack, "weather", ["a", "b"], header=HEADER)
    config_targets(project, server)
    server.batches.polls_to_end = 1000

    class Listener:
        def __call__(self, result):
            pass

        def batch_progress(self, p):
            raise KeyboardInterrupt

    with pytest.raises(Interrupted):
        replayci.run(pack.root / "packs" / "demo", batch=True, replay="off", listener=Listener(),
                     environ=env_of(server, **DEAD))
    (run_file,) = run_files(project)
    doc = json.loads(run_file.read_text())
    # each batch names where it went: `replayci batch` asks that endpoint, not the environment's
    assert sorted((b["target"], b["provider"], b["base_url"], len(b["custom_ids"])) for b in doc["batches"]) == [
        (WEAK, "anthropic", server.anthropic_base_url, 2), (GOOD, "openai", server.openai_base_url, 2)]
    status = CliRunner().invoke(cli, ["batch", "status"], env=env_of(server, **DEAD))
    assert status.exit_code == 0, status.output
    assert all(f"{b['id']}  round 0  in_progress" in status.stdout for b in doc["batches"]), status.stdout
    server.batches.polls_to_end = 1
    res = run_cli(server, "--batch", "--json", env=DEAD)
    assert res.exit_code == 0, res.output
    assert len(creates(server, "openai")) == 1 and len(creates(server, "anthropic")) == 1  # never twice
    assert [(c["target"], c["status"]) for c in report_of(res)["cases"]] == [(GOOD, "pass")] * 2 + [(WEAK, "pass")] * 2
    assert run_files(project) == []


def test_a_comparisons_batches_are_cancelled_each_at_its_own_provider(pack, server, project):
    add_cases(pack, "weather", ["a"], header=HEADER)
    config_targets(project, server)  # (--batch calls the config's targets)
    server.batches.hold = True
    res = run_cli(server, "--batch", "--batch-timeout", "0.3s", "--json", env=DEAD)
    assert res.exit_code == 1, res.output
    assert [c["reason"] for c in report_of(res)["cases"]] == ["batch_incomplete"] * 2
    (run_file,) = run_files(project)
    entries = {b["provider"]: b["id"] for b in json.loads(run_file.read_text())["batches"]}
    res = CliRunner().invoke(cli, ["batch", "cancel", entries["anthropic"]], env=env_of(server, **DEAD))
    assert res.exit_code == 0, res.output
    cancels = sorted(r.path for r in server.requests if r.path.endswith("/cancel"))
    assert cancels == [f"/v1/batches/{entries['openai']}/cancel",
                       f"/v1/messages/batches/{entries['anthropic']}/cancel"]
    lines = {line.split()[0]: line for line in res.stdout.splitlines() if line.startswith("  ")}
    assert all("cancel" in lines[i] for i in entries.values()), res.stdout  # each its provider's new status


def test_the_target_list_is_part_of_the_run(pack, server, project):
    add_cases(pack, "weather", ["a"], header=HEADER)
    server.batches.hold = True
    for targets in ([GOOD], [GOOD, WEAK]):
        run_cli(server, "--batch", "--batch-timeout", "0.2s", *[a for t in targets for a in ("--target", t)])
    docs = [json.loads(f.read_text()) for f in run_files(project)]
    assert sorted(d["targets"] for d in docs) == sorted([[GOOD], sorted([GOOD, WEAK])])
    assert len(creates(server, "openai")) == 2  # the second list is another run: submitted again


def test_two_targets_of_one_model_are_batched_apart(pack, server, project):
    add_cases(pack, "weather", ["a"], header=HEADER)
    (project / ".replayci.yml").write_text(
        "targets:\n" + "".join(f"  - {{provider: openai, model: gpt-4o-mini, base_url: '{server.openai_base_url}', "
                               f"label: {label}}}\n" for label in ("first", "second")))
    res = run_cli(server, "--batch", "--json")
    assert res.exit_code == 0, res.output
    assert len(creates(server, "openai")) == 2  # a batch per target, though the model is the same
    assert {r.headers["x-fake-custom-id"] for r in batched(server)} == {
        custom_id("demo", "weather", "a", repeat=0, target=label) for label in ("first", "second")}
    assert [c["target"] for c in report_of(res)["cases"]] == ["first", "second"]


def test_scenarios_of_each_target_run_a_round_per_step(pack, server, project):
    from fakeserver import first_user_text
    from test_scenario_live import GOOD as STEPS
    from test_scenario_live import scenario_pack

    scenario_pack(pack, cases=("s1",))
    add_cases(pack, "weather", ["a"], header=HEADER)
    server.set_default(lambda req: PARIS if first_user_text(req) == "q:a" else STEPS)
    res = run_cli(server, "--batch", "--target", GOOD, "--target", WEAK, "--json")
    assert res.exit_code == 0, res.output
    # each round: a batch per target; the first carries the single case and the scenario's first call
    assert len(creates(server, "openai")) == 3
    assert [len(c.body["requests"]) for c in creates(server, "anthropic")] == [2, 1, 1]
    cases = report_of(res)["cases"]
    assert sorted((c["target"], c["case"], c["status"]) for c in cases) == sorted(
        (t, k, "pass") for t in (GOOD, WEAK) for k in ("s1", "a"))
