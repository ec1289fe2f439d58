"""The HTML report: one self-contained page (no network) built from JSON report dicts.

Everything a model or a fixture wrote is untrusted. The page never puts it into markup
unescaped: the server-side parts are rendered by Jinja with autoescape on, and the cases
travel as JSON inside a ``<script type="application/json">`` block (with ``<``, ``>``, ``&``
and the JavaScript line separators written as ``\\uXXXX``) that the page's script reads and
renders through ``textContent`` only. A Content-Security-Policy pinned to the hash of the
page's one script forbids any other script, any network request and ``innerHTML``-style sinks.
"""

from __future__ import annotations

import base64
import datetime
import functools
import hashlib
import itertools
import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from ..core.files import write_atomic
from ..engine.summary import percentile
from .text import count as _fmt_int
from .text import is_number as _is_number
from .text import ms as _fmt_ms
from .text import rate as _fmt_rate
from .text import usd as _fmt_usd

TEMPLATE = "report.html.j2"
STATUSES = ("pass", "fail", "error", "non_reproducible", "skipped")
STATUS_CODES = {"pass": "p", "fail": "f", "error": "e", "non_reproducible": "n", "skipped": "s"}
# The page shows the first cases while the browser still reads the rest (a big report is
# megabytes of JSON): the first block comes before the script, the others after it.
FIRST_CHUNK = 300
CHUNK = 2000
_MAX_BARS = 40  # a chart with more rows shows the lowest pass rates and says how many it left off
_MAX_CHANGED_ROWS = 300  # rows of the server-rendered "changed" table; the case table filters all
_JSON_ESCAPES = (
    ("&", "\\u0026"),
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def render_html(reports: list[dict]) -> str:
    """One self-contained HTML page for one report, or a history for several (any order)."""
    if not reports:
        raise ValueError("render_html needs at least one report")
    runs = order_runs(reports)
    latest = runs[-1]
    cases = list(latest.get("cases") or [])
    history = build_history(runs) if len(runs) > 1 else None
    payload = {
        "total": len(cases),
        "cases": cases[:FIRST_CHUNK],
        "columns": _columns(cases),
        "history": _history_payload(history, cases),
    }
    chunks = [
        Markup(script_json(cases[k : k + CHUNK])) for k in range(FIRST_CHUNK, len(cases), CHUNK)
    ]
    context = {
        "title": _title(latest),
        "run": _run_view(latest),
        "summary": summary_view(latest),
        "charts": charts_view(latest),
        "filters": _filters_view(cases, history),
        "columns": payload["columns"],
        "history": history,
        "comparison": comparison_view(latest),
        "baseline": baseline_view(latest),
        "data_json": Markup(script_json(payload)),
        "case_chunks": chunks,
    }
    return _environment().get_template(TEMPLATE).render(**context)


def write_report(report: dict, path: str | os.PathLike[str]) -> None:
    """One run's page (the report writers' signature)."""
    write_html([report], path)


def write_html(reports: list[dict], path: str | os.PathLike[str]) -> None:
    """Render and write atomically."""
    write_atomic(os.fspath(path), render_html(reports))


def script_json(value: Any) -> str:
    """JSON that is safe inside a <script> element: no `<`, `>`, `&`, U+2028 or U+2029."""
    options = {"ensure_ascii": False, "separators": (",", ":"), "default": str}
    try:
        text = json.dumps(value, allow_nan=False, **options)
    except ValueError:  # NaN or infinity (json.load accepts them; JSON.parse does not)
        text = json.dumps(_finite(value), **options)
    for raw, escaped in _JSON_ESCAPES:
        text = text.replace(raw, escaped)
    return text


def _finite(value: Any) -> Any:
    """The value with NaN and infinities as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


# -- ordering and history ---------------------------------------------------------------


def _started_at(report: dict) -> datetime.datetime | None:
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


def order_runs(reports: Iterable[dict]) -> list[dict]:
    """Reports in time order by `run.started_at`; reports without one keep their place last."""
    indexed = list(enumerate(reports))
    far = datetime.datetime.max.replace(tzinfo=datetime.timezone.utc)
    return [r for _, r in sorted(indexed, key=lambda p: (_started_at(p[1]) or far, p[0]))]


def case_id(case: dict) -> str:
    """The case's id across runs (a comparison's case once per target)."""
    target = case.get("target")
    return f"{case.get('pack')}/{case.get('contract')}/{case.get('case')}" + (f"@{target}" if target else "")


def build_history(runs: list[dict]) -> dict:
    """Pass rate per run, and the cases whose status changed between consecutive runs.

    A case absent from a run has no status there; changes are counted between the runs it
    is in. A case is *flaky* when its status changed more than once (it went back and forth).
    """
    statuses: dict[str, list[str | None]] = {}
    for index, report in enumerate(runs):
        for case in report.get("cases") or ():
            statuses.setdefault(case_id(case), [None] * len(runs))[index] = case.get("status")
    changed = []
    for cid, row in statuses.items():
        present = [s for s in row if s is not None]
        flips = sum(1 for a, b in itertools.pairwise(present) if a != b)
        if flips:
            changed.append(
                {"id": cid, "statuses": row, "flips": flips, "kind": _change_kind(present, flips)}
            )
    changed.sort(key=lambda c: (_KIND_ORDER[c["kind"]], c["id"]))
    return {
        "kind_by_id": {c["id"]: c["kind"] for c in changed},
        "runs": [_history_run(i, r) for i, r in enumerate(runs)],
        "chart": _history_chart(runs),
        "changed": changed[:_MAX_CHANGED_ROWS],
        "changed_total": len(changed),
        "kinds": {k: sum(1 for c in changed if c["kind"] == k) for k in _KIND_ORDER},
        "statuses": statuses,
    }


_KIND_ORDER = {"regressed": 0, "flaky": 1, "fixed": 2, "changed": 3}


def _change_kind(present: list[str], flips: int) -> str:
    if flips > 1:
        return "flaky"
    if present[-1] == "pass":
        return "fixed"
    if present[0] == "pass":
        return "regressed"
    return "changed"


def _history_run(index: int, report: dict) -> dict:
    summary = summary_view(report)
    run = _run_view(report)
    return {
        "index": index + 1,
        "started_at": run["started_at"],
        "label": run["label"],
        "pass_rate": summary["pass_rate"],
        "counts": summary["counts"],
        "gates_ok": summary["gates_ok"],
        "total": summary["total"],
    }


def _history_payload(history: dict | None, cases: list[dict]) -> dict | None:
    """Per case of the latest run: its status code in every run and its change kind."""
    if history is None:
        return None
    kinds = history["kind_by_id"]
    codes, flags = [], []
    for case in cases:
        cid = case_id(case)
        codes.append(
            "".join(STATUS_CODES.get(s or "", "-") for s in history["statuses"].get(cid, ()))
        )
        flags.append(kinds.get(cid, ""))
    runs = [{"label": r["label"], "started_at": r["started_at"]} for r in history["runs"]]
    return {"runs": runs, "codes": codes, "flags": flags}


# -- the summary ------------------------------------------------------------------------


def _run_view(report: dict) -> dict:
    run = report.get("run") or {}
    moment = _started_at(report)
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


def _title(report: dict) -> str:
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
    """pass / (pass + fail + error) over the cases that count (drafts never do)."""
    passed = counted = 0
    for case in cases:
        if case.get("draft") or case.get("status") not in ("pass", "fail", "error"):
            continue
        counted += 1
        passed += case.get("status") == "pass"
    return passed / counted if counted else None


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
    }


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


# -- comparisons ------------------------------------------------------------------------


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
                    "p_text": f"{e['p']:.2g}" if _is_number(e.get("p")) else "—"}
                   for e in targets.get("significant") or () if isinstance(e, dict)]
    return {"labels": labels, "rows": rows, "matrix": matrix, "significant": significant}


BASELINE_LABELS = ("new_failure", "changed_failure", "regressed", "flaky", "fixed", "still_failing", "new_case",
                   "removed", "unchanged")


def baseline_view(report: dict) -> dict | None:
    """The counts of each baseline label and the cases the baseline had that this run has not."""
    baseline = report.get("baseline")
    if not isinstance(baseline, dict):
        return None
    counts = baseline.get("counts") if isinstance(baseline.get("counts"), dict) else {}
    return {"file": baseline.get("file"), "started_at": baseline.get("started_at"),
            "counts": [{"label": k, "count": counts.get(k, 0)} for k in BASELINE_LABELS],
            "removed": [{"target": None, "baseline_status": None, **r} for r in baseline.get("removed") or ()
                        if isinstance(r, dict)][:_MAX_CHANGED_ROWS]}


# -- charts -----------------------------------------------------------------------------


def charts_view(report: dict) -> list[dict]:
    """The charts this report has data for: pass rate by category and pack, tokens, cost,
    latency."""
    cases = report.get("cases") or []
    gate = ((report.get("summary") or {}).get("gates") or {}).get("pass_rate") or {}
    threshold = gate.get("threshold") if _is_number(gate.get("threshold")) else 1.0
    by_pack: dict[str, list[dict]] = {}
    for case in cases:
        by_pack.setdefault(str(case.get("pack")), []).append(case)
    charts = [
        _rate_chart("Pass rate by category", _category_rows(report), threshold),
        _rate_chart(
            "Pass rate by pack", [(p, rate_of(cs), len(cs)) for p, cs in by_pack.items()], threshold
        ),
    ]
    for title, key, fmt in (
        ("Tokens by pack", "tokens", _fmt_int),
        ("Cost by pack (USD)", "cost_usd", _fmt_usd),
    ):
        rows = _sum_rows(by_pack, key)
        if rows:
            charts.append(_amount_chart(title, rows, fmt))
    latency = [c["latency_ms"] for c in cases if _is_number(c.get("latency_ms"))]
    if latency:
        charts.append(histogram_chart("Latency per case", latency))
    return [c for c in charts if c["rows"] or c.get("bins")]


def _category_rows(report: dict) -> list[tuple[str, float | None, int]]:
    by_category = (report.get("summary") or {}).get("by_category")
    if isinstance(by_category, dict) and by_category:
        return [
            (str(cat), slot.get("pass_rate"), slot.get("total") or 0)
            for cat, slot in by_category.items()
            if isinstance(slot, dict)
        ]
    groups: dict[str, list[dict]] = {}
    for case in report.get("cases") or ():
        groups.setdefault(str(case.get("category") or "uncategorized"), []).append(case)
    return [(cat, rate_of(cs), len(cs)) for cat, cs in groups.items()]


def _rate_chart(title: str, rows: list[tuple[str, float | None, int]], threshold: float) -> dict:
    left_off = 0
    if len(rows) > _MAX_BARS:
        left_off = len(rows) - _MAX_BARS
        rows = sorted(rows, key=lambda r: (r[1] is None, r[1] if r[1] is not None else 0))[
            :_MAX_BARS
        ]
    bars = [
        {
            "label": label,
            "value": rate or 0.0,
            "text": f"{_fmt_rate(rate)} of {total}",
            "cls": "none" if rate is None else ("ok" if rate >= threshold else "bad"),
        }
        for label, rate, total in rows
    ]
    return {
        "kind": "bars",
        "title": title,
        "rows": bars,
        "left_off": left_off,
        "note": f"{left_off} more not shown (lowest pass rates first)" if left_off else "",
    }


def _sum_rows(by_pack: dict[str, list[dict]], key: str) -> list[tuple[str, float]]:
    rows = []
    for pack, cases in by_pack.items():
        values = [case_tokens(c) if key == "tokens" else c.get(key) for c in cases]
        values = [v for v in values if _is_number(v)]
        if values:
            rows.append((pack, float(sum(values))))
    return rows


def _amount_chart(title: str, rows: list[tuple[str, float]], fmt) -> dict:
    left_off = max(0, len(rows) - _MAX_BARS)
    if left_off:
        rows = sorted(rows, key=lambda r: -r[1])[:_MAX_BARS]
    top = max((v for _, v in rows), default=0) or 1
    bars = [
        {"label": label, "value": value / top, "text": fmt(value), "cls": "amount"}
        for label, value in rows
    ]
    return {
        "kind": "bars",
        "title": title,
        "rows": bars,
        "left_off": left_off,
        "note": f"{left_off} more not shown (largest first)" if left_off else "",
    }


def histogram_chart(title: str, values: list[float], bins: int = 16) -> dict:
    """A histogram up to the 99th percentile; slower cases fall in the last bin."""
    ordered = sorted(values)
    top = percentile(ordered, 99) or ordered[-1] or 1
    width = top / bins if top > 0 else 1
    counts = [0] * bins
    for value in ordered:
        counts[min(bins - 1, max(0, int(value / width)))] += 1
    peak = max(counts) or 1
    cells = [
        {
            "count": n,
            "height": n / peak,
            "label": f"{_fmt_ms(i * width)}–{_fmt_ms((i + 1) * width)}"
            + (" and slower" if i == bins - 1 else ""),
        }
        for i, n in enumerate(counts)
    ]
    stats = (
        f"p50 {_fmt_ms(percentile(ordered, 50))} · p95 {_fmt_ms(percentile(ordered, 95))}"
        f" · max {_fmt_ms(ordered[-1])} · {len(ordered)} cases"
    )
    return {
        "kind": "histogram",
        "title": title,
        "rows": [],
        "bins": cells,
        "note": stats,
        "axis": [_fmt_ms(0), _fmt_ms(top / 2), _fmt_ms(top)],
    }


def _history_chart(runs: list[dict]) -> dict:
    points = []
    for index, report in enumerate(runs):
        rate = summary_view(report)["pass_rate"]
        points.append(
            {
                "index": index + 1,
                "rate": rate,
                "text": _fmt_rate(rate),
                "label": _run_view(report)["label"],
            }
        )
    n = len(points)
    for p in points:
        p["x"] = 50 + (p["index"] - 1) * (560 / max(1, n - 1)) if n > 1 else 330
        p["y"] = None if p["rate"] is None else 20 + (1 - p["rate"]) * 160
    drawn = [p for p in points if p["y"] is not None]
    path = " ".join(
        f"{'M' if i == 0 else 'L'}{p['x']:.1f},{p['y']:.1f}" for i, p in enumerate(drawn)
    )
    return {"points": points, "path": path, "label_every": max(1, math.ceil(n / 12))}


# -- the case table ---------------------------------------------------------------------


def _columns(cases: list[dict]) -> dict:
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


def _filters_view(cases: list[dict], history: dict | None) -> dict:
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


# -- formatting and the template ----------------------------------------------------------


def _fmt_plain(value: Any) -> str:
    return "—" if value is None else str(value)


def _csp_hash(script: str) -> str:
    digest = hashlib.sha256(str(script).encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters["csp_hash"] = _csp_hash
    return env
