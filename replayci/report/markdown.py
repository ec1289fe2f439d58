"""The Markdown summary: gates, packs, categories and failures in tables."""
from __future__ import annotations

from collections import Counter

from ..core.files import write_atomic
from ..engine.summary import run_tally
from .comparison import (
    LABEL_ORDER,
    TEST_WORDS,
    WORSE,
    baseline_counts,
    label_word,
    matrix_rows,
    verdict_sentences,
    wilson_text,
)
from .terminal import gate_value
from .text import count, is_number, location, ms, rate, sampling_text, usd

_CASE_ROWS = 500  # a step summary page holds 1 MiB: a large run lists its first cases only


def _rate_of(cases: list[dict]) -> float | None:
    return run_tally(c for c in cases if not c.get("draft"))["pass_rate"]


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
    if isinstance(report.get("baseline"), dict):
        lines += _baseline_lines(report)
    if s.get("draft_contracts"):
        n = s["draft_contracts"]
        lines += ["", f"{n} draft contract{'s never fail' if n != 1 else ' never fails'} a run (`status: observed`)."]
    spent = s.get("totals") or {}
    if any(is_number(v) for v in spent.values()):
        lines += ["", f"Tokens {count(spent.get('tokens'))} · cost {usd(spent.get('cost_usd'))} · "
                  f"p95 latency {ms(spent.get('p95_latency_ms'))}."]
    runs = s.get("runs") or {}
    if runs.get("runs"):
        lines += ["", f"Pass rate {rate(s.get('pass_rate'))} ({runs['passes']}/{runs['runs']} runs; "
                  f"{runs.get('non_reproducible_runs', 0)} non-reproducible and {runs.get('skipped_runs', 0)} "
                  "skipped runs not counted)."]
    if isinstance(s.get("sampling"), dict):
        lines += ["", sampling_text(s["sampling"]) + "."]
    lines += ["", "| gate | threshold | actual | |", "|---|---|---|---|"]
    for name, g in s["gates"].items():
        note = f" (failed for {', '.join(f'`{t}`' for t in g['failed_targets'])})" if g.get("failed_targets") \
            else " (waived: the baseline gate decides)" if g.get("waived") else ""
        lines.append(f"| {name} | {_gate(name, g['threshold'])} | {_gate(name, g['actual'])} | "
                     f"{'✅' if g['passed'] else '❌'}{note} |")
    if isinstance(report.get("targets"), dict):
        lines += _target_lines(report["targets"], s.get("gates_by_target") or {})
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
    lines += _quarantine_lines(s.get("quarantined"))
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


def _target_lines(targets: dict, gates: dict) -> list[str]:
    """The model matrix: a row per target, the contract x target pass rates, the significant
    differences."""
    lines = ["", "### Targets", "", "| target | pass rate | Wilson 95% | runs passed | tokens | cost | p50 latency "
             "| p95 latency | gates |", "|---|---|---|---|---|---|---|---|---|"]
    for label in targets.get("labels") or ():
        t = (targets.get("targets") or {}).get(label) or {}
        own = gates.get(label) or {}
        verdict = "✅" if all(g["passed"] for g in own.values()) else \
            "❌ " + ", ".join(n for n, g in own.items() if not g["passed"])
        lines.append(f"| `{label}` | {rate(t.get('pass_rate'))} | {wilson_text(t).removeprefix('Wilson 95% ')} | "
                     f"{t.get('passes', 0)}/{t.get('runs', 0)} | {count(t.get('tokens'))} | {usd(t.get('cost_usd'))} | "
                     f"{ms(t.get('p50_latency_ms'))} | {ms(t.get('p95_latency_ms'))} | {verdict} |")
    header, rows = matrix_rows(targets)
    lines += ["", "| " + " | ".join(f"`{h}`" if k else h for k, h in enumerate(header)) + " |",
              "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(f"`{c}`" if k == 0 else c for k, c in enumerate(row)) + " |" for row in rows]
    significant = targets.get("significant") or []
    sentences = ["", *(f"**{line}.**" for line in verdict_sentences(targets))] if verdict_sentences(targets) else []
    if not significant:
        return lines + ["", "No contract's pass rate differs significantly between targets (two-sided, p < 0.05)."] \
            + sentences
    lines += ["", "Significant differences (two-sided, p < 0.05; paired case by case where both targets ran the "
              "same cases):", "", "| contract | target | pass rate | target | pass rate | p | test |",
              "|---|---|---|---|---|---|---|"]
    lines += [f"| `{e['contract']}` | `{e['a']}` | {rate(e['pass_rate_a'])} ({e['runs_a']} runs) | `{e['b']}` | "
              f"{rate(e['pass_rate_b'])} ({e['runs_b']} runs) | {e['p']:.2g} | "
              f"{TEST_WORDS.get(e.get('test') or 'fisher', 'Fisher exact')} |" for e in significant]
    return lines + sentences


def _baseline_lines(report: dict) -> list[str]:
    """For a pull-request comment: what got worse first, then what was fixed, then the counts."""
    baseline = report["baseline"]
    labelled: dict[str, list[dict]] = {}
    for c in report["cases"]:
        labelled.setdefault(c.get("baseline") or "unchanged", []).append(c)
    named = f" `{baseline['file']}`" if baseline.get("file") else ""
    lines = ["", f"Against the baseline{named}: {baseline_counts(baseline)}."]
    overall = baseline.get("overall")
    if isinstance(overall, dict) and overall.get("sentence"):
        lines += ["", f"**{str(overall['sentence'])[0].upper()}{str(overall['sentence'])[1:]}.**"]
    worse = [c for label in WORSE for c in labelled.get(label, ())]
    if worse:
        lines += ["", f"### ❌ Regressions ({len(worse)})", "", "| case | label | now | before | detail |",
                  "|---|---|---|---|---|"]
        lines += [_labelled_row(c) for c in worse[:_CASE_ROWS]]
    for label in ("fixed", "flaky", "new_case"):
        cases = labelled.get(label) or []
        if cases:
            title = {"fixed": "✅ Fixed", "flaky": "Flaky (a drop that is not significant)",
                     "new_case": "New cases"}[label]
            lines += ["", f"### {title} ({len(cases)})", "", "| case | label | now | before | detail |",
                      "|---|---|---|---|---|"]
            lines += [_labelled_row(c) for c in cases[:_CASE_ROWS]]
    removed = baseline.get("removed") or []
    if removed:
        lines += ["", f"<details><summary>Removed since the baseline ({len(removed)})</summary>", ""]
        lines += [f"- `{c['pack']}/{c['contract']}/{c['case']}`" + (f" @ `{c['target']}`" if c.get("target") else "")
                  + f" (was {c.get('baseline_status')})" for c in removed[:_CASE_ROWS]]
        lines += ["", "</details>"]
    counts = baseline.get("counts") or {}
    lines += ["", "| " + " | ".join(label_word(k) for k in LABEL_ORDER) + " |", "|" + "---|" * len(LABEL_ORDER),
              "| " + " | ".join(str(counts.get(k, 0)) for k in LABEL_ORDER) + " |"]
    return lines


def _labelled_row(c: dict) -> str:
    now = c["status"] + (f" ({c['passes']}/{c['repeat']})" if "repeat" in c else "")
    before = c.get("baseline_status") or ("absent (a new case)" if c.get("new_case") else "")
    if c.get("baseline_pass_rate") is not None:
        before = f"pass rate {rate(c['baseline_pass_rate'])}, p = {c.get('baseline_p'):.2g}"
    detail = c.get("classification") or c.get("reason") or ""
    if c.get("baseline") == "changed_failure":
        detail = f"{c.get('baseline_classification') or '?'} `{c.get('baseline_fingerprint')}` → " \
                 f"{c.get('classification') or '?'} `{c.get('fingerprint')}`"
    detail = str(detail).replace("|", "\\|").replace("\n", " ")[:300]
    return f"| {_case_name(c)} | {c.get('baseline')} | {now} | {before} | {detail} |"


def _gate(name: str, value) -> str:
    if name in ("pass_rate", "min_pass_rate_lower_bound") and is_number(value):
        return rate(value)
    return str(gate_value(name, value))


def _case_name(c: dict) -> str:
    """The case's id (and target), with its tags when it has some."""
    tags = ", ".join(str(t).replace("|", "\\|") for t in c.get("tags") or ())
    target = f" @ `{c['target']}`" if c.get("target") else ""
    return f"`{c['pack']}/{c['contract']}/{c['case']}`{target}" + (f" · tags: {tags}" if tags else "")


def _quarantine_lines(quarantined) -> list[str]:
    """The flaky cases listed apart (`gates: {flaky: quarantine}`): they do not fail the run."""
    if not quarantined:
        return []
    lines = ["", f"### Quarantined: flaky, not failing the run ({len(quarantined)})", "",
             "| case | runs passed |", "|---|---|"]
    lines += [f"| {_case_name(q)} | {q.get('passes')}/{q.get('runs')} |" for q in quarantined[:_CASE_ROWS]]
    return lines


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
