"""`replayci merge`: shard reports -> one report with the full run's order and summary."""
from __future__ import annotations

from ..core.errors import ConfigError, Problem
from ..engine.compare import compare_targets, gates_per_target
from ..engine.sampling import sampling_summary
from ..engine.summary import repeat_summary, summarize
from .shape import ReportError, read_report

# What must be equal in every shard report of one run.
_SAME_RUN = ("provider", "model", "replay", "filters", "categories", "tags")


def _shard_of(report: dict) -> tuple[int, int] | None:
    try:
        k, n = (int(x) for x in str(report["run"]["shard"]).split("/"))
    except (KeyError, TypeError, ValueError):
        return None
    return k, n


def check_shards(paths: list[str], reports: list[dict], *, allow_partial: bool) -> list[int]:
    """The shard numbers missing from *reports* (shards K/N of one run); a set that mixes runs,
    counts or unsharded reports is refused, and so is an incomplete one unless *allow_partial*."""
    shards = [_shard_of(r) for r in reports]
    if not any(shards):
        return []
    if not all(shards) or len({n for _, n in shards}) != 1:
        shown = [f"{p} ({r['run'].get('shard') or 'not sharded'})" for p, r in zip(paths, reports, strict=True)]
        raise ConfigError("merge takes the shard reports of one run: " + ", ".join(shown))
    for name in _SAME_RUN:
        if len({repr(r["run"].get(name)) for r in reports}) > 1:
            raise ConfigError(f"these shard reports come from different runs: their {name} differs")
    n = shards[0][1]
    missing = sorted(set(range(1, n + 1)) - {k for k, _ in shards})
    if missing and not allow_partial:
        raise ConfigError(f"shard {', '.join(f'{k}/{n}' for k in missing)} missing: merge every shard of the run, "
                          "or pass --allow-partial (the merged report then never meets its gates)")
    return missing


def _fail_gates(summary: dict, missing: list[int]) -> None:
    """A partial merge is no verdict on the whole run: no gate of it is met."""
    for gate in summary.get("gates", {}).values():
        gate["passed"] = False
    summary["partial"] = {"missing_shards": missing}


def _repeated(first: dict, cases: list[dict]) -> dict:
    """A repeated run's `repeat` and, under --repeat auto, `sampling` records, computed again over
    every shard's cases (each shard's own counted only its cases)."""
    out = {}
    n = (first.get("repeat") or {}).get("n") if isinstance(first.get("repeat"), dict) else None
    if isinstance(n, (int, str)) and not isinstance(n, bool):
        out["repeat"] = repeat_summary(cases, n)
    most = (first.get("sampling") or {}).get("max") if isinstance(first.get("sampling"), dict) else None
    if isinstance(most, int) and not isinstance(most, bool) and most > 0:
        out["sampling"] = sampling_summary(cases, most)
    return out


def merge_reports(paths: list[str], *, allow_partial: bool = False) -> dict:
    reports = []
    problems = []
    for path in paths:
        try:
            report = read_report(path)
        except ReportError as exc:
            problems.append(Problem(path, None, None, str(exc).removeprefix(f"{path}: ")))
            continue
        reports.append(report)
    if problems:
        raise ConfigError(problems)
    missing = check_shards(paths, reports, allow_partial=allow_partial)
    cases, seen = [], {}
    for path, report in zip(paths, reports, strict=True):
        for c in report["cases"]:
            key = (c["pack"], c["contract"], c["case"], c.get("target"))
            if key in seen:
                name = "/".join(key[:3]) + (f" @ {key[3]}" if key[3] else "")
                raise ConfigError(Problem(path, None, None, f"case {name} is also in {seen[key]}; "
                                          "merge reports of disjoint shards"))
            seen[key] = path
            cases.append(c)
    labels = [str(t) for t in reports[0]["run"].get("targets") or ()]
    rank = {t: i for i, t in enumerate(labels)}  # a comparison lists its cases target by target
    cases.sort(key=lambda c: (rank.get(c.get("target"), -1), c.get("order") is None, c.get("order") or [], c["pack"],
                              c["contract"], c["case"]))
    gates_by_pack: dict = {}
    for report in reports:
        gates_by_pack.update(report["summary"].get("gates_by_pack") or {})
    first = reports[0]["run"]
    run = {**first, "shard": None, "merged_from": len(reports),
           "duration_ms": round(sum(r["run"].get("duration_ms") or 0 for r in reports), 3),
           "packs": list(dict.fromkeys(p for r in reports for p in r["run"].get("packs") or []))}
    summary = summarize(cases, gates_by_pack)
    comparison = {}
    if labels:  # a comparison of targets: each target's gates and the comparison, over every shard's cases
        summary = gates_per_target(summary, cases, gates_by_pack, labels)
        comparison["targets"] = {"labels": labels, **compare_targets(cases, labels),
                                 "by_target": (reports[0].get("targets") or {}).get("by_target") or {}}
    summary.update(_repeated(reports[0]["summary"], cases))
    if missing:
        _fail_gates(summary, missing)
    return {"version": 1, "run": run, "summary": summary, **comparison, "cases": cases,
            "warnings": [w for r in reports for w in r.get("warnings") or []]}
