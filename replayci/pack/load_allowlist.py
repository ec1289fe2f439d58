"""A pack's nr-allowlist.json: the non-reproducible cases it accepts, each with an owner and an expiry."""
from __future__ import annotations

import datetime
from typing import Any

from ..core.errors import ConfigError, Problem, did_you_mean
from ..core.paths import display_path
from . import vocabulary as spec
from .load_problems import Built
from .model import AllowEntry
from .sources import Located, locate_json, parse_json, read_text


def read_allowlist(file: str) -> tuple[tuple[AllowEntry, ...], list[Problem]]:
    """The entries of a pack's nr-allowlist.json that are well formed, and the problems of the
    others (or of the file)."""
    display = display_path(file)
    try:
        text = read_text(file, display, max_bytes=4 * 1024 * 1024)
        value = parse_json(text, display)
    except ConfigError as exc:
        return (), list(exc.problems)
    doc = locate_json(text, display)
    if not isinstance(value, list):
        return (), [doc.problem((), "expected a list of allowlist entries ([] for none)")]
    built = [_allow_entry(doc, (i,), entry) for i, entry in enumerate(value)]
    return (tuple(b.value for b in built if b.value is not None),
            [p for b in built for p in b.problems])


def _allow_entry(doc: Located, p: tuple, entry: Any) -> Built[AllowEntry]:
    """One allowlist entry, or its problems."""
    if not isinstance(entry, dict):
        return Built.refused(doc, p, "expected an object {contract_path, case_id, reason_code, owner, "
                             "expiry_date, rationale}")
    problems = []
    for key in entry:
        if key not in spec.ALLOWLIST_KEYS:
            problems.append(doc.problem(p + (key,), spec.unknown_key_message(key, spec.ALLOWLIST_KEYS)))
    for key in spec.ALLOWLIST_REQUIRED:
        if not isinstance(entry.get(key), str):
            problems.append(doc.problem(p + (key,) if key in entry else p, f"'{key}' must be a string"))
    if "case_id" in entry and not isinstance(entry["case_id"], (str, type(None))):
        problems.append(doc.problem(p + ("case_id",), "'case_id' must be a string"))
    if isinstance(entry.get("reason_code"), str) and entry["reason_code"] not in spec.NR_REASONS:
        problems.append(doc.problem(p + ("reason_code",),
                                    f"unknown reason_code '{entry['reason_code']}'; expected one of "
                                    + ", ".join(spec.NR_REASONS) + did_you_mean(entry["reason_code"], spec.NR_REASONS)))
    expiry = None
    if isinstance(entry.get("expiry_date"), str):
        try:
            expiry = datetime.date.fromisoformat(entry["expiry_date"])
        except ValueError:
            problems.append(doc.problem(p + ("expiry_date",), "expected a date YYYY-MM-DD"))
    if problems:
        return Built(None, tuple(problems))
    return Built(AllowEntry(entry["contract_path"], entry.get("case_id"), entry["reason_code"],
                            entry["owner"], expiry, entry["rationale"], doc.source(p)))
