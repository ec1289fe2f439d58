"""Comparing runs: several targets (provider and model) in one run, and a run against a
baseline report. Both work on report case entries (dicts), so a report read back compares
as the run that wrote it."""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from .summary import percentile, summarize, wilson

ALPHA = 0.05  # a difference is significant below this two-sided p-value
_COUNTED = ("pass", "fail", "error")
# Fisher's test sums the tables as likely as the observed one or less; this relative
# tolerance keeps a table of equal probability from being lost to rounding (as R does).
_RELATIVE_TOLERANCE = 1 + 1e-7


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


def runs_of(case: Mapping) -> tuple[int, int]:
    """(passes, runs) of a case entry: every repeat under --repeat, else its one run (a
    skipped or non-reproducible case of one run counts none)."""
    repeat, passes = case.get("repeat"), case.get("passes")
    if _whole(repeat) and _whole(passes) and 0 <= passes <= repeat and repeat > 0:
        return passes, repeat
    status = case.get("status")
    return (1 if status == "pass" else 0), (1 if status in _COUNTED else 0)


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _rate(passes: int, runs: int) -> float | None:
    return round(passes / runs, 4) if runs else None


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _sum(values: Iterable) -> float | None:
    known = [v for v in values if _number(v)]
    return round(sum(known), 10) if known else None


def target_stats(cases: list[Mapping]) -> dict:
    """One target's cases: runs, passes, pass rate with its Wilson 95% interval, cost, tokens
    and p50/p95 latency (drafts left out of the rate, as the gates leave them out)."""
    counted = [c for c in cases if not c.get("draft")]
    passes = runs = 0
    for c in counted:
        p, n = runs_of(c)
        passes, runs = passes + p, runs + n
    latencies = [c["latency_ms"] for c in cases if _number(c.get("latency_ms"))]
    return {"cases": len(cases), "runs": runs, "passes": passes, "pass_rate": _rate(passes, runs),
            "wilson": wilson(passes, runs) if runs else None,
            "cost_usd": _sum(c.get("cost_usd") for c in cases), "tokens": _sum(c.get("tokens") for c in cases),
            "p50_latency_ms": percentile(latencies, 50), "p95_latency_ms": percentile(latencies, 95)}


def compare_targets(cases: list[Mapping], labels: list[str]) -> dict:
    """The comparison of a run's *labels* (its targets, in order) over its case entries (each
    with its `target`): per target, per contract x target, and for each pair of targets the
    contracts whose pass rates differ significantly (two-sided Fisher exact test, p < 0.05)."""
    by_target: dict[str, list[Mapping]] = {t: [] for t in labels}
    cells: dict[str, dict[str, list[int]]] = {}
    for c in cases:
        target = c.get("target")
        if target not in by_target:
            continue
        by_target[target].append(c)
        if c.get("draft"):
            continue
        p, n = runs_of(c)
        slot = cells.setdefault(f"{c['pack']}/{c['contract']}", {}).setdefault(target, [0, 0])
        slot[0] += p
        slot[1] += n
    matrix = {contract: {t: {"passes": row[t][0], "runs": row[t][1], "pass_rate": _rate(*row[t])}
                         for t in labels if t in row}
              for contract, row in cells.items()}
    return {"targets": {t: target_stats(by_target[t]) for t in labels},
            "matrix": matrix,
            "significant": significant_differences(matrix, labels)}


def gates_per_target(summary: dict, cases: list[Mapping], gates_by_pack: Mapping[str, Mapping],
                     labels: list[str]) -> None:
    """Each target's own gates (`gates_by_target`); a gate of the run fails when one target
    misses it, and names it (`failed_targets`)."""
    by_target = {t: summarize([c for c in cases if c.get("target") == t], gates_by_pack)["gates"] for t in labels}
    for name, gate in summary["gates"].items():
        failed = [t for t, own in by_target.items() if name in own and not own[name]["passed"]]
        gate["passed"] = gate["passed"] and not failed
        gate["failed_targets"] = failed
    summary["gates_by_target"] = by_target


def significant_differences(matrix: Mapping[str, Mapping[str, Mapping]], labels: list[str]) -> list[dict]:
    """For each pair of targets (in the run's order), the contracts whose pass rates differ
    with p < 0.05, with both rates and p."""
    out = []
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            for contract, row in matrix.items():
                if a not in row or b not in row or not row[a]["runs"] or not row[b]["runs"]:
                    continue
                pa, na, pb, nb = row[a]["passes"], row[a]["runs"], row[b]["passes"], row[b]["runs"]
                p = fisher_exact(pa, na - pa, pb, nb - pb)
                if p < ALPHA:
                    out.append({"contract": contract, "a": a, "b": b, "pass_rate_a": _rate(pa, na),
                                "pass_rate_b": _rate(pb, nb), "runs_a": na, "runs_b": nb, "p": round(p, 6)})
    return out


# -- a run against a baseline report --------------------------------------------------------

LABELS = ("new_failure", "changed_failure", "regressed", "flaky", "fixed", "still_failing", "new_case",
          "removed", "unchanged")
GATED = ("new_failure", "changed_failure", "regressed")  # what the baseline gate fails the run for
_FAILING = ("fail", "error")


def case_key(case: Mapping) -> tuple:
    """A case across reports: pack, contract, case and target (text, whatever a file holds)."""
    return tuple(v if isinstance(v, str) else None for v in
                 (case.get("pack"), case.get("contract"), case.get("case"), case.get("target")))


def _changed(now: Mapping, then: Mapping) -> bool:
    return (now.get("fingerprint") != then.get("fingerprint")
            or now.get("classification") != then.get("classification"))


def baseline_label(now: Mapping, then: Mapping | None) -> dict:
    """A case's label against its entry in the baseline (None: the baseline lacks it); under
    --repeat a lower pass rate is `regressed` when the drop is significant, else `flaky`."""
    if then is None:  # absent from the baseline counts as a pass there
        return {"label": "new_failure" if now.get("status") in _FAILING else "new_case", "new_case": True}
    out: dict = {}
    if "repeat" in now:
        p_now, n_now = runs_of(now)
        p_then, n_then = runs_of(then)
        if n_now and n_then and p_now / n_now < p_then / n_then:
            p = fisher_exact(p_then, n_then - p_then, p_now, n_now - p_now)
            return {"label": "regressed" if p < ALPHA else "flaky", "baseline_p": round(p, 6),
                    "baseline_pass_rate": _rate(p_then, n_then)}
    fails_now, failed = now.get("status") in _FAILING, then.get("status") in _FAILING
    if fails_now and not failed:
        out["label"] = "new_failure"
    elif failed and now.get("status") == "pass":
        out["label"] = "fixed"
    elif fails_now and failed:
        out["label"] = "changed_failure" if _changed(now, then) else "still_failing"
    else:
        out["label"] = "unchanged"
    if out["label"] != "unchanged":
        out["baseline_status"] = then.get("status")
    if out["label"] == "changed_failure":
        out["baseline_fingerprint"] = then.get("fingerprint")
        out["baseline_classification"] = then.get("classification")
    return out


def compare_baseline(cases: list[Mapping], baseline: Mapping, *, complete: bool) -> tuple[list[dict], dict]:
    """Each case's label against *baseline* (a JSON report; a case labelled already keeps its
    `baseline` label), and the comparison's record: the counts of each label, and the cases
    the baseline has that this run does not (only when the run selected every case,
    *complete*: a filtered run leaves cases out on purpose)."""
    then = {case_key(c): c for c in baseline.get("cases") or () if isinstance(c, dict)}
    labels = [{"label": c["baseline"]} if c.get("baseline") else baseline_label(c, then.get(case_key(c)))
              for c in cases]
    removed: list[dict] = []
    if complete:
        packs = {c.get("pack") for c in cases}
        seen = {case_key(c) for c in cases}
        removed = [{"pack": c.get("pack"), "contract": c.get("contract"), "case": c.get("case"),
                    **({"target": c["target"]} if c.get("target") else {}), "baseline_status": c.get("status")}
                   for key, c in then.items() if key not in seen and c.get("pack") in packs]
    counts = {name: 0 for name in LABELS}
    for c, entry in zip(cases, labels, strict=True):
        counts[entry["label"]] += 1
        if entry["label"] != "new_case" and case_key(c) not in then:  # a new case that fails: both
            counts["new_case"] += 1
    counts["removed"] = len(removed)
    run = baseline.get("run") if isinstance(baseline.get("run"), dict) else {}
    record = {"started_at": run.get("started_at"), "provider": run.get("provider"), "model": run.get("model"),
              "counts": counts, "removed": removed}
    return labels, record


def baseline_gate(cases: list[Mapping], gated_packs: set | None) -> dict:
    """The gate `baseline: no_new_failures`: new, changed and regressed failures (drafts never
    count) in the packs that set it (None: every pack, --gate-baseline)."""
    bad = [c for c in cases if not c.get("draft") and c.get("baseline") in GATED
           and (gated_packs is None or c.get("pack") in gated_packs)]
    return {"threshold": "no_new_failures", "actual": len(bad), "passed": not bad}
