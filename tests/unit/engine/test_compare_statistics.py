"""The statistics of comparisons against an independent computation: Fisher's exact test by
enumerating every way the passes could have fallen, exactly (fractions); Wilson's interval as
the roots of its defining inequality, found by bisection."""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest

from replayci.engine.compare import (
    baseline_gate,
    baseline_label,
    compare_baseline,
    compare_targets,
    fisher_exact,
    runs_of,
    significant_differences,
)
from replayci.engine.summary import wilson


def fisher_by_enumeration(a: int, b: int, c: int, d: int) -> float:
    """Two-sided p: label the a+b runs of group 1 and c+d of group 2, choose which a+c runs
    pass in every possible way, and add up the ways whose table is no likelier than the one seen."""
    n1, n = a + b, a + b + c + d
    ways: dict[int, int] = {}
    for passing in itertools.combinations(range(n), a + c):
        x = sum(1 for i in passing if i < n1)  # passes that fell in group 1
        ways[x] = ways.get(x, 0) + 1
    total = sum(ways.values())
    seen = Fraction(ways[a], total)
    return float(sum(Fraction(w, total) for w in ways.values() if Fraction(w, total) <= seen))


def wilson_by_bisection(passes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The p0 where |passes/n - p0| = z * sqrt(p0 (1 - p0) / n), below and above passes/n."""
    phat = passes / n

    def outside(p0: float) -> bool:
        return abs(phat - p0) > z * math.sqrt(p0 * (1 - p0) / n)

    def root(lo: float, hi: float, lo_outside: bool) -> float:
        for _ in range(200):
            mid = (lo + hi) / 2
            if outside(mid) == lo_outside:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    low = 0.0 if passes == 0 else root(0.0, phat, True)
    high = 1.0 if passes == n else root(phat, 1.0, False)
    return low, high


def test_fisher_the_cases_that_decide_a_comparison():
    assert fisher_exact(5, 0, 0, 5) == pytest.approx(2 / 252)  # 5/5 vs 0/5: significant
    assert fisher_exact(5, 0, 0, 5) < 0.05
    assert fisher_exact(5, 0, 3, 2) == pytest.approx(4 / 9)  # 5/5 vs 3/5: not
    assert fisher_exact(5, 0, 3, 2) >= 0.05
    assert fisher_exact(3, 0, 0, 3) == pytest.approx(0.1)  # 3/3 vs 0/3: not, with so few runs
    assert fisher_exact(3, 1, 1, 3) == pytest.approx(0.4857142857)  # Fisher's tea tasting
    assert fisher_exact(0, 0, 0, 0) == 1.0
    with pytest.raises(ValueError):
        fisher_exact(-1, 0, 0, 0)


@pytest.mark.parametrize("n1,n2", [(1, 1), (2, 3), (4, 4), (5, 5), (3, 7), (6, 5)])
def test_fisher_matches_enumeration_on_every_small_table(n1, n2):
    for a in range(n1 + 1):
        for c in range(n2 + 1):
            assert fisher_exact(a, n1 - a, c, n2 - c) == pytest.approx(
                fisher_by_enumeration(a, n1 - a, c, n2 - c), rel=1e-12, abs=1e-15), (a, n1, c, n2)


@pytest.mark.parametrize("passes,n", [(0, 1), (1, 1), (0, 5), (3, 5), (5, 5), (2, 3), (23, 25), (1, 40), (7, 10)])
def test_wilson_matches_its_definition(passes, n):
    low, high = wilson(passes, n)
    ref_low, ref_high = wilson_by_bisection(passes, n)
    assert low == pytest.approx(ref_low, abs=6e-5) and high == pytest.approx(ref_high, abs=6e-5)


def test_runs_count_every_repeat_and_one_run_otherwise():
    assert runs_of({"repeat": 5, "passes": 3, "status": "non_reproducible"}) == (3, 5)
    assert runs_of({"status": "pass"}) == (1, 1)
    assert runs_of({"status": "error"}) == (0, 1) and runs_of({"status": "fail"}) == (0, 1)
    assert runs_of({"status": "skipped"}) == (0, 0) and runs_of({"status": "non_reproducible"}) == (0, 0)


def _case(target, contract, status="pass", **extra):
    return {"pack": "p", "contract": contract, "case": extra.pop("case", "c"), "target": target, "status": status,
            **extra}


def test_compare_targets_rates_intervals_matrix_and_metrics():
    cases = [_case("A", "w", repeat=5, passes=5, latency_ms=10, cost_usd=0.5, tokens=100),
             _case("B", "w", "fail", repeat=5, passes=0, latency_ms=30, cost_usd=0.25, tokens=50),
             _case("A", "t", repeat=5, passes=5, latency_ms=20),
             _case("B", "t", "non_reproducible", repeat=5, passes=3, latency_ms=40),
             _case("B", "d", "fail", draft=True, repeat=5, passes=0)]
    out = compare_targets(cases, ["A", "B"])
    a, b = out["targets"]["A"], out["targets"]["B"]
    assert (a["passes"], a["runs"], a["pass_rate"], a["wilson"]) == (10, 10, 1.0, wilson(10, 10))
    assert (b["passes"], b["runs"], b["pass_rate"]) == (3, 10, 0.3)  # the draft is left out
    assert (a["cost_usd"], a["tokens"], b["cases"]) == (0.5, 100, 3)
    assert (b["p50_latency_ms"], b["p95_latency_ms"]) == (30, 40)
    assert out["matrix"] == {"p/w": {"A": {"passes": 5, "runs": 5, "pass_rate": 1.0},
                                     "B": {"passes": 0, "runs": 5, "pass_rate": 0.0}},
                             "p/t": {"A": {"passes": 5, "runs": 5, "pass_rate": 1.0},
                                     "B": {"passes": 3, "runs": 5, "pass_rate": 0.6}}}
    assert out["significant"] == [{"contract": "p/w", "a": "A", "b": "B", "pass_rate_a": 1.0, "pass_rate_b": 0.0,
                                   "runs_a": 5, "runs_b": 5, "p": 0.007937, "test": "stratified"}]


def test_significance_just_below_and_at_the_threshold():
    # 9/9 vs 4/9: p = 0.0294 (listed); 8/8 vs 4/8: p = 0.0769 (not)
    def matrix(pa, na, pb, nb):
        return {"x": {"A": {"passes": pa, "runs": na}, "B": {"passes": pb, "runs": nb}}}

    assert [e["p"] for e in significant_differences(matrix(9, 9, 4, 9), ["A", "B"])] == [0.029412]
    assert significant_differences(matrix(8, 8, 4, 8), ["A", "B"]) == []
    assert significant_differences(matrix(5, 5, 0, 0), ["A", "B"]) == []  # no runs: nothing to compare
    three = {"x": {"A": {"passes": 5, "runs": 5}, "B": {"passes": 0, "runs": 5}, "C": {"passes": 0, "runs": 5}}}
    assert [(e["a"], e["b"]) for e in significant_differences(three, ["A", "B", "C"])] == [("A", "B"), ("A", "C")]


def _entry(status, fp="aaaa0000", cls=None, **extra):
    return {"status": status, "fingerprint": fp, "classification": cls, **extra}


@pytest.mark.parametrize("now,then,label", [
    (_entry("fail", cls="argument_mismatch"), _entry("pass"), "new_failure"),
    (_entry("error"), _entry("non_reproducible"), "new_failure"),
    (_entry("pass"), _entry("fail"), "fixed"),
    (_entry("pass"), _entry("error"), "fixed"),
    (_entry("fail", cls="x"), _entry("fail", cls="x"), "still_failing"),
    (_entry("fail", "bbbb0000", "x"), _entry("fail", "aaaa0000", "x"), "changed_failure"),
    (_entry("fail", cls="y"), _entry("fail", cls="x"), "changed_failure"),
    (_entry("pass"), _entry("pass"), "unchanged"),
    (_entry("pass"), None, "new_case"),
    (_entry("fail", repeat=5, passes=0), _entry("pass", repeat=5, passes=5), "regressed"),
    (_entry("non_reproducible", repeat=5, passes=3), _entry("pass", repeat=5, passes=5), "flaky"),
    (_entry("non_reproducible", repeat=5, passes=4), _entry("pass"), "flaky"),
    (_entry("pass", repeat=5, passes=5), _entry("non_reproducible", repeat=5, passes=3), "unchanged"),
    (_entry("pass", repeat=5, passes=5), _entry("fail", repeat=5, passes=0), "fixed"),
])
def test_baseline_labels(now, then, label):
    assert baseline_label(now, then)["label"] == label


def test_regressed_carries_the_baseline_rate_and_p():
    out = baseline_label(_entry("fail", repeat=5, passes=0), _entry("pass", repeat=5, passes=5))
    assert out == {"label": "regressed", "baseline_p": 0.007937, "baseline_pass_rate": 1.0}


def test_compare_baseline_counts_and_removed_cases_only_for_a_complete_run():
    then = {"version": 1, "run": {"started_at": "2026-01-01T00:00:00+00:00"}, "cases": [
        {"pack": "p", "contract": "w", "case": "a", "status": "pass"},
        {"pack": "p", "contract": "w", "case": "gone", "status": "fail"},
        {"pack": "other", "contract": "w", "case": "x", "status": "pass"}]}
    now = [{"pack": "p", "contract": "w", "case": "a", "status": "fail"},
           {"pack": "p", "contract": "w", "case": "new", "status": "pass"}]
    labels, record = compare_baseline(now, then, complete=True)
    assert [e["label"] for e in labels] == ["new_failure", "new_case"]
    assert record["removed"] == [{"pack": "p", "contract": "w", "case": "gone", "baseline_status": "fail"}]
    assert record["counts"]["new_failure"] == 1 and record["counts"]["removed"] == 1
    assert compare_baseline(now, then, complete=False)[1]["removed"] == []


def test_baseline_gate_counts_new_changed_and_regressed_only():
    cases = [{"pack": "p", "baseline": label} for label in
             ("new_failure", "changed_failure", "regressed", "still_failing", "flaky", "fixed", "new_case")]
    assert baseline_gate(cases, None) == {"threshold": "no_new_failures", "actual": 3, "passed": False}
    assert baseline_gate(cases[3:], None)["passed"] is True
    assert baseline_gate(cases, {"other"})["actual"] == 0
    assert baseline_gate([{**cases[0], "draft": True}], None)["actual"] == 0


def test_a_hand_edited_baseline_never_crashes_the_labels():
    odd = [{"status": "pass", "repeat": 5, "passes": "5"}, {"status": "fail", "repeat": 5, "passes": 7},
           {"status": "pass", "repeat": True, "passes": 1}, {"status": "pass", "repeat": 5, "passes": -1}]
    assert [runs_of(c) for c in odd] == [(1, 1), (0, 1), (1, 1), (1, 1)]
    now = _entry("fail", repeat=5, passes=0)
    assert [baseline_label(now, c)["label"] for c in odd] == ["flaky", "changed_failure", "flaky", "flaky"]
    labels, record = compare_baseline([{"pack": "p", "contract": "w", "case": "c", "status": "pass"}],
                                      {"cases": [{"pack": "p", "contract": "w", "case": "c", "target": ["x"],
                                                  "status": "fail"}]}, complete=True)
    assert labels == [{"label": "fixed", "baseline_status": "fail"}] and record["removed"] == []


def test_paired_targets_are_compared_case_by_case_and_the_verdict_says_which_passes_more():
    # 20 cases run once per target: A passes all, B fails 5 of them -> exact McNemar on 5 discordant pairs
    cases = [_case("A", "forecast" if k < 10 else "other", case=f"c{k}") for k in range(20)]
    cases += [_case("B", "forecast" if k < 10 else "other", "fail" if k < 5 else "pass", case=f"c{k}")
              for k in range(20)]
    out = compare_targets(cases, ["A", "B"])
    (verdict,) = out["verdicts"]
    assert (verdict["better"], verdict["test"], verdict["p"]) == ("A", "mcnemar", 0.0625)
    assert (verdict["passes_a"], verdict["runs_a"], verdict["passes_b"], verdict["runs_b"]) == (20, 20, 15, 20)
    assert verdict["sentence"] == "A passes more: 20/20 runs against 15/20; no contract differs significantly " \
                                  "(p < 0.05)"
    # repeated: the same drop, three runs each, is decided case by case and named per contract
    # (each dropping case is 3/3 against 0/3, p = 1/20 alone; five of them, (1/20)^5 either way)
    repeated = [{**c, "repeat": 3, "passes": 3 if c["status"] == "pass" else 0} for c in cases]
    out = compare_targets(repeated, ["B", "A"])
    (verdict,) = out["verdicts"]
    (forecast,) = out["significant"]
    assert (forecast["contract"], forecast["test"], forecast["p"]) == ("p/forecast", "stratified", 6.25e-07)
    assert verdict["sentence"] == "A passes more: 60/60 runs against 45/60; significant on p/forecast, p = 6.3e-07"
    # a case only one target ran: the sets are not paired, Fisher on pooled counts decides
    unpaired = [*cases, _case("A", "forecast", case="extra")]
    assert compare_targets(unpaired, ["A", "B"])["verdicts"][0]["test"] == "fisher"
    alike = compare_targets([_case("A", "w"), _case("B", "w")], ["A", "B"])["verdicts"][0]
    assert alike["better"] is None and alike["sentence"].startswith("A and B pass alike: 1/1 runs against 1/1")
