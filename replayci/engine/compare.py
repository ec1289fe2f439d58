"""Comparing runs: several targets (provider and model) in one run, and a run against a
baseline report. Both work on report case entries (dicts), so a report read back compares
as the run that wrote it."""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from .stats import Stratum, fisher_exact, paired_test
from .summary import case_runs, percentile, summarize, wilson

ALPHA = 0.05  # a difference is significant below this two-sided p-value


def runs_of(case: Mapping) -> tuple[int, int]:
    """(passes, counted runs) of a case entry (errors count as failures; non-reproducible and
    skipped runs count none)."""
    return case_runs(case)[:2]


def _p(p: float) -> float:
    """A p-value as reported: six decimals, or four significant digits when smaller."""
    return round(p, 6) if p >= 1e-4 else float(f"{p:.4g}")


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
    with its `target`): per target, per contract x target, for each pair of targets the
    contracts whose pass rates differ significantly (p < 0.05; paired case by case when both
    ran the same cases), and a verdict per pair in words."""
    by_target: dict[str, list[Mapping]] = {t: [] for t in labels}
    runs: dict[str, dict[str, dict[tuple, tuple[int, int]]]] = {}  # contract -> target -> case -> runs
    for c in cases:
        target = c.get("target")
        if target not in by_target:
            continue
        by_target[target].append(c)
        if not c.get("draft"):
            own = runs.setdefault(f"{c['pack']}/{c['contract']}", {}).setdefault(target, {})
            own[case_key(c)[:3]] = runs_of(c)
    matrix = {contract: {t: _cell(row[t]) for t in labels if t in row} for contract, row in runs.items()}
    significant = significant_differences(matrix, labels, runs)
    return {"targets": {t: target_stats(by_target[t]) for t in labels},
            "matrix": matrix,
            "significant": significant,
            "verdicts": verdicts(runs, labels, significant)}


def _cell(case_runs_: Mapping[tuple, tuple[int, int]]) -> dict:
    passes, n = sum(p for p, _ in case_runs_.values()), sum(k for _, k in case_runs_.values())
    return {"passes": passes, "runs": n, "pass_rate": _rate(passes, n)}


def compare_runs(a: Mapping[tuple, tuple[int, int]], b: Mapping[tuple, tuple[int, int]]) -> tuple[str, float]:
    """(test, p) of two sides' (passes, runs) by case: paired (exact McNemar, or stratified by
    case under repeats) when both counted runs of the same cases, else Fisher on pooled counts."""
    ran_a = {k for k, (_, n) in a.items() if n}
    ran_b = {k for k, (_, n) in b.items() if n}
    if ran_a and ran_a == ran_b:
        return paired_test([Stratum(a[k][0], a[k][1], b[k][0], b[k][1]) for k in sorted(ran_a, key=str)])
    pa, na = sum(p for p, _ in a.values()), sum(n for _, n in a.values())
    pb, nb = sum(p for p, _ in b.values()), sum(n for _, n in b.values())
    return "fisher", fisher_exact(pa, na - pa, pb, nb - pb)


TEST_NAMES = {"mcnemar": "exact McNemar", "stratified": "exact test stratified by case",
              "fisher": "Fisher exact"}


def verdicts(runs: Mapping[str, Mapping[str, Mapping]], labels: list[str], significant: list[dict]) -> list[dict]:
    """For each pair of targets: which passes more of its runs overall, the overall test, and
    in words, with the contracts where the difference is significant."""
    out = []
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            side_a = {(contract, *k): v for contract, row in runs.items() for k, v in row.get(a, {}).items()}
            side_b = {(contract, *k): v for contract, row in runs.items() for k, v in row.get(b, {}).items()}
            pa, na = sum(p for p, _ in side_a.values()), sum(n for _, n in side_a.values())
            pb, nb = sum(p for p, _ in side_b.values()), sum(n for _, n in side_b.values())
            test, p = compare_runs(side_a, side_b) if na and nb else (None, 1.0)
            ra, rb = (pa / na if na else None), (pb / nb if nb else None)
            better = None if ra is None or rb is None or ra == rb else (a if ra > rb else b)
            where = [e for e in significant if e["a"] == a and e["b"] == b]
            out.append({"a": a, "b": b, "passes_a": pa, "runs_a": na, "passes_b": pb, "runs_b": nb,
                        "better": better, "test": test, "p": _p(p),
                        "sentence": verdict_sentence(a, b, (pa, na), (pb, nb), better, where)})
    return out


def verdict_sentence(a: str, b: str, runs_a: tuple[int, int], runs_b: tuple[int, int], better: str | None,
                     where: list[dict]) -> str:
    """"model-a passes more: 20/20 runs against 15/20; significant on forecast, p = 0.008"."""
    if better is None:
        head = f"{a} and {b} pass alike: {runs_a[0]}/{runs_a[1]} runs against {runs_b[0]}/{runs_b[1]}"
    else:
        (w, nw), (l_, nl) = (runs_a, runs_b) if better == a else (runs_b, runs_a)
        head = f"{better} passes more: {w}/{nw} runs against {l_}/{nl}"
    if not where:
        return head + "; no contract differs significantly (p < 0.05)"
    return head + "; significant on " + "; ".join(f"{e['contract']}, p = {e['p']:.2g}" for e in where)


def gates_per_target(summary: dict, cases: list[Mapping], gates_by_pack: Mapping[str, Mapping],
                     labels: list[str]) -> dict:
    """*summary* with each target's own gates (`gates_by_target`); a gate of the run fails when
    one target misses it, and names it (`failed_targets`)."""
    by_target = {t: summarize([c for c in cases if c.get("target") == t], gates_by_pack)["gates"] for t in labels}
    gates = {}
    for name, gate in summary["gates"].items():
        failed = [t for t, own in by_target.items() if name in own and not own[name]["passed"]]
        gates[name] = {**gate, "passed": gate["passed"] and not failed, "failed_targets": failed}
    return {**summary, "gates": gates, "gates_by_target": by_target}


def significant_differences(matrix: Mapping[str, Mapping[str, Mapping]], labels: list[str],
                            runs: Mapping[str, Mapping[str, Mapping]] | None = None) -> list[dict]:
    """For each pair of targets (in the run's order), the contracts whose pass rates differ
    with p < 0.05, with both rates, p and the test (*runs*, each case's runs by contract and
    target: paired case by case where both targets ran the same cases; else Fisher)."""
    out = []
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            for contract, row in matrix.items():
                if a not in row or b not in row or not row[a]["runs"] or not row[b]["runs"]:
                    continue
                pa, na, pb, nb = row[a]["passes"], row[a]["runs"], row[b]["passes"], row[b]["runs"]
                if runs is not None:
                    test, p = compare_runs(runs[contract][a], runs[contract][b])
                else:
                    test, p = "fisher", fisher_exact(pa, na - pa, pb, nb - pb)
                if p < ALPHA:
                    out.append({"contract": contract, "a": a, "b": b, "pass_rate_a": _rate(pa, na),
                                "pass_rate_b": _rate(pb, nb), "runs_a": na, "runs_b": nb, "p": _p(p),
                                "test": test})
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
              "counts": counts, "removed": removed, "overall": baseline_overall(cases, then)}
    return labels, record


def baseline_overall(cases: list[Mapping], then: Mapping[tuple, Mapping]) -> dict | None:
    """This run against the baseline over the cases both ran (drafts left out), paired case by
    case: the runs each passed, the test, p, and in words."""
    now_runs, then_runs = {}, {}
    for c in cases:
        before = then.get(case_key(c))
        if before is None or c.get("draft"):
            continue
        now_runs[case_key(c)], then_runs[case_key(c)] = runs_of(c), runs_of(before)
    pn, nn = sum(p for p, _ in now_runs.values()), sum(n for _, n in now_runs.values())
    pt, nt = sum(p for p, _ in then_runs.values()), sum(n for _, n in then_runs.values())
    if not nn or not nt:
        return None
    test, p = compare_runs(then_runs, now_runs)
    rn, rt = pn / nn, pt / nt
    word = "passes as the baseline did" if rn == rt else "passes more" if rn > rt else "passes fewer"
    sentence = (f"this run {word}: {pn}/{nn} runs against {pt}/{nt} in the baseline, over the cases both ran "
                f"(p = {p:.2g}, {TEST_NAMES[test]})")
    return {"passes": pn, "runs": nn, "baseline_passes": pt, "baseline_runs": nt, "test": test, "p": _p(p),
            "sentence": sentence}


def baseline_gate(cases: list[Mapping], gated_packs: set | None) -> dict:
    """The gate `baseline: no_new_failures`: new, changed and regressed failures (drafts never
    count) in the packs that set it (None: every pack, --gate-baseline)."""
    bad = [c for c in cases if not c.get("draft") and c.get("baseline") in GATED
           and (gated_packs is None or c.get("pack") in gated_packs)]
    return {"threshold": "no_new_failures", "actual": len(bad), "passed": not bad}
