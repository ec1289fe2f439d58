"""What a JSON report must be for `merge`, `diff`, `report` and `regrade` to read it: a report
file is untrusted input (hand-edited, cut, written by another tool), so every field those
commands read is checked for its type before any of them looks at it."""
from __future__ import annotations

import json
from typing import Any

from ..core.errors import ConfigError
from ..pack.sources import read_text

MAX_SHARDS = 100_000  # a merge lists the shards missing: a report may not claim billions
STATUSES = ("pass", "fail", "non_reproducible", "skipped", "error")
_NUMBER = (int, float)
_TEXT = (str,)
_MAYBE_TEXT = (str, type(None))
_MAYBE_NUMBER = (int, float, type(None))
_MAYBE_OBJECT = (dict, type(None))
_NAMES = {str: "text", int: "a number", float: "a number", dict: "an object", list: "a list",
          bool: "true or false", type(None): "null"}

# Case key -> the types it may have (a key that is absent is not checked).
_CASE_FIELDS = {
    "classification": _MAYBE_TEXT, "reason": _MAYBE_TEXT, "allowlisted": (bool,), "fingerprint": _MAYBE_TEXT,
    "failures": (list,), "duration_ms": _NUMBER, "latency_ms": _MAYBE_NUMBER, "cost_usd": _MAYBE_NUMBER,
    "tokens": _MAYBE_NUMBER, "score": _MAYBE_NUMBER, "source": _TEXT, "category": _MAYBE_TEXT, "tags": (list,),
    "expect_ok": (bool,), "expected_error": _MAYBE_TEXT, "draft": (bool,), "order": (list,),
    "attempts": (int,), "output": (dict,), "response": _MAYBE_OBJECT, "steps": (list,),
    "judgements": _MAYBE_OBJECT, "details": (dict,), "response_source": _MAYBE_TEXT,
    "response_origin": _MAYBE_TEXT, "message": _MAYBE_TEXT, "note": _MAYBE_TEXT,
}
_FAILURE_FIELDS = {"kind": _TEXT, "message": _MAYBE_TEXT, "path": _MAYBE_TEXT, "operator": _MAYBE_TEXT,
                   "schema_path": _MAYBE_TEXT, "expected": None, "actual": _MAYBE_TEXT, "source": _MAYBE_TEXT}
# What a response document (a case's, a step's) may hold, where the commands read it.
_RESPONSE_FIELDS = {"success": (bool, type(None)), "tool_calls": (list,), "content": _MAYBE_TEXT,
                    "stop_reason": _MAYBE_TEXT, "usage": _MAYBE_OBJECT, "error": _MAYBE_OBJECT,
                    "server_tool_calls": (list,), "refusal": _MAYBE_TEXT, "model": _MAYBE_TEXT,
                    "latency_ms": _MAYBE_NUMBER, "cost_usd": _MAYBE_NUMBER}
_CALL_FIELDS = {"name": _MAYBE_TEXT, "id": _MAYBE_TEXT, "arguments_raw": _MAYBE_TEXT, "args_hash": _MAYBE_TEXT}
_COUNT = (int,)
_SUMMARY_FIELDS = {"gates": (dict,), "gates_by_pack": _MAYBE_OBJECT, "total": _COUNT, "pass": _COUNT, "fail": _COUNT,
                   "non_reproducible": _COUNT, "skipped": _COUNT, "error": _COUNT, "allowlisted": _COUNT,
                   "draft": _COUNT, "pass_rate": _MAYBE_NUMBER, "by_category": (dict,), "totals": _MAYBE_OBJECT,
                   "partial": _MAYBE_OBJECT}
_GATE_FIELDS = {"passed": (bool,), "threshold": (int, float, str, type(None)), "actual": _MAYBE_NUMBER}
_TOTALS_FIELDS = {"cost_usd": _MAYBE_NUMBER, "tokens": _MAYBE_NUMBER, "p95_latency_ms": _MAYBE_NUMBER}
_CATEGORY_FIELDS = {"pass": _COUNT, "fail": _COUNT, "error": _COUNT, "total": _COUNT, "pass_rate": _MAYBE_NUMBER}
_RUN_FIELDS = {"provider": _MAYBE_TEXT, "model": _MAYBE_TEXT, "packs": (list,), "replay": _MAYBE_TEXT,
               "started_at": _MAYBE_TEXT, "duration_ms": _MAYBE_NUMBER, "jobs": (int, type(None)),
               "shard": _MAYBE_TEXT, "merged_from": (int, type(None)), "config": _MAYBE_TEXT,
               "replayci_version": _MAYBE_TEXT, "filters": (list,), "categories": (list,), "tags": (list,)}


class ReportError(ValueError):
    """A file that is not a replayci JSON report."""


# A report's largest part is its responses (about 2 KB a case): far below this for any run. A
# file past it, or no regular file (a FIFO would block, /dev/zero would never end), is refused.
MAX_REPORT_BYTES = 1024 * 1024 * 1024


def read_report(path: str) -> dict:
    """The JSON report at *path*; ReportError names the file and says what is wrong with it."""
    try:
        report = json.loads(read_text(path, path, max_bytes=MAX_REPORT_BYTES))
    except ConfigError as exc:
        message = exc.problems[0].message
        if message.startswith("cannot read: "):  # a file that is not there, or not ours to read
            message = f"cannot read it: {message.removeprefix('cannot read: ')}"
        raise ReportError(f"{path}: {message}") from None
    except RecursionError:
        raise ReportError(f"{path}: not a replayci JSON report: its JSON is nested far too deep") from None
    except ValueError as exc:  # also text that is not UTF-8
        raise ReportError(f"{path}: not JSON ({exc}); expected a report written by "
                          "`replayci --json` or `--report-json`") from None
    problem = shape_problem(report)
    if problem:
        raise ReportError(f"{path}: {problem}")
    return report


def shape_problem(report: Any) -> str | None:
    """What keeps *report* from being a version-1 JSON report the commands can read, or None."""
    if not isinstance(report, dict) or not isinstance(report.get("cases"), list):
        return "not a replayci JSON report (no 'cases' list)"
    if report.get("version") != 1:
        return f"report version {_shown(report.get('version'))} is not supported (expected 1)"
    for key in ("run", "summary"):
        if not isinstance(report.get(key), dict):
            what = "has no" if key not in report else "has a"
            return f"not a replayci JSON report: it {what} '{key}' object" + (
                f" ('{key}' is {_type(report[key])})" if key in report else "")
    problem = _run_and_summary(report)
    if problem:
        return f"not a replayci JSON report: {problem}"
    for i, case in enumerate(report["cases"]):
        problem = _case_problem(case)
        if problem:
            return f"not a replayci JSON report: cases[{i}] {problem}"
    return None


def _run_and_summary(report: dict) -> str | None:
    run, summary = report["run"], report["summary"]
    problem = _fields(run, _RUN_FIELDS, "run") or _fields(summary, _SUMMARY_FIELDS, "summary")
    if problem:
        return problem
    if not isinstance(report.get("warnings", []), list):
        return "'warnings' is not a list"
    if not all(isinstance(p, str) for p in run.get("packs") or ()):
        return "'run.packs' holds something that is not text"
    shard = run.get("shard")
    if shard is not None and not _shard_ok(shard):
        return f"'run.shard' is {_shown(shard)}, expected K/N with 1 <= K <= N <= {MAX_SHARDS:,}"
    tables = [(f"summary.gates.{k}", v, _GATE_FIELDS) for k, v in summary.get("gates", {}).items()]
    tables += [(f"summary.by_category.{k}", v, _CATEGORY_FIELDS) for k, v in summary.get("by_category", {}).items()]
    by_target = summary.get("gates_by_target") or {}
    if not isinstance(by_target, dict):
        return f"'summary.gates_by_target' is {_type(by_target)}, not an object"
    for target, gates in by_target.items():
        if not isinstance(gates, dict):
            return f"'summary.gates_by_target.{target}' is {_type(gates)}, not an object"
        tables += [(f"summary.gates_by_target.{target}.{k}", v, _GATE_FIELDS) for k, v in gates.items()]
    for pack, gates in (summary.get("gates_by_pack") or {}).items():
        if not isinstance(gates, dict):
            return f"'summary.gates_by_pack.{pack}' is {_type(gates)}, not an object"
        for name, threshold in gates.items():  # a pack's own gate thresholds (baseline: no_new_failures)
            if not isinstance(threshold, (int, float, str, type(None))) or isinstance(threshold, bool):
                return f"'summary.gates_by_pack.{pack}.{name}' is {_shown(threshold)}, expected a number or a text"
    if summary.get("totals") is not None:
        tables.append(("summary.totals", summary["totals"], _TOTALS_FIELDS))
    for where, value, table in tables:
        problem = _fields(value, table, where)
        if problem:
            return problem
    return None


def _shard_ok(text: str) -> bool:
    k, sep, n = text.partition("/")
    return bool(sep) and k.isdigit() and n.isdigit() and len(n) <= 6 and 1 <= int(k) <= int(n) <= MAX_SHARDS


def _case_problem(case: Any) -> str | None:
    if not isinstance(case, dict):
        return "is not an object"
    for key in ("pack", "contract", "case", "status"):
        if not isinstance(case.get(key), str):
            return f"has no '{key}' text"
    if case["status"] not in STATUSES:
        return f"has the unknown status {_shown(case['status'])} (expected one of {', '.join(STATUSES)})"
    problem = _fields(case, _CASE_FIELDS, "")
    if problem:
        return problem
    for i, failure in enumerate(case.get("failures") or ()):
        problem = _fields(failure, _FAILURE_FIELDS, f"failures[{i}]")
        if problem:
            return problem
        unknown = [k for k in failure if k not in _FAILURE_FIELDS]
        if unknown:
            return f"'failures[{i}]' has the unknown key {_shown(unknown[0])}"
    if not all(isinstance(t, str) for t in case.get("tags") or ()):
        return "'tags' holds something that is not text"
    output = case.get("output")
    if output is not None:
        problem = _fields(output, {"tool_calls": (list,), "usage": _MAYBE_OBJECT, "content_hash": _MAYBE_TEXT},
                          "output") or _calls(output, "output")
        if problem:
            return problem
    responses = [("response", case.get("response"))]
    for i, step in enumerate(case.get("steps") or ()):
        if not isinstance(step, dict):
            return f"'steps[{i}]' is not an object"
        responses.append((f"steps[{i}].response", step.get("response")))
    for where, response in responses:
        if response is not None:
            problem = _fields(response, _RESPONSE_FIELDS, where) or _calls(response, where)
            if problem:
                return problem
    return None


def _calls(doc: dict, where: str) -> str | None:
    for key in ("tool_calls", "server_tool_calls"):
        for i, call in enumerate(doc.get(key) or ()):
            problem = _fields(call, _CALL_FIELDS, f"{where}.{key}[{i}]")
            if problem:
                return problem
    return None


def _fields(value: Any, table: dict[str, tuple | None], where: str) -> str | None:
    """The first key of *value* (an object) whose value has none of the types *table* allows."""
    if not isinstance(value, dict):
        return f"'{where}' is {_type(value)}, not an object"
    for key, types in table.items():
        if key not in value:
            continue
        got = value[key]
        if types is None:  # any value
            continue
        if not isinstance(got, types) or (isinstance(got, bool) and bool not in types):
            path = f"{where}.{key}" if where else key
            expected = " or ".join(dict.fromkeys(_NAMES[t] for t in types))
            return f"'{path}' is {_type(got)} {_shown(got)}, expected {expected}"
    return None


def _type(value: Any) -> str:
    return {bool: "true or false", type(None): "null"}.get(type(value)) or _NAMES.get(type(value), "a value")


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."
