"""A pack's nr-allowlist.json: the non-reproducible cases it accepts, each with an owner and an expiry."""
from __future__ import annotations

import datetime
from typing import Any

from ..core.errors import ConfigError, Problem, did_you_mean
from ..core.paths import display_path
from . import vocabulary as spec
from .load_problems import Collector
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
    col = Collector()
    if not isinstance(value, list):
        col.at(doc, (), "expected a list of allowlist entries ([] for none)")
        return (), col.problems
    out = []
    for i, entry in enumerate(value):
        allowed = _allow_entry(col, doc, (i,), entry)
        if allowed is not None:
            out.append(allowed)
    return tuple(out), col.problems


def _allow_entry(col: Collector, doc: Located, p: tuple, entry: Any) -> AllowEntry | None:
    """One allowlist entry, or None once its problems are collected."""
    if not isinstance(entry, dict):
        col.at(doc, p, "expected an object {contract_path, case_id, reason_code, owner, expiry_date, rationale}")
        return None
    bad = False
    for key in entry:
        if key not in spec.ALLOWLIST_KEYS:
            col.at(doc, p + (key,), spec.unknown_key_message(key, spec.ALLOWLIST_KEYS))
            bad = True
    for key in spec.ALLOWLIST_REQUIRED:
        if not isinstance(entry.get(key), str):
            col.at(doc, p + (key,) if key in entry else p, f"'{key}' must be a string")
            bad = True
    if "case_id" in entry and not isinstance(entry["case_id"], (str, type(None))):
        col.at(doc, p + ("case_id",), "'case_id' must be a string")
        bad = True
    if isinstance(entry.get("reason_code"), str) and entry["reason_code"] not in spec.NR_REASONS:
        col.at(doc, p + ("reason_code",),
               f"unknown reason_code '{entry['reason_code']}'; expected one of "
               + ", ".join(spec.NR_REASONS) + did_you_mean(entry["reason_code"], spec.NR_REASONS))
        bad = True
    expiry = None
    if isinstance(entry.get("expiry_date"), str):
        try:
            expiry = datetime.date.fromisoformat(entry["expiry_date"])
        except ValueError:
            col.at(doc, p + ("expiry_date",), "expected a date YYYY-MM-DD")
            bad = True
    if bad:
        return None
    return AllowEntry(entry["contract_path"], entry.get("case_id"), entry["reason_code"],
                      entry["owner"], expiry, entry["rationale"], doc.source(p))
