"""The HTML report's content, read from the raw page (no browser)."""

from __future__ import annotations

import base64
import hashlib
import json
import re

import pytest
from html_support import case, embedded, report

from replayci.report.html import CHUNK, FIRST_CHUNK, render_html, script_json, write_html

XSS = "</script><script>alert(1)</script>"


def _script_bodies(html: str) -> list[str]:
    return re.findall(r"<script>(.*?)</script>", html, re.DOTALL)


def test_real_report_has_every_case_the_summary_and_the_gates(recorded_run):
    html = render_html([recorded_run])
    assert html.startswith("<!DOCTYPE html>")
    meta, cases = embedded(html)
    assert cases == recorded_run["cases"]
    assert meta["total"] == 43
    for c in recorded_run["cases"]:
        assert json.dumps(c["case"]) in html
    assert "Gates met" in html and "Gate failed" not in html
    assert re.search(
        r'<tr class="gate gate-ok"><td class="mono">pass_rate</td><td>100.0%</td><td>100.0%</td>',
        html,
    )
    assert '<td class="mono">max_non_reproducible</td>' in html
    assert "42/43 passed" in html  # the title
    for chart in ("Pass rate by category", "Pass rate by pack", "Tokens by pack"):
        assert f"<h2>{chart}</h2>" in html
    for pack in ("itinerary", "starter", "travel"):
        assert f'data-filter="pack" data-value="{pack}"' in html
        assert f'<option value="{pack}">{pack} (' in html
    assert '<option value="non_reproducible">non_reproducible (1)</option>' in html


def test_failing_report_shows_the_failed_gate_and_the_failure_with_its_source(failing_run):
    html = render_html([failing_run])
    assert "Gate failed" in html
    assert re.search(
        r'<tr class="gate gate-failed"><td class="mono">pass_rate</td>'
        r"<td>100.0%</td><td>83.3%</td>",
        html,
    )
    _, cases = embedded(html)
    failed = [c for c in cases if c["status"] == "fail"]
    assert [c["case"] for c in failed] == ["tool_call_success"]
    assert failed[0]["failures"][0]["source"] == "packs/starter/contracts/get_weather.yaml:2"
    assert "expected a call to get_weather, got get_wether" in html
    assert '<option value="fail">fail (1)</option>' in html


def test_model_output_cannot_break_out_of_the_page():
    evil = case(
        "p<b>",
        "c",
        "x" + XSS,
        "fail",
        reason=XSS,
        classification="wrong_tool",
        category="<img src=x onerror=alert(2)>",
        tags=["<i>t</i>"],
        output={"success": True, "tool_calls": [], "content": XSS + "\u2028\u2029 & <!-- -->"},
        failures=[
            {
                "kind": "wrong_tool",
                "message": XSS,
                "expected": XSS,
                "actual": XSS,
                "source": "a.yaml:1",
            }
        ],
    )
    data = report([evil, case("p", "c", "fine", "pass")])
    data["warnings"] = [XSS]
    data["run"]["model"] = "<script>alert(3)</script>"
    html = render_html([data])
    assert "alert(1)</script>" not in html
    assert "<script>alert" not in html
    for raw in ("<img", "p<b>", "<i>t", "<!--"):
        assert raw not in html
    assert "\u2028" not in html and "\u2029" not in html
    # exactly the page's own script elements: the data block(s) and the one inline script
    assert html.count("<script") == html.count("</script>") == 2
    assert len(_script_bodies(html)) == 1
    assert "\\u003c/script\\u003e\\u003cscript\\u003ealert(1)\\u003c/script\\u003e" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # the warning, escaped in markup
    assert "p&lt;b&gt;" in html  # the pack name in the filter and the chart
    _, cases = embedded(html)
    assert cases[0]["output"]["content"] == XSS + "\u2028\u2029 & <!-- -->"
    assert cases[0]["case"] == "x" + XSS


def test_script_json_escapes_what_could_end_or_confuse_a_script_element():
    text = script_json({"a": "</script><!-- & \u2028\u2029 >"})
    assert not set(text) & {"<", ">", "&", "\u2028", "\u2029"}
    assert json.loads(text) == {"a": "</script><!-- & \u2028\u2029 >"}


def test_script_json_writes_nan_and_infinity_as_null():
    assert json.loads(script_json({"a": float("nan"), "b": [float("inf"), 1.5]})) == {
        "a": None,
        "b": [None, 1.5],
    }


def test_the_page_loads_nothing_and_allows_only_its_own_script(recorded_run):
    html = render_html([recorded_run])
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html).group(1)
    assert "default-src 'none'" in csp and "require-trusted-types-for 'script'" in csp
    (script,) = _script_bodies(html)
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert "@import" not in html and "url(" not in html
    assert (
        "innerHTML" not in script
        and "insertAdjacentHTML" not in script
        and "document.write" not in script
    )


def test_history_of_three_runs_in_time_order():
    a = [
        case("p", "c", "flaky", "pass"),
        case("p", "c", "regressed", "pass"),
        case("p", "c", "fixed", "fail"),
        case("p", "c", "steady", "pass"),
        case("p", "c", "gone", "pass"),
    ]
    b = [
        case("p", "c", "flaky", "fail"),
        case("p", "c", "regressed", "fail"),
        case("p", "c", "fixed", "pass"),
        case("p", "c", "steady", "pass"),
    ]
    c = [
        case("p", "c", "flaky", "pass"),
        case("p", "c", "regressed", "fail"),
        case("p", "c", "fixed", "pass"),
        case("p", "c", "steady", "pass"),
        case("p", "c", "gone", "error"),
    ]
    runs = [
        report(c, started_at="2026-03-03T09:00:00Z"),
        report(a, started_at="2026-03-01T09:00:00Z"),
        report(b, started_at="2026-03-02T09:00:00+00:00"),
    ]
    html = render_html(runs)
    history = html[html.index('id="history"') : html.index('id="cases"')]
    starts = re.findall(r"<td>(\d)</td><td title=\"[^\"]*\">([^<]+)</td><td>([^<]+)</td>", history)
    assert starts == [
        ("1", "2026-03-01 09:00:00 UTC", "80.0%"),
        ("2", "2026-03-02 09:00:00 UTC", "50.0%"),
        ("3", "2026-03-03 09:00:00 UTC", "60.0%"),
    ]
    assert len(re.findall(r'<circle [^>]*class="pt"', history)) == 3
    changed = re.findall(
        r'<tr><td class="mono">p/c/(\w+)</td><td><span class="flag k-(\w+)">', history
    )
    assert changed == [
        ("gone", "regressed"),
        ("regressed", "regressed"),
        ("flaky", "flaky"),
        ("fixed", "fixed"),
    ]
    assert "Cases whose status changed (4)" in history
    row = history[history.index("p/c/gone") :]
    row = row[: row.index("</tr>")]
    assert re.findall(r"badge s-(\w+)|(absent)", row) == [
        ("pass", ""),
        ("", "absent"),
        ("error", ""),
    ]
    meta, cases = embedded(html)
    assert [x["case"] for x in cases] == [
        "flaky",
        "regressed",
        "fixed",
        "steady",
        "gone",
    ]  # the latest run
    assert meta["history"]["codes"] == ["pfp", "pff", "fpp", "ppp", "p-e"]
    assert meta["history"]["flags"] == ["flaky", "regressed", "fixed", "", "regressed"]
    assert '<option value="changed">changed (4)</option>' in html


def test_one_report_has_no_history(recorded_run):
    html = render_html([recorded_run])
    assert 'id="history"' not in html
    assert embedded(html)[0]["history"] is None


def test_metrics_are_shown_when_present_and_left_out_when_absent():
    plain = render_html([report([case("p", "c", "a", "pass")])])
    for word in (">Tokens<", ">Cost<", ">Latency<", "p95 latency", "Latency per case"):
        assert word not in plain
    measured = [
        case("p", "c", f"m{i}", "pass", tokens=100 + i, cost_usd=0.002, latency_ms=100.0 * i)
        for i in range(1, 21)
    ]
    html = render_html(
        [report(measured, totals={"cost_usd": 0.04, "tokens": 2210, "p95_latency_ms": 1900})]
    )
    for word in (
        ">Tokens<",
        ">Cost<",
        ">Latency<",
        "p95 latency",
        "Latency per case",
        "Cost by pack (USD)",
    ):
        assert word in html
    assert '<div class="n">$0.0400</div><div class="l">cost</div>' in html
    assert '<div class="n">2,210</div><div class="l">tokens</div>' in html
    assert '<div class="n">1.90 s</div><div class="l">p95 latency</div>' in html
    computed = render_html([report(measured)])  # no totals in the summary: computed from the cases
    assert '<div class="n">1.90 s</div><div class="l">p95 latency</div>' in computed


def test_a_big_report_is_embedded_in_chunks_and_written_whole(tmp_path):
    n = FIRST_CHUNK + 2 * CHUNK + 7
    cases = [
        case(f"p{i % 3}", "c", f"case{i}", "fail" if i % 10 == 0 else "pass") for i in range(n)
    ]
    path = tmp_path / "out" / "report.html"
    write_html([report(cases)], path)
    html = path.read_text(encoding="utf-8")
    meta, embedded_cases = embedded(html)
    assert meta["total"] == n and len(meta["cases"]) == FIRST_CHUNK
    assert html.count('class="replayci-cases"') == 3
    assert [c["case"] for c in embedded_cases] == [c["case"] for c in cases]
    assert list(tmp_path.joinpath("out").iterdir()) == [path]  # no temp file left behind


def test_no_report_is_an_error():
    with pytest.raises(ValueError):
        render_html([])


def test_a_report_with_little_in_it_still_renders():
    html = render_html(
        [{"version": 1, "cases": [{"pack": "p", "contract": "c", "case": "x", "status": "pass"}]}]
    )
    assert "This report has no gates." in html and "unknown time" in html
    assert embedded(html)[1][0]["case"] == "x"


@pytest.mark.parametrize("ci, outcome", [("true", "failed"), ("1", "failed"), ("", "skipped")])
def test_the_browser_tests_fail_under_ci_without_chromium(tmp_path, monkeypatch, ci, outcome):
    from headless import require_chromium

    monkeypatch.setenv("PATH", str(tmp_path))  # no chromium on it
    monkeypatch.setenv("CI", ci)
    expected = pytest.fail.Exception if outcome == "failed" else pytest.skip.Exception
    with pytest.raises(expected, match="chromium is not installed"):
        require_chromium()
