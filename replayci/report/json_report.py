"""The JSON report: version 1, cases in stable order."""
from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from ..core.files import write_atomic
from ..core.jsonvalue import finite

if TYPE_CHECKING:
    from ..engine.results import RunResult


def build(result: RunResult, settings, packs=None) -> dict:
    """The report of a run: its result with the settings that shaped it."""
    report = result.to_dict()
    report["run"] = {
        **report["run"],
        "jobs": settings.jobs,
        "config": settings.config_file and os.path.relpath(settings.config_file, settings.project_root),
        "strict_fixtures": settings.strict_fixtures,
        "ttl_days": settings.ttl_days,
    }
    report["warnings"] = list(result.warnings)
    return report


_CASE_TEXT = ("pack", "contract", "case", "status")
_CASE_SHAPES = (("failures", list, "a list"), ("response", (dict, type(None)), "an object"),
                ("steps", list, "a list"), ("details", dict, "an object"))


def shape_problem(report) -> str | None:
    """What keeps *report* from being a version-1 JSON report the commands can read, or None."""
    if not isinstance(report, dict) or not isinstance(report.get("cases"), list):
        return "not a replayci JSON report (no 'cases' list)"
    if report.get("version") != 1:
        return f"report version {report.get('version')!r} is not supported (expected 1)"
    for key in ("run", "summary"):
        if not isinstance(report.get(key, {}), dict):
            return f"not a replayci JSON report: '{key}' is not an object"
    for i, case in enumerate(report["cases"]):
        problem = _case_problem(case)
        if problem:
            return f"not a replayci JSON report: cases[{i}] {problem}"
    return None


def _case_problem(case) -> str | None:
    if not isinstance(case, dict):
        return "is not an object"
    for key in _CASE_TEXT:
        if not isinstance(case.get(key), str):
            return f"has no '{key}' text"
    for key, kind, name in _CASE_SHAPES:
        if key in case and not isinstance(case[key], kind):
            return f"'{key}' is not {name}"
    if not all(isinstance(f, dict) for f in case.get("failures") or ()):
        return "'failures' holds something that is not an object"
    return None


def dumps(value) -> str:
    """The report as JSON text; a NaN or an infinity from a provider is written as null (JSON
    has neither), so every report parses."""
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, allow_nan=False) + "\n"
    except ValueError:
        return json.dumps(finite(value, [0]), indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def write(report: dict, path: str) -> None:
    """Write the report atomically: it is never seen half-written."""
    write_atomic(path, dumps(report))
