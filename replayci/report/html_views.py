"""The HTML report's views of one run: its header, summary, gates, totals, comparison and
baseline, the case table's columns and filters (plain values for the template)."""
from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any

from ..engine.summary import percentile, run_tally
from .comparison import TEST_WORDS, verdict_sentences
from .text import count as _fmt_int
from .text import is_number as _is_number
from .text import location, sampling_text
from .text import ms as _fmt_ms
from .text import rate as _fmt_rate
from .text import usd as _fmt_usd

STATUSES = ("pass", "fail", "error", "non_reproducible", "skipped")
STATUS_CODES = {"pass": "p", "fail": "f", "error": "e", "non_reproducible": "n", "skipped": "s"}
MAX_CHANGED_ROWS = 300  # rows of a server-rendered table of changes; the case table filters all
# A failing run opens on its failing cases, each with up to three reasons.
FAILURES_SHOWN, REASONS_SHOWN = 50, 3


def started_at(report: dict) -> datetime.datetime | None:
    value = (report.get("run") or {}).get("started_at")
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment


def run_view(report: dict) -> dict:
    run = report.get("run") or {}
    moment = started_at(report)
    started = moment.strftime("%Y-%m-%d %H:%M:%S %Z").strip() if moment else "unknown time"
    bits = [str(run[k]) for k in ("provider", "model") if run.get(k)]
    if isinstance(run.get("targets"), list):
        bits.append(f"{len(run['targets'])} targets")
    return {
        "started_at": started,
        "label": f"{started} · {' · '.join(bits)}" if bits else started,
        "provider": run.get("provider"),
        "model": run.get("model"),
        "packs": [str(p) for p in run.get("packs") or ()],
        "duration": _fmt_ms(run.get("duration_ms")),
        "version": run.get("replayci_version"),
        "shard": run.get("shard"),
        "merged_from": run.get("merged_from"),
    }


def title(report: dict) -> str:
    summary = summary_view(report)
    mark = "gates met" if summary["gates_ok"] else "gate failed"
    return f"replayci · {summary['counts']['pass']}/{summary['total']} passed · {mark}"


def _counts(cases: list[dict]) -> dict:
    counts = {s: 0 for s in STATUSES}
    for case in cases:
        status = case.get("status")
        if status in counts:
            counts[status] += 1
    return counts


def rate_of(cases: Iterable[dict]) -> float | None:
    """The pass rate over the runs of the cases that count (drafts never do)."""
    return run_tally(c for c in cases if not c.get("draft") and c.get("status") in STATUSES)["pass_rate"]


def summary_view(report: dict) -> dict:
    """Counts, pass rate, gates and totals, from the summary (computed from cases if absent)."""
    summary = report.get("summary") or {}
    cases = report.get("cases") or []
    computed = _counts(cases)
    counts = {s: summary.get(s, computed[s]) for s in STATUSES}
    gates = [
        _gate_view(name, gate)
        for name, gate in (summary.get("gates") or {}).items()
        if isinstance(gate, dict)
    ]
    by_pack = {
        pack: [_gate_view(n, g) for n, g in (pg or {}).items() if isinstance(g, dict)]
        for pack, pg in (summary.get("gates_by_pack") or {}).items()
    }
    by_pack.update({
        f"target {target}": [_gate_view(n, g) for n, g in (tg or {}).items() if isinstance(g, dict)]
        for target, tg in (summary.get("gates_by_target") or {}).items()
    })
    pass_rate = summary.get("pass_rate", rate_of(cases))
    return {
        "total": summary.get("total", len(cases)),
        "counts": counts,
        "allowlisted": summary.get("allowlisted") or 0,
        "draft": summary.get("draft") or 0,
        "pass_rate": pass_rate,
        "pass_rate_text": _fmt_rate(pass_rate),
        "gates": gates,
        "gates_by_pack": {p: g for p, g in by_pack.items() if g},
        "gates_ok": all(g["passed"] for g in gates)
        and all(g["passed"] for pg in by_pack.values() for g in pg),
        "totals": totals_view(summary.get("totals"), cases),
        "warnings": [str(w) for w in report.get("warnings") or ()],
        "repeat": summary.get("repeat") if isinstance(summary.get("repeat"), dict) else None,
        "runs_text": _runs_text(summary.get("runs")),
        "sampling_text": sampling_text(summary["sampling"]) if isinstance(summary.get("sampling"), dict) else None,
        "quarantined": [{"target": None, **q} for q in summary.get("quarantined") or () if isinstance(q, dict)]
        [:MAX_CHANGED_ROWS],
    }


def _runs_text(runs) -> str | None:
    """What the pass rate counts: '7/10 runs'."""
    if not isinstance(runs, dict) or not _is_number(runs.get("runs")) or not _is_number(runs.get("passes")):
        return None
    return f"{_fmt_int(runs['passes'])}/{_fmt_int(runs['runs'])} runs"


_GATE_UNITS = {
    "pass_rate": "rate",
    "min_pass_rate_lower_bound": "rate",
    "max_cost_usd": "usd",
    "p95_latency_ms": "ms",
}


def _gate_view(name: str, gate: dict) -> dict:
    unit = _GATE_UNITS.get(name)
    fmt = {"rate": _fmt_rate, "usd": _fmt_usd, "ms": _fmt_ms}.get(unit or "", _fmt_plain)
    return {
        "name": name,
        "threshold": fmt(gate.get("threshold")),
        "actual": fmt(gate.get("actual")),
        "passed": bool(gate.get("passed")),
    }


def case_tokens(case: dict) -> float | None:
    """The case's tokens, or input + output from its response's usage."""
    tokens = case.get("tokens")
    if _is_number(tokens):
        return tokens
    for key in ("response", "output"):
        usage = (case.get(key) or {}).get("usage") if isinstance(case.get(key), dict) else None
        if isinstance(usage, dict):
            parts = [usage.get(k) for k in ("input_tokens", "output_tokens")]
            if any(_is_number(p) for p in parts):
                return sum(p for p in parts if _is_number(p))
    return None


def totals_view(totals: Any, cases: list[dict]) -> dict:
    """Tokens, cost and p95 latency: the summary's totals, else computed from the cases."""
    totals = totals if isinstance(totals, dict) else {}
    tokens = totals.get("tokens")
    if not _is_number(tokens):
        per_case = [t for t in map(case_tokens, cases) if t is not None]
        tokens = sum(per_case) if per_case else None
    cost = totals.get("cost_usd")
    if not _is_number(cost):
        costs = [c["cost_usd"] for c in cases if _is_number(c.get("cost_usd"))]
        cost = sum(costs) if costs else None
    p95 = totals.get("p95_latency_ms")
    if not _is_number(p95):
        p95 = percentile([c["latency_ms"] for c in cases if _is_number(c.get("latency_ms"))], 95)
    out = {"tokens": tokens, "cost_usd": cost, "p95_latency_ms": p95}
    out["text"] = {
        "tokens": _fmt_int(tokens),
        "cost_usd": _fmt_usd(cost),
        "p95_latency_ms": _fmt_ms(p95),
    }
    return out


def rate_colour(rate: Any) -> str:
    """A cell's background for a pass rate: red at 0, amber at 0.5, green at 1 (grey: none)."""
    if not _is_number(rate):
        return "background-color: var(--soft)"
    return f"background-color: hsl({round(120 * max(0.0, min(1.0, rate)))}, 70%, 80%); color: #1f2328"


def comparison_view(report: dict) -> dict | None:
    """The model matrix of a report that compares targets: a row per target, a cell per
    contract and target (coloured by its pass rate), the significant differences."""
    targets = report.get("targets")
    if not isinstance(targets, dict) or not targets.get("labels"):
        return None
    labels = [str(t) for t in targets["labels"]]
    gates = (report.get("summary") or {}).get("gates_by_target") or {}
    rows = []
    for label in labels:
        t = (targets.get("targets") or {}).get(label) or {}
        low_high = t.get("wilson") or (None, None)
        failed = [n for n, g in (gates.get(label) or {}).items() if isinstance(g, dict) and not g.get("passed")]
        rows.append({"label": label, "rate": _fmt_rate(t.get("pass_rate")), "style": rate_colour(t.get("pass_rate")),
                     "wilson": f"{_fmt_rate(low_high[0])} – {_fmt_rate(low_high[1])}",
                     "runs": f"{t.get('passes', 0)}/{t.get('runs', 0)}", "tokens": _fmt_int(t.get("tokens")),
                     "cost": _fmt_usd(t.get("cost_usd")), "p50": _fmt_ms(t.get("p50_latency_ms")),
                     "p95": _fmt_ms(t.get("p95_latency_ms")), "failed_gates": failed})
    matrix = []
    for contract, row in (targets.get("matrix") or {}).items():
        cells = []
        for label in labels:
            cell = row.get(label) if isinstance(row, dict) else None
            rate = (cell or {}).get("pass_rate")
            cells.append({"target": label, "text": _fmt_rate(rate), "style": rate_colour(rate),
                          "runs": f"{(cell or {}).get('passes', 0)}/{(cell or {}).get('runs', 0)} runs passed"})
        matrix.append({"contract": str(contract), "cells": cells})
    significant = [{**e, "rate_a": _fmt_rate(e.get("pass_rate_a")), "rate_b": _fmt_rate(e.get("pass_rate_b")),
                    "p_text": f"{e['p']:.2g}" if _is_number(e.get("p")) else "—",
                    "test_text": TEST_WORDS.get(str(e.get("test") or "fisher"), "Fisher exact")}
                   for e in targets.get("significant") or () if isinstance(e, dict)]
    return {"labels": labels, "rows": rows, "matrix": matrix, "significant": significant,
            "verdicts": verdict_sentences(targets)}


BASELINE_LABELS = ("new_failure", "changed_failure", "regressed", "flaky", "fixed", "still_failing", "new_case",
                   "removed", "unchanged")


def baseline_view(report: dict) -> dict | None:
    """The counts of each baseline label and the cases the baseline had that this run has not."""
    baseline = report.get("baseline")
    if not isinstance(baseline, dict):
        return None
    counts = baseline.get("counts") if isinstance(baseline.get("counts"), dict) else {}
    overall = baseline.get("overall") if isinstance(baseline.get("overall"), dict) else {}
    return {"file": baseline.get("file"), "started_at": baseline.get("started_at"),
            "overall": str(overall["sentence"]) if overall.get("sentence") else None,
            "counts": [{"label": k, "count": counts.get(k, 0)} for k in BASELINE_LABELS],
            "removed": [{"target": None, "baseline_status": None, **r} for r in baseline.get("removed") or ()
                        if isinstance(r, dict)][:MAX_CHANGED_ROWS]}


def columns(cases: list[dict]) -> dict:
    """Which optional columns have data in this report."""
    return {
        "tokens": any(case_tokens(c) is not None for c in cases),
        "cost": any(_is_number(c.get("cost_usd")) for c in cases),
        "latency": any(_is_number(c.get("latency_ms")) for c in cases),
        "category": any(c.get("category") for c in cases),
    }


def _option_counts(values: Iterable[str]) -> list[dict]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return [{"value": v, "count": n} for v, n in sorted(counts.items())]


def filters_view(cases: list[dict], history: dict | None) -> dict:
    counts = _counts(cases)
    tags: list[str] = []
    for case in cases:
        for key in ("tags", "labels"):
            if isinstance(case.get(key), list):
                tags.extend(str(t) for t in case[key])
    return {
        "statuses": [{"value": s, "count": counts[s]} for s in STATUSES if counts[s]],
        "classifications": _option_counts(str(c.get("classification") or "(none)") for c in cases),
        "packs": _option_counts(str(c.get("pack")) for c in cases),
        "categories": _option_counts(str(c.get("category")) for c in cases if c.get("category")),
        "tags": _option_counts(tags),
        "history": history is not None,
        "targets": _option_counts(str(c["target"]) for c in cases if c.get("target")),
        "baseline": _option_counts(str(c["baseline"]) for c in cases if c.get("baseline")),
    }


def _fmt_plain(value: Any) -> str:
    return "—" if value is None else str(value)


def failures_view(cases: list[dict]) -> dict:
    """The cases that fail the run (as the annotations count them), each with why and where."""
    failing = [c for c in cases if not c.get("draft") and (
        c.get("status") in ("fail", "error") or (c.get("status") == "non_reproducible" and not c.get("allowlisted")))]
    shown = []
    for c in failing[:FAILURES_SHOWN]:
        failures = c.get("failures") or []
        reasons = [f.get("message") or f.get("kind") or "" for f in failures[:REASONS_SHOWN]]
        target = c.get("target")
        shown.append({"id": f"{c.get('pack')}/{c.get('contract')}/{c.get('case')}" + (f" @ {target}" if target else ""),
                      "status": c.get("status"), "where": location(c),
                      "classification": c.get("classification") or c.get("reason") or "",
                      "reasons": reasons or [c.get("message") or c.get("reason") or c.get("status")],
                      "more": max(0, len(failures) - REASONS_SHOWN)})
    return {"cases": shown, "total": len(failing)}
