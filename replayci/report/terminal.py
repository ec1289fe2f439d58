"""The human-readable report: one aligned line per case, details under failures."""
from __future__ import annotations

from collections.abc import Callable, Iterator

from ..core.jsonvalue import show
from ..engine.results import CaseResult, RunResult
from .comparison import baseline_lines, terminal_lines
from .text import count, is_number, ms, plain, rate, sampling_text, usd

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
    return list(iter_case_lines(results, verbosity=verbosity, style=style))


def iter_case_lines(results: list[CaseResult], *, verbosity: int = 0, style: Callable[..., str] = plain,
                    compared: bool = False) -> Iterator[str]:
    """The per-case lines one by one (a large run's are never all held at once); *compared*:
    the run compares targets or a baseline (each line names its target and label)."""
    if not results:
        return
    if compared:
        yield from _compared_lines(results, verbosity, style)
        return
    w_name = max(len(r.pack) + len(r.contract) + 1 for r in results)
    w_case = max(len(r.case) for r in results)
    metrics = [metric_text(r.tokens, r.cost_usd, r.latency_ms) for r in results]  # short texts, once
    w_metrics = max(map(len, metrics))
    words = {s: style(f"{word:<8}", fg=_COLOR[s], bold=s != "pass") for s, word in _WORD.items()}
    for r, metric in zip(results, metrics, strict=True):
        if (verbosity < 0 and (r.status in ("pass", "skipped") or r.allowlisted)) or _pinned(r, verbosity):
            continue
        tail = _tail(r, verbosity)
        line = f"  {r.pack + '/' + r.contract:<{w_name}}   {r.case:<{w_case}}   {words[r.status]} " \
               f"{r.fingerprint or '--------'}"
        if w_metrics:  # a column when some case has tokens, cost or latency
            line += f"   {metric:<{w_metrics}}"
        if tail:
            line += f"   {tail}"
        yield line.rstrip()
        if r.status != "pass" or verbosity > 0:  # a pass has no details unless -v
            yield from detail_lines(r, verbosity=verbosity, style=style)


def _compared_lines(results: list[CaseResult], verbosity: int, style: Callable[..., str]) -> Iterator[str]:
    """The case lines of a comparison: the target before each case, its baseline label after."""
    w_target = max(len(r.target or "") for r in results)
    w_name = max(len(r.pack) + len(r.contract) + 1 for r in results)
    w_case = max(len(r.case) for r in results)
    for r in results:
        if verbosity < 0 and (r.status in ("pass", "skipped") or r.allowlisted) and \
                r.details.get("baseline") in (None, "unchanged", "new_case") or _pinned(r, verbosity):
            continue
        label = r.details.get("baseline")
        target = (r.target or "").ljust(w_target) + "   " if w_target else ""
        line = (f"  {target}{r.pack + '/' + r.contract:<{w_name}}   "
                f"{r.case:<{w_case}}   {style(f'{_WORD[r.status]:<8}', fg=_COLOR[r.status], bold=r.status != 'pass')} "
                f"{r.fingerprint or '--------'}")
        if label and label != "unchanged":
            if label != "new_case" and r.details.get("new_case"):
                label += ", new_case"  # absent from the baseline, and failing now
            worse = r.details["baseline"] in ("new_failure", "changed_failure", "regressed")
            line += "   " + style(f"[{label}]", fg="red" if worse else None, bold=True)
        tail = _tail(r, verbosity)
        yield (line + (f"   {tail}" if tail else "")).rstrip()
        if r.status != "pass" or verbosity > 0:
            yield from detail_lines(r, verbosity=verbosity, style=style)


def _pinned(r: CaseResult, verbosity: int) -> bool:
    """A pinned negative case a live run skipped: summed up in one line (-v lists each)."""
    return verbosity <= 0 and r.status == "skipped" and bool(r.details.get("pinned_negative"))


def pinned_line(results: list[CaseResult], verbosity: int = 0) -> str | None:
    """'3 pinned negative cases not run live (openai:a, anthropic:b): ...', or None."""
    pinned = [r for r in results if _pinned(r, verbosity)]
    if not pinned:
        return None
    cases = len({(r.pack, r.contract, r.case) for r in pinned})
    where = sorted({r.target for r in pinned if r.target})
    on = f" on {len(where)} target{'s' if len(where) != 1 else ''} ({', '.join(where)})" if where else ""
    return (f"  {cases} pinned negative case{'s' if cases != 1 else ''} skipped{on}: each is judged on its "
            "fixture's response, live only where its provider_modes names the provider (-v lists them)")


def quarantine_lines(quarantined) -> list[str]:
    """The flaky cases `gates: {flaky: quarantine}` lists apart, out of the gates."""
    if not quarantined:
        return []
    lines = ["", f"  quarantined: {len(quarantined)} flaky case{'s' if len(quarantined) != 1 else ''}, listed apart "
             "and not failing the run (gates: {flaky: quarantine})"]
    for q in quarantined:
        target = f" @ {q['target']}" if q.get("target") else ""
        lines.append(f"    {q['pack']}/{q['contract']}/{q['case']}{target}   {q['passes']}/{q['runs']} runs passed")
    return lines


def _tail(r: CaseResult, verbosity: int) -> str:
    """What follows a case's fingerprint: why it failed, its repeat rate, its response's source."""
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
        tail = f"{tail}   " * bool(tail) + repeat_text(r.details)
    if verbosity > 0 and r.details.get("response_source"):
        tail = f"{tail}   " * bool(tail) + f"[response: {r.details['response_source']}]"
    return tail


def metric_text(tokens, cost_usd, latency_ms) -> str:
    """Tokens, cost and latency, each when known: '1,100 tok · $0.0002 · 840 ms'."""
    parts = []
    if is_number(tokens):
        parts.append(f"{count(tokens)} tok")
    if is_number(cost_usd):
        parts.append(usd(cost_usd))
    if is_number(latency_ms):
        parts.append(ms(latency_ms))
    return " · ".join(parts)


def repeat_text(details: dict) -> str:
    """A repeated case: '[2/3 runs passed] flaky · Wilson 95% 21%–94%'."""
    text = f"[{details['passes']}/{details['repeat']} runs passed]"
    if details.get("stability"):  # --repeat auto: the label its runs decided
        text += f" {details['stability']}"
    elif "flaky" in (details.get("labels") or ()):
        text += " flaky"
    low_high = details.get("wilson")
    if low_high:
        text += f" · Wilson 95% {rate(low_high[0])}–{rate(low_high[1])}"
    return text


def detail_lines(r: CaseResult, *, verbosity: int = 0, style: Callable[..., str] = plain) -> list[str]:
    """What went wrong with a case, indented under its line."""
    out = [f"      score {r.score:g}"] if verbosity > 0 and r.score is not None else []
    if r.status == "fail":
        if not r.failures:
            out.append(f"      {r.reason}   ({r.source})")
        else:
            if r.reason and not r.expect_ok:  # why a detected negative case still fails
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
    if verbosity > 0 and r.details.get("note"):  # beside the verdict, e.g. a recording not written
        out.append(f"      note: {r.details['note']}")
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
    runs = s.get("runs") or {}
    rep = s.get("repeat")
    if (rep or result.comparisons) and runs.get("runs"):  # runs are not cases: say which figure gates
        parts.append(f"pass rate {rate(s['pass_rate'])} ({runs['passes']}/{runs['runs']} runs)")
    if rep and rep.get("cases") and not s.get("sampling"):
        parts.append(f"pass^{rep['n']} {rep['pass_all']:.2f}")
        flaky = sum(1 for r in result.cases if "flaky" in (r.details.get("labels") or ()))
        if flaky:
            parts.append(f"{flaky} flaky")
    totals = s.get("totals") or {}
    spent = metric_text(totals.get("tokens"), totals.get("cost_usd"), None).replace(" tok", " tokens")
    if spent:
        parts.append(spent)
    if is_number(totals.get("p95_latency_ms")):
        parts.append(f"p95 {ms(totals['p95_latency_ms'])}")
    parts.append(f"{result.run['duration_ms'] / 1000:.2f} s")
    return "  " + " · ".join(parts)


def draft_line(summary) -> str | None:
    """How many contracts of the run are drafts (status: observed), which never fail it."""
    n = summary.get("draft_contracts") or 0
    if not n:
        return None
    return f"  {n} draft contract{'s never fail' if n != 1 else ' never fails'} a run (status: observed); " \
           "remove that line from a contract to make it count"


def gate_lines(result: RunResult) -> list[str]:
    lines = []
    by_target = result.summary.get("gates_by_target") or {}
    for name, g in result.summary["gates"].items():
        if g.get("failed_targets"):
            for target in g["failed_targets"]:
                own = by_target[target][name]
                lines.append(f"  gate {name} failed for target {target}: {gate_value(name, own['actual'])} "
                             f"against {gate_value(name, own['threshold'])}")
        elif name == "baseline" and not g["passed"]:
            lines.append(f"  gate baseline failed: {g['actual']} new, changed or regressed "
                         f"failure{'s' if g['actual'] != 1 else ''} against the baseline")
        elif not g["passed"]:
            lines.append(f"  gate {name} failed: {gate_value(name, g['actual'])} against "
                         f"{gate_value(name, g['threshold'])}")
    return lines


def gate_value(name: str, value):
    """A gate's threshold or actual value as written for a person: dollars, milliseconds, or
    as it is (pass rates keep their fraction, as they always were)."""
    if not is_number(value):
        return value
    if name == "max_cost_usd":
        return usd(value)
    if name == "p95_latency_ms":
        return ms(value)
    if name == "max_total_tokens":
        return count(value)
    return value


def render(result: RunResult, *, packs: int, model: str | None, verbosity: int = 0,
           style: Callable[..., str] = plain) -> str:
    return "".join(render_chunks(result, packs=packs, model=model, verbosity=verbosity, style=style))


_CHUNK = 1 << 16


def render_chunks(result: RunResult, *, packs: int, model: str | None, verbosity: int = 0,
                  style: Callable[..., str] = plain) -> Iterator[str]:
    """The terminal report in pieces of about 64 kB, each ending in a newline."""
    def lines() -> Iterator[str]:
        targets = result.run.get("targets")
        yield header(result.run["provider"], f"{len(targets)} targets" if targets else model, packs,
                     len(result.cases))
        yield ""
        body = False
        compared = bool(result.comparisons)
        for line in iter_case_lines(result.cases, verbosity=verbosity, style=style, compared=compared):
            body = True
            yield line
        pinned = pinned_line(result.cases, verbosity)
        if pinned:
            yield pinned
        if compared:
            if result.comparisons.get("targets"):
                yield from terminal_lines(result.comparisons["targets"])
            if result.comparisons.get("baseline"):
                yield from baseline_lines(result.comparisons["baseline"])
        yield from quarantine_lines(result.summary.get("quarantined"))
        if body:
            yield ""
        yield summary_line(result)
        if result.summary.get("sampling"):
            yield "  " + sampling_text(result.summary["sampling"])
        drafts = draft_line(result.summary)
        if drafts:
            yield style(drafts, fg="yellow")
        yield from (style(line, fg="red", bold=True) for line in gate_lines(result))

    chunk: list[str] = []
    size = 0
    for line in lines():
        chunk.append(line)
        size += len(line) + 1
        if size >= _CHUNK:
            yield "\n".join(chunk) + "\n"
            chunk, size = [], 0
    if chunk:
        yield "\n".join(chunk) + "\n"
