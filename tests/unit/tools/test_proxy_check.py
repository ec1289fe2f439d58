"""`replayci proxy --mode check -- COMMAND`: an agent on the real openai SDK runs against the fake
provider through the proxy; every answer is judged against the case it corresponds to, each
conversation against its recorded session; the pack is never written; the report is a run's."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import warmed
from agent_support import AGENT, trip
from fakeserver import Conversation, FakeServer, Reply

REPO = Path(__file__).resolve().parents[3]


def replayci(*args, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    for var in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "GITHUB_ACTIONS",
                "GITHUB_STEP_SUMMARY"):
        full.pop(var, None)
    full.update(env or {})
    return subprocess.run([*warmed.cli(full), *map(str, args)], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=180, check=False)


@pytest.fixture(scope="module")
def server():
    with FakeServer(default=trip()) as fake:
        yield fake


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, server) -> Path:
    """A pack captured once from the good model: the trip's three steps and its session."""
    root = tmp_path_factory.mktemp("recorded")
    (root / "agent.py").write_text(AGENT, "utf-8")
    done = replayci("proxy", "--pack", "packs/app", "--mode", "record", "--upstream",
                    f"openai={server.openai_base_url}", "--", *warmed.app_python(), "agent.py", "chat", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture
def app(tmp_path, recorded, server) -> Path:
    shutil.copytree(recorded, tmp_path, dirs_exist_ok=True)
    server.reset()
    server.set_default(trip())
    return tmp_path


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def check(app: Path, server, *extra, env=None, command=("agent.py", "chat")) -> subprocess.CompletedProcess:
    return replayci("proxy", "--pack", "packs/app", "--mode", "check", "--upstream",
                    f"openai={server.openai_base_url}", "--report-json", "report.json", *extra, "--",
                    *warmed.app_python(), *command, cwd=app, env=env)


def report(app: Path) -> dict:
    return json.loads((app / "report.json").read_text("utf-8"))


def test_an_unchanged_agent_passes_and_nothing_is_written(app, server):
    before = files(app / "packs")
    done = check(app, server)
    assert done.returncode == 0, done.stdout + done.stderr
    rep = report(app)
    assert [c["status"] for c in rep["cases"]] == ["pass"] * 4
    assert {c["origin"] for c in rep["cases"]} == {"check"}
    assert rep["check"] == {"unmatched": [], "not_exercised": []}
    assert rep["run"]["provider"] == "check"
    assert files(app / "packs") == before  # check mode writes nothing into the pack


def test_a_changed_system_prompt_with_the_same_calls_passes(app, server):
    done = check(app, server, env={"AGENT_SYSTEM": "You are a careful travel agent. Always use the tools."})
    assert done.returncode == 0, done.stdout + done.stderr
    rep = report(app)
    assert [c["status"] for c in rep["cases"]] == ["pass"] * 4
    assert all("messages[0].content" in c["request_changed"] for c in rep["cases"]), rep["cases"]


def test_the_same_change_with_a_regression_fails_at_the_right_case(app, server):
    server.set_default(Conversation([Reply.tool_call("search_flights", {"to": "LIS", "passengers": 2}),
                                     Reply.tool_call("get_weather", {"location": "Lisbon"}),
                                     Reply.plain_text("Booked.")]))
    done = check(app, server, "--junit", "junit.xml", "--markdown", "summary.md",
                 env={"AGENT_SYSTEM": "You are a careful travel agent.", "GITHUB_ACTIONS": "true"})
    assert done.returncode == 1, done.stdout + done.stderr
    by_case = {c["case"]: c for c in report(app)["cases"]}
    failed = {k: c["classification"] for k, c in by_case.items() if c["status"] == "fail"}
    step2 = next(k for k in by_case if "step2" in k)
    session = next(k for k in by_case if k.startswith("session-"))
    assert failed == {step2: "wrong_tool", session: "sequence_violation"}, failed
    # The session fails at the step that departed, as a live run of it would, its trajectory ending there.
    assert by_case[session]["failures"][0]["message"].startswith("step 2: tool sequence ['search_flights', "
                                                                 "'get_weather'] breaks tool_sequence strict")
    assert len(by_case[session]["trajectory"]) == 2
    # The annotation points at the contract line of the check that failed.
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("::error") and "wrong_tool" in ln)
    assert "file=packs/app/contracts/captured_" in line and ",line=" in line
    assert "wrong_tool" in (app / "junit.xml").read_text("utf-8")
    assert "FAIL" in (app / "summary.md").read_text("utf-8") or "fail" in (app / "summary.md").read_text("utf-8")


def test_unmatched_and_not_exercised_are_listed_and_can_fail(app, server):
    env = {"AGENT_QUESTION": "What is 17 times 23, exactly? Answer in Roman numerals please"}
    server.set_default(Reply.plain_text("CCCXCI"))
    done = check(app, server, env=env)
    assert done.returncode == 0, done.stdout + done.stderr  # nothing failed: the command's status
    lists = report(app)["check"]
    assert len(lists["unmatched"]) == 1 and "alike" in lists["unmatched"][0]["why"]
    assert lists["unmatched"][0]["nearest"].startswith("captured_")
    assert len(lists["not_exercised"]) == 4
    assert "not_exercised" in done.stderr and "unmatched" in done.stderr
    assert check(app, server, "--fail-on-unmatched", env=env).returncode == 1
    assert check(app, server, "--fail-on-not-exercised", env=env).returncode == 1


def test_repeat_runs_the_command_again_and_its_status_passes_through(app, server):
    (app / "twice.py").write_text(AGENT.replace('print({"chat"', 'import sys as _s\nprint({"chat"') +
                                  "\n_s.exit(3)\n", "utf-8")
    done = check(app, server, "--repeat", "2", command=("twice.py", "chat"))
    assert done.returncode == 3, done.stdout + done.stderr  # every case passed: the command's own status
    assert len(server.requests) == 6


def test_baseline_labels_each_case(app, server):
    assert check(app, server).returncode == 0
    shutil.copy(app / "report.json", app / "main.json")
    server.set_default(Conversation([Reply.plain_text("I cannot book trips.")]))
    done = check(app, server, "--baseline", "main.json")
    assert done.returncode == 1
    labels = {c["case"]: c["baseline"] for c in report(app)["cases"]}
    assert "new_failure" in labels.values(), labels


# ------------------------------------------------ recording over existing contracts judges first


def record(app: Path, server, *extra) -> subprocess.CompletedProcess:
    return replayci("proxy", "--pack", "packs/app", "--mode", "record", "--upstream",
                    f"openai={server.openai_base_url}", *extra, "--", *warmed.app_python(), "agent.py", "chat", cwd=app)


def wrong_tool() -> Conversation:
    return Conversation([Reply.tool_call("search_flights", {"to": "LIS", "passengers": 2}),
                         Reply.tool_call("get_weather", {"location": "Lisbon"}), Reply.plain_text("Booked.")])


def test_a_recording_that_breaks_its_cases_is_reported_and_not_written(app, server):
    before = files(app / "packs")
    server.set_default(wrong_tool())
    done = record(app, server)
    assert done.returncode == 1, done.stderr
    assert files(app / "packs") == before  # the whole session held back, its good first step too
    assert "wrong_tool" in done.stderr and "sequence_violation" in done.stderr
    assert "replayci proxy: 2 answers broke their contracts and were not saved (3 exchanges held back in all: an " \
        "agent session is saved whole or not at all); `--update` accepts the new behaviour" in done.stderr


def test_update_accepts_and_says_what_changed_per_contract(app, server):
    before = files(app / "packs")
    server.set_default(wrong_tool())
    done = record(app, server, "--update")
    assert done.returncode == 0, done.stderr
    assert "replayci proxy --update: the contracts changed:" in done.stderr
    assert ': $.tool_calls[0].name equals "book_hotel" -> "get_weather"' in done.stderr
    # Each case's fixture replaced by the new exchange that corresponds to it: no case beside it.
    assert sorted(files(app / "packs")) == sorted(before)
    assert check(app, server).returncode == 0  # the new behaviour is the contract now


def test_a_faithful_recording_passes_and_a_draft_pack_never_fails(app, server, tmp_path):
    assert record(app, server).returncode == 0  # new ids, the same calls: judged and written
    draft = tmp_path / "draft"
    draft.mkdir()
    (draft / "agent.py").write_text(AGENT, "utf-8")
    assert record(draft, server, "--draft").returncode == 0
    server.set_default(wrong_tool())
    assert record(draft, server, "--draft").returncode == 0


STREAMED = r'''
import anthropic, openai
question = [{"role": "user", "content": "Say hello in one word"}]
oa = openai.OpenAI(api_key="sk-agent-test-0123456789abcdef", max_retries=0)
list(oa.chat.completions.create(model="gpt-4o-mini", messages=question, stream=True))
list(oa.responses.create(model="gpt-4o-mini", input=question, stream=True))
an = anthropic.Anthropic(api_key="sk-ant-agent-test-0123456789", max_retries=0)
list(an.messages.create(model="claude-sonnet-4-5", max_tokens=50, messages=question, stream=True))
'''


def test_a_streamed_answer_keeps_its_response_id_in_the_report(tmp_path):
    """Check mode reads the id a provider gave a streamed answer from its events (chat chunks,
    the Responses and Messages streams' first events): the report and --otlp name the live call."""
    (tmp_path / "streamed.py").write_text(STREAMED, "utf-8")
    with FakeServer(default=Reply.plain_text("Hello")) as fake:
        flags = ["--upstream", f"openai={fake.openai_base_url}", "--upstream", f"anthropic={fake.url}"]
        done = replayci("proxy", "--pack", "packs/app", "--mode", "record", *flags, "--", *warmed.app_python(),
                        "streamed.py", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        done = replayci("proxy", "--pack", "packs/app", "--mode", "check", *flags, "--report-json", "report.json",
                        "--", *warmed.app_python(), "streamed.py", cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        streamed = [r for r in fake.requests if r.streaming]
    assert len(streamed) == 6
    cases = report(tmp_path)["cases"]
    assert [c["status"] for c in cases] == ["pass"] * 3
    ids = [c.get("response_id") for c in cases]
    assert all(isinstance(i, str) and i for i in ids) and len(set(ids)) == 3, ids
