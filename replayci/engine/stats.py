"""The statistics that decide: exact paired tests (McNemar, and a test stratified by case for
repeated runs) and the sequential test that samples a case until its label is decided. Pure
functions of counts; nothing here knows a report or a run."""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

# Tables of equal probability must not be lost to rounding when the tests sum "as likely or
# less" (as R does for Fisher's test).
_RELATIVE_TOLERANCE = 1 + 1e-7
# Above this many steps of convolution the stratified test uses its normal approximation.
_EXACT_BUDGET = 2_000_000


def fisher_exact(a: int, b: int, c: int, d: int) -> float:
    """The two-sided Fisher exact test of the 2x2 table [[a, b], [c, d]] (passes and failures
    of two groups): the probability, under the hypergeometric law of tables with the same
    margins, of a table no more likely than the one observed."""
    if min(a, b, c, d) < 0:
        raise ValueError("a 2x2 table holds counts >= 0")
    row1, row2, col1 = a + b, c + d, a + c
    n = row1 + row2
    total = math.comb(n, col1)

    def ways(x: int) -> int:  # tables with x in the top-left cell
        return math.comb(row1, x) * math.comb(row2, col1 - x)

    observed = ways(a)
    low, high = max(0, col1 - row2), min(row1, col1)
    kept = sum(w for w in (ways(x) for x in range(low, high + 1)) if w <= observed * _RELATIVE_TOLERANCE)
    return min(1.0, kept / total)


def regression_open(then: tuple[int, int], now: tuple[int, int], max_runs: int, alpha: float = 0.05) -> bool:
    """Whether more runs could still decide that a case regressed against its baseline runs
    *then* (passes, runs): its pass rate is lower now, the drop is not significant yet, and
    it could become so if every run left up to *max_runs* failed."""
    (p0, n0), (p1, n1) = then, now
    if not n0 or not n1 or n1 >= max_runs or p1 / n1 >= p0 / n0:
        return False
    if fisher_exact(p0, n0 - p0, p1, n1 - p1) < alpha:
        return False  # decided: regressed
    left = max_runs - n1
    return fisher_exact(p0, n0 - p0, p1, n1 + left - p1) < alpha


def mcnemar_exact(b: int, c: int) -> float:
    """The two-sided exact McNemar test of paired outcomes: *b* pairs where only the first
    passed, *c* where only the second did; under no difference each discordant pair goes
    either way with probability 1/2."""
    if min(b, c) < 0:
        raise ValueError("discordant counts are >= 0")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2 ** n)


@dataclass(frozen=True)
class Stratum:
    """One case of a paired comparison: passes and counted runs of each side."""
    passes_a: int
    runs_a: int
    passes_b: int
    runs_b: int


def _hypergeometric(stratum: Stratum) -> tuple[int, list[float]] | None:
    """The law of side a's passes given the case's total passes (None: it cannot vary)."""
    na, nb = stratum.runs_a, stratum.runs_b
    t = stratum.passes_a + stratum.passes_b
    low, high = max(0, t - nb), min(na, t)
    if low == high:
        return None
    total = math.comb(na + nb, t)
    return low, [math.comb(na, x) * math.comb(nb, t - x) / total for x in range(low, high + 1)]


def stratified_exact(strata: Iterable[Stratum]) -> float:
    """The two-sided exact conditional test that side a and side b pass alike in every case
    (the exact form of Cochran-Mantel-Haenszel): given each case's total passes, side a's
    passes summed over the cases, against the convolution of the cases' hypergeometric laws;
    p is the probability of a sum no more likely than the one observed. Cases whose outcome
    cannot vary (all passed, all failed, one side absent) carry no information and drop out.
    With each case run once per side this is the exact McNemar test."""
    laws, observed, steps, width = [], 0, 0, 1
    for s in strata:
        if min(s.passes_a, s.passes_b) < 0 or s.passes_a > s.runs_a or s.passes_b > s.runs_b:
            raise ValueError(f"not a case's counts: {s}")
        law = _hypergeometric(s)
        if law is None:
            continue
        laws.append(law)
        observed += s.passes_a - law[0]
        width += len(law[1]) - 1
        steps += width * len(law[1])
    if not laws:
        return 1.0
    if steps > _EXACT_BUDGET:
        return _cmh_normal(laws, observed)
    dist = [1.0]
    for _, probs in laws:
        out = [0.0] * (len(dist) + len(probs) - 1)
        for i, pi in enumerate(dist):
            if pi:
                for j, pj in enumerate(probs):
                    out[i + j] += pi * pj
        dist = out
    at = dist[observed] * _RELATIVE_TOLERANCE
    return min(1.0, sum(p for p in dist if p <= at))


def _cmh_normal(laws: list[tuple[int, list[float]]], observed: int) -> float:
    """The Cochran-Mantel-Haenszel test with continuity correction, for many large cases."""
    mean = var = 0.0
    for _, probs in laws:
        m = sum(k * p for k, p in enumerate(probs))
        mean += m
        var += sum((k - m) ** 2 * p for k, p in enumerate(probs))
    if var <= 0:
        return 1.0
    z = max(0.0, abs(observed - mean) - 0.5) / math.sqrt(var)
    return min(1.0, math.erfc(z / math.sqrt(2)))


def paired_test(strata: Sequence[Stratum]) -> tuple[str, float]:
    """(the test's name, p): exact McNemar when every case ran once per side, else the
    stratified exact test."""
    once = all(s.runs_a == 1 and s.runs_b == 1 for s in strata)
    if once:
        b = sum(1 for s in strata if s.passes_a > s.passes_b)
        c = sum(1 for s in strata if s.passes_b > s.passes_a)
        return "mcnemar", mcnemar_exact(b, c)
    return "stratified", stratified_exact(strata)


# -- sampling until decided ------------------------------------------------------------------

LABELS = ("stable_pass", "stable_fail", "flaky", "undecided")
START = (0, 0, False, False)  # runs, failures, and whether each test rejected stability


@dataclass(frozen=True)
class Plan:
    """A sequential test of a case's pass probability p: `stable_pass` (p >= ok), `stable_fail`
    (p <= 1 - ok), `flaky` (bad >= p >= 1 - bad) at error rates alpha (a stable case called
    otherwise) and beta (an unstable one called stable), within *max_runs* runs.

    Two of Wald's sequential probability ratio tests, one on the passes and its mirror on the
    failures, each of p >= ok against p <= bad. Their boundaries are calibrated on the exact
    law of the truncated procedure (so the stated rates hold at MAX, not only for an endless
    test), and a run of n passes (or failures) with bad**n <= beta also decides: Wald's bound
    wastes a run on the commonest case, the one that always passes."""
    alpha: float = 0.05
    beta: float = 0.05
    ok: float = 0.95
    bad: float = 0.70
    max_runs: int = 20

    @property
    def bounds(self) -> tuple[float, float]:
        """(upper, lower) log-likelihood-ratio boundaries, calibrated."""
        return _calibrated(self.alpha, self.beta, self.ok, self.bad, self.max_runs)

    def decide(self, outcomes: Sequence[bool]) -> str | None:
        """The label of these runs (True: passed), in run order; None while undecided (at
        max_runs: `undecided`)."""
        label, _ = self.walk(outcomes)
        if label is None and len(outcomes) >= self.max_runs:
            return "undecided"
        return label

    def walk(self, outcomes: Sequence[bool]) -> tuple[str | None, tuple]:
        """(label or None, the test's state) after *outcomes*."""
        upper, lower = self.bounds
        state: tuple = START
        for passed in outcomes:
            label, state = _step(self, state, passed, upper, lower)
            if label is not None:
                return label, state
        return None, state

    def step(self, state: tuple, passed: bool) -> tuple[str | None, tuple]:
        """One more run from *state* (the start: `START`): (label or None, the new state)."""
        label, state = _step(self, state, passed, *self.bounds)
        return ("undecided" if label is None and state[0] >= self.max_runs else label), state

    def runs_to_decision(self, outcomes: Sequence[bool]) -> int:
        """The fewest further runs after which some outcome could decide the case (0: decided):
        a round of that many runs never runs one a decision would have saved."""
        label, state = self.walk(outcomes)
        if label is not None:
            return 0
        upper, lower = self.bounds
        frontier = {state}
        for k in range(1, self.max_runs - len(outcomes) + 1):
            grown = set()
            for st in frontier:
                for passed in (True, False):
                    label, nxt = _step(self, st, passed, upper, lower)
                    if label is not None:
                        return k
                    grown.add(nxt)
            frontier = grown
        return max(self.max_runs - len(outcomes), 0)


def _step(plan: Plan, state: tuple, passed: bool, upper: float, lower: float) -> tuple[str | None, tuple]:
    """One more run: state (runs, failures, test 1 rejected stability, test 2 rejected)."""
    s_pass, s_fail = _steps(plan)
    n, fails, up1, up2 = state
    n, fails = n + 1, fails + (not passed)
    t1 = fails * s_fail + (n - fails) * s_pass  # evidence that p <= bad
    t2 = (n - fails) * s_fail + fails * s_pass  # evidence that 1 - p <= bad
    up1, up2 = up1 or t1 >= upper, up2 or t2 >= upper
    state = (n, fails, up1, up2)
    clean = _clean_run(plan)
    if not up1 and (t1 <= lower or (fails == 0 and n >= clean)):
        return "stable_pass", state
    if not up2 and (t2 <= lower or (fails == n and n >= clean)):
        return "stable_fail", state
    if up1 and up2:
        return "flaky", state
    return None, state


@lru_cache(maxsize=64)
def _steps(plan: Plan) -> tuple[float, float]:
    return math.log(plan.bad / plan.ok), math.log((1 - plan.bad) / (1 - plan.ok))


@lru_cache(maxsize=64)
def _clean_run(plan: Plan) -> int:
    """Runs of only passes after which even p = bad would have given them with at most beta."""
    return math.ceil(math.log(plan.beta) / math.log(plan.bad) - 1e-12)


def label_law(plan: Plan, p: float, upper: float | None = None, lower: float | None = None) -> tuple[dict, float]:
    """The exact probability of each label for a case of pass probability *p*, and the
    expected number of runs (by dynamic programming over the runs, no simulation)."""
    if upper is None or lower is None:
        upper, lower = plan.bounds
    states = {(0, 0, False, False): 1.0}
    out = dict.fromkeys(LABELS, 0.0)
    expected = 0.0
    for _ in range(plan.max_runs):
        nxt: dict = {}
        for state, mass in states.items():
            for passed, q in ((True, p), (False, 1 - p)):
                if q <= 0:
                    continue
                label, after = _step(plan, state, passed, upper, lower)
                if label is not None:
                    out[label] += mass * q
                    expected += mass * q * after[0]
                else:
                    nxt[after] = nxt.get(after, 0.0) + mass * q
        states = nxt
    for mass in states.values():
        out["undecided"] += mass
        expected += mass * plan.max_runs
    return out, expected


def _smallest(acceptable, low: float, high: float) -> float:
    """The smallest x in [low, high] with acceptable(x) (monotone), by bisection."""
    for _ in range(30):
        mid = (low + high) / 2
        if acceptable(mid):
            high = mid
        else:
            low = mid
    return high


@lru_cache(maxsize=32)
def _calibrated(alpha: float, beta: float, ok: float, bad: float, max_runs: int) -> tuple[float, float]:
    """The loosest boundaries whose exact error rates, at p = bad (called stable_pass) and at
    p = ok (called flaky or stable_fail), are at most beta and alpha."""
    plan = Plan(alpha, beta, ok, bad, max_runs)
    upper, lower = math.log((1 - beta) / alpha), math.log(beta / (1 - alpha))  # Wald's, to start from
    for _ in range(2):  # each boundary moves the other's rate a little: once more settles it
        lower = -_smallest(lambda x, up=upper: label_law(plan, bad, up, -x)[0]["stable_pass"] <= beta, 0.0, 50.0)
        upper = _smallest(lambda x, low=lower: _rejects_ok(plan, x, low) <= alpha, 0.0, 50.0)
    return upper, lower


def _rejects_ok(plan: Plan, upper: float, lower: float) -> float:
    law, _ = label_law(plan, plan.ok, upper, lower)
    return law["flaky"] + law["stable_fail"]
