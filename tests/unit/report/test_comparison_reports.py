"""The reports of a comparison: a model matrix replayed offline from each target's recordings,
labelled against a baseline, as the terminal, Markdown and JUnit show it, and the HTML page in a
real headless Chromium (cells coloured by pass rate, a click shows a cell's cases)."""
from __future__ import annotations

import json
import os
import tempfile

import pytest
from builders import call, fixture, request, response
from click.testing import CliRunner
from headless import Browser, find_chromium

from replayci.cli import cli

GOOD, WEAK = "openai:gpt-good", "anthropic:claude-weak"
FOLDERS = {GOOD: "openai_gpt-good", WEAK: "anthropic_claude-weak"}
CONTRACT = """\
tool: get_weather
expected_tool_calls:
  - name: get_weather
    argument_invariants:
      - {path: $.location, equals: Paris}
golden_cases:
"""
CASES = {"weather": ("a", "b", "c"), "forecast": ("f1", "f2")}
SCREENSHOT = os.environ.get("REPLAYCI_MATRIX_SCREENSHOT") or os.path.join(tempfile.gettempdir(),
                                                                           "replayci-matrix.png")


def record(pack, target: str, contract: str, case: str, city: str) -> None:
    fx = fixture(request(f"q:{case}"))
    provider, model = target.split(":")
    pack.recording(f"{FOLDERS[target]}/{contract}", case, {
        "meta": {"schema_version": 1, "pack_id": "demo", "contract": contract, "case_id": case,
                 "provider": provider, "model": model, "latency_ms": 100 + len(case) * 10},
        "boundary": fx["boundary"],
        "response": {**response(call("get_weather", {"location": city})),
                     "usage": {"input_tokens": 40, "output_tokens": 10}}})


def matrix_project(pack, project, weak_fails=()) -> None:
    for contract, ids in CASES.items():
        lines = [CONTRACT.rstrip("\n")]
        for case in ids:
            lines += [f"  - id: {case}", f"    input_ref: {case}.json"]
            pack.fixture(f"{case}.json", fixture(request(f"q:{case}")))
            record(pack, GOOD, contract, case, "Paris")
            record(pack, WEAK, contract, case, "Lyon" if case in weak_fails else "Paris")
        pack.contract(contract, "\n".join(lines) + "\n")


def compare(*args):
    return CliRunner().invoke(cli, ["run", "--no-color", "--provider", "recorded", "--target", GOOD,
                                    "--target", WEAK, *args], catch_exceptions=False)


@pytest.fixture
def compared(pack, project):
    """main's report (every case passes for both), then this run: the weak model fails a, b, c."""
    matrix_project(pack, project)
    assert compare("--report-json", "main.json").exit_code == 0
    matrix_project(pack, project, weak_fails=("a", "b", "c"))
    res = compare("--baseline", "main.json", "--json", "--markdown", "comment.md", "--junit", "junit.xml",
                  "--html", "report.html")
    return project, res


def test_terminal_names_targets_matrix_labels_and_the_failing_target(compared):
    project, res = compared
    assert res.exit_code == 1
    lines = res.stderr.splitlines()
    good = next(line for line in lines if line.startswith(f"  {GOOD}  ") and "runs passed" in line)
    weak = next(line for line in lines if line.startswith(f"  {WEAK}  ") and "runs passed" in line)
    assert "100.0% (Wilson 95% 56.5%–100.0%) · 5/5 runs passed · 250 tokens" in good
    assert "40.0% (Wilson 95% 11.8%–76.9%) · 2/5 runs passed" in weak and "p50 110 ms · p95 120 ms" in weak
    assert [line.split() for line in lines if line.startswith("  contract") or line.startswith("  demo/")
            and line.endswith("%")] == [["contract", GOOD, WEAK], ["demo/forecast", "100.0%", "100.0%"],
                                        ["demo/weather", "100.0%", "0.0%"]]
    assert any(WEAK in line and "weather" in line and " a " in f"{line} " and "[new_failure]" in line
               for line in lines)
    assert f"  gate pass_rate failed for target {WEAK}: 0.4 against 1.0" in lines
    assert any("against baseline main.json: 3 new failures" in line for line in lines)


def test_markdown_and_junit_show_targets_and_labels(compared):
    project, _ = compared
    md = (project / "comment.md").read_text()
    assert md.index("### ❌ Regressions (3)") < md.index("### Targets") < md.index("| `demo/weather` | 100.0% | 0.0% |")
    assert f"| `{WEAK}` | 40.0% | 11.8%–76.9% | 2/5 |" in md and "❌ pass_rate |" in md
    assert f"| pass_rate | 100.0% | 70.0% | ❌ (failed for `{WEAK}`) |" in md
    assert f"`demo/weather/a` @ `{WEAK}` | new_failure | fail | pass |" in md
    xml = (project / "junit.xml").read_text()
    assert f'name="a @ {WEAK}"' in xml and f'name="a @ {GOOD}"' in xml
    assert '<property name="baseline" value="new_failure" />' in xml


def test_json_report_of_the_comparison(compared):
    _, res = compared
    report = json.loads(res.stdout)
    assert report["run"]["targets"] == [GOOD, WEAK] and report["run"]["provider"] == "recorded"
    assert report["targets"]["targets"][GOOD]["tokens"] == 250
    assert report["baseline"]["counts"]["new_failure"] == 3 and report["baseline"]["counts"]["unchanged"] == 7


def test_every_report_says_which_target_passes_more_and_shows_one_pass_rate(compared):
    project, res = compared
    sentence = f"{GOOD} passes more: 5/5 runs against 2/5; no contract differs significantly (p < 0.05)"
    report = json.loads(res.stdout)
    assert [v["sentence"] for v in report["targets"]["verdicts"]] == [sentence]
    assert (report["targets"]["verdicts"][0]["test"], report["targets"]["verdicts"][0]["p"]) == ("mcnemar", 0.25)
    assert f"  {sentence}" in res.stderr.splitlines()
    assert f"**{sentence}.**" in (project / "comment.md").read_text()
    page = (project / "report.html").read_text()
    assert f"<strong>{sentence}.</strong>" in page.replace("&lt;", "<")
    # one pass rate, 7 of 10 runs: the summary, the gate, the terminal, the Markdown and the HTML header
    assert report["summary"]["pass_rate"] == report["summary"]["gates"]["pass_rate"]["actual"] == 0.7
    assert "pass rate 70.0% (7/10 runs)" in res.stderr
    assert "| pass_rate | 100.0% | 70.0% |" in (project / "comment.md").read_text()
    assert '<div class="n">70.0%</div><div class="l">pass rate</div>' in page


@pytest.mark.skipif(find_chromium() is None, reason="chromium is not installed")
def test_html_matrix_in_a_real_browser(compared):
    project, _ = compared
    rows = "document.querySelectorAll('#case-rows > tr.case-row').length"
    with Browser(width=1400, height=1600) as browser:
        browser.open("file://" + str(project / "report.html"))
        assert browser.eval("new Promise(r => { const w = () => window.__replayci && window.__replayci.complete"
                            " ? r(true) : setTimeout(w, 10); w(); })")
        assert browser.eval(rows) == 10
        cells = browser.eval("[...document.querySelectorAll('#matrix-table td[data-target]')].map(td =>"
                             " [td.dataset.contract, td.dataset.target, td.textContent,"
                             " getComputedStyle(td).backgroundColor])")
        assert [c[:3] for c in cells] == [["demo/forecast", GOOD, "100.0%"], ["demo/forecast", WEAK, "100.0%"],
                                          ["demo/weather", GOOD, "100.0%"], ["demo/weather", WEAK, "0.0%"]]

        def rgb(text):
            return [int(v) for v in text[text.index("(") + 1:text.index(")")].split(",")[:3]]

        green, red = rgb(cells[0][3]), rgb(cells[3][3])
        assert green[1] > green[0] and red[0] > red[1]  # 100% green, 0% red
        # a click on a cell shows its cases: the weak model's three weather cases
        browser.eval(f"document.querySelector('#matrix-table td[data-contract=\"demo/weather\"]"
                     f"[data-target=\"{WEAK}\"]').click()")
        assert browser.eval(rows) == 3
        shown = browser.eval("[...document.querySelectorAll('#case-rows tr.case-row')].map(r =>"
                             " [r.querySelector('.case-name').textContent, r.querySelector('.target').textContent,"
                             " (r.querySelector('.flag') || {}).textContent])")
        assert shown == [["a", WEAK, "new_failure"], ["b", WEAK, "new_failure"], ["c", WEAK, "new_failure"]]
        assert browser.eval("document.querySelector('#filters select[name=target]').value") == WEAK
        # the baseline filter and counts, and the failing target's gate
        browser.eval("document.querySelector('#filters').reset()")
        browser.eval("(() => { const s = document.querySelector('#filters select[name=baseline]');"
                     " s.value = 'unchanged'; s.dispatchEvent(new Event('change', {bubbles: true})); })()")
        assert browser.eval(rows) == 7
        gates = browser.eval("[...document.querySelectorAll('#gates tr.gate-failed td.mono')].map(e => e.textContent)")
        assert f"target {WEAK}: pass_rate" in gates and f"target {GOOD}: pass_rate" not in gates
        counts = browser.eval("document.querySelector('#baseline-counts').textContent")
        assert "new failure" in counts
        browser.eval("window.scrollTo(0, 0)")
        browser.screenshot(SCREENSHOT)
        assert browser.console_errors() == []
        assert {u.split(":", 1)[0] for u in browser.requested_urls()} == {"file"}


def test_the_baseline_gate_waives_each_targets_pass_rate(pack, project):
    matrix_project(pack, project, weak_fails=("a",))
    assert compare("--report-json", "main.json").exit_code == 1  # main: the weak model's known failure
    same = compare("--baseline", "main.json", "--gate-baseline", "--json")
    assert same.exit_code == 0, same.stderr
    summary = json.loads(same.stdout)["summary"]
    assert summary["gates"]["pass_rate"]["failed_targets"] == []
    assert summary["gates_by_target"][WEAK]["pass_rate"] == {"threshold": 1.0, "actual": 0.8, "passed": True,
                                                             "waived": "baseline"}
    assert "gate pass_rate failed" not in same.stderr
    matrix_project(pack, project, weak_fails=("a", "b"))
    worse = compare("--baseline", "main.json", "--gate-baseline")
    assert worse.exit_code == 1, worse.output
    assert [line for line in worse.output.splitlines() if "gate" in line] == [
        "  gate baseline failed: 1 new, changed or regressed failure against the baseline"]


def test_shards_of_a_comparison_merge_into_the_whole_comparison(pack, project):
    matrix_project(pack, project, weak_fails=("a", "f2"))
    whole = json.loads(compare("--json").stdout)
    for k in (1, 2):
        compare("--shard", f"{k}/2", "--report-json", f"shard{k}.json")
    merged = CliRunner().invoke(cli, ["merge", "shard1.json", "shard2.json", "-o", "merged.json"])
    assert merged.exit_code == 1, merged.output  # the weak target misses the pass-rate gate
    report = json.loads((project / "merged.json").read_text())
    assert [(c["target"], c["case"]) for c in report["cases"]] == [(c["target"], c["case"]) for c in whole["cases"]]
    assert {k: v for k, v in report["targets"].items() if k != "by_target"} == \
        {k: v for k, v in whole["targets"].items() if k != "by_target"}
    assert report["summary"]["gates"]["pass_rate"]["failed_targets"] == [WEAK]
