"""Drift between two runs : per case status changes, a tool-call edit script,
text-output changes, token and latency deltas.

Both sides are JSON reports (`replayci run --json` / `--report-json`); each case entry carries
``output`` (tool calls as ``{name, args_hash}``, the text and its hash, usage) and, for live
or recorded responses, ``latency_ms``. `replayci diff A B` reads two files; `replayci run
--against recorded` diffs the recorded run of the same cases (A) against the live run (B).
"""
from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Mapping
from typing import Any

from ..api import run_settings
from ..core.hashing import args_hash
from ..core.jsonvalue import ABSENT, differences
from ..engine.cases import Interrupted
from ..report.shape import ReportError as ReportError  # what the report commands catch
from ..report.shape import read_report
from ..report.text import plain, signed

DIFF_VERSION = 1
BAD = ("fail", "error")


def load_report(path: str) -> dict:
    """A JSON report from *path*; ReportError says what is wrong with it."""
    return read_report(path)


# ----------------------------------------------------------------------------- edit script


def _longest_increasing(values: list[int]) -> set[int]:
    """Indexes (into *values*) of one longest strictly increasing subsequence."""
    tails: list[int] = []  # values[tails[k]] is the smallest tail of an increasing run of k+1
    prev = [-1] * len(values)
    for i, v in enumerate(values):
        k = bisect.bisect_left([values[t] for t in tails], v)
        if k:
            prev[i] = tails[k - 1]
        if k == len(tails):
            tails.append(i)
        else:
            tails[k] = i
    keep: set[int] = set()
    i = tails[-1] if tails else -1
    while i >= 0:
        keep.add(i)
        i = prev[i]
    return keep


def edit_script(before: list[Mapping], after: list[Mapping]) -> list[dict]:
    """The edits turning tool calls *before* into *after*: ``removed`` / ``added`` entries
    ``{op, tool, args_hash, at}`` and ``reordered`` entries ``{op, tool, args_hash, from, to}``.

    Calls are identified by (name, args_hash); the k-th occurrence on one side pairs with the
    k-th on the other. A paired call that moved relative to the others is *reordered* (the
    fewest moves: pairs outside a longest increasing subsequence), never a remove plus an add.
    """
    def key(c: Mapping) -> tuple:
        return (c.get("name"), c.get("args_hash"))

    slots: dict[tuple, list[int]] = {}
    for j, c in enumerate(after):
        slots.setdefault(key(c), []).append(j)
    pairs: list[tuple[int, int]] = []
    removed: list[dict] = []
    for i, c in enumerate(before):
        free = slots.get(key(c))
        if free:
            pairs.append((i, free.pop(0)))
        else:
            removed.append({"op": "removed", "tool": c.get("name"), "args_hash": c.get("args_hash"), "at": i})
    matched_after = {j for _, j in pairs}
    added = [{"op": "added", "tool": c.get("name"), "args_hash": c.get("args_hash"), "at": j}
             for j, c in enumerate(after) if j not in matched_after]
    stay = _longest_increasing([j for _, j in pairs])
    reordered = [{"op": "reordered", "tool": before[i].get("name"), "args_hash": before[i].get("args_hash"),
                  "from": i, "to": j}
                 for k, (i, j) in enumerate(pairs) if k not in stay]
    return removed + added + reordered


ARG_CHANGES_KEPT = 50  # per call: a report stays small whatever the arguments


def changed_calls(before: list[Mapping], after: list[Mapping], edits: list[Mapping]) -> list[dict]:
    """Removed and added calls of one tool, paired in order, as one call whose arguments changed:
    ``{tool, from, to, args: [{path, before, after}]}`` (``args`` when both sides' arguments are
    known; a side without the member has no ``before`` / ``after``)."""
    added = [e for e in edits if e["op"] == "added"]
    out = []
    for gone in (e for e in edits if e["op"] == "removed"):
        new = next((e for e in added if e["tool"] == gone["tool"]), None)
        if new is None:
            continue
        added.remove(new)
        entry: dict[str, Any] = {"tool": gone["tool"], "from": gone["at"], "to": new["at"]}
        old_call, new_call = before[gone["at"]], after[new["at"]]
        if "arguments" in old_call and "arguments" in new_call:
            entry["args"] = [{"path": path, **({"before": x} if x is not ABSENT else {}),
                              **({"after": y} if y is not ABSENT else {})}
                             for path, x, y in differences(old_call["arguments"], new_call["arguments"],
                                                           limit=ARG_CHANGES_KEPT)]
        out.append(entry)
    return out


# ----------------------------------------------------------------------------- cases


def _key(case: Mapping) -> tuple:
    """A case of a run: in a comparison of targets, a case of one target (never paired with
    another target's run of it)."""
    return (case.get("pack"), case.get("contract"), case.get("case"), case.get("target"))


def _name(c: Mapping) -> str:
    return f"{c['pack']}/{c['contract']}/{c['case']}" + (f"@{c['target']}" if c.get("target") else "")


def _change(a: Mapping | None, b: Mapping | None, differs: bool) -> str:
    if a is None:
        return "added"
    if b is None:
        return "removed"
    sa, sb = a.get("status"), b.get("status")
    if sa == "pass" and sb in BAD:
        return "regression"
    if sa in BAD and sb == "pass":
        return "fix"
    if sa != sb or differs:
        return "changed"
    return "unchanged"


def _delta(x: Any, y: Any) -> float | int | None:
    if isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool) \
            and not isinstance(y, bool):
        d = y - x
        return round(d, 3) if isinstance(d, float) else d
    return None


def _calls(case: Mapping | None) -> list:
    """The tool calls compared: a scenario's over its whole trajectory, else the response's;
    each with its ``arguments`` when the report kept them."""
    trajectory = (case or {}).get("trajectory")
    if isinstance(trajectory, list):
        return [{"name": c.get("tool"), "args_hash": args_hash(c.get("arguments")), "arguments": c.get("arguments")}
                for step in trajectory if isinstance(step, Mapping)
                for c in step.get("calls") or () if isinstance(c, Mapping)]
    output = (case or {}).get("output")
    calls = (output.get("tool_calls") if isinstance(output, Mapping) else None) or []
    response = (case or {}).get("response")
    kept = response.get("tool_calls") if isinstance(response, Mapping) else None
    if not isinstance(kept, list) or len(kept) != len(calls):
        return calls  # an older report, or a response too large to keep
    return [{**c, "arguments": k.get("arguments")} if isinstance(c, Mapping) and isinstance(k, Mapping) else c
            for c, k in zip(calls, kept, strict=True)]


def diff_case(a: Mapping | None, b: Mapping | None) -> dict:
    """One case's entry of the diff (either side may be missing)."""
    some = b if b is not None else a
    assert some is not None
    entry: dict[str, Any] = {
        "pack": some.get("pack"), "contract": some.get("contract"), "case": some.get("case"),
        **({"target": some["target"]} if some.get("target") is not None else {}),
        "status": [a.get("status") if a else None, b.get("status") if b else None],
        "classification": [a.get("classification") if a else None, b.get("classification") if b else None],
        "fingerprint": [a.get("fingerprint") if a else None, b.get("fingerprint") if b else None],
        "draft": bool(some.get("draft")),
    }
    oa = (a or {}).get("output")
    ob = (b or {}).get("output")
    calls_a, calls_b = _calls(a), _calls(b)
    differs = False
    if isinstance(oa, Mapping) and isinstance(ob, Mapping):
        edits = edit_script(calls_a, calls_b)
        changed_text = oa.get("content_hash") != ob.get("content_hash")
        entry["tool_calls"] = edits
        entry["output_changed"] = changed_text
        if changed_text:
            entry["content"] = [oa.get("content"), ob.get("content")]
        ua, ub = oa.get("usage") or {}, ob.get("usage") or {}
        entry["tokens_delta"] = {k: _delta(ua.get(k), ub.get(k)) for k in ("input_tokens", "output_tokens")}
        differs = bool(edits) or changed_text
    elif a is not None and b is not None:
        # One side has no response (not recorded, provider error): compare what there is.
        entry["tool_calls"] = edit_script(calls_a, calls_b)
        entry["output_changed"] = (oa or {}).get("content_hash") != (ob or {}).get("content_hash")
        if entry["output_changed"]:
            entry["content"] = [(oa or {}).get("content"), (ob or {}).get("content")]
        entry["tokens_delta"] = {"input_tokens": None, "output_tokens": None}
        differs = bool(entry["tool_calls"]) or entry["output_changed"]
    changed = changed_calls(calls_a, calls_b, entry.get("tool_calls") or [])
    if changed:
        entry["changed_calls"] = changed
    entry["latency_delta_ms"] = _delta((a or {}).get("latency_ms"), (b or {}).get("latency_ms"))
    entry["change"] = _change(a, b, differs)
    return entry


def _side(report: Mapping, label: str | None) -> dict:
    run = report.get("run") or {}
    return {"label": label, "provider": run.get("provider"), "model": run.get("model"), "targets": run.get("targets"),
            "replay": run.get("replay"), "started_at": run.get("started_at")}


def diff_reports(a: Mapping, b: Mapping, *, a_label: str | None = None, b_label: str | None = None) -> dict:
    """The diff of report *b* against baseline *a*: cases in B's order, then those only in A."""
    by_a = {_key(c): c for c in a.get("cases") or []}
    seen = set()
    cases = []
    for cb in b.get("cases") or []:
        k = _key(cb)
        seen.add(k)
        cases.append(diff_case(by_a.get(k), cb))
    for ca in a.get("cases") or []:
        if _key(ca) not in seen:
            cases.append(diff_case(ca, None))
    counts = {name: 0 for name in ("regression", "fix", "changed", "unchanged", "added", "removed")}
    for c in cases:
        counts[c["change"]] += 1
    tokens = {"input_tokens": 0, "output_tokens": 0}
    for c in cases:
        for k, v in (c.get("tokens_delta") or {}).items():
            if v is not None:
                tokens[k] += v
    lat = [c["latency_delta_ms"] for c in cases if c.get("latency_delta_ms") is not None]
    summary = {
        "cases": len(cases),
        "regressions": sum(1 for c in cases if c["change"] == "regression" and not c["draft"]),
        "fixes": counts["fix"],
        "changed": counts["changed"],
        "unchanged": counts["unchanged"],
        "added": counts["added"],
        "removed": counts["removed"],
        "draft_regressions": sum(1 for c in cases if c["change"] == "regression" and c["draft"]),
        "tool_call_changes": sum(1 for c in cases if c.get("tool_calls")),
        "output_changes": sum(1 for c in cases if c.get("output_changed")),
        "tokens_delta": tokens,
        "mean_latency_delta_ms": round(sum(lat) / len(lat), 1) if lat else None,
    }
    return {"version": DIFF_VERSION, "a": _side(a, a_label), "b": _side(b, b_label),
            "summary": summary, "cases": cases}


# ----------------------------------------------------------------------------- terminal


def quoted(value: Any, limit: int = 60) -> str:
    if value is None:
        return "null"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    flat = " ".join(text.split())
    return json.dumps(flat if len(flat) <= limit else flat[: limit - 1] + "…", ensure_ascii=False)


def edit_text(e: Mapping) -> str:
    call = f"{e['tool']}({str(e.get('args_hash'))[:8]})"
    if e["op"] == "reordered":
        return f"reordered {call} {e['from']}→{e['to']}"
    return f"{e['op']} {call} at {e['at']}"


_STATUS = {"pass": "pass", "fail": "FAIL", "error": "ERROR", "non_reproducible": "NONREPRO",
           "skipped": "skip", None: "-"}
_CHANGE_COLOR = {"regression": "red", "fix": "green", "changed": "yellow", "added": "cyan",
                 "removed": "cyan"}


def render(diff: Mapping, *, verbosity: int = 0, style: Callable[..., str] = plain) -> str:
    """The human-readable diff: one line per changed case, the edits under it."""
    a, b, s = diff["a"], diff["b"], diff["summary"]

    def side(x: Mapping) -> str:
        parts = [p for p in (x.get("provider"), x.get("model"), ", ".join(x.get("targets") or ())) if p]
        return " ".join(parts) + (f" ({x['label']})" if x.get("label") else "")

    lines = [f"replayci diff · {side(a)} → {side(b)} · {s['cases']} cases", ""]
    shown = [c for c in diff["cases"] if verbosity > 0 or c["change"] != "unchanged" or c.get("tool_calls")
             or c.get("output_changed")]
    width = max((len(_name(c)) for c in shown), default=0)
    for c in shown:
        lines += _case_lines(c, width, verbosity, style)
    if shown:
        lines.append("")
    lines.append(_summary_line(s, style))
    return "\n".join(lines) + "\n"


def _case_lines(c: Mapping, width: int, verbosity: int, style: Callable[..., str]) -> list[str]:
    """One case: its status change, then its tool-call edits, text change, token and latency deltas."""
    name = _name(c)
    st = f"{_STATUS.get(c['status'][0], c['status'][0])} → {_STATUS.get(c['status'][1], c['status'][1])}"
    change = c["change"] + (" (draft)" if c["draft"] and c["change"] == "regression" else "")
    shown = style(change, fg=_CHANGE_COLOR.get(c["change"]), bold=c["change"] == "regression")
    line = f"  {name:<{width}}   {st:<20} {shown}"
    cls = c["classification"][1]
    if c["status"][1] in BAD and cls:
        line += f"   {cls}"
    lines = [line.rstrip()]
    if c.get("tool_calls"):
        lines.append("      tool calls: " + " · ".join(edit_text(e) for e in c["tool_calls"]))
    lines += [_changed_call_text(changed) for changed in c.get("changed_calls") or () if changed.get("args")]
    if c.get("output_changed"):
        before, after = c.get("content") or (None, None)
        lines.append(f"      text: {quoted(before)} → {quoted(after)}")
    extras = []
    td = c.get("tokens_delta") or {}
    if any(v for v in td.values() if v is not None):
        extras.append("tokens: " + ", ".join(f"{k.split('_')[0]} {signed(v)}" for k, v in td.items()
                                             if v is not None))
    if c.get("latency_delta_ms") is not None and (verbosity > 0 or c["change"] != "unchanged"):
        extras.append(f"latency {signed(c['latency_delta_ms'], ' ms')}")
    if extras:
        lines.append("      " + " · ".join(extras))
    return lines


ARG_CHANGES_SHOWN = 5


def _changed_call_text(changed: Mapping) -> str:
    """A call whose arguments changed: each changed path, old value → new value."""
    def value(change: Mapping, side: str) -> str:
        return quoted(change[side], 40) if side in change else "(absent)"

    args = changed["args"]
    parts = [f"{a['path']} {value(a, 'before')} → {value(a, 'after')}" for a in args[:ARG_CHANGES_SHOWN]]
    if len(args) > ARG_CHANGES_SHOWN:
        parts.append(f"… {len(args) - ARG_CHANGES_SHOWN} more")
    return f"      {changed['tool']} arguments: " + " · ".join(parts)


def _summary_line(s: Mapping, style: Callable[..., str]) -> str:
    """The totals: regressions, fixes, changes, token and latency deltas."""
    parts = [f"{s['regressions']} regression{'s' if s['regressions'] != 1 else ''}",
             f"{s['fixes']} fix{'es' if s['fixes'] != 1 else ''}", f"{s['changed']} changed",
             f"{s['unchanged']} unchanged"]
    if s["added"]:
        parts.append(f"{s['added']} added")
    if s["removed"]:
        parts.append(f"{s['removed']} removed")
    if s["draft_regressions"]:
        parts.append(f"{s['draft_regressions']} draft regressions (not counted)")
    tok = s["tokens_delta"]
    parts.append(f"tokens in {signed(tok['input_tokens'])} / out {signed(tok['output_tokens'])}")
    if s["mean_latency_delta_ms"] is not None:
        parts.append(f"latency {signed(float(s['mean_latency_delta_ms']), ' ms')} mean")
    summary = "  " + " · ".join(parts)
    return style(summary, fg="red", bold=True) if s["regressions"] else summary


# ----------------------------------------------------------------------------- --against


def recorded_baseline(settings) -> dict:
    """The JSON report of the recorded run of the same packs and cases (run before a live run,
    so that --record cannot overwrite the baseline first)."""
    base = settings.with_(provider="recorded", replay="strict", repeat=1)
    try:
        _, result = run_settings(base)
    except Interrupted:
        raise KeyboardInterrupt from None  # Ctrl-C before the live run started: exit 130
    return result.to_dict()
