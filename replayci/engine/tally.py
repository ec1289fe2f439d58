"""The run's summary, gates and comparisons, as a handler of its events: it keeps each judged
case as the run tells it, and reads the results themselves (as the summary reads a report's
cases) when the run asks for its summary."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from ..config import Settings, Target
from ..pack.model import Pack
from .compare import baseline_gate, compare_baseline, compare_targets, gates_per_target
from .events import CaseJudged, Event, Handler, Warned
from .results import CaseResult
from .sampling import sampling_summary
from .summary import repeat_summary
from .summary import summarize as summarize_cases


class Tally(Handler):
    """Keeps each case the run judged (allowlist and labels applied) and each warning, in the
    order told."""

    def __init__(self, results: Iterable[CaseResult] = (), warnings: Iterable[str] = ()) -> None:
        self.results: list[CaseResult] = list(results)
        self.warnings: list[str] = list(warnings)

    def handle(self, event: Event) -> None:
        kind = type(event)
        if kind is CaseJudged:
            self.results.append(event.result)
        elif kind is Warned:
            self.warnings.append(event.text)

    def outcome(self, packs: list[Pack], settings: Settings) -> tuple[list[CaseResult], dict, dict, list[str]]:
        """(the results, quarantined cases marked; the summary and gates; the comparisons; the
        warnings of the gates)."""
        results = self.results
        summary = summarize(results, packs, settings)
        if summary.get("quarantined"):
            results = _mark_quarantined(results, summary["quarantined"])
        comparisons = _comparisons(results, settings) if settings.targets or settings.baseline is not None else {}
        summary, warnings = _baseline_gate(summary, results, packs, settings)
        if settings.repeat > 1 and (settings.provider != "recorded" or settings.live_targets):
            summary.update(repeat_records(results, settings))
        return results, summary, comparisons, warnings


def repeat_records(results: list[CaseResult], settings: Settings) -> dict:
    """A repeated run's `repeat` record and, under --repeat auto, its `sampling` record."""
    out = {"repeat": repeat_summary(results, f"auto:{settings.repeat}" if settings.repeat_auto else settings.repeat)}
    if settings.repeat_auto:
        out["sampling"] = sampling_summary(results, settings.repeat)
    return out


def summarize(results: list[CaseResult], packs: list[Pack], settings: Settings,
              other_gates: dict | None = None) -> dict:
    """The run's summary; gates per pack: .replayci.yml over pack.yaml over the defaults
    (*other_gates*: those of packs not loaded, by pack id); in a comparison of targets, the
    gates of each target, a gate failing when one target misses it."""
    gates = {**(other_gates or {}), **{p.pack_id: {**p.gates, **settings.gates} for p in packs}}
    summary = summarize_cases(results, gates)
    if not settings.targets:
        return summary
    return gates_per_target(summary, results, gates, [t.label for t in settings.targets])


def _baseline_gate(summary: dict, results: list[CaseResult], packs: list[Pack],
                   settings: Settings) -> tuple[dict, list[str]]:
    """*summary* under `baseline: no_new_failures` (--gate-baseline, or a pack's gates): the run
    fails for new, changed and regressed failures, and the pass-rate gate is waived (known
    failures do not fail it); and the warning when the gate could not be checked."""
    gated = {p.pack_id for p in packs if {**p.gates, **settings.gates}.get("baseline") == "no_new_failures"}
    if not (settings.gate_baseline or gated):
        return summary, []
    if settings.baseline is None:
        return summary, [f"gate baseline: no_new_failures (pack {', '.join(sorted(gated))}) was not checked: "
                         "it needs --baseline REPORT.json (the report of the run to compare with)"]
    gate = baseline_gate(results, None if settings.gate_baseline else gated)
    out = {**summary, "gates": {**_waived(summary["gates"]), "baseline": gate}}
    if "gates_by_target" in summary:
        out["gates_by_target"] = {t: _waived(g) for t, g in summary["gates_by_target"].items()}
    return out, []


def _waived(gates: dict) -> dict:
    """*gates* with a failed pass-rate gate waived by the baseline gate."""
    rate = gates.get("pass_rate")
    if rate is None or rate["passed"]:
        return gates
    waived = {**rate, "passed": True, "waived": "baseline"}
    if "failed_targets" in rate:
        waived["failed_targets"] = []
    return {**gates, "pass_rate": waived}


def target_comparison(results: list[CaseResult], targets: tuple[Target, ...]) -> dict:
    """The report's `targets` record: the comparison of *results* (each naming its target)."""
    labels = [t.label for t in targets]
    out = {"labels": labels, **compare_targets(results, labels)}
    out["by_target"] = {t.label: {"provider": t.provider, "model": t.model} for t in targets}
    return out


def _comparisons(results: list[CaseResult], settings: Settings) -> dict:
    """The report's `targets` and `baseline` records, for a run that compares."""
    out = {}
    if settings.targets:
        out["targets"] = target_comparison(results, settings.targets)
    if settings.baseline is not None:
        complete = not (settings.filters or settings.categories or settings.tags or settings.shard
                        or settings.case_ids is not None)
        _, record = compare_baseline(results, settings.baseline, complete=complete)
        out["baseline"] = {"file": settings.baseline_file, **record}
    return out


def _mark_quarantined(results: list[CaseResult], quarantined: list[dict]) -> list[CaseResult]:
    """Each quarantined case says so in its own report entry."""
    keys = {(q["pack"], q["contract"], q["case"], q.get("target")) for q in quarantined}
    return [dataclasses.replace(r, details={**r.details, "quarantined": True})
            if (r.pack, r.contract, r.case, r.target) in keys else r for r in results]
