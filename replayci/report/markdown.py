"""Markdown summary (for $GITHUB_STEP_SUMMARY) and GitHub Actions annotations."""
from __future__ import annotations


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
        actual = _rate(g["actual"]) if name == "pass_rate" else g["actual"]
        threshold = _rate(g["threshold"]) if name == "pass_rate" and isinstance(g["threshold"], (int, float)) else g["threshold"]
        lines.append(f"| {name} | {threshold} | {actual} | {'✅' if g['passed'] else '❌'} |")
    by_pack: dict[str, list[dict]] = {}
    for c in report["cases"]:
        by_pack.setdefault(c["pack"], []).append(c)
    lines += ["", "| pack | cases | pass | fail | non-reproducible | pass rate |", "|---|---|---|---|---|---|"]
    for pack, cases in by_pack.items():
        count = lambda st: sum(1 for c in cases if c["status"] == st)  # noqa: E731
        lines.append(f"| {pack} | {len(cases)} | {count('pass')} | {count('fail')} | "
                     f"{count('non_reproducible')} | {_rate(_rate_of(cases))} |")
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


def _escape(text: str, *, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def annotations(report: dict) -> list[str]:
    """`::error file=...,line=...,title=...::message` for every failure (GitHub Actions)."""
    out = []
    for c in report["cases"]:
        failing = c["status"] in ("fail", "error") or (c["status"] == "non_reproducible"
                                                         and not c.get("allowlisted"))
        if not failing or c.get("draft"):
            continue
        source = c.get("source") or ""
        if c["status"] == "fail" and c.get("failures") and c["failures"][0].get("source"):
            source = c["failures"][0]["source"]
        file, _, line = source.rpartition(":")
        title = c.get("classification") or c.get("reason") or c["status"]
        if c["status"] == "non_reproducible":
            title = f"non_reproducible: {c.get('reason')}"
        message = f"{c['pack']}/{c['contract']}/{c['case']}: "
        if c["status"] == "fail" and c.get("failures"):
            message += c["failures"][0]["message"]
        else:
            message += c.get("message") or c.get("reason") or c["status"]
        message += f" [{c.get('fingerprint')}]"
        out.append(f"::error file={_escape(file, prop=True)},line={line or 1},"
                   f"title={_escape(str(title), prop=True)}::{_escape(message)}")
    return out
