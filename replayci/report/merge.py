"""`replayci merge`: shard reports -> one report with the full run's order and summary."""
from __future__ import annotations

import json

from ..core.errors import ConfigError, Problem
from ..engine.summary import summarize


def merge_reports(paths: list[str]) -> dict:
    reports = []
    problems = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as fh:
                report = json.load(fh)
        except (OSError, ValueError) as exc:
            problems.append(Problem(path, None, None, f"not a replayci JSON report: {exc}"))
            continue
        if not isinstance(report, dict) or report.get("version") != 1 or "cases" not in report:
            problems.append(Problem(path, None, None, "not a replayci JSON report (version 1)"))
            continue
        reports.append(report)
    if problems:
        raise ConfigError(problems)
    cases, seen = [], {}
    for path, report in zip(paths, reports, strict=True):
        for c in report["cases"]:
            key = (c["pack"], c["contract"], c["case"])
            if key in seen:
                raise ConfigError(Problem(path, None, None, f"case {'/'.join(key)} is also in {seen[key]}; "
                                          "merge reports of disjoint shards"))
            seen[key] = path
            cases.append(c)
    cases.sort(key=lambda c: (c.get("order") is None, c.get("order") or [], c["pack"], c["contract"], c["case"]))
    gates_by_pack: dict = {}
    for report in reports:
        gates_by_pack.update(report["summary"].get("gates_by_pack") or {})
    first = reports[0]["run"]
    run = {**first, "shard": None, "merged_from": len(reports),
           "duration_ms": round(sum(r["run"].get("duration_ms") or 0 for r in reports), 3),
           "packs": list(dict.fromkeys(p for r in reports for p in r["run"].get("packs") or []))}
    return {"version": 1, "run": run, "summary": summarize(cases, gates_by_pack), "cases": cases,
            "warnings": [w for r in reports for w in r.get("warnings") or []]}
