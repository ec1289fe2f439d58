"""Recordings on disk: atomic, sorted, redacted, stable."""
from __future__ import annotations

import copy
import datetime
import json
import os
from typing import Any

from ..checks.jsonpath import DescentLimit, locations
from ..core.errors import ConfigError
from ..core.files import write_atomic
from ..core.hashing import boundary_hashes
from ..core.jsonvalue import finite, indented
from ..core.version import __version__
from ..formats import rewrite_stream_data
from ..pack.sources import parse_json
from ..providers.errors import REDACTED  # one marker for keys and redacted fields

RECORDING_SCHEMA_VERSION = 1


def rewrite_call_ids(response: dict) -> dict:
    """Tool-call ids become call_1, call_2, ... (providers mint new ones on every call)."""
    out = dict(response)
    out["tool_calls"] = [{**c, "id": f"call_{i}"} for i, c in enumerate(response.get("tool_calls") or [], 1)]
    return out


class NotWritten(ValueError):
    """A recording replayci must not write: one a later run would refuse to read, or one its
    redact.fields paths cannot walk."""


# A recording's own bookkeeping, which redaction leaves alone: it holds no text of the model's or
# the user's, and it is what a later run reads first (the case, the model, the request hashes).
_BOOKKEEPING = ("meta", "boundary", "status")


def redact(document: dict, paths: tuple[str, ...]) -> dict:
    """Blank every value the JSONPaths in *paths* match (NotWritten when one cannot be walked:
    an unredacted recording is never written). A match on an object or a list blanks every
    text inside it and keeps its shape, numbers, booleans and nulls, so the recording stays
    one the next run reads; `meta`, `boundary` and `status` are never blanked. A stream held as
    text is redacted event by event, its framing kept (it still replays)."""
    if not paths:
        return document
    doc = copy.deepcopy(document)
    texts = {k: doc.pop(k) for k in _STREAM_KEYS if isinstance(doc.get(k), str)}
    _blank_paths(doc, paths)
    for key, text in texts.items():  # a stream: each event's data redacted as the whole answer would be
        streamed = rewrite_stream_data(text, lambda data, key=key: _blank_paths({key: data}, paths)[key])
        doc[key] = _blank_paths({key: text}, paths)[key] if streamed is None else streamed
    _raw_follows(document, doc)
    return doc


# Where a recording holds a provider's stream as text: its events' data are redacted, never its framing.
_STREAM_KEYS = ("response", "raw")


def _blank_paths(doc: dict, paths: tuple[str, ...]) -> dict:
    """*doc* with what *paths* match blanked in place."""
    for text in paths:
        try:
            found = locations(text, doc)
        except DescentLimit as exc:
            raise NotWritten(f"recording not written: redact.fields {text}: {exc}") from None
        for location in found:
            if not location or location[0] in _BOOKKEEPING:
                continue
            parent: Any = doc
            for step in location[:-1]:
                parent = parent[step]
            key, value = location[-1], parent[location[-1]]
            if not isinstance(value, (dict, list)):  # a value the path names itself: blanked, whatever it is
                parent[key] = value if key in _SHAPE_KEYS and isinstance(value, str) else REDACTED
                continue
            try:
                parent[key] = _blanked(value, key)
            except RecursionError:
                raise NotWritten(f"recording not written: redact.fields {text}: nested too deep to blank") from None
    return doc


def _raw_follows(before: Any, after: Any) -> None:
    """A tool call whose arguments were blanked gets its arguments_raw from them (the text the
    model sent holds the same values)."""
    if isinstance(after, dict) and isinstance(before, dict):
        if "arguments_raw" in after and "arguments" in after and after["arguments"] != before.get("arguments"):
            args = after["arguments"]
            after["arguments_raw"] = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        for key, value in after.items():
            if isinstance(value, (dict, list)):
                _raw_follows(before.get(key), value)
    elif isinstance(after, list) and isinstance(before, list):
        for old, new in zip(before, after, strict=False):
            if isinstance(new, (dict, list)):
                _raw_follows(old, new)


# Keys whose text names a shape, not content: a block's or schema's type, a message's role, a
# model, a schema's references. Blanking them would leave a document no reader parses (a tool
# schema of type "[REDACTED]"), and they hold nothing of the user's.
_SHAPE_KEYS = frozenset(("type", "role", "object", "model", "$ref", "$schema", "$id", "$anchor", "$dynamicRef",
                         "$dynamicAnchor"))


def _blanked(value: Any, key: Any = None) -> Any:
    """*value* with every text in it replaced by the redaction marker (a text under a key that
    names a shape kept)."""
    if isinstance(value, str):
        return value if key in _SHAPE_KEYS else REDACTED
    if isinstance(value, dict):
        return {k: _blanked(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_blanked(v) for v in value]
    return value


def dumps(document: dict) -> str:
    """Keys sorted, 2-space indent, trailing newline: clean diffs. A NaN or an infinity a
    provider sent becomes null (JSON has neither: replayci would refuse its own file), and the
    recording's meta says how many were replaced."""
    try:
        return indented(document) + "\n"
    except ValueError:
        replaced = [0]
        clean = finite(document, replaced)
        meta = clean.get("meta") if isinstance(clean.get("meta"), dict) else {}
        clean["meta"] = {**meta, "non_finite_numbers_replaced": replaced[0]}
        return indented(clean) + "\n"


def rewrite_trajectory_ids(steps: list[dict]) -> list[dict]:
    """A trajectory for a recording: tool-call ids become call_1, call_2, ... over the whole
    run (unique in the conversation), each step's tool_results pointing at the same ids."""
    out = []
    n = 0
    for step in steps:
        response = dict(step["response"])
        calls = []
        for c in response.get("tool_calls") or []:
            n += 1
            calls.append({**c, "id": f"call_{n}"})
        response["tool_calls"] = calls
        results = []
        # One result per call, in call order (scenario.drive): the k-th answers the k-th call.
        for k, r in enumerate(step.get("tool_results") or ()):
            new_id = calls[k]["id"] if k < len(calls) else r.get("call_id")
            results.append({**r, "call_id": new_id})
        out.append({"response": response, "tool_results": results})
    return out


def build(*, pack_id: str, contract: str, case: str, provider: str, model: str, request: dict,
          response: dict | None, latency_ms: int, raw: Any = None, keep_raw: bool = False,
          redact_fields: tuple[str, ...] = (), extra: dict | None = None,
          trajectory: list[dict] | None = None, tool_results: list[dict] | None = None) -> dict:
    """The recording document for a live response, or for a scenario's trajectory (with the
    tool results it used: {tool, args_hash, arguments, result, version}), or for a scenario's
    tool results alone."""
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
    }
    if response is not None:
        doc["response"] = rewrite_call_ids(response)
    if trajectory is not None:
        doc["trajectory"] = rewrite_trajectory_ids(trajectory)
    if trajectory is not None or tool_results is not None:
        doc["tool_results"] = list(tool_results or ())
    if keep_raw and raw is not None:
        doc["raw"] = raw
    if extra:
        doc.update(extra)
    return redact(doc, redact_fields)


# What the reader could refuse in a text `dumps` wrote: no NaN or infinity (replaced), no key
# twice (a dict's keys, all strings in a document read from JSON), no escaped surrogate (the
# text is written unescaped, and a lone surrogate fails its UTF-8 encoding first), so only
# nesting deeper than the reader's recursion allows. A text with no line indented this deep
# (every line of it is indented two spaces a level) is nested less than 100 levels: parsing it
# again would find nothing.
_DEEP_LINE = "\n" + "  " * 100


def refusal(document: dict, path: str = "<recording>", max_bytes: int | None = None) -> str | None:
    """Why replayci would refuse to read *document* once written (nested too deeply, text that is
    not Unicode, over *max_bytes*), or None; the text it would be written as is `dumps`'s."""
    try:
        checked(document, path, max_bytes)
    except NotWritten as exc:
        return str(exc)
    return None


def checked(document: dict, path: str = "<recording>", max_bytes: int | None = None) -> str:
    """`dumps(document)`, the text written; NotWritten, saying why, for a document replayci
    would refuse to read once written (see `refusal`)."""
    try:
        text = dumps(document)
    except RecursionError:
        raise NotWritten("recording not written: it is nested too deeply for replayci to read") from None
    return checked_text(text, path, max_bytes)


def checked_text(text: str, path: str = "<recording>", max_bytes: int | None = None) -> str:
    """`checked` of the document *text* is the `dumps` text of."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate a provider sent ("\\ud800")
        raise NotWritten("recording not written: it holds text that is not Unicode (half of a surrogate "
                         "pair), which replayci would refuse to read") from None
    if max_bytes is not None:
        if len(data) > max_bytes:
            raise NotWritten(f"recording not written: it would be {len(data):,} bytes, over the limit of "
                             f"{max_bytes:,} bytes replayci reads recordings under (fixtures.max_bytes)")
        if _DEEP_LINE not in text:
            return text  # nothing here the reader refuses (see _DEEP_LINE)
        try:
            parse_json(text, path)
        except ConfigError as exc:
            raise NotWritten(f"recording not written: replayci would refuse to read it "
                             f"({exc.problems[0].message})") from None
    return text


def write(path: str, document: dict, *, root: str | None = None, max_bytes: int | None = None) -> None:
    """Write a recording; with *root* (the pack directory), never outside it; with
    *max_bytes* (the size replayci reads recordings under), never one a later run would refuse
    to read: larger, not Unicode or nested too deeply (NotWritten)."""
    text = checked(document, path, max_bytes)
    if root is not None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        real_root = os.path.realpath(root)
        if not os.path.realpath(os.path.dirname(path)).startswith(real_root + os.sep):
            raise ValueError(f"{path}: refusing to write a recording outside the pack {root}")
    write_atomic(path, text.encode("utf-8"))
