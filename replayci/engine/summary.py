"""Counts, per-category pass rates and gates, computed from report case entries.

Runs and `replayci merge` share this code, so a merged report of shards has exactly the
summary the full run would have had.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..pack.vocabulary import CATEGORIES

DEFAULT_GATES = {"pass_rate": 1.0, "max_non_reproducible": 0}
STATUSES = ("pass", "fail", "non_reproducible", "skipped", "error")


def _rate(passed: int, denom: int):
    return round(passed / denom, 4) if denom else None


def summarize(cases: list[Mapping], gates_by_pack: Mapping[str, Mapping]) -> dict:
    """The summary of case entries (dicts with status, pack, category, draft, allowlisted)."""
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
        "pass_rate": _rate(passed, denom) if denom else 1.0,
        "by_category": by_category,
        "gates": evaluate_gates(counted, gates_by_pack),
        "gates_by_pack": {k: dict(v) for k, v in gates_by_pack.items()},
    }


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
