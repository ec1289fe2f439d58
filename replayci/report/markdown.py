"""The Markdown summary: gates, packs, categories and failures in tables."""
from __future__ import annotations

from collections import Counter

from ..core.files import write_atomic
from .terminal import gate_value
from .text import count, is_number, location, ms, rate, usd

_CASE_ROWS = 500  # a step summary page holds 1 MiB: a large run lists its first cases only


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
    spent = s.get("totals") or {}
    if any(is_number(v) for v in spent.values()):
        lines += ["", f"Tokens {count(spent.get('tokens'))} · cost {usd(spent.get('cost_usd'))} · "
                  f"p95 latency {ms(spent.get('p95_latency_ms'))}."]
    lines += ["", "| gate | threshold | actual | |", "|---|---|---|---|"]
    for name, g in s["gates"].items():
        lines.append(f"| {name} | {_gate(name, g['threshold'])} | {_gate(name, g['actual'])} | "
                     f"{'✅' if g['passed'] else '❌'} |")
    by_pack: dict[str, list[dict]] = {}
    for c in report["cases"]:
        by_pack.setdefault(c["pack"], []).append(c)
    lines += ["", "| pack | cases | pass | fail | non-reproducible | pass rate |", "|---|---|---|---|---|---|"]
    for pack, cases in by_pack.items():
        tally = Counter(c["status"] for c in cases)
        lines.append(f"| {pack} | {len(cases)} | {tally['pass']} | {tally['fail']} | "
                     f"{tally['non_reproducible']} | {rate(_rate_of(cases))} |")
    if s.get("by_category"):
        lines += ["", "| category | cases | pass rate |", "|---|---|---|"]
        for cat, slot in s["by_category"].items():
            lines.append(f"| {cat} | {slot['total']} | {rate(slot['pass_rate'])} |")
    lines += _flaky_lines(report["cases"]) + _case_lines(report["cases"]) + _score_lines(report["cases"])
    bad = [c for c in report["cases"] if c["status"] in ("fail", "error")
           or (c["status"] == "non_reproducible" and not c.get("allowlisted"))]
    if bad:
        lines += ["", "### Failures", "",
                  "| case | status | classification | fingerprint | response | source | detail |",
                  "|---|---|---|---|---|---|---|"]
        for c in bad:
            detail = c.get("reason") or ""
            if c["status"] == "fail" and c.get("failures") and c.get("expect_ok", True):
                detail = c["failures"][0]["message"]
            detail = detail.replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {_case_name(c)} | {c['status']} | "
                         f"{c.get('classification') or c.get('reason') or ''} | `{c.get('fingerprint') or ''}` | "
                         f"{c.get('response_source') or ''} | `{location(c)}` | {detail[:300]} |")
    return "\n".join(lines) + "\n"


def _gate(name: str, value) -> str:
    if name in ("pass_rate", "min_pass_rate_lower_bound") and is_number(value):
        return rate(value)
    return str(gate_value(name, value))


def _case_name(c: dict) -> str:
    """The case's id, with its tags when it has some."""
    tags = ", ".join(str(t).replace("|", "\\|") for t in c.get("tags") or ())
    return f"`{c['pack']}/{c['contract']}/{c['case']}`" + (f" · tags: {tags}" if tags else "")


def _flaky_lines(cases: list[dict]) -> list[str]:
    """Cases that neither always passed nor always failed under --repeat."""
    flaky = [c for c in cases if "flaky" in (c.get("labels") or ())]
    if not flaky:
        return []
    lines = ["", "### Flaky cases", "", "| case | runs passed | pass rate | Wilson 95% | pass@1 | pass^N |",
             "|---|---|---|---|---|---|"]
    for c in flaky:
        low, high = c.get("wilson") or (None, None)
        n = str(c.get("repeat"))
        lines.append(f"| {_case_name(c)} | {c.get('passes')}/{c.get('repeat')} | {rate(c.get('case_pass_rate'))} | "
                     f"{rate(low)} – {rate(high)} | {rate((c.get('pass_at_k') or {}).get('1'))} | "
                     f"{rate((c.get('pass_hat_k') or {}).get(n))} |")
    return lines


def _case_lines(cases: list[dict]) -> list[str]:
    """Every case's tokens, cost and latency, folded (shown when some case has one)."""
    if not any(is_number(c.get(k)) for c in cases for k in ("tokens", "cost_usd", "latency_ms")):
        return []
    lines = ["", f"<details><summary>Cases: tokens, cost, latency ({len(cases)})</summary>", "",
             "| case | status | response | tokens | cost | latency |", "|---|---|---|---|---|---|"]
    for c in cases[:_CASE_ROWS]:
        lines.append(f"| {_case_name(c)} | {c['status']} | {c.get('response_source') or ''} | "
                     f"{count(c.get('tokens'))} | {usd(c.get('cost_usd'))} | {ms(c.get('latency_ms'))} |")
    if len(cases) > _CASE_ROWS:
        lines.append(f"| … and {len(cases) - _CASE_ROWS} more (see the JSON report) | | | | | |")
    return lines + ["", "</details>"]


def _score_lines(cases: list[dict]) -> list[str]:
    """The scored cases (contracts with min_score) and their scores."""
    scored = [c for c in cases if is_number(c.get("score"))]
    if not scored:
        return []
    lines = ["", "| case | status | score |", "|---|---|---|"]
    lines += [f"| {_case_name(c)} | {c['status']} | {c['score']:g} |" for c in scored[:_CASE_ROWS]]
    if len(scored) > _CASE_ROWS:
        lines.append(f"| … and {len(scored) - _CASE_ROWS} more (see the JSON report) | | |")
    return lines


def write(report: dict, path: str) -> None:
    """Write the Markdown summary of *report* atomically."""
    write_atomic(path, build(report))
