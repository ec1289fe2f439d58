"""Counts, per-category pass rates and gates, computed from report case entries (a report's
dicts, or a run's results, read by key alike).

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
_COUNTED = ("pass", "fail", "error")  # the statuses a pass rate counts


def _rate(passed: int, denom: int):
    return round(passed / denom, 4) if denom else None


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def case_runs(case: Mapping) -> tuple[int, int, int, int]:
    """(passes, counted runs, non-reproducible runs, skipped runs) of a case entry: a repeated
    case counts each of its runs, errors as failures; one run counts by its status."""
    counts = case.get("run_counts")
    if isinstance(counts, Mapping) and all(_whole(counts.get(k, 0)) for k in STATUSES):
        passes = counts.get("pass", 0)
        return (passes, passes + counts.get("fail", 0) + counts.get("error", 0),
                counts.get("non_reproducible", 0), counts.get("skipped", 0))
    repeat, passes = case.get("repeat"), case.get("passes")
    if _whole(repeat) and _whole(passes) and 0 < repeat and passes <= repeat:
        return passes, repeat, 0, 0
    status = case.get("status")
    return (int(status == "pass"), int(status in _COUNTED), int(status == "non_reproducible"),
            int(status == "skipped"))


def run_tally(cases: Iterable[Mapping], runs: Mapping[int, tuple] | None = None) -> dict:
    """The pass rate of *cases* over their runs, with what it counts and what it leaves out
    (*runs*: each case's case_runs by its id, when the caller has them already)."""
    passes = counted = nr = skipped = 0
    for c in cases:
        p, n, r, s = case_runs(c) if runs is None else runs[id(c)]
        passes, counted, nr, skipped = passes + p, counted + n, nr + r, skipped + s
    return {"pass_rate": _rate(passes, counted), "passes": passes, "runs": counted,
            "non_reproducible_runs": nr, "skipped_runs": skipped}


def summarize(cases: list[Mapping], gates_by_pack: Mapping[str, Mapping]) -> dict:
    """The summary of case entries (dicts with status, pack, contract, category, draft, allowlisted)."""
    counts = {s: 0 for s in STATUSES}
    by_category: dict[str, dict] = {}
    runs_by_category: dict[str, list[Mapping]] = {}
    for c in cases:
        counts[c["status"]] += 1
        category = c.get("category") or "uncategorized"
        slot = by_category.setdefault(category, {"pass": 0, "fail": 0, "error": 0, "total": 0})
        runs_by_category.setdefault(category, []).append(c)
        slot["total"] += 1
        if c["status"] in _COUNTED:
            slot[c["status"]] += 1
    runs = {id(c): case_runs(c) for c in cases}  # (read once: three tallies read them)
    for category, slot in by_category.items():
        slot["pass_rate"] = run_tally(runs_by_category[category], runs)["pass_rate"]
    order = {c: i for i, c in enumerate(CATEGORIES)}
    by_category = dict(sorted(by_category.items(), key=lambda kv: (order.get(kv[0], 99), kv[0])))
    counted = [c for c in cases if not c.get("draft")]
    quarantined = [c for c in counted if (gates_by_pack.get(c["pack"]) or {}).get("flaky") == "quarantine"
                   and is_flaky(c)]
    if quarantined:  # listed apart, out of the gates
        apart = {id(c) for c in quarantined}
        counted = [c for c in counted if id(c) not in apart]
    tally = run_tally(counted, runs)
    out = {
        "total": len(cases),
        **counts,
        "allowlisted": sum(1 for c in cases if c.get("allowlisted")),
        "draft": sum(1 for c in cases if c.get("draft")),
        "draft_contracts": len({(c.get("pack"), c.get("contract")) for c in cases if c.get("draft")}),
        "pass_rate": 1.0 if tally["pass_rate"] is None else tally["pass_rate"],
        "runs": {k: v for k, v in tally.items() if k != "pass_rate"},
        "by_category": by_category,
        "gates": {**evaluate_gates(counted, gates_by_pack, runs), **metric_gates(counted, gates_by_pack)},
        "gates_by_pack": {k: dict(v) for k, v in gates_by_pack.items()},
        "totals": totals(cases),
    }
    if quarantined:
        out["quarantined"] = [quarantine_entry(c) for c in quarantined]
    return out


def is_flaky(case: Mapping) -> bool:
    """A repeated case labelled flaky: by --repeat auto's test, or (a fixed --repeat) passing
    some of its runs and failing others."""
    stability = case.get("stability")
    if stability is not None:
        return stability == "flaky"
    return "flaky" in (case.get("labels") or ())


def quarantine_entry(case: Mapping) -> dict:
    """What the report lists of a quarantined case."""
    passes, runs, _, _ = case_runs(case)
    return {"pack": case.get("pack"), "contract": case.get("contract"), "case": case.get("case"),
            **({"target": case["target"]} if case.get("target") else {}), "passes": passes, "runs": runs}


def _read(case: Mapping, key: str):
    """A case's value that a total or a gate measures (`wilson_low`: its interval's low end)."""
    return (case.get("wilson") or [None])[0] if key == "wilson_low" else case.get(key)


def _known(cases: Iterable[Mapping], key: str) -> list:
    values = (_read(c, key) for c in cases) if key == "wilson_low" else (c.get(key) for c in cases)
    return [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]


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
        values = [c for c in cases if c["pack"] in limits]
        thresholds = set(limits.values())
        passed = True
        for limit in thresholds:
            actual = measure(_known([c for c in values if limits[c["pack"]] == limit], key))
            passed &= actual is None or (actual <= limit + 1e-12 if maximum else actual + 1e-12 >= limit)
        entry = {"threshold": next(iter(thresholds)) if len(thresholds) == 1 else "per pack",
                 "actual": measure(_known(values, key)), "passed": bool(passed)}
        if key != "wilson_low":
            entry["unknown"] = sum(1 for c in values if c["status"] in ("pass", "fail")
                                   and not isinstance(_read(c, key), (int, float)))
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


def repeat_summary(cases: Iterable[Mapping], n: int | str) -> dict:
    """pass^N (the share of repeated cases that passed every run) and the pass rate over their
    runs (the run's one pass rate, as the gate reads it)."""
    rated = [c for c in cases if _whole(c.get("repeat")) and c["repeat"] > 0 and not c.get("draft")]
    if not rated:
        return {"n": n, "cases": 0, "pass_all": None, "pass_rate": None}
    all_passed = sum(1 for c in rated if c.get("passes") == c["repeat"])
    return {"n": n, "cases": len(rated), "pass_all": round(all_passed / len(rated), 4),
            "pass_rate": run_tally(rated)["pass_rate"]}


def evaluate_gates(cases: Iterable[Mapping], gates_by_pack: Mapping[str, Mapping],
                   runs: Mapping[int, tuple] | None = None) -> dict:
    """pass_rate = passes / (passes + failures + errors) over the runs, and non-allowlisted non-reproducible cases,
    each pack against its own thresholds; drafts were left out by the caller (*runs*: as run_tally's)."""
    per_pack: dict[str, list[Mapping]] = {p: [] for p in gates_by_pack}
    for c in cases:
        per_pack.setdefault(c["pack"], []).append(c)
    rate_ok = nr_ok = True
    total_pass = total_denom = total_nr = 0
    for pack, rs in per_pack.items():
        gates = {**DEFAULT_GATES, **gates_by_pack.get(pack, {})}
        tally = run_tally(rs, runs)
        denom, passed = tally["runs"], tally["passes"]
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
