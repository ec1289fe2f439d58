"""The report files: one writer per format, each ``writer(report, path)`` over the JSON report.

The CLI's report flags, the `reports:` keys of .replayci.yml and `replayci merge` all write
through this table; a new format is its module and one row here.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

# name -> "module:function" in this package, imported when that report is written (a run
# without report files loads none of them; the HTML one loads jinja2).
WRITERS: dict[str, str] = {
    "json": "json_report:write",
    "junit": "junit:write",
    "markdown": "markdown:write",
    "html": "html:write_report",
    "otlp": "otlp:write",  # an OTLP/HTTP collector URL or a JSON-lines file; loads the OpenTelemetry SDK
}


def writer(name: str) -> Callable[[dict, str], None]:
    """The writer of one report format."""
    module, _, function = WRITERS[name].partition(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), function)


def write_reports(report: dict, files: Mapping[str, str | None]) -> None:
    """Write *report* in each format that *files* gives a path for."""
    for name in WRITERS:
        if files.get(name):
            writer(name)(report, files[name])
