"""The HTML report in a real headless Chromium (Debian's), driven over the DevTools pipe."""

from __future__ import annotations

import json
import os
import tempfile

import pytest
from headless import Browser, require_chromium
from html_support import case, load_report, report

from replayci.report.html import write_html


@pytest.fixture(autouse=True)
def chromium() -> str:
    """Skipped without chromium on a developer's machine; a failure under CI."""
    return require_chromium()

XSS = "</script><script>alert(1)</script>"
# The picture of the report in docs/reports.md is this test's screenshot:
#   REPLAYCI_SCREENSHOT=docs/images/html-report.png python -m pytest tests/test_html_browser.py
SCREENSHOT = os.environ.get("REPLAYCI_SCREENSHOT") or os.path.join(tempfile.gettempdir(), "replayci-report.png")

ROWS = "document.querySelectorAll('#case-rows > tr.case-row').length"
EXPAND = (
    "(() => { const row = [...document.querySelectorAll('#case-rows tr.case-row')]"
    ".find(r => r.querySelector('.case-name').textContent === '%s'); row.click();"
    " return row.nextElementSibling.textContent; })()"
)
LOADED = (
    "new Promise(r => { const w = () => window.__replayci && window.__replayci.complete"
    " ? r(true) : setTimeout(w, 10); w(); })"
)
PICK = (
    "(() => {{ const s = document.querySelector('#filters select[name={0}]'); s.value = '{1}';"
    " s.dispatchEvent(new Event('change', {{bubbles: true}})); }})()"
)


def _runs() -> list[dict]:
    """Three runs of the example packs: the recorded run, one with a broken fixture, and a
    third where a model answer tries to break out of the page."""
    base, failing = load_report("recorded_run.json"), load_report("failing_run.json")
    first = json.loads(json.dumps(base))
    first["run"]["started_at"] = "2026-11-21T09:00:00+00:00"
    second = json.loads(json.dumps(base))
    second["run"]["started_at"] = "2026-11-22T09:00:00+00:00"
    broken = {c["case"]: c for c in failing["cases"]}
    second["cases"] = [
        broken.get(c["case"], c) if c["pack"] == "starter" else c for c in second["cases"]
    ]
    latest = json.loads(json.dumps(second))
    latest["run"]["started_at"] = "2026-11-23T09:00:00+00:00"
    evil = case(
        "travel",
        "weather_lookup",
        "prompt_injection",
        "fail",
        reason="model said " + XSS,
        classification="invariant_violation",
        category="adversarial",
        output={
            "success": True,
            "tool_calls": [{"name": "get_weather", "args_hash": "abc"}],
            "content": XSS,
            "usage": {"input_tokens": 50, "output_tokens": 9},
        },
        failures=[
            {
                "kind": "invariant_violation",
                "message": "$.content not_contains " + XSS,
                "path": "$.content",
                "operator": "not_contains",
                "expected": XSS,
                "actual": XSS,
                "source": "packs/travel/contracts/weather_lookup.yaml:31",
            }
        ],
    )
    latest["cases"].append(evil)
    for run in (first, second, latest):
        run["summary"] = report(run["cases"])["summary"]
    return [latest, first, second]


@pytest.fixture(scope="module")
def page_path(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("html") / "report.html"
    write_html(_runs(), path)
    return str(path)


def test_page_renders_filters_and_expands_without_errors(page_path):
    with Browser(width=1400, height=1800) as browser:
        browser.open("file://" + page_path)
        assert browser.eval(LOADED)
        assert browser.eval(ROWS) == 44
        assert browser.eval("document.getElementById('case-count').textContent") == "All 44 cases"
        # typing in the search box narrows the rows
        browser.eval("document.querySelector('#filters input[name=q]').focus()")
        browser.insert_text("weather")
        assert 0 < browser.eval(ROWS) < 44
        assert browser.eval("document.getElementById('case-count').textContent").endswith(
            "of 44 cases match"
        )
        browser.eval(
            "(() => { const q = document.querySelector('#filters input[name=q]'); q.value = '';"
            " q.dispatchEvent(new Event('input', {bubbles: true})); })()"
        )
        assert browser.eval(ROWS) == 44
        # picking status = fail leaves the two failures
        browser.eval(PICK.format("status", "fail"))
        assert browser.eval(ROWS) == 2
        names = browser.eval(
            "[...document.querySelectorAll('#case-rows .case-name')].map(e => e.textContent)"
        )
        assert sorted(names) == ["prompt_injection", "tool_call_success"]
        # expanding the injected case shows its output as text, never as markup
        detail = browser.eval(EXPAND % "prompt_injection")
        assert XSS in detail and "packs/travel/contracts/weather_lookup.yaml:31" in detail
        assert browser.eval("document.scripts.length") == 2
        detail = browser.eval(EXPAND % "tool_call_success")
        assert "expected a call to get_weather, got get_wether" in detail
        assert "packs/starter/contracts/get_weather.yaml:2" in detail
        browser.eval("window.scrollTo(0, 0)")
        browser.screenshot(SCREENSHOT)
        assert browser.console_errors() == []
        assert not [e for e in browser.events if e.get("method") == "Page.javascriptDialogOpening"]
        assert {u.split(":", 1)[0] for u in browser.requested_urls()} == {"file"}
    with open(SCREENSHOT, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_sorting_and_the_history_filter(page_path):
    with Browser(width=1200, height=900) as browser:
        browser.open("file://" + page_path)
        assert browser.eval(LOADED)
        browser.eval("document.querySelector('th[data-key=status] button').click()")
        first = browser.eval("document.querySelector('#case-rows .badge').textContent")
        assert first == "fail"
        browser.eval(PICK.format("history", "changed"))
        names = browser.eval(
            "[...document.querySelectorAll('#case-rows .case-name')].map(e => e.textContent)"
        )
        assert names == ["tool_call_success"]
        browser.eval("document.querySelector('#filters button[type=reset]').click()")
        browser.eval("new Promise(r => setTimeout(r, 50))")
        assert browser.eval(ROWS) == 44
        assert browser.console_errors() == []


def test_a_big_report_loads_in_chunks_and_filters(tmp_path):
    cases = [
        case(f"pack{i % 4}", "c", f"case{i:05d}", "fail" if i % 50 == 0 else "pass")
        for i in range(5000)
    ]
    path = tmp_path / "big.html"
    write_html([report(cases)], path)
    with Browser(width=1200, height=900) as browser:
        browser.open("file://" + str(path))
        assert browser.eval(LOADED)
        assert browser.eval("document.getElementById('case-count').textContent").startswith(
            "All 5,000 cases"
        )
        rows = browser.eval(ROWS)
        assert 0 < rows < 5000  # rendered in chunks, more on scroll
        browser.eval("document.getElementById('table-scroll').scrollTop = 1e9")
        browser.eval("new Promise(r => setTimeout(r, 300))")
        assert browser.eval(ROWS) > rows
        browser.eval(PICK.format("status", "fail"))
        assert browser.eval("document.getElementById('case-count').textContent").startswith(
            "100 of 5,000 cases match"
        )
        assert 0 < browser.eval(ROWS) <= 100
        assert set(
            browser.eval(
                "[...document.querySelectorAll('#case-rows .badge')].map(e => e.textContent)"
            )
        ) == {"fail"}
        browser.eval("document.querySelector('#filters input[name=q]').focus()")
        browser.insert_text("case04950")
        assert browser.eval(ROWS) == 1
        assert browser.console_errors() == []


LONG = "tool_call_success_for_the_weather_assistant_asked_about_european_capitals_in_"
# Each run of letters, digits and underscores inside the failure table, with the lines it spans.
SPLIT_WORDS = r"""(() => {
  const out = [];
  document.querySelectorAll('table.failures td').forEach(td => {
    const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      for (const m of n.textContent.matchAll(/[A-Za-z0-9_]+/g)) {
        const r = document.createRange();
        r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        const tops = new Set([...r.getClientRects()].map(x => Math.round(x.top)));
        if (tops.size > 1) out.push(m[0]);
      }
    }
  });
  return out;
})()"""


def test_negatives_long_ids_and_failure_text_read_whole(tmp_path):
    failure = {
        "kind": "invariant_violation", "path": "$.tool_calls[0].arguments.destination_airport_code",
        "operator": "equals", "expected": "CDG", "actual": "\"LHR\"",
        "message": "$.tool_calls[0].arguments.destination_airport_code equals \"CDG\", got \"LHR\" "
                   "while the traveller_preferences_document asked for Paris_Charles_de_Gaulle explicitly",
        "source": "packs/travel/contracts/international_flight_search_with_preferences.yaml:31",
        "schema_path": "properties/destination_airport_code/enum",
    }
    cases = [
        case("travel", "flights", "wrong_tool", "pass", expect_ok=False, expected_error="wrong_tool",
             classification="wrong_tool"),
        case("travel", "flights", LONG + "paris", "pass"),
        case("travel", "flights", LONG + "rome", "pass"),
        case("travel", "flights", "broken", "fail", classification="invariant_violation", failures=[failure]),
    ]
    path = tmp_path / "r.html"
    write_html([report(cases)], path)
    with Browser(width=760, height=1200) as browser:
        browser.open("file://" + str(path))
        assert browser.eval(LOADED)
        # a detected negative case says what was expected, as the terminal does
        classes = browser.eval(
            "Object.fromEntries([...document.querySelectorAll('#case-rows tr.case-row')].map(r =>"
            " [r.querySelector('.case-name').textContent, r.querySelector('.c-class').textContent]))"
        )
        assert classes["wrong_tool"] == "(expected wrong_tool)"
        assert classes["broken"] == "invariant_violation"
        # long ids are shown whole (wrapped), not cut to the same visible prefix
        cut = browser.eval(
            "[...document.querySelectorAll('#case-rows td.c-id')].filter(td => td.scrollWidth > td.clientWidth)"
            ".map(td => td.textContent)"
        )
        assert cut == []
        ends = browser.eval(
            "[...document.querySelectorAll('#case-rows td.c-id')].map(td => {"
            " const r = document.createRange(); r.selectNodeContents(td); const b = r.getBoundingClientRect();"
            " const c = td.getBoundingClientRect(); return b.right <= c.right + 1 && b.bottom <= c.bottom + 1; })"
        )
        assert ends == [True] * 4
        # no word or path part of the failure table is broken across lines
        browser.eval(EXPAND % "broken")
        assert browser.eval("document.querySelectorAll('table.failures td').length") == 5
        assert browser.eval(SPLIT_WORDS) == []
        assert browser.console_errors() == []


TOPS = "[...document.querySelectorAll('main > section')].map(s => [s.id, s.getBoundingClientRect().top])"


def test_a_failing_run_opens_on_its_failures_and_small_costs_keep_their_digits(tmp_path):
    cases = [case("p", "c", f"ok{i}", "pass", cost_usd=0.000012, tokens=3) for i in range(30)]
    cases.append(case("p", "c", "refund", "fail", cost_usd=0.000012, tokens=3, failures=[
        {"kind": "wrong_tool", "message": "expected a call to issue_refund, got lookup_order",
         "source": "packs/p/contracts/c.yaml:7"}]))
    path = tmp_path / "failing.html"
    write_html([report(cases)], path)
    with Browser(width=1280, height=800) as browser:
        browser.open("file://" + str(path))
        assert browser.eval(LOADED)
        tops = dict(browser.eval(TOPS))
        # the failures come first, in the first screen, above the summary and every chart
        assert min(tops, key=tops.get) == "failures", tops
        assert tops["failures"] < browser.eval("window.innerHeight") and tops["failures"] < tops["charts"]
        shown = browser.eval("document.getElementById('failures').innerText")
        assert "p/c/refund" in shown and "expected a call to issue_refund, got lookup_order" in shown
        assert "packs/p/contracts/c.yaml:7" in shown
        # the reason is on screen, not folded away
        assert browser.eval("[...document.querySelectorAll('#failures li')].every(e => e.offsetHeight > 0)")
        costs = browser.eval("[...document.querySelectorAll('#case-rows td.c-num')].map(e => e.textContent)")
        assert "$0.000012" in costs and "$0.0000" not in costs, costs
        assert browser.console_errors() == []
    # a run that passes has no failures section
    path = tmp_path / "passing.html"
    write_html([report(cases[:-1])], path)
    assert 'id="failures"' not in path.read_text("utf-8")
