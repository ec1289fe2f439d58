"""The Markdown summary: gates, packs, categories and failures in tables."""
from __future__ import annotations

from collections import Counter

from ..core.files import write_atomic


def _rate(value) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _rate_of(cases: list[dict]) -> float | None:
    denom = sum(1 for c in cases if c["status"] in ("pass", "fail", "error"))
    return sum(1 for c in cases if c["status"] == "pass") / denom if denom else None


def build(report: dict) -> str:
    s = report["summary"]
    ok = all(g["passed"] for g in s["gates"].values())
    lines = [f"## replayci {'✅' if ok else '❌'} {s['pass']}/{s['total']} passed", ""]
    run = report["run"]
    lines.append(f"Provider `{run.get('provider')}`" + (f", model `{run['model']}`" if run.get("model") else "")
                 + f", {s['fail']} failed, {s['non_reproducible']} non-reproducible"
                 + (f" ({s['allowlisted']} allowlisted)" if s.get("allowlisted") else "")
                 + (f", {s['error']} errors" if s.get("error") else "")
                 + (f", {s['skipped']} skipped" if s.get("skipped") else "") + ".")
    lines += ["", "| gate | threshold | actual | |", "|---|---|---|---|"]
    for name, g in s["gates"].items():
        rate = name == "pass_rate"
        actual = _rate(g["actual"]) if rate else g["actual"]
        threshold = _rate(g["threshold"]) if rate and isinstance(g["threshold"], (int, float)) else g["threshold"]
        lines.append(f"| {name} | {threshold} | {actual} | {'✅' if g['passed'] else '❌'} |")
    by_pack: dict[str, list[dict]] = {}
    for c in report["cases"]:
        by_pack.setdefault(c["pack"], []).append(c)
    lines += ["", "| pack | cases | pass | fail | non-reproducible | pass rate |", "|---|---|---|---|---|---|"]
    for pack, cases in by_pack.items():
        count = Counter(c["status"] for c in cases)
        lines.append(f"| {pack} | {len(cases)} | {count['pass']} | {count['fail']} | "
                     f"{count['non_reproducible']} | {_rate(_rate_of(cases))} |")
    if s.get("by_category"):
        lines += ["", "| category | cases | pass rate |", "|---|---|---|"]
        for cat, slot in s["by_category"].items():
            lines.append(f"| {cat} | {slot['total']} | {_rate(slot['pass_rate'])} |")
    bad = [c for c in report["cases"] if c["status"] in ("fail", "error")
           or (c["status"] == "non_reproducible" and not c.get("allowlisted"))]
    if bad:
        lines += ["", "### Failures", "", "| case | status | classification | fingerprint | source | detail |",
                  "|---|---|---|---|---|---|"]
        for c in bad:
            detail = (c.get("reason") or "").replace("|", "\\|").replace("\n", " ")
            if c["status"] == "fail" and c.get("failures"):
                detail = c["failures"][0]["message"].replace("|", "\\|").replace("\n", " ")
            lines.append(f"| `{c['pack']}/{c['contract']}/{c['case']}` | {c['status']} | "
                         f"{c.get('classification') or c.get('reason') or ''} | `{c.get('fingerprint') or ''}` | "
                         f"`{c.get('source') or ''}` | {detail[:300]} |")
    return "\n".join(lines) + "\n"


def write(report: dict, path: str) -> None:
    """Write the Markdown summary of *report* atomically."""
    write_atomic(path, build(report))
