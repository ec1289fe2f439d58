"""The human-readable report: one aligned line per case, details under failures."""
from __future__ import annotations

from collections.abc import Callable

from ..core.jsonvalue import show
from ..engine.results import CaseResult, RunResult
from .text import plain

_WORD = {"pass": "pass", "fail": "FAIL", "non_reproducible": "NONREPRO", "skipped": "skip",
         "error": "ERROR"}
_COLOR = {"pass": "green", "fail": "red", "non_reproducible": "yellow", "skipped": "cyan",
          "error": "magenta"}


def header(provider: str, model: str | None, packs: int, cases: int) -> str:
    parts = ["replayci", provider]
    if model:
        parts.append(model)
    parts += [f"{packs} pack{'s' if packs != 1 else ''}", f"{cases} case{'s' if cases != 1 else ''}"]
    return " · ".join(parts)


def case_lines(results: list[CaseResult], *, verbosity: int = 0,
               style: Callable[..., str] = plain) -> list[str]:
    """The per-case lines, aligned over the whole run."""
    if not results:
        return []
    w_name = max(len(f"{r.pack}/{r.contract}") for r in results)
    w_case = max(len(r.case) for r in results)
    lines = []
    for r in results:
        quiet_ok = r.status in ("pass", "skipped") or r.allowlisted
        if verbosity < 0 and quiet_ok:
            continue
        word = _WORD[r.status]
        status = style(f"{word:<8}", fg=_COLOR[r.status], bold=r.status != "pass")
        tail = ""
        if r.status == "pass" and not r.expect_ok:
            tail = f"(expected {r.classification})"
        elif r.status == "fail":
            tail = r.classification or "not detected"
        elif r.status == "non_reproducible":
            tail = r.reason + (" (allowlisted)" if r.allowlisted else "")
        elif r.status in ("skipped", "error"):
            tail = r.reason or ""
        if r.draft and r.status != "pass":
            tail += " (draft: status observed)"
        if r.details.get("repeat"):  # --repeat N: the case's own pass rate
            tail = f"{tail}   " * bool(tail) + f"[{r.details['passes']}/{r.details['repeat']} runs passed]"
        fp = r.fingerprint or "-" * 8
        line = f"  {r.pack + '/' + r.contract:<{w_name}}   {r.case:<{w_case}}   {status} {fp}"
        if tail:
            line += f"   {tail}"
        lines.append(line.rstrip())
        lines.extend(detail_lines(r, verbosity=verbosity, style=style))
    return lines


def detail_lines(r: CaseResult, *, verbosity: int = 0, style: Callable[..., str] = plain) -> list[str]:
    """What went wrong with a case, indented under its line."""
    out = []
    if r.status == "fail":
        if not r.failures:
            out.append(f"      {r.reason}   ({r.source})")
        else:
            if r.reason and not r.expect_ok and r.reason.startswith("expected "):
                out.append(f"      {r.reason}")
            shown = r.failures if verbosity > 0 else r.failures[:3]
            for f in shown:
                out.append(f"      {f.message}   ({f.source})" if f.source else f"      {f.message}")
            if len(r.failures) > len(shown):
                out.append(f"      ... and {len(r.failures) - len(shown)} more (-v shows all)")
        out.extend(trajectory_lines(r.details.get("trajectory")))
    elif r.status in ("non_reproducible", "error"):
        message = r.details.get("message") if r.status == "non_reproducible" else None
        if message:
            out.append(f"      {message}")
        out.append(f"      ({r.source})")
    elif verbosity > 0 and r.failures:
        for f in r.failures:
            out.append(f"      {f.message}   ({f.source})" if f.source else f"      {f.message}")
    return [style(line, dim=True) if verbosity > 0 and r.status == "pass" else line for line in out]


def trajectory_lines(trajectory) -> list[str]:
    """A scenario's run, step by step: each call with its arguments and result, then the text."""
    if not trajectory:
        return []
    out = ["      trajectory:"]
    for step in trajectory:
        for call in step["calls"]:
            out.append(f"        {step['step']}. {call['tool']}({show(call['arguments'], 80)})"
                       f" -> {show(call['result'], 80)}")
        if step.get("error"):
            out.append(f"        {step['step']}. error: {show(step['error'], 100)}")
        elif not step["calls"]:
            out.append(f"        {step['step']}. answer: {show(step.get('content'), 100)}")
    return out


def summary_line(result: RunResult) -> str:
    s = result.summary
    parts = [f"{s['pass']}/{s['total']} passed", f"{s['fail']} failed",
             f"{s['non_reproducible']} non-reproducible"]
    if s["allowlisted"]:
        parts[-1] += f" ({s['allowlisted']} allowlisted)"
    if s["error"]:
        parts.append(f"{s['error']} errors")
    if s["skipped"]:
        parts.append(f"{s['skipped']} skipped")
    rep = s.get("repeat")
    if rep and rep.get("cases"):
        parts.append(f"pass^{rep['n']} {rep['pass_all']:.2f} · mean case pass rate "
                     f"{rep['mean_case_pass_rate']:.2f}")
    parts.append(f"{result.run['duration_ms'] / 1000:.2f} s")
    return "  " + " · ".join(parts)


def gate_lines(result: RunResult) -> list[str]:
    lines = []
    for name, g in result.summary["gates"].items():
        if not g["passed"]:
            lines.append(f"  gate {name} failed: {g['actual']} against {g['threshold']}")
    return lines


def render(result: RunResult, *, packs: int, model: str | None, verbosity: int = 0,
           style: Callable[..., str] = plain) -> str:
    lines = [header(result.run["provider"], model, packs, len(result.cases)), ""]
    body = case_lines(result.cases, verbosity=verbosity, style=style)
    if body:
        lines += body + [""]
    lines.append(summary_line(result))
    lines += [style(line, fg="red", bold=True) for line in gate_lines(result)]
    return "\n".join(lines) + "\n"
