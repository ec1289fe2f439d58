"""The JSON report: version 1, cases in stable order."""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from ..core.files import utf8, write_atomic
from ..core.jsonvalue import encoder, finite

if TYPE_CHECKING:
    from ..engine.results import RunResult


def build(result: RunResult, settings, packs=None, *, cases: bool = True) -> dict:
    """The report of a run: its result with the settings that shaped it (without *cases*,
    an empty cases list, for a writer that has them elsewhere)."""
    report = result.to_dict(cases=cases)
    report["run"] = {
        **report["run"],
        "jobs": settings.jobs,
        "config": settings.config_file and os.path.relpath(settings.config_file, settings.project_root),
        "strict_fixtures": settings.strict_fixtures,
        "ttl_days": settings.ttl_days,
    }
    report["warnings"] = list(result.warnings)
    return report


_one_line = encoder(allow_nan=False)


def _encode(value, indent: int | None = None) -> str:
    """JSON text of *value*; a NaN or an infinity from a provider is written as null (JSON has
    neither), so every report parses."""
    try:
        if indent is None:  # a case line: the encoder built once
            return _one_line(value)
        return json.dumps(value, indent=indent, ensure_ascii=False, allow_nan=False)
    except ValueError:
        return json.dumps(finite(value, [0]), indent=indent, ensure_ascii=False)


def case_line(entry: dict) -> bytes:
    """One case of the report as written, with the separator that follows it: on one line of
    its own, so the report is encoded by the C encoder (indenting takes the pure-Python one,
    several times slower), grepped and diffed case by case, and written as cases finish."""
    return utf8("    " + _encode(entry)) + b",\n"


def chunks(report: dict, case_lines: Iterable[bytes] | None = None) -> Iterator[bytes]:
    """The report's UTF-8 text in pieces: every key indented but the cases, one per line. The
    case lines come from *case_lines* when given (blocks of whole lines, each line ending in
    ",\\n": a run that wrote them as its cases finished), else from report["cases"]."""
    yield b"{"
    sep = "\n"
    for key, value in report.items():
        yield utf8(f"{sep}  {_encode(key)}: ")
        sep = ",\n"
        if key != "cases":
            yield utf8(_encode(value, 2).replace("\n", "\n  "))
            continue
        lines = (case_line(c) for c in value) if case_lines is None else case_lines
        last = None
        for block in lines:
            yield b"[\n" if last is None else last
            last = block
        yield b"[]" if last is None else last[:-2] + b"\n  ]"
    yield b"\n}\n"


def dumps(value) -> str:
    """JSON text for the terminal or a file: a report (a dict with a list of cases) with its
    cases one per line, anything else indented."""
    if isinstance(value, dict) and isinstance(value.get("cases"), list):
        return b"".join(chunks(value)).decode()
    return _encode(value, 2) + "\n"


def write(report: dict, path: str, case_lines: Iterable[bytes] | None = None) -> None:
    """Write the report atomically: it is never seen half-written (*case_lines*: as chunks)."""
    write_atomic(path, chunks(report, case_lines))
