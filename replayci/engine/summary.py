"""Counts, per-category pass rates and gates, computed from report case entries.

Runs and `replayci merge` share this code, so a merged report of shards has exactly the
summary the full run would have had.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from ..checks.failure import Status
from ..pack.vocabulary import CATEGORIES

DEFAULT_GATES = {"pass_rate": 1.0, "max_non_reproducible": 0}
STATUSES = tuple(s.value for s in Status)
Z95 = 1.96  # the normal quantile of a two-sided 95% interval


def _rate(passed: int, denom: int):
    return round(passed / denom, 4) if denom else None


def summarize(cases: list[Mapping], gates_by_pack: Mapping[str, Mapping]) -> dict:
    """The summary of case entries (dicts with status, pack, contract, category, draft, allowlisted)."""
    counts = {s: 0 for s in STATUSES}
    by_category: dict[str, dict] = {}
    for c in cases:
        counts[c["status"]] += 1
        slot = by_category.setdefault(c.get("category") or "uncategorized",
                                      {"pass": 0, "fail": 0, "error": 0, "total": 0})
        slot["total"] += 1
        if c["status"] in ("pass", "fail", "error"):
            slot[c["status"]] += 1
    for slot in by_category.values():
        slot["pass_rate"] = _rate(slot["pass"], slot["pass"] + slot["fail"] + slot["error"])
    order = {c: i for i, c in enumerate(CATEGORIES)}
    by_category = dict(sorted(by_category.items(), key=lambda kv: (order.get(kv[0], 99), kv[0])))
    counted = [c for c in cases if not c.get("draft")]
    denom = sum(1 for c in counted if c["status"] in ("pass", "fail", "error"))
    passed = sum(1 for c in counted if c["status"] == "pass")
    return {
        "total": len(cases),
        **counts,
        "allowlisted": sum(1 for c in cases if c.get("allowlisted")),
        "draft": sum(1 for c in cases if c.get("draft")),
        "draft_contracts": len({(c.get("pack"), c.get("contract")) for c in cases if c.get("draft")}),
        "pass_rate": _rate(passed, denom) if denom else 1.0,
        "by_category": by_category,
        "gates": {**evaluate_gates(counted, gates_by_pack), **metric_gates(counted, gates_by_pack)},
        "gates_by_pack": {k: dict(v) for k, v in gates_by_pack.items()},
        "totals": totals(cases),
    }


def _known(cases: Iterable[Mapping], key: str) -> list:
    return [c[key] for c in cases if isinstance(c.get(key), (int, float)) and not isinstance(c.get(key), bool)]


def percentile(values: list[float], pct: float) -> float | None:
    """Nearest-rank percentile; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def _sum(values: list) -> float | int | None:
    return round(sum(values), 10) if values else None


def totals(cases: Iterable[Mapping]) -> dict:
    """The run's cost and tokens (sums of what is known; None when nothing is) and the p95
    latency over the cases that have one."""
    cases = list(cases)
    return {"cost_usd": _sum(_known(cases, "cost_usd")), "tokens": _sum(_known(cases, "tokens")),
            "p95_latency_ms": percentile(_known(cases, "latency_ms"), 95)}


# gate -> (the case value it reads, how a group of cases is measured, is the limit a maximum)
_METRIC_GATES = {
    "max_cost_usd": ("cost_usd", _sum, True),
    "max_total_tokens": ("tokens", _sum, True),
    "p95_latency_ms": ("latency_ms", lambda values: percentile(values, 95), True),
    "min_pass_rate_lower_bound": ("wilson_low", lambda values: min(values) if values else None, False),
}


def metric_gates(cases: Iterable[Mapping], gates_by_pack: Mapping[str, Mapping]) -> dict:
    """The cost, token, latency and repeat gates that some pack (or the config) sets. Packs
    that share a threshold are measured together, so a gate of .replayci.yml judges the run's
    total; a case whose value is unknown is counted under `unknown`, not in the total."""
    cases = [c for c in cases if c["pack"] in gates_by_pack]
    out = {}
    for name, (key, measure, maximum) in _METRIC_GATES.items():
        limits = {p: g[name] for p, g in gates_by_pack.items() if g.get(name) is not None}
        if not limits:
            continue
        values = [{**c, "wilson_low": (c.get("wilson") or [None])[0]} for c in cases if c["pack"] in limits]
        thresholds = set(limits.values())
        passed = True
        for limit in thresholds:
            actual = measure(_known([c for c in values if limits[c["pack"]] == limit], key))
            passed &= actual is None or (actual <= limit + 1e-12 if maximum else actual + 1e-12 >= limit)
        entry = {"threshold": next(iter(thresholds)) if len(thresholds) == 1 else "per pack",
                 "actual": measure(_known(values, key)), "passed": bool(passed)}
        if key != "wilson_low":
            entry["unknown"] = sum(1 for c in values if c["status"] in ("pass", "fail")
                                   and not isinstance(c.get(key), (int, float)))
        out[name] = entry
    return out


def wilson(passes: int, n: int, z: float = Z95) -> list[float]:
    """The Wilson score interval of a pass rate: [low, high]."""
    if n <= 0:
        return [0.0, 1.0]
    p = passes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return [round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)]


def repeat_statistics(passes: int, n: int) -> dict:
    """One case run *n* times, *passes* of them passing: its Wilson 95% interval, the unbiased
    pass@k (some of k runs passes) and pass^k (all k pass) for k = 1..n, and the flaky label."""
    ways = [math.comb(n, k) for k in range(n + 1)]
    out: dict = {
        "wilson": wilson(passes, n),
        "pass_at_k": {str(k): round(1 - math.comb(n - passes, k) / ways[k], 4) for k in range(1, n + 1)},
        "pass_hat_k": {str(k): round(math.comb(passes, k) / ways[k], 4) for k in range(1, n + 1)},
    }
    if 0 < passes < n:
        out["labels"] = ["flaky"]
    return out


def repeat_summary(cases: Iterable[Mapping], n: int) -> dict:
    """pass^N (the share of cases that passed all N runs) and the mean per-case pass rate."""
    rated = [c for c in cases if "case_pass_rate" in c and not c.get("draft")]
    if not rated:
        return {"n": n, "cases": 0, "pass_all": None, "mean_case_pass_rate": None}
    all_passed = sum(1 for c in rated if c["passes"] == c["repeat"])
    return {"n": n, "cases": len(rated), "pass_all": round(all_passed / len(rated), 4),
            "mean_case_pass_rate": round(sum(c["case_pass_rate"] for c in rated) / len(rated), 4)}


def evaluate_gates(cases: Iterable[Mapping], gates_by_pack: Mapping[str, Mapping]) -> dict:
    """pass_rate = pass / (pass + fail + error) and non-allowlisted non-reproducible cases,
    each pack against its own thresholds; drafts were left out by the caller."""
    per_pack: dict[str, list[Mapping]] = {p: [] for p in gates_by_pack}
    for c in cases:
        per_pack.setdefault(c["pack"], []).append(c)
    rate_ok = nr_ok = True
    total_pass = total_denom = total_nr = 0
    for pack, rs in per_pack.items():
        gates = {**DEFAULT_GATES, **gates_by_pack.get(pack, {})}
        denom = sum(1 for r in rs if r["status"] in ("pass", "fail", "error"))
        passed = sum(1 for r in rs if r["status"] == "pass")
        nr = sum(1 for r in rs if r["status"] == "non_reproducible" and not r.get("allowlisted"))
        rate_ok &= (passed / denom if denom else 1.0) + 1e-12 >= gates["pass_rate"]
        nr_ok &= nr <= gates["max_non_reproducible"]
        total_pass, total_denom, total_nr = total_pass + passed, total_denom + denom, total_nr + nr
    thresholds = [{**DEFAULT_GATES, **g} for g in gates_by_pack.values()] or [DEFAULT_GATES]

    def one(key: str):
        values = {t[key] for t in thresholds}
        return values.pop() if len(values) == 1 else "per pack"

    return {
        "pass_rate": {"threshold": one("pass_rate"),
                      "actual": _rate(total_pass, total_denom) if total_denom else 1.0,
                      "passed": bool(rate_ok)},
        "max_non_reproducible": {"threshold": one("max_non_reproducible"), "actual": total_nr,
                                 "passed": bool(nr_ok)},
    }
