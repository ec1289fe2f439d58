"""Model judges end to end: asked of the judge model through the fake server, stored in the
case's recording, replayed offline; strict answers; judge_violation."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from fakeserver import Reply
from livecli import PARIS, add_cases, cases_by_id, invoke, report_of

from replayci.checks.judges import Judge, JudgeAnswerError, parse_answer
from replayci.cli.main import cli

JUDGED = """tool: get_weather
assertions:
  judges:
    - {rubric: "Answers the weather question with a tool call for the right city", min: 3}
    - {classify: {categories: [weather, travel, other], expected: weather}}
"""


def judge_project(pack, judge_model="judge-1"):
    (pack.root / ".replayci.yml").write_text(
        f"provider: recorded\njudge: {{provider: openai, model: {judge_model}}}\n", "utf-8")
    add_cases(pack, "weather", ["a"], header=JUDGED)


def answers(score=4, category="weather", raw=None):
    """The fake server's default: judge requests get JSON verdicts, others the PARIS call."""
    def reply(req):
        if (req.body or {}).get("model", "").startswith("judge") or raw == "self":
            text = req.body["messages"][1]["content"]
            verdict = {"score": score, "reason": "ok"} if "rubric" in text.lower() else {
                "category": category, "reason": "about weather"}
            return Reply.plain_text(raw if raw not in (None, "self") else json.dumps(verdict))
        return PARIS
    return reply


def recording(pack) -> dict:
    return json.loads((pack.dir / "recordings" / "weather" / "a.json").read_text("utf-8"))


def offline(pack):
    res = CliRunner().invoke(cli, ["run", "--no-color", "--json"], catch_exceptions=False)
    return cases_by_id(report_of(res))["a"]


def test_judges_are_asked_recorded_and_replayed_offline(pack, server, monkeypatch):
    judge_project(pack)
    server.set_default(answers())
    res = invoke("openai", server, "--json", "--record")
    assert res.exit_code == 0, res.output
    assert cases_by_id(report_of(res))["a"]["status"] == "pass"
    judge_calls = [r for r in server.requests if r.body.get("model") == "judge-1"]
    assert len(judge_calls) == 2
    stored = recording(pack)["judgements"]
    assert len(stored) == 2 and all(v["model"] == "judge-1" for v in stored.values())
    before = server.count()
    monkeypatch.chdir(pack.root)
    assert offline(pack)["status"] == "pass"
    assert server.count() == before  # offline: the judge is never called


def test_a_judge_below_its_threshold_is_judge_violation(pack, server, monkeypatch):
    judge_project(pack)
    server.set_default(answers(score=2, category="travel"))
    res = invoke("openai", server, "--json", "--record")
    case = cases_by_id(report_of(res))["a"]
    assert case["status"] == "fail" and case["classification"] == "judge_violation"
    assert [f["operator"] for f in case["failures"]] == ["judge", "judge"]
    assert "rubric score 2, at least 3" in case["failures"][0]["message"]
    assert "classified travel, expected weather" in case["failures"][1]["message"]
    monkeypatch.chdir(pack.root)
    assert offline(pack)["classification"] == "judge_violation"


def test_a_malformed_judge_answer_is_unexpected_error_not_a_pass(pack, server):
    judge_project(pack)
    server.set_default(answers(raw="Looks great to me!"))
    case = cases_by_id(report_of(invoke("openai", server, "--json")))["a"]
    assert case["status"] == "fail" and case["classification"] == "unexpected_error"
    assert "unusable answer" in case["failures"][0]["message"]


def test_a_missing_judgement_in_a_recorded_run_is_non_reproducible(pack, server, monkeypatch):
    judge_project(pack)
    server.set_default(answers())
    invoke("openai", server, "--record")
    doc = recording(pack)
    doc.pop("judgements")
    (pack.dir / "recordings" / "weather" / "a.json").write_text(json.dumps(doc), "utf-8")
    monkeypatch.chdir(pack.root)
    case = offline(pack)
    assert (case["status"], case["reason"]) == ("non_reproducible", "judgement_not_recorded")


def test_a_judge_that_is_the_model_under_test_gets_a_warning(pack, server):
    judge_project(pack, judge_model="gpt-4o-mini")
    server.set_default(answers(raw="self"))
    report = report_of(invoke("openai", server, "--json"))
    assert any("is the model under test" in w for w in report["warnings"])


@pytest.mark.parametrize("judge, text, ok", [
    (Judge("rubric", "r", "x"), '{"score": 4, "reason": "fine"}', True),
    (Judge("rubric", "r", "x"), '{"score": 5, "reason": "too high"}', False),
    (Judge("rubric", "r", "x"), '{"score": "4"}', False),
    (Judge("factuality", "ref", "x"), '{"consistent": false, "reason": "contradicts"}', True),
    (Judge("factuality", "ref", "x"), '{"consistent": "no"}', False),
    (Judge("classify", "a, b", "x", categories=("a", "b"), expected="a"), '{"category": "c"}', False),
    (Judge("classify", "a, b", "x", categories=("a", "b"), expected="a"), '```json\n{"category": "a"}\n```', False),
])
def test_answers_are_parsed_strictly(judge, text, ok):
    if ok:
        assert parse_answer(judge, text)
    else:
        with pytest.raises(JudgeAnswerError):
            parse_answer(judge, text)


def test_a_live_scenario_is_judged_on_its_final_answer_and_replayed(pack, server, monkeypatch):
    from test_scenario_live import GOOD, scenario_pack

    (pack.root / ".replayci.yml").write_text("provider: recorded\njudge: {provider: openai, model: judge-1}\n",
                                             "utf-8")
    scenario_pack(pack, extra="assertions:\n  judges:\n"
                             '    - {factuality: "Flight TP1351 and Hotel Alfama were booked."}')

    def reply(req):
        if req.body.get("model") == "judge-1":
            assert "Booked flight TP1351" in req.body["messages"][1]["content"]
            return Reply.plain_text('{"consistent": false, "reason": "wrong hotel"}')
        return GOOD

    server.set_default(reply)
    res = invoke("openai", server, "--json", "--record")
    (case,) = report_of(res)["cases"]
    assert case["classification"] == "judge_violation", case["failures"]
    assert "wrong hotel" in case["failures"][0]["message"]
    stored = json.loads((pack.dir / "recordings" / "trip" / "c.json").read_text("utf-8"))["judgements"]
    assert len(stored) == 1
    monkeypatch.chdir(pack.root)
    res = CliRunner().invoke(cli, ["run", "--no-color", "--json"], catch_exceptions=False)
    assert report_of(res)["cases"][0]["classification"] == "judge_violation"


def test_regrade_reuses_the_reports_judgements_without_any_call(pack, server, monkeypatch, tmp_path):
    judge_project(pack)
    server.set_default(answers(score=2))
    report = tmp_path / "run.json"
    res = invoke("openai", server, "--report-json", str(report))
    assert json.loads(report.read_text())["cases"][0]["classification"] == "judge_violation"
    contract = pack.dir / "contracts" / "weather.yaml"
    contract.write_text(contract.read_text().replace("min: 3", "min: 2"), "utf-8")  # the prompt is unchanged
    calls = server.count()
    monkeypatch.chdir(pack.root)
    res = CliRunner().invoke(cli, ["regrade", str(report)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    regraded = json.loads((tmp_path / "run.regraded.json").read_text())
    assert regraded["cases"][0]["status"] == "pass"
    assert server.count() == calls
