"""The exact paired tests against brute-force enumeration and simulated runs, and the
sequential test's error rates and rounds."""
from __future__ import annotations

import itertools
import math
import random

import pytest

from replayci.engine.compare import fisher_exact
from replayci.engine.stats import (
    START,
    Plan,
    Stratum,
    label_law,
    mcnemar_exact,
    paired_test,
    stratified_exact,
)

ALPHA = 0.05


def brute_mcnemar(b: int, c: int) -> float:
    """Every way the b + c discordant pairs could have gone, equally likely under no difference."""
    n = b + c
    observed = math.comb(n, b)
    flips = [sum(signs) for signs in itertools.product((0, 1), repeat=n)]
    return sum(1 for k in flips if math.comb(n, k) <= observed * (1 + 1e-9)) / len(flips)


def brute_stratified(strata: list[Stratum]) -> float:
    """Every way each case's passes could have fallen among its runs, equally likely under no
    difference: the share of arrangements whose sum of side a's passes is no more likely than
    the one observed."""
    per_case = []
    for s in strata:
        runs = s.runs_a + s.runs_b
        per_case.append([sum(1 for r in chosen if r < s.runs_a)
                         for chosen in itertools.combinations(range(runs), s.passes_a + s.passes_b)])
    counts: dict[int, int] = {}
    for combo in itertools.product(*per_case):
        counts[sum(combo)] = counts.get(sum(combo), 0) + 1
    total = sum(counts.values())
    observed = counts[sum(s.passes_a for s in strata)]
    return sum(v for v in counts.values() if v <= observed * (1 + 1e-9)) / total


@pytest.mark.parametrize("b,c", [(0, 0), (0, 1), (0, 5), (1, 6), (2, 2), (3, 7), (5, 4), (0, 10)])
def test_mcnemar_is_the_enumeration_of_discordant_pairs(b, c):
    assert mcnemar_exact(b, c) == pytest.approx(brute_mcnemar(b, c), abs=1e-12)


def test_the_stratified_test_is_the_enumeration_of_arrangements_within_cases():
    rng = random.Random(7)
    for _ in range(40):
        strata = []
        for _ in range(rng.randint(1, 3)):
            na, nb = rng.randint(1, 4), rng.randint(1, 4)
            strata.append(Stratum(rng.randint(0, na), na, rng.randint(0, nb), nb))
        assert stratified_exact(strata) == pytest.approx(brute_stratified(strata), abs=1e-9), strata


def test_one_case_is_fisher_and_single_runs_are_mcnemar():
    assert stratified_exact([Stratum(5, 5, 0, 5)]) == pytest.approx(fisher_exact(5, 0, 0, 5))
    assert stratified_exact([Stratum(3, 7, 6, 6)]) == pytest.approx(fisher_exact(3, 4, 6, 0))
    once = [Stratum(1, 1, 0, 1)] * 6 + [Stratum(0, 1, 1, 1)] + [Stratum(1, 1, 1, 1)] * 9
    assert paired_test(once) == ("mcnemar", pytest.approx(mcnemar_exact(6, 1)))
    assert stratified_exact(once) == pytest.approx(mcnemar_exact(6, 1))
    assert paired_test([Stratum(2, 3, 0, 3)])[0] == "stratified"


def _case_probabilities(rng: random.Random, n: int) -> list[float]:
    """A realistic spread: most cases always or never pass, some are flaky."""
    return [rng.choice((1.0, 1.0, 1.0, 0.97, 0.9, 0.7, 0.5, 0.0)) for _ in range(n)]


def _runs(rng: random.Random, p: float, n: int) -> int:
    return sum(rng.random() < p for _ in range(n))


@pytest.mark.parametrize("repeat", [1, 3])
def test_a_against_a_is_significant_at_most_alpha(repeat):
    rng = random.Random(2024 + repeat)
    comparisons, significant = 2000, 0
    for _ in range(comparisons):
        strata = [Stratum(_runs(rng, p, repeat), repeat, _runs(rng, p, repeat), repeat)
                  for p in _case_probabilities(rng, 12)]
        significant += paired_test(strata)[1] < ALPHA
    assert significant / comparisons <= ALPHA


def test_a_paired_drop_is_found_more_often_than_pooled_fisher_finds_it():
    rng = random.Random(11)
    paired = pooled = 0
    for _ in range(400):
        probs = _case_probabilities(rng, 20)
        dropped = [max(p - 0.5, 0.0) if k < 4 else p for k, p in enumerate(probs)]  # 4 cases get worse
        strata = [Stratum(_runs(rng, a, 3), 3, _runs(rng, b, 3), 3) for a, b in zip(probs, dropped, strict=True)]
        paired += paired_test(strata)[1] < ALPHA
        pa, na = sum(s.passes_a for s in strata), sum(s.runs_a for s in strata)
        pb, nb = sum(s.passes_b for s in strata), sum(s.runs_b for s in strata)
        pooled += fisher_exact(pa, na - pa, pb, nb - pb) < ALPHA
    assert paired > pooled * 1.2, (paired, pooled)


def test_counts_that_are_no_counts_are_refused():
    with pytest.raises(ValueError):
        stratified_exact([Stratum(3, 2, 0, 1)])
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


# -- sampling until decided -----------------------------------------------------------------

PLAN = Plan()


def test_the_stated_error_rates_hold_exactly_at_their_boundaries():
    at_bad, _ = label_law(PLAN, PLAN.bad)
    at_ok, _ = label_law(PLAN, PLAN.ok)
    assert at_bad["stable_pass"] <= PLAN.beta and at_ok["flaky"] + at_ok["stable_fail"] <= PLAN.alpha
    mirror_bad, _ = label_law(PLAN, 1 - PLAN.bad)
    assert mirror_bad["stable_fail"] <= PLAN.beta
    # and the boundaries are not needlessly strict: near the rates, not far below them
    assert at_bad["stable_pass"] > PLAN.beta * 0.8


def test_a_case_that_always_passes_is_decided_in_nine_runs():
    assert PLAN.bad ** 9 <= PLAN.beta < PLAN.bad ** 8
    assert [PLAN.decide([True] * n) for n in (8, 9)] == [None, "stable_pass"]
    assert [PLAN.decide([False] * n) for n in (8, 9)] == [None, "stable_fail"]
    assert PLAN.decide([True, False, True, False]) == "flaky"
    assert PLAN.decide([True] * 7 + [False] + [True] * 12) in ("stable_pass", "undecided")
    assert PLAN.decide([True, False] * 10) == "flaky"


def test_simulated_labels_follow_the_exact_law():
    rng = random.Random(5)
    for p in (0.97, 0.7, 0.5):
        law, expected = label_law(PLAN, p)
        got = {k: 0 for k in law}
        runs = 0
        for _ in range(2000):
            label, state = None, START
            while label is None:
                label, state = PLAN.step(state, rng.random() < p)
            got[label] += 1
            runs += state[0]
        for k, prob in law.items():
            assert abs(got[k] / 2000 - prob) < 0.035, (p, k, got, law)
        assert abs(runs / 2000 - expected) < 0.6


def test_a_round_never_holds_a_run_a_decision_would_have_saved():
    rng = random.Random(3)
    for _ in range(300):
        seq = [rng.random() < 0.8 for _ in range(rng.randint(0, 12))]
        if PLAN.decide(seq) is not None:
            continue
        k = PLAN.runs_to_decision(seq)
        assert k >= 1
        for tail in itertools.product((True, False), repeat=min(k - 1, 8)):
            assert PLAN.decide([*seq, *tail]) in (None, "undecided") or len(seq) + len(tail) >= PLAN.max_runs
        assert any(PLAN.decide([*seq, *tail]) is not None for tail in itertools.product((True, False), repeat=k))
    assert PLAN.runs_to_decision([]) == 4  # two passes and two failures can say flaky
