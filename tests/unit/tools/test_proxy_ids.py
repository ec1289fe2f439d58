"""Request keys ignore the ids a provider mints: an agent loop captured again through the proxy,
or imported again, whose model minted new call and response ids, replaces its fixtures — no new
case, no orphan file."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import warmed
from agent_support import AGENT, trip
from cassettes import completion, first_request, interaction, second_request, write_cassette
from fakeserver import FakeServer

from replayci.capture.keys import request_key, without_minted_ids

REPO = Path(__file__).resolve().parents[3]


def replayci(*args, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    for var in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
        full.pop(var, None)
    return subprocess.run([*warmed.cli(full), *map(str, args)], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def agent(tmp_path) -> Path:
    (tmp_path / "agent.py").write_text(AGENT, "utf-8")
    return tmp_path


def files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text("utf-8") for p in sorted(root.rglob("*")) if p.is_file()}


def case_lines(pack: Path) -> list[str]:
    return sorted(line.strip() for f in (pack / "contracts").glob("*.yaml")
                  for line in f.read_text("utf-8").splitlines() if line.strip().startswith("- id:"))


@pytest.mark.parametrize("api", ["chat", "messages", "responses"])
def test_an_agent_loop_recorded_again_replaces_its_fixtures(agent, api):
    with FakeServer(default=trip()) as server:
        flags = ["--upstream", f"openai={server.openai_base_url}", "--upstream", f"anthropic={server.url}"]
        first = replayci("proxy", "--pack", "packs/app", "--mode", "record", *flags, "--", *warmed.app_python(),
                         "agent.py", api, cwd=agent)
        assert first.returncode == 0, first.stderr
        pack = agent / "packs" / "app"
        before, cases = files(pack), case_lines(pack)
        again = replayci("proxy", "--pack", "packs/app", "--mode", "record", *flags, "--", *warmed.app_python(),
                         "agent.py", api, cwd=agent)
        assert again.returncode == 0, again.stderr
        sent = [r.body for r in server.requests]
    after = files(pack)
    assert sorted(after) == sorted(before)  # no new case, no orphan fixture
    assert case_lines(pack) == cases and cases
    changed = [name for name in before if before[name] != after[name] and name.endswith(".json")]
    assert changed, "the fixtures hold the new exchanges"  # replaced, not kept
    # The two runs' third requests really carried different minted ids.
    assert json.dumps(sent[2]) != json.dumps(sent[5])
    replayed = replayci("proxy", "--pack", "packs/app", "--mode", "replay", "--", *warmed.app_python(), "agent.py", api,
                        cwd=agent)
    assert replayed.returncode == 0, replayed.stderr
    assert "3 replayed" in replayed.stderr and "0 missed" in replayed.stderr


def test_a_loop_imported_again_with_new_ids_adds_nothing(tmp_path):
    def loop(call_id: str, first_id: str, second_id: str) -> list[dict]:
        return [interaction(first_request(), completion(call=True, id_=first_id, call_id=call_id)),
                interaction(second_request(call_id), completion(call=False, id_=second_id))]

    write_cassette(tmp_path / "a" / "loop.yaml", loop("call_abc", "chatcmpl-1", "chatcmpl-2"))
    write_cassette(tmp_path / "b" / "loop.yaml", loop("call_XYZ987", "chatcmpl-77", "chatcmpl-78"))
    def step(call_id: str, answer_id: str) -> list[dict]:  # a loop's last step alone: a single case
        request = second_request(call_id)
        request["messages"][0]["content"] = "Be brief."
        return [interaction(request, completion(call=False, id_=answer_id))]

    write_cassette(tmp_path / "a" / "step.yaml", step("call_abc", "chatcmpl-2"))
    write_cassette(tmp_path / "b" / "step.yaml", step("call_QQ5", "chatcmpl-8"))
    first = replayci("import", "a", "--pack", "packs/app", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = files(tmp_path / "packs" / "app")
    assert len(case_lines(tmp_path / "packs" / "app")) == 2
    again = replayci("import", "b", "--pack", "packs/app", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert sorted(files(tmp_path / "packs" / "app")) == sorted(before)


def test_the_key_replaces_minted_ids_in_order_of_appearance():
    def chat(call_id: str, answered: str) -> dict:
        return {"model": "m", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [{"id": call_id, "type": "function",
                                                  "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": answered, "content": "ok"}]}

    assert request_key(chat("call_1", "call_1")) == request_key(chat("call_Zz9", "call_Zz9"))
    # A result that answers another call than the one made is another request.
    assert request_key(chat("call_1", "call_1")) != request_key(chat("call_1", "call_2"))
    responses = {"model": "m", "previous_response_id": "resp_abc", "input": [
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "ok"}]}
    other = json.loads(json.dumps(responses).replace("resp_abc", "resp_q").replace("fc_1", "fc_9")
                       .replace("call_1", "call_8"))
    assert request_key(responses) == request_key(other)
    anthropic = {"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f",
                                                                 "input": {}}]},
                              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                            "content": "ok"}]}]}
    assert without_minted_ids(anthropic)["messages"][1]["content"][0]["tool_use_id"] == "id_1"
    # What the user wrote is never an id: the same words, another request.
    assert request_key(chat("call_1", "call_1")) != request_key({**chat("call_1", "call_1"), "model": "n"})
    assert without_minted_ids({"messages": [{"role": "user", "content": "x"}]}) == \
        {"messages": [{"role": "user", "content": "x"}]}


def test_an_import_that_breaks_its_cases_is_not_written_and_update_accepts(tmp_path):
    def loop(args: dict) -> list[dict]:
        answer = completion(call=True, call_id="call_1")
        answer["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = json.dumps(args)
        request = second_request("call_1")
        request["messages"][2]["tool_calls"][0]["function"]["arguments"] = json.dumps(args)
        return [interaction(first_request(), answer), interaction(request, completion(call=False, id_="c-2"))]

    write_cassette(tmp_path / "good" / "loop.yaml", loop({"location": "Paris"}))
    write_cassette(tmp_path / "bad" / "loop.yaml", loop({"location": "Lyon"}))
    assert replayci("import", "good", "--pack", "packs/app", cwd=tmp_path).returncode == 0
    before = files(tmp_path / "packs" / "app")
    broken = replayci("import", "bad", "--pack", "packs/app", cwd=tmp_path)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "replayci import: 1 answer broke its contract and was not saved; `--update` accepts" in broken.stderr
    assert "FAIL" in broken.stderr and "Paris" in broken.stderr
    assert files(tmp_path / "packs" / "app") == before
    accepted = replayci("import", "bad", "--pack", "packs/app", "--update", cwd=tmp_path)
    assert accepted.returncode == 0, accepted.stderr
    after = files(tmp_path / "packs" / "app")
    assert after != before
    # The session's case keeps its id, its fixture and steps replaced: no case beside it, no orphan.
    def outside_steps(names):
        return sorted(n for n in names if "/steps/" not in n)

    assert outside_steps(after) == outside_steps(before)
    steps = [n for n in after if "/steps/" in n]  # the new session's steps, the old ones removed
    assert len(steps) == len([n for n in before if "/steps/" in n]) == 2
    scenario = json.loads(next(after[n] for n in after if n.startswith("golden/") and "/steps/" not in n))
    assert all(json.loads(after[n])["meta"]["session"] == scenario["meta"]["key"] for n in steps)
    assert "replayci import --update: the contracts changed:" in accepted.stderr
    assert "session_get_weather__what_is_the_weather_in.yaml: step 1: $.tool_calls[0].arguments.location equals " \
        '"Paris" -> "Lyon"' in accepted.stderr
    assert replayci("--pack", "packs/app", cwd=tmp_path).returncode == 0


def test_an_exchange_changed_but_keeping_to_its_case_replaces_its_fixture(tmp_path):
    """A changed system prompt, the same calls: each case (a single step and a session) keeps its
    id and file, its fixture now the new exchange; no case beside it, no orphan step."""
    def traffic(system: str) -> list[dict]:
        single = second_request("call_s")
        single["messages"][1]["content"] = "Just the forecast, please."
        loop = [first_request(), second_request("call_1")]
        for request in (single, *loop):
            request["messages"][0]["content"] = system
        return [interaction(single, completion(call=False, id_="c-s")),
                interaction(loop[0], completion(call=True, call_id="call_1")),
                interaction(loop[1], completion(call=False, id_="c-2"))]

    write_cassette(tmp_path / "old" / "t.yaml", traffic("Use the tools."))
    write_cassette(tmp_path / "new" / "t.yaml", traffic("You are careful. Use the tools."))
    assert replayci("import", "old", "--pack", "packs/app", cwd=tmp_path).returncode == 0
    pack = tmp_path / "packs" / "app"
    before, cases = files(pack), case_lines(pack)
    assert len(cases) == 2
    again = replayci("import", "new", "--pack", "packs/app", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    after = files(pack)
    assert case_lines(pack) == cases
    assert sorted(n for n in after if "/steps/" not in n) == sorted(n for n in before if "/steps/" not in n)
    fixtures = [n for n in after if n.startswith("golden/")]
    assert len(fixtures) == len([n for n in before if n.startswith("golden/")])  # the old steps removed
    assert all("You are careful." in after[n] for n in fixtures), fixtures
    assert replayci("--pack", "packs/app", cwd=tmp_path).returncode == 0
