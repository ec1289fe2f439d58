"""The HTML report's charts: pass rates by category and pack, tokens and cost by pack, the
latency histogram and the pass rate across runs."""
from __future__ import annotations

import math

from ..engine.summary import percentile
from .html_views import case_tokens, rate_of, run_view, summary_view
from .text import count as _fmt_int
from .text import is_number as _is_number
from .text import ms as _fmt_ms
from .text import rate as _fmt_rate
from .text import usd as _fmt_usd

_MAX_BARS = 40  # a chart with more rows shows the lowest pass rates and says how many it left off


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


def history_chart(runs: list[dict]) -> dict:
    points = []
    for index, report in enumerate(runs):
        rate = summary_view(report)["pass_rate"]
        points.append(
            {
                "index": index + 1,
                "rate": rate,
                "text": _fmt_rate(rate),
                "label": run_view(report)["label"],
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
