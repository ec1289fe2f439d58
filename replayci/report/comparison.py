"""The comparisons of a report as text: its targets (a line per target, the contract x target
matrix, the significant differences) and its baseline labels. The terminal and the Markdown
report read the same JSON report records (`targets`, `baseline`)."""
from __future__ import annotations

from collections.abc import Mapping

from .text import count, is_number, ms, rate, usd

# The baseline labels in the order a reader wants them: what got worse first.
LABEL_ORDER = ("new_failure", "changed_failure", "regressed", "flaky", "fixed", "still_failing", "new_case",
               "removed", "unchanged")
WORSE = ("new_failure", "changed_failure", "regressed")
_WORDS = {"new_failure": "new failure", "changed_failure": "changed failure", "still_failing": "still failing",
          "new_case": "new case"}


def label_word(label: str, n: int = 1) -> str:
    word = _WORDS.get(label, label)
    return word + ("s" if n != 1 and label in ("new_failure", "changed_failure", "new_case") else "")


def wilson_text(stats: Mapping) -> str:
    low_high = stats.get("wilson")
    return f"Wilson 95% {rate(low_high[0])}–{rate(low_high[1])}" if low_high else "no counted runs"


def target_line(label: str, stats: Mapping, width: int) -> str:
    """'openai:gpt-4o   92.0% (Wilson 95% 75.0%–97.8%) · 23/25 runs · 1,200 tokens · ...'"""
    parts = [f"{stats.get('passes', 0)}/{stats.get('runs', 0)} runs passed"]
    if is_number(stats.get("tokens")):
        parts.append(f"{count(stats['tokens'])} tokens")
    if is_number(stats.get("cost_usd")):
        parts.append(usd(stats["cost_usd"]))
    if is_number(stats.get("p50_latency_ms")):
        parts.append(f"p50 {ms(stats['p50_latency_ms'])} · p95 {ms(stats.get('p95_latency_ms'))}")
    return f"{label:<{width}}   {rate(stats.get('pass_rate')):>6} ({wilson_text(stats)}) · " + " · ".join(parts)


def matrix_rows(targets: Mapping) -> tuple[list[str], list[list[str]]]:
    """The contract x target table: (header, rows of texts)."""
    labels = list(targets.get("labels") or ())
    rows = []
    for contract, row in (targets.get("matrix") or {}).items():
        rows.append([contract, *[rate((row.get(t) or {}).get("pass_rate")) for t in labels]])
    return ["contract", *labels], rows


TEST_WORDS = {"mcnemar": "exact McNemar", "stratified": "exact, stratified by case", "fisher": "Fisher exact"}


def significant_line(entry: Mapping) -> str:
    test = TEST_WORDS.get(entry.get("test") or "fisher", "Fisher exact")
    return (f"{entry['contract']}: {entry['a']} {rate(entry['pass_rate_a'])} ({entry['runs_a']} runs) vs "
            f"{entry['b']} {rate(entry['pass_rate_b'])} ({entry['runs_b']} runs), p = {entry['p']:.2g} ({test})")


def verdict_sentences(targets: Mapping) -> list[str]:
    """Which target passes more, in words, for each pair (a report without them: none)."""
    return [str(v["sentence"]) for v in targets.get("verdicts") or () if isinstance(v, Mapping) and v.get("sentence")]


def terminal_lines(targets: Mapping) -> list[str]:
    """The targets section of the terminal report."""
    labels = list(targets.get("labels") or ())
    stats = targets.get("targets") or {}
    width = max(map(len, labels), default=0)
    lines = ["", "  targets"]
    lines += ["  " + target_line(t, stats.get(t) or {}, width) for t in labels]
    header, rows = matrix_rows(targets)
    widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]
    lines.append("")
    for row in [header, *rows]:
        cells = [row[0].ljust(widths[0])] + [cell.rjust(widths[k + 1]) for k, cell in enumerate(row[1:])]
        lines.append(("  " + "   ".join(cells)).rstrip())
    significant = targets.get("significant") or []
    lines += ["", "  significant differences (two-sided, p < 0.05; paired case by case where both ran the same "
              "cases):" if significant else "  no contract's pass rate differs significantly between targets "
              "(two-sided, p < 0.05)"]
    lines += ["    " + significant_line(e) for e in significant]
    sentences = verdict_sentences(targets)
    if sentences:
        lines += [""] + ["  " + line for line in sentences]
    return lines


def baseline_counts(baseline: Mapping) -> str:
    """'1 new failure · 2 fixed · ...' (labels with a count only; 'no change' for none)."""
    counts = baseline.get("counts") or {}
    parts = [f"{counts[k]} {label_word(k, counts[k])}" for k in LABEL_ORDER
             if k != "unchanged" and counts.get(k)]
    return " · ".join(parts) or "no case changed"


def baseline_lines(baseline: Mapping) -> list[str]:
    """The baseline section of the terminal report: the counts and the removed cases."""
    lines = ["", f"  against baseline {baseline.get('file') or ''}: {baseline_counts(baseline)}".replace("  :", ":")]
    overall = baseline.get("overall")
    if isinstance(overall, Mapping) and overall.get("sentence"):
        lines.append(f"  {overall['sentence']}")
    for c in baseline.get("removed") or ():
        target = f" @ {c['target']}" if c.get("target") else ""
        lines.append(f"    removed: {c['pack']}/{c['contract']}/{c['case']}{target} "
                     f"(was {c.get('baseline_status')})")
    return lines
