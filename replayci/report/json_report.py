"""The JSON report: version 1, cases in stable order."""
from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from ..core.files import write_atomic

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


def dumps(value) -> str:
    """JSON as printed and written: 2-space indent, keys in their order, a final newline."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def write(report: dict, path: str) -> None:
    """Write the report atomically: it is never seen half-written."""
    write_atomic(path, dumps(report))
