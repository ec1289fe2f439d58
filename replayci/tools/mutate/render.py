"""The terminal report of a mutation run, and of the negative cases written from it."""
from __future__ import annotations

from collections.abc import Callable

from ...report.text import plain
from .model import ContractMutation, MutantOutcome, MutationReport, Written


def percent(rate: float | None) -> str:
    """0.857 -> "85.7%", 1.0 -> "100%", None -> "-"."""
    if rate is None:
        return "-"
    text = f"{rate * 100:.1f}"
    if rate < 1 and text == "100.0":
        text = "99.9"
    return text.removesuffix(".0") + "%"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def render(report: MutationReport, *, min_kill_rate: float | None = None, verbosity: int = 0,
           style: Callable[..., str] = plain) -> str:
    """The human-readable report: one aligned line per contract, its survivors beneath."""
    cases = sum(len(c.bases) for c in report.contracts)
    lines = [" · ".join(["replayci mutate", _plural(len(report.packs), "pack"),
                         _plural(len(report.contracts), "contract"),
                         f"{_plural(cases, 'passing case')} mutated"]), ""]
    widths = (max((len(f"{c.pack.pack_id}/{c.contract.id}") for c in report.contracts), default=0),
              max((len(str(c.mutants)) for c in report.contracts), default=0))
    for c in report.contracts:
        lines += _contract_lines(c, widths, min_kill_rate, verbosity, style)
    for pack_id, contract_id, why in report.not_mutated:
        lines.append(f"  {pack_id}/{contract_id}: not mutated ({why})")
    total, killed = report.mutants, report.killed
    tail = [_plural(total, "mutant"), f"{killed} killed",
            f"{total - killed} survived", f"kill rate {percent(killed / total if total else None)}"]
    if min_kill_rate is not None:
        tail.append(f"{_plural(len(report.below(min_kill_rate)), 'contract')} below {min_kill_rate:g}")
    lines += ["", "  " + " · ".join(tail), ""]
    return "\n".join(lines)


def _contract_lines(c: ContractMutation, widths: tuple[int, int], min_kill_rate: float | None,
                    verbosity: int, style: Callable[..., str]) -> list[str]:
    """One contract's line: mutants, killed, kill rate; then its survivors and what was not run."""
    w_name, w_num = widths
    rate = c.kill_rate
    low = rate is not None and min_kill_rate is not None and rate < min_kill_rate - 1e-12
    colour = "red" if low else ("green" if rate == 1 else ("yellow" if rate is not None else None))
    shown = style(f"{percent(rate):>6}", fg=colour, bold=low) if colour else f"{percent(rate):>6}"
    line = (f"  {c.pack.pack_id + '/' + c.contract.id:<{w_name}}   {c.mutants:>{w_num}} mutants"
            f"   {c.killed:>{w_num}} killed   {shown}")
    if rate is None:
        line += "   no passing expect_ok case to mutate"
    elif low:
        line += f"   below --min-kill-rate {min_kill_rate:g}"
    lines = [line.rstrip()] + _survivor_lines(c, verbosity, style)
    lines += [f"      {o.case}  {o.mutant.name}  could not be evaluated: {o.reason}"
              for o in c.outcomes if o.status == "error"]
    if verbosity > 0:
        lines += [f"      {o.case}  {o.mutant.name}  killed: {o.classification}"
                  for o in c.outcomes if o.status == "killed"]
    lines += [f"      {case}: not mutated, the case is {why}" for case, why in c.not_mutated]
    return lines


def _survivor_lines(c: ContractMutation, verbosity: int, style: Callable[..., str]) -> list[str]:
    """The survivors and their hints, aligned; the same survivor in several cases is one line
    (the first case's hint), unless -v."""
    groups: dict[str, list[MutantOutcome]] = {}
    for o in c.survivors:
        groups.setdefault(o.mutant.name if verbosity <= 0 else f"{o.case}\0{o.mutant.name}", []).append(o)
    rows = [(g[0].case + (f" +{len(g) - 1}" if len(g) > 1 else ""), g[0].mutant.name, g[0].mutant.hint)
            for g in groups.values()]
    if not rows:
        return []
    w_case = max(len(r[0]) for r in rows)
    w_mut = max(len(r[1]) for r in rows)
    return [f"      {case:<{w_case}}  {style(f'{name:<{w_mut}}', fg='yellow')}  {hint}" for case, name, hint in rows]


def render_written(written: list[Written]) -> str:
    """What --write-negatives did, grouped by contract file."""
    if not written:
        return "  no new negative case: every classification caught has one already\n"
    lines: list[str] = []
    by_contract: dict[str, list[Written]] = {}
    for w in written:
        by_contract.setdefault(w.contract, []).append(w)
    for contract, ws in by_contract.items():
        new = [w for w in ws if w.fixture]
        lines.append(f"  {contract}: {_plural(len(new), 'negative case')} added")
        w_case = max(len(w.case) for w in ws)
        w_cls = max(len(w.classification or "") for w in ws)
        for w in ws:
            tail = w.fixture if w.fixture else f"skipped: {w.note}"
            lines.append(f"      {w.case:<{w_case}}  {w.classification or '':<{w_cls}}  {tail}")
    return "\n".join(lines) + "\n"
