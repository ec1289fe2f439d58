"""The report files: one writer per format, each ``writer(report, path)`` over the JSON report.

The CLI's report flags, the `reports:` keys of .replayci.yml and `replayci merge` all write
through this table; a new format is its module and one row here.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

from . import json_report, junit, markdown

WRITERS: dict[str, Callable[[dict, str], None]] = {
    "json": json_report.write,
    "junit": junit.write,
    "markdown": markdown.write,
}


def write_reports(report: dict, files: Mapping[str, str | None]) -> None:
    """Write *report* in each format that *files* gives a path for."""
    for name, write in WRITERS.items():
        if files.get(name):
            write(report, files[name])
