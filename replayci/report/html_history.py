"""The HTML report over several runs: runs in time order, and the cases whose status changed."""
from __future__ import annotations

import datetime
import itertools
from collections.abc import Iterable

from .html_charts import history_chart
from .html_views import MAX_CHANGED_ROWS, STATUS_CODES, run_view, started_at, summary_view


def order_runs(reports: Iterable[dict]) -> list[dict]:
    """Reports in time order by `run.started_at`; reports without one keep their place last."""
    indexed = list(enumerate(reports))
    far = datetime.datetime.max.replace(tzinfo=datetime.timezone.utc)
    return [r for _, r in sorted(indexed, key=lambda p: (started_at(p[1]) or far, p[0]))]


def case_id(case: dict) -> str:
    """The case's id across runs (a comparison's case once per target)."""
    target = case.get("target")
    return f"{case.get('pack')}/{case.get('contract')}/{case.get('case')}" + (f"@{target}" if target else "")


def build_history(runs: list[dict]) -> dict:
    """Pass rate per run, and the cases whose status changed between consecutive runs.

    A case absent from a run has no status there; changes are counted between the runs it
    is in. A case is *flaky* when its status changed more than once (it went back and forth).
    """
    statuses: dict[str, list[str | None]] = {}
    for index, report in enumerate(runs):
        for case in report.get("cases") or ():
            statuses.setdefault(case_id(case), [None] * len(runs))[index] = case.get("status")
    changed = []
    for cid, row in statuses.items():
        present = [s for s in row if s is not None]
        flips = sum(1 for a, b in itertools.pairwise(present) if a != b)
        if flips:
            changed.append(
                {"id": cid, "statuses": row, "flips": flips, "kind": _change_kind(present, flips)}
            )
    changed.sort(key=lambda c: (_KIND_ORDER[c["kind"]], c["id"]))
    return {
        "kind_by_id": {c["id"]: c["kind"] for c in changed},
        "runs": [_history_run(i, r) for i, r in enumerate(runs)],
        "chart": history_chart(runs),
        "changed": changed[:MAX_CHANGED_ROWS],
        "changed_total": len(changed),
        "kinds": {k: sum(1 for c in changed if c["kind"] == k) for k in _KIND_ORDER},
        "statuses": statuses,
    }


_KIND_ORDER = {"regressed": 0, "flaky": 1, "fixed": 2, "changed": 3}


def _change_kind(present: list[str], flips: int) -> str:
    if flips > 1:
        return "flaky"
    if present[-1] == "pass":
        return "fixed"
    if present[0] == "pass":
        return "regressed"
    return "changed"


def _history_run(index: int, report: dict) -> dict:
    summary = summary_view(report)
    run = run_view(report)
    return {
        "index": index + 1,
        "started_at": run["started_at"],
        "label": run["label"],
        "pass_rate": summary["pass_rate"],
        "counts": summary["counts"],
        "gates_ok": summary["gates_ok"],
        "total": summary["total"],
    }


def history_payload(history: dict | None, cases: list[dict]) -> dict | None:
    """Per case of the latest run: its status code in every run and its change kind."""
    if history is None:
        return None
    kinds = history["kind_by_id"]
    codes, flags = [], []
    for case in cases:
        cid = case_id(case)
        codes.append(
            "".join(STATUS_CODES.get(s or "", "-") for s in history["statuses"].get(cid, ()))
        )
        flags.append(kinds.get(cid, ""))
    runs = [{"label": r["label"], "started_at": r["started_at"]} for r in history["runs"]]
    return {"runs": runs, "codes": codes, "flags": flags}
