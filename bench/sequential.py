#!/usr/bin/env python3
"""--repeat auto measured on simulated cases of known pass probability.

    python bench/sequential.py [--cases N] [--seed S] [--max 20] [--json]

Cases of pass probability 1.0, 0.97, 0.9, 0.7, 0.5 and 0.0 (N of each, default 5,000) are
sampled by replayci's own sequential test (replayci.engine.stats.Plan, the defaults of
`stats:`: alpha 0.05, beta 0.05, ok 0.95, bad 0.70) until each is labelled or reaches MAX.
For each probability: how often each label came out, the wrong labels against the stated
rates, and the mean runs; the exact law of the same test beside it (no simulation). Then the
runs used on two mixes of cases against a fixed --repeat 20, and against the smallest fixed
number of runs that tells ok from bad at the same error rates.

A label is wrong when the case is stable (p >= ok) and is called flaky or stable_fail (at
most alpha), when it is flaky (1 - bad <= p <= bad) and is called stable (at most beta), and
likewise in the mirror for cases that fail. Between bad and ok (0.9 here) no label is wrong:
that is the indifference zone of any test at these rates; undecided is no wrong label but is
counted.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from replayci.engine.stats import START, Plan, label_law  # noqa: E402

PROBABILITIES = (1.0, 0.97, 0.9, 0.7, 0.5, 0.0)
# Most cases of a mature suite always pass; a few always fail (a known bug), a few are flaky.
MIXES = {
    "realistic": {1.0: 0.70, 0.97: 0.08, 0.9: 0.05, 0.7: 0.04, 0.5: 0.03, 0.0: 0.10},
    "uniform": {p: 1 / len(PROBABILITIES) for p in PROBABILITIES},
}


def wrong(plan: Plan, p: float, label: str) -> bool | None:
    """Whether *label* is wrong for a case of pass probability *p* (None: no label is)."""
    if p >= plan.ok:
        return label in ("flaky", "stable_fail")
    if p <= 1 - plan.ok:
        return label in ("flaky", "stable_pass")
    if 1 - plan.bad <= p <= plan.bad:
        return label in ("stable_pass", "stable_fail")
    return None


def simulate(plan: Plan, p: float, cases: int, rng: random.Random) -> tuple[dict, int]:
    labels: dict[str, int] = {}
    runs = 0
    for _ in range(cases):
        label, state = None, START
        while label is None:
            label, state = plan.step(state, rng.random() < p)
        labels[label] = labels.get(label, 0) + 1
        runs += state[0]
    return labels, runs


def fixed_n(plan: Plan) -> tuple[int, int]:
    """The smallest fixed number of runs N (and failures allowed k) whose one decision, stable
    when at most k runs fail, has both error rates: P(more than k fail | p = ok) <= alpha and
    P(at most k fail | p = bad) <= beta."""
    for n in range(1, 500):
        for k in range(n + 1):
            ok_errs = 1 - sum(math.comb(n, j) * (1 - plan.ok) ** j * plan.ok ** (n - j) for j in range(k + 1))
            bad_errs = sum(math.comb(n, j) * (1 - plan.bad) ** j * plan.bad ** (n - j) for j in range(k + 1))
            if ok_errs <= plan.alpha and bad_errs <= plan.beta:
                return n, k
    raise RuntimeError("no fixed N below 500")


def measure(cases: int, seed: int, max_runs: int) -> dict:
    plan = Plan(max_runs=max_runs)
    rng = random.Random(seed)
    rows = []
    for p in PROBABILITIES:
        labels, runs = simulate(plan, p, cases, rng)
        law, expected = label_law(plan, p)
        bad = sum(n for label, n in labels.items() if wrong(plan, p, label))
        rows.append({"p": p, "labels": {k: round(v / cases, 4) for k, v in sorted(labels.items())},
                     "wrong": None if wrong(plan, p, "flaky") is None else round(bad / cases, 4),
                     "wrong_exact": None if wrong(plan, p, "flaky") is None else
                     round(sum(v for k, v in law.items() if wrong(plan, p, k)), 4),
                     "mean_runs": round(runs / cases, 2), "mean_runs_exact": round(expected, 2)})
    n_fixed, k_fixed = fixed_n(plan)
    mixes = {}
    for name, shares in MIXES.items():
        mean = sum(shares[r["p"]] * r["mean_runs"] for r in rows)
        mixes[name] = {"mean_runs": round(mean, 2), "share_of_fixed_20": round(mean / 20, 3),
                       f"share_of_fixed_{n_fixed}": round(mean / n_fixed, 3)}
    return {"plan": {"alpha": plan.alpha, "beta": plan.beta, "ok": plan.ok, "bad": plan.bad, "max": max_runs,
                     "bounds": [round(b, 4) for b in plan.bounds]},
            "cases_per_probability": cases, "seed": seed, "rows": rows,
            "fixed_same_rates": {"n": n_fixed, "failures_allowed": k_fixed}, "mixes": mixes}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--max", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    out = measure(args.cases, args.seed, args.max)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    plan = out["plan"]
    print(f"--repeat auto:{plan['max']}, alpha {plan['alpha']}, beta {plan['beta']}, ok {plan['ok']}, "
          f"bad {plan['bad']}; {out['cases_per_probability']:,} simulated cases per probability (seed {out['seed']})")
    print(f"{'p':>5}  {'stable_pass':>11}  {'stable_fail':>11}  {'flaky':>6}  {'undecided':>9}  "
          f"{'wrong':>6}  {'(exact)':>7}  {'runs':>5}  {'(exact)':>7}")
    for r in out["rows"]:
        lab = r["labels"]
        wrong_text = "   n/a" if r["wrong"] is None else f"{r['wrong']:6.2%}"
        exact = "    n/a" if r["wrong_exact"] is None else f"{r['wrong_exact']:7.2%}"
        print(f"{r['p']:>5}  {lab.get('stable_pass', 0):11.2%}  {lab.get('stable_fail', 0):11.2%}  "
              f"{lab.get('flaky', 0):6.2%}  {lab.get('undecided', 0):9.2%}  {wrong_text}  {exact}  "
              f"{r['mean_runs']:5.2f}  {r['mean_runs_exact']:7.2f}")
    fixed = out["fixed_same_rates"]
    print(f"a fixed N with the same error rates needs N = {fixed['n']} (stable when at most "
          f"{fixed['failures_allowed']} fail)")
    n = fixed["n"]
    for name, mix in out["mixes"].items():
        print(f"{name} mix: {mix['mean_runs']:.2f} runs a case = {mix['share_of_fixed_20']:.1%} of a fixed "
              f"--repeat 20, {mix['share_of_fixed_' + str(n)]:.1%} of a fixed {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
