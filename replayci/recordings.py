"""Recordings on disk: atomic, sorted, redacted, stable (SPEC 9)."""
from __future__ import annotations

import copy
import datetime
import json
import os
import tempfile
from typing import Any

from . import __version__
from .hashing import boundary_hashes

RECORDING_SCHEMA_VERSION = 1
REDACTED = "[REDACTED]"


def rewrite_call_ids(response: dict) -> dict:
    """Tool-call ids become call_1, call_2, ... (providers mint new ones on every call)."""
    out = dict(response)
    out["tool_calls"] = [{**c, "id": f"call_{i}"} for i, c in enumerate(response.get("tool_calls") or [], 1)]
    return out


def redact(document: dict, paths: tuple[str, ...]) -> dict:
    """Blank every value the JSONPaths in *paths* match."""
    if not paths:
        return document
    import jsonpath_rfc9535

    doc = copy.deepcopy(document)
    for text in paths:
        for node in jsonpath_rfc9535.compile(text).find(doc):
            location = node.location
            if not location:
                continue
            parent: Any = doc
            for step in location[:-1]:
                parent = parent[step]
            parent[location[-1]] = REDACTED
    return doc


def dumps(document: dict) -> str:
    """Keys sorted, 2-space indent, trailing newline: clean diffs."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_atomic(path: str, text: str) -> None:
    """A temp file beside the target (not ending in .json), fsync, rename."""
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def build(*, pack_id: str, contract: str, case: str, provider: str, model: str, request: dict,
          response: dict, latency_ms: int, raw: dict | None = None, keep_raw: bool = False,
          redact_fields: tuple[str, ...] = (), extra: dict | None = None) -> dict:
    """The recording document for a live response."""
    doc: dict = {
        "meta": {
            "schema_version": RECORDING_SCHEMA_VERSION,
            "pack_id": pack_id,
            "contract": contract,
            "case_id": case,
            "provider": provider,
            "model": model,
            "recorded_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "replayci_version": __version__,
            "latency_ms": latency_ms,
        },
        "boundary": {"model": model, **boundary_hashes(request)},
        "response": rewrite_call_ids(response),
    }
    if keep_raw and raw is not None:
        doc["raw"] = raw
    if extra:
        doc.update(extra)
    return redact(doc, redact_fields)


def write(path: str, document: dict) -> None:
    write_atomic(path, dumps(document))
