"""--repeat N: per-case pass rate, Wilson interval, pass@k, pass^k, the flaky label and its gate."""
from __future__ import annotations

from math import comb

import pytest
from fakeserver import Reply
from livecli import PARIS, Router, add_cases, cases_by_id, invoke, report_of

from replayci.engine.summary import repeat_statistics, wilson
from replayci.report import junit, markdown


def test_wilson_interval():
    assert wilson(0, 3) == [0.0, 0.5615]
    assert wilson(3, 3) == [0.4385, 1.0]
    assert wilson(2, 3) == [0.2077, 0.9385]
    assert wilson(50, 100) == [0.4038, 0.5962]


def test_pass_at_k_and_pass_hat_k_are_the_unbiased_estimators():
    stats = repeat_statistics(2, 4)
    n, c = 4, 2
    for k in range(1, 5):
        assert stats["pass_at_k"][str(k)] == pytest.approx(1 - comb(n - c, k) / comb(n, k), abs=1e-4)
        assert stats["pass_hat_k"][str(k)] == pytest.approx(comb(c, k) / comb(n, k), abs=1e-4)
    assert stats["pass_at_k"] == {"1": 0.5, "2": 0.8333, "3": 1.0, "4": 1.0}
    assert stats["pass_hat_k"] == {"1": 0.5, "2": 0.1667, "3": 0.0, "4": 0.0}
    assert stats["labels"] == ["flaky"]
    assert "labels" not in repeat_statistics(0, 4) and "labels" not in repeat_statistics(4, 4)
    assert repeat_statistics(4, 4)["pass_hat_k"]["4"] == 1.0


def repeated(server, pack, *args):
    add_cases(pack, "w", ["steady", "flaky", "broken"])
    answers = {"flaky": [PARIS, Reply.plain_text("It is sunny."), PARIS]}
    server.set_default(Router(answers, default=lambda q: Reply.plain_text("no") if q == "q:broken" else PARIS))
    return invoke("openai", server, "--json", "--repeat", "3", "--jobs", "1", *args)


def test_repeat_reports_the_statistics_and_labels_flaky_cases(pack, server):
    res = repeated(server, pack)
    report = report_of(res)
    cases = cases_by_id(report)
    steady, flaky, broken = cases["steady"], cases["flaky"], cases["broken"]
    assert flaky["labels"] == ["flaky"] and "labels" not in steady and "labels" not in broken
    assert flaky["wilson"] == [0.2077, 0.9385] and steady["wilson"] == [0.4385, 1.0]
    assert flaky["pass_at_k"] == {"1": 0.6667, "2": 1.0, "3": 1.0}
    assert flaky["pass_hat_k"] == {"1": 0.6667, "2": 0.3333, "3": 0.0}
    assert broken["pass_at_k"]["3"] == 0.0 and steady["pass_hat_k"]["3"] == 1.0
    # every run was paid for: tokens and cost of the three runs; the latency is their mean
    assert steady["tokens"] > 0 and steady["cost_usd"] > 0 and steady["latency_ms"] is not None
    assert "[2/3 runs passed] flaky · Wilson 95% 20.8%–93.8%" in res.stderr
    assert "[3/3 runs passed] · Wilson 95% 43.9%–100.0%" in res.stderr
    assert "· 1 flaky ·" in next(line for line in res.stderr.splitlines() if "passed ·" in line)
    md = markdown.build(report)
    assert "### Flaky cases" in md and "| `demo/w/flaky` | 2/3 | 66.7% | 20.8% – 93.8% | 66.7% | 0.0% |" in md
    xml = junit.build(report)
    assert '<property name="flaky" value="true" />' in xml and "flaky: 2/3 runs passed" in xml
    assert xml.count('property name="flaky"') == 1


def test_min_pass_rate_lower_bound_gate(pack, server, project):
    (project / ".replayci.yml").write_text(
        "provider: recorded\ngates: {pass_rate: 0, max_non_reproducible: 5, min_pass_rate_lower_bound: 0.3}\n")
    res = repeated(server, pack)
    gate = report_of(res)["summary"]["gates"]["min_pass_rate_lower_bound"]
    assert res.exit_code == 1
    assert gate == {"threshold": 0.3, "actual": 0.0, "passed": False}
    (project / ".replayci.yml").write_text(
        "provider: recorded\ngates: {pass_rate: 0, max_non_reproducible: 5, min_pass_rate_lower_bound: 0.0}\n")
    res = repeated(server, pack)
    assert res.exit_code == 0, res.output
