"""--repeat auto[:MAX]: how many more runs each case of a live run gets, until its label is
decided (or, against a baseline, its regression), and what the run spent beside a fixed MAX."""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..config import STATS_DEFAULTS, Settings
from .results import CaseResult
from .stats import Plan, fisher_exact, regression_open
from .summary import case_runs

_COUNTED = ("pass", "fail", "error")


class Sampler:
    """The sequential test of one run's settings, and the baseline's runs of each case."""

    def __init__(self, settings: Settings):
        stats = {**STATS_DEFAULTS, **(settings.stats or {})}
        self.plan = Plan(alpha=stats["alpha"], beta=stats["beta"], ok=stats["ok"], bad=stats["bad"],
                         max_runs=max(settings.repeat, 2))
        self.target = settings.target.label if settings.target is not None else None
        self.then: dict[tuple, tuple[int, int]] = {}
        for c in (settings.baseline or {}).get("cases") or ():
            if isinstance(c, dict):
                key = (c.get("pack"), c.get("contract"), c.get("case"), c.get("target"))
                self.then[key] = case_runs(c)[:2]

    def first(self) -> int:
        """The first round of every case: the fewest runs that could decide one."""
        return self.plan.runs_to_decision([])

    def more(self, case: tuple[str, str, str], runs: Sequence[CaseResult]) -> tuple[int, str | None]:
        """(further runs, label so far) of a case after *runs*: 0 when it is done."""
        outcomes = [r.status == "pass" for r in runs if r.status in _COUNTED]
        label = self.plan.decide(outcomes)
        left = self.plan.max_runs - len(runs)
        if len(outcomes) < len(runs) or left <= 0:  # not run (no key, interrupted) or at MAX: done
            return 0, label or "undecided"
        if label is None:
            return min(self.plan.runs_to_decision(outcomes), left), None
        then = self.then.get((*case, self.target))
        now = (sum(outcomes), len(outcomes))
        if then is not None and regression_open(then, now, self.plan.max_runs, self.plan.alpha):
            return self._to_regression(then, now, left), label
        return 0, label

    def _to_regression(self, then: tuple[int, int], now: tuple[int, int], left: int) -> int:
        """The fewest further runs after which the drop could be significant (all of them failing)."""
        (p0, n0), (p1, n1) = then, now
        for k in range(1, left + 1):
            if fisher_exact(p0, n0 - p0, p1, n1 + k - p1) < self.plan.alpha:
                return k
        return left


def sampling_summary(cases: Iterable[Mapping], max_runs: int) -> dict:
    """The run's calls and cost under --repeat auto, beside what a fixed --repeat MAX would
    have made and cost (each case's mean cost per run, times MAX), and the cases per label."""
    runs = fixed = 0
    cost = fixed_cost = 0.0
    priced = False
    labels: dict[str, int] = {}
    for c in cases:
        n = c.get("repeat")
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0 or c.get("draft"):
            continue
        runs, fixed = runs + n, fixed + max_runs
        label = c.get("stability")
        label = label if isinstance(label, str) and label else "undecided"
        labels[label] = labels.get(label, 0) + 1
        spent = c.get("cost_usd")
        if isinstance(spent, (int, float)) and not isinstance(spent, bool):
            priced = True
            cost, fixed_cost = cost + spent, fixed_cost + spent / n * max_runs
    return {"max": max_runs, "runs": runs, "fixed_runs": fixed,
            "share": round(runs / fixed, 4) if fixed else None,
            "cost_usd": round(cost, 10) if priced else None,
            "fixed_cost_usd": round(fixed_cost, 10) if priced else None, "labels": labels}
