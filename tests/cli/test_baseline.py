"""`--baseline REPORT.json`: every case labelled against main's report, the baseline gate, the
pull-request comment, and the refusal of a baseline that is not a report of these packs."""
from __future__ import annotations

import json

from builders import call, fixture, request, response
from click.testing import CliRunner
from fakeserver import Reply
from livecli import PARIS, Router, add_cases, invoke, report_of

from replayci.cli import cli

PARIS_CALL = response(call("get_weather", {"location": "Paris"}))
LYON_CALL = response(call("get_weather", {"location": "Lyon"}))
NO_CALL = response(content="I cannot tell.")
CONTRACT = """\
tool: get_weather
expected_tool_calls:
  - name: get_weather
    argument_invariants:
      - {path: $.location, equals: Paris}
golden_cases:
"""


def write_cases(pack, answers: dict) -> None:
    """One contract `w` whose cases answer as given."""
    lines = [CONTRACT.rstrip("\n")]
    for case, answer in answers.items():
        lines += [f"  - id: {case}", f"    input_ref: {case}.json"]
        pack.fixture(f"{case}.json", fixture(request(f"q:{case}"), answer))
    pack.contract("w", "\n".join(lines) + "\n")


def run(*args):
    return CliRunner().invoke(cli, ["run", "--no-color", *args], catch_exceptions=False)


MAIN = {"steady": PARIS_CALL, "breaks": PARIS_CALL, "known": LYON_CALL, "changes": LYON_CALL,
        "gets_fixed": LYON_CALL, "goes": PARIS_CALL}
PULL_REQUEST = {"steady": PARIS_CALL, "breaks": LYON_CALL, "known": LYON_CALL, "changes": NO_CALL,
                "gets_fixed": PARIS_CALL, "added": PARIS_CALL}


def baseline_project(pack, project):
    write_cases(pack, MAIN)
    main = run("--report-json", str(project / "main.json"))
    assert main.exit_code == 1  # main has known failures
    for name in MAIN:
        (pack.dir / "golden" / f"{name}.json").unlink()
    write_cases(pack, PULL_REQUEST)
    return project / "main.json"


def test_every_case_is_labelled_against_the_baseline(pack, project):
    base = baseline_project(pack, project)
    res = run("--baseline", str(base), "--json")
    report = report_of(res)
    labels = {c["case"]: c["baseline"] for c in report["cases"]}
    assert labels == {"steady": "unchanged", "breaks": "new_failure", "known": "still_failing",
                      "changes": "changed_failure", "gets_fixed": "fixed", "added": "new_case"}
    changed = next(c for c in report["cases"] if c["case"] == "changes")
    assert changed["baseline_classification"] == "argument_mismatch" and changed["classification"] == "tool_not_invoked"
    assert report["baseline"]["removed"] == [{"pack": "demo", "contract": "w", "case": "goes",
                                              "baseline_status": "pass"}]
    assert report["baseline"]["counts"] == {"new_failure": 1, "changed_failure": 1, "regressed": 0, "flaky": 0,
                                            "fixed": 1, "still_failing": 1, "new_case": 1, "removed": 1,
                                            "unchanged": 1}
    assert "gate" not in res.stderr or "baseline" not in report["summary"]["gates"]
    lines = res.stderr.splitlines()
    assert any("demo/w" in line and "breaks" in line and "[new_failure]" in line for line in lines)
    assert not any("steady" in line and "[" in line for line in lines)
    assert any("against baseline" in line and "1 new failure · 1 changed failure · 1 fixed · 1 still failing · "
               "1 new case · 1 removed" in line for line in lines), res.stderr
    assert "    removed: demo/w/goes (was pass)" in lines


def test_a_filtered_run_reports_no_removed_cases(pack, project):
    base = baseline_project(pack, project)
    report = report_of(run("--baseline", str(base), "--filter", "w/breaks", "--json"))
    assert report["baseline"]["removed"] == [] and [c["baseline"] for c in report["cases"]] == ["new_failure"]


def test_gate_baseline_fails_only_for_new_and_changed_failures(pack, project):
    base = baseline_project(pack, project)
    res = run("--baseline", str(base), "--gate-baseline", "--json")
    gates = report_of(res)["summary"]["gates"]
    assert res.exit_code == 1
    assert gates["baseline"] == {"threshold": "no_new_failures", "actual": 2, "passed": False}
    assert gates["pass_rate"]["waived"] == "baseline" and gates["pass_rate"]["passed"] is True
    assert "gate baseline failed: 2 new, changed or regressed failures against the baseline" in res.stderr
    # the pull request keeps main's known failure and fixes one: nothing new, the gate is met
    for name in PULL_REQUEST:
        (pack.dir / "golden" / f"{name}.json").unlink()
    write_cases(pack, {**PULL_REQUEST, "breaks": PARIS_CALL, "changes": LYON_CALL})
    res = run("--baseline", str(base), "--gate-baseline", "--json")
    assert res.exit_code == 0, res.stderr
    assert report_of(res)["summary"]["gates"]["baseline"]["actual"] == 0
    # without the gate, main's known failures fail the pass-rate gate as always
    assert run("--baseline", str(base)).exit_code == 1


def test_the_pack_gate_sets_the_baseline_gate(pack, project):
    base = baseline_project(pack, project)
    text = (pack.dir / "pack.yaml").read_text()
    (pack.dir / "pack.yaml").write_text(text + "gates: {baseline: no_new_failures}\n")
    res = run("--baseline", str(base), "--json")
    assert report_of(res)["summary"]["gates"]["baseline"]["actual"] == 2 and res.exit_code == 1
    alone = run("--json")  # no baseline given: said, never silently passed
    assert "gate baseline: no_new_failures (pack demo) was not checked" in alone.stderr
    (pack.dir / "pack.yaml").write_text(text + "gates: {baseline: no_new_failure}\n")
    bad = run()
    assert bad.exit_code == 2 and "no_new_failures" in bad.output


def test_the_markdown_is_a_pull_request_comment_regressions_first(pack, project):
    base = baseline_project(pack, project)
    run("--baseline", str(base), "--markdown", str(project / "comment.md"))
    md = (project / "comment.md").read_text()
    order = [md.index(s) for s in ("### ❌ Regressions (2)", "`demo/w/breaks`", "`demo/w/changes`",
                                   "### ✅ Fixed (1)", "`demo/w/gets_fixed`", "### New cases (1)",
                                   "Removed since the baseline (1)", "| new failure | changed failure |")]
    assert order == sorted(order)
    assert md.index("Regressions") < md.index("| gate | threshold |")
    assert "argument_mismatch `" in md and "→ tool_not_invoked `" in md


def test_a_baseline_that_is_not_a_report_of_these_packs_is_exit_2(pack, project):
    write_cases(pack, {"steady": PARIS_CALL})
    (project / "notes.json").write_text('{"hello": 1}')
    res = run("--baseline", str(project / "notes.json"))
    assert res.exit_code == 2 and "notes.json: not a replayci JSON report (no 'cases' list)" in res.output
    (project / "broken.json").write_text("{")
    res = run("--baseline", str(project / "broken.json"))
    assert res.exit_code == 2 and "broken.json: not JSON" in res.output
    res = run("--baseline", str(project / "absent.json"))
    assert res.exit_code == 2 and "absent.json: cannot read it" in res.output
    other = {"version": 1, "run": {"packs": ["travel"]}, "summary": {},
             "cases": [{"pack": "travel", "contract": "w", "case": "x", "status": "pass"}]}
    (project / "other.json").write_text(json.dumps(other))
    res = run("--baseline", str(project / "other.json"))
    assert res.exit_code == 2
    assert "other.json: a report of other packs (travel); this run's packs are demo" in res.output
    assert "Traceback" not in res.output
    res = run("--gate-baseline")
    assert res.exit_code == 2 and "--gate-baseline needs --baseline" in res.output


def test_repeat_labels_a_significant_drop_regressed_and_a_small_one_flaky(pack, server, project):
    add_cases(pack, "w", ["drops", "wobbles", "holds"], header=CONTRACT.replace("golden_cases:\n", ""))
    main = invoke("openai", server, "--repeat", "5", "--jobs", "1", "--report-json", str(project / "main.json"))
    assert main.exit_code == 0, main.output
    lyon = Reply.tool_call("get_weather", {"location": "Lyon"})
    server.set_default(Router({"drops": [lyon] * 5, "wobbles": [PARIS, lyon, PARIS, PARIS, PARIS]}))
    res = invoke("openai", server, "--repeat", "5", "--jobs", "1", "--json", "--baseline",
                 str(project / "main.json"), "--gate-baseline")
    cases = {c["case"]: c for c in report_of(res)["cases"]}
    assert (cases["drops"]["baseline"], cases["drops"]["baseline_p"]) == ("regressed", 0.007937)
    assert (cases["wobbles"]["baseline"], cases["wobbles"]["baseline_p"]) == ("flaky", 1.0)
    assert cases["holds"]["baseline"] == "unchanged"
    assert report_of(res)["summary"]["gates"]["baseline"]["actual"] == 1 and res.exit_code == 1


def test_the_python_api_takes_a_baseline_and_targets(pack, project):
    import pytest

    import replayci
    from replayci.core.errors import ConfigError

    base = baseline_project(pack, project)
    result = replayci.run(baseline=str(base), gate_baseline=True)
    assert {c.case: c.details["baseline"] for c in result.cases}["breaks"] == "new_failure"
    assert result.summary["gates"]["baseline"]["actual"] == 2 and not result.ok
    as_dict = replayci.run(baseline=json.loads(base.read_text()))
    assert [c.details["baseline"] for c in as_dict.cases] == [c.details["baseline"] for c in result.cases]
    with pytest.raises(ConfigError, match="baseline: not a replayci JSON report"):
        replayci.run(baseline={"hello": 1})
    offline = replayci.run(targets=["openai:gpt-good"], provider="recorded")
    assert {c.target for c in offline.cases} == {"openai:gpt-good"}
    assert {c.reason for c in offline.cases} == {"recording_not_found"}


def test_a_new_case_that_fails_is_a_new_failure_and_fails_the_baseline_gate(pack, project):
    base = baseline_project(pack, project)
    for name in PULL_REQUEST:
        (pack.dir / "golden" / f"{name}.json").unlink()
    # nothing changed since main, but the case added since fails: absent counts as a pass
    write_cases(pack, {**MAIN, "added": LYON_CALL})
    res = run("--baseline", str(base), "--gate-baseline", "--json")
    report = report_of(res)
    added = next(c for c in report["cases"] if c["case"] == "added")
    assert (added["baseline"], added.get("new_case")) == ("new_failure", True)
    assert report["baseline"]["counts"]["new_failure"] == 1 and report["baseline"]["counts"]["new_case"] == 1
    assert report["summary"]["gates"]["baseline"]["actual"] == 1 and res.exit_code == 1
    assert any("added" in line and "[new_failure, new_case]" in line for line in res.stderr.splitlines())


def test_the_html_report_renders_cases_removed_since_the_baseline(pack, project):
    base = baseline_project(pack, project)
    res = run("--baseline", str(base), "--html", str(project / "report.html"))
    assert res.exit_code == 1 and "internal error" not in res.output, res.output
    page = (project / "report.html").read_text()
    assert "Removed since the baseline" in page and "demo/w/goes" in page


def test_a_case_failing_in_both_with_another_fingerprint_is_a_changed_failure(pack, project):
    base = baseline_project(pack, project)
    report = report_of(run("--baseline", str(base), "--gate-baseline", "--json"))
    cases = {c["case"]: c for c in report["cases"]}
    assert cases["changes"]["baseline"] == "changed_failure"
    assert cases["changes"]["baseline_fingerprint"] != cases["changes"]["fingerprint"]
    assert cases["known"]["baseline"] == "still_failing"  # the same failure is not a change


def test_the_run_is_compared_with_the_baseline_case_by_case_in_words(pack, project):
    base = baseline_project(pack, project)
    res = run("--baseline", str(base), "--json", "--markdown", str(project / "comment.md"),
              "--html", str(project / "report.html"))
    overall = report_of(res)["baseline"]["overall"]
    # the five cases both ran: 2 passed in the baseline (steady, breaks), 2 now (steady, gets_fixed);
    # one got worse and one better: exact McNemar on 1 against 1
    assert (overall["passes"], overall["runs"], overall["baseline_passes"], overall["baseline_runs"]) == (2, 5, 2, 5)
    assert (overall["test"], overall["p"]) == ("mcnemar", 1.0)
    sentence = "this run passes as the baseline did: 2/5 runs against 2/5 in the baseline, over the cases both " \
               "ran (p = 1, exact McNemar)"
    assert overall["sentence"] == sentence and f"  {sentence}" in res.stderr.splitlines()
    assert f"**T{sentence[1:]}.**" in (project / "comment.md").read_text()
    assert f"<strong>{sentence}.</strong>" in (project / "report.html").read_text()
    for name in PULL_REQUEST:
        (pack.dir / "golden" / f"{name}.json").unlink()
    write_cases(pack, {**MAIN, "breaks": LYON_CALL, "steady": LYON_CALL})  # two more failures, nothing fixed
    overall = report_of(run("--baseline", str(base), "--json"))["baseline"]["overall"]
    assert overall["sentence"].startswith("this run passes fewer: 1/6 runs against 3/6 in the baseline")
