"""The JSON report: version 1, cases in stable order."""
from __future__ import annotations

import json
import os

from ..engine.results import RunResult


def build(result: RunResult, settings, packs=None) -> dict:
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
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def write(report: dict, path: str) -> None:
    """Write atomically: a temp file beside the target, then rename."""
    write_text_atomic(path, dumps(report))


def write_text_atomic(path: str, text: str) -> None:
    """A temp file beside the target, then rename: a report is never half-written."""
    from ..core.files import write_atomic

    write_atomic(os.path.abspath(path), text)
