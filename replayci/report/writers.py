"""The report files: one writer per format, each ``writer(report, path)`` over the JSON report.

The CLI's report flags, the `reports:` keys of .replayci.yml and `replayci merge` all write
through this table; a new format is its module and one row here.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

from . import json_report, junit, markdown


def _html(report: dict, path: str) -> None:
    from .html import write_html  # jinja2 is loaded only when an HTML report is asked for

    write_html([report], path)


WRITERS: dict[str, Callable[[dict, str], None]] = {
    "json": json_report.write,
    "junit": junit.write,
    "markdown": markdown.write,
    "html": _html,
}


def write_reports(report: dict, files: Mapping[str, str | None]) -> None:
    """Write *report* in each format that *files* gives a path for."""
    for name, write in WRITERS.items():
        if files.get(name):
            write(report, files[name])
